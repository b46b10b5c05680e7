/*
** lowering/gpu/parts.c: the entry of partial states, NAME_fwd_part. The
** same kernel as NAME_fwd, over the keys [kr0, kr1) and the query rows
** [qr0, qr1) of a launch, whose CTAs may split their keys further along
** the grid's z (split-KV, Flash-Decoding) and carry their running states
** across launches (context parallelism: one launch per K/V shard). The
** plan's merge rule (docs/compiler.md §5) combines the states: maxes by
** max, sums rebased on references by rho(r_a, r) a + rho(r_b, r) b.
**
** Every thread keeps its states in registers in the accumulators' layout,
** and the same thread of the same CTA holds the same rows in every part
** and every launch of one grid, so that a state is stored and merged
** thread by thread with no knowledge of the layout: part z of CTA c keeps
** state register r of consumer thread t at
**   ws[((z * ncta + c) * nregs + r) * nthreads + t]   (f32),
** a coalesced row of nthreads floats per register. The split's parts meet
** per warp, not per CTA: each warp of each part stores its states,
** fences, and takes a ticket from its own counter (cnt[c * nwarps + w],
** u32, zeroed by the launcher before each launch; after them a claim word
** per CTA where the CTAs claim key tiles, claims.c); the warp that takes the
** last one merges the others' states and goes on; the others return. No CTA
** barrier is involved, so the epilogue (which has none) runs per warp;
** except that where query heads are packed (decode) the rowless warps of
** the first warpgroup help warp 0 merge, at a named barrier (Help).
** Parameters, after the magic ones (before any tensor map):
**   kr0, kr1, kchunk (s64): the launch's keys, and keys per part (z);
**                           kr0 and kchunk multiples of GPU_BN
**   qr0, qr1 (s64):         the launch's query rows (grid x from qr0)
**   ws, cnt (u64):          the split's workspace and counters (nz > 1)
**   st (u64):               the states carried across launches (or 0)
**   mode (u32):             GPU_PART_MERGE_IN: merge st's states in;
**                           GPU_PART_FINALIZE: run the epilogue (else
**                           store the states to st)
*/
#include <math.h>

#include "gpu.h"

/* The state registers of a node, or 0: row states per row slot, and the
** output accumulators (the epilogue's net = DV / 8 n8 tiles per block). */
static int node_regs(const KernelGen *g, int i)
{
	ShapeNodeKind k = g->s->node[i].kind;
	if (k == SN_RMAX || k == SN_RSUM || k == SN_REF)
		return 2 * g->row_blocks;
	if (k == SN_GEMM2)
		return (int)(g->row_blocks * g->s->DV / 8 * 4);
	return 0;
}

int gpu_part_regs(const KernelGen *g)
{
	int n = 0;
	for (int i = 0; i < g->c->nodes.n; i++)
		n += node_regs(g, i);
	return n;
}

/* State register r of node i at element k of that node. */
static PReg *state_reg(KernelGen *g, int i, int k)
{
	return g->s->node[i].kind == SN_GEMM2 ? &g->acc[i][k] : &g->rowv[i][k];
}

/* The byte address of this thread's first state register in slot `slot`
** (z * ncta + cta) of the array at base; registers follow nthreads * 4
** bytes apart. */
static PReg slot_addr_at(KernelGen *g, PReg base, PReg slot, PReg tid)
{
	int nthr = gpu_warps(g->t) * 32;
	PReg a = gpu_reg(g, PC_B64), t = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(t), po_r(slot), po_i((int64_t)gpu_part_regs(g) * nthr));
	gpu_op3(g, PTX_ADD, ".s64", po_r(t), po_r(t), po_r(tid));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(t), po_i(4), po_r(base));
	return a;
}

static PReg slot_addr(KernelGen *g, PReg base, PReg slot)
{
	return slot_addr_at(g, base, slot, gpu_tid(g));
}

/* Every state register of the rows rowok to the slot at a (store), or
** from it (the others keep what they hold). */
static void move_states(KernelGen *g, PReg a, const PReg *rowok, int store)
{
	int stride = gpu_warps(g->t) * 32 * 4, r = 0, net = (int)(g->s->DV / 8);
	for (int i = 0; i < g->c->nodes.n; i++)
		for (int k = 0; k < node_regs(g, i); k++, r++) {
			int h = g->s->node[i].kind == SN_GEMM2 ? gpu_acc_rs(net, k) : k;
			if (store)
				gpu_op2(g, PTX_ST, ".global.f32", po_mem(a, r * stride),
					po_r(*state_reg(g, i, k)));
			else
				gpu_op2(g, PTX_LD, ".global.f32", po_r(*state_reg(g, i, k)),
					po_mem(a, r * stride));
			ptx_guard(g->f, rowok[h], 0);
		}
}

