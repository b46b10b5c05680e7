/*
** lowering/sm80/mma.c: sm_80's contractions. ldmatrix reads Q, K and V
** fragments from shared memory (V transposed), mma.sync.m16n8k16 with f32
** accumulators computes S = Q K^T and O += P V, P packed to bf16 or f16
** in registers as the second mma's A operand.
*/
#include <string.h>

#include "sm80.h"

/* Shared-memory address (u32) of lane-dependent ldmatrix rows. */
static PReg lm_addr(KernelGen *g, PReg sbase, uint32_t soff, uint32_t stride, PReg row,
		    PReg colbytes)
{
	PReg a = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(row), po_i(stride), po_r(colbytes));
	gpu_op3(g, PTX_ADD, ".u32", po_r(a), po_r(a), po_r(sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(a), po_r(a), po_i(soff));
	return a;
}

/* Lane-dependent part of the ldmatrix addresses of K (B operand, rows j)
** and V (transposed, rows j): row = (mi>>1)*8 + r, column byte (mi&1)*16
** for K; row = (mi&1)*8 + r, column byte (mi>>1)*16 for V. */
PReg sm80_lane_addr(KernelGen *g, PReg sbase, uint32_t soff, uint32_t stride, int transposed)
{
	PReg mi = gpu_reg(g, PC_B64), r = gpu_reg(g, PC_B64), lo = gpu_reg(g, PC_B64),
	     hi = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SHR, ".u64", po_r(mi), po_r(g->lane), po_i(3));
	gpu_op3(g, PTX_AND, ".b64", po_r(r), po_r(g->lane), po_i(7));
	gpu_op3(g, PTX_AND, ".b64", po_r(lo), po_r(mi), po_i(1));
	gpu_op3(g, PTX_SHR, ".u64", po_r(hi), po_r(mi), po_i(1));
	PReg row = gpu_reg(g, PC_B64), cb = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(row), po_r(transposed ? lo : hi), po_i(8), po_r(r));
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(cb), po_r(transposed ? hi : lo), po_i(16));
	return lm_addr(g, sbase, soff, stride, gpu_u32(g, row), gpu_u32(g, cb));
}

static void q_frag(KernelGen *g, const QFrag *q, int m, int kk, PReg out[4])
{
	if (q->inregs) {
		memcpy(out, q->qf[m][kk], 4 * sizeof(PReg));
		return;
	}
	for (int k = 0; k < 4; k++)
		out[k] = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16", po_vec(out, 4),
		po_mem(q->qaddr[m], kk * 32));
}

/* S = Q K^T of GEMM1 node i: each K fragment feeds every row block. */
void sm80_contract_qk(KernelGen *g, int i)
{
	Sm80Kernel *k8 = sm80_of(g);
	const Smem *sm = &k8->sm;
	const QFrag *qf = &k8->qf[g->s->node[i].gemm];
	const QKContraction *qk = &g->s->qk[g->s->node[i].gemm];
	int gi = g->s->node[i].gemm;
	PReg *acc = g->tile[i];
	for (int el = 0; el < g->row_blocks * g->nel; el++) {
		acc[el] = gpu_reg(g, PC_F32);
		gpu_op2(g, PTX_MOV, ".f32", po_r(acc[el]), po_f(0.0f));
	}
	int f16 = qk->a->tensor->dtype == DT_F16;
	const char *mma = f16 ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	PReg base = k8->kaddr[gi];
	for (int kk = 0; kk < qk->D / 16; kk++) {
		PReg a[GPU_MAXMT][4];
		for (int m = 0; m < g->row_blocks; m++)
			q_frag(g, qf, m, kk, a[m]);
		for (int np = 0; np < g->bn / 16; np++) {
			/* K rows j = np*16 + lane part, d = kk*16 + lane part */
			int32_t off = (int32_t)(np * 16 * sm->ks[gi] + kk * 32);
			PReg b[4];
			for (int q = 0; q < 4; q++)
				b[q] = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16", po_vec(b, 4),
				po_mem(base, off));
			for (int m = 0; m < g->row_blocks; m++)
				for (int half = 0; half < 2; half++) {
					PReg *d = &acc[m * g->nel + (2 * np + half) * 4];
					PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
					gpu_op4(g, PTX_MMA, mma, po_vec(d, 4), po_vec(a[m], 4),
						po_vec(bb, 2), po_vec(d, 4));
				}
		}
	}
}

/* Q fragments stay in registers when they, the output accumulators and the
** score tile fit in about 192 registers; otherwise they are re-read. */
static int q_in_regs(const KernelShape *s, int mt)
{
	long regs = 0;
	for (int k = 0; k < s->nqk; k++)
		regs += mt * s->qk[k].D / 16 * 4 + mt * GPU_BN / 2;
	regs += (long)s->npv * mt * s->DV / 8 * 4;
	/* two score tiles and no running max (a backward's S and dP): the
	** element-wise chain between them holds more values than a softmax's */
	int rmax = 0;
	for (int i = 0; i < s->p->c->nodes.n; i++)
		rmax |= s->node[i].kind == SN_RMAX;
	return regs <= (s->nqk == 2 && !rmax ? 128 : 192);
}

