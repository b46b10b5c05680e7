/*
** lowering/gpu/gather_stage.c: gathered K and V tiles (gather.c: a paged
** cache's page table) copied into a stage of a TMA ring, laid out as TMA
** lays a tile (the 128-byte swizzle: chunk c of row r of a panel at
** (c ^ r % 8) * 16), by the 128 threads of the copying warpgroup, whose
** every thread arrives on the stage's full barrier.
**
** Row by row: a TMA box takes rows one stride apart, so each thread
** copies its 16-byte chunks with cp.async, each lane evaluating one row's
** gather for its warp's chunks (gpu_gather_lanes), and arrives when they
** complete (cp.async.mbarrier.arrive.noinc); the consumers order those
** generic-proxy writes before their wgmma reads with a proxy fence.
**
** Page by page, where the read's rows lie in pages (gpu_pages_slot:
** Kc[block[b, j / P], j % P, h, d]; the subscript j % X of the slot over a
** dimension of extent X, every other one that follows the key reading it
** as j / X) and X is a multiple of BN: a tile's keys then lie at
** consecutive slots of one page, and one TMA box of BN rows along the
** slot's dimension, at the coordinates the subscripts give at the tile's
** first key, copies each panel. Smaller pages go row by row, chosen at run
** time: four boxes of a page's 16 rows a panel (2 KB each) ran slower than
** the row copy, where pages of 64 ran faster (bench/RESULTS.md).
*/
#include "gpu.h"

/* pages_copy gives each read a lane of warp 0. */
_Static_assert(2 * GPU_MAXG <= 32, "a lane of warp 0 a gathered read");

/* The reads of gs whose rows lie in pages have maps (gpu_tma_add_map):
** whether all do. */
static int by_pages(const GatherStage *gs)
{
	int maps = 1;
	for (int r = 0; r < gs->n; r++)
		maps &= gs->rd[r]->map >= 0;
	return maps;
}

/* Per read: the thread's column chunk c = tid % cpr and its fixed part's
** address plus 16 c, computed once before the stream (a packed head takes
** the CTA's first row, as gpu_tma_fixed_coords does). */
void gpu_gather_stage_setup(KernelGen *g, GatherStage *gs, PReg tid32)
{
	PReg zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	for (int r = 0; r < gs->n; r++) {
		const TmaRead *t = gs->rd[r];
		long cpr = (long)t->panels * GPU_TMAP_INNER / 8;
		g->node = t->node, g->row = g->q0, g->col = zero;
		PReg base = gpu_gather_base(g, t->node, t->e, IDX_KEY), c64 = gpu_reg(g, PC_B64);
		gs->col[r] = gpu_reg(g, PC_B32), gs->colbase[r] = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_REM, ".u32", po_r(gs->col[r]), po_r(tid32), po_i(cpr));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(c64), po_r(gs->col[r]));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(gs->colbase[r]), po_r(c64), po_i(16),
			po_r(base));
	}
}

/* Into d, the place of row's chunk in the swizzled panel at dst0 (the
** 128-byte swizzle: (c % 8) ^ (row % 8), c % 8 in cc); sw a scratch. */
static void swizzled(KernelGen *g, PReg d, PReg sw, PReg row, PReg cc, PReg dst0)
{
	gpu_op3(g, PTX_AND, ".b32", po_r(sw), po_r(row), po_i(7));
	gpu_op3(g, PTX_XOR, ".b32", po_r(sw), po_r(sw), po_r(cc));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(d), po_r(row), po_i(GPU_TMAP_ROW), po_r(dst0));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(d), po_r(sw), po_i(16), po_r(d));
}

