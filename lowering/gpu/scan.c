/*
** lowering/gpu/scan.c: which key tiles the stream visits. The CTA's key
** range from the masks' key bounds (stream_bounds); a scan of tile classes
** from one computed tile to the next (scan_tiles), or, where masks read
** data per tile (document ids), a table of a window of tiles classified
** together with their loads in flight (table_fill, scan_table); and
** classes per warp, so that warps whose rows a tile misses skip it.
*/
#include "gpu.h"

/* ---- shared memory and loads --------------------------------------------- */

/* The tile table of a window of TAB_TILES key tiles (see scan_table): the
** window's first key (s64, a multiple of TAB_TILES * GPU_BN); a bit per
** tile of "some mask true somewhere" and one of "every mask true
** everywhere", as four u32 words each (a warp's 32 tiles per word); and
** per tile p a u16 entry: the first tile at or after p whose any bit is
** set (TAB_TILES where none is), plus 256 where its all bit is. */
enum {
	TAB_WORDS = GPU_WARPS,
	TAB_TILES = 32 * TAB_WORDS,
	TAB_ANY = 16,
	TAB_ALL = TAB_ANY + 4 * TAB_WORDS,
	TAB_NEXT = TAB_ALL + 4 * TAB_WORDS,
	TAB_BYTES = TAB_NEXT + 2 * TAB_TILES
};

/* ---- the kernel ----------------------------------------------------------- */

/* Node i's mask decides which tiles the stream visits: the tile values and
** the reductions over keys (not references or the epilogue). */
int gpu_streamed(const KernelShape *s, int i)
{
	ShapeNodeKind k = s->node[i].kind;
	return k == SN_RMAX || k == SN_RSUM || k == SN_GEMM2 || k == SN_MAP || k == SN_GEMM1 ||
	       k == SN_CROSS;
}

/* An earlier streamed node has node i's filter, up to variables of the
** same classes (a tile's class depends only on the classes' ranges): its
** test, and its warp votes, decide for both. */
static int class_done(KernelGen *g, const KernelShape *s, int i)
{
	for (int k = 0; k < i; k++)
		if (gpu_streamed(s, k) && gpu_node(g, k)->filter && gpu_node(g, i)->filter &&
		    gpu_same_read(g, k, gpu_node(g, k)->filter, i, gpu_node(g, i)->filter, 0))
			return 1;
	return 0;
}

/* any: some node's mask is true somewhere on tile [a, b); all: every
** node's mask is true everywhere on it. */
static void class_flags(KernelGen *g, const KernelShape *s, PReg a, PReg b, PReg any, PReg all)
{
	PReg sj0 = g->j0, sj1 = g->j1, z = gpu_reg(g, PC_B32);
	g->j0 = a, g->j1 = b;
	gpu_op2(g, PTX_MOV, ".b32", po_r(z), po_i(0));
	gpu_op3(g, PTX_SETP, ".ne.s32", po_r(any), po_r(z), po_i(0));
	gpu_op3(g, PTX_SETP, ".eq.s32", po_r(all), po_r(z), po_i(0));
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!gpu_streamed(s, i) || class_done(g, s, i))
			continue;
		PReg al, ne, nn = gpu_reg(g, PC_PRED);
		gpu_tile_class(g, i, &al, &ne);
		gpu_op2(g, PTX_NOT, ".pred", po_r(nn), po_r(ne));
		gpu_op3(g, PTX_OR, ".pred", po_r(any), po_r(any), po_r(nn));
		gpu_op3(g, PTX_AND, ".pred", po_r(all), po_r(all), po_r(al));
	}
	g->j0 = sj0, g->j1 = sj1;
}

/* out (a tile) moved to the first tile at or after it in some span of
** KernelGen.span_lo, or to send where none is left. */
static void next_in_spans(KernelGen *g, PReg out)
{
	PReg best = gpu_reg(g, PC_B64), c = gpu_reg(g, PC_B64), in = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_MOV, ".b64", po_r(best), po_r(g->send));
	for (int k = 0; k < g->nspans; k++) {
		gpu_op3(g, PTX_MAX, ".s64", po_r(c), po_r(out), po_r(g->span_lo[k]));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(c), po_r(g->span_hi[k]));
		gpu_op3(g, PTX_MIN, ".s64", po_r(c), po_r(c), po_r(best));
		gpu_op4(g, PTX_SELP, ".b64", po_r(best), po_r(c), po_r(best), po_r(in));
	}
	gpu_op2(g, PTX_MOV, ".b64", po_r(out), po_r(best));
}

