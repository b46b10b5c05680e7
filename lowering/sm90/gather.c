/*
** lowering/sm90/gather.c: the producer's copies of K and V rows placed
** through a gather (a paged cache's page table, gpu/gather.c): the
** producer warpgroup's 128 threads fill each stage as TMA would have laid
** it out (gpu/gather_stage.c: row by row with cp.async, or by TMA boxes
** where a page holds whole tiles), and each arrives on the stage's full barrier; the
** consumers order cp.async's generic-proxy writes before their wgmma
** reads with a proxy fence after the wait (ring.c).
*/
#include "sm90.h"

/* The reads of the stage that are gathered: all or none (sm90_refusal).
** Reads at offsets alone are copied as plain reads are (one thread, a box
** at the offset's row): not gathered here. */
int sm90_gathered(const KernelShape *s)
{
	return s->nqk > 0 && s->qk[0].bgather && !gpu_stage_all_at_offset(s);
}

/* The stage's gathered reads, K's then V's, their maps and bytes, and the
** copying thread's place in them, computed once before the stream. */
void sm90_gather_setup(KernelGen *g, PReg tid32, GatherStage *gs)
{
	Sm90Kernel *k9 = sm90_of(g);
	const KernelShape *s = g->s;
	gs->n = s->nqk + s->nvreads, gs->names = k9->map_names, gs->tx = k9->stage_tx;
	for (int r = 0; r < gs->n; r++)
		gs->rd[r] = r < s->nqk ? &k9->k[r] : &k9->v[r - s->nqk];
	gpu_gather_stage_setup(g, gs, tid32);
}
