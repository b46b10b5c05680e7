/*
** lowering/gpu/target.h: a GPU target as the driver sees it, in the manner
** of QBE's struct Target: data (names, versions, tile sizes, the machine
** code the PTX is assembled for) and function pointers (the PTX emitter and
** the per-target spill/tile-size retry policy). Each target is a directory
** of lowering/ that defines one GpuTarget; lowering/targets.h lists them.
** The retry loop itself is generic (tune.c): the driver hands it a
** callback that runs ptxas, so that nothing here spawns a process.
*/
#ifndef ATTN_GPU_TARGET_H
#define ATTN_GPU_TARGET_H

#include <stdio.h>

#include "../../compiler/plan.h"
#include "../ptx/ptx.h"

/* A TMA tensor map a kernel may take by value: after the magic
** parameters, one `.param .align 64 .b8 NAME[128]` per map in this order.
** The generated launcher encodes each (attnrt_tensor_map) over the whole of
** cascade tensor `tensor` (its shape and strides as launched; the last
** dimension contiguous), with box[d] elements along tensor dimension d:
** GPU_TMAP_INNER (128 bytes of 16-bit elements, 128-byte swizzle) along the
** last, the tile's rows along the row or key dimension, 1 elsewhere.
** Elements outside the tensor read as zero. */
enum { GPU_MAX_TMAPS = 6, GPU_TMAP_MAX_RANK = 5, GPU_TMAP_INNER = 64 };
/* Bytes of a box's row in shared memory: the 128-byte swizzle's width, a
** panel's row (GPU_TMAP_INNER 16-bit elements). */
enum { GPU_TMAP_ROW = 2 * GPU_TMAP_INNER };
typedef struct GpuTmap {
	int tensor;
	int rank;
	unsigned box[GPU_TMAP_MAX_RANK];
	/* a paged read's map (gpu/gather_stage.c): the launcher cuts the box along
	** dimension clip - 1 to that dimension's extent, a page; 0: none */
	int clip;
} GpuTmap;

/* What the generated C interface needs of each kernel. */
typedef struct GpuKernelInfo {
	unsigned smem;        /* dynamic shared memory bytes */
	unsigned threads;     /* threads per CTA */
	unsigned block_m;     /* query rows per CTA */
	unsigned block_n;     /* keys per tile */
	int data_masks;       /* some mask reads data: the scan's work is per CTA */
	int split_v;          /* the kernel copies the next V tile apart from its K */
	int table;            /* the kernel keeps a tile table (document ids along the keys) */
	long pack;            /* GQA packing: 0 none, > 0 rows per group, < 0 -(dim index + 1) */
	int one_window;       /* a second entry, NAME_fwd_short, for keys up to window_keys */
	unsigned window_keys; /* keys one tile-table window covers */
	int ntmaps;           /* TMA tensor maps the kernel takes (0: none) */
	GpuTmap tmap[GPU_MAX_TMAPS];
	int parts;               /* a third entry, NAME_fwd_part: partial states (gpu/parts.c) */
	unsigned part_cta_bytes; /* the states of one CTA of it, in bytes */
	int streamk;             /* a fourth, NAME_fwd_streamk: the same as stream-K */
	/* NAME_fwd's CTAs each take work tiles in turn (KernelShape.persistent):
	** the launcher starts no more of them than the device runs at once */
	int persistent;
	int vslices; /* launches nctaid.z = vslices slices of V's columns (KernelShape) */
} GpuKernelInfo;

enum { GPU_MAX_CUBINS = 4 };

/* The most shared memory any GPU gives one CTA (the H100's and H200's
** opt-in limit, 227 KiB): a kernel that needs more would fail at every
** launch, so gpu_emit_program refuses it. */
enum { GPU_CTA_SMEM_MAX = 227 * 1024 };

struct KernelGen;   /* gpu.h */
struct KernelShape; /* gpu.h */

