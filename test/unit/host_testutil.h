/*
** test/unit/host_testutil.h: shared by the host_* unit tests: a tiny check
** macro and builders for hand-made cascades (what the front end will
** produce, written out node by node), including the desugared causal
** softmax attention used by the interpreter and `attnc run` tests.
*/
#ifndef ATTN_HOST_TESTUTIL_H
#define ATTN_HOST_TESTUTIL_H

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/cascade.h"

static int tu_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

/* Exact equality, treating NaN == NaN and telling -0 from +0 apart. */
#define CHECK_SAME(a, b)                                                                           \
	do {                                                                                       \
		double tu_a = (a), tu_b = (b);                                                     \
		if (!((isnan(tu_a) && isnan(tu_b)) ||                                              \
		      (tu_a == tu_b && signbit(tu_a) == signbit(tu_b)))) {                         \
			fprintf(stderr, "%s:%d: %s = %.17g, expected %.17g\n", __FILE__, __LINE__, \
				#a, tu_a, tu_b);                                                   \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

/* |a - b| <= tol * max(1, |b|), with equal infinities allowed. */
#define CHECK_NEAR(a, b, tol)                                                                      \
	do {                                                                                       \
		double tu_a = (a), tu_b = (b);                                                     \
		int tu_ok = tu_a == tu_b || fabs(tu_a - tu_b) <= (tol)*fmax(1.0, fabs(tu_b));      \
		if (!tu_ok) {                                                                      \
			fprintf(stderr, "%s:%d: %s = %.17g, expected %.17g\n", __FILE__, __LINE__, \
				#a, tu_a, tu_b);                                                   \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

static inline int tu_report(const char *name)
{
	if (tu_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name, tu_failures);
	else
		printf("%s: all checks passed\n", name);
	return tu_failures != 0;
}

/* A file's whole contents, or NULL; the caller frees. */
static inline char *tu_slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	size_t cap = 4096, n = 0, got;
	char *buf = malloc(cap + 1);
	while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n == cap) {
			char *nb = realloc(buf, 2 * cap + 1);
			if (!nb)
				free(buf);
			buf = nb, cap *= 2;
		}
	}
	fclose(fp);
	if (buf)
		buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* mkdir -p for a scratch directory. */
static inline void tu_mkdirs(const char *dir)
{
	char p[1024];
	snprintf(p, sizeof p, "%s", dir);
	for (char *q = p + 1; *q; q++)
		if (*q == '/') {
			*q = 0;
			mkdir(p, 0777);
			*q = '/';
		}
	mkdir(p, 0777);
}

/* Writes bytes to a file; 0 on success. */
static inline int tu_write(const char *path, const void *data, size_t n)
{
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return -1;
	size_t w = fwrite(data, 1, n, fp);
	return (fclose(fp) || w != n) ? -1 : 0;
}

/* Buffers for every in/out tensor of c (temporaries stay NULL). */
static inline void bind_alloc(Binding *b, const Cascade *c, long *dims, double *params)
{
	b->c = c, b->dims = dims, b->params = params;
	b->data = calloc((size_t)c->tensors.n, sizeof *b->data);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP)
			b->data[i] = calloc((size_t)tensor_numel(t, dims) + 1, sizeof(double));
	}
}

static inline void bind_free(Binding *b, const Cascade *c)
{
	for (int i = 0; i < c->tensors.n; i++)
		free(b->data[i]);
	free(b->data);
}

static inline double *buf_of(Binding *b, const char *name)
{
	return b->data[cascade_tensor(b->c, name)->id];
}

/* ---- IR builders -------------------------------------------------------- */

static inline Expr *tb_new(Arena *a, ExprKind k, VType t, int nargs)
{
	Expr *e = expr_new(a, k, t, NOLOC);
	e->nargs = nargs;
	e->args = nargs ? ARENA_ARRAY(a, Expr *, nargs) : NULL;
	return e;
}

static inline Expr *tb_dim(Arena *a, Dim *d)
{
	Expr *e = tb_new(a, EX_DIM, VT_INT, 0);
	e->dim = d;
	return e;
}

static inline Expr *tb_param(Arena *a, Param *p)
{
	Expr *e = tb_new(a, EX_PARAM, p->type, 0);
	e->param = p;
	return e;
}

static inline Expr *tb_bool(Arena *a, int v)
{
	Expr *e = tb_new(a, EX_BOOL, VT_BOOL, 0);
	e->ival = v;
	return e;
}

static inline Expr *tb_unop(Arena *a, Op op, Expr *x)
{
	Expr *e = tb_new(a, EX_UNOP, op == OP_NOT ? VT_BOOL : x->type, 1);
	e->op = op;
	e->args[0] = x;
	return e;
}

static inline Expr *tb_call(Arena *a, Fn f, Expr *x)
{
	Expr *e = tb_new(a, EX_CALL, VT_FLOAT, 1);
	e->op = f;
	e->args[0] = x;
	return e;
}

static inline Expr *tb_cast(Arena *a, Expr *x)
{
	Expr *e = tb_new(a, EX_CAST, VT_FLOAT, 1);
	e->args[0] = x;
	return e;
}

static inline Expr *tb_select(Arena *a, Expr *c, Expr *x, Expr *y)
{
	Expr *e = tb_new(a, EX_SELECT, x->type, 3);
	e->args[0] = c, e->args[1] = x, e->args[2] = y;
	return e;
}

/* t[args...] with exactly t->rank index expressions. */
static inline Expr *tb_at(Arena *a, Tensor *t, ...)
{
	Expr *e = tb_new(a, EX_ACCESS, t->type, t->rank);
	e->tensor = t;
	va_list ap;
	va_start(ap, t);
	for (int k = 0; k < t->rank; k++)
		e->args[k] = va_arg(ap, Expr *);
	va_end(ap);
	return e;
}

static inline Dim *tb_dimdecl(Arena *a, Cascade *c, const char *name, long fixed)
{
	Dim *d = ARENA_NEW(a, Dim);
	d->name = name, d->id = c->dims.n, d->fixed = fixed, d->loc = NOLOC;
	ptrvec_push(a, &c->dims, d);
	return d;
}

static inline Param *tb_paramdecl(Arena *a, Cascade *c, const char *name, VType t, Expr *deflt)
{
	Param *p = ARENA_NEW(a, Param);
	p->name = name, p->id = c->params.n, p->type = t, p->deflt = deflt, p->loc = NOLOC;
	p->dtype = t == VT_INT ? DT_I32 : DT_F32;
	ptrvec_push(a, &c->params, p);
	return p;
}

/* A tensor with rank shape expressions (Expr *) following. */
static inline Tensor *tb_tensor(Arena *a, Cascade *c, const char *name, TensorKind k, DType dt,
				int rank, ...)
{
	Tensor *t = ARENA_NEW(a, Tensor);
	t->name = name, t->id = c->tensors.n, t->kind = k, t->dtype = dt, t->rank = rank;
	t->type = dt == DT_I32 ? VT_INT : dt == DT_BOOL ? VT_BOOL : VT_FLOAT;
	t->shape = ARENA_ARRAY(a, Expr *, rank > 0 ? rank : 1);
	t->loc = NOLOC;
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		t->shape[i] = va_arg(ap, Expr *);
	va_end(ap);
	ptrvec_push(a, &c->tensors, t);
	return t;
}

/* A node defining out; nred reduced extents (Expr *) follow. Free variables
** are out's dimensions; reduced ones are numbered after them. */
static inline Node *tb_node(Arena *a, Cascade *c, Tensor *out, RedOp red, Expr *body, Expr *filter,
			    int nred, ...)
{
	Node *n = ARENA_NEW(a, Node);
	n->id = c->nodes.n, n->out = out, n->nfree = out->rank, n->nred = nred;
	n->red = red, n->body = body, n->filter = filter, n->loc = NOLOC, n->origin = "test";
	n->vars = ARENA_ARRAY(a, IndexVar, out->rank + nred + 1);
	va_list ap;
	va_start(ap, nred);
	for (int k = 0; k < out->rank + nred; k++) {
		n->vars[k].name = arena_printf(a, "%c%d", k < out->rank ? 'i' : 'r', k);
		n->vars[k].extent =
		    k < out->rank ? expr_copy(a, out->shape[k]) : va_arg(ap, Expr *);
		n->vars[k].loc = NOLOC;
	}
	va_end(ap);
	out->def = n;
	ptrvec_push(a, &c->nodes, n);
	return n;
}

static inline Cascade *tb_cascade(Arena *a, const char *name)
{
	Cascade *c = ARENA_NEW(a, Cascade);
	c->name = name, c->loc = NOLOC;
	return c;
}

#define IX(k)         expr_index(a, (k))
#define BIN(op, l, r) expr_binop(a, (op), (l), (r))

/* j <= i && j < kv_len[b], with b, i, j the given iteration variables. */
static inline Expr *tb_causal_pred(Arena *a, Tensor *kv_len, int b, int i, int j)
{
	return expr_and(a, BIN(OP_LE, IX(j), IX(i)), BIN(OP_LT, IX(j), tb_at(a, kv_len, IX(b))));
}

/*
** attention NAME {
**   dims B, H, N, D (D = fixed_d when nonzero); param scale : f32 = rsqrt(D);
**   in Q, K, V [B, H, N, D] : qkv; in kv_len[B] : i32;
**   out O[B, H, N, D] : f32; out L[B, H, N] : f32;
**   S = scale * sum[d](Q*K) where j <= i && j < kv_len[b];
**   O = sum[j](softmax[j](S) * V); L = logsumexp[j](S);
** }, desugared as the brief lays out.
*/
static inline Cascade *tb_causal(Arena *a, const char *name, DType qkv, long fixed_d)
{
	Cascade *c = tb_cascade(a, name);
	Dim *B = tb_dimdecl(a, c, "B", 0), *H = tb_dimdecl(a, c, "H", 0);
	Dim *N = tb_dimdecl(a, c, "N", 0), *D = tb_dimdecl(a, c, "D", fixed_d);
#define SH4 tb_dim(a, B), tb_dim(a, H), tb_dim(a, N)
	Param *scale =
	    tb_paramdecl(a, c, "scale", VT_FLOAT, tb_call(a, FN_RSQRT, tb_cast(a, tb_dim(a, D))));
	Tensor *Q = tb_tensor(a, c, "Q", TK_IN, qkv, 4, SH4, tb_dim(a, D));
	Tensor *K = tb_tensor(a, c, "K", TK_IN, qkv, 4, SH4, tb_dim(a, D));
	Tensor *V = tb_tensor(a, c, "V", TK_IN, qkv, 4, SH4, tb_dim(a, D));
	Tensor *kv = tb_tensor(a, c, "kv_len", TK_IN, DT_I32, 1, tb_dim(a, B));
	Tensor *O = tb_tensor(a, c, "O", TK_OUT, DT_F32, 4, SH4, tb_dim(a, D));
	Tensor *L = tb_tensor(a, c, "L", TK_OUT, DT_F32, 3, SH4);
	Tensor *Sd = tb_tensor(a, c, "S.dot", TK_TEMP, DT_F32, 4, SH4, tb_dim(a, N));
	Tensor *S = tb_tensor(a, c, "S", TK_TEMP, DT_F32, 4, SH4, tb_dim(a, N));
	Tensor *Pm = tb_tensor(a, c, "P.max", TK_TEMP, DT_F32, 3, SH4);
	Tensor *Pe = tb_tensor(a, c, "P.exp", TK_TEMP, DT_F32, 4, SH4, tb_dim(a, N));
	Tensor *Ps = tb_tensor(a, c, "P.sum", TK_TEMP, DT_F32, 3, SH4);
	Tensor *P = tb_tensor(a, c, "P", TK_TEMP, DT_F32, 4, SH4, tb_dim(a, N));
#undef SH4
	Sd->domain = S->domain = Pe->domain = P->domain = tb_causal_pred(a, kv, 0, 2, 3);

	tb_node(a, c, Sd, RED_SUM,
		BIN(OP_MUL, tb_at(a, Q, IX(0), IX(1), IX(2), IX(4)),
		    tb_at(a, K, IX(0), IX(1), IX(3), IX(4))),
		tb_causal_pred(a, kv, 0, 2, 3), 1, tb_dim(a, D));
	tb_node(a, c, S, RED_NONE,
		BIN(OP_MUL, tb_param(a, scale), tb_at(a, Sd, IX(0), IX(1), IX(2), IX(3))),
		tb_causal_pred(a, kv, 0, 2, 3), 0);
	tb_node(a, c, Pm, RED_MAX, tb_at(a, S, IX(0), IX(1), IX(2), IX(3)),
		tb_causal_pred(a, kv, 0, 2, 3), 1, tb_dim(a, N));
	tb_node(a, c, Pe, RED_NONE,
		tb_call(a, FN_EXP,
			BIN(OP_SUB, tb_at(a, S, IX(0), IX(1), IX(2), IX(3)),
			    tb_at(a, Pm, IX(0), IX(1), IX(2)))),
		tb_causal_pred(a, kv, 0, 2, 3), 0);
	tb_node(a, c, Ps, RED_SUM, tb_at(a, Pe, IX(0), IX(1), IX(2), IX(3)),
		tb_causal_pred(a, kv, 0, 2, 3), 1, tb_dim(a, N));
	tb_node(a, c, P, RED_NONE,
		BIN(OP_DIV, tb_at(a, Pe, IX(0), IX(1), IX(2), IX(3)),
		    tb_at(a, Ps, IX(0), IX(1), IX(2))),
		tb_causal_pred(a, kv, 0, 2, 3), 0);
	tb_node(a, c, O, RED_SUM,
		BIN(OP_MUL, tb_at(a, P, IX(0), IX(1), IX(2), IX(4)),
		    tb_at(a, V, IX(0), IX(1), IX(4), IX(3))),
		tb_causal_pred(a, kv, 0, 2, 4), 1, tb_dim(a, N));
	tb_node(a, c, L, RED_NONE,
		BIN(OP_ADD, tb_at(a, Pm, IX(0), IX(1), IX(2)),
		    tb_call(a, FN_LOG, tb_at(a, Ps, IX(0), IX(1), IX(2)))),
		NULL, 0);
	return c;
}

/* The same computation as plain loops over f64 arrays: the independent
** answer the interpreter is checked against. Empty rows give O = 0 and
** L = -inf. */
static inline void tu_causal_ref(long B, long H, long N, long D, double scale, const double *Q,
				 const double *K, const double *V, const double *kv_len, double *O,
				 double *L)
{
	double *s = malloc((size_t)N * sizeof *s);
	for (long b = 0; b < B; b++)
		for (long h = 0; h < H; h++)
			for (long i = 0; i < N; i++) {
				long base = ((b * H + h) * N) * D, nk = 0;
				double m = -INFINITY, sum = 0;
				for (long j = 0; j <= i && j < (long)kv_len[b]; j++, nk++) {
					double dot = 0;
					for (long d = 0; d < D; d++)
						dot += Q[base + i * D + d] * K[base + j * D + d];
					s[j] = scale * dot;
					m = s[j] > m ? s[j] : m;
				}
				for (long j = 0; j < nk; j++)
					sum += exp(s[j] - m);
				for (long e = 0; e < D; e++) {
					double o = 0;
					for (long j = 0; j < nk; j++)
						o += exp(s[j] - m) / sum * V[base + j * D + e];
					O[base + i * D + e] = o;
				}
				L[(b * H + h) * N + i] = m + log(sum);
			}
	free(s);
}

enum { NOPS = 9 };
__attribute__((unused)) static const double ops_x[NOPS] = {-2.5, -1.0, -0.25, 0.0,  0.5,
							   1.0,  2.0,  3.5,   0.125};
__attribute__((unused)) static const double ops_k[NOPS] = {-7, -6, -1, 0, 1, 5, 6, 7, 13};
__attribute__((unused)) static const double ops_m[NOPS] = {1, 0, 1, 1, 0, 1, 0, 0, 1};

/* The "ops" cascade: one output per feature of the IR (every function,
** operator, cast, select, reduction kind, absent points, int and bool
** values), all over dims N; param c : i32 has no default. */
static inline Cascade *tb_ops(Arena *a)
{
	Cascade *c = tb_cascade(a, "ops");
	Dim *N = tb_dimdecl(a, c, "N", 0);
	Param *cp = tb_paramdecl(a, c, "c", VT_INT, NULL);
	Tensor *x = tb_tensor(a, c, "x", TK_IN, DT_F32, 1, tb_dim(a, N));
	Tensor *k = tb_tensor(a, c, "k", TK_IN, DT_I32, 1, tb_dim(a, N));
	Tensor *m = tb_tensor(a, c, "m", TK_IN, DT_BOOL, 1, tb_dim(a, N));
#define OUT(name, dt) tb_tensor(a, c, name, TK_OUT, dt, 1, tb_dim(a, N))
	Tensor *F = tb_tensor(a, c, "F", TK_OUT, DT_F32, 2, expr_int(a, FN_COUNT), tb_dim(a, N));
	Tensor *Dv = OUT("Dv", DT_I32), *Md = OUT("Md", DT_I32), *Dn = OUT("Dn", DT_I32);
	Tensor *Mn = OUT("Mn", DT_I32), *Cs = OUT("Cs", DT_F32), *Bo = OUT("Bo", DT_BOOL);
	Tensor *Mx = OUT("Mx", DT_F32), *Sh = OUT("Sh", DT_F32), *Rp = OUT("Rp", DT_F32);
	Tensor *Rmin = OUT("Rmin", DT_F32), *Rmax = OUT("Rmax", DT_F32), *Dm = OUT("Dm", DT_F32);
	Tensor *Is = OUT("Is", DT_I32), *Si = OUT("Si", DT_I32), *R2 = OUT("R2", DT_F32);
	Tensor *Rm = OUT("Rm", DT_F32), *Ng = OUT("Ng", DT_F32), *Ib = OUT("Ib", DT_I32);
#undef OUT
	Expr *xi = tb_at(a, x, IX(0)), *ki = tb_at(a, k, IX(0)), *mi = tb_at(a, m, IX(0));

	/* F[f, i] = select(f == 0, exp(x[i]), select(f == 1, exp2(x[i]), ...)), the
	** last function in the innermost branch */
	Expr *chain = tb_call(a, (Fn)(FN_COUNT - 1), tb_at(a, x, IX(1)));
	for (int f = FN_COUNT - 2; f >= 0; f--)
		chain = tb_select(a, BIN(OP_EQ, IX(0), expr_int(a, f)),
				  tb_call(a, (Fn)f, tb_at(a, x, IX(1))), chain);
	tb_node(a, c, F, RED_NONE, chain, NULL, 0);
	tb_node(a, c, Dv, RED_NONE, BIN(OP_DIV, ki, tb_param(a, cp)), NULL, 0);
	tb_node(a, c, Md, RED_NONE, BIN(OP_MOD, ki, tb_param(a, cp)), NULL, 0);
	tb_node(a, c, Dn, RED_NONE, BIN(OP_DIV, ki, tb_unop(a, OP_NEG, tb_param(a, cp))), NULL, 0);
	tb_node(a, c, Mn, RED_NONE, BIN(OP_MOD, ki, tb_unop(a, OP_NEG, tb_param(a, cp))), NULL, 0);
	tb_node(a, c, Cs, RED_NONE,
		BIN(OP_ADD, BIN(OP_MUL, tb_cast(a, ki), expr_float(a, 0.5)), tb_cast(a, mi)), NULL,
		0);
	tb_node(a, c, Bo, RED_NONE,
		BIN(OP_OR, BIN(OP_AND, mi, BIN(OP_GT, ki, expr_int(a, 0))), tb_unop(a, OP_NOT, mi)),
		NULL, 0);
	tb_node(a, c, Mx, RED_NONE,
		BIN(OP_ADD, BIN(OP_MAX, xi, expr_float(a, 0.25)),
		    BIN(OP_MIN, xi, expr_float(a, -0.25))),
		NULL, 0);
	tb_node(a, c, Sh, RED_NONE,
		BIN(OP_SUB,
		    tb_at(a, x, BIN(OP_MOD, BIN(OP_ADD, IX(0), expr_int(a, 1)), tb_dim(a, N))),
		    tb_at(a, x, BIN(OP_SUB, BIN(OP_SUB, tb_dim(a, N), expr_int(a, 1)), IX(0)))),
		NULL, 0);
	tb_node(a, c, Rp, RED_PROD, BIN(OP_ADD, tb_at(a, x, IX(1)), expr_float(a, 2.0)),
		BIN(OP_LE, IX(1), IX(0)), 1, tb_dim(a, N));
	tb_node(a, c, Rmin, RED_MIN, tb_at(a, x, IX(1)), BIN(OP_LT, IX(1), IX(0)), 1, tb_dim(a, N));
	tb_node(a, c, Rmax, RED_MAX, tb_at(a, x, IX(1)), BIN(OP_GT, IX(1), IX(0)), 1, tb_dim(a, N));
	Dm->domain = BIN(OP_EQ, BIN(OP_MOD, IX(0), expr_int(a, 2)), expr_int(a, 0));
	tb_node(a, c, Dm, RED_NONE, BIN(OP_ADD, xi, expr_float(a, 1.0)), expr_copy(a, Dm->domain),
		0);
	tb_node(a, c, Is, RED_SUM, tb_at(a, k, IX(1)), BIN(OP_LE, IX(1), IX(0)), 1, tb_dim(a, N));
	tb_node(a, c, Si, RED_NONE, tb_select(a, mi, ki, tb_unop(a, OP_NEG, ki)), NULL, 0);
	tb_node(a, c, R2, RED_SUM, BIN(OP_MUL, tb_at(a, x, IX(1)), tb_at(a, x, IX(2))),
		BIN(OP_EQ, BIN(OP_ADD, IX(1), IX(2)), IX(0)), 2, tb_dim(a, N), tb_dim(a, N));
	tb_node(a, c, Rm, RED_SUM, tb_at(a, x, IX(1)),
		BIN(OP_AND, tb_at(a, m, IX(1)), BIN(OP_NE, IX(1), IX(0))), 1, tb_dim(a, N));
	tb_node(a, c, Ng, RED_NONE, tb_unop(a, OP_NEG, BIN(OP_DIV, xi, expr_float(a, 4.0))), NULL,
		0);
	/* a bool value summed as an int: how many m[j] hold for j >= i */
	tb_node(a, c, Ib, RED_SUM, tb_select(a, tb_at(a, m, IX(1)), expr_int(a, 1), expr_int(a, 0)),
		BIN(OP_GE, IX(1), IX(0)), 1, tb_dim(a, N));
	return c;
}

#endif
