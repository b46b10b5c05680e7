/*
** lowering/gpu/abi.c: the kernel parameters every GPU target takes after
** the cascade's own (gpu.h's GPU_MAGIC_*), counted once for the kernel
** builders and the generated launcher.
*/
#include "gpu.h"

int gpu_magic_params(const Plan *p)
{
	int n = GPU_MAGIC_FIXED;
	for (int k = 0; k < p->nclasses; k++)
		n += 2 * (p->classes[k].grid && !p->classes[k].qtile);
	return n;
}
