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

/* The lane part of V read v's ldmatrix addresses in buffer 0, at the
** first column of the CTA's slice of V's columns (KernelShape.vslices):
** where V's tiles are K's (absorbed MLA), its columns start within K's
** rows. */
PReg sm80_v_lane_addr(KernelGen *g, PReg sbase, int v)
{
	const Smem *sm = &sm80_of(g)->sm;
	PReg a = sm80_lane_addr(g, sbase, sm->v[v], sm->vs[v], 1);
	if (sm->vk[v] >= 0 && g->vcol0.n) {
		PReg b = gpu_reg(g, PC_B32), c = gpu_u32(g, g->vcol0);
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(b), po_r(c), po_i(2), po_r(a));
		a = b;
	}
	return a;
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
			int32_t off = (int32_t)(kk * 16 * sm->vs[pv->vslot] + ep * 32);
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

/* The first step of R += X^T A of SN_CROSS node i (gpu/tile.c; a
** backward's dQ += dS K in the kernel over key tiles): X, per score
** element, to shared memory as bf16/f16 pairs (rows: the CTA's rows,
** columns: the tile's streamed rows), row 16 rb warp + 16 m + lane / 4
** (+ 8), columns 2 (lane % 4) + 8 nt and the next. */
void sm80_cross_stage(KernelGen *g, int i, const PReg *x)
{
	const Smem *sm = &sm80_of(g)->sm;
	int ci = g->s->node[i].gemm;
	const char *cvt =
	    g->s->cross[ci].r->tensor->dtype == DT_F16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32";
	PReg q4 = gpu_reg(g, PC_B64), ql = gpu_reg(g, PC_B64), row = gpu_reg(g, PC_B64),
	     xa = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SHR, ".u64", po_r(q4), po_r(g->lane), po_i(2));
	gpu_op3(g, PTX_AND, ".b64", po_r(ql), po_r(g->lane), po_i(3));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(row), po_r(g->warp), po_i(16 * g->row_blocks),
		po_r(q4));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(xa), po_r(gpu_u32(g, row)), po_i(sm->xs),
		po_r(g->sbase));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(xa), po_r(gpu_u32(g, ql)), po_i(4), po_r(xa));
	for (int el = 0; el < g->row_blocks * g->nel; el += 2) {
		int m = el / g->nel, nt = el % g->nel / 4, half = (el >> 1) & 1;
		PReg pk = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_CVT, cvt, po_r(pk), po_r(x[el + 1]), po_r(x[el]));
		gpu_op2(g, PTX_ST, ".shared.b32",
			po_mem(xa, (int32_t)(sm->x[ci] + (uint32_t)(m * 16 + half * 8) * sm->xs +
					     (uint32_t)nt * 16)),
			po_r(pk));
	}
}

