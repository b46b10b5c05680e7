/*
** lowering/gpu/rowpass.c: the row pass, a kernel for cascades with no
** streamed index whose values are per query row (the backward's row term
** Delta = rowsum(dO * O), compiler/grad_split.c). It keeps the forward's
** ABI and grid (gpu.h's head: x = tiles of 128 rows, y = the other grid
** indices), so that the generated launcher is the forward's: each of the
** CTA's 128 threads owns one row and evaluates the nodes in order, a
** reduction as a loop over its one reduced index, through the builder's
** expressions (expr.c: the reduced index is the element's column, as the
** value index is in the epilogue). An output with a value index as its
** last (a backward's dQ converted from its f32 sums) is a loop over that
** index too, one store per element. Where every such loop's extent is
** fixed, 16 lanes share a row instead (RowLanes), so that a row's
** elements are read in contiguous bytes. Its work is the size of the
** inputs it reads, small beside the backward's contractions.
*/
#include <math.h>
#include <string.h>

#include "gpu.h"

/* Node i of plan p is an output over the row and a value index (its
** last): a loop over that index, a store per element. */
static int row_elements(const Plan *p, int i)
{
	const Node *n = p->c->nodes.v[i];
	return n->nfree && plan_index_kind(p, i, n->nfree - 1) == IDX_OTHER;
}

/* Why plan p is not a row pass (NULL: it is). */
const char *gpu_row_shape(Arena *a, const Plan *p, KernelShape *s)
{
	memset(s, 0, sizeof *s);
	s->p = p, s->qcls = s->scls = s->ecls = s->ecls2 = -1, s->why_node = -1;
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].qtile)
			s->qcls = s->scls = k;
	if (p->stream >= 0 || s->qcls < 0)
		return "not a pass over rows alone";
	const Cascade *c = p->c;
	s->node = ARENA_ARRAY(a, ShapeNode, c->nodes.n + 1);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = c->nodes.v[i];
		s->node[i] = (ShapeNode){SN_EPI_ROW, 0};
		s->why_node = i;
		if (n->out->type != VT_FLOAT)
			return arena_printf(a, "%s: a row value that is not a float",
					    node_what(a, n));
		if (n->nred > 2 || (n->nred == 2 && n->red != RED_SUM) || n->red == RED_PROD ||
		    (n->nred == 2 && row_elements(p, i)))
			return arena_printf(a,
					    "%s: a value before the stream reduced by prod, "
					    "over more than two indices, or by max or min over two",
					    node_what(a, n));
		for (int v = 0; v < n->nfree; v++)
			if (plan_index_kind(p, i, v) != IDX_GRID &&
			    plan_index_kind(p, i, v) != IDX_QUERY &&
			    !(v == n->nfree - 1 && n->out->kind == TK_OUT))
				return arena_printf(a,
						    "%s: a row value with an index that is not "
						    "the row's or a grid index",
						    node_what(a, n));
		DType dt = n->out->dtype;
		if (n->out->kind == TK_OUT && dt != DT_F32 &&
		    !(row_elements(p, i) && (dt == DT_BF16 || dt == DT_F16)))
			return arena_printf(a,
					    "%s: the row pass writes f32 (or bf16 and f16 "
					    "elements)",
					    node_what(a, n));
	}
	return NULL;
}

/* A loop of the thread over index variable v of node i (its value in
** g->col, 0 to the extent): the index's values are the loop's own, so no
** value is kept across it. An extent fixed at compile time, up to
** ROW_UNROLL, is unrolled (the body emitted once per value, g->col a
** constant): the loop's loads then wait for one another's latency no more
** (a backward's Delta over D = 128 took 0.8 ms as a loop at B H N = 512k
** rows, a fifth of a millisecond's bytes). Where lanes share a row
** (RowLanes), lane `sub` takes the values sub, sub + lanes, ... */
enum { ROW_UNROLL = 256 };
typedef struct RowLoop {
	PReg e, p, ext;
	int top, end;
	long fixed; /* the extent where unrolled, else 0 */
} RowLoop;

