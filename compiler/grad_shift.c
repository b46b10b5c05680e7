/*
** compiler/grad_shift.c: which maxes the result does not depend on.
**
** A max written out by the user to keep exponentials finite (a sink's
** `Smax = max(max[j](S), sink[h])`, then exp(S - Smax) and the sum Z)
** changes nothing in the outputs: were it M + delta for any delta over its
** indices, every exp(x - M) would be scaled by e^-delta, Z by the same, and
** the ratio not at all. Its gradient is zero in exact arithmetic, but the
** reverse sweep would build it term by term (the max's ties, the sink's
** share through the max), each term large and their sum zero: slower, and
** on the GPU terms no kernel takes. So a tensor M shown shift-invariant
** here is a stop-gradient, as the max that softmax desugaring makes.
**
** The proof is a degree count. Each expression is, as a function of the
** shift delta at M's indices, one of
**   none      independent of delta
**   add s     x + s * delta      (M itself: add 1; log of mul p: add p)
**   mul p     x * e^(p * delta)  (exp of add s: mul s)
** with the map from M's dimensions to the expression's index variables, so
** that delta is the same at both sides of a product or a sum. Sums of like
** terms, products and quotients of mul, reductions that keep M's indices
** free, max and min of like terms keep a degree; anything else that mixes
** (a constant plus a mul, a mul under a comparison or a filter) fails, and
** M is then differentiated as any other tensor. M is invariant when every
** float output has degree none.
*/
#include <string.h>

#include "grad_int.h"

enum { SH_NONE, SH_ADD, SH_MUL, SH_FAIL };
enum { SH_MAX_RANK = 16 };

typedef struct Shift {
	int kind;
	int amt;             /* s or p; never 0 unless kind is SH_NONE */
	int at[SH_MAX_RANK]; /* M's dimension k: the index variable (of an
				  expression) or the dimension (of a tensor) */
} Shift;

typedef struct ShiftCtx {
	const Tensor *m;
	Shift *of; /* [tensors] */
} ShiftCtx;

static Shift sh_none(void)
{
	Shift s;
	memset(&s, 0, sizeof s);
	return s;
}

static Shift sh_fail(void)
{
	Shift s = sh_none();
	s.kind = SH_FAIL;
	return s;
}

/* Whether two degrees with a map agree on it. */
static int same_at(const ShiftCtx *c, const Shift *x, const Shift *y)
{
	return !memcmp(x->at, y->at, sizeof(int) * (size_t)c->m->rank);
}

/* A kind with amount amt (none when amt is 0) over x's map. */
static Shift with_amt(const Shift *x, int kind, int amt)
{
	Shift s = *x;
	if (amt == 0)
		return sh_none();
	s.kind = kind, s.amt = amt;
	return s;
}

/* x + sign * y. */
static Shift sh_sum(const ShiftCtx *c, Shift x, Shift y, int sign)
{
	if (x.kind == SH_FAIL || y.kind == SH_FAIL)
		return sh_fail();
	if (y.kind == SH_NONE)
		return x.kind == SH_MUL ? sh_fail() : x;
	if (x.kind == SH_NONE)
		return y.kind == SH_MUL ? sh_fail() : with_amt(&y, SH_ADD, sign * y.amt);
	if (x.kind != y.kind || !same_at(c, &x, &y))
		return sh_fail();
	if (x.kind == SH_MUL)
		return x.amt == y.amt ? x : sh_fail();
	return with_amt(&x, SH_ADD, x.amt + sign * y.amt);
}

/* x * y^sign. */
static Shift sh_prod(const ShiftCtx *c, Shift x, Shift y, int sign)
{
	if (x.kind == SH_FAIL || y.kind == SH_FAIL || x.kind == SH_ADD || y.kind == SH_ADD)
		return sh_fail();
	if (y.kind == SH_NONE)
		return x;
	if (x.kind == SH_NONE)
		return with_amt(&y, SH_MUL, sign * y.amt);
	if (!same_at(c, &x, &y))
		return sh_fail();
	return with_amt(&x, SH_MUL, x.amt + sign * y.amt);
}

