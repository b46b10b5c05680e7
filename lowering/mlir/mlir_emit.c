/*
** lowering/mlir/mlir_emit.c: a cascade as one func.func of linalg.generic ops on
** tensors, built through the MLIR C API.
**
** Each Node becomes one linalg.generic whose iteration space is the node's
** variables (free ones parallel, reduced ones reduction). Its output is a
** tensor.empty filled with the reduction's identity. Accesses whose indices
** are distinct bare variables are `ins` operands with the matching affine
** map; every other access is a tensor.extract inside the body. The body
** evaluates the node's filter and domain first and the expression only
** where they hold (in an scf.if), so a filtered point never reads out of
** bounds and contributes the identity, and a point outside out->domain
** yields 0, exactly as cascade.h defines.
*/
#include "mlir_emit.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <mlir-c/AffineExpr.h>
#include <mlir-c/AffineMap.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Dialect/Linalg.h>

#include "mlir_build.h"

/* Every tensor is ranked with dynamic extents; sizes come from the dims. */
static MlirType tensor_type(MlirEm *em, const Tensor *t, int memref)
{
	int64_t shape[64];
	for (int k = 0; k < t->rank && k < 64; k++)
		shape[k] = mlirShapedTypeGetDynamicSize();
	MlirType el = mlir_elem_type(em, t);
	if (memref)
		return mlirMemRefTypeContiguousGet(el, t->rank, shape, mlirAttributeGetNull());
	return mlirRankedTensorTypeGet(t->rank, shape, el, mlirAttributeGetNull());
}

/* Names (symbols, source names) as string attributes. */
static MlirAttribute str_attr(MlirEm *em, const char *s)
{
	return mlirStringAttrGet(em->ctx, mlir_str(s));
}

/* ---- collecting the `ins` operands of a node ---------------------------- */

/* An upper bound for the `ins` list of a node. */
static int count_accesses(const Expr *e)
{
	if (!e)
		return 0;
	int n = e->kind == EX_ACCESS;
	for (int i = 0; i < e->nargs; i++)
		n += count_accesses(e->args[i]);
	return n;
}

/* Bare accesses of tensors that already have a value, each distinct one
** once; indices of other accesses may themselves contain bare accesses. */
static void collect_ins(MlirEm *em, const Node *n, const Expr *e)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && mlir_access_is_bare(n, e) &&
	    !mlirValueIsNull(em->tensv[e->tensor->id])) {
		for (int i = 0; i < em->nins; i++)
			if (em->ins_e[i]->tensor == e->tensor) {
				int same = 1;
				for (int k = 0; k < e->nargs; k++)
					same &= em->ins_e[i]->args[k]->var == e->args[k]->var;
				if (same)
					return;
			}
		em->ins_e[em->nins++] = e;
		return;
	}
	for (int i = 0; i < e->nargs; i++)
		collect_ins(em, n, e->args[i]);
}

/* The affine map of an access: d_var for each (bare) index. */
static MlirAttribute access_map(MlirEm *em, const Node *n, const Expr *e)
{
	int nv = n->nfree + n->nred;
	MlirAffineExpr *r = ARENA_ARRAY(em->arena, MlirAffineExpr, e->nargs + 1);
	for (int k = 0; k < e->nargs; k++)
		r[k] = mlirAffineDimExprGet(em->ctx, e->args[k]->var);
	return mlirAffineMapAttrGet(mlirAffineMapGet(em->ctx, nv, 0, e->nargs, r));
}

/* Dims first..first+cnt-1 of an nv-dim space (output and reduction maps). */
static MlirAttribute range_map(MlirEm *em, int nv, int first, int cnt)
{
	MlirAffineExpr *r = ARENA_ARRAY(em->arena, MlirAffineExpr, cnt + 1);
	for (int k = 0; k < cnt; k++)
		r[k] = mlirAffineDimExprGet(em->ctx, first + k);
	return mlirAffineMapAttrGet(mlirAffineMapGet(em->ctx, nv, 0, cnt, r));
}

/* ---- reductions ---------------------------------------------------------- */

