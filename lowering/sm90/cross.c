/*
** lowering/sm90/cross.c: a sum over the CTA's rows on wgmma, R[s, e] +=
** sum[i](X[i, s] * A[i, e]) (gpu/shape.c's SN_CROSS: a backward's dQ += dS
** K in the kernel over key tiles, whose rows are keys and whose streamed
** rows are queries). Its K dimension is all the CTA's rows, which the two
** consumer warpgroups hold half each, so X goes through shared memory:
**
**   cross_stage     every consumer thread stores its X elements, as 16-bit
**                   pairs, into this tile's X buffer, laid out as a V tile
**                   is (rows: the CTA's rows; 64-column panels of the
**                   streamed rows; the 128-byte swizzle), so that wgmma
**                   reads it as a transposed (M-major) A operand;
**   contract_cross  a proxy fence and a barrier of both warpgroups; then
**                   R's tile (bn streamed rows by e) in blocks of 64 by 64,
**                   the warpgroups taking every other block, computed as
**                   R^T = A^T X from the CTA's A rows already in shared
**                   memory and X, 32 accumulators a thread. The sums go to a
**                   staging buffer laid out as R's tensor map's boxes (64
**                   rows by 32 f32, the 128-byte swizzle), from which the
**                   TMA unit adds them to R (cp.reduce.async.bulk.tensor;
**                   rows past R's end add nothing) beside the next tiles'
**                   work: the consumers' own atomics stalled them (the
**                   designs measured: bench/RESULTS.md). The tile's P V
**                   (dK, dV) is issued behind the warpgroup's first block
**                   and runs while the sums are stored, not behind the
**                   next tile's scores as elsewhere (sm90_late_pv_setup).
**
** Tiles use two X buffers in turn: a warpgroup writes a buffer again only
** two tiles on, after the next tile's barrier, which the other reaches only
** once its wgmma of this one has completed. A staging buffer is written
** again after that barrier too, before which its rows' reductions have
** finished reading it.
*/
#include "sm90.h"

/* A staged 64 x 64 block of sums: two boxes of R's map, each 64 rows of
** 32 f32 (128 bytes). */
enum {
	BOX_ROWS = GPU_SUM_BOX_ROWS,
	BOX_COLS = GPU_TMAP_ROW / 4,
	BOX_BYTES = BOX_ROWS * GPU_TMAP_ROW,
	STAGE_BLOCK = 2 * BOX_BYTES
};

/* Blocks of 64 by 64 of a sum's tile of bn streamed rows by D. */
static int blocks(long D, int bn)
{
	return bn / 64 * (int)(D / 64);
}

/* Of them, those that one warpgroup takes (warpgroup 0 the odd last). */
static int blocks_per_wg(long D, int bn)
{
	return (blocks(D, bn) + 1) / 2;
}

/* Bytes of a sum's staged blocks, both warpgroups'. */
static uint32_t staging_bytes(long D, int bn)
{
	return 2u * (uint32_t)blocks_per_wg(D, bn) * STAGE_BLOCK;
}

/* Shared memory of the X buffers and the staged sums of a kernel with
** bn-key tiles: per sum two X buffers, each the CTA's 128 rows by bn
** 16-bit elements, and each warpgroup's blocks. */
uint32_t sm90_cross_bytes(const KernelShape *s, int bn)
{
	uint32_t b = 0;
	for (int c = 0; c < s->ncross; c++)
		b += 2u * GPU_MAXBN * (uint32_t)bn * 2u + staging_bytes(s->cross[c].D, bn);
	return b;
}

/* Sum c's staging buffer at off: returns the bytes after it. */
uint32_t sm90_cross_staging(KernelGen *g, int c, uint32_t off)
{
	Sm90Kernel *k9 = sm90_of(g);
	k9->xstage[c] = off;
	return off + staging_bytes(g->s->cross[c].D, g->bn);
}

