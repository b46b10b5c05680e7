/*
** lowering/sm90/producer.c: the CTA's two roles. Thread 0 sets up the
** barriers; then warpgroup 0 (the producer) hands registers to the
** consumers and its first thread issues every TMA copy: Q once (on the Q
** barrier), then per tile of the stream K and V into the next stage of
** the ring, after that stage's empty barrier says the consumers are done
** with it, arming its full barrier with the bytes the copies bring. The
** tiles are those of the consumers' stream loop: the same bounds and the
** same scan (gpu/scan.c), so both sides agree on every stage's tile.
*/
#include "sm90.h"

/* The ring's next stage after stage (u32), the phase parity ph flipping
** where it wraps to 0: the producer and the consumers move alike. */
void sm90_next_stage(KernelGen *g, PReg stage, PReg ph)
{
	gpu_ring_next(g, stage, ph, sm90_of(g)->nstages);
}

/* Q of every contraction: one box of the CTA's rows per panel, none for a
** gathered Q (the barrier completes its phase all the same). */
static void load_q(KernelGen *g, Sm90Kernel *k9, const PReg *maps)
{
	const KernelShape *s = g->s;
	PReg qbar = gpu_saddr(g, g->sbase, k9->qbar);
	gpu_op3(g, PTX_MBAR_ARRIVE, ".expect_tx.shared::cta.b64", po_sym("_"), po_mem(qbar, 0),
		po_i(k9->q_tx));
	PReg q32 = gpu_u32(g, g->q0);
	for (int k = 0; k < s->nqk; k++) {
		const TmaRead *r = &k9->q[k];
		if (r->map < 0)
			continue;
		PReg fixed[GPU_TMAP_MAX_RANK];
		PReg row = gpu_tma_box_row(g, q32, gpu_tma_fixed_coords(g, r, fixed));
		for (int p = 0; p < r->panels; p++)
			gpu_tma_copy(
			    g, r, maps[r->map], fixed, row, p,
			    gpu_saddr(g, g->sbase, r->off + (uint32_t)p * r->rows * GPU_TMAP_ROW),
			    qbar, (PReg){0, 0});
	}
}

/* The producer runs in all its threads: it gathers K and V (gather.c), or
** its four warps scan masks that read data (gpu_scan_words). It then has
** more registers (sm90_role_regs), and only then publishes whether every
** mask is true on all of a tile (a consumer's test would load the data
** again); elsewhere the consumers test the tile for it: in the producer's
** 24 registers that test spilled (neighborhood3d.attn), and the scan needs
** no more than whether some mask is true somewhere. */
int sm90_producer_lanes(KernelGen *g)
{
	return sm90_gathered(g->s) || gpu_table_wanted(g);
}

/* Stream-K's CTAs take work tiles: also where the producer's lanes copy
** gathered K and V (each work tile's rows set up again), not where they
** scan masks that read data (the scan's words take qempty's place). */
int sm90_streamk_wanted(KernelGen *g)
{
	return !gpu_table_wanted(g);
}

/* The schedule's next entry: the tile j0 (>= send: the stream's end) and
** whether every mask is true on all of it, into slot ss, then an arrival
** on its barrier (a release: the consumers' wait then sees the slot), by
** the thread where lead is true. The consumers read the entries in order
** (sm90_next_tile) instead of scanning the tiles themselves. A slot is
** written again SM90_SCHED_SLOTS entries later, by which time every
** consumer has read it: the producer is at most nstages + 1 entries ahead
** of the consumers' reads (it waits for a stage's release before its next
** entry but one, and a consumer releases a stage after reading the entry
** after it's), and nstages + 1 <= SM90_SCHED_SLOTS. */
static void publish(KernelGen *g, Sm90Kernel *k9, PReg lead, PReg j0, PReg all, PReg ss, PReg sph)
{
	PReg a = gpu_reg(g, PC_B32), b = gpu_ring_bar(g, ss, k9->sched), all64 = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(ss), po_i(16), po_r(g->sbase));
	gpu_op4(g, PTX_SELP, ".b64", po_r(all64), po_i(1), po_i(0), po_r(all));
	PReg v[2] = {j0, all64};
	gpu_op2(g, PTX_ST, ".shared.v2.b64", po_mem(a, (int32_t)k9->slots), po_vec(v, 2));
	if (lead.n)
		ptx_guard(g->f, lead, 0);
	gpu_op2(g, PTX_MBAR_ARRIVE, ".shared::cta.b64", po_sym("_"), po_mem(b, 0));
	if (lead.n)
		ptx_guard(g->f, lead, 0);
	gpu_ring_next(g, ss, sph, SM90_SCHED_SLOTS);
}

