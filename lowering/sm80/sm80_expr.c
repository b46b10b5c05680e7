/*
** lowering/sm80/sm80_expr.c: cascade expressions as PTX.
** Floats are f32, integers s64 (b64 registers), booleans predicates. The
** element in scope (query row, key column or value index, tile element)
** is set by the kernel before each evaluation. exp and log go through
** ex2/lg2 with log2(e) folded in, as FlashAttention does. Tile classes
** test masks by interval arithmetic over the tile; reads of i32 data along
** the query rows or the keys (doc[b, i], document masking) enter it as the
** data's min and max over the tile, computed by each warp at run time.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sm80_ops.h"

static const float LOG2E = 1.4426950408889634f, LN2 = 0.6931471805599453f;

/* shfl.sync.bfly needs five operands, one more than E takes. */
static void shfl_bfly(Gen *g, PReg d, PReg x, int lanemask)
{
	PtxOpnd o[5] = {po_r(d), po_r(x), po_i(lanemask), po_i(31), po_i(-1)};
	ptx_emit(g->f, PTX_SHFL, ".b32", 5, o);
}

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

/* A predicate constant (true for v != 0). */
PReg sm80_pconst(Gen *g, int v)
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
	switch (g->s->node[id].kind) {
	case SN_MAP:
		if (sm80_folded(g, id) && !g->raw) {
			PReg d = R(g, PC_F32);
			E3(PTX_MUL, ".f32", po_r(d), po_r(sm80_scale_c(g, id, 0)),
			   po_r(g->tile[id][g->elem]));
			return d;
		}
		return g->tile[id][g->elem];
	case SN_GEMM1: return g->tile[id][g->elem];
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

/* An i32 input read, not widened. */
static int is_i32_read(const Expr *e)
{
	return e->kind == EX_ACCESS && !e->tensor->def && e->tensor->dtype == DT_I32;
}

/* Comparisons of two i32 reads (doc[b, i] == doc[b, j]) compare the loaded
** words: sign extension keeps order and equality, and the masked path then
** holds a tile's key data in one register per key instead of two. */
static PReg cmp_i32(Gen *g, const Expr *e)
{
	PReg w[2];
	for (int k = 0; k < 2; k++) {
		const Expr *x = e->args[k];
		PReg a = sm80_addr(g, x->tensor, x->args);
		w[k] = R(g, PC_B32);
		E2(PTX_LD, ".global.nc.s32", po_r(w[k]), po_mem(a, 0));
	}
	PReg d = R(g, PC_PRED);
	E3(PTX_SETP, arena_printf(g->a, ".%s.s32", cmp_name((Op)e->op)), po_r(d), po_r(w[0]),
	   po_r(w[1]));
	return d;
}

/* The memo of a value derived from register b ('l': b * -log2(e), 'r':
** 1 / b, 'z': 1 / b or 0 where b = 0), or an empty register. */
static PReg memo_find(const Gen *g, PReg b, char kind)
{
	for (int i = 0; i < g->nmemo; i++)
		if (g->memo_in[i].n == b.n && g->memo_in[i].cls == b.cls && g->memo_kind[i] == kind)
			return g->memo_out[i];
	return (PReg){0};
}

static void memo_add(Gen *g, PReg b, char kind, PReg r)
{
	if (g->nmemo < 16)
		g->memo_in[g->nmemo] = b, g->memo_out[g->nmemo] = r,
		g->memo_kind[g->nmemo++] = kind;
}

/* b * -log2(e), once per row value within a tile body (the kernel clears
** the memo where row values change). */
static PReg neg_log2e(Gen *g, PReg b)
{
	PReg r = memo_find(g, b, 'l');
	if (r.n)
		return r;
	r = R(g, PC_F32);
	E3(PTX_MUL, ".f32", po_r(r), po_r(b), po_f(-LOG2E));
	if (g->ninf) {
		/* masked scores are -inf (masking once): a row with no key yet has
		** b = -inf too, and exp(-inf - -inf) must be 0, not NaN */
		PReg p = R(g, PC_PRED);
		E3(PTX_SETP, ".eq.f32", po_r(p), po_r(b), po_f(-INFINITY));
		E4(PTX_SELP, ".f32", po_r(r), po_f(0.0f), po_r(r), po_r(p));
	}
	memo_add(g, b, 'l', r);
	return r;
}

/* 1 / b, correctly rounded, once per register b in the epilogue. */
static PReg recip(Gen *g, PReg b)
{
	PReg r = memo_find(g, b, 'r');
	if (r.n)
		return r;
	r = R(g, PC_F32);
	E2(PTX_RCP, ".rn.f32", po_r(r), po_r(b));
	memo_add(g, b, 'r', r);
	return r;
}

/* The epilogue's `b == 0 ? 0 : a / b` (softmax over a row with no key):
** a times z = (b == 0 ? 0 : 1 / b), z once per row value b, instead of a
** select per output element (128 per thread at D = 128). The two differ
** only where a is not finite on a row with b = 0, and there a is a sum
** over no key (0), unless V holds infinities. An empty register when e is
** not of that form. */
static PReg guarded_quotient(Gen *g, const Expr *e)
{
	const Expr *c = e->args[0], *q = e->args[2];
	if (!g->stage || e->type != VT_FLOAT || e->args[1]->kind != EX_FLOAT ||
	    e->args[1]->fval != 0.0 || q->kind != EX_BINOP || q->op != OP_DIV ||
	    c->kind != EX_BINOP || c->op != OP_EQ || c->args[1]->kind != EX_FLOAT ||
	    c->args[1]->fval != 0.0 || !expr_equal(c->args[0], q->args[1]))
		return (PReg){0};
	PReg b = sm80_expr(g, q->args[1]), z = memo_find(g, b, 'z');
	if (!z.n) {
		PReg p = R(g, PC_PRED);
		z = R(g, PC_F32);
		E3(PTX_SETP, ".eq.f32", po_r(p), po_r(b), po_f(0.0f));
		E4(PTX_SELP, ".f32", po_r(z), po_f(0.0f), po_r(recip(g, b)), po_r(p));
		memo_add(g, b, 'z', z);
	}
	PReg a = sm80_expr(g, q->args[0]), d = R(g, PC_F32);
	E3(PTX_MUL, ".f32", po_r(d), po_r(a), po_r(z));
	return d;
}

static PReg binop(Gen *g, const Expr *e)
{
	if (e->op >= OP_LT && e->op <= OP_NE && is_i32_read(e->args[0]) && is_i32_read(e->args[1]))
		return cmp_i32(g, e);
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
	case OP_DIV:
		/* per score (in the stream): div.full, 2 ulp, a few instructions
		** instead of IEEE division's tens (softcap's s / cap); in the
		** epilogue, a correctly rounded reciprocal of each row value
		** (softmax's sum) times each element: one IEEE division per row
		** instead of one per output element (128 per thread at D = 128) */
		if (g->stage) {
			E3(PTX_MUL, ".f32", po_r(d), po_r(l), po_r(recip(g, r)));
			break;
		}
		E3(PTX_DIV, ".full.f32", po_r(d), po_r(l), po_r(r));
		break;
	case OP_MAX: E3(PTX_MAX, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_MIN: E3(PTX_MIN, ".f32", po_r(d), po_r(l), po_r(r)); break;
	default: break;
	}
	return d;
}

static PReg call(Gen *g, const Expr *e)
{
	const Expr *a0 = e->args[0];
	if (e->op == FN_EXP && a0->kind == EX_BINOP && a0->op == OP_SUB && a0->type == VT_FLOAT) {
		/* exp(a - b) = ex2(a * log2e - b * log2e): one FFMA per score, as
		** FlashAttention folds the max into the exponent */
		const Expr *x = a0->args[0];
		int fold = sm80_folded_read(g, x);
		/* a = c * G kept as G: ex2(G * (c log2e) - b log2e) (sm80_scale.c) */
		g->raw = fold >= 0;
		PReg a = sm80_expr(g, x);
		g->raw = 0;
		PReg b = sm80_expr(g, a0->args[1]);
		PReg t = R(g, PC_F32), d = R(g, PC_F32);
		if (fold >= 0)
			E4(PTX_FMA, ".rn.f32", po_r(t), po_r(a), po_r(sm80_scale_c(g, fold, 1)),
			   po_r(neg_log2e(g, b)));
		else
			E4(PTX_FMA, ".rn.f32", po_r(t), po_r(a), po_f(LOG2E),
			   po_r(neg_log2e(g, b)));
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

/* e as coef * j + rest (rest free of j, the node's key variable sv), with
** coef in {-1, 0, 1}; 0 when e is not of that form. */
int sm80_key_linear(Gen *g, int sv, const Expr *e, int *coef, Expr **rest)
{
	if (sv >= 64)
		return 0;
	if (!(expr_vars(e) >> sv & 1)) {
		*coef = 0, *rest = (Expr *)e;
		return 1;
	}
	if (e->kind == EX_INDEX && e->var == sv) {
		*coef = 1, *rest = expr_int(g->a, 0);
		return 1;
	}
	if (e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_SUB)) {
		int c1, c2;
		Expr *r1, *r2;
		if (!sm80_key_linear(g, sv, e->args[0], &c1, &r1) ||
		    !sm80_key_linear(g, sv, e->args[1], &c2, &r2))
			return 0;
		*coef = e->op == OP_ADD ? c1 + c2 : c1 - c2;
		*rest = expr_binop(g->a, e->op, r1, r2);
		return *coef >= -1 && *coef <= 1;
	}
	return 0;
}

/* An index, or a sum or difference of two indices or of an index and a
** constant below 2^20: with every dim below 2^31 - 2^20 (the generated
** launcher checks it) its value fits in 32 signed bits. */
static int fits_s32(const Expr *e)
{
	if (e->kind == EX_INDEX)
		return 1;
	if (e->kind == EX_INT)
		return e->ival > -(1L << 20) && e->ival < (1L << 20);
	if (e->kind != EX_BINOP || (e->op != OP_ADD && e->op != OP_SUB))
		return 0;
	const Expr *a = e->args[0], *b = e->args[1];
	int ai = a->kind == EX_INDEX, bi = b->kind == EX_INDEX;
	int ac = a->kind == EX_INT && fits_s32(a), bc = b->kind == EX_INT && fits_s32(b);
	return (ai && (bi || bc)) || (bi && ac);
}

/* float(rest + c j) of a score element, c = +-1 (ALiBi's float(j - i),
** relative positions): the row part float(rest + c cbase) once per row
** slot and tile, then one add of the element's column offset, an exact
** float for positions below 2^24, instead of per element a 64-bit key, a
** subtraction and an I2F (a quarter-rate instruction). An empty register
** when e is not of that form or not in a tile body. */
/* The kc entry of e for row slot `half` (-1: all of them), or g->nkc. */
static int kc_find(const Gen *g, const Expr *e, int half)
{
	int k = 0;
	while (k < g->nkc && (g->kc[k].e != e || g->kc[k].half != half))
		k++;
	return k;
}

/* The row slot key of a key cast's kc entries: -1 - m where its row part
** comes from row block m's first row (sm80_shift.c), the slot otherwise. */
static int kc_half(const Gen *g, const Expr *cast)
{
	return sm80_shifted(g, cast) ? -1 - g->half / 2 : g->half;
}

/* The element's value of kc entry k at the column offset in scope: v +
** coef coloff (key_cast) or u coef coloff + v (scaled_key_cast); an entry
** shared by row slots keeps it per column offset, once per tile body. */
static PReg kc_element(Gen *g, int k, int scaled)
{
	if (!g->coloff)
		return g->kc[k].v;
	PReg *c = g->kc[k].col ? &g->kc[k].col[g->coloff] : NULL, d;
	if (c && c->n)
		return *c;
	d = R(g, PC_F32);
	float off = (float)(g->kc[k].coef * g->coloff);
	if (scaled)
		E4(PTX_FMA, ".rn.f32", po_r(d), po_r(g->kc[k].u), po_f(off), po_r(g->kc[k].v));
	else
		E3(PTX_ADD, ".f32", po_r(d), po_r(g->kc[k].v), po_f(off));
	if (c)
		*c = d;
	return d;
}

static PReg key_cast(Gen *g, const Expr *e)
{
	const Expr *a = e->args[0];
	int sv = g->p->np[g->node].svar, coef = 0, k;
	Expr *rest;
	if (g->stage || g->elem < 0 || !g->cbase.n || a->type != VT_INT || !fits_s32(a) || sv < 0)
		return (PReg){0};
	int half = kc_half(g, e);
	k = kc_find(g, e, half);
	if (k == g->nkc) {
		if (k == (int)(sizeof g->kc / sizeof g->kc[0]) ||
		    !sm80_key_linear(g, sv, a, &coef, &rest) || coef == 0)
			return (PReg){0};
		PReg row = g->row;
		if (half < 0)
			g->row = g->row0[-1 - half];
		PReg r = sm80_expr(g, rest), x = R(g, PC_B64), lo = R(g, PC_B32);
		g->row = row;
		E3(coef > 0 ? PTX_ADD : PTX_SUB, ".s64", po_r(x), po_r(r), po_r(g->cbase));
		E2(PTX_CVT, ".u32.u64", po_r(lo), po_r(x));
		g->kc[k].e = e, g->kc[k].half = half, g->kc[k].coef = coef;
		g->kc[k].v = R(g, PC_F32);
		g->kc[k].col = half < 0 ? ARENA_ARRAY(g->a, PReg, SM80_BN) : NULL;
		E2(PTX_CVT, ".rn.f32.s32", po_r(g->kc[k].v), po_r(lo));
		g->nkc++;
	}
	return kc_element(g, k, 0);
}

int sm80_reads_class(const Gen *g, int node, const Expr *e, int cls)
{
	unsigned long long vars = expr_vars(e);
	for (int v = 0; v < 64; v++)
		if ((vars >> v & 1) && g->p->cls[node][v] == cls)
			return 1;
	return 0;
}

/* u is the same at every key of a row: no key index, no computed values. */
static int row_uniform(Gen *g, const Expr *u)
{
	int sv = g->p->np[g->node].svar;
	if (sv < 0 || sv >= 64 || (expr_vars(u) >> sv & 1))
		return 0;
	if (u->kind == EX_ACCESS && u->tensor->def)
		return 0;
	for (int i = 0; i < u->nargs; i++)
		if (!row_uniform(g, u->args[i]))
			return 0;
	return 1;
}

/* u * float(rest + c j) of a score element, u the same along the row
** (ALiBi's slope[h] * float(j - i)): u * float(rest + c cbase) once per
** row slot and tile, then one fma with u and the element's column offset,
** instead of an add, a multiply and the score's add (one instruction less
** per score). An empty register where it does not apply. */
static PReg scaled_key_cast(Gen *g, const Expr *e)
{
	for (int s = 0; s < 2; s++) {
		const Expr *c = e->args[s], *u = e->args[1 - s];
		if (c->kind != EX_CAST || u->type != VT_FLOAT || !row_uniform(g, u))
			continue;
		int half = kc_half(g, c), k = kc_find(g, e, half), save = g->coloff;
		if (k == g->nkc) {
			if (k == (int)(sizeof g->kc / sizeof g->kc[0]) - 1)
				return (PReg){0};
			g->coloff = 0;
			PReg base = key_cast(g, c);
			g->coloff = save;
			if (!base.n)
				return (PReg){0};
			int coef = g->kc[kc_find(g, c, half)].coef; /* key_cast's entry */
			k = g->nkc++;
			g->kc[k].e = e, g->kc[k].half = half, g->kc[k].coef = coef;
			g->kc[k].u = sm80_expr(g, u), g->kc[k].v = R(g, PC_F32);
			g->kc[k].col = half < 0 ? ARENA_ARRAY(g->a, PReg, SM80_BN) : NULL;
			E3(PTX_MUL, ".f32", po_r(g->kc[k].v), po_r(g->kc[k].u), po_r(base));
		}
		return kc_element(g, k, 1);
	}
	return (PReg){0};
}

PReg sm80_expr(Gen *g, const Expr *e)
{
	PReg d;
	switch (e->kind) {
	case EX_FLOAT: return fconst(g, (float)e->fval);
	case EX_INT: return iconst(g, e->ival);
	case EX_BOOL: return sm80_pconst(g, (int)e->ival);
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
	case EX_BINOP:
		if (e->op == OP_MUL && e->type == VT_FLOAT && g->elem >= 0 && !g->stage &&
		    (d = scaled_key_cast(g, e)).n)
			return d;
		return binop(g, e);
	case EX_SELECT: {
		if ((d = guarded_quotient(g, e)).n)
			return d;
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
		if ((d = key_cast(g, e)).n)
			return d;
		PReg x = sm80_expr(g, e->args[0]);
		d = R(g, PC_F32);
		if (e->args[0]->type == VT_BOOL)
			E4(PTX_SELP, ".f32", po_r(d), po_f(1.0f), po_f(0.0f), po_r(x));
		else if (e->args[0]->type == VT_INT && fits_s32(e->args[0])) {
			/* float(j - i): the low word converts exactly, and I2F from
			** 32 bits is several times cheaper than from 64 */
			PReg lo = R(g, PC_B32);
			E2(PTX_CVT, ".u32.u64", po_r(lo), po_r(x));
			E2(PTX_CVT, ".rn.f32.s32", po_r(d), po_r(lo));
		} else if (e->args[0]->type == VT_INT)
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
	int w32; /* lo and hi are s32 (a data range), else s64 */
} Ival;

/* x with s64 bounds, for arithmetic and for comparison with s64 bounds. */
static Ival wide(Gen *g, Ival x)
{
	if (!x.ok || !x.w32)
		return x;
	PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
	E2(PTX_CVT, ".s64.s32", po_r(lo), po_r(x.lo));
	E2(PTX_CVT, ".s64.s32", po_r(hi), po_r(x.hi));
	return (Ival){lo, hi, 1, 0};
}

static int positive(const Expr *e)
{
	return (e->kind == EX_INT && e->ival > 0) || e->kind == EX_DIM;
}

/* ---- data ranges ----------------------------------------------------------
** A read like doc[b, i] (or doc[b, j]) takes one value per query row (key)
** of the tile; its interval over the tile is [min, max] of the data over
** the CTA's rows [q0, min(q0 + bm, qext)) or the tile's keys [j0, j1). Each
** warp computes it on its own (no shared memory, no barrier): lane l loads
** the elements l, l + 32, ... of the range that exist; for the rows a
** butterfly of shfl.sync.bfly leaves the min and max in every lane, for
** keys each lane keeps its own and the tests vote (range_compute). Callers
** run it from uniform control flow with all 32 lanes active
** (sm80_tile_class). */

/* The kind ('q' or 's') of the one range a read's subscripts run over: 0
** when they are fixed on the tile (grid indices, dims, params, literals),
** -1 when they are not plain index arithmetic over one range. The same
** rule as compiler/masks.c's MASK_RANGE. */
static int subscript_range(Gen *g, const Expr *e, int k)
{
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM: return k;
	case EX_INDEX: {
		int v = kind_of(g, e->var);
		if (v == 'g')
			return k;
		if ((v != 'q' && v != 's') || (k && k != v))
			return -1;
		return v;
	}
	case EX_UNOP: return e->op == OP_NEG ? subscript_range(g, e->args[0], k) : -1;
	case EX_BINOP:
		switch (e->op) {
		case OP_ADD:
		case OP_SUB:
		case OP_MUL:
		case OP_DIV:
		case OP_MOD:
		case OP_MAX:
		case OP_MIN:
			k = subscript_range(g, e->args[0], k);
			return k < 0 ? k : subscript_range(g, e->args[1], k);
		default: return -1;
		}
	default: return -1;
	}
}

/* The range kind of a read over all its subscripts: a read whose
** subscripts run over the rows and the keys at once (pos[b, i - j]) has no
** range per tile and stays per element. */
static int read_range(Gen *g, const Expr *e)
{
	int k = 0;
	for (int i = 0; i < e->nargs && k >= 0; i++)
		k = subscript_range(g, e->args[i], k);
	return k;
}

/* e itself is a read of i32 input data along the keys (doc[b, j]): tile
** classes take its range per tile (range_read 's'). */
static int is_key_read(Gen *g, const Expr *e)
{
	return e->kind == EX_ACCESS && e->type == VT_INT && !e->tensor->def &&
	       read_range(g, e) == 's';
}

/* A read of input data whose subscripts are not fixed on a tile (along the
** rows or the keys). */
static int is_range_read(Gen *g, const Expr *e)
{
	return e->kind == EX_ACCESS && !e->tensor->def && read_range(g, e) != 0;
}

/* e or a subexpression satisfies is (a kind of read). */
static int has_read(Gen *g, const Expr *e, int (*is)(Gen *, const Expr *))
{
	if (!e)
		return 0;
	if (is(g, e))
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (has_read(g, e->args[i], is))
			return 1;
	return 0;
}

/* Node's filter has a read of kind is, in node's variables. */
static int filter_reads(Gen *g, int node, int (*is)(Gen *, const Expr *))
{
	int save = g->node, r;
	g->node = node;
	r = has_read(g, ((const Node *)g->p->c->nodes.v[node])->filter, is);
	g->node = save;
	return r;
}

int sm80_key_reads(Gen *g, int node)
{
	return filter_reads(g, node, is_key_read);
}

int sm80_range_reads(Gen *g, int node)
{
	return filter_reads(g, node, is_range_read);
}

/* Variables of nodes na and nb in the same class take one value (or one
** range) in the tile's scope; `alike` also asks for the same numbering. */
typedef struct NodePair {
	const Plan *p;
	int na, nb, alike;
} NodePair;

static int same_class(int va, int vb, void *ud)
{
	const NodePair *np = ud;
	return (!np->alike || va == vb) && np->p->cls[np->na][va] == np->p->cls[np->nb][vb];
}

int sm80_same_read(Gen *g, int na, const Expr *a, int nb, const Expr *b, int alike)
{
	NodePair np = {g->p, na, nb, alike};
	return expr_equal_by(a, b, same_class, &np);
}

/* Registers are named by class and number; both must agree. */
static int same_preg(PReg a, PReg b)
{
	return a.n == b.n && a.cls == b.cls;
}

/* Whether instruction in writes r: the instructions attnc emits put their
** destination first (stores and copies start with a memory operand). */
static int writes(const PtxInst *in, PReg r)
{
	const PtxOpnd *d = &in->a[0];
	if (!in->n)
		return 0;
	if (d->k == PO_REG)
		return same_preg(d->r, r);
	for (int v = 0; d->k == PO_VEC && v < d->nvec; v++)
		if (same_preg(d->vec[v], r))
			return 1;
	return 0;
}

/* Whether instructions code[from, to) hold a label (a point control can
** reach from elsewhere) or write register r1 or r2 (those that are set). */
static int code_has(const PtxFunc *f, int from, int to, PReg r1, PReg r2)
{
	for (int i = from; i < to; i++) {
		const PtxInst *in = &f->code[i];
		if (in->op == PTX_LABEL)
			return 1;
		if ((r1.n && writes(in, r1)) || (r2.n && writes(in, r2)))
			return 1;
	}
	return 0;
}

/* Whether code[from, to) writes r. */
static int written(const PtxFunc *f, int from, int to, PReg r)
{
	for (int i = from; i < to; i++)
		if (writes(&f->code[i], r))
			return 1;
	return 0;
}

/* The end of the kernel's straight-line prologue: the first label, branch
** or ret. Code before it runs once, in every thread, converged, and
** dominates all code after it. */
static int prologue_end(const PtxFunc *f)
{
	int i = 0;
	while (i < f->ncode && f->code[i].op != PTX_LABEL && f->code[i].op != PTX_BRA &&
	       f->code[i].op != PTX_RET)
		i++;
	return i;
}

/* The registers instruction in reads (at most 16): every register operand
** but a destination, memory bases, and the guard; a guarded instruction
** also keeps its destination's old value. */
static int reads(const PtxInst *in, PReg *r)
{
	int n = 0;
	for (int k = 0; k < in->n && n < 12; k++) {
		const PtxOpnd *o = &in->a[k];
		int dest = k == 0 && (o->k == PO_REG || o->k == PO_VEC);
		if (dest && !in->guard.n)
			continue;
		if (o->k == PO_REG || o->k == PO_MEM)
			r[n++] = o->r;
		for (int v = 0; o->k == PO_VEC && v < o->nvec; v++)
			r[n++] = o->vec[v];
	}
	if (in->guard.n)
		r[n++] = in->guard;
	return n;
}

/* Moves the code just emitted, code[s, ncode), to the end of the prologue
** when that keeps its meaning: the registers it sets are used nowhere in
** between, and no register it reads from outside is written between the
** prologue and s (so each holds there the value it holds at s:
** set in the prologue, or never set, like the destination of a predicated
** load). The CTA's row range is then computed once even when the kernel
** first classifies a tile inside a loop. Returns the new end of the moved
** code, or -1. */
static int hoist(Gen *g, int s)
{
	PtxFunc *f = g->f;
	int p = prologue_end(f), n = f->ncode - s;
	if (p > s || n <= 0)
		return -1;
	for (int i = s; i < f->ncode; i++) {
		PReg r[16];
		int nr = reads(&f->code[i], r);
		for (int k = 0; k < nr; k++) {
			if (!r[k].n || written(f, s, i, r[k]))
				continue; /* set by the moved code itself */
			if (written(f, p, s, r[k]))
				return -1; /* set, or changed, after the prologue */
		}
		/* what it sets must be its own: not used by the code it moves over */
		const PtxOpnd *d = &f->code[i].a[0];
		for (int j = p; j < s && d->k == PO_REG; j++) {
			PReg u[16];
			int nu = reads(&f->code[j], u);
			for (int k = 0; k < nu; k++)
				if (same_preg(u[k], d->r))
					return -1;
			if (writes(&f->code[j], d->r))
				return -1;
		}
	}
	PtxInst *tmp = malloc(sizeof *tmp * (size_t)n);
	if (!tmp)
		return -1;
	memcpy(tmp, f->code + s, sizeof *tmp * (size_t)n);
	memmove(f->code + p + n, f->code + p, sizeof *tmp * (size_t)(s - p));
	memcpy(f->code + p, tmp, sizeof *tmp * (size_t)n);
	free(tmp);
	for (int i = 0; i < g->nrng; i++)
		if (g->rng[i].end > p)
			g->rng[i].end += n;
	return p + n;
}

/* A range computed earlier whose value holds here: the same read, and its
** code dominates this point with unchanged inputs. The CTA's row range
** depends only on registers set once before the stream (q0, qext, grid
** indices, pointers, strides), so code in the straight-line prologue (no
** label or branch before it) dominates every later point; otherwise, and
** always for key ranges (j0 and j1 change in the stream loop, and a back
** edge could bring a new j0 in), only code in the same basic block with
** j0 and j1 not written since counts. */
static int range_cached(Gen *g, const Expr *e, int k, PReg *mn, PReg *mx, int *whole)
{
	PReg none = {0, 0};
	if (whole)
		*whole = 0;
	for (int i = 0; i < g->nrng; i++) {
		const struct Sm80Range *c = &g->rng[i];
		if (c->kind != k || !sm80_same_read(g, c->node, c->e, g->node, e, 0))
			continue;
		if (k == 'q' && !c->in_prologue && code_has(g->f, c->end, g->f->ncode, none, none))
			continue;
		if (k == 's' && (!same_preg(c->j0, g->j0) || !same_preg(c->j1, g->j1) ||
				 code_has(g->f, c->end, g->f->ncode, g->j0, g->j1)))
			continue;
		*mn = c->mn, *mx = c->mx;
		if (whole)
			*whole = c->whole;
		return 1;
	}
	return 0;
}

/* [min, max] of read e over range k of the tile, as s32 registers (the
** data is i32; the caller widens them). An empty range gives min > max. A
** range longer than the lanes cover (not made by the kernel) gives the
** whole i32 range, which is sound. The CTA's rows ('q') are reduced over
** the warp; a tile's keys ('s') are not: each lane keeps the range of its
** own keys (two of 64), the tests run per lane, and sm80_tile_class votes
** over the warp (a tile is never / always true where it is for every
** lane's keys). That is one vote per test instead of ten dependent
** shuffles per range, on the path that scans tiles for document masks. */
static void range_compute(Gen *g, const Expr *e, int k, PReg *mn, PReg *mx)
{
	int span = k == 'q' ? g->bm : SM80_BN;
	PReg first = k == 'q' ? g->q0 : g->j0, end = g->j1;
	*mn = R(g, PC_B32), *mx = R(g, PC_B32);
	E2(PTX_MOV, ".b32", po_r(*mn), po_i(INT32_MAX));
	E2(PTX_MOV, ".b32", po_r(*mx), po_i(INT32_MIN));
	if (k == 'q') {
		end = R(g, PC_B64);
		E3(PTX_ADD, ".s64", po_r(end), po_r(g->q0), po_i(g->bm));
		E3(PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->qext));
	}
	PReg row = g->row, col = g->col, x = R(g, PC_B64), in[4], w[4];
	E3(PTX_ADD, ".s64", po_r(x), po_r(first), po_r(g->lane));
	/* element x = first + lane + t, when x < end: the loads are predicated,
	** so no address past the range is read, and lanes past it keep the
	** identities of min and max; all loads come first */
	for (int t = 0; t < span; t += 32) {
		PReg xt = x;
		if (t) {
			xt = R(g, PC_B64);
			E3(PTX_ADD, ".s64", po_r(xt), po_r(x), po_i(t));
		}
		in[t / 32] = R(g, PC_PRED), w[t / 32] = R(g, PC_B32);
		E3(PTX_SETP, ".lt.s64", po_r(in[t / 32]), po_r(xt), po_r(end));
		if (k == 'q')
			g->row = xt;
		else
			g->col = xt;
		PReg a = sm80_addr(g, e->tensor, e->args);
		E2(PTX_LD, ".global.nc.s32", po_r(w[t / 32]), po_mem(a, 0));
		ptx_guard(g->f, in[t / 32], 0);
	}
	for (int t = 0; t < span / 32; t++) {
		E3(PTX_MIN, ".s32", po_r(*mn), po_r(*mn), po_r(w[t]));
		ptx_guard(g->f, in[t], 0);
		E3(PTX_MAX, ".s32", po_r(*mx), po_r(*mx), po_r(w[t]));
		ptx_guard(g->f, in[t], 0);
	}
	g->row = row, g->col = col;
	for (int m = 16; m >= 1 && k == 'q'; m >>= 1) {
		PReg a = R(g, PC_B32), b = R(g, PC_B32);
		shfl_bfly(g, a, *mn, m);
		shfl_bfly(g, b, *mx, m);
		E3(PTX_MIN, ".s32", po_r(*mn), po_r(*mn), po_r(a));
		E3(PTX_MAX, ".s32", po_r(*mx), po_r(*mx), po_r(b));
	}
	PReg n = R(g, PC_B64), big = R(g, PC_PRED);
	E3(PTX_SUB, ".s64", po_r(n), po_r(end), po_r(first));
	E3(PTX_SETP, ".gt.s64", po_r(big), po_r(n), po_i(span));
	E4(PTX_SELP, ".b32", po_r(*mn), po_i(INT32_MIN), po_r(*mn), po_r(big));
	E4(PTX_SELP, ".b32", po_r(*mx), po_i(INT32_MAX), po_r(*mx), po_r(big));
}

/* A free cache slot, else the oldest entry outside the prologue (key
** ranges stop being valid at the next label anyway), else the oldest key
** range (one tile's: the table of document masks classifies 32 tiles in
** the prologue, and evicting the rows' range made every later test
** recompute it), else the oldest. */
static int range_slot(Gen *g)
{
	int n = sizeof g->rng / sizeof g->rng[0], best = -1;
	if (g->nrng < n)
		return g->nrng++;
	for (int pass = 0; pass < 3 && best < 0; pass++)
		for (int i = 0; i < n; i++)
			if ((pass == 2 || (pass == 1 && g->rng[i].kind == 's') ||
			     !g->rng[i].in_prologue) &&
			    (best < 0 || g->rng[i].end < g->rng[best].end))
				best = i;
	return best;
}

/* Records a range for range_cached: read e (of node g->node, kind k) over
** [j0, j1) has min mn and max mx, in code ending at `end`. */
static void range_note(Gen *g, const Expr *e, int k, PReg mn, PReg mx, PReg j0, PReg j1, int end,
		       int in_prologue, int whole)
{
	struct Sm80Range *c = &g->rng[range_slot(g)];
	c->e = e, c->node = g->node, c->kind = k, c->mn = mn, c->mx = mx;
	c->j0 = j0, c->j1 = j1, c->end = end, c->in_prologue = in_prologue, c->whole = whole;
}

/* The interval of an i32 read over range k of the tile, with s32 bounds
** (callers widen them where needed): computed once where it can be reused
** (see range_cached). */
static Ival range_read(Gen *g, const Expr *e, int k)
{
	PReg mn, mx;
	int whole;
	int cached = range_cached(g, e, k, &mn, &mx, &whole);
	g->lanelocal |= k == 's' && !whole;
	if (!cached) {
		int start = g->f->ncode, end;
		range_compute(g, e, k, &mn, &mx);
		end = g->f->ncode;
		int pro = start <= prologue_end(g->f);
		if (!pro && k == 'q' && (end = hoist(g, start)) >= 0)
			pro = 1;
		else if (!pro)
			end = g->f->ncode;
		range_note(g, e, k, mn, mx, g->j0, g->j1, end, pro, 0);
	}
	return (Ival){mn, mx, 1, 1};
}

/* A key read whose subscripts hold the key only as the bare key index
** (doc[b, j]): its address steps by one stride per key. */
static int key_plain(Gen *g, const Expr *e)
{
	for (int i = 0; i < e->nargs; i++) {
		const Expr *a = e->args[i];
		if (a->kind == EX_INDEX && kind_of(g, a->var) == 's')
			continue;
		if (subscript_range(g, a, 0) != 0)
			return 0;
	}
	return 1;
}

/* A lane's walk over a plain key read e from key st: x0 = st + lane (its
** first key) and x1 = x0 + 1 into the caller's registers, the address of
** key x0 (returned), stride = 32 keys' bytes, and lim32 = sext - x0 as
** s32 (dims are below 2^31; made here where the caller has none yet). */
static PReg key_lane_walk(Gen *g, const Expr *e, PReg st, PReg x0, PReg x1, PReg stride, PReg lim,
			  PReg *lim32)
{
	PReg col = g->col;
	E3(PTX_ADD, ".s64", po_r(x0), po_r(st), po_r(g->lane));
	E3(PTX_ADD, ".s64", po_r(x1), po_r(x0), po_i(1));
	g->col = x0;
	PReg a0 = sm80_addr(g, e->tensor, e->args);
	g->col = x1;
	PReg a1 = sm80_addr(g, e->tensor, e->args);
	g->col = col;
	E3(PTX_SUB, ".s64", po_r(stride), po_r(a1), po_r(a0));
	E3(PTX_SHL, ".b64", po_r(stride), po_r(stride), po_i(5));
	if (!lim32->n)
		*lim32 = R(g, PC_B32);
	E3(PTX_SUB, ".s64", po_r(lim), po_r(g->sext), po_r(x0));
	E2(PTX_CVT, ".s32.s64", po_r(*lim32), po_r(lim));
	return a0;
}

/* The ranges of plain key read e over n consecutive tiles from st[0]: the
** lane's element addresses step by 32 keys' stride, so each of its 2 n
** loads costs an add, and all loads come before any min or max. */
static void key_ranges_plain(Gen *g, const Expr *e, const PReg *st, const PReg *end, int n)
{
	PReg x0 = R(g, PC_B64), x1 = R(g, PC_B64), stride = R(g, PC_B64), lim = R(g, PC_B64),
	     in[2 * 32], w[2 * 32], a = {0, 0};
	/* element k (key x0 + 32 k) exists where 32 k < sext - x0; tested again
	** at its min and max, so that no predicate is live across the loads */
	PReg lim32 = {0, 0};
	PReg a0 = key_lane_walk(g, e, st[0], x0, x1, stride, lim, &lim32);
	for (int k = 0; k < 2 * n; k++) {
		PReg ak = a0;
		if (k) {
			ak = R(g, PC_B64);
			E3(PTX_ADD, ".s64", po_r(ak), po_r(a), po_r(stride));
		}
		a = ak;
		in[k] = R(g, PC_PRED), w[k] = R(g, PC_B32);
		E3(PTX_SETP, ".gt.s32", po_r(in[k]), po_r(lim32), po_i(32 * k));
		E2(PTX_LD, ".global.nc.s32", po_r(w[k]), po_mem(ak, 0));
		ptx_guard(g->f, in[k], 0);
	}
	for (int u = 0; u < n; u++) {
		PReg mn = R(g, PC_B32), mx = R(g, PC_B32);
		E2(PTX_MOV, ".b32", po_r(mn), po_i(INT32_MAX));
		E2(PTX_MOV, ".b32", po_r(mx), po_i(INT32_MIN));
		for (int k = 2 * u; k < 2 * u + 2; k++) {
			in[k] = R(g, PC_PRED);
			E3(PTX_SETP, ".gt.s32", po_r(in[k]), po_r(lim32), po_i(32 * k));
			E3(PTX_MIN, ".s32", po_r(mn), po_r(mn), po_r(w[k]));
			ptx_guard(g->f, in[k], 0);
			E3(PTX_MAX, ".s32", po_r(mx), po_r(mx), po_r(w[k]));
			ptx_guard(g->f, in[k], 0);
		}
		range_note(g, e, 's', mn, mx, st[u], end[u], g->f->ncode,
			   g->f->ncode <= prologue_end(g->f), 0);
	}
}

/* The ranges over the CTA's rows of the reads in e (doc[b, i]), cached. */
static void row_ranges(Gen *g, const Expr *e)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && e->type == VT_INT && !e->tensor->def &&
	    read_range(g, e) == 'q') {
		range_read(g, e, 'q');
		return;
	}
	for (int i = 0; i < e->nargs; i++)
		row_ranges(g, e->args[i]);
}

