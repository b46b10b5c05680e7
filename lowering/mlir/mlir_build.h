/*
** lowering/mlir/mlir_build.h: the builder shared by the MLIR emitter and the
** reference executor (internal to compiler/mlir_*.c and refexec.c).
**
** Everything that names an mlir-c type stays behind this header, so that
** the public headers (mlir_emit.h, refexec.h) can be included by code built
** without the MLIR include paths.
**
** Value types in the built IR: VT_FLOAT is the float element type chosen per
** build (f32 or f64), VT_INT is i64, VT_BOOL is i1. Tensor storage: floats
** as the float type, ints as i32 for declared (in/out) tensors and i64 for
** temporaries, bools as i1.
*/
#ifndef ATTN_MLIR_BUILD_H
#define ATTN_MLIR_BUILD_H

#include <stddef.h>

#include <mlir-c/IR.h>

#include "../../compiler/cascade.h"

/* The state of one build: the context and types, the current func and the
** node whose linalg.generic body is being filled. */
typedef struct MlirEm {
	MlirContext ctx;
	MlirLocation loc;
	Arena *arena;
	int use_f64;
	MlirType ft, i64, i32, i1, idx;

	/* The cascade being built and its SSA values. */
	const Cascade *c;
	MlirBlock fblock;  /* the func's entry block */
	int ffront;        /* ops hoisted to the front of fblock so far */
	MlirValue *dimv;   /* [ndims] index arguments */
	MlirValue *dim64;  /* [ndims] the same as i64, made on first use */
	MlirValue *paramv; /* [nparams] scalar arguments */
	MlirValue *tensv;  /* [ntensors] current tensor value (null until defined) */

	/* The node body being filled (node == NULL at func level). */
	const Node *node;
	MlirBlock bblock;  /* the linalg.generic body */
	int bfront;        /* ops hoisted to the front of bblock so far */
	MlirValue *varidx; /* [nvars] linalg.index, made on first use */
	MlirValue *var64;  /* [nvars] the same as i64 */
	int nins;          /* accesses read through `ins` operands */
	const Expr **ins_e;
	MlirValue *ins_v; /* their block arguments */

	MlirBlock cur; /* where new ops are appended */
	char *err;     /* first unsupported-construct message, if any */
	size_t errlen;
	int failed;
} MlirEm;

/* ---- mlir_ops.c: op creation helpers ------------------------------------ */

/* A context with every dialect registered and the ones we build loaded. */
MlirContext mlir_context_new(void);
MlirStringRef mlir_str(const char *s);
MlirNamedAttribute mlir_named(MlirEm *em, const char *name, MlirAttribute a);
/* Creates an op, detached (mlir_op_new) or appended to em->cur (mlir_op). */
MlirOperation mlir_op_new(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd, int nres,
			  const MlirType *res, int nattr, const MlirNamedAttribute *attr);
MlirOperation mlir_op(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd, int nres,
		      const MlirType *res, int nattr, const MlirNamedAttribute *attr);
/* The same, returning its only result. */
MlirValue mlir_op1(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd, MlirType res,
		   int nattr, const MlirNamedAttribute *attr);
/* Appends a terminator or other result-less op. */
void mlir_op0(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd);
MlirValue mlir_const_float(MlirEm *em, MlirType t, double v);
MlirValue mlir_const_int(MlirEm *em, MlirType t, long v);
MlirValue mlir_cast(MlirEm *em, const char *name, MlirValue v, MlirType to);
MlirValue mlir_binary(MlirEm *em, const char *name, MlirValue a, MlirValue b);
MlirValue mlir_cmpi(MlirEm *em, int pred, MlirValue a, MlirValue b);
MlirValue mlir_cmpf(MlirEm *em, int pred, MlirValue a, MlirValue b);
MlirValue mlir_select(MlirEm *em, MlirValue c, MlirValue a, MlirValue b);
/* Inserts an already created op at the front of a block, after the ones
** hoisted there before, so that it dominates everything in the block. */
void mlir_hoist(MlirBlock b, int *front, MlirOperation op);
/* Records a message for an unsupported construct (the first one wins). */
void mlir_fail(MlirEm *em, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* arith.cmpi / arith.cmpf predicate numbers (ArithOps.td). */
enum {
	MLIR_CMPI_EQ = 0,
	MLIR_CMPI_NE,
	MLIR_CMPI_SLT,
	MLIR_CMPI_SLE,
	MLIR_CMPI_SGT,
	MLIR_CMPI_SGE,
	MLIR_CMPI_ULT,
	MLIR_CMPI_ULE,
	MLIR_CMPI_UGT,
	MLIR_CMPI_UGE
};
enum {
	MLIR_CMPF_OEQ = 1,
	MLIR_CMPF_OGT = 2,
	MLIR_CMPF_OGE = 3,
	MLIR_CMPF_OLT = 4,
	MLIR_CMPF_OLE = 5,
	MLIR_CMPF_UNE = 13,
	MLIR_CMPF_UNO = 14
};

/* An scf.if with one result, built in three steps (then, else, close). */
typedef struct MlirIf {
	MlirBlock saved, then_b, else_b;
} MlirIf;
void mlir_if_open(MlirEm *em, MlirIf *f);
void mlir_if_else(MlirEm *em, MlirIf *f, MlirValue then_v);
MlirValue mlir_if_close(MlirEm *em, MlirIf *f, MlirValue cond, MlirValue else_v);

/* ---- mlir_expr.c: expression bodies ------------------------------------- */

/* The value type of an expression and the storage type of a tensor. */
MlirType mlir_vtype(MlirEm *em, VType t);
MlirType mlir_elem_type(MlirEm *em, const Tensor *t);
/* Converts between a tensor's storage type and its value type. */
MlirValue mlir_load_conv(MlirEm *em, const Tensor *t, MlirValue v);
MlirValue mlir_store_conv(MlirEm *em, const Tensor *t, MlirValue v);
/* Emits e at em->cur (node scope when em->node is set). */
MlirValue mlir_expr(MlirEm *em, const Expr *e);
/* An int expression over dims and literals as an `index` value. */
MlirValue mlir_expr_index(MlirEm *em, const Expr *e);
/* True when the access is read through an `ins` operand of node n: its
** indices are distinct bare iteration variables, each spanning exactly the
** tensor's dimension. */
int mlir_access_is_bare(const Node *n, const Expr *e);

/* ---- mlir_emit.c: module, funcs and linalg.generic ---------------------- */

/* Builds one func per cascade of the given list into module m. With
** memref_io the funcs take the inputs and outputs as memrefs (the
** reference executor's entry points, returning nothing); otherwise inputs
** are tensors and outputs are results. Returns 0, or nonzero with a message
** in err. */
int mlir_build_module(MlirContext ctx, MlirModule m, const Cascade *const *cs, int ncs, int use_f64,
		      int memref_io, char *err, size_t errlen);

#endif
