/*
** lowering/gpu/gpu.h: the GPU kernel builder every target shares. A target
** directory (lowering/<target>/) includes it and fills in the GpuTarget
** hooks (target.h) for what its tensor cores do: shared-memory layout,
** tile loads, the two contractions, the output stores. Nothing here names
** a target. The files, in the order the kernel is built:
**   shape.c     recognises the plan's structure: contractions with Q and K
**               (tensor cores), element-wise tile values, running maxes and
**               rescaled row sums, contractions with V, epilogue values
**   kernel.c    the kernel skeleton: parameters, the stream loop, the
**               software pipeline's order; the entry point gpu_emit_program
**   abi.c       kernel parameters, the grid decode (magic pairs), lane ids
**   scale.c     scores c * G kept as G (c folded into the row max and exp)
**   shift.c     relative-position biases taken from one row per row block
**   expr.c      expressions as PTX values (per element, row, output)
**   keyvec.c    float reads of the key alone, loaded a tile ahead of its use
**   divide.c    integer floor division and modulo (magic triples of dims)
**   gather.c    K and V rows placed through index arithmetic or a gather
**               (a paged KV cache's page table): per-row addresses
**   ranges.c    ranges of i32 data over a tile's rows or keys
**   hoist.c     moving straight-line code into the kernel's prologue
**   tileclass.c interval tests of masks over a tile (always / never)
**   scan.c      the tile scan, the tile table, per-warp classes
**   tile.c      the tile body: element masks, running states per tile
**   online.c    the online-softmax rescale and lazy rebasing
**   maskonce.c  masked scores set to -inf once (which reductions may skip)
**   epilogue.c  per-row and per-element values after the stream, stores
**   rowpass.c   kernels of per-row values with no stream (a backward's Delta)
**   parts.c     the entry of partial states: split-KV's parts meet, merge
**   streamk.c   stream-K's schedule: each CTA an equal share of all rows'
**               tiles (streamk_plan.c: the rows' tiles counted, scanned)
**   tma.c       TMA copies and reductions, transaction barriers' rings: what
**               the targets whose producers copy tiles by TMA share
**   iface.c     the generated C interface (iface.h)
**   tune.c      the spill/tile-size retry loop (target.h)
** Kernel ABI (the generated C interface and the runtime rely on it):
**   params: per TK_IN/TK_OUT tensor in cascade order a .u64 pointer; then
**   per such tensor its rank strides (.s64, elements); then each dim (.s64);
**   then each param (.f32, or .s32 for i32 params); then the magic
**   parameters (GPU_MAGIC_*).
**   grid: x = query tiles of the kernel's rows per CTA, y = the other grid
**   indices, flattened in class order (first fastest).
*/
#ifndef ATTN_GPU_H
#define ATTN_GPU_H

#include "../../compiler/plan.h"
#include "../ptx/ptx.h"
#include "target.h"

/* Integer values of the row alone or the key alone that a tile body keeps
** (expr.c): four row slots and 64 columns of a few subexpressions. */
enum { GPU_INDEX_MEMO = 192 };
/* At most this many contractions with K, and with V, in a kernel. */
enum { GPU_MAXG = 3 };
/* The CTA every target's kernel is built for: GPU_WARPS warps, each owning
** 16 query rows per row block (the tensor cores' m16 accumulator tiles), a
** key tile of GPU_BN keys. The tile table, the key-cast caches and the
** element layout below assume these; each target's GpuTarget repeats them
** (a target's targ.c takes them from here). */
enum { GPU_BN = 64, GPU_MAXBN = 128, GPU_WARPS = 4, GPU_THREADS = 128 };
/* Key intervals a scan passes between (KernelGen.span_lo): the disjuncts
** of one mask, each a pair of b64 registers held through the stream. */
enum { GPU_MAX_SPANS = 4 };
/* Keys one tile-table window covers: 128 tiles of 64 (scan.c). */
enum { GPU_WINDOW_KEYS = 8192 };
/* Shared-memory bytes of the tile table (scan.c), which each target's
** layout places. */
enum { GPU_TABLE_BYTES = 304 };
/* Bytes of shared memory the first window's ids are staged through
** (gpu_key_ranges_lanes: one key read), which a target may lend from its
** K and V buffers before the stream. */
enum { GPU_IDSTAGE_TILE = 64 * 4 + 16, GPU_IDSTAGE_BYTES = 128 * GPU_IDSTAGE_TILE };
/* The kernel parameters after the cascade's own (u32, in this order; the
** generated launcher computes them, attnrt_divmagic): the launch order's
** group size G and G times the query tiles; the magic pairs (m, s) of GT,
** of G and of the last group's size; then one pair per grid class that is
** not the query tile, in class order (its extent). */
enum {
	GPU_MAGIC_G,
	GPU_MAGIC_GT,
	GPU_MAGIC_M_GT,
	GPU_MAGIC_S_GT,
	GPU_MAGIC_M_G,
	GPU_MAGIC_S_G,
	GPU_MAGIC_M_GL,
	GPU_MAGIC_S_GL,
	GPU_MAGIC_FIXED
};
/* How many of those parameters a plan's kernels take (kernel and launcher
** alike). */
int gpu_magic_params(const Plan *p);
/* The divisors of integer divisions in the plan's nodes that are made of
** dims and literals (not a power-of-two literal), in the order of first
** use, at most GPU_MAX_DIVISORS (others divide by div.s64): after the grid
** classes' pairs, each has GPU_DIVISOR_PARAMS magic parameters from the
** launcher: M's low and high words and l, with l = ceil(log2 d) and M =
** floor(2^(64 + l) / d) + 1 - 2^64, so that x / d = (mul.hi(x, M) + x) >>
** l for 0 <= x < 2^63 and 1 <= d <= 2^32; then attnrt_divmagic's pair
** (m, s), x / d = (x m) >> s for 0 <= x < 2^31, for dividends known to be
** that small (divide.c). Their count. */
enum { GPU_MAX_DIVISORS = 8, GPU_DIVISOR_PARAMS = 5 };
int gpu_divisors(const Plan *p, const Expr **list);

