/*
** cli/inputs.h: seeded random inputs for `attnc run`, identical on every
** platform: a xoshiro256** stream per tensor keyed by (seed, tensor name),
** normals from the polar method with a log of our own (only +, -, *, / and
** sqrt, which IEEE rounds exactly, so no libm difference can creep in), and
** round-to-nearest-even conversion to the narrow float formats, so generated
** values are exactly representable in the tensor's declared dtype.
*/
#ifndef ATTN_INPUTS_H
#define ATTN_INPUTS_H

#include <stdint.h>

#include "../compiler/cascade.h"

typedef struct InputsRng {
	uint64_t s[4];
	int has_spare; /* the polar method makes normals in pairs */
	double spare;
} InputsRng;

/* The stream for tensor `name` under `seed`; different names give
** independent streams, and a stream does not depend on any other tensor. */
void inputs_rng_init(InputsRng *r, uint64_t seed, const char *name);
uint64_t inputs_rng_u64(InputsRng *r);
/* Uniform in [0, 1) with 53 random bits. */
double inputs_rng_unit(InputsRng *r);
/* Standard normal. */
double inputs_rng_normal(InputsRng *r);
/* Uniform integer in [lo, hi] (inclusive, lo <= hi), without modulo bias. */
long inputs_rng_int(InputsRng *r, long lo, long hi);
/* 1 with probability 3/4. */
int inputs_rng_bool(InputsRng *r);

/* x rounded to nearest-even in dtype t (f64 and non-float types: x).
** Overflow gives +-inf, except f8e4m3 (OCP), which has no infinity and
** saturates to +-448 (inf too); NaN stays NaN. Subnormals are kept. */
double inputs_round(double x, DType t);

/* Natural log built from exact IEEE operations only (x > 0, finite); within
** a few ulp of the true value and the same bits on every platform. */
double inputs_log(double x);

/* Fills buf[0..n) for a tensor of dtype t: floats are standard normals
** rounded to t, i32 uniform in [lo, hi], bool true with probability 3/4. */
void inputs_fill(double *buf, long n, DType t, uint64_t seed, const char *name, long lo, long hi);

/* Fills buf[0..n) with the cumulative offsets of n - 1 ragged sequences
** (cu_seqlens): buf[0] = 0, buf[n - 1] = total, each step in [0, longest],
** the first two 0 and 1 where there are three or more and room. Returns -1
** where no such offsets exist (n < 2, or total above (n - 1) longest). */
int inputs_offsets(double *buf, long n, uint64_t seed, const char *name, long total, long longest);

#endif
