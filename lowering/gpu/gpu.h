/*
** lowering/gpu/gpu.h: what the GPU targets share: the kernel's shape (which
** plan nodes are contractions with tensor cores, element-wise tile values,
** running states, epilogue values) and the kernel ABI's extra parameters.
** Target directories (lowering/<target>/) include it; it includes no target.
**   shape.c   recognises the plan's structure
**   abi.c     the kernel parameters
**   iface.c   the generated C interface (iface.h)
**   tune.c    the spill/tile-size retry loop (target.h)
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

/* At most this many contractions with K, and with V, in a kernel. */
enum { GPU_MAXG = 2 };
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

typedef enum ShapeNodeKind {
	SN_GEMM1,   /* S[i, j] = sum[d] A[.., i, .., d] * B[.., j, .., d]: tensor cores */
	SN_MAP,     /* element-wise value of the (i, j) tile */
	SN_RMAX,    /* running max over j, per query row */
	SN_RSUM,    /* running sum over j, per query row (rescaled when rebased) */
	SN_GEMM2,   /* O[i, e] = sum[j] X[i, j] * V[.., j, .., e]: tensor cores */
	SN_REF,     /* a reference built from running maxes, per row, per tile */
	SN_EPI_ROW, /* after the stream, per query row */
	SN_EPI_ELEM /* after the stream, per (query row, e) */
} ShapeNodeKind;

typedef struct QKContraction {
	const Expr *a, *b; /* the two input reads; a has the query index, b the key index */
	int dvar;          /* the contracted variable of the node */
	long D;
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

typedef struct ShapeNode {
	ShapeNodeKind kind;
	int gemm; /* its QKContraction or PVContraction (GEMM nodes) */
} ShapeNode;

typedef struct KernelShape {
	const Plan *p;
	int qcls, scls, ecls;
	ShapeNode *node; /* per plan node */
	QKContraction qk[GPU_MAXG];
	int nqk;
	PVContraction pv[GPU_MAXG];
	int npv;
	const Expr *vreads[GPU_MAXG]; /* distinct V reads */
	int nvreads;
	long DV;
	/* the target's tile-size choice: 0 its first, others after ptxas spilled
	** (GpuTarget.retune) */
	int tiling;
	/* GQA packing: K/V read head q / pack; a CTA's rows lie in one group of
	** pack consecutive query rows (NULL: no packing) */
	const Expr *pack;
	int split_v; /* set by the kernel builder: the next V tile is copied apart from K */
	int table;   /* set by the kernel builder: a tile table (masks that load data per tile) */
	/* the kernel for keys that fit the tile table's first window: the stream
	** ends where it leaves it, with no refill (the tile scan); its entry is
	** NAME_fwd_short */
	int one_window;
} KernelShape;

/* gpu/shape.c: fills s or returns a reason the plan does not fit. */
const char *gpu_shape(Arena *a, const Plan *p, KernelShape *s);

#endif
