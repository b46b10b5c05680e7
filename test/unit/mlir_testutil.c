/*
** test/unit/mlir_testutil.c: hand-built cascades for the MLIR tests.
** Expressions are made with cascade.h's constructors where they exist and
** filled in field by field where they do not (dims, params, calls).
*/
#include "mlir_testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int tb_failures;

/* The cascade lives in the arena; the Program lists just it. */
void tb_init(TB *tb, const char *name)
{
	memset(tb, 0, sizeof *tb);
	arena_init(&tb->a);
	tb->c = ARENA_NEW(&tb->a, Cascade);
	tb->c->name = arena_strdup(&tb->a, name);
	tb->c->loc = NOLOC;
	ptrvec_push(&tb->a, &tb->p.cascades, tb->c);
}

/* Everything built, cascade included, goes at once. */
void tb_free(TB *tb)
{
	arena_free(&tb->a);
}

/* Runtime-sized unless the test sets ->fixed. */
Dim *tb_dim(TB *tb, const char *name)
{
	Dim *d = ARENA_NEW(&tb->a, Dim);
	d->name = arena_strdup(&tb->a, name);
	d->id = tb->c->dims.n;
	d->loc = NOLOC;
	ptrvec_push(&tb->a, &tb->c->dims, d);
	return d;
}

/* Params must be supplied (no default) by the binding. */
Param *tb_param(TB *tb, const char *name, VType t)
{
	Param *p = ARENA_NEW(&tb->a, Param);
	p->name = arena_strdup(&tb->a, name);
	p->id = tb->c->params.n;
	p->type = t;
	p->dtype = t == VT_INT ? DT_I32 : DT_F32;
	p->loc = NOLOC;
	ptrvec_push(&tb->a, &tb->c->params, p);
	return p;
}

/* Value type follows the dtype, as the front end assigns it. */
Tensor *tb_tensor(TB *tb, const char *name, TensorKind k, DType dt, int rank, ...)
{
	Tensor *t = ARENA_NEW(&tb->a, Tensor);
	t->name = arena_strdup(&tb->a, name);
	t->id = tb->c->tensors.n;
	t->kind = k;
	t->dtype = dt;
	t->type = dt == DT_BOOL ? VT_BOOL : dt == DT_I32 ? VT_INT : VT_FLOAT;
	t->rank = rank;
	t->shape = ARENA_ARRAY(&tb->a, Expr *, rank + 1);
	t->loc = NOLOC;
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		t->shape[i] = va_arg(ap, Expr *);
	va_end(ap);
	ptrvec_push(&tb->a, &tb->c->tensors, t);
	return t;
}

/* Leaves the constructors of cascade.h do not cover. */
Expr *tb_d(TB *tb, Dim *d)
{
	Expr *e = expr_new(&tb->a, EX_DIM, VT_INT, NOLOC);
	e->dim = d;
	return e;
}

Expr *tb_p(TB *tb, Param *p)
{
	Expr *e = expr_new(&tb->a, EX_PARAM, p->type, NOLOC);
	e->param = p;
	return e;
}

/* Thin wrappers so tests read as formulas. */
Expr *tb_i(TB *tb, int var)
{
	return expr_index(&tb->a, var);
}
Expr *tb_n(TB *tb, long v)
{
	return expr_int(&tb->a, v);
}
Expr *tb_f(TB *tb, double v)
{
	return expr_float(&tb->a, v);
}
Expr *tb_bin(TB *tb, Op op, Expr *l, Expr *r)
{
	return expr_binop(&tb->a, op, l, r);
}

/* Operand arrays live in the arena like the nodes. */
static Expr *with_args(TB *tb, Expr *e, int n, Expr **args)
{
	e->nargs = n;
	e->args = ARENA_ARRAY(&tb->a, Expr *, n);
	memcpy(e->args, args, sizeof(Expr *) * (size_t)n);
	return e;
}

/* -x keeps the operand type; !x is bool. */
Expr *tb_un(TB *tb, Op op, Expr *x)
{
	Expr *e = expr_new(&tb->a, EX_UNOP, x->type, NOLOC);
	e->op = op;
	return with_args(tb, e, 1, &x);
}

