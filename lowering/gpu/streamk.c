/*
** lowering/gpu/streamk.c: stream-K (Lean Attention) for the entry of
** partial states, NAME_fwd_streamk: a launch of P CTAs over the key tiles
** of every grid point of the plain grid (its "rows" r = x + gx y, gx * gy of
** them), each CTA an equal share of all of them, across rows. Where a
** batch's lengths differ (a ragged decode batch: kv_len read on the
** device), split-KV's parts of equal keys leave long rows' parts running
** alone; here every CTA streams the same number of tiles.
**
** Each CTA first counts the tiles of every row (its stream's bounds, as the
** row's CTA would compute them: m_r tiles, at least 1, so that an empty row
** still has a part that writes its outputs) and their exclusive prefix S_r
** (S_nrows = T, then P) in shared memory (KernelGen.sk_off: nrows + 2
** words, every role reads them). Of the launch's CTAs, the first P take
** tiles (the rest return at once; gpu_streamk_choose: at most min(CTAs,
** T), fewer where rows are equal so that no share crosses a row's end):
** CTA c owns [A_c, A_(c+1)), A_c = floor(c T / P), at least one tile. It
** then walks its rows from the last r
** with S_r <= A_c while S_r < A_(c+1); on each, the part [max(A_c, S_r),
** min(A_(c+1), S_(r+1))) - S_r of the row's tiles. The parts of row r are
** those of the CTAs owner(S_r) .. owner(S_(r+1) - 1), owner(x) = floor(((x +
** 1) P - 1) / T) (the c with A_c <= x < A_(c+1)); they meet as split-KV's
** parts do (parts.c), part z = c - owner(S_r) of them storing its states in
** slot owner(S_r) + z + r: (c, r) pairs lie on a staircase, so c + r is
** distinct for each, and the slots are fewer than P + nrows.
*/
#include "gpu.h"

/* The rows of the plain grid (u32): pgx * pgy. */
PReg gpu_streamk_rows(KernelGen *g)
{
	PReg gx = gpu_part_param(g, GPU_PART_GX), gy = gpu_part_param(g, GPU_PART_GY),
	     n = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(n), po_r(gx), po_r(gy));
	return gpu_u32(g, n);
}

/* The shared address of this CTA's S_r (u32), r u32. */
PReg gpu_streamk_addr(KernelGen *g, PReg r)
{
	PReg a = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(r), po_i(4), po_r(g->sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(a), po_r(a), po_i((int64_t)g->sk_off));
	return a;
}

PReg gpu_streamk_load(KernelGen *g, PReg r)
{
	PReg v = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_LD, ".shared.u32", po_r(v), po_mem(gpu_streamk_addr(g, r), 0));
	return v;
}

/* P (u32), as the plan chose it (gpu_streamk_choose): the word after T. */
PReg gpu_streamk_ctas(KernelGen *g)
{
	PReg rows = gpu_streamk_rows(g), at = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".u32", po_r(at), po_r(rows), po_i(1));
	return gpu_streamk_load(g, at);
}

/* The CTAs that take tiles (u32; T, rows u32, equal a predicate: every row
** has as many tiles as every other). At most P0 = min(%nctaid.x, T): each
** CTA at least one tile. Where rows are equal, so many that every share
** lies in one row: s nrows where s = floor(P0 / nrows) >= 1 (share
** boundaries c = k s fall on S_k = k m exactly), or nrows / k where k =
** ceil(nrows / P0) divides nrows (k whole rows a CTA). Each CTA then runs
** one part of one row, or whole rows, as split-KV's CTAs do: on an H200 at
** 8 x 8k, a share across two rows (two Q loads, two meetings) cost 14%
** against split-KV (bench/RESULTS.md). Else P0 and shares across rows. */
PReg gpu_streamk_choose(KernelGen *g, PReg T, PReg rows, PReg equal)
{
	PReg P0 = gpu_reg(g, PC_B32), s = gpu_reg(g, PC_B32), Pa = gpu_reg(g, PC_B32),
	     k = gpu_reg(g, PC_B32), q = gpu_reg(g, PC_B32), Pb = gpu_reg(g, PC_B32),
	     t = gpu_reg(g, PC_B32), few = gpu_reg(g, PC_PRED), whole = gpu_reg(g, PC_PRED),
	     P = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(P0), po_sym("%nctaid.x"));
	gpu_op3(g, PTX_MIN, ".u32", po_r(P0), po_r(P0), po_r(T));
	gpu_op3(g, PTX_MIN, ".u32", po_r(P0), po_r(P0), po_i(GPU_SK_CTAS));
	/* rows <= P0: s rows' parts each */
	gpu_op3(g, PTX_DIV, ".u32", po_r(s), po_r(P0), po_r(rows));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(Pa), po_r(s), po_r(rows));
	/* rows > P0: k whole rows a CTA where k divides them */
	gpu_op3(g, PTX_ADD, ".u32", po_r(k), po_r(rows), po_r(P0));
	gpu_op3(g, PTX_SUB, ".u32", po_r(k), po_r(k), po_i(1));
	gpu_op3(g, PTX_DIV, ".u32", po_r(k), po_r(k), po_r(P0));
	gpu_op3(g, PTX_DIV, ".u32", po_r(q), po_r(rows), po_r(k));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(t), po_r(q), po_r(k));
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(whole), po_r(t), po_r(rows));
	gpu_op4(g, PTX_SELP, ".b32", po_r(Pb), po_r(q), po_r(P0), po_r(whole));
	gpu_op3(g, PTX_SETP, ".le.u32", po_r(few), po_r(rows), po_r(P0));
	gpu_op4(g, PTX_SELP, ".b32", po_r(P), po_r(Pa), po_r(Pb), po_r(few));
	gpu_op4(g, PTX_SELP, ".b32", po_r(P), po_r(P), po_r(P0), po_r(equal));
	return P;
}

