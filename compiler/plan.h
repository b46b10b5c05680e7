/*
** compiler/plan.h: pass analysis, the one-pass rewrite, and the kernel plan.
**
** The pipeline (compiler/pipeline.c) takes a cascade as the front end made
** it, copies it, and rewrites the copy until the fewest passes over the
** streamed index (the KV sequence) remain:
**
**   classes   logical indices (which node variables are "the same" index)
**             and the streamed one
**   passes    FuseMax's pass analysis: how many traversals of the streamed
**             index the cascade needs, and which statement forces each one
**   rewrite   reindex (a temporary read only as T[.., x / G, x % G, ..]
**             is computed over x: one index space for the grid), CSE,
**             R1 defer (a normalisation moved past its contraction),
**             R3 fission over +/- (several running states), R2 rebase (a
**             reduction that depends on a completed max becomes a running
**             one with a rescale rho), R4 (j-independent terms of the
**             reference, e.g. an attention sink, enter as its initial value)
**   plan      node roles, running states with their rescales and merge
**             rule, tile classes of the masks, tile sizes per target
**
** Rewrites never change what a cascade means, only how it may be
** evaluated: the rewritten cascade still runs on the interpreter and the
** MLIR reference, and tests compare it with the original.
*/
#ifndef ATTN_PLAN_H
#define ATTN_PLAN_H

#include "cascade.h"

enum { PLAN_MAX_REFS = 4, PLAN_MAX_NOTES = 64 };

/* Where a node runs relative to the stream over the KV index. */
typedef enum NodeRole {
	ROLE_PROLOGUE, /* before the stream: reads no streamed data */
	ROLE_TILE,     /* per KV tile: the streamed index is one of its free indices */
	ROLE_RUNNING,  /* reduces over the streamed index: a state carried across tiles */
	ROLE_EPILOGUE, /* after the stream (or between passes): from completed states */
} NodeRole;

/* How a running reduction is carried across tiles. */
typedef struct Running {
	int nrefs;
	int ref[PLAN_MAX_REFS];  /* nodes (ids) whose running value the body depends on */
	double k[PLAN_MAX_REFS]; /* body = exp(-sum k_m r_m) * h(x): rho = exp(k (r - r')) */
} Running;

typedef struct NodePlan {
	NodeRole role;
	int svar;    /* the node's variable that is the streamed index, or -1 */
	int pass;    /* 1-based pass over the stream (TILE, RUNNING); the gap after
			  pass `pass` for EPILOGUE; 0 for PROLOGUE */
	int barrier; /* id of the node whose completion forced this pass, or -1 */
	int is_ref;  /* a running reference (max) that other states rebase on */
	Running run; /* RUNNING sums: rescale on each reference change */
} NodePlan;

/* A logical index: node variables bound to the same tensor dimensions. */
typedef struct IndexClass {
	const char *name; /* a user-facing name (the first variable seen) */
	Expr *extent;
	int grid;   /* an outer parallel index of the kernel (batch, head, query) */
	int qtile;  /* the grid index that is tiled (query positions) */
	int stream; /* the streamed index */
} IndexClass;

typedef struct PlanNote {
	const char *text;
	SrcLoc loc; /* the statement responsible, when there is one */
} PlanNote;

typedef struct Plan {
	const Cascade *orig; /* as the front end made it */
	Cascade *c;          /* rewritten copy */
	NodePlan *np;        /* [c->nodes.n] */
	int np_n;
	int **cls; /* cls[node][var]: index class of each node variable */
	IndexClass *classes;
	int nclasses;
	int stream;            /* class of the streamed index, or -1 (no stream) */
	int passes_before;     /* passes over the stream of the original cascade */
	int passes_defer;      /* after R1 defer and R3 fission, before rebasing */
	int passes_after;      /* of the plan */
	unsigned char *ref_ok; /* [n*n]: node x may read node y's running value (R2) */
	int tile_q, tile_kv, stages;
	const char *target;             /* "cpu", "sm_80", ... */
	PlanNote notes[PLAN_MAX_NOTES]; /* rewrites applied and slow paths, in order */
	int nnotes;
} Plan;

/* Builds the plan for one cascade; never fails (a cascade with no one-pass
** form gets a multi-pass plan and a note saying why). */
Plan *plan_build(Arena *a, const Cascade *c, const char *target);

