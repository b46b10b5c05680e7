/*
** lowering/gpu/tile.c: the body of one key tile. The plan's nodes in order
** on the tensor cores' accumulator fragments (gpu.h's element layout):
** element-wise values, running maxes (quad shuffles), row sums and the
** contractions with V (the target's contract_pv), on the unmasked path or
** with per-element masks (key bounds per row slot where the filter is
** linear in the key, shared predicate bits where nodes share a filter).
*/
#include <math.h>
#include <string.h>

#include "../../compiler/intervals.h"
#include "gpu.h"

/* Key index of score element el (clamped: padding evaluates in-bounds
** loads whose results are never used), computed where needed rather than
** kept per column in registers. */
static PReg key_of(KernelGen *g, TileState *t, int el, int clamp)
{
	PReg k = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_ADD, ".s64", po_r(k), po_r(t->cbase), po_i(gpu_el_nt(g, el) * 8 + (el & 1)));
	if (clamp)
		gpu_op3(g, PTX_MIN, ".s64", po_r(k), po_r(k), po_r(t->clast));
	return k;
}

static void scope_elem(KernelGen *g, TileState *t, int i, int el)
{
	g->node = i, g->elem = el, g->half = gpu_el_rs(g, el);
	g->row = t->crows[g->half], g->col = key_of(g, t, el, 1);
	g->cbase = t->cbase, g->coloff = gpu_el_nt(g, el) * 8 + (el & 1);
	/* after coloff: an index of the key outside a subscript (T5's j > i
	** in a temporary) is col_base + col_off, this element's key */
	g->col_base = t->cbase, g->col_off = g->coloff, g->col_of = g->col;
}

/* Query rows of the thread's row slots (block h / 2, half h % 2), and the
** same clamped into range. Recomputed where used (each tile body, the
** epilogue) so that they are not live, in registers, across the contraction. */
void gpu_tile_rows(KernelGen *g, TileState *t)
{
	PReg q4 = gpu_reg(g, PC_B64), base = gpu_reg(g, PC_B64), last = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SHR, ".u64", po_r(q4), po_r(g->lane), po_i(2));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(base), po_r(g->warp), po_i(16 * g->row_blocks),
		po_r(q4));
	gpu_op3(g, PTX_ADD, ".s64", po_r(base), po_r(base), po_r(g->q0));
	gpu_op3(g, PTX_SUB, ".s64", po_r(last), po_r(g->qext), po_i(1));
	for (int h = 0; h < 2 * g->row_blocks; h++) {
		t->rows[h] = gpu_reg(g, PC_B64), t->crows[h] = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".s64", po_r(t->rows[h]), po_r(base),
			po_i(h / 2 * 16 + h % 2 * 8));
		gpu_op3(g, PTX_MIN, ".s64", po_r(t->crows[h]), po_r(t->rows[h]), po_r(last));
	}
	/* each row block's first row slot (shift.c) */
	g->row0[0] = t->crows[0], g->row0[1] = t->crows[2 * g->row_blocks - 2];
}

/* Nodes k and i test the same condition of the same (row, key) point: equal
** filters whose variables are numbered alike and lie in the same classes. */
static int same_filter(KernelGen *g, int k, int i)
{
	return gpu_same_read(g, k, gpu_node(g, k)->filter, i, gpu_node(g, i)->filter, 1);
}

/* Splits node i's filter into key bounds lo <= j < hi, each an expression of
** the row (conjuncts j < e, e - j >= w, ...), and the rest. */
typedef struct KeyBounds {
	KernelGen *g;
	int sv;
	Expr *lo, *hi;
	const Expr *rest;
} KeyBounds;

/* The comparison op with its operands exchanged (a < b as b > a). */
static Op swapped(Op op)
{
	return op == OP_LT   ? OP_GT
	       : op == OP_LE ? OP_GE
	       : op == OP_GT ? OP_LT
	       : op == OP_GE ? OP_LE
			     : op;
}