/* Slots a merge takes at once (merge_width): the loads of every slot
** are issued before the first of them is used, so that the round costs one
** trip to the L2, not one per slot and kind of state. As many slots as fit
** beside the thread's own states in GPU_MERGE_REGS registers (a decode
** kernel's 70 state registers: two; head dim 64's 38: four), at most
** GPU_MERGE_SLOTS. */
enum { GPU_MERGE_REGS = 224, GPU_MERGE_SLOTS = 4 };

static int merge_width(const KernelGen *g)
{
	int regs = gpu_part_regs(g), u = regs ? (GPU_MERGE_REGS - regs) / regs : 1;
	return u < 1 ? 1 : u > GPU_MERGE_SLOTS ? GPU_MERGE_SLOTS : u;
}

/* Load predicates of slot j's row slots: the slot is valid (where valid is
** given) and the row is the CTA's (rowok): a warp's rows past the
** launch's (decode's packed heads: four or eight of sixteen) are neither
** stored nor loaded. */
static PReg *slot_preds(KernelGen *g, const PReg *valid, int j, const PReg *rowok)
{
	int nrs = 2 * g->row_blocks;
	PReg *ok = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
	for (int h = 0; h < nrs; h++) {
		ok[h] = rowok[h];
		if (valid) {
			ok[h] = gpu_reg(g, PC_PRED);
			gpu_op3(g, PTX_AND, ".pred", po_r(ok[h]), po_r(rowok[h]), po_r(valid[j]));
		}
	}
	return ok;
}

/* An accumulator of a slot at a + off, or zero where ok is false. */
static PReg load_acc(KernelGen *g, PReg a, int off, PReg ok)
{
	PReg x = gpu_reg(g, PC_F32);
	gpu_op2(g, PTX_MOV, ".f32", po_r(x), po_f(0.0f));
	gpu_op2(g, PTX_LD, ".global.f32", po_r(x), po_mem(a, off));
	ptx_guard(g->f, ok, 0);
	return x;
}

