/*
** lowering/sm80/sm80_kernel.c: the sm_80 one-pass attention kernel.
**
** A CTA of 4 warps owns 64 * mt query rows (16 * mt per warp: mt m16 row
** blocks, so that each K and V fragment read from shared memory feeds mt
** mma's) of one grid point and walks the KV index in tiles of SM80_BN keys.
** Q tiles are loaded once (cp.async, zero-filled past the end) and kept as
** ldmatrix fragments in registers when they fit, else re-read from shared
** memory per k-step; each KV tile is classified from the masks (empty: skipped;
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

#define NT    (SM80_BN / 8) /* n-tiles of a score tile */
#define NEL   (NT * 4)      /* score elements per thread and m16 row block */
#define MAXMT 2
#define MAXRS (2 * MAXMT) /* row slots per thread: (row block, half) */

static PReg R(Gen *g, PtxCls c)
{
	return ptx_reg(g->f, c);
}

static void E(Gen *g, PtxOpcode op, const char *m, int n, PtxOpnd a, PtxOpnd b, PtxOpnd c,
	      PtxOpnd d, PtxOpnd e)
{
	PtxOpnd o[5] = {a, b, c, d, e};
	ptx_emit(g->f, op, m, n, o);
}

#define Z                        ((PtxOpnd){0})
#define E1(op, m, a)             E(g, op, m, 1, a, Z, Z, Z, Z)
#define E2(op, m, a, b)          E(g, op, m, 2, a, b, Z, Z, Z)
#define E3(op, m, a, b, c)       E(g, op, m, 3, a, b, c, Z, Z)
#define E4(op, m, a, b, c, d)    E(g, op, m, 4, a, b, c, d, Z)
#define E5(op, m, a, b, c, d, e) E(g, op, m, 5, a, b, c, d, e)

static const Node *node(const Gen *g, int i)
{
	return g->p->c->nodes.v[i];
}

static PReg fmov(Gen *g, float v)
{
	PReg r = R(g, PC_F32);
	E2(PTX_MOV, ".f32", po_r(r), po_f(v));
	return r;
}

/* ---- parameters and indices ---------------------------------------------- */

/* Parameter names, declared once; load_params reads them into registers. */
static void declare_params(Gen *g)
{
	const Cascade *c = g->c;
	PtxFunc *f = g->f;
	int nt = c->tensors.n;
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
		qn[i] =
		    ptx_param(f, arena_printf(g->a, "p%d", i), p->type == VT_INT ? ".s32" : ".f32");
	}
	int nm = gpu_magic_params(g->p);
	g->mn = ARENA_ARRAY(g->a, const char *, nm + 1);
	for (int i = 0; i < nm; i++)
		g->mn[i] = ptx_param(f, arena_printf(g->a, "g%d", i), ".u32");
	g->pn = pn, g->sn = sn, g->dn = dn, g->qn = qn;
}

/* Magic parameter i (GPU_MAGIC_*, or a class's pair after them). */
static PReg magic(Gen *g, int i)
{
	PReg r = R(g, PC_B32);
	E2(PTX_LD, ".param.u32", po_r(r), po_memsym(g->mn[i], 0));
	return r;
}

/* n / d for n < 2^31 from d's magic pair (attnrt_divmagic): a wide
** multiply and a shift instead of ptxas's division (I2F, MUFU.RCP, F2I
** and some fifteen more instructions, one chain of them per divisor at
** the CTA's start and again before its epilogue). */
static PReg magic_div(Gen *g, PReg n, PReg m, PReg s)
{
	PReg w = R(g, PC_B64), q = R(g, PC_B32);
	E3(PTX_MUL, ".wide.u32", po_r(w), po_r(n), po_r(m));
	E3(PTX_SHR, ".b64", po_r(w), po_r(w), po_r(s));
	E2(PTX_CVT, ".u32.u64", po_r(q), po_r(w));
	return q;
}

