/*
** lowering/gpu/tma.c: the Tensor Memory Accelerator's copies and
** reductions and the transaction barriers' waits, for the targets whose
** producers copy tiles by TMA into a ring of stages (target.h's GpuTmap):
** a read's tensor map and box, the coordinates of its boxes, a copy that
** completes on a barrier, a reduction into global memory, and a ring's
** barrier addresses and phases. The targets choose the layout and the
** schedule; this file emits the instructions both sides of a ring share.
*/
#include "gpu.h"

/* Waits until the phase of parity `parity` of the barrier at shared
** address bar has completed: a try_wait loop (try_wait suspends for a
** while in hardware before it fails, so the loop does not spin hot). */
void gpu_mbar_wait(KernelGen *g, PReg bar, PReg parity)
{
	int L = ptx_new_label(g->f);
	PReg done = gpu_reg(g, PC_PRED);
	ptx_label(g->f, L);
	gpu_op3(g, PTX_MBAR_TRY_WAIT, ".parity.shared::cta.b64", po_r(done), po_mem(bar, 0),
		po_r(parity));
	gpu_op1(g, PTX_BRA, ".uni", po_label(L));
	ptx_guard(g->f, done, 1);
}

/* The shared address of stage's barrier in the array at off (8 bytes each). */
PReg gpu_ring_bar(KernelGen *g, PReg stage, uint32_t off)
{
	PReg b = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(b), po_r(stage), po_i(8), po_r(g->sbase));
	gpu_op3(g, PTX_ADD, ".u32", po_r(b), po_r(b), po_i(off));
	return b;
}

/* The ring's next place after stage (u32) of n, the phase parity ph
** flipping where it wraps to 0: the producer and the consumers move alike. */
void gpu_ring_next(KernelGen *g, PReg stage, PReg ph, int n)
{
	PReg wrap = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_ADD, ".u32", po_r(stage), po_r(stage), po_i(1));
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(wrap), po_r(stage), po_i(n));
	gpu_op2(g, PTX_MOV, ".b32", po_r(stage), po_i(0));
	ptx_guard(g->f, wrap, 0);
	gpu_op3(g, PTX_XOR, ".b32", po_r(ph), po_r(ph), po_i(1));
	ptx_guard(g->f, wrap, 0);
}

/* The shared address base + off (u32). */
PReg gpu_saddr(KernelGen *g, PReg base, uint32_t off)
{
	PReg r = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".u32", po_r(r), po_r(base), po_i(off));
	return r;
}

/* The tensor dimension of read e whose subscript is a plain index of
** class cls (gpu_shape made sure there is exactly one). */
static int row_dim(KernelGen *g, int node, const Expr *e, int cls)
{
	for (int k = 0; k < e->nargs - 1; k++)
		if (e->args[k]->kind == EX_INDEX && g->p->cls[node][e->args[k]->var] == cls)
			return k;
	return -1;
}

/* Read e of node's variables as TMA copies it: a tensor map whose box is
** GPU_TMAP_INNER elements along the last dimension, box_rows along the
** dimension of class cls (the query rows or the keys), 1 elsewhere. A
** gathered read (gathered) has a map only where its rows lie in pages
** (gather_stage.c): box_rows along the slot's dimension, cut to the page; the
** target copies other gathered reads with cp.async. */
/* Why kernel s's reads have no tensor maps (NULL: they have): a map per Q
** and K read, per V read that is not K's and per sum over the CTA's rows,
** at most GPU_MAX_TMAPS, each of at most GPU_TMAP_MAX_RANK dimensions. */
const char *gpu_tma_maps_reason(const KernelShape *s)
{
	int maps = 2 * s->nqk + s->ncross, rank = 0;
	for (int v = 0; v < s->nvreads; v++) {
		maps += s->vk[v] < 0;
		rank = s->vreads[v]->nargs > rank ? s->vreads[v]->nargs : rank;
	}
	for (int k = 0; k < s->nqk; k++) {
		rank = s->qk[k].a->nargs > rank ? s->qk[k].a->nargs : rank;
		rank = s->qk[k].b->nargs > rank ? s->qk[k].b->nargs : rank;
	}
	if (maps > GPU_MAX_TMAPS)
		return "the kernel would take more tensor maps than the launcher passes";
	return rank > GPU_TMAP_MAX_RANK ? "a tensor map has at most 5 dimensions" : NULL;
}

