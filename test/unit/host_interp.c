/*
** test/unit/host_interp.c: the f64 interpreter on hand-built cascades.
** The desugared causal softmax attention is checked against plain loops
** (tu_causal_ref), including a batch whose kv_len is 0: every row there is
** fully masked, so O must be exactly 0 and L -inf, with no NaN anywhere.
** A second cascade exercises every operator, function, cast, select,
** reduction kind, absent-point rule and the int/bool paths; a third set
** checks that mistakes are reported instead of crashing.
*/
#include "host_testutil.h"

#include <limits.h>

#include "cli/inputs.h"
#include "cli/interp.h"

/* Causal attention with kv_len {0, 4, N}: interpreter == reference loops. */
static void test_causal(void)
{
	Arena ar;
	arena_init(&ar);
	Arena *a = &ar;
	Cascade *c = tb_causal(a, "causal", DT_BF16, 0);
	long B = 3, H = 2, N = 7, D = 5;
	long dims[4] = {B, H, N, D};
	double params[1];
	CHECK(cascade_param_defaults(c, dims, params, NULL) == -1);
	CHECK_NEAR(params[0], 1 / sqrt(5.0), 1e-15);
	Binding b;
	bind_alloc(&b, c, dims, params);
	long n = B * H * N * D;
	inputs_fill(buf_of(&b, "Q"), n, DT_BF16, 1, "Q", 0, 0);
	inputs_fill(buf_of(&b, "K"), n, DT_BF16, 1, "K", 0, 0);
	inputs_fill(buf_of(&b, "V"), n, DT_BF16, 1, "V", 0, 0);
	double *kv = buf_of(&b, "kv_len");
	kv[0] = 0, kv[1] = 4, kv[2] = (double)N;
	char err[256] = "";
	int rc = interp_run(&b, err, sizeof err);
	if (rc)
		fprintf(stderr, "interp_run: %s\n", err);
	CHECK(rc == 0);
	double *O = malloc((size_t)n * sizeof *O), *L = malloc((size_t)(B * H * N) * sizeof *L);
	tu_causal_ref(B, H, N, D, params[0], buf_of(&b, "Q"), buf_of(&b, "K"), buf_of(&b, "V"), kv,
		      O, L);
	const double *o = buf_of(&b, "O"), *l = buf_of(&b, "L");
	for (long i = 0; i < n; i++) {
		CHECK(!isnan(o[i]));
		CHECK_NEAR(o[i], O[i], 1e-13);
	}
	for (long i = 0; i < H * N * D; i++) /* batch 0 is fully masked */
		CHECK_SAME(o[i], 0.0);
	for (long i = 0; i < B * H * N; i++) {
		CHECK(!isnan(l[i]));
		CHECK_NEAR(l[i], L[i], 1e-13);
		if (i < H * N)
			CHECK_SAME(l[i], -INFINITY);
	}
	free(O);
	free(L);
	bind_free(&b, c);
	arena_free(a);
}

/* ---- every operator ------------------------------------------------------ */

static long fdiv(long a, long b)
{
	return (long)floor((double)a / (double)b);
}
static long fmodl_(long a, long b)
{
	return a - b * fdiv(a, b);
}

static double fn_ref(int f, double x)
{
	switch (f) {
	case FN_EXP: return exp(x);
	case FN_EXP2: return exp2(x);
	case FN_LOG: return log(x);
	case FN_LOG2: return log2(x);
	case FN_TANH: return tanh(x);
	case FN_SIGMOID: return 1 / (1 + exp(-x));
	case FN_SQRT: return sqrt(x);
	case FN_RSQRT: return 1 / sqrt(x);
	case FN_ABS: return fabs(x);
	case FN_LOG1P: return log1p(x);
	case FN_EXPM1: return expm1(x);
	case FN_ERF: return erf(x);
	case FN_FLOOR: return floor(x);
	case FN_CEIL: return ceil(x);
	case FN_ROUND: return nearbyint(x);
	case FN_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
	case FN_ELU: return x > 0 ? x : expm1(x);
	case FN_SOFTPLUS: return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x)));
	default: return x > 0 ? x : 0;
	}
}