/* Lanes that share a row, ROW_LANES where every loop of the pass has a
** fixed extent that is a multiple of it (each row's elements then come in
** 32 contiguous bytes of 16-bit elements, where a row a thread read 2
** bytes of each of 32 rows and left the sectors' rest to L1), else 1; the
** lane's place among them (sub, b64); the row's predicates: in the
** launch's rows (valid), and that and sub == 0 (lead, which stores the
** row's values). */
enum { ROW_LANES = 16 };
typedef struct RowLanes {
	int lanes;
	PReg sub, valid, lead;
	PReg sbase; /* lanes of several warps: their sums' shared memory */
} RowLanes;

int gpu_row_wide(const Plan *p)
{
	for (int i = 0; i < p->c->nodes.n; i++)
		if (((const Node *)p->c->nodes.v[i])->nred != 2)
			return 0;
	return p->c->nodes.n > 0;
}

/* Node i's loop variable (an output's value index, or its reduced index),
** or -1. An output's sum inside its elements' loop is the lane's alone. */
static int loop_var(const Plan *p, int i)
{
	const Node *n = p->c->nodes.v[i];
	return row_elements(p, i) ? n->nfree - 1 : n->nred ? n->nfree : -1;
}

static int row_lanes(const Plan *p)
{
	for (int i = 0; i < p->c->nodes.n; i++) {
		if (((const Node *)p->c->nodes.v[i])->nred == 2)
			continue; /* its inner loop is the lanes' (row_value) */
		int v = loop_var(p, i);
		long e = v < 0
			     ? ROW_LANES
			     : expr_fixed_extent(((const Node *)p->c->nodes.v[i])->vars[v].extent);
		if (e <= 0 || e % ROW_LANES || e / ROW_LANES > ROW_UNROLL)
			return 1;
	}
	return ROW_LANES;
}

/* Opens the loop; returns how many times the caller emits its body, each
** after loop_at. */
static int loop_open(KernelGen *g, const RowLanes *rl, RowLoop *l, int i, int v)
{
	const Expr *x = gpu_node(g, i)->vars[v].extent;
	g->s->ecls = g->p->cls[i][v];
	l->fixed = expr_fixed_extent(x);
	if (l->fixed > 0 && l->fixed / rl->lanes <= ROW_UNROLL)
		return (int)(l->fixed / rl->lanes);
	l->fixed = 0;
	l->e = gpu_reg(g, PC_B64), l->p = gpu_reg(g, PC_PRED);
	l->ext = gpu_expr(g, x);
	gpu_op2(g, PTX_MOV, ".b64", po_r(l->e), po_i(0));
	l->top = ptx_new_label(g->f), l->end = ptx_new_label(g->f);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(l->p), po_r(l->e), po_r(l->ext));
	gpu_op1(g, PTX_BRA, ".uni", po_label(l->end));
	ptx_guard(g->f, l->p, 0);
	gpu_expr_forget(g, 0);
	ptx_label(g->f, l->top);
	g->col = l->e;
	return 1;
}

/* Before the body's k-th copy: an unrolled loop's index value. */
static void loop_at(KernelGen *g, const RowLanes *rl, RowLoop *l, int k)
{
	if (!l->fixed)
		return;
	gpu_expr_forget(g, 0);
	g->col = gpu_reg(g, PC_B64);
	if (rl->lanes > 1)
		gpu_op3(g, PTX_ADD, ".s64", po_r(g->col), po_r(rl->sub), po_i(k * rl->lanes));
	else
		gpu_op2(g, PTX_MOV, ".b64", po_r(g->col), po_i(k));
}
static void loop_close(KernelGen *g, RowLoop *l)
{
	if (!l->fixed) {
		gpu_op3(g, PTX_ADD, ".s64", po_r(l->e), po_r(l->e), po_i(1));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(l->p), po_r(l->e), po_r(l->ext));
		gpu_op1(g, PTX_BRA, "", po_label(l->top));
		ptx_guard(g->f, l->p, 0);
		ptx_label(g->f, l->end);
	}
	gpu_expr_forget(g, 0);
	g->s->ecls = -1;
}

