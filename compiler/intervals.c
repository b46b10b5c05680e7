/*
** compiler/intervals.c: the tile-class rule (see intervals.h): which integer
** expressions get bounds over a tile and how, and how comparisons and
** booleans become always / never / depends. Both back ends build their
** values through an IvOps table; only the rule lives here.
*/
#include "intervals.h"

static const Iv none;

/* A value the same at every point of the tile: lo and hi are one value,
** built once. */
static Iv point(IvVal v)
{
	return (Iv){v, v, 1, 1, 0};
}

/* A value that varies over the tile, between lo and hi. */
static Iv span(IvVal lo, IvVal hi)
{
	return (Iv){lo, hi, 1, 0, 0};
}

/* Floor division and modulo are monotone in the dividend only for a
** divisor known positive: a positive literal, a dim, and sums, products,
** minima of those (a video's i / (H * W)), or a maximum with one. A dim
** that divides is positive at run time: the launchers refuse a divisor
** outside 1..2^32. */
int iv_positive(const Expr *e)
{
	if (e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_MUL || e->op == OP_MIN))
		return iv_positive(e->args[0]) && iv_positive(e->args[1]);
	if (e->kind == EX_BINOP && e->op == OP_MAX)
		return iv_positive(e->args[0]) || iv_positive(e->args[1]);
	return (e->kind == EX_INT && e->ival > 0) || e->kind == EX_DIM;
}

/* floor x / y, x a bound of the expression dividend and y the value of a
** positive divisor: the back end's own way where it has one. */
static IvVal divide(const IvOps *o, void *ctx, IvVal x, IvVal y, const Expr *dividend,
		    const Expr *divisor)
{
	return o->divide ? o->divide(ctx, x, y, dividend, divisor) : o->arith(ctx, OP_DIV, x, y);
}

/* Operands of arithmetic in the back end's arithmetic width. */
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
	IvVal lo = o->zero(ctx);
	return span(lo, o->dec(ctx, x.lo));
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
	IvVal v[4]; /* in this order: a back end's values may be instructions */
	for (int k = 0; k < 4; k++)
		v[k] = o->arith(ctx, OP_MUL, k >> 1 ? l.hi : l.lo, k & 1 ? r.hi : r.lo);
	IvVal lo = o->min4(ctx, v);
	return span(lo, o->max4(ctx, v));
}

