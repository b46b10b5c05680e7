/*
** lowering/sm80/sm80.h: the sm_80 target's own header (mma.sync, ldmatrix,
** cp.async). Nothing outside lowering/sm80/ includes it; the driver and
** the generic kernel builder reach the target through T_sm80 (targ.c).
**   targ.c      the GpuTarget: its data and the spill/tile-size policy
**   kernel.c    the tile-size policy; the hooks that combine loads and mma
**   loads.c     shared memory's layout, cp.async copies of Q, K and V
**   mma.c       ldmatrix fragments, mma.sync contractions
**   epilogue.c  paired and staged output stores
*/
#ifndef ATTN_SM80_H
#define ATTN_SM80_H

#include "../gpu/gpu.h"

/* The tile-size choices of the retry loop (KernelShape.tiling, targ.c). */
enum { SM80_TILING_FIRST, SM80_TILING_ROWS64, SM80_TILING_JOINT_KV };

typedef struct Smem {
	uint32_t q[GPU_MAXG], k[GPU_MAXG], v[GPU_MAXG];    /* byte offsets */
	uint32_t kbuf[GPU_MAXG], vbuf[GPU_MAXG];           /* bytes between the two buffers */
	uint32_t qs[GPU_MAXG], ks[GPU_MAXG], vs[GPU_MAXG]; /* row strides (bytes) */
	/* the K read whose buffers a V read shares (the same rows of the same
	** tensor: a backward's Q and dO, read as both), or -1 */
	int vk[GPU_MAXG];
	uint32_t kvend;           /* the end of the K and V buffers */
	uint32_t x[GPU_MAXG], xs; /* per sum over the CTA's rows, its X tile; row stride */
	uint32_t scan; /* the tile table of masks that read data (16-byte aligned), or 0 */
	uint32_t total;
} Smem;

/* A tile load's per-thread work, computed once. The 128 threads copy the
** tile's 16-byte chunks in order, so (with D/8 dividing 128) a thread's
** chunks share one column and lie `step` rows apart: per tile, one base
** address plus multiples of step*rowstride, and shared-memory addresses that
** differ by immediates. */
typedef struct TileLoad {
	int n, step; /* chunks per thread, rows between them */
	uint32_t sstride;
	PReg row0;      /* b64 first row of this thread's chunks */
	PReg loff;      /* b64 byte offset of the first chunk from (row 0, d 0) */
	PReg stepbytes; /* b64 step * rowstride */
	PReg saddr;     /* u32 shared address of the first chunk */
	PReg base;      /* b64 global address of (row 0, d 0) of the read */
	PReg rowstride; /* b64 bytes between rows */
	int general;    /* D/8 does not divide the block (D = 96, 192): per-chunk math */
	long cpr;
	PReg tid32, sbase; /* for the general case */
	uint32_t soff;
	PReg baseoff;      /* b64 base + loff: the thread's first chunk of row 0 */
	const char *pname; /* the tensor's pointer parameter: a valid address */
	int stepshift;     /* log2(step) */
	int aligned;       /* tile starts are multiples of step (K and V tiles) */
	/* a read whose rows follow the key through a gather (gpu/gather.c):
	** base is its fixed part, each row's offset evaluated per chunk */
	const Expr *gacc;
	int gnode;
	IndexKind along; /* the rows: keys (K, V) or query rows (Q) */
} TileLoad;

/* Q fragments of one contraction: in registers (qf[m][kk], loaded once), or
** re-read per k-step from shared memory at qaddr[m] (too many registers). */
typedef struct QFrag {
	PReg **qf[GPU_MAXMT];
	PReg qaddr[GPU_MAXMT];
	int inregs;
} QFrag;

/* The target's state while one kernel is emitted (KernelGen.targ). */
typedef struct Sm80Kernel {
	Smem sm;
	TileLoad lq[GPU_MAXG], lk[GPU_MAXG], lv[GPU_MAXG]; /* Q, K and V tile loaders */
	QFrag qf[GPU_MAXG];                                /* Q fragments per contraction */
	/* lane parts of the ldmatrix addresses of K and V: of buffer 0 from the
	** prologue (base), of the tile's buffer in the stream (addr) */
	PReg kbase[GPU_MAXG], vbase[GPU_MAXG];
	PReg kaddr[GPU_MAXG], vaddr[GPU_MAXG];
} Sm80Kernel;

static inline Sm80Kernel *sm80_of(KernelGen *g)
{
	return g->targ;
}

/* kernel.c */
int sm80_row_blocks(const KernelShape *s);
int sm80_one_window_wanted(const KernelShape *s);
uint32_t sm80_layout(KernelGen *g, int table);
void sm80_stream_start(KernelGen *g, PReg j0, PReg buf, PReg any);
void sm80_prefetch(KernelGen *g, PReg nxt, PReg buf, PReg when);
void sm80_tile_begin(KernelGen *g, PReg buf, int keeps_true_max);
void sm80_tile_end(KernelGen *g, PReg buf);

/* loads.c */
enum { SM80_COPY_K = 1, SM80_COPY_V = 2 };
void sm80_plan_smem(const KernelShape *s, Smem *m, int bm, int table);
int sm80_setup_loads(KernelGen *g, int table);
void sm80_load_q(KernelGen *g);
void sm80_issue_kv(KernelGen *g, PReg j, PReg buf, PReg when, int which);
void sm80_issue_next_v(KernelGen *g, PReg nxt, PReg buf, PReg when);
void sm80_copy4_async(KernelGen *g, PtxOpnd dst, PtxOpnd src);
void sm80_copy_commit(KernelGen *g);
void sm80_copy_wait(KernelGen *g, int n);

/* mma.c */
PReg sm80_lane_addr(KernelGen *g, PReg sbase, uint32_t soff, uint32_t stride, int transposed);
PReg sm80_v_lane_addr(KernelGen *g, PReg sbase, int v);
void sm80_q_frags(KernelGen *g);
void sm80_contract_qk(KernelGen *g, int node);
void sm80_contract_pv(KernelGen *g, int node, const PReg *p);
void sm80_cross_stage(KernelGen *g, int node, const PReg *x);
void sm80_contract_cross(KernelGen *g, int node);

/* epilogue.c */
void sm80_store_output(KernelGen *g, int node, PReg q, const PReg *crows, const PReg *rowok,
		       int slow, int done);

#endif
