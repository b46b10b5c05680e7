/*
** lowering/sm80/loads.c: sm_80's shared memory and its copies into it.
** Q, K and V tiles are copied with cp.async in 16-byte chunks (zero-filled
** past the end), K and V double-buffered, each group committed so that
** waiting for all but the newest means the current tile has arrived.
*/
#include "sm80.h"

/* Row strides are padded by 16 bytes so ldmatrix's eight rows hit eight
** different bank groups. */
void sm80_plan_smem(const KernelShape *s, Smem *m, int bm, int table)
{
	uint32_t off = 0;
	for (int i = 0; i < s->nqk; i++) {
		m->qs[i] = m->ks[i] = (uint32_t)(s->qk[i].D * 2 + 16);
		m->q[i] = off, off += (uint32_t)bm * m->qs[i];
		m->k[i] = off, m->kbuf[i] = GPU_BN * m->ks[i], off += 2 * m->kbuf[i];
	}
	for (int i = 0; i < s->nvreads; i++) {
		int k = m->vk[i] = s->vk[i];
		if (k >= 0) {
			m->v[i] = m->k[k], m->vbuf[i] = m->kbuf[k], m->vs[i] = m->ks[k];
			continue;
		}
		m->vs[i] = (uint32_t)(s->DV * 2 + 16);
		m->v[i] = off, m->vbuf[i] = GPU_BN * m->vs[i], off += 2 * m->vbuf[i];
	}
	m->kvend = off;
	m->xs = (uint32_t)(GPU_BN * 2 + 16);
	for (int i = 0; i < s->ncross; i++)
		m->x[i] = off, off += (uint32_t)bm * m->xs;
	m->scan = table ? off : 0;
	off += table ? GPU_TABLE_BYTES : 0;
	m->total = off;
}

/* Position of the subscript that runs over the tile's rows (class rowcls). */
static int row_position(KernelGen *g, int gnode, const Expr *acc, int rowcls)
{
	for (int k = 0; k < acc->nargs; k++)
		if (acc->args[k]->kind == EX_INDEX && g->p->cls[gnode][acc->args[k]->var] == rowcls)
			return k;
	return 0;
}

/* The loader of a tile of `rows` rows of read acc (node gnode) along class
** rowcls, width elements each, into shared memory at sbase + soff with
** rows sstride bytes apart: each thread's chunks and their addresses.
** With `gather` the read's rows follow their index through a gather. */
static void tile_load_setup(KernelGen *g, TileLoad *L, int gnode, const Expr *acc, int rowcls,
			    int rows, long width, uint32_t soff, uint32_t sstride, PReg sbase,
			    PReg tid, int gather)
{
	long cpr = width / 8; /* chunks per row */
	L->n = (int)(rows * cpr / GPU_THREADS);
	L->step = (int)(GPU_THREADS / cpr);
	L->sstride = sstride;
	L->general = GPU_THREADS % cpr != 0;
	L->cpr = cpr, L->sbase = sbase, L->soff = soff;
	L->tid32 = gpu_u32(g, tid);
	L->rowstride = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(L->rowstride),
		po_r(g->par.stride[acc->tensor->id][row_position(g, gnode, acc, rowcls)]), po_i(2));
	g->node = gnode;
	PReg saverow = g->row, savecol = g->col, zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	g->row = g->col = zero;
	if (rowcls != g->s->qcls)
		g->row = g->q0; /* a packed K/V head is q0 / X for all the CTA's rows */
	L->gacc = gather ? acc : NULL, L->gnode = gnode;
	L->along = rowcls == g->s->scls ? IDX_KEY : IDX_QUERY;
	L->base =
	    gather ? gpu_gather_base(g, gnode, acc, L->along) : gpu_addr(g, acc->tensor, acc->args);
	g->row = saverow, g->col = savecol;
	PReg col = gpu_reg(g, PC_B64);
	L->row0 = gpu_reg(g, PC_B64), L->loff = gpu_reg(g, PC_B64),
	L->stepbytes = gpu_reg(g, PC_B64), L->saddr = gpu_reg(g, PC_B32);
	/* in 32 bits: ptxas turns a 64-bit division, even by a constant, into
	** a call of its division subroutine (three loaders made six calls, some
	** 2,000 cycles before the CTA's first load was issued) */
	PReg r32 = gpu_reg(g, PC_B32), c32 = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_DIV, ".u32", po_r(r32), po_r(L->tid32), po_i(cpr));
	gpu_op3(g, PTX_REM, ".u32", po_r(c32), po_r(L->tid32), po_i(cpr));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(L->row0), po_r(r32));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(col), po_r(c32));
	if (gather) /* the rows' offsets come from the gather, per chunk */
		gpu_op2(g, PTX_MOV, ".b64", po_r(L->loff), po_i(0));
	else
		gpu_op3(g, PTX_MUL, ".lo.s64", po_r(L->loff), po_r(L->row0), po_r(L->rowstride));
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(L->loff), po_r(col), po_i(16), po_r(L->loff));
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(L->stepbytes), po_r(L->rowstride), po_i(L->step));
	L->baseoff = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_ADD, ".s64", po_r(L->baseoff), po_r(L->base), po_r(L->loff));
	L->pname = g->par.ptr_names[acc->tensor->id];
	L->stepshift = gpu_log2(L->step),
	L->aligned = rowcls == g->s->scls && GPU_BN % L->step == 0;
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(L->saddr), po_r(gpu_u32(g, L->row0)), po_i(sstride),
		po_r(sbase));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(L->saddr), po_r(gpu_u32(g, col)), po_i(16),
		po_r(L->saddr));
	gpu_op3(g, PTX_ADD, ".u32", po_r(L->saddr), po_r(L->saddr), po_i(soff));
}

