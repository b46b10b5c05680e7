/*
** examples/c/grad_reference.h: the CPU reference for grad_example, a wrapper
** around the portable C that `attnc --grad --target=cpu --emit=c` generates
** for causal.attn (its backward, causal_bwd). Its own translation unit
** (grad_reference.c): the generated CPU and GPU headers declare the same
** names.
*/
#ifndef ATTN_EXAMPLE_GRAD_REFERENCE_H
#define ATTN_EXAMPLE_GRAD_REFERENCE_H

/* dQ, dK, dV[B,H,N,D] in float from Q, K, V, O, dO[B,H,N,D] and L, dL[B,H,N];
** 0 on success. */
int reference_causal_bwd(const float *q, const float *k, const float *v, const float *o,
			 const float *l, const float *d_o, const float *d_l, float *dq, float *dk,
			 float *dv, long b, long h, long n, long d, double scale);

#endif
