/*
** lowering/gpu/online.c: the online softmax's state across tiles. A
** running sum or P V accumulator rebased on running maxes is multiplied by
** rho = exp(k (r - r')) where its references move; lazily, a reference
** moves only past a threshold, so that most tiles skip the rescale.
*/
#include <math.h>

#include "gpu.h"

PReg gpu_rho(KernelGen *g, const Running *run, PReg **from, PReg **to, int h)
{
	PReg r = gpu_fconst(g, 1.0f);
	for (int m = 0; m < run->nrefs; m++) {
		int ref = run->ref[m];
		PReg a = from[ref][h], b = to[ref][h];
		PReg d = gpu_reg(g, PC_F32), x = gpu_reg(g, PC_F32), same = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SUB, ".f32", po_r(d), po_r(a), po_r(b));
		gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(d),
			po_f((float)(run->k[m] * 1.4426950408889634)));
		gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(x), po_r(d));
		gpu_op3(g, PTX_SETP, ".eq.f32", po_r(same), po_r(a), po_r(b));
		gpu_op4(g, PTX_SELP, ".f32", po_r(x), po_f(1.0f), po_r(x), po_r(same));
		gpu_op3(g, PTX_MUL, ".f32", po_r(r), po_r(r), po_r(x));
	}
	return r;
}

/* rho per row half for a running node rebased on references, from the
** references before this tile to the current ones. */
static PReg rho(KernelGen *g, TileState *t, int i, int h)
{
	return gpu_rho(g, &g->p->np[i].run, t->prev, g->rowv, h);
}

PReg gpu_quad_reduce(KernelGen *g, PReg x, int is_max)
{
	for (int m = 1; m <= 2; m <<= 1) {
		PReg y = gpu_reg(g, PC_F32);
		gpu_op5(g, PTX_SHFL, ".b32", po_r(y), po_r(x), po_i(m), po_i(31), po_i(-1));
		PReg z = gpu_reg(g, PC_F32);
		gpu_op3(g, is_max ? PTX_MAX : PTX_ADD, ".f32", po_r(z), po_r(x), po_r(y));
		x = z;
	}
	return x;
}

/* Row slot rs of a running state rebased on references, from t->prev to
** rowv: a row sum or a row of P V accumulators times rho. */
void gpu_rescale_row(KernelGen *g, TileState *t, int i, int rs)
{
	if (!g->p->np[i].run.nrefs)
		return;
	PReg r = rho(g, t, i, rs);
	if (g->s->node[i].kind == SN_RSUM)
		gpu_op3(g, PTX_MUL, ".f32", po_r(g->rowv[i][rs]), po_r(g->rowv[i][rs]), po_r(r));
	if (g->s->node[i].kind != SN_GEMM2)
		return;
	int net = (int)(g->s->pv[g->s->node[i].gemm].DV / 8);
	for (int et = 0; et < net; et++)
		for (int c = 0; c < 2; c++) {
			PReg a = g->acc[i][rs / 2 * net * 4 + et * 4 + rs % 2 * 2 + c];
			gpu_op3(g, PTX_MUL, ".f32", po_r(a), po_r(a), po_r(r));
		}
}

void gpu_rescale_node(KernelGen *g, TileState *t, int i)
{
	for (int rs = 0; rs < 2 * g->row_blocks; rs++)
		gpu_rescale_row(g, t, i, rs);
}

/* Every running state rebased on references (accs: the P V accumulators
** too). */
static void rescale_states(KernelGen *g, TileState *t, int accs)
{
	for (int i = 0; i < g->c->nodes.n; i++)
		if ((accs && g->s->node[i].kind == SN_GEMM2) || g->s->node[i].kind == SN_RSUM)
			gpu_rescale_node(g, t, i);
}

/* Lazy rebasing. Any reference value keeps a rebased cascade exact (each
** state is the same sum times exp(-k r), and rho moves all of them
** together); the running max is only the choice that bounds exp(k (x - r))
** by 1. A lazy reference moves only when the max passes it by more than
** tau (exp(k tau) = 256: the values stay far from overflow, P's bf16
** keeps its relative precision), so that in most tiles no row of a warp
** moves and the O rescale (DV / 2 multiplies per row) and its rho are
** skipped by a warp-uniform branch. FlashAttention-4 does the same. */
void gpu_lazy_max(KernelGen *g, TileState *t, int i, int h, PReg m)
{
	PReg *a = &g->rowv[i][h], mx = gpu_reg(g, PC_F32), d = gpu_reg(g, PC_F32),
	     keep = gpu_reg(g, PC_PRED);
	if (t->mtrue[i]) {
		gpu_op3(g, PTX_MAX, ".f32", po_r(t->mtrue[i][h]), po_r(t->mtrue[i][h]), po_r(m));
		gpu_op2(g, PTX_MOV, ".f32", po_r(mx), po_r(t->mtrue[i][h]));
	} else {
		gpu_op3(g, PTX_MAX, ".f32", po_r(mx), po_r(*a), po_r(m));
	}
	/* false for NaN: -inf - -inf (rows with nothing yet) moves, as eagerly */
	gpu_op3(g, PTX_SUB, ".f32", po_r(d), po_r(mx), po_r(*a));
	gpu_op3(g, PTX_SETP, ".le.f32", po_r(keep), po_r(d), po_f(t->tau[i]));
	gpu_op4(g, PTX_SELP, ".f32", po_r(*a), po_r(*a), po_r(mx), po_r(keep));
	PReg mv = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_NOT, ".pred", po_r(mv), po_r(keep));
	gpu_op3(g, PTX_OR, ".pred", po_r(t->chg), po_r(t->chg), po_r(mv));
}