/* Conjunct (j + r) / d op e, or e op (j + r) / d, with d a positive
** divisor and d and e free of the key j, as a bound on j alone: floor
** division by a positive d is monotone, so (j + r) / d >= e is exactly
** j >= e d - r and (j + r) / d <= e is j < (e + 1) d - r (and > e, < e
** likewise). A window over flattened pixels (j / W, a video's
** j / (H W)) then bounds the stream's keys to the rows it reaches and
** tests the tile's keys with two compares. Returns 0 where c is not of
** that form. */
static int key_bound_div(KeyBounds *kb, const Expr *c, Expr **lo, Expr **hi)
{
	KernelGen *g = kb->g;
	unsigned long long jv = 1ULL << kb->sv;
	int side = -1;
	for (int k = 0; k < 2 && side < 0; k++) {
		const Expr *q = c->args[k], *o = c->args[1 - k];
		if (q->kind == EX_BINOP && q->op == OP_DIV && q->type == VT_INT &&
		    !(expr_vars(o) & jv) && !(expr_vars(q->args[1]) & jv) &&
		    iv_positive(q->args[1]))
			side = k;
	}
	int coef;
	Expr *r;
	if (side < 0 || !gpu_key_linear(g, kb->sv, c->args[side]->args[0], &coef, &r) || coef != 1)
		return 0;
	Op op = c->op;
	if (side == 1)
		op = swapped(op);
	Expr *d = c->args[side]->args[1], *e = c->args[1 - side], *one = expr_int(g->a, 1);
	/* (j + r) / d op e: the first multiple of d the sum reaches or passes */
	Expr *e1 = op == OP_GT || op == OP_LE ? expr_binop(g->a, OP_ADD, e, one) : e;
	Expr *b = expr_binop(g->a, OP_SUB, expr_binop(g->a, OP_MUL, e1, d), r);
	if (op == OP_GE || op == OP_GT)
		*lo = b;
	else
		*hi = b;
	return 1;
}

static void key_bound(const Expr *c, void *ud)
{
	KeyBounds *kb = ud;
	KernelGen *g = kb->g;
	int cl, cr;
	Expr *rl, *rr, *lo = NULL, *hi = NULL;
	if (c->kind != EX_BINOP || c->op < OP_LT || c->op > OP_GE || c->args[0]->type != VT_INT) {
		kb->rest = expr_and(g->a, (Expr *)kb->rest, (Expr *)c);
		return;
	}
	if (!gpu_key_linear(g, kb->sv, c->args[0], &cl, &rl) ||
	    !gpu_key_linear(g, kb->sv, c->args[1], &cr, &rr) || (cl - cr != 1 && cl - cr != -1)) {
		if (!key_bound_div(kb, c, &lo, &hi)) {
			kb->rest = expr_and(g->a, (Expr *)kb->rest, (Expr *)c);
			return;
		}
	} else {
		/* (cl - cr) j op b */
		Expr *b = expr_binop(g->a, OP_SUB, rr, rl), *one = expr_int(g->a, 1);
		Op op = c->op;
		if (cl - cr == -1) {
			b = expr_binop(g->a, OP_SUB, expr_int(g->a, 0), b);
			op = swapped(op);
		}
		switch (op) {
		case OP_LT: hi = b; break;
		case OP_LE: hi = expr_binop(g->a, OP_ADD, b, one); break;
		case OP_GT: lo = expr_binop(g->a, OP_ADD, b, one); break;
		default: lo = b; break;
		}
	}
	if (lo)
		kb->lo = kb->lo ? expr_binop(g->a, OP_MAX, kb->lo, lo) : lo;
	if (hi)
		kb->hi = kb->hi ? expr_binop(g->a, OP_MIN, kb->hi, hi) : hi;
}

void gpu_key_bounds_expr(KernelGen *g, int i, const Expr *e, Expr **lo, Expr **hi,
			 const Expr **rest)
{
	KeyBounds kb = {g, g->p->np[i].svar, NULL, NULL, NULL};
	if (kb.sv >= 0)
		plan_conjuncts(e, key_bound, &kb);
	else
		kb.rest = e;
	*lo = kb.lo, *hi = kb.hi, *rest = kb.rest;
}

void gpu_key_bounds_of(KernelGen *g, int i, Expr **lo, Expr **hi, const Expr **rest)
{
	gpu_key_bounds_expr(g, i, gpu_node(g, i)->filter, lo, hi, rest);
}

