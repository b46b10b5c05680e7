/*
** lowering/sm90/sm90.h: the sm_90a target's own header (TMA, mbarriers,
** wgmma, setmaxnreg). Nothing outside lowering/sm90/ includes it; the
** driver and the generic kernel builder reach the target through T_sm90
** (targ.c).
**
** The CTA is three warpgroups. Warpgroup 0 is the producer: it gives its
** registers away (setmaxnreg.dec) and one thread issues every TMA copy:
** Q once, then K and V tiles into a ring of stages, each stage with a
** full and an empty mbarrier. Warpgroups 1 and 2 are the consumers, 64
** query rows each of the CTA's 128: the kernel builder's 8 warps
** (gpu/kernel.c), which take the registers (setmaxnreg.inc), wait for a
** stage to be full, run S = Q K^T and O += P V on wgmma (each warpgroup
** its own rows, both on the same K and V), and arrive on the stage's empty
** barrier. All walk the same tiles: the producer scans them (gpu_scan) and
** publishes each in a schedule the consumers read (sm90_next_tile). A
** persistent kernel (sm90_persistent_wanted) does this per work tile of the
** CTA's, Q copied again once the consumers give it back (qempty), the ring
** and the schedule carried on.
**   targ.c      the GpuTarget: its data and its limits
**   layout.c    shared memory (1024-byte aligned swizzled tiles, stages,
**               barriers) and the tensor maps
**   producer.c  the role split, barrier set-up and the producer's loop
**   gather.c    the producer's copies of gathered K and V rows
**   mma.c       wgmma descriptors and the two contractions
**   cross.c     a sum over the CTA's rows (a backward's dQ += dS K) on
**               wgmma, added to global memory by atomics
**   ring.c      the consumers' place in the ring: waits, releases
**   consumer.c  the consumers' other hooks: the stream's start, stores
*/
#ifndef ATTN_SM90_H
#define ATTN_SM90_H

#include "../gpu/gpu.h"

/* Registers per thread: at launch (the .minnctapersm cap of one CTA of 384
** threads: 168), then the producer's and the consumers' after setmaxnreg
** (24 + 2 * 240 = 3 * 168, the CTA's registers unchanged). */
enum {
	SM90_CONSUMER_WARPS = 8,
	SM90_THREADS = 128 + 32 * SM90_CONSUMER_WARPS,
	SM90_PRODUCER_REGS = 24,
	SM90_CONSUMER_REGS = 240,
	/* a producer that gathers (gather.c) evaluates page tables and copies
	** with 128 threads, or scans masks that read data with its four warps'
	** lanes (sm90_producer_lanes, sm90_role_regs): 56 + 2 * 224 = 3 * 168, or 72 + 2 * 216 where a
	** row is wider than 128 elements (16 chunks a thread and tensor) or K
	** and V are gathered (the pages' boxes beside the rows' chunks) */
	SM90_PRODUCER_REGS_LANES = 56,
	SM90_CONSUMER_REGS_LANES = 224,
	SM90_PRODUCER_REGS_WIDE = 72,
	SM90_CONSUMER_REGS_WIDE = 216
};
/* Entries of the schedule the producer publishes (producer.c's publish):
** more than SM90_MAX_STAGES + 1, the most it runs ahead of the reads. */
enum { SM90_SCHED_SLOTS = 8 };
enum { SM90_SMEM = 226 * 1024, SM90_MAX_STAGES = 4 }; /* 227 KB less the barriers' KB */
/* The consumers' turn barriers: after the builder's ids 1 and 2 (bar_base). */
enum { SM90_BAR_TURN = 3 };
/* The producer warpgroup's barrier where its warps scan masks that read
** data together (gpu_scan_words): after the turns' ids 3 and 4. */
enum { SM90_BAR_SCAN = SM90_BAR_TURN + 2 };
/* The consumers' barrier before a sum over the CTA's rows reads every
** warp's part of X (cross.c), after the scan's id; then each consumer
** warpgroup's (+ 1 + c) before its staged sums are reduced into memory;
** then the split's meeting (GpuTarget.meet_bar, gpu/parts.c). */
enum { SM90_BAR_CROSS = SM90_BAR_SCAN + 1, SM90_BAR_MEET = SM90_BAR_CROSS + 3 };
/* The tile-size choices of the retry loop (KernelShape.tiling, targ.c). */
enum { SM90_TILING_FIRST, SM90_TILING_BN64 };