typedef struct GpuTarget {
	const char *name;        /* --target and the plan's target */
	int sm;                  /* compute capability times ten */
	const char *ptx_target;  /* the module's .target */
	const char *ptx_version; /* the module's .version */
	/* the machine code the PTX is assembled for (compute capabilities times
	** ten), in the order the generated C embeds it; ptxas's spill report
	** comes from the last */
	int ncubins;
	int cubin_sms[GPU_MAX_CUBINS];
	int warps;   /* warps per CTA */
	int threads; /* threads per CTA */
	/* Warp-specialised CTAs: the kernel builder's GPU_THREADS threads (the
	** consumers) start at %tid.x = consumer_tid0, after the target's
	** producer threads; their barriers are named (bar.sync id + bar_base,
	** GPU_THREADS) so that the producer is not waited for. 0, 0: the CTA
	** is the builder's threads alone and bar.sync id takes them all. */
	int consumer_tid0;
	int bar_base;
	/* A named barrier id of the split's meeting (parts.c: warp 0 and the
	** warps that help it merge), free of the target's own; 0: no helpers. */
	int meet_bar;
	/* The builder's warps (0: GPU_WARPS), each 16 query rows per row
	** block: 8 are two consumer warpgroups of 64 rows each. */
	int consumer_warps;
	/* Slices of V's columns (KernelShape.vslices) one CTA computes where V
	** comes in exactly that many: its consumer warps in as many groups,
	** each over the same rows and a slice of its own (2: a consumer
	** warpgroup each, the CTA's rows halved), so that the launch has no
	** slices; 0 or 1: a CTA per slice. */
	int cta_slices;
	/* The output's accumulators come in whole multiples of this many
	** columns (0: mma's n8): wgmma reads V's 64-column panels whole, and
	** the columns past the value head dim are never read. */
	int acc_cols_unit;
	int min_ctas_per_sm; /* .minnctapersm, a register cap for setmaxnreg (0: none) */
	/* Warps may take their own tile classes (gpu_warp_class): not where the
	** contractions are warpgroup-wide (wgmma needs all four warps). */
	int warp_classes;
	unsigned smem_max; /* dynamic shared memory a CTA may take (bytes) */
	/* The retry policy: rounds of regeneration after the first, and the
	** tile-size choice for a kernel that ptxas spilled spill_bytes of (0:
	** keep it). */
	int retune_rounds;
	int (*retune)(const GpuKernelInfo *k, long spill_bytes);
	/* m16 row blocks per warp of a kernel (1 or 2: 64- or 128-row CTAs),
	** given its tile-size choice */
	int (*row_blocks)(const struct KernelShape *s);
	/* keys per tile of a kernel: GPU_BN, or GPU_MAXBN where a warp has
	** one row block */
	int (*block_n)(const struct KernelShape *s);
	/* After a kernel with a tile table: whether a second entry without the
	** table's refill pays (KernelShape.one_window; NULL hook: never) */
	int (*one_window_wanted)(const struct KernelShape *s);
	/* Why the target does not take a plan that gpu_shape accepted, or NULL
	** (NULL hook: it takes them all). */
	const char *(*refusal)(const Plan *p, const struct KernelShape *s);

	/* The kernel builder's hooks (gpu/kernel.c), in the order it calls
	** them. layout: the target's state (g->targ) and its shared memory,
	** the tile table (GPU_TABLE_BYTES where table) at g->table_off; returns
	** the bytes. */
	uint32_t (*layout)(struct KernelGen *g, int table);
	/* After the grid decode, before the consumers' code (NULL: none): a
	** warp-specialised target's role split and its producer's loop, which
	** ends its threads; the consumers go on from there. */
	void (*producer)(struct KernelGen *g);
	/* Whether the kernel's CTAs each take work tiles in turn
	** (KernelShape.persistent; NULL: never), asked before the layout; and
	** the consumers' set-up before their first work tile, of what carries
	** from one to the next (a ring's place). */
	int (*persistent_wanted)(struct KernelGen *g);
	/* whether the kernel can be built as stream-K (gpu/streamk.c; NULL:
	** always), asked before the layout */
	int (*streamk_wanted)(struct KernelGen *g);
	/* whether the split's CTAs claim key tiles from a counter of their
	** row's (KernelShape.claims; NULL: never), asked before the layout */
	int (*claims_wanted)(struct KernelGen *g);
	void (*work_start)(struct KernelGen *g);
	/* The tile loaders and the CTA's Q copies, or only the loaders where Q
	** waits for the tile table's ids (returns 1: load_q then runs when the
	** ids are committed, g->ids). NULL: a producer copies Q, K and V (and
	** load_q is not called). */
	int (*setup_loads)(struct KernelGen *g, int table);
	void (*load_q)(struct KernelGen *g);
	/* Asynchronous copies of 4 bytes to shared memory (one instruction, so
	** that the caller can guard it), their commit and the wait for all but
	** the newest n groups: the tile table's id staging (NULL where the
	** target takes no tile table). */
	void (*copy4_async)(struct KernelGen *g, PtxOpnd dst, PtxOpnd src);
	void (*copy_commit)(struct KernelGen *g);
	void (*copy_wait)(struct KernelGen *g, int n);
	/* Where a producer scans the tiles (NULL: the builder's threads do,
	** gpu_scan): the stream's first (first) or next tile into out (>= the
	** stream's end where none is left), as the producer found it; returns
	** 1 where all (every mask true on all of it) came from the producer
	** too, 0 where the builder tests the tile for it (gpu_tile_all). */
	int (*next_tile)(struct KernelGen *g, PReg out, PReg all, int first);
	/* Before the stream: the first tile (keys from j0) into buffer buf
	** where any, Q in place (its fragments). */
	void (*stream_start)(struct KernelGen *g, PReg j0, PReg buf, PReg any);
	/* In the loop's head: the next tile (keys from nxt) into the other
	** buffer where when (NULL: a producer copies it on its own). */
	void (*prefetch)(struct KernelGen *g, PReg nxt, PReg buf, PReg when);
	/* The tile in buffer buf has arrived and is visible to the CTA
	** (keeps_true_max: lazy rebasing keeps true maxes in registers). */
	void (*tile_begin)(struct KernelGen *g, PReg buf, int keeps_true_max);
	/* S = Q K^T of GEMM1 node i into g->tile[i]. */
	void (*contract_qk)(struct KernelGen *g, int node);
	/* After the scores: what prefetch left of the next tile (called again
	** by a warp that skips the tile; NULL: nothing). */
	void (*prefetch_late)(struct KernelGen *g, PReg nxt, PReg buf, PReg when);
	/* O += P V of GEMM2 node i, P per score element (GPU_MAXNEL). */
	void (*contract_pv)(struct KernelGen *g, int node, const PReg *p);
	/* R += X^T A of SN_CROSS node i (NULL: the target takes none), in two
	** steps: cross_stage when the node's turn comes, X per score element
	** (zero at masked points and rows past the CTA's) into shared memory;
	** contract_cross after the tile body's other nodes, so that their work
	** covers the wait for every warp's X, each warp adding its part of the
	** product to the f32 output at the streamed rows by atomic adds. */
	void (*cross_stage)(struct KernelGen *g, int node, const PReg *x);
	void (*contract_cross)(struct KernelGen *g, int node);
	/* Before the first GEMM2 node i's accumulators are rescaled in each of
	** a tile's bodies (NULL: they are never in flight there): a
	** contraction of an earlier tile still writing them completes. A
	** target with this hook may issue a tile's P V late, while the next
	** tile's scores are computed. */
	void (*acc_wait)(struct KernelGen *g, int node);
	/* Every consumer is done with the tile in buffer buf: its buffer may be
	** refilled (a barrier, or an arrival on the buffer's empty mbarrier). */
	void (*tile_end)(struct KernelGen *g, PReg buf);
	/* After the stream, before the epilogue reads the accumulators (NULL:
	** nothing to wait for): contractions still in flight complete. */
	void (*stream_end)(struct KernelGen *g);
	/* Before the kernel returns, after its last epilogue (NULL: nothing):
	** what the CTA still has in flight completes. */
	void (*kernel_end)(struct KernelGen *g);
	/* Stores of node i's output accumulators in the fast layouts the
	** target has, each ending with a branch to done; branches to slow
	** (element by element, the caller's) where the strides allow none. q
	** is lane % 4, crows and rowok the rows per row slot and their bounds. */
	void (*store_output)(struct KernelGen *g, int node, PReg q, const PReg *crows,
			     const PReg *rowok, int slow, int done);
	/* appended to ptxas's -arch: "a" where the PTX uses arch-specific
	** instructions (wgmma, setmaxnreg); NULL: none */
	const char *cubin_arch_suffix;
} GpuTarget;