/* Parameters into registers: at entry, and again for the epilogue, so that
** values the stream does not use are not held in registers across it. */
static void load_params(Gen *g)
{
	const Cascade *c = g->c;
	int nt = c->tensors.n;
	const char **pn = g->pn, ***sn = g->sn, **dn = g->dn, **qn = g->qn;
	g->tptr = ARENA_ARRAY(g->a, PReg, nt + 1);
	g->tstride = ARENA_ARRAY(g->a, PReg *, nt + 1);
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

/* log2 of x, a power of two (shift counts of tile sizes and strides). */
static int log2_of(long x)
{
	int n = 0;
	while ((1L << n) < x)
		n++;
	return n;
}

/* Lane and warp as b64, re-read from %tid.x where a tile needs them, so
** that they are not held in registers across the contractions. */
static void lane_ids(Gen *g)
{
	PReg tid = special(g, "%tid.x");
	g->lane = R(g, PC_B64), g->warp = R(g, PC_B64);
	E3(PTX_AND, ".b64", po_r(g->lane), po_r(tid), po_i(31));
	E3(PTX_SHR, ".u64", po_r(g->warp), po_r(tid), po_i(5));
}

/* q = a / b and r = a % b of non-negative values below 2^32 (grid indices
** and extents: the launcher keeps grid.y and its factors below 65536 and
** every dim below 2^31), through 32-bit division: the 64-bit one is a
** subroutine of some hundred instructions. Left for GQA packing's tiles per
** group; the launch order and the grid classes divide by magic pairs. */
static PReg u32of(Gen *g, PReg x);

static void divrem32(Gen *g, PReg a, PReg b, PReg q, PReg r)
{
	PReg a32 = u32of(g, a), b32 = u32of(g, b), q32 = R(g, PC_B32), r32 = R(g, PC_B32);
	if (q.n) {
		E3(PTX_DIV, ".u32", po_r(q32), po_r(a32), po_r(b32));
		E2(PTX_CVT, ".u64.u32", po_r(q), po_r(q32));
	}
	if (r.n) {
		E3(PTX_REM, ".u32", po_r(r32), po_r(a32), po_r(b32));
		E2(PTX_CVT, ".u64.u32", po_r(r), po_r(r32));
	}
}

/* A u32 special register. */
static PReg special32(Gen *g, const char *sreg)
{
	PReg r = R(g, PC_B32);
	E2(PTX_MOV, ".u32", po_r(r), po_sym(sreg));
	return r;
}

/* The CTA's query tile qt and other grid index rest (flattened, class
** order) from its launch position. The launcher's grid is (query tiles nx,
** the rest ny), and CTAs start roughly in order of their linear id
** x + nx y. That order is regrouped: groups of G = ceil(256 / nx) values of
** the rest (heads, batches) in turn, within a group the query tiles last
** first, the group's G heads side by side. Under a causal mask the last
** tiles are the longest: started first, across all of a group's heads, they
** leave short CTAs for the launch's tail (a simulation of 264 CTA slots put
** the causal makespan 7% over the ideal with the last tiles first per head,
** 0-2% with groups). Some 256 CTAs (two per SM on a 128-SM GPU) run at once,
** on about G heads' K and V, bm (D + DV) 2 bytes per CTA: 16 MiB at D = 128,
** within the L2. Where every CTA streams the same keys (no mask reads the
** query row) there is no long CTA to start first, and the launch
** order stays: a head's query tiles start together and share its K and V
** tiles in the L2 within a short time (H100, full attention, D = 128, 2k:
** +2.0% and +2.8% in two A/Bs; within 1-2% elsewhere). */
static void launch_order(Gen *g, PReg qt, PReg rest)
{
	PReg nx = special32(g, "%nctaid.x"), ny = special32(g, "%nctaid.y"),
	     cx = special32(g, "%ctaid.x"), cy = special32(g, "%ctaid.y");
	PReg L = R(g, PC_B32), r = R(g, PC_B32), y0 = R(g, PC_B32), gs = R(g, PC_B32),
	     y = R(g, PC_B32), t = R(g, PC_B32), G, GT, grp, q;
	if (!g->grouped) {
		E2(PTX_CVT, ".u64.u32", po_r(qt), po_r(cx));
		E2(PTX_CVT, ".u64.u32", po_r(rest), po_r(cy));
		return;
	}
	/* G = ceil(256 / nx) and GT = G nx come from the launcher, and the
	** two divisions by their magic pairs (the last group's size gs < G
	** has its own) */
	PReg last = R(g, PC_PRED), m = R(g, PC_B32), s = R(g, PC_B32), mx, sx, my, sy;
	E4(PTX_MAD, ".lo.u32", po_r(L), po_r(cy), po_r(nx), po_r(cx));
	G = magic(g, GPU_MAGIC_G);
	GT = magic(g, GPU_MAGIC_GT);
	mx = magic(g, GPU_MAGIC_M_GT);
	sx = magic(g, GPU_MAGIC_S_GT);
	grp = magic_div(g, L, mx, sx);
	E3(PTX_MUL, ".lo.u32", po_r(y0), po_r(grp), po_r(G));
	E3(PTX_MUL, ".lo.u32", po_r(t), po_r(grp), po_r(GT));
	E3(PTX_SUB, ".u32", po_r(r), po_r(L), po_r(t));
	E3(PTX_SUB, ".u32", po_r(gs), po_r(ny), po_r(y0));
	E3(PTX_SETP, ".lt.u32", po_r(last), po_r(gs), po_r(G));
	E3(PTX_MIN, ".u32", po_r(gs), po_r(gs), po_r(G));
	mx = magic(g, GPU_MAGIC_M_G);
	sx = magic(g, GPU_MAGIC_S_G);
	my = magic(g, GPU_MAGIC_M_GL);
	sy = magic(g, GPU_MAGIC_S_GL);
	E4(PTX_SELP, ".b32", po_r(m), po_r(my), po_r(mx), po_r(last));
	E4(PTX_SELP, ".b32", po_r(s), po_r(sy), po_r(sx), po_r(last));
	q = magic_div(g, r, m, s);
	E3(PTX_MUL, ".lo.u32", po_r(t), po_r(q), po_r(gs));
	E3(PTX_SUB, ".u32", po_r(y), po_r(r), po_r(t));
	E3(PTX_ADD, ".u32", po_r(y), po_r(y), po_r(y0));
	E3(PTX_SUB, ".u32", po_r(t), po_r(nx), po_r(q));
	E3(PTX_SUB, ".u32", po_r(t), po_r(t), po_i(1));
	E2(PTX_CVT, ".u64.u32", po_r(qt), po_r(t));
	E2(PTX_CVT, ".u64.u32", po_r(rest), po_r(y));
}

static void decode_grid(Gen *g)
{
	const Plan *p = g->p;
	g->grid = ARENA_ARRAY(g->a, PReg, p->nclasses + 1);
	PReg qt = R(g, PC_B64), rest = R(g, PC_B64);
	launch_order(g, qt, rest);
	g->q0 = R(g, PC_B64);
	E3(PTX_MUL, ".lo.s64", po_r(g->q0), po_r(qt), po_i(g->bm));
	PReg gend = {0};
	if (g->s->pack) {
		/* x = group * tiles per group + tile: rows group*X + tile*bm, up to
		** the group's end (its K/V head is row / X for every row) */
		g->node = 0;
		PReg X = sm80_expr(g, g->s->pack), tpg = R(g, PC_B64), grp = R(g, PC_B64),
		     tl = R(g, PC_B64);
		E3(PTX_ADD, ".s64", po_r(tpg), po_r(X), po_i(g->bm - 1));
		/* bm is 64 or 128: a shift, not a 64-bit division */
		E3(PTX_SHR, ".u64", po_r(tpg), po_r(tpg), po_i(log2_of(g->bm)));
		divrem32(g, qt, tpg, grp, tl);
		E3(PTX_MUL, ".lo.s64", po_r(tl), po_r(tl), po_i(g->bm));
		E4(PTX_MAD, ".lo.s64", po_r(g->q0), po_r(grp), po_r(X), po_r(tl));
		gend = R(g, PC_B64);
		E4(PTX_MAD, ".lo.s64", po_r(gend), po_r(grp), po_r(X), po_r(X));
	}
	int pair = GPU_MAGIC_FIXED;
	for (int k = 0; k < p->nclasses; k++) {
		if (!p->classes[k].grid || p->classes[k].qtile)
			continue;
		/* rest / ext and rest % ext by ext's magic pair (the launcher's) */
		PReg ext = u32of(g, class_extent(g, k)), rest32 = u32of(g, rest), t = R(g, PC_B32),
		     m = magic(g, pair), s = magic(g, pair + 1), q = magic_div(g, rest32, m, s);
		pair += 2;
		E3(PTX_MUL, ".lo.u32", po_r(t), po_r(q), po_r(ext));
		E3(PTX_SUB, ".u32", po_r(t), po_r(rest32), po_r(t));
		g->grid[k] = R(g, PC_B64);
		E2(PTX_CVT, ".u64.u32", po_r(g->grid[k]), po_r(t));
		PReg r2 = R(g, PC_B64);
		E2(PTX_CVT, ".u64.u32", po_r(r2), po_r(q));
		rest = r2;
	}
	g->qext = class_extent(g, g->s->qcls);
	if (gend.n) /* the CTA's rows end with its group */
		E3(PTX_MIN, ".s64", po_r(g->qext), po_r(g->qext), po_r(gend));
	g->sext = class_extent(g, g->s->scls);
	lane_ids(g);
}

/* ---- shared memory and loads --------------------------------------------- */

/* The tile table of a window of TAB_TILES key tiles (see scan_table): the
** window's first key (s64, a multiple of TAB_TILES * SM80_BN); a bit per
** tile of "some mask true somewhere" and one of "every mask true
** everywhere", as four u32 words each (a warp's 32 tiles per word); and
** per tile p a u16 entry: the first tile at or after p whose any bit is
** set (TAB_TILES where none is), plus 256 where its all bit is. */
enum {
	TAB_WORDS = SM80_WARPS,
	TAB_TILES = 32 * TAB_WORDS,
	TAB_ANY = 16,
	TAB_ALL = TAB_ANY + 4 * TAB_WORDS,
	TAB_NEXT = TAB_ALL + 4 * TAB_WORDS,
	TAB_BYTES = TAB_NEXT + 2 * TAB_TILES
};

typedef struct Smem {
	uint32_t q[GPU_MAXG], k[GPU_MAXG], v[GPU_MAXG]; /* byte offsets */
	uint32_t kbuf[GPU_MAXG], vbuf[GPU_MAXG];         /* bytes between the two buffers */
	uint32_t qs[GPU_MAXG], ks[GPU_MAXG], vs;         /* row strides (bytes) */
	uint32_t scan; /* the tile table of masks that read data (16-byte aligned), or 0 */
	uint32_t total;
} Smem;

/* Row strides are padded by 16 bytes so ldmatrix's eight rows hit eight
** different bank groups. */
static void plan_smem(const KernelShape *s, Smem *m, int bm, int table)
{
	uint32_t off = 0;
	for (int i = 0; i < s->nqk; i++) {
		m->qs[i] = m->ks[i] = (uint32_t)(s->qk[i].D * 2 + 16);
		m->q[i] = off, off += (uint32_t)bm * m->qs[i];
		m->k[i] = off, m->kbuf[i] = SM80_BN * m->ks[i], off += 2 * m->kbuf[i];
	}
	m->vs = (uint32_t)(s->DV * 2 + 16);
	for (int i = 0; i < s->nvreads; i++)
		m->v[i] = off, m->vbuf[i] = SM80_BN * m->vs, off += 2 * m->vbuf[i];
	m->scan = table ? off : 0;
	off += table ? TAB_BYTES : 0;
	m->total = off;
}

static PReg u32of(Gen *g, PReg x)
{
	PReg r = R(g, PC_B32);
	E2(PTX_CVT, ".u32.u64", po_r(r), po_r(x));
	return r;
}

/* A tile load's per-thread work, computed once. The 128 threads copy the
** tile's 16-byte chunks in order, so (with D/8 dividing 128) a thread's
** chunks share one column and lie `step` rows apart: per tile, one base
** address plus multiples of step*rowstride, and shared-memory addresses that
** differ by immediates. */
typedef struct TileLoad {
	int n, step; /* chunks per thread, rows between them */
	uint32_t sstride;
	PReg row0;      /* b64 first row of this thread's chunks */
	PReg loff;      /* b64 byte offset of the first chunk from (row 0, d 0) */
	PReg stepbytes; /* b64 step * rowstride */
	PReg saddr;     /* u32 shared address of the first chunk */
	PReg base;      /* b64 global address of (row 0, d 0) of the read */
	PReg rowstride; /* b64 bytes between rows */
	int general;    /* D/8 does not divide the block (D = 96, 192): per-chunk math */
	long cpr;
	PReg tid32, sbase; /* for the general case */
	uint32_t soff;
	PReg baseoff;      /* b64 base + loff: the thread's first chunk of row 0 */
	const char *pname; /* the tensor's pointer parameter: a valid address */
	int stepshift;     /* log2(step) */
	int aligned;       /* tile starts are multiples of step (K and V tiles) */
} TileLoad;

/* Position of the subscript that runs over the tile's rows (class rowcls). */
static int row_position(Gen *g, int gnode, const Expr *acc, int rowcls)
{
	for (int k = 0; k < acc->nargs; k++)
		if (acc->args[k]->kind == EX_INDEX && g->p->cls[gnode][acc->args[k]->var] == rowcls)
			return k;
	return 0;
}

static void tile_load_setup(Gen *g, TileLoad *L, int gnode, const Expr *acc, int rowcls, int rows,
			    long width, uint32_t soff, uint32_t sstride, PReg sbase, PReg tid)
{
	long cpr = width / 8; /* chunks per row */
	L->n = (int)(rows * cpr / SM80_THREADS);
	L->step = (int)(SM80_THREADS / cpr);
	L->sstride = sstride;
	L->general = SM80_THREADS % cpr != 0;
	L->cpr = cpr, L->sbase = sbase, L->soff = soff;
	L->tid32 = u32of(g, tid);
	L->rowstride = R(g, PC_B64);
	E3(PTX_MUL, ".lo.s64", po_r(L->rowstride),
	   po_r(g->tstride[acc->tensor->id][row_position(g, gnode, acc, rowcls)]), po_i(2));
	g->node = gnode;
	PReg saverow = g->row, savecol = g->col, zero = R(g, PC_B64);
	E2(PTX_MOV, ".b64", po_r(zero), po_i(0));
	g->row = g->col = zero;
	if (rowcls != g->s->qcls)
		g->row = g->q0; /* a packed K/V head is q0 / X for all the CTA's rows */
	L->base = sm80_addr(g, acc->tensor, acc->args);
	g->row = saverow, g->col = savecol;
	PReg col = R(g, PC_B64);
	L->row0 = R(g, PC_B64), L->loff = R(g, PC_B64), L->stepbytes = R(g, PC_B64),
	L->saddr = R(g, PC_B32);
	/* in 32 bits: ptxas turns a 64-bit division, even by a constant, into
	** a call of its division subroutine (three loaders made six calls, some
	** 2,000 cycles before the CTA's first load was issued) */
	PReg r32 = R(g, PC_B32), c32 = R(g, PC_B32);
	E3(PTX_DIV, ".u32", po_r(r32), po_r(L->tid32), po_i(cpr));
	E3(PTX_REM, ".u32", po_r(c32), po_r(L->tid32), po_i(cpr));
	E2(PTX_CVT, ".u64.u32", po_r(L->row0), po_r(r32));
	E2(PTX_CVT, ".u64.u32", po_r(col), po_r(c32));
	E3(PTX_MUL, ".lo.s64", po_r(L->loff), po_r(L->row0), po_r(L->rowstride));
	E4(PTX_MAD, ".lo.s64", po_r(L->loff), po_r(col), po_i(16), po_r(L->loff));
	E3(PTX_MUL, ".lo.s64", po_r(L->stepbytes), po_r(L->rowstride), po_i(L->step));
	L->baseoff = R(g, PC_B64);
	E3(PTX_ADD, ".s64", po_r(L->baseoff), po_r(L->base), po_r(L->loff));
	L->pname = g->pn[acc->tensor->id];
	L->stepshift = log2_of(L->step),
	L->aligned = rowcls == g->s->scls && SM80_BN % L->step == 0;
	E4(PTX_MAD, ".lo.u32", po_r(L->saddr), po_r(u32of(g, L->row0)), po_i(sstride), po_r(sbase));
	E4(PTX_MAD, ".lo.u32", po_r(L->saddr), po_r(u32of(g, col)), po_i(16), po_r(L->saddr));
	E3(PTX_ADD, ".u32", po_r(L->saddr), po_r(L->saddr), po_i(soff));
}

/* The general case: chunk c = it*128 + tid is (c / cpr, c % cpr). */
static void tile_load_general(Gen *g, const TileLoad *L, PReg first, PReg ext, PReg sdst)
{
	PReg tile = R(g, PC_B64);
	E4(PTX_MAD, ".lo.s64", po_r(tile), po_r(first), po_r(L->rowstride), po_r(L->base));
	for (int it = 0; it < L->n; it++) {
		PReg c = R(g, PC_B32), r = R(g, PC_B32), col = R(g, PC_B32), r64 = R(g, PC_B64),
		     c64 = R(g, PC_B64);
		E3(PTX_ADD, ".u32", po_r(c), po_r(L->tid32), po_i(it * SM80_THREADS));
		E3(PTX_DIV, ".u32", po_r(r), po_r(c), po_i(L->cpr));
		E3(PTX_REM, ".u32", po_r(col), po_r(c), po_i(L->cpr));
		E2(PTX_CVT, ".u64.u32", po_r(r64), po_r(r));
		E2(PTX_CVT, ".u64.u32", po_r(c64), po_r(col));
		PReg grow = R(g, PC_B64), ok = R(g, PC_PRED), a = R(g, PC_B64),
		     bytes = R(g, PC_B32), sa = R(g, PC_B32);
		E3(PTX_ADD, ".s64", po_r(grow), po_r(first), po_r(r64));
		E3(PTX_SETP, ".lt.s64", po_r(ok), po_r(grow), po_r(ext));
		E4(PTX_MAD, ".lo.s64", po_r(a), po_r(r64), po_r(L->rowstride), po_r(tile));
		E4(PTX_MAD, ".lo.s64", po_r(a), po_r(c64), po_i(16), po_r(a));
		E4(PTX_SELP, ".b64", po_r(a), po_r(a), po_r(tile), po_r(ok));
		E4(PTX_SELP, ".b32", po_r(bytes), po_i(16), po_i(0), po_r(ok));
		E4(PTX_MAD, ".lo.u32", po_r(sa), po_r(r), po_i(L->sstride), po_r(sdst));
		E4(PTX_MAD, ".lo.u32", po_r(sa), po_r(col), po_i(16), po_r(sa));
		E4(PTX_CP_ASYNC, ".cg.shared.global", po_mem(sa, 0), po_mem(a, 0), po_i(16),
		   po_r(bytes));
	}
}

/* cp.async of the tile whose first row is `first` (rows past ext: zeros,
** read from a valid address instead), into the buffer at soff_extra; with
** `whole` (the caller knows every row is below ext) without the per-chunk
** bounds tests and selects. */
static void tile_load(Gen *g, const TileLoad *L, PReg first, PReg ext, uint32_t soff_extra,
		      int whole)
{
	if (L->general) {
		PReg d = R(g, PC_B32);
		E3(PTX_ADD, ".u32", po_r(d), po_r(L->sbase), po_i(L->soff + soff_extra));
		tile_load_general(g, L, first, ext, d);
		return;
	}
	/* src = first * rowstride + baseoff, with first a multiple of step (and
	** zero-filled chunks read from the tensor's own first element), so that
	** only baseoff, stepbytes and row0 stay in registers across the stream */
	PReg src = R(g, PC_B64), grow = R(g, PC_B64), q = R(g, PC_B64), p = R(g, PC_B64),
	     tile = R(g, PC_B64);
	if (L->aligned) {
		E3(PTX_SHR, ".s64", po_r(q), po_r(first), po_i(L->stepshift));
		E4(PTX_MAD, ".lo.s64", po_r(src), po_r(q), po_r(L->stepbytes), po_r(L->baseoff));
	} else {
		E4(PTX_MAD, ".lo.s64", po_r(src), po_r(first), po_r(L->rowstride),
		   po_r(L->baseoff));
	}
	if (whole) {
		for (int it = 0; it < L->n; it++) {
			E3(PTX_CP_ASYNC, ".cg.shared.global",
			   po_mem(L->saddr,
				  (int32_t)(soff_extra +
					    (uint32_t)it * (uint32_t)L->step * L->sstride)),
			   po_mem(src, 0), po_i(16));
			if (it + 1 < L->n)
				E3(PTX_ADD, ".s64", po_r(src), po_r(src), po_r(L->stepbytes));
		}
		return;
	}
	/* the thread's first row, from %tid.x: not held across the stream */
	PReg tid = R(g, PC_B32), r0 = R(g, PC_B32), r064 = R(g, PC_B64);
	E2(PTX_MOV, ".u32", po_r(tid), po_sym("%tid.x"));
	E3(PTX_DIV, ".u32", po_r(r0), po_r(tid), po_i(L->cpr));
	E2(PTX_CVT, ".u64.u32", po_r(r064), po_r(r0));
	E3(PTX_ADD, ".s64", po_r(grow), po_r(first), po_r(r064));
	E2(PTX_LD, ".param.u64", po_r(p), po_memsym(L->pname, 0));
	E2(PTX_CVTA, ".to.global.u64", po_r(tile), po_r(p));
	for (int it = 0; it < L->n; it++) {
		PReg ok = R(g, PC_PRED), a = R(g, PC_B64), bytes = R(g, PC_B32);
		E3(PTX_SETP, ".lt.s64", po_r(ok), po_r(grow), po_r(ext));
		E4(PTX_SELP, ".b64", po_r(a), po_r(src), po_r(tile), po_r(ok));
		E4(PTX_SELP, ".b32", po_r(bytes), po_i(16), po_i(0), po_r(ok));
		E4(PTX_CP_ASYNC, ".cg.shared.global",
		   po_mem(L->saddr,
			  (int32_t)(soff_extra + (uint32_t)it * (uint32_t)L->step * L->sstride)),
		   po_mem(a, 0), po_i(16), po_r(bytes));
		if (it + 1 < L->n) {
			E3(PTX_ADD, ".s64", po_r(src), po_r(src), po_r(L->stepbytes));
			E3(PTX_ADD, ".s64", po_r(grow), po_r(grow), po_i(L->step));
		}
	}
}

/* The same load into buffer buf of a double-buffered tile (bufbytes apart). */
static void tile_load_buf(Gen *g, TileLoad *L, PReg first, PReg ext, PReg buf, uint32_t bufbytes,
			  int whole)
{
	if (L->general) {
		PReg d = R(g, PC_B32);
		E4(PTX_MAD, ".lo.u32", po_r(d), po_r(buf), po_i(bufbytes), po_r(L->sbase));
		E3(PTX_ADD, ".u32", po_r(d), po_r(d), po_i(L->soff));
		tile_load_general(g, L, first, ext, d);
		return;
	}
	PReg save = L->saddr, a = R(g, PC_B32);
	E4(PTX_MAD, ".lo.u32", po_r(a), po_r(buf), po_i(bufbytes), po_r(L->saddr));
	L->saddr = a;
	tile_load(g, L, first, ext, 0, whole);
	L->saddr = save;
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

/* ---- per-tile work ------------------------------------------------------ */

typedef struct Tile {
	PReg rows[MAXRS];      /* b64 query row of each row slot */
	PReg cbase;            /* b64 key index of the thread's column 0: j0 + 2 (lane % 4) */
	PReg clast;            /* b64 last key of the stream: columns are clamped to it */
	PReg crows[MAXRS];     /* the same, clamped into range: padding evaluates */
	PReg **prev;           /* [nodes][row slots]: reference values before this tile */
	PReg **okw;            /* [nodes][words]: masked path predicates as bits (shared) */
	unsigned char **okset; /* [nodes][score elements]: bit computed */
	/* per node, in the masked path: key bounds per row slot from the filter's
	** conjuncts that are linear in the key (b32, lo <= j < hi), and the rest */
	signed char *kb; /* [nodes] 0: not yet, 1: bounds, -1: none */
	PReg **klo, **khi;
	const Expr **kres;
	PReg cbase32;
	/* lazy rebasing (see lazy_plan): per node, 1 for a lazy reference and
	** its threshold; whether a reference moved in this tile; the true
	** running maxes where the epilogue reads them */
	signed char *lazy;
	float *tau;
	PReg chg;
	int rescaled; /* this tile's states are already rebased */
	int lastref;  /* the last lazy reference (node), or -1 */
	PReg **mtrue;
	/* masking once (see maskonce_plan): the tile node whose masked
	** elements are set to -inf on the masked path, or -1; per node, 1
	** where that leaves its reduction's identity at masked points */
	int mo;
	signed char *moid;
} Tile;

/* Score element el of a thread: row block el / NEL, n-tile (el % NEL) / 4,
** row half (el >> 1) & 1, column el & 1 (the mma C fragment layout). The
** row slot 2 * block + half indexes per-row values. */
static int el_rs(int el)
{
	return el / NEL * 2 + ((el >> 1) & 1);
}

/* The row slot of output accumulator el (net = DV / 8 n8 tiles per row block). */
static int acc_rs(int net, int el)
{
	return el / (net * 4) * 2 + ((el >> 1) & 1);
}

static int el_nt(int el)
{
	return el % NEL / 4;
}

/* Query rows of the thread's row slots (block h / 2, half h % 2), and the
** same clamped into range. Recomputed where used (each tile body, the
** epilogue) so that they are not live, in registers, across the contraction. */
static void tile_rows(Gen *g, Tile *t)
{
	PReg q4 = R(g, PC_B64), base = R(g, PC_B64), last = R(g, PC_B64);
	E3(PTX_SHR, ".u64", po_r(q4), po_r(g->lane), po_i(2));
	E4(PTX_MAD, ".lo.s64", po_r(base), po_r(g->warp), po_i(16 * g->mt), po_r(q4));
	E3(PTX_ADD, ".s64", po_r(base), po_r(base), po_r(g->q0));
	E3(PTX_SUB, ".s64", po_r(last), po_r(g->qext), po_i(1));
	for (int h = 0; h < 2 * g->mt; h++) {
		t->rows[h] = R(g, PC_B64), t->crows[h] = R(g, PC_B64);
		E3(PTX_ADD, ".s64", po_r(t->rows[h]), po_r(base), po_i(h / 2 * 16 + h % 2 * 8));
		E3(PTX_MIN, ".s64", po_r(t->crows[h]), po_r(t->rows[h]), po_r(last));
	}
	/* each row block's first row slot (sm80_shift.c) */
	g->row0[0] = t->crows[0], g->row0[1] = t->crows[2 * g->mt - 2];
}

/* Key index of score element el (clamped: padding evaluates in-bounds
** loads whose results are never used), computed where needed rather than
** kept per column in registers. */
static PReg key_of(Gen *g, Tile *t, int el, int clamp)
{
	PReg k = R(g, PC_B64);
	E3(PTX_ADD, ".s64", po_r(k), po_r(t->cbase), po_i(el_nt(el) * 8 + (el & 1)));
	if (clamp)
		E3(PTX_MIN, ".s64", po_r(k), po_r(k), po_r(t->clast));
	return k;
}

static void scope_elem(Gen *g, Tile *t, int i, int el)
{
	g->node = i, g->elem = el, g->half = el_rs(el);
	g->row = t->crows[g->half], g->col = key_of(g, t, el, 1);
	g->cbase = t->cbase, g->coloff = el_nt(el) * 8 + (el & 1);
}

/* Nodes k and i test the same condition of the same (row, key) point: equal
** filters whose variables are numbered alike and lie in the same classes. */
static int same_filter(Gen *g, int k, int i)
{
	return sm80_same_read(g, k, node(g, k)->filter, i, node(g, i)->filter, 1);
}

/* Splits node i's filter into key bounds lo <= j < hi, each an expression of
** the row (conjuncts j < e, e - j >= w, ...), and the rest. */
typedef struct KeyBounds {
	Gen *g;
	int sv;
	Expr *lo, *hi;
	const Expr *rest;
} KeyBounds;

static void key_bound(const Expr *c, void *ud)
{
	KeyBounds *kb = ud;
	Gen *g = kb->g;
	int cl, cr;
	Expr *rl, *rr;
	if (c->kind != EX_BINOP || c->op < OP_LT || c->op > OP_GE || c->args[0]->type != VT_INT ||
	    !sm80_key_linear(g, kb->sv, c->args[0], &cl, &rl) ||
	    !sm80_key_linear(g, kb->sv, c->args[1], &cr, &rr) || (cl - cr != 1 && cl - cr != -1)) {
		kb->rest = expr_and(g->a, (Expr *)kb->rest, (Expr *)c);
		return;
	}
	/* (cl - cr) j op b */
	Expr *b = expr_binop(g->a, OP_SUB, rr, rl), *one = expr_int(g->a, 1);
	Op op = c->op;
	if (cl - cr == -1) {
		b = expr_binop(g->a, OP_SUB, expr_int(g->a, 0), b);
		op = op == OP_LT ? OP_GT : op == OP_LE ? OP_GE : op == OP_GT ? OP_LT : OP_LE;
	}
	Expr *lo = NULL, *hi = NULL;
	switch (op) {
	case OP_LT: hi = b; break;
	case OP_LE: hi = expr_binop(g->a, OP_ADD, b, one); break;
	case OP_GT: lo = expr_binop(g->a, OP_ADD, b, one); break;
	default: lo = b; break;
	}
	if (lo)
		kb->lo = kb->lo ? expr_binop(g->a, OP_MAX, kb->lo, lo) : lo;
	if (hi)
		kb->hi = kb->hi ? expr_binop(g->a, OP_MIN, kb->hi, hi) : hi;
}

/* Key bounds of node i per row slot, computed once per masked tile body
** (affine masks: causal, windows, kv_len), clamped into [0, sext] so that
** 32-bit compares of the tile's keys decide them: two compares per score
** instead of the filter's 64-bit arithmetic, with the bounds taken
** relative to the thread's first column. */
static int key_bounds(Gen *g, Tile *t, int i)
{
	if (t->kb[i])
		return t->kb[i] > 0;
	const Node *n = node(g, i);
	KeyBounds kb = {g, g->p->np[i].svar, NULL, NULL, NULL};
	t->kb[i] = -1;
	if (kb.sv < 0)
		return 0;
	plan_conjuncts(n->filter, key_bound, &kb);
	t->kres[i] = kb.rest;
	t->klo[i] = ARENA_ARRAY(g->a, PReg, MAXRS);
	t->khi[i] = ARENA_ARRAY(g->a, PReg, MAXRS);
	PReg zero = R(g, PC_B64);
	E2(PTX_MOV, ".b64", po_r(zero), po_i(0));
	for (int h = 0; h < 2 * g->mt; h++) {
		g->node = i, g->half = h, g->row = t->crows[h], g->col = t->cbase, g->elem = -1;
		PReg lo = zero, hi = g->sext, l = R(g, PC_B64), u = R(g, PC_B64);
		if (kb.lo)
			lo = sm80_expr(g, kb.lo);
		if (kb.hi)
			hi = sm80_expr(g, kb.hi);
		E3(PTX_MAX, ".s64", po_r(l), po_r(lo), po_r(zero));
		E3(PTX_MIN, ".s64", po_r(l), po_r(l), po_r(g->sext));
		E3(PTX_MIN, ".s64", po_r(u), po_r(hi), po_r(g->sext));
		E3(PTX_MAX, ".s64", po_r(u), po_r(u), po_r(zero));
		/* relative to the thread's first column: a score's test is then
		** two compares of the bounds with its column offset, an immediate */
		PReg lr = u32of(g, l), ur = u32of(g, u);
		E3(PTX_SUB, ".s32", po_r(lr), po_r(lr), po_r(t->cbase32));
		E3(PTX_SUB, ".s32", po_r(ur), po_r(ur), po_r(t->cbase32));
		t->klo[i][h] = lr, t->khi[i][h] = ur;
	}
	t->kb[i] = 1;
	return 1;
}

/* Whether element el is in node i's mask (a tile on the masked path). */
static PReg elem_ok(Gen *g, Tile *t, int i, int el)
{
	/* keys past the end of the stream are zero padding, never data; nodes
	** with the same filter (softmax's max, sum and P V) share one predicate,
	** kept as a bit (64 live predicates would take 64 registers) */
	PReg ok = R(g, PC_PRED);
	int w = el / 32, bit = el % 32, src = -1;
	for (int k = 0; k < i && src < 0; k++)
		if (t->okset[k][el] && same_filter(g, k, i))
			src = k;
	if (src >= 0) {
		PReg b = R(g, PC_B32);
		E3(PTX_AND, ".b32", po_r(b), po_r(t->okw[src][w]), po_i((int64_t)1 << bit));
		E3(PTX_SETP, ".ne.b32", po_r(ok), po_r(b), po_i(0));
	} else if (key_bounds(g, t, i)) {
		/* lo <= cbase + off < hi, as (lo - cbase) <= off and (hi - cbase) > off */
		int rs = el_rs(el), off = el_nt(el) * 8 + (el & 1);
		E3(PTX_SETP, ".le.s32", po_r(ok), po_r(t->klo[i][rs]), po_i(off));
		E4(PTX_SETP, ".gt.and.s32", po_r(ok), po_r(t->khi[i][rs]), po_i(off), po_r(ok));
		if (t->kres[i]) {
			scope_elem(g, t, i, el);
			PReg f = sm80_expr(g, t->kres[i]);
			E3(PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(f));
		}
	} else {
		E3(PTX_SETP, ".lt.s64", po_r(ok), po_r(key_of(g, t, el, 0)), po_r(g->sext));
		if (node(g, i)->filter) {
			scope_elem(g, t, i, el);
			PReg f = sm80_expr(g, node(g, i)->filter);
			E3(PTX_AND, ".pred", po_r(ok), po_r(ok), po_r(f));
		}
		if (!t->okw[i][w].n) {
			t->okw[i][w] = R(g, PC_B32);
			E2(PTX_MOV, ".b32", po_r(t->okw[i][w]), po_i(0));
		}
		PReg b = R(g, PC_B32);
		E4(PTX_SELP, ".b32", po_r(b), po_i((int64_t)1 << bit), po_i(0), po_r(ok));
		E3(PTX_OR, ".b32", po_r(t->okw[i][w]), po_r(t->okw[i][w]), po_r(b));
		t->okset[i][el] = 1;
	}
	return ok;
}

/* v where element el is in node i's mask, else identity. */
static PReg mask_elem(Gen *g, Tile *t, int i, int el, PReg v, float identity)
{
	PReg ok = elem_ok(g, t, i, el), r = R(g, PC_F32);
	E4(PTX_SELP, ".f32", po_r(r), po_r(v), po_f(identity), po_r(ok));
	return r;
}

/* An element's contribution to a reduction: masked points give identity. */
static PReg masked_value(Gen *g, Tile *t, int i, int el, const Expr *body, int masked,
			 float identity)
{
	scope_elem(g, t, i, el);
	PReg v = sm80_expr(g, body);
	return masked ? mask_elem(g, t, i, el, v, identity) : v;
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
		E3(PTX_MUL, ".f32", po_r(d), po_r(d),
		   po_f((float)(run->k[m] * 1.4426950408889634)));
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

/* Row slot rs of a running state rebased on references, from t->prev to
** rowv: a row sum or a row of P V accumulators times rho. */
static void rescale_row(Gen *g, Tile *t, int i, int rs)
{
	if (!g->p->np[i].run.nrefs)
		return;
	PReg r = rho(g, t, i, rs);
	if (g->s->node[i].kind == SN_RSUM)
		E3(PTX_MUL, ".f32", po_r(g->rowv[i][rs]), po_r(g->rowv[i][rs]), po_r(r));
	if (g->s->node[i].kind != SN_GEMM2)
		return;
	int net = (int)(g->s->pv[g->s->node[i].gemm].DV / 8);
	for (int et = 0; et < net; et++)
		for (int c = 0; c < 2; c++) {
			PReg a = g->acc[i][rs / 2 * net * 4 + et * 4 + rs % 2 * 2 + c];
			E3(PTX_MUL, ".f32", po_r(a), po_r(a), po_r(r));
		}
}

static void rescale_node(Gen *g, Tile *t, int i)
{
	for (int rs = 0; rs < 2 * g->mt; rs++)
		rescale_row(g, t, i, rs);
}

/* Every running state rebased on references. */
static void rescale_states(Gen *g, Tile *t)
{
	for (int i = 0; i < g->c->nodes.n; i++)
		if (g->s->node[i].kind == SN_GEMM2 || g->s->node[i].kind == SN_RSUM)
			rescale_node(g, t, i);
}

/* Lazy rebasing. Any reference value keeps a rebased cascade exact (each
** state is the same sum times exp(-k r), and rho moves all of them
** together); the running max is only the choice that bounds exp(k (x - r))
** by 1. A lazy reference moves only when the max passes it by more than
** tau (exp(k tau) = 256: the values stay far from overflow, P's bf16
** keeps its relative precision), so that in most tiles no row of a warp
** moves and the O rescale (DV / 2 multiplies per row) and its rho are
** skipped by a warp-uniform branch. FlashAttention-4 does the same. */
static void lazy_max(Gen *g, Tile *t, int i, int h, PReg m)
{
	PReg *a = &g->rowv[i][h], mx = R(g, PC_F32), d = R(g, PC_F32), keep = R(g, PC_PRED);
	if (t->mtrue[i]) {
		E3(PTX_MAX, ".f32", po_r(t->mtrue[i][h]), po_r(t->mtrue[i][h]), po_r(m));
		E2(PTX_MOV, ".f32", po_r(mx), po_r(t->mtrue[i][h]));
	} else {
		E3(PTX_MAX, ".f32", po_r(mx), po_r(*a), po_r(m));
	}
	/* false for NaN: -inf - -inf (rows with nothing yet) moves, as eagerly */
	E3(PTX_SUB, ".f32", po_r(d), po_r(mx), po_r(*a));
	E3(PTX_SETP, ".le.f32", po_r(keep), po_r(d), po_f(t->tau[i]));
	E4(PTX_SELP, ".f32", po_r(*a), po_r(*a), po_r(mx), po_r(keep));
	PReg mv = R(g, PC_PRED);
	E2(PTX_NOT, ".pred", po_r(mv), po_r(keep));
	E3(PTX_OR, ".pred", po_r(t->chg), po_r(t->chg), po_r(mv));
}

/* After the last lazy reference of a tile: rebase every state, unless no
** row of the warp moved its reference. */
static void lazy_rescale(Gen *g, Tile *t)
{
	PReg any = R(g, PC_PRED);
	int skip = ptx_new_label(g->f);
	E3(PTX_VOTE, ".any.pred", po_r(any), po_r(t->chg), po_i(-1));
	E1(PTX_BRA, ".uni", po_label(skip));
	ptx_guard(g->f, any, 1);
	rescale_states(g, t);
	ptx_label(g->f, skip);
	t->rescaled = 1;
}

/* Which references are lazy: running maxes (not references built from
** them, e.g. max(m, sink)) that every state rebases on with k > 0 and that
** come before the first rebased state; the epilogue reading one needs its
** true value (kept beside it, and every state rebased on it at the end). */
static void lazy_plan(Gen *g, Tile *t)
{
	const Plan *p = g->p;
	int n = g->c->nodes.n, first = n;
	t->lazy = ARENA_ARRAY(g->a, signed char, n + 1);
	t->tau = ARENA_ARRAY(g->a, float, n + 1);
	t->mtrue = ARENA_ARRAY(g->a, PReg *, n + 1);
	t->lastref = -1;
	double *kmax = ARENA_ARRAY(g->a, double, n + 1);
	for (int i = 0; i < n; i++) {
		const Running *r = &p->np[i].run;
		ShapeNodeKind k = g->s->node[i].kind;
		if (!r->nrefs || (k != SN_GEMM2 && k != SN_RSUM))
			continue;
		if (i < first)
			first = i;
		for (int m = 0; m < r->nrefs; m++) {
			if (g->s->node[r->ref[m]].kind != SN_RMAX || r->k[m] <= 0 || r->ref[m] > first)
				return;
			if (r->k[m] > kmax[r->ref[m]])
				kmax[r->ref[m]] = r->k[m];
		}
	}
	for (int i = 0; i < n; i++)
		if (g->s->node[i].kind == SN_REF)
			return;
	for (int i = 0; i < n; i++) {
		if (kmax[i] <= 0)
			continue;
		t->lazy[i] = 1, t->lastref = i;
		t->tau[i] = (float)(8.0 * 0.6931471805599453 / kmax[i]);
		const Node *x = node(g, i);
		int read = x->out->kind == TK_OUT;
		for (int j = 0; j < n && !read; j++)
			if (p->np[j].role == ROLE_EPILOGUE)
				read = expr_reads(node(g, j)->body, x->out) ||
				       expr_reads(node(g, j)->filter, x->out);
		if (read) {
			t->mtrue[i] = ARENA_ARRAY(g->a, PReg, MAXRS);
			for (int h = 0; h < 2 * g->mt; h++) {
				t->mtrue[i][h] = R(g, PC_F32);
				E2(PTX_MOV, ".f32", po_r(t->mtrue[i][h]), po_f(-INFINITY));
			}
		}
	}
}

/* At the end of the stream: tracked lazy references take their true value
** and the states follow, so that the epilogue sees the eager result. */
static void lazy_finish(Gen *g, Tile *t)
{
	int any = 0;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!t->mtrue[i])
			continue;
		any = 1;
		for (int h = 0; h < 2 * g->mt; h++) {
			E2(PTX_MOV, ".f32", po_r(t->prev[i][h]), po_r(g->rowv[i][h]));
			E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(t->mtrue[i][h]));
		}
	}
	if (any)
		rescale_states(g, t);
}