/* The states of the u slots at a[j] merged into the registers by the
** plan's merge rule: maxes first (their old values kept for rho),
** references built from maxes computed again from the merged ones, then
** every sum rebased on references scaled from its own references and the
** loaded ones to the merged ones and added. Every slot's loads come first
** (accumulators where they fit).
** A slot that is not valid[j], and a row that is not rowok, loads nothing:
** its references stay the thread's own (a max with itself, rho finite)
** and its sums add zero. */
static void merge_slots(KernelGen *g, TileState *t, const PReg *a, const PReg *valid, int u,
			const PReg *rowok)
{
	int n = g->c->nodes.n, nrs = 2 * g->row_blocks, net = (int)(g->s->DV / 8);
	int stride = gpu_warps(g->t) * 32 * 4;
	PReg **old = ARENA_ARRAY(g->a, PReg *, n + 1);
	PReg ***in = ARENA_ARRAY(g->a, PReg **, u), ***acc = ARENA_ARRAY(g->a, PReg **, u),
	     **ok = ARENA_ARRAY(g->a, PReg *, u);
	int *at = ARENA_ARRAY(g->a, int, n + 1);
	for (int i = 0, r = 0; i < n; i++) {
		at[i] = r;
		r += node_regs(g, i);
	}
	for (int j = 0; j < u; j++) {
		ok[j] = slot_preds(g, valid, j, rowok);
		in[j] = ARENA_ARRAY(g->a, PReg *, n + 1);
		acc[j] = ARENA_ARRAY(g->a, PReg *, n + 1);
		for (int i = 0; i < n; i++) {
			ShapeNodeKind k = g->s->node[i].kind;
			if (k != SN_RMAX && k != SN_RSUM && k != SN_REF)
				continue;
			in[j][i] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
			for (int h = 0; h < nrs; h++) {
				in[j][i][h] = gpu_reg(g, PC_F32);
				gpu_op2(g, PTX_MOV, ".f32", po_r(in[j][i][h]), po_r(g->rowv[i][h]));
				gpu_op2(g, PTX_LD, ".global.f32", po_r(in[j][i][h]),
					po_mem(a[j], (at[i] + h) * stride));
				ptx_guard(g->f, ok[j][h], 0);
			}
		}
	}
	/* the accumulators up front where they fit beside the thread's own,
	** else each just before it is added (no second set of them live) */
	int early = (u + 1) * gpu_part_regs(g) <= GPU_MERGE_REGS;
	for (int j = 0; j < u; j++)
		for (int i = 0; i < n; i++) {
			if (g->s->node[i].kind != SN_GEMM2)
				continue;
			acc[j][i] = ARENA_ARRAY(g->a, PReg, node_regs(g, i));
			for (int e = 0; e < node_regs(g, i) && early; e++)
				acc[j][i][e] = load_acc(g, a[j], (at[i] + e) * stride,
							ok[j][gpu_acc_rs(net, e)]);
		}
	for (int i = 0; i < n; i++) {
		ShapeNodeKind k = g->s->node[i].kind;
		if (k != SN_RMAX && k != SN_RSUM && k != SN_REF)
			continue;
		old[i] = ARENA_ARRAY(g->a, PReg, GPU_MAXRS);
		for (int h = 0; h < nrs; h++) {
			old[i][h] = gpu_reg(g, PC_F32);
			gpu_op2(g, PTX_MOV, ".f32", po_r(old[i][h]), po_r(g->rowv[i][h]));
		}
	}
	for (int i = 0; i < n; i++)
		if (g->s->node[i].kind == SN_RMAX)
			for (int j = 0; j < u; j++)
				for (int h = 0; h < nrs; h++)
					gpu_op3(g, PTX_MAX, ".f32", po_r(g->rowv[i][h]),
						po_r(g->rowv[i][h]), po_r(in[j][i][h]));
	gpu_expr_forget(g, 1);
	for (int i = 0; i < n; i++)
		if (g->s->node[i].kind == SN_REF)
			for (int h = 0; h < nrs; h++) {
				g->node = i, g->half = h, g->row = t->crows[h];
				PReg v = gpu_expr(g, gpu_node(g, i)->body);
				gpu_op2(g, PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
	for (int i = 0; i < n; i++) {
		ShapeNodeKind k = g->s->node[i].kind;
		if (k != SN_RSUM && k != SN_GEMM2)
			continue;
		const Running *run = &g->p->np[i].run;
		/* theirs[j * GPU_MAXRS + h]: slot j's factor for row slot h */
		PReg mine[GPU_MAXRS], *theirs = ARENA_ARRAY(g->a, PReg, u * GPU_MAXRS);
		for (int h = 0; h < nrs; h++) {
			mine[h] = gpu_rho(g, run, old, g->rowv, h);
			for (int j = 0; j < u; j++)
				theirs[j * GPU_MAXRS + h] = gpu_rho(g, run, in[j], g->rowv, h);
		}
		for (int e = 0; e < node_regs(g, i); e++) {
			int h = k == SN_RSUM ? e : gpu_acc_rs(net, e);
			PReg *s = state_reg(g, i, e);
			gpu_op3(g, PTX_MUL, ".f32", po_r(*s), po_r(*s), po_r(mine[h]));
			for (int j = 0; j < u; j++) {
				PReg x = k == SN_RSUM ? gpu_reg(g, PC_F32)
					 : early
					     ? acc[j][i][e]
					     : load_acc(g, a[j], (at[i] + e) * stride, ok[j][h]);
				if (k == SN_RSUM)
					gpu_op4(g, PTX_SELP, ".f32", po_r(x), po_r(in[j][i][e]),
						po_f(0.0f), po_r(ok[j][h]));
				gpu_op4(g, PTX_FMA, ".rn.f32", po_r(*s), po_r(x),
					po_r(theirs[j * GPU_MAXRS + h]), po_r(*s));
			}
		}
	}
	/* this code runs on some paths only: nothing it computed may be reused */
	gpu_expr_forget(g, 0);
}

/* Where a row's parts meet (b64): nz parts, this one z; part k's states
** in slot base + k stride. Split-KV: the grid's z, slot z ncta + cta;
** stream-K: the CTA's part of row cta (streamk.c), slots side by side. */
typedef struct Meet {
	PReg nz, z, base, stride;
} Meet;

static PReg wide(KernelGen *g, PReg x)
{
	PReg r = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r), po_r(x));
	return r;
}

static Meet meet_of(KernelGen *g, PReg cta)
{
	Meet m;
	if (g->s->streamk) {
		GpuSkPart pt;
		gpu_streamk_part(g, &pt);
		m.nz = wide(g, pt.nparts), m.z = wide(g, pt.z), m.base = wide(g, pt.base);
		m.stride = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_MOV, ".b64", po_r(m.stride), po_i(1));
		return m;
	}
	m.nz = gpu_special(g, "%nctaid.z"), m.z = gpu_special(g, "%ctaid.z");
	m.stride = gpu_reg(g, PC_B64), m.base = cta;
	PReg nx = gpu_special(g, "%nctaid.x"), ny = gpu_special(g, "%nctaid.y");
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(m.stride), po_r(nx), po_r(ny));
	return m;
}