/* One 16-byte chunk of a gathered read (L->gacc): row grow's offset
** through the gather from colbase (the read's fixed part plus the chunk's
** column) into shared address dst; a row the gather does not copy (past
** ext, or a gathered index outside the tensor) is zero-filled from the
** tensor's first element. */
static void gather_chunk(KernelGen *g, const TileLoad *L, PReg grow, PReg colbase, PReg ext,
			 PtxOpnd dst)
{
	PReg ok, off = gpu_gather_row(g, L->gnode, L->gacc, L->along, grow, ext, &ok);
	PReg a = gpu_reg(g, PC_B64), p = gpu_reg(g, PC_B64), t = gpu_reg(g, PC_B64),
	     bytes = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".s64", po_r(a), po_r(colbase), po_r(off));
	gpu_op2(g, PTX_LD, ".param.u64", po_r(p), po_memsym(L->pname, 0));
	gpu_op2(g, PTX_CVTA, ".to.global.u64", po_r(t), po_r(p));
	gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(a), po_r(t), po_r(ok));
	gpu_op4(g, PTX_SELP, ".b32", po_r(bytes), po_i(16), po_i(0), po_r(ok));
	gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global", dst, po_mem(a, 0), po_i(16), po_r(bytes));
}

/* The general case: chunk c = it*128 + tid is (c / cpr, c % cpr). */
static void tile_load_general(KernelGen *g, const TileLoad *L, PReg first, PReg ext, PReg sdst)
{
	PReg tile = gpu_reg(g, PC_B64);
	gpu_op4(g, PTX_MAD, ".lo.s64", po_r(tile), po_r(first), po_r(L->rowstride), po_r(L->base));
	for (int it = 0; it < L->n; it++) {
		PReg c = gpu_reg(g, PC_B32), r = gpu_reg(g, PC_B32), col = gpu_reg(g, PC_B32),
		     r64 = gpu_reg(g, PC_B64), c64 = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".u32", po_r(c), po_r(L->tid32), po_i(it * GPU_THREADS));
		gpu_op3(g, PTX_DIV, ".u32", po_r(r), po_r(c), po_i(L->cpr));
		gpu_op3(g, PTX_REM, ".u32", po_r(col), po_r(c), po_i(L->cpr));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r64), po_r(r));
		gpu_op2(g, PTX_CVT, ".u64.u32", po_r(c64), po_r(col));
		PReg grow = gpu_reg(g, PC_B64), ok = gpu_reg(g, PC_PRED), a = gpu_reg(g, PC_B64),
		     bytes = gpu_reg(g, PC_B32), sa = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_ADD, ".s64", po_r(grow), po_r(first), po_r(r64));
		if (L->gacc) {
			PReg cb = gpu_reg(g, PC_B64);
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(cb), po_r(c64), po_i(16),
				po_r(L->base));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(r), po_i(L->sstride),
				po_r(sdst));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(col), po_i(16), po_r(sa));
			gather_chunk(g, L, grow, cb, ext, po_mem(sa, 0));
			continue;
		}
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(ok), po_r(grow), po_r(ext));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(r64), po_r(L->rowstride), po_r(tile));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(a), po_r(c64), po_i(16), po_r(a));
		gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(a), po_r(tile), po_r(ok));
		gpu_op4(g, PTX_SELP, ".b32", po_r(bytes), po_i(16), po_i(0), po_r(ok));
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(r), po_i(L->sstride), po_r(sdst));
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(col), po_i(16), po_r(sa));
		gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global", po_mem(sa, 0), po_mem(a, 0), po_i(16),
			po_r(bytes));
	}
}

