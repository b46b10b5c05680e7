/*
** compiler/cascade.h: the cascade IR.
**
** A Cascade is what one `attention NAME { ... }` block means after semantic
** analysis: a list of dims, params and tensors, and a topologically ordered
** list of extended-Einsum Nodes. The front end (lang/) builds it; every later
** stage (pass analysis, MLIR interchange, the reference executor, the C and
** PTX back ends) reads it.
**
** Node semantics (the single definition every evaluator implements):
**
**   iteration space   vars[0 .. nfree)            the output's dimensions, in
**                                                 order (var k spans out->shape[k])
**                     vars[nfree .. nfree+nred)   reduced indices
**   for each free point p:
**     if out->domain is set and false at p:  out[p] = 0        (absent point)
**     else if red == RED_NONE:               out[p] = body(p)
**     else: acc = identity(red)
**           for each reduced point r with filter(p, r) true (or filter NULL):
**               acc = acc (+)red body(p, r)
**           out[p] = acc
**
** identity: sum 0, prod 1, max -inf, min +inf. `filter` is the node's whole
** predicate (its own `where` plus the domains of the tensors it reads,
** substituted); `out->domain` is the part of it that mentions free indices
** only, less the conjuncts of a reduction's own `where`, which empty the
** reduction at those points (the identity) without making them absent
** (lang/node.c). Reading a tensor outside its domain cannot happen: consumers inherit
** the producer's domain into their filter. Temporaries hold the compute type
** (f32 or f64 in the reference executor; FLOAT, INT or BOOL by value type).
*/
#ifndef ATTN_CASCADE_H
#define ATTN_CASCADE_H

#include <stdio.h>

#include "../support/diag.h"
#include "../support/arena.h"

/* Storage element types of declared tensors and params. */
typedef enum DType {
	DT_BOOL,
	DT_I32,
	DT_F8E4M3,
	DT_F8E5M2,
	DT_F16,
	DT_BF16,
	DT_F32,
	DT_F64,
	DT_COUNT
} DType;

/* Bytes of one stored element of type t: the one rule of element sizes
** (the generated interfaces check tensors with it). */
static inline int dtype_size(DType t)
{
	switch (t) {
	case DT_BOOL:
	case DT_F8E4M3:
	case DT_F8E5M2: return 1;
	case DT_F16:
	case DT_BF16: return 2;
	case DT_F64: return 8;
	default: return 4;
	}
}

/* Value types inside expressions. INT covers indices, dims and i32 data
** (evaluated in 64-bit); FLOAT is the compute precision. */
typedef enum VType { VT_BOOL, VT_INT, VT_FLOAT } VType;

typedef enum ExprKind {
	EX_FLOAT,  /* fval (may be +-INFINITY) */
	EX_INT,    /* ival */
	EX_BOOL,   /* ival is 0 or 1 */
	EX_INDEX,  /* var: position in the node's iteration space */
	EX_DIM,    /* dim */
	EX_PARAM,  /* param */
	EX_ACCESS, /* tensor[args...]; args are VT_INT index expressions */
	EX_UNOP,   /* op: OP_NEG, OP_NOT; args[0] */
	EX_BINOP,  /* op: arithmetic, comparison, logic, OP_MAX/OP_MIN; args[0], args[1] */
	EX_SELECT, /* args[0] ? args[1] : args[2]; args[0] is VT_BOOL */
	EX_CALL,   /* op: a FN_* function of args[0]; the argument is VT_FLOAT (VT_INT
		      for FN_ILOG2), the result VT_FLOAT (VT_INT for FN_INT, FN_ILOG2) */
	EX_CAST,   /* float(args[0]): VT_INT or VT_BOOL to VT_FLOAT */
} ExprKind;

typedef enum Op {
	OP_NEG,
	OP_NOT,
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV, /* float: IEEE; int: floor division (rounds toward -inf) */
	OP_MOD, /* int only: floor modulo (result has the divisor's sign) */
	OP_MAX,
	OP_MIN,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_EQ,
	OP_NE,
	OP_AND,
	OP_OR,
	OP_COUNT
} Op;