/* The identity in the output's storage type (RED_NONE: 0). */
static MlirValue identity(MlirEm *em, const Node *n)
{
	const Tensor *t = n->out;
	MlirType st = mlir_elem_type(em, t);
	if (t->type == VT_FLOAT)
		return mlir_const_float(em, st, redop_identity(n->red));
	int wide = mlirTypeEqual(st, em->i64);
	switch (n->red) {
	case RED_PROD: return mlir_const_int(em, st, 1);
	case RED_MAX:
		if (t->type == VT_BOOL)
			return mlir_const_int(em, st, 0);
		return mlir_const_int(em, st, wide ? LONG_MIN : INT32_MIN);
	case RED_MIN:
		if (t->type == VT_BOOL)
			return mlir_const_int(em, st, 1);
		return mlir_const_int(em, st, wide ? LONG_MAX : INT32_MAX);
	default: return mlir_const_int(em, st, 0);
	}
}

/* acc (+) v in the value type. */
static MlirValue combine(MlirEm *em, const Node *n, MlirValue acc, MlirValue v)
{
	static const char *const fl[] = {[RED_SUM] = "arith.addf",
					 [RED_PROD] = "arith.mulf",
					 [RED_MAX] = "arith.maximumf",
					 [RED_MIN] = "arith.minimumf"};
	static const char *const in[] = {[RED_SUM] = "arith.addi",
					 [RED_PROD] = "arith.muli",
					 [RED_MAX] = "arith.maxsi",
					 [RED_MIN] = "arith.minsi"};
	static const char *const bo[] = {
	    [RED_SUM] = NULL, [RED_PROD] = NULL, [RED_MAX] = "arith.ori", [RED_MIN] = "arith.andi"};
	VType t = n->out->type;
	const char *name = t == VT_FLOAT ? fl[n->red] : t == VT_INT ? in[n->red] : bo[n->red];
	if (!name) {
		mlir_fail(em, "%s reduction of bools", redop_name(n->red));
		return acc;
	}
	return mlir_binary(em, name, acc, v);
}

/* ---- node bodies --------------------------------------------------------- */

/* a && b where either may be absent (true) or the same value. */
static MlirValue and_opt(MlirEm *em, MlirValue a, MlirValue b)
{
	if (mlirValueIsNull(a) || mlirValueEqual(a, b))
		return b;
	if (mlirValueIsNull(b))
		return a;
	return mlir_binary(em, "arith.andi", a, b);
}

/* The region of one node, in the block whose last argument is the
** accumulator: a point outside the filter keeps it (the identity for
** RED_NONE, whose fill is 0), a free point outside out->domain gives 0.
** The filter usually equals the domain (it is built from it), and is then
** computed once. */
static MlirValue node_body(MlirEm *em, const Node *n, MlirValue acc_st)
{
	const Tensor *t = n->out;
	const Expr *de = t->domain, *fe = n->filter;
	MlirValue none = {NULL};
	MlirValue dom = de ? mlir_expr(em, de) : none;
	MlirValue cond = !fe ? none : de && expr_equal(fe, de) ? dom : mlir_expr(em, fe);
	if (n->red == RED_NONE)
		cond = and_opt(em, cond, dom), dom = none;
	MlirValue acc = mlir_load_conv(em, t, acc_st);
	MlirIf f;
	if (!mlirValueIsNull(cond))
		mlir_if_open(em, &f);
	MlirValue v = mlir_expr(em, n->body);
	if (n->red != RED_NONE)
		v = combine(em, n, acc, v);
	if (!mlirValueIsNull(cond)) {
		mlir_if_else(em, &f, v);
		MlirValue other = n->red == RED_NONE ? mlir_load_conv(em, t, identity(em, n)) : acc;
		v = mlir_if_close(em, &f, cond, other);
	}
	if (!mlirValueIsNull(dom)) {
		MlirValue zero = mlir_load_conv(em, t, identity(em, &(Node){.out = n->out}));
		v = mlir_select(em, dom, v, zero);
	}
	return mlir_store_conv(em, t, v);
}

/* The output operand: tensor.empty of the declared shape, filled with the
** reduction identity by linalg.fill (a named op whose region the C API
** builds for us). */
static MlirValue node_init(MlirEm *em, const Node *n)
{
	const Tensor *t = n->out;
	MlirValue *sz = ARENA_ARRAY(em->arena, MlirValue, t->rank + 1);
	for (int k = 0; k < t->rank; k++)
		sz[k] = mlir_expr_index(em, t->shape[k]);
	MlirType tt = tensor_type(em, t, 0);
	MlirValue empty = mlir_op1(em, "tensor.empty", t->rank, sz, tt, 0, NULL);
	MlirValue opnd[2] = {identity(em, n), empty};
	int32_t seg[2] = {1, 1};
	MlirNamedAttribute a =
	    mlir_named(em, "operandSegmentSizes", mlirDenseI32ArrayGet(em->ctx, 2, seg));
	MlirOperationState st = mlirOperationStateGet(mlir_str("linalg.fill"), em->loc);
	MlirRegion r = mlirRegionCreate();
	mlirOperationStateAddOperands(&st, 2, opnd);
	mlirOperationStateAddResults(&st, 1, &tt);
	mlirOperationStateAddAttributes(&st, 1, &a);
	mlirOperationStateAddOwnedRegions(&st, 1, &r);
	MlirOperation op = mlirOperationCreate(&st);
	mlirLinalgFillBuiltinNamedOpRegion(op);
	mlirBlockAppendOwnedOperation(em->cur, op);
	return mlirOperationGetResult(op, 0);
}