/* The disjuncts of e (an || of ||s, nested any way) into d[], left to
** right, at most GPU_MAX_SPANS; n from the caller's count so far. */
static int disjuncts_from(const Expr *e, const Expr **d, int n)
{
	if (n < 0)
		return n;
	if (e->kind == EX_BINOP && e->op == OP_OR)
		return disjuncts_from(e->args[1], d, disjuncts_from(e->args[0], d, n));
	if (n == GPU_MAX_SPANS)
		return -1;
	d[n] = e;
	return n + 1;
}

int gpu_disjuncts(const Expr *e, const Expr **d)
{
	return e && e->kind == EX_BINOP && e->op == OP_OR ? disjuncts_from(e, d, 0) : 0;
}

/* Where the rest of node i's filter (t->kres) is a disjunction whose every
** disjunct is key bounds and a test of the row alone (Longformer's window,
** its global keys j < G and rows i < G), each disjunct's bounds per row
** slot as key_bounds makes them, an empty pair where the row's test fails:
** a score's test is then two 32-bit compares a disjunct instead of the
** disjunction in 64-bit arithmetic (Longformer's masked tile
** took 64-key tiles for its registers). */
static void union_bounds(KernelGen *g, TileState *t, int i)
{
	const Expr *d[GPU_MAX_SPANS];
	int n = gpu_disjuncts(t->kres[i], d), sv = g->p->np[i].svar;
	t->nunion[i] = 0;
	if (n < 2)
		return;
	Expr *lo[GPU_MAX_SPANS], *hi[GPU_MAX_SPANS];
	const Expr *rest[GPU_MAX_SPANS];
	for (int k = 0; k < n; k++) {
		gpu_key_bounds_expr(g, i, d[k], &lo[k], &hi[k], &rest[k]);
		if (rest[k] && (expr_vars(rest[k]) >> sv & 1))
			return;
	}
	t->ulo[i] = ARENA_ARRAY(g->a, PReg *, n);
	t->uhi[i] = ARENA_ARRAY(g->a, PReg *, n);
	PReg zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	for (int k = 0; k < n; k++) {
		t->ulo[i][k] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
		t->uhi[i][k] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
		for (int h = 0; h < 2 * g->row_blocks; h++) {
			g->node = i, g->half = h, g->row = t->crows[h], g->col = t->cbase,
			g->elem = -1;
			PReg l = gpu_reg(g, PC_B64), u = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_MAX, ".s64", po_r(l),
				po_r(lo[k] ? gpu_expr(g, lo[k]) : zero), po_r(zero));
			gpu_op3(g, PTX_MIN, ".s64", po_r(l), po_r(l), po_r(g->sext));
			gpu_op3(g, PTX_MIN, ".s64", po_r(u),
				po_r(hi[k] ? gpu_expr(g, hi[k]) : g->sext), po_r(g->sext));
			gpu_op3(g, PTX_MAX, ".s64", po_r(u), po_r(u), po_r(zero));
			/* a row the disjunct's row test excludes: an empty interval */
			if (rest[k]) {
				PReg f = gpu_expr(g, rest[k]);
				gpu_op4(g, PTX_SELP, ".b64", po_r(u), po_r(u), po_r(zero), po_r(f));
			}
			PReg lr = gpu_u32(g, l), ur = gpu_u32(g, u);
			gpu_op3(g, PTX_SUB, ".s32", po_r(lr), po_r(lr), po_r(t->cbase32));
			gpu_op3(g, PTX_SUB, ".s32", po_r(ur), po_r(ur), po_r(t->cbase32));
			t->ulo[i][k][h] = lr, t->uhi[i][k][h] = ur;
		}
	}
	t->nunion[i] = n;
	t->kres[i] = NULL;
}

