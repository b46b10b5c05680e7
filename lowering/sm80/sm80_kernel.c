/*
** lowering/sm80/sm80_kernel.c: the sm_80 one-pass attention kernel.
**
** A CTA of 4 warps owns SM80_BM query rows (16 per warp) of one grid point
** and walks the KV index in tiles of SM80_BN keys. Q tiles are loaded once
** (cp.async, zero-filled past the end) and kept as ldmatrix fragments in
** registers; each KV tile is classified from the masks (empty: skipped;
** full: no per-element mask; partial: masked), K and V tiles are loaded,
** S = Q K^T runs on mma.sync.m16n8k16 with f32 accumulators, the plan's
** element-wise values, running maxes (quad shuffles), rescales rho and row
** sums run on the accumulator fragments, and P V accumulates through a
** second mma whose A operand is P packed to bf16 in registers. The
** epilogue finishes row sums, evaluates the plan's finalisers per row and
** per output element, and stores with the outputs' dtypes and domains.
*/
#include <math.h>
#include <string.h>

#include "sm80.h"

#define NT (SM80_BN / 8)   /* n-tiles of a score tile */
#define NEL (NT * 4)       /* score elements per thread */

static PReg R(Gen *g, PtxCls c) { return ptx_reg(g->f, c); }

static void E(Gen *g, PtxOpcode op, const char *m, int n, PtxOpnd a, PtxOpnd b, PtxOpnd c, PtxOpnd d,
	      PtxOpnd e)
{
	PtxOpnd o[5] = {a, b, c, d, e};
	ptx_emit(g->f, op, m, n, o);
}

#define Z ((PtxOpnd){0})
#define E1(op, m, a) E(g, op, m, 1, a, Z, Z, Z, Z)
#define E2(op, m, a, b) E(g, op, m, 2, a, b, Z, Z, Z)
#define E3(op, m, a, b, c) E(g, op, m, 3, a, b, c, Z, Z)
#define E4(op, m, a, b, c, d) E(g, op, m, 4, a, b, c, d, Z)
#define E5(op, m, a, b, c, d, e) E(g, op, m, 5, a, b, c, d, e)

static const Node *node(const Gen *g, int i) { return g->p->c->nodes.v[i]; }

static PReg fmov(Gen *g, float v)
{
	PReg r = R(g, PC_F32);
	E2(PTX_MOV, ".f32", po_r(r), po_f(v));
	return r;
}

/* ---- parameters and indices ---------------------------------------------- */

static void load_params(Gen *g)
{
	const Cascade *c = g->c;
	PtxFunc *f = g->f;
	int nt = c->tensors.n;
	g->tptr = ARENA_ARRAY(g->a, PReg, nt + 1);
	g->tstride = ARENA_ARRAY(g->a, PReg *, nt + 1);
	const char **pn = ARENA_ARRAY(g->a, const char *, nt + 1);
	for (int i = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP)
			pn[i] = ptx_param(f, arena_printf(g->a, "t%d", i), ".u64");
	}
	const char ***sn = ARENA_ARRAY(g->a, const char **, nt + 1);
	for (int i = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		sn[i] = ARENA_ARRAY(g->a, const char *, t->rank + 1);
		for (int k = 0; k < t->rank; k++)
			sn[i][k] = ptx_param(f, arena_printf(g->a, "s%d_%d", i, k), ".s64");
	}
	const char **dn = ARENA_ARRAY(g->a, const char *, c->dims.n + 1);
	for (int i = 0; i < c->dims.n; i++)
		dn[i] = ptx_param(f, arena_printf(g->a, "d%d", i), ".s64");
	const char **qn = ARENA_ARRAY(g->a, const char *, c->params.n + 1);
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		qn[i] = ptx_param(f, arena_printf(g->a, "p%d", i), p->type == VT_INT ? ".s32" : ".f32");
	}
	for (int i = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		PReg r = R(g, PC_B64);
		E2(PTX_LD, ".param.u64", po_r(r), po_memsym(pn[i], 0));
		g->tptr[i] = R(g, PC_B64);
		E2(PTX_CVTA, ".to.global.u64", po_r(g->tptr[i]), po_r(r));
		g->tstride[i] = ARENA_ARRAY(g->a, PReg, t->rank + 1);
		for (int k = 0; k < t->rank; k++) {
			g->tstride[i][k] = R(g, PC_B64);
			E2(PTX_LD, ".param.s64", po_r(g->tstride[i][k]), po_memsym(sn[i][k], 0));
		}
	}
	g->dim = ARENA_ARRAY(g->a, PReg, c->dims.n + 1);
	for (int i = 0; i < c->dims.n; i++) {
		g->dim[i] = R(g, PC_B64);
		E2(PTX_LD, ".param.s64", po_r(g->dim[i]), po_memsym(dn[i], 0));
	}
	g->param = ARENA_ARRAY(g->a, PReg, c->params.n + 1);
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		g->param[i] = R(g, p->type == VT_INT ? PC_B32 : PC_F32);
		E2(PTX_LD, p->type == VT_INT ? ".param.s32" : ".param.f32", po_r(g->param[i]),
		   po_memsym(qn[i], 0));
	}
}