/* After the last lazy reference of a tile: rebase every state, unless no
** row of the warp moved its reference. Where the previous tile's P V may
** still be writing the accumulators (GpuTarget.acc_wait), only the row
** sums here: the accumulators wait for it at their node (gpu_lazy_acc),
** so that this tile's softmax runs beside that contraction. */
void gpu_lazy_rescale(KernelGen *g, TileState *t)
{
	PReg any = gpu_reg(g, PC_PRED);
	int skip = ptx_new_label(g->f);
	gpu_op3(g, PTX_VOTE, ".any.pred", po_r(any), po_r(t->chg), po_i(-1));
	gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
	ptx_guard(g->f, any, 1);
	t->acc_late = g->t->acc_wait != NULL;
	rescale_states(g, t, !t->acc_late);
	ptx_label(g->f, skip);
	t->acc_move = any;
	t->rescaled = 1;
}

/* GEMM2 node i's accumulators, left by the lazy rescale, rebased once the
** contraction writing them is done, unless no row of the warp moved. */
void gpu_lazy_acc(KernelGen *g, TileState *t, int i)
{
	int skip = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
	ptx_guard(g->f, t->acc_move, 1);
	gpu_rescale_node(g, t, i);
	ptx_label(g->f, skip);
}

/* Which references are lazy: running maxes (not references built from
** them, e.g. max(m, sink)) that every state rebases on with k > 0 and that
** come before the first rebased state; the epilogue reading one needs its
** true value (kept beside it, and every state rebased on it at the end). */
void gpu_lazy_plan(KernelGen *g, TileState *t)
{
	const Plan *p = g->p;
	int n = g->c->nodes.n, first = n;
	t->lazy = ARENA_ARRAY(g->a, signed char, n + 1);
	t->tau = ARENA_ARRAY(g->a, float, n + 1);
	t->mtrue = ARENA_ARRAY(g->a, PReg *, n + 1);
	t->lastref = -1;
	double *kmax = ARENA_ARRAY(g->a, double, n + 1);
	for (int i = 0; i < n; i++) {
		const Running *r = &p->np[i].run;
		ShapeNodeKind k = g->s->node[i].kind;
		if (!r->nrefs || (k != SN_GEMM2 && k != SN_RSUM))
			continue;
		if (i < first)
			first = i;
		for (int m = 0; m < r->nrefs; m++) {
			if (g->s->node[r->ref[m]].kind != SN_RMAX || r->k[m] <= 0 ||
			    r->ref[m] > first)
				return;
			if (r->k[m] > kmax[r->ref[m]])
				kmax[r->ref[m]] = r->k[m];
		}
	}
	for (int i = 0; i < n; i++)
		if (g->s->node[i].kind == SN_REF)
			return;
	for (int i = 0; i < n; i++) {
		if (kmax[i] <= 0)
			continue;
		t->lazy[i] = 1, t->lastref = i;
		t->tau[i] = (float)(8.0 * 0.6931471805599453 / kmax[i]);
		const Node *x = gpu_node(g, i);
		int read = x->out->kind == TK_OUT;
		for (int j = 0; j < n && !read; j++)
			if (p->np[j].role == ROLE_EPILOGUE)
				read = expr_reads(gpu_node(g, j)->body, x->out) ||
				       expr_reads(gpu_node(g, j)->filter, x->out);
		if (read) {
			t->mtrue[i] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
			for (int h = 0; h < 2 * g->row_blocks; h++) {
				t->mtrue[i][h] = gpu_reg(g, PC_F32);
				gpu_op2(g, PTX_MOV, ".f32", po_r(t->mtrue[i][h]), po_f(-INFINITY));
			}
		}
	}
}

/* At the end of the stream: tracked lazy references take their true value
** and the states follow, so that the epilogue sees the eager result. */
void gpu_lazy_finish(KernelGen *g, TileState *t)
{
	int any = 0;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!t->mtrue[i])
			continue;
		any = 1;
		for (int h = 0; h < 2 * g->row_blocks; h++) {
			gpu_op2(g, PTX_MOV, ".f32", po_r(t->prev[i][h]), po_r(g->rowv[i][h]));
			gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(t->mtrue[i][h]));
		}
	}
	if (any)
		rescale_states(g, t, 1);
}