/* v where `keep` holds (NULL: always), else `other`. */
static PReg kept(KernelGen *g, PReg v, const Expr *keep, float other)
{
	if (!keep)
		return v;
	PReg z = gpu_reg(g, PC_F32);
	gpu_op4(g, PTX_SELP, ".f32", po_r(z), po_r(v), po_f(other), po_r(gpu_expr(g, keep)));
	return z;
}

/* Node i's sum at the element g->col: a loop of the lane over its reduced
** index v (g->inner, its class g->inner_cls, which the expressions read),
** in order, absent points (its filter) adding 0. GQA's gradient of a
** shared K/V head sums its query heads' parts so (grad_split.c). */
static PReg element_sum(KernelGen *g, int i, int v)
{
	const Node *n = gpu_node(g, i);
	PReg acc = gpu_fconst(g, 0.0f), p = gpu_reg(g, PC_PRED);
	PReg ext = gpu_expr(g, n->vars[v].extent);
	g->inner = gpu_reg(g, PC_B64), g->inner_cls = g->p->cls[i][v];
	gpu_op2(g, PTX_MOV, ".b64", po_r(g->inner), po_i(0));
	int top = ptx_new_label(g->f), end = ptx_new_label(g->f);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(p), po_r(g->inner), po_r(ext));
	gpu_op1(g, PTX_BRA, ".uni", po_label(end));
	ptx_guard(g->f, p, 0);
	gpu_expr_forget(g, 0);
	ptx_label(g->f, top);
	PReg x = kept(g, gpu_expr(g, n->body), n->filter, 0.0f);
	gpu_op3(g, PTX_ADD, ".f32", po_r(acc), po_r(acc), po_r(x));
	gpu_op3(g, PTX_ADD, ".s64", po_r(g->inner), po_r(g->inner), po_i(1));
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(p), po_r(g->inner), po_r(ext));
	gpu_op1(g, PTX_BRA, "", po_label(top));
	ptx_guard(g->f, p, 0);
	ptx_label(g->f, end);
	gpu_expr_forget(g, 0);
	g->inner.n = 0, g->inner_cls = -1;
	return acc;
}

