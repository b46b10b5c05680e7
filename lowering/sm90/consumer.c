/*
** lowering/sm90/consumer.c: the kernel builder's hooks as the consumer
** warpgroups run them, but the ring's (ring.c). The producer does every
** copy but a gathered Q's, so the loaders and prefetches are empty; the
** stream starts with the wait for Q; the contractions' last group
** completes before the epilogue.
*/
#include "sm90.h"

/* CTAs take work tiles in turn (KernelShape.persistent) where the producer
** is one thread that copies by TMA and each work tile is one grid point's
** query tile: not in a kernel of partial states (its grid's z splits the
** keys), nor where query heads are packed (the launcher's x counts groups
** of rows) or the producer runs in all its threads (gathers, masks that
** read data: its registers and the scan's barrier). Nor where masks read
** the query row (KernelGen.grouped) and the CTAs' streams differ in length
** (gpu_equal_streams): CTAs that take every nctaid.x-th tile then drift
** apart, over more heads' K and V than the L2 holds, where the hardware
** starts each waiting CTA as one ends, in the launch order's groups. */
int sm90_persistent_wanted(KernelGen *g)
{
	const KernelShape *s = g->s;
	return !s->parts && !s->one_window && !s->pack && s->qcls >= 0 && !sm90_producer_lanes(g) &&
	       (!g->grouped || gpu_equal_streams(g));
}

/* A split's CTAs claim their row's tiles (gpu/claims.c) where the
** producer is one TMA thread (its lanes' copies and scans would need each
** claim shared by a barrier) and the consumer warpgroups take turns (head
** dims of 128 and more: decode's). Without turns (head dim 64) the parts
** kernels gave wrong outputs on an H100 with every form of the claims'
** loop but one, even where no tile was claimed from the counter, and the
** cause is not found (bench/results/2026-11-28-d65c28a-claims-ab). */
int sm90_claims_wanted(KernelGen *g)
{
	return !sm90_producer_lanes(g) && sm90_turns_wanted(g->s) && gpu_claims_fit(g);
}

/* The consumers' places in the ring, in the schedule and in the Q barrier's
** phases, which carry from one work tile to the next: the producer's go on
** alike (producer.c). The previous tile's stage is released by the next
** work tile's first contraction. */
void sm90_work_start(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	PReg *r[] = {&k9->stage, &k9->phase, &k9->prev_stage, &k9->sslot, &k9->sphase, &k9->qphase};
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
		*r[i] = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_MOV, ".b32", po_r(*r[i]), po_i(0));
	}
	k9->has_prev = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_MOV, ".pred", po_r(k9->has_prev), po_r(gpu_pconst(g, 0)));
	sm90_cross_start(g);
}

/* Warpgroup 1 (where one) hands the first turn of a work tile to warpgroup
** 0, where the two take turns. */
static void hand_first_turn(KernelGen *g, PReg one)
{
	if (!sm90_of(g)->turns)
		return;
	gpu_op2(g, PTX_BAR_ARRIVE, "", po_i(SM90_BAR_TURN), po_i(gpu_warps(g->t) * 32));
	ptx_guard(g->f, one, 0);
}

