/*
** lowering/gpu/expr.c: cascade expressions as PTX values.
** Floats are f32, integers s64 (b64 registers), booleans predicates. The
** element in scope (query row, key column or value index, tile element)
** is set by the kernel before each evaluation. exp and log go through
** ex2/lg2 with log2(e) folded in, as FlashAttention does. Values reused
** within a tile body or the epilogue (reciprocals, key casts) are kept in
** the ExprCache, which the kernel clears where they change.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/intervals.h"
#include "gpu.h"

static const float LOG2E = 1.4426950408889634f, LN2 = 0.6931471805599453f;

/* Values reused within one tile body or the epilogue. */
typedef struct ExprCache {
	/* -log2(e) * b ('l'), 1 / b ('r') or its guarded form ('z') for row
	** values b */
	PReg memo_in[16], memo_out[16];
	char memo_kind[16];
	int nmemo;
	/* float(rest + c j) per row slot, reused within one tile body; for
	** u * float(rest + c j) (e the product) also u */
	struct {
		const Expr *e;
		int half, coef; /* half -1 - m: one value for row block m (shift.c) */
		PReg v, u;
		PReg *col; /* half < 0: the element values per column offset (< bn) */
	} kc[16];
	int nkc;
	/* integer values of a tile body's elements that depend on the row
	** alone ('q', per row slot) or the key alone ('s', per column offset):
	** a 2-D window's i / W and j % W, once per row or column instead of
	** once per element */
	struct {
		const Expr *e;
		char kind;
		int slot, node, sub; /* sub: computed in a subscript (clamped keys) */
		PReg v;
	} im[GPU_INDEX_MEMO];
	int nim;
} ExprCache;

void gpu_expr_init(KernelGen *g)
{
	g->cache = ARENA_NEW(g->a, ExprCache);
}

void gpu_expr_forget(KernelGen *g, int rows_only)
{
	g->cache->nmemo = 0;
	if (!rows_only)
		g->cache->nkc = 0, g->cache->nim = 0;
}

PReg gpu_fconst(KernelGen *g, float v)
{
	PReg r = gpu_reg(g, PC_F32);
	gpu_op2(g, PTX_MOV, ".f32", po_r(r), po_f(v));
	return r;
}

static PReg iconst(KernelGen *g, long v)
{
	PReg r = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(r), po_i(v));
	return r;
}

/* A predicate constant (true for v != 0). */
PReg gpu_pconst(KernelGen *g, int v)
{
	PReg z = gpu_reg(g, PC_B32), p = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_MOV, ".b32", po_r(z), po_i(0));
	gpu_op3(g, PTX_SETP, v ? ".eq.s32" : ".ne.s32", po_r(p), po_r(z), po_i(0));
	return p;
}

/* Which of the kernel's index kinds variable v of the node in scope is
** (plan_index_kind), with the value index of the contractions with V
** apart in the epilogue, where it is the element's column. */
int gpu_index_kind(KernelGen *g, int v)
{
	IndexKind k = plan_index_kind(g->p, g->node, v);
	if (k == IDX_KEY)
		return 's';
	if (k == IDX_QUERY)
		return 'q';
	if (gpu_value_class(g->s, g->p->cls[g->node][v]) && g->stage == 1)
		return 'e';
	return k == IDX_GRID ? 'g' : 'x';
}

PReg gpu_index_value(KernelGen *g, int v)
{
	if (g->inner.n && g->p->cls[g->node][v] == g->inner_cls)
		return g->inner;
	switch (gpu_index_kind(g, v)) {
	case 'q': return g->row;
	case 's':
		/* a padding key past the keys is clamped only where it addresses
		** memory: elsewhere its value is masked out (key bounds and the
		** stream's end stop at the keys), and the clamp cost a 64-bit
		** compare and two selects per column of a masked tile */
		if (!g->in_subscript && g->col_base.n && gpu_same_preg(g->col_of, g->col)) {
			PReg k = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_ADD, ".s64", po_r(k), po_r(g->col_base), po_i(g->col_off));
			return k;
		}
		return g->col;
	case 'e':
		/* g->col counts the CTA's own columns: its slice's start added */
		if (g->vcol0.n) {
			PReg e = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_ADD, ".s64", po_r(e), po_r(g->col), po_r(g->vcol0));
			return e;
		}
		return g->col;
	case 'g': return g->grid[g->p->cls[g->node][v]];
	default: return iconst(g, 0); /* not reachable for shapes gpu_shape accepts */
	}
}

/* Whether e reads an input tensor: data the caller gives, which no rule of
** the cascade bounds (a computed index, T5's bucket, is bounded by its
** own expression). */
static int reads_input(const Expr *e)
{
	if (e->kind == EX_ACCESS && e->tensor->kind == TK_IN)
		return 1;
	for (int k = 0; k < e->nargs; k++)
		if (reads_input(e->args[k]))
			return 1;
	return 0;
}

/* off where 0 <= off < the elements of t's buffer, else 0: a read whose
** subscripts read an input (lse[cu_q[b] + i, h] at a row past the last
** sequence, which the node's filter masks) stays inside its buffer, as the
** tile loaders' gathered rows do (gather.c). */
static PReg inside_buffer(KernelGen *g, const Tensor *t, PReg off)
{
	int rank = tensor_buf_rank(t);
	Expr *const *shape = tensor_buf_shape(t);
	PReg n = iconst(g, 1);
	g->in_subscript++;
	for (int k = 0; k < rank; k++) {
		PReg m = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MUL, ".lo.s64", po_r(m), po_r(n), po_r(gpu_expr(g, shape[k])));
		n = m;
	}
	g->in_subscript--;
	PReg lo = gpu_reg(g, PC_PRED), hi = gpu_reg(g, PC_PRED), r = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(hi), po_r(off), po_r(n));
	gpu_op4(g, PTX_SETP, ".ge.and.s64", po_r(lo), po_r(off), po_i(0), po_r(hi));
	gpu_op4(g, PTX_SELP, ".b64", po_r(r), po_r(off), po_i(0), po_r(lo));
	return r;
}

