/*
** lowering/gpu/abi.c: the kernel ABI (gpu.h's head) as PTX: the parameters
** declared and loaded into registers, the magic parameters counted once
** for the kernel and the generated launcher, and the CTA's place decoded
** from its launch position (the launch order, the grid classes by magic
** division), with the lane and warp ids.
*/
#include <string.h>

#include "gpu.h"

/* How many magic parameters a plan's kernels take (GPU_MAGIC_*, then two
** per grid class that is not the query tile, then GPU_DIVISOR_PARAMS per
** divisor: gpu_divisors). */
int gpu_magic_params(const Plan *p)
{
	int n = GPU_MAGIC_FIXED;
	for (int k = 0; k < p->nclasses; k++)
		n += 2 * (p->classes[k].grid && !p->classes[k].qtile);
	const Expr *div[GPU_MAX_DIVISORS];
	return n + GPU_DIVISOR_PARAMS * gpu_divisors(p, div);
}

/* Magic parameter i (GPU_MAGIC_*, or a class's pair after them). */
static PReg magic(KernelGen *g, int i)
{
	PReg r = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_LD, ".param.u32", po_r(r), po_memsym(g->par.magic_names[i], 0));
	return r;
}

/* n / d for n < 2^31 from d's magic pair (attnrt_divmagic): a wide
** multiply and a shift instead of ptxas's division (I2F, MUFU.RCP, F2I
** and some fifteen more instructions, one chain of them per divisor at
** the CTA's start and again before its epilogue). */
static PReg magic_div(KernelGen *g, PReg n, PReg m, PReg s)
{
	PReg w = gpu_reg(g, PC_B64), q = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_MUL, ".wide.u32", po_r(w), po_r(n), po_r(m));
	gpu_op3(g, PTX_SHR, ".b64", po_r(w), po_r(w), po_r(s));
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(q), po_r(w));
	return q;
}

/* ---- parameters and indices ---------------------------------------------- */

/* Parameter names, declared once; load_params reads them into registers. */
void gpu_declare_params(KernelGen *g)
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
		sn[i] = ARENA_ARRAY(g->a, const char *, tensor_buf_rank(t) + 1);
		for (int k = 0; k < tensor_buf_rank(t); k++)
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
	g->par.magic_names = ARENA_ARRAY(g->a, const char *, nm + 1);
	for (int i = 0; i < nm; i++)
		g->par.magic_names[i] = ptx_param(f, arena_printf(g->a, "g%d", i), ".u32");
	g->par.ndivisors = gpu_divisors(g->p, g->par.divisors);
	g->par.divisor_magic = nm - GPU_DIVISOR_PARAMS * g->par.ndivisors;
	g->par.ptr_names = pn, g->par.stride_names = sn, g->par.dim_names = dn,
	g->par.param_names = qn;
}

/* Parameters into registers: at entry, and again for the epilogue, so that
** values the stream does not use are not held in registers across it. */
void gpu_load_params(KernelGen *g)
{
	const Cascade *c = g->c;
	int nt = c->tensors.n;
	const char **pn = g->par.ptr_names, ***sn = g->par.stride_names, **dn = g->par.dim_names,
		   **qn = g->par.param_names;
	g->par.tptr = ARENA_ARRAY(g->a, PReg, nt + 1);
	g->par.stride = ARENA_ARRAY(g->a, PReg *, nt + 1);
	for (int i = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		PReg r = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_LD, ".param.u64", po_r(r), po_memsym(pn[i], 0));
		g->par.tptr[i] = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_CVTA, ".to.global.u64", po_r(g->par.tptr[i]), po_r(r));
		g->par.stride[i] = ARENA_ARRAY(g->a, PReg, tensor_buf_rank(t) + 1);
		for (int k = 0; k < tensor_buf_rank(t); k++) {
			g->par.stride[i][k] = gpu_reg(g, PC_B64);
			gpu_op2(g, PTX_LD, ".param.s64", po_r(g->par.stride[i][k]),
				po_memsym(sn[i][k], 0));
		}
	}
	g->par.dim = ARENA_ARRAY(g->a, PReg, c->dims.n + 1);
	for (int i = 0; i < c->dims.n; i++) {
		g->par.dim[i] = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_LD, ".param.s64", po_r(g->par.dim[i]), po_memsym(dn[i], 0));
	}
	g->par.param = ARENA_ARRAY(g->a, PReg, c->params.n + 1);
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		g->par.param[i] = gpu_reg(g, p->type == VT_INT ? PC_B32 : PC_F32);
		gpu_op2(g, PTX_LD, p->type == VT_INT ? ".param.s32" : ".param.f32",
			po_r(g->par.param[i]), po_memsym(qn[i], 0));
	}
}

