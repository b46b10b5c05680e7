/*
** lowering/sm90/targ.c: the sm_90a target (TMA, mbarriers, wgmma,
** setmaxnreg) as the driver and the generic GPU lowering see it: its data,
** and the plans it does not take yet with the reason.
*/
#include "sm90.h"

/* A kernel of 128-key tiles that spilled the consumers' registers is
** generated again with 64-key tiles (SM90_TILING_BN64, sm90_block_n); no
** other choice is tried. */
static int retune(const GpuKernelInfo *k, long spills)
{
	return spills > 0 && k->block_n > GPU_BN ? SM90_TILING_BN64 : 0;
}

/* What the sm_90a kernels cannot take yet, as a reason (NULL: they can): a
** tensor map has at most five dimensions, and a kernel takes at most
** GPU_MAX_TMAPS; K or V rows placed through a gather (a paged cache) have
** no tensor map's box. Head dims not a multiple of 64 fill the last panel
** with TMA's zeros (gpu_tma_tile_bytes), but not in gathered rows, slices of
** V or a sum over the CTA's rows (copied or staged by whole panels). */
const char *sm90_refusal(const Plan *p, const KernelShape *s)
{
	if (s->ncross && s->pack)
		return "a sum over the CTA's rows with packed query heads is not yet taken by "
		       "sm_90a (its barrier needs both consumer warpgroups)";
	if (!gpu_cross_mappable(p, s))
		return "a sum over the CTA's rows whose output has more than 5 dimensions or no "
		       "dimension of the streamed rows has no tensor map to add through";
	if (s->vslices > 1 && s->cta_slices == 1)
		return "V's columns in more than two slices are not yet taken by sm_90a (a "
		       "consumer warpgroup each); --target=sm_80 takes them";
	const char *why = gpu_tma_maps_reason(s);
	if (why)
		return why;
	if (sm90_min_bytes(s, GPU_BN) > SM90_SMEM)
		return "the tiles do not fit two stages in shared memory (a backward's at head "
		       "dims above 128); the bundle runs their sm_80 code on Hopper";
	for (int k = 0; k < s->nqk && s->gathers; k++)
		if (gpu_q_gathered(s, k) && (s->pack || s->cta_slices > 1 || s->qk[k].D > 128))
			return "Q rows read through a gather with packed heads, V in slices or "
			       "head dims above 128 are not yet taken by sm_90a; --target=sm_80 "
			       "takes them";
	/* a read at an offset is copied either way (a box, gather stage or not) */
	for (int r = 0; r < s->nqk + s->nvreads; r++) {
		int gk = r < s->nqk ? s->qk[r].bgather : s->vgather[r - s->nqk];
		long w = r < s->nqk ? s->qk[r].D : s->DV;
		if (s->gathers && gk != sm90_gathered(s) && !gpu_stage_at_offset(s, r))
			return "K and V read one through a gather and one not are not yet taken by "
			       "sm_90a; --target=sm_80 takes them";
		if (s->gathers && sm90_gathered(s) && w != 64 && w != 128 && w != 256)
			return "gathered K and V rows with head dims other than 64, 128 and 256 "
			       "are not yet taken by sm_90a; --target=sm_80 takes them";
		if ((s->ncross || s->vslices > 1) && w % GPU_TMAP_INNER)
			return "head dims that are not multiples of 64 are not yet taken by sm_90a "
			       "in a backward or with V in slices; --target=sm_80 takes them";
	}
	return NULL;
}

const GpuTarget T_sm90 = {
    .name = "sm_90a",
    .sm = 90,
    .ptx_target = "sm_90a",
    .ptx_version = "8.0",
    .ncubins = 1,
    .cubin_sms = {90},
    .warps = SM90_THREADS / 32,
    .threads = SM90_THREADS,
    .consumer_tid0 = GPU_THREADS,
    .bar_base = 1,
    .meet_bar = SM90_BAR_MEET,
    .consumer_warps = SM90_CONSUMER_WARPS,
    .cta_slices = 2,
    .acc_cols_unit = GPU_TMAP_INNER,
    .min_ctas_per_sm = 1,
    .warp_classes = 0,
    .smem_max = 227 * 1024,
    .retune_rounds = 1,
    .retune = retune,
    .row_blocks = sm90_row_blocks,
    .block_n = sm90_block_n,
    .refusal = sm90_refusal,
    .layout = sm90_layout,
    .producer = sm90_producer,
    .persistent_wanted = sm90_persistent_wanted,
    .streamk_wanted = sm90_streamk_wanted,
    .claims_wanted = sm90_claims_wanted,
    .work_start = sm90_work_start,
    .next_tile = sm90_next_tile,
    .stream_start = sm90_stream_start,
    .tile_begin = sm90_tile_begin,
    .contract_qk = sm90_contract_qk,
    .contract_pv = sm90_contract_pv,
    .cross_stage = sm90_cross_stage,
    .contract_cross = sm90_contract_cross,
    .acc_wait = sm90_acc_wait,
    .tile_end = sm90_tile_end,
    .stream_end = sm90_stream_end,
    .kernel_end = sm90_cross_end,
    .store_output = sm90_store_output,
    .cubin_arch_suffix = "a",
};