/* The first tile at or after `from` whose masks are true somewhere, into
** out (>= send when there is none), any = out < send, and all = every
** node's mask is true on all of that tile (the stream takes it from here
** instead of testing the tile again): a loop of class tests with no loads
** of K or V and no barriers, so that the stream visits only the tiles it
** computes. For masks without data reads (scan_table has the others). */
static void scan_tiles(KernelGen *g, const KernelShape *s, PReg from, PReg out, PReg any, PReg all)
{
	int Lscan = ptx_new_label(g->f), Ldone = ptx_new_label(g->f);
	PReg past = gpu_reg(g, PC_PRED), st = gpu_reg(g, PC_B64), end = gpu_reg(g, PC_B64),
	     in = gpu_reg(g, PC_PRED), a = gpu_reg(g, PC_PRED), al = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_MOV, ".b64", po_r(out), po_r(from));
	ptx_label(g->f, Lscan);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(past), po_r(out), po_r(g->send));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, past, 0);
	gpu_op3(g, PTX_ADD, ".s64", po_r(st), po_r(out), po_i(0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(end), po_r(st), po_i(g->bn));
	gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->sext));
	class_flags(g, s, st, end, a, al);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(st), po_r(g->send));
	gpu_op3(g, PTX_AND, ".pred", po_r(a), po_r(a), po_r(in));
	gpu_op2(g, PTX_MOV, ".pred", po_r(all), po_r(al));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, a, 0);
	gpu_op3(g, PTX_ADD, ".s64", po_r(out), po_r(out), po_i(g->bn));
	if (g->nspans)
		next_in_spans(g, out);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lscan));
	ptx_label(g->f, Ldone);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(any), po_r(out), po_r(g->send));
}

typedef struct DataMask {
	const Plan *p;
	int node, any;
} DataMask;

static void data_mask(const Expr *c, void *ud)
{
	DataMask *d = ud;
	d->any |= plan_mask_kind(d->p, d->node, c) >= MASK_RUNTIME;
}

int gpu_data_masks(const Plan *p)
{
	DataMask d = {p, 0, 0};
	for (int i = 0; i < p->c->nodes.n; i++)
		d.node = i, plan_conjuncts(((const Node *)p->c->nodes.v[i])->filter, data_mask, &d);
	return d.any;
}

/* Tiles classified together when the stream leaves the table's window:
** their id loads are in flight at once, in registers the stream's
** accumulators also need (the first window takes 32 per warp: before the
** stream, registers are free). */
enum { REFILL_BATCH = 4 };

_Static_assert(TAB_TILES == 128 && (int)GPU_THREADS == (int)TAB_TILES,
	       "the table's search takes its bits as two u64 words, a thread per tile");

_Static_assert(TAB_TILES *GPU_BN == GPU_WINDOW_KEYS, "a window's keys");

/* The lowest set bit of x at or after bit p (0 <= p <= 64) of a u64 word,
** or 64 where there is none: x's bits below p are shifted out (a shift by
** 64 gives 0), then brev + clz counts the trailing zeros. */
static PReg first_bit(KernelGen *g, PReg x, PReg p)
{
	PReg m = gpu_reg(g, PC_B64), r = gpu_reg(g, PC_B64), c = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SHR, ".b64", po_r(m), po_r(x), po_r(p));
	gpu_op3(g, PTX_SHL, ".b64", po_r(m), po_r(m), po_r(p));
	gpu_op2(g, PTX_BREV, ".b64", po_r(r), po_r(m));
	gpu_op2(g, PTX_CLZ, ".b64", po_r(c), po_r(r));
	return c;
}

/* The table's entry of tile t (this thread's: t = %tid.x) from its words:
** the first any bit at or after t, in the low word then the high. */
static void table_next(KernelGen *g, PReg sbase, uint32_t off)
{
	PReg an[2] = {gpu_reg(g, PC_B64), gpu_reg(g, PC_B64)},
	     al[2] = {gpu_reg(g, PC_B64), gpu_reg(g, PC_B64)};
	PReg t = gpu_reg(g, PC_B32), p0 = gpu_reg(g, PC_B32), p1 = gpu_reg(g, PC_B32),
	     pos = gpu_reg(g, PC_B32), z0 = gpu_reg(g, PC_PRED), bits = gpu_reg(g, PC_B64),
	     sh = gpu_reg(g, PC_B32), b = gpu_reg(g, PC_B64), b32 = gpu_reg(g, PC_B32),
	     e = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_LD, ".shared.v2.u64", po_vec(an, 2),
		po_mem(sbase, (int32_t)(off + TAB_ANY)));
	gpu_op2(g, PTX_LD, ".shared.v2.u64", po_vec(al, 2),
		po_mem(sbase, (int32_t)(off + TAB_ALL)));
	if (g->t->consumer_tid0)
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(t), po_r(gpu_tid(g)));
	else
		gpu_op2(g, PTX_MOV, ".u32", po_r(t), po_sym("%tid.x"));
	gpu_op3(g, PTX_MIN, ".u32", po_r(p0), po_r(t), po_i(64));
	gpu_op3(g, PTX_SUB, ".u32", po_r(p1), po_r(t), po_r(p0));
	PReg c0 = first_bit(g, an[0], p0), c1 = first_bit(g, an[1], p1);
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(z0), po_r(c0), po_i(64));
	gpu_op3(g, PTX_ADD, ".u32", po_r(c1), po_r(c1), po_i(64));
	gpu_op4(g, PTX_SELP, ".b32", po_r(pos), po_r(c1), po_r(c0), po_r(z0));
	gpu_op4(g, PTX_SELP, ".b64", po_r(bits), po_r(al[1]), po_r(al[0]), po_r(z0));
	gpu_op3(g, PTX_AND, ".b32", po_r(sh), po_r(pos), po_i(63));
	gpu_op3(g, PTX_SHR, ".b64", po_r(b), po_r(bits), po_r(sh));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(b32), po_r(b));
	gpu_op3(g, PTX_AND, ".b32", po_r(b32), po_r(b32), po_i(1));
	/* pos = 128 (none): no all bit, whatever the shift read */
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(z0), po_r(pos), po_i(TAB_TILES));
	gpu_op4(g, PTX_SELP, ".b32", po_r(b32), po_i(0), po_r(b32), po_r(z0));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(e), po_r(b32), po_i(256), po_r(pos));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(t), po_i(2), po_r(sbase));
	gpu_op2(g, PTX_ST, ".shared.u16", po_mem(a, (int32_t)(off + TAB_NEXT)), po_r(e));
}

