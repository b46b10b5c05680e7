/*
** lowering/gpu/tileclass.c: the tile classes of masks. A filter is tested
** by interval arithmetic over the tile's box (the CTA's query rows, the
** tile's keys, data ranges over them): "always" and "never" predicates,
** voted over the warp where a test read a lane's own key range.
*/
#include "gpu.h"

/* x with s64 bounds, for arithmetic and for comparison with s64 bounds. */
static GpuInterval wide(KernelGen *g, GpuInterval x)
{
	if (!x.ok || !x.w32)
		return x;
	PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_CVT, ".s64.s32", po_r(lo), po_r(x.lo));
	gpu_op2(g, PTX_CVT, ".s64.s32", po_r(hi), po_r(x.hi));
	return (GpuInterval){lo, hi, 1, 0};
}

static int positive(const Expr *e)
{
	return (e->kind == EX_INT && e->ival > 0) || e->kind == EX_DIM;
}

static GpuInterval ival(KernelGen *g, const Expr *e)
{
	GpuInterval none = {{0, 0}, {0, 0}, 0, 0};
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM: {
		PReg v = gpu_expr(g, e);
		return (GpuInterval){v, v, 1, 0};
	}
	case EX_INDEX: {
		int k = gpu_index_kind(g, e->var);
		if (k == 'g') {
			PReg v = gpu_index_value(g, e->var);
			return (GpuInterval){v, v, 1, 0};
		}
		PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
		if (k == 'q' && g->warp_rows.on) {
			gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_r(g->warp_rows.q0));
			gpu_op2(g, PTX_MOV, ".b64", po_r(hi), po_r(g->warp_rows.q1));
		} else if (k == 'q') {
			gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_r(g->q0));
			gpu_op3(g, PTX_ADD, ".s64", po_r(hi), po_r(g->q0), po_i(g->cta_rows));
			gpu_op3(g, PTX_MIN, ".s64", po_r(hi), po_r(hi), po_r(g->qext));
			gpu_op3(g, PTX_SUB, ".s64", po_r(hi), po_r(hi), po_i(1));
		} else if (k == 's') {
			gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_r(g->j0));
			gpu_op3(g, PTX_SUB, ".s64", po_r(hi), po_r(g->j1), po_i(1));
		} else {
			return none;
		}
		return (GpuInterval){lo, hi, 1, 0};
	}
	case EX_ACCESS: {
		if (e->type != VT_INT || e->tensor->def)
			return none;
		int k = gpu_read_range(g, e);
		if (k == 'q' || k == 's')
			return gpu_range_read(g, e, k);
		for (int i = 0; i < e->nargs; i++) {
			GpuInterval x = ival(g, e->args[i]);
			if (!x.ok || x.lo.n != x.hi.n || x.lo.cls != x.hi.cls)
				return none;
		}
		PReg v = gpu_load(g, e->tensor, e->args);
		return (GpuInterval){v, v, 1, 0};
	}
	case EX_UNOP: {
		if (e->op != OP_NEG)
			return none;
		GpuInterval x = wide(g, ival(g, e->args[0]));
		if (!x.ok)
			return none;
		PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_NEG, ".s64", po_r(lo), po_r(x.hi));
		gpu_op2(g, PTX_NEG, ".s64", po_r(hi), po_r(x.lo));
		return (GpuInterval){lo, hi, 1, 0};
	}
	case EX_BINOP: {
		if (e->type != VT_INT)
			return none;
		GpuInterval l = wide(g, ival(g, e->args[0])), r = wide(g, ival(g, e->args[1]));
		if (!l.ok || !r.ok)
			return none;
		PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
		switch (e->op) {
		case OP_ADD:
			gpu_op3(g, PTX_ADD, ".s64", po_r(lo), po_r(l.lo), po_r(r.lo));
			gpu_op3(g, PTX_ADD, ".s64", po_r(hi), po_r(l.hi), po_r(r.hi));
			break;
		case OP_SUB:
			gpu_op3(g, PTX_SUB, ".s64", po_r(lo), po_r(l.lo), po_r(r.hi));
			gpu_op3(g, PTX_SUB, ".s64", po_r(hi), po_r(l.hi), po_r(r.lo));
			break;
		case OP_MUL: {
			PReg p[4];
			PReg ls[2] = {l.lo, l.hi}, rs[2] = {r.lo, r.hi};
			for (int k = 0; k < 4; k++) {
				p[k] = gpu_reg(g, PC_B64);
				gpu_op3(g, PTX_MUL, ".lo.s64", po_r(p[k]), po_r(ls[k >> 1]),
					po_r(rs[k & 1]));
			}
			gpu_op3(g, PTX_MIN, ".s64", po_r(lo), po_r(p[0]), po_r(p[1]));
			gpu_op3(g, PTX_MIN, ".s64", po_r(lo), po_r(lo), po_r(p[2]));
			gpu_op3(g, PTX_MIN, ".s64", po_r(lo), po_r(lo), po_r(p[3]));
			gpu_op3(g, PTX_MAX, ".s64", po_r(hi), po_r(p[0]), po_r(p[1]));
			gpu_op3(g, PTX_MAX, ".s64", po_r(hi), po_r(hi), po_r(p[2]));
			gpu_op3(g, PTX_MAX, ".s64", po_r(hi), po_r(hi), po_r(p[3]));
			break;
		}
		case OP_DIV:
			if (!positive(e->args[1]))
				return none;
			lo = gpu_floordiv(g, l.lo, r.lo, 0);
			hi = gpu_floordiv(g, l.hi, r.lo, 0);
			break;
		case OP_MOD:
			if (!positive(e->args[1]))
				return none;
			gpu_op2(g, PTX_MOV, ".b64", po_r(lo), po_i(0));
			gpu_op3(g, PTX_SUB, ".s64", po_r(hi), po_r(r.lo), po_i(1));
			break;
		case OP_MAX:
		case OP_MIN:
			gpu_op3(g, e->op == OP_MAX ? PTX_MAX : PTX_MIN, ".s64", po_r(lo),
				po_r(l.lo), po_r(r.lo));
			gpu_op3(g, e->op == OP_MAX ? PTX_MAX : PTX_MIN, ".s64", po_r(hi),
				po_r(l.hi), po_r(r.hi));
			break;
		default: return none;
		}
		return (GpuInterval){lo, hi, 1, 0};
	}
	default: return none;
	}
}

