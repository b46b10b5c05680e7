/*
** lowering/sm90/ring.c: the consumers' place in the ring of K/V stages.
** A tile begins with the wait for its stage's full barrier; its stage
** goes back to the producer (an arrival of every consumer thread on the
** stage's empty barrier) once the tile's P V has completed, which the next
** tile's first contraction waits for (or, where P V is late, the next
** tile's wait before its rescale, sm90_acc_wait); the stage and the phase
** parity move on as the producer's do.
*/
#include "sm90.h"

/* The stream's next tile as the producer published it (producer.c's
** publish): the wait for the schedule's slot, then its tile, and its all
** flag where the producer publishes one (sm90_producer_lanes); the first
** call starts at slot 0. */
int sm90_next_tile(KernelGen *g, PReg out, PReg all, int first)
{
	Sm90Kernel *k9 = sm90_of(g);
	if (first && !g->s->persistent) { /* else sm90_work_start's, carried */
		k9->sslot = gpu_reg(g, PC_B32), k9->sphase = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_MOV, ".b32", po_r(k9->sslot), po_i(0));
		gpu_op2(g, PTX_MOV, ".b32", po_r(k9->sphase), po_i(0));
	}
	PReg a = gpu_reg(g, PC_B32), all64 = gpu_reg(g, PC_B64);
	gpu_mbar_wait(g, gpu_ring_bar(g, k9->sslot, k9->sched), k9->sphase);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(k9->sslot), po_i(16), po_r(g->sbase));
	PReg v[2] = {out, all64};
	gpu_op2(g, PTX_LD, ".shared.v2.b64", po_vec(v, 2), po_mem(a, (int32_t)k9->slots));
	gpu_op3(g, PTX_SETP, ".ne.b64", po_r(all), po_r(all64), po_i(0));
	gpu_ring_next(g, k9->sslot, k9->sphase, SM90_SCHED_SLOTS);
	return sm90_producer_lanes(g);
}

/* The stage's address, then the wait for its full barrier. Gathered K and
** V tiles were written by the producer's cp.async, the generic proxy: a
** proxy fence orders them before this warpgroup's wgmma reads. */
void sm90_tile_begin(KernelGen *g, PReg buf, int keeps_true_max)
{
	(void)buf, (void)keeps_true_max;
	Sm90Kernel *k9 = sm90_of(g);
	k9->stage_addr = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(k9->stage_addr), po_r(k9->stage), po_i(k9->stage_bytes),
		po_r(g->sbase));
	gpu_mbar_wait(g, gpu_ring_bar(g, k9->stage, k9->full), k9->phase);
	if (sm90_gathered(g->s))
		gpu_op0(g, PTX_FENCE_PROXY_ASYNC, ".shared::cta");
	if (k9->turns) {
		gpu_op2(g, PTX_BAR, "", po_r(k9->turn_mine), po_i(gpu_warps(g->t) * 32));
		if (k9->both.n)
			ptx_guard(g->f, k9->both, 0);
	}
	k9->release_due = 1, k9->handover_due = k9->turns;
	k9->issue_due = k9->late_pv;
}

/* The previous tile's P V has completed (the caller waited for every
** wgmma group): its stage goes back to the producer, where there was one. */
void sm90_release(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	PReg eb = gpu_ring_bar(g, k9->prev_stage, k9->empty);
	gpu_op2(g, PTX_MBAR_ARRIVE, ".shared::cta.b64", po_sym("_"), po_mem(eb, 0));
	ptx_guard(g->f, k9->has_prev, 0);
}

/* The same once per tile, after its first contraction's wait, where P V is
** not late. */
void sm90_release_prev(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	if (!k9->release_due)
		return;
	k9->release_due = 0;
	sm90_release(g);
}

/* The tile's P V may still run: its stage is released by the next tile's
** first contraction (sm90_release_prev); then the next stage, the phase
** flipping on wrap. */
void sm90_tile_end(KernelGen *g, PReg buf)
{
	(void)buf;
	Sm90Kernel *k9 = sm90_of(g);
	gpu_op2(g, PTX_MOV, ".b32", po_r(k9->prev_stage), po_r(k9->stage));
	gpu_op2(g, PTX_MOV, ".pred", po_r(k9->has_prev), po_r(gpu_pconst(g, 1)));
	sm90_next_stage(g, k9->stage, k9->phase);
}

/* Turns pay where a tile's contractions are long enough to cover the other
** warpgroup's softmax: head dims of 128 and more. They still pay on balance
** where a sum over the CTA's rows has both warpgroups meet at a barrier
** every tile (cross.c; both measured in bench/RESULTS.md). */
int sm90_turns_wanted(const KernelShape *s)
{
	return s->qk[0].D >= 128;
}

/* After this warpgroup's first contraction of the tile is issued: the
** other warpgroup's turn, where there is another (k9->both). Once per
** tile. */
void sm90_hand_over(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	if (!k9->handover_due)
		return;
	k9->handover_due = 0;
	gpu_op2(g, PTX_BAR_ARRIVE, "", po_r(k9->turn_other), po_i(gpu_warps(g->t) * 32));
	if (k9->both.n)
		ptx_guard(g->f, k9->both, 0);
}