typedef enum Fn {
	FN_EXP,
	FN_EXP2,
	FN_LOG,
	FN_LOG2,
	FN_TANH,
	FN_SIGMOID,
	FN_SQRT,
	FN_RSQRT,
	FN_ABS,
	FN_RELU,
	FN_LOG1P, /* log(1 + x), accurate near 0 */
	FN_EXPM1, /* exp(x) - 1, accurate near 0 */
	FN_ERF,
	FN_FLOOR,
	FN_CEIL,
	FN_ROUND,    /* to the nearest integer, ties to even */
	FN_SIGN,     /* -1, 0 or 1 (NaN and -0 kept) */
	FN_ELU,      /* x > 0 ? x : exp(x) - 1 */
	FN_SOFTPLUS, /* log(1 + exp(x)) */
	FN_COUNT,    /* the number of the float functions above (float -> float) */
	/* Integer-valued functions, of type VT_INT, after the float ones so that
	** tables of float functions stay FN_COUNT long: every evaluator tests
	** for them before it looks a float function up. */
	FN_INT = FN_COUNT, /* int(x), float -> int: toward zero, saturated to the i32
			      range, NaN -> 0 (what PTX's cvt.rzi.s32.f32 does) */
	FN_ILOG2,          /* ilog2(n), int -> int: floor(log2 n) for n >= 1, -1 for n <= 0 */
} Fn;

typedef enum RedOp { RED_NONE, RED_SUM, RED_MAX, RED_MIN, RED_PROD } RedOp;

typedef enum TensorKind { TK_IN, TK_OUT, TK_TEMP } TensorKind;

typedef struct Dim Dim;
typedef struct Param Param;
typedef struct Tensor Tensor;
typedef struct Node Node;
typedef struct Expr Expr;
typedef struct Pack Pack;

struct Dim {
	const char *name;
	int id;     /* index in Cascade.dims */
	long fixed; /* > 0: compile-time size (`dims D = 128`); 0: given at run time */
	SrcLoc loc;
};

struct Param {
	const char *name;
	int id;      /* index in Cascade.params */
	DType dtype; /* DT_F32 or DT_I32 */
	VType type;
	Expr *deflt; /* NULL: the caller must supply it; else over dims and earlier params */
	SrcLoc loc;
};

struct Tensor {
	const char *name; /* temporaries made by desugaring contain a '.', e.g. "P.max" */
	int id;           /* index in Cascade.tensors */
	TensorKind kind;
	DType dtype; /* declared dtype; for temporaries DT_F32, DT_I32 or DT_BOOL by value type */
	VType type;
	int rank;
	Expr **shape;  /* rank VT_INT expressions over dims and literals */
	Node *def;     /* defining node; NULL for inputs */
	Expr *domain;  /* presence predicate over EX_INDEX 0..rank-1 (the tensor's own
			  dimensions); NULL = present everywhere */
	int trainable; /* TK_IN declared `trainable`: an f32 input that gets a gradient */
	/* TK_OUT that a GPU kernel adds its sums to, the caller having zeroed
	** it (a backward's dQ in the kernel over key tiles, grad_split.c): its
	** node's reduction is over the kernel's rows, not the stream */
	int added_to;
	/* TK_OUT written packed (`o[cu[b] + i, h, e]`, a ragged batch with
	** cumulative offsets): rank, shape and domain above are the logical
	** tensor its node computes; the caller's buffer is pack's. NULL: the
	** buffer is the logical tensor. */
	Pack *pack;
	SrcLoc loc;
};

/* Where the present points of a packed output are stored: point p of its
** logical dims goes to element at[0..rank)(p) of a buffer of `shape`
** (rank dims, the declared ones); `at` reads i32 inputs (the offsets).
** Absent points are not stored, and buffer elements no point reaches keep
** what they held. `row` is the logical dim stored at an offset, `table`
** the offsets' tensor read there. */
struct Pack {
	int rank;
	Expr **shape;
	Expr **at;
	int row;
	Tensor *table;
};

/* The rank and shape of the buffer a caller passes for t: a packed
** output's storage, else t's own. */
static inline int tensor_buf_rank(const Tensor *t)
{
	return t->pack ? t->pack->rank : t->rank;
}
static inline Expr *const *tensor_buf_shape(const Tensor *t)
{
	return t->pack ? t->pack->shape : t->shape;
}