/* The tensor map of each sum's output R (GpuTmap): a box of 64 streamed
** rows by 32 elements, 1 along R's other dimensions, whose indices are
** the CTA's grid indices. */
void sm90_cross_maps(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	KernelShape *s = g->s;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (s->node[i].kind != SN_CROSS)
			continue;
		int c = s->node[i].gemm;
		const Node *n = gpu_node(g, i);
		k9->xmap[c] = s->ntmaps++;
		GpuTmap *m = &s->tmap[k9->xmap[c]];
		m->tensor = n->out->id, m->rank = n->out->rank;
		for (int d = 0; d < m->rank; d++)
			m->box[d] = 1;
		k9->xrowdim[c] = gpu_cross_rowdim(g->p, s, i);
		m->box[k9->xrowdim[c]] = BOX_ROWS;
		m->box[m->rank - 1] = BOX_COLS;
	}
}

/* The first tile takes the first buffer. Called once per CTA: a
** persistent kernel's work tiles go on alternating, since a warpgroup may
** still read the buffer of the previous work tile's last tile. */
void sm90_cross_start(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	if (!g->s->ncross)
		return;
	k9->xflip = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b32", po_r(k9->xflip), po_i(0));
}

/* X of SN_CROSS node i, per score element (gpu/tile.c's cross_tile), to
** this tile's buffer, laid out as TMA lays out a V tile
** (gpu_tma_store_pairs). */
void sm90_cross_stage(KernelGen *g, int i, const PReg *x)
{
	Sm90Kernel *k9 = sm90_of(g);
	int ci = g->s->node[i].gemm;
	const char *cvt =
	    g->s->cross[ci].r->tensor->dtype == DT_F16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32";
	gpu_tma_store_pairs(g, x, cvt, k9->xflip, k9->x[ci]);
}

/* Block blk (u32) of the tile's sums of SN_CROSS node i: block mb = blk /
** panels of e, nb = blk % panels, into registers mb and nb. */
static void block_of(KernelGen *g, int i, PReg blk, PReg mb, PReg nb)
{
	uint32_t np = (uint32_t)(g->s->cross[g->s->node[i].gemm].D / 64);
	gpu_op3(g, PTX_DIV, ".u32", po_r(mb), po_r(blk), po_i(np));
	gpu_op3(g, PTX_REM, ".u32", po_r(nb), po_r(blk), po_i(np));
}

/* The shared address of this warpgroup's (wg, u32) staging of its block
** lb of SN_CROSS node i. */
static PReg staging(KernelGen *g, int i, PReg wg, int lb)
{
	Sm90Kernel *k9 = sm90_of(g);
	int ci = g->s->node[i].gemm, nlb = blocks_per_wg(g->s->cross[ci].D, g->bn);
	PReg a = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(wg), po_i(nlb * STAGE_BLOCK), po_r(g->sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(a), po_r(a),
		po_i((int64_t)(k9->xstage[ci] + (uint32_t)lb * STAGE_BLOCK)));
	return a;
}

/* This warpgroup's block lb (blk, u32) of SN_CROSS node i, computed
** transposed, R^T = A^T X: 16-row k-steps over the CTA's rows, A^T from
** panel nb of the CTA's A rows and X from its panel mb, both M- or
** N-major (transposed) operands; then its sums to the staging buffer
** (gpu_tma_store_sums_t), whose box p row r holds streamed row j0 + 64 mb
** + r, elements 64 nb + 32 p to 64 nb + 32 p + 31. The warpgroup's first
** block has this tile's P V issued behind it (pv_cross), which runs while
** the sums are stored. */
static void cross_block(KernelGen *g, int i, PReg blk, PReg wg, int lb)
{
	Sm90Kernel *k9 = sm90_of(g);
	int ci = g->s->node[i].gemm;
	const CrossContraction *cc = &g->s->cross[ci];
	const TmaRead *ar = &k9->q[cc->qk];
	uint32_t xpanel = (uint32_t)g->cta_rows * GPU_TMAP_ROW, apanel = ar->rows * GPU_TMAP_ROW;
	const char *ty = sm90_elem_type(cc->r);
	const char *mods = arena_printf(g->a, ".sync.aligned.m64n64k16.f32.%s.%s", ty, ty);
	PReg mb = gpu_reg(g, PC_B32), nb = gpu_reg(g, PC_B32), xa = gpu_reg(g, PC_B32),
	     aa = gpu_reg(g, PC_B32);
	block_of(g, i, blk, mb, nb);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(xa), po_r(mb), po_i(xpanel), po_r(k9->xflip));
	gpu_op3(g, PTX_ADD, ".u32", po_r(xa), po_r(xa), po_r(g->sbase));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(aa), po_r(nb), po_i(apanel), po_r(g->sbase));
	PReg ad = sm90_descriptor(g, aa, apanel), xd = sm90_descriptor(g, xa, xpanel);
	PReg acc[32];
	for (int r = 0; r < 32; r++)
		acc[r] = gpu_reg(g, PC_F32);
	PReg first = gpu_pconst(g, 0), rest = gpu_pconst(g, 1);
	gpu_op0(g, PTX_WGMMA_FENCE, ".sync.aligned");
	for (int kk = 0; kk < g->cta_rows / 16; kk++) {
		uint32_t step = (uint32_t)kk * 16 * GPU_TMAP_ROW;
		PtxOpnd o[8] = {po_vec(acc, 32),
				po_r(sm90_desc_at(g, ad, ar->off + step)),
				po_r(sm90_desc_at(g, xd, k9->x[ci] + step)),
				po_r(kk ? rest : first),
				po_i(1),
				po_i(1),
				po_i(1),
				po_i(1)};
		ptx_emit(g->f, PTX_WGMMA, mods, 8, o);
	}
	gpu_op0(g, PTX_WGMMA_COMMIT, ".sync.aligned");
	if (lb == 0 && k9->pv_cross)
		sm90_issue_pv(g);
	gpu_op1(g, PTX_WGMMA_WAIT, ".sync.aligned", po_i(lb == 0 && k9->pv_cross));
	gpu_tma_store_sums_t(g, acc, staging(g, i, wg, lb));
}