/* The ring starts at stage 0, phase 0; Q must have arrived. A Q negated
** for a negative folded scale (gpu/scale.c) is written by ordinary stores
** that wgmma then reads: the proxy fence orders them, and the barrier
** makes every thread's part visible. Then a second warpgroup with none of
** the CTA's rows leaves (gpu_both_halves). */
void sm90_stream_start(KernelGen *g, PReg j0, PReg buf, PReg any)
{
	(void)j0, (void)buf, (void)any;
	Sm90Kernel *k9 = sm90_of(g);
	int persistent = g->s->persistent;
	if (!persistent) { /* else sm90_work_start's, carried */
		k9->stage = gpu_reg(g, PC_B32), k9->phase = gpu_reg(g, PC_B32);
		k9->prev_stage = gpu_reg(g, PC_B32), k9->has_prev = gpu_reg(g, PC_PRED);
		gpu_op2(g, PTX_MOV, ".b32", po_r(k9->stage), po_i(0));
		gpu_op2(g, PTX_MOV, ".b32", po_r(k9->phase), po_i(0));
		gpu_op2(g, PTX_MOV, ".b32", po_r(k9->prev_stage), po_i(0));
		gpu_op2(g, PTX_MOV, ".pred", po_r(k9->has_prev), po_r(gpu_pconst(g, 0)));
		sm90_cross_start(g);
	}
	/* warpgroup c's turn barrier is SM90_BAR_TURN + c; warpgroup 1 hands
	** the first turn to warpgroup 0 */
	PReg wg = gpu_reg(g, PC_B32), one = gpu_reg(g, PC_PRED);
	k9->turn_mine = gpu_reg(g, PC_B32), k9->turn_other = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(wg), po_r(gpu_tid(g)));
	gpu_op3(g, PTX_SHR, ".u32", po_r(wg), po_r(wg), po_i(7));
	gpu_op3(g, PTX_ADD, ".u32", po_r(k9->turn_mine), po_r(wg), po_i(SM90_BAR_TURN));
	gpu_op3(g, PTX_SUB, ".u32", po_r(k9->turn_other), po_i(2 * SM90_BAR_TURN + 1),
		po_r(k9->turn_mine));
	k9->turns = sm90_turns_wanted(g->s);
	k9->both = gpu_both_halves(g);
	gpu_op3(g, PTX_SETP, ".ne.u32", po_r(one), po_r(wg), po_i(0));
	if (k9->both.n)
		gpu_op3(g, PTX_AND, ".pred", po_r(one), po_r(one), po_r(k9->both));
	/* stream-K: a second warpgroup without rows (in no work tile, the
	** launcher's rule) leaves now, the first counting its barriers alone;
	** leaving by a branch that stays in the loop made ptxas serialise
	** every wgmma (C7520) */
	PReg stayed = g->s->streamk ? k9->both : (PReg){0, 0};
	if (stayed.n) {
		PReg idle = gpu_reg(g, PC_PRED), second = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".ne.u32", po_r(second), po_r(wg), po_i(0));
		gpu_op3(g, PTX_XOR, ".pred", po_r(idle), po_r(stayed), po_r(gpu_pconst(g, 1)));
		gpu_op3(g, PTX_AND, ".pred", po_r(idle), po_r(idle), po_r(second));
		gpu_op0(g, PTX_RET, "");
		ptx_guard(g->f, idle, 0);
		g->bar_count = gpu_reg(g, PC_B32);
		gpu_op4(g, PTX_SELP, ".b32", po_r(g->bar_count), po_i(gpu_warps(g->t) * 32),
			po_i(gpu_warps(g->t) * 16), po_r(stayed));
	}
	/* the first turn handed over; in a persistent kernel only once Q is
	** in place: warpgroup 0 takes the previous work tile's last turn before
	** it gives Q back, and a second arrival of warpgroup 1's before that
	** would complete the barrier's generation by itself */
	if (!persistent)
		hand_first_turn(g, one);
	PReg qbar = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".u32", po_r(qbar), po_r(g->sbase), po_i(k9->qbar));
	/* the work tile's Q: a phase of the Q barrier per work tile */
	gpu_mbar_wait(g, qbar, persistent ? k9->qphase : k9->phase);
	if (persistent)
		gpu_op3(g, PTX_XOR, ".b32", po_r(k9->qphase), po_r(k9->qphase), po_i(1));
	if (persistent)
		hand_first_turn(g, one);
	for (int k = 0; k < g->s->nqk; k++)
		if (k9->q[k].map < 0)
			gpu_gather_q_copy(g, &k9->q[k], g->tid, gpu_warps(g->t) * 32);
	for (int k = 0; k < g->s->nqk; k++)
		gpu_scale_negate_q_halves(g, k, g->sbase, k9->q[k].off,
					  gpu_tma_tile_bytes((uint32_t)g->cta_rows, g->s->qk[k].D),
					  g->tid, stayed);
	gpu_op0(g, PTX_FENCE_PROXY_ASYNC, ".shared::cta");
	gpu_bar(g, 0);
	/* a second warpgroup with no rows leaves, its part of a negated Q
	** written; the empty barriers do not count it */
	if (k9->both.n && !stayed.n) {
		PReg idle = gpu_reg(g, PC_PRED), second = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".ne.u32", po_r(second), po_r(wg), po_i(0));
		gpu_op3(g, PTX_AND, ".pred", po_r(idle), po_r(second), po_r(k9->both));
		gpu_op3(g, PTX_XOR, ".pred", po_r(idle), po_r(idle), po_r(second));
		gpu_op0(g, PTX_RET, "");
		ptx_guard(g->f, idle, 0);
	}
	if (sm90_q_in_regs(g->s))
		sm90_q_frags(g);
	sm90_late_pv_setup(g);
}

