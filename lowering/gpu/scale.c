/*
** lowering/gpu/scale.c: scores kept unscaled.
** A tile value S = c * G, with G a contraction with tensor cores (Q K^T) and
** c a scalar (softmax's scale), costs one multiply per score before its row
** max. FlashAttention takes the max of G and folds c into the exponent's
** FFMA: max[j](c G) = c max[j](G) for c >= 0, and exp(c G - m) is
** ex2(G (c log2 e) - m log2 e). The kernel does the same: S's registers
** hold G, and a reader that is neither the row max nor exp(S - m) gets
** c * G. The scale's sign is known only at run time, so a CTA whose c is
** negative negates its Q tile once in shared memory (exact in bf16 and
** f16), which makes G' = -G and S = |c| G'. c = 0 uses the smallest normal
** float instead, so that masked scores (-inf) stay -inf rather than NaN.
*/

#include <float.h>
#include <math.h>

#include "gpu.h"

static const float LOG2E = 1.4426950408889634f;

/* A tile value c * G kept as G. */
typedef struct ScaleFold {
	int gemm;          /* the SN_GEMM1 node G, or -1: not folded */
	const Expr *scale; /* c: a float param or a positive literal */
	PReg c, cl2e;      /* per tile body: |c| (FLT_MIN where c = 0) and |c| log2(e) */
} ScaleFold;

/* e reads node `node` (or NULL). */
static int reads(const Expr *e, int node)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor->def && e->tensor->def->id == node)
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads(e->args[i], node))
			return 1;
	return 0;
}

/* The contraction node (SN_GEMM1) that node i scales, or -1: i is a tile
** value c * G (or G * c) with c a float param or a positive literal, G is
** read by no other node and is not an output (its Q is negated where c is
** negative), and no node after a contraction with V reads i. Document
** masking folds too: its kernel spills less with the fold. */
static int scaled_gemm(const KernelGen *g, int i, const Expr **c)
{
	const KernelShape *s = g->s;
	const Node *n = g->c->nodes.v[i];
	const Expr *e = n->body;
	if (s->node[i].kind != SN_MAP || !e || e->kind != EX_BINOP || e->op != OP_MUL ||
	    e->type != VT_FLOAT)
		return -1;
	for (int k = 0; k < 2; k++) {
		const Expr *x = e->args[k], *y = e->args[1 - k];
		int ok = (x->kind == EX_PARAM && x->param->type == VT_FLOAT) ||
			 (x->kind == EX_FLOAT && x->fval > 0 && isfinite(x->fval));
		if (!ok || y->kind != EX_ACCESS || !y->tensor->def)
			continue;
		int gn = y->tensor->def->id;
		if (s->node[gn].kind != SN_GEMM1 || y->tensor->kind == TK_OUT)
			continue;
		/* a negative c negates Q's rows in shared memory, where a sum over
		** the CTA's rows reads them */
		for (int cr = 0; cr < s->ncross; cr++)
			if (s->cross[cr].qk == s->node[gn].gemm && x->kind == EX_PARAM)
				return -1;
		/* and S is read before the contraction with V only: G in the
		** tensor cores' accumulator registers, live past it, made ptxas
		** spill (full.attn's L) */
		int after_pv = 0;
		for (int j = 0; j < g->c->nodes.n; j++) {
			const Node *o = g->c->nodes.v[j];
			if (j != i && (reads(o->body, gn) || reads(o->filter, gn)))
				return -1;
			if (after_pv && (reads(o->body, i) || reads(o->filter, i)))
				return -1;
			after_pv |= s->node[j].kind == SN_GEMM2;
		}
		*c = x;
		return gn;
	}
	return -1;
}

/* Marks the nodes whose tile values are kept unscaled (KernelGen.fold). */
void gpu_scale_plan(KernelGen *g)
{
	int n = g->c->nodes.n;
	g->fold = ARENA_ARRAY(g->a, ScaleFold, n + 1);
	for (int i = 0; i < n; i++) {
		const Expr *c = NULL;
		int gn = scaled_gemm(g, i, &c);
		g->fold[i] = (ScaleFold){gn, c, {0}, {0}};
	}
}

/* Forgets the scales of the last tile body: gpu_scale_c computes them
** again where first needed, so that they are not live, in registers, across
** the contraction and the row maxes. */
void gpu_scale_tile(KernelGen *g)
{
	for (int i = 0; i < g->c->nodes.n; i++)
		g->fold[i].c = g->fold[i].cl2e = (PReg){0};
}

