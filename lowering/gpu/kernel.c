/*
** lowering/gpu/kernel.c: the one-pass attention kernel, every target's.
**
** A CTA of 4 warps owns 64 * row_blocks query rows (16 * row_blocks per
** warp: row blocks of the tensor cores' m16 tiles) of one grid point and
** walks the KV index in tiles of bn keys (the target's block_n). Q tiles are loaded once and
** kept where the target keeps them; each KV tile is classified from the
** masks (empty: skipped; full: no per-element mask; partial: masked), K
** and V tiles are loaded (double-buffered, the next while this one
** computes), S = Q K^T runs on the target's tensor cores with f32
** accumulators, the plan's element-wise values, running maxes, rescales
** and row sums run on the accumulator fragments (tile.c, online.c), and
** P V accumulates through the second contraction. The epilogue finishes
** the states and stores the outputs (epilogue.c). What the tensor cores
** do is the target's (GpuTarget hooks); the order is here. A persistent
** kernel (KernelShape.persistent) runs all of it, from the grid decode to
** the epilogue, once per work tile of the CTA's; a stream-K one
** (KernelShape.streamk, streamk.c) once per row of its share.
*/
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* Whether CTAs may differ in length by their query tile: a streamed node's
** filter reads the query row (causal, windows, prefix-LM, document ids), so
** that the tiles a CTA visits depend on it (launch_order). */
static int row_masked(KernelGen *g, const KernelShape *s)
{
	for (int i = 0; i < g->c->nodes.n; i++) {
		const Node *n = gpu_node(g, i);
		if (gpu_streamed(s, i) && n->filter &&
		    plan_reads_class(g->p, i, n->filter, s->qcls))
			return 1;
	}
	return 0;
}

/* Whether the CTAs' streams are about equally long though masks read the
** query row: every streamed node whose filter reads the row class keeps
** keys lo <= j < hi alone, lo and hi each the row plus terms free of it
** (a sliding window: hi - lo is the same for every row, but at the
** sequence's edges). Causal masks (no lo), prefix-LM (a disjunction) and
** windows clipped by a length (a min) are not. */
int gpu_equal_streams(KernelGen *g)
{
	const KernelShape *s = g->s;
	for (int i = 0; i < g->c->nodes.n; i++) {
		const Node *n = gpu_node(g, i);
		if (!gpu_streamed(s, i) || !n->filter ||
		    !plan_reads_class(g->p, i, n->filter, s->qcls))
			continue;
		Expr *lo, *hi;
		const Expr *rest;
		gpu_key_bounds_of(g, i, &lo, &hi, &rest);
		if (!lo || !hi || rest)
			return 0;
		int row = -1;
		for (int v = 0; v < n->nfree + n->nred; v++)
			if (g->p->cls[i][v] == s->qcls)
				row = v;
		int cl, ch;
		Expr *rl, *rh;
		if (row < 0 || !gpu_key_linear(g, row, lo, &cl, &rl) ||
		    !gpu_key_linear(g, row, hi, &ch, &rh) || cl != ch || !cl)
			return 0;
	}
	return 1;
}

/* The stream's first (first) or next tile at or after `from` into out,
** with any (out < send) and all: the tile scan's, or where a producer scans
** the tiles (GpuTarget.next_tile) the one it published, tested here for
** all unless it published that too. */
static void stream_tile(KernelGen *g, const TileScan *sc, PReg from, PReg out, PReg any, PReg all,
			int first)
{
	if (!g->t->next_tile) {
		gpu_scan(g, sc, from, out, any, all);
		return;
	}
	if (!g->t->next_tile(g, out, all, first))
		gpu_tile_all(g, out, all);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(any), po_r(out), po_r(g->send));
}

