/*
** test/gpu/gpu_testutil.h: what the GPU machine's test programs (harness.c,
** ring.c) share: the generated functions' names from -DNAME, and bf16
** rounding (to nearest even) and widening. prepare.sh copies it beside them.
*/
#ifndef ATTN_GPU_TESTUTIL_H
#define ATTN_GPU_TESTUTIL_H

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

#endif
