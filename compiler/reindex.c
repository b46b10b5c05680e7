/*
** compiler/reindex.c: one index space for a head index that the front end
** fused.
**
** A left-hand subscript a*X+b is one variable x with a = x / X and
** b = x % X (lang/lower.c). GQA written as
**
**   S[b, hk, g, i, j]  = ... Q[b, hk*G+g, i, d] * K[b, hk, j, d] ...
**   O[b, hk*G+g, i, e] = sum[j](softmax[j](S[b, hk, g, i, j]) * V[b, hk, j, e])
**
** computes S.sum and S over (hk, g), while O's nodes run over hk_g and read
** S[b, hk_g / G, hk_g % G, i, j]: two index spaces for the heads, where a
** kernel has one grid. This rewrite moves such a temporary into its
** readers' space:
**
**   T[.., a, c, ..] = f(a, c)          T[.., x, ..] = f(x / G, x % G)
**   ... T[.., X / G, X % G, ..] ... => ... T[.., X, ..] ...
**
** It is exact when G is a positive dim or literal and c spans exactly G:
** x -> (x / G, x % G) (floor division) is then a bijection from [0, A*G)
** onto [0, A) x [0, G), and a read in bounds has X in [0, A*G). Inside f,
** (x / G) * G + x % G folds back to x, so Q[b, hk*G+g, i, d] becomes
** Q[b, hk_g, i, d]. Only a temporary (never an output) that is read at
** least once, and every time through the same map (the same two dimensions,
** the same G), is rewritten; anything else is left as it is. Temporaries
** are tried from the last node to the first, so that a chain (S.sum read
** only by S) is re-indexed whole.
*/
#include <string.h>

#include "plan.h"

/* x / G and x % G are defined and onto [0, G) only for G > 0: dims are at
** least 1 (checked when sizes are given), literals must be positive. */
static int positive_divisor(const Expr *g)
{
	return g->kind == EX_DIM || (g->kind == EX_INT && g->ival > 0);
}

/* The X of a read T[.., X / G, X % G, ..] at dimensions k and k + 1, or
** NULL when the read does not go through that map. */
static const Expr *fused_arg(const Expr *acc, int k, const Expr *g)
{
	const Expr *q = acc->args[k], *r = acc->args[k + 1];
	if (q->kind != EX_BINOP || q->op != OP_DIV || q->type != VT_INT || r->kind != EX_BINOP ||
	    r->op != OP_MOD || r->type != VT_INT)
		return NULL;
	if (!expr_equal(q->args[1], g) || !expr_equal(r->args[1], g) ||
	    !expr_equal(q->args[0], r->args[0]))
		return NULL;
	return q->args[0];
}

/* What a scan of the cascade found about the reads of one tensor. */
typedef struct Scan {
	const Tensor *t;
	int k;             /* the first of the two dimensions */
	const Expr *g;     /* G */
	int reads, bad;    /* reads through the map; 1 at the first that is not */
	const Node *scope; /* the node being scanned, NULL in a tensor's domain */
	const Expr *first; /* the first read, for the note */
	const Node *first_scope;
	const char *name; /* the first reader's name for X, when X is its index */
} Scan;

/* Counts the reads of s->t in e, and marks the scan bad at a read that does
** not go through the map (reads nested in a subscript included). */
static void scan(Scan *s, const Expr *e)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && e->tensor == s->t) {
		const Expr *x = fused_arg(e, s->k, s->g);
		if (!x) {
			s->bad = 1;
			return;
		}
		if (!s->reads++)
			s->first = e, s->first_scope = s->scope;
		if (!s->name && s->scope && x->kind == EX_INDEX &&
		    x->var < s->scope->nfree + s->scope->nred)
			s->name = s->scope->vars[x->var].name;
	}
	for (int i = 0; i < e->nargs; i++)
		scan(s, e->args[i]);
}