/* The parameters of the entry of partial states, NAME_fwd_part, after the
** magic ones (parts.c), and its mode bits. */
enum {
	GPU_PART_KR0,
	GPU_PART_KR1,
	GPU_PART_KCHUNK,
	GPU_PART_QR0,
	GPU_PART_QR1,
	GPU_PART_WS,
	GPU_PART_CNT,
	GPU_PART_ST,
	GPU_PART_MODE,
	/* NAME_fwd_streamk's alone (streamk.c): the plain grid's x and y */
	GPU_PART_GX,
	GPU_PART_GY,
	GPU_PART_NPARAMS
};
/* The rows (grid points of the plain grid) a stream-K launch may take: the
** launcher splits larger grids by split-KV. */
enum { GPU_SK_ROWS = 512 };
/* The CTAs a stream-K launch takes tiles on at most (its shares' 32-bit
** arithmetic; launches start as many as the device runs at once). */
enum { GPU_SK_CTAS = 65535 };
enum { GPU_PART_MERGE_IN = 1, GPU_PART_FINALIZE = 2 };

typedef enum ShapeNodeKind {
	SN_GEMM1,   /* S[i, j] = sum[d] A[.., i, .., d] * B[.., j, .., d]: tensor cores */
	SN_MAP,     /* element-wise value of the (i, j) tile */
	SN_RMAX,    /* running max over j, per query row */
	SN_RSUM,    /* running sum over j, per query row (rescaled when rebased) */
	SN_GEMM2,   /* O[i, e] = sum[j] X[i, j] * V[.., j, .., e]: tensor cores */
	SN_REF,     /* a reference built from running maxes, per row, per tile */
	SN_CROSS,   /* R[s, e] += sum[i] X[i, s] * A[.., i, .., e] over the CTA's rows: tensor
		    ** cores, added to an f32 output at the streamed index (a backward's
		    ** dQ = sum[j](dS K) in the kernel over key tiles) */
	SN_EPI_ROW, /* after the stream, per query row */
	SN_EPI_ELEM /* after the stream, per (query row, e) */
} ShapeNodeKind;

typedef struct QKContraction {
	const Expr *a, *b; /* the two input reads; a has the query index, b the key index */
	int dvar;          /* the contracted variable of the node */
	long D;
	int agather, bgather; /* a's, b's rows are placed through a gather (gather.c) */
} QKContraction;

typedef struct PVContraction {
	const Expr *x;    /* per (i, j) factor: the factors of X that read the key */
	const Expr *xrow; /* the others (lam[h] in differential attention), or NULL:
			  ** they multiply the accumulators once after the stream */
	const Expr *v;    /* V read: key index and e */
	int evar;
	long DV;
	int vslot; /* which V tile in shared memory */
} PVContraction;

typedef struct CrossContraction {
	const Expr *x; /* per (row, streamed) element */
	const Expr *r; /* the row tensor's read: the CTA's row index and e (last) */
	int evar;      /* the node's value index */
	long D;        /* its extent */
	int qk; /* the QKContraction whose A operand reads r's tensor (its rows in shared memory) */
} CrossContraction;

typedef struct ShapeNode {
	ShapeNodeKind kind;
	int gemm; /* its QKContraction or PVContraction (GEMM nodes) */
} ShapeNode;

typedef struct KernelShape {
	const Plan *p;
	/* the classes of the query rows, the keys and V's value index (-1: none);
	** ecls2: a second value index of the same width (a backward's dK over d
	** beside dV over e), or -1 */
	int qcls, scls, ecls, ecls2;
	ShapeNode *node; /* per plan node */
	QKContraction qk[GPU_MAXG];
	int nqk;
	PVContraction pv[GPU_MAXG];
	int npv;
	CrossContraction cross[GPU_MAXG];
	int ncross;
	const Expr *vreads[GPU_MAXG]; /* distinct V reads */
	int nvreads;
	int vgather[GPU_MAXG]; /* a V read's rows are placed through a gather (gather.c) */
	/* the K read whose tiles a V read repeats (its copies are K's), or -1 */
	int vk[GPU_MAXG];
	int gathers; /* some Q, K or V read is (the targets that take it) */
	/* the value columns a CTA computes: V's width, or a slice of it where
	** V is wider than the accumulators hold (absorbed MLA's 512) */
	long DV;
	/* the slices of V's columns (1: none): launch z index k computes
	** columns [k DV, (k + 1) DV), the scores again in every slice, and
	** only slice 0 stores the outputs per row */
	int vslices;
	/* of them, the slices one CTA computes (gpu_cta_slices): 1, or all,
	** a group of its consumer warps each over the same rows */
	int cta_slices;
	/* the target's tile-size choice: 0 its first, others after ptxas spilled
	** (GpuTarget.retune) */
	int tiling;
	/* GQA packing: K/V read head q / pack; a CTA's rows lie in one group of
	** pack consecutive query rows (NULL: no packing) */
	const Expr *pack;
	int split_v; /* set by the kernel builder: the next V tile is copied apart from K */
	int table;   /* set by the kernel builder: a tile table (masks that load data per tile) */
	int bn;      /* set by the kernel builder: keys per tile (GpuTarget.block_n) */
	/* the cascade also gets an entry of partial states (parts.c), which
	** shares the launcher's tensor maps, and whose launcher cuts keys at
	** multiples of GPU_BN */
	int with_parts;
	/* the kernel for keys that fit the tile table's first window: the stream
	** ends where it leaves it, with no refill (the tile scan); its entry is
	** NAME_fwd_short */
	int one_window;
	/* the entry of partial states, NAME_fwd_part (parts.c), and the bytes
	** of one CTA's states (set by the kernel builder) */
	int parts;
	unsigned part_cta_bytes;
	/* the same entry as stream-K, NAME_fwd_streamk (streamk.c): persistent
	** CTAs that each take an equal share of all rows' key tiles */
	int streamk;
	/* set by the kernel builder: every CTA takes work tiles (a query tile of
	** one grid point each) in turn, CTA c the tiles c, c + nctaid.x, ...,
	** and the launcher starts at most as many CTAs as the device runs at
	** once (GpuTarget.persistent_wanted), so that one tile's epilogue runs
	** while the next one's copies do */
	int persistent;
	/* set by the kernel builder: the split's CTAs of a row claim its key
	** tiles one at a time from the row's claim word (gpu_claim_word,
	** GpuTarget.claims_wanted) instead of each streaming a fixed part of
	** the keys, so that a CTA whose SM is served more slowly takes fewer
	** tiles and the parts end closer together */
	int claims;
	/* set by the target's layout: the TMA tensor maps its kernel takes */
	int ntmaps;
	GpuTmap tmap[GPU_MAX_TMAPS];
	/* the node a refusal is about (-1: none), for the diagnostic's place */
	int why_node;
} KernelShape;

