/*
** compiler/grad_split.c: a backward cascade (grad.c) cut into the cascades
** the GPU runs as kernels (grad.h's GradSplit). The derived backward is
** one cascade over the query rows i and the keys j of the forward; its
** gradients reduce either over j (dQ: a kernel over query tiles that
** streams the keys, as the forward does) or over i (dK, dV: a kernel over
** key tiles that streams the query rows, the forward with the roles of i
** and j exchanged). What reads neither (FlashAttention's row term Delta =
** rowsum(dO * O)) runs first, in a row pass whose results the two kernels
** read as inputs. Each piece is an ordinary cascade: the forward's
** pipeline plans it and the GPU builder lowers it.
*/
#include <string.h>

#include "grad_cut.h"

/* The class of dimension `dim` of the tensor named `name` in plan p: the
** class of a node variable that reads it as a plain index, or as the row
** at an offset (a packed batch's q[cu_q[b] + i, ..]: i's), or -1. */
static int dim_class(const Plan *p, const char *name, int dim)
{
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Expr *r[256];
		int nr = node_reads(p->c->nodes.v[i], r, 256);
		for (int k = 0; k < nr && k < 256; k++) {
			if (strcmp(r[k]->tensor->name, name) || dim >= r[k]->nargs)
				continue;
			const Expr *s = r[k]->args[dim], *row = NULL;
			if (s->kind == EX_INDEX)
				return p->cls[i][s->var];
			if (expr_offset_row(s, &row))
				return p->cls[i][row->var];
		}
	}
	return -1;
}

/* The class in the backward's plan b of forward class k of plan f: found
** through an input dimension both cascades read in that class. */
static int map_class(const Plan *f, int k, const Plan *b)
{
	for (int i = 0; i < f->c->tensors.n; i++) {
		const Tensor *t = f->c->tensors.v[i];
		if (t->kind != TK_IN)
			continue;
		for (int m = 0; m < t->rank; m++)
			if (dim_class(f, t->name, m) == k) {
				int c = dim_class(b, t->name, m);
				if (c >= 0)
					return c;
			}
	}
	return -1;
}

/* The backward's plan bp classed again after a change to its cascade, and
** the classes of the forward's query rows (qf of plan fp) and keys in it. */
static void reclass(Arena *a, const Plan *fp, int qf, Plan *bp, int *I, int *J)
{
	plan_classes(a, bp);
	*I = map_class(fp, qf, bp), *J = map_class(fp, fp->stream, bp);
}

/* Marks node i and every node it reads (need[]). */
static void need_closure(const Cascade *c, int i, char *need)
{
	if (need[i])
		return;
	need[i] = 1;
	const Node *n = c->nodes.v[i];
	for (int t = 0; t < c->tensors.n; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->def && (expr_reads(n->body, x) || expr_reads(n->filter, x)))
			need_closure(c, x->def->id, need);
	}
}

/* Marks node i and every node it reads (need[]), stopping at the nodes
** another piece computes (stop[]: read as inputs, not marked). */
static void need_closure_until(const Cascade *c, int i, char *need, const char *stop)
{
	if (need[i])
		return;
	need[i] = 1;
	const Node *n = c->nodes.v[i];
	for (int t = 0; t < c->tensors.n; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->def && !stop[x->def->id] &&
		    (expr_reads(n->body, x) || expr_reads(n->filter, x)))
			need_closure_until(c, x->def->id, need, stop);
	}
}

/* What the dQ kernel (outq), the kernels over key tiles (outk) and the
** row pass's parts (rpart) read, each stopping at what the first pass
** finished (done): needq, needk, needr, computed again from nothing. */
static void needs_until(const Cascade *b, const char *outq, const char *outk, const char *rpart,
			const char *done, char *needq, char *needk, char *needr)
{
	int n = b->nodes.n;
	memset(needq, 0, (size_t)n), memset(needk, 0, (size_t)n), memset(needr, 0, (size_t)n);
	for (int i = 0; i < n; i++) {
		if (outq[i])
			need_closure_until(b, i, needq, done);
		if (outk[i])
			need_closure_until(b, i, needk, done);
		if (rpart[i])
			need_closure_until(b, i, needr, done);
	}
}

/* A backward's piece (cascade_piece) as a kernel of 64 query rows a CTA:
** sm_80's registers do not fit its accumulators at 128 (Cascade.rows64).
** A kernel over key tiles ties its gradients' keys to the backward's class
** J (bp; -1: none): they are one index in the backward, but linear attention's
** dV reads A, whose keys come from phi(K), its dK part reads dA, whose
** keys come from V, and no node of the piece reads both. */
static Cascade *bwd_piece(Arena *a, const Cascade *b, const Plan *bp, int J, const char *name,
			  const char *keep, const char *out, const char *row)
{
	Cascade *r = cascade_piece(a, b, name, keep, out, row, J >= 0 ? bp : NULL, J);
	/* only the gradients' keys (an input's, GQA's packed query heads, keep
	** the piece's own classes): each tie joins a dimension of class J to
	** the class's first one, so the outputs' join the first of theirs */
	int *ties = ARENA_ARRAY(a, int, 4 * r->nties + 4), nt = 0;
	const int *first = NULL;
	for (int k = 0; k <= r->nties && r->nties; k++) {
		const int *q = k ? r->ties + 4 * (k - 1) + 2 : r->ties;
		if (((const Tensor *)r->tensors.v[q[0]])->kind != TK_OUT)
			continue;
		if (!first) {
			first = q;
			continue;
		}
		int *t = ties + 4 * nt++;
		t[0] = first[0], t[1] = first[1], t[2] = q[0], t[3] = q[1];
	}
	r->ties = ties, r->nties = nt;
	r->rows64 = 1;
	return r;
}

/* Two or more gradients along the keys, one of them over a compile-time
** value dimension wider than 128: each gets a kernel of its own. At 128,
** dK's and dV's accumulators and the two score tiles spill about 150 bytes
** in one sm_80 kernel, which is still faster than two kernels that each
** compute the scores (bench/RESULTS.md). */
static int wide_keys(const Cascade *b, const char *outk)
{
	int cnt = 0, wide = 0;
	for (int i = 0; i < b->nodes.n; i++) {
		const Node *x = b->nodes.v[i];
		if (!outk[i])
			continue;
		cnt++;
		for (int v = 0; v < x->nfree; v++) {
			wide |= expr_fixed_extent(x->vars[v].extent) > 128;
		}
	}
	return cnt > 1 && wide;
}