/* A_c = floor(c T / P) for c = %ctaid.x + plus (u32; T u32): c q + floor(c r
** / P) where T = q P + r, in 32 bits as c r < P^2 <= GPU_SK_CTAS^2. */
static PReg sk_share(KernelGen *g, PReg T, int plus)
{
	PReg c = gpu_reg(g, PC_B32), P = gpu_streamk_ctas(g), q = gpu_reg(g, PC_B32),
	     r = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(c), po_sym("%ctaid.x"));
	if (plus)
		gpu_op3(g, PTX_ADD, ".u32", po_r(c), po_r(c), po_i(plus));
	gpu_op3(g, PTX_DIV, ".u32", po_r(q), po_r(T), po_r(P));
	gpu_op3(g, PTX_REM, ".u32", po_r(r), po_r(T), po_r(P));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(r), po_r(r), po_r(c));
	gpu_op3(g, PTX_DIV, ".u32", po_r(r), po_r(r), po_r(P));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(c), po_r(q), po_r(r));
	return a;
}

/* owner(x) = floor(((x + 1) P - 1) / T), u32. */
static PReg sk_owner(KernelGen *g, PReg x, PReg T)
{
	PReg P = gpu_streamk_ctas(g), x1 = gpu_reg(g, PC_B32), p = gpu_reg(g, PC_B64),
	     t = gpu_reg(g, PC_B64), q = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_ADD, ".u32", po_r(x1), po_r(x), po_i(1));
	gpu_op3(g, PTX_MUL, ".wide.u32", po_r(p), po_r(x1), po_r(P));
	gpu_op3(g, PTX_SUB, ".s64", po_r(p), po_r(p), po_i(1));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(t), po_r(T));
	gpu_op3(g, PTX_DIV, ".u64", po_r(q), po_r(p), po_r(t));
	return gpu_u32(g, q);
}

/* T = S_nrows (u32). */
PReg gpu_streamk_total(KernelGen *g)
{
	return gpu_streamk_load(g, gpu_streamk_rows(g));
}

void gpu_streamk_count(KernelGen *g)
{
	PReg gx = gpu_part_param(g, GPU_PART_GX);
	g->wnx = gpu_u32(g, gx), g->wtotal = gpu_streamk_rows(g);
}

void gpu_streamk_first(KernelGen *g)
{
	PtxFunc *f = g->f;
	/* the last r with S_r <= A: S strictly increases (m_r >= 1) */
	PReg T = gpu_streamk_total(g), A = sk_share(g, T, 0), lo = gpu_reg(g, PC_B32),
	     hi = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b32", po_r(lo), po_i(0));
	gpu_op2(g, PTX_MOV, ".b32", po_r(hi), po_r(gpu_streamk_rows(g)));
	int L = ptx_new_label(f), Le = ptx_new_label(f);
	ptx_label(f, L);
	PReg d = gpu_reg(g, PC_B32), one = gpu_reg(g, PC_PRED), mid = gpu_reg(g, PC_B32),
	     le = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SUB, ".u32", po_r(d), po_r(hi), po_r(lo));
	gpu_op3(g, PTX_SETP, ".le.u32", po_r(one), po_r(d), po_i(1));
	gpu_op1(g, PTX_BRA, "", po_label(Le));
	ptx_guard(f, one, 0);
	gpu_op3(g, PTX_SHR, ".u32", po_r(d), po_r(d), po_i(1));
	gpu_op3(g, PTX_ADD, ".u32", po_r(mid), po_r(lo), po_r(d));
	gpu_op3(g, PTX_SETP, ".le.u32", po_r(le), po_r(gpu_streamk_load(g, mid)), po_r(A));
	gpu_op4(g, PTX_SELP, ".b32", po_r(lo), po_r(mid), po_r(lo), po_r(le));
	gpu_op4(g, PTX_SELP, ".b32", po_r(hi), po_r(hi), po_r(mid), po_r(le));
	gpu_op1(g, PTX_BRA, "", po_label(L));
	ptx_label(f, Le);
	g->work = lo;
}

