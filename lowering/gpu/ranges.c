/*
** lowering/gpu/ranges.c: ranges of i32 data over a tile. Tile classes
** (tileclass.c) test masks by interval arithmetic over the tile; reads of
** i32 data along the query rows or the keys (doc[b, i], document masking)
** enter it as the data's min and max over the tile, computed by each warp
** at run time and cached where the code that computed them dominates.
*/
#include <string.h>

#include "gpu.h"

/* min and max (s32) of data reads over the CTA's query rows or a tile's
** keys, reused where the code that computed them dominates and its inputs
** are unchanged (see range_cached) */
typedef struct RangeEntry {
	const Expr *e; /* the read, in node's variables */
	int node;
	int kind;        /* 'q' or 's' */
	PReg mn, mx;     /* b32 */
	PReg j0, j1;     /* the key range registers it was computed from ('s') */
	int end;         /* code[end]: the first instruction after its code */
	int in_prologue; /* its code is in the straight-line prologue (computed or
			 ** moved there): it dominates all that follows */
	int whole;       /* the lane's range over all of its own tile [j0, j1): no vote */
} RangeEntry;

typedef struct RangeCache {
	RangeEntry e[72]; /* the table's first window: 32 tiles' ranges of up to two key reads */
	int n;
	int ahead; /* gpu_row_ranges_ahead is computing: what it notes dominates */
} RangeCache;

void gpu_ranges_init(KernelGen *g)
{
	g->ranges = ARENA_NEW(g->a, RangeCache);
}

/* shfl.sync.bfly needs five operands, one more than E takes. */
static void shfl_bfly(KernelGen *g, PReg d, PReg x, int lanemask)
{
	PtxOpnd o[5] = {po_r(d), po_r(x), po_i(lanemask), po_i(31), po_i(-1)};
	ptx_emit(g->f, PTX_SHFL, ".b32", 5, o);
}

/* ---- data ranges ----------------------------------------------------------
** A read like doc[b, i] (or doc[b, j]) takes one value per query row (key)
** of the tile; its interval over the tile is [min, max] of the data over
** the CTA's rows [q0, min(q0 + bm, qext)) or the tile's keys [j0, j1). Each
** warp computes it on its own (no shared memory, no barrier): lane l loads
** the elements l, l + 32, ... of the range that exist; for the rows a
** butterfly of shfl.sync.bfly leaves the min and max in every lane, for
** keys each lane keeps its own and the tests vote (range_compute). Callers
** run it from uniform control flow with all 32 lanes active
** (gpu_tile_class). */

/* The kind ('q' or 's') of the one range the indices in e run over, given
** kind k of the subscripts before it: 0 when they are fixed on the tile
** (grid indices), -1 when they run over another index or over both. */
static int index_range(KernelGen *g, const Expr *e, int k)
{
	if (e->kind == EX_INDEX) {
		int v = gpu_index_kind(g, e->var);
		if (v == 'g')
			return k;
		if ((v != 'q' && v != 's') || (k && k != v))
			return -1;
		return v;
	}
	for (int i = 0; i < e->nargs && k >= 0; i++)
		k = index_range(g, e->args[i], k);
	return k;
}

/* The same for a subscript: -1 where it is not plain index arithmetic the
** kernel evaluates on its own (compiler/masks.c's rule, shared with
** MASK_RANGE). */
static int subscript_range(KernelGen *g, const Expr *e, int k)
{
	return plan_plain_subscript(e) ? index_range(g, e, k) : -1;
}

/* The range kind of a read over all its subscripts: a read whose
** subscripts run over the rows and the keys at once (pos[b, i - j]) has no
** range per tile and stays per element. */
int gpu_read_range(KernelGen *g, const Expr *e)
{
	int k = 0;
	for (int i = 0; i < e->nargs && k >= 0; i++)
		k = subscript_range(g, e->args[i], k);
	return k;
}

/* e itself is a read of i32 input data along the keys (doc[b, j]): tile
** classes take its range per tile (range_read 's'). */
static int is_key_read(KernelGen *g, const Expr *e)
{
	return e->kind == EX_ACCESS && e->type == VT_INT && !e->tensor->def &&
	       gpu_read_range(g, e) == 's';
}

/* A read of input data whose subscripts are not fixed on a tile (along the
** rows or the keys). */
static int is_range_read(KernelGen *g, const Expr *e)
{
	return e->kind == EX_ACCESS && !e->tensor->def && gpu_read_range(g, e) != 0;
}