/* The reductions of this warpgroup's staged block lb (blk, u32) of
** SN_CROSS node i into R, by lane 0 of the calling warp: its two boxes at
** streamed row j0 + 64 mb, elements 64 nb and 64 nb + 32, the CTA's grid
** indices along R's other dimensions. */
static void cross_reduce(KernelGen *g, int i, PReg blk, PReg wg, int lb)
{
	Sm90Kernel *k9 = sm90_of(g);
	int ci = g->s->node[i].gemm, rank = gpu_node(g, i)->out->rank;
	PReg mb = gpu_reg(g, PC_B32), nb = gpu_reg(g, PC_B32), lane = gpu_reg(g, PC_B32),
	     row = gpu_reg(g, PC_B32), lead = gpu_reg(g, PC_PRED);
	block_of(g, i, blk, mb, nb);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(lane), po_r(gpu_tid(g)));
	gpu_op3(g, PTX_AND, ".b32", po_r(lane), po_r(lane), po_i(31));
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(lead), po_r(lane), po_i(0));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(row), po_r(mb), po_i(BOX_ROWS),
		po_r(gpu_u32(g, g->j0)));
	PReg map = gpu_tma_map_addr(g, k9->map_names[k9->xmap[ci]]);
	PReg sa = staging(g, i, wg, lb);
	for (int p = 0; p < 2; p++) {
		PReg c[GPU_TMAP_MAX_RANK];
		for (int d = 0; d < rank; d++) {
			int td = rank - 1 - d; /* innermost first */
			if (td == rank - 1) {
				c[d] = gpu_reg(g, PC_B32);
				gpu_op4(g, PTX_MAD, ".lo.u32", po_r(c[d]), po_r(nb), po_i(64),
					po_i(p * BOX_COLS));
			} else if (td == k9->xrowdim[ci])
				c[d] = row;
			else
				c[d] = gpu_u32(g, g->grid[g->p->cls[i][td]]);
		}
		PReg src = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_ADD, ".u32", po_r(src), po_r(sa), po_i(p * BOX_BYTES));
		gpu_tma_reduce_add(g, map, c, rank, src, lead);
	}
}

/* For each of this warpgroup's blocks of SN_CROSS node i (warpgroup wg:
** blocks wg, wg + 2, ...; a last odd block is warpgroup 0's), emit(g, i,
** blk, wg, lb). */
static void each_block(KernelGen *g, int i, PReg wg,
		       void (*emit)(KernelGen *, int, PReg, PReg, int))
{
	int nblk = blocks(g->s->cross[g->s->node[i].gemm].D, g->bn);
	for (int b = 0; b < nblk; b += 2) {
		int skip = -1;
		if (b + 1 == nblk) {
			PReg second = gpu_reg(g, PC_PRED);
			skip = ptx_new_label(g->f);
			gpu_op3(g, PTX_SETP, ".ne.u32", po_r(second), po_r(wg), po_i(0));
			gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
			ptx_guard(g->f, second, 0);
		}
		PReg blk = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_ADD, ".u32", po_r(blk), po_r(wg), po_i(b));
		emit(g, i, blk, wg, b / 2);
		if (skip >= 0)
			ptx_label(g->f, skip);
	}
}

