/*
** lowering/gpu/maskonce.c: masked scores set to -inf once. Which tile value
** the masked path sets to -inf, and which reductions after it then see
** their identity at masked points and need no mask of their own.
*/
#include <string.h>

#include "gpu.h"

/* ---- masking once ---------------------------------------------------------
** On the masked path FlashAttention sets the masked scores to -inf once and
** lets the softmax run unmasked. The same here, proved per cascade: the
** tile value X that a running max reads is set to -inf at masked points,
** once per element; the nodes after it are then evaluated as if X were -inf
** there (value_at_masked), and a reduction that provably sees its identity
** (a max -inf, a sum or P V zero) skips its own per-element mask: one compare and
** select per score instead of one per score and consumer. Only where every
** node that reads X, directly or through tile values, has X's filter (their
** values at masked points are then nobody's), and with exp(a - m) taking
** m = 0 where m is still -inf (a row with no key yet, so every a is -inf
** too; expr.c's neg_log2e, with g->masked_ninf). */
enum {
	AT_MASKED_SAME,   /* independent of X: its value at any point */
	AT_MASKED_NINF,   /* -inf */
	AT_MASKED_ZERO,   /* 0 */
	AT_MASKED_UNKNOWN /* anything */
};

/* Node d's values are per (row, key) of the tile (not running or per row). */
static int tile_value(const KernelGen *g, int d)
{
	return g->s->node[d].kind == SN_MAP || g->s->node[d].kind == SN_GEMM1;
}

/* e (or NULL) reads a node marked in set. */
static int reads_node(const Expr *e, const signed char *set)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor->def && set[e->tensor->def->id])
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_node(e->args[i], set))
			return 1;
	return 0;
}

/* What maskonce_plan knows: per node, at_masked (AT_MASKED_*, for tile
** values: what it is at a masked point), dep (a tile value that depends on
** X) and state (a running value, a max, a sum or a reference, which may be
** -inf). */
typedef struct MaskOnce {
	signed char *at_masked, *dep, *state;
} MaskOnce;

static int positive_literal(const Expr *e)
{
	return (e->kind == EX_FLOAT && e->fval > 0) || (e->kind == EX_INT && e->ival > 0);
}

/* What e is at a masked point when X is -inf there. */
static int value_at_masked(KernelGen *g, const Expr *e, const MaskOnce *m)
{
	int a = AT_MASKED_SAME, b = AT_MASKED_SAME;
	switch (e->kind) {
	case EX_ACCESS:
		return e->tensor->def && tile_value(g, e->tensor->def->id)
			   ? m->at_masked[e->tensor->def->id]
			   : AT_MASKED_SAME;
	case EX_CAST:
	case EX_SELECT:
		for (int i = 0; i < e->nargs; i++)
			if (value_at_masked(g, e->args[i], m) != AT_MASKED_SAME)
				return AT_MASKED_UNKNOWN;
		return AT_MASKED_SAME;
	case EX_UNOP:
		a = value_at_masked(g, e->args[0], m);
		return a == AT_MASKED_SAME || a == AT_MASKED_ZERO ? a : AT_MASKED_UNKNOWN;
	case EX_BINOP:
		a = value_at_masked(g, e->args[0], m), b = value_at_masked(g, e->args[1], m);
		if (a == AT_MASKED_SAME && b == AT_MASKED_SAME)
			return AT_MASKED_SAME;
		switch (e->op) {
		case OP_ADD:
			if ((a == AT_MASKED_NINF && b == AT_MASKED_SAME &&
			     !reads_node(e->args[1], m->state)) ||
			    (b == AT_MASKED_NINF && a == AT_MASKED_SAME &&
			     !reads_node(e->args[0], m->state)))
				return AT_MASKED_NINF;
			return a == AT_MASKED_ZERO && b == AT_MASKED_ZERO ? AT_MASKED_ZERO
									  : AT_MASKED_UNKNOWN;
		case OP_SUB:
			if (a == AT_MASKED_NINF && b == AT_MASKED_SAME &&
			    !reads_node(e->args[1], m->state))
				return AT_MASKED_NINF;
			return a == AT_MASKED_ZERO && b == AT_MASKED_ZERO ? AT_MASKED_ZERO
									  : AT_MASKED_UNKNOWN;
		case OP_MUL:
			if ((a == AT_MASKED_ZERO && b != AT_MASKED_UNKNOWN &&
			     b != AT_MASKED_NINF) ||
			    (b == AT_MASKED_ZERO && a != AT_MASKED_UNKNOWN && a != AT_MASKED_NINF))
				return AT_MASKED_ZERO;
			if ((a == AT_MASKED_NINF && positive_literal(e->args[1])) ||
			    (b == AT_MASKED_NINF && positive_literal(e->args[0])))
				return AT_MASKED_NINF;
			return AT_MASKED_UNKNOWN;
		case OP_MAX:
			if (a == AT_MASKED_NINF && b == AT_MASKED_NINF)
				return AT_MASKED_NINF;
			return (a == AT_MASKED_NINF && b == AT_MASKED_SAME) ||
				       (b == AT_MASKED_NINF && a == AT_MASKED_SAME)
				   ? AT_MASKED_SAME
				   : AT_MASKED_UNKNOWN;
		case OP_MIN:
			return (a == AT_MASKED_NINF && b != AT_MASKED_UNKNOWN) ||
				       (b == AT_MASKED_NINF && a != AT_MASKED_UNKNOWN)
				   ? AT_MASKED_NINF
				   : AT_MASKED_UNKNOWN;
		default: return AT_MASKED_UNKNOWN;
		}
	case EX_CALL: {
		const Expr *x = e->args[0];
		/* exp(a - m): the FFMA form (expr.c's call), guarded for m = -inf */
		if (e->op == FN_EXP && x->kind == EX_BINOP && x->op == OP_SUB &&
		    x->type == VT_FLOAT && value_at_masked(g, x->args[0], m) == AT_MASKED_NINF &&
		    value_at_masked(g, x->args[1], m) == AT_MASKED_SAME)
			return AT_MASKED_ZERO;
		a = value_at_masked(g, x, m);
		if (a == AT_MASKED_SAME)
			return AT_MASKED_SAME;
		if (a == AT_MASKED_NINF &&
		    (e->op == FN_EXP || e->op == FN_EXP2 || e->op == FN_SIGMOID ||
		     e->op == FN_RELU || e->op == FN_SOFTPLUS))
			return AT_MASKED_ZERO;
		return AT_MASKED_UNKNOWN;
	}
	default: return AT_MASKED_SAME;
	}
}

