/*
** lowering/c/c_expr.c: expressions as C, tensor addressing, and the interval
** test that classifies a tile of (query, key) positions for a mask.
*/
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "c_gen.h"
#include "../../compiler/intervals.h"

void cg_line(CGen *g, const char *fmt, ...)
{
	cg_indent(g);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(g->o, fmt, ap);
	va_end(ap);
	fputc('\n', g->o);
}

void cg_indent(CGen *g)
{
	for (int i = 0; i < g->ind; i++)
		fputc('\t', g->o);
}

/* An expression as C text (for extents, sizes and interval bounds that
** are spliced into larger lines). */
const char *cg_expr_str(CGen *g, const Expr *e)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *save = g->o, *f = open_memstream(&buf, &n);
	if (!f)
		return "0";
	g->o = f;
	cg_expr(g, e);
	fclose(f);
	g->o = save;
	const char *r = arena_strdup(g->a, buf ? buf : "0");
	free(buf);
	return r;
}

const char *cg_real(const CGen *g)
{
	return g->f64 ? "double" : "float";
}

LocalDim cg_local_dim(const CGen *g, int node, int var)
{
	const IndexClass *ic = &g->p->classes[g->p->cls[node][var]];
	if (ic->stream)
		return LD_STREAM;
	if (ic->qtile)
		return LD_QTILE;
	if (ic->grid)
		return LD_GRID;
	return LD_FULL;
}

/* A gather's data come from the caller, so no rule bounds them: an index
** outside the tensor would read outside its buffer. */
int cg_cascade_gathers(const Cascade *c)
{
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = c->nodes.v[i];
		if (expr_gathered_read(n->body) || expr_gathered_read(n->filter))
			return 1;
	}
	return 0;
}

/* Subscript k of a read of t: a gathered one through attn_gix, against the
** extent n (a C expression). */
static void subscript(CGen *g, const Expr *x, const char *n)
{
	if (!g->gathers || !n || !expr_reads_any(x)) {
		cg_expr(g, x);
		return;
	}
	fputs("attn_gix(", g->o);
	cg_expr(g, x);
	fprintf(g->o, ", %s, &gather_bad)", n);
}

/* Row-major offset of a global tensor element, from its strides. */
static void global_offset(CGen *g, const Tensor *t, Expr *const *args)
{
	fputc('(', g->o);
	for (int k = 0; k < t->rank; k++) {
		if (k)
			fputs(" + ", g->o);
		fputc('(', g->o);
		subscript(g, args[k], g->gathers ? cg_expr_str(g, t->shape[k]) : NULL);
		fprintf(g->o, ")*s_%d_%d", t->id, k);
	}
	if (!t->rank)
		fputc('0', g->o);
	fputc(')', g->o);
}

/* Offset in a local buffer: grid dims are fixed, tiled dims are relative to
** the tile's origin, the rest are full. */
static void local_offset(CGen *g, const Tensor *t, Expr *const *args)
{
	const Store *s = &g->st[t->id];
	int any = 0;
	fputc('(', g->o);
	for (int k = 0; k < t->rank; k++) {
		if (s->ld[k] == LD_GRID)
			continue;
		fputs(any++ ? " + (" : "(", g->o);
		subscript(g, args[k],
			  g->gathers && s->ld[k] == LD_FULL ? cg_expr_str(g, t->shape[k]) : NULL);
		fputs(s->ld[k] == LD_QTILE ? " - q0" : s->ld[k] == LD_STREAM ? " - j0" : "", g->o);
		fprintf(g->o, ")*ls_%d_%d", t->id, k);
	}
	fputs(any ? ")" : "0)", g->o);
}

void cg_addr(CGen *g, const Tensor *t, Expr *const *args, const char *prefix)
{
	if (g->st[t->id].kind == ST_GLOBAL) {
		fprintf(g->o, "t_%d[", t->id);
		global_offset(g, t, args);
	} else {
		fprintf(g->o, "%s_%d[", prefix, t->id);
		local_offset(g, t, args);
	}
	fputc(']', g->o);
}

static void literal(CGen *g, double v)
{
	if (isinf(v))
		fprintf(g->o, "(%sINFINITY)", v < 0 ? "-" : "");
	else if (isnan(v))
		fputs("NAN", g->o);
	else
		fprintf(g->o, "((real)%a)", v);
}

