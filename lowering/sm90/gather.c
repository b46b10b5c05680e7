/*
** lowering/sm90/gather.c: the producer's copies of K and V rows placed
** through a gather (a paged cache's page table, gpu/gather.c). A TMA box
** takes rows one stride apart, so a gathered tile is copied by the
** producer warpgroup's 128 threads with cp.async instead, 16 bytes a
** chunk, into the stage as TMA would have laid it out (the 128-byte
** swizzle: chunk c of row r of a panel at (c ^ r % 8) * 16), each lane
** evaluating one row's gather for its warp's chunks (gpu_gather_lanes).
** Each thread's copies then arrive on the stage's full barrier when they
** complete (cp.async.mbarrier.arrive.noinc: the barrier counts the 128
** threads); the consumers order those generic-proxy writes before their
** wgmma reads with a proxy fence after the wait (ring.c).
*/
#include "sm90.h"

/* The reads of the stage that are gathered: all or none (sm90_refusal). */
int sm90_gathered(const KernelShape *s)
{
	return s->nqk > 0 && s->qk[0].bgather;
}

/* Per gathered read: the producer thread's column chunk c = tid % cpr and
** its fixed part's address plus 16 c, computed once before the stream
** (a packed head takes the CTA's first row, as gpu_tma_fixed_coords does). */
void sm90_gather_setup(KernelGen *g, PReg tid32, PReg *colbase, PReg *col)
{
	Sm90Kernel *k9 = sm90_of(g);
	const KernelShape *s = g->s;
	PReg zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	for (int r = 0; r < s->nqk + s->nvreads; r++) {
		const TmaRead *t = r < s->nqk ? &k9->k[r] : &k9->v[r - s->nqk];
		long cpr = (long)t->panels * GPU_TMAP_INNER / 8;
		g->node = t->node, g->row = g->q0, g->col = zero;
		PReg base = gpu_gather_base(g, t->node, t->e, IDX_KEY), c64 = gpu_reg(g, PC_B64);
		col[r] = gpu_reg(g, PC_B32), colbase[r] = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_REM, ".u32", po_r(col[r]), po_r(tid32), po_i(cpr));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(c64), po_r(col[r]));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(colbase[r]), po_r(c64), po_i(16), po_r(base));
	}
}

/* The stage's gathered K and V tiles from key j0 (stage address sa), then
** the thread's arrival on the full barrier fb once its copies land. */
void sm90_gather_copy(KernelGen *g, PReg tid32, const PReg *colbase, const PReg *col, PReg j0,
		      PReg sa, PReg fb)
{
	Sm90Kernel *k9 = sm90_of(g);
	const KernelShape *s = g->s;
	for (int r = 0; r < s->nqk + s->nvreads; r++) {
		const TmaRead *t = r < s->nqk ? &k9->k[r] : &k9->v[r - s->nqk];
		long cpr = (long)t->panels * GPU_TMAP_INNER / 8;
		int n = (int)(g->bn * cpr / GPU_THREADS), step = (int)(GPU_THREADS / cpr);
		GatherLanes gl;
		gpu_gather_lanes(g, t->node, t->e, IDX_KEY, tid32, cpr, n, step, j0, g->sext, &gl);
		/* the chunk's place in the swizzled panel: row0 = tid / cpr, panel
		** c / 8, (c % 8) ^ (row % 8) */
		PReg row0 = gpu_reg(g, PC_B32), pan = gpu_reg(g, PC_B32), cc = gpu_reg(g, PC_B32),
		     dst0 = gpu_reg(g, PC_B32), p = gpu_reg(g, PC_B64), tp = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_DIV, ".u32", po_r(row0), po_r(tid32), po_i(cpr));
		gpu_op3(g, PTX_SHR, ".u32", po_r(pan), po_r(col[r]), po_i(3));
		gpu_op3(g, PTX_AND, ".b32", po_r(cc), po_r(col[r]), po_i(7));
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(dst0), po_r(pan), po_i(g->bn * GPU_TMAP_ROW),
			po_r(sa));
		gpu_op3(g, PTX_ADD, ".u32", po_r(dst0), po_r(dst0), po_i(t->off));
		gpu_op2(g, PTX_LD, ".param.u64", po_r(p),
			po_memsym(g->par.ptr_names[t->e->tensor->id], 0));
		gpu_op2(g, PTX_CVTA, ".to.global.u64", po_r(tp), po_r(p));
		for (int it = 0; it < n; it++) {
			PReg o, bytes, a = gpu_reg(g, PC_B64), in = gpu_reg(g, PC_PRED),
				       row = gpu_reg(g, PC_B32), sw = gpu_reg(g, PC_B32),
				       d = gpu_reg(g, PC_B32);
			gpu_gather_take(g, &gl, it, &o, &bytes);
			gpu_op3(g, PTX_ADD, ".s64", po_r(a), po_r(colbase[r]), po_r(o));
			gpu_op3(g, PTX_SETP, ".ne.u32", po_r(in), po_r(bytes), po_i(0));
			gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(a), po_r(tp), po_r(in));
			gpu_op3(g, PTX_ADD, ".u32", po_r(row), po_r(row0), po_i(it * step));
			gpu_op3(g, PTX_AND, ".b32", po_r(sw), po_r(row), po_i(7));
			gpu_op3(g, PTX_XOR, ".b32", po_r(sw), po_r(sw), po_r(cc));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(d), po_r(row), po_i(GPU_TMAP_ROW),
				po_r(dst0));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(d), po_r(sw), po_i(16), po_r(d));
			gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global", po_mem(d, 0), po_mem(a, 0),
				po_i(16), po_r(bytes));
		}
	}
	gpu_op1(g, PTX_CP_ASYNC, ".mbarrier.arrive.noinc.shared::cta.b64", po_mem(fb, 0));
}