/* The width of gradient node i along the keys (class J): the extent of
** its last free index where that is not the key (dK's d), else 0 (a part
** per key of a trainable input's gradient). */
static long key_width(const Plan *bp, int i, int J)
{
	const Node *x = bp->c->nodes.v[i];
	if (!x->nfree || bp->cls[i][x->nfree - 1] == J)
		return 0;
	return expr_fixed_extent(x->vars[x->nfree - 1].extent);
}

/* Whether t is a value computed element by element from inputs alone
** (linear attention's feature map elu(Q) + 1): a pass before the kernels
** writes it (pass_split's values before the stream), in bf16 where a
** contraction reads it, so that the kernels read it as they read an input. */
static int elementwise_of_inputs(const Tensor *t)
{
	const Node *x = t->def;
	if (t->kind != TK_TEMP || !x || x->nred || x->filter)
		return 0;
	const Expr *r[64];
	int nr = node_reads(x, r, 64);
	for (int m = 0; m < nr; m++)
		if (m >= 64 || r[m]->tensor->kind != TK_IN)
			return 0;
	return 1;
}

/* Gradient node i (reduced over the keys J alone, along the query rows)
** as the kernel over key tiles can accumulate it: its body a product of
** one bf16/f16 input R read at plain indices, the key among them and the
** node's value index last, and factors that do not read that index (dQ =
** sum[j](dS K): dS per (i, j) the kernel has, K its tile's rows). */
static int crossable(const Plan *bp, int i, int J)
{
	const Node *x = bp->c->nodes.v[i];
	const Expr *f[16];
	int n = x->red == RED_SUM && x->nred == 1 ? expr_factors(x->body, f, 16) : 0;
	int nr = 0;
	for (int k = 0; k < n && n <= 16; k++) {
		const Expr *r = f[k];
		if (r->kind != EX_ACCESS ||
		    !(elementwise_of_inputs(r->tensor) ||
		      (r->tensor->kind == TK_IN && dtype_size(r->tensor->dtype) == 2 &&
		       dtype_is_float(r->tensor->dtype))))
			continue;
		const Expr *last = r->args[r->nargs - 1];
		int key = 0, plain = 1;
		for (int m = 0; m < r->nargs; m++) {
			const Expr *s = r->args[m];
			plain &= s->kind == EX_INDEX;
			key |= s->kind == EX_INDEX && s->var == x->nfree;
		}
		if (!plain || !key || last->var != x->nfree - 1 || bp->cls[i][last->var] == J ||
		    (x->filter && (expr_vars(x->filter) >> last->var & 1)))
			continue;
		int alone = 1;
		for (int m = 0; m < n; m++)
			if (m != k && (expr_vars(f[m]) >> last->var & 1))
				alone = 0;
		nr += alone;
	}
	return nr == 1;
}

/* The gradients along the query rows (outq) accumulated by kernel k of
** the ones over key tiles instead of a kernel of their own, where each is
** crossable and k computes what they read: the fused piece adds them as
** f32 outputs NAME_acc (s->acc, zeroed before it, added to by every key
** tile), and a pass after it (s->post) converts them to the gradients'
** dtypes. keeps/outs: each dkv piece's nodes and outputs. */
static void fuse_dq(Arena *a, const Cascade *b, const Plan *bp, int J, const char *needq,
		    const char *outq, const char *keepr, const char *outr, char **keeps,
		    char **outs, GradSplit *s)
{
	int n = b->nodes.n, at = -1;
	/* a part of a gradient that a row pass sums (linear attention's dfq)
	** has no sums of its own to convert: not fused */
	for (int i = 0; i < n; i++)
		if (outq[i] &&
		    (!crossable(bp, i, J) || ((const Node *)b->nodes.v[i])->out->kind != TK_OUT))
			return;
	for (int k = 0; k < s->ndkv && at < 0; k++) {
		int ok = 1;
		for (int i = 0; i < n; i++)
			ok &= !needq[i] || outq[i] || keeps[k][i];
		if (ok)
			at = k;
	}
	if (at < 0)
		return;
	char *keep = ARENA_ARRAY(a, char, n + 1), *out = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++)
		keep[i] = keeps[at][i] || (needq[i] && !keepr[i]), out[i] = outs[at][i] || outq[i];
	Cascade *f =
	    bwd_piece(a, b, bp, J, arena_printf(a, "%sq", s->dkv[at]->name), keep, out, outr);
	f->first_rows_longest = 1;
	Cascade *post = ARENA_NEW(a, Cascade);
	post->name = arena_printf(a, "%s_post", b->name), post->loc = b->loc;
	post->dims = b->dims, post->params = b->params, post->rows64 = 1, post->value_last = 1;
	/* two gradients' sums (differential attention's dQ1, dQ2) share no
	** tensor: their indices of one class in the backward are tied */
	int *ties = ARENA_ARRAY(a, int, 4 * n * 8 + 4), first = -1, firstin = -1;
	for (int i = 0; i < n; i++) {
		if (!outq[i])
			continue;
		if (first >= 0) {
			const Node *x0 = b->nodes.v[first], *x = b->nodes.v[i];
			for (int v = 0; v < x->nfree && v < x0->nfree && v < 8; v++)
				if (bp->cls[i][v] == bp->cls[first][v]) {
					int *q = ties + 4 * post->nties++;
					q[0] = firstin, q[1] = v, q[2] = post->tensors.n, q[3] = v;
				}
		} else
			first = i, firstin = post->tensors.n;
		const Node *x = b->nodes.v[i];
		Tensor *acc = NULL;
		for (int t = 0; t < f->tensors.n; t++) {
			Tensor *y = f->tensors.v[t];
			if (!strcmp(y->name, x->out->name))
				acc = y;
		}
		if (!acc) {
			s->acc.n = 0; /* not fused: no sums in the workspace */
			return;
		}
		/* the fused piece's output, then the post pass's input */
		acc->name = arena_printf(a, "%s_acc", cascade_c_name(a, x->out->name));
		acc->dtype = DT_F32, acc->added_to = 1;
		ptrvec_push(a, &s->acc, acc);
		Tensor *in = ARENA_NEW(a, Tensor), *o = ARENA_NEW(a, Tensor);
		*in = *acc, *o = *x->out;
		in->kind = TK_IN, in->def = NULL, in->domain = NULL, in->added_to = 0;
		in->id = post->tensors.n;
		ptrvec_push(a, &post->tensors, in);
		o->id = post->tensors.n;
		ptrvec_push(a, &post->tensors, o);
		Node *m = ARENA_NEW(a, Node);
		m->id = post->nodes.n, m->out = o, m->nfree = x->nfree, m->vars = x->vars;
		m->red = RED_NONE, m->loc = x->loc, m->origin = x->origin;
		Expr *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
		rd->tensor = in, rd->nargs = x->nfree;
		rd->args = ARENA_ARRAY(a, Expr *, x->nfree + 1);
		for (int v = 0; v < x->nfree; v++)
			rd->args[v] = expr_index(a, v);
		m->body = rd;
		o->def = m;
		ptrvec_push(a, &post->nodes, m);
	}
	post->ties = ties;
	s->fused = f, s->fused_at = at, s->post = post;
}