/* e or a subexpression satisfies is (a kind of read). */
static int has_read(KernelGen *g, const Expr *e, int (*is)(KernelGen *, const Expr *))
{
	if (!e)
		return 0;
	if (is(g, e))
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (has_read(g, e->args[i], is))
			return 1;
	return 0;
}

/* Node's filter has a read of kind is, in node's variables. */
static int filter_reads(KernelGen *g, int node, int (*is)(KernelGen *, const Expr *))
{
	int save = g->node, r;
	g->node = node;
	r = has_read(g, ((const Node *)g->p->c->nodes.v[node])->filter, is);
	g->node = save;
	return r;
}

int gpu_key_reads(KernelGen *g, int node)
{
	return filter_reads(g, node, is_key_read);
}

int gpu_range_reads(KernelGen *g, int node)
{
	return filter_reads(g, node, is_range_read);
}

/* A range computed earlier whose value holds here: the same read, and its
** code dominates this point with unchanged inputs. The CTA's row range
** depends only on registers set once before the stream (q0, qext, grid
** indices, pointers, strides), so code in the straight-line prologue (no
** label or branch before it) dominates every later point; otherwise, and
** always for key ranges (j0 and j1 change in the stream loop, and a back
** edge could bring a new j0 in), only code in the same basic block with
** j0 and j1 not written since counts. */
static int range_cached(KernelGen *g, const Expr *e, int k, PReg *mn, PReg *mx, int *whole)
{
	PReg none = {0, 0};
	if (whole)
		*whole = 0;
	for (int i = 0; i < g->ranges->n; i++) {
		const RangeEntry *c = &g->ranges->e[i];
		if (c->kind != k || !gpu_same_read(g, c->node, c->e, g->node, e, 0))
			continue;
		if (k == 'q' && !c->in_prologue &&
		    gpu_code_has(g->f, c->end, g->f->ncode, none, none))
			continue;
		if (k == 's' && (!gpu_same_preg(c->j0, g->j0) || !gpu_same_preg(c->j1, g->j1) ||
				 gpu_code_has(g->f, c->end, g->f->ncode, g->j0, g->j1)))
			continue;
		*mn = c->mn, *mx = c->mx;
		if (whole)
			*whole = c->whole;
		return 1;
	}
	return 0;
}

/* [min, max] of read e over range k of the tile, as s32 registers (the
** data is i32; the caller widens them). An empty range gives min > max. A
** range longer than the lanes cover (not made by the kernel) gives the
** whole i32 range, which is sound. The CTA's rows ('q') are reduced over
** the warp; a tile's keys ('s') are not: each lane keeps the range of its
** own keys (two of 64), the tests run per lane, and gpu_tile_class votes
** over the warp (a tile is never / always true where it is for every
** lane's keys). That is one vote per test instead of ten dependent
** shuffles per range, on the path that scans tiles for document masks. */
static void range_compute(KernelGen *g, const Expr *e, int k, PReg *mn, PReg *mx)
{
	int span = k == 'q' ? g->cta_rows : g->bn;
	PReg first = k == 'q' ? g->q0 : g->j0, end = g->j1;
	*mn = gpu_reg(g, PC_B32), *mx = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b32", po_r(*mn), po_i(INT32_MAX));
	gpu_op2(g, PTX_MOV, ".b32", po_r(*mx), po_i(INT32_MIN));
	if (k == 'q') {
		end = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".s64", po_r(end), po_r(g->q0), po_i(g->cta_rows));
		gpu_op3(g, PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->qext));
	}
	PReg row = g->row, col = g->col, x = gpu_reg(g, PC_B64), in[4], w[4];
	gpu_op3(g, PTX_ADD, ".s64", po_r(x), po_r(first), po_r(g->lane));
	/* element x = first + lane + t, when x < end: the loads are predicated,
	** so no address past the range is read, and lanes past it keep the
	** identities of min and max; all loads come first */
	for (int t = 0; t < span; t += 32) {
		PReg xt = x;
		if (t) {
			xt = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_ADD, ".s64", po_r(xt), po_r(x), po_i(t));
		}
		in[t / 32] = gpu_reg(g, PC_PRED), w[t / 32] = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in[t / 32]), po_r(xt), po_r(end));
		if (k == 'q')
			g->row = xt;
		else
			g->col = xt;
		PReg a = gpu_addr(g, e->tensor, e->args);
		gpu_op2(g, PTX_LD, ".global.nc.s32", po_r(w[t / 32]), po_mem(a, 0));
		ptx_guard(g->f, in[t / 32], 0);
	}
	for (int t = 0; t < span / 32; t++) {
		gpu_op3(g, PTX_MIN, ".s32", po_r(*mn), po_r(*mn), po_r(w[t]));
		ptx_guard(g->f, in[t], 0);
		gpu_op3(g, PTX_MAX, ".s32", po_r(*mx), po_r(*mx), po_r(w[t]));
		ptx_guard(g->f, in[t], 0);
	}
	g->row = row, g->col = col;
	for (int m = 16; m >= 1 && k == 'q'; m >>= 1) {
		PReg a = gpu_reg(g, PC_B32), b = gpu_reg(g, PC_B32);
		shfl_bfly(g, a, *mn, m);
		shfl_bfly(g, b, *mx, m);
		gpu_op3(g, PTX_MIN, ".s32", po_r(*mn), po_r(*mn), po_r(a));
		gpu_op3(g, PTX_MAX, ".s32", po_r(*mx), po_r(*mx), po_r(b));
	}
	PReg n = gpu_reg(g, PC_B64), big = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SUB, ".s64", po_r(n), po_r(end), po_r(first));
	gpu_op3(g, PTX_SETP, ".gt.s64", po_r(big), po_r(n), po_i(span));
	gpu_op4(g, PTX_SELP, ".b32", po_r(*mn), po_i(INT32_MIN), po_r(*mn), po_r(big));
	gpu_op4(g, PTX_SELP, ".b32", po_r(*mx), po_i(INT32_MAX), po_r(*mx), po_r(big));
}