/* Key bounds of node i per row slot, computed once per masked tile body
** (affine masks: causal, windows, kv_len), clamped into [0, sext] so that
** 32-bit compares of the tile's keys decide them: two compares per score
** instead of the filter's 64-bit arithmetic, with the bounds taken
** relative to the thread's first column. */
static int key_bounds(KernelGen *g, TileState *t, int i)
{
	if (t->kb[i])
		return t->kb[i] > 0;
	const Node *n = gpu_node(g, i);
	KeyBounds kb = {g, g->p->np[i].svar, NULL, NULL, NULL};
	t->kb[i] = -1;
	if (kb.sv < 0)
		return 0;
	plan_conjuncts(n->filter, key_bound, &kb);
	t->kres[i] = kb.rest;
	t->klo[i] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
	t->khi[i] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
	PReg zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	for (int h = 0; h < 2 * g->row_blocks; h++) {
		g->node = i, g->half = h, g->row = t->crows[h], g->col = t->cbase, g->elem = -1;
		PReg lo = zero, hi = g->sext, l = gpu_reg(g, PC_B64), u = gpu_reg(g, PC_B64);
		if (kb.lo)
			lo = gpu_expr(g, kb.lo);
		if (kb.hi)
			hi = gpu_expr(g, kb.hi);
		gpu_op3(g, PTX_MAX, ".s64", po_r(l), po_r(lo), po_r(zero));
		gpu_op3(g, PTX_MIN, ".s64", po_r(l), po_r(l), po_r(g->sext));
		gpu_op3(g, PTX_MIN, ".s64", po_r(u), po_r(hi), po_r(g->sext));
		gpu_op3(g, PTX_MAX, ".s64", po_r(u), po_r(u), po_r(zero));
		/* relative to the thread's first column: a score's test is then
		** two compares of the bounds with its column offset, an immediate */
		PReg lr = gpu_u32(g, l), ur = gpu_u32(g, u);
		gpu_op3(g, PTX_SUB, ".s32", po_r(lr), po_r(lr), po_r(t->cbase32));
		gpu_op3(g, PTX_SUB, ".s32", po_r(ur), po_r(ur), po_r(t->cbase32));
		t->klo[i][h] = lr, t->khi[i][h] = ur;
	}
	union_bounds(g, t, i);
	t->kb[i] = 1;
	return 1;
}

/* Whether element el is in node i's mask (a tile on the masked path). */
static PReg elem_ok(KernelGen *g, TileState *t, int i, int el)
{
	/* keys past the end of the stream are zero padding, never data; nodes
	** with the same filter (softmax's max, sum and P V) share one predicate,
	** kept as a bit (64 live predicates would take 64 registers) */
	PReg ok = gpu_reg(g, PC_PRED);
	int w = el / 32, bit = el % 32, src = -1;
	for (int k = 0; k < i && src < 0; k++)
		if (t->okset[k][el] && same_filter(g, k, i))
			src = k;
	if (src >= 0) {
		PReg b = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_AND, ".b32", po_r(b), po_r(t->okw[src][w]), po_i((int64_t)1 << bit));
		gpu_op3(g, PTX_SETP, ".ne.b32", po_r(ok), po_r(b), po_i(0));
	} else if (key_bounds(g, t, i)) {
		/* lo <= cbase + off < hi, as (lo - cbase) <= off and (hi - cbase) > off */
		int rs = gpu_el_rs(g, el), off = gpu_el_nt(g, el) * 8 + (el & 1);
		gpu_op3(g, PTX_SETP, ".le.s32", po_r(ok), po_r(t->klo[i][rs]), po_i(off));
		gpu_op4(g, PTX_SETP, ".gt.and.s32", po_r(ok), po_r(t->khi[i][rs]), po_i(off),
			po_r(ok));
		if (t->kres[i]) {
			scope_elem(g, t, i, el);
			PReg f = gpu_expr(g, t->kres[i]);
			gpu_op3(g, PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(f));
		}
		if (t->nunion[i]) {
			PReg u = gpu_reg(g, PC_PRED), v = gpu_reg(g, PC_PRED);
			for (int k = 0; k < t->nunion[i]; k++) {
				PReg x = k ? v : u;
				gpu_op3(g, PTX_SETP, ".le.s32", po_r(x), po_r(t->ulo[i][k][rs]),
					po_i(off));
				gpu_op4(g, PTX_SETP, ".gt.and.s32", po_r(x), po_r(t->uhi[i][k][rs]),
					po_i(off), po_r(x));
				if (k)
					gpu_op3(g, PTX_OR, ".pred", po_r(u), po_r(u), po_r(v));
			}
			gpu_op3(g, PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(u));
		}
	} else {
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(ok), po_r(key_of(g, t, el, 0)), po_r(g->sext));
		if (gpu_node(g, i)->filter) {
			scope_elem(g, t, i, el);
			PReg f = gpu_expr(g, gpu_node(g, i)->filter);
			gpu_op3(g, PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(f));
		}
		if (!t->okw[i][w].n) {
			t->okw[i][w] = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_MOV, ".b32", po_r(t->okw[i][w]), po_i(0));
		}
		PReg b = gpu_reg(g, PC_B32);
		gpu_op4(g, PTX_SELP, ".b32", po_r(b), po_i((int64_t)1 << bit), po_i(0), po_r(ok));
		gpu_op3(g, PTX_OR, ".b32", po_r(t->okw[i][w]), po_r(t->okw[i][w]), po_r(b));
		t->okset[i][el] = 1;
	}
	return ok;
}