static PReg special(Gen *g, const char *sreg)
{
	PReg r32 = R(g, PC_B32), r = R(g, PC_B64);
	E2(PTX_MOV, ".u32", po_r(r32), po_sym(sreg));
	E2(PTX_CVT, ".u64.u32", po_r(r), po_r(r32));
	return r;
}

/* Extent of an index class, from the first node variable of that class. */
static PReg class_extent(Gen *g, int cls)
{
	g->node = 0;
	return sm80_expr(g, g->p->classes[cls].extent);
}

static void decode_grid(Gen *g)
{
	const Plan *p = g->p;
	g->grid = ARENA_ARRAY(g->a, PReg, p->nclasses + 1);
	PReg qt = special(g, "%ctaid.y"), rest = special(g, "%ctaid.x");
	/* grid.x = query tiles (consecutive CTAs share K and V in L2) */
	PReg t = qt;
	qt = rest, rest = t;
	g->q0 = R(g, PC_B64);
	E3(PTX_MUL, ".lo.s64", po_r(g->q0), po_r(qt), po_i(SM80_BM));
	for (int k = 0; k < p->nclasses; k++) {
		if (!p->classes[k].grid || p->classes[k].qtile)
			continue;
		PReg ext = class_extent(g, k);
		g->grid[k] = R(g, PC_B64);
		E3(PTX_REM, ".u64", po_r(g->grid[k]), po_r(rest), po_r(ext));
		PReg r2 = R(g, PC_B64);
		E3(PTX_DIV, ".u64", po_r(r2), po_r(rest), po_r(ext));
		rest = r2;
	}
	g->qext = class_extent(g, g->s->qcls);
	g->sext = class_extent(g, g->s->scls);
	PReg tid = special(g, "%tid.x");
	g->lane = R(g, PC_B64), g->warp = R(g, PC_B64);
	E3(PTX_AND, ".b64", po_r(g->lane), po_r(tid), po_i(31));
	E3(PTX_SHR, ".u64", po_r(g->warp), po_r(tid), po_i(5));
}

/* ---- shared memory and loads --------------------------------------------- */

typedef struct Smem {
	uint32_t q[SM80_MAXG], k[SM80_MAXG], v[SM80_MAXG]; /* byte offsets */
	uint32_t qs[SM80_MAXG], ks[SM80_MAXG], vs;           /* row strides (bytes) */
	uint32_t total;
} Smem;

/* Row strides are padded by 16 bytes so ldmatrix's eight rows hit eight
** different bank groups. */
static void plan_smem(const Shape *s, Smem *m)
{
	uint32_t off = 0;
	for (int i = 0; i < s->ng1; i++) {
		m->qs[i] = m->ks[i] = (uint32_t)(s->g1[i].D * 2 + 16);
		m->q[i] = off, off += SM80_BM * m->qs[i];
		m->k[i] = off, off += SM80_BN * m->ks[i];
	}
	m->vs = (uint32_t)(s->DV * 2 + 16);
	for (int i = 0; i < s->nvt; i++)
		m->v[i] = off, off += SM80_BN * m->vs;
	m->total = off;
}

