/*
** compiler/onehot.c: R6, a reduction with one term.
**
** A reduction over k filtered by `k == e`, with e free of k, has at most one
** term: the one at k = e, where e lies in k's range and the rest of the
** filter holds there. It is a read, not a reduction:
**
**   sum[k](T[h, k] where k == bucket[i, j])
**     = select(0 <= bucket[i, j] && bucket[i, j] < NB, T[h, bucket[i, j]], 0)
**
** and an empty one is the reduction's identity (0 for a sum, 1 for a
** product, -inf and +inf for a float max and min), as the reduction gives.
** The filtered-out terms are not evaluated in either form, so the rewrite is
** exact. A bias looked up from a table by a sum over buckets (T5 written
** with a one-hot) becomes a gather at its bucket: a value per score that the
** GPU's tile computes, where the reduction inside a tile value had no kernel,
** and the C back end reads one entry instead of summing NB.
*/
#include <math.h>

#include "plan.h"

/* The conjunct of f (a tree of &&) that is `k == e` or `e == k` with e free
** of variable kv, or NULL; *rest gets the other conjuncts (NULL: none). */
static Expr *pick_equality(Arena *a, Expr *f, int kv, Expr **rest)
{
	if (f->kind == EX_BINOP && f->op == OP_AND) {
		Expr *r, *hit = pick_equality(a, f->args[0], kv, &r);
		if (hit) {
			*rest = r ? expr_binop(a, OP_AND, r, f->args[1]) : f->args[1];
			return hit;
		}
		hit = pick_equality(a, f->args[1], kv, &r);
		if (hit)
			*rest = r ? expr_binop(a, OP_AND, f->args[0], r) : f->args[0];
		return hit;
	}
	*rest = NULL;
	if (f->kind != EX_BINOP || f->op != OP_EQ)
		return NULL;
	for (int side = 0; side < 2; side++) {
		const Expr *x = f->args[side], *e = f->args[!side];
		if (x->kind == EX_INDEX && x->var == kv && e->type == VT_INT &&
		    !(expr_vars(e) >> kv & 1))
			return f->args[!side];
	}
	return NULL;
}

/* The value of node x's reduction over no term, or NULL where it has none
** this rule writes (an integer max or min). */
static Expr *identity(Arena *a, const Node *x)
{
	int fl = x->out->type == VT_FLOAT;
	switch (x->red) {
	case RED_SUM: return fl ? expr_float(a, 0.0) : expr_int(a, 0);
	case RED_PROD: return fl ? expr_float(a, 1.0) : expr_int(a, 1);
	case RED_MAX: return fl ? expr_float(a, -INFINITY) : NULL;
	case RED_MIN: return fl ? expr_float(a, INFINITY) : NULL;
	default: return NULL;
	}
}

/* R6 on node x: its one reduced index k pinned by its filter's `k == e`. */
static int pin(Arena *a, Plan *p, Node *x)
{
	if (x->red == RED_NONE || x->nred != 1 || !x->filter || x->nfree > 62)
		return 0;
	int kv = x->nfree;
	Expr *rest, *e = pick_equality(a, x->filter, kv, &rest);
	Expr *id = identity(a, x);
	if (!e || !id)
		return 0;
	int nv = x->nfree + 1;
	Expr **sub = ARENA_ARRAY(a, Expr *, nv + 1);
	for (int v = 0; v < x->nfree; v++)
		sub[v] = expr_index(a, v);
	/* the reads take e clamped into k's range: a select may evaluate both
	** of its arms (the GPU's does), and a read outside its tensor is a
	** fault even where its value is not chosen */
	Expr *ext = x->vars[kv].extent;
	sub[kv] = expr_binop(a, OP_MIN, expr_binop(a, OP_MAX, expr_copy(a, e), expr_int(a, 0)),
			     expr_binop(a, OP_SUB, expr_copy(a, ext), expr_int(a, 1)));
	/* 0 <= e < extent(k), and the rest of the filter at k = e */
	Expr *ok = expr_binop(a, OP_AND, expr_binop(a, OP_LE, expr_int(a, 0), expr_copy(a, e)),
			      expr_binop(a, OP_LT, expr_copy(a, e), expr_copy(a, ext)));
	if (rest)
		ok = expr_binop(a, OP_AND, ok, expr_subst(a, rest, sub, nv));
	Expr *s = expr_new(a, EX_SELECT, x->out->type, x->loc);
	s->nargs = 3;
	s->args = ARENA_ARRAY(a, Expr *, 3);
	s->args[0] = ok, s->args[1] = expr_subst(a, x->body, sub, nv), s->args[2] = id;
	const char *var = x->vars[kv].name;
	x->red = RED_NONE, x->nred = 0, x->body = s, x->filter = x->out->domain;
	plan_note(p, a, x->loc,
		  "R6 one term: %s reduces over %s where %s == %s, at most one term: it is the "
		  "read at %s = %s where that lies in %s's range and the rest of the filter holds "
		  "(else the empty reduction's value)",
		  x->out->name, var, var, expr_str(a, e, x), var, expr_str(a, e, x), var);
	return 1;
}

void plan_onehot(Arena *a, Plan *p)
{
	int any = 0;
	for (int i = 0; i < p->c->nodes.n; i++)
		any |= pin(a, p, p->c->nodes.v[i]);
	if (any)
		plan_classes(a, p);
}
