/*
** compiler/masks.c: masks by tile class.
** A conjunct of a node's filter decides whole tiles when it is affine in the
** indices (causal, sliding window, prefix): interval arithmetic over the
** tile's box says empty, full or partial. When it also reads data indexed
** only by grid indices (kv_len[b]), the same test runs per tile at run time.
** Anything else (doc[b,i] == doc[b,j], a bool mask tensor) is per element.
*/
#include "plan.h"

void plan_conjuncts(const Expr *filter, void (*f)(const Expr *, void *), void *ud)
{
	if (!filter)
		return;
	if (filter->kind == EX_BINOP && filter->op == OP_AND) {
		plan_conjuncts(filter->args[0], f, ud);
		plan_conjuncts(filter->args[1], f, ud);
		return;
	}
	f(filter, ud);
}

/* Worst kind of any tensor read inside e: subscripts by grid indices only
** keep it per tile; anything indexed by a query or key index is per element. */
static MaskKind reads_kind(const Plan *p, int node, const Expr *e)
{
	if (!e)
		return MASK_AFFINE;
	MaskKind k = MASK_AFFINE;
	if (e->kind == EX_ACCESS) {
		k = MASK_RUNTIME;
		unsigned long long vars = 0;
		for (int i = 0; i < e->nargs; i++)
			vars |= expr_vars(e->args[i]);
		const Node *n = p->c->nodes.v[node];
		for (int v = 0; v < n->nfree + n->nred && v < 64; v++) {
			if (!(vars & (1ull << v)))
				continue;
			const IndexClass *ic = &p->classes[p->cls[node][v]];
			if (!ic->grid || ic->qtile || ic->stream)
				return MASK_ELEMENT;
		}
	}
	for (int i = 0; i < e->nargs; i++) {
		MaskKind c = reads_kind(p, node, e->args[i]);
		if (c > k)
			k = c;
	}
	return k;
}

MaskKind plan_mask_kind(const Plan *p, int node, const Expr *conj)
{
	/* comparisons of integer expressions are interval-testable; a bool
	** tensor or a float comparison is per element */
	if (conj->kind == EX_ACCESS)
		return MASK_ELEMENT;
	if (conj->kind == EX_BINOP && conj->op >= OP_LT && conj->op <= OP_NE &&
	    conj->args[0]->type == VT_INT) {
		if (conj->op == OP_EQ || conj->op == OP_NE) {
			MaskKind k = reads_kind(p, node, conj);
			return k == MASK_AFFINE ? MASK_AFFINE : MASK_ELEMENT;
		}
		return reads_kind(p, node, conj);
	}
	if (conj->kind == EX_BINOP && conj->op == OP_OR) {
		MaskKind l = plan_mask_kind(p, node, conj->args[0]);
		MaskKind r = plan_mask_kind(p, node, conj->args[1]);
		return l > r ? l : r;
	}
	return MASK_ELEMENT;
}