/* Every read of t in the cascade (bodies, filters, presence domains). */
static void scan_all(const Cascade *c, Scan *s)
{
	for (int i = 0; i < c->nodes.n && !s->bad; i++) {
		const Node *n = c->nodes.v[i];
		s->scope = n;
		scan(s, n->body);
		scan(s, n->filter);
	}
	s->scope = NULL;
	for (int i = 0; i < c->tensors.n && !s->bad; i++)
		scan(s, ((const Tensor *)c->tensors.v[i])->domain);
}

/* Replaces each read T[.., X / G, X % G, ..] in e, which the caller owns (a
** fresh copy), by T[.., X, ..]. */
static void fold_reads(Arena *a, Expr *e, const Tensor *t, int k)
{
	if (!e)
		return;
	for (int i = 0; i < e->nargs; i++)
		fold_reads(a, e->args[i], t, k);
	if (e->kind != EX_ACCESS || e->tensor != t)
		return;
	Expr **args = ARENA_ARRAY(a, Expr *, e->nargs);
	int o = 0;
	for (int m = 0; m < e->nargs; m++) {
		if (m == k)
			args[o++] = e->args[k]->args[0];
		else if (m != k + 1)
			args[o++] = e->args[m];
	}
	e->args = args;
	e->nargs = o;
}

/* Reads of t in e, rewritten into a copy; e itself when it reads no t. */
static Expr *reads_folded(Arena *a, Expr *e, const Tensor *t, int k)
{
	Scan s = {.t = t, .k = k, .g = t->shape[k + 1]};
	scan(&s, e);
	if (!s.reads)
		return e;
	Expr *c = expr_copy(a, e);
	fold_reads(a, c, t, k);
	return c;
}

/* (x / G) * G + x % G is x for floor division with G > 0, in either order
** of + and *: what hk*G+g becomes once hk and g are hk_g / G and hk_g % G. */
static Expr *fold_split(Expr *e)
{
	if (e->kind != EX_BINOP || e->op != OP_ADD || e->type != VT_INT)
		return e;
	for (int side = 0; side < 2; side++) {
		Expr *m = e->args[side], *r = e->args[!side];
		if (m->kind != EX_BINOP || m->op != OP_MUL || r->kind != EX_BINOP ||
		    r->op != OP_MOD || !positive_divisor(r->args[1]))
			continue;
		for (int f = 0; f < 2; f++) {
			Expr *q = m->args[f], *g = m->args[!f];
			if (q->kind == EX_BINOP && q->op == OP_DIV && expr_equal(q->args[1], g) &&
			    expr_equal(r->args[1], g) && expr_equal(q->args[0], r->args[0]))
				return q->args[0];
		}
	}
	return e;
}

/* fold_split everywhere in e, bottom-up; e is a fresh copy the caller owns.
** Also the backward's GQA parts (grad_split.c), whose query head is split
** the other way. */
Expr *plan_fold_splits(Expr *e)
{
	if (!e)
		return NULL;
	for (int i = 0; i < e->nargs; i++)
		e->args[i] = plan_fold_splits(e->args[i]);
	return fold_split(e);
}

/* A name for the fused variable that no other variable of d has: the
** readers' own name for it, else "a_c" as the front end spells it. */
static const char *fused_name(Arena *a, const Node *d, int k, const char *want)
{
	const char *name =
	    want ? want : arena_printf(a, "%s_%s", d->vars[k].name, d->vars[k + 1].name);
	for (int clash = 1; clash;) {
		clash = 0;
		for (int v = 0; v < d->nfree + d->nred; v++)
			if (v != k && v != k + 1 && !strcmp(d->vars[v].name, name))
				clash = 1;
		if (clash)
			name = arena_printf(a, "%s'", name);
	}
	return name;
}

