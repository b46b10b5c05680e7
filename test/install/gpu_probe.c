/*
** test/install/gpu_probe.c: the GPU interface and the C form of
** examples/causal.attn, both from the installed attnc, in one program
** linked against the installed libattnrt. Both headers are included (their
** names differ: causal_gpu_args/causal_launch against causal_args/causal_run),
** the defaults of each are compared, and the runtime is started: without a
** usable CUDA driver it prints the runtime's one line and exits 1, as
** examples/c/attnrt_probe does.
*/
#include <stdio.h>

#include <attnrt.h>

#include "cpu/causal.h"
#include "gpu/causal.h"

int main(void)
{
	causal_gpu_args g = {0};
	causal_args c = {0};
	g.B = c.B = 1, g.H = c.H = 1, g.N = c.N = 1, c.D = 128;
	causal_gpu_defaults(&g);
	causal_defaults(&c);
	if (g.D != c.D || (float)c.scale != g.scale) {
		printf("gpu_probe: defaults differ: D %ld/%ld, scale %g/%g\n", g.D, c.D,
		       (double)g.scale, c.scale);
		return 2;
	}
	if (attnrt_init() != ATTNRT_OK) {
		fprintf(stderr, "%s\n", attnrt_last_error());
		return 1;
	}
	puts("attnrt: started (causal_launch linked, not run)");
	return 0;
}