/* x % d over the tile: [0, d - 1], or where the dividend's span does not
** cross a multiple of d (floor(lo / d) = floor(hi / d)) the span's own
** remainders, which is what lets tiles of keys a few rows of an image wide
** be decided on a row index j / W % H (a video's window). */
static Iv mod_bound(const IvOps *o, void *ctx, const Expr *e, Iv l, Iv r)
{
	if (!iv_positive(e->args[1]) || !l.ok || !r.ok || !r.point)
		return none;
	IvVal zero = o->zero(ctx), top = o->dec(ctx, r.lo);
	if (!o->select)
		return span(zero, top);
	IvVal qlo = divide(o, ctx, l.lo, r.lo, e->args[0], e->args[1]),
	      qhi = l.point ? qlo : divide(o, ctx, l.hi, r.lo, e->args[0], e->args[1]);
	IvVal rlo = o->arith(ctx, OP_SUB, l.lo, o->arith(ctx, OP_MUL, qlo, r.lo));
	if (l.point)
		return point(rlo);
	IvVal rhi = o->arith(ctx, OP_SUB, l.hi, o->arith(ctx, OP_MUL, qhi, r.lo));
	IvVal same = o->test(ctx, OP_EQ, qlo, qhi, 0);
	IvVal lo = o->select(ctx, same, rlo, zero);
	return span(lo, o->select(ctx, same, rhi, top));
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
		if (!iv_positive(e->args[1]))
			return none;
		if (l.point)
			return point(divide(o, ctx, l.lo, r.lo, e->args[0], e->args[1]));
		IvVal dlo = divide(o, ctx, l.lo, r.lo, e->args[0], e->args[1]);
		return span(dlo, divide(o, ctx, l.hi, r.lo, e->args[0], e->args[1]));
	case OP_MOD: return mod_bound(o, ctx, e, l, r);
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

/* A class from its two booleans. */
static IvTri tri(IvVal always, IvVal never)
{
	return (IvTri){always, never};
}

/* Not decided for the tile: neither always nor never. */
static IvTri depends(const IvOps *o, void *ctx)
{
	IvVal al = o->bconst(ctx, 0);
	return tri(al, o->bconst(ctx, 0));
}

/* a < b (a <= b with orequal): always when every a is below every b, never
** when no a is. */
static IvTri less(const IvOps *o, void *ctx, Iv a, Iv b, int orequal, int narrow)
{
	IvVal al = o->test(ctx, orequal ? OP_LE : OP_LT, a.hi, b.lo, narrow);
	return tri(al, o->test(ctx, orequal ? OP_GT : OP_GE, a.lo, b.hi, narrow));
}

/* a == b: never when the ranges are disjoint, always when both are the same
** single value (a point is one by construction; a range may be one at run
** time). */
static IvTri equal(const IvOps *o, void *ctx, Iv a, Iv b, int narrow)
{
	IvVal d1 = o->test(ctx, OP_LT, a.hi, b.lo, narrow);
	IvVal ne = o->bor(ctx, d1, o->test(ctx, OP_LT, b.hi, a.lo, narrow));
	IvVal same[3];
	int n = 0;
	if (!a.point)
		same[n++] = o->test(ctx, OP_EQ, a.lo, a.hi, narrow);
	if (!b.point)
		same[n++] = o->test(ctx, OP_EQ, b.lo, b.hi, narrow);
	same[n++] = o->test(ctx, OP_EQ, a.lo, b.lo, narrow);
	IvVal al = same[0];
	for (int i = 1; i < n; i++)
		al = o->band(ctx, al, same[i]);
	return tri(al, ne);
}

/* A comparison of bounded integers; both narrow or both made wide. */
static IvTri compare(const IvOps *o, void *ctx, Op op, Iv a, Iv b)
{
	int narrow = a.narrow && b.narrow;
	if (!narrow)
		a = widen(o, ctx, a), b = widen(o, ctx, b);
	switch (op) {
	case OP_LT: return less(o, ctx, a, b, 0, narrow);
	case OP_LE: return less(o, ctx, a, b, 1, narrow);
	case OP_GT: return less(o, ctx, b, a, 0, narrow);
	case OP_GE: return less(o, ctx, b, a, 1, narrow);
	case OP_EQ: return equal(o, ctx, a, b, narrow);
	default: {
		IvTri t = equal(o, ctx, a, b, narrow);
		return tri(t.never, t.always);
	}
	}
}

/* Why: comparisons of integers are decided from their operands' bounds;
** a conjunction is always when both parts are and never when either is (a
** disjunction the reverse), a negation swaps always and never; anything
** else depends on the point. */
IvTri iv_class(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e)
{
	if (e->kind == EX_BOOL) {
		IvVal al = o->bconst(ctx, e->ival != 0);
		return tri(al, o->bconst(ctx, e->ival == 0));
	}
	if (e->kind == EX_UNOP && e->op == OP_NOT) {
		IvTri x = iv_class(o, ctx, p, node, e->args[0]);
		return tri(x.never, x.always);
	}
	if (e->kind != EX_BINOP)
		return depends(o, ctx);
	if (e->op == OP_AND || e->op == OP_OR) {
		IvTri x = iv_class(o, ctx, p, node, e->args[0]);
		IvTri y = iv_class(o, ctx, p, node, e->args[1]);
		int and = e->op == OP_AND;
		IvVal al = and? o->band(ctx, x.always, y.always) : o->bor(ctx, x.always, y.always);
		return tri(al, and? o->bor(ctx, x.never, y.never) : o->band(ctx, x.never, y.never));
	}
	if (e->op < OP_LT || e->op > OP_NE || e->args[0]->type != VT_INT)
		return depends(o, ctx);
	Iv a = iv_bound(o, ctx, p, node, e->args[0]);
	Iv b = iv_bound(o, ctx, p, node, e->args[1]);
	if (!a.ok || !b.ok)
		return depends(o, ctx);
	return compare(o, ctx, (Op)e->op, a, b);
}