/* The kernel of one cascade for target tg: the order of everything, the
** target's hooks for its tensor cores. */
PtxFunc *gpu_kernel(Arena *a, const GpuTarget *tg, const Plan *p, KernelShape *s)
{
	KernelGen G = {0};
	KernelGen *g = &G;
	g->a = a, g->p = p, g->c = p->c, g->s = s, g->t = tg;
	s->cta_slices = gpu_cta_slices(tg, s);
	g->row_blocks = tg->row_blocks(s), g->cta_rows = gpu_cta_rows(tg, s);
	s->bn = g->bn = tg->block_n(s), g->nel = g->bn / 2;
	PtxFunc *f = ARENA_NEW(a, PtxFunc);
	ptx_func_init(f, a,
		      arena_printf(a,
				   s->streamk      ? "%s_fwd_streamk"
				   : s->parts      ? "%s_fwd_part"
				   : s->one_window ? "%s_fwd_short"
						   : "%s_fwd",
				   p->c->name),
		      tg->threads);
	f->minnctapersm = tg->min_ctas_per_sm;
	g->f = f;
	gpu_expr_init(g);
	gpu_ranges_init(g);
	/* a producer's scan keeps no table (gpu_scan_words) */
	int table = gpu_table_wanted(g) && !tg->next_tile;
	s->table = table;
	g->grouped = row_masked(g, s);
	s->persistent = s->streamk || (tg->persistent_wanted && tg->persistent_wanted(g));
	s->claims = s->parts && !s->streamk && tg->claims_wanted && tg->claims_wanted(g);
	if (s->streamk && tg->streamk_wanted && !tg->streamk_wanted(g))
		return NULL;
	f->smem_bytes = tg->layout(g, table);
	/* a stream-K CTA's counts and prefix sums, every role's to read */
	if (s->streamk) {
		g->sk_off = (f->smem_bytes + 15u) & ~15u;
		f->smem_bytes = g->sk_off + 4u * (GPU_SK_ROWS + 2u);
	}
	int n = p->c->nodes.n;
	g->tile = ARENA_ARRAY(a, PReg *, n + 1);
	g->rowv = ARENA_ARRAY(a, PReg *, n + 1);
	g->acc = ARENA_ARRAY(a, PReg *, n + 1);
	for (int i = 0; i < n; i++) {
		g->tile[i] = ARENA_ARRAY(a, PReg, GPU_MAXNEL);
		g->rowv[i] = ARENA_ARRAY(a, PReg, GPU_MAXRS);
		g->acc[i] = ARENA_ARRAY(a, PReg, GPU_MAXMT * gpu_acc_cols(tg, s) / 8 * 4 + 1);
	}
	gpu_scale_plan(g);
	gpu_shift_plan(g);
	gpu_keyvec_init(g);
	gpu_declare_params(g);
	if (s->parts)
		gpu_parts_declare(g);
	gpu_load_params(g);
	/* a persistent kernel's roles decode each work tile in their loops */
	if (!s->persistent)
		gpu_decode_grid(g);
	g->sbase = gpu_reg(g, PC_B32);
	if (tg->producer) {
		gpu_op2(g, PTX_MOV, ".u32", po_r(g->sbase), po_sym("smem"));
		if (s->streamk) {
			/* every thread counts rows, then the roles part with the
			** first work tile decoded (the producer's barriers count
			** the consumers that have rows) */
			gpu_streamk_plan(g);
			gpu_streamk_first(g);
			gpu_streamk_count(g);
			gpu_decode_grid(g);
		}
		/* the producer's code computed values the consumers cannot see */
		tg->producer(g);
		gpu_expr_forget(g, 0);
		gpu_ranges_init(g);
		g->tid = gpu_tid(g);
	} else {
		g->tid = gpu_tid(g);
		gpu_op2(g, PTX_MOV, ".u32", po_r(g->sbase), po_sym("smem"));
		if (s->streamk)
			gpu_streamk_plan(g);
	}
	/* a persistent kernel's work tiles, from this CTA's first */
	int Lwork = s->persistent ? ptx_new_label(f) : -1, Lnext = -1;
	if (s->persistent) {
		if (s->streamk)
			gpu_streamk_first(g);
		else {
			g->work = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_MOV, ".u32", po_r(g->work), po_sym("%ctaid.x"));
		}
		if (tg->work_start)
			tg->work_start(g);
		ptx_label(f, Lwork);
		if (s->streamk) {
			/* a warp done with a work tile goes on to the next one's
			** start (gpu_leave); without a producer, every warp is done
			** with the last one's shared memory before its copies of
			** the next */
			Lnext = ptx_new_label(f);
			g->next_item = Lnext + 1;
			if (!tg->producer)
				gpu_bar(g, 0);
		}
		/* parameters and what is computed from them afresh per work tile:
		** registers from before the loop would be live across all of it
		** (ptxas spilled full attention at D 128 for them) */
		gpu_expr_forget(g, 0);
		gpu_load_params(g);
		if (s->streamk)
			gpu_streamk_count(g);
		else
			gpu_work_count(g);
		gpu_decode_grid(g);
	}
	TileState t = {0};
	int nrs = 2 * g->row_blocks;
	t.prev = ARENA_ARRAY(a, PReg *, n + 1);
	t.kb = ARENA_ARRAY(a, signed char, n + 1);
	t.klo = ARENA_ARRAY(a, PReg *, n + 1);
	t.khi = ARENA_ARRAY(a, PReg *, n + 1);
	t.kres = ARENA_ARRAY(a, const Expr *, n + 1);
	t.ulo = ARENA_ARRAY(a, PReg **, n + 1);
	t.uhi = ARENA_ARRAY(a, PReg **, n + 1);
	t.nunion = ARENA_ARRAY(a, int, n + 1);
	t.okw = ARENA_ARRAY(a, PReg *, n + 1);
	t.okset = ARENA_ARRAY(a, unsigned char *, n + 1);
	for (int i = 0; i < n; i++) {
		t.okw[i] = ARENA_ARRAY(a, PReg, GPU_MAXNEL / 32);
		t.okset[i] = ARENA_ARRAY(a, unsigned char, GPU_MAXNEL);
	}
	gpu_tile_rows(g, &t);
	/* Q tiles and the loaders of K and V; with a staged table, Q is copied
	** after the table's ids */
	int qlate = tg->setup_loads ? tg->setup_loads(g, table) : 0;
	/* running state */
	for (int i = 0; i < n; i++) {
		ShapeNodeKind k = s->node[i].kind;
		if (k == SN_RMAX || k == SN_RSUM || k == SN_REF)
			for (int h = 0; h < nrs; h++) {
				g->rowv[i][h] = gpu_reg(g, PC_F32);
				gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]),
					po_f(k == SN_RMAX ? -INFINITY : 0.0f));
			}
		if (k == SN_GEMM2)
			for (int el = 0; el < g->row_blocks * gpu_acc_cols(tg, s) / 8 * 4; el++) {
				g->acc[i][el] = gpu_reg(g, PC_F32);
				gpu_op2(g, PTX_MOV, ".f32", po_r(g->acc[i][el]), po_f(0.0f));
			}
		if (p->np[i].is_ref) {
			t.prev[i] = ARENA_ARRAY(a, PReg, GPU_MAXRS);
			for (int h = 0; h < nrs; h++)
				t.prev[i][h] = gpu_reg(g, PC_F32);
		}
	}
	for (int i = 0; i < n; i++)
		if (s->node[i].kind == SN_REF)
			for (int h = 0; h < nrs; h++) {
				g->node = i, g->half = h, g->row = t.crows[h];
				PReg v = gpu_expr(g, gpu_node(g, i)->body);
				gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
	gpu_lazy_plan(g, &t);
	gpu_maskonce_plan(g, &t);
	/* the stream, software-pipelined: tile t+1's K and V are copied into the
	** other buffer while tile t computes; a tile whose masks are false
	** everywhere is neither loaded nor computed */
	int Lloop = ptx_new_label(f), Lend = ptx_new_label(f);
	int Lfull = ptx_new_label(f), Ldone = ptx_new_label(f), Lskip = ptx_new_label(f);
	g->j0 = gpu_reg(g, PC_B64), g->j1 = gpu_reg(g, PC_B64);
	PReg j0 = g->j0, j1 = g->j1, nxt = gpu_reg(g, PC_B64), nxt1 = gpu_reg(g, PC_B64);
	TileScan sc = {.table = table, .sbase = g->sbase, .off = g->table_off};
	PReg buf = gpu_reg(g, PC_B32), any = gpu_reg(g, PC_PRED), all = gpu_reg(g, PC_PRED),
	     anyn = gpu_reg(g, PC_PRED), alln = gpu_reg(g, PC_PRED);
	/* where a warpgroup may have no rows (packed query heads, stream-K) the
	** consumers read the producer's first entry after the stream's start,
	** where that warpgroup leaves: it reads no entry, which the producer
	** rewrites later without waiting for it (racecheck's hazard, decode
	** over more tiles than slots) */
	int late_first = (s->streamk || s->pack) && tg->producer;
	PReg start = gpu_reg(g, PC_B64);
	g->send = gpu_reg(g, PC_B64);
	gpu_stream_bounds(g, start, g->send);
	if (sc.table) {
		/* the ids' staging (the target's setup_loads set g->ids) */
		g->ids.after = qlate ? tg->load_q : NULL;
		gpu_table_first(g, sc.off, start);
		g->ids.base = (PReg){0, 0};
		if (g->ids.after) /* not staged after all: Q now */
			tg->load_q(g), g->ids.after = NULL;
	}
	if (!late_first)
		stream_tile(g, &sc, start, j0, any, all, 1);
	gpu_op2(g, PTX_MOV, ".b32", po_r(buf), po_i(0));
	/* the first tile's copies; Q in place */
	tg->stream_start(g, j0, buf, any);
	if (late_first)
		stream_tile(g, &sc, start, j0, any, all, 1);
	ptx_label(f, Lloop);
	PReg fin = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(fin), po_r(j0), po_r(g->send));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lend));
	ptx_guard(f, fin, 0);
	gpu_op3(g, PTX_ADD, ".s64", po_r(j1), po_r(j0), po_i(g->bn));
	gpu_op3(g, PTX_MIN, ".s64", po_r(j1), po_r(j1), po_r(g->sext));
	/* prefetch the next non-empty tile into the other buffer */
	gpu_op3(g, PTX_ADD, ".s64", po_r(nxt1), po_r(j0), po_i(g->bn));
	stream_tile(g, &sc, nxt1, nxt, anyn, alln, 0);
	if (tg->prefetch)
		tg->prefetch(g, nxt, buf, anyn);
	/* this tile's buffer: its addresses, then the wait for its copies */
	int keeps_true_max = 0;
	for (int i = 0; i < n; i++)
		if (t.mtrue[i])
			keeps_true_max = 1;
	tg->tile_begin(g, buf, keeps_true_max);
	/* the loop runs only for a tile the scan found (j0 < send): no test of
	** `any` here, and none carried across the tile (ptxas kept it as a bit
	** of a spilled register) */
	int wclass = gpu_warp_class_wanted(g, table);
	if (wclass) {
		int Lwhole = ptx_new_label(f);
		PReg wany = gpu_reg(g, PC_PRED);
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lwhole));
		ptx_guard(f, all, 0);
		gpu_warp_class(g, wany, all);
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lskip));
		ptx_guard(f, wany, 1);
		ptx_label(f, Lwhole);
	}
	{
		/* a partial last tile takes the masked path: its padding must not count */
		PReg whole = gpu_reg(g, PC_PRED), w = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_SUB, ".s64", po_r(w), po_r(j1), po_r(j0));
		gpu_op3(g, PTX_SETP, ".eq.s64", po_r(whole), po_r(w), po_i(g->bn));
		gpu_op3(g, PTX_AND, ".pred", po_r(all), po_r(all), po_r(whole));
	}
	for (int i = 0; i < n; i++)
		if (p->np[i].is_ref)
			for (int h = 0; h < nrs; h++)
				gpu_op2(g, PTX_MOV, ".f32", po_r(t.prev[i][h]),
					po_r(g->rowv[i][h]));
	gpu_keyvec_load(g, j0);
	for (int i = 0; i < n; i++)
		if (s->node[i].kind == SN_GEMM1)
			tg->contract_qk(g, i);
	/* key indices after the contraction: they are not live across it */
	gpu_lane_ids(g);
	{
		PReg q = gpu_reg(g, PC_B64);
		t.cbase = gpu_reg(g, PC_B64), t.clast = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_AND, ".b64", po_r(q), po_r(g->lane), po_i(3));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(t.cbase), po_r(q), po_i(2), po_r(j0));
		gpu_op3(g, PTX_SUB, ".s64", po_r(t.clast), po_r(g->sext), po_i(1));
	}
	/* what the target copies of the next tile after the contraction */
	if (tg->prefetch_late)
		tg->prefetch_late(g, nxt, buf, anyn);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lfull));
	ptx_guard(f, all, 0);
	gpu_tile_body(g, &t, 1);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_label(f, Lfull);
	gpu_tile_body(g, &t, 0);
	if (wclass) {
		/* a warp that skips this tile still copies its part of the next V */
		gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
		ptx_label(f, Lskip);
		if (tg->prefetch_late)
			tg->prefetch_late(g, nxt, buf, anyn);
	}
	ptx_label(f, Ldone);
	/* every warp is done with this buffer before the next prefetch reuses it */
	tg->tile_end(g, buf);
	gpu_op3(g, PTX_XOR, ".b32", po_r(buf), po_r(buf), po_i(1));
	gpu_op2(g, PTX_MOV, ".b64", po_r(j0), po_r(nxt));
	gpu_op2(g, PTX_MOV, ".pred", po_r(all), po_r(alln));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lloop));
	ptx_label(f, Lend);
	if (tg->stream_end)
		tg->stream_end(g);
	gpu_lazy_finish(g, &t);
	/* fresh parameters and grid indices: not held across the stream */
	gpu_load_params(g);
	gpu_decode_grid(g);
	if (s->parts) {
		s->part_cta_bytes = (unsigned)gpu_part_regs(g) * (unsigned)gpu_warps(tg) * 32u * 4u;
		gpu_parts_finish(g, &t);
	}
	gpu_epilogue(g, &t);
	if (s->persistent) {
		PReg more = gpu_reg(g, PC_PRED),
		     nc = s->streamk ? (PReg){0, 0} : gpu_reg(g, PC_B32);
		if (s->streamk) {
			ptx_label(f, Lnext);
			g->next_item = 0;
		} else
			gpu_work_count(g); /* from the epilogue's parameters */
		gpu_work_next(g, more, nc);
		gpu_op1(g, PTX_BRA, "", po_label(Lwork));
		ptx_guard(f, more, 0);
	}
	if (tg->kernel_end)
		tg->kernel_end(g);
	gpu_op0(g, PTX_RET, "");
	return f;
}

