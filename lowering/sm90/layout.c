/*
** lowering/sm90/layout.c: shared memory of an sm_90a kernel and the TMA
** tensor maps that fill it.
**
** Every tile is stored as the 128-byte swizzle lays it out: panels of 64
** elements of the contracted (Q, K) or value (V) dimension, each panel
** rows x 128 bytes, 1024-byte aligned, so that a TMA box of 64 elements
** by some rows writes it and a wgmma descriptor reads it. Q's rows are in
** order: consumer warpgroup c's wgmma takes rows [64 c, 64 c + 64), warp
** w's 16 rows 16 w of them, as the builder numbers rows (gpu/tile.c).
*/
#include "sm90.h"

/* One row block per warp: each consumer warpgroup's wgmma is m64 over its
** 64 rows, and one block's accumulators with the tile body's values fit
** its 240 registers (two blocks did not: ptxas spilled at D = 128). */
int sm90_row_blocks(const KernelShape *s)
{
	(void)s;
	return 1;
}

/* Shared memory of the layout (sm90_layout) with bn-key tiles and its
** fewest stages, two, less the barriers' kilobyte: the tiles are 1024-byte
** multiples. */
uint32_t sm90_min_bytes(const KernelShape *s, int bn)
{
	uint32_t q = 0, st = 0, rows = 16u * SM90_CONSUMER_WARPS / (uint32_t)s->cta_slices;
	for (int k = 0; k < s->nqk; k++)
		q += gpu_tma_tile_bytes(rows, s->qk[k].D), st += gpu_tma_tile_bytes(bn, s->qk[k].D);
	for (int v = 0; v < s->nvreads; v++)
		st += s->vk[v] < 0 ? gpu_tma_tile_bytes(bn, gpu_cta_v_cols(s)) : 0;
	return q + sm90_cross_bytes(s, bn) + 2 * st;
}

/* Keys per tile: 128 (GPU_MAXBN, FlashAttention-3's tile at head dims up
** to 128) where the score tile's 64 accumulators fit beside the output's:
** value head dims up to 128 and Q K^T head dims up to 192 (MLA's 192 / 128,
** Q read from shared memory, bench/RESULTS.md), else GPU_BN, and where
** that spilled (the retry loop's SM90_TILING_BN64).
** Kernels of partial states keep GPU_BN, and so do the kernels beside them
** (KernelShape.with_parts: their tensor maps' boxes are shared, and the
** launcher cuts the keys at multiples of 64); gathered tiles too
** (gather.c's copies); kernels whose tiles of 128 keys do not fit two
** stages (a backward's, with Q and dO per contraction); and kernels with
** two value indices (ecls2: a backward's dK beside dV), whose two
** accumulators and two score tiles of 128 keys filled the registers (and
** were slower at head dim 64 too). */
int sm90_block_n(const KernelShape *s)
{
	if (s->tiling == SM90_TILING_BN64 || s->parts || s->with_parts || sm90_gathered(s) ||
	    s->DV > 128 || s->ecls2 >= 0 || sm90_min_bytes(s, GPU_MAXBN) > SM90_SMEM)
		return GPU_BN;
	for (int k = 0; k < s->nqk; k++)
		if (s->qk[k].D > 192)
			return GPU_BN;
	return GPU_MAXBN;
}

static uint32_t align1k(uint32_t x)
{
	return (x + 1023u) & ~1023u;
}