/* key_ranges_lanes through shared memory: the lanes copy the ids of the
** warp's 32 tiles with cp.async (coalesced, as the loads were), one tile to
** 272 bytes (16 of padding: lane l's 16-byte reads of tile l then fall in
** eight bank groups), then each lane reads its own tile back and takes its
** range. With registers as the loads' destinations ptxas placed the first
** tiles' min and max between the loads, and the loads after them waited
** for the first ones' data: the table took 4 us per CTA on the H100
** (document1024), against about 1 us for the CTA's Q. The rows' ranges go
** between the copies and the wait, their loads in flight with them. */
static void key_ranges_staged(Gen *g, const Expr *e, PReg st, PReg su, PReg eu)
{
	enum { T = 32, TS = SM80_IDSTAGE_TILE };
	PReg x0 = R(g, PC_B64), x1 = R(g, PC_B64), stride = R(g, PC_B64), lim = R(g, PC_B64),
	     lim32 = R(g, PC_B32), a = {0, 0}, wb32 = R(g, PC_B32), sl = R(g, PC_B32),
	     rd = R(g, PC_B32), n = R(g, PC_B64), n32 = R(g, PC_B32);
	PReg a0 = key_lane_walk(g, e, st, x0, x1, stride, lim, &lim32);
	PReg w32 = R(g, PC_B32), l32 = R(g, PC_B32);
	E2(PTX_CVT, ".u32.u64", po_r(w32), po_r(g->warp));
	E2(PTX_CVT, ".u32.u64", po_r(l32), po_r(g->lane));
	E4(PTX_MAD, ".lo.u32", po_r(wb32), po_r(w32), po_i(T * TS), po_r(g->idsbase));
	E3(PTX_ADD, ".u32", po_r(wb32), po_r(wb32), po_i((int64_t)g->idstage));
	E4(PTX_MAD, ".lo.u32", po_r(sl), po_r(l32), po_i(4), po_r(wb32));
	for (int k = 0; k < 2 * T; k++) {
		PReg ak = a0, in = R(g, PC_PRED);
		if (k) {
			ak = R(g, PC_B64);
			E3(PTX_ADD, ".s64", po_r(ak), po_r(a), po_r(stride));
		}
		a = ak;
		E3(PTX_SETP, ".gt.s32", po_r(in), po_r(lim32), po_i(32 * k));
		E3(PTX_CP_ASYNC, ".ca.shared.global",
		   po_mem(sl, (int32_t)((k / 2) * TS + (k % 2) * 128)), po_mem(ak, 0), po_i(4));
		ptx_guard(g->f, in, 0);
	}
	E(g, PTX_CP_COMMIT, "", 0, (PtxOpnd){0}, (PtxOpnd){0}, (PtxOpnd){0}, (PtxOpnd){0});
	int later = 0;
	if (g->after_ids) {
		g->after_ids(g);
		g->after_ids = NULL;
		later = 1;
	}
	row_ranges(g, ((const Node *)g->p->c->nodes.v[g->node])->filter);
	E1(PTX_CP_WAIT, "", po_i(later));
	E1(PTX_BAR_WARP, "", po_i(-1));
	/* the lane's tile: its keys that exist, n = min(max(sext - su, 0), 64) */
	E3(PTX_SUB, ".s64", po_r(n), po_r(g->sext), po_r(su));
	E3(PTX_MAX, ".s64", po_r(n), po_r(n), po_i(0));
	E3(PTX_MIN, ".s64", po_r(n), po_r(n), po_i(SM80_BN));
	E2(PTX_CVT, ".s32.s64", po_r(n32), po_r(n));
	E4(PTX_MAD, ".lo.u32", po_r(rd), po_r(l32), po_i(TS), po_r(wb32));
	PReg mn = R(g, PC_B32), mx = R(g, PC_B32);
	E2(PTX_MOV, ".b32", po_r(mn), po_i(INT32_MAX));
	E2(PTX_MOV, ".b32", po_r(mx), po_i(INT32_MIN));
	for (int c = 0; c < SM80_BN / 4; c++) {
		PReg w[4] = {R(g, PC_B32), R(g, PC_B32), R(g, PC_B32), R(g, PC_B32)};
		E2(PTX_LD, ".shared.v4.s32", po_vec(w, 4), po_mem(rd, 16 * c));
		for (int i = 0; i < 4; i++) {
			PReg in = R(g, PC_PRED);
			E3(PTX_SETP, ".gt.s32", po_r(in), po_r(n32), po_i(4 * c + i));
			E3(PTX_MIN, ".s32", po_r(mn), po_r(mn), po_r(w[i]));
			ptx_guard(g->f, in, 0);
			E3(PTX_MAX, ".s32", po_r(mx), po_r(mx), po_r(w[i]));
			ptx_guard(g->f, in, 0);
		}
	}
	range_note(g, e, 's', mn, mx, su, eu, g->f->ncode, g->f->ncode <= prologue_end(g->f), 1);
}

