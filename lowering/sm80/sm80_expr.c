/*
** lowering/sm80/sm80_expr.c: cascade expressions as PTX.
** Floats are f32, integers s64 (b64 registers), booleans predicates. The
** element in scope (query row, key column or value index, tile element)
** is set by the kernel before each evaluation. exp and log go through
** ex2/lg2 with log2(e) folded in, as FlashAttention does.
*/
#include <math.h>

#include "sm80.h"

static const float LOG2E = 1.4426950408889634f, LN2 = 0.6931471805599453f;

static PReg R(Gen *g, PtxCls c)
{
	return ptx_reg(g->f, c);
}

static void E(Gen *g, PtxOpcode op, const char *m, int n, PtxOpnd a, PtxOpnd b, PtxOpnd c,
	      PtxOpnd d)
{
	PtxOpnd o[4] = {a, b, c, d};
	ptx_emit(g->f, op, m, n, o);
}

#define E2(op, m, a, b)       E(g, op, m, 2, a, b, (PtxOpnd){0}, (PtxOpnd){0})
#define E3(op, m, a, b, c)    E(g, op, m, 3, a, b, c, (PtxOpnd){0})
#define E4(op, m, a, b, c, d) E(g, op, m, 4, a, b, c, d)

static PReg fconst(Gen *g, float v)
{
	PReg r = R(g, PC_F32);
	E2(PTX_MOV, ".f32", po_r(r), po_f(v));
	return r;
}

static PReg iconst(Gen *g, long v)
{
	PReg r = R(g, PC_B64);
	E2(PTX_MOV, ".b64", po_r(r), po_i(v));
	return r;
}

static PReg pconst(Gen *g, int v)
{
	PReg z = R(g, PC_B32), p = R(g, PC_PRED);
	E2(PTX_MOV, ".b32", po_r(z), po_i(0));
	E3(PTX_SETP, v ? ".eq.s32" : ".ne.s32", po_r(p), po_r(z), po_i(0));
	return p;
}

/* Which of the kernel's index kinds variable v of the node in scope is. */
static int kind_of(Gen *g, int v)
{
	int c = g->p->cls[g->node][v];
	if (c == g->s->scls)
		return 's';
	if (c == g->s->qcls)
		return 'q';
	if (c == g->s->ecls && g->stage == 1)
		return 'e';
	if (g->p->classes[c].grid)
		return 'g';
	return 'x';
}

static PReg index_value(Gen *g, int v)
{
	switch (kind_of(g, v)) {
	case 'q': return g->row;
	case 's':
	case 'e': return g->col;
	case 'g': return g->grid[g->p->cls[g->node][v]];
	default: return iconst(g, 0); /* not reachable for shapes sm80_shape accepts */
	}
}

PReg sm80_addr(Gen *g, const Tensor *t, Expr *const *args)
{
	PReg off = iconst(g, 0);
	for (int k = 0; k < t->rank; k++) {
		PReg x = sm80_expr(g, args[k]);
		PReg n = R(g, PC_B64);
		E4(PTX_MAD, ".lo.s64", po_r(n), po_r(x), po_r(g->tstride[t->id][k]), po_r(off));
		off = n;
	}
	int es = t->dtype == DT_F32 || t->dtype == DT_I32 ? 4 : t->dtype == DT_BOOL ? 1 : 2;
	PReg a = R(g, PC_B64);
	E4(PTX_MAD, ".lo.s64", po_r(a), po_r(off), po_i(es), po_r(g->tptr[t->id]));
	return a;
}