/* Q loaded by the first of the copying threads (notfirst false), the
** others branching past it; the warp whole again after, before the
** copies' and the scan's votes and shuffles. */
static void q_by_first(KernelGen *g, Sm90Kernel *k9, const PReg *maps, PReg notfirst)
{
	int Lq = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, "", po_label(Lq));
	ptx_guard(g->f, notfirst, 0);
	load_q(g, k9, maps);
	ptx_label(g->f, Lq);
	gpu_op1(g, PTX_BAR_WARP, "", po_i(-1));
}

/* The producer's places in the ring of stages (stage, ph) and in the
** schedule (ss, sph), u32: a persistent kernel's carry from one work tile
** to the next. */
typedef struct ProducerRing {
	PReg stage, ph, ss, sph;
} ProducerRing;

/* Each of r's places (in registers already) at 0. */
static void ring_zero(KernelGen *g, ProducerRing *r)
{
	PReg *p[] = {&r->stage, &r->ph, &r->ss, &r->sph};
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		gpu_op2(g, PTX_MOV, ".b32", po_r(*p[i]), po_i(0));
}

/* Each of r's places at 0 in new registers. */
static void ring_start(KernelGen *g, ProducerRing *r)
{
	r->stage = gpu_reg(g, PC_B32), r->ph = gpu_reg(g, PC_B32);
	r->ss = gpu_reg(g, PC_B32), r->sph = gpu_reg(g, PC_B32);
	ring_zero(g, r);
}