/* ---- masking once ---------------------------------------------------------
** On the masked path FlashAttention sets the masked scores to -inf once and
** lets the softmax run unmasked. The same here, proved per cascade: the
** tile value X that a running max reads is set to -inf at masked points,
** once per element; the nodes after it are then evaluated as if X were -inf
** there (nkind), and a reduction that provably sees its identity (a max
** -inf, a sum or P V zero) skips its own per-element mask: one compare and
** select per score instead of one per score and consumer. Only where every
** node that reads X, directly or through tile values, has X's filter (their
** values at masked points are then nobody's), and with exp(a - m) taking
** m = 0 where m is still -inf (a row with no key yet, so every a is -inf
** too; sm80_expr's neg_log2e, with g->ninf). */
enum { NK_FIN, NK_NINF, NK_ZERO, NK_UNK }; /* independent of X, -inf, 0, unknown */

/* Node d's values are per (row, key) of the tile (not running or per row). */
static int tile_value(const Gen *g, int d)
{
	return g->s->node[d].kind == SN_MAP || g->s->node[d].kind == SN_GEMM1;
}

/* e (or NULL) reads a node marked in set. */
static int reads_node(const Expr *e, const signed char *set)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor->def && set[e->tensor->def->id])
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_node(e->args[i], set))
			return 1;
	return 0;
}

