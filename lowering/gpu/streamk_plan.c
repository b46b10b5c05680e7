/*
** lowering/gpu/streamk_plan.c: a stream-K CTA's first step (streamk.c has
** the schedule): every thread counts the key tiles of rows tid, tid +
** threads, ... of the plain grid, as each row's CTA would bound its stream
** (at least one: an empty row still writes its outputs), into the CTA's
** shared memory; warp 0 turns them into exclusive prefix sums, T and P
** after them; a CTA that takes no tiles returns, before the roles part.
*/
#include "gpu.h"

/* m_r of row r (u32 register work): the tiles of its stream's bounds. */
static PReg row_tiles(KernelGen *g)
{
	gpu_streamk_count(g);
	gpu_decode_grid(g);
	PReg start = gpu_reg(g, PC_B64), end = gpu_reg(g, PC_B64), n = gpu_reg(g, PC_B64);
	gpu_row_bounds(g, start, end);
	gpu_op3(g, PTX_SUB, ".s64", po_r(n), po_r(end), po_r(start));
	gpu_op3(g, PTX_ADD, ".s64", po_r(n), po_r(n), po_i(g->bn - 1));
	gpu_op3(g, PTX_SHR, ".s64", po_r(n), po_r(n), po_i(gpu_log2(g->bn)));
	gpu_op3(g, PTX_MAX, ".s64", po_r(n), po_r(n), po_i(1));
	return gpu_u32(g, n);
}

/* A loop over the lane's rows r = r0 .. r1 - 1 (at: a scratch predicate):
** its head, and after the body its step and end. */
typedef struct RowLoop {
	int top, end;
} RowLoop;

static RowLoop rows_begin(KernelGen *g, PReg r, PReg r0, PReg r1, PReg at)
{
	RowLoop l = {ptx_new_label(g->f), ptx_new_label(g->f)};
	gpu_op2(g, PTX_MOV, ".b32", po_r(r), po_r(r0));
	ptx_label(g->f, l.top);
	gpu_op3(g, PTX_SETP, ".ge.u32", po_r(at), po_r(r), po_r(r1));
	gpu_op1(g, PTX_BRA, "", po_label(l.end));
	ptx_guard(g->f, at, 0);
	return l;
}

static void rows_end(KernelGen *g, PReg r, RowLoop l)
{
	gpu_op3(g, PTX_ADD, ".u32", po_r(r), po_r(r), po_i(1));
	gpu_op1(g, PTX_BRA, "", po_label(l.top));
	ptx_label(g->f, l.end);
}