/* gpu/shape.c: fills s or returns a reason the plan does not fit. */
const char *gpu_shape(Arena *a, const Plan *p, KernelShape *s);
/* Why a kernel cannot store c's packed outputs (Tensor.pack), or NULL: the
** one-pass kernel over query tiles stores them, its split-KV parts too (the
** warp that merges them runs the same epilogue), and a pass over rows alone
** (a backward's sum of GQA's parts); one pass of several does not yet. */
const char *gpu_packed_refusal(const Cascade *c);
int gpu_gemm_node(const KernelShape *s, int n, ShapeNodeKind kind, int k);
int gpu_vread_node(const KernelShape *s, int v);
/* Class cls is a value index of the contractions with V. In the header:
** the expression builder and the shape both ask, and the shape calls the
** builder's gathers, so a function of shape.c here would close a loop of
** calls between the files (test/layers_calls). */
static inline int gpu_value_class(const KernelShape *s, int cls)
{
	return cls >= 0 && (cls == s->ecls || cls == s->ecls2);
}

/* ---- the element layout ----------------------------------------------------
** The tensor cores' accumulators: a warp's m16 row block of a score tile
** of bn keys is bn / 8 n8 tiles of 16 x 8, each thread holding four
** elements of each (rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4)
** and the next): nel = bn / 2 elements per thread and row block. Score
** element el of a thread: row block el / nel, n-tile (el % nel) / 4, row
** half (el >> 1) & 1, column el & 1. The row slot 2 * block + half indexes
** per-row values. A warp's row blocks times nel is at most GPU_MAXNEL (two
** row blocks of 64 keys, or one of 128). */
enum {
	GPU_MAXMT = 2,             /* row blocks per warp */
	GPU_MAXRS = 2 * GPU_MAXMT, /* row slots per thread: (row block, half) */
	GPU_MAXNEL = 64            /* score elements per thread */
};

/* The row slot of output accumulator el (net = DV / 8 n8 tiles per row block). */
static inline int gpu_acc_rs(int net, int el)
{
	return el / (net * 4) * 2 + ((el >> 1) & 1);
}

/* ---- the generator ------------------------------------------------------- */

/* The kernel's parameters: their names, declared once (abi.c), and their
** values, loaded into registers at entry and again for the epilogue. */
typedef struct KernelParams {
	PReg *tptr;    /* [ntensors] base pointers (b64) */
	PReg **stride; /* [ntensors][rank] (b64) */
	PReg *dim;     /* [ndims] (b64) */
	PReg *param;   /* [nparams] (f32 or b32) */
	const char **ptr_names, ***stride_names, **dim_names, **param_names;
	const char *
	    *magic_names; /* the grid decode's divisors (GPU_MAGIC_*, then 2 per grid class) */
	const char *part_names[GPU_PART_NPARAMS]; /* NAME_fwd_part's (parts.c) */
	/* the divisors with magic parameters (gpu_divisors), found once, and
	** the first one's first magic parameter (divide.c) */
	const Expr *divisors[GPU_MAX_DIVISORS];
	int ndivisors, divisor_magic;
} KernelParams;

/* The first table window's ids staged through shared memory (ranges.c's
** key_ranges_staged): where, and what to emit right after the ids' copies
** are committed (the target's Q copies: the table then waits for the ids
** alone); after is cleared once it ran. */
typedef struct IdStaging {
	PReg base; /* shared memory's base register (none: not staged) */
	uint32_t off;
	void (*after)(struct KernelGen *g);
} IdStaging;

/* Tile classes over one warp's rows [q0, q1] instead of the CTA's (the
** stream's per-warp classes, scan.c's warp_class). */
typedef struct WarpRows {
	int on;
	PReg q0, q1;
} WarpRows;

/* The generator's state while one kernel is emitted. Each module's own
** state hangs off it (expr.c's cache, ranges.c's, scale.c's folds, shift.c's
** casts, the target's); what several modules share is here. */
typedef struct KernelGen {
	Arena *a;
	PtxFunc *f;
	const Plan *p;
	const Cascade *c;
	KernelShape *s;
	const GpuTarget *t;
	void *targ; /* the target's own state, for its hooks */
	/* abi.c */
	KernelParams par;
	PReg *grid;      /* [nclasses] grid index values (b64) */
	PReg lane, warp; /* b64, re-read from %tid.x where needed (gpu_lane_ids) */
	PReg q0, qext;   /* the CTA's first query row; the query extent (its group's end) */
	PReg sext;       /* the key extent */
	PReg vcol0;      /* b64 first value column of the CTA's slice (none: vslices 1) */
	/* rowpass.c: a sum inside an element's loop (GQA's parts summed over the
	** group's heads): its index's class and value (b64; none: no such sum) */
	int inner_cls;
	PReg inner;
	int row_blocks; /* m16 row blocks per warp: 1 or 2 (GpuTarget.row_blocks) */
	int cta_rows;   /* query rows per CTA: gpu_warps(t) * 16 * row_blocks */
	int bn, nel;    /* keys per tile (GpuTarget.block_n); score elements per
			    thread and row block, bn / 2 */
	int grouped;    /* launch order by groups of heads (masks read the query row) */
	/* a persistent kernel's work tile (u32; {0, 0}: the launch position is
	** the tile), the query tiles and the work tiles (u32, gpu_work_count) */
	PReg work, wnx, wtotal;
	/* a label + 1 where a warp that is done with a work tile goes on (the
	** next one's start), 0: it returns (gpu_leave); the builder's threads
	** that gpu_bar counts, where not all of them (b32, {0, 0}: all) */
	int next_item;
	PReg bar_count;
	/* kernel.c: the tile's keys [j0, j1); send: the end of the CTA's stream,
	** sext or less (scan.c's stream_bounds); shared memory's base (u32) and
	** %tid.x (b64) as read at entry; the tile table's offset (the target's
	** layout) */
	PReg j0, j1, send;
	/* scan.c: where a mask is a union of key intervals over the CTA's rows
	** (Longformer's window beside its global keys), the intervals, tile
	** aligned (b64; nspans 0: none), so that the scan passes over the
	** empty tiles between them instead of testing each */
	int nspans;
	PReg span_lo[GPU_MAX_SPANS], span_hi[GPU_MAX_SPANS];
	PReg sbase, tid;
	uint32_t table_off;
	uint32_t sk_off; /* a stream-K CTA's S_r and P in shared memory (streamk.c) */
	/* the element being evaluated (the kernel sets it; expr.c reads it) */
	int node;      /* the plan node whose variables are in scope */
	PReg row, col; /* b64 query row / key column (or e) of the element */
	int elem;      /* tile element index (for SN_MAP values), or -1 */
	/* a tile element's key before col's clamp into the keys, col_base +
	** col_off (col_of: the col it goes with), for index arithmetic outside
	** subscripts; the depth of subscripts being evaluated (gpu_addr) */
	PReg col_base, col_of;
	int col_off, in_subscript;
	/* in a tile body: the key of the thread's column 0 (b64, j0 + 2 (lane %
	** 4)) and the element's column offset from it, for float(j - i) */
	PReg cbase;
	int coloff;
	int half;     /* the element's row slot */
	int stage;    /* 0: in the stream; 1: epilogue */
	PReg row0[2]; /* each row block's first row slot (shift.c) */
	PReg **tile;  /* [nodes][GPU_MAXNEL] f32 values of GEMM1/MAP nodes */
	PReg **rowv;  /* [nodes][GPU_MAXRS] f32 running / row values */
	PReg **acc;   /* [nodes][DV/8*4 per row block] f32 GEMM2 / epilogue element values */
	/* expr.c: values reused within a tile body or the epilogue */
	struct ExprCache *cache;
	int masked_ninf;         /* masked scores are -inf in this tile body: exp guards its max */
	int unscaled;            /* reads of folded nodes give G, not c * G (scale.c) */
	struct ScaleFold *fold;  /* [nodes] (scale.c) */
	struct ShiftSet *shifts; /* shift.c */
	/* ranges.c: the data ranges computed so far; a test read a key range
	** (its predicates are per lane, tileclass.c votes) */
	struct RangeCache *ranges;
	int lane_local;
	IdStaging ids;
	WarpRows warp_rows;
	struct KeyVecs *keyvec; /* keyvec.c */
} KernelGen;