/* What maskonce_plan knows: per node, nk (NK_*, for tile values), dep (a
** tile value that depends on X) and state (a running value, a max, a sum or
** a reference, which may be -inf). */
typedef struct MaskOnce {
	signed char *nk, *dep, *state;
} MaskOnce;

static int positive_literal(const Expr *e)
{
	return (e->kind == EX_FLOAT && e->fval > 0) || (e->kind == EX_INT && e->ival > 0);
}

/* What e is at a masked point when X is -inf there. */
static int nkind(Gen *g, const Expr *e, const MaskOnce *m)
{
	int a = NK_FIN, b = NK_FIN;
	switch (e->kind) {
	case EX_ACCESS:
		return e->tensor->def && tile_value(g, e->tensor->def->id)
			   ? m->nk[e->tensor->def->id]
			   : NK_FIN;
	case EX_CAST:
	case EX_SELECT:
		for (int i = 0; i < e->nargs; i++)
			if (nkind(g, e->args[i], m) != NK_FIN)
				return NK_UNK;
		return NK_FIN;
	case EX_UNOP: a = nkind(g, e->args[0], m); return a == NK_FIN || a == NK_ZERO ? a : NK_UNK;
	case EX_BINOP:
		a = nkind(g, e->args[0], m), b = nkind(g, e->args[1], m);
		if (a == NK_FIN && b == NK_FIN)
			return NK_FIN;
		switch (e->op) {
		case OP_ADD:
			if ((a == NK_NINF && b == NK_FIN && !reads_node(e->args[1], m->state)) ||
			    (b == NK_NINF && a == NK_FIN && !reads_node(e->args[0], m->state)))
				return NK_NINF;
			return a == NK_ZERO && b == NK_ZERO ? NK_ZERO : NK_UNK;
		case OP_SUB:
			if (a == NK_NINF && b == NK_FIN && !reads_node(e->args[1], m->state))
				return NK_NINF;
			return a == NK_ZERO && b == NK_ZERO ? NK_ZERO : NK_UNK;
		case OP_MUL:
			if ((a == NK_ZERO && b != NK_UNK && b != NK_NINF) ||
			    (b == NK_ZERO && a != NK_UNK && a != NK_NINF))
				return NK_ZERO;
			if ((a == NK_NINF && positive_literal(e->args[1])) ||
			    (b == NK_NINF && positive_literal(e->args[0])))
				return NK_NINF;
			return NK_UNK;
		case OP_MAX:
			if (a == NK_NINF && b == NK_NINF)
				return NK_NINF;
			return (a == NK_NINF && b == NK_FIN) || (b == NK_NINF && a == NK_FIN)
				   ? NK_FIN
				   : NK_UNK;
		case OP_MIN:
			return (a == NK_NINF && b != NK_UNK) || (b == NK_NINF && a != NK_UNK)
				   ? NK_NINF
				   : NK_UNK;
		default: return NK_UNK;
		}
	case EX_CALL: {
		const Expr *x = e->args[0];
		/* exp(a - m): the FFMA form (sm80_expr's call), guarded for m = -inf */
		if (e->op == FN_EXP && x->kind == EX_BINOP && x->op == OP_SUB &&
		    x->type == VT_FLOAT && nkind(g, x->args[0], m) == NK_NINF &&
		    nkind(g, x->args[1], m) == NK_FIN)
			return NK_ZERO;
		a = nkind(g, x, m);
		if (a == NK_FIN)
			return NK_FIN;
		if (a == NK_NINF && (e->op == FN_EXP || e->op == FN_EXP2 || e->op == FN_SIGMOID ||
				     e->op == FN_RELU))
			return NK_ZERO;
		return NK_UNK;
	}
	default: return NK_FIN;
	}
}

static void maskonce_plan(Gen *g, Tile *t)
{
	int n = g->c->nodes.n, x = -1;
	t->mo = -1;
	t->moid = ARENA_ARRAY(g->a, signed char, n + 1);
	for (int i = 0; i < n && x < 0; i++) {
		const Expr *b = node(g, i)->body;
		if (g->s->node[i].kind == SN_RMAX && b->kind == EX_ACCESS && b->tensor->def &&
		    tile_value(g, b->tensor->def->id))
			x = b->tensor->def->id;
	}
	if (x < 0 || !node(g, x)->filter)
		return;
	MaskOnce m = {ARENA_ARRAY(g->a, signed char, n + 1), ARENA_ARRAY(g->a, signed char, n + 1),
		      ARENA_ARRAY(g->a, signed char, n + 1)};
	for (int i = 0; i < n; i++)
		m.state[i] = !tile_value(g, i);
	m.nk[x] = NK_NINF, m.dep[x] = 1;
	for (int i = x + 1; i < n; i++) {
		const Node *nd = node(g, i);
		if (!reads_node(nd->body, m.dep) && !reads_node(nd->filter, m.dep))
			continue;
		/* the same condition at the same (row, key) point: variables of
		** the same classes (a node's own numbering may differ: P V's key
		** comes after e) */
		if (!sm80_same_read(g, x, node(g, x)->filter, i, nd->filter, 0)) {
			memset(t->moid, 0, (size_t)n);
			return;
		}
		switch (g->s->node[i].kind) {
		case SN_MAP:
			m.nk[i] = (signed char)nkind(g, nd->body, &m);
			m.dep[i] = 1;
			break;
		case SN_RMAX: t->moid[i] = nkind(g, nd->body, &m) == NK_NINF; break;
		case SN_RSUM: t->moid[i] = nkind(g, nd->body, &m) == NK_ZERO; break;
		case SN_GEMM2:
			t->moid[i] = nkind(g, g->s->pv[g->s->node[i].gemm].x, &m) == NK_ZERO;
			break;
		default: memset(t->moid, 0, (size_t)n); return;
		}
	}
	t->mo = x;
}

static void gemm2_tile(Gen *g, Tile *t, int i, int masked, PReg sbase, const Smem *sm)
{
	const PVContraction *pv = &g->s->pv[g->s->node[i].gemm];
	int net = (int)(pv->DV / 8);
	if (!t->rescaled)
		rescale_node(g, t, i);
	PReg x[MAXMT * NEL];
	for (int el = 0; el < g->mt * NEL; el++)
		x[el] = masked_value(g, t, i, el, pv->x, masked && !t->moid[i], 0.0f);
	int f16 = pv->v->tensor->dtype == DT_F16;
	const char *cvt = f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32";
	const char *mma = f16 ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	for (int kk = 0; kk < SM80_BN / 16; kk++) {
		PReg a[MAXMT][4];
		for (int m = 0; m < g->mt; m++)
			for (int q = 0; q < 4; q++) {
				int el = m * NEL + (2 * kk + (q >> 1)) * 4 + (q & 1) * 2;
				a[m][q] = R(g, PC_B32);
				E3(PTX_CVT, cvt, po_r(a[m][q]), po_r(x[el + 1]), po_r(x[el]));
			}
		/* V fragments by ldmatrix.trans: row j = kk*16 + (mi&1)*8 + r, col e = ep*16 + (mi>>1)*8 */
		for (int ep = 0; ep < net / 2; ep++) {
			int32_t off = (int32_t)(kk * 16 * sm->vs + ep * 32);
			PReg b[4];
			for (int q = 0; q < 4; q++)
				b[q] = R(g, PC_B32);
			E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.trans.shared.b16", po_vec(b, 4),
			   po_mem(g->vaddr[pv->vslot], off));
			for (int m = 0; m < g->mt; m++)
				for (int half = 0; half < 2; half++) {
					int et = 2 * ep + half;
					PReg *d = &g->acc[i][m * net * 4 + et * 4];
					PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
					E4(PTX_MMA, mma, po_vec(d, 4), po_vec(a[m], 4),
					   po_vec(bb, 2), po_vec(d, 4));
				}
		}
	}
}

/* The nodes of one tile in order (masked: with per-element masks). */
static void tile_body(Gen *g, Tile *t, int masked, PReg sbase, const Smem *sm)
{
	const Cascade *c = g->c;
	int nel = g->mt * NEL, nrs = 2 * g->mt;
	g->nmemo = 0, g->nkc = 0;
	tile_rows(g, t);
	for (int i = 0; i < c->nodes.n; i++) {
		memset(t->okw[i], 0, sizeof(PReg) * (size_t)(nel / 32));
		memset(t->okset[i], 0, (size_t)nel);
		t->kb[i] = 0;
	}
	if (masked)
		t->cbase32 = u32of(g, t->cbase);
	t->rescaled = 0;
	if (t->lastref >= 0)
		t->chg = sm80_pconst(g, 0);
	g->ninf = masked && t->mo >= 0;
	sm80_scale_tile(g);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = node(g, i);
		int mo = masked && i == t->mo, own = masked && !t->moid[i];
		switch (g->s->node[i].kind) {
		case SN_GEMM1:
			for (int el = 0; el < nel && mo; el++)
				g->tile[i][el] = mask_elem(g, t, i, el, g->tile[i][el], -INFINITY);
			break;
		case SN_MAP:
			for (int el = 0; el < nel; el++) {
				scope_elem(g, t, i, el);
				/* c * G kept as G: no instruction (sm80_scale.c) */
				g->tile[i][el] = sm80_folded(g, i) ? g->tile[g->fold[i].gemm][el]
								   : sm80_expr(g, n->body);
				if (mo)
					g->tile[i][el] =
					    mask_elem(g, t, i, el, g->tile[i][el], -INFINITY);
			}
			break;
		case SN_RMAX: {
			/* max[j](c G) = c max[j](G), c >= 0: one multiply per row
			** instead of one per score (sm80_scale.c) */
			int fold = sm80_folded_read(g, n->body);
			for (int h = 0; h < nrs; h++) {
				PReg m = fmov(g, -INFINITY);
				for (int el = 0; el < nel; el++) {
					if (el_rs(el) != h)
						continue;
					g->raw = fold >= 0;
					PReg v = masked_value(g, t, i, el, n->body, own, -INFINITY);
					g->raw = 0;
					E3(PTX_MAX, ".f32", po_r(m), po_r(m), po_r(v));
				}
				m = quad_reduce(g, m, 1);
				if (fold >= 0) {
					PReg cm = R(g, PC_F32);
					E3(PTX_MUL, ".f32", po_r(cm), po_r(m),
					   po_r(sm80_scale_c(g, fold, 0)));
					m = cm;
				}
				if (t->lazy[i]) {
					lazy_max(g, t, i, h, m);
					continue;
				}
				E3(PTX_MAX, ".f32", po_r(g->rowv[i][h]), po_r(g->rowv[i][h]),
				   po_r(m));
			}
			/* right after the last reference moves, while the scores
			** are the only tile values live */
			if (i == t->lastref)
				lazy_rescale(g, t);
			break;
		}
		case SN_REF:
			for (int h = 0; h < nrs; h++) {
				g->node = i, g->half = h, g->row = t->crows[h];
				PReg v = sm80_expr(g, n->body);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
			break;
		case SN_RSUM:
			for (int h = 0; h < nrs; h++) {
				PReg acc = g->rowv[i][h];
				if (!t->rescaled)
					rescale_row(g, t, i, h);
				for (int el = 0; el < nel; el++) {
					if (el_rs(el) != h)
						continue;
					PReg v = masked_value(g, t, i, el, n->body, own, 0.0f);
					E3(PTX_ADD, ".f32", po_r(acc), po_r(acc), po_r(v));
				}
			}
			break;
		case SN_GEMM2: gemm2_tile(g, t, i, masked, sbase, sm); break;
		default: break;
		}
	}
	g->ninf = 0;
}

/* Lane-dependent part of the ldmatrix addresses of K (B operand, rows j)
** and V (transposed, rows j): row = (mi>>1)*8 + r, column byte (mi&1)*16
** for K; row = (mi&1)*8 + r, column byte (mi>>1)*16 for V. */
static PReg lane_addr(Gen *g, PReg sbase, uint32_t soff, uint32_t stride, int transposed)
{
	PReg mi = R(g, PC_B64), r = R(g, PC_B64), lo = R(g, PC_B64), hi = R(g, PC_B64);
	E3(PTX_SHR, ".u64", po_r(mi), po_r(g->lane), po_i(3));
	E3(PTX_AND, ".b64", po_r(r), po_r(g->lane), po_i(7));
	E3(PTX_AND, ".b64", po_r(lo), po_r(mi), po_i(1));
	E3(PTX_SHR, ".u64", po_r(hi), po_r(mi), po_i(1));
	PReg row = R(g, PC_B64), cb = R(g, PC_B64);
	E4(PTX_MAD, ".lo.s64", po_r(row), po_r(transposed ? lo : hi), po_i(8), po_r(r));
	E3(PTX_MUL, ".lo.s64", po_r(cb), po_r(transposed ? hi : lo), po_i(16));
	return lm_addr(g, sbase, soff, stride, u32of(g, row), u32of(g, cb));
}

/* Q fragments of one contraction: in registers (qf[m][kk], loaded once), or
** re-read per k-step from shared memory at qaddr[m] (too many registers). */
typedef struct QFrag {
	PReg **qf[MAXMT];
	PReg qaddr[MAXMT];
	int inregs;
} QFrag;

static void q_frag(Gen *g, const QFrag *q, int m, int kk, PReg out[4])
{
	if (q->inregs) {
		memcpy(out, q->qf[m][kk], 4 * sizeof(PReg));
		return;
	}
	for (int k = 0; k < 4; k++)
		out[k] = R(g, PC_B32);
	E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16", po_vec(out, 4),
	   po_mem(q->qaddr[m], kk * 32));
}

