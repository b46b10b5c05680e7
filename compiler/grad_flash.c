/*
** compiler/grad_flash.c: the two rewrites that give the backward the form
** FlashAttention computes by hand, found as general rules:
**
** The row term. A reduction O[p] = sum[r](B) whose body is a multiple of a
** read Z[s] that does not depend on r (B = Z * C, or C / Z) has
** dB/dZ = B / Z (or -B / Z), so the contribution sum[r, ...](dO * B / Z)
** is sum[...](dO * O / Z): the saved output replaces a reduction over the
** whole space. For softmax's sum this turns the N x N x D term of
** O = sum[j](E / Z * V) into Delta = sum[e](dO * O), N x D, and the
** gradient of the scores becomes P * (dP - Delta).
**
** P from the saved logsumexp. The max in front of a softmax may be any
** value per row (that is why it is a stop-gradient): where the forward
** saves L = logsumexp over the same scores and mask, the backward takes L
** as that max. Then exp(S - L) is P itself and the sum of it over the row
** is 1, so the backward reads L instead of recomputing the max and the sum.
*/
#include <string.h>

#include "grad_int.h"
#include "plan.h"

/* The sign with which R divides or multiplies e (walks products only). */
static int factor_walk(const Expr *e, const Expr *R, int s)
{
	if (expr_equal(e, R))
		return s;
	if (e->kind != EX_BINOP || e->type != VT_FLOAT)
		return 0;
	if (e->op == OP_MUL)
		return factor_walk(e->args[gx_count(e->args[0], R) ? 0 : 1], R, s);
	if (e->op == OP_DIV)
		return gx_count(e->args[0], R) ? factor_walk(e->args[0], R, s)
					       : factor_walk(e->args[1], R, -s);
	return 0;
}

int grad_factor_sign(const Expr *body, const Expr *R)
{
	return gx_count(body, R) == 1 ? factor_walk(body, R, 1) : 0;
}

Tensor *grad_row_term(Grad *g, const Node *n, Expr *adj, const Expr *R)
{
	const Tensor *O = n->out;
	if (n->red != RED_SUM || !grad_is_output(g, O))
		return NULL;
	int sign = grad_factor_sign(n->body, R);
	if (!sign)
		return NULL;
	/* R's subscripts: distinct free variables spanning R's dimensions */
	Expr *ren[GRAD_MAX_VARS] = {0};
	IndexVar vars[GRAD_MAX_VARS];
	int nv = 0;
	const Tensor *U = R->tensor;
	for (int k = 0; k < R->nargs; k++) {
		const Expr *s = R->args[k];
		if (s->kind != EX_INDEX || s->var >= n->nfree || ren[s->var] ||
		    !expr_equal(n->vars[s->var].extent, U->shape[k]))
			return NULL;
		ren[s->var] = expr_index(g->a, nv);
		vars[nv++] = n->vars[s->var];
	}
	int nfree = nv;
	for (int v = 0; v < n->nfree; v++)
		if (!ren[v]) {
			ren[v] = expr_index(g->a, nv);
			vars[nv++] = n->vars[v];
		}
	Expr *body = gx_mul(g, adj, grad_read_at(g, g->val[O->id], NULL));
	body = gx_div(g, body, grad_remap(g, R));
	body = expr_subst(g->a, sign < 0 ? gx_neg(g, body) : body, ren, n->nfree);
	/* the sum over the reduced indices is O at every point where O is present */
	Expr *filter = expr_subst(g->a, grad_remap(g, O->domain), ren, n->nfree);
	const char *name = arena_printf(g->a, "d%s.%d", U->name, g->contrib[U->id].n);
	Tensor *t = grad_new_tensor(g, name, TK_TEMP, g->val[U->id]);
	Node *m =
	    grad_new_node(g, t, vars, nfree, nv - nfree, nv > nfree ? RED_SUM : RED_NONE, body,
			  grad_close_filter(g, body, filter), n->loc, "gradient (row term)");
	grad_note(g,
		  "%s: %s at %d:%d is a multiple of %s, so its sum over %s is %s itself (saved): "
		  "the contribution is %s%s%s, a row term instead of a reduction over the whole "
		  "space",
		  t->name, O->name, n->loc.line, n->loc.col, expr_str(g->a, R, n),
		  n->vars[n->nfree].name, O->name, m->red == RED_SUM ? "sum[...](" : "",
		  expr_str(g->a, body, m), m->red == RED_SUM ? ")" : "");
	return t;
}

/* ---- P from the saved logsumexp ------------------------------------------- */

/* Whether e reads t at the first e->nargs variables, in order. */
static int identity_read(const Expr *e, const Tensor *t)
{
	if (!e || e->kind != EX_ACCESS || e->tensor != t)
		return 0;
	for (int k = 0; k < e->nargs; k++)
		if (e->args[k]->kind != EX_INDEX || e->args[k]->var != k)
			return 0;
	return 1;
}