/* Tiles tested `batch` at a time, every lane on each (the key ranges
** per lane, the tests voted over the warp): bit u of the words is tile
** st + u bn. */
static void table_tiles(KernelGen *g, const KernelShape *s, PReg st, PReg anyw, PReg allw,
			PReg bitm, int batch)
{
	PReg su[32], end[32];
	int Lk = ptx_new_label(g->f);
	if (batch < 32)
		ptx_label(g->f, Lk);
	for (int u = 0; u < batch; u++) {
		su[u] = gpu_reg(g, PC_B64), end[u] = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".s64", po_r(su[u]), po_r(st), po_i(u * g->bn));
		gpu_op3(g, PTX_ADD, ".s64", po_r(end[u]), po_r(su[u]), po_i(g->bn));
		gpu_op3(g, PTX_MIN, ".s64", po_r(end[u]), po_r(end[u]), po_r(g->sext));
	}
	for (int i = 0; i < g->c->nodes.n; i++)
		if (gpu_streamed(s, i) && !class_done(g, s, i))
			gpu_key_ranges(g, i, su, end, batch);
	for (int u = 0; u < batch; u++) {
		PReg in = gpu_reg(g, PC_PRED), an = gpu_reg(g, PC_PRED), al = gpu_reg(g, PC_PRED),
		     bit = gpu_reg(g, PC_B32), x = gpu_reg(g, PC_B32), y = gpu_reg(g, PC_B32);
		class_flags(g, s, su[u], end[u], an, al);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(su[u]), po_r(g->send));
		gpu_op3(g, PTX_AND, ".pred", po_r(an), po_r(an), po_r(in));
		gpu_op3(g, PTX_SHL, ".b32", po_r(bit), po_r(bitm), po_i(u));
		gpu_op4(g, PTX_SELP, ".b32", po_r(x), po_r(bit), po_i(0), po_r(an));
		gpu_op3(g, PTX_OR, ".b32", po_r(anyw), po_r(anyw), po_r(x));
		gpu_op4(g, PTX_SELP, ".b32", po_r(y), po_r(bit), po_i(0), po_r(al));
		gpu_op3(g, PTX_OR, ".b32", po_r(allw), po_r(allw), po_r(y));
	}
	if (batch < 32) {
		PReg more = gpu_reg(g, PC_PRED), in = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SHL, ".b32", po_r(bitm), po_r(bitm), po_i(batch));
		gpu_op3(g, PTX_ADD, ".s64", po_r(st), po_r(st), po_i(batch * g->bn));
		gpu_op3(g, PTX_SETP, ".ne.b32", po_r(more), po_r(bitm), po_i(0));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(st), po_r(g->send));
		gpu_op3(g, PTX_AND, ".pred", po_r(more), po_r(more), po_r(in));
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lk));
		ptx_guard(g->f, more, 0);
	}
}

/* The first window where its one key read is plain and its ids fit the
** staging (gpu_key_ranges_lanes): lane l tests tile st + l GPU_BN alone,
** and two ballots make the words. */
int gpu_lanes_wanted(KernelGen *g)
{
	const KernelShape *s = g->s;
	int n = 0;
	if (!g->ids.base.n)
		return 0;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!gpu_streamed(s, i) || class_done(g, s, i))
			continue;
		int k = gpu_plain_key_reads(g, i);
		if (k < 0)
			return 0;
		n += k;
	}
	return n == 1;
}

static void table_lanes(KernelGen *g, const KernelShape *s, PReg st, PReg anyw, PReg allw)
{
	PReg su = gpu_reg(g, PC_B64), eu = gpu_reg(g, PC_B64), in = gpu_reg(g, PC_PRED),
	     an = gpu_reg(g, PC_PRED), al = gpu_reg(g, PC_PRED);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(su), po_r(g->lane), po_i(GPU_BN), po_r(st));
	gpu_op3(g, PTX_ADD, ".s64", po_r(eu), po_r(su), po_i(GPU_BN));
	gpu_op3(g, PTX_MIN, ".s64", po_r(eu), po_r(eu), po_r(g->sext));
	for (int i = 0; i < g->c->nodes.n; i++)
		if (gpu_streamed(s, i) && !class_done(g, s, i))
			gpu_key_ranges_lanes(g, i, st, su, eu);
	class_flags(g, s, su, eu, an, al);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(su), po_r(g->send));
	gpu_op3(g, PTX_AND, ".pred", po_r(an), po_r(an), po_r(in));
	gpu_op3(g, PTX_VOTE, ".ballot.b32", po_r(anyw), po_r(an), po_i(-1));
	gpu_op3(g, PTX_VOTE, ".ballot.b32", po_r(allw), po_r(al), po_i(-1));
}

