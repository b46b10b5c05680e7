/*
** lowering/sm80/sm80.h: the Ampere (sm_80) attention kernel generator.
**   sm80_shape.c   recognises the plan's structure: contractions with Q and
**                  K (tensor cores), element-wise tile values, running maxes
**                  and rescaled row sums, contractions with V, epilogue
**   sm80_expr.c    expressions as PTX (per tile element, per row, per
**                  output element), tensor loads, interval tests of masks
**   sm80_kernel.c  the kernel: loads (cp.async), ldmatrix, mma.sync, the
**                  online state, the epilogue and its stores
** Kernel ABI (the generated C interface and the runtime rely on it):
**   params: per TK_IN/TK_OUT tensor in cascade order a .u64 pointer; then
**   per such tensor its rank strides (.s64, elements); then each dim (.s64);
**   then each param (.f32, or .s32 for i32 params).
**   grid: x = query tiles of 64 * sm80_row_blocks rows (64 or 128), y = the other grid indices,
**   flattened in class order (first fastest); block: SM80_THREADS threads.
*/
#ifndef ATTN_SM80_H
#define ATTN_SM80_H

#include "../../compiler/plan.h"
#include "../gpu/gpu.h"
#include "../gpu/target.h"
#include "../ptx/ptx.h"

enum { SM80_BN = 64, SM80_WARPS = 4, SM80_THREADS = 128, SM80_MAXSHIFT = 8 };
/* The tile-size choices of the retry loop (KernelShape.tiling, sm80/targ.c). */
enum { SM80_TILING_FIRST, SM80_TILING_ROWS64, SM80_TILING_JOINT_KV };
/* Keys one tile-table window covers: 128 tiles of 64 (sm80_kernel.c). */
enum { SM80_WINDOW_KEYS = 8192 };

/* A tile value c * G kept as G (sm80_scale.c). */
typedef struct Sm80Fold {
	int gemm;          /* the SN_GEMM1 node G, or -1: not folded */
	const Expr *scale; /* c: a float param or a positive literal */
	PReg c, cl2e;      /* per tile body: |c| (FLT_MIN where c = 0) and |c| log2(e) */
} Sm80Fold;

/* The generator's state while one kernel is emitted. */
typedef struct Gen {
	Arena *a;
	PtxFunc *f;
	const Plan *p;
	const Cascade *c;
	KernelShape *s;
	/* parameters loaded into registers */
	PReg *tptr;                         /* [ntensors] base pointers (b64) */
	PReg **tstride;                     /* [ntensors][rank] (b64) */
	PReg *dim;                          /* [ndims] (b64) */
	PReg *param;                        /* [nparams] (f32 or b32) */
	PReg *grid;                         /* [nclasses] grid index values (b64) */
	const char **pn, ***sn, **dn, **qn; /* parameter names: pointers, strides, dims, params */
	const char **mn; /* the grid decode's divisors (GPU_MAGIC_*, then 2 per grid class) */
	PReg lane, warp, q0, j0, j1, qext, sext;
	PReg send; /* the end of the CTA's stream: sext, or less (stream_bounds) */
	/* the element being evaluated */
	int node;      /* the plan node whose variables are in scope */
	PReg row, col; /* b64 query row / key column (or e) of the element */
	int elem;      /* tile element index (for SN_MAP values), or -1 */
	/* in a tile body: the key of the thread's column 0 (b64, j0 + 2 (lane %
	** 4)) and the element's column offset from it, for float(j - i) */
	PReg cbase;
	int coloff;
	int half;    /* row half (0: lane/4, 1: lane/4 + 8) */
	PReg **tile; /* [nodes][BN/8*4] f32 values of GEMM1/MAP nodes */
	PReg **rowv; /* [nodes][2] f32 running / row values */
	PReg **acc;  /* [nodes][DV/8*4] f32 GEMM2 / epilogue element values */
	int stage;   /* 0: in the stream; 1: epilogue */
	PReg kaddr[GPU_MAXG], vaddr[GPU_MAXG]; /* lane parts of ldmatrix addresses */
	/* -log2(e) * b ('l') or 1 / b ('r', epilogue) for row values b, reused
	** within one tile body or the epilogue */
	PReg memo_in[16], memo_out[16];
	char memo_kind[16];
	int nmemo;
	/* float(rest + c j) per row slot, reused within one tile body; for
	** u * float(rest + c j) (e the product) also u */
	struct {
		const Expr *e;
		int half, coef; /* half -1 - m: one value for row block m (sm80_shift.c) */
		PReg v, u;
		PReg *col; /* half < 0: the element values per column offset (64) */
	} kc[16];
	int nkc;
	/* sm80_shift.c: key casts whose row part may come from one row per
	** thread and row block (row0[m], the block's first row slot) */
	const Expr *shift[SM80_MAXSHIFT];
	int nshift;
	PReg row0[2];
	int mt;      /* m16 row blocks per warp: 1 or 2 */
	int bm;      /* query rows per CTA: SM80_WARPS * 16 * mt */
	int grouped; /* launch order by groups of heads (masks read the query row) */
	/* sm80_expr.c: min and max (s32) of data reads over the CTA's query rows
	** or a tile's keys, reused where the code that computed them dominates
	** and its inputs are unchanged (see range_cached) */
	struct Sm80Range {
		const Expr *e; /* the read, in node's variables */
		int node;
		int kind;        /* 'q' or 's' */
		PReg mn, mx;     /* b32 */
		PReg j0, j1;     /* the key range registers it was computed from ('s') */
		int end;         /* code[end]: the first instruction after its code */
		int in_prologue; /* its code is in the straight-line prologue (computed or
				 ** moved there): it dominates all that follows */
		int whole;       /* the lane's range over all of its own tile [j0, j1): no vote */
	} rng[72]; /* the table's first window: 32 tiles' ranges of up to two key reads */
	int nrng;
	int lanelocal; /* a test read a key range: its predicates are per lane */
	/* the first window's ids staged through shared memory (the K and V
	** buffers, free before the stream): smem base register and offset */
	PReg idsbase;
	uint32_t idstage;
	/* emits the CTA's Q copies and their commit right after the staged ids'
	** commit, so that the table waits for the ids alone (sm80_kernel.c);
	** cleared once it ran */
	void (*after_ids)(struct Gen *g);
	/* tile classes over one warp's rows [wq0, wq1] instead of the CTA's
	** (the stream's per-warp classes, sm80_kernel.c's warp_class) */
	int wrows;
	PReg wq0, wq1;
	int ninf;       /* masked scores are -inf in this tile body: exp guards its max */
	Sm80Fold *fold; /* [nodes] (sm80_scale.c) */
	int raw;        /* reads of folded nodes give G, not c * G */
} Gen;