/* Read t's tile from key j0 row by row into the stage at sa. Where the
** thread's rows are 8 apart (fixed), its chunks keep one place in the
** swizzle: one destination with immediate offsets, and the rows not
** copied are marked in their offsets (GatherLanes.flagged) and skipped
** by cp.async's ignore-src; the copying loop's length paces the stream
** (bench/RESULTS.md). Elsewhere each chunk's place is computed, and a row
** not copied reads 0 bytes from the tensor's base. */
static void rows_copy(KernelGen *g, const TmaRead *t, PReg tid32, PReg colbase, PReg col, PReg j0,
		      PReg sa)
{
	long cpr = (long)t->panels * GPU_TMAP_INNER / 8;
	int n = (int)(g->bn * cpr / GPU_THREADS), step = (int)(GPU_THREADS / cpr);
	int fixed = step % 8 == 0;
	GatherLanes gl = {.flagged = fixed};
	gpu_gather_lanes(g, t->node, t->e, IDX_KEY, tid32, cpr, n, step, j0, g->sext, &gl);
	/* the chunk's place in the swizzled panel: row0 = tid / cpr, panel
	** c / 8, (c % 8) ^ (row % 8) */
	PReg row0 = gpu_reg(g, PC_B32), pan = gpu_reg(g, PC_B32), cc = gpu_reg(g, PC_B32),
	     dst0 = gpu_reg(g, PC_B32), p = gpu_reg(g, PC_B64), tp = gpu_reg(g, PC_B64);
	if ((cpr & (cpr - 1)) == 0) /* ptxas divided by the immediate */
		gpu_op3(g, PTX_SHR, ".u32", po_r(row0), po_r(tid32), po_i(gpu_log2(cpr)));
	else
		gpu_op3(g, PTX_DIV, ".u32", po_r(row0), po_r(tid32), po_i(cpr));
	gpu_op3(g, PTX_SHR, ".u32", po_r(pan), po_r(col), po_i(3));
	gpu_op3(g, PTX_AND, ".b32", po_r(cc), po_r(col), po_i(7));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(dst0), po_r(pan), po_i(g->bn * GPU_TMAP_ROW), po_r(sa));
	gpu_op3(g, PTX_ADD, ".u32", po_r(dst0), po_r(dst0), po_i(t->off));
	PReg d0 = {0, 0};
	if (fixed) {
		PReg sw = gpu_reg(g, PC_B32);
		d0 = gpu_reg(g, PC_B32);
		swizzled(g, d0, sw, row0, cc, dst0);
	} else {
		gpu_op2(g, PTX_LD, ".param.u64", po_r(p),
			po_memsym(g->par.ptr_names[t->e->tensor->id], 0));
		gpu_op2(g, PTX_CVTA, ".to.global.u64", po_r(tp), po_r(p));
	}
	for (int it = 0; it < n; it++) {
		/* cp.async's last operand: ignore-src (fixed) or the byte count */
		PReg o, last, a = gpu_reg(g, PC_B64), d = d0;
		int imm = fixed ? it * step * GPU_TMAP_ROW : 0;
		if (fixed) {
			gpu_gather_take_flagged(g, &gl, it, &o, &last);
			gpu_op3(g, PTX_ADD, ".s64", po_r(a), po_r(colbase), po_r(o));
		} else {
			PReg in = gpu_reg(g, PC_PRED), row = gpu_reg(g, PC_B32),
			     sw = gpu_reg(g, PC_B32);
			d = gpu_reg(g, PC_B32);
			gpu_gather_take(g, &gl, it, &o, &last);
			gpu_op3(g, PTX_ADD, ".s64", po_r(a), po_r(colbase), po_r(o));
			gpu_op3(g, PTX_SETP, ".ne.u32", po_r(in), po_r(last), po_i(0));
			gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(a), po_r(tp), po_r(in));
			gpu_op3(g, PTX_ADD, ".u32", po_r(row), po_r(row0), po_i(it * step));
			swizzled(g, d, sw, row, cc, dst0);
		}
		gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global", po_mem(d, imm), po_mem(a, 0),
			po_i(16), po_r(last));
	}
}

/* Whether every read of r's page holds a whole number of tiles, at run
** time (pred): X a positive multiple of BN. */
static PReg pages_ok(KernelGen *g, const TmaRead *const *r, int n)
{
	PReg ok = gpu_pconst(g, 1);
	for (int i = 0; i < n; i++) {
		if (r[i]->offset)
			continue; /* consecutive rows from an offset: any box holds them */
		PReg x = gpu_u32(g, gpu_expr(g, r[i]->e->tensor->shape[r[i]->rowdim])),
		     t = gpu_reg(g, PC_B32), o = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_AND, ".b32", po_r(t), po_r(x), po_i(g->bn - 1));
		gpu_op4(g, PTX_SETP, ".eq.and.u32", po_r(o), po_r(t), po_i(0), po_r(ok));
		gpu_op4(g, PTX_SETP, ".ge.and.u32", po_r(o), po_r(x), po_i(g->bn), po_r(o));
		ok = o;
	}
	return ok;
}

