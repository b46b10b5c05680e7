/*
** test/unit/mlir_functions.c: every EX_CALL function, floor division and
** modulo of negative ints (and by zero), the remaining expression kinds
** (select on both paths, casts, bool tensors, int params, max/min) and the
** remaining reductions (prod, min, int sum, bool max, rank-0 outputs), each
** against C's own evaluation, in both precisions.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lowering/mlir/mlir_emit.h"
#include "lowering/mlir/refexec.h"
#include "mlir_testutil.h"

enum { NN = 23 };

/* Inputs, in tensor-id order. */
enum { X, Y, A, BV, MK, NIN };

static const struct {
	const char *name;
	Fn fn;
	int arg; /* X (positive) or Y (signed) */
} fns[FN_COUNT] = {
    {"F_exp", FN_EXP, Y},           {"F_exp2", FN_EXP2, Y},   {"F_log", FN_LOG, X},
    {"F_log2", FN_LOG2, X},         {"F_tanh", FN_TANH, Y},   {"F_sigmoid", FN_SIGMOID, Y},
    {"F_sqrt", FN_SQRT, X},         {"F_rsqrt", FN_RSQRT, X}, {"F_abs", FN_ABS, Y},
    {"F_relu", FN_RELU, Y},         {"F_log1p", FN_LOG1P, X}, {"F_expm1", FN_EXPM1, Y},
    {"F_erf", FN_ERF, Y},           {"F_floor", FN_FLOOR, Y}, {"F_ceil", FN_CEIL, Y},
    {"F_round", FN_ROUND, Y},       {"F_sign", FN_SIGN, Y},   {"F_elu", FN_ELU, Y},
    {"F_softplus", FN_SOFTPLUS, Y},
};

/* Other outputs, in tensor-id order after the functions. */
enum { QD, RM, MX, MN2, SEL, SH, CF, RI, WD, OFF, PR, MN, CNT, ANY, NOTHER };

static double c_fn(Fn f, double x)
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

#define I0 tb_i(tb, 0)
#define DN tb_d(tb, N)

/* Elementwise nodes over i < N (one variable). */
static void elementwise(TB *tb, Tensor *out, Expr *body, Expr *filter, Dim *N)
{
	tb_node(tb, out, RED_NONE, 1, 0, body, filter, DN);
}

/* Rank-0 reductions over j < N (variable 0 is the reduced one). */
static void reduce(TB *tb, Tensor *out, RedOp r, Expr *body, Dim *N)
{
	tb_node(tb, out, r, 0, 1, body, NULL, DN);
}