/* The classes of the TAB_TILES tiles from key wb (a window's start) into
** the table (at g->table_off, the target's layout): warp w tests tiles 32 w to 32 w + 31 of the
** window, `batch` at a time (the loads of a batch's key ranges first, then
** its tests), and stops past the stream's end; its lane 0 writes the
** warp's two words; then each thread makes one tile's entry. Barriers
** before (no warp still reads the old window; not for the first), after
** the words and after the entries: the caller's control flow is the same
** in every warp, since the table decides it. */
static void table_fill(KernelGen *g, const KernelShape *s, PReg sbase, uint32_t off, PReg wb,
		       int batch, int first)
{
	PReg anyw = gpu_reg(g, PC_B32), allw = gpu_reg(g, PC_B32), st = gpu_reg(g, PC_B64),
	     bitm = gpu_reg(g, PC_B32);
	if (!first)
		gpu_bar(g, 1);
	gpu_op2(g, PTX_MOV, ".b32", po_r(anyw), po_i(0));
	gpu_op2(g, PTX_MOV, ".b32", po_r(allw), po_i(0));
	gpu_op2(g, PTX_MOV, ".b32", po_r(bitm), po_i(1));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(st), po_r(g->warp), po_i(32 * GPU_BN), po_r(wb));
	if (batch == 32 && gpu_lanes_wanted(g))
		table_lanes(g, s, st, anyw, allw);
	else
		table_tiles(g, s, st, anyw, allw, bitm, batch);
	PReg w32 = gpu_u32(g, g->warp), a = gpu_reg(g, PC_B32), l0 = gpu_reg(g, PC_PRED),
	     t0 = gpu_reg(g, PC_PRED);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(w32), po_i(4), po_r(sbase));
	gpu_op3(g, PTX_SETP, ".eq.s64", po_r(l0), po_r(g->lane), po_i(0));
	gpu_op2(g, PTX_ST, ".shared.u32", po_mem(a, (int32_t)(off + TAB_ANY)), po_r(anyw));
	ptx_guard(g->f, l0, 0);
	gpu_op2(g, PTX_ST, ".shared.u32", po_mem(a, (int32_t)(off + TAB_ALL)), po_r(allw));
	ptx_guard(g->f, l0, 0);
	gpu_op3(g, PTX_SETP, ".eq.s64", po_r(t0), po_r(g->warp), po_i(0));
	gpu_op3(g, PTX_AND, ".pred", po_r(t0), po_r(t0), po_r(l0));
	gpu_op2(g, PTX_ST, ".shared.s64", po_mem(sbase, (int32_t)off), po_r(wb));
	ptx_guard(g->f, t0, 0);
	gpu_bar(g, 1);
	table_next(g, sbase, off);
	gpu_bar(g, 1);
}

/* The start of the window that holds key x. */
static PReg window_of(KernelGen *g, PReg x)
{
	PReg w = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_AND, ".b64", po_r(w), po_r(x), po_i(-(int64_t)TAB_TILES * GPU_BN));
	return w;
}

/* scan_tiles for masks that read data (document ids). Classifying a tile
** there means loading its ids, and testing the tiles one after another cost
** a load's latency per tile, several per computed tile at long sequences.
** The table (table_fill) holds the classes of a window of
** TAB_TILES tiles, tested with their loads in flight together, and per
** tile the next one to compute; the scan reads the window's start and the
** tile's entry at once (windows are aligned, so the entry's place does not
** wait for the start), and refills the table where the stream leaves the
** window. The refill's tile tests, in the stream loop beside the output
** accumulators, can make ptxas spill where the kernel without them does
** not; saving the accumulators to local memory around the refill, or
** computing its row ranges and lane ids again there, does not avoid it.
** So such a table kernel may come twice (gpu_emit_program,
** GpuTarget.one_window_wanted): one without the refill
** (KernelShape.one_window), which the launcher takes where the keys fit
** the first window (N <= GPU_WINDOW_KEYS), and the general one. */
static void scan_table(KernelGen *g, const KernelShape *s, PReg sbase, uint32_t off, PReg from,
		       PReg out, PReg any, PReg all)
{
	int Lscan = ptx_new_label(g->f), Lhave = ptx_new_label(g->f), Ldone = ptx_new_label(g->f);
	PReg past = gpu_reg(g, PC_PRED), wb = gpu_reg(g, PC_B64), d = gpu_reg(g, PC_B64),
	     inw = gpu_reg(g, PC_PRED), p = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B32),
	     e = gpu_reg(g, PC_B32), x = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(out), po_r(from));
	ptx_label(g->f, Lscan);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(past), po_r(out), po_r(g->send));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, past, 0);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(p), po_r(out));
	gpu_op3(g, PTX_SHR, ".u32", po_r(p), po_r(p), po_i(6));
	gpu_op3(g, PTX_AND, ".b32", po_r(p), po_r(p), po_i(TAB_TILES - 1));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(p), po_i(2), po_r(sbase));
	gpu_op2(g, PTX_LD, ".shared.s64", po_r(wb), po_mem(sbase, (int32_t)off));
	gpu_op2(g, PTX_LD, ".shared.u16", po_r(e), po_mem(a, (int32_t)(off + TAB_NEXT)));
	gpu_op3(g, PTX_SUB, ".s64", po_r(d), po_r(out), po_r(wb));
	gpu_op3(g, PTX_SETP, ".lt.u64", po_r(inw), po_r(d), po_i((int64_t)TAB_TILES * GPU_BN));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lhave));
	ptx_guard(g->f, inw, 0);
	if (s->one_window) {
		/* every key is in the first window: the stream is done */
		gpu_op2(g, PTX_MOV, ".b64", po_r(out), po_r(g->send));
		gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	} else {
		table_fill(g, s, sbase, off, window_of(g, out), REFILL_BATCH, 0);
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lscan));
	}
	ptx_label(g->f, Lhave);
	{
		PReg pos = gpu_reg(g, PC_B32), fl = gpu_reg(g, PC_B32), found = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_AND, ".b32", po_r(pos), po_r(e), po_i(255));
		gpu_op3(g, PTX_AND, ".b32", po_r(fl), po_r(e), po_i(256));
		gpu_op3(g, PTX_SETP, ".ne.b32", po_r(all), po_r(fl), po_i(0));
		/* pos = 128 (none): the next window */
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(x), po_r(pos));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(out), po_r(x), po_i(GPU_BN), po_r(wb));
		gpu_op3(g, PTX_SETP, ".lt.u32", po_r(found), po_r(pos), po_i(TAB_TILES));
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lscan));
		ptx_guard(g->f, found, 1);
	}
	ptx_label(g->f, Ldone);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(any), po_r(out), po_r(g->send));
}