/* Node i's sum over its second reduced index v at the values of the
** first (g->col): the row's lanes take every lanes-th value from their
** own, `split` loads at a time into as many sums (the index clamped to its
** last value and the value dropped past it), so that the loads do not
** wait for one another: ROW_SPLIT where the extent is not fixed, else no
** more than a lane's values. Why: a trainable slope's parts per key (B N
** of them a head, 16 heads: 256 threads on the whole GPU) summed a value
** at a time took a memory latency per 16 keys. The caller combines the
** lanes. */
enum { ROW_SPLIT = 16 };
static PReg lanes_sum(KernelGen *g, const RowLanes *rl, int i, int v)
{
	const Node *n = gpu_node(g, i);
	long fixed = expr_fixed_extent(n->vars[v].extent);
	int split = fixed > 0 && (fixed + rl->lanes - 1) / rl->lanes < ROW_SPLIT
			? (int)((fixed + rl->lanes - 1) / rl->lanes)
			: ROW_SPLIT;
	PReg acc[ROW_SPLIT], p = gpu_reg(g, PC_PRED), e = gpu_reg(g, PC_B64);
	PReg ext = gpu_expr(g, n->vars[v].extent), last = gpu_reg(g, PC_B64);
	gpu_op3(g, PTX_SUB, ".s64", po_r(last), po_r(ext), po_i(1));
	for (int k = 0; k < split; k++)
		acc[k] = gpu_reg(g, PC_F32), gpu_op2(g, PTX_MOV, ".f32", po_r(acc[k]), po_f(0.0f));
	if (rl->lanes > 1)
		gpu_op2(g, PTX_MOV, ".b64", po_r(e), po_r(rl->sub));
	else
		gpu_op2(g, PTX_MOV, ".b64", po_r(e), po_i(0));
	int top = ptx_new_label(g->f), end = ptx_new_label(g->f);
	gpu_op3(g, PTX_SETP, ".ge.s64", po_r(p), po_r(e), po_r(ext));
	gpu_op1(g, PTX_BRA, "", po_label(end));
	ptx_guard(g->f, p, 0);
	gpu_expr_forget(g, 0);
	ptx_label(g->f, top);
	g->inner_cls = g->p->cls[i][v];
	for (int k = 0; k < split; k++) {
		PReg at = gpu_reg(g, PC_B64), in = gpu_reg(g, PC_PRED), x = gpu_reg(g, PC_F32);
		gpu_op3(g, PTX_ADD, ".s64", po_r(at), po_r(e), po_i(k * rl->lanes));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(in), po_r(at), po_r(ext));
		g->inner = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MIN, ".s64", po_r(g->inner), po_r(at), po_r(last));
		gpu_expr_forget(g, 0);
		PReg y = kept(g, gpu_expr(g, n->body), n->filter, 0.0f);
		gpu_op4(g, PTX_SELP, ".f32", po_r(x), po_r(y), po_f(0.0f), po_r(in));
		gpu_op3(g, PTX_ADD, ".f32", po_r(acc[k]), po_r(acc[k]), po_r(x));
	}
	gpu_op3(g, PTX_ADD, ".s64", po_r(e), po_r(e), po_i(split * rl->lanes));
	gpu_op3(g, PTX_SETP, ".lt.s64", po_r(p), po_r(e), po_r(ext));
	gpu_op1(g, PTX_BRA, "", po_label(top));
	ptx_guard(g->f, p, 0);
	ptx_label(g->f, end);
	gpu_expr_forget(g, 0);
	g->inner.n = 0, g->inner_cls = -1;
	for (int k = 1; k < split; k++)
		gpu_op3(g, PTX_ADD, ".f32", po_r(acc[0]), po_r(acc[0]), po_r(acc[k]));
	return acc[0];
}

/* The warps' sums of a row whose lanes are the CTA's: each warp's lane 0
** writes its sum, and every thread adds them in the warps' order (the same
** bits whatever the timing); the first barrier keeps a previous node's
** sums until all have read them. */
static PReg warps_combine(KernelGen *g, const RowLanes *rl, PtxOpcode op, PReg acc)
{
	int nw = rl->lanes / 32;
	PReg w = gpu_reg(g, PC_B32), lane0 = gpu_reg(g, PC_PRED), t32 = gpu_u32(g, g->tid);
	PReg at = gpu_reg(g, PC_B32), l = gpu_reg(g, PC_B32);
	gpu_op3(g, PTX_AND, ".b32", po_r(l), po_r(t32), po_i(31));
	gpu_op3(g, PTX_SETP, ".eq.u32", po_r(lane0), po_r(l), po_i(0));
	gpu_op3(g, PTX_SHR, ".u32", po_r(w), po_r(t32), po_i(5));
	gpu_op4(g, PTX_MAD, ".lo.u32", po_r(at), po_r(w), po_i(4), po_r(rl->sbase));
	gpu_op2(g, PTX_BAR, "", po_i(1), po_i(rl->lanes));
	gpu_op2(g, PTX_ST, ".shared.f32", po_mem(at, 0), po_r(acc));
	ptx_guard(g->f, lane0, 0);
	gpu_op2(g, PTX_BAR, "", po_i(1), po_i(rl->lanes));
	PReg sum = gpu_reg(g, PC_F32);
	gpu_op2(g, PTX_LD, ".shared.f32", po_r(sum), po_mem(rl->sbase, 0));
	for (int k = 1; k < nw; k++) {
		PReg x = gpu_reg(g, PC_F32);
		gpu_op2(g, PTX_LD, ".shared.f32", po_r(x), po_mem(rl->sbase, 4 * k));
		gpu_op3(g, op, ".f32", po_r(sum), po_r(sum), po_r(x));
	}
	return sum;
}