/* Reduced variables that no `ins` map mentions have no extent linalg can
** derive; a shape-only operand (never read) spanning them supplies it. */
static MlirValue extent_operand(MlirEm *em, const Node *n)
{
	unsigned long long cover = 0;
	for (int i = 0; i < em->nins; i++)
		for (int k = 0; k < em->ins_e[i]->nargs; k++)
			cover |= 1ull << em->ins_e[i]->args[k]->var;
	int need = 0;
	for (int v = n->nfree; v < n->nfree + n->nred; v++)
		need |= !(cover & (1ull << v));
	if (!need)
		return (MlirValue){NULL};
	MlirValue *sz = ARENA_ARRAY(em->arena, MlirValue, n->nred);
	int64_t shape[64];
	for (int k = 0; k < n->nred; k++) {
		sz[k] = mlir_expr_index(em, n->vars[n->nfree + k].extent);
		shape[k] = mlirShapedTypeGetDynamicSize();
	}
	MlirType tt = mlirRankedTensorTypeGet(n->nred, shape, em->i1, mlirAttributeGetNull());
	return mlir_op1(em, "tensor.empty", n->nred, sz, tt, 0, NULL);
}

/* Block arguments: one per `ins` operand, the shape-only one, the output. */
static MlirBlock body_block(MlirEm *em, const Node *n, MlirValue ext)
{
	int na = em->nins + !mlirValueIsNull(ext) + 1;
	MlirType *ty = ARENA_ARRAY(em->arena, MlirType, na);
	MlirLocation *lo = ARENA_ARRAY(em->arena, MlirLocation, na);
	int k = 0;
	for (int i = 0; i < em->nins; i++)
		ty[k++] = mlir_elem_type(em, em->ins_e[i]->tensor);
	if (!mlirValueIsNull(ext))
		ty[k++] = em->i1;
	ty[k++] = mlir_elem_type(em, n->out);
	for (int i = 0; i < na; i++)
		lo[i] = em->loc;
	MlirBlock b = mlirBlockCreate(na, ty, lo);
	for (int i = 0; i < em->nins; i++)
		em->ins_v[i] = mlirBlockGetArgument(b, i);
	return b;
}

/* Iterator kinds are enum attributes; no C builder exists for them. */
#define PARALLEL  "#linalg.iterator_type<parallel>"
#define REDUCTION "#linalg.iterator_type<reduction>"

/* The linalg.generic op itself, once its operands and body are ready. */
static MlirValue make_generic(MlirEm *em, const Node *n, MlirValue ext, MlirValue init,
			      MlirBlock body)
{
	int nv = n->nfree + n->nred, nin = em->nins + !mlirValueIsNull(ext);
	MlirValue *opnd = ARENA_ARRAY(em->arena, MlirValue, nin + 1);
	MlirAttribute *maps = ARENA_ARRAY(em->arena, MlirAttribute, nin + 1);
	MlirAttribute *its = ARENA_ARRAY(em->arena, MlirAttribute, nv + 1);
	for (int i = 0; i < em->nins; i++) {
		opnd[i] = em->tensv[em->ins_e[i]->tensor->id];
		maps[i] = access_map(em, n, em->ins_e[i]);
	}
	if (!mlirValueIsNull(ext)) {
		opnd[em->nins] = ext;
		maps[em->nins] = range_map(em, nv, n->nfree, n->nred);
	}
	opnd[nin] = init;
	maps[nin] = range_map(em, nv, 0, n->nfree);
	MlirAttribute par = mlirAttributeParseGet(em->ctx, mlir_str(PARALLEL));
	MlirAttribute red = mlirAttributeParseGet(em->ctx, mlir_str(REDUCTION));
	for (int v = 0; v < nv; v++)
		its[v] = v < n->nfree ? par : red;
	int32_t seg[2] = {nin, 1};
	MlirNamedAttribute attrs[4] = {
	    mlir_named(em, "indexing_maps", mlirArrayAttrGet(em->ctx, nin + 1, maps)),
	    mlir_named(em, "iterator_types", mlirArrayAttrGet(em->ctx, nv, its)),
	    mlir_named(em, "operandSegmentSizes", mlirDenseI32ArrayGet(em->ctx, 2, seg)),
	    mlir_named(em, "attn.tensor", str_attr(em, n->out->name)),
	};
	MlirType tt = tensor_type(em, n->out, 0);
	MlirRegion r = mlirRegionCreate();
	mlirRegionAppendOwnedBlock(r, body);
	MlirOperationState st = mlirOperationStateGet(mlir_str("linalg.generic"), em->loc);
	mlirOperationStateAddOperands(&st, nin + 1, opnd);
	mlirOperationStateAddResults(&st, 1, &tt);
	mlirOperationStateAddAttributes(&st, 4, attrs);
	mlirOperationStateAddOwnedRegions(&st, 1, &r);
	MlirOperation op = mlirOperationCreate(&st);
	mlirBlockAppendOwnedOperation(em->cur, op);
	return mlirOperationGetResult(op, 0);
}