/* Moves t's defining node and t itself to the fused index at dimension k:
** variable k becomes x, k + 1 goes away, and inside the node the old
** variables are x / G and x % G. */
static void reindex_def(Arena *a, Tensor *t, int k, const char *name)
{
	Node *d = t->def;
	int nv = d->nfree + d->nred;
	Expr *g = t->shape[k + 1];
	Expr **sub = ARENA_ARRAY(a, Expr *, nv);
	for (int v = 0; v < nv; v++) {
		if (v == k)
			sub[v] = expr_binop(a, OP_DIV, expr_index(a, k), g);
		else if (v == k + 1)
			sub[v] = expr_binop(a, OP_MOD, expr_index(a, k), g);
		else
			sub[v] = expr_index(a, v < k ? v : v - 1);
	}
	IndexVar *vars = ARENA_ARRAY(a, IndexVar, nv);
	for (int v = 0, o = 0; v < nv; v++) {
		if (v == k)
			vars[o++] =
			    (IndexVar){name, expr_binop(a, OP_MUL, t->shape[k], g), d->vars[k].loc};
		else if (v != k + 1)
			vars[o++] = d->vars[v];
	}
	d->body = plan_fold_splits(expr_subst(a, d->body, sub, nv));
	d->filter = plan_fold_splits(expr_subst(a, d->filter, sub, nv));
	d->vars = vars;
	d->nfree--;
	/* the shape array may be the front end's: make a new one */
	Expr **shape = ARENA_ARRAY(a, Expr *, t->rank);
	for (int m = 0, o = 0; m < t->rank; m++) {
		if (m == k)
			shape[o++] = vars[k].extent;
		else if (m != k + 1)
			shape[o++] = t->shape[m];
	}
	t->domain = plan_fold_splits(expr_subst(a, t->domain, sub, t->rank));
	t->shape = shape;
	t->rank--;
}

/* Re-indexes t at the first pair of dimensions where every condition
** holds; returns 1 when it did. */
static int reindex_tensor(Arena *a, Plan *p, Tensor *t)
{
	Cascade *c = p->c;
	Node *d = t->def;
	if (t->kind != TK_TEMP || !d || d->out != t || d->nfree != t->rank)
		return 0;
	for (int k = 0; k + 1 < t->rank; k++) {
		Expr *g = t->shape[k + 1];
		if (!positive_divisor(g) || !expr_equal(d->vars[k + 1].extent, g) ||
		    !expr_equal(d->vars[k].extent, t->shape[k]))
			continue;
		Scan s = {.t = t, .k = k, .g = g};
		scan_all(c, &s);
		if (s.bad || !s.reads)
			continue;
		const char *read = expr_str(a, s.first, s.first_scope);
		const char *old = arena_printf(a, "%s, %s", d->vars[k].name, d->vars[k + 1].name);
		const char *name = fused_name(a, d, k, s.name);
		for (int i = 0; i < c->nodes.n; i++) {
			Node *n = c->nodes.v[i];
			n->body = reads_folded(a, n->body, t, k);
			n->filter = reads_folded(a, n->filter, t, k);
		}
		for (int i = 0; i < c->tensors.n; i++) {
			Tensor *u = c->tensors.v[i];
			u->domain = reads_folded(a, u->domain, t, k);
		}
		reindex_def(a, t, k, name);
		plan_note(
		    p, a, d->loc,
		    "reindex: every read of %s splits one index as x / %s, x %% %s (%s), so %s "
		    "is computed over %s < %s instead of %s",
		    t->name, expr_str(a, g, NULL), expr_str(a, g, NULL), read, t->name, name,
		    expr_str(a, d->vars[k].extent, NULL), old);
		return 1;
	}
	return 0;
}

/* From the last node back: re-indexing a reader is what makes its
** producers' reads go through the map (S.sum is read by S), and a tensor
** with two fused pairs of dimensions is re-indexed once per pair. */
void plan_reindex(Arena *a, Plan *p)
{
	Cascade *c = p->c;
	for (int i = c->nodes.n - 1; i >= 0; i--) {
		Node *d = c->nodes.v[i];
		while (reindex_tensor(a, p, d->out))
			;
	}
}