/* Keys of one warp's window (scan_words): 32 tiles, a bit of a word each. */
static int64_t words_keys(KernelGen *g)
{
	return 32 * (int64_t)g->bn;
}

/* Tiles of a window tested at once, their id loads in flight together:
** 16 loads a lane (32 spilled a producer warp's 56 registers,
** document.attn at 128-key tiles). */
static int words_batch(KernelGen *g)
{
	return 16 / (g->bn / 32);
}

/* The window's registers and the scanning warp's index; wb far below every
** key, so that the first scan fills. */
void gpu_scan_words(KernelGen *g, TileScan *sc, int nwarps, int bar, uint32_t words_off)
{
	PReg t = gpu_reg(g, PC_B32);
	sc->words = 1, sc->nwarps = nwarps, sc->bar = bar, sc->words_off = words_off;
	sc->warp = gpu_reg(g, PC_B32), sc->parity = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(t), po_sym("%tid.x"));
	gpu_op3(g, PTX_SHR, ".u32", po_r(sc->warp), po_r(t), po_i(5));
	gpu_op3(g, PTX_AND, ".b32", po_r(sc->warp), po_r(sc->warp), po_i(nwarps - 1));
	gpu_op2(g, PTX_MOV, ".b32", po_r(sc->parity), po_i(0));
	sc->wb = gpu_reg(g, PC_B64), sc->anyw = gpu_reg(g, PC_B32), sc->allw = gpu_reg(g, PC_B32);
	/* no window yet: every key is far past wb's, and the first scan fills */
	gpu_op2(g, PTX_MOV, ".b64", po_r(sc->wb), po_i(-((int64_t)1 << 40)));
	gpu_op2(g, PTX_MOV, ".b32", po_r(sc->anyw), po_i(0));
	gpu_op2(g, PTX_MOV, ".b32", po_r(sc->allw), po_i(0));
}

/* The window of 32 tiles from key sc->wb split among the scan's warps: warp w
** tests tiles [32 w / n, 32 (w + 1) / n) of it (table_tiles, with the
** stream's end narrowed to its part), its lane 0 writes its bytes of the
** two words to the slot of this fill's parity, and after the barrier every
** warp reads both words whole. The slots alternate, so that no warp writes
** a slot another may still read: it would have to pass the next fill's
** barrier first, which waits for that read. */
static void words_fill_shared(KernelGen *g, const KernelShape *s, const TileScan *sc)
{
	int per = 32 / sc->nwarps, batch = words_batch(g) < per ? words_batch(g) : per;
	PReg st = gpu_reg(g, PC_B64), w64 = gpu_reg(g, PC_B64), lim = gpu_reg(g, PC_B64),
	     bitm = gpu_reg(g, PC_B32), sh = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B32),
	     l0 = gpu_reg(g, PC_PRED), send = g->send;
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(w64), po_r(sc->warp));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(st), po_r(w64), po_i((int64_t)per * g->bn),
		po_r(sc->wb));
	gpu_op3(g, PTX_ADD, ".s64", po_r(lim), po_r(st), po_i((int64_t)per * g->bn));
	gpu_op3(g, PTX_MIN, ".s64", po_r(lim), po_r(lim), po_r(send));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(sh), po_r(sc->warp), po_i(per));
	gpu_op3(g, PTX_SHL, ".b32", po_r(bitm), po_i(1), po_r(sh));
	g->send = lim;
	table_tiles(g, s, st, sc->anyw, sc->allw, bitm, batch);
	g->send = send;
	/* the warp's whole bytes (8 tiles or more a warp): any at the slot's
	** bytes 0 to 3, all at 4 to 7 */
	PReg byte0 = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SHR, ".u32", po_r(byte0), po_r(sh), po_i(3));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(sc->parity), po_i(8), po_r(byte0));
	gpu_op3(g, PTX_ADD, ".u32", po_r(a), po_r(a), po_r(g->sbase));
	gpu_op3(g, PTX_SETP, ".eq.u64", po_r(l0), po_r(g->lane), po_i(0));
	for (int k = 0; k < per / 8; k++)
		for (int w = 0; w < 2; w++) {
			PReg x = gpu_reg(g, PC_B32), at = gpu_reg(g, PC_B32);
			gpu_op3(g, PTX_ADD, ".u32", po_r(at), po_r(sh), po_i(8 * k));
			gpu_op3(g, PTX_SHR, ".u32", po_r(x), po_r(w ? sc->allw : sc->anyw),
				po_r(at));
			gpu_op2(
			    g, PTX_ST, ".shared.u8",
			    po_mem(a, (int32_t)(sc->words_off + 4u * (unsigned)w + (unsigned)k)),
			    po_r(x));
			ptx_guard(g->f, l0, 0);
		}
	gpu_op2(g, PTX_BAR, "", po_i(sc->bar), po_i(sc->nwarps * 32));
	PReg v[2] = {sc->anyw, sc->allw}, r = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(r), po_r(sc->parity), po_i(8), po_r(g->sbase));
	gpu_op2(g, PTX_LD, ".shared.v2.u32", po_vec(v, 2), po_mem(r, (int32_t)sc->words_off));
	gpu_op3(g, PTX_XOR, ".b32", po_r(sc->parity), po_r(sc->parity), po_i(1));
}