/* The producer's loop: per tile of the stream, the tile published to the
** consumers, the stage's empty wait (of the phase before the current one:
** a fresh barrier passes it), the full barrier armed with the stage's
** bytes, K and V copied; at the end, the end published. Gathered K and V
** (gather.c): every producer thread runs the loop, copies its chunks and
** arrives on the full barrier as they land; no bytes are armed. Masks that
** read data: every producer thread runs it too, since its four warps scan
** each window together (gpu_scan_words). Thread 0 alone publishes, arms
** and issues TMA copies (lead). */
static void stream(KernelGen *g, Sm90Kernel *k9, const PReg *maps, int lanes, ProducerRing *ring)
{
	const KernelShape *s = g->s;
	int gathered = sm90_gathered(s);
	PReg fk[GPU_MAXG][GPU_TMAP_MAX_RANK], fv[GPU_MAXG][GPU_TMAP_MAX_RANK];
	PReg tid32 = {0}, lead = {0, 0};
	GatherStage gs;
	if (lanes) {
		tid32 = gpu_reg(g, PC_B32), lead = gpu_reg(g, PC_PRED);
		gpu_op2(g, PTX_MOV, ".u32", po_r(tid32), po_sym("%tid.x"));
		gpu_op3(g, PTX_SETP, ".eq.u32", po_r(lead), po_r(tid32), po_i(0));
		gpu_lane_ids(g);
	}
	if (gathered)
		sm90_gather_setup(g, tid32, &gs);
	PReg ko[GPU_MAXG], vo[GPU_MAXG]; /* rows at offsets: the offsets */
	for (int k = 0; k < s->nqk && !gathered; k++)
		ko[k] = gpu_tma_fixed_coords(g, &k9->k[k], fk[k]);
	for (int v = 0; v < s->nvreads && !gathered; v++)
		if (s->vk[v] < 0)
			vo[v] = gpu_tma_fixed_coords(g, &k9->v[v], fv[v]);
	PReg start = gpu_reg(g, PC_B64), j0 = gpu_reg(g, PC_B64), nxt = gpu_reg(g, PC_B64),
	     any = gpu_reg(g, PC_PRED), all = gpu_reg(g, PC_PRED);
	g->send = gpu_reg(g, PC_B64);
	gpu_stream_bounds(g, start, g->send);
	TileScan sc = {.sbase = g->sbase};
	if (gpu_table_wanted(g)) {
		gpu_scan_words(g, &sc, GPU_THREADS / 32, SM90_BAR_SCAN, k9->scan_words);
		for (int i = 0; i < g->c->nodes.n; i++)
			if (gpu_streamed(s, i))
				gpu_row_ranges_ahead(g, i);
	}
	GpuClaims cl;
	if (s->claims) {
		gpu_claims_start(g, &cl);
		gpu_claim_tile(g, &cl, start, j0);
	} else
		gpu_scan(g, &sc, start, j0, any, all);
	/* a CTA's one work tile: the places start here (registers numbered as
	** before there were persistent kernels) */
	int fresh = !ring->stage.n;
	if (fresh)
		ring->stage = gpu_reg(g, PC_B32), ring->ph = gpu_reg(g, PC_B32);
	PReg sa = gpu_reg(g, PC_B32), fb = gpu_reg(g, PC_B32), eb = gpu_reg(g, PC_B32),
	     eph = gpu_reg(g, PC_B32), fin = gpu_reg(g, PC_PRED);
	if (fresh) {
		ring->ss = gpu_reg(g, PC_B32), ring->sph = gpu_reg(g, PC_B32);
		ring_zero(g, ring);
	}
	PReg stage = ring->stage, ph = ring->ph, ss = ring->ss, sph = ring->sph;
	int Lloop = ptx_new_label(g->f), Ldone = ptx_new_label(g->f);
	ptx_label(g->f, Lloop);
	publish(g, k9, lead, j0, lanes ? all : gpu_pconst(g, 0), ss, sph);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(fin), po_r(j0), po_r(g->send));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, fin, 0);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(eb), po_r(stage), po_i(8), po_r(g->sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(fb), po_r(eb), po_i(k9->full));
	gpu_op3(g, PTX_ADD, ".u32", po_r(eb), po_r(eb), po_i(k9->empty));
	gpu_op3(g, PTX_XOR, ".b32", po_r(eph), po_r(ph), po_i(1));
	gpu_mbar_wait(g, eb, eph);
	if (!gathered) {
		gpu_op3(g, PTX_MBAR_ARRIVE, ".expect_tx.shared::cta.b64", po_sym("_"),
			po_mem(fb, 0), po_i(k9->stage_tx));
		if (lead.n)
			ptx_guard(g->f, lead, 0);
	}
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(stage), po_i(k9->stage_bytes),
		po_r(g->sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(sa), po_r(sa), po_i(k9->stage0));
	if (gathered)
		gpu_gather_stage_copy(g, &gs, tid32, j0, sa, fb);
	PReg j32 = gpu_u32(g, j0);
	for (int k = 0; k < s->nqk && !gathered; k++)
		for (int p = 0; p < k9->k[k].panels; p++)
			gpu_tma_copy(
			    g, &k9->k[k], maps[k9->k[k].map], fk[k], gpu_tma_box_row(g, j32, ko[k]),
			    p,
			    gpu_saddr(g, sa,
				      k9->k[k].off + (uint32_t)p * (uint32_t)g->bn * GPU_TMAP_ROW),
			    fb, lead);
	for (int v = 0; v < s->nvreads && !gathered; v++)
		for (int p = 0; p < k9->v[v].panels && s->vk[v] < 0; p++)
			gpu_tma_copy(
			    g, &k9->v[v], maps[k9->v[v].map], fv[v], gpu_tma_box_row(g, j32, vo[v]),
			    p,
			    gpu_saddr(g, sa,
				      k9->v[v].off + (uint32_t)p * (uint32_t)g->bn * GPU_TMAP_ROW),
			    fb, lead);
	sm90_next_stage(g, stage, ph);
	if (s->claims)
		gpu_claim_tile(g, &cl, start, j0);
	else {
		gpu_op3(g, PTX_ADD, ".s64", po_r(nxt), po_r(j0), po_i(g->bn));
		gpu_scan(g, &sc, nxt, j0, any, all);
	}
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lloop));
	ptx_label(g->f, Ldone);
	if (gathered) {
		/* no thread ends with its copies in flight (cp.async.wait_all) */
		gpu_op0(g, PTX_CP_COMMIT, "");
		gpu_op1(g, PTX_CP_WAIT, "", po_i(0));
	}
}