/* S = Q K^T for one contraction: each K fragment feeds mt row blocks. */
static void gemm1_tile(Gen *g, int i, const QFrag *qf, const Smem *sm)
{
	const QKContraction *qk = &g->s->qk[g->s->node[i].gemm];
	int gi = g->s->node[i].gemm;
	PReg *acc = g->tile[i];
	for (int el = 0; el < g->mt * NEL; el++) {
		acc[el] = R(g, PC_F32);
		E2(PTX_MOV, ".f32", po_r(acc[el]), po_f(0.0f));
	}
	int f16 = qk->a->tensor->dtype == DT_F16;
	const char *mma = f16 ? ".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
			      : ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
	PReg base = g->kaddr[gi];
	for (int kk = 0; kk < qk->D / 16; kk++) {
		PReg a[MAXMT][4];
		for (int m = 0; m < g->mt; m++)
			q_frag(g, qf, m, kk, a[m]);
		for (int np = 0; np < NT / 2; np++) {
			/* K rows j = np*16 + lane part, d = kk*16 + lane part */
			int32_t off = (int32_t)(np * 16 * sm->ks[gi] + kk * 32);
			PReg b[4];
			for (int q = 0; q < 4; q++)
				b[q] = R(g, PC_B32);
			E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16", po_vec(b, 4),
			   po_mem(base, off));
			for (int m = 0; m < g->mt; m++)
				for (int half = 0; half < 2; half++) {
					PReg *d = &acc[m * NEL + (2 * np + half) * 4];
					PReg bb[2] = {b[half * 2], b[half * 2 + 1]};
					E4(PTX_MMA, mma, po_vec(d, 4), po_vec(a[m], 4),
					   po_vec(bb, 2), po_vec(d, 4));
				}
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

/* The column (e) of accumulator element el: 8 et + 2 (lane % 4) + (el & 1);
** q = lane % 4. */
static PReg elem_col(Gen *g, PReg q, int el)
{
	int net = (int)(g->s->DV / 8), et = el % (net * 4) / 4;
	PReg e = R(g, PC_B64);
	E4(PTX_MAD, ".lo.s64", po_r(e), po_r(q), po_i(2), po_i(et * 8 + (el & 1)));
	return e;
}

/* The dimension of node i's 16-bit output indexed by the column alone, or
** -1: then its elements are stored one by one. */
static int pair_column(Gen *g, int i)
{
	const Node *n = node(g, i);
	const Tensor *t = n->out;
	if ((t->dtype != DT_BF16 && t->dtype != DT_F16) || t->domain || t->rank != n->nfree)
		return -1;
	int pc = -1;
	for (int k = 0; k < n->nfree; k++)
		if (g->p->cls[i][k] == g->s->ecls)
			pc = pc < 0 ? k : -2;
	return pc < 0 ? -1 : pc;
}

/* Branches to `other` unless out's column dimension pc is contiguous and
** every other stride has no bit of mask set (1: even, for 4-byte pairs; 7:
** multiples of 8 elements, for 16-byte rows): a uniform test of the
** stride parameters. */
static void layout_guard(Gen *g, const Tensor *out, int pc, int mask, int other)
{
	PReg mis = R(g, PC_B64), bad = R(g, PC_PRED), one = R(g, PC_PRED);
	E2(PTX_MOV, ".b64", po_r(mis), po_i(0));
	for (int k = 0; k < out->rank; k++)
		if (k != pc)
			E3(PTX_OR, ".b64", po_r(mis), po_r(mis), po_r(g->tstride[out->id][k]));
	E3(PTX_AND, ".b64", po_r(mis), po_r(mis), po_i(mask));
	E3(PTX_SETP, ".ne.s64", po_r(bad), po_r(mis), po_i(0));
	E3(PTX_SETP, ".ne.s64", po_r(one), po_r(g->tstride[out->id][pc]), po_i(1));
	E3(PTX_OR, ".pred", po_r(bad), po_r(bad), po_r(one));
	E1(PTX_BRA, ".uni", po_label(other));
	ptx_guard(g->f, bad, 0);
}

/* Stores of the output accumulators as bf16x2 / f16x2 pairs (adjacent
** columns of one row), from one row address per row and immediate column
** offsets: 64 32-bit stores per thread at D = 128 instead of 128 16-bit
** stores with their address arithmetic, the larger part of the epilogue.
** Needs the column dimension contiguous and every other stride even (each
** pair 4-byte aligned: the runtime checks 16-byte base pointers); other
** layouts branch to `slow`. */
static void store_pairs(Gen *g, Tile *t, int i, int pc, PReg q, const PReg *okr, int slow)
{
	const Tensor *out = node(g, i)->out;
	int net = (int)(g->s->DV / 8), f16 = out->dtype == DT_F16;
	layout_guard(g, out, pc, 1, slow);
	Expr **args = ARENA_ARRAY(g->a, Expr *, out->rank + 1);
	for (int k = 0; k < out->rank; k++)
		args[k] = expr_index(g->a, k);
	for (int h = 0; h < 2 * g->mt; h++) {
		PReg c0 = R(g, PC_B64);
		E3(PTX_SHL, ".b64", po_r(c0), po_r(q), po_i(1));
		g->node = i, g->row = t->crows[h], g->col = c0;
		PReg a = sm80_addr(g, out, args);
		for (int et = 0; et < net; et++) {
			int el = h / 2 * net * 4 + et * 4 + h % 2 * 2;
			PReg w = R(g, PC_B32);
			E3(PTX_CVT, f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32", po_r(w),
			   po_r(g->acc[i][el + 1]), po_r(g->acc[i][el]));
			E2(PTX_ST, ".global.b32", po_mem(a, et * 16), po_r(w));
			ptx_guard(g->f, okr[h], 0);
		}
	}
}

/* Node i's output can go out through shared memory (store_staged): no GQA
** packing (rows map to addresses linearly), Q's rows are wide enough for a
** row of the output, and a warp's 32 lanes cover whole rows or a row in
** whole steps of 32 chunks (value head dims 64, 128, 256). */
static int staged_wanted(const Gen *g, const Smem *sm)
{
	const KernelShape *s = g->s;
	long cpr = s->DV / 8;
	return !s->pack && s->nqk >= 1 && sm->qs[0] >= (uint32_t)(s->DV * 2) &&
	       (32 % cpr == 0 || cpr % 32 == 0);
}

/* The output accumulators through the warp's own rows of Q's shared memory
** (free since the last contraction: each warp reads only its own rows of Q),
** then out with 16-byte stores that write whole rows: 16 coalesced stores
** per thread at D = 128 instead of 64 four-byte ones that write each row in
** 16-byte pieces, as FlashAttention-2's epilogue does. The warp orders its
** own shared writes and reads with bar.warp.sync; no CTA barrier. Needs
** the column dimension contiguous and every other stride a multiple of 8
** elements (the runtime checks 16-byte base pointers); other layouts
** branch to `pairs`. */
static void store_staged(Gen *g, int i, int pc, const Smem *sm, PReg sbase, int pairs)
{
	const Tensor *out = node(g, i)->out;
	long cpr = g->s->DV / 8; /* 16-byte chunks per row, and n8 tiles per row block */
	int f16 = out->dtype == DT_F16, rw = 16 * g->mt;
	uint32_t qs = sm->qs[0];
	layout_guard(g, out, pc, 7, pairs);
	/* the warp's rows start at warp * rw; the thread writes its pairs at row
	** lane / 4 (+ 8, + 16, ...) and column 2 (lane % 4) (+ 8 et) */
	PReg wrow = R(g, PC_B64), r = R(g, PC_B64), c = R(g, PC_B64), w = R(g, PC_B32);
	E3(PTX_MUL, ".lo.s64", po_r(wrow), po_r(g->warp), po_i(rw));
	E3(PTX_SHR, ".u64", po_r(r), po_r(g->lane), po_i(2));
	E3(PTX_ADD, ".s64", po_r(r), po_r(r), po_r(wrow));
	E3(PTX_AND, ".b64", po_r(c), po_r(g->lane), po_i(3));
	E3(PTX_SHL, ".b64", po_r(c), po_r(c), po_i(2));
	E4(PTX_MAD, ".lo.s64", po_r(c), po_r(r), po_i(qs), po_r(c));
	E2(PTX_CVT, ".u32.u64", po_r(w), po_r(c));
	E3(PTX_ADD, ".u32", po_r(w), po_r(w), po_r(sbase));
	/* the warp's last reads of Q (its ldmatrix) are behind it; its lanes
	** agree before the first write, and again before the rows are read */
	E1(PTX_BAR_WARP, "", po_i(-1));
	for (int h = 0; h < 2 * g->mt; h++)
		for (int et = 0; et < cpr; et++) {
			int el = h / 2 * (int)cpr * 4 + et * 4 + h % 2 * 2;
			PReg x = R(g, PC_B32);
			E3(PTX_CVT, f16 ? ".rn.f16x2.f32" : ".rn.bf16x2.f32", po_r(x),
			   po_r(g->acc[i][el + 1]), po_r(g->acc[i][el]));
			E2(PTX_ST, ".shared.b32",
			   po_mem(w, (int32_t)(sm->q[0] + (uint32_t)(h / 2 * 16 + h % 2 * 8) * qs +
					       (uint32_t)et * 16)),
			   po_r(x));
		}
	E1(PTX_BAR_WARP, "", po_i(-1));
	/* lane l reads 16-byte chunk l % cpr of row l / cpr (cpr <= 32), or
	** chunk l of the row (cpr >= 32); step `it` adds 32 chunks */
	PReg lrow = R(g, PC_B64), lch = R(g, PC_B64), rd = R(g, PC_B32);
	if (cpr <= 32) {
		E3(PTX_SHR, ".u64", po_r(lrow), po_r(g->lane), po_i(log2_of(cpr)));
		E3(PTX_AND, ".b64", po_r(lch), po_r(g->lane), po_i(cpr - 1));
	} else {
		E2(PTX_MOV, ".b64", po_r(lrow), po_i(0));
		E2(PTX_MOV, ".b64", po_r(lch), po_r(g->lane));
	}
	E3(PTX_ADD, ".s64", po_r(lrow), po_r(lrow), po_r(wrow));
	E3(PTX_SHL, ".b64", po_r(c), po_r(lch), po_i(4));
	PReg c2 = R(g, PC_B64);
	E4(PTX_MAD, ".lo.s64", po_r(c2), po_r(lrow), po_i(qs), po_r(c));
	E2(PTX_CVT, ".u32.u64", po_r(rd), po_r(c2));
	E3(PTX_ADD, ".u32", po_r(rd), po_r(rd), po_r(sbase));
	/* global addresses of the lane's first chunk and of the row below it */
	Expr **args = ARENA_ARRAY(g->a, Expr *, out->rank + 1);
	for (int k = 0; k < out->rank; k++)
		args[k] = expr_index(g->a, k);
	PReg row = R(g, PC_B64), row1 = R(g, PC_B64), col = R(g, PC_B64), lim = R(g, PC_B64);
	E3(PTX_ADD, ".s64", po_r(row), po_r(lrow), po_r(g->q0));
	E3(PTX_ADD, ".s64", po_r(row1), po_r(row), po_i(1));
	E3(PTX_SHL, ".b64", po_r(col), po_r(lch), po_i(3));
	E3(PTX_SUB, ".s64", po_r(lim), po_r(g->qext), po_r(row));
	g->node = i, g->row = row, g->col = col;
	PReg ga = sm80_addr(g, out, args);
	g->row = row1;
	PReg rstride = R(g, PC_B64);
	E3(PTX_SUB, ".s64", po_r(rstride), po_r(sm80_addr(g, out, args)), po_r(ga));
	long its = rw * cpr / 32, prow = 0;
	for (long it = 0; it < its; it++) {
		long roff = it * 32 / cpr, coff = it * 32 % cpr;
		if (roff != prow) {
			PReg n = R(g, PC_B64);
			E4(PTX_MAD, ".lo.s64", po_r(n), po_r(rstride), po_i(roff - prow), po_r(ga));
			ga = n, prow = roff;
		}
		PReg v[4], ok = R(g, PC_PRED);
		for (int k = 0; k < 4; k++)
			v[k] = R(g, PC_B32);
		E2(PTX_LD, ".shared.v4.b32", po_vec(v, 4),
		   po_mem(rd, (int32_t)(sm->q[0] + (uint32_t)roff * qs + (uint32_t)coff * 16)));
		E3(PTX_SETP, ".gt.s64", po_r(ok), po_r(lim), po_i(roff));
		E2(PTX_ST, ".global.v4.b32", po_mem(ga, (int32_t)(coff * 16)), po_vec(v, 4));
		ptx_guard(g->f, ok, 0);
	}
}

static void epilogue(Gen *g, Tile *t, const Smem *sm, PReg sbase)
{
	const Cascade *c = g->c;
	g->nmemo = 0;
	g->stage = 1;
	tile_rows(g, t);
	int nrs = 2 * g->mt;
	PReg q = R(g, PC_B64), lead = R(g, PC_PRED), okr[MAXRS], okl[MAXRS];
	E3(PTX_AND, ".b64", po_r(q), po_r(g->lane), po_i(3));
	E3(PTX_SETP, ".eq.s64", po_r(lead), po_r(q), po_i(0));
	for (int h = 0; h < nrs; h++) {
		okr[h] = R(g, PC_PRED), okl[h] = R(g, PC_PRED);
		E3(PTX_SETP, ".lt.s64", po_r(okr[h]), po_r(t->rows[h]), po_r(g->qext));
		E3(PTX_AND, ".pred", po_r(okl[h]), po_r(okr[h]), po_r(lead));
	}
	for (int i = 0; i < c->nodes.n; i++)
		if (g->s->node[i].kind == SN_RSUM)
			for (int h = 0; h < nrs; h++) {
				PReg s = quad_reduce(g, g->rowv[i][h], 0);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(s));
			}
	int net = (int)(g->s->DV / 8);
	/* factors of P constant along the keys (PVContraction.xrow), once per row */
	for (int i = 0; i < c->nodes.n; i++) {
		const Expr *xr = g->s->node[i].kind == SN_GEMM2 ? g->s->pv[g->s->node[i].gemm].xrow : NULL;
		for (int h = 0; h < nrs && xr; h++) {
			g->node = i, g->half = h, g->row = t->crows[h];
			PReg f = sm80_expr(g, xr);
			for (int el = 0; el < g->mt * net * 4; el++)
				if (acc_rs(net, el) == h)
					E3(PTX_MUL, ".f32", po_r(g->acc[i][el]),
					   po_r(g->acc[i][el]), po_r(f));
		}
	}
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = node(g, i);
		ShapeNodeKind k = g->s->node[i].kind;
		int out = n->out->kind == TK_OUT;
		if (k == SN_EPI_ROW || k == SN_REF || ((k == SN_RMAX || k == SN_RSUM) && out)) {
			for (int h = 0; h < nrs; h++) {
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
			for (int el = 0; el < g->mt * net * 4 && k == SN_EPI_ELEM; el++) {
				int h = acc_rs(net, el);
				g->node = i, g->elem = el, g->half = h, g->row = t->crows[h];
				g->col = elem_col(g, q, el);
				g->acc[i][el] = sm80_expr(g, n->body);
			}
			if (!out)
				continue;
			int pc = pair_column(g, i), slow = ptx_new_label(g->f),
			    done = ptx_new_label(g->f);
			if (pc >= 0 && staged_wanted(g, sm)) {
				int pairs = ptx_new_label(g->f);
				store_staged(g, i, pc, sm, sbase, pairs);
				E1(PTX_BRA, ".uni", po_label(done));
				ptx_label(g->f, pairs);
			}
			if (pc >= 0) {
				store_pairs(g, t, i, pc, q, okr, slow);
				E1(PTX_BRA, ".uni", po_label(done));
			}
			ptx_label(g->f, slow);
			for (int el = 0; el < g->mt * net * 4; el++) {
				int h = acc_rs(net, el);
				g->node = i, g->row = t->crows[h], g->col = elem_col(g, q, el);
				store(g, i, g->acc[i][el], okr[h]);
			}
			ptx_label(g->f, done);
		}
	}
}

/* ---- the kernel ----------------------------------------------------------- */

/* Node i's mask decides which tiles the stream visits: the tile values and
** the reductions over keys (not references or the epilogue). */
static int streamed(const KernelShape *s, int i)
{
	ShapeNodeKind k = s->node[i].kind;
	return k == SN_RMAX || k == SN_RSUM || k == SN_GEMM2 || k == SN_MAP || k == SN_GEMM1;
}

/* An earlier streamed node has node i's filter, up to variables of the
** same classes (a tile's class depends only on the classes' ranges): its
** test, and its warp votes, decide for both. */
static int class_done(Gen *g, const KernelShape *s, int i)
{
	for (int k = 0; k < i; k++)
		if (streamed(s, k) && node(g, k)->filter && node(g, i)->filter &&
		    sm80_same_read(g, k, node(g, k)->filter, i, node(g, i)->filter, 0))
			return 1;
	return 0;
}

/* any: some node's mask is true somewhere on tile [a, b); all: every
** node's mask is true everywhere on it. */
static void class_flags(Gen *g, const KernelShape *s, PReg a, PReg b, PReg any, PReg all)
{
	PReg sj0 = g->j0, sj1 = g->j1, z = R(g, PC_B32);
	g->j0 = a, g->j1 = b;
	E2(PTX_MOV, ".b32", po_r(z), po_i(0));
	E3(PTX_SETP, ".ne.s32", po_r(any), po_r(z), po_i(0));
	E3(PTX_SETP, ".eq.s32", po_r(all), po_r(z), po_i(0));
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!streamed(s, i) || class_done(g, s, i))
			continue;
		PReg al, ne, nn = R(g, PC_PRED);
		sm80_tile_class(g, i, &al, &ne);
		E2(PTX_NOT, ".pred", po_r(nn), po_r(ne));
		E3(PTX_OR, ".pred", po_r(any), po_r(any), po_r(nn));
		E3(PTX_AND, ".pred", po_r(all), po_r(all), po_r(al));
	}
	g->j0 = sj0, g->j1 = sj1;
}

