/*
** lowering/gpu/divide.c: integer floor division and modulo in kernels, as
** the language defines them (the quotient rounds toward -inf). Index
** arithmetic divides by sizes (a 2-D window's i / W and j % W, a video's
** i / (H * W), GQA's h / G) per element of a masked tile, where ptxas's
** 64-bit division is a subroutine of a hundred instructions. A divisor
** made of dims and literals gets a magic triple from the launcher instead
** (gpu.h, gpu_divisors), and a power-of-two literal a shift.
*/
#include "../../compiler/intervals.h"
#include "gpu.h"

/* A positive power-of-two literal: floor division is a shift. */
static int pow2_literal(const Expr *e)
{
	return e->kind == EX_INT && e->ival > 0 && !(e->ival & (e->ival - 1));
}

/* An integer value made of dims and literals only, the same for the whole
** launch, which the launcher can compute (iface_dim_expr). */
static int launch_constant(const Expr *e)
{
	if (e->type != VT_INT)
		return 0;
	if (e->kind == EX_DIM || e->kind == EX_INT)
		return 1;
	return e->kind == EX_BINOP &&
	       (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL || e->op == OP_MAX ||
		e->op == OP_MIN) &&
	       launch_constant(e->args[0]) && launch_constant(e->args[1]);
}

/* Adds the divisors of e's integer divisions that get a magic triple to
** list (n so far, at most GPU_MAX_DIVISORS, each once). */
static void divisors_in(const Expr *e, const Expr **list, int *n)
{
	if (!e)
		return;
	if (e->kind == EX_BINOP && e->type == VT_INT && (e->op == OP_DIV || e->op == OP_MOD)) {
		const Expr *d = e->args[1];
		int k = 0;
		while (k < *n && !expr_equal(list[k], d))
			k++;
		if (k == *n && *n < GPU_MAX_DIVISORS && launch_constant(d) && !pow2_literal(d) &&
		    !(d->kind == EX_INT && d->ival < 1))
			list[(*n)++] = d;
	}
	for (int i = 0; i < e->nargs; i++)
		divisors_in(e->args[i], list, n);
}

/* The divisors of the plan's integer divisions that get a magic triple
** from the launcher, in the order of their first use; their count. */
int gpu_divisors(const Plan *p, const Expr **list)
{
	int n = 0;
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Node *nd = p->c->nodes.v[i];
		divisors_in(nd->body, list, &n);
		divisors_in(nd->filter, list, &n);
	}
	return n;
}

/* An index (every index range is below 2^31 - 2^20, which the launcher
** checks: gpu_index_extents_checked; rows and keys past a range's end, as
** padding evaluates them, stay below 2^31), a dim (also checked), a
** literal in [0, 2^20), or the quotient or remainder of such a value by a
** positive divisor: a pixel's row i / W and column i % W, a video's frame
** i / (H W), all small enough for attnrt_divmagic's 32-bit pair. */
int gpu_small_dividend(const Expr *e)
{
	if (e->kind == EX_INDEX || e->kind == EX_DIM)
		return 1;
	if (e->kind == EX_INT)
		return e->ival >= 0 && e->ival < (1L << 20);
	return e->kind == EX_BINOP && (e->op == OP_DIV || e->op == OP_MOD) && e->type == VT_INT &&
	       iv_positive(e->args[1]) && gpu_small_dividend(e->args[0]);
}

/* The index ranges that are not a dim or a literal (a flattened image's
** IH * IW), each once, into list (at most max); their count. The
** launcher checks them as it checks dims, so that gpu_small_dividend
** holds. */
int gpu_index_extents(const Plan *p, const Expr **list, int max)
{
	int n = 0;
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Node *nd = p->c->nodes.v[i];
		for (int v = 0; v < nd->nfree + nd->nred; v++) {
			const Expr *x = nd->vars[v].extent;
			if (!x || x->kind == EX_DIM || x->kind == EX_INT)
				continue;
			int k = 0;
			while (k < n && !expr_equal(list[k], x))
				k++;
			if (k == n && n < max)
				list[n++] = x;
		}
	}
	return n;
}

/* Divisor k's magic triple (the launcher's, gpu.h): M as b64 in *m and l
** as b32 in *l. */
static void divisor_magic(KernelGen *g, int k, PReg *m, PReg *l)
{
	int i = g->par.divisor_magic + GPU_DIVISOR_PARAMS * k;
	PReg w[3];
	for (int t = 0; t < 3; t++) {
		w[t] = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_LD, ".param.u32", po_r(w[t]),
			po_memsym(g->par.magic_names[i + t], 0));
	}
	*m = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(*m), po_vec(w, 2));
	*l = w[2];
}

