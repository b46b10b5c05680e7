/*
** lowering/mlir/mlir_expr.c: cascade expressions as arith/math/tensor ops.
**
** Ints are i64 throughout (indices, dims and i32 data are widened on load);
** integer / and % are floor division and floor modulo, and a zero divisor
** gives 0, exactly as floordiv()/floormod() in cascade.c, so that no
** generated code can trap. Float max/min use arith.maximumf/minimumf: the
** IEEE 754-2019 maximum/minimum, for which -inf (+inf) is an exact identity
** of every non-NaN value and a NaN operand gives NaN. maxnumf/minnumf would
** keep -inf as an identity too, but they drop NaNs (maxnumf(-inf, NaN) is
** -inf), which would hide a NaN produced upstream from the oracle.
*/
#include "mlir_build.h"

#include <mlir-c/BuiltinAttributes.h>

/* Only then can linalg feed the element through a block argument;
** the extent check keeps loop bounds derived from the operand exact. */
int mlir_access_is_bare(const Node *n, const Expr *e)
{
	if (!n || e->kind != EX_ACCESS || e->nargs != e->tensor->rank)
		return 0;
	unsigned long long seen = 0;
	for (int k = 0; k < e->nargs; k++) {
		const Expr *a = e->args[k];
		if (a->kind != EX_INDEX || a->var < 0 || a->var >= 64)
			return 0;
		if (a->var >= n->nfree + n->nred)
			return 0;
		if (seen & (1ull << a->var))
			return 0;
		seen |= 1ull << a->var;
		if (!expr_equal(n->vars[a->var].extent, e->tensor->shape[k]))
			return 0;
	}
	return 1;
}

/* Value types: the compute float, i64 for ints, i1 for bools. */
MlirType mlir_vtype(MlirEm *em, VType t)
{
	return t == VT_FLOAT ? em->ft : t == VT_INT ? em->i64 : em->i1;
}

/* Declared int tensors keep their i32 storage; temporaries hold i64. */
MlirType mlir_elem_type(MlirEm *em, const Tensor *t)
{
	if (t->type == VT_INT && t->kind != TK_TEMP)
		return em->i32;
	return mlir_vtype(em, t->type);
}

/* Ints are computed in i64 whatever their storage. */
MlirValue mlir_load_conv(MlirEm *em, const Tensor *t, MlirValue v)
{
	if (t->type == VT_INT && t->kind != TK_TEMP)
		return mlir_cast(em, "arith.extsi", v, em->i64);
	return v;
}

/* Back to i32 storage when an int result is written. */
MlirValue mlir_store_conv(MlirEm *em, const Tensor *t, MlirValue v)
{
	if (t->type == VT_INT && t->kind != TK_TEMP)
		return mlir_cast(em, "arith.trunci", v, em->i32);
	return v;
}

/* Dims are index arguments of the func; their i64 form is made once, at the
** top of the func, where it dominates every use (node bodies included). */
static MlirValue dim_value(MlirEm *em, const Dim *d)
{
	if (mlirValueIsNull(em->dim64[d->id])) {
		MlirOperation op =
		    mlir_op_new(em, "arith.index_cast", 1, &em->dimv[d->id], 1, &em->i64, 0, NULL);
		mlir_hoist(em->fblock, &em->ffront, op);
		em->dim64[d->id] = mlirOperationGetResult(op, 0);
	}
	return em->dim64[d->id];
}

/* An iteration variable is linalg.index (and its i64 form), made once at
** the top of the body, so uses inside scf.if branches are dominated by it. */
static void make_var(MlirEm *em, int var)
{
	MlirNamedAttribute a = mlir_named(em, "dim", mlirIntegerAttrGet(em->i64, var));
	MlirOperation ix = mlir_op_new(em, "linalg.index", 0, NULL, 1, &em->idx, 1, &a);
	mlir_hoist(em->bblock, &em->bfront, ix);
	em->varidx[var] = mlirOperationGetResult(ix, 0);
	MlirOperation c =
	    mlir_op_new(em, "arith.index_cast", 1, &em->varidx[var], 1, &em->i64, 0, NULL);
	mlir_hoist(em->bblock, &em->bfront, c);
	em->var64[var] = mlirOperationGetResult(c, 0);
}

