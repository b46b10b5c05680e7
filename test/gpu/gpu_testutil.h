/*
** test/gpu/gpu_testutil.h: what the GPU machine's test programs (harness.c,
** grad_harness.c, ring.c) share: the generated functions' names from
** -DNAME, bf16 rounding (to nearest even) and widening, the generated
** interface's tensor kinds and dtypes, and the seeded random inputs.
** prepare.sh copies it beside them.
*/
#ifndef ATTN_GPU_TESTUTIL_H
#define ATTN_GPU_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define F(x)       CAT(NAME, x)
#define STR2(x)    #x
#define STR(x)     STR2(x)

static inline uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7FFF + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static inline float from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* The generated interface's tensor kinds and dtypes (NAME_tensor_info). */
enum { K_IN, K_OUT, K_TEMP };
enum { T_BOOL, T_I32, T_F8A, T_F8B, T_F16, T_BF16, T_F32 };

/* Seeded random inputs: xorshift64 (a seed argument is mixed into rng),
** uniform in (0, 1), and standard normals by Box-Muller. */
__attribute__((unused)) static uint64_t rng = 0x9E3779B97F4A7C15ull;

static inline uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static inline double unit(void)
{
	return ((next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double normal(void)
{
	return sqrt(-2 * log(unit())) * cos(6.283185307179586 * unit());
}

#endif
