/*
** compiler/grad_build.c: what every file of the derivation builds with: the
** backward's tensors and nodes (made as lang/node.c makes the forward's),
** forward expressions remapped onto the backward's tensors, reads swapped,
** filters closed over the domains of what they read, notes for --explain.
*/
#include <stdarg.h>
#include <string.h>

#include "grad_int.h"

void grad_note(Grad *g, const char *fmt, ...)
{
	if (!g->notes)
		return;
	va_list ap;
	va_start(ap, fmt);
	ptrvec_push(g->a, g->notes, arena_vprintf(g->a, fmt, ap));
	va_end(ap);
}

/* A backward tensor shaped like `like` (NULL: shape filled by its node). */
Tensor *grad_new_tensor(Grad *g, const char *name, TensorKind k, const Tensor *like)
{
	Tensor *t = ARENA_NEW(g->a, Tensor);
	t->name = name, t->kind = k, t->dtype = DT_F32, t->type = VT_FLOAT;
	t->id = g->made.n, t->loc = NOLOC;
	if (like) {
		t->rank = like->rank;
		t->shape = ARENA_ARRAY(g->a, Expr *, like->rank + 1);
		for (int i = 0; i < like->rank; i++)
			t->shape[i] = expr_copy(g->a, like->shape[i]);
		t->loc = like->loc;
	}
	ptrvec_push(g->a, &g->made, t);
	return t;
}

/* A node as lang/node.c makes them: the output's domain is the part of the
** filter over free indices only. */
Node *grad_new_node(Grad *g, Tensor *out, const IndexVar *vars, int nfree, int nred, RedOp red,
		    Expr *body, Expr *filter, SrcLoc loc, const char *origin)
{
	Node *n = ARENA_NEW(g->a, Node);
	n->id = g->b->nodes.n;
	n->out = out, n->nfree = nfree, n->nred = nred, n->red = red;
	n->vars = ARENA_ARRAY(g->a, IndexVar, nfree + nred + 1);
	memcpy(n->vars, vars, sizeof(IndexVar) * (size_t)(nfree + nred));
	n->body = body, n->filter = filter, n->loc = loc, n->origin = origin;
	PtrVec conj = {0};
	grad_conjuncts(g, &conj, filter);
	unsigned long long freemask = nfree >= 64 ? ~0ull : (1ull << nfree) - 1;
	out->domain = NULL;
	for (int i = 0; i < conj.n; i++)
		if ((expr_vars(conj.v[i]) & ~freemask) == 0)
			out->domain = expr_and(g->a, out->domain, conj.v[i]);
	out->def = n;
	if (!out->shape)
		out->shape = ARENA_ARRAY(g->a, Expr *, nfree + 1);
	out->rank = nfree;
	for (int k = 0; k < nfree; k++)
		out->shape[k] = expr_copy(g->a, vars[k].extent);
	ptrvec_push(g->a, &g->b->nodes, n);
	return n;
}

Expr *grad_remap(Grad *g, const Expr *e)
{
	if (!e)
		return NULL;
	Expr *c = ARENA_NEW(g->a, Expr);
	*c = *e;
	const Tensor *t = e->tensor;
	if (t && t->id < g->f->tensors.n && g->f->tensors.v[t->id] == t)
		c->tensor = g->val[t->id];
	if (e->nargs) {
		c->args = ARENA_ARRAY(g->a, Expr *, e->nargs);
		for (int i = 0; i < e->nargs; i++)
			c->args[i] = grad_remap(g, e->args[i]);
	}
	return c;
}

Expr *grad_read_at(Grad *g, Tensor *t, const int *vars)
{
	Expr *r = expr_new(g->a, EX_ACCESS, t->type, NOLOC);
	r->tensor = t, r->nargs = t->rank;
	r->args = ARENA_ARRAY(g->a, Expr *, t->rank + 1);
	for (int k = 0; k < t->rank; k++)
		r->args[k] = expr_index(g->a, vars ? vars[k] : k);
	return r;
}

int grad_is_output(const Grad *g, const Tensor *t)
{
	return t->kind == TK_OUT && g->val[t->id] && g->val[t->id]->kind == TK_IN;
}

Expr *grad_swap_reads(Grad *g, Expr *e, const Tensor *from, Tensor *to, int *changed)
{
	if (!e)
		return NULL;
	if (e->kind == EX_ACCESS && e->tensor == from) {
		*changed = 1;
		if (!to)
			return gx_num(g, 1);
		Expr *c = expr_copy(g->a, e);
		c->tensor = to;
		return c;
	}
	for (int i = 0; i < e->nargs; i++)
		e->args[i] = grad_swap_reads(g, e->args[i], from, to, changed);
	return e;
}

void grad_conjuncts(Grad *g, PtrVec *v, Expr *f)
{
	if (!f)
		return;
	if (f->kind == EX_BINOP && f->op == OP_AND) {
		grad_conjuncts(g, v, f->args[0]);
		grad_conjuncts(g, v, f->args[1]);
		return;
	}
	if (f->kind == EX_BOOL && f->ival)
		return;
	for (int i = 0; i < v->n; i++)
		if (expr_equal(v->v[i], f))
			return;
	ptrvec_push(g->a, v, f);
}

/* Every read in e, for closing a filter over the domains of what it reads. */
static void reads(Grad *g, Expr *e, PtrVec *out)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS)
		ptrvec_push(g->a, out, e);
	for (int i = 0; i < e->nargs; i++)
		reads(g, e->args[i], out);
}

/* The cascade's rule (cascade.h): a node never reads a tensor outside its
** domain, so the filter takes the domain of each read, substituted,
** transitively through the conjuncts it adds. */
Expr *grad_close_filter(Grad *g, Expr *body, Expr *f)
{
	PtrVec conj = {0}, work = {0}, acc = {0};
	grad_conjuncts(g, &conj, f);
	ptrvec_push(g->a, &work, body);
	for (int i = 0; i < conj.n; i++)
		ptrvec_push(g->a, &work, conj.v[i]);
	for (int w = 0; w < work.n; w++) {
		acc.n = 0;
		reads(g, work.v[w], &acc);
		for (int i = 0; i < acc.n; i++) {
			Expr *r = acc.v[i];
			if (!r->tensor->domain)
				continue;
			int before = conj.n;
			grad_conjuncts(g, &conj,
				       expr_subst(g->a, r->tensor->domain, r->args, r->nargs));
			for (int k = before; k < conj.n; k++)
				ptrvec_push(g->a, &work, conj.v[k]);
		}
	}
	Expr *r = NULL;
	for (int i = 0; i < conj.n; i++)
		r = expr_and(g->a, r, conj.v[i]);
	return r;
}
