/*
** lowering/c/c_expr.c: expressions as C, tensor addressing, and the interval
** test that classifies a tile of (query, key) positions for a mask.
*/
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "c_gen.h"

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

/* Row-major offset of a global tensor element, from its strides. */
static void global_offset(CGen *g, const Tensor *t, Expr *const *args)
{
	fputc('(', g->o);
	for (int k = 0; k < t->rank; k++) {
		if (k)
			fputs(" + ", g->o);
		fputc('(', g->o);
		cg_expr(g, args[k]);
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
		cg_expr(g, args[k]);
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
    [FN_EXP] = "R_EXP",      [FN_EXP2] = "R_EXP2",      [FN_LOG] = "R_LOG",
    [FN_LOG2] = "R_LOG2",    [FN_TANH] = "R_TANH",      [FN_SIGMOID] = "attn_sigmoid",
    [FN_SQRT] = "R_SQRT",    [FN_RSQRT] = "attn_rsqrt", [FN_ABS] = "R_FABS",
    [FN_RELU] = "attn_relu",
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
		fprintf(g->o, "%s(", fn_c[e->op]);
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

/* ---- interval tests --------------------------------------------------- */

typedef struct Ival {
	const char *lo, *hi; /* C expressions; NULL when unbounded */
} Ival;

static int positive_const(const Expr *e)
{
	return (e->kind == EX_INT && e->ival > 0) || e->kind == EX_DIM;
}

/* Bounds of an integer expression over the tile box; NULL when none can
** be given cheaply (the mask is then decided per element). */
static Ival ival(CGen *g, int node, const Expr *e)
{
	Ival none = {NULL, NULL};
	const Node *n = g->p->c->nodes.v[node];
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM: {
		const char *s = cg_expr_str(g, e);
		return (Ival){s, s};
	}
	case EX_INDEX: {
		switch (cg_local_dim(g, node, e->var)) {
		case LD_GRID: return (Ival){g->var[e->var], g->var[e->var]};
		case LD_QTILE: return (Ival){"q0", "(q1 - 1)"};
		case LD_STREAM: return (Ival){"j0", "(j1 - 1)"};
		default: {
			const char *x = cg_expr_str(g, n->vars[e->var].extent);
			return (Ival){"0L", arena_printf(g->a, "(%s - 1)", x)};
		}
		}
	}
	case EX_ACCESS: {
		/* a datum at a point of the grid (kv_len[b]) is itself a point */
		for (int i = 0; i < e->nargs; i++) {
			Ival x = ival(g, node, e->args[i]);
			if (!x.lo || strcmp(x.lo, x.hi))
				return none;
		}
		if (e->type != VT_INT)
			return none;
		const char *s = cg_expr_str(g, e);
		return (Ival){s, s};
	}
	case EX_UNOP:
		if (e->op == OP_NEG) {
			Ival x = ival(g, node, e->args[0]);
			if (!x.lo)
				return none;
			return (Ival){arena_printf(g->a, "(-%s)", x.hi),
				      arena_printf(g->a, "(-%s)", x.lo)};
		}
		return none;
	case EX_BINOP: {
		if (e->type != VT_INT)
			return none;
		Ival l = ival(g, node, e->args[0]), r = ival(g, node, e->args[1]);
		if (!l.lo || !r.lo)
			return none;
		switch (e->op) {
		case OP_ADD:
			return (Ival){arena_printf(g->a, "(%s + %s)", l.lo, r.lo),
				      arena_printf(g->a, "(%s + %s)", l.hi, r.hi)};
		case OP_SUB:
			return (Ival){arena_printf(g->a, "(%s - %s)", l.lo, r.hi),
				      arena_printf(g->a, "(%s - %s)", l.hi, r.lo)};
		case OP_MUL:
			return (Ival){arena_printf(g->a, "attn_min4(%s*%s, %s*%s, %s*%s, %s*%s)",
						   l.lo, r.lo, l.lo, r.hi, l.hi, r.lo, l.hi, r.hi),
				      arena_printf(g->a, "attn_max4(%s*%s, %s*%s, %s*%s, %s*%s)",
						   l.lo, r.lo, l.lo, r.hi, l.hi, r.lo, l.hi, r.hi)};
		case OP_DIV:
			if (!positive_const(e->args[1]))
				return none;
			return (Ival){arena_printf(g->a, "attn_fdiv(%s, %s)", l.lo, r.lo),
				      arena_printf(g->a, "attn_fdiv(%s, %s)", l.hi, r.lo)};
		case OP_MOD:
			if (!positive_const(e->args[1]))
				return none;
			return (Ival){"0L", arena_printf(g->a, "(%s - 1)", r.lo)};
		case OP_MAX:
		case OP_MIN: {
			const char *f = e->op == OP_MAX ? "attn_imax" : "attn_imin";
			return (Ival){arena_printf(g->a, "%s(%s, %s)", f, l.lo, r.lo),
				      arena_printf(g->a, "%s(%s, %s)", f, l.hi, r.hi)};
		}
		default: return none;
		}
	}
	default: return none;
	}
}

/* Tri-state of a condition over the box: "0" never, "1" always, "2" unknown. */
static const char *tri(CGen *g, int node, const Expr *e)
{
	if (e->kind == EX_BOOL)
		return e->ival ? "1" : "0";
	if (e->kind != EX_BINOP)
		return "2";
	if (e->op == OP_AND || e->op == OP_OR)
		return arena_printf(g->a, "attn_t%s(%s, %s)", e->op == OP_AND ? "and" : "or",
				    tri(g, node, e->args[0]), tri(g, node, e->args[1]));
	if (e->op < OP_LT || e->op > OP_NE || e->args[0]->type != VT_INT)
		return "2";
	Ival a = ival(g, node, e->args[0]), b = ival(g, node, e->args[1]);
	if (!a.lo || !b.lo)
		return "2";
	switch (e->op) {
	case OP_LT: return arena_printf(g->a, "attn_tlt(%s, %s, %s, %s)", a.lo, a.hi, b.lo, b.hi);
	case OP_LE:
		return arena_printf(g->a, "attn_tlt(%s, %s, %s + 1, %s + 1)", a.lo, a.hi, b.lo,
				    b.hi);
	case OP_GT: return arena_printf(g->a, "attn_tlt(%s, %s, %s, %s)", b.lo, b.hi, a.lo, a.hi);
	case OP_GE:
		return arena_printf(g->a, "attn_tlt(%s, %s, %s + 1, %s + 1)", b.lo, b.hi, a.lo,
				    a.hi);
	case OP_EQ: return arena_printf(g->a, "attn_teq(%s, %s, %s, %s)", a.lo, a.hi, b.lo, b.hi);
	default:
		return arena_printf(g->a, "attn_tnot(attn_teq(%s, %s, %s, %s))", a.lo, a.hi, b.lo,
				    b.hi);
	}
}

void cg_tile_class(CGen *g, int node, const char *name)
{
	const Node *n = g->p->c->nodes.v[node];
	cg_line(g, "int %s = %s;", name, n->filter ? tri(g, node, n->filter) : "1");
}