void gpu_streamk_next(KernelGen *g, PReg more)
{
	PReg T = gpu_streamk_total(g), B = sk_share(g, T, 1), in = gpu_reg(g, PC_PRED),
	     s = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".u32", po_r(g->work), po_r(g->work), po_i(1));
	gpu_op3(g, PTX_SETP, ".lt.u32", po_r(more), po_r(g->work), po_r(gpu_streamk_rows(g)));
	/* S_nrows = T >= B: the load stays in the array */
	gpu_op2(g, PTX_LD, ".shared.u32", po_r(s), po_mem(gpu_streamk_addr(g, g->work), 0));
	gpu_op3(g, PTX_SETP, ".lt.u32", po_r(in), po_r(s), po_r(B));
	gpu_op3(g, PTX_AND, ".pred", po_r(more), po_r(more), po_r(in));
}

void gpu_streamk_part(KernelGen *g, GpuSkPart *pt)
{
	PReg r = g->work, r1 = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".u32", po_r(r1), po_r(r), po_i(1));
	PReg T = gpu_streamk_total(g), A = sk_share(g, T, 0), B = sk_share(g, T, 1),
	     S0 = gpu_streamk_load(g, r), S1 = gpu_streamk_load(g, r1), t = gpu_reg(g, PC_B32),
	     last = gpu_reg(g, PC_B32);
	pt->t0 = gpu_reg(g, PC_B32), pt->t1 = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_MAX, ".u32", po_r(t), po_r(A), po_r(S0));
	gpu_op3(g, PTX_SUB, ".u32", po_r(pt->t0), po_r(t), po_r(S0));
	gpu_op3(g, PTX_MIN, ".u32", po_r(t), po_r(B), po_r(S1));
	gpu_op3(g, PTX_SUB, ".u32", po_r(pt->t1), po_r(t), po_r(S0));
	PReg first = sk_owner(g, S0, T);
	gpu_op3(g, PTX_SUB, ".u32", po_r(last), po_r(S1), po_i(1));
	last = sk_owner(g, last, T);
	PReg c = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(c), po_sym("%ctaid.x"));
	pt->nparts = gpu_reg(g, PC_B32), pt->z = gpu_reg(g, PC_B32), pt->base = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SUB, ".u32", po_r(pt->nparts), po_r(last), po_r(first));
	gpu_op3(g, PTX_ADD, ".u32", po_r(pt->nparts), po_r(pt->nparts), po_i(1));
	gpu_op3(g, PTX_SUB, ".u32", po_r(pt->z), po_r(c), po_r(first));
	gpu_op3(g, PTX_ADD, ".u32", po_r(pt->base), po_r(first), po_r(r));
}

void gpu_work_first(KernelGen *g)
{
	if (g->s->streamk) {
		gpu_streamk_count(g);
		gpu_streamk_first(g);
		return;
	}
	gpu_work_count(g);
	g->work = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(g->work), po_sym("%ctaid.x"));
}

void gpu_work_next(KernelGen *g, PReg more, PReg n)
{
	if (g->s->streamk) {
		gpu_streamk_next(g, more);
		return;
	}
	gpu_op2(g, PTX_MOV, ".u32", po_r(n), po_sym("%nctaid.x"));
	gpu_op3(g, PTX_ADD, ".u32", po_r(g->work), po_r(g->work), po_r(n));
	gpu_op3(g, PTX_SETP, ".lt.u32", po_r(more), po_r(g->work), po_r(g->wtotal));
}

void gpu_leave(KernelGen *g)
{
	if (g->next_item)
		gpu_op1(g, PTX_BRA, "", po_label(g->next_item - 1));
	else
		gpu_op0(g, PTX_RET, "");
}