static void build(TB *tb, Tensor **t)
{
	tb_init(tb, "functions");
	Dim *N = tb_dim(tb, "N");
	Param *pi = tb_param(tb, "stride", VT_INT);
	t[X] = tb_tensor(tb, "X", TK_IN, DT_F32, 1, DN);
	t[Y] = tb_tensor(tb, "Y", TK_IN, DT_F32, 1, DN);
	t[A] = tb_tensor(tb, "A", TK_IN, DT_I32, 1, DN);
	t[BV] = tb_tensor(tb, "Bv", TK_IN, DT_I32, 1, DN);
	t[MK] = tb_tensor(tb, "Mk", TK_IN, DT_BOOL, 1, DN);
	Tensor **f = t + NIN, **o = t + NIN + FN_COUNT;
	for (int k = 0; k < FN_COUNT; k++)
		f[k] = tb_tensor(tb, fns[k].name, TK_OUT, DT_F32, 1, DN);
	static const char *const names[NOTHER] = {"Qd", "Rm", "Mx",  "Mn2", "Sel", "Sh",  "Cf",
						  "Ri", "Wd", "Off", "Pr",  "Mn",  "Cnt", "Any"};
	for (int k = 0; k < NOTHER; k++) {
		int is_int = k == QD || k == RM || k == OFF || k == CNT;
		DType dt = is_int ? DT_I32 : k == ANY ? DT_BOOL : DT_F32;
		o[k] = k >= PR ? tb_tensor(tb, names[k], TK_OUT, dt, 0)
			       : tb_tensor(tb, names[k], TK_OUT, dt, 1, DN);
	}
#define AT(k) tb_at(tb, t[k], I0)
	for (int k = 0; k < FN_COUNT; k++)
		elementwise(tb, f[k], tb_call(tb, fns[k].fn, AT(fns[k].arg)), NULL, N);
	elementwise(tb, o[QD], tb_bin(tb, OP_DIV, AT(A), AT(BV)), NULL, N);
	elementwise(tb, o[RM], tb_bin(tb, OP_MOD, AT(A), AT(BV)), NULL, N);
	elementwise(tb, o[MX], tb_bin(tb, OP_MAX, AT(X), AT(Y)), NULL, N);
	elementwise(tb, o[MN2], tb_bin(tb, OP_MIN, AT(X), AT(Y)), NULL, N);
	elementwise(tb, o[SEL], tb_sel(tb, AT(MK), AT(X), tb_un(tb, OP_NEG, AT(Y))), NULL, N);
	/* Y[i - 1] is out of bounds at i = 0: only the scf.if path is safe */
	Expr *prev = tb_at(tb, t[Y], tb_bin(tb, OP_SUB, I0, tb_n(tb, 1)));
	elementwise(tb, o[SH], tb_sel(tb, tb_bin(tb, OP_GT, I0, tb_n(tb, 0)), prev, tb_f(tb, -1.5)),
		    NULL, N);
	elementwise(tb, o[CF], tb_bin(tb, OP_MUL, tb_cast(tb, AT(A)), tb_f(tb, 0.5)), NULL, N);
	elementwise(tb, o[RI], tb_call(tb, FN_RSQRT, tb_bin(tb, OP_ADD, I0, tb_n(tb, 1))), NULL, N);
	Expr *even = tb_bin(tb, OP_EQ, tb_bin(tb, OP_MOD, I0, tb_n(tb, 2)), tb_n(tb, 0));
	o[WD]->domain = even;
	elementwise(tb, o[WD], tb_bin(tb, OP_ADD, AT(Y), tb_f(tb, 1)), even, N);
	Expr *off = tb_bin(tb, OP_SUB, tb_bin(tb, OP_MUL, AT(A), tb_p(tb, pi)), I0);
	elementwise(tb, o[OFF], off, NULL, N);
	reduce(tb, o[PR], RED_PROD, AT(X), N);
	reduce(tb, o[MN], RED_MIN, AT(Y), N);
	Expr *pos = tb_bin(tb, OP_GT, AT(A), tb_n(tb, 0));
	reduce(tb, o[CNT], RED_SUM, tb_sel(tb, pos, tb_n(tb, 1), tb_n(tb, 0)), N);
	Expr *big = tb_un(tb, OP_NOT, tb_bin(tb, OP_LT, AT(A), tb_n(tb, 5)));
	reduce(tb, o[ANY], RED_MAX, expr_and(&tb->a, AT(MK), big), N);
}

/* The expected value of every output at i (i = 0 for rank 0). */
static double expect(int k, long i, double *const *in, long stride)
{
	const double *x = in[X], *y = in[Y], *a = in[A], *bv = in[BV], *mk = in[MK];
	if (k < FN_COUNT)
		return c_fn(fns[k].fn, in[fns[k].arg][i]);
	double r;
	switch (k - FN_COUNT) {
	case QD: return floordiv((long)a[i], (long)bv[i]);
	case RM: return floormod((long)a[i], (long)bv[i]);
	case MX: return fmax(x[i], y[i]);
	case MN2: return fmin(x[i], y[i]);
	case SEL: return mk[i] ? x[i] : -y[i];
	case SH: return i > 0 ? y[i - 1] : -1.5;
	case CF: return a[i] * 0.5;
	case RI: return 1 / sqrt((double)(i + 1));
	case WD: return i % 2 == 0 ? y[i] + 1 : 0;
	case OFF: return a[i] * stride - i;
	case PR:
		r = 1;
		for (long j = 0; j < NN; j++)
			r *= x[j];
		return r;
	case MN:
		r = INFINITY;
		for (long j = 0; j < NN; j++)
			r = fmin(r, y[j]);
		return r;
	case CNT:
		r = 0;
		for (long j = 0; j < NN; j++)
			r += a[j] > 0;
		return r;
	default:
		r = 0;
		for (long j = 0; j < NN; j++)
			r = r || (mk[j] && a[j] >= 5);
		return r;
	}
}