/* The variable as i64 (or as index with want_index). */
static MlirValue var_value(MlirEm *em, int var, int want_index)
{
	if (!em->node || var < 0 || var >= em->node->nfree + em->node->nred) {
		mlir_fail(em, "index variable %d used outside a node", var);
		return mlir_const_int(em, want_index ? em->idx : em->i64, 0);
	}
	if (mlirValueIsNull(em->var64[var]))
		make_var(em, var);
	return want_index ? em->varidx[var] : em->var64[var];
}

/* Same tensor, same bare variables: the `ins` operand made for it. */
static int find_ins(MlirEm *em, const Expr *e)
{
	for (int i = 0; i < em->nins; i++)
		if (expr_equal(em->ins_e[i], e))
			return i;
	return -1;
}

/* Any other access reads with tensor.extract at indices computed from
** linalg.index, so index arithmetic (h / G, i + (M - N), j % PS) and
** runtime-dependent indices are all expressible. */
static MlirValue access(MlirEm *em, const Expr *e)
{
	const Tensor *t = e->tensor;
	int k = find_ins(em, e);
	if (k >= 0)
		return mlir_load_conv(em, t, em->ins_v[k]);
	if (!em->node || mlirValueIsNull(em->tensv[t->id])) {
		mlir_fail(em, "tensor %s read where it has no value", t->name);
		return mlir_const_int(em, mlir_vtype(em, t->type), 0);
	}
	MlirValue *opnd = ARENA_ARRAY(em->arena, MlirValue, e->nargs + 1);
	opnd[0] = em->tensv[t->id];
	for (int i = 0; i < e->nargs; i++)
		opnd[i + 1] = mlir_expr_index(em, e->args[i]);
	MlirValue v =
	    mlir_op1(em, "tensor.extract", e->nargs + 1, opnd, mlir_elem_type(em, t), 0, NULL);
	return mlir_load_conv(em, t, v);
}

/* Floor division and modulo with the divisor 0 mapped to a result of 0;
** the division itself always sees a nonzero divisor. */
static MlirValue int_divmod(MlirEm *em, Op op, MlirValue a, MlirValue b)
{
	MlirValue zero = mlir_const_int(em, em->i64, 0);
	MlirValue is0 = mlir_cmpi(em, MLIR_CMPI_EQ, b, zero);
	MlirValue bs = mlir_select(em, is0, mlir_const_int(em, em->i64, 1), b);
	MlirValue r;
	if (op == OP_DIV) {
		r = mlir_binary(em, "arith.floordivsi", a, bs);
	} else {
		/* remsi has the dividend's sign; add the divisor when the
		** signs differ and the remainder is nonzero */
		MlirValue m = mlir_binary(em, "arith.remsi", a, bs);
		MlirValue nz = mlir_cmpi(em, MLIR_CMPI_NE, m, zero);
		MlirValue mneg = mlir_cmpi(em, MLIR_CMPI_SLT, m, zero);
		MlirValue bneg = mlir_cmpi(em, MLIR_CMPI_SLT, bs, zero);
		MlirValue diff = mlir_binary(em, "arith.xori", mneg, bneg);
		MlirValue fix = mlir_binary(em, "arith.andi", nz, diff);
		r = mlir_select(em, fix, mlir_binary(em, "arith.addi", m, bs), m);
	}
	return mlir_select(em, is0, zero, r);
}

