/*
** lowering/sm90/mma.c: the two contractions on wgmma. S = Q K^T takes
** both operands from shared memory (K-major, 128-byte swizzle); O += P V
** takes P from registers (the accumulator layout of S is the register A
** layout, as with mma.sync) and V from shared memory as an N-major
** (transposed) operand. Each batch of wgmma is fenced (the registers it
** reads or accumulates into were written by ordinary instructions),
** committed and waited for before its results are read. A tile's P V may
** be issued late, behind the next tile's Q K^T.
*/
#include "sm90.h"

/* Descriptor fields (PTX ISA, wgmma matrix descriptor): start address,
** leading and stride byte offsets, all in 16-byte units; bit 62 selects
** the 128-byte swizzle. K-major swizzled operands ignore the leading
** offset (1 by convention); the stride between 8-row groups is 1024. For
** V (N-major), the leading offset is the distance between 64-element
** panels of N and the stride again 8 rows of 128 bytes. */
enum { DESC_SBO = 1024 >> 4 };
static const uint64_t DESC_SWIZZLE128 = 1ull << 62;

/* The descriptor of the operand at shared address addr (u32) with
** leading byte offset lbo: the address's 14 bits, then the constants. */
PReg sm90_descriptor(KernelGen *g, PReg addr, uint32_t lbo)
{
	PReg a = gpu_reg(g, PC_B32), d = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SHR, ".u32", po_r(a), po_r(addr), po_i(4));
	gpu_op3(g, PTX_AND, ".b32", po_r(a), po_r(a), po_i(0x3fff));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(d), po_r(a));
	uint64_t c = DESC_SWIZZLE128 | ((uint64_t)DESC_SBO << 32) | ((uint64_t)(lbo >> 4) << 16);
	gpu_op3(g, PTX_OR, ".b64", po_r(d), po_r(d), po_i((int64_t)c));
	return d;
}

/* d + off bytes (the start address field: off / 16 added, no carry out of
** its 14 bits for shared addresses). */
PReg sm90_desc_at(KernelGen *g, PReg d, uint32_t off)
{
	if (!off)
		return d;
	PReg r = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_ADD, ".s64", po_r(r), po_r(d), po_i(off >> 4));
	return r;
}

/* The wgmma type of a 16-bit operand read: f16 or bf16 as its tensor's. */
const char *sm90_elem_type(const Expr *read)
{
	return read->tensor->dtype == DT_F16 ? "f16" : "bf16";
}

/* Q's A fragments, read once from shared memory (gpu_tma_a_frags). */
void sm90_q_frags(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	for (int k = 0; k < g->s->nqk; k++)
		k9->qf[k] = ARENA_ARRAY(g->a, PReg, 4 * (g->s->qk[k].D / 16));
	gpu_tma_a_frags(g, k9->q, g->s->nqk, k9->qf);
}

/* Q in registers where they fit beside the tile body's values: one
** contraction with a head dim up to 128 on 64-key tiles, up to 64 on
** 128-key tiles (at 256, or with two, ptxas spilled the consumers' 240
** registers). */
int sm90_q_in_regs(const KernelShape *s)
{
	return s->nqk == 1 && s->qk[0].D <= (s->bn > GPU_BN ? 64 : 128);
}