/* A gathered tile (L->gacc) where D/8 divides the block: each lane
** evaluates one of its warp's rows, and each chunk takes its row's offset
** and byte count by shuffles (gpu_gather_lanes); a row not copied reads 0
** bytes from the tensor's own pointer. */
static void tile_load_gathered(KernelGen *g, const TileLoad *L, PReg first, PReg ext,
			       uint32_t soff_extra)
{
	PReg tid = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_MOV, ".u32", po_r(tid), po_sym("%tid.x"));
	GatherLanes gl = {0};
	gpu_gather_lanes(g, L->gnode, L->gacc, L->along, tid, L->cpr, L->n, L->step, first, ext,
			 &gl);
	PReg p = gpu_reg(g, PC_B64), tp = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_LD, ".param.u64", po_r(p), po_memsym(L->pname, 0));
	gpu_op2(g, PTX_CVTA, ".to.global.u64", po_r(tp), po_r(p));
	for (int it = 0; it < L->n; it++) {
		PReg o, bytes, a = gpu_reg(g, PC_B64), in = gpu_reg(g, PC_PRED);
		gpu_gather_take(g, &gl, it, &o, &bytes);
		gpu_op3(g, PTX_ADD, ".s64", po_r(a), po_r(L->baseoff), po_r(o));
		gpu_op3(g, PTX_SETP, ".ne.u32", po_r(in), po_r(bytes), po_i(0));
		gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(a), po_r(tp), po_r(in));
		gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global",
			po_mem(L->saddr, (int32_t)(soff_extra +
						   (uint32_t)it * (uint32_t)L->step * L->sstride)),
			po_mem(a, 0), po_i(16), po_r(bytes));
	}
}

/* cp.async of the tile whose first row is `first` (rows past ext: zeros,
** read from a valid address instead), into the buffer at soff_extra; with
** `whole` (the caller knows every row is below ext) without the per-chunk
** bounds tests and selects. */
static void tile_load(KernelGen *g, const TileLoad *L, PReg first, PReg ext, uint32_t soff_extra,
		      int whole)
{
	if (L->general) {
		PReg d = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_ADD, ".u32", po_r(d), po_r(L->sbase), po_i(L->soff + soff_extra));
		tile_load_general(g, L, first, ext, d);
		return;
	}
	if (L->gacc) {
		tile_load_gathered(g, L, first, ext, soff_extra);
		return;
	}
	/* src = first * rowstride + baseoff, with first a multiple of step (and
	** zero-filled chunks read from the tensor's own first element), so that
	** only baseoff, stepbytes and row0 stay in registers across the stream */
	PReg src = gpu_reg(g, PC_B64), grow = gpu_reg(g, PC_B64), q = gpu_reg(g, PC_B64),
	     p = gpu_reg(g, PC_B64), tile = gpu_reg(g, PC_B64);
	if (L->aligned) {
		gpu_op3(g, PTX_SHR, ".s64", po_r(q), po_r(first), po_i(L->stepshift));
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(src), po_r(q), po_r(L->stepbytes),
			po_r(L->baseoff));
	} else {
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(src), po_r(first), po_r(L->rowstride),
			po_r(L->baseoff));
	}
	if (whole) {
		for (int it = 0; it < L->n; it++) {
			gpu_op3(g, PTX_CP_ASYNC, ".cg.shared.global",
				po_mem(L->saddr,
				       (int32_t)(soff_extra +
						 (uint32_t)it * (uint32_t)L->step * L->sstride)),
				po_mem(src, 0), po_i(16));
			if (it + 1 < L->n)
				gpu_op3(g, PTX_ADD, ".s64", po_r(src), po_r(src),
					po_r(L->stepbytes));
		}
		return;
	}
	/* the thread's first row, from %tid.x: not held across the stream */
	PReg tid = gpu_reg(g, PC_B32), r0 = gpu_reg(g, PC_B32), r064 = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".u32", po_r(tid), po_sym("%tid.x"));
	gpu_op3(g, PTX_DIV, ".u32", po_r(r0), po_r(tid), po_i(L->cpr));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r064), po_r(r0));
	gpu_op3(g, PTX_ADD, ".s64", po_r(grow), po_r(first), po_r(r064));
	gpu_op2(g, PTX_LD, ".param.u64", po_r(p), po_memsym(L->pname, 0));
	gpu_op2(g, PTX_CVTA, ".to.global.u64", po_r(tile), po_r(p));
	for (int it = 0; it < L->n; it++) {
		PReg ok = gpu_reg(g, PC_PRED), a = gpu_reg(g, PC_B64), bytes = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(ok), po_r(grow), po_r(ext));
		gpu_op4(g, PTX_SELP, ".b64", po_r(a), po_r(src), po_r(tile), po_r(ok));
		gpu_op4(g, PTX_SELP, ".b32", po_r(bytes), po_i(16), po_i(0), po_r(ok));
		gpu_op4(g, PTX_CP_ASYNC, ".cg.shared.global",
			po_mem(L->saddr, (int32_t)(soff_extra +
						   (uint32_t)it * (uint32_t)L->step * L->sstride)),
			po_mem(a, 0), po_i(16), po_r(bytes));
		if (it + 1 < L->n) {
			gpu_op3(g, PTX_ADD, ".s64", po_r(src), po_r(src), po_r(L->stepbytes));
			gpu_op3(g, PTX_ADD, ".s64", po_r(grow), po_r(grow), po_i(L->step));
		}
	}
}