/* The first tile at or after `from` whose masks are true somewhere, into
** out (>= send when there is none), any = out < send, and all = every
** node's mask is true on all of that tile (the stream takes it from here
** instead of testing the tile again): a loop of class tests with no loads
** of K or V and no barriers, so that the stream visits only the tiles it
** computes. For masks without data reads (scan_table has the others). */
static void scan_tiles(Gen *g, const KernelShape *s, PReg from, PReg out, PReg any, PReg all)
{
	int Lscan = ptx_new_label(g->f), Ldone = ptx_new_label(g->f);
	PReg past = R(g, PC_PRED), st = R(g, PC_B64), end = R(g, PC_B64), in = R(g, PC_PRED),
	     a = R(g, PC_PRED), al = R(g, PC_PRED);
	E2(PTX_MOV, ".b64", po_r(out), po_r(from));
	ptx_label(g->f, Lscan);
	E3(PTX_SETP, ".ge.s64", po_r(past), po_r(out), po_r(g->send));
	E1(PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, past, 0);
	E3(PTX_ADD, ".s64", po_r(st), po_r(out), po_i(0));
	E3(PTX_ADD, ".s64", po_r(end), po_r(st), po_i(SM80_BN));
	E3(PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->sext));
	class_flags(g, s, st, end, a, al);
	E3(PTX_SETP, ".lt.s64", po_r(in), po_r(st), po_r(g->send));
	E3(PTX_AND, ".pred", po_r(a), po_r(a), po_r(in));
	E2(PTX_MOV, ".pred", po_r(all), po_r(al));
	E1(PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, a, 0);
	E3(PTX_ADD, ".s64", po_r(out), po_r(out), po_i(SM80_BN));
	E1(PTX_BRA, ".uni", po_label(Lscan));
	ptx_label(g->f, Ldone);
	E3(PTX_SETP, ".lt.s64", po_r(any), po_r(out), po_r(g->send));
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

int sm80_data_masks(const Plan *p)
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

_Static_assert(TAB_TILES == 128 && (int)SM80_THREADS == (int)TAB_TILES,
	       "the table's search takes its bits as two u64 words, a thread per tile");
_Static_assert(TAB_TILES *SM80_BN == SM80_WINDOW_KEYS, "a window's keys");

/* The lowest set bit of x at or after bit p (0 <= p <= 64) of a u64 word,
** or 64 where there is none: x's bits below p are shifted out (a shift by
** 64 gives 0), then brev + clz counts the trailing zeros. */
static PReg first_bit(Gen *g, PReg x, PReg p)
{
	PReg m = R(g, PC_B64), r = R(g, PC_B64), c = R(g, PC_B32);
	E3(PTX_SHR, ".b64", po_r(m), po_r(x), po_r(p));
	E3(PTX_SHL, ".b64", po_r(m), po_r(m), po_r(p));
	E2(PTX_BREV, ".b64", po_r(r), po_r(m));
	E2(PTX_CLZ, ".b64", po_r(c), po_r(r));
	return c;
}

/* The table's entry of tile t (this thread's: t = %tid.x) from its words:
** the first any bit at or after t, in the low word then the high. */
static void table_next(Gen *g, PReg sbase, uint32_t off)
{
	PReg an[2] = {R(g, PC_B64), R(g, PC_B64)}, al[2] = {R(g, PC_B64), R(g, PC_B64)};
	PReg t = R(g, PC_B32), p0 = R(g, PC_B32), p1 = R(g, PC_B32), pos = R(g, PC_B32),
	     z0 = R(g, PC_PRED), bits = R(g, PC_B64), sh = R(g, PC_B32), b = R(g, PC_B64),
	     b32 = R(g, PC_B32), e = R(g, PC_B32), a = R(g, PC_B32);
	E2(PTX_LD, ".shared.v2.u64", po_vec(an, 2), po_mem(sbase, (int32_t)(off + TAB_ANY)));
	E2(PTX_LD, ".shared.v2.u64", po_vec(al, 2), po_mem(sbase, (int32_t)(off + TAB_ALL)));
	E2(PTX_MOV, ".u32", po_r(t), po_sym("%tid.x"));
	E3(PTX_MIN, ".u32", po_r(p0), po_r(t), po_i(64));
	E3(PTX_SUB, ".u32", po_r(p1), po_r(t), po_r(p0));
	PReg c0 = first_bit(g, an[0], p0), c1 = first_bit(g, an[1], p1);
	E3(PTX_SETP, ".eq.u32", po_r(z0), po_r(c0), po_i(64));
	E3(PTX_ADD, ".u32", po_r(c1), po_r(c1), po_i(64));
	E4(PTX_SELP, ".b32", po_r(pos), po_r(c1), po_r(c0), po_r(z0));
	E4(PTX_SELP, ".b64", po_r(bits), po_r(al[1]), po_r(al[0]), po_r(z0));
	E3(PTX_AND, ".b32", po_r(sh), po_r(pos), po_i(63));
	E3(PTX_SHR, ".b64", po_r(b), po_r(bits), po_r(sh));
	E2(PTX_CVT, ".u32.u64", po_r(b32), po_r(b));
	E3(PTX_AND, ".b32", po_r(b32), po_r(b32), po_i(1));
	/* pos = 128 (none): no all bit, whatever the shift read */
	E3(PTX_SETP, ".eq.u32", po_r(z0), po_r(pos), po_i(TAB_TILES));
	E4(PTX_SELP, ".b32", po_r(b32), po_i(0), po_r(b32), po_r(z0));
	E4(PTX_MAD, ".lo.u32", po_r(e), po_r(b32), po_i(256), po_r(pos));
	E4(PTX_MAD, ".lo.u32", po_r(a), po_r(t), po_i(2), po_r(sbase));
	E2(PTX_ST, ".shared.u16", po_mem(a, (int32_t)(off + TAB_NEXT)), po_r(e));
}

/* Tiles tested `batch` at a time, every lane on each (the key ranges
** per lane, the tests voted over the warp): bit u of the words is tile
** st + u SM80_BN. */
static void table_tiles(Gen *g, const KernelShape *s, PReg st, PReg anyw, PReg allw, PReg bitm, int batch)
{
	PReg su[32], end[32];
	int Lk = ptx_new_label(g->f);
	if (batch < 32)
		ptx_label(g->f, Lk);
	for (int u = 0; u < batch; u++) {
		su[u] = R(g, PC_B64), end[u] = R(g, PC_B64);
		E3(PTX_ADD, ".s64", po_r(su[u]), po_r(st), po_i(u * SM80_BN));
		E3(PTX_ADD, ".s64", po_r(end[u]), po_r(su[u]), po_i(SM80_BN));
		E3(PTX_MIN, ".s64", po_r(end[u]), po_r(end[u]), po_r(g->sext));
	}
	for (int i = 0; i < g->c->nodes.n; i++)
		if (streamed(s, i) && !class_done(g, s, i))
			sm80_key_ranges(g, i, su, end, batch);
	for (int u = 0; u < batch; u++) {
		PReg in = R(g, PC_PRED), an = R(g, PC_PRED), al = R(g, PC_PRED), bit = R(g, PC_B32),
		     x = R(g, PC_B32), y = R(g, PC_B32);
		class_flags(g, s, su[u], end[u], an, al);
		E3(PTX_SETP, ".lt.s64", po_r(in), po_r(su[u]), po_r(g->send));
		E3(PTX_AND, ".pred", po_r(an), po_r(an), po_r(in));
		E3(PTX_SHL, ".b32", po_r(bit), po_r(bitm), po_i(u));
		E4(PTX_SELP, ".b32", po_r(x), po_r(bit), po_i(0), po_r(an));
		E3(PTX_OR, ".b32", po_r(anyw), po_r(anyw), po_r(x));
		E4(PTX_SELP, ".b32", po_r(y), po_r(bit), po_i(0), po_r(al));
		E3(PTX_OR, ".b32", po_r(allw), po_r(allw), po_r(y));
	}
	if (batch < 32) {
		PReg more = R(g, PC_PRED), in = R(g, PC_PRED);
		E3(PTX_SHL, ".b32", po_r(bitm), po_r(bitm), po_i(batch));
		E3(PTX_ADD, ".s64", po_r(st), po_r(st), po_i(batch * SM80_BN));
		E3(PTX_SETP, ".ne.b32", po_r(more), po_r(bitm), po_i(0));
		E3(PTX_SETP, ".lt.s64", po_r(in), po_r(st), po_r(g->send));
		E3(PTX_AND, ".pred", po_r(more), po_r(more), po_r(in));
		E1(PTX_BRA, ".uni", po_label(Lk));
		ptx_guard(g->f, more, 0);
	}
}

/* The first window where its one key read is plain and its ids fit the
** staging (sm80_key_ranges_lanes): lane l tests tile st + l SM80_BN alone,
** and two ballots make the words. */
static int lanes_wanted(Gen *g, const KernelShape *s)
{
	int n = 0;
	if (!g->idsbase.n)
		return 0;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!streamed(s, i) || class_done(g, s, i))
			continue;
		int k = sm80_plain_key_reads(g, i);
		if (k < 0)
			return 0;
		n += k;
	}
	return n == 1;
}

static void table_lanes(Gen *g, const KernelShape *s, PReg st, PReg anyw, PReg allw)
{
	PReg su = R(g, PC_B64), eu = R(g, PC_B64), in = R(g, PC_PRED), an = R(g, PC_PRED),
	     al = R(g, PC_PRED);
	E4(PTX_MAD, ".lo.s64", po_r(su), po_r(g->lane), po_i(SM80_BN), po_r(st));
	E3(PTX_ADD, ".s64", po_r(eu), po_r(su), po_i(SM80_BN));
	E3(PTX_MIN, ".s64", po_r(eu), po_r(eu), po_r(g->sext));
	for (int i = 0; i < g->c->nodes.n; i++)
		if (streamed(s, i) && !class_done(g, s, i))
			sm80_key_ranges_lanes(g, i, st, su, eu);
	class_flags(g, s, su, eu, an, al);
	E3(PTX_SETP, ".lt.s64", po_r(in), po_r(su), po_r(g->send));
	E3(PTX_AND, ".pred", po_r(an), po_r(an), po_r(in));
	E3(PTX_VOTE, ".ballot.b32", po_r(anyw), po_r(an), po_i(-1));
	E3(PTX_VOTE, ".ballot.b32", po_r(allw), po_r(al), po_i(-1));
}

/* The classes of the TAB_TILES tiles from key wb (a window's start) into
** the table (plan_smem): warp w tests tiles 32 w to 32 w + 31 of the
** window, `batch` at a time (the loads of a batch's key ranges first, then
** its tests), and stops past the stream's end; its lane 0 writes the
** warp's two words; then each thread makes one tile's entry. Barriers
** before (no warp still reads the old window; not for the first), after
** the words and after the entries: the caller's control flow is the same
** in every warp, since the table decides it. */
static void table_fill(Gen *g, const KernelShape *s, PReg sbase, uint32_t off, PReg wb, int batch,
		       int first)
{
	PReg anyw = R(g, PC_B32), allw = R(g, PC_B32), st = R(g, PC_B64), bitm = R(g, PC_B32);
	if (!first)
		E1(PTX_BAR, "", po_i(1));
	E2(PTX_MOV, ".b32", po_r(anyw), po_i(0));
	E2(PTX_MOV, ".b32", po_r(allw), po_i(0));
	E2(PTX_MOV, ".b32", po_r(bitm), po_i(1));
	E4(PTX_MAD, ".lo.s64", po_r(st), po_r(g->warp), po_i(32 * SM80_BN), po_r(wb));
	if (batch == 32 && lanes_wanted(g, s))
		table_lanes(g, s, st, anyw, allw);
	else
		table_tiles(g, s, st, anyw, allw, bitm, batch);
	PReg w32 = u32of(g, g->warp), a = R(g, PC_B32), l0 = R(g, PC_PRED), t0 = R(g, PC_PRED);
	E4(PTX_MAD, ".lo.u32", po_r(a), po_r(w32), po_i(4), po_r(sbase));
	E3(PTX_SETP, ".eq.s64", po_r(l0), po_r(g->lane), po_i(0));
	E2(PTX_ST, ".shared.u32", po_mem(a, (int32_t)(off + TAB_ANY)), po_r(anyw));
	ptx_guard(g->f, l0, 0);
	E2(PTX_ST, ".shared.u32", po_mem(a, (int32_t)(off + TAB_ALL)), po_r(allw));
	ptx_guard(g->f, l0, 0);
	E3(PTX_SETP, ".eq.s64", po_r(t0), po_r(g->warp), po_i(0));
	E3(PTX_AND, ".pred", po_r(t0), po_r(t0), po_r(l0));
	E2(PTX_ST, ".shared.s64", po_mem(sbase, (int32_t)off), po_r(wb));
	ptx_guard(g->f, t0, 0);
	E1(PTX_BAR, "", po_i(1));
	table_next(g, sbase, off);
	E1(PTX_BAR, "", po_i(1));
}

/* The start of the window that holds key x. */
static PReg window_of(Gen *g, PReg x)
{
	PReg w = R(g, PC_B64);
	E3(PTX_AND, ".b64", po_r(w), po_r(x), po_i(-(int64_t)TAB_TILES * SM80_BN));
	return w;
}

