/*
** compiler/intervals.c: the tile-class rule (see intervals.h): which integer
** expressions get bounds over a tile and how, and how comparisons and
** booleans become always / never / depends. Both back ends build their
** values through an IvOps table; only the rule lives here.
*/
#include "intervals.h"

static const Iv none;

static Iv point(IvVal v)
{
	return (Iv){v, v, 1, 1, 0};
}

static Iv span(IvVal lo, IvVal hi)
{
	return (Iv){lo, hi, 1, 0, 0};
}

/* Floor division and modulo are monotone in the dividend only for a
** divisor known positive: a positive literal or a dim. */
static int positive(const Expr *e)
{
	return (e->kind == EX_INT && e->ival > 0) || e->kind == EX_DIM;
}

static Iv widen(const IvOps *o, void *ctx, Iv x)
{
	return x.ok && o->widen ? o->widen(ctx, x) : x;
}

/* An index: a point on the grid, the tile's rows or keys, and anything else
** (a contracted or value index) over its whole extent [0, extent - 1]. */
static Iv index_bound(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e)
{
	switch (plan_index_kind(p, node, e->var)) {
	case IDX_GRID: return o->grid(ctx, e);
	case IDX_QUERY: return o->rows(ctx, e);
	case IDX_KEY: return o->keys(ctx, e);
	case IDX_OTHER: break;
	}
	const Node *n = p->c->nodes.v[node];
	Iv x = widen(o, ctx, iv_bound(o, ctx, p, node, n->vars[e->var].extent));
	if (!x.ok || !x.point)
		return none;
	return span(o->zero(ctx), o->dec(ctx, x.lo));
}

/* An i32 read: the data's range along the rows or keys where the back end
** has one, else a point where every subscript is a point of the tile
** (kv_len[b]). */
static Iv read_bound(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e)
{
	if (e->type != VT_INT)
		return none;
	if (o->read_range) {
		Iv r = o->read_range(ctx, e);
		if (r.ok)
			return r;
	}
	for (int i = 0; i < e->nargs; i++) {
		Iv x = iv_bound(o, ctx, p, node, e->args[i]);
		if (!x.ok || !x.point)
			return none;
	}
	return o->read_point(ctx, e);
}

/* lo of l * r is the least of the four corner products, hi the greatest. */
static Iv mul_bound(const IvOps *o, void *ctx, Iv l, Iv r)
{
	if (l.point && r.point)
		return point(o->arith(ctx, OP_MUL, l.lo, r.lo));
	IvVal v[4] = {o->arith(ctx, OP_MUL, l.lo, r.lo), o->arith(ctx, OP_MUL, l.lo, r.hi),
		      o->arith(ctx, OP_MUL, l.hi, r.lo), o->arith(ctx, OP_MUL, l.hi, r.hi)};
	IvVal lo = o->min4(ctx, v);
	return span(lo, o->max4(ctx, v));
}

/* Monotone operators: lo from the operands' lo (or, where decreasing in an
** operand, its hi), hi likewise; one value where the operands are points. */
static Iv binop_bound(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e)
{
	if (e->type != VT_INT)
		return none;
	Iv l = widen(o, ctx, iv_bound(o, ctx, p, node, e->args[0]));
	Iv r = widen(o, ctx, iv_bound(o, ctx, p, node, e->args[1]));
	if (!l.ok || !r.ok)
		return none;
	int both = l.point && r.point;
	switch (e->op) {
	case OP_ADD:
	case OP_MIN:
	case OP_MAX:
		if (both)
			return point(o->arith(ctx, e->op, l.lo, r.lo));
		IvVal lo = o->arith(ctx, e->op, l.lo, r.lo);
		return span(lo, o->arith(ctx, e->op, l.hi, r.hi));
	case OP_SUB:
		if (both)
			return point(o->arith(ctx, OP_SUB, l.lo, r.lo));
		IvVal slo = o->arith(ctx, OP_SUB, l.lo, r.hi);
		return span(slo, o->arith(ctx, OP_SUB, l.hi, r.lo));
	case OP_MUL: return mul_bound(o, ctx, l, r);
	case OP_DIV:
		if (!positive(e->args[1]))
			return none;
		if (l.point)
			return point(o->arith(ctx, OP_DIV, l.lo, r.lo));
		IvVal dlo = o->arith(ctx, OP_DIV, l.lo, r.lo);
		return span(dlo, o->arith(ctx, OP_DIV, l.hi, r.lo));
	case OP_MOD:
		if (!positive(e->args[1]))
			return none;
		IvVal mlo = o->zero(ctx);
		return span(mlo, o->dec(ctx, r.lo));
	default: return none;
	}
}

/* Why: one walk for both back ends, so that the C and the GPU code decide
** the same tiles. */
Iv iv_bound(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e)
{
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM: return o->scalar(ctx, e);
	case EX_INDEX: return index_bound(o, ctx, p, node, e);
	case EX_ACCESS: return read_bound(o, ctx, p, node, e);
	case EX_UNOP: {
		if (e->op != OP_NEG)
			return none;
		Iv x = widen(o, ctx, iv_bound(o, ctx, p, node, e->args[0]));
		if (!x.ok)
			return none;
		if (x.point)
			return point(o->neg(ctx, x.lo));
		IvVal lo = o->neg(ctx, x.hi);
		return span(lo, o->neg(ctx, x.lo));
	}
	case EX_BINOP: return binop_bound(o, ctx, p, node, e);
	default: return none;
	}
}

/* Why: comparisons of integers are decided from their operands' bounds (a
** > b as b < a); booleans combine tri-states; anything else depends on the
** element. */
IvTri iv_class(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e)
{
	if (e->kind == EX_BOOL)
		return o->tconst(ctx, e->ival ? 1 : 0);
	if (e->kind == EX_UNOP && e->op == OP_NOT)
		return o->tnot(ctx, iv_class(o, ctx, p, node, e->args[0]));
	if (e->kind != EX_BINOP)
		return o->tconst(ctx, 2);
	if (e->op == OP_AND || e->op == OP_OR) {
		IvTri x = iv_class(o, ctx, p, node, e->args[0]);
		IvTri y = iv_class(o, ctx, p, node, e->args[1]);
		return e->op == OP_AND ? o->tand(ctx, x, y) : o->tor(ctx, x, y);
	}
	if (e->op < OP_LT || e->op > OP_NE || e->args[0]->type != VT_INT)
		return o->tconst(ctx, 2);
	Iv a = iv_bound(o, ctx, p, node, e->args[0]);
	Iv b = iv_bound(o, ctx, p, node, e->args[1]);
	if (!a.ok || !b.ok)
		return o->tconst(ctx, 2);
	switch (e->op) {
	case OP_LT: return o->less(ctx, a, b, 0);
	case OP_LE: return o->less(ctx, a, b, 1);
	case OP_GT: return o->less(ctx, b, a, 0);
	case OP_GE: return o->less(ctx, b, a, 1);
	case OP_EQ: return o->equal(ctx, a, b);
	default: return o->tnot(ctx, o->equal(ctx, a, b));
	}
}