/* Warps that help warp 0 merge, in a kernel of packed query heads: a
** decode CTA holds its group's 4 or 8 rows in warp 0, and its other warps
** hold none. Where the last of more than HELP_WARPS parts meets, the first
** warpgroup's rowless warps (1 to 3; present at the meeting on every
** target) take every R-th part each (R: they and warp 0), warp 0 the rest,
** and warp 0 merges their partial states: one warp's serial merge of 15
** parts was about 5 us of a 50 us decode at batch 1 on an H200. Warp 0
** tells them whether its part was the last by a word it writes before a
** barrier (GpuTarget.meet_bar: help_word); each helper's partial state goes
** to the slot of its first part, which it alone reads. on == 0: no helpers
** (other kernels, stream-K, a target without the barrier: helpers_wanted). */
typedef struct Help {
	int on;
	PReg n;     /* b64: the helpers, 0 to HELP_WARPS - 1 */
	PReg R;     /* b64: n + 1, the warps that merge */
	PReg count; /* b32: 32 R, the meeting barrier's threads */
	PReg lead;  /* pred: this warp is warp 0 and has helpers */
	PReg me;    /* pred: this warp helps */
	PReg idx;   /* b64: a helper's index, 1 .. n */
} Help;

enum { HELP_WARPS = 4 };

/* Not where K and V rows are gathered (paged decode): with the helpers'
** paths, a warp-specialised target's consumers, which keep fewer
** registers beside a gathering producer, spilled one. Nor where the CTA's
** warps are slices over the same rows (KernelShape.cta_slices): each
** slice's warp 0 merges its own states, and one meeting barrier and word
** per CTA would serve both. */
static int helpers_wanted(const KernelGen *g)
{
	return g->s->pack && !g->s->streamk && !g->s->gathers && g->t->meet_bar &&
	       g->s->cta_slices == 1;
}

static Help help_of(KernelGen *g, PReg nz)
{
	Help h = {0};
	h.on = 1;
	int rpw = 16 * g->row_blocks;
	PReg rows = gpu_reg(g, PC_B64), nw = gpu_reg(g, PC_B64), any = gpu_reg(g, PC_PRED),
	     split = gpu_reg(g, PC_PRED), some = gpu_reg(g, PC_PRED), a = gpu_reg(g, PC_PRED),
	     c = gpu_reg(g, PC_PRED), t = gpu_reg(g, PC_B64);
	/* nw: the warps with rows, ceil((qext - q0) / rpw) */
	gpu_op3(g, PTX_SUB, ".s64", po_r(rows), po_r(g->qext), po_r(g->q0));
	gpu_op3(g, PTX_MAX, ".s64", po_r(rows), po_r(rows), po_i(0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(nw), po_r(rows), po_i(rpw - 1));
	gpu_op3(g, PTX_SHR, ".u64", po_r(nw), po_r(nw), po_i(gpu_log2(rpw)));
	h.n = gpu_reg(g, PC_B64), h.R = gpu_reg(g, PC_B64), h.count = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SUB, ".s64", po_r(h.n), po_i(HELP_WARPS), po_r(nw));
	gpu_op3(g, PTX_MAX, ".s64", po_r(h.n), po_r(h.n), po_i(0));
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(any), po_r(nw), po_i(1));
	/* more parts than warps that would merge them: at 2 parts (8 x 8k) a
	** helper's partial cost warp 0 a second round trip (+1 us) */
	gpu_op3(g, PTX_SETP, ".gt.s64", po_r(split), po_r(nz), po_i(HELP_WARPS));
	gpu_op3(g, PTX_AND, ".pred", po_r(any), po_r(any), po_r(split));
	gpu_op4(g, PTX_SELP, ".b64", po_r(h.n), po_r(h.n), po_i(0), po_r(any));
	gpu_op3(g, PTX_ADD, ".s64", po_r(h.R), po_r(h.n), po_i(1));
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(t), po_r(h.R), po_i(32));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(h.count), po_r(t));
	gpu_op3(g, PTX_SETP, ".gt.s64", po_r(some), po_r(h.n), po_i(0));
	h.lead = gpu_reg(g, PC_PRED), h.me = gpu_reg(g, PC_PRED), h.idx = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SETP, ".eq.s64", po_r(a), po_r(g->warp), po_i(0));
	gpu_op3(g, PTX_AND, ".pred", po_r(h.lead), po_r(a), po_r(some));
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(a), po_r(g->warp), po_r(nw));
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(c), po_r(g->warp), po_i(HELP_WARPS));
	gpu_op3(g, PTX_AND, ".pred", po_r(h.me), po_r(a), po_r(c));
	gpu_op3(g, PTX_AND, ".pred", po_r(h.me), po_r(h.me), po_r(some));
	gpu_op3(g, PTX_SUB, ".s64", po_r(h.idx), po_r(g->warp), po_r(nw));
	gpu_op3(g, PTX_ADD, ".s64", po_r(h.idx), po_r(h.idx), po_i(1));
	return h;
}