/* cp.async of a rows x width tile of `acc` (a bf16/f16 input read whose
** `rowcls` index runs over [first, first + rows), clipped at ext) into
** shared memory at soff with row stride sstride; rows past ext are zeros. */
static void load_tile(Gen *g, int gnode, const Expr *acc, int rowcls, PReg first, PReg ext, int rows,
		      long width, uint32_t soff, uint32_t sstride, PReg sbase, PReg tid)
{
	long chunks = rows * width / 8, per = chunks / SM80_THREADS;
	for (long it = 0; it < per; it++) {
		PReg c = R(g, PC_B64), row = R(g, PC_B64), col = R(g, PC_B64), grow = R(g, PC_B64);
		E3(PTX_ADD, ".s64", po_r(c), po_r(tid), po_i(it * SM80_THREADS));
		E3(PTX_DIV, ".u64", po_r(row), po_r(c), po_i(width / 8));
		E3(PTX_REM, ".u64", po_r(col), po_r(c), po_i(width / 8));
		E3(PTX_ADD, ".s64", po_r(grow), po_r(first), po_r(row));
		PReg ok = R(g, PC_PRED);
		E3(PTX_SETP, ".lt.s64", po_r(ok), po_r(grow), po_r(ext));
		PReg src = R(g, PC_B64);
		E4(PTX_SELP, ".b64", po_r(src), po_r(grow), po_r(first), po_r(ok));
		/* the read's address at (row, d = 0), plus the chunk */
		g->node = gnode;
		PReg saverow = g->row, savecol = g->col;
		if (rowcls == g->s->qcls)
			g->row = src;
		else
			g->col = src;
		PReg ga = sm80_addr(g, acc->tensor, acc->args);
		g->row = saverow, g->col = savecol;
		PReg ga2 = R(g, PC_B64);
		E4(PTX_MAD, ".lo.s64", po_r(ga2), po_r(col), po_i(16), po_r(ga));
		PReg bytes = R(g, PC_B32);
		E4(PTX_SELP, ".b32", po_r(bytes), po_i(16), po_i(0), po_r(ok));
		PReg r32 = R(g, PC_B32), c32 = R(g, PC_B32), sa = R(g, PC_B32);
		E2(PTX_CVT, ".u32.u64", po_r(r32), po_r(row));
		E2(PTX_CVT, ".u32.u64", po_r(c32), po_r(col));
		E4(PTX_MAD, ".lo.u32", po_r(sa), po_r(r32), po_i(sstride), po_r(sbase));
		E4(PTX_MAD, ".lo.u32", po_r(sa), po_r(c32), po_i(16), po_r(sa));
		E4(PTX_CP_ASYNC, ".cg.shared.global", po_mem(sa, (int32_t)soff), po_mem(ga2, 0), po_i(16),
		   po_r(bytes));
	}
}

static void wait_all(Gen *g)
{
	E(g, PTX_CP_COMMIT, "", 0, Z, Z, Z, Z, Z);
	E1(PTX_CP_WAIT, "", po_i(0));
	E1(PTX_BAR, "", po_i(0));
}

/* Shared-memory address (u32) of lane-dependent ldmatrix rows. */
static PReg lm_addr(Gen *g, PReg sbase, uint32_t soff, uint32_t stride, PReg row, PReg colbytes)
{
	PReg a = R(g, PC_B32);
	E4(PTX_MAD, ".lo.u32", po_r(a), po_r(row), po_i(stride), po_r(colbytes));
	E3(PTX_ADD, ".u32", po_r(a), po_r(a), po_r(sbase));
	E3(PTX_ADD, ".u32", po_r(a), po_r(a), po_i(soff));
	return a;
}

static PReg u32of(Gen *g, PReg x)
{
	PReg r = R(g, PC_B32);
	E2(PTX_CVT, ".u32.u64", po_r(r), po_r(x));
	return r;
}

/* ---- per-tile work ------------------------------------------------------ */

typedef struct Tile {
	PReg rows[2];      /* b64 query row of each half */
	PReg cols[NT][2];  /* b64 key index of each column */
	PReg crows[2];     /* the same, clamped into range: padding evaluates */
	PReg ccols[NT][2]; /* in-bounds loads, and its results are never used */
	PReg **prev;       /* [nodes][2]: reference values before this tile */
} Tile;

static void scope_elem(Gen *g, Tile *t, int i, int el)
{
	int nt = el / 4, h = (el >> 1) & 1, c = el & 1;
	g->node = i, g->elem = el, g->half = h;
	g->row = t->crows[h], g->col = t->ccols[nt][c];
}

/* An element's contribution to a reduction: masked points give identity. */
static PReg masked_value(Gen *g, Tile *t, int i, int el, const Expr *body, int masked, float identity)
{
	scope_elem(g, t, i, el);
	PReg v = sm80_expr(g, body);
	if (!masked)
		return v;
	/* keys past the end of the stream are zero padding, never data */
	PReg ok = R(g, PC_PRED);
	E3(PTX_SETP, ".lt.s64", po_r(ok), po_r(t->cols[el / 4][el & 1]), po_r(g->sext));
	if (node(g, i)->filter) {
		scope_elem(g, t, i, el);
		PReg f = sm80_expr(g, node(g, i)->filter);
		E3(PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(f));
	}
	PReg r = R(g, PC_F32);
	E4(PTX_SELP, ".f32", po_r(r), po_r(v), po_f(identity), po_r(ok));
	return r;
}