/* Node i's value at the thread's row: its body, or a loop over its reduced
** index (the lanes' parts then combined by butterfly shuffles); absent
** points (its filter) give 0 or the reduction's identity. */
static PReg row_value(KernelGen *g, const RowLanes *rl, int i)
{
	const Node *n = gpu_node(g, i);
	g->node = i;
	if (!n->nred)
		return kept(g, gpu_expr(g, n->body), n->filter, 0.0f);
	float id = n->red == RED_MAX ? -INFINITY : n->red == RED_MIN ? INFINITY : 0.0f;
	PtxOpcode op = n->red == RED_SUM ? PTX_ADD : n->red == RED_MAX ? PTX_MAX : PTX_MIN;
	PReg acc = gpu_reg(g, PC_F32);
	gpu_op2(g, PTX_MOV, ".f32", po_r(acc), po_f(id));
	RowLoop l;
	/* a sum over two indices: the second the lanes' loop inside the
	** first's, which each lane runs whole (a trainable slope's parts per
	** key summed over b and j) */
	const RowLanes one = {1, {0}, {0}, {0}, {0}}, *ol = n->nred == 2 ? &one : rl;
	int reps = loop_open(g, ol, &l, i, n->nfree);
	for (int k = 0; k < reps; k++) {
		loop_at(g, ol, &l, k);
		PReg x = n->nred == 2 ? lanes_sum(g, rl, i, n->nfree + 1)
				      : kept(g, gpu_expr(g, n->body), n->filter, id);
		gpu_op3(g, op, ".f32", po_r(acc), po_r(acc), po_r(x));
	}
	loop_close(g, &l);
	for (int m = (rl->lanes < 32 ? rl->lanes : 32) / 2; m > 0; m /= 2) {
		PReg o = gpu_reg(g, PC_F32);
		gpu_op5(g, PTX_SHFL, ".b32", po_r(o), po_r(acc), po_i(m), po_i(31), po_i(-1));
		gpu_op3(g, op, ".f32", po_r(acc), po_r(acc), po_r(o));
	}
	if (rl->lanes > 32)
		acc = warps_combine(g, rl, op, acc);
	return acc;
}

/* Output node i's elements along its value index (the last): each
** evaluated and stored where the row is the launch's, converted to the
** output's dtype, absent points 0. */
static void row_elements_store(KernelGen *g, const RowLanes *rl, int i)
{
	const Node *n = gpu_node(g, i);
	Arena *a = g->a;
	g->node = i;
	Expr **args = ARENA_ARRAY(a, Expr *, n->nfree + 1);
	for (int k = 0; k < n->nfree; k++)
		args[k] = expr_index(a, k);
	RowLoop l;
	int reps = loop_open(g, rl, &l, i, n->nfree - 1);
	for (int k = 0; k < reps; k++) {
		loop_at(g, rl, &l, k);
		PReg v = n->nred ? element_sum(g, i, n->nfree)
				 : kept(g, gpu_expr(g, n->body),
					n->filter ? n->filter : n->out->domain, 0.0f);
		if (n->nred && n->out->domain)
			v = kept(g, v, n->out->domain, 0.0f);
		PReg ok = gpu_packed_guard(g, rl->valid, n->out);
		PReg ad = gpu_addr(g, n->out, args);
		if (n->out->dtype == DT_F32) {
			gpu_op2(g, PTX_ST, ".global.f32", po_mem(ad, 0), po_r(v));
		} else {
			PReg h = gpu_reg(g, PC_B16);
			gpu_op2(g, PTX_CVT,
				n->out->dtype == DT_BF16 ? ".rn.bf16.f32" : ".rn.f16.f32", po_r(h),
				po_r(v));
			gpu_op2(g, PTX_ST, ".global.b16", po_mem(ad, 0), po_r(h));
		}
		if (ok.n)
			ptx_guard(g->f, ok, 0);
	}
	loop_close(g, &l);
}