void gpu_tma_add_map(KernelGen *g, TmaRead *r, const Expr *e, int node, int cls, uint32_t rows,
		     uint32_t box_rows, long inner, int gathered)
{
	KernelShape *s = g->s;
	r->e = e, r->node = node, r->rows = rows;
	IndexKind along = cls == g->s->scls ? IDX_KEY : IDX_QUERY;
	r->rowdim = gathered ? gpu_pages_slot(g->p, node, e, IDX_KEY) : row_dim(g, node, e, cls);
	r->offset = 0;
	if (r->rowdim < 0 && (r->rowdim = gpu_offset_slot(g->p, node, e, along)) >= 0)
		r->offset = 1;
	r->cols = inner;
	r->panels = (int)(gpu_tma_tile_bytes(1, inner) / GPU_TMAP_ROW);
	if (gathered && r->rowdim < 0) {
		r->map = -1;
		return;
	}
	r->map = s->ntmaps++;
	GpuTmap *m = &s->tmap[r->map];
	m->tensor = e->tensor->id, m->rank = e->tensor->rank,
	m->clip = gathered && !r->offset ? r->rowdim + 1 : 0;
	for (int d = 0; d < m->rank; d++)
		m->box[d] = 1;
	m->box[m->rank - 1] = GPU_TMAP_INNER;
	m->box[r->rowdim] = box_rows;
}

/* The shared memory a tile of rows by cols 16-bit elements takes as TMA
** lays it out, and the bytes its copies bring: whole panels, the last
** one's columns past cols filled too (with TMA's zeros past the tensor). */
uint32_t gpu_tma_tile_bytes(uint32_t rows, long cols)
{
	return rows * (uint32_t)((cols + GPU_TMAP_INNER - 1) / GPU_TMAP_INNER) * GPU_TMAP_ROW;
}

/* The coordinates of read r that do not move with the tile (s32, tensor
** dimension order; the row and last dimensions are left to the copies).
** A packed head (K[b, i / G, ...]) takes the CTA's first row: a CTA's rows
** lie in one group. Returns where r's rows lie at an offset
** (TmaRead.offset) that offset, the row subscript at row 0 (a box at row j
** lies at gpu_tma_box_row), else no register. */
PReg gpu_tma_fixed_coords(KernelGen *g, const TmaRead *r, PReg *c)
{
	const Expr *e = r->e;
	g->node = r->node, g->row = g->q0, g->col = g->q0;
	for (int d = 0; d < e->nargs - 1; d++) {
		if (d == r->rowdim)
			continue;
		c[d] = gpu_u32(g, gpu_expr(g, e->args[d]));
	}
	if (!r->offset)
		return (PReg){0, 0};
	PReg zero = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	g->row = zero, g->col = zero;
	return gpu_u32(g, gpu_expr(g, e->args[r->rowdim]));
}

/* The box's row j (u32) of a read whose rows lie at offset off (off.n:
** else j itself). */
PReg gpu_tma_box_row(KernelGen *g, PReg j, PReg off)
{
	if (!off.n)
		return j;
	PReg r = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_ADD, ".u32", po_r(r), po_r(j), po_r(off));
	return r;
}

/* One TMA copy of read r's box at row coordinate row (u32) and panel p
** into shared address dst, completing on barrier bar; by the thread where
** lead is true (a register: the caller's loop runs in more threads). */
void gpu_tma_copy(KernelGen *g, const TmaRead *r, PReg map, const PReg *fixed, PReg row, int p,
		  PReg dst, PReg bar, PReg lead)
{
	int rank = r->e->nargs;
	PReg c[GPU_TMAP_MAX_RANK];
	for (int d = 0; d < rank; d++) {
		int td = rank - 1 - d; /* innermost first */
		if (td == rank - 1) {
			c[d] = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_MOV, ".b32", po_r(c[d]), po_i(p * GPU_TMAP_INNER));
		} else if (td == r->rowdim)
			c[d] = row;
		else
			c[d] = fixed[td];
	}
	gpu_op3(g, PTX_CP_BULK_TENSOR,
		arena_printf(g->a, ".%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
			     rank),
		po_mem(dst, 0), po_mem_vec(po_mem(map, 0), c, rank), po_mem(bar, 0));
	if (lead.n)
		ptx_guard(g->f, lead, 0);
}