/* The reduced variable of node x other than the query rows' (class I in
** plan bp) where x reduces over the query rows and one more index, a head
** of the group that shares a K/V head (GQA's dV = sum[i, h_i](..)), and
** keeps the keys (class J) free; else -1. */
static int group_var(const Plan *bp, int i, int I, int J)
{
	const Node *x = bp->c->nodes.v[i];
	if (x->out->kind != TK_OUT || x->red != RED_SUM || x->nred != 2 ||
	    !(plan_node_class(bp, i, J) & 1) || plan_node_class(bp, i, I) != 2)
		return -1;
	for (int v = x->nfree; v < x->nfree + 2; v++)
		if (bp->cls[i][v] != I && bp->cls[i][v] != J)
			return v;
	return -1;
}

/* The free variable h_o of node x that x's body pairs with variable g as
** h_o * E + g (the query head of GQA's dV, derived through V's h / G), E
** in *e; else -1. */
static int group_pair(const Node *x, const Expr *e, int g, const Expr **ext)
{
	if (!e)
		return -1;
	if (e->kind == EX_BINOP && e->op == OP_ADD && e->type == VT_INT)
		for (int side = 0; side < 2; side++) {
			const Expr *m = e->args[side], *r = e->args[!side];
			if (r->kind != EX_INDEX || r->var != g || m->kind != EX_BINOP ||
			    m->op != OP_MUL)
				continue;
			for (int f = 0; f < 2; f++)
				if (m->args[f]->kind == EX_INDEX && m->args[f]->var < x->nfree &&
				    expr_equal(m->args[!f], x->vars[g].extent)) {
					*ext = m->args[!f];
					return m->args[f]->var;
				}
		}
	for (int k = 0; k < e->nargs; k++) {
		int v = group_pair(x, e->args[k], g, ext);
		if (v >= 0)
			return v;
	}
	return -1;
}

/* GQA's gradients of a shared K/V head, dV[b, h_o, j, e] = sum[i, h_i](X),
** as FlashAttention-2 computes them: the kernel over key tiles writes each
** query head's part, NAME_grp[b, h, j, e] = sum[i](X) with h_o = h / G and
** h_i = h % G (f32, in the workspace; h is the query head of the kernel's
** other values, so its grid is the forward's), and a row pass after it
** sums the parts, dV = sum[h_i](NAME_grp[b, h_o * G + h_i, j, e]), in a
** fixed order. Where the body reads the group's head h_i alone (MQA: one
** K/V head for all), the part keeps it as an index of its own. Node i of
** b becomes the row pass's node; the part's node is inserted before it.
** Returns the part's node. Why not atomics: the sums would depend on the
** order the CTAs ran in, and a fixed order is what NAME_bwd_launch
** promises. */
static Node *split_group(Arena *a, const Plan *bp, int J, int i, int g)
{
	Cascade *b = bp->c;
	Node *x = b->nodes.v[i];
	const Expr *G = NULL;
	int nf = x->nfree, r = g == nf ? nf + 1 : nf; /* r: the query rows */
	int ho = group_pair(x, x->body, g, &G);
	/* the part's free variables: x's, with h_o made the query head h (or
	** h_i inserted before the keys, the last index of its grid) */
	int at = 0;
	while (at < nf - 1 && bp->cls[i][at] != J)
		at++;
	int pf = ho >= 0 ? nf : nf + 1;
	Node *m = ARENA_NEW(a, Node);
	*m = *x;
	m->nfree = pf, m->nred = 1;
	m->vars = ARENA_ARRAY(a, IndexVar, pf + 2);
	Expr **sub = ARENA_ARRAY(a, Expr *, nf + 3);
	for (int v = 0, k = 0; v < pf; v++) {
		int from = ho < 0 && v == at ? g : k++;
		m->vars[v] = x->vars[from];
		sub[from] = expr_index(a, v);
		if (from == ho) {
			m->vars[v].name =
			    arena_printf(a, "%s_%s", x->vars[ho].name, x->vars[g].name);
			m->vars[v].extent = expr_binop(a, OP_MUL, x->vars[ho].extent, (Expr *)G);
			sub[ho] = expr_binop(a, OP_DIV, expr_index(a, v), (Expr *)G);
			sub[g] = expr_binop(a, OP_MOD, expr_index(a, v), (Expr *)G);
		}
	}
	m->vars[pf] = x->vars[r];
	sub[r] = expr_index(a, pf);
	m->body = plan_fold_splits(expr_subst(a, x->body, sub, nf + 2));
	m->filter = x->filter ? plan_fold_splits(expr_subst(a, x->filter, sub, nf + 2)) : NULL;
	Tensor *t = grad_part_tensor(a, b, x, m, ".grp");
	/* x: the sum of the parts over h_i, its reduced variable nf */
	Expr *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
	rd->tensor = t, rd->nargs = pf;
	rd->args = ARENA_ARRAY(a, Expr *, pf + 1);
	for (int v = 0, k = 0; v < pf; v++) {
		int from = ho < 0 && v == at ? g : k++;
		rd->args[v] = from == g ? expr_index(a, nf) : expr_index(a, from);
		if (from == ho)
			rd->args[v] = expr_binop(
			    a, OP_ADD, expr_binop(a, OP_MUL, expr_index(a, ho), (Expr *)G),
			    expr_index(a, nf));
	}
	IndexVar *xv = ARENA_ARRAY(a, IndexVar, nf + 2);
	memcpy(xv, x->vars, sizeof *xv * (size_t)nf);
	xv[nf] = x->vars[g];
	x->vars = xv, x->nred = 1, x->body = rd, x->filter = NULL;
	cascade_insert_node(a, b, i, m);
	return m;
}

/* Whether every node that node i of b reads is marked in `a` or in `c`
** (NULL: none); *any (may be NULL): whether it reads a node at all. */
static int reads_within(const Cascade *b, int i, const char *a, const char *c, int *any)
{
	const Node *x = b->nodes.v[i];
	int ok = 1;
	if (any)
		*any = 0;
	for (int t = 0; ok && t < b->tensors.n; t++) {
		const Tensor *y = b->tensors.v[t];
		if (!y->def || !(expr_reads(x->body, y) || expr_reads(x->filter, y)))
			continue;
		ok = a[y->def->id] || (c && c[y->def->id]);
		if (any)
			*any = 1;
	}
	return ok;
}