/* A free cache slot, else the oldest entry outside the prologue (key
** ranges stop being valid at the next label anyway), else the oldest key
** range (one tile's: the table of document masks classifies 32 tiles in
** the prologue, and evicting the rows' range made every later test
** recompute it), else the oldest. */
static int range_slot(KernelGen *g)
{
	int n = sizeof g->ranges->e / sizeof g->ranges->e[0], best = -1;
	if (g->ranges->n < n)
		return g->ranges->n++;
	for (int pass = 0; pass < 3 && best < 0; pass++)
		for (int i = 0; i < n; i++)
			if ((pass == 2 || (pass == 1 && g->ranges->e[i].kind == 's') ||
			     !g->ranges->e[i].in_prologue) &&
			    (best < 0 || g->ranges->e[i].end < g->ranges->e[best].end))
				best = i;
	return best;
}

/* Records a range for range_cached: read e (of node g->node, kind k) over
** [j0, j1) has min mn and max mx, in code ending at `end`. */
static void range_note(KernelGen *g, const Expr *e, int k, PReg mn, PReg mx, PReg j0, PReg j1,
		       int end, int in_prologue, int whole)
{
	RangeEntry *c = &g->ranges->e[range_slot(g)];
	c->e = e, c->node = g->node, c->kind = k, c->mn = mn, c->mx = mx;
	c->j0 = j0, c->j1 = j1, c->end = end, c->in_prologue = in_prologue, c->whole = whole;
}

/* The interval of an i32 read over range k of the tile, with s32 bounds
** (callers widen them where needed): computed once where it can be reused
** (see range_cached). */
GpuInterval gpu_range_read(KernelGen *g, const Expr *e, int k)
{
	PReg mn, mx;
	int whole;
	int cached = range_cached(g, e, k, &mn, &mx, &whole);
	g->lane_local |= k == 's' && !whole;
	if (!cached) {
		int start = g->f->ncode, end;
		range_compute(g, e, k, &mn, &mx);
		end = g->f->ncode;
		int pro = start <= gpu_prologue_end(g->f) || g->ranges->ahead,
		    p = gpu_prologue_end(g->f);
		if (!pro && k == 'q' && (end = gpu_hoist(g->f, start)) >= 0) {
			pro = 1;
			for (int i = 0; i < g->ranges->n; i++)
				if (g->ranges->e[i].end > p)
					g->ranges->e[i].end += end - p;
		} else if (!pro)
			end = g->f->ncode;
		range_note(g, e, k, mn, mx, g->j0, g->j1, end, pro, 0);
	}
	return (GpuInterval){mn, mx, 1, 1};
}

