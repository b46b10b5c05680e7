/*
** test/install/reference.h: seeded inputs and a naive attention in double,
** shared by the install test's C and C++ programs (the common subset of C11
** and C++17), to check what the installed attnc generated.
*/
#ifndef INSTALL_REFERENCE_H
#define INSTALL_REFERENCE_H

#include <math.h>
#include <stddef.h>

/* Uniform values in [-1, 1) from a 32-bit LCG: the same on every machine. */
static inline void ref_fill(float *x, size_t n, unsigned *state)
{
	for (size_t i = 0; i < n; i++) {
		*state = *state * 1664525u + 1013904223u;
		x[i] = (float)((double)(*state >> 8) / 8388608.0 - 1.0);
	}
}

/* The largest deviation of O [B,H,N,D] and L [B,H,N] (logsumexp; NULL: not
** checked) from softmax_j(scale q_i . k_j) V over M keys, with j <= i when
** causal; returns a huge value when D is too large for the reference. */
static inline double ref_deviation(const float *Q, const float *K, const float *V, const float *O,
				   const float *L, long B, long H, long N, long M, long D,
				   double scale, int causal)
{
	double acc[512], worst = 0;
	if (D > 512)
		return HUGE_VAL;
	for (long bh = 0; bh < B * H; bh++)
		for (long i = 0; i < N; i++) {
			const float *q = Q + (bh * N + i) * D;
			long keys = causal ? (i + 1 < M ? i + 1 : M) : M;
			double mx = -HUGE_VAL, sum = 0;
			for (long e = 0; e < D; e++)
				acc[e] = 0;
			for (int pass = 0; pass < 2; pass++)
				for (long j = 0; j < keys; j++) {
					const float *k = K + (bh * M + j) * D;
					double s = 0;
					for (long d = 0; d < D; d++)
						s += (double)q[d] * k[d];
					s *= scale;
					if (pass == 0) {
						mx = s > mx ? s : mx;
						continue;
					}
					double p = exp(s - mx);
					sum += p;
					for (long e = 0; e < D; e++)
						acc[e] += p * V[(bh * M + j) * D + e];
				}
			for (long e = 0; e < D; e++) {
				double dev = fabs(O[(bh * N + i) * D + e] - acc[e] / sum);
				worst = dev > worst ? dev : worst;
			}
			if (L) {
				double dev = fabs(L[bh * N + i] - (mx + log(sum)));
				worst = dev > worst ? dev : worst;
			}
		}
	return worst;
}

#endif