/* Score element el's row slot and n-tile (the element layout above). */
static inline int gpu_el_rs(const KernelGen *g, int el)
{
	return el / g->nel * 2 + ((el >> 1) & 1);
}

static inline int gpu_el_nt(const KernelGen *g, int el)
{
	return el % g->nel / 4;
}

/* A fresh register of class c. */
static inline PReg gpu_reg(KernelGen *g, PtxCls c)
{
	return ptx_reg(g->f, c);
}

/* An instruction of n operands (the gpu_opN below spell n). */
static inline void gpu_op(KernelGen *g, PtxOpcode op, const char *m, int n, PtxOpnd a, PtxOpnd b,
			  PtxOpnd c, PtxOpnd d, PtxOpnd e)
{
	PtxOpnd o[5] = {a, b, c, d, e};
	ptx_emit(g->f, op, m, n, o);
}

static inline void gpu_op0(KernelGen *g, PtxOpcode op, const char *m)
{
	PtxOpnd z = {0};
	gpu_op(g, op, m, 0, z, z, z, z, z);
}

static inline void gpu_op1(KernelGen *g, PtxOpcode op, const char *m, PtxOpnd a)
{
	PtxOpnd z = {0};
	gpu_op(g, op, m, 1, a, z, z, z, z);
}

static inline void gpu_op2(KernelGen *g, PtxOpcode op, const char *m, PtxOpnd a, PtxOpnd b)
{
	PtxOpnd z = {0};
	gpu_op(g, op, m, 2, a, b, z, z, z);
}

static inline void gpu_op3(KernelGen *g, PtxOpcode op, const char *m, PtxOpnd a, PtxOpnd b,
			   PtxOpnd c)
{
	PtxOpnd z = {0};
	gpu_op(g, op, m, 3, a, b, c, z, z);
}

static inline void gpu_op4(KernelGen *g, PtxOpcode op, const char *m, PtxOpnd a, PtxOpnd b,
			   PtxOpnd c, PtxOpnd d)
{
	PtxOpnd z = {0};
	gpu_op(g, op, m, 4, a, b, c, d, z);
}

static inline void gpu_op5(KernelGen *g, PtxOpcode op, const char *m, PtxOpnd a, PtxOpnd b,
			   PtxOpnd c, PtxOpnd d, PtxOpnd e)
{
	gpu_op(g, op, m, 5, a, b, c, d, e);
}

static inline const Node *gpu_node(const KernelGen *g, int i)
{
	return g->p->c->nodes.v[i];
}

/* abi.c */
void gpu_declare_params(KernelGen *g);
void gpu_load_params(KernelGen *g);
void gpu_decode_grid(KernelGen *g);
void gpu_work_count(KernelGen *g);
void gpu_lane_ids(KernelGen *g);
PReg gpu_special(KernelGen *g, const char *sreg); /* a special register as b64 */
PReg gpu_cta_index(KernelGen *g); /* the CTA's launch position, x + nctaid.x y (b64) */
/* The consumers' thread index (b64): %tid.x less the producer's threads. */
PReg gpu_tid(KernelGen *g);
/* A barrier of the consumers (named barrier id, GpuTarget.bar_base). */
void gpu_bar(KernelGen *g, int id);
/* whether the second half of the builder's threads has rows ({0, 0}:
** always; threads.c) */
PReg gpu_both_halves(KernelGen *g);
/* The kernel builder's warps in a CTA of target t (GpuTarget.consumer_warps). */
int gpu_warps(const GpuTarget *t);
int gpu_cta_slices(const GpuTarget *t, const KernelShape *s);
int gpu_cta_rows(const GpuTarget *t, const KernelShape *s);
long gpu_cta_v_cols(const KernelShape *s);
long gpu_acc_cols(const GpuTarget *t, const KernelShape *s);
GpuTarget gpu_row_target(const GpuTarget *t);
PReg gpu_u32(KernelGen *g, PReg x); /* the low word of a b64 */

/* NAME_fwd_part's parameters (GPU_PART_*): declared after the magic ones,
** and one loaded (s64 and u64 as b64, the mode as b32) */
void gpu_parts_declare(KernelGen *g);
PReg gpu_part_param(KernelGen *g, int i);
int gpu_log2(long x); /* of a power of two */

/* expr.c */
void gpu_expr_init(KernelGen *g);
/* Forgets the values reused within a tile body (row values change) or
** within the epilogue (rows_only: row values only). */
void gpu_expr_forget(KernelGen *g, int rows_only);
PReg gpu_expr(KernelGen *g, const Expr *e); /* f32, b64 (ints) or pred (bools) */
PReg gpu_load(KernelGen *g, const Tensor *t, Expr *const *args);
PReg gpu_addr(KernelGen *g, const Tensor *t, Expr *const *args); /* byte address (b64) */
PReg gpu_pconst(KernelGen *g, int v);                            /* a constant predicate */
PReg gpu_fconst(KernelGen *g, float v);                          /* an f32 constant */
/* gather.c: K and V reads whose rows follow the key through index
** arithmetic or a gather (Kc[block[b, j / P], j % P, ..]), and Q reads whose
** rows follow the query row so; `along` is IDX_KEY or IDX_QUERY */
/* Subscript x of node's read is such arithmetic (not a plain index). */
int gpu_gather_subscript(const Plan *p, int node, const Expr *x, IndexKind along);
/* The address of the read's fixed part (row-dependent subscripts as 0). */
PReg gpu_gather_base(KernelGen *g, int node, const Expr *e, IndexKind along);
/* Row j's offset in bytes from that base; *ok: j < ext and every
** gathered index inside its dimension (else zero-fill the row). */
PReg gpu_gather_row(KernelGen *g, int node, const Expr *e, IndexKind along, PReg j, PReg ext,
		    PReg *ok);