/* A key read whose subscripts hold the key only as the bare key index
** (doc[b, j]): its address steps by one stride per key. */
static int key_plain(KernelGen *g, const Expr *e)
{
	for (int i = 0; i < e->nargs; i++) {
		const Expr *a = e->args[i];
		if (a->kind == EX_INDEX && gpu_index_kind(g, a->var) == 's')
			continue;
		if (subscript_range(g, a, 0) != 0)
			return 0;
	}
	return 1;
}

/* A lane's walk over a plain key read e from key st: x0 = st + lane (its
** first key) and x1 = x0 + 1 into the caller's registers, the address of
** key x0 (returned), stride = 32 keys' bytes, and lim32 = sext - x0 as
** s32 (dims are below 2^31; made here where the caller has none yet). */
static PReg key_lane_walk(KernelGen *g, const Expr *e, PReg st, PReg x0, PReg x1, PReg stride,
			  PReg lim, PReg *lim32)
{
	PReg col = g->col;
	gpu_op3(g, PTX_ADD, ".s64", po_r(x0), po_r(st), po_r(g->lane));
	gpu_op3(g, PTX_ADD, ".s64", po_r(x1), po_r(x0), po_i(1));
	g->col = x0;
	PReg a0 = gpu_addr(g, e->tensor, e->args);
	g->col = x1;
	PReg a1 = gpu_addr(g, e->tensor, e->args);
	g->col = col;
	gpu_op3(g, PTX_SUB, ".s64", po_r(stride), po_r(a1), po_r(a0));
	gpu_op3(g, PTX_SHL, ".b64", po_r(stride), po_r(stride), po_i(5));
	if (!lim32->n)
		*lim32 = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SUB, ".s64", po_r(lim), po_r(g->sext), po_r(x0));
	gpu_op2(g, PTX_CVT, ".s32.s64", po_r(*lim32), po_r(lim));
	return a0;
}

/* Loads a lane makes at most for key_ranges_plain: 32 tiles of 64 keys. */
enum { PLAIN_LOADS = 2 * 32 };

/* The ranges of plain key read e over n consecutive tiles from st[0]: the
** lane's element addresses step by 32 keys' stride, so each of its bn / 32
** loads per tile costs an add, and all loads come before any min or max. */
static void key_ranges_plain(KernelGen *g, const Expr *e, const PReg *st, const PReg *end, int n)
{
	int per = g->bn / 32;
	PReg x0 = gpu_reg(g, PC_B64), x1 = gpu_reg(g, PC_B64), stride = gpu_reg(g, PC_B64),
	     lim = gpu_reg(g, PC_B64), in[PLAIN_LOADS], w[PLAIN_LOADS], a = {0, 0};
	/* element k (key x0 + 32 k) exists where 32 k < sext - x0; tested again
	** at its min and max, so that no predicate is live across the loads */
	PReg lim32 = {0, 0};
	PReg a0 = key_lane_walk(g, e, st[0], x0, x1, stride, lim, &lim32);
	for (int k = 0; k < per * n; k++) {
		PReg ak = a0;
		if (k) {
			ak = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_ADD, ".s64", po_r(ak), po_r(a), po_r(stride));
		}
		a = ak;
		in[k] = gpu_reg(g, PC_PRED), w[k] = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_SETP, ".gt.s32", po_r(in[k]), po_r(lim32), po_i(32 * k));
		gpu_op2(g, PTX_LD, ".global.nc.s32", po_r(w[k]), po_mem(ak, 0));
		ptx_guard(g->f, in[k], 0);
	}
	for (int u = 0; u < n; u++) {
		PReg mn = gpu_reg(g, PC_B32), mx = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_MOV, ".b32", po_r(mn), po_i(INT32_MAX));
		gpu_op2(g, PTX_MOV, ".b32", po_r(mx), po_i(INT32_MIN));
		for (int k = per * u; k < per * u + per; k++) {
			in[k] = gpu_reg(g, PC_PRED);
			gpu_op3(g, PTX_SETP, ".gt.s32", po_r(in[k]), po_r(lim32), po_i(32 * k));
			gpu_op3(g, PTX_MIN, ".s32", po_r(mn), po_r(mn), po_r(w[k]));
			ptx_guard(g->f, in[k], 0);
			gpu_op3(g, PTX_MAX, ".s32", po_r(mx), po_r(mx), po_r(w[k]));
			ptx_guard(g->f, in[k], 0);
		}
		range_note(g, e, 's', mn, mx, st[u], end[u], g->f->ncode,
			   g->f->ncode <= gpu_prologue_end(g->f), 0);
	}
}