/* setp.CMP.TY d, x, y: tri's comparisons, in the width of their operands. */
static void setp(KernelGen *g, PReg d, const char *cmp, const char *ty, PReg x, PReg y)
{
	gpu_op3(g, PTX_SETP, arena_printf(g->a, ".%s.%s", cmp, ty), po_r(d), po_r(x), po_r(y));
}

/* always/never predicates of a condition over the tile box. Two data
** ranges compare in s32 (the i32 data's own width), anything else in s64. */
static void tri(KernelGen *g, const Expr *e, PReg *al, PReg *ne)
{
	if (e->kind == EX_BINOP && (e->op == OP_AND || e->op == OP_OR)) {
		PReg a1, n1, a2, n2;
		tri(g, e->args[0], &a1, &n1);
		tri(g, e->args[1], &a2, &n2);
		*al = gpu_reg(g, PC_PRED), *ne = gpu_reg(g, PC_PRED);
		int and = e->op == OP_AND;
		gpu_op3(g, and? PTX_AND : PTX_OR, ".pred", po_r(*al), po_r(a1), po_r(a2));
		gpu_op3(g, and? PTX_OR : PTX_AND, ".pred", po_r(*ne), po_r(n1), po_r(n2));
		return;
	}
	if (e->kind == EX_BOOL) {
		*al = gpu_pconst(g, (int)e->ival), *ne = gpu_pconst(g, !e->ival);
		return;
	}
	if (e->kind == EX_BINOP && e->op >= OP_LT && e->op <= OP_NE && e->args[0]->type == VT_INT) {
		GpuInterval a = ival(g, e->args[0]), b = ival(g, e->args[1]);
		if (a.ok && b.ok) {
			const char *ty = "s32";
			if (!a.w32 || !b.w32)
				a = wide(g, a), b = wide(g, b), ty = "s64";
			*al = gpu_reg(g, PC_PRED), *ne = gpu_reg(g, PC_PRED);
			switch (e->op) {
			case OP_LT: /* always a.hi < b.lo, never a.lo >= b.hi */
				setp(g, *al, "lt", ty, a.hi, b.lo);
				setp(g, *ne, "ge", ty, a.lo, b.hi);
				return;
			case OP_LE:
				setp(g, *al, "le", ty, a.hi, b.lo);
				setp(g, *ne, "gt", ty, a.lo, b.hi);
				return;
			case OP_GT:
				setp(g, *al, "gt", ty, a.lo, b.hi);
				setp(g, *ne, "le", ty, a.hi, b.lo);
				return;
			case OP_GE:
				setp(g, *al, "ge", ty, a.lo, b.hi);
				setp(g, *ne, "lt", ty, a.hi, b.lo);
				return;
			case OP_EQ:
			case OP_NE: {
				/* never equal when the ranges are disjoint; always when both
				** are the same single point */
				PReg d1 = gpu_reg(g, PC_PRED), d2 = gpu_reg(g, PC_PRED),
				     s1 = gpu_reg(g, PC_PRED), s2 = gpu_reg(g, PC_PRED),
				     s3 = gpu_reg(g, PC_PRED);
				setp(g, d1, "lt", ty, a.hi, b.lo);
				setp(g, d2, "lt", ty, b.hi, a.lo);
				gpu_op3(g, PTX_OR, ".pred", po_r(d1), po_r(d1), po_r(d2));
				setp(g, s1, "eq", ty, a.lo, a.hi);
				setp(g, s2, "eq", ty, b.lo, b.hi);
				setp(g, s3, "eq", ty, a.lo, b.lo);
				gpu_op3(g, PTX_AND, ".pred", po_r(s1), po_r(s1), po_r(s2));
				gpu_op3(g, PTX_AND, ".pred", po_r(s1), po_r(s1), po_r(s3));
				if (e->op == OP_EQ)
					*al = s1, *ne = d1;
				else
					*al = d1, *ne = s1;
				return;
			}
			default: break;
			}
		}
	}
	*al = gpu_pconst(g, 0), *ne = gpu_pconst(g, 0);
}

int gpu_range(KernelGen *g, const Expr *e, PReg *lo, PReg *hi)
{
	GpuInterval x =
	    e->type == VT_INT ? wide(g, ival(g, e)) : (GpuInterval){{0, 0}, {0, 0}, 0, 0};
	*lo = x.lo, *hi = x.hi;
	return x.ok;
}

void gpu_tile_class(KernelGen *g, int node, PReg *always, PReg *never)
{
	const Node *n = g->p->c->nodes.v[node];
	g->node = node;
	if (!n->filter) {
		*always = gpu_pconst(g, 1), *never = gpu_pconst(g, 0);
		return;
	}
	g->lane_local = 0;
	tri(g, n->filter, always, never);
	if (!g->lane_local)
		return;
	PReg al = gpu_reg(g, PC_PRED), ne = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_VOTE, ".all.pred", po_r(al), po_r(*always), po_i(-1));
	gpu_op3(g, PTX_VOTE, ".all.pred", po_r(ne), po_r(*never), po_i(-1));
	*always = al, *never = ne;
}