/* Every node in order at the thread's row (g->row): row outputs stored by
** the row's lead lane, where there is one (RowLanes.lead), else by the
** thread. */
static void row_nodes(KernelGen *g, const RowLanes *rl)
{
	Arena *a = g->a;
	for (int i = 0; i < g->c->nodes.n; i++) {
		const Node *x = gpu_node(g, i);
		if (row_elements(g->p, i)) {
			row_elements_store(g, rl, i);
			continue;
		}
		PReg v = row_value(g, rl, i);
		g->rowv[i][0] = v;
		if (x->out->kind != TK_OUT)
			continue;
		g->node = i;
		Expr **args = ARENA_ARRAY(a, Expr *, x->nfree + 1);
		for (int k = 0; k < x->nfree; k++)
			args[k] = expr_index(a, k);
		if (x->out->domain) {
			PReg z = gpu_reg(g, PC_F32);
			gpu_op4(g, PTX_SELP, ".f32", po_r(z), po_r(v), po_f(0.0f),
				po_r(gpu_expr(g, x->out->domain)));
			v = z;
		}
		PReg ok = gpu_packed_guard(g, rl->lead, x->out);
		PReg ad = gpu_addr(g, x->out, args);
		gpu_op2(g, PTX_ST, ".global.f32", po_mem(ad, 0), po_r(v));
		if (ok.n)
			ptx_guard(g->f, ok, 0);
	}
}