/* One entry's PTX text, kept once its function's memory is gone. */
typedef struct EntryText {
	char *text;
	size_t n;
} EntryText;

/* Prints f into e; returns nonzero when out of memory. */
static int entry_text(EntryText *e, const PtxFunc *f)
{
	FILE *m = open_memstream(&e->text, &e->n);
	if (!m)
		return 1;
	ptx_print_func(m, f);
	return fclose(m) != 0;
}

/* The kernel of shape s as an entry's text; the module's shared-memory
** alignment grows to what the entry needs. Nonzero when out of memory. */
static int build_entry(Arena *a, const GpuTarget *t, const Plan *p, KernelShape *s, EntryText *e,
		       uint32_t *align, unsigned *smem)
{
	PtxFunc *f = p->stream < 0 ? gpu_row_kernel(a, t, p, s) : gpu_kernel(a, t, p, s);
	if (!f) /* a variant the target does not build (stream-K) */
		return 0;
	uint32_t fa = ptx_smem_align(f);
	*align = fa > *align ? fa : *align;
	if (smem)
		*smem = f->smem_bytes;
	return entry_text(e, f);
}

/* Another entry of the same kernel (s's tiling): one_window (NAME_fwd_short),
** parts (NAME_fwd_part) or parts as stream-K (2: NAME_fwd_streamk) set in its
** shape, returned in v. */
static int variant_entry(Arena *a, const GpuTarget *t, const Plan *p, const KernelShape *s,
			 int one_window, int parts, EntryText *e, uint32_t *align, KernelShape *v,
			 unsigned *smem)
{
	gpu_shape(a, p, v);
	v->tiling = s->tiling, v->one_window = one_window, v->parts = parts != 0;
	v->streamk = parts == 2;
	v->with_parts = s->with_parts;
	return build_entry(a, t, p, v, e, align, smem);
}

