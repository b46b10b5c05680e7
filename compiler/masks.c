/*
** compiler/masks.c: masks by tile class.
** A conjunct of a node's filter decides whole tiles when it is affine in the
** indices (causal, sliding window, prefix): interval arithmetic over the
** tile's box says empty, full or partial. When it also reads data indexed
** only by grid indices (kv_len[b]), the same test runs per tile at run time.
** When it reads i32 data along one query or key index (doc[b, i] ==
** doc[b, j], document masking), the GPU kernel takes the data's min and max
** over the tile's rows or keys at run time and runs the same test on those
** ranges; the C back end decides such a conjunct per element. Anything else
** (a bool mask tensor, a float comparison) is per element.
*/
#include <string.h>

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

/* The GPU evaluates a ranged read's subscripts at each row or key of the
** tile, so they must be index arithmetic it can evaluate there on its own
** (lowering/gpu/ranges.c asks the same). */
int plan_plain_subscript(const Expr *e)
{
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM:
	case EX_INDEX: return 1;
	case EX_UNOP: return e->op == OP_NEG && plan_plain_subscript(e->args[0]);
	case EX_BINOP:
		switch (e->op) {
		case OP_ADD:
		case OP_SUB:
		case OP_MUL:
		case OP_DIV:
		case OP_MOD:
		case OP_MAX:
		case OP_MIN:
			return plan_plain_subscript(e->args[0]) && plan_plain_subscript(e->args[1]);
		default: return 0;
		}
	default: return 0;
	}
}

/* Kind of one tensor read: subscripts by grid indices only give one value
** per tile (run time); plain subscripts that also run over exactly one query
** or key index give a range per tile; anything else is per element. */
static MaskKind read_kind(const Plan *p, int node, const Expr *e)
{
	unsigned long long vars = 0;
	int plain = 1;
	for (int i = 0; i < e->nargs; i++) {
		vars |= expr_vars(e->args[i]);
		plain = plain && plan_plain_subscript(e->args[i]);
	}
	const Node *n = p->c->nodes.v[node];
	int ranging = 0;
	for (int v = 0; v < n->nfree + n->nred && v < 64; v++) {
		if (!(vars & (1ull << v)))
			continue;
		IndexKind k = plan_index_kind(p, node, v);
		if (k == IDX_QUERY || k == IDX_KEY)
			ranging++;
		else if (k != IDX_GRID)
			return MASK_ELEMENT;
	}
	if (!ranging)
		return MASK_RUNTIME;
	return ranging == 1 && plain && e->type == VT_INT ? MASK_RANGE : MASK_ELEMENT;
}

/* Worst kind of any tensor read inside e. */
static MaskKind reads_kind(const Plan *p, int node, const Expr *e)
{
	if (!e)
		return MASK_AFFINE;
	MaskKind k = e->kind == EX_ACCESS ? read_kind(p, node, e) : MASK_AFFINE;
	for (int i = 0; i < e->nargs; i++) {
		MaskKind c = reads_kind(p, node, e->args[i]);
		if (c > k)
			k = c;
	}
	return k;
}

/* The kind of one conjunct for the plan's target: only the GPU kernels take
** data ranges, so for the C back end a ranged conjunct is per element. */
MaskKind plan_mask_kind(const Plan *p, int node, const Expr *conj)
{
	/* comparisons of integer expressions are interval-testable (== and !=
	** too: disjoint ranges are never equal, equal single points always); a
	** bool tensor or a float comparison is per element */
	if (conj->kind == EX_ACCESS)
		return MASK_ELEMENT;
	if (conj->kind == EX_BINOP && conj->op >= OP_LT && conj->op <= OP_NE &&
	    conj->args[0]->type == VT_INT) {
		MaskKind k = reads_kind(p, node, conj);
		if (k == MASK_RANGE && p->target && !strcmp(p->target, "cpu"))
			return MASK_ELEMENT;
		return k;
	}
	/* a disjunction (prefix-LM), or a conjunction inside one (Longformer's
	** window beside its global rows and keys): intervals.c classifies the
	** tile through either, so the worst part's kind decides */
	if (conj->kind == EX_BINOP && (conj->op == OP_OR || conj->op == OP_AND)) {
		MaskKind l = plan_mask_kind(p, node, conj->args[0]);
		MaskKind r = plan_mask_kind(p, node, conj->args[1]);
		return l > r ? l : r;
	}
	return MASK_ELEMENT;
}
