/* Two kernels' generated headers, GPU and CPU, in one translation unit
** (C11 or C++17), one of them included twice (test/lit/driver/headers.test). */
#include "full_gpu.h"
#include "causal_gpu.h"
#include "full_cpu.h"
#include "causal_cpu.h"
#include "full_gpu.h"
#include "causal_cpu.h"

int main(void)
{
	full_gpu_args g;
	full_args c;
	(void)c;
	full_gpu_defaults(&g);
	return full_launch(&g, 0);
}
