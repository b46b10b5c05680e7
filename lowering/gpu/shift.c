/*
** lowering/gpu/shift.c: relative positions taken from one row.
** A score S[i, j] = X + u * float(j - i) (ALiBi; any u * float(rest + c j)
** with u the same along the row and across rows) costs an FFMA per score
** for the bias: float(rest + c j) differs at every (row, key). Softmax is
** blind to a constant per row: where S is read only by its row max M and
** by exp(S - M), and M only by exp(S - M) (and by the rebasing of running
** states, through differences of M), adding c(i) to S moves M by c(i) and
** leaves every exp(S - M) as it was. So the kernel evaluates rest at one
** row per thread and m16 row block (the block's first row slot) instead of
** each element's own: the bias is then one value per key column and block,
** shared by the block's two row slots, half the FFMAs per tile at 128-row
** tiles. (Not shared by all four slots: the values then stay live across
** both blocks, which cost more than it saved.) A row is within 8 of its
** block's first row, so the bias stays
** as exact as before; masks read their own copies of the expressions and
** are not affected.
*/

#include "gpu.h"

/* Key casts whose row part may come from one row per thread and row block
** (KernelGen.row0[m], the block's first row slot). */
enum { GPU_MAXSHIFT = 8 };
typedef struct ShiftSet {
	const Expr *cast[GPU_MAXSHIFT];
	int n;
} ShiftSet;

/* Every read of S or M in e is inside exp(S - M). */
static int only_exp_diffs(const Expr *e, const Tensor *S, const Tensor *M)
{
	if (!e)
		return 1;
	if (e->kind == EX_CALL && e->op == FN_EXP) {
		const Expr *d = e->args[0];
		if (d->kind == EX_BINOP && d->op == OP_SUB && d->args[0]->kind == EX_ACCESS &&
		    d->args[0]->tensor == S && d->args[1]->kind == EX_ACCESS &&
		    d->args[1]->tensor == M)
			return 1;
	}
	if (e->kind == EX_ACCESS && (e->tensor == S || e->tensor == M))
		return 0;
	for (int i = 0; i < e->nargs; i++)
		if (!only_exp_diffs(e->args[i], S, M))
			return 0;
	return 1;
}

/* Node i (a tile value) is read only by one row max M and by exp(S - M),
** M only by exp(S - M), neither is an output, and no filter reads them. */
static int shift_blind(const KernelGen *g, int i)
{
	const Node *sn = g->c->nodes.v[i];
	if (g->s->node[i].kind != SN_MAP || sn->out->kind == TK_OUT || sn->body->type != VT_FLOAT)
		return 0;
	int m = -1;
	for (int k = 0; k < g->c->nodes.n; k++) {
		const Node *o = g->c->nodes.v[k];
		if (g->s->node[k].kind == SN_RMAX && o->body->kind == EX_ACCESS &&
		    o->body->tensor == sn->out) {
			if (m >= 0)
				return 0;
			m = k;
		}
	}
	if (m < 0 || ((const Node *)g->c->nodes.v[m])->out->kind == TK_OUT)
		return 0;
	const Tensor *M = ((const Node *)g->c->nodes.v[m])->out;
	for (int k = 0; k < g->c->nodes.n; k++) {
		const Node *o = g->c->nodes.v[k];
		if (expr_reads(o->filter, sn->out) || expr_reads(o->filter, M))
			return 0;
		if (k != m && !only_exp_diffs(o->body, sn->out, M))
			return 0;
	}
	return 1;
}

/* e reads a computed tensor (a node's value). */
static int reads_computed(const Expr *e)
{
	if (e->kind == EX_ACCESS && e->tensor->def)
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_computed(e->args[i]))
			return 1;
	return 0;
}

/* u reads no query-row index and no computed value: one value for all of
** the CTA's rows. */
static int rows_alike(const KernelGen *g, int node, const Expr *u)
{
	return !plan_reads_class(g->p, node, u, g->s->qcls) && !reads_computed(u);
}

/* The additive terms of node i's body: a key cast, alone or times u. */
static void shift_terms(KernelGen *g, int i, const Expr *e)
{
	if (e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_SUB)) {
		shift_terms(g, i, e->args[0]);
		shift_terms(g, i, e->args[1]);
		return;
	}
	const Expr *c = NULL;
	if (e->kind == EX_CAST)
		c = e;
	else if (e->kind == EX_BINOP && e->op == OP_MUL && e->type == VT_FLOAT)
		for (int s = 0; s < 2 && !c; s++)
			if (e->args[s]->kind == EX_CAST && rows_alike(g, i, e->args[1 - s]))
				c = e->args[s];
	if (c && c->args[0]->type == VT_INT && g->shifts->n < GPU_MAXSHIFT)
		g->shifts->cast[g->shifts->n++] = c;
}

void gpu_shift_plan(KernelGen *g)
{
	g->shifts = ARENA_NEW(g->a, ShiftSet);
	for (int i = 0; i < g->c->nodes.n; i++)
		if (shift_blind(g, i))
			shift_terms(g, i, ((const Node *)g->c->nodes.v[i])->body);
}

int gpu_shifted(const KernelGen *g, const Expr *cast)
{
	for (int k = 0; g->shifts && k < g->shifts->n; k++)
		if (g->shifts->cast[k] == cast)
			return 1;
	return 0;
}