/* A read of an input tensor, widened to the expression's type. */
PReg sm80_load(Gen *g, const Tensor *t, Expr *const *args)
{
	PReg a = sm80_addr(g, t, args);
	PReg r;
	switch (t->dtype) {
	case DT_F32:
		r = R(g, PC_F32);
		E2(PTX_LD, ".global.nc.f32", po_r(r), po_mem(a, 0));
		return r;
	case DT_BF16:
	case DT_F16: {
		PReg h = R(g, PC_B16);
		E2(PTX_LD, ".global.nc.b16", po_r(h), po_mem(a, 0));
		r = R(g, PC_F32);
		E2(PTX_CVT, t->dtype == DT_BF16 ? ".f32.bf16" : ".f32.f16", po_r(r), po_r(h));
		return r;
	}
	case DT_I32: {
		PReg w = R(g, PC_B32);
		E2(PTX_LD, ".global.nc.s32", po_r(w), po_mem(a, 0));
		r = R(g, PC_B64);
		E2(PTX_CVT, ".s64.s32", po_r(r), po_r(w));
		return r;
	}
	case DT_BOOL: {
		PReg h = R(g, PC_B16);
		E2(PTX_LD, ".global.nc.u8", po_r(h), po_mem(a, 0));
		r = R(g, PC_PRED);
		E3(PTX_SETP, ".ne.u16", po_r(r), po_r(h), po_i(0));
		return r;
	}
	default: return fconst(g, NAN);
	}
}

/* Values of computed tensors live in registers: tile values per element,
** running values per row, value-index results per accumulator element. */
static PReg computed(Gen *g, const Expr *e)
{
	int id = e->tensor->def->id;
	switch (g->s->n[id].kind) {
	case SN_GEMM1:
	case SN_MAP: return g->tile[id][g->elem];
	case SN_GEMM2:
	case SN_EPI_ELEM: return g->acc[id][g->elem];
	default: return g->rowv[id][g->half];
	}
}

static PReg ptx_floordiv(Gen *g, PReg a, PReg b, int mod)
{
	PReg q = R(g, PC_B64), r = R(g, PC_B64);
	E3(PTX_DIV, ".s64", po_r(q), po_r(a), po_r(b));
	E3(PTX_REM, ".s64", po_r(r), po_r(a), po_r(b));
	PReg nz = R(g, PC_PRED), sa = R(g, PC_PRED), sb = R(g, PC_PRED), adj = R(g, PC_PRED);
	E3(PTX_SETP, ".ne.s64", po_r(nz), po_r(r), po_i(0));
	E3(PTX_SETP, ".lt.s64", po_r(sa), po_r(mod ? r : a), po_i(0));
	E3(PTX_SETP, ".lt.s64", po_r(sb), po_r(b), po_i(0));
	E3(PTX_XOR, ".pred", po_r(sa), po_r(sa), po_r(sb));
	E3(PTX_AND, ".pred", po_r(adj), po_r(nz), po_r(sa));
	if (mod) {
		E3(PTX_ADD, ".s64", po_r(r), po_r(r), po_r(b));
		ptx_guard(g->f, adj, 0);
		return r;
	}
	E3(PTX_SUB, ".s64", po_r(q), po_r(q), po_i(1));
	ptx_guard(g->f, adj, 0);
	return q;
}

static const char *cmp_name(Op op)
{
	switch (op) {
	case OP_LT: return "lt";
	case OP_LE: return "le";
	case OP_GT: return "gt";
	case OP_GE: return "ge";
	case OP_EQ: return "eq";
	default: return "ne";
	}
}