/* Read r's tile at key j0 by boxes: its coordinates, the subscripts
** evaluated at the tile's first key (held inside the key extent, so that
** the table is read inside its own), the slot moved past its dimension
** where the key is past the extent (TMA fills a box outside the tensor
** with zeros, as gather.c zero-fills such rows, and one whose page lies
** outside the pool the same way), then a box per panel into the stage at
** sa (u32), completing on barrier bar. */
static void tile_copy(KernelGen *g, const TmaRead *r, PReg map, PReg j0, PReg sa, PReg bar)
{
	const Expr *e = r->e;
	PReg jc = gpu_reg(g, PC_B64), last = gpu_reg(g, PC_B64), past = gpu_reg(g, PC_PRED),
	     c[GPU_TMAP_MAX_RANK];
	gpu_op3(g, PTX_SUB, ".s64", po_r(last), po_r(g->sext), po_i(1));
	gpu_op3(g, PTX_MIN, ".s64", po_r(jc), po_r(j0), po_r(last));
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(past), po_r(j0), po_r(g->sext));
	int snode = g->node, selem = g->elem;
	PReg scol = g->col, srow = g->row;
	g->node = r->node, g->elem = -1, g->row = g->q0, g->col = jc;
	for (int k = 0; k < e->nargs - 1; k++)
		c[k] = gpu_u32(g, gpu_expr(g, e->args[k]));
	g->node = snode, g->col = scol, g->row = srow, g->elem = selem;
	PReg x = gpu_u32(g, gpu_expr(g, e->tensor->shape[r->rowdim]));
	gpu_op4(g, PTX_SELP, ".b32", po_r(c[r->rowdim]), po_r(x), po_r(c[r->rowdim]), po_r(past));
	for (int p = 0; p < r->panels; p++)
		gpu_tma_copy(
		    g, r, map, c, c[r->rowdim], p,
		    gpu_saddr(g, sa, r->off + (uint32_t)p * (uint32_t)g->bn * GPU_TMAP_ROW), bar,
		    (PReg){0, 0});
}

/* A stage's tiles of the n reads r (their maps the parameters names) from
** key j0 into the stage at sa, by the 128 threads of the copying
** warpgroup (tid32: 0 to 127) whose full barrier bar counts each of them:
** thread 0 arms it with the stage's tx bytes as it arrives, the others
** arrive, and lane i of warp 0 copies read i. A branch per read keeps one
** read's evaluation in a lane's registers, and the reads' tables are read
** at once. The maps' addresses are taken here, not held across the loop:
** the copying threads' registers are few. */
static void pages_copy(KernelGen *g, const TmaRead *const *r, int n, const char *const *names,
		       PReg tid32, PReg j0, PReg sa, PReg bar, uint32_t tx)
{
	PReg lead = gpu_reg(g, PC_PRED);
	int Lend = ptx_new_label(g->f);
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(lead), po_r(tid32), po_i(0));
	gpu_op3(g, PTX_MBAR_ARRIVE, ".expect_tx.shared::cta.b64", po_sym("_"), po_mem(bar, 0),
		po_i(tx));
	ptx_guard(g->f, lead, 0);
	gpu_op2(g, PTX_MBAR_ARRIVE, ".shared::cta.b64", po_sym("_"), po_mem(bar, 0));
	ptx_guard(g->f, lead, 1);
	for (int i = 0; i < n; i++) {
		PReg mine = gpu_reg(g, PC_PRED);
		int Lnext = i + 1 < n ? ptx_new_label(g->f) : Lend;
		gpu_op3(g, PTX_SETP, ".ne.u32", po_r(mine), po_r(tid32), po_i(i));
		gpu_op1(g, PTX_BRA, "", po_label(Lnext));
		ptx_guard(g->f, mine, 0);
		tile_copy(g, r[i], gpu_tma_map_addr(g, names[r[i]->map]), j0, sa, bar);
		if (Lnext != Lend)
			ptx_label(g->f, Lnext);
	}
	ptx_label(g->f, Lend);
}

