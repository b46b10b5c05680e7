/*
** lowering/sm80/kernel.c: sm_80's tile-size policy and the kernel
** builder's hooks that combine loads and contractions: the layout of shared
** memory, the stream's start, each tile's prefetch and its ldmatrix
** addresses. The order of all of it is gpu/kernel.c's.
*/
#include "sm80.h"

/* 128-row tiles with a head dim above 64: the kernels at the register
** limit, where the stream's code choices move ptxas's spills. */
static int wide_rows(const KernelShape *s)
{
	return sm80_row_blocks(s) == 2 && (s->qk[0].D > 64 || s->DV > 64);
}

/* Whether the next tile's V is copied after this tile's first contraction
** (sm80_prefetch): for the kernels at the register limit. Where a kernel
** with the copies apart spills over budget, the retry loop tries it with
** them together (SM80_TILING_JOINT_KV) before 64-row tiles. Kernels with a
** tile table split too, since its first window is staged through shared
** memory and the table's fill no longer holds many registers: they spill
** about as much either way, and the split is faster. */
static int split_v(const KernelShape *s)
{
	return s->tiling != SM80_TILING_JOINT_KV && wide_rows(s);
}

/* Whether a table kernel also comes without the refill
** (KernelShape.one_window; see gpu/scan.c's scan_table): where it holds 128
** rows with a head dim above 64, at the register limit, the refill's tests
** make ptxas spill in the stream loop. At D = 64 the kernel does not spill
** either way, and the one-window kernel was slower, so it keeps one entry. */
int sm80_one_window_wanted(const KernelShape *s)
{
	return s->table && wide_rows(s);
}

/* Two m16 row blocks per warp (128-row CTAs) halve the shared-memory reads
** per mma, the limit of 64-row tiles; they need the registers of
** one contraction pair with head dims up to 128. */
int sm80_row_blocks(const KernelShape *s)
{
	if (s->tiling == SM80_TILING_ROWS64 || s->pack || s->p->c->rows64)
		return 1;
	return s->nqk == 1 && s->npv == 1 && s->qk[0].D <= 128 && s->DV <= 128 ? 2 : 1;
}

/* The target's state, and shared memory: Q, K and V tiles, then the tile
** table (sm80_plan_smem). */
uint32_t sm80_layout(KernelGen *g, int table)
{
	Sm80Kernel *k8 = ARENA_NEW(g->a, Sm80Kernel);
	g->targ = k8;
	sm80_plan_smem(g->s, &k8->sm, g->cta_rows, table);
	g->table_off = k8->sm.scan;
	return k8->sm.total;
}

/* The first tile's K and V into buffer 0, then the wait for Q (the first
** K/V tile may still be in flight), its sign flipped where a folded scale
** is negative (gpu/scale.c), and its fragments. */
void sm80_stream_start(KernelGen *g, PReg j0, PReg buf, PReg any)
{
	Sm80Kernel *k8 = sm80_of(g);
	sm80_issue_kv(g, j0, buf, any, SM80_COPY_K | SM80_COPY_V);
	gpu_op1(g, PTX_CP_WAIT, "", po_i(1));
	gpu_op1(g, PTX_BAR, "", po_i(0));
	for (int k = 0; k < g->s->nqk; k++)
		gpu_scale_negate_q(g, k, g->sbase, k8->sm.q[k],
				   (uint32_t)g->cta_rows * k8->sm.qs[k], g->tid);
	sm80_q_frags(g);
}

/* The next tile's K and V into the other buffer. 128-row kernels with a
** head dim above 64 copy its V after this tile's first contraction instead
** (split_v, sm80_issue_next_v): the head's 16 copies per thread held up the
** contraction's ldmatrix reads in the memory-instruction queue. */
void sm80_prefetch(KernelGen *g, PReg nxt, PReg buf, PReg when)
{
	KernelShape *s = g->s;
	s->split_v = split_v(s);
	PReg nbuf = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_XOR, ".b32", po_r(nbuf), po_r(buf), po_i(1));
	sm80_issue_kv(g, nxt, nbuf, when, s->split_v ? SM80_COPY_K : SM80_COPY_K | SM80_COPY_V);
}

/* This tile's ldmatrix addresses, before the wait so that they (and the
** read of %tid.x) take no time of their own; then the wait for the tile's
** copies and the barrier that makes them visible. 128-row kernels with a
** head dim above 64 recompute the lane parts from %tid.x per tile: held
** across the stream they were spilled, and the reloads stalled the first
** ldmatrix. Not with a true max kept beside a lazy one, where recomputing
** made ptxas spill more. */
void sm80_tile_begin(KernelGen *g, PReg buf, int keeps_true_max)
{
	Sm80Kernel *k8 = sm80_of(g);
	const KernelShape *s = g->s;
	const Smem *sm = &k8->sm;
	int fresh = wide_rows(s) && !keeps_true_max;
	if (fresh)
		gpu_lane_ids(g);
	for (int k = 0; k < s->nqk; k++) {
		k8->kaddr[k] = gpu_reg(g, PC_B32);
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(k8->kaddr[k]), po_r(buf), po_i(sm->kbuf[k]),
			po_r(fresh ? sm80_lane_addr(g, g->sbase, sm->k[k], sm->ks[k], 0)
				   : k8->kbase[k]));
	}
	for (int v = 0; v < s->nvreads; v++) {
		k8->vaddr[v] = gpu_reg(g, PC_B32);
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(k8->vaddr[v]), po_r(buf), po_i(sm->vbuf[v]),
			po_r(fresh ? sm80_v_lane_addr(g, g->sbase, v) : k8->vbase[v]));
	}
	gpu_op1(g, PTX_CP_WAIT, "", po_i(1));
	gpu_op1(g, PTX_BAR, "", po_i(0));
}

/* The next tile's copies go into this buffer: every warp must be done
** reading it. */
void sm80_tile_end(KernelGen *g, PReg buf)
{
	(void)buf;
	gpu_op1(g, PTX_BAR, "", po_i(0));
}