/* Parts first, first + step, ... below nz merged into the registers,
** merge_width of them a round, part z (the registers' own) not loaded;
** the slots at thread index tid. step {0, 0}: 1. */
static void merge_parts(KernelGen *g, TileState *t, Meet m, PReg tid, PReg first, PReg step,
			const PReg *rowok)
{
	int u = merge_width(g);
	PReg ws = gpu_part_param(g, GPU_PART_WS), zz = gpu_reg(g, PC_B64),
	     fin = gpu_reg(g, PC_PRED);
	PReg *addr = ARENA_ARRAY(g->a, PReg, u), *valid = ARENA_ARRAY(g->a, PReg, u);
	int Lloop = ptx_new_label(g->f), Lend = ptx_new_label(g->f);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zz), po_r(first));
	ptx_label(g->f, Lloop);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(fin), po_r(zz), po_r(m.nz));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lend));
	ptx_guard(g->f, fin, 0);
	for (int j = 0; j < u; j++) {
		PReg zj = gpu_reg(g, PC_B64), s2 = gpu_reg(g, PC_B64), other = gpu_reg(g, PC_PRED);
		valid[j] = gpu_reg(g, PC_PRED);
		if (step.n)
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(zj), po_r(step), po_i(j), po_r(zz));
		else
			gpu_op3(g, PTX_ADD, ".s64", po_r(zj), po_r(zz), po_i(j));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(valid[j]), po_r(zj), po_r(m.nz));
		gpu_op3(g, PTX_SETP, ".ne.s64", po_r(other), po_r(zj), po_r(m.z));
		gpu_op3(g, PTX_AND, ".pred", po_r(valid[j]), po_r(valid[j]), po_r(other));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(s2), po_r(zj), po_r(m.stride), po_r(m.base));
		addr[j] = slot_addr_at(g, ws, s2, tid);
	}
	merge_slots(g, t, addr, valid, u, rowok);
	if (step.n)
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(zz), po_r(step), po_i(u), po_r(zz));
	else
		gpu_op3(g, PTX_ADD, ".s64", po_r(zz), po_r(zz), po_i(u));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lloop));
	ptx_label(g->f, Lend);
}

/* The word where the last part's warp 0 leaves z + 1 for its helpers
** (b64 address): the counter of warp HELP_WARPS - 1, which takes no ticket
** where there are helpers (it has no rows); zeroed with the counters. */
static PReg help_word(KernelGen *g, Meet m)
{
	PReg a = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(m.base), po_i(gpu_warps(g->t)),
		po_i(HELP_WARPS - 1));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(a), po_i(4),
		po_r(gpu_part_param(g, GPU_PART_CNT)));
	return a;
}

/* A helper's first part: its index r, or r + R where r is the last part
** (z, warp 0's own); b64. */
static PReg help_first(KernelGen *g, const Help *h, Meet m, PReg r)
{
	PReg f = gpu_reg(g, PC_B64), f2 = gpu_reg(g, PC_B64), isz = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, ".eq.s64", po_r(isz), po_r(r), po_r(m.z));
	gpu_op3(g, PTX_ADD, ".s64", po_r(f2), po_r(r), po_r(h->R));
	gpu_op4(g, PTX_SELP, ".b64", po_r(f), po_r(f2), po_r(r), po_r(isz));
	return f;
}

/* A helper's share of the merge (after the meeting's first barrier, its
** part the last): its parts, from its first, every R-th, merged in warp
** 0's thread layout and rows and stored to its first part's slot. */
static void help_merge(KernelGen *g, Meet m, const Help *h)
{
	/* warp 0's rows and its lane's thread index */
	TileState t0;
	PReg warp = g->warp, row0[2] = {g->row0[0], g->row0[1]}, zero = gpu_reg(g, PC_B64),
	     lane = gpu_reg(g, PC_B64), ok0[GPU_MAXRS];
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	g->warp = zero;
	gpu_tile_rows(g, &t0);
	g->warp = warp;
	for (int i = 0; i < 2 * g->row_blocks; i++) {
		ok0[i] = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(ok0[i]), po_r(t0.rows[i]), po_r(g->qext));
	}
	gpu_op3(g, PTX_AND, ".b64", po_r(lane), po_r(gpu_tid(g)), po_i(31));
	PReg f = help_first(g, h, m, h->idx), has = gpu_reg(g, PC_PRED), slot = gpu_reg(g, PC_B64),
	     next = gpu_reg(g, PC_B64);
	int Lnone = ptx_new_label(g->f);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(has), po_r(f), po_r(m.nz));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lnone));
	ptx_guard(g->f, has, 1);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(slot), po_r(f), po_r(m.stride), po_r(m.base));
	PReg a = slot_addr_at(g, gpu_part_param(g, GPU_PART_WS), slot, lane);
	move_states(g, a, ok0, 0);
	gpu_op3(g, PTX_ADD, ".s64", po_r(next), po_r(f), po_r(h->R));
	merge_parts(g, &t0, m, lane, next, h->R, ok0);
	move_states(g, a, ok0, 1);
	ptx_label(g->f, Lnone);
	g->row0[0] = row0[0], g->row0[1] = row0[1];
}