/* compiler/classes.c */
void plan_classes(Arena *a, Plan *p);
/* compiler/pipeline.c: the GPU kernels' head dims. A contraction with K
** runs over at most PLAN_MAX_DQK columns; a CTA accumulates at most
** PLAN_MAX_DV of V's columns, and wider V is computed in slices of equal
** width (a CTA each, each computing the scores again), at most
** PLAN_MAX_VSLICES. */
enum { PLAN_MAX_DQK = 1024, PLAN_MAX_DV = 256, PLAN_MAX_VSLICES = 4 };
/* The slices of a value dimension of dv columns (1: one), 0 where no
** equal slices are multiples of 32 within PLAN_MAX_DV. */
int plan_value_slices(long dv);
/* What variable v of a node is to a kernel (one rule for every reader). */
typedef enum IndexKind {
	IDX_QUERY, /* the tiled grid index: query rows */
	IDX_KEY,   /* the streamed index: keys */
	IDX_GRID,  /* another grid index (batch, heads) */
	IDX_OTHER  /* a contracted or value index */
} IndexKind;
IndexKind plan_index_kind(const Plan *p, int node, int v);
/* Whether node's variables include class cls: bit 1 a free one, bit 2 a
** reduced one. */
int plan_node_class(const Plan *p, int node, int cls);
/* e, in node's variables, reads an index of class cls. */
int plan_reads_class(const Plan *p, int node, const Expr *e, int cls);
/* compiler/passes.c: assigns roles and passes; `rebase` lets running
** references cross tiles (after R2), otherwise every read of a completed
** reduction inside the stream is a barrier (FuseMax's textbook count). */
int plan_passes(Arena *a, Plan *p, int rebase);
/* compiler/rewrite.c */
void plan_rewrite(Arena *a, Plan *p);
/* Common subexpressions: two nodes computing the same reduction of the same
** data over the same space are one (readers and domains read the first;
** merged(ud, y, x), where not NULL, hears of each). Nodes are compared in
** order, so that a reduction whose operands were merged (logsumexp's max
** with softmax's) is compared with those operands already redirected. The
** merged nodes stay, dead. */
void plan_merge_same(Cascade *c, void (*merged)(void *, const Node *, const Node *), void *ud);
/* compiler/notes.c: appends a note to the plan, for --explain. */
void plan_note(Plan *p, Arena *a, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* compiler/reindex.c: a temporary that every reader reads as
** T[.., x / G, x % G, ..] is computed over x instead (one grid index space
** for GQA written as O[b, hk*G+g, ..]); called first by plan_rewrite. */
void plan_reindex(Arena *a, Plan *p);
Expr *plan_fold_splits(Expr *e); /* (x / G) * G + x % G -> x, in place, bottom-up */
/* compiler/onehot.c: R6, a reduction whose filter pins its index to one
** value (k == e) becomes the read at k = e. */
void plan_onehot(Arena *a, Plan *p);

/* compiler/cascade_clone.c: a deep copy whose tensors and nodes can be
** changed without touching the original (dims and params are shared). */
Cascade *cascade_clone(Arena *a, const Cascade *c);
/* compiler/cascade_piece.c: a new cascade NAME from the nodes keep[] of c,
** in order: the outputs among them are out[] (others become temporaries),
** the results of nodes row[] outside keep[] that they read become f32
** inputs, and tensors nothing reads are dropped (dims and params shared).
** cascade_c_name: a name with its dots made underscores, as the generated
** interfaces' fields take it. src (NULL: none), c's plan or a plan whose
** cascade names the same tensors: the piece's tensor dimensions that were
** one class there stay one (Cascade.ties), of every class, or of class
** src_cls alone where it is >= 0. */
Cascade *cascade_piece(Arena *a, const Cascade *c, const char *name, const char *keep,
		       const char *out, const char *row, const Plan *src, int src_cls);
const char *cascade_c_name(Arena *a, const char *name);
/* Whether c_name is name as cascade_c_name writes it (a piece's name of a
** tensor of the cascade it was cut from). */
int cascade_c_name_is(const char *name, const char *c_name);
void cascade_insert_node(Arena *a, Cascade *c, int at, Node *n);

/* compiler/pass_split.c: a forward whose plan keeps several passes, as
** one-pass cascades the GPU runs in order (piece k computes what pass k
** completes); ws lists the f32 tensors (Tensor*, the pieces' own) that
** one piece writes and later ones read, which the launch keeps in the
** caller's workspace. npieces is 0 where the plan is one pass. */
typedef struct PassSplit {
	const Cascade *fwd; /* the user's cascade: its tensors are the launch's */
	Cascade **piece;    /* the prologues' row passes (npre), then the passes */
	int npieces, npre;
	PtrVec ws;
} PassSplit;
int pass_split(Arena *a, Diag *d, const Cascade *c, const char *target, PassSplit *s);
int pass_split_prologues(Arena *a, const Plan *p, char *pre);
DType pass_split_dtype(const Plan *p, const char *pre, int i);
Program *pass_split_program(Arena *a, Diag *d, const Program *p, const char *target);

/* compiler/masks.c: how a mask conjunct can be decided for a whole tile of
** (query, key) positions. */
typedef enum MaskKind {
	MASK_AFFINE,  /* affine in indices, dims, params: interval test per tile */
	MASK_RUNTIME, /* also reads data indexed by grid indices only (kv_len[b]) */
	MASK_RANGE,   /* also reads i32 data along one query or key index (doc[b,i]):
		      ** the interval test uses the data's min and max over the tile
		      ** (GPU targets; the C back end decides it per element) */
	MASK_ELEMENT, /* anything else: per element */
} MaskKind;
MaskKind plan_mask_kind(const Plan *p, int node, const Expr *conj);
/* A subscript a GPU kernel evaluates at each row or key of a tile on its
** own: indices, dims, params, literals and integer operators, no tensor
** reads. The ranged reads of MASK_RANGE and the kernels' data ranges both
** take this rule. */
int plan_plain_subscript(const Expr *e);
/* Calls f for each conjunct of a node's filter. */
void plan_conjuncts(const Expr *filter, void (*f)(const Expr *, void *), void *ud);

/* compiler/explain.c */
void plan_print(FILE *out, const Plan *p);   /* --emit=plan */
void plan_explain(FILE *out, const Plan *p); /* --explain */
void plan_explain_limits(FILE *out);         /* --explain: what cannot be written yet */

#endif