PReg gpu_addr(KernelGen *g, const Tensor *t, Expr *const *args)
{
	int rank = t->rank;
	if (t->pack) {
		/* a packed output's place: its logical point through Pack.at */
		Expr **at = ARENA_ARRAY(g->a, Expr *, t->pack->rank);
		for (int k = 0; k < t->pack->rank; k++)
			at[k] = expr_subst(g->a, t->pack->at[k], args, t->rank);
		args = at, rank = t->pack->rank;
	}
	PReg off = iconst(g, 0);
	g->in_subscript++;
	for (int k = 0; k < rank; k++) {
		PReg x = gpu_expr(g, args[k]);
		PReg n = gpu_reg(g, PC_B64);
		/* the last dimension's stride is 1: libattnrt refuses any other
		** where that dimension has more than one element (where it has
		** one, the index is 0); an add, not a 64-bit multiply, a read */
		if (k == rank - 1)
			gpu_op3(g, PTX_ADD, ".s64", po_r(n), po_r(x), po_r(off));
		else
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(n), po_r(x),
				po_r(g->par.stride[t->id][k]), po_r(off));
		off = n;
	}
	g->in_subscript--;
	int data = 0;
	for (int k = 0; k < rank && t->kind == TK_IN; k++)
		data |= reads_input(args[k]);
	if (data)
		off = inside_buffer(g, t, off);
	int es = dtype_size(t->dtype);
	PReg a = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(off), po_i(es), po_r(g->par.tptr[t->id]));
	return a;
}

/* A read of an input tensor, widened to the expression's type. */
PReg gpu_load(KernelGen *g, const Tensor *t, Expr *const *args)
{
	PReg a = gpu_addr(g, t, args);
	PReg r;
	switch (t->dtype) {
	case DT_F32:
		r = gpu_reg(g, PC_F32);
		gpu_op2(g, PTX_LD, ".global.nc.f32", po_r(r), po_mem(a, 0));
		return r;
	case DT_BF16:
	case DT_F16: {
		PReg h = gpu_reg(g, PC_B16);
		gpu_op2(g, PTX_LD, ".global.nc.b16", po_r(h), po_mem(a, 0));
		r = gpu_reg(g, PC_F32);
		gpu_op2(g, PTX_CVT, t->dtype == DT_BF16 ? ".f32.bf16" : ".f32.f16", po_r(r),
			po_r(h));
		return r;
	}
	case DT_I32: {
		PReg w = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_LD, ".global.nc.s32", po_r(w), po_mem(a, 0));
		r = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_CVT, ".s64.s32", po_r(r), po_r(w));
		return r;
	}
	case DT_BOOL: {
		PReg h = gpu_reg(g, PC_B16);
		gpu_op2(g, PTX_LD, ".global.nc.u8", po_r(h), po_mem(a, 0));
		r = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".ne.u16", po_r(r), po_r(h), po_i(0));
		return r;
	}
	default: return gpu_fconst(g, NAN);
	}
}

/* Values of computed tensors live in registers: tile values per element,
** running values per row, value-index results per accumulator element. */
static PReg computed(KernelGen *g, const Expr *e)
{
	int id = e->tensor->def->id;
	switch (g->s->node[id].kind) {
	case SN_MAP:
		if (gpu_folded(g, id) && !g->unscaled) {
			PReg d = gpu_reg(g, PC_F32);
			gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(gpu_scale_c(g, id, 0)),
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
static PReg cmp_i32(KernelGen *g, const Expr *e)
{
	PReg w[2];
	for (int k = 0; k < 2; k++) {
		const Expr *x = e->args[k];
		PReg a = gpu_addr(g, x->tensor, x->args);
		w[k] = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_LD, ".global.nc.s32", po_r(w[k]), po_mem(a, 0));
	}
	PReg d = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, arena_printf(g->a, ".%s.s32", cmp_name((Op)e->op)), po_r(d),
		po_r(w[0]), po_r(w[1]));
	return d;
}

/* The memo of a value derived from register b ('l': b * -log2(e), 'r':
** 1 / b, 'z': 1 / b or 0 where b = 0), or an empty register. */
static PReg memo_find(const KernelGen *g, PReg b, char kind)
{
	for (int i = 0; i < g->cache->nmemo; i++)
		if (g->cache->memo_in[i].n == b.n && g->cache->memo_in[i].cls == b.cls &&
		    g->cache->memo_kind[i] == kind)
			return g->cache->memo_out[i];
	return (PReg){0};
}

static void memo_add(KernelGen *g, PReg b, char kind, PReg r)
{
	if (g->cache->nmemo < 16)
		g->cache->memo_in[g->cache->nmemo] = b, g->cache->memo_out[g->cache->nmemo] = r,
		g->cache->memo_kind[g->cache->nmemo++] = kind;
}

/* b * -log2(e), once per row value within a tile body (the kernel clears
** the memo where row values change). */
static PReg neg_log2e(KernelGen *g, PReg b)
{
	PReg r = memo_find(g, b, 'l');
	if (r.n)
		return r;
	r = gpu_reg(g, PC_F32);
	gpu_op3(g, PTX_MUL, ".f32", po_r(r), po_r(b), po_f(-LOG2E));
	if (g->masked_ninf) {
		/* masked scores are -inf (masking once): a row with no key yet has
		** b = -inf too, and exp(-inf - -inf) must be 0, not NaN */
		PReg p = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".eq.f32", po_r(p), po_r(b), po_f(-INFINITY));
		gpu_op4(g, PTX_SELP, ".f32", po_r(r), po_f(0.0f), po_r(r), po_r(p));
	}
	memo_add(g, b, 'l', r);
	return r;
}