/* scan_tiles for masks that read data (document ids) where warps scan on
** their own (a warp-specialised target's producer): they classify the 32
** tiles from where the scan leaves its window at once, with their id loads
** in flight together (words_fill_shared), into two words kept in
** registers; the scan then finds the next tile by a bit search, with no
** load, until it leaves the window again. The words and the window's start
** live across the caller's loop (TileScan). */
static void scan_words(KernelGen *g, const KernelShape *s, const TileScan *sc, PReg from, PReg out,
		       PReg all)
{
	int Lscan = ptx_new_label(g->f), Lhave = ptx_new_label(g->f), Ldone = ptx_new_label(g->f);
	PReg past = gpu_reg(g, PC_PRED), d = gpu_reg(g, PC_B64), inw = gpu_reg(g, PC_PRED),
	     p = gpu_reg(g, PC_B32), m = gpu_reg(g, PC_B32), none = gpu_reg(g, PC_PRED),
	     r = gpu_reg(g, PC_B32), c = gpu_reg(g, PC_B32), x = gpu_reg(g, PC_B64),
	     b = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b64", po_r(out), po_r(from));
	ptx_label(g->f, Lscan);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(past), po_r(out), po_r(g->send));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, past, 0);
	gpu_op3(g, PTX_SUB, ".s64", po_r(d), po_r(out), po_r(sc->wb));
	gpu_op3(g, PTX_SETP, ".lt.u64", po_r(inw), po_r(d), po_i(words_keys(g)));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lhave));
	ptx_guard(g->f, inw, 0);
	/* a new window from out */
	gpu_op2(g, PTX_MOV, ".b64", po_r(sc->wb), po_r(out));
	gpu_op2(g, PTX_MOV, ".b32", po_r(sc->anyw), po_i(0));
	gpu_op2(g, PTX_MOV, ".b32", po_r(sc->allw), po_i(0));
	words_fill_shared(g, s, sc);
	gpu_op2(g, PTX_MOV, ".b64", po_r(d), po_i(0));
	ptx_label(g->f, Lhave);
	/* the first any bit at or after out's tile p: none past the window */
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(p), po_r(d));
	gpu_op3(g, PTX_SHR, ".u32", po_r(p), po_r(p), po_i(gpu_log2(g->bn)));
	gpu_op3(g, PTX_SHR, ".b32", po_r(m), po_r(sc->anyw), po_r(p));
	gpu_op3(g, PTX_SETP, ".eq.b32", po_r(none), po_r(m), po_i(0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(out), po_r(sc->wb), po_i(words_keys(g)));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lscan));
	ptx_guard(g->f, none, 0);
	gpu_op2(g, PTX_BREV, ".b32", po_r(r), po_r(m));
	gpu_op2(g, PTX_CLZ, ".b32", po_r(c), po_r(r));
	gpu_op3(g, PTX_ADD, ".u32", po_r(p), po_r(p), po_r(c));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(x), po_r(p));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(out), po_r(x), po_i(g->bn), po_r(sc->wb));
	gpu_op3(g, PTX_SHR, ".b32", po_r(b), po_r(sc->allw), po_r(p));
	gpu_op3(g, PTX_AND, ".b32", po_r(b), po_r(b), po_i(1));
	gpu_op3(g, PTX_SETP, ".ne.b32", po_r(all), po_r(b), po_i(0));
	ptx_label(g->f, Ldone);
}

/* class_flags over one tile, for a tile another thread's scan found: only
** its all flag is wanted (ptxas drops the rest). */
void gpu_tile_all(KernelGen *g, PReg j0, PReg all)
{
	PReg end = gpu_reg(g, PC_B64), any = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_ADD, ".s64", po_r(end), po_r(j0), po_i(g->bn));
	gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->sext));
	class_flags(g, g->s, j0, end, any, all);
}