PReg gpu_special(KernelGen *g, const char *sreg)
{
	PReg r32 = gpu_reg(g, PC_B32), r = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".u32", po_r(r32), po_sym(sreg));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r), po_r(r32));
	return r;
}

/* The CTA's linear launch position (x + nctaid.x y), b64. */
PReg gpu_cta_index(KernelGen *g)
{
	PReg x = gpu_special(g, "%ctaid.x"), y = gpu_special(g, "%ctaid.y"),
	     nx = gpu_special(g, "%nctaid.x"), c = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(c), po_r(y), po_r(nx), po_r(x));
	return c;
}

/* The part parameters' names, in ABI order. */
static const char *const part_param[GPU_PART_NPARAMS] = {
    "kr0", "kr1", "kchunk", "qr0", "qr1", "pws", "pcnt", "pst", "pmode", "pgx", "pgy"};
static const char *const part_type[GPU_PART_NPARAMS] = {
    ".s64", ".s64", ".s64", ".s64", ".s64", ".u64", ".u64", ".u64", ".u32", ".s64", ".s64"};

void gpu_parts_declare(KernelGen *g)
{
	int n = g->s->streamk ? GPU_PART_NPARAMS : GPU_PART_GX;
	for (int i = 0; i < n; i++)
		g->par.part_names[i] = ptx_param(g->f, part_param[i], part_type[i]);
}

PReg gpu_part_param(KernelGen *g, int i)
{
	int wide = strcmp(part_type[i], ".u32") != 0; /* the mode is the one u32 */
	PReg r = gpu_reg(g, wide ? PC_B64 : PC_B32);
	gpu_op2(g, PTX_LD, arena_printf(g->a, ".param%s", part_type[i]), po_r(r),
		po_memsym(g->par.part_names[i], 0));
	return r;
}

/* The launch's keys and rows, in the grid decode (both roles of a
** warp-specialised CTA decode it): rows from qr0, keys up to kr1. */
static void parts_grid(KernelGen *g)
{
	/* new registers: qext and sext may be one register (a self-attention's
	** N, the expression cache's), which must not change in place */
	PReg qr1 = gpu_part_param(g, GPU_PART_QR1), kr1 = gpu_part_param(g, GPU_PART_KR1),
	     q0 = gpu_reg(g, PC_B64), qext = gpu_reg(g, PC_B64), sext = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(q0), po_r(g->q0));
	if (!g->s->pack) {
		PReg qr0 = gpu_part_param(g, GPU_PART_QR0);
		gpu_op3(g, PTX_ADD, ".s64", po_r(q0), po_r(g->q0), po_r(qr0));
	}
	gpu_op3(g, PTX_MIN, ".s64", po_r(qext), po_r(g->qext), po_r(qr1));
	gpu_op3(g, PTX_MIN, ".s64", po_r(sext), po_r(g->sext), po_r(kr1));
	g->q0 = q0, g->qext = qext, g->sext = sext;
}

/* Extent of an index class, from the first node variable of that class. */
static PReg class_extent(KernelGen *g, int cls)
{
	g->node = 0;
	return gpu_expr(g, g->p->classes[cls].extent);
}

/* log2 of x, a power of two (shift counts of tile sizes and strides). */
int gpu_log2(long x)
{
	int n = 0;
	while ((1L << n) < x)
		n++;
	return n;
}