/* The accumulators' last P V (issued here where P V is late) completes
** before the epilogue reads them. Warpgroup 1 handed warpgroup 0 one turn
** more than warpgroup 0 took (the first): warpgroup 0 takes it, so that no
** barrier is left half-arrived; in a persistent kernel before Q goes back,
** so that warpgroup 1's first hand-over of the next work tile (after Q's
** wait) comes after it. */
void sm90_stream_end(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	PReg zero = gpu_reg(g, PC_PRED);
	if (k9->late_pv) {
		gpu_op0(g, PTX_WGMMA_FENCE, ".sync.aligned");
		sm90_issue_late_pv(g);
	}
	gpu_op1(g, PTX_WGMMA_WAIT, ".sync.aligned", po_i(0));
	if (k9->turns) {
		gpu_op3(g, PTX_SETP, ".eq.u32", po_r(zero), po_r(k9->turn_mine),
			po_i(SM90_BAR_TURN));
		if (k9->both.n)
			gpu_op3(g, PTX_AND, ".pred", po_r(zero), po_r(zero), po_r(k9->both));
		gpu_op2(g, PTX_BAR, "", po_i(SM90_BAR_TURN), po_i(gpu_warps(g->t) * 32));
		ptx_guard(g->f, zero, 0);
	}
	if (g->s->persistent) {
		/* the last tile's stage goes back now (its P V has completed), so
		** that the next work tile starts with no previous tile, as a CTA's
		** first does; Q goes back to the producer for the next work tile:
		** every read of it has completed, and a negated Q's stores (generic
		** proxy) are ordered before the TMA's writes */
		sm90_release(g);
		gpu_op2(g, PTX_MOV, ".pred", po_r(k9->has_prev), po_r(gpu_pconst(g, 0)));
		gpu_op0(g, PTX_FENCE_PROXY_ASYNC, ".shared::cta");
		gpu_op2(g, PTX_MBAR_ARRIVE, ".shared::cta.b64", po_sym("_"),
			po_mem(g->sbase, (int32_t)k9->qempty));
	}
}

/* Outputs as 16-bit pairs where the strides allow (gpu/pairs.c: the
** accumulators' m64 layout per warp is mma.sync's), else element by
** element (the builder's stores). */
void sm90_store_output(KernelGen *g, int node, PReg q, const PReg *crows, const PReg *rowok,
		       int slow, int done)
{
	int pc = gpu_pair_column(g, node);
	if (pc >= 0) {
		gpu_store_pairs(g, crows, node, pc, q, rowok, slow);
		gpu_op1(g, PTX_BRA, ".uni", po_label(done));
		return;
	}
	gpu_op1(g, PTX_BRA, ".uni", po_label(slow));
}
