/*
** lowering/mlir/mlir_ops.c: thin helpers over the MLIR C API's generic operation
** state, so that the emitter reads as a list of ops rather than as
** bookkeeping of operand, result and attribute arrays.
*/
#include "mlir_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/RegisterEverything.h>

/* Registering every dialect is cheap (they load lazily); we load eagerly
** only the ones whose ops we create by name, since creating an op of an
** unloaded dialect fails. */
MlirContext mlir_context_new(void)
{
	static const char *const loaded[] = {"builtin", "func", "arith",         "math",  "linalg",
					     "tensor",  "scf",  "bufferization", "memref"};
	MlirContext ctx = mlirContextCreate();
	MlirDialectRegistry reg = mlirDialectRegistryCreate();
	mlirRegisterAllDialects(reg);
	mlirContextAppendDialectRegistry(ctx, reg);
	mlirDialectRegistryDestroy(reg);
	for (size_t i = 0; i < sizeof loaded / sizeof loaded[0]; i++)
		mlirContextGetOrLoadDialect(ctx, mlir_str(loaded[i]));
	return ctx;
}

/* C strings into the API's length-carrying references. */
MlirStringRef mlir_str(const char *s)
{
	return mlirStringRefCreateFromCString(s);
}

/* One name = value entry of an op's attribute dictionary. */
MlirNamedAttribute mlir_named(MlirEm *em, const char *name, MlirAttribute a)
{
	return mlirNamedAttributeGet(mlirIdentifierGet(em->ctx, mlir_str(name)), a);
}

/* Every op of the emitter goes through here; results are given explicitly
** (no type inference) so the C side always knows what it built. */
MlirOperation mlir_op_new(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd, int nres,
			  const MlirType *res, int nattr, const MlirNamedAttribute *attr)
{
	MlirOperationState st = mlirOperationStateGet(mlir_str(name), em->loc);
	if (nopnd)
		mlirOperationStateAddOperands(&st, nopnd, opnd);
	if (nres)
		mlirOperationStateAddResults(&st, nres, res);
	if (nattr)
		mlirOperationStateAddAttributes(&st, nattr, attr);
	return mlirOperationCreate(&st);
}

/* Most ops go straight into the block being filled. */
MlirOperation mlir_op(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd, int nres,
		      const MlirType *res, int nattr, const MlirNamedAttribute *attr)
{
	MlirOperation op = mlir_op_new(em, name, nopnd, opnd, nres, res, nattr, attr);
	mlirBlockAppendOwnedOperation(em->cur, op);
	return op;
}

/* Nearly every op has exactly one result. */
MlirValue mlir_op1(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd, MlirType res,
		   int nattr, const MlirNamedAttribute *attr)
{
	return mlirOperationGetResult(mlir_op(em, name, nopnd, opnd, 1, &res, nattr, attr), 0);
}

/* Terminators and other result-less ops. */
void mlir_op0(MlirEm *em, const char *name, int nopnd, const MlirValue *opnd)
{
	mlir_op(em, name, nopnd, opnd, 0, NULL, 0, NULL);
}

/* Float attributes are built from the double directly, so +-inf and
** values that do not round-trip through decimal text stay exact. */
MlirValue mlir_const_float(MlirEm *em, MlirType t, double v)
{
	MlirNamedAttribute a = mlir_named(em, "value", mlirFloatAttrDoubleGet(em->ctx, t, v));
	return mlir_op1(em, "arith.constant", 0, NULL, t, 1, &a);
}

/* Integer and index constants (i1 true is 1). */
MlirValue mlir_const_int(MlirEm *em, MlirType t, long v)
{
	MlirNamedAttribute a = mlir_named(em, "value", mlirIntegerAttrGet(t, v));
	return mlir_op1(em, "arith.constant", 0, NULL, t, 1, &a);
}

