/*
** compiler/cascade_clone.c: deep copies of a cascade, for the rewriter.
*/
#include <string.h>

#include "plan.h"

/* Copies an expression, pointing its tensor reads at the copies. */
static Expr *remap(Arena *a, const Expr *e, Tensor **map)
{
	if (!e)
		return NULL;
	Expr *c = ARENA_NEW(a, Expr);
	*c = *e;
	if (e->tensor)
		c->tensor = map[e->tensor->id];
	if (e->nargs) {
		c->args = ARENA_ARRAY(a, Expr *, e->nargs);
		for (int i = 0; i < e->nargs; i++)
			c->args[i] = remap(a, e->args[i], map);
	}
	return c;
}

Cascade *cascade_clone(Arena *a, const Cascade *c)
{
	Cascade *n = ARENA_NEW(a, Cascade);
	n->name = c->name, n->loc = c->loc, n->rows64 = c->rows64;
	n->first_rows_longest = c->first_rows_longest, n->value_last = c->value_last;
	n->pass_of = c->pass_of, n->pass = c->pass, n->prologue = c->prologue;
	n->nties = c->nties, n->ties = c->ties;   /* tensor ids are kept */
	n->dims = c->dims, n->params = c->params; /* shared: never rewritten */
	Tensor **map = ARENA_ARRAY(a, Tensor *, c->tensors.n + 1);
	for (int i = 0; i < c->tensors.n; i++) {
		Tensor *t = ARENA_NEW(a, Tensor);
		*t = *(Tensor *)c->tensors.v[i];
		t->def = NULL;
		map[i] = t;
		ptrvec_push(a, &n->tensors, t);
	}
	for (int i = 0; i < c->tensors.n; i++) {
		map[i]->domain = remap(a, map[i]->domain, map);
		const Pack *o = map[i]->pack;
		if (!o)
			continue;
		Pack *p = ARENA_NEW(a, Pack);
		*p = *o;
		p->at = ARENA_ARRAY(a, Expr *, o->rank);
		for (int k = 0; k < o->rank; k++)
			p->at[k] = remap(a, o->at[k], map);
		p->table = map[o->table->id];
		map[i]->pack = p;
	}
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *o = c->nodes.v[i];
		Node *x = ARENA_NEW(a, Node);
		*x = *o;
		x->out = map[o->out->id];
		x->out->def = x;
		x->vars = ARENA_ARRAY(a, IndexVar, o->nfree + o->nred + 1);
		memcpy(x->vars, o->vars, sizeof(IndexVar) * (size_t)(o->nfree + o->nred));
		x->body = remap(a, o->body, map);
		x->filter = remap(a, o->filter, map);
		ptrvec_push(a, &n->nodes, x);
	}
	return n;
}