/* rho per row half for a running node rebased on references. */
static PReg rho(Gen *g, Tile *t, int i, int h)
{
	const Running *run = &g->p->np[i].run;
	PReg r = fmov(g, 1.0f);
	for (int m = 0; m < run->nrefs; m++) {
		int ref = run->ref[m];
		PReg a = t->prev[ref][h], b = g->rowv[ref][h];
		PReg d = R(g, PC_F32), x = R(g, PC_F32), same = R(g, PC_PRED);
		E3(PTX_SUB, ".f32", po_r(d), po_r(a), po_r(b));
		E3(PTX_MUL, ".f32", po_r(d), po_r(d), po_f((float)(run->k[m] * 1.4426950408889634)));
		E2(PTX_EX2, ".approx.ftz.f32", po_r(x), po_r(d));
		E3(PTX_SETP, ".eq.f32", po_r(same), po_r(a), po_r(b));
		E4(PTX_SELP, ".f32", po_r(x), po_f(1.0f), po_r(x), po_r(same));
		E3(PTX_MUL, ".f32", po_r(r), po_r(r), po_r(x));
	}
	return r;
}

static PReg quad_reduce(Gen *g, PReg x, int is_max)
{
	for (int m = 1; m <= 2; m <<= 1) {
		PReg y = R(g, PC_F32);
		E5(PTX_SHFL, ".b32", po_r(y), po_r(x), po_i(m), po_i(31), po_i(-1));
		PReg z = R(g, PC_F32);
		E3(is_max ? PTX_MAX : PTX_ADD, ".f32", po_r(z), po_r(x), po_r(y));
		x = z;
	}
	return x;
}

static void gemm2_tile(Gen *g, Tile *t, int i, int masked, PReg sbase, const Smem *sm)
{
	const SGemm2 *g2 = &g->s->g2[g->s->n[i].g];
	int net = (int)(g2->DV / 8);
	if (g->p->np[i].run.nrefs)
		for (int h = 0; h < 2; h++) {
			PReg r = rho(g, t, i, h);
			for (int et = 0; et < net; et++)
				for (int c = 0; c < 2; c++) {
					PReg a = g->acc[i][et * 4 + h * 2 + c];
					E3(PTX_MUL, ".f32", po_r(a), po_r(a), po_r(r));
				}
		}
	PReg x[NEL];
	for (int el = 0; el < NEL; el++)
		x[el] = masked_value(g, t, i, el, g2->x, masked, 0.0f);
	int f16 = g2->v->tensor->dtype == DT_F16;
	const char *cvt = f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32";
	const char *mma = f16 ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	for (int kk = 0; kk < SM80_BN / 16; kk++) {
		PReg a[4];
		for (int q = 0; q < 4; q++) {
			int nt = 2 * kk + (q >> 1), h = q & 1;
			a[q] = R(g, PC_B32);
			E3(PTX_CVT, cvt, po_r(a[q]), po_r(x[nt * 4 + h * 2 + 1]), po_r(x[nt * 4 + h * 2]));
		}
		/* V fragments by ldmatrix.trans: row j = kk*16 + (mi&1)*8 + r, col e = ep*16 + (mi>>1)*8 */
		for (int ep = 0; ep < net / 2; ep++) {
			PReg mi = R(g, PC_B64), r = R(g, PC_B64), row = R(g, PC_B64), cb = R(g, PC_B64);
			E3(PTX_SHR, ".u64", po_r(mi), po_r(g->lane), po_i(3));
			E3(PTX_AND, ".b64", po_r(r), po_r(g->lane), po_i(7));
			PReg lo = R(g, PC_B64), hi = R(g, PC_B64);
			E3(PTX_AND, ".b64", po_r(lo), po_r(mi), po_i(1));
			E3(PTX_SHR, ".u64", po_r(hi), po_r(mi), po_i(1));
			E4(PTX_MAD, ".lo.s64", po_r(row), po_r(lo), po_i(8), po_r(r));
			E3(PTX_ADD, ".s64", po_r(row), po_r(row), po_i(kk * 16));
			E4(PTX_MAD, ".lo.s64", po_r(cb), po_r(hi), po_i(16), po_i(ep * 32));
			PReg addr = lm_addr(g, sbase, sm->v[g2->vslot], sm->vs, u32of(g, row), u32of(g, cb));
			PReg b[4];
			for (int q = 0; q < 4; q++)
				b[q] = R(g, PC_B32);
			E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.trans.shared.b16", po_vec(b, 4), po_mem(addr, 0));
			for (int half = 0; half < 2; half++) {
				int et = 2 * ep + half;
				PReg *d = &g->acc[i][et * 4];
				PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
				E4(PTX_MMA, mma, po_vec(d, 4), po_vec(a, 4), po_vec(bb, 2), po_vec(d, 4));
			}
		}
	}
}