typedef struct LaneRanges {
	PReg st, su, eu;
	int ok, n; /* all key reads plain; how many */
} LaneRanges;

static void lane_ranges(Gen *g, const Expr *e, LaneRanges *lr)
{
	if (!e)
		return;
	if (!is_key_read(g, e)) {
		for (int i = 0; i < e->nargs; i++)
			lane_ranges(g, e->args[i], lr);
		return;
	}
	if (!key_plain(g, e)) {
		lr->ok = 0;
		return;
	}
	lr->n++;
	if (!lr->st.n)
		return; /* the check only */
	PReg sj0 = g->j0, sj1 = g->j1, mn, mx;
	g->j0 = lr->su, g->j1 = lr->eu;
	int cached = range_cached(g, e, 's', &mn, &mx, NULL);
	g->j0 = sj0, g->j1 = sj1;
	if (!cached)
		key_ranges_staged(g, e, lr->st, lr->su, lr->eu);
}

/* lane_ranges over node's filter, in node's variables. */
static LaneRanges node_lane_ranges(Gen *g, int node, LaneRanges lr)
{
	int save = g->node;
	g->node = node;
	lane_ranges(g, ((const Node *)g->p->c->nodes.v[node])->filter, &lr);
	g->node = save;
	return lr;
}

int sm80_plain_key_reads(Gen *g, int node)
{
	LaneRanges lr = node_lane_ranges(g, node, (LaneRanges){{0, 0}, {0, 0}, {0, 0}, 1, 0});
	return lr.ok ? lr.n : -1;
}

