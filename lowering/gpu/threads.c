/*
** lowering/gpu/threads.c: the kernel builder's threads within the CTA.
** A warp-specialised target puts its producer's threads first
** (GpuTarget.consumer_tid0); the builder's code counts its own threads
** from 0 and synchronises them alone.
*/
#include "gpu.h"

/* %tid.x less the producer's threads (b64): the builder's thread index. */
PReg gpu_tid(KernelGen *g)
{
	PReg r32 = gpu_reg(g, PC_B32), t = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".u32", po_r(r32), po_sym("%tid.x"));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(t), po_r(r32));
	if (g->t->consumer_tid0)
		gpu_op3(g, PTX_SUB, ".s64", po_r(t), po_r(t), po_i(g->t->consumer_tid0));
	return t;
}

/* With a producer in the CTA, bar.sync would wait for its threads too:
** the consumers' barriers name their count (g->bar_count where some have
** left). */
void gpu_bar(KernelGen *g, int id)
{
	if (g->t->consumer_tid0 && g->bar_count.n)
		gpu_op2(g, PTX_BAR, "", po_i(id + g->t->bar_base), po_r(g->bar_count));
	else if (g->t->consumer_tid0)
		gpu_op2(g, PTX_BAR, "", po_i(id + g->t->bar_base), po_i(gpu_warps(g->t) * 32));
	else
		gpu_op1(g, PTX_BAR, "", po_i(id));
}

/* Whether the second half of the builder's threads (a target's second
** consumer warpgroup) has rows (a predicate): not where its rows lie past
** the CTA's row extent, as in decode, whose CTAs hold a group's few packed
** query rows; the second half then leaves after the stream's start. Only
** where query heads are packed (KernelShape.pack): elsewhere a CTA lacks
** them only at a short last tile, and the predicates on the warpgroups' turns
** cost causal D 128 8k 2.4% on an H200 (bench/results/2026-11-26-914ee42-ab).
** No register ({0, 0}): both halves always have rows, as where they are
** slices of V's columns over the same rows (KernelShape.cta_slices). */
PReg gpu_both_halves(KernelGen *g)
{
	if (!g->s->pack || g->s->cta_slices > 1) /* the halves share the rows */
		return (PReg){0, 0};
	PReg r2 = gpu_reg(g, PC_B64), both = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_ADD, ".s64", po_r(r2), po_r(g->q0), po_i(g->cta_rows / 2));
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(both), po_r(r2), po_r(g->qext));
	return both;
}

/* GPU_WARPS unless the target's consumers are more (two warpgroups). */
int gpu_warps(const GpuTarget *t)
{
	return t->consumer_warps ? t->consumer_warps : GPU_WARPS;
}

/* The slices of V's columns a CTA of target t computes for kernel s: all
** where the target puts as many groups of consumer warps over the same
** rows (GpuTarget.cta_slices), else one (a CTA per slice). */
int gpu_cta_slices(const GpuTarget *t, const KernelShape *s)
{
	return s->vslices > 1 && s->vslices == t->cta_slices ? s->vslices : 1;
}

/* V's columns a CTA's tiles hold: every slice's where it computes them
** all (KernelShape.cta_slices). */
long gpu_cta_v_cols(const KernelShape *s)
{
	return s->DV * s->cta_slices;
}

/* The columns of each row block's output accumulators on target t
** (GpuTarget.acc_cols_unit): the value head dim, rounded up to whole
** multiples of the contraction's width, past which none is read. */
long gpu_acc_cols(const GpuTarget *t, const KernelShape *s)
{
	long u = t->acc_cols_unit ? t->acc_cols_unit : 8;
	return (s->DV + u - 1) / u * u;
}

/* Query rows per CTA: 16 per row block of each warp of a slice's group. */
int gpu_cta_rows(const GpuTarget *t, const KernelShape *s)
{
	return gpu_warps(t) * 16 * t->row_blocks(s) / gpu_cta_slices(t, s);
}

/* A row pass's view of target t: a CTA of GPU_THREADS threads that are all
** the builder's (no producer warps, unnamed barriers, no register split),
** so that every target runs the same row-pass code. */
GpuTarget gpu_row_target(const GpuTarget *t)
{
	GpuTarget r = *t;
	r.warps = GPU_WARPS, r.threads = GPU_THREADS, r.consumer_warps = 0;
	r.consumer_tid0 = 0, r.bar_base = 0, r.min_ctas_per_sm = 0;
	return r;
}
