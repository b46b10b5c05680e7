/*
** compiler/grad_read.c: the contribution of one read to an adjoint.
**
** A node reads U[s1, ..., sk] at every point of its iteration space; the
** adjoint of U at a point t is the sum, over the node's points that read
** U[t], of the local adjoint there. When the subscripts are distinct plain
** index variables that is an ordinary node: those variables free (in U's
** dimension order), every other variable of the node reduced, the node's
** filter kept. Two index maps that are bijections are made plain first:
**
**   U[.., h / G, ..]      h < X * G is split into h_o < X and h_i < G
**                         (h = h_o * G + h_i; h / G is h_o, h % G is h_i)
**   U[.., hk * G + g, ..] hk < X and g < G are merged into hk_g < X * G
**                         (hk = hk_g / G, g = hk_g % G)
**
** which covers grouped-query attention written either way. One subscript
** may be a row at an offset, T[b, ..] + i with T an i32 input read at
** index variables (a packed batch's K[cu_k[b] + j, ..]): the contribution
** is then the logical tensor over b, .., i in that position, and its Pack
** stores the point (b, .., i) at row T[b, ..] + i of the input's buffer,
** as a packed output's (grad.c gives the pack to the gradient). Distinct
** points reach distinct rows where the offsets are a packed batch's (the
** rows of one sequence do not reach the next), which the interpreter
** checks and the GPU cannot. Any other subscript (a shift K[j - 1], a
** gather K[page[..]], a repeated index) would need a scatter: one
** diagnostic names the read and its line.
*/
#include <string.h>

#include "grad_int.h"

/* The iteration space of the contribution under construction. */
typedef struct Work {
	IndexVar v[GRAD_MAX_VARS];
	char dead[GRAD_MAX_VARS]; /* replaced by a split or merge */
	int n;
	Expr *local, *filter;
	Expr *sub[GRAD_MAX_VARS]; /* the read's subscripts */
	int k;
} Work;

/* A fresh variable of the work space, named after base with a suffix that
** no other variable there has. */
static int add_var(Grad *g, Work *w, const char *base, const char *suffix, Expr *extent)
{
	const char *name = arena_printf(g->a, "%s%s", base, suffix);
	for (int k = 2;; k++) {
		int clash = 0;
		for (int i = 0; i < w->n; i++)
			clash |= !strcmp(w->v[i].name, name);
		if (!clash)
			break;
		name = arena_printf(g->a, "%s%s%d", base, suffix, k);
	}
	w->v[w->n] = (IndexVar){name, extent, NOLOC};
	return w->n++;
}

/* Replaces `from` by `to` everywhere in the work (local adjoint, filter,
** subscripts). */
static void work_replace(Grad *g, Work *w, const Expr *from, const Expr *to)
{
	w->local = gx_replace(g, w->local, from, to);
	w->filter = gx_replace(g, w->filter, from, to);
	for (int i = 0; i < w->k; i++)
		w->sub[i] = gx_replace(g, w->sub[i], from, to);
}

/* v / E with v a variable of extent X * E: split v (see the top). */
static int split(Grad *g, Work *w, const Expr *s)
{
	if (!(s->kind == EX_BINOP && s->op == OP_DIV && s->args[0]->kind == EX_INDEX))
		return 0;
	int v = s->args[0]->var;
	Expr *ext = w->v[v].extent, *E = s->args[1];
	if (w->dead[v] || w->n + 2 > GRAD_MAX_VARS ||
	    !(ext->kind == EX_BINOP && ext->op == OP_MUL) || !expr_equal(ext->args[1], E))
		return 0;
	int hi = add_var(g, w, w->v[v].name, "_o", expr_copy(g->a, ext->args[0]));
	int lo = add_var(g, w, w->v[v].name, "_i", expr_copy(g->a, E));
	Expr *vx = expr_index(g->a, v);
	work_replace(g, w, s, expr_index(g->a, hi));
	work_replace(g, w, expr_binop(g->a, OP_MOD, vx, E), expr_index(g->a, lo));
	work_replace(g, w, vx,
		     expr_binop(g->a, OP_ADD,
				expr_binop(g->a, OP_MUL, expr_index(g->a, hi), expr_copy(g->a, E)),
				expr_index(g->a, lo)));
	w->dead[v] = 1;
	return 1;
}

/* a * E + c with a, c variables and c of extent E: merge them (see the top). */
static int merge(Grad *g, Work *w, int k, const Expr *shape)
{
	const Expr *s = w->sub[k];
	if (!(s->kind == EX_BINOP && s->op == OP_ADD && s->args[1]->kind == EX_INDEX))
		return 0;
	const Expr *m = s->args[0];
	if (!(m->kind == EX_BINOP && m->op == OP_MUL && m->args[0]->kind == EX_INDEX))
		return 0;
	int a = m->args[0]->var, c = s->args[1]->var;
	const Expr *E = m->args[1];
	if (a == c || w->dead[a] || w->dead[c] || w->n + 1 > GRAD_MAX_VARS ||
	    !expr_equal(w->v[c].extent, E))
		return 0;
	Expr *ext = expr_binop(g->a, OP_MUL, expr_copy(g->a, w->v[a].extent), expr_copy(g->a, E));
	if (!expr_equal(ext, shape))
		return 0;
	int x = add_var(g, w, arena_printf(g->a, "%s_%s", w->v[a].name, w->v[c].name), "", ext);
	Expr *xe = expr_index(g->a, x);
	work_replace(g, w, s, xe);
	work_replace(g, w, expr_index(g->a, a), expr_binop(g->a, OP_DIV, xe, expr_copy(g->a, E)));
	work_replace(g, w, expr_index(g->a, c), expr_binop(g->a, OP_MOD, xe, expr_copy(g->a, E)));
	w->dead[a] = w->dead[c] = 1;
	return 1;
}