/* The same load into buffer buf of a double-buffered tile (bufbytes apart). */
static void tile_load_buf(KernelGen *g, TileLoad *L, PReg first, PReg ext, PReg buf,
			  uint32_t bufbytes, int whole)
{
	if (L->general) {
		PReg d = gpu_reg(g, PC_B32);
		gpu_op4(g, PTX_MAD, ".lo.u32", po_r(d), po_r(buf), po_i(bufbytes), po_r(L->sbase));
		gpu_op3(g, PTX_ADD, ".u32", po_r(d), po_r(d), po_i(L->soff));
		tile_load_general(g, L, first, ext, d);
		return;
	}
	PReg save = L->saddr, a = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(buf), po_i(bufbytes), po_r(L->saddr));
	L->saddr = a;
	tile_load(g, L, first, ext, 0, whole);
	L->saddr = save;
}

/* The K (SM80_COPY_K) and V (SM80_COPY_V) tiles starting at key j into
** buffer buf. */
static void copy_kv(KernelGen *g, PReg j, PReg buf, int whole, int which)
{
	const KernelShape *s = g->s;
	Sm80Kernel *k8 = sm80_of(g);
	for (int k = 0; k < s->nqk && (which & SM80_COPY_K); k++)
		tile_load_buf(g, &k8->lk[k], j, g->sext, buf, k8->sm.kbuf[k], whole);
	for (int v = 0; v < s->nvreads && (which & SM80_COPY_V); v++)
		if (k8->sm.vk[v] < 0)
			tile_load_buf(g, &k8->lv[v], j, g->sext, buf, k8->sm.vbuf[v], whole);
}

/* Copies the K and V tiles starting at key j into buffer buf (0 or 1) when
** `when` holds, then commits a group (empty otherwise), so that waiting for
** all but the newest group always means the current tile has arrived.
** Every tile but a ragged last one is copied without per-chunk bounds. */
void sm80_issue_kv(KernelGen *g, PReg j, PReg buf, PReg when, int which)
{
	int skip = ptx_new_label(g->f), part = ptx_new_label(g->f);
	gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
	ptx_guard(g->f, when, 1);
	PReg end = gpu_reg(g, PC_B64), p = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_ADD, ".s64", po_r(end), po_r(j), po_i(GPU_BN));
	gpu_op3(g, PTX_SETP, ".gt.s64", po_r(p), po_r(end), po_r(g->sext));
	gpu_op1(g, PTX_BRA, ".uni", po_label(part));
	ptx_guard(g->f, p, 0);
	copy_kv(g, j, buf, 1, which);
	gpu_op1(g, PTX_BRA, ".uni", po_label(skip));
	ptx_label(g->f, part);
	copy_kv(g, j, buf, 0, which);
	ptx_label(g->f, skip);
	gpu_op0(g, PTX_CP_COMMIT, "");
}

/* The next tile's V into the other buffer, where the loop's head copied
** its K alone (KernelShape.split_v): after the contraction, each burst of
** copies then competes with fewer of this tile's ldmatrix reads. */
void sm80_issue_next_v(KernelGen *g, PReg nxt, PReg buf, PReg when)
{
	if (!g->s->split_v)
		return;
	PReg nbuf = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_XOR, ".b32", po_r(nbuf), po_r(buf), po_i(1));
	sm80_issue_kv(g, nxt, nbuf, when, SM80_COPY_V);
}