static void fill_inputs(Binding *bd)
{
	unsigned seed = 3;
	tb_fill(bd->data[X], NN, 0.1, 3, &seed);
	tb_fill(bd->data[Y], NN, -3, 3, &seed);
	for (long i = 0; i < NN; i++) {
		bd->data[A][i] = (double)((long)(i * 7 % 19) - 9); /* -9 .. 9 */
		bd->data[BV][i] = (double)((long)(i * 5 % 9) - 4); /* -4 .. 4, zero included */
		bd->data[MK][i] = (double)(i % 3 != 0);
	}
	bd->params[0] = 3;
}

static void run(int use_f64)
{
	TB tb;
	Tensor *t[NIN + FN_COUNT + NOTHER];
	build(&tb, t);
	Binding bd;
	long dims[1] = {NN};
	tb_bind(&tb, &bd, dims);
	fill_inputs(&bd);
	char err[512];
	int rc = refexec_run(&bd, use_f64, err, sizeof err);
	CHECK(rc == 0, "refexec_run: %s", err);
	double tol = use_f64 ? 1e-12 : 1e-5, worst = 0;
	for (int k = 0; rc == 0 && k < FN_COUNT + NOTHER; k++) {
		Tensor *o = t[NIN + k];
		long n = tensor_numel(o, bd.dims);
		for (long i = 0; i < n; i++) {
			double w = expect(k, i, bd.data, 3), g = bd.data[o->id][i];
			double e = fabs(g - w) / fmax(1, fabs(w));
			worst = fmax(worst, e);
			if (o->type != VT_FLOAT)
				CHECK(g == w, "%s[%ld] = %g, want %g", o->name, i, g, w);
			else
				CHECK(e < tol, "%s[%ld] = %.17g, want %.17g", o->name, i, g, w);
		}
	}
	printf("functions %s: worst error %.3g\n", use_f64 ? "f64" : "f32", worst);
	tb_unbind(&tb, &bd);
	tb_free(&tb);
}

/* A construct the emitter rejects (a sum of bools) fails cleanly in both
** entry points, and a fixed dim bound to another size is refused. */
static void run_errors(void)
{
	TB tb;
	tb_init(&tb, "bad");
	Dim *N = tb_dim(&tb, "N");
	N->fixed = 4;
	Tensor *mk = tb_tensor(&tb, "Mk", TK_IN, DT_BOOL, 1, tb_d(&tb, N));
	Tensor *z = tb_tensor(&tb, "Z", TK_OUT, DT_BOOL, 0);
	tb_node(&tb, z, RED_SUM, 0, 1, tb_at(&tb, mk, tb_i(&tb, 0)), NULL, tb_d(&tb, N));
	FILE *sink = tmpfile();
	CHECK(mlir_emit_program(sink, sink, &tb.p, 0) != 0, "bool sum accepted by the emitter");
	fclose(sink);
	Binding bd;
	char err[512];
	long dims[1] = {4};
	tb_bind(&tb, &bd, dims);
	CHECK(refexec_run(&bd, 0, err, sizeof err) != 0 && err[0], "bool sum accepted");
	printf("unsupported: %s\n", err);
	bd.dims[0] = 5;
	CHECK(refexec_run(&bd, 0, err, sizeof err) != 0 && err[0], "wrong fixed dim accepted");
	printf("fixed dim: %s\n", err);
	tb_unbind(&tb, &bd);
	tb_free(&tb);
}

int main(void)
{
	run(1);
	run(0);
	run_errors();
	return tb_failures != 0;
}