/* The ranges over the CTA's rows of the reads in e (doc[b, i]), cached. */
static void row_ranges(KernelGen *g, const Expr *e)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && e->type == VT_INT && !e->tensor->def &&
	    gpu_read_range(g, e) == 'q') {
		gpu_range_read(g, e, 'q');
		return;
	}
	for (int i = 0; i < e->nargs; i++)
		row_ranges(g, e->args[i]);
}

/* The rows' ranges before a loop that would compute them per pass: a
** producer's scan refills its window inside its loop, and the kernel's
** prologue, where gpu_hoist would move them, does not dominate it. */
void gpu_row_ranges_ahead(KernelGen *g, int node)
{
	int save = g->node;
	g->ranges->ahead = 1;
	g->node = node;
	row_ranges(g, ((const Node *)g->p->c->nodes.v[node])->filter);
	g->ranges->ahead = 0;
	g->node = save;
}

/* key_ranges_lanes through shared memory: the lanes copy the ids of the
** warp's 32 tiles with cp.async (coalesced, as the loads were), one tile to
** 272 bytes (16 of padding: lane l's 16-byte reads of tile l then fall in
** eight bank groups), then each lane reads its own tile back and takes its
** range. With registers as the loads' destinations ptxas placed the first
** tiles' min and max between the loads, and the loads after them waited
** for the first ones' data: the table took several times as long as the
** CTA's Q. The rows' ranges go between the copies and the wait, their
** loads in flight with them. The copies are the target's (copy4_async). */
static void key_ranges_staged(KernelGen *g, const Expr *e, PReg st, PReg su, PReg eu)
{
	enum { T = 32, TS = GPU_IDSTAGE_TILE };
	PReg x0 = gpu_reg(g, PC_B64), x1 = gpu_reg(g, PC_B64), stride = gpu_reg(g, PC_B64),
	     lim = gpu_reg(g, PC_B64), lim32 = gpu_reg(g, PC_B32), a = {0, 0},
	     wb32 = gpu_reg(g, PC_B32), sl = gpu_reg(g, PC_B32), rd = gpu_reg(g, PC_B32),
	     n = gpu_reg(g, PC_B64), n32 = gpu_reg(g, PC_B32);
	PReg a0 = key_lane_walk(g, e, st, x0, x1, stride, lim, &lim32);
	PReg w32 = gpu_reg(g, PC_B32), l32 = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(w32), po_r(g->warp));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(l32), po_r(g->lane));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(wb32), po_r(w32), po_i(T * TS), po_r(g->ids.base));
	gpu_op3(g, PTX_ADD, ".u32", po_r(wb32), po_r(wb32), po_i((int64_t)g->ids.off));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sl), po_r(l32), po_i(4), po_r(wb32));
	for (int k = 0; k < 2 * T; k++) {
		PReg ak = a0, in = gpu_reg(g, PC_PRED);
		if (k) {
			ak = gpu_reg(g, PC_B64);
			gpu_op3(g, PTX_ADD, ".s64", po_r(ak), po_r(a), po_r(stride));
		}
		a = ak;
		gpu_op3(g, PTX_SETP, ".gt.s32", po_r(in), po_r(lim32), po_i(32 * k));
		g->t->copy4_async(g, po_mem(sl, (int32_t)((k / 2) * TS + (k % 2) * 128)),
				  po_mem(ak, 0));
		ptx_guard(g->f, in, 0);
	}
	g->t->copy_commit(g);
	int later = 0;
	if (g->ids.after) {
		g->ids.after(g);
		g->ids.after = NULL;
		later = 1;
	}
	row_ranges(g, ((const Node *)g->p->c->nodes.v[g->node])->filter);
	g->t->copy_wait(g, later);
	gpu_op1(g, PTX_BAR_WARP, "", po_i(-1));
	/* the lane's tile: its keys that exist, n = min(max(sext - su, 0), 64) */
	gpu_op3(g, PTX_SUB, ".s64", po_r(n), po_r(g->sext), po_r(su));
	gpu_op3(g, PTX_MAX, ".s64", po_r(n), po_r(n), po_i(0));
	gpu_op3(g, PTX_MIN, ".s64", po_r(n), po_r(n), po_i(g->bn));
	gpu_op2(g, PTX_CVT, ".s32.s64", po_r(n32), po_r(n));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(rd), po_r(l32), po_i(TS), po_r(wb32));
	PReg mn = gpu_reg(g, PC_B32), mx = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b32", po_r(mn), po_i(INT32_MAX));
	gpu_op2(g, PTX_MOV, ".b32", po_r(mx), po_i(INT32_MIN));
	for (int c = 0; c < g->bn / 4; c++) {
		PReg w[4] = {gpu_reg(g, PC_B32), gpu_reg(g, PC_B32), gpu_reg(g, PC_B32),
			     gpu_reg(g, PC_B32)};
		gpu_op2(g, PTX_LD, ".shared.v4.s32", po_vec(w, 4), po_mem(rd, 16 * c));
		for (int i = 0; i < 4; i++) {
			PReg in = gpu_reg(g, PC_PRED);
			gpu_op3(g, PTX_SETP, ".gt.s32", po_r(in), po_r(n32), po_i(4 * c + i));
			gpu_op3(g, PTX_MIN, ".s32", po_r(mn), po_r(mn), po_r(w[i]));
			ptx_guard(g->f, in, 0);
			gpu_op3(g, PTX_MAX, ".s32", po_r(mx), po_r(mx), po_r(w[i]));
			ptx_guard(g->f, in, 0);
		}
	}
	range_note(g, e, 's', mn, mx, su, eu, g->f->ncode, g->f->ncode <= gpu_prologue_end(g->f),
		   1);
}