static const char *fn_c[FN_COUNT] = {
    [FN_EXP] = "R_EXP",
    [FN_EXP2] = "R_EXP2",
    [FN_LOG] = "R_LOG",
    [FN_LOG2] = "R_LOG2",
    [FN_TANH] = "R_TANH",
    [FN_SIGMOID] = "attn_sigmoid",
    [FN_SQRT] = "R_SQRT",
    [FN_RSQRT] = "attn_rsqrt",
    [FN_ABS] = "R_FABS",
    [FN_RELU] = "attn_relu",
    [FN_LOG1P] = "R_LOG1P",
    [FN_EXPM1] = "R_EXPM1",
    [FN_ERF] = "R_ERF",
    [FN_FLOOR] = "R_FLOOR",
    [FN_CEIL] = "R_CEIL",
    [FN_ROUND] = "R_RINT",
    [FN_SIGN] = "attn_sign",
    [FN_ELU] = "attn_elu",
    [FN_SOFTPLUS] = "attn_softplus",
};

static void binop(CGen *g, const Expr *e)
{
	const Expr *l = e->args[0], *r = e->args[1];
	int ints = l->type != VT_FLOAT;
	const char *fn = NULL;
	if (e->op == OP_DIV && ints)
		fn = "attn_fdiv";
	else if (e->op == OP_MOD)
		fn = "attn_fmod";
	else if (e->op == OP_MAX)
		fn = ints ? "attn_imax" : "attn_maxf";
	else if (e->op == OP_MIN)
		fn = ints ? "attn_imin" : "attn_minf";
	if (fn) {
		fprintf(g->o, "%s(", fn);
		cg_expr(g, l);
		fputs(", ", g->o);
		cg_expr(g, r);
		fputc(')', g->o);
		return;
	}
	fputc('(', g->o);
	cg_expr(g, l);
	fprintf(g->o, " %s ", op_spelling((Op)e->op));
	cg_expr(g, r);
	fputc(')', g->o);
}

/* Reads of a tensor inside the node being emitted: data widened to the
** expression's type (long for i32, 0/1 for bool, real for floats). */
static void access(CGen *g, const Expr *e)
{
	const Tensor *t = e->tensor;
	const char *cast = t->type == VT_INT ? "(long)" : t->type == VT_BOOL ? "(0 != " : "";
	fputs(cast, g->o);
	cg_addr(g, t, e->args, g->prefix);
	if (t->type == VT_BOOL)
		fputc(')', g->o);
}

void cg_expr(CGen *g, const Expr *e)
{
	switch (e->kind) {
	case EX_FLOAT: literal(g, e->fval); break;
	case EX_INT: fprintf(g->o, "%ldL", e->ival); break;
	case EX_BOOL: fputs(e->ival ? "1" : "0", g->o); break;
	case EX_INDEX: fputs(g->var[e->var], g->o); break;
	case EX_DIM:
		if (e->dim->fixed)
			fprintf(g->o, "%ldL", e->dim->fixed);
		else
			fprintf(g->o, "d_%d", e->dim->id);
		break;
	case EX_PARAM: fprintf(g->o, "p_%d", e->param->id); break;
	case EX_ACCESS: access(g, e); break;
	case EX_UNOP:
		fputs(e->op == OP_NEG ? "(-" : "(!", g->o);
		cg_expr(g, e->args[0]);
		fputc(')', g->o);
		break;
	case EX_BINOP: binop(g, e); break;
	case EX_SELECT:
		fputs("((", g->o);
		cg_expr(g, e->args[0]);
		fputs(") ? (", g->o);
		cg_expr(g, e->args[1]);
		fputs(") : (", g->o);
		cg_expr(g, e->args[2]);
		fputs("))", g->o);
		break;
	case EX_CALL:
		fprintf(g->o, "%s(",
			e->op == FN_INT     ? "attn_int"
			: e->op == FN_ILOG2 ? "attn_ilog2"
					    : fn_c[e->op]);
		cg_expr(g, e->args[0]);
		fputc(')', g->o);
		break;
	case EX_CAST:
		fputs("((real)(", g->o);
		cg_expr(g, e->args[0]);
		fputs("))", g->o);
		break;
	}
}

/* ---- tile classes ------------------------------------------------------
** compiler/intervals.c decides; these build its values as C text: bounds
** are long expressions, always and never int expressions. */

static IvVal text(const char *s)
{
	return (IvVal){.p = s};
}

static const char *str(IvVal v)
{
	return v.p;
}

static Iv c_point(const char *s)
{
	return (Iv){text(s), text(s), 1, 1, 0};
}

static Iv c_scalar(void *ctx, const Expr *e)
{
	return c_point(cg_expr_str(ctx, e));
}

static Iv c_grid(void *ctx, const Expr *e)
{
	return c_point(((CGen *)ctx)->var[e->var]);
}