/* The split's meeting, per warp: this part's states to the workspace, a
** ticket from the warp's counter, and for the last part's warp the others'
** states merged in, merge_width of them a round (the rest leave). With
** helpers (Help), warp 0 and they meet at two barriers, each one
** instruction that all of them execute (compute-sanitizer's synccheck
** rejects the same barrier reached from two places): the first after warp
** 0's word, the second after their shares; warp 0 then merges theirs. */
static void split_meet(KernelGen *g, TileState *t, PReg cta, Meet m, const PReg *rowok,
		       const Help *h)
{
	PReg nz = m.nz, z = m.z, ncta = m.stride, slot = gpu_reg(g, PC_B64);
	PReg ws = gpu_part_param(g, GPU_PART_WS), last = gpu_reg(g, PC_PRED);
	int Lticket = ptx_new_label(g->f);
	if (h->on) {
		/* a helper has no part of its own to store or count */
		gpu_op2(g, PTX_MOV, ".pred", po_r(last), po_r(gpu_pconst(g, 0)));
		gpu_op1(g, PTX_BRA, ".uni", po_label(Lticket));
		ptx_guard(g->f, h->me, 0);
	}
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(slot), po_r(z), po_r(ncta), po_r(m.base));
	move_states(g, slot_addr(g, ws, slot), rowok, 1);
	gpu_op0(g, PTX_FENCE, ".acq_rel.gpu");
	gpu_op1(g, PTX_BAR_WARP, "", po_i(-1));
	/* lane 0 takes the ticket; every lane learns it */
	PReg cnt = gpu_part_param(g, GPU_PART_CNT), ca = gpu_reg(g, PC_B64), w = gpu_reg(g, PC_B64),
	     tk = gpu_reg(g, PC_B32), lead = gpu_reg(g, PC_PRED);
	/* lane and warp of our own: g->lane and g->warp, which the epilogue
	** reads, must keep the values every path gives them */
	PReg tid = gpu_tid(g), lane = gpu_reg(g, PC_B64), warp = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_AND, ".b64", po_r(lane), po_r(tid), po_i(31));
	gpu_op3(g, PTX_SHR, ".u64", po_r(warp), po_r(tid), po_i(5));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(w), po_r(cta), po_i(gpu_warps(g->t)), po_r(warp));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(ca), po_r(w), po_i(4), po_r(cnt));
	gpu_op2(g, PTX_MOV, ".b32", po_r(tk), po_i(0));
	gpu_op3(g, PTX_SETP, ".eq.s64", po_r(lead), po_r(lane), po_i(0));
	gpu_op3(g, PTX_ATOM, ".acq_rel.gpu.global.add.u32", po_r(tk), po_mem(ca, 0), po_i(1));
	ptx_guard(g->f, lead, 0);
	PReg tka = gpu_reg(g, PC_B32), nz1 = gpu_reg(g, PC_B32);
	gpu_op5(g, PTX_SHFL_IDX, ".b32", po_r(tka), po_r(tk), po_i(0), po_i(31), po_i(-1));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(nz1), po_r(nz));
	gpu_op3(g, PTX_SUB, ".u32", po_r(nz1), po_r(nz1), po_i(1));
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(last), po_r(tka), po_r(nz1));
	/* the last ticket's lane 0 puts the counter back to zero: every part
	** has counted, so that the next launch finds it zeroed */
	PReg clear = gpu_reg(g, PC_PRED), zero32 = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_AND, ".pred", po_r(clear), po_r(last), po_r(lead));
	gpu_op2(g, PTX_MOV, ".b32", po_r(zero32), po_i(0));
	gpu_op2(g, PTX_ST, ".relaxed.gpu.global.u32", po_mem(ca, 0), po_r(zero32));
	ptx_guard(g->f, clear, 0);
	if (g->s->claims) {
		/* and warp 0's, the row's claim word: every part's producer made
		** its last claim before its warp 0 took a ticket */
		PReg w0 = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".eq.s64", po_r(w0), po_r(warp), po_i(0));
		gpu_op3(g, PTX_AND, ".pred", po_r(w0), po_r(w0), po_r(clear));
		gpu_op2(g, PTX_ST, ".relaxed.gpu.global.u32", po_mem(gpu_claim_word(g, cta), 0),
			po_r(zero32));
		ptx_guard(g->f, w0, 0);
	}
	if (h->on) {
		/* warp 0's word to its helpers: z + 1 where its part is the last */
		PReg z1 = gpu_reg(g, PC_B32), say = gpu_reg(g, PC_PRED);
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(z1), po_r(z));
		gpu_op3(g, PTX_ADD, ".u32", po_r(z1), po_r(z1), po_i(1));
		gpu_op3(g, PTX_AND, ".pred", po_r(say), po_r(last), po_r(lead));
		gpu_op3(g, PTX_AND, ".pred", po_r(say), po_r(say), po_r(h->lead));
		gpu_op2(g, PTX_ST, ".relaxed.gpu.global.u32", po_mem(help_word(g, m), 0), po_r(z1));
		ptx_guard(g->f, say, 0);
	}
	ptx_label(g->f, Lticket);
	PReg meets = {0, 0};
	if (h->on) {
		meets = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_OR, ".pred", po_r(meets), po_r(h->lead), po_r(h->me));
		gpu_op2(g, PTX_BAR, "", po_i(g->t->meet_bar), po_r(h->count));
		ptx_guard(g->f, meets, 0);
		/* a helper reads the word: its part is the last if it holds z + 1 */
		PReg v = gpu_reg(g, PC_B32), z1 = gpu_reg(g, PC_B32), mine = gpu_reg(g, PC_PRED);
		gpu_op2(g, PTX_MOV, ".b32", po_r(v), po_i(0));
		gpu_op2(g, PTX_LD, ".relaxed.gpu.global.u32", po_r(v), po_mem(help_word(g, m), 0));
		ptx_guard(g->f, h->me, 0);
		gpu_op2(g, PTX_CVT, ".u32.u64", po_r(z1), po_r(z));
		gpu_op3(g, PTX_ADD, ".u32", po_r(z1), po_r(z1), po_i(1));
		gpu_op3(g, PTX_SETP, ".eq.u32", po_r(mine), po_r(v), po_r(z1));
		gpu_op3(g, PTX_AND, ".pred", po_r(mine), po_r(mine), po_r(h->me));
		gpu_op3(g, PTX_OR, ".pred", po_r(last), po_r(last), po_r(mine));
	}
	gpu_leave(g);
	ptx_guard(g->f, last, 1);
	/* the last: the others' states after its acquire */
	gpu_op0(g, PTX_FENCE, ".acq_rel.gpu");
	PReg zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	if (!h->on) {
		merge_parts(g, t, m, tid, zero, (PReg){0, 0}, rowok);
		return;
	}
	int Lhelp = ptx_new_label(g->f), Llead = ptx_new_label(g->f), Lsecond = ptx_new_label(g->f),
	    Ldone = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lhelp));
	ptx_guard(g->f, h->me, 0);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Llead));
	ptx_guard(g->f, h->lead, 0);
	merge_parts(g, t, m, tid, zero, (PReg){0, 0}, rowok);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Ldone));
	ptx_label(g->f, Lhelp);
	help_merge(g, m, h);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lsecond));
	ptx_label(g->f, Llead);
	merge_parts(g, t, m, tid, zero, h->R, rowok);
	ptx_label(g->f, Lsecond);
	gpu_op2(g, PTX_BAR, "", po_i(g->t->meet_bar), po_r(h->count));
	gpu_leave(g);
	ptx_guard(g->f, h->me, 0);
	/* warp 0's word back to zero, now that its helpers have read it (a
	** helper of another part that reads it late sees 0, not its z + 1) */
	gpu_op2(g, PTX_ST, ".relaxed.gpu.global.u32", po_mem(help_word(g, m), 0), po_r(zero32));
	ptx_guard(g->f, lead, 0);
	/* warp 0: the helpers' partial states, in their first parts' slots */
	int u = merge_width(g);
	for (int r0 = 1; r0 < HELP_WARPS; r0 += u) {
		int nu = r0 + u <= HELP_WARPS ? u : HELP_WARPS - r0;
		PReg *addr = ARENA_ARRAY(g->a, PReg, nu), *valid = ARENA_ARRAY(g->a, PReg, nu);
		for (int j = 0; j < nu; j++) {
			PReg r = gpu_reg(g, PC_B64), s2 = gpu_reg(g, PC_B64),
			     in = gpu_reg(g, PC_PRED);
			gpu_op2(g, PTX_MOV, ".b64", po_r(r), po_i(r0 + j));
			PReg f = help_first(g, h, m, r);
			valid[j] = gpu_reg(g, PC_PRED);
			gpu_op3(g, PTX_SETP, ".le.s64", po_r(valid[j]), po_r(r), po_r(h->n));
			gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(f), po_r(nz));
			gpu_op3(g, PTX_AND, ".pred", po_r(valid[j]), po_r(valid[j]), po_r(in));
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(s2), po_r(f), po_r(ncta), po_r(m.base));
			addr[j] = slot_addr_at(g, ws, s2, tid);
		}
		merge_slots(g, t, addr, valid, nu, rowok);
	}
	ptx_label(g->f, Ldone);
}