/* v where element el is in node i's mask, else identity. */
static PReg mask_elem(KernelGen *g, TileState *t, int i, int el, PReg v, float identity)
{
	PReg ok = elem_ok(g, t, i, el), r = gpu_reg(g, PC_F32);
	gpu_op4(g, PTX_SELP, ".f32", po_r(r), po_r(v), po_f(identity), po_r(ok));
	return r;
}

/* An element's contribution to a reduction: masked points give identity. */
static PReg masked_value(KernelGen *g, TileState *t, int i, int el, const Expr *body, int masked,
			 float identity)
{
	scope_elem(g, t, i, el);
	PReg v = gpu_expr(g, body);
	return masked ? mask_elem(g, t, i, el, v, identity) : v;
}

/* GEMM2 node i's states rebased for this tile, unless the tile's lazy
** rescale did (or left only the accumulators, gpu_lazy_acc). */
static void pv_rebase(KernelGen *g, TileState *t, int i)
{
	if (!t->rescaled)
		gpu_rescale_node(g, t, i);
	else if (t->acc_late)
		gpu_lazy_acc(g, t, i);
}

/* O += P V of GEMM2 node i: P's elements with their mask, the states
** rebased, then the target's contraction. Where an earlier tile's
** contraction may still write the accumulators, they are rebased after P,
** once it is done, so that P's values are computed while it runs. */
static void pv_tile(KernelGen *g, TileState *t, int i, int masked)
{
	const PVContraction *pv = &g->s->pv[g->s->node[i].gemm];
	if (!g->t->acc_wait)
		pv_rebase(g, t, i);
	PReg x[GPU_MAXNEL];
	for (int el = 0; el < g->row_blocks * g->nel; el++)
		x[el] = masked_value(g, t, i, el, pv->x, masked && !t->moid[i], 0.0f);
	if (g->t->acc_wait) {
		if (!t->acc_waited)
			g->t->acc_wait(g, i);
		t->acc_waited = 1;
		pv_rebase(g, t, i);
	}
	g->t->contract_pv(g, i, x);
}

/* The f32 output's address at the CTA's grid indices and streamed row r
** (b64; its last index, e, is 0), for SN_CROSS node i: where each
** target's contract_cross adds its sums. */
PReg gpu_cross_row_addr(KernelGen *g, int i, PReg r)
{
	const Node *n = gpu_node(g, i);
	int id = n->out->id;
	PReg off = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(off), po_i(0));
	for (int v = 0; v < n->nfree - 1; v++) {
		int cls = g->p->cls[i][v];
		PReg x = cls == g->s->scls ? r : g->grid[cls];
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(off), po_r(x), po_r(g->par.stride[id][v]),
			po_r(off));
	}
	PReg a = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(off), po_i(4), po_r(g->par.tptr[id]));
	return a;
}

/* R += X^T A of SN_CROSS node i, its first step: X's elements with their
** mask, and zero in the rows past the CTA's (zero-filled rows of A, but X
** there may be inf), staged by the target; gpu_tile_body contracts after
** the other nodes. */
static void cross_tile(KernelGen *g, TileState *t, int i, int masked)
{
	const CrossContraction *cc = &g->s->cross[g->s->node[i].gemm];
	PReg x[GPU_MAXNEL], in[GPU_MAXRS];
	for (int h = 0; h < 2 * g->row_blocks; h++) {
		in[h] = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in[h]), po_r(t->rows[h]), po_r(g->qext));
	}
	for (int el = 0; el < g->row_blocks * g->nel; el++) {
		PReg v = masked_value(g, t, i, el, cc->x, masked && !t->moid[i], 0.0f);
		x[el] = gpu_reg(g, PC_F32);
		gpu_op4(g, PTX_SELP, ".f32", po_r(x[el]), po_r(v), po_f(0.0f),
			po_r(in[gpu_el_rs(g, el)]));
	}
	g->t->cross_stage(g, i, x);
}