/* A persistent kernel's producer (its first thread, sm90_persistent_wanted;
** all of its threads where they copy gathered K and V, a stream-K kernel's):
** per work tile of the CTA's, the grid decoded, the wait for the consumers
** to release Q (the qempty barrier's phase before the one they complete
** next: a fresh barrier passes it, so the first tile does not wait), Q
** copied by the first thread, and the tile's stream, its places in the
** ring and the schedule carried on to the next work tile. Every thread
** walks the same work tiles: their order is the grid's or the shared
** plan's, no atomics. */
static void work_tiles(KernelGen *g, Sm90Kernel *k9, const PReg *maps, int lanes,
		       ProducerRing *ring)
{
	PReg qeph = gpu_reg(g, PC_B32), qe = gpu_reg(g, PC_B32), more = gpu_reg(g, PC_PRED),
	     n = gpu_reg(g, PC_B32), notq = {0, 0};
	if (lanes) {
		PReg tid = gpu_reg(g, PC_B32);
		notq = gpu_reg(g, PC_PRED);
		gpu_op2(g, PTX_MOV, ".u32", po_r(tid), po_sym("%tid.x"));
		gpu_op3(g, PTX_SETP, ".ne.u32", po_r(notq), po_r(tid), po_i(0));
	}
	gpu_work_first(g);
	ring_start(g, ring);
	gpu_op2(g, PTX_MOV, ".b32", po_r(qeph), po_i(1));
	gpu_op3(g, PTX_ADD, ".u32", po_r(qe), po_r(g->sbase), po_i(k9->qempty));
	int Ltile = ptx_new_label(g->f);
	ptx_label(g->f, Ltile);
	gpu_decode_grid(g);
	gpu_mbar_wait(g, qe, qeph);
	gpu_op3(g, PTX_XOR, ".b32", po_r(qeph), po_r(qeph), po_i(1));
	if (lanes)
		q_by_first(g, k9, maps, notq);
	else
		load_q(g, k9, maps);
	stream(g, k9, maps, lanes, ring);
	gpu_work_next(g, more, n);
	gpu_op1(g, PTX_BRA, "", po_label(Ltile));
	ptx_guard(g->f, more, 0);
}

/* The registers setmaxnreg gives the producer and the consumers of a
** kernel: where its producer runs in all its threads (sm90_producer_lanes:
** 16 id loads in flight a lane where it scans), more for it (ptxas spilled
** a gathering copy loop at 24 and 40), fewer for the consumers, the CTA's
** total unchanged; rows wider than 128 elements (16 chunks a thread and
** tensor) need 72, and so do gathered tiles, whose copying lanes may
** evaluate a page's coordinates beside the row copy's state (paged_prefill
** spilled at 56). */
void sm90_role_regs(KernelGen *g, int *producer, int *consumer)
{
	const KernelShape *s = g->s;
	int wide = s->DV > 128 || sm90_gathered(s);
	for (int k = 0; k < s->nqk; k++)
		wide |= s->qk[k].D > 128;
	if (!sm90_producer_lanes(g))
		*producer = SM90_PRODUCER_REGS, *consumer = SM90_CONSUMER_REGS;
	else if (wide)
		*producer = SM90_PRODUCER_REGS_WIDE, *consumer = SM90_CONSUMER_REGS_WIDE;
	else
		*producer = SM90_PRODUCER_REGS_LANES, *consumer = SM90_CONSUMER_REGS_LANES;
}

/* The consumer threads that take part in the stream, which the stages'
** empty barriers count: 256, or 128 where the second warpgroup leaves. */
static PtxOpnd consumer_threads(KernelGen *g)
{
	PReg both = gpu_both_halves(g);
	if (!both.n)
		return po_i(gpu_warps(g->t) * 32);
	PReg n = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_SELP, ".b32", po_r(n), po_i(gpu_warps(g->t) * 32),
		po_i(gpu_warps(g->t) * 16), po_r(both));
	return po_r(n);
}