/* 1 / b, correctly rounded, once per register b in the epilogue. */
static PReg recip(KernelGen *g, PReg b)
{
	PReg r = memo_find(g, b, 'r');
	if (r.n)
		return r;
	r = gpu_reg(g, PC_F32);
	gpu_op2(g, PTX_RCP, ".rn.f32", po_r(r), po_r(b));
	memo_add(g, b, 'r', r);
	return r;
}

/* The epilogue's `b == 0 ? 0 : a / b` (softmax over a row with no key):
** a times z = (b == 0 ? 0 : 1 / b), z once per row value b, instead of a
** select per output element (128 per thread at D = 128). The two differ
** only where a is not finite on a row with b = 0, and there a is a sum
** over no key (0), unless V holds infinities. An empty register when e is
** not of that form. */
static PReg guarded_quotient(KernelGen *g, const Expr *e)
{
	const Expr *c = e->args[0], *q = e->args[2];
	if (!g->stage || e->type != VT_FLOAT || e->args[1]->kind != EX_FLOAT ||
	    e->args[1]->fval != 0.0 || q->kind != EX_BINOP || q->op != OP_DIV ||
	    c->kind != EX_BINOP || c->op != OP_EQ || c->args[1]->kind != EX_FLOAT ||
	    c->args[1]->fval != 0.0 || !expr_equal(c->args[0], q->args[1]))
		return (PReg){0};
	PReg b = gpu_expr(g, q->args[1]), z = memo_find(g, b, 'z');
	if (!z.n) {
		PReg p = gpu_reg(g, PC_PRED);
		z = gpu_reg(g, PC_F32);
		gpu_op3(g, PTX_SETP, ".eq.f32", po_r(p), po_r(b), po_f(0.0f));
		gpu_op4(g, PTX_SELP, ".f32", po_r(z), po_f(0.0f), po_r(recip(g, b)), po_r(p));
		memo_add(g, b, 'z', z);
	}
	PReg a = gpu_expr(g, q->args[0]), d = gpu_reg(g, PC_F32);
	gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(a), po_r(z));
	return d;
}

/* Static bounds [*lo, *hi] of integer expression e, with every index and
** dim in [0, 2^31 - 2^20] (the launcher checks dims and index ranges:
** divide.c); 0 where e is not made of indices, dims, literals, sums,
** differences, minima, maxima, and quotients and remainders by a positive
** divisor. */
static int static_bounds(const Expr *e, long *lo, long *hi)
{
	const long top = 2147483647L - (1L << 20);
	long a0, a1, b0, b1;
	switch (e->kind) {
	case EX_INDEX:
	case EX_DIM: *lo = 0, *hi = top; return 1;
	case EX_INT: *lo = *hi = e->ival; return e->ival > -(1L << 40) && e->ival < (1L << 40);
	case EX_BINOP: break;
	default: return 0;
	}
	if (e->type != VT_INT || !static_bounds(e->args[0], &a0, &a1))
		return 0;
	if (!static_bounds(e->args[1], &b0, &b1))
		return 0;
	if ((e->op == OP_DIV || e->op == OP_MOD) && iv_positive(e->args[1])) {
		/* floor x / d for d >= 1 lies between x and 0; x % d in [0, d - 1],
		** and at most x where x >= 0 */
		if (e->op == OP_MOD)
			*lo = 0, *hi = a0 >= 0 && a1 < b1 ? a1 : b1 - 1;
		else
			*lo = a0 < 0 ? a0 : 0, *hi = a1 > 0 ? a1 : 0;
		return 1;
	}
	switch (e->op) {
	case OP_ADD: *lo = a0 + b0, *hi = a1 + b1; return 1;
	case OP_SUB: *lo = a0 - b1, *hi = a1 - b0; return 1;
	case OP_MIN: *lo = a0 < b0 ? a0 : b0, *hi = a1 < b1 ? a1 : b1; return 1;
	case OP_MAX: *lo = a0 > b0 ? a0 : b0, *hi = a1 > b1 ? a1 : b1; return 1;
	case OP_MUL: {
		/* the corners' products, where each is below 2^60 */
		long c[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
		if (labs(a0) >= 1L << 30 || labs(a1) >= 1L << 30 || labs(b0) >= 1L << 30 ||
		    labs(b1) >= 1L << 30)
			return 0;
		*lo = *hi = c[0];
		for (int k = 1; k < 4; k++)
			*lo = c[k] < *lo ? c[k] : *lo, *hi = c[k] > *hi ? c[k] : *hi;
		return 1;
	}
	default: return 0;
	}
}

/* e's value fits 32 signed bits wherever a kernel evaluates it. */
static int s32_valued(const Expr *e)
{
	long lo, hi;
	return static_bounds(e, &lo, &hi) && lo >= INT32_MIN && hi <= INT32_MAX;
}

static PReg binop(KernelGen *g, const Expr *e)
{
	if (e->op >= OP_LT && e->op <= OP_NE && is_i32_read(e->args[0]) && is_i32_read(e->args[1]))
		return cmp_i32(g, e);
	PReg l = gpu_expr(g, e->args[0]), r = gpu_expr(g, e->args[1]);
	VType t = e->args[0]->type;
	Op op = (Op)e->op;
	PReg d;
	if (op >= OP_LT && op <= OP_NE) {
		d = gpu_reg(g, PC_PRED);
		if (t == VT_BOOL) {
			gpu_op3(g, PTX_XOR, ".pred", po_r(d), po_r(l), po_r(r));
			if (op == OP_EQ)
				gpu_op2(g, PTX_NOT, ".pred", po_r(d), po_r(d));
			return d;
		}
		/* integers that fit 32 bits compare in one instruction, not two
		** (a 2-D window's column tests, per score of a masked tile) */
		int narrow = t == VT_INT && s32_valued(e->args[0]) && s32_valued(e->args[1]);
		if (narrow) {
			PReg l32 = gpu_reg(g, PC_B32), r32 = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_CVT, ".u32.u64", po_r(l32), po_r(l));
			gpu_op2(g, PTX_CVT, ".u32.u64", po_r(r32), po_r(r));
			l = l32, r = r32;
		}
		const char *m = arena_printf(g->a, ".%s.%s", cmp_name(op),
					     t == VT_FLOAT ? "f32"
					     : narrow      ? "s32"
							   : "s64");
		gpu_op3(g, PTX_SETP, m, po_r(d), po_r(l), po_r(r));
		return d;
	}
	if (op == OP_AND || op == OP_OR) {
		d = gpu_reg(g, PC_PRED);
		gpu_op3(g, op == OP_AND ? PTX_AND : PTX_OR, ".pred", po_r(d), po_r(l), po_r(r));
		return d;
	}
	if (t == VT_INT) {
		if (op == OP_DIV || op == OP_MOD)
			return gpu_floordiv(g, l, r, e->args[1], op == OP_MOD,
					    gpu_small_dividend(e->args[0]));
		d = gpu_reg(g, PC_B64);
		static const PtxOpcode iop[] = {[OP_ADD] = PTX_ADD,
						[OP_SUB] = PTX_SUB,
						[OP_MUL] = PTX_MUL,
						[OP_MAX] = PTX_MAX,
						[OP_MIN] = PTX_MIN};
		gpu_op3(g, iop[op], op == OP_MUL ? ".lo.s64" : ".s64", po_r(d), po_r(l), po_r(r));
		return d;
	}
	d = gpu_reg(g, PC_F32);
	switch (op) {
	case OP_ADD: gpu_op3(g, PTX_ADD, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_SUB: gpu_op3(g, PTX_SUB, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_MUL: gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_DIV:
		/* per score (in the stream): div.full, 2 ulp, a few instructions
		** instead of IEEE division's tens (softcap's s / cap); in the
		** epilogue, a correctly rounded reciprocal of each row value
		** (softmax's sum) times each element: one IEEE division per row
		** instead of one per output element (128 per thread at D = 128) */
		if (g->stage) {
			gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(l), po_r(recip(g, r)));
			break;
		}
		gpu_op3(g, PTX_DIV, ".full.f32", po_r(d), po_r(l), po_r(r));
		break;
	case OP_MAX: gpu_op3(g, PTX_MAX, ".f32", po_r(d), po_r(l), po_r(r)); break;
	case OP_MIN: gpu_op3(g, PTX_MIN, ".f32", po_r(d), po_r(l), po_r(r)); break;
	default: break;
	}
	return d;
}

/* A predicate: x compared (cmp: ".gt.f32" ...) with the constant c. */
static PReg fcmp(KernelGen *g, const char *cmp, PReg x, float c)
{
	PReg p = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, cmp, po_r(p), po_r(x), po_f(c));
	return p;
}