/* Lane and warp as b64, re-read from %tid.x where a tile needs them, so
** that they are not held in registers across the contractions. Where a
** CTA's warps are groups over the same rows (KernelShape.cta_slices), the
** warp within its group: the rows are numbered by it. */
void gpu_lane_ids(KernelGen *g)
{
	PReg tid = gpu_tid(g);
	g->lane = gpu_reg(g, PC_B64), g->warp = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_AND, ".b64", po_r(g->lane), po_r(tid), po_i(31));
	gpu_op3(g, PTX_SHR, ".u64", po_r(g->warp), po_r(tid), po_i(5));
	if (g->s->cta_slices > 1)
		gpu_op3(g, PTX_REM, ".u64", po_r(g->warp), po_r(g->warp),
			po_i(gpu_warps(g->t) / g->s->cta_slices));
}

PReg gpu_u32(KernelGen *g, PReg x)
{
	PReg r = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(r), po_r(x));
	return r;
}

static void divrem32(KernelGen *g, PReg a, PReg b, PReg q, PReg r)
{
	PReg a32 = gpu_u32(g, a), b32 = gpu_u32(g, b), q32 = gpu_reg(g, PC_B32),
	     r32 = gpu_reg(g, PC_B32);
	if (q.n) {
		gpu_op3(g, PTX_DIV, ".u32", po_r(q32), po_r(a32), po_r(b32));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(q), po_r(q32));
	}
	if (r.n) {
		gpu_op3(g, PTX_REM, ".u32", po_r(r32), po_r(a32), po_r(b32));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r), po_r(r32));
	}
}

/* A u32 special register. */
static PReg special32(KernelGen *g, const char *sreg)
{
	PReg r = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(r), po_sym(sreg));
	return r;
}

/* A persistent kernel's query tiles per grid point (g->wnx) and work tiles
** in all (g->wtotal), u32, from the dims: the launcher's grid (gx, gy), of
** which it starts fewer CTAs. Not where query heads are packed (the
** launcher's gx then counts groups). */
void gpu_work_count(KernelGen *g)
{
	const Plan *p = g->p;
	PReg q = gpu_reg(g, PC_B64), n = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_ADD, ".s64", po_r(q), po_r(class_extent(g, g->s->qcls)),
		po_i(g->cta_rows - 1));
	gpu_op3(g, PTX_SHR, ".u64", po_r(q), po_r(q), po_i(gpu_log2(g->cta_rows)));
	gpu_op2(g, PTX_MOV, ".b64", po_r(n), po_r(q));
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].grid && !p->classes[k].qtile)
			gpu_op3(g, PTX_MUL, ".lo.s64", po_r(n), po_r(n), po_r(class_extent(g, k)));
	g->wnx = gpu_u32(g, q), g->wtotal = gpu_u32(g, n);
}