/* exp(x - m[...]) with m read at the identity: x, else NULL. */
static const Expr *exp_minus(const Expr *e, const Tensor *m)
{
	if (e->kind != EX_CALL || e->op != FN_EXP)
		return NULL;
	const Expr *d = e->args[0];
	if (d->kind != EX_BINOP || d->op != OP_SUB || !identity_read(d->args[1], m))
		return NULL;
	return d->args[0];
}

/* Two reductions over the same space, body and filter. */
static int same_reduction(const Node *a, const Node *b)
{
	if (a->nfree != b->nfree || a->nred != b->nred || a->red != b->red)
		return 0;
	for (int k = 0; k < a->nfree + a->nred; k++)
		if (!expr_equal(a->vars[k].extent, b->vars[k].extent))
			return 0;
	return expr_equal(a->body, b->body) && expr_equal(a->filter, b->filter);
}

/* A saved logsumexp: L = m + log(z), m its stabiliser, z = sum exp(y - m). */
typedef struct Lse {
	const Tensor *L;
	const Node *m, *z;
	const Expr *y;
} Lse;

static int match_lse(const Node *n, Lse *l)
{
	const Expr *b = n->body;
	if (n->out->kind != TK_OUT || n->red != RED_NONE || b->kind != EX_BINOP ||
	    b->op != OP_ADD || b->args[0]->kind != EX_ACCESS || b->args[1]->kind != EX_CALL ||
	    b->args[1]->op != FN_LOG || b->args[1]->args[0]->kind != EX_ACCESS)
		return 0;
	const Tensor *m = b->args[0]->tensor, *z = b->args[1]->args[0]->tensor;
	if (!m->def || !z->def || !identity_read(b->args[0], m) ||
	    !identity_read(b->args[1]->args[0], z) || strcmp(m->def->origin, "logsumexp.max") ||
	    z->def->red != RED_SUM || z->def->nfree != n->nfree || m->def->nfree != n->nfree)
		return 0;
	const Expr *y = exp_minus(z->def->body, m);
	if (!y)
		return 0;
	*l = (Lse){n->out, m->def, z->def, y};
	return 1;
}

/* In every backward node: the stabiliser m reads L, the sum z is 1. */
static void substitute(Grad *g, const Node *m, const Node *z, const Tensor *L)
{
	Tensor *mb = g->val[m->out->id], *zb = g->val[z->out->id], *Lb = g->val[L->id];
	for (int i = 0; i < g->b->nodes.n; i++) {
		Node *n = g->b->nodes.v[i];
		int changed = 0;
		n->body = grad_swap_reads(g, n->body, mb, Lb, &changed);
		n->body = grad_swap_reads(g, n->body, zb, NULL, &changed);
		if (changed && n->body->type == VT_FLOAT)
			n->body = gx_simplify(g, n->body);
	}
}

/* The softmax whose max is node m: its exp and sum nodes, if they have the
** form lang/sema_expr.c gives them and score the same as the logsumexp. */
static const Node *softmax_sum(const Grad *g, const Node *m, const Lse *l)
{
	for (int i = 0; i < g->f->nodes.n; i++) {
		const Node *z = g->f->nodes.v[i];
		if (z->red != RED_SUM || strcmp(z->origin, "softmax.sum") ||
		    z->body->kind != EX_ACCESS || !z->body->tensor->def ||
		    !expr_equal(z->filter, l->z->filter))
			continue;
		const Node *e = z->body->tensor->def;
		if (!identity_read(z->body, e->out) || strcmp(e->origin, "softmax.exp"))
			continue;
		const Expr *x = exp_minus(e->body, m->out);
		if (x && expr_equal(x, l->y))
			return z;
	}
	return NULL;
}

void grad_from_lse(Grad *g)
{
	for (int i = 0; i < g->f->nodes.n; i++) {
		Lse l;
		if (!match_lse(g->f->nodes.v[i], &l))
			continue;
		substitute(g, l.m, l.z, l.L);
		grad_note(g,
			  "%s: the backward reads the saved logsumexp %s as its stabiliser: "
			  "%s becomes %s and %s becomes 1, so its gradient is d%s * exp(x - %s)",
			  l.L->name, l.L->name, l.m->out->name, l.L->name, l.z->out->name,
			  l.L->name, l.L->name);
		for (int k = 0; k < g->f->nodes.n; k++) {
			const Node *m = g->f->nodes.v[k];
			if (strcmp(m->origin, "softmax.max") || !same_reduction(m, l.m))
				continue;
			const Node *z = softmax_sum(g, m, &l);
			if (!z)
				continue;
			substitute(g, m, z, l.L);
			grad_note(g,
				  "P recomputed from the saved logsumexp %s (same scores and "
				  "mask): %s becomes %s and %s becomes 1, so %s is P = exp(S - %s) "
				  "and the backward has no max or sum pass",
				  l.L->name, m->out->name, l.L->name, z->out->name,
				  z->body->tensor->name, l.L->name);
		}
	}
}

