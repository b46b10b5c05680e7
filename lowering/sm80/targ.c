/*
** lowering/sm80/targ.c: the sm_80 target (mma.sync, ldmatrix, cp.async) as
** the driver and the generic GPU lowering see it: its data and its
** spill/tile-size retry policy. The same PTX is assembled for sm_80 and
** sm_90 and kept for newer GPUs, whose drivers compile it at load time.
*/
#include "sm80.h"

/* Bytes of spill stores a 128-row kernel may have: spills up to here cost
** less than 64-row tiles do (the second row block halves the shared-memory
** reads per mma). Where masks read data (document ids) every CTA scans the
** stream's tiles with loads, so 64-row tiles double that work, and the
** budget is higher. */
enum { SPILL_OK = 128, SPILL_OK_DATA = 256 };

/* A kernel of 128-row tiles that ptxas spills more than its budget of is
** generated again with the next K and V tiles copied together (where they
** were apart: the copy addresses then need no registers across the first
** contraction), then with 64-row tiles (fewer registers). A tile table's
** kernel spills about as much with the copies together, so its budget for
** the split is the data budget. */
static int retune(const GpuKernelInfo *k, long spills)
{
	if (k->block_m <= 64)
		return 0;
	if (k->split_v && spills > (k->table ? SPILL_OK_DATA : SPILL_OK))
		return SM80_TILING_JOINT_KV;
	if (spills > (k->data_masks ? SPILL_OK_DATA : SPILL_OK))
		return SM80_TILING_ROWS64;
	return 0;
}

/* Key tiles of GPU_BN: with the mma.sync layout's two row blocks per warp,
** a warp's score elements fill GPU_MAXNEL. */
static int sm80_block_n(const KernelShape *s)
{
	(void)s;
	return GPU_BN;
}

const GpuTarget T_sm80 = {
    .name = "sm_80",
    .sm = 80,
    .ptx_target = "sm_80",
    .ptx_version = "7.8",
    .ncubins = 2,
    .cubin_sms = {80, 90},
    .warps = GPU_WARPS,
    .threads = GPU_THREADS,
    .meet_bar = 2, /* after bar.sync 0 and the builder's 1 */
    .warp_classes = 1,
    .smem_max = 163 * 1024, /* the A100's opt-in limit; not yet checked */
    .retune_rounds = 2,
    .retune = retune,
    .row_blocks = sm80_row_blocks,
    .block_n = sm80_block_n,
    .one_window_wanted = sm80_one_window_wanted,
    .layout = sm80_layout,
    .setup_loads = sm80_setup_loads,
    .load_q = sm80_load_q,
    .copy4_async = sm80_copy4_async,
    .copy_commit = sm80_copy_commit,
    .copy_wait = sm80_copy_wait,
    .stream_start = sm80_stream_start,
    .prefetch = sm80_prefetch,
    .tile_begin = sm80_tile_begin,
    .contract_qk = sm80_contract_qk,
    .prefetch_late = sm80_issue_next_v,
    .contract_pv = sm80_contract_pv,
    .cross_stage = sm80_cross_stage,
    .contract_cross = sm80_contract_cross,
    .tile_end = sm80_tile_end,
    .store_output = sm80_store_output,
};