/* scan_tiles for masks that read data (document ids). Classifying a tile
** there means loading its ids, and testing the tiles one after another cost
** a load's latency per tile: at 8k keys, 44 latencies per CTA against 16
** computed tiles (H100, document1024 D = 128: 0.64 of full on the computed
** tiles). The table (table_fill) holds the classes of a window of
** TAB_TILES tiles, tested with their loads in flight together, and per
** tile the next one to compute; the scan reads the window's start and the
** tile's entry at once (windows are aligned, so the entry's place does not
** wait for the start), and refills the table where the stream leaves the
** window. The refill's tile tests, in the stream loop beside the output
** accumulators, made ptxas spill 152 bytes (document masking, D = 128)
** where without them it spilled 24 and ran 4-5% faster; saving the
** accumulators to local memory around the refill, or computing its row
** ranges and lane ids again there, did not change that. So such a table
** kernel comes twice (sm80_emit.c, sm80_onewin_wanted): one without the
** refill (KernelShape.one_window), which the launcher takes where the keys fit the
** first window (N <= 8192), and the general one. */
static void scan_table(Gen *g, const KernelShape *s, PReg sbase, uint32_t off, PReg from, PReg out,
		       PReg any, PReg all)
{
	int Lscan = ptx_new_label(g->f), Lhave = ptx_new_label(g->f), Ldone = ptx_new_label(g->f);
	PReg past = R(g, PC_PRED), wb = R(g, PC_B64), d = R(g, PC_B64), inw = R(g, PC_PRED),
	     p = R(g, PC_B32), a = R(g, PC_B32), e = R(g, PC_B32), x = R(g, PC_B64);
	E2(PTX_MOV, ".b64", po_r(out), po_r(from));
	ptx_label(g->f, Lscan);
	E3(PTX_SETP, ".ge.s64", po_r(past), po_r(out), po_r(g->send));
	E1(PTX_BRA, ".uni", po_label(Ldone));
	ptx_guard(g->f, past, 0);
	E2(PTX_CVT, ".u32.u64", po_r(p), po_r(out));
	E3(PTX_SHR, ".u32", po_r(p), po_r(p), po_i(6));
	E3(PTX_AND, ".b32", po_r(p), po_r(p), po_i(TAB_TILES - 1));
	E4(PTX_MAD, ".lo.u32", po_r(a), po_r(p), po_i(2), po_r(sbase));
	E2(PTX_LD, ".shared.s64", po_r(wb), po_mem(sbase, (int32_t)off));
	E2(PTX_LD, ".shared.u16", po_r(e), po_mem(a, (int32_t)(off + TAB_NEXT)));
	E3(PTX_SUB, ".s64", po_r(d), po_r(out), po_r(wb));
	E3(PTX_SETP, ".lt.u64", po_r(inw), po_r(d), po_i((int64_t)TAB_TILES * SM80_BN));
	E1(PTX_BRA, ".uni", po_label(Lhave));
	ptx_guard(g->f, inw, 0);
	if (s->one_window) {
		/* every key is in the first window: the stream is done */
		E2(PTX_MOV, ".b64", po_r(out), po_r(g->send));
		E1(PTX_BRA, ".uni", po_label(Ldone));
	} else {
		table_fill(g, s, sbase, off, window_of(g, out), REFILL_BATCH, 0);
		E1(PTX_BRA, ".uni", po_label(Lscan));
	}
	ptx_label(g->f, Lhave);
	{
		PReg pos = R(g, PC_B32), fl = R(g, PC_B32), found = R(g, PC_PRED);
		E3(PTX_AND, ".b32", po_r(pos), po_r(e), po_i(255));
		E3(PTX_AND, ".b32", po_r(fl), po_r(e), po_i(256));
		E3(PTX_SETP, ".ne.b32", po_r(all), po_r(fl), po_i(0));
		/* pos = 128 (none): the next window */
		E2(PTX_CVT, ".u64.u32", po_r(x), po_r(pos));
		E4(PTX_MAD, ".lo.s64", po_r(out), po_r(x), po_i(SM80_BN), po_r(wb));
		E3(PTX_SETP, ".lt.u32", po_r(found), po_r(pos), po_i(TAB_TILES));
		E1(PTX_BRA, ".uni", po_label(Lscan));
		ptx_guard(g->f, found, 1);
	}
	ptx_label(g->f, Ldone);
	E3(PTX_SETP, ".lt.s64", po_r(any), po_r(out), po_r(g->send));
}

/* The stream's scan: from the table where masks read data. */
typedef struct Scan {
	int table;
	PReg sbase;
	uint32_t off;
} Scan;

/* The table is for masks that load data per tile (document ids): others
** test a tile in a few instructions. */
static int scan_table_wanted(Gen *g)
{
	for (int i = 0; i < g->c->nodes.n; i++)
		if (streamed(g->s, i) && sm80_key_reads(g, i))
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
static int warp_class_wanted(Gen *g, int table)
{
	int any = 0;
	if (table || g->s->pack)
		return 0;
	for (int i = 0; i < g->c->nodes.n; i++) {
		if (!streamed(g->s, i) || !node(g, i)->filter)
			continue;
		if (sm80_range_reads(g, i))
			return 0;
		any = 1;
	}
	return any;
}

/* any / all of the tile [j0, j1) over this warp's rows: rows q0 + 16 mt
** warp up to the CTA's (and the query extent's) end. */
static void warp_class(Gen *g, const KernelShape *s, PReg any, PReg all)
{
	PReg tid = special(g, "%tid.x"), w = R(g, PC_B64), end = R(g, PC_B64);
	g->wq0 = R(g, PC_B64), g->wq1 = R(g, PC_B64);
	E3(PTX_SHR, ".u64", po_r(w), po_r(tid), po_i(5));
	E4(PTX_MAD, ".lo.s64", po_r(g->wq0), po_r(w), po_i(16 * g->mt), po_r(g->q0));
	E3(PTX_ADD, ".s64", po_r(end), po_r(g->wq0), po_i(16 * g->mt));
	E3(PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->qext));
	E3(PTX_SUB, ".s64", po_r(g->wq1), po_r(end), po_i(1));
	g->wrows = 1;
	class_flags(g, s, g->j0, g->j1, any, all);
	g->wrows = 0;
}

static void scan(Gen *g, const KernelShape *s, const Scan *sc, PReg from, PReg out, PReg any, PReg all)
{
	if (sc->table)
		scan_table(g, s, sc->sbase, sc->off, from, out, any, all);
	else
		scan_tiles(g, s, from, out, any, all);
}

/* The CTA's key range [start, end): the union, over the nodes whose masks
** the scan tests, of the key bounds their filters' conjuncts give over the
** CTA's rows (causal: end = last row + 1; a window of W: start = first row
** - W + 1), start rounded down to a tile. The stream then starts and stops
** there instead of testing every tile from 0 to the end: up to N / 64
** class tests per CTA, most of the stream's overhead under short windows.
** start = 0 and end = sext where some node has no bound on that side. */
static void stream_bounds(Gen *g, const KernelShape *s, PReg start, PReg end)
{
	PReg sj0 = g->j0, sj1 = g->j1, zero = R(g, PC_B64);
	E2(PTX_MOV, ".b64", po_r(zero), po_i(0));
	g->j0 = zero, g->j1 = g->sext; /* keys in a bound (none expected): the stream */
	int lo_any = 1, hi_any = 1, first = 1;
	E2(PTX_MOV, ".b64", po_r(start), po_i(0));
	E2(PTX_MOV, ".b64", po_r(end), po_r(g->sext));
	for (int i = 0; i < g->c->nodes.n && (lo_any || hi_any); i++) {
		if (!streamed(s, i))
			continue;
		KeyBounds kb = {g, g->p->np[i].svar, NULL, NULL, NULL};
		if (node(g, i)->filter && kb.sv >= 0)
			plan_conjuncts(node(g, i)->filter, key_bound, &kb);
		g->node = i;
		PReg lo, hi, x;
		if (lo_any && kb.lo && sm80_range(g, kb.lo, &lo, &x))
			E3(first ? PTX_MAX : PTX_MIN, ".s64", po_r(start),
			   po_r(first ? zero : start), po_r(lo));
		else if (lo_any) {
			lo_any = 0;
			E2(PTX_MOV, ".b64", po_r(start), po_i(0));
		}
		if (hi_any && kb.hi && sm80_range(g, kb.hi, &x, &hi))
			E3(first ? PTX_MIN : PTX_MAX, ".s64", po_r(end),
			   po_r(first ? g->sext : end), po_r(hi));
		else if (hi_any) {
			hi_any = 0;
			E2(PTX_MOV, ".b64", po_r(end), po_r(g->sext));
		}
		first = 0;
	}
	/* a union of ranges widened, then clamped into the stream */
	E3(PTX_MAX, ".s64", po_r(start), po_r(start), po_i(0));
	E3(PTX_AND, ".b64", po_r(start), po_r(start), po_i(-(int64_t)SM80_BN));
	E3(PTX_MIN, ".s64", po_r(end), po_r(end), po_r(g->sext));
	g->j0 = sj0, g->j1 = sj1;
}

enum { COPY_K = 1, COPY_V = 2 };

/* The K (COPY_K) and V (COPY_V) tiles starting at key j into buffer buf. */
static void copy_kv(Gen *g, const KernelShape *s, TileLoad *lk, TileLoad *lv, const Smem *sm, PReg j,
		    PReg buf, int whole, int which)
{
	for (int k = 0; k < s->nqk && (which & COPY_K); k++)
		tile_load_buf(g, &lk[k], j, g->sext, buf, sm->kbuf[k], whole);
	for (int v = 0; v < s->nvreads && (which & COPY_V); v++)
		tile_load_buf(g, &lv[v], j, g->sext, buf, sm->vbuf[v], whole);
}

/* Copies the K and V tiles starting at key j into buffer buf (0 or 1) when
** `when` holds, then commits a group (empty otherwise), so that waiting for
** all but the newest group always means the current tile has arrived.
** Every tile but a ragged last one is copied without per-chunk bounds. */
static void issue_kv(Gen *g, const KernelShape *s, TileLoad *lk, TileLoad *lv, const Smem *sm, PReg j,
		     PReg buf, PReg when, int which)
{
	int skip = ptx_new_label(g->f), part = ptx_new_label(g->f);
	E1(PTX_BRA, ".uni", po_label(skip));
	ptx_guard(g->f, when, 1);
	PReg end = R(g, PC_B64), p = R(g, PC_PRED);
	E3(PTX_ADD, ".s64", po_r(end), po_r(j), po_i(SM80_BN));
	E3(PTX_SETP, ".gt.s64", po_r(p), po_r(end), po_r(g->sext));
	E1(PTX_BRA, ".uni", po_label(part));
	ptx_guard(g->f, p, 0);
	copy_kv(g, s, lk, lv, sm, j, buf, 1, which);
	E1(PTX_BRA, ".uni", po_label(skip));
	ptx_label(g->f, part);
	copy_kv(g, s, lk, lv, sm, j, buf, 0, which);
	ptx_label(g->f, skip);
	E(g, PTX_CP_COMMIT, "", 0, Z, Z, Z, Z, Z);
}

/* 128-row tiles with a head dim above 64: the kernels at the register
** limit, where the stream's code choices move ptxas's spills. */
static int wide_rows(const KernelShape *s)
{
	return sm80_row_blocks(s) == 2 && (s->qk[0].D > 64 || s->DV > 64);
}

/* See the stream loop. Where a kernel with the copies apart spills over
** budget, the driver tries it with them together (SM80_TILING_JOINT_KV) before
** 64-row tiles. Kernels with a tile table split too since its first window
** is staged through shared memory: document masking at D = 128 spills 180
** bytes either way, and the split ran 1.4-1.9% (2k) and 3.4-4.4% (8k)
** faster (H100, C-bench A/B); before, the table's fill held many registers
** and the retry doubled its ptxas time. */
static int split_v(const KernelShape *s)
{
	return s->tiling != SM80_TILING_JOINT_KV && wide_rows(s);
}

/* The next tile's V into the other buffer (the loop's head copied its K). */
static void issue_next_v(Gen *g, const KernelShape *s, TileLoad *lv, const Smem *sm, PReg nxt, PReg buf,
			 PReg when)
{
	if (!s->split_v)
		return;
	PReg nbuf = R(g, PC_B32);
	E3(PTX_XOR, ".b32", po_r(nbuf), po_r(buf), po_i(1));
	issue_kv(g, s, NULL, lv, sm, nxt, nbuf, when, COPY_V);
}

/* Q fragments stay in registers when they, the output accumulators and the
** score tile fit in about 192 registers; otherwise they are re-read. */
static int q_in_regs(const KernelShape *s, int mt)
{
	long regs = 0;
	for (int k = 0; k < s->nqk; k++)
		regs += mt * s->qk[k].D / 16 * 4 + mt * NEL;
	regs += (long)s->npv * mt * s->DV / 8 * 4;
	return regs <= 192;
}

/* Each row block's Q address for ldmatrix, and its fragments when they
** stay in registers (q_in_regs), once Q is in shared memory. */
static void q_frags(Gen *g, QFrag *qf, const Smem *sm, PReg sbase)
{
	const KernelShape *s = g->s;
	for (int k = 0; k < s->nqk; k++) {
		long nk = s->qk[k].D / 16;
		qf[k].inregs = q_in_regs(s, g->mt);
		for (int m = 0; m < g->mt; m++) {
			/* A rows: warp*16*mt + m*16 + (lane & 15), cols (lane >> 4)*8 */
			PReg row = R(g, PC_B64), cb = R(g, PC_B64), l15 = R(g, PC_B64),
			     l4 = R(g, PC_B64);
			E3(PTX_AND, ".b64", po_r(l15), po_r(g->lane), po_i(15));
			E3(PTX_SHR, ".u64", po_r(l4), po_r(g->lane), po_i(4));
			E4(PTX_MAD, ".lo.s64", po_r(row), po_r(g->warp), po_i(16 * g->mt),
			   po_r(l15));
			E3(PTX_ADD, ".s64", po_r(row), po_r(row), po_i(16 * m));
			E3(PTX_MUL, ".lo.s64", po_r(cb), po_r(l4), po_i(16));
			/* one register per row block: an immediate offset from one base
			** made ptxas spill more (tried) */
			qf[k].qaddr[m] =
			    lm_addr(g, sbase, sm->q[k], sm->qs[k], u32of(g, row), u32of(g, cb));
			if (!qf[k].inregs)
				continue;
			qf[k].qf[m] = ARENA_ARRAY(g->a, PReg *, nk + 1);
			for (long kk = 0; kk < nk; kk++) {
				qf[k].qf[m][kk] = ARENA_ARRAY(g->a, PReg, 4);
				for (int q = 0; q < 4; q++)
					qf[k].qf[m][kk][q] = R(g, PC_B32);
				E2(PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16",
				   po_vec(qf[k].qf[m][kk], 4),
				   po_mem(qf[k].qaddr[m], (int32_t)kk * 32));
			}
		}
	}
}

/* Whether CTAs may differ in length by their query tile: a streamed node's
** filter reads the query row (causal, windows, prefix-LM, document ids), so
** that the tiles a CTA visits depend on it (launch_order). */
static int row_masked(Gen *g, const KernelShape *s)
{
	for (int i = 0; i < g->c->nodes.n; i++) {
		const Node *n = node(g, i);
		if (streamed(s, i) && n->filter && sm80_reads_class(g, i, n->filter, s->qcls))
			return 1;
	}
	return 0;
}

/* The generator and the kernel's Q loads, for q_after_ids. */
typedef struct KGen {
	Gen g; /* first: a Gen * of a KGen is the KGen's */
	TileLoad *lq;
} KGen;

/* The CTA's Q copies and their commit, emitted after the first document
** table window's ids were committed (g->after_ids): the table then waits for
** the ids alone, where with Q committed first its wait_group 0 waited for Q's
** 32 KiB too. */
static void q_after_ids(Gen *g)
{
	KGen *k = (KGen *)g;
	for (int i = 0; i < g->s->nqk; i++)
		tile_load(g, &k->lq[i], g->q0, g->qext, 0, 0);
	E(g, PTX_CP_COMMIT, "", 0, Z, Z, Z, Z, Z);
}

/* The first table window's ids go through shared memory (key_ranges_staged)
** where its staging fits in the K and V buffers, contiguous after the one Q
** tile and free until the first tile's loads: sets g->idsbase (cleared
** after the first fill). */
static int ids_staged(Gen *g, const KernelShape *s, const Smem *sm, PReg sbase)
{
	uint32_t kv0 = sm->k[0], kv1 = sm->v[s->nvreads - 1] + 2 * sm->vbuf[s->nvreads - 1];
	if (s->nqk != 1 || kv1 - kv0 < SM80_IDSTAGE_BYTES)
		return 0;
	g->idsbase = sbase, g->idstage = kv0;
	return 1;
}