/* The nodes of one tile in order (masked: with per-element masks). */
static void tile_body(Gen *g, Tile *t, int masked, PReg sbase, const Smem *sm)
{
	const Cascade *c = g->c;
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = node(g, i);
		switch (g->s->n[i].kind) {
		case SN_MAP:
			for (int el = 0; el < NEL; el++) {
				scope_elem(g, t, i, el);
				g->tile[i][el] = sm80_expr(g, n->body);
			}
			break;
		case SN_RMAX:
			for (int h = 0; h < 2; h++) {
				PReg m = fmov(g, -INFINITY);
				for (int el = 0; el < NEL; el++) {
					if (((el >> 1) & 1) != h)
						continue;
					PReg v = masked_value(g, t, i, el, n->body, masked, -INFINITY);
					E3(PTX_MAX, ".f32", po_r(m), po_r(m), po_r(v));
				}
				m = quad_reduce(g, m, 1);
				E3(PTX_MAX, ".f32", po_r(g->rowv[i][h]), po_r(g->rowv[i][h]), po_r(m));
			}
			break;
		case SN_REF:
			for (int h = 0; h < 2; h++) {
				g->node = i, g->half = h, g->row = t->crows[h];
				PReg v = sm80_expr(g, n->body);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
			break;
		case SN_RSUM:
			for (int h = 0; h < 2; h++) {
				PReg acc = g->rowv[i][h];
				if (g->p->np[i].run.nrefs) {
					PReg r = rho(g, t, i, h);
					E3(PTX_MUL, ".f32", po_r(acc), po_r(acc), po_r(r));
				}
				for (int el = 0; el < NEL; el++) {
					if (((el >> 1) & 1) != h)
						continue;
					PReg v = masked_value(g, t, i, el, n->body, masked, 0.0f);
					E3(PTX_ADD, ".f32", po_r(acc), po_r(acc), po_r(v));
				}
			}
			break;
		case SN_GEMM2: gemm2_tile(g, t, i, masked, sbase, sm); break;
		default: break;
		}
	}
}

/* S = Q K^T for one contraction, from Q fragments in registers. */
static void gemm1_tile(Gen *g, int i, PReg **qf, PReg sbase, const Smem *sm)
{
	const SGemm1 *g1 = &g->s->g1[g->s->n[i].g];
	int gi = g->s->n[i].g;
	PReg *acc = g->tile[i];
	for (int el = 0; el < NEL; el++) {
		acc[el] = R(g, PC_F32);
		E2(PTX_MOV, ".f32", po_r(acc[el]), po_f(0.0f));
	}
	int f16 = g1->a->tensor->dtype == DT_F16;
	const char *mma = f16 ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	for (int kk = 0; kk < g1->D / 16; kk++)
		for (int np = 0; np < NT / 2; np++) {
			/* K rows j = np*16 + (mi>>1)*8 + r, d = kk*16 + (mi&1)*8 */
			PReg mi = R(g, PC_B64), r = R(g, PC_B64), lo = R(g, PC_B64), hi = R(g, PC_B64);
			E3(PTX_SHR, ".u64", po_r(mi), po_r(g->lane), po_i(3));
			E3(PTX_AND, ".b64", po_r(r), po_r(g->lane), po_i(7));
			E3(PTX_AND, ".b64", po_r(lo), po_r(mi), po_i(1));
			E3(PTX_SHR, ".u64", po_r(hi), po_r(mi), po_i(1));
			PReg row = R(g, PC_B64), cb = R(g, PC_B64);
			E4(PTX_MAD, ".lo.s64", po_r(row), po_r(hi), po_i(8), po_r(r));
			E3(PTX_ADD, ".s64", po_r(row), po_r(row), po_i(np * 16));
			E4(PTX_MAD, ".lo.s64", po_r(cb), po_r(lo), po_i(16), po_i(kk * 32));
			PReg addr = lm_addr(g, sbase, sm->k[gi], sm->ks[gi], u32of(g, row), u32of(g, cb));
			PReg b[4];
			for (int q = 0; q < 4; q++)
				b[q] = R(g, PC_B32);
			E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16", po_vec(b, 4), po_mem(addr, 0));
			for (int half = 0; half < 2; half++) {
				PReg *d = &acc[(2 * np + half) * 4];
				PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
				E4(PTX_MMA, mma, po_vec(d, 4), po_vec(qf[kk], 4), po_vec(bb, 2), po_vec(d, 4));
			}
		}
}

/* ---- epilogue ------------------------------------------------------------- */