/* The layout: Q per contraction; X's buffers per sum over the CTA's rows;
** the stages, each K per contraction and V
** per V read (none for one that repeats a K read: KernelShape.vk); the barriers; the schedule's slots; the scan's words. As
** many stages (2 to SM90_MAX_STAGES) as keep the CTA within SM90_SMEM, two
** at least. The tensor maps are chosen here; their parameters come after
** the builder's (sm90_producer). */
uint32_t sm90_layout(KernelGen *g, int table)
{
	(void)table; /* the producer scans (gpu_scan_words): no tile table */
	Sm90Kernel *k9 = ARENA_NEW(g->a, Sm90Kernel);
	KernelShape *s = g->s;
	int n = g->c->nodes.n;
	g->targ = k9;
	g->f->smem_align = 1024;
	uint32_t off = 0;
	s->ntmaps = 0;
	for (int k = 0; k < s->nqk; k++) {
		int node = gpu_gemm_node(s, n, SN_GEMM1, k);
		int gq = gpu_q_gathered(s, k); /* no map: the consumers copy it */
		gpu_tma_add_map(g, &k9->q[k], s->qk[k].a, node, s->qcls, (uint32_t)g->cta_rows,
				(uint32_t)g->cta_rows, s->qk[k].D, gq);
		k9->q[k].off = off;
		off = align1k(off + gpu_tma_tile_bytes((uint32_t)g->cta_rows, s->qk[k].D));
		k9->q_tx += gq ? 0 : gpu_tma_tile_bytes((uint32_t)g->cta_rows, s->qk[k].D);
	}
	/* X of each sum over the CTA's rows, two buffers, and its staged sums
	** (cross.c) */
	k9->xbytes = (uint32_t)g->cta_rows * (uint32_t)g->bn * 2;
	for (int c = 0; c < s->ncross; c++) {
		k9->x[c] = off;
		off = align1k(sm90_cross_staging(g, c, off + 2 * k9->xbytes));
	}
	uint32_t st = 0;
	for (int k = 0; k < s->nqk; k++) {
		int node = gpu_gemm_node(s, n, SN_GEMM1, k);
		gpu_tma_add_map(g, &k9->k[k], s->qk[k].b, node, s->scls, (uint32_t)g->bn,
				(uint32_t)g->bn, s->qk[k].D, sm90_gathered(s));
		k9->k[k].off = st;
		st = align1k(st + gpu_tma_tile_bytes((uint32_t)g->bn, s->qk[k].D));
	}
	for (int v = 0; v < s->nvreads; v++) {
		if (s->vk[v] >= 0) {
			/* K's tile, read as V (a backward's Q or dO): no copy of its own */
			k9->v[v] = k9->k[s->vk[v]];
			k9->v[v].e = s->vreads[v];
			continue;
		}
		gpu_tma_add_map(g, &k9->v[v], s->vreads[v], gpu_vread_node(s, v), s->scls,
				(uint32_t)g->bn, (uint32_t)g->bn, gpu_cta_v_cols(s),
				sm90_gathered(s));
		k9->v[v].off = st;
		st = align1k(st + gpu_tma_tile_bytes((uint32_t)g->bn, gpu_cta_v_cols(s)));
	}
	sm90_cross_maps(g);
	k9->stage_bytes = st;
	k9->stage_tx = 0;
	for (int k = 0; k < s->nqk; k++)
		k9->stage_tx += gpu_tma_tile_bytes((uint32_t)g->bn, s->qk[k].D);
	for (int v = 0; v < s->nvreads; v++)
		if (s->vk[v] < 0)
			k9->stage_tx += gpu_tma_tile_bytes((uint32_t)g->bn, gpu_cta_v_cols(s));
	k9->stage0 = off;
	int ns = SM90_MAX_STAGES;
	while (ns > 2 && off + (uint32_t)ns * st + 1024 > SM90_SMEM)
		ns--;
	k9->nstages = ns;
	off += (uint32_t)ns * st;
	k9->qbar = off;
	k9->full = off + 8;
	k9->empty = k9->full + 8 * (uint32_t)ns;
	k9->sched = k9->empty + 8 * (uint32_t)ns;
	k9->slots = (k9->sched + 8 * SM90_SCHED_SLOTS + 15u) & ~15u; /* 16-byte vectors */
	k9->scan_words = k9->slots + 16 * SM90_SCHED_SLOTS;
	k9->total = k9->scan_words + 16;
	/* stream-K's producer scans no words (sm90_streamk_wanted): qempty
	** takes their place */
	if (s->streamk)
		k9->qempty = k9->scan_words;
	else if (s->persistent)
		k9->qempty = k9->total, k9->total += 8;
	g->table_off = 0;
	return k9->total;
}