/* R += X^T A of SN_CROSS node i, after the tile body's other nodes: with
** the first sum, the wait for the previous tile's reductions to have read
** their staging, the proxy fence (X's stores are the generic proxy's,
** wgmma reads by the async proxy) and the barrier of both warpgroups; then
** this warpgroup's blocks, staged; a proxy fence and the warpgroup's
** barrier, which its first warp waits at and the others pass (a staging
** buffer is written again only after the next tile's barrier of both
** warpgroups, which that warp reaches after its reductions have read it);
** its reductions issued by its first thread; with the last sum,
** the next tile's X buffer. */
void sm90_contract_cross(KernelGen *g, int i)
{
	Sm90Kernel *k9 = sm90_of(g);
	int ci = g->s->node[i].gemm;
	if (ci == 0) {
		gpu_op1(g, PTX_CP_BULK_WAIT, ".read", po_i(0));
		gpu_op0(g, PTX_FENCE_PROXY_ASYNC, ".shared::cta");
		gpu_op2(g, PTX_BAR, "", po_i(SM90_BAR_CROSS), po_i(gpu_warps(g->t) * 32));
	}
	PReg wg = gpu_reg(g, PC_B32), bar = gpu_reg(g, PC_B32), w = gpu_reg(g, PC_B32);
	PReg others = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(wg), po_r(gpu_tid(g)));
	gpu_op3(g, PTX_SHR, ".u32", po_r(w), po_r(wg), po_i(5));
	gpu_op3(g, PTX_AND, ".b32", po_r(w), po_r(w), po_i(3));
	gpu_op3(g, PTX_SHR, ".u32", po_r(wg), po_r(wg), po_i(7));
	each_block(g, i, wg, cross_block);
	if (k9->pv_cross && blocks(g->s->cross[ci].D, g->bn) == 1) {
		/* warpgroup 1 has no block to issue its P V behind */
		int skip = ptx_new_label(g->f);
		PReg first = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".eq.u32", po_r(first), po_r(wg), po_i(0));
		gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
		ptx_guard(g->f, first, 0);
		gpu_op0(g, PTX_WGMMA_FENCE, ".sync.aligned");
		sm90_issue_pv(g);
		ptx_label(g->f, skip);
	}
	gpu_op0(g, PTX_FENCE_PROXY_ASYNC, ".shared::cta");
	gpu_op3(g, PTX_ADD, ".u32", po_r(bar), po_r(wg), po_i(SM90_BAR_CROSS + 1));
	/* only the warp that adds the sums waits for the others' stores */
	gpu_op3(g, PTX_SETP, ".ne.u32", po_r(others), po_r(w), po_i(0));
	gpu_op2(g, PTX_BAR_ARRIVE, "", po_r(bar), po_i(128));
	ptx_guard(g->f, others, 0);
	gpu_op2(g, PTX_BAR, "", po_r(bar), po_i(128));
	ptx_guard(g->f, others, 1);
	int done = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, ".uni", po_label(done));
	ptx_guard(g->f, others, 0);
	each_block(g, i, wg, cross_reduce);
	gpu_op0(g, PTX_CP_BULK_COMMIT, "");
	ptx_label(g->f, done);
	if (k9->pv_cross) /* in flight across the loop's back edge, ptxas serialised every wgmma */
		gpu_op1(g, PTX_WGMMA_WAIT, ".sync.aligned", po_i(0));
	if (ci == g->s->ncross - 1)
		gpu_op3(g, PTX_XOR, ".b32", po_r(k9->xflip), po_r(k9->xflip), po_i(k9->xbytes));
}

/* Before the CTA returns (not per work tile: a staging buffer is waited
** for before it is written again): its last reductions have completed. */
void sm90_cross_end(KernelGen *g)
{
	if (g->s->ncross)
		gpu_op1(g, PTX_CP_BULK_WAIT, "", po_i(0));
}