/* The second step, after the tile body's other nodes: a barrier (every
** warp's X is in place), then warp w takes streamed rows [16 w, 16 w + 16):
** X^T's fragments by ldmatrix.trans over all the CTA's rows, kept for every
** chunk; A's (the contraction's first operand, in Q's place) by
** ldmatrix.trans as V's are; e in chunks of eight n8 tiles (eight
** independent accumulator chains), whose sums are added to R by
** red.global.add.f32, streamed rows past the stream's end adding nothing.
** The X tile is written again only after the tile's end (a barrier). */
void sm80_contract_cross(KernelGen *g, int i)
{
	Sm80Kernel *k8 = sm80_of(g);
	const Smem *sm = &k8->sm;
	int ci = g->s->node[i].gemm;
	const CrossContraction *cc = &g->s->cross[ci];
	const char *mma = cc->r->tensor->dtype == DT_F16
			      ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	int warps = gpu_warps(g->t), nkk = g->cta_rows / 16, net = (int)(cc->D / 8);
	gpu_op1(g, PTX_BAR, "", po_i(0));
	PReg q4 = gpu_reg(g, PC_B64), ql = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SHR, ".u64", po_r(q4), po_r(g->lane), po_i(2));
	gpu_op3(g, PTX_AND, ".b64", po_r(ql), po_r(g->lane), po_i(3));
	PReg al = sm80_lane_addr(g, g->sbase, sm->x[ci], sm->xs, 0);
	PReg bl = sm80_lane_addr(g, g->sbase, sm->q[cc->qk], sm->qs[cc->qk], 1);
	for (int sb = 0; sb < g->bn / 16 / warps; sb++) {
		/* this warp's 16 streamed rows: columns 16 (warp + warps sb) of X */
		PReg blk = gpu_reg(g, PC_B64), ab = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_ADD, ".s64", po_r(blk), po_r(g->warp), po_i(warps * sb));
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(ab), po_r(gpu_u32(g, blk)), po_i(32), po_r(al));
		PReg a[8][4];
		for (int kk = 0; kk < nkk && kk < 8; kk++) {
			for (int q = 0; q < 4; q++)
				a[kk][q] = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_LDMATRIX, ".sync.aligned.m8n8.x4.trans.shared.b16",
				po_vec(a[kk], 4),
				po_mem(ab, (int32_t)((uint32_t)kk * 16 * sm->xs)));
		}
		/* the thread's streamed rows and whether they are in the stream */
		PReg r0 = gpu_reg(g, PC_B64), r1 = gpu_reg(g, PC_B64), ok0 = gpu_reg(g, PC_PRED),
		     ok1 = gpu_reg(g, PC_PRED);
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(r0), po_r(blk), po_i(16), po_r(g->j0));
		gpu_op3(g, PTX_ADD, ".s64", po_r(r0), po_r(r0), po_r(q4));
		gpu_op3(g, PTX_ADD, ".s64", po_r(r1), po_r(r0), po_i(8));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(ok0), po_r(r0), po_r(g->sext));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(ok1), po_r(r1), po_r(g->sext));
		PReg ad[2] = {gpu_cross_row_addr(g, i, r0), gpu_cross_row_addr(g, i, r1)},
		     ok[2] = {ok0, ok1};
		for (int h = 0; h < 2; h++) {
			PReg c = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_SHL, ".b64", po_r(c), po_r(ql), po_i(3));
			gpu_op3(g, PTX_ADD, ".s64", po_r(ad[h]), po_r(ad[h]), po_r(c));
		}
		for (int c0 = 0; c0 < net; c0 += 8) {
			PReg acc[8][4];
			int nt = net - c0 < 8 ? net - c0 : 8;
			for (int t = 0; t < nt; t++)
				for (int q = 0; q < 4; q++) {
					acc[t][q] = gpu_reg(g, PC_F32);
					gpu_op2(g, PTX_MOV, ".f32", po_r(acc[t][q]), po_f(0.0f));
				}
			for (int kk = 0; kk < nkk && kk < 8; kk++)
				for (int ep = 0; ep < nt / 2; ep++) {
					/* A rows kk*16 + (mi&1)*8 + r, e = c0*8 + ep*16 + (mi>>1)*8 */
					int32_t off = (int32_t)((uint32_t)kk * 16 * sm->qs[cc->qk] +
								(uint32_t)(c0 * 16 + ep * 32));
					PReg b[4];
					for (int q = 0; q < 4; q++)
						b[q] = gpu_reg(g, PC_B32);
					gpu_op2(g, PTX_LDMATRIX,
						".sync.aligned.m8n8.x4.trans.shared.b16",
						po_vec(b, 4), po_mem(bl, off));
					for (int half = 0; half < 2; half++) {
						PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
						PReg *d = acc[2 * ep + half];
						gpu_op4(g, PTX_MMA, mma, po_vec(d, 4),
							po_vec(a[kk], 4), po_vec(bb, 2),
							po_vec(d, 4));
					}
				}
			for (int t = 0; t < nt; t++)
				for (int q = 0; q < 4; q++) {
					int h = q >> 1;
					int32_t off = (int32_t)((c0 + t) * 32 + (q & 1) * 4);
					gpu_op2(g, PTX_RED, ".global.add.f32", po_mem(ad[h], off),
						po_r(acc[t][q]));
					ptx_guard(g->f, ok[h], 0);
				}
		}
	}
}
