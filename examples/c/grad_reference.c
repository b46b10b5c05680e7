/*
** examples/c/grad_reference.c: calls the generated CPU backward
** (gen/grad/cpu/causal.h, whose names CMake renames to ref_* so they cannot
** clash with the GPU interface's) for grad_example's check.
*/
#include "grad_reference.h"

#include "causal.h"

/* Fills causal_bwd_args (the CPU form: float tensors) and runs on all cores. */
int reference_causal_bwd(const float *q, const float *k, const float *v, const float *o,
			 const float *l, const float *d_o, const float *d_l, float *dq, float *dk,
			 float *dv, long b, long h, long n, long d, double scale)
{
	causal_bwd_args a = {0};
	a.Q = q;
	a.K = k;
	a.V = v;
	a.O = o;
	a.L = l;
	a.dO = d_o;
	a.dL = d_l;
	a.dQ = dq;
	a.dK = dk;
	a.dV = dv;
	a.B = b;
	a.H = h;
	a.N = n;
	a.D = d;
	a.scale = scale;
	return causal_bwd_run(&a, 0);
}