/* Whether node x reads none of the backward's own inputs (dO, the saved
** outputs): what the first pass finishes from its reductions and the
** forward's inputs alone (a sink's max with the sink logit), not the row
** terms, which the row pass computes. */
static int reads_no_incoming(const Cascade *fwd, const Node *x)
{
	const Expr *r[256];
	int nr = node_reads(x, r, 256);
	for (int k = 0; k < nr && k < 256; k++) {
		const Tensor *t = cascade_tensor(fwd, r[k]->tensor->name);
		if (r[k]->tensor->kind == TK_IN && (!t || t->kind != TK_IN))
			return 0;
	}
	return nr <= 256;
}

/* The row pass's nodes (row[]): neither index reduced, no key index,
** reading only inputs, row-pass nodes and the first pass's results (from,
** NULL: none), and not the first pass's own (done, NULL: none). */
static void row_nodes(const Plan *bp, int I, int J, const char *done, const char *from, char *row)
{
	for (int i = 0; i < bp->c->nodes.n; i++)
		row[i] = (char)(!(done && done[i]) && !plan_node_class(bp, i, J) &&
				!(plan_node_class(bp, i, I) & 2) &&
				reads_within(bp->c, i, row, from, NULL));
}

/* Whether node i is the gradient of a table or trainable input indexed by
** neither the query rows nor the keys (class I, J) and summed over both,
** with at most two more reduced indices (ALiBi's trainable slope,
** dslope[h] = sum[b, i, j](dX (j - i))): the reduced variable of the query
** rows, else -1. */
static int scalar_var(const Plan *bp, int i, int I, int J)
{
	const Node *x = bp->c->nodes.v[i];
	if (x->out->kind != TK_OUT || x->red != RED_SUM || x->nred < 2 || x->nred > 3 ||
	    plan_node_class(bp, i, I) != 2 || plan_node_class(bp, i, J) != 2)
		return -1;
	int r = -1, nj = 0;
	for (int v = x->nfree; v < x->nfree + x->nred; v++) {
		if (bp->cls[i][v] == I)
			r = r < 0 ? v : -2;
		nj += bp->cls[i][v] == J;
	}
	return r >= 0 && nj == 1 ? r : -1;
}

/* Such a gradient as the kernel over key tiles and a row pass compute it:
** the kernel writes its part per key, NAME_part[.., j] = sum[i](X) with
** the node's other reduced indices made free (f32, in the workspace, the
** key last), and a row pass sums the parts over them in a fixed order,
** dslope[h] = sum[b, j](dslope_part[h, b, j]). Node i of b becomes the row
** pass's node; the part's node is inserted before it and returned. Why not
** atomics: the order the CTAs ran in would change the sum's bits. */
static Node *split_scalar(Arena *a, Cascade *b, int i, int r)
{
	Node *x = b->nodes.v[i];
	int nf = x->nfree, nr = x->nred, pf = nf + nr - 1;
	Node *m = ARENA_NEW(a, Node);
	*m = *x;
	m->nfree = pf, m->nred = 1;
	m->vars = ARENA_ARRAY(a, IndexVar, pf + 2);
	Expr **sub = ARENA_ARRAY(a, Expr *, nf + nr + 1);
	for (int v = 0, k = 0; v < nf + nr; v++) {
		int to = v == r ? pf : k++;
		m->vars[to] = x->vars[v];
		sub[v] = expr_index(a, to);
	}
	m->body = expr_subst(a, x->body, sub, nf + nr);
	m->filter = x->filter ? expr_subst(a, x->filter, sub, nf + nr) : NULL;
	Tensor *t = grad_part_tensor(a, b, x, m, ".part");
	/* x: the sum of the parts over its reduced indices but the rows' */
	Expr *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
	rd->tensor = t, rd->nargs = pf;
	rd->args = ARENA_ARRAY(a, Expr *, pf + 1);
	IndexVar *xv = ARENA_ARRAY(a, IndexVar, pf + 1);
	for (int v = 0; v < pf; v++) {
		rd->args[v] = expr_index(a, v);
		xv[v] = m->vars[v];
	}
	x->vars = xv, x->nred = nr - 1, x->body = rd, x->filter = NULL;
	cascade_insert_node(a, b, i, m);
	return m;
}

/* Whether node x is the gradient of a trainable input of fwd. */
static int trainable_gradient(const Cascade *fwd, const Node *x)
{
	const Tensor *in = x->out->kind == TK_OUT ? grad_forward_of(fwd, x->out->name) : NULL;
	return in && in->kind == TK_IN && in->trainable;
}

/* Whether node i is the gradient of a table or trainable input that reads
** no key and is summed over the query rows and at most one more index (a
** sink's logit, dsink[h] = sum[b, i](dZ exp(sink - m))): a row value
** summed, which neither kernel reduces. */
static int row_scalar(const Cascade *fwd, const Plan *bp, int i, int I, int J)
{
	const Node *x = bp->c->nodes.v[i];
	return trainable_gradient(fwd, x) && x->red == RED_SUM && x->nred >= 1 && x->nred <= 2 &&
	       plan_node_class(bp, i, I) == 2 && plan_node_class(bp, i, J) == 0;
}

/* Such a gradient as the row pass and a sum compute it: the row pass
** writes each point's term, NAME_part[h, b, i] (its free indices, then the
** reduced ones; 0 where the filter drops it), and a row pass after the
** kernels sums it in a fixed order, as split_scalar's parts. */
static Node *split_row_scalar(Arena *a, Cascade *b, int i)
{
	Node *x = b->nodes.v[i];
	int nv = x->nfree + x->nred;
	Node *m = ARENA_NEW(a, Node);
	*m = *x;
	m->nfree = nv, m->nred = 0, m->red = RED_NONE, m->filter = NULL;
	if (x->filter) {
		Expr *sel = expr_new(a, EX_SELECT, VT_FLOAT, x->loc);
		sel->nargs = 3;
		sel->args = ARENA_ARRAY(a, Expr *, 3);
		sel->args[0] = x->filter, sel->args[1] = x->body, sel->args[2] = expr_float(a, 0);
		m->body = sel;
	}
	Tensor *t = grad_part_tensor(a, b, x, m, ".part");
	Expr *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
	rd->tensor = t, rd->nargs = nv;
	rd->args = ARENA_ARRAY(a, Expr *, nv + 1);
	for (int v = 0; v < nv; v++)
		rd->args[v] = expr_index(a, v);
	x->body = rd, x->filter = NULL;
	cascade_insert_node(a, b, i, m);
	return m;
}