/* x / d for divisor k and 0 <= x < 2^31, by its 32-bit pair (m, s) after
** the triple: one wide multiply and a shift, where the triple's 64-bit
** multiply-high is several instructions (a masked tile of a 2-D window
** divides once per column). The quotient is below 2^31: its b64 is the
** s64 value. */
static PReg small_quotient(KernelGen *g, PReg x, int k)
{
	int i = g->par.divisor_magic + GPU_DIVISOR_PARAMS * k;
	PReg m = gpu_reg(g, PC_B32), sh = gpu_reg(g, PC_B32), x32 = gpu_reg(g, PC_B32),
	     w = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_LD, ".param.u32", po_r(m), po_memsym(g->par.magic_names[i + 3], 0));
	gpu_op2(g, PTX_LD, ".param.u32", po_r(sh), po_memsym(g->par.magic_names[i + 4], 0));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(x32), po_r(x));
	gpu_op3(g, PTX_MUL, ".wide.u32", po_r(w), po_r(x32), po_r(m));
	gpu_op3(g, PTX_SHR, ".b64", po_r(w), po_r(w), po_r(sh));
	return w;
}

/* x / d for divisor k (d >= 1) and any s64 x, by its magic triple. The
** sign is folded with x ^ (x >> 63), which is x for x >= 0 and -x - 1 for
** x < 0, and floor(x / d) = ~((-x - 1) / d) there, so one unsigned
** quotient of a value below 2^63 serves both signs. */
static PReg magic_quotient(KernelGen *g, PReg x, int k)
{
	PReg m, l, sgn = gpu_reg(g, PC_B64), u = gpu_reg(g, PC_B64), h = gpu_reg(g, PC_B64),
		   q = gpu_reg(g, PC_B64);
	divisor_magic(g, k, &m, &l);
	gpu_op3(g, PTX_SHR, ".s64", po_r(sgn), po_r(x), po_i(63));
	gpu_op3(g, PTX_XOR, ".b64", po_r(u), po_r(x), po_r(sgn));
	gpu_op3(g, PTX_MUL, ".hi.u64", po_r(h), po_r(u), po_r(m));
	gpu_op3(g, PTX_ADD, ".u64", po_r(h), po_r(h), po_r(u));
	gpu_op3(g, PTX_SHR, ".u64", po_r(h), po_r(h), po_r(l));
	gpu_op3(g, PTX_XOR, ".b64", po_r(q), po_r(h), po_r(sgn));
	return q;
}

/* Floor division or modulo of s64 values: by a power-of-two literal a
** shift or a mask; by a divisor with magic parameters its quotient (in 32
** bits where the dividend is small), and x % d as x - q d; else div.s64
** and rem.s64 with the sign fix-up. */
PReg gpu_floordiv(KernelGen *g, PReg a, PReg b, const Expr *div, int mod, int small)
{
	PReg q = gpu_reg(g, PC_B64);
	if (div && pow2_literal(div)) {
		int k = 0;
		while ((1L << k) < div->ival)
			k++;
		if (mod)
			gpu_op3(g, PTX_AND, ".b64", po_r(q), po_r(a), po_i(div->ival - 1));
		else
			gpu_op3(g, PTX_SHR, ".s64", po_r(q), po_r(a), po_i(k));
		return q;
	}
	int n = div ? g->par.ndivisors : 0, k = 0;
	while (k < n && !expr_equal(g->par.divisors[k], div))
		k++;
	if (k < n && small) {
		q = small_quotient(g, a, k);
		if (!mod)
			return q;
		PReg q32 = gpu_reg(g, PC_B32), a32 = gpu_reg(g, PC_B32), b32 = gpu_reg(g, PC_B32),
		     r32 = gpu_reg(g, PC_B32), r = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(q32), po_r(q));
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(a32), po_r(a));
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(b32), po_r(b));
		gpu_op3(g, PTX_MUL, ".lo.u32", po_r(r32), po_r(q32), po_r(b32));
		gpu_op3(g, PTX_SUB, ".u32", po_r(r32), po_r(a32), po_r(r32));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r), po_r(r32));
		return r;
	}
	if (k < n) {
		q = magic_quotient(g, a, k);
		if (!mod)
			return q;
		PReg t = gpu_reg(g, PC_B64), r = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MUL, ".lo.s64", po_r(t), po_r(q), po_r(b));
		gpu_op3(g, PTX_SUB, ".s64", po_r(r), po_r(a), po_r(t));
		return r;
	}
	PReg r = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_DIV, ".s64", po_r(q), po_r(a), po_r(b));
	gpu_op3(g, PTX_REM, ".s64", po_r(r), po_r(a), po_r(b));
	PReg nz = gpu_reg(g, PC_PRED), sa = gpu_reg(g, PC_PRED), sb = gpu_reg(g, PC_PRED),
	     adj = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, ".ne.s64", po_r(nz), po_r(r), po_i(0));
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(sa), po_r(mod ? r : a), po_i(0));
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(sb), po_r(b), po_i(0));
	gpu_op3(g, PTX_XOR, ".pred", po_r(sa), po_r(sa), po_r(sb));
	gpu_op3(g, PTX_AND, ".pred", po_r(adj), po_r(nz), po_r(sa));
	if (mod) {
		gpu_op3(g, PTX_ADD, ".s64", po_r(r), po_r(r), po_r(b));
		ptx_guard(g->f, adj, 0);
		return r;
	}
	gpu_op3(g, PTX_SUB, ".s64", po_r(q), po_r(q), po_i(1));
	ptx_guard(g->f, adj, 0);
	return q;
}