struct Expr {
	ExprKind kind;
	VType type;
	int op; /* Op for UNOP/BINOP, Fn for CALL */
	double fval;
	long ival;
	int var; /* EX_INDEX */
	Dim *dim;
	Param *param;
	Tensor *tensor;
	int nargs;
	Expr **args;
	SrcLoc loc;
};

typedef struct IndexVar {
	const char *name; /* the user's name, or a made-up one for desugared nodes */
	Expr *extent;     /* VT_INT over dims and literals */
	SrcLoc loc;
} IndexVar;

struct Node {
	int id; /* index in Cascade.nodes (topological order) */
	Tensor *out;
	int nfree, nred;
	IndexVar *vars; /* nfree + nred */
	RedOp red;
	Expr *body;         /* value type matches out->type */
	Expr *filter;       /* NULL = every point */
	SrcLoc loc;         /* the statement (or sub-expression) it came from */
	const char *origin; /* what made it: "statement", "softmax max", "reduction", ... */
};

typedef struct Cascade {
	const char *name;
	SrcLoc loc;
	PtrVec dims;    /* Dim* */
	PtrVec params;  /* Param* */
	PtrVec tensors; /* Tensor*: inputs and outputs in declaration order, then temporaries */
	PtrVec nodes;   /* Node*, topologically ordered */
	/* GPU kernels of 64 query rows per CTA: a backward's pieces
	** (compiler/grad_split.c), whose sm_80 registers do not fit 128 */
	int rows64;
	/* the kernel's first row tiles have the most keys (a backward's kernel
	** over key tiles, streaming the query rows: under a causal mask the
	** first keys are read by every later row), so its launch order takes
	** them first (lowering/gpu/abi.c) */
	int first_rows_longest;
	/* a pass over rows alone whose outputs' last index is a value index
	** (a backward's dQ converted from f32 sums, compiler/grad_split.c): the
	** row pass loops over it rather than taking it as the rows */
	int value_last;
	/* a forward's pass that runs as a kernel of its own (pass_split.c):
	** the user's cascade and the pass, which diagnostics name; NULL: none */
	const char *pass_of;
	int pass;
	int prologue; /* its prologue row pass k (pass 0), or 0 */
	/* a piece's tensor dimensions that were one index class in the cascade
	** it was cut from (cascade_piece): nties quadruples (tensor, dim,
	** tensor, dim) that plan_classes unites, so that a pass computing two
	** softmaxes' statistics keeps both on the query rows it tiles */
	int nties;
	const int *ties;
} Cascade;

typedef struct Program {
	PtrVec cascades; /* Cascade* in file order */
	/* GradSplit* (grad.h): backwards cut into GPU kernels, whose pieces
	** `cascades` lists; the GPU interface adds NAME_bwd_launch for each */
	PtrVec grads;
	/* PassSplit* (plan.h): forwards of several passes cut into one-pass
	** GPU kernels, whose pieces `cascades` lists; the GPU interface adds
	** NAME_launch with a workspace for each */
	PtrVec passes;
} Program;

/* Names and properties, shared by every printer and emitter. */
const char *dtype_name(DType t);
int dtype_is_float(DType t);
const char *vtype_name(VType t);
const char *op_spelling(Op op); /* "+", "<=", "max", ... */
const char *fn_name(Fn f);      /* "exp", ... */
const char *redop_name(RedOp r);
/* What node n is, in the words of the user's source ("the sum over d in 'S'"). */
const char *node_what(Arena *a, const Node *n);
/* The FN_* functions in f64 (relu keeps NaN, so errors stay visible). */
double fn_apply(Fn f, double x);
/* The integer functions, one definition for every host evaluator. */
long fn_int(double x);
long fn_ilog2(long n);
double redop_identity(RedOp r);

