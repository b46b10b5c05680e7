/*
** lowering/gpu/pairs.c: the output accumulators' stores as 16-bit pairs.
** Every target's consumers hold O in the m16n8 accumulator layout (a warp's
** 16 rows: mma.sync's, and wgmma's m64 per warp), so that adjacent columns
** of one row are a thread's pair: one 32-bit store each, where the output's
** strides allow (a uniform test of the stride parameters).
*/
#include "gpu.h"

/* The dimension of node i's 16-bit output indexed by the column alone, or
** -1: then its elements are stored one by one. */
int gpu_pair_column(KernelGen *g, int i)
{
	const Node *n = gpu_node(g, i);
	const Tensor *t = n->out;
	/* a packed output's domain is its rows' (gpu_store_pairs tests it) */
	if ((t->dtype != DT_BF16 && t->dtype != DT_F16) || (t->domain && !t->pack) ||
	    t->rank != n->nfree)
		return -1;
	int pc = -1;
	for (int k = 0; k < n->nfree; k++)
		if (gpu_value_class(g->s, g->p->cls[i][k]))
			pc = pc < 0 ? k : -2;
	return pc < 0 ? -1 : pc;
}

/* Branches to `other` unless out's column dimension pc is contiguous and
** every other stride has no bit of mask set (1: even, for 4-byte pairs; 7:
** multiples of 8 elements, for 16-byte rows): a uniform test of the
** stride parameters. */
void gpu_layout_guard(KernelGen *g, const Tensor *out, int pc, int mask, int other)
{
	PReg mis = gpu_reg(g, PC_B64), bad = gpu_reg(g, PC_PRED), one = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_MOV, ".b64", po_r(mis), po_i(0));
	/* a packed output's strides are its buffer's: the column's place there */
	for (int k = 0; out->pack && k < out->pack->rank; k++)
		if (out->pack->at[k]->kind == EX_INDEX && out->pack->at[k]->var == pc) {
			pc = k;
			break;
		}
	for (int k = 0; k < tensor_buf_rank(out); k++)
		if (k != pc)
			gpu_op3(g, PTX_OR, ".b64", po_r(mis), po_r(mis),
				po_r(g->par.stride[out->id][k]));
	gpu_op3(g, PTX_AND, ".b64", po_r(mis), po_r(mis), po_i(mask));
	gpu_op3(g, PTX_SETP, ".ne.s64", po_r(bad), po_r(mis), po_i(0));
	gpu_op3(g, PTX_SETP, ".ne.s64", po_r(one), po_r(g->par.stride[out->id][pc]), po_i(1));
	gpu_op3(g, PTX_OR, ".pred", po_r(bad), po_r(bad), po_r(one));
	gpu_op1(g, PTX_BRA, ".uni", po_label(other));
	ptx_guard(g->f, bad, 0);
}

/* Stores of the output accumulators as bf16x2 / f16x2 pairs (adjacent
** columns of one row), from one row address per row and immediate column
** offsets: 64 32-bit stores per thread at D = 128 instead of 128 16-bit
** stores with their address arithmetic, the larger part of the epilogue.
** Needs the column dimension contiguous and every other stride even (each
** pair 4-byte aligned: the runtime checks 16-byte base pointers); other
** layouts branch to `slow`. */
void gpu_store_pairs(KernelGen *g, const PReg *crows, int i, int pc, PReg q, const PReg *okr,
		     int slow)
{
	const Tensor *out = gpu_node(g, i)->out;
	int net = (int)(g->s->DV / 8), f16 = out->dtype == DT_F16;
	gpu_layout_guard(g, out, pc, 1, slow);
	Expr **args = ARENA_ARRAY(g->a, Expr *, out->rank + 1);
	for (int k = 0; k < out->rank; k++)
		args[k] = expr_index(g->a, k);
	for (int h = 0; h < 2 * g->row_blocks; h++) {
		PReg c0 = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_SHL, ".b64", po_r(c0), po_r(q), po_i(1));
		g->node = i, g->row = crows[h], g->col = c0;
		PReg a = gpu_addr(g, out, args), ok = okr[h];
		if (out->pack) { /* rows past the sequence's end are not stored */
			ok = gpu_reg(g, PC_PRED);
			gpu_op3(g, PTX_AND, ".pred", po_r(ok), po_r(okr[h]),
				po_r(gpu_expr(g, out->domain)));
		}
		for (int et = 0; et < net; et++) {
			int el = h / 2 * net * 4 + et * 4 + h % 2 * 2;
			PReg w = gpu_reg(g, PC_B32);
			gpu_op3(g, PTX_CVT, f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32", po_r(w),
				po_r(g->acc[i][el + 1]), po_r(g->acc[i][el]));
			gpu_op2(g, PTX_ST, ".global.b32", po_mem(a, et * 16), po_r(w));
			ptx_guard(g->f, ok, 0);
		}
	}
}