/* d = p ? a : d. */
static void fpick(KernelGen *g, PReg d, PReg a, PReg p)
{
	gpu_op4(g, PTX_SELP, ".f32", po_r(d), po_r(a), po_r(d), po_r(p));
}

/* log(1 + x) by Kahan's trick: with u = 1 + x rounded, log(u) x / (u - 1)
** cancels u's rounding error (and lg2.approx's relative error stays), so
** that small x keep their digits; u = 1 gives x, u = inf gives inf. The
** division is div.full's (2 ulp, a few instructions): div.rn's exact
** rounding is a subroutine call, and lg2.approx's error is larger. */
static PReg f_log1p(KernelGen *g, PReg x)
{
	PReg u = gpu_reg(g, PC_F32), l = gpu_reg(g, PC_F32), m = gpu_reg(g, PC_F32),
	     d = gpu_reg(g, PC_F32);
	gpu_op3(g, PTX_ADD, ".rn.f32", po_r(u), po_r(x), po_f(1.0f));
	gpu_op2(g, PTX_LG2, ".approx.f32", po_r(l), po_r(u));
	gpu_op3(g, PTX_MUL, ".f32", po_r(l), po_r(l), po_f(LN2));
	gpu_op3(g, PTX_SUB, ".rn.f32", po_r(m), po_r(u), po_f(1.0f));
	gpu_op3(g, PTX_DIV, ".full.f32", po_r(d), po_r(x), po_r(m));
	gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(d), po_r(l));
	fpick(g, d, u, fcmp(g, ".eq.f32", u, INFINITY));
	fpick(g, d, x, fcmp(g, ".eq.f32", u, 1.0f));
	return d;
}

/* exp(x) - 1 by Kahan's trick: with u = exp(x), (u - 1) x / log(u); u = 1
** gives x, u - 1 = -1 gives -1, u = inf gives inf; div.full as in
** f_log1p. */
static PReg f_expm1(KernelGen *g, PReg x)
{
	PReg t = gpu_reg(g, PC_F32), u = gpu_reg(g, PC_F32), l = gpu_reg(g, PC_F32),
	     m = gpu_reg(g, PC_F32), d = gpu_reg(g, PC_F32);
	gpu_op3(g, PTX_MUL, ".f32", po_r(t), po_r(x), po_f(LOG2E));
	gpu_op2(g, PTX_EX2, ".approx.f32", po_r(u), po_r(t));
	gpu_op2(g, PTX_LG2, ".approx.f32", po_r(l), po_r(u));
	gpu_op3(g, PTX_MUL, ".f32", po_r(l), po_r(l), po_f(LN2));
	gpu_op3(g, PTX_SUB, ".rn.f32", po_r(m), po_r(u), po_f(1.0f));
	gpu_op3(g, PTX_DIV, ".full.f32", po_r(d), po_r(x), po_r(l));
	gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(d), po_r(m));
	fpick(g, d, m, fcmp(g, ".eq.f32", m, -1.0f));
	fpick(g, d, u, fcmp(g, ".eq.f32", u, INFINITY));
	fpick(g, d, x, fcmp(g, ".eq.f32", u, 1.0f));
	return d;
}

/* erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7):
** 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-x^2), t = 1 / (1 +
** p |x|), with the sign of x. */
static PReg f_erf(KernelGen *g, PReg x)
{
	static const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f,
				   1.061405429f};
	PReg ax = gpu_reg(g, PC_F32), t = gpu_reg(g, PC_F32), p = gpu_reg(g, PC_F32),
	     e = gpu_reg(g, PC_F32), d = gpu_reg(g, PC_F32), n = gpu_reg(g, PC_F32);
	gpu_op2(g, PTX_ABS, ".f32", po_r(ax), po_r(x));
	gpu_op4(g, PTX_FMA, ".rn.f32", po_r(t), po_r(ax), po_f(0.3275911f), po_f(1.0f));
	gpu_op2(g, PTX_RCP, ".rn.f32", po_r(t), po_r(t));
	gpu_op2(g, PTX_MOV, ".f32", po_r(p), po_f(a[4]));
	for (int k = 3; k >= 0; k--)
		gpu_op4(g, PTX_FMA, ".rn.f32", po_r(p), po_r(p), po_r(t), po_f(a[k]));
	gpu_op3(g, PTX_MUL, ".f32", po_r(p), po_r(p), po_r(t));
	gpu_op3(g, PTX_MUL, ".f32", po_r(e), po_r(ax), po_r(ax));
	gpu_op3(g, PTX_MUL, ".f32", po_r(e), po_r(e), po_f(-LOG2E));
	gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(e), po_r(e));
	gpu_op4(g, PTX_FMA, ".rn.f32", po_r(d), po_r(p), po_r(e), po_f(-1.0f));
	gpu_op2(g, PTX_NEG, ".f32", po_r(d), po_r(d));
	gpu_op2(g, PTX_NEG, ".f32", po_r(n), po_r(d));
	fpick(g, d, n, fcmp(g, ".lt.f32", x, 0.0f));
	return d;
}

/* The integer functions as cascade.c defines them: cvt.rzi.s32.f32 rounds
** toward zero, saturates and maps NaN to 0, which is int(x) exactly; ilog2(n)
** is 63 - clz(n), with -1 for n <= 0. */
static PReg int_call(KernelGen *g, const Expr *e)
{
	PReg x = gpu_expr(g, e->args[0]), w = gpu_reg(g, PC_B32), d = gpu_reg(g, PC_B64);
	if (e->op == FN_INT) {
		gpu_op2(g, PTX_CVT, ".rzi.s32.f32", po_r(w), po_r(x));
		gpu_op2(g, PTX_CVT, ".s64.s32", po_r(d), po_r(w));
		return d;
	}
	PReg p = gpu_reg(g, PC_PRED), r = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_CLZ, ".b64", po_r(w), po_r(x));
	gpu_op3(g, PTX_SUB, ".s32", po_r(w), po_i(63), po_r(w));
	gpu_op2(g, PTX_CVT, ".s64.s32", po_r(r), po_r(w));
	gpu_op3(g, PTX_SETP, ".le.s64", po_r(p), po_r(x), po_i(0));
	gpu_op4(g, PTX_SELP, ".b64", po_r(d), po_i(-1), po_r(r), po_r(p));
	return d;
}