/* IEEE ops; comparisons are ordered except != (true on NaN, as in C). */
static MlirValue float_binop(MlirEm *em, Op op, MlirValue a, MlirValue b)
{
	switch (op) {
	case OP_ADD: return mlir_binary(em, "arith.addf", a, b);
	case OP_SUB: return mlir_binary(em, "arith.subf", a, b);
	case OP_MUL: return mlir_binary(em, "arith.mulf", a, b);
	case OP_DIV: return mlir_binary(em, "arith.divf", a, b);
	case OP_MAX: return mlir_binary(em, "arith.maximumf", a, b);
	case OP_MIN: return mlir_binary(em, "arith.minimumf", a, b);
	case OP_LT: return mlir_cmpf(em, MLIR_CMPF_OLT, a, b);
	case OP_LE: return mlir_cmpf(em, MLIR_CMPF_OLE, a, b);
	case OP_GT: return mlir_cmpf(em, MLIR_CMPF_OGT, a, b);
	case OP_GE: return mlir_cmpf(em, MLIR_CMPF_OGE, a, b);
	case OP_EQ: return mlir_cmpf(em, MLIR_CMPF_OEQ, a, b);
	case OP_NE: return mlir_cmpf(em, MLIR_CMPF_UNE, a, b);
	default: mlir_fail(em, "operator '%s' on floats", op_spelling(op)); return a;
	}
}

/* Signed 64-bit ops with the language's floor / and %. */
static MlirValue int_binop(MlirEm *em, Op op, MlirValue a, MlirValue b)
{
	switch (op) {
	case OP_ADD: return mlir_binary(em, "arith.addi", a, b);
	case OP_SUB: return mlir_binary(em, "arith.subi", a, b);
	case OP_MUL: return mlir_binary(em, "arith.muli", a, b);
	case OP_DIV:
	case OP_MOD: return int_divmod(em, op, a, b);
	case OP_MAX: return mlir_binary(em, "arith.maxsi", a, b);
	case OP_MIN: return mlir_binary(em, "arith.minsi", a, b);
	case OP_LT: return mlir_cmpi(em, MLIR_CMPI_SLT, a, b);
	case OP_LE: return mlir_cmpi(em, MLIR_CMPI_SLE, a, b);
	case OP_GT: return mlir_cmpi(em, MLIR_CMPI_SGT, a, b);
	case OP_GE: return mlir_cmpi(em, MLIR_CMPI_SGE, a, b);
	case OP_EQ: return mlir_cmpi(em, MLIR_CMPI_EQ, a, b);
	case OP_NE: return mlir_cmpi(em, MLIR_CMPI_NE, a, b);
	default: mlir_fail(em, "operator '%s' on ints", op_spelling(op)); return a;
	}
}

/* Bools are i1 with false < true (unsigned compares; max is or). */
static MlirValue bool_binop(MlirEm *em, Op op, MlirValue a, MlirValue b)
{
	switch (op) {
	case OP_AND:
	case OP_MIN: return mlir_binary(em, "arith.andi", a, b);
	case OP_OR:
	case OP_MAX: return mlir_binary(em, "arith.ori", a, b);
	case OP_LT: return mlir_cmpi(em, MLIR_CMPI_ULT, a, b);
	case OP_LE: return mlir_cmpi(em, MLIR_CMPI_ULE, a, b);
	case OP_GT: return mlir_cmpi(em, MLIR_CMPI_UGT, a, b);
	case OP_GE: return mlir_cmpi(em, MLIR_CMPI_UGE, a, b);
	case OP_EQ: return mlir_cmpi(em, MLIR_CMPI_EQ, a, b);
	case OP_NE: return mlir_cmpi(em, MLIR_CMPI_NE, a, b);
	default: mlir_fail(em, "operator '%s' on bools", op_spelling(op)); return a;
	}
}

/* The operand type picks the op family (comparisons give bools). */
static MlirValue binop(MlirEm *em, const Expr *e)
{
	MlirValue a = mlir_expr(em, e->args[0]);
	MlirValue b = mlir_expr(em, e->args[1]);
	switch (e->args[0]->type) {
	case VT_FLOAT: return float_binop(em, (Op)e->op, a, b);
	case VT_INT: return int_binop(em, (Op)e->op, a, b);
	default: return bool_binop(em, (Op)e->op, a, b);
	}
}

/* !x is x xor true; -x is negf, or 0 - x for ints. */
static MlirValue unop(MlirEm *em, const Expr *e)
{
	MlirValue x = mlir_expr(em, e->args[0]);
	if (e->op == OP_NOT)
		return mlir_binary(em, "arith.xori", x, mlir_const_int(em, em->i1, 1));
	if (e->args[0]->type == VT_FLOAT)
		return mlir_cast(em, "arith.negf", x, em->ft);
	return mlir_binary(em, "arith.subi", mlir_const_int(em, em->i64, 0), x);
}

