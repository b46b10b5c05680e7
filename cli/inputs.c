/*
** cli/inputs.c: platform-independent random inputs (see inputs.h).
** Built with -ffp-contract=off (host.cmake) so no compiler fuses a*b+c into
** an FMA on one platform and not on another.
*/
#include "inputs.h"

#include <math.h>

/* splitmix64: turns any 64-bit value into a well-mixed one; used to derive
** keys and to seed xoshiro, as its authors recommend. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* FNV-1a over the name's bytes: a stable, byte-order-free name hash. */
static uint64_t name_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)name; p && *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

/* key = mix(mix(seed) ^ hash(name)); four splitmix64 outputs of the key
** seed xoshiro, so nearby seeds or similar names give unrelated streams. */
void inputs_rng_init(InputsRng *r, uint64_t seed, const char *name)
{
	uint64_t x = seed;
	uint64_t key = splitmix64(&x);
	x = key ^ name_hash(name);
	key = splitmix64(&x);
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&key);
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) /* the one forbidden state */
		r->s[0] = 1;
	r->has_spare = 0;
	r->spare = 0;
}

/* Rotate left; k is 7 or 45 here, never 0. */
static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
uint64_t inputs_rng_u64(InputsRng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* The top 53 bits as a multiple of 2^-53: exact, uniform on the grid. */
double inputs_rng_unit(InputsRng *r)
{
	return (double)(inputs_rng_u64(r) >> 11) * 0x1p-53;
}

/* log(x) = e*ln2 + 2*atanh(f), f = (m-1)/(m+1) with m in [sqrt(1/2), sqrt(2)):
** |f| < 0.172, so the odd series to f^23 is below 1e-18 relative error. */
double inputs_log(double x)
{
	int e;
	double m = frexp(x, &e);
	if (m < 0.70710678118654752440) {
		m *= 2;
		e--;
	}
	double f = (m - 1) / (m + 1), f2 = f * f, s = 0;
	for (int k = 23; k >= 1; k -= 2)
		s = s * f2 + 1.0 / k;
	const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
	return e * ln2_hi + (e * ln2_lo + 2 * f * s);
}

/* Marsaglia's polar method: no sin/cos, one log per pair. */
double inputs_rng_normal(InputsRng *r)
{
	if (r->has_spare) {
		r->has_spare = 0;
		return r->spare;
	}
	double u, v, s;
	do {
		u = 2 * inputs_rng_unit(r) - 1;
		v = 2 * inputs_rng_unit(r) - 1;
		s = u * u + v * v;
	} while (s >= 1 || s == 0);
	double k = sqrt(-2 * inputs_log(s) / s);
	r->spare = v * k;
	r->has_spare = 1;
	return u * k;
}

/* Rejection on the top of the 64-bit range removes modulo bias. */
long inputs_rng_int(InputsRng *r, long lo, long hi)
{
	uint64_t span = (uint64_t)hi - (uint64_t)lo + 1; /* 0 means all 2^64 values */
	uint64_t x = inputs_rng_u64(r);
	if (span != 0) {
		uint64_t lim = UINT64_MAX - UINT64_MAX % span;
		while (x >= lim)
			x = inputs_rng_u64(r);
		x %= span;
	}
	return (long)((uint64_t)lo + x);
}

/* Two random bits, not both zero: probability 3/4. */
int inputs_rng_bool(InputsRng *r)
{
	return (inputs_rng_u64(r) >> 62) != 0;
}

/* A binary float format: stored mantissa bits, smallest normal exponent,
** largest finite value, and whether overflow goes to infinity. */
typedef struct Fmt {
	int mbits, emin;
	double maxf;
	int has_inf;
} Fmt;

/* Round to the format's grid at x's binade (the subnormal grid below emin);
** x / q and the product back are exact, rint breaks ties to even. */
static double round_fmt(double x, Fmt f)
{
	if (isnan(x))
		return x;
	if (isinf(x))
		return f.has_inf ? x : copysign(f.maxf, x);
	if (x == 0)
		return x;
	int e;
	frexp(x, &e);
	int lead = e - 1 < f.emin ? f.emin : e - 1;
	double q = ldexp(1.0, lead - f.mbits);
	double y = rint(x / q) * q;
	if (fabs(y) > f.maxf)
		y = f.has_inf ? copysign(INFINITY, x) : copysign(f.maxf, x);
	return y;
}

/* Each format's parameters; f8e4m3 is the OCP variant (bias 7, max 448). */
double inputs_round(double x, DType t)
{
	static const Fmt bf16 = {7, -126, 0x1.fep127, 1}, f16 = {10, -14, 65504.0, 1},
			 e4m3 = {3, -6, 448.0, 0}, e5m2 = {2, -14, 57344.0, 1},
			 f32 = {23, -126, 0x1.fffffep127, 1};
	switch (t) {
	case DT_BF16: return round_fmt(x, bf16);
	case DT_F16: return round_fmt(x, f16);
	case DT_F8E4M3: return round_fmt(x, e4m3);
	case DT_F8E5M2: return round_fmt(x, e5m2);
	case DT_F32: return round_fmt(x, f32);
	default: return x;
	}
}

/* One stream per tensor, drawn in row-major order. */
void inputs_fill(double *buf, long n, DType t, uint64_t seed, const char *name, long lo, long hi)
{
	InputsRng r;
	inputs_rng_init(&r, seed, name);
	for (long i = 0; i < n; i++) {
		if (t == DT_I32)
			buf[i] = (double)inputs_rng_int(&r, lo, hi);
		else if (t == DT_BOOL)
			buf[i] = inputs_rng_bool(&r);
		else
			buf[i] = inputs_round(inputs_rng_normal(&r), t);
	}
}

/* Random lengths, then one moved at a time until they sum to total: the
** lengths stay ragged (a balanced split would hide a kernel's bugs at
** sequence boundaries), and a zero and a one length are always there. */
int inputs_offsets(double *buf, long n, uint64_t seed, const char *name, long total, long longest)
{
	long b = n - 1, sum = 0;
	if (b < 1 || longest < 0 || total < 0 || total > b * longest)
		return -1;
	InputsRng r;
	inputs_rng_init(&r, seed, name);
	buf[0] = 0;
	for (long i = 0; i < b; i++)
		sum += (long)(buf[i + 1] = (double)inputs_rng_int(&r, 0, longest));
	int fix = b >= 3 && longest >= 1 && total >= 1 && total <= (b - 2) * longest + 1;
	if (fix)
		sum += 1 - (long)buf[1] - (long)buf[2], buf[1] = 0, buf[2] = 1;
	while (sum != total) {
		long i = inputs_rng_int(&r, fix ? 2 : 0, b - 1) + 1;
		if (sum > total && buf[i] > 0)
			buf[i]--, sum--;
		else if (sum < total && buf[i] < (double)longest)
			buf[i]++, sum++;
	}
	for (long i = 1; i <= b; i++)
		buf[i] += buf[i - 1];
	return 0;
}