static PReg call(KernelGen *g, const Expr *e)
{
	const Expr *a0 = e->args[0];
	if (e->op == FN_INT || e->op == FN_ILOG2)
		return int_call(g, e);
	if (e->op == FN_EXP && a0->kind == EX_BINOP && a0->op == OP_SUB && a0->type == VT_FLOAT) {
		/* exp(a - b) = ex2(a * log2e - b * log2e): one FFMA per score, as
		** FlashAttention folds the max into the exponent */
		const Expr *x = a0->args[0];
		int fold = gpu_folded_read(g, x);
		/* a = c * G kept as G: ex2(G * (c log2e) - b log2e) (scale.c) */
		g->unscaled = fold >= 0;
		PReg a = gpu_expr(g, x);
		g->unscaled = 0;
		PReg b = gpu_expr(g, a0->args[1]);
		PReg t = gpu_reg(g, PC_F32), d = gpu_reg(g, PC_F32);
		if (fold >= 0)
			gpu_op4(g, PTX_FMA, ".rn.f32", po_r(t), po_r(a),
				po_r(gpu_scale_c(g, fold, 1)), po_r(neg_log2e(g, b)));
		else
			gpu_op4(g, PTX_FMA, ".rn.f32", po_r(t), po_r(a), po_f(LOG2E),
				po_r(neg_log2e(g, b)));
		gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(d), po_r(t));
		return d;
	}
	PReg x = gpu_expr(g, a0), d = gpu_reg(g, PC_F32), t;
	switch ((Fn)e->op) {
	case FN_EXP:
		t = gpu_reg(g, PC_F32);
		gpu_op3(g, PTX_MUL, ".f32", po_r(t), po_r(x), po_f(LOG2E));
		gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(d), po_r(t));
		break;
	case FN_EXP2: gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(d), po_r(x)); break;
	case FN_LOG:
		t = gpu_reg(g, PC_F32);
		gpu_op2(g, PTX_LG2, ".approx.ftz.f32", po_r(t), po_r(x));
		gpu_op3(g, PTX_MUL, ".f32", po_r(d), po_r(t), po_f(LN2));
		break;
	case FN_LOG2: gpu_op2(g, PTX_LG2, ".approx.ftz.f32", po_r(d), po_r(x)); break;
	case FN_TANH: gpu_op2(g, PTX_TANH, ".approx.f32", po_r(d), po_r(x)); break;
	case FN_SIGMOID:
		t = gpu_reg(g, PC_F32);
		gpu_op3(g, PTX_MUL, ".f32", po_r(t), po_r(x), po_f(-LOG2E));
		gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(t), po_r(t));
		gpu_op3(g, PTX_ADD, ".f32", po_r(t), po_r(t), po_f(1.0f));
		gpu_op2(g, PTX_RCP, ".approx.ftz.f32", po_r(d), po_r(t));
		break;
	case FN_SQRT: gpu_op2(g, PTX_SQRT, ".rn.f32", po_r(d), po_r(x)); break;
	case FN_RSQRT: gpu_op2(g, PTX_RSQRT, ".approx.ftz.f32", po_r(d), po_r(x)); break;
	case FN_ABS: gpu_op2(g, PTX_ABS, ".f32", po_r(d), po_r(x)); break;
	case FN_RELU: gpu_op3(g, PTX_MAX, ".f32", po_r(d), po_r(x), po_f(0.0f)); break;
	case FN_LOG1P: return f_log1p(g, x);
	case FN_EXPM1: return f_expm1(g, x);
	case FN_ERF: return f_erf(g, x);
	case FN_FLOOR: gpu_op2(g, PTX_CVT, ".rmi.f32.f32", po_r(d), po_r(x)); break;
	case FN_CEIL: gpu_op2(g, PTX_CVT, ".rpi.f32.f32", po_r(d), po_r(x)); break;
	case FN_ROUND: gpu_op2(g, PTX_CVT, ".rni.f32.f32", po_r(d), po_r(x)); break;
	case FN_SIGN:
		gpu_op2(g, PTX_MOV, ".f32", po_r(d), po_r(x));
		fpick(g, d, gpu_fconst(g, -1.0f), fcmp(g, ".lt.f32", x, 0.0f));
		fpick(g, d, gpu_fconst(g, 1.0f), fcmp(g, ".gt.f32", x, 0.0f));
		break;
	case FN_ELU:
		d = f_expm1(g, x);
		fpick(g, d, x, fcmp(g, ".gt.f32", x, 0.0f));
		break;
	case FN_SOFTPLUS: {
		/* max(x, 0) + log1p(exp(-|x|)), as in cascade.c */
		PReg a = gpu_reg(g, PC_F32), r = gpu_reg(g, PC_F32);
		gpu_op2(g, PTX_ABS, ".f32", po_r(a), po_r(x));
		gpu_op3(g, PTX_MUL, ".f32", po_r(a), po_r(a), po_f(-LOG2E));
		gpu_op2(g, PTX_EX2, ".approx.ftz.f32", po_r(a), po_r(a));
		gpu_op3(g, PTX_MAX, ".f32", po_r(r), po_r(x), po_f(0.0f));
		gpu_op3(g, PTX_ADD, ".f32", po_r(d), po_r(r), po_r(f_log1p(g, a)));
		break;
	}
	default: break;
	}
	return d;
}

/* e as coef * j + rest (rest free of j, the node's key variable sv), with
** coef in {-1, 0, 1}; 0 when e is not of that form. */
int gpu_key_linear(KernelGen *g, int sv, const Expr *e, int *coef, Expr **rest)
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
		if (!gpu_key_linear(g, sv, e->args[0], &c1, &r1) ||
		    !gpu_key_linear(g, sv, e->args[1], &c2, &r2))
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
/* The kc entry of e for row slot `half` (-1: all of them), or g->cache->nkc. */
static int kc_find(const KernelGen *g, const Expr *e, int half)
{
	int k = 0;
	while (k < g->cache->nkc && (g->cache->kc[k].e != e || g->cache->kc[k].half != half))
		k++;
	return k;
}

/* The row slot key of a key cast's kc entries: -1 - m where its row part
** comes from row block m's first row (shift.c), the slot otherwise. */
static int kc_half(const KernelGen *g, const Expr *cast)
{
	return gpu_shifted(g, cast) ? -1 - g->half / 2 : g->half;
}

/* The element's value of kc entry k at the column offset in scope: v +
** coef coloff (key_cast) or u coef coloff + v (scaled_key_cast); an entry
** shared by row slots keeps it per column offset, once per tile body. */
static PReg kc_element(KernelGen *g, int k, int scaled)
{
	if (!g->coloff)
		return g->cache->kc[k].v;
	PReg *c = g->cache->kc[k].col ? &g->cache->kc[k].col[g->coloff] : NULL, d;
	if (c && c->n)
		return *c;
	d = gpu_reg(g, PC_F32);
	float off = (float)(g->cache->kc[k].coef * g->coloff);
	if (scaled)
		gpu_op4(g, PTX_FMA, ".rn.f32", po_r(d), po_r(g->cache->kc[k].u), po_f(off),
			po_r(g->cache->kc[k].v));
	else
		gpu_op3(g, PTX_ADD, ".f32", po_r(d), po_r(g->cache->kc[k].v), po_f(off));
	if (c)
		*c = d;
	return d;
}

static PReg key_cast(KernelGen *g, const Expr *e)
{
	const Expr *a = e->args[0];
	int sv = g->p->np[g->node].svar, coef = 0, k;
	Expr *rest;
	if (g->stage || g->elem < 0 || !g->cbase.n || a->type != VT_INT || !fits_s32(a) || sv < 0)
		return (PReg){0};
	int half = kc_half(g, e);
	k = kc_find(g, e, half);
	if (k == g->cache->nkc) {
		if (k == (int)(sizeof g->cache->kc / sizeof g->cache->kc[0]) ||
		    !gpu_key_linear(g, sv, a, &coef, &rest) || coef == 0)
			return (PReg){0};
		PReg row = g->row;
		if (half < 0)
			g->row = g->row0[-1 - half];
		PReg r = gpu_expr(g, rest), x = gpu_reg(g, PC_B64), lo = gpu_reg(g, PC_B32);
		g->row = row;
		gpu_op3(g, coef > 0 ? PTX_ADD : PTX_SUB, ".s64", po_r(x), po_r(r), po_r(g->cbase));
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(lo), po_r(x));
		g->cache->kc[k].e = e, g->cache->kc[k].half = half, g->cache->kc[k].coef = coef;
		g->cache->kc[k].v = gpu_reg(g, PC_F32);
		g->cache->kc[k].col = half < 0 ? ARENA_ARRAY(g->a, PReg, g->bn) : NULL;
		gpu_op2(g, PTX_CVT, ".rn.f32.s32", po_r(g->cache->kc[k].v), po_r(lo));
		g->cache->nkc++;
	}
	return kc_element(g, k, 0);
}