/* The nodes of one tile in order (masked: with per-element masks). */
void gpu_tile_body(KernelGen *g, TileState *t, int masked)
{
	const Cascade *c = g->c;
	int nel = g->row_blocks * g->nel, nrs = 2 * g->row_blocks;
	gpu_expr_forget(g, 0);
	gpu_tile_rows(g, t);
	for (int i = 0; i < c->nodes.n; i++) {
		memset(t->okw[i], 0, sizeof(PReg) * (size_t)(nel / 32));
		memset(t->okset[i], 0, (size_t)nel);
		t->kb[i] = 0;
	}
	if (masked)
		t->cbase32 = gpu_u32(g, t->cbase);
	t->rescaled = 0, t->acc_late = 0, t->acc_waited = 0;
	if (t->lastref >= 0)
		t->chg = gpu_pconst(g, 0);
	g->masked_ninf = masked && t->mo >= 0;
	gpu_scale_tile(g);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = gpu_node(g, i);
		int mo = masked && i == t->mo, own = masked && !t->moid[i];
		switch (g->s->node[i].kind) {
		case SN_GEMM1:
			for (int el = 0; el < nel && mo; el++)
				g->tile[i][el] = mask_elem(g, t, i, el, g->tile[i][el], -INFINITY);
			break;
		case SN_MAP:
			for (int el = 0; el < nel; el++) {
				scope_elem(g, t, i, el);
				/* c * G kept as G: no instruction (scale.c) */
				g->tile[i][el] = gpu_folded(g, i)
						     ? g->tile[gpu_fold_source(g, i)][el]
						     : gpu_expr(g, n->body);
				if (mo)
					g->tile[i][el] =
					    mask_elem(g, t, i, el, g->tile[i][el], -INFINITY);
			}
			break;
		case SN_RMAX: {
			/* max[j](c G) = c max[j](G), c >= 0: one multiply per row
			** instead of one per score (scale.c) */
			int fold = gpu_folded_read(g, n->body);
			for (int h = 0; h < nrs; h++) {
				PReg m = gpu_fconst(g, -INFINITY);
				for (int el = 0; el < nel; el++) {
					if (gpu_el_rs(g, el) != h)
						continue;
					g->unscaled = fold >= 0;
					PReg v = masked_value(g, t, i, el, n->body, own, -INFINITY);
					g->unscaled = 0;
					gpu_op3(g, PTX_MAX, ".f32", po_r(m), po_r(m), po_r(v));
				}
				m = gpu_quad_reduce(g, m, 1);
				if (fold >= 0) {
					PReg cm = gpu_reg(g, PC_F32);
					gpu_op3(g, PTX_MUL, ".f32", po_r(cm), po_r(m),
						po_r(gpu_scale_c(g, fold, 0)));
					m = cm;
				}
				if (t->lazy[i]) {
					gpu_lazy_max(g, t, i, h, m);
					continue;
				}
				gpu_op3(g, PTX_MAX, ".f32", po_r(g->rowv[i][h]),
					po_r(g->rowv[i][h]), po_r(m));
			}
			/* right after the last reference moves, while the scores
			** are the only tile values live */
			if (i == t->lastref)
				gpu_lazy_rescale(g, t);
			break;
		}
		case SN_REF:
			for (int h = 0; h < nrs; h++) {
				g->node = i, g->half = h, g->row = t->crows[h];
				PReg v = gpu_expr(g, n->body);
				gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
			break;
		case SN_RSUM:
			for (int h = 0; h < nrs; h++) {
				PReg acc = g->rowv[i][h];
				if (!t->rescaled)
					gpu_rescale_row(g, t, i, h);
				for (int el = 0; el < nel; el++) {
					if (gpu_el_rs(g, el) != h)
						continue;
					PReg v = masked_value(g, t, i, el, n->body, own, 0.0f);
					gpu_op3(g, PTX_ADD, ".f32", po_r(acc), po_r(acc), po_r(v));
				}
			}
			break;
		case SN_GEMM2: pv_tile(g, t, i, masked); break;
		case SN_CROSS: cross_tile(g, t, i, masked); break;
		default: break;
		}
	}
	for (int i = 0; i < c->nodes.n; i++)
		if (g->s->node[i].kind == SN_CROSS)
			g->t->contract_cross(g, i);
	g->masked_ninf = 0;
}