/* One node: operands at func level, then the body in its own block. */
static void build_node(MlirEm *em, const Node *n)
{
	int nv = n->nfree + n->nred;
	if (nv > 64 || n->out->rank != n->nfree) {
		mlir_fail(em, "node %d (%s): unsupported iteration space", n->id, n->out->name);
		return;
	}
	int cap = count_accesses(n->body) + count_accesses(n->filter) +
		  count_accesses(n->out->domain) + 1;
	em->nins = 0;
	em->ins_e = ARENA_ARRAY(em->arena, const Expr *, cap);
	em->ins_v = ARENA_ARRAY(em->arena, MlirValue, cap);
	collect_ins(em, n, n->body);
	collect_ins(em, n, n->filter);
	collect_ins(em, n, n->out->domain);
	MlirValue init = node_init(em, n);
	MlirValue ext = extent_operand(em, n);
	MlirBlock body = body_block(em, n, ext);
	em->node = n, em->bblock = body, em->bfront = 0, em->cur = body;
	em->var64 = ARENA_ARRAY(em->arena, MlirValue, nv + 1);
	em->varidx = ARENA_ARRAY(em->arena, MlirValue, nv + 1);
	MlirValue acc = mlirBlockGetArgument(body, mlirBlockGetNumArguments(body) - 1);
	MlirValue y = node_body(em, n, acc);
	mlir_op0(em, "linalg.yield", 1, &y);
	em->node = NULL, em->cur = em->fblock;
	em->tensv[n->out->id] = make_generic(em, n, ext, init, body);
	em->nins = 0;
}

/* ---- funcs --------------------------------------------------------------- */

/* Argument types in order: dims (index), params (scalars), inputs, then
** with memref_io the outputs; names[] gets each one's source name. */
static int func_args(MlirEm *em, const Cascade *c, int memref_io, MlirType *ty,
		     MlirAttribute *names)
{
	int k = 0;
	for (int i = 0; i < c->dims.n; i++) {
		names[k] = str_attr(em, ((Dim *)c->dims.v[i])->name);
		ty[k++] = em->idx;
	}
	for (int i = 0; i < c->params.n; i++) {
		Param *p = c->params.v[i];
		names[k] = str_attr(em, p->name);
		ty[k++] = mlir_vtype(em, p->type == VT_INT ? VT_INT : VT_FLOAT);
	}
	for (int pass = 0; pass < 1 + memref_io; pass++)
		for (int i = 0; i < c->tensors.n; i++) {
			Tensor *t = c->tensors.v[i];
			if (t->kind == (pass ? TK_OUT : TK_IN)) {
				names[k] = str_attr(em, t->name);
				ty[k++] = tensor_type(em, t, memref_io);
			}
		}
	return k;
}