void sm80_key_ranges_lanes(Gen *g, int node, PReg st, PReg su, PReg eu)
{
	node_lane_ranges(g, node, (LaneRanges){st, su, eu, 1, 0});
}

typedef struct KeyBatch {
	const PReg *st, *end;
	int n;
} KeyBatch;

static void key_batch(Gen *g, const Expr *e, const KeyBatch *kb)
{
	if (!e)
		return;
	if (!is_key_read(g, e)) {
		for (int i = 0; i < e->nargs; i++)
			key_batch(g, e->args[i], kb);
		return;
	}
	PReg sj0 = g->j0, sj1 = g->j1, mn, mx;
	g->j0 = kb->st[0], g->j1 = kb->end[0];
	int cached = range_cached(g, e, 's', &mn, &mx, NULL);
	g->j0 = sj0, g->j1 = sj1;
	if (cached)
		return;
	if (key_plain(g, e) && kb->n <= 32) {
		key_ranges_plain(g, e, kb->st, kb->end, kb->n);
		return;
	}
	for (int u = 0; u < kb->n; u++) {
		g->j0 = kb->st[u], g->j1 = kb->end[u];
		range_read(g, e, 's');
	}
	g->j0 = sj0, g->j1 = sj1;
}

void sm80_key_ranges(Gen *g, int node, const PReg *st, const PReg *end, int n)
{
	int save = g->node;
	KeyBatch kb = {st, end, n};
	g->node = node;
	key_batch(g, ((const Node *)g->p->c->nodes.v[node])->filter, &kb);
	g->node = save;
}

