/*
** lowering/gpu/claims.c: a split whose CTAs claim their row's key tiles
** (KernelShape.claims). Split-KV gives part z of a row the keys
** [kr0 + z kchunk, kr0 + (z + 1) kchunk); the parts then end as unevenly as
** their SMs are served by memory. On an H100 at d65c28a, decode's 128 CTAs
** at batch 1 ended their copies of equal parts over 26 us of a 200 us
** kernel (bench/trace, bench/RESULTS.md), and the last part's merge waited
** for the slowest. Here each part's copier takes the row's next tile from a
** counter, the row's claim word, until none is left: a CTA served slowly
** takes fewer tiles, and the parts end closer together.
** The states merge as before (parts.c): a part's keys need not be one
** range, since the merge rule is order-free. A launch of one part (nctaid.z
** = 1) has no counters and takes its row's tiles in order. The claim word
** is zero before a launch (the launcher's memset, or ATTN_PART_ZEROED) and
** after it: the last part's warp 0 zeroes it (parts.c), once every part's
** copier has made its last claim.
*/
#include "gpu.h"

/* After the counters of the launch's CTAs' warps (cnt[c * nwarps + w], ncta
** = nctaid.x nctaid.y CTAs), a word per CTA; the launcher's counter bytes
** hold both (iface_part.c). */
PReg gpu_claim_word(KernelGen *g, PReg cta)
{
	PReg nx = gpu_special(g, "%nctaid.x"), ny = gpu_special(g, "%nctaid.y"),
	     w = gpu_reg(g, PC_B64), a = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(w), po_r(nx), po_r(ny));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(w), po_r(w), po_i(gpu_warps(g->t)), po_r(cta));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(w), po_i(4),
		po_r(gpu_part_param(g, GPU_PART_CNT)));
	return a;
}

/* The next claim into cl->next: from the row's claim word where the launch
** has parts, else the CTA's own next tile. */
static void claim(KernelGen *g, GpuClaims *cl)
{
	gpu_op2(g, PTX_MOV, ".b32", po_r(cl->next), po_r(cl->own));
	gpu_op3(g, PTX_ADD, ".u32", po_r(cl->own), po_r(cl->own), po_i(1));
	gpu_op3(g, PTX_ATOM, ".relaxed.gpu.global.add.u32", po_r(cl->next), po_mem(cl->word, 0),
		po_i(1));
	ptx_guard(g->f, cl->multi, 0);
}

/* The row's claim word, and the first claim made at once, so that its trip
** to the L2 overlaps the copier's other set-up. */
void gpu_claims_start(KernelGen *g, GpuClaims *cl)
{
	PReg nz = gpu_special(g, "%nctaid.z");
	cl->word = gpu_claim_word(g, gpu_cta_index(g));
	cl->multi = gpu_reg(g, PC_PRED), cl->own = gpu_reg(g, PC_B32),
	cl->next = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SETP, ".gt.s64", po_r(cl->multi), po_r(nz), po_i(1));
	gpu_op2(g, PTX_MOV, ".b32", po_r(cl->own), po_i(0));
	claim(g, cl);
}

/* The tile claimed ahead, tile k of the row's stream from start, into j0
** (j0 >= send: none left). Where it lies past the stream (j0 >= send) no claim
** follows, so that every claim's value has come back before the copier
** publishes the stream's end (the last part then zeroes the word after
** every claim); else the next claim goes out at once. The tile is not
** scanned: claims_wanted takes kernels whose masks bound each row's keys
** by an interval and nothing else, so that a tile between the stream's
** bounds is empty only where those intervals leave a gap, and then it is
** computed masked, which is right, only slower. */
void gpu_claim_tile(KernelGen *g, GpuClaims *cl, PReg start, PReg j0)
{
	int Lout = ptx_new_label(g->f);
	PReg k = gpu_reg(g, PC_B64), past = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(k), po_r(cl->next));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(j0), po_r(k), po_i(g->bn), po_r(start));
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(past), po_r(j0), po_r(g->send));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lout));
	ptx_guard(g->f, past, 0);
	claim(g, cl);
	ptx_label(g->f, Lout);
}

/* Every streamed node's mask bounds each row's keys by an interval and
** nothing else (gpu_key_bounds_of leaves no rest): decode's lengths,
** causal, windows. Masks with holes (neighbourhoods, documents) would have
** their CTAs claim and compute empty tiles. */
int gpu_claims_fit(KernelGen *g)
{
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!gpu_streamed(g->s, i) || !gpu_node(g, i)->filter)
			continue;
		Expr *lo, *hi;
		const Expr *rest;
		gpu_key_bounds_of(g, i, &lo, &hi, &rest);
		if (rest)
			return 0;
	}
	return 1;
}