PtxFunc *sm80_kernel(Arena *a, const Plan *p, KernelShape *s)
{
	KGen KG = {0};
	Gen *g = &KG.g;
	g->a = a, g->p = p, g->c = p->c, g->s = s;
	g->mt = sm80_row_blocks(s), g->bm = SM80_WARPS * 16 * g->mt;
	PtxFunc *f = ARENA_NEW(a, PtxFunc);
	ptx_func_init(f, a, arena_printf(a, s->one_window ? "%s_fwd_short" : "%s_fwd", p->c->name),
		      SM80_THREADS);
	g->f = f;
	Smem sm = {0};
	int table = scan_table_wanted(g);
	s->table = table;
	plan_smem(s, &sm, g->bm, table);
	f->smem_bytes = sm.total;
	int n = p->c->nodes.n;
	g->tile = ARENA_ARRAY(a, PReg *, n + 1);
	g->rowv = ARENA_ARRAY(a, PReg *, n + 1);
	g->acc = ARENA_ARRAY(a, PReg *, n + 1);
	for (int i = 0; i < n; i++) {
		g->tile[i] = ARENA_ARRAY(a, PReg, MAXMT * NEL);
		g->rowv[i] = ARENA_ARRAY(a, PReg, MAXRS);
		g->acc[i] = ARENA_ARRAY(a, PReg, MAXMT * s->DV / 8 * 4 + 1);
	}
	sm80_scale_plan(g);
	sm80_shift_plan(g);
	declare_params(g);
	load_params(g);
	g->grouped = row_masked(g, s);
	decode_grid(g);
	PReg sbase = R(g, PC_B32), tid = special(g, "%tid.x");
	E2(PTX_MOV, ".u32", po_r(sbase), po_sym("smem"));
	Tile t = {0};
	int nrs = 2 * g->mt;
	t.prev = ARENA_ARRAY(a, PReg *, n + 1);
	t.kb = ARENA_ARRAY(a, signed char, n + 1);
	t.klo = ARENA_ARRAY(a, PReg *, n + 1);
	t.khi = ARENA_ARRAY(a, PReg *, n + 1);
	t.kres = ARENA_ARRAY(a, const Expr *, n + 1);
	t.okw = ARENA_ARRAY(a, PReg *, n + 1);
	t.okset = ARENA_ARRAY(a, unsigned char *, n + 1);
	for (int i = 0; i < n; i++) {
		t.okw[i] = ARENA_ARRAY(a, PReg, MAXMT * NEL / 32);
		t.okset[i] = ARENA_ARRAY(a, unsigned char, MAXMT *NEL);
	}
	tile_rows(g, &t);
	/* Q tiles and their fragments; with a staged table, Q is copied after
	** the table's ids */
	QFrag qf[GPU_MAXG];
	TileLoad lq[GPU_MAXG], lk[GPU_MAXG], lv[GPU_MAXG];
	int qlate = table && ids_staged(g, s, &sm, sbase) && lanes_wanted(g, s);
	KG.lq = lq;
	for (int k = 0; k < s->nqk; k++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->node[i].kind == SN_GEMM1 && s->node[i].gemm == k)
				node = i;
		tile_load_setup(g, &lq[k], node, s->qk[k].a, s->qcls, g->bm, s->qk[k].D, sm.q[k],
				sm.qs[k], sbase, tid);
		if (!qlate)
			tile_load(g, &lq[k], g->q0, g->qext, 0, 0);
		tile_load_setup(g, &lk[k], node, s->qk[k].b, s->scls, SM80_BN, s->qk[k].D, sm.k[k],
				sm.ks[k], sbase, tid);
		g->kaddr[k] = lane_addr(g, sbase, sm.k[k], sm.ks[k], 0);
	}
	for (int v = 0; v < s->nvreads; v++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->node[i].kind == SN_GEMM2 && s->pv[s->node[i].gemm].vslot == v)
				node = i;
		tile_load_setup(g, &lv[v], node, s->vreads[v], s->scls, SM80_BN, s->DV, sm.v[v], sm.vs,
				sbase, tid);
		g->vaddr[v] = lane_addr(g, sbase, sm.v[v], sm.vs, 1);
	}
	if (!qlate)
		E(g, PTX_CP_COMMIT, "", 0, Z, Z, Z, Z, Z);
	/* running state */
	for (int i = 0; i < n; i++) {
		ShapeNodeKind k = s->node[i].kind;
		if (k == SN_RMAX || k == SN_RSUM || k == SN_REF)
			for (int h = 0; h < nrs; h++) {
				g->rowv[i][h] = R(g, PC_F32);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]),
				   po_f(k == SN_RMAX ? -INFINITY : 0.0f));
			}
		if (k == SN_GEMM2)
			for (int el = 0; el < g->mt * s->DV / 8 * 4; el++) {
				g->acc[i][el] = R(g, PC_F32);
				E2(PTX_MOV, ".f32", po_r(g->acc[i][el]), po_f(0.0f));
			}
		if (p->np[i].is_ref) {
			t.prev[i] = ARENA_ARRAY(a, PReg, MAXRS);
			for (int h = 0; h < nrs; h++)
				t.prev[i][h] = R(g, PC_F32);
		}
	}
	for (int i = 0; i < n; i++)
		if (s->node[i].kind == SN_REF)
			for (int h = 0; h < nrs; h++) {
				g->node = i, g->half = h, g->row = t.crows[h];
				PReg v = sm80_expr(g, node(g, i)->body);
				E2(PTX_MOV, ".f32", po_r(g->rowv[i][h]), po_r(v));
			}
	lazy_plan(g, &t);
	maskonce_plan(g, &t);
	/* the stream, software-pipelined: tile t+1's K and V are copied into the
	** other buffer while tile t computes; a tile whose masks are false
	** everywhere is neither loaded nor computed */
	int Lloop = ptx_new_label(f), Lend = ptx_new_label(f);
	int Lfull = ptx_new_label(f), Ldone = ptx_new_label(f), Lskip = ptx_new_label(f);
	PReg kbase[GPU_MAXG], vbase[GPU_MAXG];
	for (int k = 0; k < s->nqk; k++)
		kbase[k] = g->kaddr[k];
	for (int v = 0; v < s->nvreads; v++)
		vbase[v] = g->vaddr[v];
	g->j0 = R(g, PC_B64), g->j1 = R(g, PC_B64);
	PReg j0 = g->j0, j1 = g->j1, nxt = R(g, PC_B64), nxt1 = R(g, PC_B64);
	Scan sc = {table, sbase, sm.scan};
	PReg buf = R(g, PC_B32), any = R(g, PC_PRED), all = R(g, PC_PRED), anyn = R(g, PC_PRED),
	     alln = R(g, PC_PRED);
	{
		PReg start = R(g, PC_B64);
		g->send = R(g, PC_B64);
		stream_bounds(g, s, start, g->send);
		if (sc.table) {
			/* the ids' staging (ids_staged, set above) */
			g->after_ids = qlate ? q_after_ids : NULL;
			table_fill(g, s, sbase, sc.off, window_of(g, start), 32, 1);
			g->idsbase = (PReg){0, 0};
			if (g->after_ids) /* not staged after all: Q now */
				q_after_ids(g), g->after_ids = NULL;
		}
		scan(g, s, &sc, start, j0, any, all);
	}
	E2(PTX_MOV, ".b32", po_r(buf), po_i(0));
	issue_kv(g, s, lk, lv, &sm, j0, buf, any, COPY_K | COPY_V);
	/* Q has arrived (the first K/V tile may still be in flight) */
	E1(PTX_CP_WAIT, "", po_i(1));
	E1(PTX_BAR, "", po_i(0));
	for (int k = 0; k < s->nqk; k++)
		sm80_scale_negate_q(g, k, sbase, sm.q[k], (uint32_t)g->bm * sm.qs[k], tid);
	q_frags(g, qf, &sm, sbase);
	ptx_label(f, Lloop);
	PReg fin = R(g, PC_PRED);
	E3(PTX_SETP, ".ge.s64", po_r(fin), po_r(j0), po_r(g->send));
	E1(PTX_BRA, ".uni", po_label(Lend));
	ptx_guard(f, fin, 0);
	E3(PTX_ADD, ".s64", po_r(j1), po_r(j0), po_i(SM80_BN));
	E3(PTX_MIN, ".s64", po_r(j1), po_r(j1), po_r(g->sext));
	/* prefetch the next non-empty tile into the other buffer */
	E3(PTX_ADD, ".s64", po_r(nxt1), po_r(j0), po_i(SM80_BN));
	scan(g, s, &sc, nxt1, nxt, anyn, alln);
	/* 128-row kernels with a head dim above 64 copy the next tile's V after
	** this tile's first contraction instead of here with its K: the head's
	** 16 copies per thread held up the contraction's ldmatrix reads in the
	** memory-instruction queue (H100, D = 128: +2-3%; at D = 64 it cost
	** some masked kernels 3%) */
	s->split_v = split_v(s);
	{
		PReg nbuf = R(g, PC_B32);
		E3(PTX_XOR, ".b32", po_r(nbuf), po_r(buf), po_i(1));
		issue_kv(g, s, lk, lv, &sm, nxt, nbuf, anyn, s->split_v ? COPY_K : COPY_K | COPY_V);
	}
	/* this tile's ldmatrix addresses, before the wait so that they (and
	** the read of %tid.x) take no time of their own. 128-row kernels with a
	** head dim above 64 recompute them from %tid.x per tile: held across
	** the stream they were spilled, and the reloads stalled the first
	** ldmatrix (H100: +1-2%; at D = 64 holding them was 3% faster). Not
	** with a true max kept beside a lazy one: ptxas then spilled more (172
	** bytes, causal + L) */
	int fresh = wide_rows(s);
	for (int i = 0; i < n; i++)
		if (t.mtrue[i])
			fresh = 0;
	if (fresh)
		lane_ids(g);
	for (int k = 0; k < s->nqk; k++) {
		g->kaddr[k] = R(g, PC_B32);
		E4(PTX_MAD, ".lo.u32", po_r(g->kaddr[k]), po_r(buf), po_i(sm.kbuf[k]),
		   po_r(fresh ? lane_addr(g, sbase, sm.k[k], sm.ks[k], 0) : kbase[k]));
	}
	for (int v = 0; v < s->nvreads; v++) {
		g->vaddr[v] = R(g, PC_B32);
		E4(PTX_MAD, ".lo.u32", po_r(g->vaddr[v]), po_r(buf), po_i(sm.vbuf[v]),
		   po_r(fresh ? lane_addr(g, sbase, sm.v[v], sm.vs, 1) : vbase[v]));
	}
	E1(PTX_CP_WAIT, "", po_i(1));
	E1(PTX_BAR, "", po_i(0));
	/* the loop runs only for a tile the scan found (j0 < send): no test of
	** `any` here, and none carried across the tile (ptxas kept it as a bit
	** of a spilled register) */
	int wclass = warp_class_wanted(g, table);
	if (wclass) {
		int Lwhole = ptx_new_label(f);
		PReg wany = R(g, PC_PRED);
		E1(PTX_BRA, ".uni", po_label(Lwhole));
		ptx_guard(f, all, 0);
		warp_class(g, s, wany, all);
		E1(PTX_BRA, ".uni", po_label(Lskip));
		ptx_guard(f, wany, 1);
		ptx_label(f, Lwhole);
	}
	{
		/* a partial last tile takes the masked path: its padding must not count */
		PReg whole = R(g, PC_PRED), w = R(g, PC_B64);
		E3(PTX_SUB, ".s64", po_r(w), po_r(j1), po_r(j0));
		E3(PTX_SETP, ".eq.s64", po_r(whole), po_r(w), po_i(SM80_BN));
		E3(PTX_AND, ".pred", po_r(all), po_r(all), po_r(whole));
	}
	for (int i = 0; i < n; i++)
		if (p->np[i].is_ref)
			for (int h = 0; h < nrs; h++)
				E2(PTX_MOV, ".f32", po_r(t.prev[i][h]), po_r(g->rowv[i][h]));
	for (int i = 0; i < n; i++)
		if (s->node[i].kind == SN_GEMM1)
			gemm1_tile(g, i, &qf[s->node[i].gemm], &sm);
	/* key indices after the contraction: they are not live across it */
	lane_ids(g);
	{
		PReg q = R(g, PC_B64);
		t.cbase = R(g, PC_B64), t.clast = R(g, PC_B64);
		E3(PTX_AND, ".b64", po_r(q), po_r(g->lane), po_i(3));
		E4(PTX_MAD, ".lo.s64", po_r(t.cbase), po_r(q), po_i(2), po_r(j0));
		E3(PTX_SUB, ".s64", po_r(t.clast), po_r(g->sext), po_i(1));
	}
	/* the next tile's V, a contraction after its K: each burst of copies
	** then competes with fewer of this tile's ldmatrix reads */
	issue_next_v(g, s, lv, &sm, nxt, buf, anyn);
	E1(PTX_BRA, ".uni", po_label(Lfull));
	ptx_guard(f, all, 0);
	tile_body(g, &t, 1, sbase, &sm);
	E1(PTX_BRA, ".uni", po_label(Ldone));
	ptx_label(f, Lfull);
	tile_body(g, &t, 0, sbase, &sm);
	if (wclass) {
		/* a warp that skips this tile still copies its part of the next V */
		E1(PTX_BRA, ".uni", po_label(Ldone));
		ptx_label(f, Lskip);
		issue_next_v(g, s, lv, &sm, nxt, buf, anyn);
	}
	ptx_label(f, Ldone);
	/* every warp is done with this buffer before the next prefetch reuses it */
	E1(PTX_BAR, "", po_i(0));
	E3(PTX_XOR, ".b32", po_r(buf), po_r(buf), po_i(1));
	E2(PTX_MOV, ".b64", po_r(j0), po_r(nxt));
	E2(PTX_MOV, ".pred", po_r(all), po_r(alln));
	E1(PTX_BRA, ".uni", po_label(Lloop));
	ptx_label(f, Lend);
	lazy_finish(g, &t);
	/* fresh parameters and grid indices: not held across the stream */
	load_params(g);
	decode_grid(g);
	epilogue(g, &t, &sm, sbase);
	E(g, PTX_RET, "", 0, Z, Z, Z, Z, Z);
	return f;
}

/* Whether a table kernel also comes without the refill (KernelShape.one_window; see
** scan_table): where it holds 128 rows with a head dim above 64, at the
** register limit, the refill's tests made ptxas spill in the stream loop
** (document1024 D = 128: +8.0% at 2k and +5.6% at 8k without them). At
** D = 64 the kernel did not spill either way, and the one-window kernel ran
** 1-2.5% slower (H100, C-bench A/B), so it keeps one entry. */
int sm80_onewin_wanted(const KernelShape *s)
{
	return s->table && wide_rows(s);
}

/* Two m16 row blocks per warp (128-row CTAs) halve the shared-memory reads
** per mma, the limit of 64-row tiles on the H100; they need the registers of
** one contraction pair with head dims up to 128. */
int sm80_row_blocks(const KernelShape *s)
{
	if (s->tiling == SM80_TILING_ROWS64 || s->pack)
		return 1;
	return s->nqk == 1 && s->npv == 1 && s->qk[0].D <= 128 && s->DV <= 128 ? 2 : 1;
}