/* What the retry loop asks of the driver: assemble one round's PTX and
** report each entry's spill-store bytes (funcs[i] -> spills[i], -1 when not
** reported), then keep that round's machine code (final) or drop it. Both
** return 0 or the driver's own nonzero code, after reporting the failure. */
typedef struct GpuAssembler {
	int (*assemble)(void *ctx, const char *ptx, size_t n, const char *const *funcs,
			long *spills, int nfuncs);
	int (*settle)(void *ctx, int final);
	void *ctx;
} GpuAssembler;

/* gpu_compile's own failures (the assembler's codes are positive). */
enum { GPU_ERR_INPUT = -1, GPU_ERR_MEMORY = -2 };

/* tune.c: PTX for every cascade of p into *buf (malloc'd, *n bytes), info
** filled per cascade. With as (NULL: no ptxas) every round's PTX is
** assembled and a kernel that spills over the target's budget is generated
** again with its next tile-size choice (GpuTarget.retune); the last round's
** machine code is kept. parts: every kernel also gets NAME_fwd_part. */
int gpu_compile(const GpuTarget *t, const Program *p, Diag *d, const GpuAssembler *as, char **buf,
		size_t *n, GpuKernelInfo *info, int parts);

/* tune.c: why t generates no kernel for c (a reason that lives as long as
** a), or NULL where it generates one: gpu_emit_program's test, per
** cascade. */
const char *gpu_refusal(Arena *a, const GpuTarget *t, const Cascade *c, int parts);

#endif
