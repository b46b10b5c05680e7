/*
** examples/c/reference.c: calls the generated CPU code (gen/cpu/causal.h,
** whose names CMake renames to ref_* so they cannot clash with the GPU
** interface's) for attn_example's check.
*/
#include "reference.h"

#include "causal.h"

/* Fills causal_args (the CPU form: float tensors) and runs on all cores. */
int reference_causal(const float *q, const float *k, const float *v, float *o, float *l, long b,
		     long h, long n, long d, double scale)
{
	causal_args a = {0};
	a.Q = q;
	a.K = k;
	a.V = v;
	a.O = o;
	a.L = l;
	a.B = b;
	a.H = h;
	a.N = n;
	a.D = d;
	a.scale = scale;
	return causal_run(&a, 0);
}