static Ival ival(Gen *g, const Expr *e)
{
	Ival none = {{0, 0}, {0, 0}, 0, 0};
	switch (e->kind) {
	case EX_INT:
	case EX_DIM:
	case EX_PARAM: {
		PReg v = sm80_expr(g, e);
		return (Ival){v, v, 1, 0};
	}
	case EX_INDEX: {
		int k = kind_of(g, e->var);
		if (k == 'g') {
			PReg v = index_value(g, e->var);
			return (Ival){v, v, 1, 0};
		}
		PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
		if (k == 'q' && g->wrows) {
			E2(PTX_MOV, ".b64", po_r(lo), po_r(g->wq0));
			E2(PTX_MOV, ".b64", po_r(hi), po_r(g->wq1));
		} else if (k == 'q') {
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
		return (Ival){lo, hi, 1, 0};
	}
	case EX_ACCESS: {
		if (e->type != VT_INT || e->tensor->def)
			return none;
		int k = read_range(g, e);
		if (k == 'q' || k == 's')
			return range_read(g, e, k);
		for (int i = 0; i < e->nargs; i++) {
			Ival x = ival(g, e->args[i]);
			if (!x.ok || x.lo.n != x.hi.n || x.lo.cls != x.hi.cls)
				return none;
		}
		PReg v = sm80_load(g, e->tensor, e->args);
		return (Ival){v, v, 1, 0};
	}
	case EX_UNOP: {
		if (e->op != OP_NEG)
			return none;
		Ival x = wide(g, ival(g, e->args[0]));
		if (!x.ok)
			return none;
		PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
		E2(PTX_NEG, ".s64", po_r(lo), po_r(x.hi));
		E2(PTX_NEG, ".s64", po_r(hi), po_r(x.lo));
		return (Ival){lo, hi, 1, 0};
	}
	case EX_BINOP: {
		if (e->type != VT_INT)
			return none;
		Ival l = wide(g, ival(g, e->args[0])), r = wide(g, ival(g, e->args[1]));
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
		return (Ival){lo, hi, 1, 0};
	}
	default: return none;
	}
}

/* setp.CMP.TY d, x, y: tri's comparisons, in the width of their operands. */
static void setp(Gen *g, PReg d, const char *cmp, const char *ty, PReg x, PReg y)
{
	E3(PTX_SETP, arena_printf(g->a, ".%s.%s", cmp, ty), po_r(d), po_r(x), po_r(y));
}

/* always/never predicates of a condition over the tile box. Two data
** ranges compare in s32 (the i32 data's own width), anything else in s64. */
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
		*al = sm80_pconst(g, (int)e->ival), *ne = sm80_pconst(g, !e->ival);
		return;
	}
	if (e->kind == EX_BINOP && e->op >= OP_LT && e->op <= OP_NE && e->args[0]->type == VT_INT) {
		Ival a = ival(g, e->args[0]), b = ival(g, e->args[1]);
		if (a.ok && b.ok) {
			const char *ty = "s32";
			if (!a.w32 || !b.w32)
				a = wide(g, a), b = wide(g, b), ty = "s64";
			*al = R(g, PC_PRED), *ne = R(g, PC_PRED);
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
				PReg d1 = R(g, PC_PRED), d2 = R(g, PC_PRED), s1 = R(g, PC_PRED),
				     s2 = R(g, PC_PRED), s3 = R(g, PC_PRED);
				setp(g, d1, "lt", ty, a.hi, b.lo);
				setp(g, d2, "lt", ty, b.hi, a.lo);
				E3(PTX_OR, ".pred", po_r(d1), po_r(d1), po_r(d2));
				setp(g, s1, "eq", ty, a.lo, a.hi);
				setp(g, s2, "eq", ty, b.lo, b.hi);
				setp(g, s3, "eq", ty, a.lo, b.lo);
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
	*al = sm80_pconst(g, 0), *ne = sm80_pconst(g, 0);
}

int sm80_range(Gen *g, const Expr *e, PReg *lo, PReg *hi)
{
	Ival x = e->type == VT_INT ? wide(g, ival(g, e)) : (Ival){{0, 0}, {0, 0}, 0, 0};
	*lo = x.lo, *hi = x.hi;
	return x.ok;
}

void sm80_tile_class(Gen *g, int node, PReg *always, PReg *never)
{
	const Node *n = g->p->c->nodes.v[node];
	g->node = node;
	if (!n->filter) {
		*always = sm80_pconst(g, 1), *never = sm80_pconst(g, 0);
		return;
	}
	g->lanelocal = 0;
	tri(g, n->filter, always, never);
	if (!g->lanelocal)
		return;
	PReg al = R(g, PC_PRED), ne = R(g, PC_PRED);
	E3(PTX_VOTE, ".all.pred", po_r(al), po_r(*always), po_i(-1));
	E3(PTX_VOTE, ".all.pred", po_r(ne), po_r(*never), po_i(-1));
	*always = al, *never = ne;
}