/* The degree of a read t[args]: t's map through the subscripts. */
static Shift sh_read(const ShiftCtx *c, const Expr *e)
{
	const Tensor *t = e->tensor;
	Shift s = t == c->m ? sh_none() : c->of[t->id];
	if (t == c->m) {
		s.kind = SH_ADD, s.amt = 1;
		for (int k = 0; k < t->rank; k++)
			s.at[k] = k;
	}
	if (s.kind != SH_ADD && s.kind != SH_MUL)
		return s;
	for (int k = 0; k < c->m->rank; k++) {
		const Expr *sub = e->args[s.at[k]];
		if (sub->kind != EX_INDEX)
			return sh_fail();
		s.at[k] = sub->var;
	}
	return s;
}

static Shift sh_expr(const ShiftCtx *c, const Expr *e)
{
	if (!e)
		return sh_none();
	switch (e->kind) {
	case EX_ACCESS: return e->type == VT_FLOAT ? sh_read(c, e) : sh_none();
	case EX_UNOP: {
		Shift x = sh_expr(c, e->args[0]);
		if (e->op == OP_NEG && x.kind == SH_ADD)
			x.amt = -x.amt;
		return x;
	}
	case EX_BINOP: {
		Shift x = sh_expr(c, e->args[0]), y = sh_expr(c, e->args[1]);
		switch (e->op) {
		case OP_ADD: return sh_sum(c, x, y, 1);
		case OP_SUB: return sh_sum(c, x, y, -1);
		case OP_MUL: return sh_prod(c, x, y, 1);
		case OP_DIV: return sh_prod(c, x, y, -1);
		case OP_MAX:
		case OP_MIN:
			if (x.kind == SH_NONE && y.kind == SH_NONE)
				return x;
			return x.kind == y.kind && x.amt == y.amt && same_at(c, &x, &y) ? x
											: sh_fail();
		default: /* comparisons, logic, integer arithmetic */
			return x.kind == SH_NONE && y.kind == SH_NONE ? x : sh_fail();
		}
	}
	case EX_CALL: {
		Shift x = sh_expr(c, e->args[0]);
		if (x.kind == SH_NONE || x.kind == SH_FAIL)
			return x;
		if (e->op == FN_EXP && x.kind == SH_ADD)
			return with_amt(&x, SH_MUL, x.amt);
		if (e->op == FN_LOG && x.kind == SH_MUL)
			return with_amt(&x, SH_ADD, x.amt);
		return sh_fail();
	}
	case EX_SELECT: {
		Shift q = sh_expr(c, e->args[0]);
		Shift x = sh_expr(c, e->args[1]), y = sh_expr(c, e->args[2]);
		if (q.kind != SH_NONE || x.kind != y.kind || x.amt != y.amt)
			return sh_fail();
		return x.kind == SH_NONE || same_at(c, &x, &y) ? x : sh_fail();
	}
	default: /* literals, indices, dims, params, casts of integers */ return sh_none();
	}
}

/* The degree of node n's output, as a map to its dimensions. */
static Shift sh_node(const ShiftCtx *c, const Node *n)
{
	if (sh_expr(c, n->filter).kind != SH_NONE)
		return sh_fail();
	Shift s = sh_expr(c, n->body);
	if (s.kind == SH_NONE || s.kind == SH_FAIL)
		return s;
	if (n->red == RED_PROD || (n->red == RED_SUM && s.kind == SH_ADD))
		return sh_fail();
	for (int k = 0; k < c->m->rank; k++)
		if (s.at[k] >= n->nfree)
			return sh_fail(); /* delta would vary along a reduction */
	return s;
}

int grad_shift_invariant(Arena *a, const Cascade *f, const Tensor *m)
{
	if (m->rank > SH_MAX_RANK || m->type != VT_FLOAT || m->kind != TK_TEMP)
		return 0;
	ShiftCtx c = {m, ARENA_ARRAY(a, Shift, f->tensors.n + 1)};
	for (int i = 0; i < f->nodes.n; i++) {
		const Node *n = f->nodes.v[i];
		if (n->out == m)
			continue;
		Shift s = sh_node(&c, n);
		if (s.kind == SH_FAIL)
			return 0;
		c.of[n->out->id] = s;
	}
	for (int i = 0; i < f->tensors.n; i++) {
		const Tensor *t = f->tensors.v[i];
		if (t->kind == TK_OUT && t->type == VT_FLOAT && c.of[t->id].kind != SH_NONE)
			return 0;
	}
	return 1;
}