/* Each output of "ops" against its C counterpart. */
static void test_ops(void)
{
	Arena ar;
	arena_init(&ar);
	Arena *a = &ar;
	Cascade *c = tb_ops(a);
	long dims[1] = {NOPS};
	double params[1] = {3};
	Binding b;
	bind_alloc(&b, c, dims, params);
	memcpy(buf_of(&b, "x"), ops_x, sizeof ops_x);
	memcpy(buf_of(&b, "k"), ops_k, sizeof ops_k);
	memcpy(buf_of(&b, "m"), ops_m, sizeof ops_m);
	char err[256] = "";
	int rc = interp_run(&b, err, sizeof err);
	if (rc)
		fprintf(stderr, "interp_run: %s\n", err);
	CHECK(rc == 0);
	for (int f = 0; f < FN_COUNT; f++)
		for (int i = 0; i < NOPS; i++)
			CHECK_SAME(buf_of(&b, "F")[f * NOPS + i], fn_ref(f, ops_x[i]));
	for (int i = 0; i < NOPS; i++) {
		long k = (long)ops_k[i];
		double x = ops_x[i];
		CHECK_SAME(buf_of(&b, "Dv")[i], (double)fdiv(k, 3));
		CHECK_SAME(buf_of(&b, "Md")[i], (double)fmodl_(k, 3));
		CHECK_SAME(buf_of(&b, "Dn")[i], (double)fdiv(k, -3));
		CHECK_SAME(buf_of(&b, "Mn")[i], (double)fmodl_(k, -3));
		CHECK_SAME(buf_of(&b, "Cs")[i], k * 0.5 + ops_m[i]);
		CHECK_SAME(buf_of(&b, "Bo")[i], (double)((ops_m[i] && k > 0) || !ops_m[i]));
		CHECK_SAME(buf_of(&b, "Mx")[i], fmax(x, 0.25) + fmin(x, -0.25));
		CHECK_SAME(buf_of(&b, "Sh")[i], ops_x[(i + 1) % NOPS] - ops_x[NOPS - 1 - i]);
		double p = 1, mn = INFINITY, mx = -INFINITY, r2 = 0, rm = 0;
		long is = 0, ib = 0;
		for (int j = 0; j < NOPS; j++) {
			if (j <= i)
				p *= ops_x[j] + 2.0, is += (long)ops_k[j];
			if (j < i)
				mn = fmin(mn, ops_x[j]);
			if (j > i)
				mx = fmax(mx, ops_x[j]);
			if (j >= i)
				ib += ops_m[j] != 0;
			if (ops_m[j] && j != i)
				rm += ops_x[j];
			for (int l = 0; l < NOPS; l++)
				if (j + l == i)
					r2 += ops_x[j] * ops_x[l];
		}
		CHECK_SAME(buf_of(&b, "Rp")[i], p);
		CHECK_SAME(buf_of(&b, "Rmin")[i], mn); /* i = 0: empty -> +inf */
		CHECK_SAME(buf_of(&b, "Rmax")[i], mx); /* i = N-1: empty -> -inf */
		CHECK_SAME(buf_of(&b, "Dm")[i], i % 2 ? 0.0 : x + 1);
		CHECK_SAME(buf_of(&b, "Is")[i], (double)is);
		CHECK_SAME(buf_of(&b, "Si")[i], ops_m[i] ? (double)k : (double)-k);
		CHECK_SAME(buf_of(&b, "R2")[i], r2);
		CHECK_SAME(buf_of(&b, "Rm")[i], rm);
		CHECK_SAME(buf_of(&b, "Ng")[i], -(x / 4.0));
		CHECK_SAME(buf_of(&b, "Ib")[i], (double)ib);
	}
	bind_free(&b, c);
	arena_free(a);
}

/* ---- mistakes are errors, not crashes ---------------------------------- */

/* Runs c with all-zero bound buffers; expects failure mentioning `want`. */
static void expect_fail(Cascade *c, long *dims, const char *want, int bind_out)
{
	Binding b;
	double params[4] = {0};
	b.c = c, b.dims = dims, b.params = params;
	double dummy[8] = {0};
	double *data[8] = {0};
	for (int i = 0; i < c->tensors.n && i < 8; i++) {
		const Tensor *t = c->tensors.v[i];
		data[i] = t->kind == TK_TEMP || (t->kind == TK_OUT && !bind_out) ? NULL : dummy;
	}
	b.data = data;
	char err[256] = "";
	CHECK(interp_run(&b, err, sizeof err) != 0);
	if (!strstr(err, want)) {
		fprintf(stderr, "error '%s' does not mention '%s'\n", err, want);
		tu_failures++;
	}
}

static void test_errors(void)
{
	Arena ar;
	arena_init(&ar);
	Arena *a = &ar;
	/* y[i] = x[i + 1]: the last point reads past the end */
	Cascade *c = tb_cascade(a, "oob");
	Dim *N = tb_dimdecl(a, c, "N", 0);
	Tensor *x = tb_tensor(a, c, "x", TK_IN, DT_F32, 1, tb_dim(a, N));
	Tensor *y = tb_tensor(a, c, "y", TK_OUT, DT_F32, 1, tb_dim(a, N));
	tb_node(a, c, y, RED_NONE, tb_at(a, x, BIN(OP_ADD, IX(0), expr_int(a, 1))), NULL, 0);
	long n4[1] = {4};
	expect_fail(c, n4, "index 4 of dimension 0 of 'x' is out of range [0, 4)", 1);
	/* an unbound output */
	expect_fail(c, n4, "no buffer bound for output 'y'", 0);
	/* sizes whose product overflows, and one over the cap */
	c = tb_cascade(a, "huge");
	N = tb_dimdecl(a, c, "N", 0);
	x = tb_tensor(a, c, "x", TK_IN, DT_F32, 1, tb_dim(a, N));
	Tensor *t =
	    tb_tensor(a, c, "t", TK_TEMP, DT_F32, 3, tb_dim(a, N), tb_dim(a, N), tb_dim(a, N));
	tb_node(a, c, t, RED_NONE, expr_float(a, 1), NULL, 0);
	long big[1] = {1L << 22};
	expect_fail(c, big, "'t' has a negative or too large shape", 1);
	long huge[1] = {LONG_MAX / 2};
	expect_fail(c, huge, "too large shape", 1);
	/* a temporary read before the node that defines it */
	c = tb_cascade(a, "order");
	N = tb_dimdecl(a, c, "N", 0);
	y = tb_tensor(a, c, "y", TK_OUT, DT_F32, 1, tb_dim(a, N));
	t = tb_tensor(a, c, "t", TK_TEMP, DT_F32, 1, tb_dim(a, N));
	tb_node(a, c, y, RED_NONE, tb_at(a, t, IX(0)), NULL, 0);
	tb_node(a, c, t, RED_NONE, expr_float(a, 1), NULL, 0);
	expect_fail(c, n4, "'t' is read before it is computed", 1);
	arena_free(a);
}

int main(void)
{
	test_causal();
	test_ops();
	test_errors();
	return tu_report("host_interp");
}