/* The dimension of the read's slot where its rows lie in pages (j % X), or -1. */
int gpu_pages_slot(const Plan *p, int node, const Expr *e, IndexKind along);
/* The dimension where the read's rows lie at an offset, consecutive
** (K[cu_k[b] + j, ..], a packed batch's), every other subscript not
** following them; or -1. A box of rows at the offset's coordinate copies a
** tile: past the tensor TMA fills zeros, and rows of the next sequence are
** masked by the cascade's own filters. */
int gpu_offset_slot(const Plan *p, int node, const Expr *e, IndexKind along);
/* A tile's rows evaluated one per lane of the 128 copying threads, for
** their chunks to take by shuffles (where cpr divides 32; gather.c). */
typedef struct GatherLanes {
	PReg lo, hi, nb, k0; /* the lane's row offset, byte count, lane / cpr */
	int per;
	int flagged; /* lo's bit 0 says the row is not copied; no nb */
} GatherLanes;
void gpu_gather_lanes(KernelGen *g, int node, const Expr *e, IndexKind along, PReg tid32, long cpr,
		      int n, int step, PReg first, PReg ext, GatherLanes *gl);
void gpu_gather_take(KernelGen *g, const GatherLanes *gl, int it, PReg *off, PReg *bytes);
/* The same where gl->flagged was set before gpu_gather_lanes: the offset,
** odd where the row is not copied (its source is then not read), and in
** *skip (pred) whether it is not: two shuffles a chunk instead of three. */
void gpu_gather_take_flagged(KernelGen *g, const GatherLanes *gl, int it, PReg *off, PReg *skip);
/* divide.c: s64 floor a / b or a % b; div is b's expression where the caller has it
** (a divisor dim's magic triple, a power of two), else NULL; small: a is known
** to lie in [0, 2^31) (gpu_small_dividend), and divides in 32 bits */
PReg gpu_floordiv(KernelGen *g, PReg a, PReg b, const Expr *div, int mod, int small);
/* e's value lies in [0, 2^31) wherever a kernel evaluates it. */
int gpu_small_dividend(const Expr *e);
/* The index ranges other than dims and literals, which launchers check
** below 2^31 - 2^20 as they check dims; their count. */
int gpu_index_extents(const Plan *p, const Expr **list, int max);
/* Which of the kernel's index kinds variable v of the node in scope is:
** 'q' query row, 's' key, 'e' value index (in the epilogue), 'g' grid, 'x'. */
int gpu_index_kind(KernelGen *g, int v);
PReg gpu_index_value(KernelGen *g, int v);
/* Reads a of node na and b of node nb have the same value at every point of
** a tile: the same tree, with indices of the same classes (and with
** `alike`, numbered alike). */
int gpu_same_read(KernelGen *g, int na, const Expr *a, int nb, const Expr *b, int alike);
/* Which index float input read e follows in a tile body: 'q' the row
** alone, 's' the key alone, 'c' neither (grid indices), 0 both or other. */
char gpu_read_follows(KernelGen *g, const Expr *e);

/* keyvec.c: a tile body's float reads of the key alone, loaded lane by
** lane before the tile's contractions (gpu_keyvec_load, from its first key
** j0); expr.c takes an element's value by a shuffle */
enum { GPU_KEYVEC_MAX = 4 };
typedef struct KeyVecs {
	int n;
	struct {
		int node;
		const Expr *e;
		PReg v[GPU_MAXBN / 32]; /* f32: this lane's keys j0 + lane + 32 r */
	} r[GPU_KEYVEC_MAX];
	PReg lane2; /* b32: 2 (lane % 4), the thread's first column of an n8 tile */
} KeyVecs;
void gpu_keyvec_init(KernelGen *g);
void gpu_keyvec_load(KernelGen *g, PReg j0);
/* Reads a of node na and b of node nb of plan p take the same rows of one
** tensor: every subscript but the last (the row's elements, which each
** node indexes in a class of its own) the same, by class. A V read that
** repeats a K read shares its tiles; a sum over the CTA's rows reads the
** rows of a contraction's first operand. */
int gpu_same_rows(const Plan *p, int na, const Expr *a, int nb, const Expr *b);
/* e as coef * j + rest (rest free of j, variable sv of the node in
** scope), with coef in {-1, 0, 1}; 0 when e is not of that form. */
int gpu_key_linear(KernelGen *g, int sv, const Expr *e, int *coef, Expr **rest);

/* ranges.c: [min, max] of i32 data over the CTA's rows or a tile's keys */
typedef struct GpuInterval {
	PReg lo, hi;
	int ok;
	int w32; /* lo and hi are s32 (a data range), else s64 */
} GpuInterval;
void gpu_ranges_init(KernelGen *g);
/* The kind ('q' or 's') of the one range a read's subscripts run over: 0
** when they are fixed on the tile, -1 when they are not plain index
** arithmetic over one range. */
int gpu_read_range(KernelGen *g, const Expr *e);
/* The interval of an i32 read over range k ('q' or 's') of the tile. */
GpuInterval gpu_range_read(KernelGen *g, const Expr *e, int k);
/* The ranges over the CTA's rows of node's reads, computed here once for
** all that follows (a producer's code before its loop, which the kernel's
** prologue does not dominate: gpu_hoist cannot move them). */
void gpu_row_ranges_ahead(KernelGen *g, int node);
/* Node's filter reads i32 data along the keys (doc[b, j]): classifying a
** tile loads data. */
int gpu_key_reads(KernelGen *g, int node);
/* Node's filter reads data along the rows or the keys (doc[b, i]): its
** tile classes need ranges of that data. */
int gpu_range_reads(KernelGen *g, int node);
/* The key ranges node's filter reads over the n tiles [st[u], end[u])
** (GPU_BN keys apart, end clamped to the keys), cached for their tile
** tests: computed together so that their loads are in flight together
** (the tests' warp votes keep ptxas from moving loads across them). */
void gpu_key_ranges(KernelGen *g, int node, const PReg *st, const PReg *end, int n);
/* The number of node's key reads where all step by one stride per key
** (doc[b, j]), so that gpu_key_ranges_lanes can take them; -1 where not. */
int gpu_plain_key_reads(KernelGen *g, int node);
/* The key ranges node's filter reads over the 32 tiles from key st, one
** tile per lane: lane l's is tile l, [su, eu), whole in that lane (its
** tests need no vote), its ids staged through shared memory (g->ids,
** GPU_IDSTAGE_BYTES: one key read). */
void gpu_key_ranges_lanes(KernelGen *g, int node, PReg st, PReg su, PReg eu);