/* The row pass: the forward's parameters and grid decode (so that its
** launcher is the forward's), a row a thread or RowLanes' lanes a row,
** every node in order. It takes no target hook: on a warp-specialised
** target its CTA is the builder's GPU_THREADS threads alone
** (gpu_row_target), with no producer. */
PtxFunc *gpu_row_kernel(Arena *a, const GpuTarget *t, const Plan *p, KernelShape *s)
{
	KernelGen G = {0};
	KernelGen *g = &G;
	GpuTarget *tg = ARENA_NEW(a, GpuTarget);
	*tg = gpu_row_target(t);
	g->a = a, g->p = p, g->c = p->c, g->s = s, g->t = tg;
	/* a pass of sums over two indices (parts of a trainable input's
	** gradient: 16 heads' rows of B N values each) takes a CTA a row, all
	** its threads the row's lanes. Why: 16 lanes a row put 16 rows on one
	** CTA, 0.22 ms of latency for a megabyte */
	int wide = gpu_row_wide(p);
	g->row_blocks = 2, g->cta_rows = wide ? 1 : GPU_THREADS;
	PtxFunc *f = ARENA_NEW(a, PtxFunc);
	ptx_func_init(f, a, arena_printf(a, "%s_fwd", p->c->name), tg->threads);
	g->f = f;
	gpu_expr_init(g);
	gpu_ranges_init(g);
	int n = p->c->nodes.n;
	g->tile = ARENA_ARRAY(a, PReg *, n + 1);
	g->rowv = ARENA_ARRAY(a, PReg *, n + 1);
	g->acc = ARENA_ARRAY(a, PReg *, n + 1);
	for (int i = 0; i < n; i++)
		g->rowv[i] = ARENA_ARRAY(a, PReg, GPU_MAXRS);
	gpu_declare_params(g);
	gpu_load_params(g);
	gpu_decode_grid(g);
	g->tid = gpu_tid(g);
	g->stage = 1, g->half = 0, g->elem = -1;
	RowLanes rl = {wide ? GPU_THREADS : row_lanes(p), {0}, {0}, {0}, {0}};
	if (wide) {
		f->smem_bytes = 4 * GPU_WARPS;
		rl.sbase = gpu_reg(g, PC_B32);
		gpu_op2(g, PTX_MOV, ".u32", po_r(rl.sbase), po_sym("smem"));
	}
	int done = ptx_new_label(f);
	if (rl.lanes == 1) {
		g->row = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".s64", po_r(g->row), po_r(g->q0), po_r(g->tid));
		PReg out = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_SETP, ".ge.s64", po_r(out), po_r(g->row), po_r(g->qext));
		gpu_op1(g, PTX_BRA, "", po_label(done));
		ptx_guard(f, out, 0);
		row_nodes(g, &rl);
	} else {
		/* lanes share a row: GPU_THREADS / lanes rows at a time, the
		** CTA's rows in cta_rows / that turns; a row past the launch's is
		** computed at its last (shuffles need every lane) and not stored */
		int per = GPU_THREADS / rl.lanes;
		PReg slot = gpu_reg(g, PC_B64), turn = gpu_reg(g, PC_B64),
		     last = gpu_reg(g, PC_B64), row = gpu_reg(g, PC_B64),
		     more = gpu_reg(g, PC_PRED), sub0 = gpu_reg(g, PC_PRED);
		rl.sub = gpu_reg(g, PC_B64), rl.valid = gpu_reg(g, PC_PRED),
		rl.lead = gpu_reg(g, PC_PRED);
		gpu_op3(g, PTX_AND, ".b64", po_r(rl.sub), po_r(g->tid), po_i(rl.lanes - 1));
		gpu_op3(g, PTX_SHR, ".u64", po_r(slot), po_r(g->tid), po_i(gpu_log2(rl.lanes)));
		gpu_op3(g, PTX_ADD, ".s64", po_r(slot), po_r(slot), po_r(g->q0));
		gpu_op3(g, PTX_SUB, ".s64", po_r(last), po_r(g->qext), po_i(1));
		gpu_op3(g, PTX_SETP, ".eq.s64", po_r(sub0), po_r(rl.sub), po_i(0));
		gpu_op2(g, PTX_MOV, ".b64", po_r(turn), po_i(0));
		int top = ptx_new_label(f);
		ptx_label(f, top);
		gpu_expr_forget(g, 0);
		/* a turn whose first row is past the launch's has no row to store
		** (the CTA's alike: the branch is uniform). Why: 16 rows (a slope's
		** gradient per head) took 16 turns of the same work */
		PReg first = gpu_reg(g, PC_B64), gone = gpu_reg(g, PC_PRED);
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(first), po_r(turn), po_i(per), po_r(g->q0));
		gpu_op3(g, PTX_SETP, ".ge.s64", po_r(gone), po_r(first), po_r(g->qext));
		gpu_op1(g, PTX_BRA, ".uni", po_label(done));
		ptx_guard(f, gone, 0);
		gpu_op4(g, PTX_MAD, ".lo.s64", po_r(row), po_r(turn), po_i(per), po_r(slot));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(rl.valid), po_r(row), po_r(g->qext));
		gpu_op3(g, PTX_AND, ".pred", po_r(rl.lead), po_r(rl.valid), po_r(sub0));
		g->row = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_MIN, ".s64", po_r(g->row), po_r(row), po_r(last));
		row_nodes(g, &rl);
		gpu_op3(g, PTX_ADD, ".s64", po_r(turn), po_r(turn), po_i(1));
		gpu_op3(g, PTX_SETP, ".lt.s64", po_r(more), po_r(turn), po_i(g->cta_rows / per));
		gpu_op1(g, PTX_BRA, ".uni", po_label(top));
		ptx_guard(f, more, 0);
	}
	ptx_label(f, done);
	gpu_op0(g, PTX_RET, "");
	return f;
}