/* The stage's tiles from key j0 (stage address sa): page by page where
** the pages allow it at run time, else row by row, every thread arriving
** on the full barrier fb. */
void gpu_gather_stage_copy(KernelGen *g, const GatherStage *gs, PReg tid32, PReg j0, PReg sa,
			   PReg fb)
{
	int Lrows = 0, Lend = 0, pages = by_pages(gs), offsets = 1;
	for (int r = 0; r < gs->n; r++)
		offsets &= gs->rd[r]->offset;
	if (offsets) { /* every read's rows lie at an offset: boxes always */
		pages_copy(g, gs->rd, gs->n, gs->names, tid32, j0, sa, fb, gs->tx);
		return;
	}
	if (pages) {
		PReg ok = pages_ok(g, gs->rd, gs->n);
		Lrows = ptx_new_label(g->f), Lend = ptx_new_label(g->f);
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lrows));
		ptx_guard(g->f, ok, 1);
		pages_copy(g, gs->rd, gs->n, gs->names, tid32, j0, sa, fb, gs->tx);
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lend));
		ptx_label(g->f, Lrows);
	}
	for (int r = 0; r < gs->n; r++)
		rows_copy(g, gs->rd[r], tid32, gs->colbase[r], gs->col[r], j0, sa);
	gpu_op1(g, PTX_CP_ASYNC, ".mbarrier.arrive.noinc.shared::cta.b64", po_mem(fb, 0));
	if (pages)
		ptx_label(g->f, Lend);
}

/* Q's tile of read q, whose rows are placed through a gather and not at an
** offset (gpu_q_gathered: no box takes them), copied by the nthreads
** consumer threads (tid: 0 up, b64) with cp.async into the tile as TMA lays
** it out (the 128-byte swizzle), and waited for: thread t copies chunk
** t % cpr of rows t / cpr + it * (nthreads / cpr). A row past the query
** extent, one whose gathered index falls outside the tensor, and the last
** panel's chunks past the head dim are zero-filled from the read's fixed
** part. The consumers' barrier (gpu_bar) then orders the copies before
** every consumer's reads; the caller fences them before the async proxy's. */
void gpu_gather_q_copy(KernelGen *g, const TmaRead *q, PReg tid, int nthreads)
{
	long cpr = (long)q->panels * GPU_TMAP_INNER / 8, step = nthreads / cpr;
	PReg t = gpu_u32(g, tid), col = gpu_reg(g, PC_B32), row0 = gpu_reg(g, PC_B32),
	     c64 = gpu_reg(g, PC_B64), srow = g->row, pan = gpu_reg(g, PC_B32),
	     cc = gpu_reg(g, PC_B32), dst0 = gpu_reg(g, PC_B32), inside = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_AND, ".b32", po_r(col), po_r(t), po_i(cpr - 1));
	gpu_op3(g, PTX_SHR, ".u32", po_r(row0), po_r(t), po_i(gpu_log2(cpr)));
	gpu_op3(g, PTX_SETP, ".lt.u32", po_r(inside), po_r(col), po_i(q->cols / 8));
	int snode = g->node;
	g->node = q->node, g->row = g->q0;
	PReg base = gpu_gather_base(g, q->node, q->e, IDX_QUERY), src0 = gpu_reg(g, PC_B64);
	g->node = snode, g->row = srow;
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(c64), po_r(col));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(src0), po_r(c64), po_i(16), po_r(base));
	gpu_op3(g, PTX_SHR, ".u32", po_r(pan), po_r(col), po_i(3));
	gpu_op3(g, PTX_AND, ".b32", po_r(cc), po_r(col), po_i(7));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(dst0), po_r(pan), po_i(q->rows * GPU_TMAP_ROW),
		po_r(g->sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(dst0), po_r(dst0), po_i(q->off));
	for (long it = 0; it < (long)q->rows / step; it++) {
		PReg row = gpu_reg(g, PC_B32), r64 = gpu_reg(g, PC_B64), i = gpu_reg(g, PC_B64),
		     d = gpu_reg(g, PC_B32), sw = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B64),
		     nb = gpu_reg(g, PC_B32), ok;
		gpu_op3(g, PTX_ADD, ".u32", po_r(row), po_r(row0), po_i(it * step));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r64), po_r(row));
		gpu_op3(g, PTX_ADD, ".s64", po_r(i), po_r(g->q0), po_r(r64));
		PReg off = gpu_gather_row(g, q->node, q->e, IDX_QUERY, i, g->qext, &ok);
		gpu_op3(g, PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(inside));
		gpu_op3(g, PTX_ADD, ".s64", po_r(a), po_r(src0), po_r(off));
		gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(a), po_r(base), po_r(ok));
		gpu_op4(g, PTX_SELP, ".b32", po_r(nb), po_i(16), po_i(0), po_r(ok));
		swizzled(g, d, sw, row, cc, dst0);
		gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global", po_mem(d, 0), po_mem(a, 0), po_i(16),
			po_r(nb));
	}
	gpu_op0(g, PTX_CP_COMMIT, "");
	gpu_op1(g, PTX_CP_WAIT, "", po_i(0));
	gpu_bar(g, 0);
}