/* A warp whose rows all lie past the CTA's (decode's packed query heads:
** 4 or 8 rows of 64 or 128) has no states to keep, merge or store: it
** returns, so that no part stores or loads them. The parts meet per warp
** (split_meet), and the same warps leave in every part; warps that help
** warp 0 merge (Help) stay. */
static void leave_without_rows(KernelGen *g, const Help *h)
{
	PReg first = gpu_reg(g, PC_B64), none = gpu_reg(g, PC_PRED);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(first), po_r(g->warp), po_i(16 * g->row_blocks),
		po_r(g->q0));
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(none), po_r(first), po_r(g->qext));
	if (h->on) {
		PReg stay = gpu_reg(g, PC_PRED);
		gpu_op2(g, PTX_NOT, ".pred", po_r(stay), po_r(h->me));
		gpu_op3(g, PTX_AND, ".pred", po_r(none), po_r(none), po_r(stay));
	}
	gpu_leave(g);
	ptx_guard(g->f, none, 0);
}

/* The CTA's row (b64): its place in the grid, or a stream-K CTA's work
** tile (a row of the plain grid). */
static PReg row_index(KernelGen *g)
{
	return g->s->streamk ? wide(g, g->work) : gpu_cta_index(g);
}

void gpu_parts_finish(KernelGen *g, TileState *t)
{
	/* not between a stream-K CTA's work tiles: a branch on the thread
	** index that stays in the loop made ptxas serialise a warpgroup's wgmma
	** (C7520); such a warp's states are stored and merged, its outputs
	** not (no rows) */
	Help h = {0};
	PReg cta = {0, 0};
	Meet m;
	if (helpers_wanted(g)) {
		/* rowless warps that help warp 0 (help_of) stay */
		cta = row_index(g), m = meet_of(g, cta);
		h = help_of(g, m.nz);
	}
	if (!g->s->streamk)
		leave_without_rows(g, &h);
	gpu_tile_rows(g, t);
	PReg rowok[GPU_MAXRS];
	for (int i = 0; i < 2 * g->row_blocks; i++) {
		rowok[i] = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(rowok[i]), po_r(t->rows[i]), po_r(g->qext));
	}
	/* without helpers, in the order these kernels were measured in */
	if (!h.on)
		cta = row_index(g);
	PReg mode = gpu_part_param(g, GPU_PART_MODE);
	if (!h.on)
		m = meet_of(g, cta);
	PReg nz = m.nz, one = gpu_reg(g, PC_PRED), mi = gpu_reg(g, PC_PRED),
	     fz = gpu_reg(g, PC_PRED), b = gpu_reg(g, PC_B32);
	int Lnosplit = ptx_new_label(g->f), Lnomerge = ptx_new_label(g->f);
	/* a launch whose stream is empty for this CTA and that only carries
	** the states on (a K/V shard wholly masked for its rows) leaves them */
	{
		PReg start = gpu_reg(g, PC_B64), end = gpu_reg(g, PC_B64), e = gpu_reg(g, PC_PRED),
		     keep = gpu_reg(g, PC_PRED);
		gpu_stream_bounds(g, start, end);
		gpu_op3(g, PTX_SETP, ".ge.s64", po_r(e), po_r(start), po_r(end));
		gpu_op3(g, PTX_AND, ".b32", po_r(b), po_r(mode),
			po_i(GPU_PART_MERGE_IN | GPU_PART_FINALIZE));
		gpu_op3(g, PTX_SETP, ".eq.u32", po_r(keep), po_r(b), po_i(GPU_PART_MERGE_IN));
		gpu_op3(g, PTX_AND, ".pred", po_r(keep), po_r(keep), po_r(e));
		gpu_op3(g, PTX_SETP, ".eq.s64", po_r(one), po_r(nz), po_i(1));
		gpu_op3(g, PTX_AND, ".pred", po_r(keep), po_r(keep), po_r(one));
		gpu_leave(g);
		ptx_guard(g->f, keep, 0);
	}
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lnosplit));
	ptx_guard(g->f, one, 0);
	split_meet(g, t, cta, m, rowok, &h);
	ptx_label(g->f, Lnosplit);
	PReg st = gpu_part_param(g, GPU_PART_ST), sa = slot_addr(g, st, cta);
	gpu_op3(g, PTX_AND, ".b32", po_r(b), po_r(mode), po_i(GPU_PART_MERGE_IN));
	gpu_op3(g, PTX_SETP, ".ne.u32", po_r(mi), po_r(b), po_i(0));
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lnomerge));
	ptx_guard(g->f, mi, 1);
	merge_slots(g, t, &sa, NULL, 1, rowok);
	ptx_label(g->f, Lnomerge);
	gpu_op3(g, PTX_AND, ".b32", po_r(b), po_r(mode), po_i(GPU_PART_FINALIZE));
	gpu_op3(g, PTX_SETP, ".ne.u32", po_r(fz), po_r(b), po_i(0));
	int Lfinal = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, ".uni", po_label(Lfinal));
	ptx_guard(g->f, fz, 0);
	move_states(g, sa, rowok, 1);
	gpu_leave(g);
	ptx_label(g->f, Lfinal);
}