static void store(Gen *g, int i, PReg v, PReg guard)
{
	const Node *n = node(g, i);
	const Tensor *t = n->out;
	Expr **args = ARENA_ARRAY(g->a, Expr *, n->nfree + 1);
	for (int k = 0; k < n->nfree; k++)
		args[k] = expr_index(g->a, k);
	if (t->domain) {
		PReg ok = sm80_expr(g, t->domain), z = R(g, PC_F32);
		E4(PTX_SELP, ".f32", po_r(z), po_r(v), po_f(0.0f), po_r(ok));
		v = z;
	}
	PReg a = sm80_addr(g, t, args);
	switch (t->dtype) {
	case DT_BF16:
	case DT_F16: {
		PReg h = R(g, PC_B16);
		E2(PTX_CVT, t->dtype == DT_BF16 ? ".rn.bf16.f32" : ".rn.f16.f32", po_r(h), po_r(v));
		E2(PTX_ST, ".global.b16", po_mem(a, 0), po_r(h));
		break;
	}
	default: E2(PTX_ST, ".global.f32", po_mem(a, 0), po_r(v)); break;
	}
	ptx_guard(g->f, guard, 0);
}

static void epilogue(Gen *g, Tile *t)
{
	const Cascade *c = g->c;
	g->stage = 1;
	PReg q = R(g, PC_B64), lead = R(g, PC_PRED), okr[2], okl[2];
	E3(PTX_AND, ".b64", po_r(q), po_r(g->lane), po_i(3));
	E3(PTX_SETP, ".eq.s64", po_r(lead), po_r(q), po_i(0));
	for (int h = 0; h < 2; h++) {
		okr[h] = R(g, PC_PRED), okl[h] = R(g, PC_PRED);
		E3(PTX_SETP, ".lt.s64", po_r(okr[h]), po_r(t->rows[h]), po_r(g->qext));
		E3(PTX_AND, ".pred", po_r(okl[h]), po_r(okr[h]), po_r(lead));
	}
	for (int i = 0; i < c->nodes.n; i++)
		if (g->s->n[i].kind == SN_RSUM)
			for (int h = 0; h < 2; h++) {
				PReg s = quad_reduce(g, g->rowv[i][h], 0);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(s));
			}
	int net = (int)(g->s->DV / 8);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = node(g, i);
		SNodeKind k = g->s->n[i].kind;
		int out = n->out->kind == TK_OUT;
		if (k == SN_EPI_ROW || k == SN_REF || ((k == SN_RMAX || k == SN_RSUM) && out)) {
			for (int h = 0; h < 2; h++) {
				g->node = i, g->half = h, g->row = t->crows[h];
				if (k == SN_EPI_ROW || k == SN_REF) {
					PReg v = sm80_expr(g, n->body);
					if (!g->rowv[i][h].n)
						g->rowv[i][h] = R(g, PC_F32);
					E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
				}
				if (out)
					store(g, i, g->rowv[i][h], okl[h]);
			}
		} else if (k == SN_EPI_ELEM || (k == SN_GEMM2 && out)) {
			for (int el = 0; el < net * 4; el++) {
				int et = el / 4, h = (el >> 1) & 1, cc = el & 1;
				g->node = i, g->elem = el, g->half = h, g->row = t->crows[h];
				PReg e = R(g, PC_B64);
				E4(PTX_MAD, ".lo.s64", po_r(e), po_r(q), po_i(2), po_i(et * 8 + cc));
				g->col = e;
				if (k == SN_EPI_ELEM) {
					PReg v = sm80_expr(g, n->body);
					g->acc[i][el] = v;
				}
				if (out) {
					g->node = i, g->row = t->crows[h], g->col = e;
					store(g, i, g->acc[i][el], okr[h]);
				}
			}
		}
	}
}

/* ---- the kernel ----------------------------------------------------------- */

