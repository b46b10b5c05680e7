/*
** lowering/sm80/epilogue.c: sm_80's output stores. The accumulators of a
** 16-bit output go out through the warp's rows of Q's shared memory and
** 16-byte stores that write whole rows, or as bf16x2 / f16x2 pairs
** (gpu/pairs.c), where the output's strides allow (a uniform test of the
** stride parameters).
*/
#include "sm80.h"

/* Node i's output can go out through shared memory (store_staged): no GQA
** packing (rows map to addresses linearly), Q's rows are wide enough for a
** row of the output, and a warp's 32 lanes cover whole rows or a row in
** whole steps of 32 chunks (value head dims 64, 128, 256). */
static int staged_wanted(const KernelGen *g, const Smem *sm)
{
	const KernelShape *s = g->s;
	long cpr = s->DV / 8;
	return !s->pack && s->nqk >= 1 && sm->qs[0] >= (uint32_t)(s->DV * 2) &&
	       (32 % cpr == 0 || cpr % 32 == 0);
}

/* The output accumulators through the warp's own rows of Q's shared memory
** (free since the last contraction: each warp reads only its own rows of Q),
** then out with 16-byte stores that write whole rows: 16 coalesced stores
** per thread at D = 128 instead of 64 four-byte ones that write each row in
** 16-byte pieces, as FlashAttention-2's epilogue does. The warp orders its
** own shared writes and reads with bar.warp.sync; no CTA barrier. Needs
** the column dimension contiguous and every other stride a multiple of 8
** elements (the runtime checks 16-byte base pointers); other layouts
** branch to `pairs`. */
static void store_staged(KernelGen *g, int i, int pc, const Smem *sm, PReg sbase, int pairs)
{
	const Tensor *out = gpu_node(g, i)->out;
	long cpr = g->s->DV / 8; /* 16-byte chunks per row, and n8 tiles per row block */
	int f16 = out->dtype == DT_F16, rw = 16 * g->row_blocks;
	uint32_t qs = sm->qs[0];
	gpu_layout_guard(g, out, pc, 7, pairs);
	/* the warp's rows start at warp * rw; the thread writes its pairs at row
	** lane / 4 (+ 8, + 16, ...) and column 2 (lane % 4) (+ 8 et) */
	PReg wrow = gpu_reg(g, PC_B64), r = gpu_reg(g, PC_B64), c = gpu_reg(g, PC_B64),
	     w = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(wrow), po_r(g->warp), po_i(rw));
	gpu_op3(g, PTX_SHR, ".u64", po_r(r), po_r(g->lane), po_i(2));
	gpu_op3(g, PTX_ADD, ".s64", po_r(r), po_r(r), po_r(wrow));
	gpu_op3(g, PTX_AND, ".b64", po_r(c), po_r(g->lane), po_i(3));
	gpu_op3(g, PTX_SHL, ".b64", po_r(c), po_r(c), po_i(2));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(c), po_r(r), po_i(qs), po_r(c));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(w), po_r(c));
	gpu_op3(g, PTX_ADD, ".u32", po_r(w), po_r(w), po_r(sbase));
	/* the warp's last reads of Q (its ldmatrix) are behind it; its lanes
	** agree before the first write, and again before the rows are read */
	gpu_op1(g, PTX_BAR_WARP, "", po_i(-1));
	for (int h = 0; h < 2 * g->row_blocks; h++)
		for (int et = 0; et < cpr; et++) {
			int el = h / 2 * (int)cpr * 4 + et * 4 + h % 2 * 2;
			PReg x = gpu_reg(g, PC_B32);
			gpu_op3(g, PTX_CVT, f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32", po_r(x),
				po_r(g->acc[i][el + 1]), po_r(g->acc[i][el]));
			gpu_op2(
			    g, PTX_ST, ".shared.b32",
			    po_mem(w, (int32_t)(sm->q[0] + (uint32_t)(h / 2 * 16 + h % 2 * 8) * qs +
						(uint32_t)et * 16)),
			    po_r(x));
		}
	gpu_op1(g, PTX_BAR_WARP, "", po_i(-1));
	/* lane l reads 16-byte chunk l % cpr of row l / cpr (cpr <= 32), or
	** chunk l of the row (cpr >= 32); step `it` adds 32 chunks */
	PReg lrow = gpu_reg(g, PC_B64), lch = gpu_reg(g, PC_B64), rd = gpu_reg(g, PC_B32);
	if (cpr <= 32) {
		gpu_op3(g, PTX_SHR, ".u64", po_r(lrow), po_r(g->lane), po_i(gpu_log2(cpr)));
		gpu_op3(g, PTX_AND, ".b64", po_r(lch), po_r(g->lane), po_i(cpr - 1));
	} else {
		gpu_op2(g, PTX_MOV, ".b64", po_r(lrow), po_i(0));
		gpu_op2(g, PTX_MOV, ".b64", po_r(lch), po_r(g->lane));
	}
	gpu_op3(g, PTX_ADD, ".s64", po_r(lrow), po_r(lrow), po_r(wrow));
	gpu_op3(g, PTX_SHL, ".b64", po_r(c), po_r(lch), po_i(4));
	PReg c2 = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(c2), po_r(lrow), po_i(qs), po_r(c));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(rd), po_r(c2));
	gpu_op3(g, PTX_ADD, ".u32", po_r(rd), po_r(rd), po_r(sbase));
	/* global addresses of the lane's first chunk and of the row below it */
	Expr **args = ARENA_ARRAY(g->a, Expr *, out->rank + 1);
	for (int k = 0; k < out->rank; k++)
		args[k] = expr_index(g->a, k);
	PReg row = gpu_reg(g, PC_B64), row1 = gpu_reg(g, PC_B64), col = gpu_reg(g, PC_B64),
	     lim = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_ADD, ".s64", po_r(row), po_r(lrow), po_r(g->q0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(row1), po_r(row), po_i(1));
	gpu_op3(g, PTX_SHL, ".b64", po_r(col), po_r(lch), po_i(3));
	gpu_op3(g, PTX_SUB, ".s64", po_r(lim), po_r(g->qext), po_r(row));
	g->node = i, g->row = row, g->col = col;
	PReg ga = gpu_addr(g, out, args);
	g->row = row1;
	PReg rstride = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SUB, ".s64", po_r(rstride), po_r(gpu_addr(g, out, args)), po_r(ga));
	long its = rw * cpr / 32, prow = 0;
	for (long it = 0; it < its; it++) {
		long roff = it * 32 / cpr, coff = it * 32 % cpr;
		if (roff != prow) {
			PReg n = gpu_reg(g, PC_B64);
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(n), po_r(rstride), po_i(roff - prow),
				po_r(ga));
			ga = n, prow = roff;
		}
		PReg v[4], ok = gpu_reg(g, PC_PRED);
		for (int k = 0; k < 4; k++)
			v[k] = gpu_reg(g, PC_B32);
		gpu_op2(
		    g, PTX_LD, ".shared.v4.b32", po_vec(v, 4),
		    po_mem(rd, (int32_t)(sm->q[0] + (uint32_t)roff * qs + (uint32_t)coff * 16)));
		gpu_op3(g, PTX_SETP, ".gt.s64", po_r(ok), po_r(lim), po_i(roff));
		gpu_op2(g, PTX_ST, ".global.v4.b32", po_mem(ga, (int32_t)(coff * 16)),
			po_vec(v, 4));
		ptx_guard(g->f, ok, 0);
	}
}

/* Node i's output accumulators through the fast stores its layout allows:
** staged through shared memory, else in pairs, each ending with a branch
** to done; other layouts branch to slow (the caller's stores). */
void sm80_store_output(KernelGen *g, int i, PReg q, const PReg *crows, const PReg *okr, int slow,
		       int done)
{
	Sm80Kernel *k8 = sm80_of(g);
	int pc = gpu_pair_column(g, i);
	/* a packed output's rows go by pairs (gpu_store_pairs tests each) */
	if (pc >= 0 && staged_wanted(g, &k8->sm) && !gpu_node(g, i)->out->pack) {
		int pairs = ptx_new_label(g->f);
		store_staged(g, i, pc, &k8->sm, g->sbase, pairs);
		gpu_op1(g, PTX_BRA, ".uni", po_label(done));
		ptx_label(g->f, pairs);
	}
	if (pc >= 0) {
		gpu_store_pairs(g, crows, i, pc, q, okr, slow);
		gpu_op1(g, PTX_BRA, ".uni", po_label(done));
	}
}