/* Calls are VT_FLOAT whatever the argument (ints are converted). */
Expr *tb_call(TB *tb, Fn f, Expr *x)
{
	Expr *e = expr_new(&tb->a, EX_CALL, VT_FLOAT, NOLOC);
	e->op = f;
	return with_args(tb, e, 1, &x);
}

/* float(x) of an int or bool. */
Expr *tb_cast(TB *tb, Expr *x)
{
	return with_args(tb, expr_new(&tb->a, EX_CAST, VT_FLOAT, NOLOC), 1, &x);
}

/* c ? a : b, typed by its branches. */
Expr *tb_sel(TB *tb, Expr *c, Expr *a, Expr *b)
{
	Expr *args[3] = {c, a, b};
	return with_args(tb, expr_new(&tb->a, EX_SELECT, a->type, NOLOC), 3, args);
}

/* The access takes its type from the tensor. */
Expr *tb_at(TB *tb, Tensor *t, ...)
{
	Expr *e = expr_new(&tb->a, EX_ACCESS, t->type, NOLOC);
	e->tensor = t;
	Expr *args[16];
	va_list ap;
	va_start(ap, t);
	for (int i = 0; i < t->rank && i < 16; i++)
		args[i] = va_arg(ap, Expr *);
	va_end(ap);
	return with_args(tb, e, t->rank, args);
}

/* Variables get made-up names v0, v1, ... for printing. */
Node *tb_node(TB *tb, Tensor *out, RedOp red, int nfree, int nred, Expr *body, Expr *filter, ...)
{
	Node *n = ARENA_NEW(&tb->a, Node);
	n->id = tb->c->nodes.n;
	n->out = out;
	n->nfree = nfree, n->nred = nred;
	n->red = red;
	n->body = body;
	n->filter = filter;
	n->loc = NOLOC;
	n->origin = "test";
	n->vars = ARENA_ARRAY(&tb->a, IndexVar, nfree + nred + 1);
	va_list ap;
	va_start(ap, filter);
	for (int i = 0; i < nfree + nred; i++) {
		n->vars[i].name = arena_printf(&tb->a, "v%d", i);
		n->vars[i].extent = va_arg(ap, Expr *);
		n->vars[i].loc = NOLOC;
	}
	va_end(ap);
	out->def = n;
	ptrvec_push(&tb->a, &tb->c->nodes, n);
	return n;
}

/* One zeroed f64 buffer per in/out tensor, like the driver makes. */
void tb_bind(TB *tb, Binding *b, const long *dims)
{
	const Cascade *c = tb->c;
	b->c = c;
	b->dims = calloc((size_t)c->dims.n + 1, sizeof(long));
	memcpy(b->dims, dims, sizeof(long) * (size_t)c->dims.n);
	b->params = calloc((size_t)c->params.n + 1, sizeof(double));
	b->data = calloc((size_t)c->tensors.n + 1, sizeof(double *));
	for (int i = 0; i < c->tensors.n; i++) {
		Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP)
			b->data[i] = calloc((size_t)tensor_numel(t, b->dims) + 1, sizeof(double));
	}
}

/* Temporaries have NULL buffers; free(NULL) is fine. */
void tb_unbind(TB *tb, Binding *b)
{
	for (int i = 0; i < tb->c->tensors.n; i++)
		free(b->data[i]);
	free(b->data), free(b->params), free(b->dims);
}

/* A fixed LCG: the same data on every machine and run. */
void tb_fill(double *x, long n, double lo, double hi, unsigned *seed)
{
	for (long i = 0; i < n; i++) {
		*seed = *seed * 1103515245u + 12345u;
		x[i] = lo + (hi - lo) * ((*seed >> 8) & 0xffffff) / (double)0x1000000;
	}
}

/* Normwise, so that values near 0 do not dominate. */
double tb_relerr(const double *got, const double *want, long n)
{
	double maxd = 0, maxw = 0;
	for (long i = 0; i < n; i++) {
		if (!isfinite(want[i])) {
			int same = isnan(want[i]) ? isnan(got[i]) : got[i] == want[i];
			if (!same)
				return INFINITY;
			continue;
		}
		if (!isfinite(got[i]))
			return INFINITY;
		double d = fabs(got[i] - want[i]);
		maxd = d > maxd ? d : maxd;
		maxw = fabs(want[i]) > maxw ? fabs(want[i]) : maxw;
	}
	return maxd / (maxw > 1e-300 ? maxw : 1e-300);
}