/* The table is for masks that load data per tile (document ids): others
** test a tile in a few instructions. */
int gpu_table_wanted(KernelGen *g)
{
	for (int i = 0; i < g->c->nodes.n; i++)
		if (gpu_streamed(g->s, i) && gpu_key_reads(g, i))
			return 1;
	return 0;
}

/* Classes per warp: a tile the CTA computes but whose masks are not all
** true is classified again over each warp's own rows, so that on a diagonal
** or a window's edge the warps whose rows the tile does not reach skip it
** and those it covers whole take the unmasked body; only the others pay
** for per-score masks. For masks whose tests need no data along the rows
** or keys (causal, windows): there the test is a few comparisons. Not with
** GQA packing (a CTA's rows are not one run of query rows). */
int gpu_warp_class_wanted(KernelGen *g, int table)
{
	int any = 0;
	/* a sum over the CTA's rows exchanges the tile through shared memory:
	** every warp takes part */
	if (table || g->s->pack || !g->t->warp_classes || g->s->ncross)
		return 0;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!gpu_streamed(g->s, i) || !gpu_node(g, i)->filter)
			continue;
		if (gpu_range_reads(g, i))
			return 0;
		any = 1;
	}
	return any;
}

/* any / all of the tile [j0, j1) over this warp's rows: rows q0 + 16 mt
** warp up to the CTA's (and the query extent's) end. */
void gpu_warp_class(KernelGen *g, PReg any, PReg all)
{
	const KernelShape *s = g->s;
	PReg tid = gpu_tid(g), w = gpu_reg(g, PC_B64), end = gpu_reg(g, PC_B64);
	g->warp_rows.q0 = gpu_reg(g, PC_B64), g->warp_rows.q1 = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SHR, ".u64", po_r(w), po_r(tid), po_i(5));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(g->warp_rows.q0), po_r(w), po_i(16 * g->row_blocks),
		po_r(g->q0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(end), po_r(g->warp_rows.q0), po_i(16 * g->row_blocks));
	gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->qext));
	gpu_op3(g, PTX_SUB, ".s64", po_r(g->warp_rows.q1), po_r(end), po_i(1));
	g->warp_rows.on = 1;
	class_flags(g, s, g->j0, g->j1, any, all);
	g->warp_rows.on = 0;
}

void gpu_scan(KernelGen *g, const TileScan *sc, PReg from, PReg out, PReg any, PReg all)
{
	const KernelShape *s = g->s;
	if (sc->table)
		scan_table(g, s, sc->sbase, sc->off, from, out, any, all);
	else if (sc->words) {
		scan_words(g, s, sc, from, out, all);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(any), po_r(out), po_r(g->send));
	} else
		scan_tiles(g, s, from, out, any, all);
}

/* The stream's bounds narrowed to the CTA's part of the launch's keys:
** [kr0 + z kchunk, kr0 + (z + 1) kchunk). */
static void parts_bounds(KernelGen *g, PReg start, PReg end)
{
	PReg kr0 = gpu_part_param(g, GPU_PART_KR0), ch = gpu_part_param(g, GPU_PART_KCHUNK),
	     z = gpu_special(g, "%ctaid.z"), lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(lo), po_r(z), po_r(ch), po_r(kr0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(hi), po_r(lo), po_r(ch));
	gpu_op3(g, PTX_MAX, ".s64", po_r(start), po_r(start), po_r(lo));
	gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(hi));
}

/* A stream-K CTA's part of row work's tiles, [t0, t1) from the row's
** (aligned) start (streamk.c). */
static void streamk_bounds(KernelGen *g, PReg start, PReg end)
{
	GpuSkPart pt;
	gpu_streamk_part(g, &pt);
	PReg lo = gpu_reg(g, PC_B64), hi = gpu_reg(g, PC_B64), t = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(t), po_r(pt.t0));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(lo), po_r(t), po_i(g->bn), po_r(start));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(t), po_r(pt.t1));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(hi), po_r(t), po_i(g->bn), po_r(start));
	gpu_op2(g, PTX_MOV, ".b64", po_r(start), po_r(lo));
	gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(hi));
}

