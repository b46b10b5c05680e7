/*
** examples/c/reference.h: the CPU reference for attn_example, a wrapper around
** the portable C that `attnc --target=cpu --emit=c` generates for causal.attn.
** It lives in its own translation unit (reference.c) because the generated
** CPU and GPU headers declare the same names (causal_args, ...).
*/
#ifndef ATTN_EXAMPLE_REFERENCE_H
#define ATTN_EXAMPLE_REFERENCE_H

/* O[B,H,N,D] and L[B,H,N] in float from Q, K, V[B,H,N,D]; 0 on success. */
int reference_causal(const float *q, const float *k, const float *v, float *o, float *l, long b,
		     long h, long n, long d, double scale);

#endif