/* The target's state while one kernel is emitted (KernelGen.targ). */
typedef struct Sm90Kernel {
	TmaRead q[GPU_MAXG], k[GPU_MAXG], v[GPU_MAXG];
	int nstages;
	uint32_t stage0, stage_bytes; /* the first stage; bytes per stage */
	uint32_t qbar, full, empty;   /* barriers: Q's; full[s] and empty[s] at + 8 s */
	/* the schedule: a barrier per slot at sched + 8 i, and the slots at
	** slots + 16 i, each the tile's first key (s64) and its all flag (b64) */
	uint32_t sched, slots;
	/* the producer's scan of masks that read data: two 8-byte slots of
	** window words (gpu_scan_words) */
	uint32_t scan_words;
	/* a persistent kernel's barrier on which the consumers release Q once
	** their last contraction of a work tile has completed, so that the
	** producer copies the next tile's Q (KernelShape.persistent) */
	uint32_t qempty;
	uint32_t q_tx, stage_tx; /* bytes each barrier's TMA copies bring */
	uint32_t total;
	/* the consumers' place in the ring: the stage (u32) and its phase
	** parity (u32), and the stage's shared address */
	PReg stage, phase, stage_addr;
	/* the consumers' place in the schedule: its slot and phase parity */
	PReg sslot, sphase;
	/* the consumers' phase parity of the Q barrier: a work tile's (u32) */
	PReg qphase;
	/* Q's A fragments per contraction and k-step of 16 (4 b32 each), read
	** once from shared memory: Q K^T then reads only K there */
	PReg *qf[GPU_MAXG];
	/* P V is waited for in the next tile's first contraction, which then
	** releases the previous tile's stage: its stage (u32), whether there
	** is one (pred), and whether this tile's release is still to emit */
	PReg prev_stage, has_prev;
	int release_due;
	/* the two consumer warpgroups take turns to issue their Q K^T (named
	** barriers SM90_BAR_TURN + c: warpgroup c's turn), so that one's
	** softmax runs while the other's contractions do: this warpgroup's
	** barrier and the other's (u32), and whether this tile's hand-over is
	** still to emit */
	PReg turn_mine, turn_other;
	int turns, handover_due;
	/* both consumer warpgroups have rows of the CTA's (pred; {0, 0}: always,
	** gpu_both_halves): where the second has none (decode's few packed rows)
	** it leaves once Q is in place, and the first takes no turns */
	PReg both;
	/* A tile's P V issued late (sm90_late_pv): after the next tile's Q K^T,
	** so that this warpgroup's softmax of that tile runs while it does.
	** P's A fragments per contraction (GEMM2's gemm index), kept across
	** the loop's back edge; whether this tile's issue of the previous
	** one's is still to emit. */
	int late_pv, issue_due, pv_cross;
	PReg *pf[GPU_MAXG];
	/* Sums over the CTA's rows (cross.c): X of each in two buffers of
	** xbytes, at x[c] and x[c] + xbytes, which tiles use in turn; xflip
	** (u32) is this tile's buffer's offset, 0 or xbytes */
	uint32_t x[GPU_MAXG], xbytes;
	PReg xflip;
	/* each sum's staged blocks, which the TMA unit adds through the sum's
	** tensor map (its index; its dimension of streamed rows) */
	uint32_t xstage[GPU_MAXG];
	int xmap[GPU_MAXG], xrowdim[GPU_MAXG];
	/* the tensor maps' parameter names (producer.c) */
	const char *map_names[GPU_MAX_TMAPS];
} Sm90Kernel;

static inline Sm90Kernel *sm90_of(KernelGen *g)
{
	return g->targ;
}

/* targ.c */
const char *sm90_refusal(const Plan *p, const KernelShape *s);

/* layout.c */
int sm90_row_blocks(const KernelShape *s);
int sm90_block_n(const KernelShape *s);
uint32_t sm90_min_bytes(const KernelShape *s, int bn);
uint32_t sm90_layout(KernelGen *g, int table);

/* producer.c */
void sm90_producer(KernelGen *g);
void sm90_next_stage(KernelGen *g, PReg stage, PReg ph);
void sm90_role_regs(KernelGen *g, int *producer, int *consumer);
int sm90_producer_lanes(KernelGen *g);

/* mma.c */
PReg sm90_descriptor(KernelGen *g, PReg addr, uint32_t lbo);
PReg sm90_desc_at(KernelGen *g, PReg d, uint32_t off);
const char *sm90_elem_type(const Expr *read);
int sm90_q_in_regs(const KernelShape *s);
void sm90_q_frags(KernelGen *g);
void sm90_contract_qk(KernelGen *g, int node);
void sm90_contract_pv(KernelGen *g, int node, const PReg *p);
int sm90_late_pv_wanted(const KernelGen *g);
void sm90_late_pv_setup(KernelGen *g);
void sm90_issue_late_pv(KernelGen *g);
void sm90_issue_pv(KernelGen *g);
void sm90_acc_wait(KernelGen *g, int node);

/* cross.c */
uint32_t sm90_cross_bytes(const KernelShape *s, int bn);
uint32_t sm90_cross_staging(KernelGen *g, int c, uint32_t off);
void sm90_cross_maps(KernelGen *g);
void sm90_cross_start(KernelGen *g);
void sm90_cross_end(KernelGen *g);
void sm90_cross_stage(KernelGen *g, int node, const PReg *x);
void sm90_contract_cross(KernelGen *g, int node);

/* gather.c */
int sm90_gathered(const KernelShape *s);
void sm90_gather_setup(KernelGen *g, PReg tid32, GatherStage *gs);

/* consumer.c */
int sm90_persistent_wanted(KernelGen *g);
int sm90_claims_wanted(KernelGen *g);
int sm90_streamk_wanted(KernelGen *g);
void sm90_work_start(KernelGen *g);
void sm90_stream_start(KernelGen *g, PReg j0, PReg buf, PReg any);
void sm90_stream_end(KernelGen *g);
void sm90_store_output(KernelGen *g, int node, PReg q, const PReg *crows, const PReg *rowok,
		       int slow, int done);

/* ring.c */
int sm90_turns_wanted(const KernelShape *s);
int sm90_next_tile(KernelGen *g, PReg out, PReg all, int first);
void sm90_tile_begin(KernelGen *g, PReg buf, int keeps_true_max);
void sm90_tile_end(KernelGen *g, PReg buf);
void sm90_release(KernelGen *g);
void sm90_release_prev(KernelGen *g);
void sm90_hand_over(KernelGen *g);

#endif