/* With memref_io, inputs enter as bufferization.to_tensor (restrict: the
** caller's buffers alias nothing else). */
static void bind_args(MlirEm *em, const Cascade *c, int memref_io)
{
	int k = 0;
	for (int i = 0; i < c->dims.n; i++)
		em->dimv[i] = mlirBlockGetArgument(em->fblock, k++);
	for (int i = 0; i < c->params.n; i++)
		em->paramv[i] = mlirBlockGetArgument(em->fblock, k++);
	for (int i = 0; i < c->tensors.n; i++) {
		Tensor *t = c->tensors.v[i];
		if (t->kind != TK_IN)
			continue;
		MlirValue a = mlirBlockGetArgument(em->fblock, k++);
		if (memref_io) {
			MlirNamedAttribute r = mlir_named(em, "restrict", mlirUnitAttrGet(em->ctx));
			MlirType tt = tensor_type(em, t, 0);
			a = mlir_op1(em, "bufferization.to_tensor", 1, &a, tt, 1, &r);
		}
		em->tensv[i] = a;
	}
}

/* An output no node defines is all absent: zeros. */
static MlirValue out_value(MlirEm *em, const Tensor *t)
{
	if (!mlirValueIsNull(em->tensv[t->id]))
		return em->tensv[t->id];
	Node n = {.out = (Tensor *)t, .red = RED_NONE};
	return node_init(em, &n);
}

/* Outputs are returned, or with memref_io written into the caller's
** buffers by bufferization.materialize_in_destination. */
static void func_return(MlirEm *em, const Cascade *c, int memref_io)
{
	int nout = 0, k = c->dims.n + c->params.n;
	MlirValue *res = ARENA_ARRAY(em->arena, MlirValue, c->tensors.n + 1);
	for (int i = 0; i < c->tensors.n; i++)
		k += ((Tensor *)c->tensors.v[i])->kind == TK_IN;
	for (int i = 0; i < c->tensors.n; i++) {
		Tensor *t = c->tensors.v[i];
		if (t->kind != TK_OUT)
			continue;
		MlirValue v = out_value(em, t);
		if (!memref_io) {
			res[nout++] = v;
			continue;
		}
		MlirValue opnd[2] = {v, mlirBlockGetArgument(em->fblock, k++)};
		MlirNamedAttribute a[2] = {mlir_named(em, "restrict", mlirUnitAttrGet(em->ctx)),
					   mlir_named(em, "writable", mlirUnitAttrGet(em->ctx))};
		mlir_op(em, "bufferization.materialize_in_destination", 2, opnd, 0, NULL, 2, a);
	}
	mlir_op0(em, "func.return", nout, res);
}

/* Result types: the outputs as tensors (none with memref_io). */
static int func_results(MlirEm *em, const Cascade *c, int memref_io, MlirType *ty)
{
	int n = 0;
	for (int i = 0; i < c->tensors.n && !memref_io; i++) {
		Tensor *t = c->tensors.v[i];
		if (t->kind == TK_OUT)
			ty[n++] = tensor_type(em, t, 0);
	}
	return n;
}

/* arg_attrs carry the source names ({attn.name = "Q"}) since MLIR 19's C
** API cannot name block arguments. */
static MlirAttribute arg_attrs(MlirEm *em, int na, const MlirAttribute *names)
{
	MlirAttribute *d = ARENA_ARRAY(em->arena, MlirAttribute, na + 1);
	for (int i = 0; i < na; i++) {
		MlirNamedAttribute a = mlir_named(em, "attn.name", names[i]);
		d[i] = mlirDictionaryAttrGet(em->ctx, 1, &a);
	}
	return mlirArrayAttrGet(em->ctx, na, d);
}

/* Sets up the per-cascade value tables and the entry block. */
static void func_begin(MlirEm *em, const Cascade *c, int na, const MlirType *ty)
{
	em->c = c;
	em->dimv = ARENA_ARRAY(em->arena, MlirValue, c->dims.n + 1);
	em->dim64 = ARENA_ARRAY(em->arena, MlirValue, c->dims.n + 1);
	em->paramv = ARENA_ARRAY(em->arena, MlirValue, c->params.n + 1);
	em->tensv = ARENA_ARRAY(em->arena, MlirValue, c->tensors.n + 1);
	MlirLocation *lo = ARENA_ARRAY(em->arena, MlirLocation, na + 1);
	for (int i = 0; i < na; i++)
		lo[i] = em->loc;
	em->fblock = mlirBlockCreate(na, ty, lo);
	em->ffront = 0;
	em->cur = em->fblock;
	em->node = NULL;
}