/* hoist.c */
int gpu_same_preg(PReg a, PReg b);
/* The end of the kernel's straight-line prologue: the first label, branch
** or ret. */
int gpu_prologue_end(const PtxFunc *f);
/* Whether code[from, to) holds a label or writes r1 or r2 (those set). */
int gpu_code_has(const PtxFunc *f, int from, int to, PReg r1, PReg r2);
/* Moves code[s, ncode) to the end of the prologue where that keeps its
** meaning; the new end of the moved code, or -1. */
int gpu_hoist(PtxFunc *f, int s);

/* tileclass.c */
/* [lo, hi] (s64) of an int expression over the CTA's rows and the keys
** [j0, j1) in scope; 0 when the interval rules do not bound it. */
int gpu_range(KernelGen *g, const Expr *e, PReg *lo, PReg *hi);
/* Predicates: the tile box always / never satisfies node's filter. */
void gpu_tile_class(KernelGen *g, int node, PReg *always, PReg *never);
/* The same for e, an expression in node's variables (a part of its filter). */
void gpu_expr_class(KernelGen *g, int node, const Expr *e, PReg *always, PReg *never);

/* scale.c: scores c * G kept as G, c folded into the row max and the
** exponent (see the file's head). */
void gpu_scale_plan(KernelGen *g);
void gpu_scale_tile(KernelGen *g);
PReg gpu_scale_c(KernelGen *g, int node, int log2);
int gpu_folded(const KernelGen *g, int id);
int gpu_folded_read(const KernelGen *g, const Expr *e);
int gpu_fold_source(const KernelGen *g, int id); /* the GEMM1 node a folded node keeps */
void gpu_scale_negate_q(KernelGen *g, int gemm1, PReg sbase, uint32_t soff, uint32_t bytes,
			PReg tid);
/* The same where the second half of the builder's threads may have left
** (stayed: a predicate, it is there; {0, 0}: always): the first half then
** negates the second's chunks too, as threads tid + half. */
void gpu_scale_negate_q_halves(KernelGen *g, int gemm1, PReg sbase, uint32_t soff, uint32_t bytes,
			       PReg tid, PReg stayed);

/* shift.c: bias terms of relative positions evaluated at one row per
** thread where softmax cannot see the difference (see the file's head). */
void gpu_shift_plan(KernelGen *g);
int gpu_shifted(const KernelGen *g, const Expr *cast);

/* ---- TMA copies and reductions, transaction barriers (tma.c) ------------- */

/* One operand read loaded by TMA: its tensor map (KernelShape.tmap), the
** tensor dimension its tile's rows run along, the node whose variables
** its subscripts use, and where its tile lies in shared memory. */
typedef struct TmaRead {
	const Expr *e;
	int node;
	int rowdim;    /* tensor dimension of the query row or key */
	int map;       /* index into KernelShape.tmap */
	uint32_t off;  /* byte offset (Q: in shared memory; K, V: in a stage) */
	int panels;    /* 64-element panels of the contracted or value dim */
	long cols;     /* its elements along that dim: the last panel's past
		       ** them are the tensor's next or TMA's zeros */
	uint32_t rows; /* rows of the tile (Q: the CTA's rows; K, V: the key tile, bn) */
	int offset;    /* its rows lie at an offset along rowdim (gpu_offset_slot) */
} TmaRead;

void gpu_mbar_wait(KernelGen *g, PReg bar, PReg parity);
PReg gpu_ring_bar(KernelGen *g, PReg stage, uint32_t off);
void gpu_ring_next(KernelGen *g, PReg stage, PReg ph, int n);
PReg gpu_saddr(KernelGen *g, PReg base, uint32_t off);
const char *gpu_tma_maps_reason(const KernelShape *s);
void gpu_tma_add_map(KernelGen *g, TmaRead *r, const Expr *e, int node, int cls, uint32_t rows,
		     uint32_t box_rows, long inner, int gathered);
uint32_t gpu_tma_tile_bytes(uint32_t rows, long cols);
PReg gpu_tma_fixed_coords(KernelGen *g, const TmaRead *r, PReg *c);
PReg gpu_tma_box_row(KernelGen *g, PReg j, PReg off);
/* tma.c: read r of kernel s's stage (K's, then V's), or its Q read k, is gathered
** with its rows at an offset. */
int gpu_stage_at_offset(const KernelShape *s, int r);
int gpu_q_at_offset(const KernelShape *s, int k);
/* Q read k's rows are placed through a gather, not at an offset. */
int gpu_q_gathered(const KernelShape *s, int k);
/* Every read kernel s's stage copies is at an offset. */
int gpu_stage_all_at_offset(const KernelShape *s);
void gpu_tma_copy(KernelGen *g, const TmaRead *r, PReg map, const PReg *fixed, PReg row, int p,
		  PReg dst, PReg bar, PReg lead);
void gpu_tma_reduce_add(KernelGen *g, PReg map, const PReg *c, int rank, PReg src, PReg lead);
PReg gpu_tma_map_addr(KernelGen *g, const char *name);
void gpu_tma_a_frags(KernelGen *g, const TmaRead *r, int n, PReg *const *out);
void gpu_tma_store_pairs(KernelGen *g, const PReg *x, const char *cvt, PReg buf, uint32_t off);
/* A sum over the CTA's rows adds its sums through boxes of its output's
** tensor map of GPU_SUM_BOX_ROWS streamed rows by a row of GPU_TMAP_ROW
** bytes (32 f32). */
enum { GPU_SUM_BOX_ROWS = 64 };
void gpu_tma_store_sums_t(KernelGen *g, const PReg *acc, PReg at0);
int gpu_cross_rowdim(const Plan *p, const KernelShape *s, int i);
int gpu_cross_mappable(const Plan *p, const KernelShape *s);
/* gather_stage.c: gathered K and V tiles copied into a TMA ring's stage
** by the 128 threads of the copying warpgroup, row by row (cp.async) or,
** where the rows lie in pages (gpu_pages_slot) of whole tiles, a box a
** panel by TMA: the reads (K's, then V's), their maps' parameter names and the
** stage's bytes, which the caller sets; each thread's column chunk and its
** fixed address per read, which the setup does. */
typedef struct GatherStage {
	const TmaRead *rd[2 * GPU_MAXG];
	int n;
	const char *const *names;
	uint32_t tx;
	PReg colbase[2 * GPU_MAXG], col[2 * GPU_MAXG];
} GatherStage;
void gpu_gather_stage_setup(KernelGen *g, GatherStage *gs, PReg tid32);
void gpu_gather_stage_copy(KernelGen *g, const GatherStage *gs, PReg tid32, PReg j0, PReg sa,
			   PReg fb);