static Iv c_rows(void *ctx, const Expr *e)
{
	(void)ctx, (void)e;
	return (Iv){text("q0"), text("(q1 - 1)"), 1, 0, 0};
}

static Iv c_keys(void *ctx, const Expr *e)
{
	(void)ctx, (void)e;
	return (Iv){text("j0"), text("(j1 - 1)"), 1, 0, 0};
}

static IvVal c_zero(void *ctx)
{
	(void)ctx;
	return text("0L");
}

static IvVal c_dec(void *ctx, IvVal x)
{
	return text(arena_printf(((CGen *)ctx)->a, "(%s - 1)", str(x)));
}

static IvVal c_neg(void *ctx, IvVal x)
{
	return text(arena_printf(((CGen *)ctx)->a, "(-%s)", str(x)));
}

static IvVal c_arith(void *ctx, Op op, IvVal x, IvVal y)
{
	Arena *a = ((CGen *)ctx)->a;
	switch (op) {
	case OP_ADD: return text(arena_printf(a, "(%s + %s)", str(x), str(y)));
	case OP_SUB: return text(arena_printf(a, "(%s - %s)", str(x), str(y)));
	case OP_MUL: return text(arena_printf(a, "%s*%s", str(x), str(y)));
	case OP_DIV: return text(arena_printf(a, "attn_fdiv(%s, %s)", str(x), str(y)));
	case OP_MAX: return text(arena_printf(a, "attn_imax(%s, %s)", str(x), str(y)));
	default: return text(arena_printf(a, "attn_imin(%s, %s)", str(x), str(y)));
	}
}

static IvVal c_minmax4(void *ctx, const char *f, const IvVal v[4])
{
	return text(arena_printf(((CGen *)ctx)->a, "%s(%s, %s, %s, %s)", f, str(v[0]), str(v[1]),
				 str(v[2]), str(v[3])));
}

static IvVal c_min4(void *ctx, const IvVal v[4])
{
	return c_minmax4(ctx, "attn_min4", v);
}

static IvVal c_max4(void *ctx, const IvVal v[4])
{
	return c_minmax4(ctx, "attn_max4", v);
}

static IvVal c_test(void *ctx, Op cmp, IvVal x, IvVal y, int narrow)
{
	(void)narrow;
	return text(arena_printf(((CGen *)ctx)->a, "(%s %s %s)", str(x), op_spelling(cmp), str(y)));
}

static IvVal c_bconst(void *ctx, int v)
{
	(void)ctx;
	return text(v ? "1" : "0");
}

/* is(x, "0"): x is that constant (and and or fold constants away, as the
** conditions of a partly decided filter are often constant). */
static int is(IvVal x, const char *c)
{
	return !strcmp(str(x), c);
}

static IvVal c_band(void *ctx, IvVal x, IvVal y)
{
	if (is(x, "0") || is(y, "1"))
		return x;
	if (is(y, "0") || is(x, "1"))
		return y;
	return text(arena_printf(((CGen *)ctx)->a, "(%s && %s)", str(x), str(y)));
}

static IvVal c_bor(void *ctx, IvVal x, IvVal y)
{
	if (is(x, "1") || is(y, "0"))
		return x;
	if (is(y, "1") || is(x, "0"))
		return y;
	return text(arena_printf(((CGen *)ctx)->a, "(%s || %s)", str(x), str(y)));
}

/* c ? x : y (the remainder bounds of a span within one multiple). */
static IvVal c_select(void *ctx, IvVal c, IvVal x, IvVal y)
{
	return text(arena_printf(((CGen *)ctx)->a, "(%s ? %s : %s)", str(c), str(x), str(y)));
}

/* No data ranges: a read along the rows or keys is decided per element. */
static const IvOps c_ops = {
    .scalar = c_scalar,
    .grid = c_grid,
    .rows = c_rows,
    .keys = c_keys,
    .read_point = c_scalar,
    .zero = c_zero,
    .dec = c_dec,
    .neg = c_neg,
    .arith = c_arith,
    .min4 = c_min4,
    .max4 = c_max4,
    .test = c_test,
    .bconst = c_bconst,
    .band = c_band,
    .bor = c_bor,
    .select = c_select,
};

/* The class as an int: 0 never, 1 always, 2 depends on the point. */
void cg_tile_class(CGen *g, int node, const char *name)
{
	const Node *n = g->p->c->nodes.v[node];
	if (!n->filter) {
		cg_line(g, "int %s = 1;", name);
		return;
	}
	IvTri t = iv_class(&c_ops, g, g->p, node, n->filter);
	cg_line(g, "int %s = %s ? 1 : %s ? 0 : 2;", name, str(t.always), str(t.never));
}