typedef struct LaneRanges {
	PReg st, su, eu;
	int ok, n; /* all key reads plain; how many */
} LaneRanges;

static void lane_ranges(KernelGen *g, const Expr *e, LaneRanges *lr)
{
	if (!e)
		return;
	if (!is_key_read(g, e)) {
		for (int i = 0; i < e->nargs; i++)
			lane_ranges(g, e->args[i], lr);
		return;
	}
	if (!key_plain(g, e)) {
		lr->ok = 0;
		return;
	}
	lr->n++;
	if (!lr->st.n)
		return; /* the check only */
	PReg sj0 = g->j0, sj1 = g->j1, mn, mx;
	g->j0 = lr->su, g->j1 = lr->eu;
	int cached = range_cached(g, e, 's', &mn, &mx, NULL);
	g->j0 = sj0, g->j1 = sj1;
	if (!cached)
		key_ranges_staged(g, e, lr->st, lr->su, lr->eu);
}

/* lane_ranges over node's filter, in node's variables. */
static LaneRanges node_lane_ranges(KernelGen *g, int node, LaneRanges lr)
{
	int save = g->node;
	g->node = node;
	lane_ranges(g, ((const Node *)g->p->c->nodes.v[node])->filter, &lr);
	g->node = save;
	return lr;
}

int gpu_plain_key_reads(KernelGen *g, int node)
{
	LaneRanges lr = node_lane_ranges(g, node, (LaneRanges){{0, 0}, {0, 0}, {0, 0}, 1, 0});
	return lr.ok ? lr.n : -1;
}

void gpu_key_ranges_lanes(KernelGen *g, int node, PReg st, PReg su, PReg eu)
{
	node_lane_ranges(g, node, (LaneRanges){st, su, eu, 1, 0});
}

typedef struct KeyBatch {
	const PReg *st, *end;
	int n;
} KeyBatch;

static void key_batch(KernelGen *g, const Expr *e, const KeyBatch *kb)
{
	if (!e)
		return;
	if (!is_key_read(g, e)) {
		for (int i = 0; i < e->nargs; i++)
			key_batch(g, e->args[i], kb);
		return;
	}
	PReg sj0 = g->j0, sj1 = g->j1, mn, mx;
	g->j0 = kb->st[0], g->j1 = kb->end[0];
	int cached = range_cached(g, e, 's', &mn, &mx, NULL);
	g->j0 = sj0, g->j1 = sj1;
	if (cached)
		return;
	if (key_plain(g, e) && kb->n * (g->bn / 32) <= PLAIN_LOADS) {
		key_ranges_plain(g, e, kb->st, kb->end, kb->n);
		return;
	}
	for (int u = 0; u < kb->n; u++) {
		g->j0 = kb->st[u], g->j1 = kb->end[u];
		gpu_range_read(g, e, 's');
	}
	g->j0 = sj0, g->j1 = sj1;
}

void gpu_key_ranges(KernelGen *g, int node, const PReg *st, const PReg *end, int n)
{
	int save = g->node;
	KeyBatch kb = {st, end, n};
	g->node = node;
	key_batch(g, ((const Node *)g->p->c->nodes.v[node])->filter, &kb);
	g->node = save;
}