/* The CTA's query tile qt and other grid index rest (flattened, class
** order) from its launch position. The launcher's grid is (query tiles nx,
** the rest ny), and CTAs start roughly in order of their linear id
** x + nx y. That order is regrouped: groups of G = ceil(256 / nx) values of
** the rest (heads, batches) in turn, within a group the query tiles last
** first, the group's G heads side by side. Under a causal mask the last
** tiles are the longest: started first, across all of a group's heads, they
** leave short CTAs for the launch's tail, closer to the ideal makespan than
** the last tiles first per head. Some 256 CTAs (two per SM on a 128-SM GPU)
** run at once, on about G heads' K and V, bm (D + DV) 2 bytes per CTA:
** within the L2. Where every CTA streams the same keys (no mask reads the
** query row) there is no long CTA to start first, and the launch order
** stays: a head's query tiles start together and share its K and V tiles
** in the L2 within a short time. A backward's kernel over key tiles
** (Cascade.first_rows_longest) takes its tiles first to last: under a
** causal mask the first keys are read by the most query rows. */
static void launch_order(KernelGen *g, PReg qt, PReg rest)
{
	PReg nx, ny, cx, cy;
	if (g->work.n) {
		/* a persistent kernel's work tile w in place of the launch position
		** (x, y) = (w % nx, w / nx) of the grid it stands for */
		nx = g->wnx, ny = gpu_reg(g, PC_B32), cx = gpu_reg(g, PC_B32),
		cy = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_DIV, ".u32", po_r(ny), po_r(g->wtotal), po_r(nx));
		gpu_op3(g, PTX_DIV, ".u32", po_r(cy), po_r(g->work), po_r(nx));
		gpu_op3(g, PTX_MUL, ".lo.u32", po_r(cx), po_r(cy), po_r(nx));
		gpu_op3(g, PTX_SUB, ".u32", po_r(cx), po_r(g->work), po_r(cx));
	} else {
		nx = special32(g, "%nctaid.x"), ny = special32(g, "%nctaid.y"),
		cx = special32(g, "%ctaid.x"), cy = special32(g, "%ctaid.y");
	}
	PReg L = gpu_reg(g, PC_B32), r = gpu_reg(g, PC_B32), y0 = gpu_reg(g, PC_B32),
	     gs = gpu_reg(g, PC_B32), y = gpu_reg(g, PC_B32), t = gpu_reg(g, PC_B32), G, GT, grp, q;
	if (!g->grouped) {
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(qt), po_r(cx));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(rest), po_r(cy));
		return;
	}
	/* G = ceil(256 / nx) and GT = G nx come from the launcher, and the
	** two divisions by their magic pairs (the last group's size gs < G
	** has its own) */
	PReg last = gpu_reg(g, PC_PRED), m = gpu_reg(g, PC_B32), s = gpu_reg(g, PC_B32), mx, sx, my,
	     sy;
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(L), po_r(cy), po_r(nx), po_r(cx));
	G = magic(g, GPU_MAGIC_G);
	GT = magic(g, GPU_MAGIC_GT);
	mx = magic(g, GPU_MAGIC_M_GT);
	sx = magic(g, GPU_MAGIC_S_GT);
	grp = magic_div(g, L, mx, sx);
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(y0), po_r(grp), po_r(G));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(t), po_r(grp), po_r(GT));
	gpu_op3(g, PTX_SUB, ".u32", po_r(r), po_r(L), po_r(t));
	gpu_op3(g, PTX_SUB, ".u32", po_r(gs), po_r(ny), po_r(y0));
	gpu_op3(g, PTX_SETP, ".lt.u32", po_r(last), po_r(gs), po_r(G));
	gpu_op3(g, PTX_MIN, ".u32", po_r(gs), po_r(gs), po_r(G));
	mx = magic(g, GPU_MAGIC_M_G);
	sx = magic(g, GPU_MAGIC_S_G);
	my = magic(g, GPU_MAGIC_M_GL);
	sy = magic(g, GPU_MAGIC_S_GL);
	gpu_op4(g, PTX_SELP, ".b32", po_r(m), po_r(my), po_r(mx), po_r(last));
	gpu_op4(g, PTX_SELP, ".b32", po_r(s), po_r(sy), po_r(sx), po_r(last));
	q = magic_div(g, r, m, s);
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(t), po_r(q), po_r(gs));
	gpu_op3(g, PTX_SUB, ".u32", po_r(y), po_r(r), po_r(t));
	gpu_op3(g, PTX_ADD, ".u32", po_r(y), po_r(y), po_r(y0));
	if (g->c->first_rows_longest) {
		/* a backward over key tiles: the first keys stream the most rows */
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(qt), po_r(q));
	} else {
		gpu_op3(g, PTX_SUB, ".u32", po_r(t), po_r(nx), po_r(q));
		gpu_op3(g, PTX_SUB, ".u32", po_r(t), po_r(t), po_i(1));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(qt), po_r(t));
	}
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(rest), po_r(y));
}