/* |c| (or FLT_MIN where c = 0; log2: times log2(e)) of folded node i, once
** per tile body (from the param's register, which is live anyway). */
PReg gpu_scale_c(KernelGen *g, int i, int log2)
{
	ScaleFold *f = &g->fold[i];
	if (!f->c.n) {
		f->c = gpu_reg(g, PC_F32);
		if (f->scale->kind == EX_FLOAT)
			gpu_op2(g, PTX_MOV, ".f32", po_r(f->c), po_f((float)f->scale->fval));
		else {
			PReg z = gpu_reg(g, PC_PRED);
			gpu_op2(g, PTX_ABS, ".f32", po_r(f->c),
				po_r(g->par.param[f->scale->param->id]));
			gpu_op3(g, PTX_SETP, ".eq.f32", po_r(z), po_r(f->c), po_f(0.0f));
			gpu_op4(g, PTX_SELP, ".f32", po_r(f->c), po_f(FLT_MIN), po_r(f->c),
				po_r(z));
		}
	}
	if (log2 && !f->cl2e.n) {
		f->cl2e = gpu_reg(g, PC_F32);
		gpu_op3(g, PTX_MUL, ".f32", po_r(f->cl2e), po_r(f->c), po_f(LOG2E));
	}
	return log2 ? f->cl2e : f->c;
}

/* Node id's tile values are kept unscaled. */
int gpu_folded(const KernelGen *g, int id)
{
	return g->fold && g->fold[id].gemm >= 0;
}

int gpu_fold_source(const KernelGen *g, int id)
{
	return g->fold[id].gemm;
}

/* The folded node that e reads as a whole (S[b, h, i, j]), or -1. */
int gpu_folded_read(const KernelGen *g, const Expr *e)
{
	int ok = e->kind == EX_ACCESS && e->tensor->def && gpu_folded(g, e->tensor->def->id);
	return ok ? e->tensor->def->id : -1;
}

/* Where a folded node's scale is a negative param, negates the rows of
** the A operand (Q) of its contraction in shared memory: the CTA's threads
** flip the sign bits of `bytes` bytes at soff (16 per step), between two
** barriers, before the first ldmatrix of Q. Runs after the barrier that
** makes Q visible; a branch on the param, uniform over the CTA. */
void gpu_scale_negate_q(KernelGen *g, int gemm1, PReg sbase, uint32_t soff, uint32_t bytes,
			PReg tid)
{
	for (int i = 0; i < g->c->nodes.n; i++) {
		ScaleFold *f = &g->fold[i];
		if (f->gemm < 0 || g->s->node[f->gemm].gemm != gemm1 || f->scale->kind != EX_PARAM)
			continue;
		int skip = ptx_new_label(g->f);
		PReg neg = gpu_reg(g, PC_PRED), t = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_SETP, ".lt.f32", po_r(neg), po_r(g->par.param[f->scale->param->id]),
			po_f(0.0f));
		gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
		ptx_guard(g->f, neg, 1);
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(t), po_r(tid));
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(t), po_i(16), po_r(sbase));
		/* chunk t + nt u of the region (nt threads); the last step's threads past its
		** end read the last chunk and store nothing (no predicated load:
		** a register defined on some paths only is live from the entry) */
		uint32_t n = bytes / 16, nt = (uint32_t)gpu_warps(g->t) * 32;
		for (uint32_t u = 0; u * nt < n; u++) {
			PReg v[4], in = gpu_reg(g, PC_PRED), x = a;
			int last = (u + 1) * nt > n;
			for (int k = 0; k < 4; k++)
				v[k] = gpu_reg(g, PC_B32);
			if (last) {
				PReg c = gpu_reg(g, PC_B32);
				gpu_op3(g, PTX_SETP, ".lt.u32", po_r(in), po_r(t),
					po_i(n - u * nt));
				gpu_op3(g, PTX_MIN, ".u32", po_r(c), po_r(t), po_i(n - u * nt - 1));
				x = gpu_reg(g, PC_B32);
				gpu_op4(g, PTX_MAD, ".lo.u32", po_r(x), po_r(c), po_i(16),
					po_r(sbase));
			}
			int32_t o = (int32_t)(soff + u * (uint32_t)nt * 16);
			gpu_op2(g, PTX_LD, ".shared.v4.b32", po_vec(v, 4), po_mem(x, o));
			for (int k = 0; k < 4; k++)
				gpu_op3(g, PTX_XOR, ".b32", po_r(v[k]), po_r(v[k]),
					po_i(0x80008000));
			gpu_op2(g, PTX_ST, ".shared.v4.b32", po_mem(x, o), po_vec(v, 4));
			if (last)
				ptx_guard(g->f, in, 0);
		}
		gpu_bar(g, 0);
		ptx_label(g->f, skip);
		return; /* one negation per Q, whichever nodes scale it */
	}
}

void gpu_scale_negate_q_halves(KernelGen *g, int gemm1, PReg sbase, uint32_t soff, uint32_t bytes,
			       PReg tid, PReg stayed)
{
	gpu_scale_negate_q(g, gemm1, sbase, soff, bytes, tid);
	if (!stayed.n)
		return;
	int Lboth = ptx_new_label(g->f);
	PReg t = gpu_reg(g, PC_B64);
	gpu_op1(g, PTX_BRA, "", po_label(Lboth));
	ptx_guard(g->f, stayed, 0);
	gpu_op3(g, PTX_ADD, ".s64", po_r(t), po_r(tid), po_i((int64_t)gpu_warps(g->t) * 16));
	gpu_scale_negate_q(g, gemm1, sbase, soff, bytes, t);
	ptx_label(g->f, Lboth);
}
