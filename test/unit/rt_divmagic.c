/*
** test/unit/rt_divmagic.c: attnrt_divmagic against the division it
** replaces, for every divisor up to 70000 (grid extents, heads, batches) at
** the dividends where a quotient changes (multiples of d and their
** neighbours) and at the ends of the range, and for divisors near powers of
** two and up to 2^32.
*/
#include <stdint.h>
#include <stdio.h>

#include "attnrt.h"

static long fails;

/* n / d through the magic pair, as the kernels compute it. */
static void check(uint64_t d, uint64_t n)
{
	uint32_t m, s;
	attnrt_divmagic(d, &m, &s);
	uint64_t q = ((uint64_t)(uint32_t)n * m) >> s, want = n / (d ? d : 1);
	if (q != want && fails++ < 10)
		fprintf(stderr, "divmagic: %llu / %llu gave %llu, not %llu\n",
			(unsigned long long)n, (unsigned long long)d, (unsigned long long)q,
			(unsigned long long)want);
}

/* n and its neighbours within [0, 2^31). */
static void around(uint64_t d, uint64_t n)
{
	check(d, n);
	if (n)
		check(d, n - 1);
	if (n + 1 < (1ull << 31))
		check(d, n + 1);
}

static void divisor(uint64_t d)
{
	const uint64_t top = (1ull << 31) - 1;
	uint64_t step = d < 2 ? 1 : d;
	for (uint64_t k = 0; k < 300 && k * step <= top; k++) {
		around(d, k * step);
		around(d, top / step * step - k * step); /* the last multiples */
	}
	check(d, top);
}

int main(void)
{
	for (uint64_t d = 0; d <= 70000; d++)
		divisor(d);
	for (int b = 16; b <= 32; b++)
		for (int e = -3; e <= 3; e++)
			divisor((1ull << b) + (uint64_t)(int64_t)e);
	divisor(2147483647ull);
	divisor(1ull << 32);
	if (fails) {
		fprintf(stderr, "divmagic: %ld wrong quotients\n", fails);
		return 1;
	}
	printf("divmagic: ok\n");
	return 0;
}
