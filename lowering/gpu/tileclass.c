/*
** lowering/gpu/tileclass.c: the tile classes of masks. A filter is tested
** by interval arithmetic over the tile's box (the CTA's query rows, the
** tile's keys, data ranges over them): "always" and "never" predicates,
** voted over the warp where a test read a lane's own key range.
*/
#include "../../compiler/intervals.h"
#include "gpu.h"

/* compiler/intervals.c decides; these build its values as PTX: bounds are
** s64 registers (s32 for a data range, marked narrow), a tri-state two
** predicates (always, never). */

static IvVal reg(PReg r)
{
	return (IvVal){.u = (uint64_t)r.cls << 32 | r.n};
}

static PReg preg(IvVal v)
{
	return (PReg){(uint8_t)(v.u >> 32), (uint32_t)v.u};
}

static Iv pt(PReg v)
{
	return (Iv){reg(v), reg(v), 1, 1, 0};
}

static Iv box(PReg lo, PReg hi)
{
	return (Iv){reg(lo), reg(hi), 1, 0, 0};
}

static const Iv none;

/* x with s64 bounds, for arithmetic and for comparison with s64 bounds. */
static Iv wide(void *ctx, Iv x)
{
	KernelGen *g = ctx;
	if (!x.ok || !x.narrow)
		return x;
	PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_CVT, ".s64.s32", po_r(lo), po_r(preg(x.lo)));
	gpu_op2(g, PTX_CVT, ".s64.s32", po_r(hi), po_r(preg(x.hi)));
	return box(lo, hi);
}

static Iv g_scalar(void *ctx, const Expr *e)
{
	return pt(gpu_expr(ctx, e));
}

/* A grid index is a point, but not the epilogue's own index in stage 1. */
static Iv g_grid(void *ctx, const Expr *e)
{
	if (gpu_index_kind(ctx, e->var) != 'g')
		return none;
	return pt(gpu_index_value(ctx, e->var));
}

/* The CTA's rows [q0, min(q0 + rows, qext) - 1], or the warp's own. */
static Iv g_rows(void *ctx, const Expr *e)
{
	KernelGen *g = ctx;
	(void)e;
	PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
	if (g->warp_rows.on) {
		gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_r(g->warp_rows.q0));
		gpu_op2(g, PTX_MOV, ".b64", po_r(hi), po_r(g->warp_rows.q1));
	} else {
		gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_r(g->q0));
		gpu_op3(g, PTX_ADD, ".s64", po_r(hi), po_r(g->q0), po_i(g->cta_rows));
		gpu_op3(g, PTX_MIN, ".s64", po_r(hi), po_r(hi), po_r(g->qext));
		gpu_op3(g, PTX_SUB, ".s64", po_r(hi), po_r(hi), po_i(1));
	}
	return box(lo, hi);
}

static Iv g_keys(void *ctx, const Expr *e)
{
	KernelGen *g = ctx;
	(void)e;
	PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_r(g->j0));
	gpu_op3(g, PTX_SUB, ".s64", po_r(hi), po_r(g->j1), po_i(1));
	return box(lo, hi);
}

/* Only input data can be read while classifying a tile. */
static Iv g_read_point(void *ctx, const Expr *e)
{
	if (e->tensor->def)
		return none;
	return pt(gpu_load(ctx, e->tensor, e->args));
}

static Iv g_read_range(void *ctx, const Expr *e)
{
	KernelGen *g = ctx;
	if (e->tensor->def)
		return none;
	int k = gpu_read_range(g, e);
	if (k != 'q' && k != 's')
		return none;
	GpuInterval x = gpu_range_read(g, e, k);
	if (!x.ok)
		return none;
	return (Iv){reg(x.lo), reg(x.hi), 1, 0, x.w32 ? 1 : 0};
}

static IvVal g_zero(void *ctx)
{
	PReg d = gpu_reg(ctx, PC_B64);
	gpu_op2(ctx, PTX_MOV, ".b64", po_r(d), po_i(0));
	return reg(d);
}

static IvVal g_dec(void *ctx, IvVal x)
{
	PReg d = gpu_reg(ctx, PC_B64);
	gpu_op3(ctx, PTX_SUB, ".s64", po_r(d), po_r(preg(x)), po_i(1));
	return reg(d);
}

static IvVal g_neg(void *ctx, IvVal x)
{
	PReg d = gpu_reg(ctx, PC_B64);
	gpu_op2(ctx, PTX_NEG, ".s64", po_r(d), po_r(preg(x)));
	return reg(d);
}

/* Division by a divisor the launcher made magic parameters for, or a
** power of two, without ptxas's 64-bit division (divide.c); in 32 bits
** where the dividend is small (the bounds of a small expression are
** values it takes, or quotients and remainders of those). */
static IvVal g_divide(void *ctx, IvVal x, IvVal y, const Expr *dividend, const Expr *divisor)
{
	return reg(gpu_floordiv(ctx, preg(x), preg(y), divisor, 0, gpu_small_dividend(dividend)));
}

