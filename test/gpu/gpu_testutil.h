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

/* Cumulative offsets of b = n - 1 sequences (cu_seqlens): v[0] = 0, v[n - 1]
** = total, each length at most max. Ragged: random lengths, the first two
** 0 and 1 where there are three sequences or more (and room), then moved
** one at a time until they sum to total. Returns 0 where they cannot. */
static inline int fill_cum(int32_t *v, long n, long total, long max)
{
	long b = n - 1, sum = 0;
	if (b < 1 || max < 0 || total < 0 || total > b * max)
		return 0;
	long *len = calloc((size_t)b, sizeof *len);
	for (long k = 0; k < b; k++) {
		len[k] = (long)(unit() * (double)(max + 1));
		len[k] = len[k] > max ? max : len[k];
	}
	int fix = b >= 3 && max >= 1 && total >= 1 && total <= (b - 2) * max + 1;
	if (fix)
		len[0] = 0, len[1] = 1;
	for (long k = 0; k < b; k++)
		sum += len[k];
	while (sum != total) {
		long k = (long)(unit() * (double)b);
		k = k >= b ? b - 1 : k;
		if (fix && k < 2)
			continue;
		if (sum > total && len[k] > 0)
			len[k]--, sum--;
		else if (sum < total && len[k] < max)
			len[k]++, sum++;
	}
	v[0] = 0;
	for (long k = 0; k < b; k++)
		v[k + 1] = (int32_t)(v[k] + len[k]);
	free(len);
	return 1;
}

/* The size of dim `name`, or -1 (the harness declares NAME_dim_name). */
const char *F(_dim_name)(int);
static inline long dim_named(const long *dims, int nd, const char *name, size_t len)
{
	for (int k = 0; k < nd; k++)
		if (strlen(F(_dim_name)(k)) == len && !strncmp(F(_dim_name)(k), name, len))
			return dims[k];
	return -1;
}

/* --int NAME=cum:TOTAL:MAX (spec: what follows "cum:"): n - 1 ragged
** sequences' offsets (fill_cum) of dims TOTAL and MAX into the i32 buffer
** raw, copied into host (4 bytes an element). 0 after printing why where
** the dims are unknown or the lengths cannot meet them (the caller FAILs). */
static inline int cum_offsets(const char *spec, const long *dims, int nd, int32_t *raw, void *host,
			      long n)
{
	const char *c = strchr(spec, ':');
	long total = c ? dim_named(dims, nd, spec, (size_t)(c - spec)) : -1;
	long most = c ? dim_named(dims, nd, c + 1, strlen(c + 1)) : -1;
	if (total < 0 || most < 0 || !fill_cum(raw, n, total, most)) {
		printf("cum:%s: no offsets of that total and longest length\nFAIL\n", spec);
		return 0;
	}
	memcpy(host, raw, (size_t)n * 4);
	return 1;
}

#endif