/* Constructors (arena-allocated). */
Expr *expr_new(Arena *a, ExprKind k, VType t, SrcLoc loc);
Expr *expr_int(Arena *a, long v);
Expr *expr_float(Arena *a, double v);
Expr *expr_index(Arena *a, int var);
Expr *expr_binop(Arena *a, Op op, Expr *l, Expr *r);
Expr *expr_neg(Arena *a, Expr *x); /* -x */
/* Every read of `from` in e (NULL: none) made a read of `to`, in place. */
void expr_redirect(Expr *e, const Tensor *from, Tensor *to);
Expr *expr_and(Arena *a, Expr *l, Expr *r); /* either may be NULL (= true) */
Expr *expr_copy(Arena *a, const Expr *e);
int expr_equal(const Expr *a, const Expr *b);
int expr_reads(const Expr *e, const Tensor *t); /* e (or NULL) reads t */
int expr_reads_any(const Expr *e);              /* e reads some tensor: its value is data */
const Expr *expr_gathered_read(const Expr *e);  /* e's first gather (NULL: none) */
/* The offsets T[x, ..] of a subscript T[x, ..] + v, a row at an offset (a
** packed batch's q[cu_q[b] + i, ..]): T an i32 input read at index
** variables, v an index variable, in *row; else NULL. */
const Expr *expr_offset_row(const Expr *s, const Expr **row);
/* The factors of a float product e, flattened in order: the first max
** into f; returns how many there are (more than max: f holds max). */
int expr_factors(const Expr *e, const Expr **f, int max);
/* The tensor reads of node n's body and filter (EX_ACCESS, subscripts'
** reads too): the first max into r; returns how many there are. */
int node_reads(const Node *n, const Expr **r, int max);
/* The same, with index variables compared by same_var(var of a, var of b)
** (expressions of two nodes whose variables are numbered differently). */
int expr_equal_by(const Expr *a, const Expr *b, int (*same_var)(int, int, void *), void *ud);
/* Copy of e with each EX_INDEX k replaced by a copy of sub[k]. */
Expr *expr_subst(Arena *a, const Expr *e, Expr *const *sub, int nsub);
/* Bit set of the iteration variables an expression mentions (vars < 64). */
unsigned long long expr_vars(const Expr *e);

/* Evaluation of index, shape and param-default expressions on the host:
** dims[] holds each dim's size, params[] each param's value, vars[] the
** iteration point. Tensor accesses are not allowed here (returns 0). */
long expr_eval_int(const Expr *e, const long *dims, const long *vars);
double expr_eval_float(const Expr *e, const long *dims, const double *params);
/* The same for shapes and extents, with overflow and division by zero
** reported (returns -1) instead of wrapping: for sizes users give. */
int expr_eval_extent(const Expr *e, const long *dims, long *out);
/* The size of extent e where code generation knows it (a literal or a
** fixed dim), else 0. */
long expr_fixed_extent(const Expr *e);
/* Sizes of the caller's buffer for t (tensor_buf_shape). */
long tensor_dim_size(const Tensor *t, int k, const long *dims);
long tensor_numel(const Tensor *t, const long *dims);
/* Fills params[] with defaults for those not marked in given[]; returns the
** index of the first required param that is missing, or -1. */
int cascade_param_defaults(const Cascade *c, const long *dims, double *params, const int *given);
/* Floor division and modulo, as the language defines them. */
long floordiv(long a, long b);
long floormod(long a, long b);

/* Printing: `--emit=cascade` (stable text for FileCheck). */
void expr_print(FILE *out, const Expr *e, const Node *scope);
char *expr_str(Arena *a, const Expr *e, const Node *scope); /* the same, as a string */
void cascade_print(FILE *out, const Cascade *c);
void program_print(FILE *out, const Program *p);

/* Lookups by name, or NULL. */
Tensor *cascade_tensor(const Cascade *c, const char *name);
Dim *cascade_dim(const Cascade *c, const char *name);
Param *cascade_param(const Cascade *c, const char *name);

/*
** Values bound to a cascade for one evaluation (attnc run, tests). All data
** is f64, row-major and contiguous, whatever the tensor's dtype: integers and
** booleans are stored exactly (0/1 for bool). Evaluators convert to their
** working precision.
*/
typedef struct Binding {
	const Cascade *c;
	long *dims;     /* [ndims] */
	double *params; /* [nparams] */
	double **data;  /* [ntensors]: buffers of TK_IN and TK_OUT tensors; NULL for temporaries */
} Binding;

#endif