/* The box of shared address src added to global memory through the map at
** map, at coordinates c (innermost first, rank of them), in the issuing
** thread's bulk group; by the thread where lead is true. */
void gpu_tma_reduce_add(KernelGen *g, PReg map, const PReg *c, int rank, PReg src, PReg lead)
{
	gpu_op2(g, PTX_CP_REDUCE_BULK,
		arena_printf(g->a, ".tensor.%dd.global.shared::cta.add.tile.bulk_group", rank),
		po_mem_vec(po_mem(map, 0), c, rank), po_mem(src, 0));
	ptx_guard(g->f, lead, 0);
}

/* The generic address of tensor map parameter name (cp.async.bulk.tensor
** takes the map's generic address; it lives in the parameter space). */
PReg gpu_tma_map_addr(KernelGen *g, const char *name)
{
	PReg r = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".u64", po_r(r), po_sym(name));
	gpu_op2(g, PTX_CVTA, ".param.u64", po_r(r), po_r(r));
	return r;
}

/* A tile of 16-bit pairs stored into shared memory as TMA lays out a V
** tile of the CTA's rows (rows 128 bytes apart, 64-column panels of
** cta_rows rows, the 128-byte swizzle), at off plus buf (u32, a buffer's
** offset): x per score element, converted by cvt (".rn.bf16x2.f32" or
** f16's), the thread's rows 16 w + lane / 4 (+ 8) of the CTA's (w over all
** the builder's warps), columns 8 nt + 2 (lane % 4) and the next. Column
** chunk c of 16 bytes of row r is stored at chunk c ^ (r % 8) of its
** panel's row: a warp's stores then cover all 32 banks. */
void gpu_tma_store_pairs(KernelGen *g, const PReg *x, const char *cvt, PReg buf, uint32_t off)
{
	PReg t = gpu_reg(g, PC_B32), r8 = gpu_reg(g, PC_B32), row = gpu_reg(g, PC_B32),
	     base = gpu_reg(g, PC_B32), q = gpu_reg(g, PC_B32), sw = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(t), po_r(gpu_tid(g)));
	/* row 16 (t / 32) + (t / 4) % 8 */
	gpu_op3(g, PTX_SHR, ".u32", po_r(r8), po_r(t), po_i(2));
	gpu_op3(g, PTX_AND, ".b32", po_r(r8), po_r(r8), po_i(7));
	gpu_op3(g, PTX_SHR, ".u32", po_r(row), po_r(t), po_i(5));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(row), po_r(row), po_i(16), po_r(r8));
	gpu_op3(g, PTX_AND, ".b32", po_r(q), po_r(t), po_i(3));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(base), po_r(row), po_i(GPU_TMAP_ROW), po_r(g->sbase));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(base), po_r(q), po_i(4), po_r(base));
	gpu_op3(g, PTX_ADD, ".u32", po_r(base), po_r(base), po_r(buf));
	gpu_op3(g, PTX_SHL, ".b32", po_r(sw), po_r(r8), po_i(4));
	for (int nt = 0; nt < g->bn / 8; nt++) {
		PReg a = gpu_reg(g, PC_B32);
		gpu_op3(g, PTX_XOR, ".b32", po_r(a), po_r(sw), po_i((nt % 8) * 16));
		gpu_op3(g, PTX_ADD, ".u32", po_r(a), po_r(a), po_r(base));
		for (int h = 0; h < 2; h++) {
			int el = nt * 4 + h * 2;
			PReg pk = gpu_reg(g, PC_B32);
			gpu_op3(g, PTX_CVT, cvt, po_r(pk), po_r(x[el + 1]), po_r(x[el]));
			uint32_t at = off + (uint32_t)(nt / 8 * g->cta_rows) * GPU_TMAP_ROW +
				      (uint32_t)h * 8 * GPU_TMAP_ROW;
			gpu_op2(g, PTX_ST, ".shared.b32", po_mem(a, (int32_t)at), po_r(pk));
		}
	}
}