/* Each row block's Q address for ldmatrix, and its fragments when they
** stay in registers (q_in_regs), once Q is in shared memory. */
void sm80_q_frags(KernelGen *g)
{
	const KernelShape *s = g->s;
	Sm80Kernel *k8 = sm80_of(g);
	QFrag *qf = k8->qf;
	const Smem *sm = &k8->sm;
	PReg sbase = g->sbase;
	for (int k = 0; k < s->nqk; k++) {
		long nk = s->qk[k].D / 16;
		qf[k].inregs = q_in_regs(s, g->row_blocks);
		for (int m = 0; m < g->row_blocks; m++) {
			/* A rows: warp*16*mt + m*16 + (lane & 15), cols (lane >> 4)*8 */
			PReg row = gpu_reg(g, PC_B64), cb = gpu_reg(g, PC_B64),
			     l15 = gpu_reg(g, PC_B64), l4 = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_AND, ".b64", po_r(l15), po_r(g->lane), po_i(15));
			gpu_op3(g, PTX_SHR, ".u64", po_r(l4), po_r(g->lane), po_i(4));
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(row), po_r(g->warp),
				po_i(16 * g->row_blocks), po_r(l15));
			gpu_op3(g, PTX_ADD, ".s64", po_r(row), po_r(row), po_i(16 * m));
			gpu_op3(g, PTX_MUL, ".lo.s64", po_r(cb), po_r(l4), po_i(16));
			/* one register per row block: an immediate offset from one base
			** makes ptxas spill more */
			qf[k].qaddr[m] =
			    lm_addr(g, sbase, sm->q[k], sm->qs[k], gpu_u32(g, row), gpu_u32(g, cb));
			if (!qf[k].inregs)
				continue;
			qf[k].qf[m] = ARENA_ARRAY(g->a, PReg *, nk + 1);
			for (long kk = 0; kk < nk; kk++) {
				qf[k].qf[m][kk] = ARENA_ARRAY(g->a, PReg, 4);
				for (int q = 0; q < 4; q++)
					qf[k].qf[m][kk][q] = gpu_reg(g, PC_B32);
				gpu_op2(g, PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16",
					po_vec(qf[k].qf[m][kk], 4),
					po_mem(qf[k].qaddr[m], (int32_t)kk * 32));
			}
		}
	}
}

/* O += P V of GEMM2 node i: P (per score element, masked) packed to
** bf16x2 / f16x2 pairs as the A operand, V's fragments by ldmatrix.trans. */
void sm80_contract_pv(KernelGen *g, int i, const PReg *x)
{
	Sm80Kernel *k8 = sm80_of(g);
	const Smem *sm = &k8->sm;
	const PVContraction *pv = &g->s->pv[g->s->node[i].gemm];
	int net = (int)(pv->DV / 8);
	int f16 = pv->v->tensor->dtype == DT_F16;
	const char *cvt = f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32";
	const char *mma = f16 ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	for (int kk = 0; kk < g->bn / 16; kk++) {
		PReg a[GPU_MAXMT][4];
		for (int m = 0; m < g->row_blocks; m++)
			for (int q = 0; q < 4; q++) {
				int el = m * g->nel + (2 * kk + (q >> 1)) * 4 + (q & 1) * 2;
				a[m][q] = gpu_reg(g, PC_B32);
				gpu_op3(g, PTX_CVT, cvt, po_r(a[m][q]), po_r(x[el + 1]),
					po_r(x[el]));
			}
		/* V fragments by ldmatrix.trans: row j = kk*16 + (mi&1)*8 + r, col e = ep*16 + (mi>>1)*8 */
		for (int ep = 0; ep < net / 2; ep++) {
			int32_t off = (int32_t)(kk * 16 * sm->vs + ep * 32);
			PReg b[4];
			for (int q = 0; q < 4; q++)
				b[q] = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_LDMATRIX, ".sync.aligned.m8n8.x4.trans.shared.b16",
				po_vec(b, 4), po_mem(k8->vaddr[pv->vslot], off));
			for (int m = 0; m < g->row_blocks; m++)
				for (int half = 0; half < 2; half++) {
					int et = 2 * ep + half;
					PReg *d = &g->acc[i][m * net * 4 + et * 4];
					PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
					gpu_op4(g, PTX_MMA, mma, po_vec(d, 4), po_vec(a[m], 4),
						po_vec(bb, 2), po_vec(d, 4));
				}
		}
	}
}