/* sm80_expr.c */
PReg sm80_expr(Gen *g, const Expr *e); /* f32, b64 (ints) or pred (bools) */
PReg sm80_load(Gen *g, const Tensor *t, Expr *const *args);
PReg sm80_addr(Gen *g, const Tensor *t, Expr *const *args); /* byte address (b64) */
PReg sm80_pconst(Gen *g, int v);                            /* a constant predicate */
/* Reads a of node na and b of node nb have the same value at every point of
** a tile: the same tree, with indices of the same classes (and with
** `alike`, numbered alike). */
int sm80_same_read(Gen *g, int na, const Expr *a, int nb, const Expr *b, int alike);
/* e as coef * j + rest (rest free of j, variable sv of the node in
** scope), with coef in {-1, 0, 1}; 0 when e is not of that form. */
int sm80_key_linear(Gen *g, int sv, const Expr *e, int *coef, Expr **rest);
/* [lo, hi] (s64) of an int expression over the CTA's rows and the keys
** [j0, j1) in scope; 0 when the interval rules do not bound it. */
int sm80_range(Gen *g, const Expr *e, PReg *lo, PReg *hi);
/* Node's filter reads i32 data along the keys (doc[b, j]): classifying a
** tile loads data. */
int sm80_key_reads(Gen *g, int node);
/* Node's filter reads data along the rows or the keys (doc[b, i]): its
** tile classes need ranges of that data. */
int sm80_range_reads(Gen *g, int node);
/* The key ranges node's filter reads over the n tiles [st[u], end[u])
** (SM80_BN keys apart, end clamped to the keys), cached for their tile
** tests: computed together so that their loads are in flight together
** (the tests' warp votes keep ptxas from moving loads across them). */
void sm80_key_ranges(Gen *g, int node, const PReg *st, const PReg *end, int n);
/* The number of node's key reads where all step by one stride per key
** (doc[b, j]), so that sm80_key_ranges_lanes can take them; -1 where not. */
int sm80_plain_key_reads(Gen *g, int node);
/* The key ranges node's filter reads over the 32 tiles from key st, one
** tile per lane: lane l's is tile l, [su, eu), whole in that lane (its
** tests need no vote), its ids staged through shared memory (g->idstage,
** SM80_IDSTAGE_BYTES: one key read). */
void sm80_key_ranges_lanes(Gen *g, int node, PReg st, PReg su, PReg eu);
/* Bytes the staging of sm80_key_ranges_lanes takes (one window's ids). */
enum { SM80_IDSTAGE_TILE = 64 * 4 + 16, SM80_IDSTAGE_BYTES = 128 * SM80_IDSTAGE_TILE };
/* e, in node's variables, reads an index of class cls. */
int sm80_reads_class(const Gen *g, int node, const Expr *e, int cls);
/* Predicates: the tile box always / never satisfies node's filter. */
void sm80_tile_class(Gen *g, int node, PReg *always, PReg *never);

/* sm80_scale.c: scores c * G kept as G, c folded into the row max and the
** exponent (see the file's head). */
void sm80_scale_plan(Gen *g);
void sm80_scale_tile(Gen *g);
PReg sm80_scale_c(Gen *g, int node, int log2);
int sm80_folded(const Gen *g, int id);
int sm80_folded_read(const Gen *g, const Expr *e);
void sm80_scale_negate_q(Gen *g, int gemm1, PReg sbase, uint32_t soff, uint32_t bytes, PReg tid);

/* sm80_shift.c: bias terms of relative positions evaluated at one row per
** thread where softmax cannot see the difference (see the file's head). */
void sm80_shift_plan(Gen *g);
int sm80_shifted(const Gen *g, const Expr *cast);

/* sm80_kernel.c */
PtxFunc *sm80_kernel(Arena *a, const Plan *p, KernelShape *s);
/* After sm80_kernel(s): a second entry without the table's refill pays. */
int sm80_onewin_wanted(const KernelShape *s);
int sm80_row_blocks(const KernelShape *s); /* m16 row blocks per warp */
/* Some mask reads data (document ids): the stream scans tiles with loads. */
int sm80_data_masks(const Plan *p);

/* sm80_emit.c: PTX for every cascade of a program, info (NULL or per
** cascade) filled; tiling (NULL or per cascade): an SM80_TILING_* per
** cascade. Nonzero after reporting through d why a cascade cannot be
** lowered. */
int sm80_emit_program(FILE *out, const Program *prog, Diag *d, GpuKernelInfo *info,
		      const int *tiling);

#endif