void gpu_gather_q_copy(KernelGen *g, const TmaRead *q, PReg tid, int nthreads);

/* ---- the tile body (tile.c, online.c, maskonce.c) ------------------------ */

typedef struct TileState {
	PReg rows[GPU_MAXRS];  /* b64 query row of each row slot */
	PReg cbase;            /* b64 key index of the thread's column 0: j0 + 2 (lane % 4) */
	PReg clast;            /* b64 last key of the stream: columns are clamped to it */
	PReg crows[GPU_MAXRS]; /* the same, clamped into range: padding evaluates */
	PReg **prev;           /* [nodes][row slots]: reference values before this tile */
	PReg **okw;            /* [nodes][words]: masked path predicates as bits (shared) */
	unsigned char **okset; /* [nodes][score elements]: bit computed */
	/* per node, in the masked path: key bounds per row slot from the filter's
	** conjuncts that are linear in the key (b32, lo <= j < hi), and the rest */
	signed char *kb; /* [nodes] 0: not yet, 1: bounds, -1: none */
	PReg **klo, **khi;
	const Expr **kres;
	/* where the rest is a union of key intervals (Longformer), each
	** disjunct's bounds per row slot, as klo/khi: [nodes][span][row slot];
	** nunion[node] of them (0: none) and kres NULL */
	PReg ***ulo, ***uhi;
	int *nunion;
	PReg cbase32;
	/* lazy rebasing (online.c): per node, 1 for a lazy reference and its
	** threshold; whether a reference moved in this tile; the true running
	** maxes where the epilogue reads them */
	signed char *lazy;
	float *tau;
	PReg chg;
	int rescaled; /* this tile's states are already rebased */
	/* where the target's P V may still run (GpuTarget.acc_wait), the lazy
	** rescale leaves the accumulators to their contraction's node:
	** whether it did in this tile, and its warp's vote that a row moved;
	** whether this body (the masked or the unmasked one) has waited */
	int acc_late, acc_waited;
	PReg acc_move;
	int lastref; /* the last lazy reference (node), or -1 */
	PReg **mtrue;
	/* masking once (maskonce.c): the tile node whose masked elements are
	** set to -inf on the masked path, or -1; per node, 1 where that leaves
	** its reduction's identity at masked points */
	int mo;
	signed char *moid;
} TileState;

/* tile.c */
void gpu_tile_rows(KernelGen *g, TileState *t);
void gpu_tile_body(KernelGen *g, TileState *t, int masked);
/* The f32 output's address at streamed row r of SN_CROSS node i (b64). */
PReg gpu_cross_row_addr(KernelGen *g, int i, PReg r);
/* Node i's filter as key bounds lo <= j < hi (NULL: none on that side),
** each an expression of the row, and the other conjuncts (rest). */
void gpu_key_bounds_of(KernelGen *g, int i, Expr **lo, Expr **hi, const Expr **rest);
/* The disjuncts of e into d[GPU_MAX_SPANS] where e is an || (0: it is
** not; -1: it has more): the masks that are unions of key intervals (scan.c's
** spans, tile.c's per-score test). */
int gpu_disjuncts(const Expr *e, const Expr **d);
/* The same as gpu_key_bounds_of for e, a conjunction in node i's variables
** (a disjunct of its filter). */
void gpu_key_bounds_expr(KernelGen *g, int i, const Expr *e, Expr **lo, Expr **hi,
			 const Expr **rest);

/* online.c */
/* rho = prod_m exp(k_m (from[ref_m][h] - to[ref_m][h])) of a running
** state's references (1 where a reference did not move, -inf included). */
PReg gpu_rho(KernelGen *g, const Running *run, PReg **from, PReg **to, int h);
PReg gpu_quad_reduce(KernelGen *g, PReg x, int is_max);
void gpu_rescale_row(KernelGen *g, TileState *t, int i, int rs);
void gpu_rescale_node(KernelGen *g, TileState *t, int i);
void gpu_lazy_max(KernelGen *g, TileState *t, int i, int h, PReg m);
void gpu_lazy_rescale(KernelGen *g, TileState *t);
void gpu_lazy_acc(KernelGen *g, TileState *t, int i);
void gpu_lazy_plan(KernelGen *g, TileState *t);
void gpu_lazy_finish(KernelGen *g, TileState *t);

/* maskonce.c */
void gpu_maskonce_plan(KernelGen *g, TileState *t);

/* scan.c */
/* Node i's mask decides which tiles the stream visits. */
int gpu_streamed(const KernelShape *s, int i);
/* Some mask reads data (document ids): the stream scans tiles with loads. */
int gpu_data_masks(const Plan *p);
/* The table is for masks that load data per tile (document ids). */
int gpu_table_wanted(KernelGen *g);
/* The first table window's ids can be staged, one tile per lane. */
int gpu_lanes_wanted(KernelGen *g);
/* The tile scan (see scan.c): the first tile at or after `from` whose masks
** are true somewhere into out (>= send where none is), any = out < send,
** all = every mask true on all of it. */
typedef struct TileScan {
	int table;
	PReg sbase;
	uint32_t off;
	/* the window of 32 tiles (scan_words): its first key (s64) and its
	** words of any and all bits (u32), set by gpu_scan_words; nwarps warps
	** scan together, each tests 32 / nwarps tiles of a window (warp, u32)
	** and they meet at named barrier bar (nwarps * 32 threads), its words
	** passed through two 8-byte slots at words_off in turn (parity, u32) */
	int words, nwarps, bar;
	PReg wb, anyw, allw, warp, parity;
	uint32_t words_off;
} TileScan;
void gpu_scan(KernelGen *g, const TileScan *sc, PReg from, PReg out, PReg any, PReg all);
/* A scan of masks that read data by nwarps warps (1, 2 or 4: whole bytes
** of tiles a warp), all their lanes, apart from the builder's (a
** producer's): 16 bytes at words_off and barrier bar of nwarps * 32
** threads. */
void gpu_scan_words(KernelGen *g, TileScan *sc, int nwarps, int bar, uint32_t words_off);
/* all = every mask true on all of the tile from key j0 (a tile another
** thread's scan found: GpuTarget.next_tile). */
void gpu_tile_all(KernelGen *g, PReg j0, PReg all);
void gpu_stream_bounds(KernelGen *g, PReg start, PReg end);
/* The same before any part's narrowing: the grid point's whole stream. */
void gpu_row_bounds(KernelGen *g, PReg start, PReg end);
/* The tile table's first window: filled before the stream. */
void gpu_table_first(KernelGen *g, uint32_t off, PReg start);
int gpu_warp_class_wanted(KernelGen *g, int table);
void gpu_warp_class(KernelGen *g, PReg any, PReg all);

