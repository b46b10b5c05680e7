/*
** lowering/gpu/gather.c: K and V rows whose place follows the key through
** index arithmetic or a gather (and Q rows whose place follows the query
** row so), as a paged KV cache reads them:
** Kc[block[b, j / P], j % P, h / G, d] takes key j of sequence b from slot
** j % P of page block[b, j / P]. Such a read has no one row stride along
** the keys: a tile's loader adds to the read's fixed part (every subscript
** that does not follow the key, as a plain read's base) each row's own
** offset, the key-dependent subscripts evaluated at that row's key, the
** table read once per row. A row past the keys, or whose gathered index
** falls outside the tensor (the table past a sequence's last page may hold
** anything), is zero-filled from a valid address instead: its scores are
** masked, and no copy leaves the tensor.
*/
#include "gpu.h"

/* Subscript x of a read in node `node` follows the tile's rows (`along`:
** IDX_KEY or IDX_QUERY) through index arithmetic of those rows and grid
** indices, with i32 inputs read at such subscripts (a gather); *key set
** where it names the rows' index, *reads where it reads an input. 0 where
** it names another index or reads a computed tensor, which the loader
** cannot evaluate per row. */
static int row_arith(const Plan *p, int node, const Expr *x, IndexKind along, int *key, int *reads)
{
	switch (x->kind) {
	case EX_INDEX: {
		IndexKind k = plan_index_kind(p, node, x->var);
		*key |= k == along;
		return k == along || k == IDX_GRID;
	}
	case EX_ACCESS:
		if (x->tensor->def || x->tensor->type != VT_INT)
			return 0;
		*reads = 1;
		break;
	case EX_INT:
	case EX_DIM:
	case EX_PARAM:
	case EX_UNOP:
	case EX_BINOP:
	case EX_SELECT:
	case EX_CALL: break;
	default: return 0;
	}
	if (x->type != VT_INT)
		return 0;
	for (int k = 0; k < x->nargs; k++)
		if (!row_arith(p, node, x->args[k], along, key, reads))
			return 0;
	return 1;
}

int gpu_gather_subscript(const Plan *p, int node, const Expr *x, IndexKind along)
{
	int key = 0, reads = 0;
	return x->kind != EX_INDEX && row_arith(p, node, x, along, &key, &reads) && key;
}

/* Subscript k of read e follows the rows (a plain index of them included). */
static int row_dependent(KernelGen *g, int node, const Expr *e, int k, IndexKind along)
{
	const Expr *x = e->args[k];
	if (x->kind == EX_INDEX)
		return plan_index_kind(g->p, node, x->var) == along;
	return gpu_gather_subscript(g->p, node, x, along);
}

/* The address of e's fixed part: every subscript that follows the rows
** taken as 0 (the caller has set the row to the CTA's first, for a packed
** head). */
PReg gpu_gather_base(KernelGen *g, int node, const Expr *e, IndexKind along)
{
	Expr **args = ARENA_ARRAY(g->a, Expr *, e->nargs);
	for (int k = 0; k < e->nargs; k++)
		args[k] = row_dependent(g, node, e, k, along) ? expr_int(g->a, 0) : e->args[k];
	return gpu_addr(g, e->tensor, args);
}

/* The byte offset from e's fixed part of row j's (a key or a query row, as
** `along` says; b64), and in *ok whether the row is copied: j below ext and
** every gathered index inside its dimension. j is clamped into [0, ext)
** first, so that the table is read inside its own extent. */
PReg gpu_gather_row(KernelGen *g, int node, const Expr *e, IndexKind along, PReg j, PReg ext,
		    PReg *ok)
{
	PReg jc = gpu_reg(g, PC_B64), last = gpu_reg(g, PC_B64), zero = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SUB, ".s64", po_r(last), po_r(ext), po_i(1));
	gpu_op3(g, PTX_MIN, ".s64", po_r(jc), po_r(j), po_r(last));
	gpu_op3(g, PTX_MAX, ".s64", po_r(jc), po_r(jc), po_i(0));
	gpu_op2(g, PTX_MOV, ".b64", po_r(zero), po_i(0));
	*ok = gpu_reg(g, PC_PRED);
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(*ok), po_r(j), po_r(ext));
	int snode = g->node, selem = g->elem;
	PReg scol = g->col, srow = g->row;
	g->node = node, g->elem = -1;
	if (along == IDX_KEY)
		g->col = jc;
	else
		g->row = jc;
	PReg off = zero;
	for (int k = 0; k < e->nargs - 1; k++) {
		if (!row_dependent(g, node, e, k, along))
			continue;
		int key = 0, reads = 0;
		row_arith(g->p, node, e->args[k], along, &key, &reads);
		PReg x = gpu_expr(g, e->args[k]);
		if (reads) {
			PReg n = gpu_expr(g, e->tensor->shape[k]), in = gpu_reg(g, PC_PRED);
			gpu_op3(g, PTX_SETP, ".lt.u64", po_r(in), po_r(x), po_r(n));
			gpu_op3(g, PTX_AND, ".pred", po_r(*ok), po_r(*ok), po_r(in));
		}
		PReg o = gpu_reg(g, PC_B64);
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(o), po_r(x),
			po_r(g->par.stride[e->tensor->id][k]), po_r(off));
		off = o;
	}
	g->node = snode, g->col = scol, g->row = srow, g->elem = selem;
	PReg bytes = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_MUL, ".lo.s64", po_r(bytes), po_r(off), po_i(dtype_size(e->tensor->dtype)));
	return bytes;
}

/* Each lane of the 128 copying threads (tid32: 0 to 127) evaluates one of
** the rows its warp copies, where cpr (chunks of 16 bytes a row) divides
** 32: the threads copy chunks in order, so a warp's threads hold per = 32 /
** cpr first rows row0 (warp * per + lane / cpr), each with the rows row0 +
** step it, it < n: R = per n rows a warp (16 of a 64-row tile, 32 of a
** 128-row one). Lane l takes row warp * per + (l % R) % per + step ((l % R)
** / per) from first, and the chunks take its offset and byte count by
** shuffles (gpu_gather_take): one table read per thread and tile instead
** of one per chunk, and few registers live across the copies. */
void gpu_gather_lanes(KernelGen *g, int node, const Expr *e, IndexKind along, PReg tid32, long cpr,
		      int n, int step, PReg first, PReg ext, GatherLanes *gl)
{
	int per = (int)(32 / cpr), rows = per * n;
	PReg lane = gpu_reg(g, PC_B32), lr = gpu_reg(g, PC_B32), r = gpu_reg(g, PC_B32),
	     t = gpu_reg(g, PC_B32), r64 = gpu_reg(g, PC_B64), j = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_AND, ".b32", po_r(lane), po_r(tid32), po_i(31));
	gpu_op3(g, PTX_AND, ".b32", po_r(lr), po_r(lane), po_i(rows - 1));
	/* the lane's row: warp * per + lr % per + step * (lr / per), lr = l % R */
	gpu_op3(g, PTX_SHR, ".u32", po_r(r), po_r(tid32), po_i(5));
	gpu_op3(g, PTX_MUL, ".lo.u32", po_r(r), po_r(r), po_i(per));
	gpu_op3(g, PTX_AND, ".b32", po_r(t), po_r(lr), po_i(per - 1));
	gpu_op3(g, PTX_ADD, ".u32", po_r(r), po_r(r), po_r(t));
	gpu_op3(g, PTX_SHR, ".u32", po_r(t), po_r(lr), po_i(gpu_log2(per)));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(r), po_r(t), po_i(step), po_r(r));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(r64), po_r(r));
	gpu_op3(g, PTX_ADD, ".s64", po_r(j), po_r(first), po_r(r64));
	PReg ok, off = gpu_gather_row(g, node, e, along, j, ext, &ok);
	gl->lo = gpu_reg(g, PC_B32), gl->hi = gpu_reg(g, PC_B32), gl->nb = gpu_reg(g, PC_B32);
	gl->k0 = gpu_reg(g, PC_B32), gl->per = per;
	PReg pair[2] = {gl->lo, gl->hi};
	if (gl->flagged) {
		/* a copied row's offset is a multiple of 16 (cp.async's
		** alignment): bit 0 is free to say that the row is not copied */
		PReg f = gpu_reg(g, PC_B64);
		gpu_op4(g, PTX_SELP, ".b64", po_r(f), po_r(off), po_i(1), po_r(ok));
		off = f;
	}
	gpu_op2(g, PTX_MOV, ".b64", po_vec(pair, 2), po_r(off));
	if (!gl->flagged)
		gpu_op4(g, PTX_SELP, ".b32", po_r(gl->nb), po_i(16), po_i(0), po_r(ok));
	gpu_op3(g, PTX_SHR, ".u32", po_r(gl->k0), po_r(lane), po_i(gpu_log2(cpr)));
}

/* Chunk it's source lane (lane / cpr + per it) into *src, and the halves
** of that lane's row offset into got. */
static void take_halves(KernelGen *g, const GatherLanes *gl, int it, PReg *src, PReg got[2])
{
	gpu_op3(g, PTX_ADD, ".u32", po_r(*src), po_r(gl->k0), po_i(gl->per * it));
	gpu_op5(g, PTX_SHFL_IDX, ".b32", po_r(got[0]), po_r(gl->lo), po_r(*src), po_i(31),
		po_i(-1));
	gpu_op5(g, PTX_SHFL_IDX, ".b32", po_r(got[1]), po_r(gl->hi), po_r(*src), po_i(31),
		po_i(-1));
}

/* Chunk it's row offset (b64, from the read's fixed part) and byte count
** (b32: 16, or 0 for a row not copied), from the lane that evaluated that
** row: lane / cpr + per it. Every lane of the warp runs it alike. */
void gpu_gather_take(KernelGen *g, const GatherLanes *gl, int it, PReg *off, PReg *bytes)
{
	PReg src = gpu_reg(g, PC_B32), l = gpu_reg(g, PC_B32), h = gpu_reg(g, PC_B32),
	     got[2] = {l, h};
	*bytes = gpu_reg(g, PC_B32), *off = gpu_reg(g, PC_B64);
	take_halves(g, gl, it, &src, got);
	gpu_op5(g, PTX_SHFL_IDX, ".b32", po_r(*bytes), po_r(gl->nb), po_r(src), po_i(31), po_i(-1));
	gpu_op2(g, PTX_MOV, ".b64", po_r(*off), po_vec(got, 2));
}

void gpu_gather_take_flagged(KernelGen *g, const GatherLanes *gl, int it, PReg *off, PReg *skip)
{
	PReg src = gpu_reg(g, PC_B32), l = gpu_reg(g, PC_B32), h = gpu_reg(g, PC_B32),
	     b = gpu_reg(g, PC_B32), got[2] = {l, h};
	*skip = gpu_reg(g, PC_PRED), *off = gpu_reg(g, PC_B64);
	take_halves(g, gl, it, &src, got);
	gpu_op3(g, PTX_AND, ".b32", po_r(b), po_r(got[0]), po_i(1));
	gpu_op3(g, PTX_SETP, ".ne.u32", po_r(*skip), po_r(b), po_i(0));
	gpu_op2(g, PTX_MOV, ".b64", po_r(*off), po_vec(got, 2));
}

/* x mentions the key (class along) only inside x / div: the page. */
static int only_pages(const Plan *p, int node, const Expr *x, IndexKind along, const Expr *div)
{
	if (x->kind == EX_BINOP && x->op == OP_DIV && x->args[0]->kind == EX_INDEX &&
	    expr_equal(x->args[1], div))
		return 1;
	if (x->kind == EX_INDEX)
		return plan_index_kind(p, node, x->var) != along;
	for (int k = 0; k < x->nargs; k++)
		if (!only_pages(p, node, x->args[k], along, div))
			return 0;
	return 1;
}

/* The dimension of read e's slot where its rows lie in pages (gather_stage.c):
** one subscript j % X over a dimension of extent X, every other one that
** follows the key reading it as j / X; else -1. */
int gpu_pages_slot(const Plan *p, int node, const Expr *e, IndexKind along)
{
	int slot = -1;
	for (int k = 0; k < e->nargs - 1; k++) {
		const Expr *x = e->args[k];
		if (x->kind == EX_BINOP && x->op == OP_MOD && x->args[0]->kind == EX_INDEX &&
		    plan_index_kind(p, node, x->args[0]->var) == along &&
		    expr_equal(x->args[1], e->tensor->shape[k])) {
			if (slot >= 0)
				return -1;
			slot = k;
		}
	}
	if (slot < 0 || e->nargs > GPU_TMAP_MAX_RANK)
		return -1;
	const Expr *div = e->tensor->shape[slot];
	for (int k = 0; k < e->nargs; k++)
		if (k != slot && !only_pages(p, node, e->args[k], along, div))
			return -1;
	return slot;
}

/* x is the rows' index plus what does not follow them (cu_k[b] + j): the
** rows at an offset, consecutive from it. */
static int offset_subscript(const Plan *p, int node, const Expr *x, IndexKind along)
{
	if (x->kind != EX_BINOP || x->op != OP_ADD)
		return 0;
	for (int side = 0; side < 2; side++) {
		const Expr *i = x->args[side];
		int key = 0, reads = 0;
		if (i->kind == EX_INDEX && plan_index_kind(p, node, i->var) == along &&
		    row_arith(p, node, x->args[1 - side], along, &key, &reads) && !key)
			return 1;
	}
	return 0;
}

int gpu_offset_slot(const Plan *p, int node, const Expr *e, IndexKind along)
{
	int slot = -1;
	for (int k = 0; k < e->nargs - 1; k++) {
		const Expr *x = e->args[k];
		if (offset_subscript(p, node, x, along)) {
			if (slot >= 0)
				return -1;
			slot = k;
			continue;
		}
		int key = 0, reads = 0;
		if (x->kind != EX_INDEX && row_arith(p, node, x, along, &key, &reads) && key)
			return -1;
		if (x->kind == EX_INDEX && plan_index_kind(p, node, x->var) == along)
			return -1;
	}
	return e->nargs > GPU_TMAP_MAX_RANK ? -1 : slot;
}