static IvVal g_arith(void *ctx, Op op, IvVal x, IvVal y)
{
	KernelGen *g = ctx;
	if (op == OP_DIV)
		return reg(gpu_floordiv(g, preg(x), preg(y), NULL, 0, 0));
	PtxOpcode pop = op == OP_ADD   ? PTX_ADD
			: op == OP_SUB ? PTX_SUB
			: op == OP_MUL ? PTX_MUL
			: op == OP_MAX ? PTX_MAX
				       : PTX_MIN;
	PReg d = gpu_reg(g, PC_B64);
	gpu_op3(g, pop, op == OP_MUL ? ".lo.s64" : ".s64", po_r(d), po_r(preg(x)), po_r(preg(y)));
	return reg(d);
}

static IvVal minmax4(KernelGen *g, PtxOpcode op, const IvVal v[4])
{
	PReg d = gpu_reg(g, PC_B64);
	gpu_op3(g, op, ".s64", po_r(d), po_r(preg(v[0])), po_r(preg(v[1])));
	gpu_op3(g, op, ".s64", po_r(d), po_r(d), po_r(preg(v[2])));
	gpu_op3(g, op, ".s64", po_r(d), po_r(d), po_r(preg(v[3])));
	return reg(d);
}

static IvVal g_min4(void *ctx, const IvVal v[4])
{
	return minmax4(ctx, PTX_MIN, v);
}

static IvVal g_max4(void *ctx, const IvVal v[4])
{
	return minmax4(ctx, PTX_MAX, v);
}

/* setp.CMP.TY d, x, y: the comparisons of bounds, in s32 where both are
** data ranges (the i32 data's own width), else in s64. */
static IvVal g_test(void *ctx, Op cmp, IvVal x, IvVal y, int narrow)
{
	KernelGen *g = ctx;
	static const char *name[] = {[OP_LT] = "lt", [OP_LE] = "le", [OP_GT] = "gt",
				     [OP_GE] = "ge", [OP_EQ] = "eq", [OP_NE] = "ne"};
	PReg d = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, arena_printf(g->a, ".%s.%s", name[cmp], narrow ? "s32" : "s64"),
		po_r(d), po_r(preg(x)), po_r(preg(y)));
	return reg(d);
}

/* c ? x : y of two s64 values. */
static IvVal g_select(void *ctx, IvVal c, IvVal x, IvVal y)
{
	PReg d = gpu_reg(ctx, PC_B64);
	gpu_op4(ctx, PTX_SELP, ".b64", po_r(d), po_r(preg(x)), po_r(preg(y)), po_r(preg(c)));
	return reg(d);
}

static IvVal g_bconst(void *ctx, int v)
{
	return reg(gpu_pconst(ctx, v));
}

static IvVal logic(KernelGen *g, PtxOpcode op, IvVal x, IvVal y)
{
	PReg d = gpu_reg(g, PC_PRED);
	gpu_op3(g, op, ".pred", po_r(d), po_r(preg(x)), po_r(preg(y)));
	return reg(d);
}

static IvVal g_band(void *ctx, IvVal x, IvVal y)
{
	return logic(ctx, PTX_AND, x, y);
}

static IvVal g_bor(void *ctx, IvVal x, IvVal y)
{
	return logic(ctx, PTX_OR, x, y);
}

static const IvOps gpu_ops = {
    .scalar = g_scalar,
    .grid = g_grid,
    .rows = g_rows,
    .keys = g_keys,
    .read_point = g_read_point,
    .read_range = g_read_range,
    .widen = wide,
    .zero = g_zero,
    .dec = g_dec,
    .neg = g_neg,
    .arith = g_arith,
    .divide = g_divide,
    .select = g_select,
    .min4 = g_min4,
    .max4 = g_max4,
    .test = g_test,
    .bconst = g_bconst,
    .band = g_band,
    .bor = g_bor,
};

int gpu_range(KernelGen *g, const Expr *e, PReg *lo, PReg *hi)
{
	Iv x = e->type == VT_INT ? wide(g, iv_bound(&gpu_ops, g, g->p, g->node, e)) : none;
	*lo = preg(x.lo), *hi = preg(x.hi);
	return x.ok;
}

void gpu_tile_class(KernelGen *g, int node, PReg *always, PReg *never)
{
	gpu_expr_class(g, node, ((const Node *)g->p->c->nodes.v[node])->filter, always, never);
}

void gpu_expr_class(KernelGen *g, int node, const Expr *e, PReg *always, PReg *never)
{
	g->node = node;
	if (!e) {
		*always = gpu_pconst(g, 1), *never = gpu_pconst(g, 0);
		return;
	}
	g->lane_local = 0;
	IvTri t = iv_class(&gpu_ops, g, g->p, node, e);
	*always = preg(t.always), *never = preg(t.never);
	if (!g->lane_local)
		return;
	PReg al = gpu_reg(g, PC_PRED), ne = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_VOTE, ".all.pred", po_r(al), po_r(*always), po_i(-1));
	gpu_op3(g, PTX_VOTE, ".all.pred", po_r(ne), po_r(*never), po_i(-1));
	*always = al, *never = ne;
}