/* One-operand ops: casts, negation, math functions. */
MlirValue mlir_cast(MlirEm *em, const char *name, MlirValue v, MlirType to)
{
	return mlir_op1(em, name, 1, &v, to, 0, NULL);
}

/* Binary arith/math ops whose result type is the operands' type. */
MlirValue mlir_binary(MlirEm *em, const char *name, MlirValue a, MlirValue b)
{
	MlirValue v[2] = {a, b};
	return mlir_op1(em, name, 2, v, mlirValueGetType(a), 0, NULL);
}

/* The predicate of cmpi/cmpf is an i64 enum attribute. */
static MlirValue cmp(MlirEm *em, const char *name, int pred, MlirValue a, MlirValue b)
{
	MlirValue v[2] = {a, b};
	MlirNamedAttribute p = mlir_named(em, "predicate", mlirIntegerAttrGet(em->i64, pred));
	return mlir_op1(em, name, 2, v, em->i1, 1, &p);
}

/* Comparisons always give i1. */
MlirValue mlir_cmpi(MlirEm *em, int pred, MlirValue a, MlirValue b)
{
	return cmp(em, "arith.cmpi", pred, a, b);
}

/* Ordered float compares (NaN compares false), except != (une). */
MlirValue mlir_cmpf(MlirEm *em, int pred, MlirValue a, MlirValue b)
{
	return cmp(em, "arith.cmpf", pred, a, b);
}

/* arith.select: both operands are already evaluated. */
MlirValue mlir_select(MlirEm *em, MlirValue c, MlirValue a, MlirValue b)
{
	MlirValue v[3] = {c, a, b};
	return mlir_op1(em, "arith.select", 3, v, mlirValueGetType(a), 0, NULL);
}

/* Front insertion keeps hoisted values dominating later uses. */
void mlir_hoist(MlirBlock b, int *front, MlirOperation op)
{
	mlirBlockInsertOwnedOperation(b, (*front)++, op);
}

/* Unsupported constructs do not stop the build (the IR stays
** well-formed and is destroyed as usual); the first reason is kept. */
void mlir_fail(MlirEm *em, const char *fmt, ...)
{
	if (em->failed++ || !em->err || !em->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(em->err, em->errlen, fmt, ap);
	va_end(ap);
}

/* The branches are built as detached blocks while em->cur points into
** them; the scf.if itself is created last, when both are complete. */
void mlir_if_open(MlirEm *em, MlirIf *f)
{
	f->saved = em->cur;
	f->then_b = mlirBlockCreate(0, NULL, NULL);
	f->else_b = mlirBlockCreate(0, NULL, NULL);
	em->cur = f->then_b;
}

/* Ends the then-branch with its value and starts the else-branch. */
void mlir_if_else(MlirEm *em, MlirIf *f, MlirValue then_v)
{
	mlir_op0(em, "scf.yield", 1, &then_v);
	em->cur = f->else_b;
}

/* Ends the else-branch and wraps both blocks in the scf.if. */
MlirValue mlir_if_close(MlirEm *em, MlirIf *f, MlirValue cond, MlirValue else_v)
{
	mlir_op0(em, "scf.yield", 1, &else_v);
	em->cur = f->saved;
	MlirRegion r[2] = {mlirRegionCreate(), mlirRegionCreate()};
	mlirRegionAppendOwnedBlock(r[0], f->then_b);
	mlirRegionAppendOwnedBlock(r[1], f->else_b);
	MlirType t = mlirValueGetType(else_v);
	MlirOperationState st = mlirOperationStateGet(mlir_str("scf.if"), em->loc);
	mlirOperationStateAddOperands(&st, 1, &cond);
	mlirOperationStateAddResults(&st, 1, &t);
	mlirOperationStateAddOwnedRegions(&st, 2, r);
	MlirOperation op = mlirOperationCreate(&st);
	mlirBlockAppendOwnedOperation(em->cur, op);
	return mlirOperationGetResult(op, 0);
}