/* S = Q K^T of GEMM1 node i: D / 16 wgmma m64n64k16, the first
** overwriting (scale-d false). Q's A operand comes from its fragments in
** registers where they fit (sm90_q_in_regs: only K is then read from
** shared memory, half the bytes of both), else from this warpgroup's 64
** rows of Q in shared memory. A k-step of 16 elements is 32 bytes into a
** panel's rows, or the next panel. */
void sm90_contract_qk(KernelGen *g, int node)
{
	Sm90Kernel *k9 = sm90_of(g);
	int k = g->s->node[node].gemm, regs = sm90_q_in_regs(g->s);
	const TmaRead *q = &k9->q[k], *kr = &k9->k[k];
	long D = g->s->qk[k].D;
	const char *mods = arena_printf(g->a, ".sync.aligned.m64n%dk16.f32.%s.%s", g->bn,
					sm90_elem_type(q->e), sm90_elem_type(kr->e));
	PReg qd = {0};
	if (!regs) {
		/* this warpgroup's 64 rows of Q: 64 panel rows in (none where
		** both warpgroups take the same rows: KernelShape.cta_slices) */
		PReg wg = gpu_reg(g, PC_B32), qa = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(wg), po_r(gpu_tid(g)));
		gpu_op3(g, PTX_SHR, ".u32", po_r(wg), po_r(wg), po_i(7));
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(qa), po_r(wg),
			po_i(g->s->cta_slices > 1 ? 0 : 64 * GPU_TMAP_ROW), po_r(g->sbase));
		qd = sm90_descriptor(g, qa, 0);
	}
	PReg kd = sm90_descriptor(g, k9->stage_addr, 0);
	PReg first = gpu_pconst(g, 0), rest = gpu_pconst(g, 1);
	for (int el = 0; el < g->nel; el++)
		g->tile[node][el] = gpu_reg(g, PC_F32);
	gpu_op0(g, PTX_WGMMA_FENCE, ".sync.aligned");
	for (long kk = 0; kk < D / 16; kk++) {
		uint32_t p = (uint32_t)(kk / 4), in = (uint32_t)(kk % 4) * 32;
		PtxOpnd a =
		    regs ? po_vec(&k9->qf[k][4 * kk], 4)
			 : po_r(sm90_desc_at(g, qd, q->off + p * q->rows * GPU_TMAP_ROW + in));
		PReg b = sm90_desc_at(
		    g, kd, k9->stage0 + kr->off + p * (uint32_t)g->bn * GPU_TMAP_ROW + in);
		/* with A in registers, wgmma takes no transpose flag for it: the
		** first of the two zeros goes */
		PtxOpnd o[8] = {po_vec(g->tile[node], g->nel),
				a,
				po_r(b),
				po_r(kk ? rest : first),
				po_i(1),
				po_i(1),
				po_i(0),
				po_i(0)};
		ptx_emit(g->f, PTX_WGMMA, mods, regs ? 7 : 8, o);
	}
	gpu_op0(g, PTX_WGMMA_COMMIT, ".sync.aligned");
	if (k9->issue_due) {
		/* the previous tile's P V behind it: only Q K^T waited for */
		k9->issue_due = 0;
		sm90_issue_late_pv(g);
		sm90_hand_over(g);
		gpu_op1(g, PTX_WGMMA_WAIT, ".sync.aligned", po_i(1));
		return;
	}
	/* at head dim 128 a later Q K^T of the tile (a backward's dP^T beside
	** S^T) is issued before this one is waited for, the turn handed over
	** once both are: at 64 that was 1-5% slower */
	int more = 0;
	for (int j = node + 1; j < g->c->nodes.n; j++)
		more |= g->s->node[j].kind == SN_GEMM1;
	if (more && D >= 128)
		return;
	sm90_hand_over(g);
	gpu_op1(g, PTX_WGMMA_WAIT, ".sync.aligned", po_i(0));
	if (!k9->late_pv)
		sm90_release_prev(g);
}

/* P packed to 16-bit pairs as the A fragments of O += P V: k-step kk of
** 16 keys of row block m is n-tiles 2 kk and 2 kk + 1 of S, into
** a[(m * g->bn / 16 + kk) * 4 + q]. */
static void pack_p(KernelGen *g, int i, const PReg *x, PReg *a)
{
	const PVContraction *pv = &g->s->pv[g->s->node[i].gemm];
	const char *cvt = sm90_of(g)->v[pv->vslot].e->tensor->dtype == DT_F16 ? ".rn.f16x2.f32"
									      : ".rn.bf16x2.f32";
	for (int m = 0; m < g->row_blocks; m++)
		for (int kk = 0; kk < g->bn / 16; kk++)
			for (int q = 0; q < 4; q++) {
				int el = m * g->nel + (2 * kk + (q >> 1)) * 4 + (q & 1) * 2;
				gpu_op3(g, PTX_CVT, cvt, po_r(a[(m * g->bn / 16 + kk) * 4 + q]),
					po_r(x[el + 1]), po_r(x[el]));
			}
}

/* O += P V of GEMM2 node i on wgmma, N whole panels (gpu_acc_cols): P's
** fragments a (pack_p), V's k-step 16 keys (2048 bytes) into its panels in
** the stage at shared address stage, panels bn rows apart (the leading byte
** offset); a warpgroup's slice of V's columns (KernelShape.cta_slices)
** starts vcol0 / 64 panels in. Neither fenced nor committed here. */
static void pv_wgmma(KernelGen *g, int i, PReg stage, const PReg *a)
{
	Sm90Kernel *k9 = sm90_of(g);
	const PVContraction *pv = &g->s->pv[g->s->node[i].gemm];
	const TmaRead *vr = &k9->v[pv->vslot];
	int net = (int)(pv->DV / 8), n = (int)gpu_acc_cols(g->t, g->s);
	const char *t = sm90_elem_type(vr->e);
	const char *mods = arena_printf(g->a, ".sync.aligned.m64n%dk16.f32.%s.%s", n, t, t);
	if (g->s->cta_slices > 1) {
		PReg at = gpu_reg(g, PC_B32);
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(at), po_r(gpu_u32(g, g->vcol0)),
			po_i(g->bn * GPU_TMAP_ROW / GPU_TMAP_INNER), po_r(stage));
		stage = at;
	}
	PReg vd = sm90_descriptor(g, stage, (uint32_t)g->bn * GPU_TMAP_ROW);
	PReg one = gpu_pconst(g, 1);
	for (int m = 0; m < g->row_blocks; m++)
		for (int kk = 0; kk < g->bn / 16; kk++) {
			uint32_t vo = k9->stage0 + vr->off + (uint32_t)kk * 16 * GPU_TMAP_ROW;
			PtxOpnd o[7] = {po_vec(&g->acc[i][m * net * 4], n / 2),
					po_vec(&a[(m * g->bn / 16 + kk) * 4], 4),
					po_r(sm90_desc_at(g, vd, vo)),
					po_r(one),
					po_i(1),
					po_i(1),
					po_i(1)};
			ptx_emit(g->f, PTX_WGMMA, mods, 7, o);
		}
}