/* A 64 x 64 block of f32 sums computed transposed (R^T, the accumulators'
** m64n64 layout: a thread's elements e = 16 (w % 4) + lane / 4 (+ 8) of
** streamed rows s = 8 nt + 2 (lane % 4) (+ 1)) stored at shared address
** at0 as two boxes of R's tensor map, 64 rows of 32 f32 with the
** 128-byte swizzle (box e / 32, row s), a word at a time: element e's
** 16-byte chunk (e % 32) / 4 of row s is at chunk ((e % 32) / 4) ^ (s %
** 8), so that a warp's 32 words fall in 32 banks. (R itself, staged a
** row's four elements at a time after the lanes traded halves, took four
** times the wavefronts its stores needed.) */
void gpu_tma_store_sums_t(KernelGen *g, const PReg *acc, PReg at0)
{
	/* the word of element e (+ 8 h) of row s (+ k), less 1024 nt: box
	** (w % 4) / 2, row 2 q + k, chunk (4 (w % 2) + lane / 16 + 2 h) ^ (2 q +
	** k), word (lane / 4) % 4, with q = lane % 4 */
	PReg t = gpu_reg(g, PC_B32), w = gpu_reg(g, PC_B32), q = gpu_reg(g, PC_B32),
	     c0 = gpu_reg(g, PC_B32), wd = gpu_reg(g, PC_B32), x = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(t), po_r(gpu_tid(g)));
	gpu_op3(g, PTX_SHR, ".u32", po_r(w), po_r(t), po_i(5));
	gpu_op3(g, PTX_AND, ".b32", po_r(w), po_r(w), po_i(3));
	gpu_op3(g, PTX_AND, ".b32", po_r(q), po_r(t), po_i(3));
	/* c0 = 4 (w % 2) + (lane / 16) % 2 */
	gpu_op3(g, PTX_SHR, ".u32", po_r(x), po_r(t), po_i(4));
	gpu_op3(g, PTX_AND, ".b32", po_r(x), po_r(x), po_i(1));
	gpu_op3(g, PTX_AND, ".b32", po_r(c0), po_r(w), po_i(1));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(c0), po_r(c0), po_i(4), po_r(x));
	/* the word and the box */
	gpu_op3(g, PTX_SHR, ".u32", po_r(wd), po_r(t), po_i(2));
	gpu_op3(g, PTX_AND, ".b32", po_r(wd), po_r(wd), po_i(3));
	gpu_op3(g, PTX_SHR, ".u32", po_r(x), po_r(w), po_i(1));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(wd), po_r(x), po_i(GPU_SUM_BOX_ROWS * GPU_TMAP_ROW / 4),
		po_r(wd));
	PReg sa = gpu_reg(g, PC_B32);
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(sa), po_r(wd), po_i(4), po_r(at0));
	PReg at[2][2];
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < 2; k++) {
			PReg r = gpu_reg(g, PC_B32), c = gpu_reg(g, PC_B32);
			at[h][k] = gpu_reg(g, PC_B32);
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(r), po_r(q), po_i(2), po_i(k));
			gpu_op3(g, PTX_ADD, ".u32", po_r(c), po_r(c0), po_i(2 * h));
			gpu_op3(g, PTX_XOR, ".b32", po_r(c), po_r(c), po_r(r));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(at[h][k]), po_r(r), po_i(GPU_TMAP_ROW),
				po_r(sa));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(at[h][k]), po_r(c), po_i(16),
				po_r(at[h][k]));
		}
	for (int nt = 0; nt < 8; nt++)
		for (int h = 0; h < 2; h++)
			for (int k = 0; k < 2; k++)
				gpu_op2(g, PTX_ST, ".shared.f32",
					po_mem(at[h][k], nt * 8 * GPU_TMAP_ROW),
					po_r(acc[nt * 4 + h * 2 + k]));
}

/* The dimension of SN_CROSS node i's output R along the streamed rows (the
** free variable of the stream's class; R's dimensions are the node's free
** variables in order), or -1. */
int gpu_cross_rowdim(const Plan *p, const KernelShape *s, int i)
{
	const Node *n = p->c->nodes.v[i];
	for (int d = 0; d < n->nfree - 1; d++)
		if (p->cls[i][d] == s->scls)
			return d;
	return -1;
}

/* Whether every sum's output has a tensor map to add through: at most
** GPU_TMAP_MAX_RANK dimensions, one of them the streamed rows'. */
int gpu_cross_mappable(const Plan *p, const KernelShape *s)
{
	for (int i = 0; i < p->c->nodes.n; i++)
		if (s->node[i].kind == SN_CROSS) {
			const Node *n = p->c->nodes.v[i];
			if (n->out->rank > GPU_TMAP_MAX_RANK || gpu_cross_rowdim(p, s, i) < 0)
				return 0;
		}
	return 1;
}

/* The A fragments (the mma.sync m16k16 layout, a warp's 16 rows) of the
** n tiles of reads r, which TMA laid out in shared memory, into out[k]
** (4 b32 per k-step of 16 of r[k]'s elements, TmaRead.cols), by ldmatrix from the
** swizzled panels: lane l gives row 16 w + 8 ((l >> 3) & 1) + (l & 7) of
** its warp's block, 16-byte chunk 2 (kk % 4) + (l >> 4) of panel kk / 4,
** which the 128-byte swizzle stores at chunk ^ (row % 8). */
void gpu_tma_a_frags(KernelGen *g, const TmaRead *r, int n, PReg *const *out)
{
	PReg l = gpu_reg(g, PC_B32), w = gpu_reg(g, PC_B32), row = gpu_reg(g, PC_B32),
	     x = gpu_reg(g, PC_B32), hi = gpu_reg(g, PC_B32), r7 = gpu_reg(g, PC_B32),
	     rb = gpu_reg(g, PC_B32);
	gpu_op2(g, PTX_CVT, ".u32.u64", po_r(l), po_r(gpu_tid(g)));
	gpu_op3(g, PTX_SHR, ".u32", po_r(w), po_r(l), po_i(5));
	gpu_op3(g, PTX_AND, ".b32", po_r(l), po_r(l), po_i(31));
	/* row: 16 w + 8 ((l >> 3) & 1) + (l & 7) */
	gpu_op3(g, PTX_AND, ".b32", po_r(x), po_r(l), po_i(15));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(row), po_r(w), po_i(16), po_r(x));
	gpu_op3(g, PTX_SHR, ".u32", po_r(hi), po_r(l), po_i(4));
	gpu_op3(g, PTX_AND, ".b32", po_r(r7), po_r(l), po_i(7));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(rb), po_r(row), po_i(GPU_TMAP_ROW), po_r(g->sbase));
	for (int k = 0; k < n; k++) {
		const TmaRead *q = &r[k];
		int nk = (int)(q->cols / 16);
		for (int kk = 0; kk < nk; kk++) {
			/* chunk 2 (kk % 4) + hi, swizzled by the row */
			PReg c = gpu_reg(g, PC_B32), a = gpu_reg(g, PC_B32);
			gpu_op3(g, PTX_ADD, ".u32", po_r(c), po_r(hi), po_i(2 * (kk % 4)));
			gpu_op3(g, PTX_XOR, ".b32", po_r(c), po_r(c), po_r(r7));
			gpu_op4(g, PTX_MAD, ".lo.u32", po_r(a), po_r(c), po_i(16), po_r(rb));
			for (int j = 0; j < 4; j++)
				out[k][4 * kk + j] = gpu_reg(g, PC_B32);
			gpu_op2(g, PTX_LDMATRIX, ".sync.aligned.m8n8.x4.shared.b16",
				po_vec(&out[k][4 * kk], 4),
				po_mem(a, (int32_t)(q->off +
						    (uint32_t)(kk / 4) * q->rows * GPU_TMAP_ROW)));
		}
	}
}

int gpu_stage_at_offset(const KernelShape *s, int r)
{
	int n = s->p->c->nodes.n;
	if (r < s->nqk)
		return s->qk[r].bgather && gpu_offset_slot(s->p, gpu_gemm_node(s, n, SN_GEMM1, r),
							   s->qk[r].b, IDX_KEY) >= 0;
	r -= s->nqk;
	return s->vgather[r] &&
	       gpu_offset_slot(s->p, gpu_vread_node(s, r), s->vreads[r], IDX_KEY) >= 0;
}

int gpu_q_at_offset(const KernelShape *s, int k)
{
	return s->qk[k].agather &&
	       gpu_offset_slot(s->p, gpu_gemm_node(s, s->p->c->nodes.n, SN_GEMM1, k), s->qk[k].a,
			       IDX_QUERY) >= 0;
}

int gpu_q_gathered(const KernelShape *s, int k)
{
	return s->qk[k].agather && !gpu_q_at_offset(s, k);
}

int gpu_stage_all_at_offset(const KernelShape *s)
{
	for (int r = 0; r < s->nqk + s->nvreads; r++) /* a V read of K's tile: no copy */
		if (!gpu_stage_at_offset(s, r) && (r < s->nqk || s->vk[r - s->nqk] < 0))
			return 0;
	return 1;
}