/* Whether node i is the gradient of an input read as several operands,
** which reduces over nothing and sums what two places compute (cosine's
** dQ = sum[j](dS K) + dqn.sum 2Q: the contraction's part and the norm's):
** the class of its rows (I for a gradient along the query rows, J along
** the keys), else -1. */
static int sum_side(const Plan *bp, int i, int I, int J)
{
	const Node *x = bp->c->nodes.v[i];
	if (x->out->kind != TK_OUT || x->nred || x->filter)
		return -1;
	int hi = plan_node_class(bp, i, I), hj = plan_node_class(bp, i, J);
	return hi == 1 && !hj ? I : hj == 1 && !hi ? J : -1;
}

/* Element-wise temporaries over all of x's indices substituted into e
** (cosine's dQ.1 = dqn.sum * (Q + Q) into dQ = dQ.0 + dQ.1): the row
** pass that sums the parts keeps values of its rows alone as nodes, and
** an element's terms in the output's own expression. */
static Expr *inline_terms(Arena *a, const Node *x, Expr *e, int depth, int *changed)
{
	const Node *y = e->kind == EX_ACCESS ? e->tensor->def : NULL;
	if (y && depth < 16 && y->out->kind == TK_TEMP && !y->nred && !y->filter &&
	    y->nfree == x->nfree) {
		*changed = 1;
		return inline_terms(a, x, expr_subst(a, y->body, e->args, e->nargs), depth + 1,
				    changed);
	}
	for (int k = 0; k < e->nargs; k++)
		e->args[k] = inline_terms(a, x, e->args[k], depth, changed);
	return e;
}

/* Marks, for such a gradient i along rows R (the other class O), the
** reductions a kernel computes along R that it reads (part[]: each over
** O alone, an output of the kernel in the workspace; one with a value
** index a contraction with a bf16/f16 input, crossable) and, where every
** other node it reads is a value of R's rows (no O index, R not reduced),
** i itself (sum[]): a row pass after the kernels computes it from the
** parts. Returns whether it did; else *bad is a part that is a
** contraction with what the tensor cores do not read (linear attention's
** feature map, an f32 incoming gradient), or -1. */
static int mark_sum_parts(Arena *a, const Plan *bp, int i, int R, int O, char *sum, char *part,
			  int *bad)
{
	const Cascade *c = bp->c;
	int n = c->nodes.n, ok = 1, nparts = 0;
	char *seen = ARENA_ARRAY(a, char, n + 1), *mine = ARENA_ARRAY(a, char, n + 1);
	int *todo = ARENA_ARRAY(a, int, n + 1), nt = 0;
	todo[nt++] = i, seen[i] = 1;
	while (nt && ok) {
		int k = todo[--nt];
		const Node *y = c->nodes.v[k];
		int hr = plan_node_class(bp, k, R), ho = plan_node_class(bp, k, O);
		if (k != i && y->nred == 1 && y->red == RED_SUM && (hr & 1) && ho == 2) {
			int wide = y->nfree && bp->cls[k][y->nfree - 1] != R;
			if (wide && !crossable(bp, k, O)) {
				*bad = k;
				return 0;
			}
			mine[k] = 1, nparts++;
			continue;
		}
		ok = !ho && !(hr & 2);
		const Expr *r[256];
		int nr = node_reads(y, r, 256);
		for (int m = 0; m < nr && m < 256; m++) {
			const Node *z = r[m]->tensor->def;
			if (z && !seen[z->id])
				seen[z->id] = 1, todo[nt++] = z->id;
		}
	}
	if (!ok || !nparts)
		return 0;
	sum[i] = 1;
	for (int k = 0; k < n; k++)
		part[k] |= mine[k];
	return 1;
}

/* The pieces' inputs that a first pass's prologue wrote (s->ws) in the
** dtype it wrote them in: bf16 where a contraction reads them
** (pass_split_dtype: linear attention's feature maps), which the later
** kernels then read as they read an input; cascade_piece makes a value
** read from an earlier piece f32. */
static void ws_dtypes(GradSplit *s)
{
	Cascade *pc[4 + 3 * GRAD_MAX_DKV];
	int np = 0;
	pc[np++] = s->pre, pc[np++] = s->dq, pc[np++] = s->fused, pc[np++] = s->post;
	for (int k = 0; k < s->ndkv; k++)
		pc[np++] = s->dkv[k];
	for (int k = 0; k < s->ngrp; k++)
		pc[np++] = s->grp[k];
	for (int k = 0; k < np; k++)
		for (int t = 0; pc[k] && t < pc[k]->tensors.n; t++) {
			Tensor *x = pc[k]->tensors.v[t];
			for (int w = 0; x->kind == TK_IN && w < s->ws.n; w++) {
				const Tensor *y = s->ws.v[w];
				if (!strcmp(x->name, y->name) && y->dtype != DT_F32)
					x->dtype = y->dtype;
			}
		}
}

