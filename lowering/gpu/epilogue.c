/*
** lowering/gpu/epilogue.c: after the stream. Row sums are finished (quad
** reductions), factors of P constant along the keys applied, the plan's
** finalisers evaluated per row and per output element, and the outputs
** stored with their dtypes and domains: through the target's fast layouts
** (store_output) where the strides allow, else element by element.
*/
#include "gpu.h"

/* ---- epilogue ------------------------------------------------------------- */

PReg gpu_packed_guard(KernelGen *g, PReg base, const Tensor *t)
{
	if (!t->pack || !t->domain)
		return base;
	PReg ok = gpu_expr(g, t->domain);
	if (!base.n)
		return ok;
	PReg both = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_AND, ".pred", po_r(both), po_r(ok), po_r(base));
	return both;
}

static void store(KernelGen *g, int i, PReg v, PReg guard)
{
	const Node *n = gpu_node(g, i);
	const Tensor *t = n->out;
	Expr **args = ARENA_ARRAY(g->a, Expr *, n->nfree + 1);
	for (int k = 0; k < n->nfree; k++)
		args[k] = expr_index(g->a, k);
	if (t->pack)
		guard = gpu_packed_guard(g, guard, t);
	else if (t->domain) {
		PReg ok = gpu_expr(g, t->domain), z = gpu_reg(g, PC_F32);
		gpu_op4(g, PTX_SELP, ".f32", po_r(z), po_r(v), po_f(0.0f), po_r(ok));
		v = z;
	}
	PReg a = gpu_addr(g, t, args);
	switch (t->dtype) {
	case DT_BF16:
	case DT_F16: {
		PReg h = gpu_reg(g, PC_B16);
		gpu_op2(g, PTX_CVT, t->dtype == DT_BF16 ? ".rn.bf16.f32" : ".rn.f16.f32", po_r(h),
			po_r(v));
		gpu_op2(g, PTX_ST, ".global.b16", po_mem(a, 0), po_r(h));
		break;
	}
	default: gpu_op2(g, PTX_ST, ".global.f32", po_mem(a, 0), po_r(v)); break;
	}
	ptx_guard(g->f, guard, 0);
}

/* The column (e) of accumulator element el: 8 et + 2 (lane % 4) + (el & 1);
** q = lane % 4. */
static PReg elem_col(KernelGen *g, PReg q, int el)
{
	int net = (int)(g->s->DV / 8), et = el % (net * 4) / 4;
	PReg e = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(e), po_r(q), po_i(2), po_i(et * 8 + (el & 1)));
	return e;
}

void gpu_epilogue(KernelGen *g, TileState *t)
{
	const Cascade *c = g->c;
	gpu_expr_forget(g, 1);
	g->stage = 1;
	gpu_tile_rows(g, t);
	int nrs = 2 * g->row_blocks;
	PReg q = gpu_reg(g, PC_B64), lead = gpu_reg(g, PC_PRED), okr[GPU_MAXRS], okl[GPU_MAXRS];
	gpu_op3(g, PTX_AND, ".b64", po_r(q), po_r(g->lane), po_i(3));
	gpu_op3(g, PTX_SETP, ".eq.s64", po_r(lead), po_r(q), po_i(0));
	/* outputs per row: one lane of the quad, of the first slice of V's columns */
	if (g->vcol0.n) {
		PReg first = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".eq.s64", po_r(first), po_r(g->vcol0), po_i(0));
		gpu_op3(g, PTX_AND, ".pred", po_r(lead), po_r(lead), po_r(first));
	}
	for (int h = 0; h < nrs; h++) {
		okr[h] = gpu_reg(g, PC_PRED), okl[h] = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(okr[h]), po_r(t->rows[h]), po_r(g->qext));
		gpu_op3(g, PTX_AND, ".pred", po_r(okl[h]), po_r(okr[h]), po_r(lead));
	}
	for (int i = 0; i < c->nodes.n; i++)
		if (g->s->node[i].kind == SN_RSUM)
			for (int h = 0; h < nrs; h++) {
				PReg s = gpu_quad_reduce(g, g->rowv[i][h], 0);
				gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(s));
			}
	int net = (int)(g->s->DV / 8);
	/* factors of P constant along the keys (PVContraction.xrow), once per row */
	for (int i = 0; i < c->nodes.n; i++) {
		const Expr *xr =
		    g->s->node[i].kind == SN_GEMM2 ? g->s->pv[g->s->node[i].gemm].xrow : NULL;
		for (int h = 0; h < nrs && xr; h++) {
			g->node = i, g->half = h, g->row = t->crows[h];
			PReg f = gpu_expr(g, xr);
			for (int el = 0; el < g->row_blocks * net * 4; el++)
				if (gpu_acc_rs(net, el) == h)
					gpu_op3(g, PTX_MUL, ".f32", po_r(g->acc[i][el]),
						po_r(g->acc[i][el]), po_r(f));
		}
	}
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = gpu_node(g, i);
		ShapeNodeKind k = g->s->node[i].kind;
		int out = n->out->kind == TK_OUT;
		if (k == SN_EPI_ROW || k == SN_REF || ((k == SN_RMAX || k == SN_RSUM) && out)) {
			for (int h = 0; h < nrs; h++) {
				g->node = i, g->half = h, g->row = t->crows[h];
				if (k == SN_EPI_ROW || k == SN_REF) {
					PReg v = gpu_expr(g, n->body);
					if (!g->rowv[i][h].n)
						g->rowv[i][h] = gpu_reg(g, PC_F32);
					gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
				}
				if (out)
					store(g, i, g->rowv[i][h], okl[h]);
			}
		} else if (k == SN_EPI_ELEM || (k == SN_GEMM2 && out)) {
			for (int el = 0; el < g->row_blocks * net * 4 && k == SN_EPI_ELEM; el++) {
				int h = gpu_acc_rs(net, el);
				g->node = i, g->elem = el, g->half = h, g->row = t->crows[h];
				g->col = elem_col(g, q, el);
				g->acc[i][el] = gpu_expr(g, n->body);
			}
			if (!out)
				continue;
			int slow = ptx_new_label(g->f), done = ptx_new_label(g->f);
			g->t->store_output(g, i, q, t->crows, okr, slow, done);
			ptx_label(g->f, slow);
			for (int el = 0; el < g->row_blocks * net * 4; el++) {
				int h = gpu_acc_rs(net, el);
				g->node = i, g->row = t->crows[h], g->col = elem_col(g, q, el);
				store(g, i, g->acc[i][el], okr[h]);
			}
			ptx_label(g->f, done);
		}
	}
}