/* ---- the GPU's logsumexp where none was saved ------------------------------ */

/* Node k of b with origin `origin` whose body is exp(x - m[...]) (e), or
** sum[j](e[...]) with the same filter (z): -1 where none. */
static int find_node(const Cascade *b, const char *origin, const Tensor *m, const Node *e)
{
	for (int k = 0; k < b->nodes.n; k++) {
		const Node *n = b->nodes.v[k];
		if (!n->origin || strcmp(n->origin, origin))
			continue;
		if (m && exp_minus(n->body, m))
			return k;
		if (e && n->red == RED_SUM && identity_read(n->body, e->out) &&
		    expr_equal(n->filter, e->filter))
			return k;
	}
	return -1;
}

/* A copy of node x reading tensor t of b as the new node's output, with
** the given body, inserted at position at. */
static Node *insert_like(Arena *a, Cascade *b, const Node *x, int at, const char *name, int nfree,
			 Expr *body, Expr *filter)
{
	Tensor *t = ARENA_NEW(a, Tensor);
	*t = *x->out;
	t->name = name, t->kind = TK_TEMP, t->dtype = DT_F32, t->trainable = 0;
	t->rank = nfree, t->id = b->tensors.n,
	t->domain = nfree == x->nfree ? x->out->domain : NULL;
	ptrvec_push(a, &b->tensors, t);
	Node *n = ARENA_NEW(a, Node);
	*n = *x;
	n->out = t, n->nfree = nfree, n->nred = 0, n->red = RED_NONE;
	n->body = body, n->filter = filter;
	t->def = n;
	cascade_insert_node(a, b, at, n);
	return n;
}

int grad_lse_for_gpu(Arena *a, Cascade *b)
{
	Grad g = {.a = a, .b = b};
	int done = 0;
	for (int k = 0; k < b->nodes.n; k++) {
		Node *m = b->nodes.v[k];
		if (!m->origin || strcmp(m->origin, "softmax.max"))
			continue;
		int ie = find_node(b, "softmax.exp", m->out, NULL);
		int iz = ie < 0 ? -1 : find_node(b, "softmax.sum", NULL, b->nodes.v[ie]);
		if (iz < 0)
			continue;
		Node *e = b->nodes.v[ie], *z = b->nodes.v[iz];
		/* L = m + log(z), after z; P = exp(x - L), after L */
		Expr *rm = expr_new(a, EX_ACCESS, VT_FLOAT, m->loc), *rz = expr_copy(a, rm);
		rm->tensor = m->out, rz->tensor = z->out;
		rm->nargs = rz->nargs = m->nfree;
		rm->args = ARENA_ARRAY(a, Expr *, m->nfree + 1);
		rz->args = ARENA_ARRAY(a, Expr *, m->nfree + 1);
		for (int v = 0; v < m->nfree; v++)
			rm->args[v] = expr_index(a, v), rz->args[v] = expr_index(a, v);
		Expr *lg = expr_new(a, EX_CALL, VT_FLOAT, m->loc);
		lg->op = FN_LOG, lg->nargs = 1, lg->args = ARENA_ARRAY(a, Expr *, 2);
		lg->args[0] = rz;
		const char *base = m->out->name;
		const char *dot = strrchr(base, '.');
		int stem = dot ? (int)(dot - base) : (int)strlen(base);
		/* softmax.max2's is lse2, as the desugaring numbers a second one */
		const char *nth = base + stem + strcspn(base + stem, "0123456789");
		Node *L =
		    insert_like(a, b, m, iz + 1, arena_printf(a, "%.*s.lse%s", stem, base, nth),
				m->nfree, expr_binop(a, OP_ADD, rm, lg), NULL);
		Expr *body = expr_copy(a, e->body);
		int changed = 0;
		body = grad_swap_reads(&g, body, m->out, L->out, &changed);
		Node *p =
		    insert_like(a, b, e, L->id + 1, arena_printf(a, "%.*s.p%s", stem, base, nth),
				e->nfree, body, e->filter ? expr_copy(a, e->filter) : NULL);
		/* everything after but the max, the exp and the sum themselves */
		for (int i = p->id + 1; i < b->nodes.n; i++) {
			Node *n = b->nodes.v[i];
			int ch = 0;
			n->body = grad_swap_reads(&g, n->body, e->out, p->out, &ch);
			n->body = grad_swap_reads(&g, n->body, z->out, NULL, &ch);
			n->body = grad_swap_reads(&g, n->body, m->out, L->out, &ch);
			if (n->filter) {
				n->filter = grad_swap_reads(&g, n->filter, e->out, p->out, &ch);
				n->filter = grad_swap_reads(&g, n->filter, m->out, L->out, &ch);
			}
			if (ch && n->body->type == VT_FLOAT)
				n->body = gx_simplify(&g, n->body);
		}
		done++;
		k = p->id;
	}
	return done;
}