/* The cascade a refusal names, as the user wrote it: a pass that runs as
** a kernel of its own (Cascade.pass_of) is named with the user's block. */
static const char *kernel_what(Arena *a, const Cascade *c)
{
	if (c->pass_of && c->prologue)
		return arena_printf(a, "'%s' (its values before the stream, row pass %d)",
				    c->pass_of, c->prologue);
	if (c->pass_of)
		return arena_printf(a, "'%s' (its pass %d, a kernel of its own)", c->pass_of,
				    c->pass);
	return arena_printf(a, "'%s'", c->name);
}

/* A cascade whose masks keep a tile table may have two entries: NAME_fwd
** and NAME_fwd_short, the same kernel for keys that fit the table's first
** window, without its refill; the module lists every NAME_fwd first. With
** parts, every cascade also has NAME_fwd_part (parts.c), listed last. Each
** cascade is planned and built in an arena of its own, freed once its
** entries are printed, so that memory does not grow with the number of
** blocks in a file (only the text does). */
int gpu_emit_program(const GpuTarget *t, FILE *out, const Program *prog, Diag *d,
		     GpuKernelInfo *info, const int *tiling, int parts)
{
	int n = prog->cascades.n, rc = 0;
	EntryText *main = calloc((size_t)n + 1, sizeof *main);
	EntryText *shortw = calloc((size_t)n + 1, sizeof *shortw);
	EntryText *partw = calloc((size_t)n + 1, sizeof *partw);
	EntryText *skw = calloc((size_t)n + 1, sizeof *skw);
	uint32_t align = 0;
	if (!main || !shortw || !partw || !skw)
		rc = 1;
	for (int i = 0; i < n && !rc; i++) {
		Arena a;
		arena_init(&a);
		const Cascade *c = prog->cascades.v[i];
		Plan *p = plan_build(&a, c, t->name);
		KernelShape s;
		/* a prologue's row pass says why it is not one; any other cascade
		** with no stream is refused for that */
		const char *why_rows = p->stream < 0 ? gpu_row_shape(&a, p, &s) : "";
		int rows = !why_rows;
		const char *why = rows ? NULL : c->prologue ? why_rows : gpu_shape(&a, p, &s);
		s.with_parts = parts && !rows;
		s.cta_slices = rows ? 1 : gpu_cta_slices(t, &s);
		if (!why && t->refusal && !rows)
			why = t->refusal(p, &s);
		if (!why)
			why = gpu_packed_refusal(c);
		if (why) {
			/* at the statement the refusal is about, where there is one */
			SrcLoc at = s.why_node >= 0 ? ((const Node *)p->c->nodes.v[s.why_node])->loc
						    : c->loc;
			diag_error(d, at, "cannot generate an %s kernel for %s: %s", t->name,
				   kernel_what(&a, c), why);
			arena_free(&a);
			rc = 1;
			break;
		}
		s.tiling = tiling ? tiling[i] : 0;
		unsigned smem = 0;
		rc = build_entry(&a, t, p, &s, &main[i], &align, &smem);
		/* no GPU gives a CTA more (for every target's image that runs
		** there): such a kernel would fail only at launch */
		if (!rc && smem > GPU_CTA_SMEM_MAX) {
			diag_error(
			    d, c->loc,
			    "cannot generate an %s kernel for %s: its tiles need %u bytes of "
			    "shared memory a CTA, more than any GPU gives one (%u)",
			    t->name, kernel_what(&a, c), smem, (unsigned)GPU_CTA_SMEM_MAX);
			rc = 1;
		}
		/* the same kernel without the table's refill (KernelShape.one_window) */
		int one_window = !rows && t->one_window_wanted && t->one_window_wanted(&s);
		KernelShape v;
		if (one_window && !rc)
			rc = variant_entry(&a, t, p, &s, 1, 0, &shortw[i], &align, &v, NULL);
		/* the same kernel over a launch's keys and rows, its states merged
		** and carried (parts.c) */
		unsigned part_cta_bytes = 0;
		if (parts && !rc && !rows) {
			rc = variant_entry(&a, t, p, &s, 0, 1, &partw[i], &align, &v, NULL);
			part_cta_bytes = v.part_cta_bytes;
		}
		/* and as stream-K where lengths are read on the device (a ragged
		** batch's kv_len): streamk.c */
		unsigned sk_smem = 0;
		if (parts && !rc && !rows && gpu_data_masks(p))
			rc = variant_entry(&a, t, p, &s, 0, 2, &skw[i], &align, &v, &sk_smem);
		/* every entry launches with the larger shared memory */
		if (!rc && sk_smem > GPU_CTA_SMEM_MAX) {
			diag_error(d, c->loc,
				   "cannot generate an %s kernel for %s: its stream-K entry needs "
				   "%u bytes of shared memory a CTA, more than any GPU gives one "
				   "(%u)",
				   t->name, kernel_what(&a, c), sk_smem,
				   (unsigned)GPU_CTA_SMEM_MAX);
			rc = 1;
		}
		if (info) {
			info[i].smem = sk_smem > smem ? sk_smem : smem;
			info[i].block_m = rows ? (gpu_row_wide(p) ? 1u : GPU_THREADS)
					       : (unsigned)gpu_cta_rows(t, &s);
			info[i].block_n = (unsigned)s.bn;
			info[i].data_masks = gpu_data_masks(p);
			info[i].split_v = s.split_v;
			info[i].table = s.table;
			info[i].pack = 0;
			info[i].one_window = one_window;
			info[i].window_keys = GPU_WINDOW_KEYS;
			info[i].threads = (unsigned)(rows ? GPU_THREADS : t->threads);
			info[i].ntmaps = s.ntmaps;
			info[i].parts = parts;
			info[i].part_cta_bytes = part_cta_bytes;
			info[i].streamk = skw[i].text != NULL;
			info[i].persistent = s.persistent;
			info[i].vslices = rows ? 1 : s.vslices / s.cta_slices;
			memcpy(info[i].tmap, s.tmap, sizeof s.tmap);
			if (s.pack && s.pack->kind == EX_INT)
				info[i].pack = s.pack->ival;
			else if (s.pack)
				info[i].pack = -(long)(s.pack->dim->id + 1);
		}
		arena_free(&a);
	}
	if (!rc) {
		ptx_print_header(out, t->ptx_target, t->ptx_version, align);
		for (int i = 0; i < n; i++)
			fprintf(out, "%s%s", i ? "\n" : "", main[i].text);
		for (int i = 0; i < n; i++)
			if (shortw[i].text)
				fprintf(out, "\n%s", shortw[i].text);
		for (int i = 0; i < n; i++)
			if (partw[i].text)
				fprintf(out, "\n%s", partw[i].text);
		for (int i = 0; i < n; i++)
			if (skw[i].text)
				fprintf(out, "\n%s", skw[i].text);
	}
	for (int i = 0; i < n && main && shortw && partw && skw; i++)
		free(main[i].text), free(shortw[i].text), free(partw[i].text), free(skw[i].text);
	free(main), free(shortw), free(partw), free(skw);
	return rc;
}