/* The CTA's Q copies and their commit, emitted after the first document
** table window's ids were committed (g->ids.after): the table then waits for
** the ids alone, where with Q committed first its wait_group 0 waited for Q's
** 32 KiB too. */
void sm80_load_q(KernelGen *g)
{
	Sm80Kernel *k8 = sm80_of(g);
	for (int i = 0; i < g->s->nqk; i++)
		tile_load(g, &k8->lq[i], g->q0, g->qext, 0, 0);
	gpu_op0(g, PTX_CP_COMMIT, "");
}

/* The first table window's ids go through shared memory (ranges.c's
** key_ranges_staged) where its staging fits in the K and V buffers,
** contiguous after the one Q tile and free until the first tile's loads:
** sets g->ids.base (cleared after the first fill). */
static int ids_staged(KernelGen *g, const KernelShape *s, const Smem *sm, PReg sbase)
{
	uint32_t kv0 = sm->k[0], kv1 = sm->kvend;
	if (s->nqk != 1 || kv1 - kv0 < GPU_IDSTAGE_BYTES)
		return 0;
	g->ids.base = sbase, g->ids.off = kv0;
	return 1;
}

/* The loaders of Q, K and V tiles and the lane parts of K's and V's
** ldmatrix addresses; the CTA's Q copies, unless they wait for the tile
** table's staged ids (returns 1: sm80_load_q runs after them). */
int sm80_setup_loads(KernelGen *g, int table)
{
	const KernelShape *s = g->s;
	Sm80Kernel *k8 = sm80_of(g);
	const Smem *sm = &k8->sm;
	int n = g->c->nodes.n;
	PReg sbase = g->sbase, tid = g->tid;
	int qlate = table && ids_staged(g, s, sm, sbase) && gpu_lanes_wanted(g);
	for (int k = 0; k < s->nqk; k++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->node[i].kind == SN_GEMM1 && s->node[i].gemm == k)
				node = i;
		tile_load_setup(g, &k8->lq[k], node, s->qk[k].a, s->qcls, g->cta_rows, s->qk[k].D,
				sm->q[k], sm->qs[k], sbase, tid, s->qk[k].agather);
		if (!qlate)
			tile_load(g, &k8->lq[k], g->q0, g->qext, 0, 0);
		tile_load_setup(g, &k8->lk[k], node, s->qk[k].b, s->scls, GPU_BN, s->qk[k].D,
				sm->k[k], sm->ks[k], sbase, tid, s->qk[k].bgather);
		k8->kaddr[k] = sm80_lane_addr(g, sbase, sm->k[k], sm->ks[k], 0);
	}
	for (int v = 0; v < s->nvreads; v++) {
		int node = -1;
		for (int i = 0; i < n; i++)
			if (s->node[i].kind == SN_GEMM2 && s->pv[s->node[i].gemm].vslot == v)
				node = i;
		tile_load_setup(g, &k8->lv[v], node, s->vreads[v], s->scls, GPU_BN, s->DV, sm->v[v],
				sm->vs[v], sbase, tid, s->vgather[v]);
		if (g->vcol0.n) { /* the CTA's slice of V's columns, 2-byte elements */
			TileLoad *L = &k8->lv[v];
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(L->base), po_r(g->vcol0), po_i(2),
				po_r(L->base));
			gpu_op4(g, PTX_MAD, ".lo.s64", po_r(L->baseoff), po_r(g->vcol0), po_i(2),
				po_r(L->baseoff));
		}
		k8->vaddr[v] = sm80_v_lane_addr(g, sbase, v);
	}
	if (!qlate)
		gpu_op0(g, PTX_CP_COMMIT, "");
	for (int k = 0; k < s->nqk; k++)
		k8->kbase[k] = k8->kaddr[k];
	for (int v = 0; v < s->nvreads; v++)
		k8->vbase[v] = k8->vaddr[v];
	return qlate;
}

/* The tile table's id staging: 4-byte copies that bypass registers. */
void sm80_copy4_async(KernelGen *g, PtxOpnd dst, PtxOpnd src)
{
	gpu_op3(g, PTX_CP_ASYNC, ".ca.shared.global", dst, src, po_i(4));
}

void sm80_copy_commit(KernelGen *g)
{
	gpu_op0(g, PTX_CP_COMMIT, "");
}

void sm80_copy_wait(KernelGen *g, int n)
{
	gpu_op1(g, PTX_CP_WAIT, "", po_i(n));
}