/* Warp 0's scan of the counts in place: lane l sums the rows [l k, l k +
** k), k = ceil(nrows / 32), the lanes' sums are scanned by shuffles, and
** each lane writes its rows' exclusive prefixes; lane 31 writes T and P,
** chosen from T and whether every row has as many tiles (the lanes'
** least and most counts, reduced by shuffles). */
static void scan_counts(KernelGen *g, PReg tid32, PReg rows)
{
	PtxFunc *f = g->f;
	int Lskip = ptx_new_label(f);
	PReg w = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, ".ge.u32", po_r(w), po_r(tid32), po_i(32));
	gpu_op1(g, PTX_BRA, "", po_label(Lskip));
	ptx_guard(f, w, 0);
	PReg k = gpu_reg(g, PC_B32), r0 = gpu_reg(g, PC_B32), r1 = gpu_reg(g, PC_B32),
	     sum = gpu_reg(g, PC_B32), r = gpu_reg(g, PC_B32), at = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_ADD, ".u32", po_r(k), po_r(rows), po_i(31));
	gpu_op3(g, PTX_SHR, ".u32", po_r(k), po_r(k), po_i(5));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(r0), po_r(tid32), po_r(k));
	gpu_op3(g, PTX_MIN, ".u32", po_r(r0), po_r(r0), po_r(rows));
	gpu_op3(g, PTX_ADD, ".u32", po_r(r1), po_r(r0), po_r(k));
	gpu_op3(g, PTX_MIN, ".u32", po_r(r1), po_r(r1), po_r(rows));
	PReg least = gpu_reg(g, PC_B32), most = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b32", po_r(sum), po_i(0));
	gpu_op2(g, PTX_MOV, ".b32", po_r(least), po_i(-1));
	gpu_op2(g, PTX_MOV, ".b32", po_r(most), po_i(0));
	/* the lane's sum, least and most */
	RowLoop l = rows_begin(g, r, r0, r1, at);
	{
		PReg m = gpu_streamk_load(g, r);
		gpu_op3(g, PTX_ADD, ".u32", po_r(sum), po_r(sum), po_r(m));
		gpu_op3(g, PTX_MIN, ".u32", po_r(least), po_r(least), po_r(m));
		gpu_op3(g, PTX_MAX, ".u32", po_r(most), po_r(most), po_r(m));
	}
	rows_end(g, r, l);
	for (int d = 16; d >= 1; d /= 2) {
		PReg a = gpu_reg(g, PC_B32), b = gpu_reg(g, PC_B32);
		gpu_op5(g, PTX_SHFL, ".b32", po_r(a), po_r(least), po_i(d), po_i(31), po_i(-1));
		gpu_op5(g, PTX_SHFL, ".b32", po_r(b), po_r(most), po_i(d), po_i(31), po_i(-1));
		gpu_op3(g, PTX_MIN, ".u32", po_r(least), po_r(least), po_r(a));
		gpu_op3(g, PTX_MAX, ".u32", po_r(most), po_r(most), po_r(b));
	}
	/* inclusive scan of the lanes' sums */
	PReg incl = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".b32", po_r(incl), po_r(sum));
	for (int d = 1; d < 32; d *= 2) {
		PReg up = gpu_reg(g, PC_B32), lo = gpu_reg(g, PC_PRED);
		gpu_op5(g, PTX_SHFL_UP, ".b32", po_r(up), po_r(incl), po_i(d), po_i(0), po_i(-1));
		gpu_op3(g, PTX_SETP, ".ge.u32", po_r(lo), po_r(tid32), po_i(d));
		gpu_op3(g, PTX_ADD, ".u32", po_r(incl), po_r(incl), po_r(up));
		ptx_guard(f, lo, 0);
	}
	/* the rows' exclusive prefixes */
	PReg run = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_SUB, ".u32", po_r(run), po_r(incl), po_r(sum));
	l = rows_begin(g, r, r0, r1, at);
	{
		PReg a = gpu_streamk_addr(g, r), m = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_LD, ".shared.u32", po_r(m), po_mem(a, 0));
		gpu_op2(g, PTX_ST, ".shared.u32", po_mem(a, 0), po_r(run));
		gpu_op3(g, PTX_ADD, ".u32", po_r(run), po_r(run), po_r(m));
	}
	rows_end(g, r, l);
	PReg last = gpu_reg(g, PC_PRED), equal = gpu_reg(g, PC_PRED), T = gpu_reg(g, PC_B32);
	gpu_op5(g, PTX_SHFL_IDX, ".b32", po_r(T), po_r(incl), po_i(31), po_i(31), po_i(-1));
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(equal), po_r(least), po_r(most));
	PReg P = gpu_streamk_choose(g, T, rows, equal), at_T = gpu_streamk_addr(g, rows);
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(last), po_r(tid32), po_i(31));
	gpu_op2(g, PTX_ST, ".shared.u32", po_mem(at_T, 0), po_r(T));
	ptx_guard(f, last, 0);
	gpu_op2(g, PTX_ST, ".shared.u32", po_mem(at_T, 4), po_r(P));
	ptx_guard(f, last, 0);
	ptx_label(f, Lskip);
}

void gpu_streamk_plan(KernelGen *g)
{
	PtxFunc *f = g->f;
	PReg tid32 = gpu_reg(g, PC_B32), rows = gpu_streamk_rows(g);
	gpu_op2(g, PTX_MOV, ".u32", po_r(tid32), po_sym("%tid.x"));
	/* every thread counts rows tid, tid + threads, ... */
	g->work = gpu_reg(g, PC_B32);
	int Lrow = ptx_new_label(f), Lend = ptx_new_label(f);
	gpu_op2(g, PTX_MOV, ".b32", po_r(g->work), po_r(tid32));
	ptx_label(f, Lrow);
	{
		PReg done = gpu_reg(g, PC_PRED), rows2 = gpu_streamk_rows(g);
		gpu_op3(g, PTX_SETP, ".ge.u32", po_r(done), po_r(g->work), po_r(rows2));
		gpu_op1(g, PTX_BRA, "", po_label(Lend));
		ptx_guard(f, done, 0);
	}
	gpu_expr_forget(g, 0);
	gpu_ranges_init(g);
	gpu_load_params(g);
	PReg m = row_tiles(g);
	gpu_op2(g, PTX_ST, ".shared.u32", po_mem(gpu_streamk_addr(g, g->work), 0), po_r(m));
	gpu_op3(g, PTX_ADD, ".u32", po_r(g->work), po_r(g->work), po_i(g->t->threads));
	gpu_op1(g, PTX_BRA, "", po_label(Lrow));
	ptx_label(f, Lend);
	/* nothing computed for some row may be taken for another's */
	gpu_expr_forget(g, 0);
	gpu_ranges_init(g);
	g->work = (PReg){0, 0};
	gpu_op1(g, PTX_BAR, "", po_i(0));
	scan_counts(g, tid32, rows);
	gpu_op1(g, PTX_BAR, "", po_i(0));
	/* CTAs past the first P have no tiles */
	PReg P = gpu_streamk_ctas(g), c = gpu_reg(g, PC_B32), none = gpu_reg(g, PC_PRED);
	gpu_op2(g, PTX_MOV, ".u32", po_r(c), po_sym("%ctaid.x"));
	gpu_op3(g, PTX_SETP, ".ge.u32", po_r(none), po_r(c), po_r(P));
	gpu_op0(g, PTX_RET, "");
	ptx_guard(f, none, 0);
}