PtxFunc *sm80_kernel(Arena *a, const Plan *p, Shape *s)
{
	Gen G = {0}, *g = &G;
	g->a = a, g->p = p, g->c = p->c, g->s = s;
	PtxFunc *f = ARENA_NEW(a, PtxFunc);
	ptx_func_init(f, a, arena_printf(a, "%s_fwd", p->c->name), SM80_THREADS);
	g->f = f;
	Smem sm = {0};
	plan_smem(s, &sm);
	f->smem_bytes = sm.total;
	int n = p->c->nodes.n;
	g->tile = ARENA_ARRAY(a, PReg *, n + 1);
	g->rowv = ARENA_ARRAY(a, PReg *, n + 1);
	g->acc = ARENA_ARRAY(a, PReg *, n + 1);
	for (int i = 0; i < n; i++) {
		g->tile[i] = ARENA_ARRAY(a, PReg, NEL);
		g->rowv[i] = ARENA_ARRAY(a, PReg, 2);
		g->acc[i] = ARENA_ARRAY(a, PReg, s->DV / 8 * 4 + 1);
	}
	load_params(g);
	decode_grid(g);
	PReg sbase = R(g, PC_B32), tid = special(g, "%tid.x");
	E2(PTX_MOV, ".u32", po_r(sbase), po_sym("smem"));
	Tile t = {0};
	t.prev = ARENA_ARRAY(a, PReg *, n + 1);
	for (int h = 0; h < 2; h++) {
		t.rows[h] = R(g, PC_B64);
		PReg q4 = R(g, PC_B64);
		E3(PTX_SHR, ".u64", po_r(q4), po_r(g->lane), po_i(2));
		E4(PTX_MAD, ".lo.s64", po_r(t.rows[h]), po_r(g->warp), po_i(16), po_r(q4));
		E3(PTX_ADD, ".s64", po_r(t.rows[h]), po_r(t.rows[h]), po_r(g->q0));
		if (h)
			E3(PTX_ADD, ".s64", po_r(t.rows[h]), po_r(t.rows[h]), po_i(8));
	}
	{
		PReg last = R(g, PC_B64);
		E3(PTX_SUB, ".s64", po_r(last), po_r(g->qext), po_i(1));
		for (int h = 0; h < 2; h++) {
			t.crows[h] = R(g, PC_B64);
			E3(PTX_MIN, ".s64", po_r(t.crows[h]), po_r(t.rows[h]), po_r(last));
		}
	}
	/* Q tiles and their fragments */
	PReg **qf[SM80_MAXG];
	for (int k = 0; k < s->ng1; k++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->n[i].kind == SN_GEMM1 && s->n[i].g == k)
				node = i;
		load_tile(g, node, s->g1[k].a, s->qcls, g->q0, g->qext, SM80_BM, s->g1[k].D, sm.q[k], sm.qs[k],
			  sbase, tid);
	}
	wait_all(g);
	for (int k = 0; k < s->ng1; k++) {
		long nk = s->g1[k].D / 16;
		qf[k] = ARENA_ARRAY(a, PReg *, nk + 1);
		for (long kk = 0; kk < nk; kk++) {
			/* A rows: warp*16 + (lane & 15), cols kk*16 + (lane >> 4)*8 */
			PReg row = R(g, PC_B64), cb = R(g, PC_B64), l15 = R(g, PC_B64), l4 = R(g, PC_B64);
			E3(PTX_AND, ".b64", po_r(l15), po_r(g->lane), po_i(15));
			E3(PTX_SHR, ".u64", po_r(l4), po_r(g->lane), po_i(4));
			E4(PTX_MAD, ".lo.s64", po_r(row), po_r(g->warp), po_i(16), po_r(l15));
			E4(PTX_MAD, ".lo.s64", po_r(cb), po_r(l4), po_i(16), po_i(kk * 32));
			PReg addr = lm_addr(g, sbase, sm.q[k], sm.qs[k], u32of(g, row), u32of(g, cb));
			qf[k][kk] = ARENA_ARRAY(a, PReg, 4);
			for (int q = 0; q < 4; q++)
				qf[k][kk][q] = R(g, PC_B32);
			E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16", po_vec(qf[k][kk], 4), po_mem(addr, 0));
		}
	}
	/* running state */
	for (int i = 0; i < n; i++) {
		SNodeKind k = s->n[i].kind;
		if (k == SN_RMAX || k == SN_RSUM || k == SN_REF)
			for (int h = 0; h < 2; h++) {
				g->rowv[i][h] = R(g, PC_F32);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_f(k == SN_RMAX ? -INFINITY : 0.0f));
			}
		if (k == SN_GEMM2)
			for (int el = 0; el < s->DV / 8 * 4; el++) {
				g->acc[i][el] = R(g, PC_F32);
				E2(PTX_MOV, ".f32", po_r(g->acc[i][el]), po_f(0.0f));
			}
		if (p->np[i].is_ref) {
			t.prev[i] = ARENA_ARRAY(a, PReg, 2);
			for (int h = 0; h < 2; h++)
				t.prev[i][h] = R(g, PC_F32);
		}
	}
	for (int i = 0; i < n; i++)
		if (s->n[i].kind == SN_REF)
			for (int h = 0; h < 2; h++) {
				g->node = i, g->half = h, g->row = t.crows[h];
				PReg v = sm80_expr(g, node(g, i)->body);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
	/* the stream */
	int Lloop = ptx_new_label(f), Lend = ptx_new_label(f), Lnext = ptx_new_label(f);
	int Lfull = ptx_new_label(f), Ldone = ptx_new_label(f);
	g->j0 = R(g, PC_B64), g->j1 = R(g, PC_B64);
	E2(PTX_MOV, ".b64", po_r(g->j0), po_i(0));
	ptx_label(f, Lloop);
	PReg fin = R(g, PC_PRED);
	E3(PTX_SETP, ".ge.s64", po_r(fin), po_r(g->j0), po_r(g->sext));
	E1(PTX_BRA, ".uni", po_label(Lend));
	ptx_guard(f, fin, 0);
	E3(PTX_ADD, ".s64", po_r(g->j1), po_r(g->j0), po_i(SM80_BN));
	E3(PTX_MIN, ".s64", po_r(g->j1), po_r(g->j1), po_r(g->sext));
	PReg any = R(g, PC_PRED), all = R(g, PC_PRED);
	{
		PReg z = R(g, PC_B32);
		E2(PTX_MOV, ".b32", po_r(z), po_i(0));
		E3(PTX_SETP, ".ne.s32", po_r(any), po_r(z), po_i(0));
		E3(PTX_SETP, ".eq.s32", po_r(all), po_r(z), po_i(0));
	}
	for (int i = 0; i < n; i++) {
		SNodeKind k = s->n[i].kind;
		if (k != SN_RMAX && k != SN_RSUM && k != SN_GEMM2 && k != SN_MAP && k != SN_GEMM1)
			continue;
		PReg al, ne;
		sm80_tile_class(g, i, &al, &ne);
		PReg nn = R(g, PC_PRED);
		E2(PTX_NOT, ".pred", po_r(nn), po_r(ne));
		E3(PTX_OR, ".pred", po_r(any), po_r(any), po_r(nn));
		E3(PTX_AND, ".pred", po_r(all), po_r(all), po_r(al));
	}
	E1(PTX_BRA, ".uni", po_label(Lnext));
	ptx_guard(f, any, 1);
	{
		/* a partial last tile takes the masked path: its padding must not count */
		PReg whole = R(g, PC_PRED), w = R(g, PC_B64);
		E3(PTX_SUB, ".s64", po_r(w), po_r(g->j1), po_r(g->j0));
		E3(PTX_SETP, ".eq.s64", po_r(whole), po_r(w), po_i(SM80_BN));
		E3(PTX_AND, ".pred", po_r(all), po_r(all), po_r(whole));
	}
	for (int i = 0; i < n; i++)
		if (p->np[i].is_ref)
			for (int h = 0; h < 2; h++)
				E2(PTX_MOV, ".f32", po_r(t.prev[i][h]), po_r(g->rowv[i][h]));
	for (int nt = 0; nt < NT; nt++)
		for (int c = 0; c < 2; c++) {
			PReg q = R(g, PC_B64);
			t.cols[nt][c] = R(g, PC_B64);
			E3(PTX_AND, ".b64", po_r(q), po_r(g->lane), po_i(3));
			E4(PTX_MAD, ".lo.s64", po_r(t.cols[nt][c]), po_r(q), po_i(2), po_r(g->j0));
			E3(PTX_ADD, ".s64", po_r(t.cols[nt][c]), po_r(t.cols[nt][c]), po_i(nt * 8 + c));
			PReg last = R(g, PC_B64);
			E3(PTX_SUB, ".s64", po_r(last), po_r(g->sext), po_i(1));
			t.ccols[nt][c] = R(g, PC_B64);
			E3(PTX_MIN, ".s64", po_r(t.ccols[nt][c]), po_r(t.cols[nt][c]), po_r(last));
		}
	for (int k = 0; k < s->ng1; k++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->n[i].kind == SN_GEMM1 && s->n[i].g == k)
				node = i;
		load_tile(g, node, s->g1[k].b, s->scls, g->j0, g->sext, SM80_BN, s->g1[k].D, sm.k[k], sm.ks[k],
			  sbase, tid);
	}
	for (int v = 0; v < s->nvt; v++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->n[i].kind == SN_GEMM2 && s->g2[s->n[i].g].vslot == v)
				node = i;
		load_tile(g, node, s->vt[v], s->scls, g->j0, g->sext, SM80_BN, s->DV, sm.v[v], sm.vs, sbase, tid);
	}
	wait_all(g);
	for (int i = 0; i < n; i++)
		if (s->n[i].kind == SN_GEMM1)
			gemm1_tile(g, i, qf[s->n[i].g], sbase, &sm);
	E1(PTX_BRA, ".uni", po_label(Lfull));
	ptx_guard(f, all, 0);
	tile_body(g, &t, 1, sbase, &sm);
	E1(PTX_BRA, ".uni", po_label(Ldone));
	ptx_label(f, Lfull);
	tile_body(g, &t, 0, sbase, &sm);
	ptx_label(f, Ldone);
	E1(PTX_BAR, "", po_i(0));
	ptx_label(f, Lnext);
	E3(PTX_ADD, ".s64", po_r(g->j0), po_r(g->j0), po_i(SM80_BN));
	E1(PTX_BRA, ".uni", po_label(Lloop));
	ptx_label(f, Lend);
	epilogue(g, &t);
	E(g, PTX_RET, "", 0, Z, Z, Z, Z, Z);
	return f;
}