/* O += P V of GEMM2 node i. Issued late (sm90_late_pv_wanted), P is only
** packed here: the next tile's first Q K^T issues it (sm90_issue_late_pv).
** Else issued now and not waited for: the next tile's scores wait for it
** (the accumulators are not touched before), so that it runs while this
** warpgroup goes on to the next tile's wait and Q K^T. */
void sm90_contract_pv(KernelGen *g, int i, const PReg *x)
{
	Sm90Kernel *k9 = sm90_of(g);
	if (k9->late_pv || k9->pv_cross) {
		pack_p(g, i, x, k9->pf[g->s->node[i].gemm]);
		return;
	}
	PReg a[GPU_MAXNEL / 2];
	for (int r = 0; r < g->row_blocks * g->bn / 16 * 4; r++)
		a[r] = gpu_reg(g, PC_B32);
	pack_p(g, i, x, a);
	gpu_op0(g, PTX_WGMMA_FENCE, ".sync.aligned");
	pv_wgmma(g, i, k9->stage_addr, a);
	gpu_op0(g, PTX_WGMMA_COMMIT, ".sync.aligned");
}

/* FlashAttention-3's intra-warpgroup overlap: tile t's P V is issued after
** tile t + 1's Q K^T, and waited for only before the accumulators are
** rescaled (sm90_acc_wait), so that tile t + 1's maxes and exponentials run
** while it does; its P fragments stay live across the loop's back edge. It
** pays where a score costs more than its exponential (an element-wise
** value besides softmax's exp, such as ALiBi's bias) and a tile's
** contractions are long enough to cover it (head dim 128), and costs
** elsewhere (bench/RESULTS.md). Only with a P V: its wait
** releases the stage (sm90_acc_wait); a first pass with none hung. Not
** where the warpgroups are slices over the same rows: ptxas serialised
** every wgmma of absorbed MLA's stream-K entry (C7520). */
int sm90_late_pv_wanted(const KernelGen *g)
{
	int maps = 0;
	for (int i = 0; i < g->c->nodes.n; i++)
		maps += g->s->node[i].kind == SN_MAP && !gpu_folded(g, i);
	return g->s->npv > 0 && g->s->qk[0].D >= 128 && maps >= 2 && g->s->cta_slices == 1;
}

/* The late P V's fragments, one set per contraction with V; a kernel with
** one sum over the CTA's rows issues its P V behind that sum's wgmma
** instead (sm90_issue_pv), so that the sum's staging runs beside it. */
void sm90_late_pv_setup(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	k9->pv_cross = g->s->ncross == 1;
	k9->late_pv = sm90_late_pv_wanted(g) && !k9->pv_cross;
	if (!k9->late_pv && !k9->pv_cross)
		return;
	for (int v = 0; v < g->s->npv; v++) {
		int n = g->row_blocks * g->bn / 16 * 4;
		k9->pf[v] = ARENA_ARRAY(g->a, PReg, n);
		for (int r = 0; r < n; r++)
			k9->pf[v][r] = gpu_reg(g, PC_B32);
	}
}

/* O += P V of every contraction with V from the stage at stage (u32),
** with the fragments sm90_contract_pv packed. Not committed. */
static void packed_pv(KernelGen *g, PReg stage)
{
	Sm90Kernel *k9 = sm90_of(g);
	for (int i = 0; i < g->c->nodes.n; i++)
		if (g->s->node[i].kind == SN_GEMM2)
			pv_wgmma(g, i, stage, k9->pf[g->s->node[i].gemm]);
}

/* The previous tile's P V of every contraction with V, where there is a
** previous tile (a warpgroup-uniform branch), from its stage; then a
** commit, of an empty group where there is none, so that the caller may
** wait for all but this group. After a wgmma fence. */
void sm90_issue_late_pv(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	PReg sa = gpu_reg(g, PC_B32);
	int skip = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
	ptx_guard(g->f, k9->has_prev, 1);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(k9->prev_stage), po_i(k9->stage_bytes),
		po_r(g->sbase));
	packed_pv(g, sa);
	ptx_label(g->f, skip);
	gpu_op0(g, PTX_WGMMA_COMMIT, ".sync.aligned");
}

/* This tile's P V of every contraction with V (packed by
** sm90_contract_pv), from its stage, committed: behind a sum's wgmma. */
void sm90_issue_pv(KernelGen *g)
{
	packed_pv(g, sm90_of(g)->stage_addr);
	gpu_op0(g, PTX_WGMMA_COMMIT, ".sync.aligned");
}

/* Before the first rescale of accumulators in each of the tile's bodies
** (the masked and the unmasked one, so emitted twice): the late P V of the
** previous tile completes, and its stage goes back to the producer. */
void sm90_acc_wait(KernelGen *g, int node)
{
	(void)node;
	if (!sm90_of(g)->late_pv)
		return;
	gpu_op1(g, PTX_WGMMA_WAIT, ".sync.aligned", po_i(0));
	sm90_release(g);
}