/* The body is built into a detached block first, then wrapped in the
** func.func op (whose type needs the argument and result lists). */
static void build_func(MlirEm *em, MlirBlock modbody, const Cascade *c, int memref_io)
{
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->pack) {
			mlir_fail(
			    em,
			    "'%s' is written packed at offsets '%s', a scatter the linalg "
			    "interchange does not express yet (--engine interp or cpu runs it)",
			    t->name, t->pack->table->name);
			return;
		}
	}
	int nmax = c->dims.n + c->params.n + c->tensors.n + 1;
	MlirType *ty = ARENA_ARRAY(em->arena, MlirType, nmax);
	MlirType *rt = ARENA_ARRAY(em->arena, MlirType, nmax);
	MlirAttribute *names = ARENA_ARRAY(em->arena, MlirAttribute, nmax);
	int na = func_args(em, c, memref_io, ty, names);
	int nr = func_results(em, c, memref_io, rt);
	func_begin(em, c, na, ty);
	bind_args(em, c, memref_io);
	for (int i = 0; i < c->nodes.n; i++)
		build_node(em, c->nodes.v[i]);
	func_return(em, c, memref_io);

	MlirType fty = mlirFunctionTypeGet(em->ctx, na, ty, nr, rt);
	MlirNamedAttribute attrs[4] = {
	    mlir_named(em, "sym_name", str_attr(em, c->name)),
	    mlir_named(em, "function_type", mlirTypeAttrGet(fty)),
	    mlir_named(em, "llvm.emit_c_interface", mlirUnitAttrGet(em->ctx)),
	    mlir_named(em, "arg_attrs", arg_attrs(em, na, names)),
	};
	MlirRegion r = mlirRegionCreate();
	mlirRegionAppendOwnedBlock(r, em->fblock);
	MlirOperationState st = mlirOperationStateGet(mlir_str("func.func"), em->loc);
	mlirOperationStateAddAttributes(&st, 4, attrs);
	mlirOperationStateAddOwnedRegions(&st, 1, &r);
	mlirBlockAppendOwnedOperation(modbody, mlirOperationCreate(&st));
}

/* Types are made once per build; scratch memory lives in one arena. */
int mlir_build_module(MlirContext ctx, MlirModule m, const Cascade *const *cs, int ncs, int use_f64,
		      int memref_io, char *err, size_t errlen)
{
	Arena arena;
	arena_init(&arena);
	MlirEm em = {.ctx = ctx,
		     .loc = mlirLocationUnknownGet(ctx),
		     .arena = &arena,
		     .use_f64 = use_f64,
		     .err = err,
		     .errlen = errlen};
	em.ft = use_f64 ? mlirF64TypeGet(ctx) : mlirF32TypeGet(ctx);
	em.i64 = mlirIntegerTypeGet(ctx, 64);
	em.i32 = mlirIntegerTypeGet(ctx, 32);
	em.i1 = mlirIntegerTypeGet(ctx, 1);
	em.idx = mlirIndexTypeGet(ctx);
	MlirBlock body = mlirModuleGetBody(m);
	for (int i = 0; i < ncs; i++)
		build_func(&em, body, cs[i], memref_io);
	arena_free(&arena);
	return em.failed != 0;
}

/* ---- printing ------------------------------------------------------------ */

/* mlirOperationPrint and mlirDiagnosticPrint stream text in pieces. */
static void print_to_file(MlirStringRef s, void *ud)
{
	fwrite(s.data, 1, s.length, (FILE *)ud);
}

/* Verifier messages go to errout, with their location. */
static MlirLogicalResult diag_to_file(MlirDiagnostic d, void *ud)
{
	FILE *f = ud;
	fputs("attnc: internal error: MLIR: ", f);
	mlirDiagnosticPrint(d, print_to_file, f);
	fputc('\n', f);
	return mlirLogicalResultSuccess();
}

/* One context per call: build, verify, print, destroy. */
int mlir_emit_program(FILE *out, FILE *errout, const Program *p, int use_f64)
{
	char err[256] = "";
	MlirContext ctx = mlir_context_new();
	mlirContextAttachDiagnosticHandler(ctx, diag_to_file, errout, NULL);
	MlirModule m = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
	int rc = mlir_build_module(ctx, m, (const Cascade *const *)p->cascades.v, p->cascades.n,
				   use_f64, 0, err, sizeof err);
	if (rc)
		fprintf(errout, "attnc: cannot express in MLIR: %s\n", err);
	else if (!mlirOperationVerify(mlirModuleGetOperation(m)))
		rc = 1;
	else {
		mlirOperationPrint(mlirModuleGetOperation(m), print_to_file, out);
		fputc('\n', out);
	}
	mlirModuleDestroy(m);
	mlirContextDestroy(ctx);
	return rc;
}