/* u is the same at every key of a row: no key index, no computed values. */
static int row_uniform(KernelGen *g, const Expr *u)
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
static PReg scaled_key_cast(KernelGen *g, const Expr *e)
{
	for (int s = 0; s < 2; s++) {
		const Expr *c = e->args[s], *u = e->args[1 - s];
		if (c->kind != EX_CAST || u->type != VT_FLOAT || !row_uniform(g, u))
			continue;
		int half = kc_half(g, c), k = kc_find(g, e, half), save = g->coloff;
		if (k == g->cache->nkc) {
			if (k == (int)(sizeof g->cache->kc / sizeof g->cache->kc[0]) - 1)
				return (PReg){0};
			g->coloff = 0;
			PReg base = key_cast(g, c);
			g->coloff = save;
			if (!base.n)
				return (PReg){0};
			int coef = g->cache->kc[kc_find(g, c, half)].coef; /* key_cast's entry */
			k = g->cache->nkc++;
			g->cache->kc[k].e = e, g->cache->kc[k].half = half,
			g->cache->kc[k].coef = coef;
			g->cache->kc[k].u = gpu_expr(g, u), g->cache->kc[k].v = gpu_reg(g, PC_F32);
			g->cache->kc[k].col = half < 0 ? ARENA_ARRAY(g->a, PReg, g->bn) : NULL;
			gpu_op3(g, PTX_MUL, ".f32", po_r(g->cache->kc[k].v),
				po_r(g->cache->kc[k].u), po_r(base));
		}
		return kc_element(g, k, 1);
	}
	return (PReg){0};
}

/* Which index e's value follows in a tile body: 'q' the row alone, 's'
** the key alone (either with grid indices, dims and literals), 0 neither
** or both, 'c' none (the same for every element). Reads of tensors make it
** 0, except an i32 input read at grid indices (one value a CTA): otherwise
** only arithmetic is kept. */
static char index_dep(KernelGen *g, const Expr *e)
{
	switch (e->kind) {
	case EX_INT:
	case EX_DIM: return 'c';
	case EX_INDEX: {
		int k = gpu_index_kind(g, e->var);
		return k == 'q' || k == 's' ? (char)k : k == 'g' ? 'c' : 0;
	}
	case EX_ACCESS:
		/* an i32 input read at grid indices (a sequence's offset or
		** length): one value a CTA */
		if (e->type != VT_INT || e->tensor->def)
			return 0;
		break;
	case EX_UNOP:
	case EX_BINOP:
	case EX_SELECT:
	case EX_CALL: break;
	default: return 0;
	}
	char d = gpu_read_follows(g, e);
	return e->kind == EX_ACCESS && d != 'c' ? 0 : d;
}

/* Which index a float input read follows in a tile body (index_dep of its
** subscripts together; index_dep folds an expression's arguments so too): a
** backward's L[b, h, i] and Delta along the rows or, in the kernel over key
** tiles, along the streamed query rows; a packed batch's lse[cu_q[b] + i, h]
** so too, its offset one value a CTA. */
char gpu_read_follows(KernelGen *g, const Expr *e)
{
	char d = 'c';
	for (int i = 0; i < e->nargs; i++) {
		char a = index_dep(g, e->args[i]);
		if (!a || (a != 'c' && d != 'c' && a != d))
			return 0;
		if (a != 'c')
			d = a;
	}
	return d;
}

/* Read e's value at the element's column (g->coloff of the thread's
** first, 2 (lane % 4)) from the lane that loaded it with the tile's
** (keyvec.c), else {0}. */
static PReg keyvec_value(KernelGen *g, const Expr *e)
{
	KeyVecs *kv = g->keyvec;
	for (int i = 0; kv && i < kv->n; i++) {
		if (!gpu_same_read(g, kv->r[i].node, kv->r[i].e, g->node, e, 0))
			continue;
		PReg src = gpu_reg(g, PC_B32), v = gpu_reg(g, PC_F32);
		gpu_op3(g, PTX_ADD, ".u32", po_r(src), po_r(kv->lane2), po_i(g->coloff % 32));
		gpu_op5(g, PTX_SHFL_IDX, ".b32", po_r(v), po_r(kv->r[i].v[g->coloff / 32]),
			po_r(src), po_i(31), po_i(-1));
		return v;
	}
	return (PReg){0};
}

/* An integer value or a float input read of the row alone or the key
** alone, evaluated once per row slot or column of the tile body
** (index_dep, read_dep), a float read of neither once per tile body;
** else the plain value. */
static PReg index_memo(KernelGen *g, const Expr *e, PReg (*eval)(KernelGen *, const Expr *))
{
	char k = 0;
	if (g->elem >= 0 && !g->stage && e->type == VT_INT)
		k = index_dep(g, e);
	else if (g->elem >= 0 && !g->stage && e->kind == EX_ACCESS && e->type == VT_FLOAT)
		k = gpu_read_follows(g, e);
	/* a float read of grid indices alone (a temperature per head) is the
	** same at every element: one load per tile body, not one per score */
	if (k == 'c' && e->kind != EX_ACCESS)
		return eval(g, e);
	if (k != 'q' && k != 's' && k != 'c')
		return eval(g, e);
	int slot = k == 'q' ? g->half : k == 's' ? g->coloff : 0, sub = g->in_subscript > 0;
	ExprCache *c = g->cache;
	/* a read is the same in another node of the tile where its indices are
	** of the same classes (L in P and in dL * P) */
	for (int i = 0; i < c->nim; i++)
		if (c->im[i].kind == k && c->im[i].slot == slot && c->im[i].sub == sub &&
		    (c->im[i].e == e ||
		     (e->kind == EX_ACCESS && c->im[i].e->kind == EX_ACCESS &&
		      gpu_same_read(g, c->im[i].node, c->im[i].e, g->node, e, 0))))
			return c->im[i].v;
	/* the tile's values of a float read of the key alone, loaded before
	** its contractions (keyvec.c) */
	PReg v = k == 's' && e->kind == EX_ACCESS && !sub ? keyvec_value(g, e) : (PReg){0};
	if (!v.n)
		v = eval(g, e);
	if (c->nim < GPU_INDEX_MEMO)
		c->im[c->nim].e = e, c->im[c->nim].kind = k, c->im[c->nim].slot = slot,
		c->im[c->nim].node = g->node, c->im[c->nim].sub = sub, c->im[c->nim++].v = v;
	return v;
}