/* The one diagnostic of a read no gradient can flow through. */
static Tensor *not_plain(Grad *g, const Node *n, const Expr *R, const Expr *bad, const char *why)
{
	Arena *a = g->a;
	diag_error(g->d, R->loc,
		   "cannot derive the gradient of '%s' through the read %s: its subscript '%s' "
		   "%s",
		   R->tensor->name, expr_str(a, R, n), expr_str(a, bad, n), why);
	g->failed = 1;
	return NULL;
}

Tensor *grad_contribution(Grad *g, const Node *n, Expr *local, const Expr *R)
{
	Work w;
	memset(&w, 0, sizeof w);
	w.n = n->nfree + n->nred;
	memcpy(w.v, n->vars, sizeof(IndexVar) * (size_t)w.n);
	w.local = local;
	w.filter = grad_remap(g, n->filter);
	w.k = R->nargs;
	for (int k = 0; k < w.k; k++)
		w.sub[k] = expr_copy(g->a, R->args[k]);
	const Tensor *U = R->tensor;
	Tensor *Ub = g->val[U->id];
	const Expr *tab = NULL, *row = NULL;
	int kp = -1; /* the position of a row at an offset */
	for (int k = 0; k < w.k; k++) {
		if (w.sub[k]->kind == EX_INDEX)
			continue;
		if (split(g, &w, w.sub[k]) || merge(g, &w, k, Ub->shape[k]))
			continue;
		if (kp < 0 && U->kind == TK_IN && expr_offset_row(w.sub[k], &row)) {
			kp = k;
			continue;
		}
		return not_plain(g, n, R, R->args[k],
				 "is not a plain index (a shift, a gather or an index map "
				 "other than h / G and hk * G + g would need a scatter)");
	}
	if (kp >= 0 && !(tab = expr_offset_row(w.sub[kp], &row)))
		return not_plain(g, n, R, R->args[kp],
				 "is a row at an offset whose indices are also split (h / G) "
				 "elsewhere in the read, which would need a scatter");
	int nv = 0;
	Expr *ren[GRAD_MAX_VARS] = {0};
	IndexVar vars[GRAD_MAX_VARS];
	Expr *lshape[GRAD_MAX_VARS]; /* the logical dims (U's, or the offset's) */
	for (int k = 0; k < w.k; k++) {
		int nk = k == kp ? tab->nargs + 1 : 1;
		for (int m = 0; m < nk; m++) {
			int v = k != kp          ? w.sub[k]->var
				: m < tab->nargs ? tab->args[m]->var
						 : row->var;
			if (ren[v] || nv >= GRAD_MAX_VARS)
				return not_plain(g, n, R, R->args[k],
						 "repeats an index (the read is a diagonal, whose "
						 "adjoint would need a scatter)");
			ren[v] = expr_index(g->a, nv);
			lshape[nv] = k == kp ? w.v[v].extent : Ub->shape[k];
			vars[nv++] = w.v[v];
		}
	}
	int nfree = nv;
	for (int v = 0; v < w.n; v++) {
		if (w.dead[v] || ren[v])
			continue;
		ren[v] = expr_index(g->a, nv);
		vars[nv++] = w.v[v];
	}
	Expr *body = expr_subst(g->a, w.local, ren, w.n);
	Expr *filter = expr_subst(g->a, w.filter, ren, w.n);
	/* a free variable spans U's whole dimension; the points the node did
	** not reach get no contribution */
	for (int k = 0; k < nfree; k++) {
		Expr *shape = expr_copy(g->a, lshape[k]);
		if (!expr_equal(vars[k].extent, shape))
			filter = expr_and(g->a, filter,
					  expr_binop(g->a, OP_LT, expr_index(g->a, k),
						     expr_subst(g->a, vars[k].extent, ren, w.n)));
		vars[k].extent = shape;
	}
	const char *name = arena_printf(g->a, "d%s.%d", U->name, g->contrib[U->id].n);
	Tensor *t = grad_new_tensor(g, name, TK_TEMP, kp < 0 ? Ub : NULL);
	grad_new_node(g, t, vars, nfree, nv - nfree, nv > nfree ? RED_SUM : RED_NONE, body,
		      grad_close_filter(g, body, filter), n->loc, "gradient");
	if (kp >= 0) {
		/* where each logical point lies in U's buffer */
		Pack *pk = ARENA_NEW(g->a, Pack);
		pk->rank = Ub->rank;
		pk->shape = ARENA_ARRAY(g->a, Expr *, Ub->rank + 1);
		for (int k = 0; k < Ub->rank; k++)
			pk->shape[k] = expr_copy(g->a, Ub->shape[k]);
		pk->at = ARENA_ARRAY(g->a, Expr *, Ub->rank + 1);
		for (int k = 0; k < w.k; k++)
			pk->at[k] = expr_subst(g->a, grad_remap(g, w.sub[k]), ren, w.n);
		pk->row = ren[row->var]->var;
		pk->table = g->val[tab->tensor->id];
		t->pack = pk;
	}
	return t;
}