void gpu_maskonce_plan(KernelGen *g, TileState *t)
{
	int n = g->c->nodes.n, x = -1;
	t->mo = -1;
	t->moid = ARENA_ARRAY(g->a, signed char, n + 1);
	for (int i = 0; i < n && x < 0; i++) {
		const Expr *b = gpu_node(g, i)->body;
		if (g->s->node[i].kind == SN_RMAX && b->kind == EX_ACCESS && b->tensor->def &&
		    tile_value(g, b->tensor->def->id))
			x = b->tensor->def->id;
	}
	if (x < 0 || !gpu_node(g, x)->filter)
		return;
	MaskOnce m = {ARENA_ARRAY(g->a, signed char, n + 1), ARENA_ARRAY(g->a, signed char, n + 1),
		      ARENA_ARRAY(g->a, signed char, n + 1)};
	for (int i = 0; i < n; i++)
		m.state[i] = !tile_value(g, i);
	m.at_masked[x] = AT_MASKED_NINF, m.dep[x] = 1;
	for (int i = x + 1; i < n; i++) {
		const Node *nd = gpu_node(g, i);
		if (!reads_node(nd->body, m.dep) && !reads_node(nd->filter, m.dep))
			continue;
		/* the same condition at the same (row, key) point: variables of
		** the same classes (a node's own numbering may differ: P V's key
		** comes after e) */
		if (!gpu_same_read(g, x, gpu_node(g, x)->filter, i, nd->filter, 0)) {
			memset(t->moid, 0, (size_t)n);
			return;
		}
		switch (g->s->node[i].kind) {
		case SN_MAP:
			m.at_masked[i] = (signed char)value_at_masked(g, nd->body, &m);
			m.dep[i] = 1;
			break;
		case SN_RMAX:
			t->moid[i] = value_at_masked(g, nd->body, &m) == AT_MASKED_NINF;
			break;
		case SN_RSUM:
			t->moid[i] = value_at_masked(g, nd->body, &m) == AT_MASKED_ZERO;
			break;
		case SN_GEMM2:
			t->moid[i] = value_at_masked(g, g->s->pv[g->s->node[i].gemm].x, &m) ==
				     AT_MASKED_ZERO;
			break;
		case SN_CROSS:
			t->moid[i] = value_at_masked(g, g->s->cross[g->s->node[i].gemm].x, &m) ==
				     AT_MASKED_ZERO;
			break;
		default: memset(t->moid, 0, (size_t)n); return;
		}
	}
	t->mo = x;
}