/* KernelGen.span_lo/hi where every streamed mask is one filter whose key
** bounds leave a disjunction, each disjunct's key interval over the CTA's
** rows (a disjunct that no row can satisfy, such as Longformer's i < G
** past the global rows, is empty), tile aligned and within [start, end);
** else none. The scan then passes over the keys between the disjuncts:
** at N 8k, Longformer's CTAs kept 7 of 64 tiles and tested every one
** (bench/RESULTS.md). Not where the keys are cut into parts. Keys j0/j1
** are the whole stream here (bounds). */
static void spans(KernelGen *g, PReg start, PReg end)
{
	const KernelShape *s = g->s;
	g->nspans = 0;
	int node = -1;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!gpu_streamed(s, i) || !gpu_node(g, i)->filter || class_done(g, s, i))
			continue;
		if (node >= 0)
			return;
		node = i;
	}
	if (node < 0 || s->parts || s->streamk)
		return;
	Expr *blo, *bhi;
	const Expr *rest, *d[GPU_MAX_SPANS];
	gpu_key_bounds_of(g, node, &blo, &bhi, &rest);
	int n = gpu_disjuncts(rest, d);
	if (n < 2)
		return;
	PReg lo[GPU_MAX_SPANS], hi[GPU_MAX_SPANS];
	for (int k = 0; k < n; k++) {
		Expr *elo, *ehi;
		const Expr *erest;
		gpu_key_bounds_expr(g, node, d[k], &elo, &ehi, &erest);
		g->node = node;
		PReg l = start, h = end, x, al, ne;
		if ((elo && !gpu_range(g, elo, &l, &x)) || (ehi && !gpu_range(g, ehi, &x, &h)))
			return;
		lo[k] = gpu_reg(g, PC_B64), hi[k] = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MAX, ".s64", po_r(lo[k]), po_r(l), po_r(start));
		gpu_op3(g, PTX_AND, ".b64", po_r(lo[k]), po_r(lo[k]), po_i(-(int64_t)g->bn));
		gpu_op3(g, PTX_MIN, ".s64", po_r(hi[k]), po_r(h), po_r(end));
		/* no row of the CTA can satisfy the disjunct: an empty span */
		gpu_expr_class(g, node, erest, &al, &ne);
		gpu_op4(g, PTX_SELP, ".b64", po_r(hi[k]), po_i(0), po_r(hi[k]), po_r(ne));
	}
	g->nspans = n;
	for (int k = 0; k < n; k++)
		g->span_lo[k] = lo[k], g->span_hi[k] = hi[k];
}

/* The CTA's key range [start, end): the union, over the nodes whose masks
** the scan tests, of the key bounds their filters' conjuncts give over the
** CTA's rows (causal: end = last row + 1; a window of W: start = first row
** - W + 1), start rounded down to a tile. The stream then starts and stops
** there instead of testing every tile from 0 to the end: up to N / 64
** class tests per CTA, most of the stream's overhead under short windows.
** start = 0 and end = sext where some node has no bound on that side.
** A split's part z keeps [kr0 + z kchunk, kr0 + (z + 1) kchunk) of them,
** unless its CTAs claim tiles (KernelShape.claims: the row's keys, every
** part's). Narrowed to the CTA's part of the keys where `narrow` (a
** stream-K CTA's; not its count of a row's tiles). */
static void bounds(KernelGen *g, PReg start, PReg end, int narrow)
{
	const KernelShape *s = g->s;
	PReg sj0 = g->j0, sj1 = g->j1, zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	g->j0 = zero, g->j1 = g->sext; /* keys in a bound (none expected): the stream */
	int lo_any = 1, hi_any = 1, first = 1;
	gpu_op2(g, PTX_MOV, ".b64", po_r(start), po_i(0));
	gpu_op2(g, PTX_MOV, ".b64", po_r(end), po_r(g->sext));
	for (int i = 0; i < g->c->nodes.n && (lo_any || hi_any); i++) {
		if (!gpu_streamed(s, i))
			continue;
		Expr *blo, *bhi;
		const Expr *rest;
		gpu_key_bounds_of(g, i, &blo, &bhi, &rest);
		g->node = i;
		PReg lo, hi, x;
		if (lo_any && blo && gpu_range(g, blo, &lo, &x))
			gpu_op3(g, first ? PTX_MAX : PTX_MIN, ".s64", po_r(start),
				po_r(first ? zero : start), po_r(lo));
		else if (lo_any) {
			lo_any = 0;
			gpu_op2(g, PTX_MOV, ".b64", po_r(start), po_i(0));
		}
		if (hi_any && bhi && gpu_range(g, bhi, &x, &hi))
			gpu_op3(g, first ? PTX_MIN : PTX_MAX, ".s64", po_r(end),
				po_r(first ? g->sext : end), po_r(hi));
		else if (hi_any) {
			hi_any = 0;
			gpu_op2(g, PTX_MOV, ".b64", po_r(end), po_r(g->sext));
		}
		first = 0;
	}
	spans(g, start, end);
	if (s->parts && !s->streamk && !s->claims)
		parts_bounds(g, start, end);
	/* the launch's first key (a multiple of the tile); the CTAs that claim
	** tiles take the row's, of every part */
	if (s->streamk || s->claims)
		gpu_op3(g, PTX_MAX, ".s64", po_r(start), po_r(start),
			po_r(gpu_part_param(g, GPU_PART_KR0)));
	/* a union of ranges widened, then clamped into the stream */
	gpu_op3(g, PTX_MAX, ".s64", po_r(start), po_r(start), po_i(0));
	gpu_op3(g, PTX_AND, ".b64", po_r(start), po_r(start), po_i(-(int64_t)g->bn));
	gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->sext));
	if (s->streamk && narrow)
		streamk_bounds(g, start, end);
	g->j0 = sj0, g->j1 = sj1;
}

void gpu_stream_bounds(KernelGen *g, PReg start, PReg end)
{
	bounds(g, start, end, 1);
}

void gpu_row_bounds(KernelGen *g, PReg start, PReg end)
{
	bounds(g, start, end, 0);
}

void gpu_table_first(KernelGen *g, uint32_t off, PReg start)
{
	table_fill(g, g->s, g->sbase, off, window_of(g, start), 32, 1);
}