/* parts.c: the entry of partial states (see the file's head); its
** parameters are abi.c's, its keys and rows are narrowed in the grid
** decode (abi.c) and the stream's bounds (scan.c) */
int gpu_part_regs(const KernelGen *g); /* state registers per consumer thread */
/* After the stream: the split's parts meet, states merge in, and either
** the epilogue follows or the states are stored and the thread returns. */
void gpu_parts_finish(KernelGen *g, TileState *t);

/* claims.c: a split's CTAs claim their row's key tiles (KernelShape.claims).
** The row's claim word (b64 address) of row cta (the grid's x + y nctaid.x),
** which the last part's warp 0 zeroes; a claimer's state; its first claim,
** and the next tile of the stream it claims (j0 >= send: none left);
** whether a kernel's masks let its CTAs claim tiles. */
typedef struct GpuClaims {
	PReg word;  /* b64: the row's claim word */
	PReg multi; /* pred: the launch has parts (nctaid.z > 1) */
	PReg own;   /* u32: the next tile of a CTA alone in its row */
	PReg next;  /* u32: the tile claimed ahead */
} GpuClaims;
PReg gpu_claim_word(KernelGen *g, PReg cta);
void gpu_claims_start(KernelGen *g, GpuClaims *cl);
int gpu_claims_fit(KernelGen *g);
void gpu_claim_tile(KernelGen *g, GpuClaims *cl, PReg start, PReg j0);

/* streamk.c: a stream-K launch's schedule (see the file's head). The
** tiles' prefix sums, before the roles part (every thread; a CTA with no
** share returns); the first and next work tile (a row of the plain grid,
** g->work); the extents of the work decode (g->wnx, g->wtotal); the
** CTA's part of row g->work: tiles [t0, t1) of its stream, part z of
** nparts, the row's first slot. */
typedef struct GpuSkPart {
	PReg t0, t1, nparts, z, base; /* u32 */
} GpuSkPart;
void gpu_streamk_plan(KernelGen *g); /* streamk_plan.c */
void gpu_streamk_first(KernelGen *g);
void gpu_streamk_next(KernelGen *g, PReg more);
void gpu_streamk_count(KernelGen *g);
void gpu_streamk_part(KernelGen *g, GpuSkPart *pt);
/* the plain grid's rows; the address of this CTA's S_r (b64) and the word
** there (u32: in the plan, row r's count before the scan); T = S_nrows;
** P, the CTAs that take tiles (u32, the word after T), as the plan chose
** it from T, the rows and whether they are equal (u32) */
PReg gpu_streamk_rows(KernelGen *g);
PReg gpu_streamk_addr(KernelGen *g, PReg r);
PReg gpu_streamk_load(KernelGen *g, PReg r);
PReg gpu_streamk_total(KernelGen *g);
PReg gpu_streamk_ctas(KernelGen *g);
PReg gpu_streamk_choose(KernelGen *g, PReg T, PReg rows, PReg equal);
/* A persistent CTA's first work tile (g->work, with g->wnx and g->wtotal)
** and its next one (more: there is one; n, u32, a scratch register): CTA c
** takes the tiles c, c + nctaid.x, ...; a stream-K CTA, its rows. */
void gpu_work_first(KernelGen *g);
void gpu_work_next(KernelGen *g, PReg more, PReg n);
/* ret, or where work tiles follow, a branch to the next one (next_item) */
void gpu_leave(KernelGen *g);

/* epilogue.c */
void gpu_epilogue(KernelGen *g, TileState *t);
/* The predicate of a store of output t by a thread that stores where base
** holds (n == 0: always), and, for a packed output, where t is present: an
** absent point has no place (a row past its sequence is the next one's).
** The epilogue's stores and the row passes' take it. */
PReg gpu_packed_guard(KernelGen *g, PReg base, const Tensor *t);

/* pairs.c: node i's 16-bit output dimension indexed by the column alone
** (-1: none, its elements go one by one); a branch to other unless that
** dimension is contiguous and every other stride has no bit of mask set;
** the accumulators stored as pairs (crows, okr: rows and bounds per row
** slot; q = lane % 4), branching to slow where the strides allow none. */
int gpu_pair_column(KernelGen *g, int i);
void gpu_layout_guard(KernelGen *g, const Tensor *out, int pc, int mask, int other);
void gpu_store_pairs(KernelGen *g, const PReg *crows, int i, int pc, PReg q, const PReg *okr,
		     int slow);

/* rowpass.c: a cascade of per-row values with no stream (the backward's
** row term): its shape (NULL, or why not) and its kernel, NAME_fwd, with
** the forward's ABI and grid, 128 rows per CTA. */
const char *gpu_row_shape(Arena *a, const Plan *p, KernelShape *s);
PtxFunc *gpu_row_kernel(Arena *a, const GpuTarget *t, const Plan *p, KernelShape *s);
/* Whether row pass p takes a CTA a row (every node a sum over two indices). */
int gpu_row_wide(const Plan *p);

/* kernel.c; gpu_equal_streams: every CTA's stream about as long as every
** other's though masks read the query row (a sliding window's) */
int gpu_equal_streams(KernelGen *g);
PtxFunc *gpu_kernel(Arena *a, const GpuTarget *t, const Plan *p, KernelShape *s);
/* PTX for every cascade of prog (GpuTarget.name), info and tiling as in
** gpu_compile. Nonzero after reporting through d why a cascade cannot be
** lowered. */
int gpu_emit_program(const GpuTarget *t, FILE *out, const Program *prog, Diag *d,
		     GpuKernelInfo *info, const int *tiling, int parts);

#endif