/* The role split, after the grid decode (every thread has the CTA's place):
** barriers initialised by thread 0 and made visible to the CTA and to the
** TMA unit; warpgroup 0 produces and ends; warpgroups 1 and 2 go on as
** the kernel builder's consumers. */
void sm90_producer(KernelGen *g)
{
	Sm90Kernel *k9 = sm90_of(g);
	KernelShape *s = g->s;
	PReg maps[GPU_MAX_TMAPS];
	const char **names = k9->map_names;
	for (int m = 0; m < s->ntmaps; m++)
		names[m] = ptx_param_bytes(g->f, arena_printf(g->a, "tmap%d", m), 64, 128);
	PReg tid = gpu_special(g, "%tid.x"), t0 = gpu_reg(g, PC_PRED), cons = gpu_reg(g, PC_PRED);
	int Linit = ptx_new_label(g->f), Lcons = ptx_new_label(g->f);
	gpu_op3(g, PTX_SETP, ".ne.s64", po_r(t0), po_r(tid), po_i(0));
	gpu_op1(g, PTX_BRA, "", po_label(Linit));
	ptx_guard(g->f, t0, 0);
	PtxOpnd nempty = consumer_threads(g);
	gpu_op2(g, PTX_MBAR_INIT, ".shared::cta.b64", po_mem(g->sbase, (int32_t)k9->qbar), po_i(1));
	int gathered = sm90_gathered(s);
	for (int st = 0; st < k9->nstages; st++) {
		/* gathered tiles: one arrival per producer thread (gather.c) */
		gpu_op2(g, PTX_MBAR_INIT, ".shared::cta.b64",
			po_mem(g->sbase, (int32_t)(k9->full + 8 * st)),
			po_i(gathered ? GPU_THREADS : 1));
		gpu_op2(g, PTX_MBAR_INIT, ".shared::cta.b64",
			po_mem(g->sbase, (int32_t)(k9->empty + 8 * st)), nempty);
	}
	for (int i = 0; i < SM90_SCHED_SLOTS; i++)
		gpu_op2(g, PTX_MBAR_INIT, ".shared::cta.b64",
			po_mem(g->sbase, (int32_t)(k9->sched + 8 * i)), po_i(1));
	if (s->persistent)
		gpu_op2(g, PTX_MBAR_INIT, ".shared::cta.b64", po_mem(g->sbase, (int32_t)k9->qempty),
			nempty);
	gpu_op0(g, PTX_FENCE_MBAR_INIT, ".release.cluster");
	ptx_label(g->f, Linit);
	gpu_op1(g, PTX_BAR, "", po_i(0));
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(cons), po_r(tid), po_i(GPU_THREADS));
	gpu_op1(g, PTX_BRA, "", po_label(Lcons));
	ptx_guard(g->f, cons, 0);
	/* the producer warpgroup: its first thread alone; all of it where K
	** and V are gathered or masks read data (Q still by the first
	** thread) */
	int pregs, cregs, lanes = sm90_producer_lanes(g);
	sm90_role_regs(g, &pregs, &cregs);
	gpu_op1(g, PTX_SETMAXNREG, ".dec.sync.aligned.u32", po_i(pregs));
	for (int m = 0; m < s->ntmaps; m++)
		maps[m] = gpu_tma_map_addr(g, names[m]);
	ProducerRing ring = {0};
	int Lexit = ptx_new_label(g->f);
	if (s->persistent && lanes)
		/* stream-K over gathered K and V: every thread walks the tiles */
		work_tiles(g, k9, maps, 1, &ring);
	else if (s->persistent) {
		gpu_op1(g, PTX_BRA, "", po_label(Lexit));
		ptx_guard(g->f, t0, 0);
		work_tiles(g, k9, maps, 0, &ring);
	} else {
		if (lanes)
			q_by_first(g, k9, maps, t0);
		else {
			gpu_op1(g, PTX_BRA, "", po_label(Lexit));
			ptx_guard(g->f, t0, 0);
			load_q(g, k9, maps);
		}
		stream(g, k9, maps, lanes, &ring);
	}
	ptx_label(g->f, Lexit);
	gpu_op0(g, PTX_RET, "");
	/* the consumers */
	ptx_label(g->f, Lcons);
	gpu_op1(g, PTX_SETMAXNREG, ".inc.sync.aligned.u32", po_i(cregs));
}
