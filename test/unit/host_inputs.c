/*
** test/unit/host_inputs.c: the seeded generators and the dtype rounding.
** Rounding is checked on hand-picked ties and overflow points of every
** narrow format, and against independent references: the hardware's
** double -> float conversion for f32 and the usual bit trick for bf16.
** The generator is checked for determinism, for stream independence, for
** pinned values (so a change of algorithm is noticed) and for plausible
** moments.
*/
#include "host_testutil.h"

#include <limits.h>
#include <stdint.h>

#include "cli/inputs.h"

/* Hand-picked values: ties to even, subnormals, overflow and saturation. */
static void test_round_known(void)
{
	/* bf16: 8 stored bits below the leading one at 1.0 are 2^-7 apart */
	CHECK_SAME(inputs_round(1.00390625, DT_BF16), 1.0);      /* tie -> even (down) */
	CHECK_SAME(inputs_round(1.01171875, DT_BF16), 1.015625); /* tie -> even (up) */
	CHECK_SAME(inputs_round(1.005, DT_BF16), 1.0078125);
	CHECK_SAME(inputs_round(-3.0e38, DT_BF16), -0x1.c4p127);
	CHECK_SAME(inputs_round(3.5e38, DT_BF16), INFINITY);
	CHECK_SAME(inputs_round(0x1.fep127, DT_BF16), 0x1.fep127);
	/* f16 */
	CHECK_SAME(inputs_round(65504.0, DT_F16), 65504.0);
	CHECK_SAME(inputs_round(65519.0, DT_F16), 65504.0);
	CHECK_SAME(inputs_round(65520.0, DT_F16), INFINITY);  /* max + half ulp ties up */
	CHECK_SAME(inputs_round(ldexp(1, -25), DT_F16), 0.0); /* half the smallest subnormal */
	CHECK_SAME(inputs_round(-ldexp(1, -25), DT_F16), -0.0);
	CHECK_SAME(inputs_round(ldexp(3, -25), DT_F16), ldexp(1, -23));
	CHECK_SAME(inputs_round(1.0 + ldexp(1, -11), DT_F16), 1.0);
	CHECK_SAME(inputs_round(1.0 + ldexp(3, -11), DT_F16), 1.0 + ldexp(1, -9));
	/* f8e4m3 (OCP): max 448, no infinity: saturates */
	CHECK_SAME(inputs_round(448.0, DT_F8E4M3), 448.0);
	CHECK_SAME(inputs_round(460.0, DT_F8E4M3), 448.0);
	CHECK_SAME(inputs_round(500.0, DT_F8E4M3), 448.0);
	CHECK_SAME(inputs_round(-1e6, DT_F8E4M3), -448.0);
	CHECK_SAME(inputs_round(INFINITY, DT_F8E4M3), 448.0);
	CHECK(isnan(inputs_round(NAN, DT_F8E4M3)));
	CHECK_SAME(inputs_round(1.0625, DT_F8E4M3), 1.0);        /* tie -> even */
	CHECK_SAME(inputs_round(1.1875, DT_F8E4M3), 1.25);       /* tie -> even */
	CHECK_SAME(inputs_round(ldexp(1, -10), DT_F8E4M3), 0.0); /* half of 2^-9 */
	CHECK_SAME(inputs_round(ldexp(3, -10), DT_F8E4M3), ldexp(1, -8));
	CHECK_SAME(inputs_round(ldexp(1, -9), DT_F8E4M3), ldexp(1, -9));
	/* f8e5m2: max 57344, overflow to infinity */
	CHECK_SAME(inputs_round(57344.0, DT_F8E5M2), 57344.0);
	CHECK_SAME(inputs_round(61439.0, DT_F8E5M2), 57344.0);
	CHECK_SAME(inputs_round(61440.0, DT_F8E5M2), INFINITY);
	CHECK_SAME(inputs_round(1.125, DT_F8E5M2), 1.0);
	CHECK_SAME(inputs_round(1.375, DT_F8E5M2), 1.5);
	CHECK_SAME(inputs_round(ldexp(1, -16), DT_F8E5M2), ldexp(1, -16)); /* smallest subnormal */
	/* f32 and the pass-through types */
	CHECK_SAME(inputs_round(0.1, DT_F32), (double)0.1f);
	CHECK_SAME(inputs_round(1e39, DT_F32), INFINITY);
	CHECK_SAME(inputs_round(0.1, DT_F64), 0.1);
	CHECK_SAME(inputs_round(7.0, DT_I32), 7.0);
}

/* bf16 by the classic bit trick on the f32 pattern (round to nearest even). */
static double bf16_ref(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

/* f32 rounding agrees with the hardware conversion, and bf16 with the bit
** trick (applied to f32 values, where double rounding cannot happen), on
** many values across the whole exponent range. */
static void test_round_vs_reference(void)
{
	InputsRng r;
	inputs_rng_init(&r, 42, "round");
	long bad32 = 0, badbf = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t u = inputs_rng_u64(&r);
		double x =
		    ldexp(inputs_rng_unit(&r) + 0.5, (int)(u % 300) - 160) * (u >> 63 ? -1 : 1);
		bad32 += inputs_round(x, DT_F32) != (double)(float)x;
		float f = (float)ldexp(inputs_rng_unit(&r) + 0.5, (int)(u % 250) - 125);
		badbf += inputs_round(f, DT_BF16) != bf16_ref(f);
	}
	CHECK(bad32 == 0);
	CHECK(badbf == 0);
}

