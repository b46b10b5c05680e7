/*
** examples/c/example_util.h: what the example programs share: seeded
** inputs rounded to bf16, the bf16 conversions, and the relative L2 error
** they accept results by.
*/
#ifndef ATTN_EXAMPLE_UTIL_H
#define ATTN_EXAMPLE_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* splitmix64: the same inputs on every machine for a given seed. */
static inline uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* float -> bf16 with round-to-nearest-even (inputs here are finite). */
static inline uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline float from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Uniform in [-1, 1), rounded to bf16; the float copy is exactly the bf16 value. */
static inline void fill(uint16_t *h, float *f, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++) {
		float x = (float)((double)(next_u64(seed) >> 11) * 0x1p-53 * 2.0 - 1.0);
		h[i] = to_bf16(x);
		f[i] = from_bf16(h[i]);
	}
}

/* ||got - want|| / ||want||, the acceptance measure. */
static inline double rel_l2(const float *got, const float *want, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double e = (double)got[i] - (double)want[i];
		num += e * e;
		den += (double)want[i] * want[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif
