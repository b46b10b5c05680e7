/*
** lowering/gpu/shape.c: does the plan have the shape the GPU kernels
** implement? One pass; per KV tile: contractions of two inputs over a
** compile-time head dimension (QK^T), element-wise values, running maxes
** and row sums, contractions with V over the tile (PV); an epilogue per
** row or per (row, e). Anything else gets a precise reason.
*/
#include <string.h>

#include "gpu.h"

/* `q / X` with q a query-row variable and X a dim or a positive constant:
** a K/V head shared by X consecutive query rows (GQA decode). All such
** subscripts of a kernel must use the same X, recorded in *pack. */
static int packed_head(const Plan *p, int node, const Expr *x, int qcls, const Expr **pack)
{
	if (!pack || x->kind != EX_BINOP || x->op != OP_DIV || x->args[0]->kind != EX_INDEX ||
	    p->cls[node][x->args[0]->var] != qcls)
		return 0;
	const Expr *d = x->args[1];
	if (!(d->kind == EX_DIM || (d->kind == EX_INT && d->ival > 0)))
		return 0;
	if (*pack && !expr_equal(*pack, d))
		return 0;
	*pack = d;
	return 1;
}

/* An input read whose subscripts are grid expressions except one plain
** `want` index and, last and plain, `last` (K and V reads may also take a
** packed head q / X, see packed_head). With gather non-NULL the read may
** instead place its rows through index arithmetic of its row index (the
** key or the query row) or a gather (a paged cache's Kc[block[b, j / P],
** j % P, ..], gather.c): *gather set. */
static int operand(const Plan *p, int node, const Expr *e, int want_cls, int last_var, int qcls,
		   int scls, const Expr **pack, int *gather)
{
	if (e->kind != EX_ACCESS || e->tensor->def || e->tensor->type != VT_FLOAT || e->nargs < 2)
		return 0;
	if (e->tensor->dtype != DT_BF16 && e->tensor->dtype != DT_F16)
		return 0;
	const Expr *l = e->args[e->nargs - 1];
	if (l->kind != EX_INDEX || l->var != last_var)
		return 0;
	int seen = 0, follows = 0;
	for (int k = 0; k < e->nargs - 1; k++) {
		const Expr *x = e->args[k];
		if (x->kind == EX_INDEX && p->cls[node][x->var] == want_cls) {
			seen++;
			continue;
		}
		if (packed_head(p, node, x, qcls, pack))
			continue;
		if (gather &&
		    gpu_gather_subscript(p, node, x, want_cls == scls ? IDX_KEY : IDX_QUERY)) {
			follows = 1;
			continue;
		}
		unsigned long long vs = expr_vars(x);
		for (int v = 0; v < 64; v++)
			if ((vs >> v & 1) && plan_index_kind(p, node, v) != IDX_GRID)
				return 0;
	}
	if (gather)
		*gather = follows;
	return follows ? seen <= 1 : seen == 1;
}

static const Expr *strip(const Expr *e)
{
	while (e->kind == EX_CAST)
		e = e->args[0];
	return e;
}

/* Why a head dimension is refused, for the GPU's reason. */
static const char *head_dim_reason(Arena *a, const Node *n, const char *what, const Expr *ext,
				   long most)
{
	long size = expr_fixed_extent(ext);
	if (size <= 0)
		return arena_printf(a,
				    "%s: the %s dimension must be a compile-time multiple of 32 up "
				    "to %ld, not a runtime size",
				    node_what(a, n), what, most);
	return arena_printf(a,
			    "%s: the %s dimension has %ld values; the GPU kernels take a "
			    "compile-time multiple of 32 up to %ld",
			    node_what(a, n), what, size, most);
}

/* Free classes of node i: returns a bit set of kinds q, s, x. */
static int kinds_of(const Plan *p, const Node *n, int i, int qcls, int scls, int *xvar)
{
	int m = 0;
	for (int v = 0; v < n->nfree; v++) {
		IndexKind k = plan_index_kind(p, i, v);
		if (k == IDX_QUERY)
			m |= 1;
		else if (k == IDX_KEY)
			m |= 2;
		else if (k == IDX_OTHER)
			m |= 4, *xvar = v;
	}
	return m;
}

/* l * r, either of which may be NULL (1). */
static const Expr *times(Arena *a, const Expr *l, const Expr *r)
{
	return !l ? r : !r ? l : expr_binop(a, OP_MUL, (Expr *)l, (Expr *)r);
}

/* Splits a float product X into the factors that read the key variable sv
** (*xj) and those that do not (*xr), either NULL where there are none. P is
** rounded to bf16 before its contraction with V; a factor constant along
** the keys moves to the f32 accumulators instead, where it cannot round
** away a difference: differential attention's lam[h] * softmax2 rounded
** lam = 0.9995 to 1 and gave O = 0 for (1 - lam) V. */
static void split_row_factors(Arena *a, const Expr *x, int sv, const Expr **xj, const Expr **xr)
{
	if (x->kind == EX_BINOP && x->op == OP_MUL && x->type == VT_FLOAT) {
		const Expr *aj, *ar, *bj, *br;
		split_row_factors(a, x->args[0], sv, &aj, &ar);
		split_row_factors(a, x->args[1], sv, &bj, &br);
		*xj = times(a, aj, bj), *xr = times(a, ar, br);
		return;
	}
	int reads_key = sv >= 64 || (expr_vars(x) >> sv & 1);
	*xj = reads_key ? x : NULL, *xr = reads_key ? NULL : x;
}

/* Why node n's gather is not one the kernels take, naming the read and
** its line: they place only Q, K and V rows through one. */
static const char *gather_reason(Arena *a, const Node *n, const Expr *r)
{
	return arena_printf(a,
			    "%s: '%s' is read through a gather at line %d that the GPU kernels "
			    "do not take: they gather only the rows of Q, K and V, through i32 "
			    "inputs read at their row's index and grid indices (K[block[b, j / "
			    "P], j %% P, ..]); --target=cpu runs it",
			    node_what(a, n), r->tensor->name, r->loc.line);
}

static const char *gemm2(Arena *a, const Plan *p, int i, KernelShape *s)
{
	const Node *n = p->c->nodes.v[i];
	int sv = p->np[i].svar;
	/* body = X * V (V the only factor that reads e), or X * V / Z (the
	** backward's dV = sum[i](P dO / Z) where no logsumexp was saved) */
	const Expr *b = n->body, *z = NULL;
	if (b->kind == EX_BINOP && b->op == OP_DIV && b->type == VT_FLOAT)
		z = b->args[1], b = b->args[0];
	if (b->kind != EX_BINOP || b->op != OP_MUL)
		return arena_printf(a, "%s: a sum over the stream with a value index must be X * V",
				    node_what(a, n));
	int evar = -1;
	for (int v = 0; v < n->nfree; v++)
		if (plan_index_kind(p, i, v) == IDX_OTHER)
			evar = v;
	for (int side = 0; side < 2; side++) {
		const Expr *v = strip(b->args[side]), *x = b->args[!side];
		if (z)
			x = expr_binop(a, OP_DIV, (Expr *)x, (Expr *)z);
		int vg = 0;
		if (!operand(p, i, v, p->cls[i][sv], evar, s->qcls, s->scls, &s->pack, &vg))
			continue;
		if (expr_vars(x) & (1ull << evar))
			continue;
		long dv = expr_fixed_extent(n->vars[evar].extent);
		int slices = plan_value_slices(dv);
		if (!slices)
			return head_dim_reason(a, n, "value", n->vars[evar].extent,
					       (long)PLAN_MAX_DV * PLAN_MAX_VSLICES);
		if (s->npv == GPU_MAXG)
			return "more than two contractions with V";
		if (s->DV && s->DV * s->vslices != dv)
			return "contractions with V of different widths";
		dv /= slices;
		s->vslices = slices;
		int ec = p->cls[i][evar];
		if (s->ecls >= 0 && s->ecls != ec && s->ecls2 >= 0 && s->ecls2 != ec)
			return "contractions with V over more than two value indices";
		if (s->ecls < 0)
			s->ecls = ec;
		else if (s->ecls != ec)
			s->ecls2 = ec;
		s->DV = dv;
		PVContraction *pv = &s->pv[s->npv];
		pv->x = x, pv->xrow = NULL, pv->v = v, pv->evar = evar, pv->DV = dv, pv->vslot = -1;
		if (x->type == VT_FLOAT) {
			split_row_factors(a, x, sv, &pv->x, &pv->xrow);
			if (!pv->x)
				pv->x = expr_float(a, 1.0);
		}
		for (int t = 0; t < s->nvreads; t++)
			if (s->vreads[t]->tensor == v->tensor)
				pv->vslot = t;
		if (pv->vslot < 0) {
			if (s->nvreads == GPU_MAXG)
				return "more than two V tensors";
			pv->vslot = s->nvreads;
			s->vgather[s->nvreads] = vg, s->gathers |= vg;
			s->vreads[s->nvreads++] = v;
		}
		s->node[i] = (ShapeNode){SN_GEMM2, s->npv++};
		return NULL;
	}
	const Expr *gr = expr_gathered_read(b);
	if (gr)
		return gather_reason(a, n, gr);
	return arena_printf(a, "%s: no factor of its body reads V at the key and value indices",
			    node_what(a, n));
}

/* The node of contraction k of kind kind (its QK or PV index) among the
** first n, or -1: where a target finds a contraction's operands. */
int gpu_gemm_node(const KernelShape *s, int n, ShapeNodeKind kind, int k)
{
	for (int i = 0; i < n; i++)
		if (s->node[i].kind == kind && s->node[i].gemm == k)
			return i;
	return -1;
}

/* Read r of node i takes the rows that contraction q's first operand holds
** in shared memory (gpu_same_rows with the contraction's node, one before
** i, whose kinds are set). */
static int same_rows(const Plan *p, const KernelShape *s, int q, int i, const Expr *r)
{
	int k = gpu_gemm_node(s, i, SN_GEMM1, q);
	return k >= 0 ? gpu_same_rows(p, k, s->qk[q].a, i, r) : 0;
}

/* A sum over the CTA's rows with the streamed index and a value index
** free: R[s, e] = sum[i](X[i, s] * A[.., i, .., e]), A the A operand of a
** contraction with K (its rows are in shared memory), R an f32 output
** nothing reads. */
static const char *cross(Arena *a, const Plan *p, int i, KernelShape *s, int evar)
{
	const Node *n = p->c->nodes.v[i];
	const Expr *f[8];
	int nf = expr_factors(n->body, f, 8);
	if (n->red != RED_SUM || n->nred != 1 || p->cls[i][n->nfree] != s->qcls || nf > 8 ||
	    evar != n->nfree - 1 || (n->filter && (expr_vars(n->filter) >> evar & 1)) ||
	    !n->out->added_to || n->out->dtype != DT_F32)
		return arena_printf(a,
				    "%s: a tile value with an extra index (only an f32 output "
				    "added to, summed over the tile's rows, is)",
				    node_what(a, n));
	if (s->ncross == GPU_MAXG)
		return "more than two sums over the tile's rows";
	for (int k = 0; k < nf; k++) {
		const Expr *r = strip(f[k]);
		if (!operand(p, i, r, s->qcls, evar, s->qcls, s->scls, NULL, NULL))
			continue;
		const Expr *x = NULL;
		for (int m = 0; m < nf; m++)
			if (m != k)
				x = times(a, x, f[m]);
		if (x && (expr_vars(x) >> evar & 1))
			continue;
		for (int q = 0; q < s->nqk; q++) {
			if (s->qk[q].a->tensor != r->tensor || s->qk[q].agather ||
			    s->qk[q].D != expr_fixed_extent(n->vars[evar].extent) ||
			    !same_rows(p, s, q, i, r))
				continue;
			s->cross[s->ncross] =
			    (CrossContraction){x ? x : expr_float(a, 1.0), r, evar, s->qk[q].D, q};
			s->node[i] = (ShapeNode){SN_CROSS, s->ncross++};
			return NULL;
		}
	}
	return arena_printf(a,
			    "%s: a sum over the tile's rows must be X times the rows of a "
			    "contraction's first operand (dS K)",
			    node_what(a, n));
}

static const char *gemm1(Arena *a, const Plan *p, int i, KernelShape *s)
{
	const Node *n = p->c->nodes.v[i];
	if (n->red != RED_SUM || n->nred != 1)
		return arena_printf(a, "%s: a reduction inside a tile must be one sum (Q K^T)",
				    node_what(a, n));
	int d = n->nfree;
	const Expr *b = n->body;
	if (b->kind != EX_BINOP || b->op != OP_MUL)
		return arena_printf(a, "%s: the tile contraction must be a product of two inputs",
				    node_what(a, n));
	long D = expr_fixed_extent(n->vars[d].extent);
	if (D <= 0 || D % 32 || D > PLAN_MAX_DQK)
		return head_dim_reason(a, n, "contracted", n->vars[d].extent, PLAN_MAX_DQK);
	for (int side = 0; side < 2; side++) {
		const Expr *qa = strip(b->args[side]), *kb = strip(b->args[!side]);
		int qg = 0, kg = 0;
		if (operand(p, i, qa, s->qcls, d, s->qcls, s->scls, NULL, &qg) &&
		    operand(p, i, kb, s->scls, d, s->qcls, s->scls, &s->pack, &kg)) {
			if (s->nqk == GPU_MAXG)
				return "more than two contractions with K";
			s->qk[s->nqk] = (QKContraction){qa, kb, d, D, qg, kg};
			s->gathers |= qg | kg;
			s->node[i] = (ShapeNode){SN_GEMM1, s->nqk++};
			return NULL;
		}
	}
	const Expr *gr = expr_gathered_read(b);
	if (gr)
		return gather_reason(a, n, gr);
	return arena_printf(
	    a,
	    "%s: the operands must be bf16/f16 inputs read as Q[.., i, .., d] and K[.., j, .., d] "
	    "with d last and the other subscripts from grid indices (batch, heads) or, for K, a "
	    "head i / G shared by G consecutive query rows (one G for the whole kernel)",
	    node_what(a, n));
}

/* The plan node of V read v's first contraction (its GEMM2 of that slot),
** or -1: whose variables the read's subscripts use. */
int gpu_vread_node(const KernelShape *s, int v)
{
	for (int k = 0; k < s->npv; k++)
		if (s->pv[k].vslot == v)
			return gpu_gemm_node(s, s->p->c->nodes.n, SN_GEMM2, k);
	return -1;
}

/* The K read that V read v repeats, or -1 (KernelShape.vk): the same rows
** (gpu_same_rows), V's columns the first of K's, neither through a gather
** (a backward's kernels read Q and dO as the keys of one contraction and
** the values of another; absorbed MLA's values are the first 512 of the
** keys' 576 columns). */
static int shared_k(const KernelShape *s, int v)
{
	int nv = gpu_vread_node(s, v);
	for (int k = 0; k < s->nqk && nv >= 0 && !s->vgather[v]; k++) {
		int nk = gpu_gemm_node(s, s->p->c->nodes.n, SN_GEMM1, k);
		if (nk >= 0 && s->qk[k].D >= s->DV * s->vslices && !s->qk[k].bgather &&
		    gpu_same_rows(s->p, nk, s->qk[k].b, nv, s->vreads[v]))
			return k;
	}
	return -1;
}

/* Why a read in e (node i) of a value kept per point of the tile is not at
** the point it was written, or NULL: the kernels hold such a value in the
** registers of its point, so a read must name the writer's indices in its
** order (a read t[h, b, i, j] of t[b, h, i, j] would take another head's). */
static const char *tile_read_reason(Arena *a, const Plan *p, int i, const Expr *e)
{
	if (!e)
		return NULL;
	const Node *d = e->kind == EX_ACCESS ? e->tensor->def : NULL;
	if (d && d->id < i && p->c->nodes.v[d->id] == d && p->np[d->id].role == ROLE_TILE)
		for (int k = 0; k < e->nargs && k < d->nfree; k++)
			if (e->args[k]->kind != EX_INDEX ||
			    p->cls[i][e->args[k]->var] != p->cls[d->id][k])
				return arena_printf(
				    a,
				    "%s: it reads '%s' of the tile at other indices "
				    "than the ones it was computed at",
				    node_what(a, p->c->nodes.v[i]), e->tensor->name);
	for (int k = 0; k < e->nargs; k++) {
		const char *why = tile_read_reason(a, p, i, e->args[k]);
		if (why)
			return why;
	}
	return NULL;
}

const char *gpu_shape(Arena *a, const Plan *p, KernelShape *s)
{
	memset(s, 0, sizeof *s);
	s->vslices = s->cta_slices = 1;
	s->p = p, s->qcls = s->scls = s->ecls = s->ecls2 = s->why_node = -1;
	if (p->stream < 0)
		return "no streamed index";
	if (p->passes_after != 1)
		return "the plan needs several passes (the GPU kernels are one-pass)";
	s->scls = p->stream;
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].qtile)
			s->qcls = k;
	if (s->qcls < 0)
		return "no query index to tile";
	const Cascade *c = p->c;
	s->node = ARENA_ARRAY(a, ShapeNode, c->nodes.n + 1);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = c->nodes.v[i];
		const NodePlan *np = &p->np[i];
		int x = -1, k = kinds_of(p, n, i, s->qcls, s->scls, &x);
		const char *why = NULL;
		s->why_node = i;
		switch (np->role) {
		case ROLE_PROLOGUE:
			return arena_printf(
			    a, "%s: values computed before the stream are not supported yet",
			    node_what(a, n));
		case ROLE_TILE:
			if (k & 4)
				why = (k & 1)
					  ? arena_printf(a, "%s: a tile value with an extra index",
							 node_what(a, n))
					  : cross(a, p, i, s, x);
			else if (n->red != RED_NONE)
				why = gemm1(a, p, i, s);
			else
				s->node[i] = (ShapeNode){SN_MAP, 0};
			break;
		case ROLE_RUNNING:
			if (k & 4)
				why = n->red == RED_SUM
					  ? gemm2(a, p, i, s)
					  : arena_printf(a, "%s: a running max with a value index",
							 node_what(a, n));
			else if (n->red == RED_MAX)
				s->node[i] = (ShapeNode){SN_RMAX, 0};
			else if (n->red == RED_SUM)
				s->node[i] = (ShapeNode){SN_RSUM, 0};
			else
				why = arena_printf(a, "%s: running %s is not supported",
						   node_what(a, n), redop_name(n->red));
			if (!why && n->nred != 1)
				why = arena_printf(
				    a, "%s: a running reduction over more than the key index",
				    node_what(a, n));
			break;
		case ROLE_EPILOGUE:
			if (n->red != RED_NONE)
				return arena_printf(
				    a, "%s: a reduction after the stream is not supported",
				    node_what(a, n));
			if (np->is_ref && !(k & 4))
				s->node[i] = (ShapeNode){SN_REF, 0};
			else if (!(k & 4))
				s->node[i] = (ShapeNode){SN_EPI_ROW, 0};
			else if (gpu_value_class(s, p->cls[i][x]))
				s->node[i] = (ShapeNode){SN_EPI_ELEM, 0};
			else
				why = arena_printf(a,
						   "%s: an epilogue index that is not the value "
						   "index of a contraction with V",
						   node_what(a, n));
			if (!why && !(k & 1))
				why =
				    arena_printf(a, "%s: an epilogue value without the query index",
						 node_what(a, n));
			break;
		}
		if (!why)
			why = tile_read_reason(a, p, i, n->body);
		if (!why)
			why = tile_read_reason(a, p, i, n->filter);
		if (why)
			return why;
	}
	s->why_node = -1;
	if (!s->nqk)
		return "no contraction of Q and K";
	for (int v = 0; v < s->nvreads; v++)
		s->vk[v] = shared_k(s, v);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_IN && (t->dtype == DT_F8E4M3 || t->dtype == DT_F8E5M2))
			return arena_printf(a, "%s: f8 inputs need sm_89 or newer", t->name);
		/* the epilogue stores f32, or bf16 and f16 converted from it */
		if (t->kind == TK_OUT && t->dtype != DT_F32 && t->dtype != DT_BF16 &&
		    t->dtype != DT_F16)
			return arena_printf(
			    a, "%s: the kernels write f32, bf16 or f16 outputs, not %s", t->name,
			    dtype_name(t->dtype));
	}
	return NULL;
}

const char *gpu_packed_refusal(const Cascade *c)
{
	const Tensor *t = NULL;
	for (int i = 0; i < c->tensors.n && !t; i++)
		t = ((const Tensor *)c->tensors.v[i])->pack ? c->tensors.v[i] : NULL;
	if (!t)
		return NULL;
	if (c->pass_of)
		return "a packed output is not stored by one pass of several yet";
	return NULL;
}