void gpu_decode_grid(KernelGen *g)
{
	const Plan *p = g->p;
	g->grid = ARENA_ARRAY(g->a, PReg, p->nclasses + 1);
	PReg qt = gpu_reg(g, PC_B64), rest = gpu_reg(g, PC_B64);
	launch_order(g, qt, rest);
	if (g->s->cta_slices > 1) {
		/* the slice is the warp's group's (KernelShape.cta_slices) */
		PReg w = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_SHR, ".u64", po_r(w), po_r(gpu_tid(g)), po_i(5));
		gpu_op3(g, PTX_DIV, ".u64", po_r(w), po_r(w),
			po_i(gpu_warps(g->t) / g->s->cta_slices));
		g->vcol0 = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MUL, ".lo.s64", po_r(g->vcol0), po_r(w), po_i(g->s->DV));
	} else if (g->s->vslices > 1) {
		/* y's fastest part is the slice of V's columns (KernelShape.vslices),
		** so that split-KV's parts and their states keep a CTA per slice */
		PReg r32 = gpu_u32(g, rest), sl = gpu_reg(g, PC_B32), q = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_REM, ".u32", po_r(sl), po_r(r32), po_i(g->s->vslices));
		gpu_op3(g, PTX_DIV, ".u32", po_r(q), po_r(r32), po_i(g->s->vslices));
		g->vcol0 = gpu_reg(g, PC_B64), rest = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MUL, ".wide.u32", po_r(g->vcol0), po_r(sl), po_i(g->s->DV));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(rest), po_r(q));
	}
	g->q0 = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(g->q0), po_r(qt), po_i(g->cta_rows));
	PReg gend = {0};
	if (g->s->pack) {
		/* x = group * tiles per group + tile: rows group*X + tile*bm, up to
		** the group's end (its K/V head is row / X for every row) */
		g->node = 0;
		PReg X = gpu_expr(g, g->s->pack), tpg = gpu_reg(g, PC_B64),
		     grp = gpu_reg(g, PC_B64), tl = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".s64", po_r(tpg), po_r(X), po_i(g->cta_rows - 1));
		/* bm is 64 or 128: a shift, not a 64-bit division */
		gpu_op3(g, PTX_SHR, ".u64", po_r(tpg), po_r(tpg), po_i(gpu_log2(g->cta_rows)));
		divrem32(g, qt, tpg, grp, tl);
		gpu_op3(g, PTX_MUL, ".lo.s64", po_r(tl), po_r(tl), po_i(g->cta_rows));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(g->q0), po_r(grp), po_r(X), po_r(tl));
		gend = gpu_reg(g, PC_B64);
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(gend), po_r(grp), po_r(X), po_r(X));
	}
	int pair = GPU_MAGIC_FIXED;
	for (int k = 0; k < p->nclasses; k++) {
		if (!p->classes[k].grid || p->classes[k].qtile)
			continue;
		/* rest / ext and rest % ext by ext's magic pair (the launcher's) */
		PReg ext = gpu_u32(g, class_extent(g, k)), rest32 = gpu_u32(g, rest),
		     t = gpu_reg(g, PC_B32), m = magic(g, pair), s = magic(g, pair + 1),
		     q = magic_div(g, rest32, m, s);
		pair += 2;
		gpu_op3(g, PTX_MUL, ".lo.u32", po_r(t), po_r(q), po_r(ext));
		gpu_op3(g, PTX_SUB, ".u32", po_r(t), po_r(rest32), po_r(t));
		g->grid[k] = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(g->grid[k]), po_r(t));
		PReg r2 = gpu_reg(g, PC_B64);
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r2), po_r(q));
		rest = r2;
	}
	g->qext = class_extent(g, g->s->qcls);
	if (gend.n) { /* the CTA's rows end with its group (a new register: see parts_grid) */
		PReg q = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MIN, ".s64", po_r(q), po_r(g->qext), po_r(gend));
		g->qext = q;
	}
	g->sext = class_extent(g, g->s->scls);
	if (g->s->parts)
		parts_grid(g);
	gpu_lane_ids(g);
}