/* The log used by the normal generator is accurate to a few ulp. */
static void test_log(void)
{
	static const double xs[] = {1.0,         0.5,         0.75,      1e-300,
				    0.999999999, 0.123456789, 0x1p-1074, 2.0};
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
		CHECK_NEAR(inputs_log(xs[i]), log(xs[i]), 4e-16);
	CHECK_SAME(inputs_log(1.0), 0.0);
}

/* The first draws of seed 0, tensor "Q" (pinned on x86-64; any platform
** must give the same bits). */
#define PIN_Z0 -0x1.2e6f4e8b4aa6ap-1
#define PIN_Z1 0x1.d450ff3b369efp-5

/* Same (seed, name) -> same values; other names and seeds -> other values;
** the first draws are pinned so an algorithm change cannot go unnoticed. */
static void test_streams(void)
{
	InputsRng a, b, c, d;
	inputs_rng_init(&a, 1, "Q");
	inputs_rng_init(&b, 1, "Q");
	inputs_rng_init(&c, 1, "K");
	inputs_rng_init(&d, 2, "Q");
	int same_ab = 1, same_ac = 0, same_ad = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = inputs_rng_u64(&a), y = inputs_rng_u64(&b);
		same_ab &= x == y;
		same_ac += x == inputs_rng_u64(&c);
		same_ad += x == inputs_rng_u64(&d);
	}
	CHECK(same_ab && same_ac == 0 && same_ad == 0);

	/* pinned values of the u64 stream and of the first normals */
	inputs_rng_init(&a, 0, "Q");
	uint64_t first = inputs_rng_u64(&a);
	inputs_rng_init(&a, 0, "Q");
	double z0 = inputs_rng_normal(&a), z1 = inputs_rng_normal(&a);
	if (first != 0xfc5186ac56bd81b6ull || z0 != PIN_Z0 || z1 != PIN_Z1) {
		fprintf(stderr, "pinned values changed: u64 %016llx normals %a %a\n",
			(unsigned long long)first, z0, z1);
		tu_failures++;
	}

	/* filling a tensor does not depend on anything but (seed, name) */
	double x[64], y[64];
	inputs_fill(x, 64, DT_BF16, 7, "V", 0, 0);
	inputs_fill(y, 64, DT_BF16, 7, "V", 0, 0);
	CHECK(!memcmp(x, y, sizeof x));
	for (int i = 0; i < 64; i++)
		CHECK_SAME(inputs_round(x[i], DT_BF16), x[i]);
	/* a longer fill extends a shorter one */
	double z[128];
	inputs_fill(z, 128, DT_BF16, 7, "V", 0, 0);
	CHECK(!memcmp(x, z, sizeof x));
}

/* Moments of the normal, range and uniformity of ints, rate of bools. */
static void test_distributions(void)
{
	enum { N = 400000 };
	InputsRng r;
	inputs_rng_init(&r, 3, "stats");
	double s = 0, s2 = 0, s4 = 0;
	for (int i = 0; i < N; i++) {
		double z = inputs_rng_normal(&r);
		s += z, s2 += z * z, s4 += z * z * z * z;
	}
	CHECK(fabs(s / N) < 0.01);
	CHECK(fabs(s2 / N - 1) < 0.01);
	CHECK(fabs(s4 / N - 3) < 0.06);

	long hist[7] = {0}, out = 0, trues = 0;
	for (int i = 0; i < N; i++) {
		long v = inputs_rng_int(&r, -3, 3);
		if (v < -3 || v > 3)
			out++;
		else
			hist[v + 3]++;
		trues += inputs_rng_bool(&r);
	}
	CHECK(out == 0);
	for (int k = 0; k < 7; k++)
		CHECK(fabs(hist[k] / (double)N - 1.0 / 7) < 0.005);
	CHECK(fabs(trues / (double)N - 0.75) < 0.005);
	CHECK(inputs_rng_int(&r, 5, 5) == 5);
	long big = inputs_rng_int(&r, LONG_MIN, LONG_MAX); /* the full range must not hang */
	(void)big;

	double buf[1000];
	inputs_fill(buf, 1000, DT_I32, 9, "kv_len", 0, 4);
	int seen[5] = {0};
	for (int i = 0; i < 1000; i++) {
		CHECK(buf[i] >= 0 && buf[i] <= 4 && buf[i] == floor(buf[i]));
		if (buf[i] >= 0 && buf[i] <= 4)
			seen[(int)buf[i]] = 1;
	}
	CHECK(seen[0] && seen[4]); /* both ends are inclusive */
	inputs_fill(buf, 1000, DT_BOOL, 9, "mask", 0, 0);
	for (int i = 0; i < 1000; i++)
		CHECK(buf[i] == 0 || buf[i] == 1);
	inputs_fill(buf, 1000, DT_F8E4M3, 9, "q8", 0, 0);
	for (int i = 0; i < 1000; i++)
		CHECK_SAME(inputs_round(buf[i], DT_F8E4M3), buf[i]);
}

int main(void)
{
	test_round_known();
	test_round_vs_reference();
	test_log();
	test_streams();
	test_distributions();
	return tu_report("host_inputs");
}