/* int or bool to the float type (math functions accept ints). */
static MlirValue to_float(MlirEm *em, const Expr *e, MlirValue v)
{
	if (e->type == VT_INT)
		return mlir_cast(em, "arith.sitofp", v, em->ft);
	if (e->type == VT_BOOL)
		return mlir_cast(em, "arith.uitofp", v, em->ft);
	return v;
}

/* The integer functions, defined everywhere as cascade.c's fn_int and
** fn_ilog2 are: int(x) replaces NaN by 0 and clamps to [-2^31, 2^31] (both
** exact in f32) before arith.fptosi, whose out-of-range results are poison,
** then caps at 2^31 - 1; ilog2(n) is 63 - ctlz(n), or -1 for n <= 0. */
static MlirValue int_call(MlirEm *em, const Expr *e)
{
	MlirValue x = mlir_expr(em, e->args[0]);
	if (e->op == FN_ILOG2) {
		MlirValue zero = mlir_const_int(em, em->i64, 0);
		MlirValue lz = mlir_cast(em, "math.ctlz", x, em->i64);
		MlirValue r = mlir_binary(em, "arith.subi", mlir_const_int(em, em->i64, 63), lz);
		return mlir_select(em, mlir_cmpi(em, MLIR_CMPI_SLE, x, zero),
				   mlir_const_int(em, em->i64, -1), r);
	}
	MlirValue fz = mlir_const_float(em, em->ft, 0.0);
	MlirValue nan = mlir_cmpf(em, MLIR_CMPF_UNO, x, x);
	x = mlir_select(em, nan, fz, x);
	x = mlir_binary(em, "arith.maximumf", x, mlir_const_float(em, em->ft, -2147483648.0));
	x = mlir_binary(em, "arith.minimumf", x, mlir_const_float(em, em->ft, 2147483648.0));
	MlirValue r = mlir_cast(em, "arith.fptosi", x, em->i64);
	return mlir_binary(em, "arith.minsi", r, mlir_const_int(em, em->i64, 2147483647));
}

/* relu is x > 0 ? x : 0, sigmoid 1 / (1 + exp(-x)), sign, elu and softplus
** as in cascade.c; the others are math dialect ops. */
static MlirValue call(MlirEm *em, const Expr *e)
{
	if (e->op == FN_INT || e->op == FN_ILOG2)
		return int_call(em, e);
	MlirValue x = to_float(em, e->args[0], mlir_expr(em, e->args[0]));
	static const char *const direct[FN_COUNT] = {
	    [FN_EXP] = "math.exp",     [FN_EXP2] = "math.exp2",       [FN_LOG] = "math.log",
	    [FN_LOG2] = "math.log2",   [FN_TANH] = "math.tanh",       [FN_SQRT] = "math.sqrt",
	    [FN_RSQRT] = "math.rsqrt", [FN_ABS] = "math.absf",        [FN_LOG1P] = "math.log1p",
	    [FN_EXPM1] = "math.expm1", [FN_ERF] = "math.erf",         [FN_FLOOR] = "math.floor",
	    [FN_CEIL] = "math.ceil",   [FN_ROUND] = "math.roundeven",
	};
	if (e->op >= 0 && e->op < FN_COUNT && direct[e->op])
		return mlir_cast(em, direct[e->op], x, em->ft);
	MlirValue zero = mlir_const_float(em, em->ft, 0.0);
	if (e->op == FN_RELU)
		return mlir_select(em, mlir_cmpf(em, MLIR_CMPF_OGT, x, zero), x, zero);
	if (e->op == FN_SIGMOID) {
		MlirValue one = mlir_const_float(em, em->ft, 1.0);
		MlirValue neg = mlir_cast(em, "arith.negf", x, em->ft);
		MlirValue ex = mlir_cast(em, "math.exp", neg, em->ft);
		return mlir_binary(em, "arith.divf", one, mlir_binary(em, "arith.addf", one, ex));
	}
	if (e->op == FN_SIGN) {
		MlirValue one = mlir_const_float(em, em->ft, 1.0),
			  m1 = mlir_const_float(em, em->ft, -1.0);
		MlirValue neg = mlir_select(em, mlir_cmpf(em, MLIR_CMPF_OLT, x, zero), m1, x);
		return mlir_select(em, mlir_cmpf(em, MLIR_CMPF_OGT, x, zero), one, neg);
	}
	if (e->op == FN_ELU)
		return mlir_select(em, mlir_cmpf(em, MLIR_CMPF_OGT, x, zero), x,
				   mlir_cast(em, "math.expm1", x, em->ft));
	if (e->op == FN_SOFTPLUS) {
		/* max(x, 0) + log1p(exp(-|x|)), as in cascade.c */
		MlirValue pos = mlir_select(em, mlir_cmpf(em, MLIR_CMPF_OGT, x, zero), x, zero);
		MlirValue na =
		    mlir_cast(em, "arith.negf", mlir_cast(em, "math.absf", x, em->ft), em->ft);
		MlirValue l =
		    mlir_cast(em, "math.log1p", mlir_cast(em, "math.exp", na, em->ft), em->ft);
		return mlir_binary(em, "arith.addf", pos, l);
	}
	mlir_fail(em, "unknown function %d", e->op);
	return x;
}