static PReg binop(Gen *g, const Expr *e)
{
	PReg l = sm80_expr(g, e->args[0]), r = sm80_expr(g, e->args[1]);
	VType t = e->args[0]->type;
	Op op = (Op)e->op;
	PReg d;
	if (op >= OP_LT && op <= OP_NE) {
		d = R(g, PC_PRED);
		if (t == VT_BOOL) {
			E3(PTX_XOR, ".pred", po_r(d), po_r(l), po_r(r));
			if (op == OP_EQ)
				E2(PTX_NOT, ".pred", po_r(d), po_r(d));
			return d;
		}
		const char *m =
		    arena_printf(g->a, ".%s.%s", cmp_name(op), t == VT_FLOAT ? "f32" : "s64");
		E3(PTX_SETP, m, po_r(d), po_r(l), po_r(r));
		return d;
	}
	if (op == OP_AND || op == OP_OR) {
		d = R(g, PC_PRED);
		E3(op == OP_AND ? PTX_AND : PTX_OR, ".pred", po_r(d), po_r(l), po_r(r));
		return d;
	}
	if (t == VT_INT) {
		if (op == OP_DIV || op == OP_MOD)
			return ptx_floordiv(g, l, r, op == OP_MOD);
		d = R(g, PC_B64);
		static const PtxOpcode iop[] = {[OP_ADD] = PTX_ADD,
						[OP_SUB] = PTX_SUB,
						[OP_MUL] = PTX_MUL,
						[OP_MAX] = PTX_MAX,
						[OP_MIN] = PTX_MIN};
		E3(iop[op], op == OP_MUL ? ".lo.s64" : ".s64", po_r(d), po_r(l), po_r(r));
		return d;
	}
	d = R(g, PC_F32);
	switch (op) {
	case OP_ADD: E3(PTX_ADD, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_SUB: E3(PTX_SUB, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_MUL: E3(PTX_MUL, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_DIV: E3(PTX_DIV, ".rn.f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_MAX: E3(PTX_MAX, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_MIN: E3(PTX_MIN, ".f32", po_r(d), po_r(l), po_r(r)); break;
	default: break;
	}
	return d;
}

/* b * -log2(e), once per row value within a tile body (the kernel clears
** the memo where row values change). */
static PReg neg_log2e(Gen *g, PReg b)
{
	for (int i = 0; i < g->nmemo; i++)
		if (g->memo_in[i].n == b.n && g->memo_in[i].cls == b.cls)
			return g->memo_out[i];
	PReg r = R(g, PC_F32);
	E3(PTX_MUL, ".f32", po_r(r), po_r(b), po_f(-LOG2E));
	if (g->nmemo < 16)
		g->memo_in[g->nmemo] = b, g->memo_out[g->nmemo++] = r;
	return r;
}

static PReg call(Gen *g, const Expr *e)
{
	const Expr *a0 = e->args[0];
	if (e->op == FN_EXP && a0->kind == EX_BINOP && a0->op == OP_SUB && a0->type == VT_FLOAT) {
		/* exp(a - b) = ex2(a * log2e - b * log2e): one FFMA per score, as
		** FlashAttention folds the max into the exponent */
		PReg a = sm80_expr(g, a0->args[0]), b = sm80_expr(g, a0->args[1]);
		PReg t = R(g, PC_F32), d = R(g, PC_F32);
		E4(PTX_FMA, ".rn.f32", po_r(t), po_r(a), po_f(LOG2E), po_r(neg_log2e(g, b)));
		E2(PTX_EX2, ".approx.ftz.f32", po_r(d), po_r(t));
		return d;
	}
	PReg x = sm80_expr(g, a0), d = R(g, PC_F32), t;
	switch ((Fn)e->op) {
	case FN_EXP:
		t = R(g, PC_F32);
		E3(PTX_MUL, ".f32", po_r(t), po_r(x), po_f(LOG2E));
		E2(PTX_EX2, ".approx.ftz.f32", po_r(d), po_r(t));
		break;
	case FN_EXP2: E2(PTX_EX2, ".approx.ftz.f32", po_r(d), po_r(x)); break;
	case FN_LOG:
		t = R(g, PC_F32);
		E2(PTX_LG2, ".approx.ftz.f32", po_r(t), po_r(x));
		E3(PTX_MUL, ".f32", po_r(d), po_r(t), po_f(LN2));
		break;
	case FN_LOG2: E2(PTX_LG2, ".approx.ftz.f32", po_r(d), po_r(x)); break;
	case FN_TANH: E2(PTX_TANH, ".approx.f32", po_r(d), po_r(x)); break;
	case FN_SIGMOID:
		t = R(g, PC_F32);
		E3(PTX_MUL, ".f32", po_r(t), po_r(x), po_f(-LOG2E));
		E2(PTX_EX2, ".approx.ftz.f32", po_r(t), po_r(t));
		E3(PTX_ADD, ".f32", po_r(t), po_r(t), po_f(1.0f));
		E2(PTX_RCP, ".approx.ftz.f32", po_r(d), po_r(t));
		break;
	case FN_SQRT: E2(PTX_SQRT, ".rn.f32", po_r(d), po_r(x)); break;
	case FN_RSQRT: E2(PTX_RSQRT, ".approx.ftz.f32", po_r(d), po_r(x)); break;
	case FN_ABS: E2(PTX_ABS, ".f32", po_r(d), po_r(x)); break;
	case FN_RELU: E3(PTX_MAX, ".f32", po_r(d), po_r(x), po_f(0.0f)); break;
	default: break;
	}
	return d;
}

PReg sm80_expr(Gen *g, const Expr *e)
{
	PReg d;
	switch (e->kind) {
	case EX_FLOAT: return fconst(g, (float)e->fval);
	case EX_INT: return iconst(g, e->ival);
	case EX_BOOL: return pconst(g, (int)e->ival);
	case EX_INDEX: return index_value(g, e->var);
	case EX_DIM: return e->dim->fixed ? iconst(g, e->dim->fixed) : g->dim[e->dim->id];
	case EX_PARAM:
		if (e->param->type == VT_FLOAT)
			return g->param[e->param->id];
		d = R(g, PC_B64);
		E2(PTX_CVT, ".s64.s32", po_r(d), po_r(g->param[e->param->id]));
		return d;
	case EX_ACCESS: return e->tensor->def ? computed(g, e) : sm80_load(g, e->tensor, e->args);
	case EX_UNOP: {
		PReg x = sm80_expr(g, e->args[0]);
		if (e->op == OP_NOT) {
			d = R(g, PC_PRED);
			E2(PTX_NOT, ".pred", po_r(d), po_r(x));
		} else if (e->type == VT_FLOAT) {
			d = R(g, PC_F32);
			E2(PTX_NEG, ".f32", po_r(d), po_r(x));
		} else {
			d = R(g, PC_B64);
			E2(PTX_NEG, ".s64", po_r(d), po_r(x));
		}
		return d;
	}
	case EX_BINOP: return binop(g, e);
	case EX_SELECT: {
		PReg c = sm80_expr(g, e->args[0]);
		PReg a = sm80_expr(g, e->args[1]), b = sm80_expr(g, e->args[2]);
		if (e->type == VT_BOOL) {
			PReg t1 = R(g, PC_PRED), t2 = R(g, PC_PRED), nc = R(g, PC_PRED);
			d = R(g, PC_PRED);
			E2(PTX_NOT, ".pred", po_r(nc), po_r(c));
			E3(PTX_AND, ".pred", po_r(t1), po_r(c), po_r(a));
			E3(PTX_AND, ".pred", po_r(t2), po_r(nc), po_r(b));
			E3(PTX_OR, ".pred", po_r(d), po_r(t1), po_r(t2));
			return d;
		}
		d = R(g, e->type == VT_FLOAT ? PC_F32 : PC_B64);
		E4(PTX_SELP, e->type == VT_FLOAT ? ".f32" : ".b64", po_r(d), po_r(a), po_r(b),
		   po_r(c));
		return d;
	}
	case EX_CALL: return call(g, e);
	case EX_CAST: {
		PReg x = sm80_expr(g, e->args[0]);
		d = R(g, PC_F32);
		if (e->args[0]->type == VT_BOOL)
			E4(PTX_SELP, ".f32", po_r(d), po_f(1.0f), po_f(0.0f), po_r(x));
		else if (e->args[0]->type == VT_INT)
			E2(PTX_CVT, ".rn.f32.s64", po_r(d), po_r(x));
		else
			return x;
		return d;
	}
	}
	return fconst(g, NAN);
}

/* ---- tile classes --------------------------------------------------------- */

typedef struct Ival {
	PReg lo, hi;
	int ok;
} Ival;

static int positive(const Expr *e)
{
	return (e->kind == EX_INT && e->ival > 0) || e->kind == EX_DIM;
}

static Ival ival(Gen *g, const Expr *e)
{
	Ival none = {{0, 0}, {0, 0}, 0};
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM: {
		PReg v = sm80_expr(g, e);
		return (Ival){v, v, 1};
	}
	case EX_INDEX: {
		int k = kind_of(g, e->var);
		if (k == 'g') {
			PReg v = index_value(g, e->var);
			return (Ival){v, v, 1};
		}
		PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
		if (k == 'q') {
			E2(PTX_MOV, ".b64", po_r(lo), po_r(g->q0));
			E3(PTX_ADD, ".s64", po_r(hi), po_r(g->q0), po_i(g->bm));
			E3(PTX_MIN, ".s64", po_r(hi), po_r(hi), po_r(g->qext));
			E3(PTX_SUB, ".s64", po_r(hi), po_r(hi), po_i(1));
		} else if (k == 's') {
			E2(PTX_MOV, ".b64", po_r(lo), po_r(g->j0));
			E3(PTX_SUB, ".s64", po_r(hi), po_r(g->j1), po_i(1));
		} else {
			return none;
		}
		return (Ival){lo, hi, 1};
	}
	case EX_ACCESS: {
		for (int i = 0; i < e->nargs; i++) {
			Ival x = ival(g, e->args[i]);
			if (!x.ok || x.lo.n != x.hi.n || x.lo.cls != x.hi.cls)
				return none;
		}
		if (e->type != VT_INT || e->tensor->def)
			return none;
		PReg v = sm80_load(g, e->tensor, e->args);
		return (Ival){v, v, 1};
	}
	case EX_UNOP: {
		if (e->op != OP_NEG)
			return none;
		Ival x = ival(g, e->args[0]);
		if (!x.ok)
			return none;
		PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
		E2(PTX_NEG, ".s64", po_r(lo), po_r(x.hi));
		E2(PTX_NEG, ".s64", po_r(hi), po_r(x.lo));
		return (Ival){lo, hi, 1};
	}
	case EX_BINOP: {
		if (e->type != VT_INT)
			return none;
		Ival l = ival(g, e->args[0]), r = ival(g, e->args[1]);
		if (!l.ok || !r.ok)
			return none;
		PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
		switch (e->op) {
		case OP_ADD:
			E3(PTX_ADD, ".s64", po_r(lo), po_r(l.lo), po_r(r.lo));
			E3(PTX_ADD, ".s64", po_r(hi), po_r(l.hi), po_r(r.hi));
			break;
		case OP_SUB:
			E3(PTX_SUB, ".s64", po_r(lo), po_r(l.lo), po_r(r.hi));
			E3(PTX_SUB, ".s64", po_r(hi), po_r(l.hi), po_r(r.lo));
			break;
		case OP_MUL: {
			PReg p[4];
			PReg ls[2] = {l.lo, l.hi}, rs[2] = {r.lo, r.hi};
			for (int k = 0; k < 4; k++) {
				p[k] = R(g, PC_B64);
				E3(PTX_MUL, ".lo.s64", po_r(p[k]), po_r(ls[k >> 1]),
				   po_r(rs[k & 1]));
			}
			E3(PTX_MIN, ".s64", po_r(lo), po_r(p[0]), po_r(p[1]));
			E3(PTX_MIN, ".s64", po_r(lo), po_r(lo), po_r(p[2]));
			E3(PTX_MIN, ".s64", po_r(lo), po_r(lo), po_r(p[3]));
			E3(PTX_MAX, ".s64", po_r(hi), po_r(p[0]), po_r(p[1]));
			E3(PTX_MAX, ".s64", po_r(hi), po_r(hi), po_r(p[2]));
			E3(PTX_MAX, ".s64", po_r(hi), po_r(hi), po_r(p[3]));
			break;
		}
		case OP_DIV:
			if (!positive(e->args[1]))
				return none;
			lo = ptx_floordiv(g, l.lo, r.lo, 0);
			hi = ptx_floordiv(g, l.hi, r.lo, 0);
			break;
		case OP_MOD:
			if (!positive(e->args[1]))
				return none;
			E2(PTX_MOV, ".b64", po_r(lo), po_i(0));
			E3(PTX_SUB, ".s64", po_r(hi), po_r(r.lo), po_i(1));
			break;
		case OP_MAX:
		case OP_MIN:
			E3(e->op == OP_MAX ? PTX_MAX : PTX_MIN, ".s64", po_r(lo), po_r(l.lo),
			   po_r(r.lo));
			E3(e->op == OP_MAX ? PTX_MAX : PTX_MIN, ".s64", po_r(hi), po_r(l.hi),
			   po_r(r.hi));
			break;
		default: return none;
		}
		return (Ival){lo, hi, 1};
	}
	default: return none;
	}
}

/* always/never predicates of a condition over the tile box. */
static void tri(Gen *g, const Expr *e, PReg *al, PReg *ne)
{
	if (e->kind == EX_BINOP && (e->op == OP_AND || e->op == OP_OR)) {
		PReg a1, n1, a2, n2;
		tri(g, e->args[0], &a1, &n1);
		tri(g, e->args[1], &a2, &n2);
		*al = R(g, PC_PRED), *ne = R(g, PC_PRED);
		int and = e->op == OP_AND;
		E3(and? PTX_AND : PTX_OR, ".pred", po_r(*al), po_r(a1), po_r(a2));
		E3(and? PTX_OR : PTX_AND, ".pred", po_r(*ne), po_r(n1), po_r(n2));
		return;
	}
	if (e->kind == EX_BOOL) {
		*al = pconst(g, (int)e->ival), *ne = pconst(g, !e->ival);
		return;
	}
	if (e->kind == EX_BINOP && e->op >= OP_LT && e->op <= OP_NE && e->args[0]->type == VT_INT) {
		Ival a = ival(g, e->args[0]), b = ival(g, e->args[1]);
		if (a.ok && b.ok) {
			*al = R(g, PC_PRED), *ne = R(g, PC_PRED);
			switch (e->op) {
			case OP_LT: /* always a.hi < b.lo, never a.lo >= b.hi */
				E3(PTX_SETP, ".lt.s64", po_r(*al), po_r(a.hi), po_r(b.lo));
				E3(PTX_SETP, ".ge.s64", po_r(*ne), po_r(a.lo), po_r(b.hi));
				return;
			case OP_LE:
				E3(PTX_SETP, ".le.s64", po_r(*al), po_r(a.hi), po_r(b.lo));
				E3(PTX_SETP, ".gt.s64", po_r(*ne), po_r(a.lo), po_r(b.hi));
				return;
			case OP_GT:
				E3(PTX_SETP, ".gt.s64", po_r(*al), po_r(a.lo), po_r(b.hi));
				E3(PTX_SETP, ".le.s64", po_r(*ne), po_r(a.hi), po_r(b.lo));
				return;
			case OP_GE:
				E3(PTX_SETP, ".ge.s64", po_r(*al), po_r(a.lo), po_r(b.hi));
				E3(PTX_SETP, ".lt.s64", po_r(*ne), po_r(a.hi), po_r(b.lo));
				return;
			case OP_EQ:
			case OP_NE: {
				/* never equal when the ranges are disjoint; always when both
				** are the same single point */
				PReg d1 = R(g, PC_PRED), d2 = R(g, PC_PRED), s1 = R(g, PC_PRED),
				     s2 = R(g, PC_PRED), s3 = R(g, PC_PRED);
				E3(PTX_SETP, ".lt.s64", po_r(d1), po_r(a.hi), po_r(b.lo));
				E3(PTX_SETP, ".lt.s64", po_r(d2), po_r(b.hi), po_r(a.lo));
				E3(PTX_OR, ".pred", po_r(d1), po_r(d1), po_r(d2));
				E3(PTX_SETP, ".eq.s64", po_r(s1), po_r(a.lo), po_r(a.hi));
				E3(PTX_SETP, ".eq.s64", po_r(s2), po_r(b.lo), po_r(b.hi));
				E3(PTX_SETP, ".eq.s64", po_r(s3), po_r(a.lo), po_r(b.lo));
				E3(PTX_AND, ".pred", po_r(s1), po_r(s1), po_r(s2));
				E3(PTX_AND, ".pred", po_r(s1), po_r(s1), po_r(s3));
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
	*al = pconst(g, 0), *ne = pconst(g, 0);
}

void sm80_tile_class(Gen *g, int node, PReg *always, PReg *never)
{
	const Node *n = g->p->c->nodes.v[node];
	g->node = node;
	if (!n->filter) {
		*always = pconst(g, 1), *never = pconst(g, 0);
		return;
	}
	tri(g, n->filter, always, never);
}