static PReg expr_value(KernelGen *g, const Expr *e);

PReg gpu_expr(KernelGen *g, const Expr *e)
{
	if (e->kind == EX_BINOP || e->kind == EX_SELECT || e->kind == EX_CALL ||
	    (e->kind == EX_ACCESS && !e->tensor->def))
		return index_memo(g, e, expr_value);
	return expr_value(g, e);
}

/* The value of e, computed (gpu_expr reuses row- and key-only integers). */
static PReg expr_value(KernelGen *g, const Expr *e)
{
	PReg d;
	switch (e->kind) {
	case EX_FLOAT: return gpu_fconst(g, (float)e->fval);
	case EX_INT: return iconst(g, e->ival);
	case EX_BOOL: return gpu_pconst(g, (int)e->ival);
	case EX_INDEX: return gpu_index_value(g, e->var);
	case EX_DIM: return e->dim->fixed ? iconst(g, e->dim->fixed) : g->par.dim[e->dim->id];
	case EX_PARAM:
		if (e->param->type == VT_FLOAT)
			return g->par.param[e->param->id];
		d = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_CVT, ".s64.s32", po_r(d), po_r(g->par.param[e->param->id]));
		return d;
	case EX_ACCESS: return e->tensor->def ? computed(g, e) : gpu_load(g, e->tensor, e->args);
	case EX_UNOP: {
		PReg x = gpu_expr(g, e->args[0]);
		if (e->op == OP_NOT) {
			d = gpu_reg(g, PC_PRED);
			gpu_op2(g, PTX_NOT, ".pred", po_r(d), po_r(x));
		} else if (e->type == VT_FLOAT) {
			d = gpu_reg(g, PC_F32);
			gpu_op2(g, PTX_NEG, ".f32", po_r(d), po_r(x));
		} else {
			d = gpu_reg(g, PC_B64);
			gpu_op2(g, PTX_NEG, ".s64", po_r(d), po_r(x));
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
		PReg c = gpu_expr(g, e->args[0]);
		PReg a = gpu_expr(g, e->args[1]), b = gpu_expr(g, e->args[2]);
		if (e->type == VT_BOOL) {
			PReg t1 = gpu_reg(g, PC_PRED), t2 = gpu_reg(g, PC_PRED),
			     nc = gpu_reg(g, PC_PRED);
			d = gpu_reg(g, PC_PRED);
			gpu_op2(g, PTX_NOT, ".pred", po_r(nc), po_r(c));
			gpu_op3(g, PTX_AND, ".pred", po_r(t1), po_r(c), po_r(a));
			gpu_op3(g, PTX_AND, ".pred", po_r(t2), po_r(nc), po_r(b));
			gpu_op3(g, PTX_OR, ".pred", po_r(d), po_r(t1), po_r(t2));
			return d;
		}
		d = gpu_reg(g, e->type == VT_FLOAT ? PC_F32 : PC_B64);
		gpu_op4(g, PTX_SELP, e->type == VT_FLOAT ? ".f32" : ".b64", po_r(d), po_r(a),
			po_r(b), po_r(c));
		return d;
	}
	case EX_CALL: return call(g, e);
	case EX_CAST: {
		if ((d = key_cast(g, e)).n)
			return d;
		PReg x = gpu_expr(g, e->args[0]);
		d = gpu_reg(g, PC_F32);
		if (e->args[0]->type == VT_BOOL)
			gpu_op4(g, PTX_SELP, ".f32", po_r(d), po_f(1.0f), po_f(0.0f), po_r(x));
		else if (e->args[0]->type == VT_INT && fits_s32(e->args[0])) {
			/* float(j - i): the low word converts exactly, and I2F from
			** 32 bits is several times cheaper than from 64 */
			PReg lo = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_CVT, ".u32.u64", po_r(lo), po_r(x));
			gpu_op2(g, PTX_CVT, ".rn.f32.s32", po_r(d), po_r(lo));
		} else if (e->args[0]->type == VT_INT)
			gpu_op2(g, PTX_CVT, ".rn.f32.s64", po_r(d), po_r(x));
		else
			return x;
		return d;
	}
	}
	return gpu_fconst(g, NAN);
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

int gpu_same_read(KernelGen *g, int na, const Expr *a, int nb, const Expr *b, int alike)
{
	NodePair np = {g->p, na, nb, alike};
	return expr_equal_by(a, b, same_class, &np);
}

int gpu_same_rows(const Plan *p, int na, const Expr *a, int nb, const Expr *b)
{
	NodePair np = {p, na, nb, 0};
	if (a->kind != EX_ACCESS || b->kind != EX_ACCESS || a->tensor != b->tensor ||
	    a->nargs != b->nargs)
		return 0;
	for (int m = 0; m < a->nargs - 1; m++)
		if (!expr_equal_by(a->args[m], b->args[m], same_class, &np))
			return 0;
	return 1;
}