/* The cut (grad.h): each gradient to the kernel whose stream it reduces,
** the row values they read to the row pass, the rest recomputed per
** kernel; what fits neither is one error at its statement. */
int grad_split(Arena *a, Diag *d, const Cascade *fwd, const Cascade *bwd, GradSplit *s)
{
	memset(s, 0, sizeof *s);
	/* incoming gradients of 16-bit outputs come in the output's dtype, the
	** tensor cores' operand (the CPU's backward takes them in f32) */
	Cascade *b = cascade_clone(a, bwd);
	for (int t = 0; t < b->tensors.n; t++) {
		Tensor *x = b->tensors.v[t];
		const Tensor *o = grad_output_of(fwd, x);
		if (o && dtype_size(o->dtype) == 2 && dtype_is_float(o->dtype))
			x->dtype = o->dtype;
	}
	s->bwd = b;
	grad_lse_for_gpu(a, b);
	grad_inline_incoming(a, fwd, b);
	grad_split_linear(a, b);
	grad_factor_sums(a, b);
	Plan *fp = plan_build(a, fwd, "sm_80");
	Plan *bp = ARENA_NEW(a, Plan);
	bp->orig = bp->c = b, bp->target = "sm_80";
	plan_classes(a, bp);
	int qf = -1;
	for (int k = 0; k < fp->nclasses; k++)
		if (fp->classes[k].qtile)
			qf = k;
	int I = qf >= 0 ? map_class(fp, qf, bp) : -1;
	int J = fp->stream >= 0 ? map_class(fp, fp->stream, bp) : -1;
	if (I < 0 || J < 0 || I == J) {
		diag_error(d, fwd->loc,
			   "%s: the GPU backward needs the forward's query rows and keys as two "
			   "indices of its inputs (--target=cpu runs it)",
			   bwd->name);
		return 1;
	}
	int nested = 0;
	for (int at = 0; (at = grad_nest_sum(a, bp, I, J, at)) >= 0; nested = 1)
		reclass(a, fp, qf, bp, &I, &J);
	if (nested) {
		grad_factor_sums(a, b);
		reclass(a, fp, qf, bp, &I, &J);
	}
	plan_merge_same(b, NULL, NULL);
	/* GQA: gradients of a shared K/V head as parts per query head and their
	** sum (split_group), the plan's classes taken again */
	PtrVec parts = {0};
	for (int i = 0; i < b->nodes.n; i++) {
		int g = group_var(bp, i, I, J);
		if (g < 0)
			continue;
		ptrvec_push(a, &parts, split_group(a, bp, J, i, g));
		reclass(a, fp, qf, bp, &I, &J);
		i++;
	}
	s->ngqa = parts.n;
	/* gradients of tables and trainable inputs summed over the rows and
	** the keys: parts per key and their sum (split_scalar) */
	for (int i = 0; i < b->nodes.n; i++) {
		int r = scalar_var(bp, i, I, J);
		if (r < 0)
			continue;
		ptrvec_push(a, &parts, split_scalar(a, b, i, r));
		reclass(a, fp, qf, bp, &I, &J);
		i++;
	}
	/* ... and those summed over the query rows alone, reading no key: the
	** row pass writes the terms (split_row_scalar) */
	int nkparts = parts.n;
	for (int i = 0; i < b->nodes.n; i++) {
		if (!row_scalar(fwd, bp, i, I, J))
			continue;
		ptrvec_push(a, &parts, split_row_scalar(a, b, i));
		reclass(a, fp, qf, bp, &I, &J);
		i++;
	}
	/* gradients of inputs read as several operands: an element's terms in
	** the gradient's own expression, its parts from the kernels */
	for (int i = 0; i < b->nodes.n; i++) {
		Node *x = b->nodes.v[i];
		int changed = 0;
		if (sum_side(bp, i, I, J) < 0)
			continue;
		x->body = inline_terms(a, x, expr_copy(a, x->body), 0, &changed);
		if (changed)
			reclass(a, fp, qf, bp, &I, &J);
	}
	int n = b->nodes.n, failed = 0, ngrp = parts.n;
	/* sums[]: those gradients, a row pass each after the kernels; sum_in[]:
	** their parts, outputs of the kernels in the workspace */
	char *sums = ARENA_ARRAY(a, char, n + 1), *sum_in = ARENA_ARRAY(a, char, n + 1);
	int *computed = ARENA_ARRAY(a, int, n + 1);
	for (int i = 0; i < n; i++) {
		int R = sum_side(bp, i, I, J);
		computed[i] = -1;
		if (R >= 0)
			mark_sum_parts(a, bp, i, R, R == I ? J : I, sums, sum_in, &computed[i]);
	}
	/* grp_in: the parts' nodes; grp: the sums of them, each right after */
	char *row = ARENA_ARRAY(a, char, n + 1), *outq = ARENA_ARRAY(a, char, n + 1),
	     *outk = ARENA_ARRAY(a, char, n + 1), *grp = ARENA_ARRAY(a, char, n + 1),
	     *grp_in = ARENA_ARRAY(a, char, n + 1), *rpart = ARENA_ARRAY(a, char, n + 1);
	for (int k = 0; k < ngrp; k++) {
		int at = ((const Node *)parts.v[k])->id;
		grp_in[at] = grp[at + 1] = 1;
		rpart[at] = k >= nkparts; /* the row pass's, not a kernel's */
	}
	row_nodes(bp, I, J, NULL, NULL, row);
	for (int i = 0; i < n; i++) {
		const Node *x = b->nodes.v[i];
		if ((x->out->kind != TK_OUT && !grp_in[i] && !sum_in[i]) || grp[i] || rpart[i] ||
		    sums[i])
			continue;
		int hi = plan_node_class(bp, i, I), hj = plan_node_class(bp, i, J);
		if ((hi & 1) && hj == 2 && x->nred == 1)
			outq[i] = 1;
		else if ((hj & 1) && hi == 2 && x->nred == 1)
			outk[i] = 1;
		else {
			const char *red = "";
			for (int v = x->nfree; v < x->nfree + x->nred; v++)
				red = arena_printf(a, "%s%s%s", red, v > x->nfree ? ", " : "",
						   x->vars[v].name);
			if (computed[i] >= 0) {
				diag_error(
				    d, x->loc,
				    "%s: '%s' sums parts, and its part '%s' contracts with a "
				    "value that is not a bf16 or f16 input (one computed from "
				    "an input, or an f32 one), which the tensor cores do not "
				    "read (--target=cpu runs it)",
				    bwd->name, x->out->name,
				    ((Node *)b->nodes.v[computed[i]])->out->name);
				failed = 1;
				continue;
			}
			diag_error(
			    d, x->loc,
			    "%s: the GPU backward computes gradients reduced over the keys "
			    "alone along the query rows (dQ) or over the query rows alone along "
			    "the keys (dK, dV); '%s' reduces over %s%s (--target=cpu runs it)",
			    bwd->name, x->out->name, x->nred ? red : "nothing",
			    !((hi | hj) & 1)
				? " (the gradient of a table or a trainable input: not on the GPU "
				  "yet)"
			    : (hi & hj & 1) ? " (a bias over the query rows and the keys: not "
					      "on the GPU yet)"
			    : x->nred       ? " (a K/V head shared by a group of query heads: GQA)"
				      : " (the sum of the gradients of an input read as several "
					"operands)");
			failed = 1;
		}
	}
	if (failed)
		return 1;
	/* needr: what the row pass's parts read */
	char *needq = ARENA_ARRAY(a, char, n + 1), *needk = ARENA_ARRAY(a, char, n + 1),
	     *needr = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++) {
		if (outq[i])
			need_closure(b, i, needq);
		if (outk[i])
			need_closure(b, i, needk);
		if (rpart[i])
			need_closure(b, i, needr);
	}
	/* a reduction over the keys that the kernels read and no gradient is
	** (the softmax's max and sum where the forward saved no logsumexp) is a
	** pass of its own, first: a kernel over query tiles streaming the keys,
	** the forward's, its results in the workspace. A reduction over the
	** query rows that the kernel over key tiles would need first has no
	** such pass. */
	char *stat = ARENA_ARRAY(a, char, n + 1), *keeps_ = ARENA_ARRAY(a, char, n + 1);
	int anys = 0;
	for (int i = 0; i < n; i++) {
		const Node *x = b->nodes.v[i];
		if ((needq[i] || needk[i] || needr[i]) && !outq[i] && !outk[i] &&
		    (plan_node_class(bp, i, J) & 2) && !grp_in[i] && !grp[i])
			stat[i] = 1, anys = 1;
		else if (needk[i] && !outk[i] && (plan_node_class(bp, i, I) & 2)) {
			diag_error(
			    d, x->loc,
			    "%s: the GPU backward's kernel over key tiles streams the query "
			    "rows; '%s' (%s) reduces over the query rows before it and would "
			    "need a pass of its own over them (--target=cpu runs it)",
			    bwd->name, x->out->name, x->origin ? x->origin : "a reduction");
			return 1;
		}
	}
	/* what the pass finishes from its reductions alone (L = max + log(sum),
	** grad_lse_for_gpu's), also its own: done[], and of those, what other
	** pieces read (outs_[]: its outputs, in the workspace) */
	char *done = ARENA_ARRAY(a, char, n + 1), *outs_ = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n && anys; i++) {
		int any = 0;
		done[i] = stat[i] || (!rpart[i] && !plan_node_class(bp, i, J) &&
				      !(plan_node_class(bp, i, I) & 2) &&
				      reads_within(b, i, done, NULL, &any) && any &&
				      reads_no_incoming(fwd, b->nodes.v[i]));
	}
	if (anys) {
		char *none = ARENA_ARRAY(a, char, n + 1);
		needs_until(b, outq, outk, rpart, done, needq, needk, needr);
		for (int i = 0; i < n; i++)
			for (int j = 0; done[i] && j < n; j++) {
				const Node *y = b->nodes.v[j];
				const Tensor *t = ((Node *)b->nodes.v[i])->out;
				if ((needq[j] || needk[j] || needr[j]) &&
				    (expr_reads(y->body, t) || expr_reads(y->filter, t)))
					outs_[i] = 1;
			}
		for (int i = 0; i < n; i++)
			if (outs_[i])
				need_closure(b, i, keeps_);
		Cascade *st = cascade_piece(a, b, arena_printf(a, "%s_stats", bwd->name), keeps_,
					    outs_, none, fp, qf);
		for (int i = 0; i < n; i++)
			if (outs_[i])
				ptrvec_push(a, &s->ws, ((Node *)b->nodes.v[i])->out);
		/* a pass whose plan keeps several (threshold's sum of dP P over the
		** kept keys needs P's max and sum complete): its kernels in order,
		** what passes between them in the workspace too */
		PassSplit ps;
		if (pass_split(a, d, st, "sm_80", &ps))
			return 1;
		if (ps.npieces > GRAD_MAX_DKV) {
			diag_error(d, fwd->loc, "%s: the backward's first pass needs %d kernels",
				   bwd->name, ps.npieces);
			return 1;
		}
		for (int k = 0; k < ps.npieces; k++)
			s->stats[s->nstats++] = ps.piece[k];
		if (!ps.npieces)
			s->stats[s->nstats++] = st;
		for (int k = 0; k < ps.ws.n; k++)
			ptrvec_push(a, &s->ws, ps.ws.v[k]);
		/* values its prologues wrote (cosine's norms, a scale per head):
		** in the workspace, not computed again by the row pass or the
		** kernels */
		int pro = 0;
		for (int k = 0; k < ps.ws.n; k++)
			for (int i = 0; i < n; i++)
				if (!strcmp(((Node *)b->nodes.v[i])->out->name,
					    ((const Tensor *)ps.ws.v[k])->name) &&
				    !outs_[i])
					done[i] = outs_[i] = 1, pro = 1;
		if (pro)
			needs_until(b, outq, outk, rpart, done, needq, needk, needr);
		/* row-pass nodes may read the pass's results */
		row_nodes(bp, I, J, done, outs_, row);
	}
	/* the row pass computes what either kernel reads of it; the kernels
	** keep the rest */
	char *keepr = ARENA_ARRAY(a, char, n + 1), *outr = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++) {
		if (needr[i] && !row[i] && !outs_[i]) {
			const Node *x = b->nodes.v[i];
			diag_error(d, x->loc,
				   "%s: the GPU backward's row pass computes the terms of a "
				   "trainable input's gradient from values of the query rows; "
				   "'%s' is not one (--target=cpu runs it)",
				   bwd->name, x->out->name);
			return 1;
		}
		if (!row[i] || !(needq[i] || needk[i] || needr[i]))
			continue;
		keepr[i] = 1;
		outr[i] = rpart[i];
		/* a value not of the query rows (cosine's temperature per head):
		** the row pass's grid is the rows, so it is no output of it, and
		** the kernels compute it again */
		if (!(plan_node_class(bp, i, I) & 1))
			continue;
		needq[i] = needk[i] = needr[i] = 0;
	}
	/* and it computes such a value only where one of its rows' values
	** reads it */
	for (int i = n - 1; i >= 0; i--) {
		if (!keepr[i] || (plan_node_class(bp, i, I) & 1))
			continue;
		const Tensor *t = ((Node *)b->nodes.v[i])->out;
		int read = 0;
		for (int j = i + 1; j < n; j++)
			read |= keepr[j] && expr_reads(((Node *)b->nodes.v[j])->body, t);
		keepr[i] = (char)read;
	}
	for (int i = 0; i < n; i++) {
		const Node *x = b->nodes.v[i];
		for (int j = 0; keepr[i] && (plan_node_class(bp, i, I) & 1) && j < n; j++) {
			const Node *y = b->nodes.v[j];
			if ((needq[j] || needk[j]) &&
			    (expr_reads(y->body, x->out) || expr_reads(y->filter, x->out)))
				outr[i] = 1;
		}
	}
	/* what the pieces after the pass read of it (inputs from the workspace):
	** its results and the row pass's */
	char *rowin = ARENA_ARRAY(a, char, n + 1), *kin = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++)
		rowin[i] = row[i] || outs_[i], kin[i] = outr[i] || outs_[i];
	int any = 0;
	for (int i = 0; i < n; i++)
		any |= outr[i];
	/* its outputs' rows are one class as in the backward's plan: a norm of
	** Q and the row term of dO and O share no tensor (Cascade.ties) */
	s->pre = any ? cascade_piece(a, b, arena_printf(a, "%s_pre", bwd->name), keepr, outr, rowin,
				     bp, -1)
		     : NULL;
	if (s->pre)
		s->pre->rows64 = 1;
	for (int i = 0; i < n && any; i++)
		if (outr[i])
			ptrvec_push(a, &s->ws, ((Node *)b->nodes.v[i])->out);
	int anyq = 0, anyk = 0;
	for (int i = 0; i < n; i++)
		anyq |= outq[i], anyk |= outk[i];
	s->dq = anyq
		    ? bwd_piece(a, b, bp, -1, arena_printf(a, "%s_dq", bwd->name), needq, outq, kin)
		    : NULL;
	char *keeps[GRAD_MAX_DKV], *outs[GRAD_MAX_DKV];
	/* gradients along the keys of different widths (differential
	** attention's dK at D 64 and dV at DV 128): a kernel per width, as the
	** kernel's contractions with V share one */
	long width[GRAD_MAX_DKV];
	int nw = 0;
	for (int i = 0; anyk && !wide_keys(b, outk) && i < n; i++) {
		long w = key_width(bp, i, J);
		int k = 0;
		while (k < nw && width[k] != w)
			k++;
		if (outk[i] && w > 0 && k == nw && nw < GRAD_MAX_DKV)
			width[nw++] = w;
	}
	char *some[GRAD_MAX_DKV], *gneed[GRAD_MAX_DKV];
	for (int g = 0; nw > 1 && g < nw; g++) {
		some[g] = ARENA_ARRAY(a, char, n + 1), gneed[g] = ARENA_ARRAY(a, char, n + 1);
		for (int i = 0; i < n; i++)
			if (outk[i] && key_width(bp, i, J) == width[g]) {
				some[g][i] = 1;
				need_closure_until(b, i, gneed[g], done);
			}
	}
	/* a gradient with no value index joins the kernel that already
	** computes most of what it reads (differential attention's dlam parts
	** read dP = dO V^T, which dK's kernel multiplies out and dV's does not) */
	for (int i = 0; nw > 1 && i < n; i++) {
		if (!outk[i] || key_width(bp, i, J))
			continue;
		char *mine = ARENA_ARRAY(a, char, n + 1);
		need_closure_until(b, i, mine, done);
		int best = 0, most = -1;
		for (int g = 0; g < nw; g++) {
			int shared = 0;
			for (int k = 0; k < n; k++)
				shared += mine[k] && gneed[g][k];
			if (shared > most)
				most = shared, best = g;
		}
		some[best][i] = 1;
		for (int k = 0; k < n; k++)
			gneed[best][k] |= mine[k];
	}
	for (int g = 0; nw > 1 && g < nw; g++) {
		for (int k = 0; k < n; k++)
			gneed[g][k] &= !keepr[k];
		keeps[s->ndkv] = gneed[g], outs[s->ndkv] = some[g];
		s->dkv[s->ndkv++] =
		    bwd_piece(a, b, bp, J, arena_printf(a, "%s_dkv_%ld", bwd->name, width[g]),
			      gneed[g], some[g], kin);
	}
	if (anyk && !wide_keys(b, outk) && nw <= 1) {
		keeps[s->ndkv] = needk, outs[s->ndkv] = outk;
		s->dkv[s->ndkv++] =
		    bwd_piece(a, b, bp, J, arena_printf(a, "%s_dkv", bwd->name), needk, outk, kin);
	}
	/* wide heads: a kernel per gradient (dK, dV), each recomputing the
	** scores, where both accumulators and both score tiles do not fit the
	** registers of one (sm_80: 255 per thread) */
	for (int i = 0; anyk && wide_keys(b, outk) && i < n; i++) {
		if (!outk[i] || s->ndkv == GRAD_MAX_DKV)
			continue;
		char *one = ARENA_ARRAY(a, char, n + 1), *need = ARENA_ARRAY(a, char, n + 1);
		one[i] = 1;
		need_closure_until(b, i, need, done);
		for (int k = 0; k < n; k++)
			need[k] &= !keepr[k];
		keeps[s->ndkv] = need, outs[s->ndkv] = one;
		s->dkv[s->ndkv++] =
		    bwd_piece(a, b, bp, J,
			      arena_printf(a, "%s_%s", bwd->name,
					   cascade_c_name(a, ((Node *)b->nodes.v[i])->out->name)),
			      need, one, kin);
	}
	for (int k = 0; k < s->ndkv; k++)
		s->dkv[k]->first_rows_longest = 1;
	/* the parts of GQA's gradients: in the workspace after the row pass's
	** results, summed by a row pass over the keys after the kernels */
	for (int i = 0; i < n && ngrp; i++)
		if (grp_in[i] && !rpart[i])
			ptrvec_push(a, &s->ws, ((Node *)b->nodes.v[i])->out);
	/* a row pass each: two gradients' indices join no class (they read
	** different parts), so one pass would have no rows in common */
	for (int i = 0; i < n && ngrp; i++) {
		if (!grp[i] || s->ngrp == GRAD_MAX_DKV)
			continue;
		char *one = ARENA_ARRAY(a, char, n + 1);
		one[i] = 1;
		Cascade *r =
		    bwd_piece(a, b, bp, -1,
			      arena_printf(a, "%s_%s_sum", bwd->name,
					   cascade_c_name(a, ((Node *)b->nodes.v[i])->out->name)),
			      one, one, grp_in);
		/* GQA's sums run over the keys (their value index last), the
		** others over their own first indices */
		r->value_last =
		    !strcmp(strrchr(((Node *)b->nodes.v[i - 1])->out->name, '.'), ".grp");
		s->grp[s->ngrp++] = r;
	}
	/* the gradients summed from parts: the parts in the workspace after
	** the others, a row pass each over the gradient's rows, last; it
	** computes again the values of its rows that it reads (a norm), and
	** reads what is in the workspace (the parts, the first pass's and the
	** row pass's results) */
	char *from = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++) {
		from[i] = sum_in[i] || kin[i];
		if (sum_in[i])
			ptrvec_push(a, &s->ws, ((Node *)b->nodes.v[i])->out);
	}
	for (int i = 0; i < n; i++) {
		if (!sums[i])
			continue;
		if (s->ngrp == GRAD_MAX_DKV) {
			diag_error(d, b->loc,
				   "%s: the backward needs more than %d row passes after "
				   "its kernels",
				   bwd->name, GRAD_MAX_DKV);
			return 1;
		}
		const Node *x = b->nodes.v[i];
		char *keep = ARENA_ARRAY(a, char, n + 1), *one = ARENA_ARRAY(a, char, n + 1);
		need_closure_until(b, i, keep, from);
		one[i] = 1;
		Cascade *r = bwd_piece(
		    a, b, bp, -1,
		    arena_printf(a, "%s_%s_sum", bwd->name, cascade_c_name(a, x->out->name)), keep,
		    one, from);
		/* the rows are the gradient's own indices but a value index */
		int R = sum_side(bp, i, I, J);
		r->value_last = bp->cls[i][x->nfree - 1] != R;
		s->grp[s->ngrp++] = r;
	}
	if (anyq && s->ndkv)
		fuse_dq(a, b, bp, J, needq, outq, keepr, kin, keeps, outs, s);
	ws_dtypes(s);
	return 0;
}