/* True when evaluating e may read with tensor.extract, whose indices are
** only known to be in bounds where the guarding condition holds. */
static int reads_by_index(MlirEm *em, const Expr *e)
{
	if (e->kind == EX_ACCESS && find_ins(em, e) < 0)
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_by_index(em, e->args[i]))
			return 1;
	return 0;
}

/* Branches that read by index are evaluated lazily in an scf.if; others
** (the common case) become one arith.select. */
static MlirValue select_expr(MlirEm *em, const Expr *e)
{
	MlirValue c = mlir_expr(em, e->args[0]);
	if (!reads_by_index(em, e->args[1]) && !reads_by_index(em, e->args[2])) {
		MlirValue a = mlir_expr(em, e->args[1]);
		return mlir_select(em, c, a, mlir_expr(em, e->args[2]));
	}
	MlirIf f;
	mlir_if_open(em, &f);
	mlir_if_else(em, &f, mlir_expr(em, e->args[1]));
	return mlir_if_close(em, &f, c, mlir_expr(em, e->args[2]));
}

/* One case per ExprKind; the value type follows e->type. */
MlirValue mlir_expr(MlirEm *em, const Expr *e)
{
	switch (e->kind) {
	case EX_FLOAT: return mlir_const_float(em, em->ft, e->fval);
	case EX_INT: return mlir_const_int(em, em->i64, e->ival);
	case EX_BOOL: return mlir_const_int(em, em->i1, e->ival != 0);
	case EX_INDEX: return var_value(em, e->var, 0);
	case EX_DIM: return dim_value(em, e->dim);
	case EX_PARAM: return em->paramv[e->param->id];
	case EX_ACCESS: return access(em, e);
	case EX_UNOP: return unop(em, e);
	case EX_BINOP: return binop(em, e);
	case EX_SELECT: return select_expr(em, e);
	case EX_CALL: return call(em, e);
	case EX_CAST: return to_float(em, e->args[0], mlir_expr(em, e->args[0]));
	}
	mlir_fail(em, "unknown expression kind %d", (int)e->kind);
	return mlir_const_int(em, mlir_vtype(em, e->type), 0);
}

/* Bare variables, dims and literals need no round trip through i64. */
MlirValue mlir_expr_index(MlirEm *em, const Expr *e)
{
	if (e->kind == EX_INDEX)
		return var_value(em, e->var, 1);
	if (e->kind == EX_DIM)
		return em->dimv[e->dim->id];
	if (e->kind == EX_INT)
		return mlir_const_int(em, em->idx, e->ival);
	MlirValue v = mlir_expr(em, e);
	if (e->type != VT_INT) {
		mlir_fail(em, "index expression is not an int");
		return mlir_const_int(em, em->idx, 0);
	}
	return mlir_cast(em, "arith.index_cast", v, em->idx);
}
