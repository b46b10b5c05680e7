/*
** lang/retain.c: moving a block's cascade out of its scratch arena.
** Semantic analysis allocates far more than the cascade it returns (symbols,
** the AST's strings, typed expressions that hoisting copies, vectors), so each
** block is analysed in an arena of its own, and only this copy of the result
** stays in the program's arena: memory grows by the size of the cascades, not
** by the work of building them. The copy is exact: every object reachable
** from the cascade is copied once, so whatever was shared stays shared (later
** passes rewrite expressions in place). Tensors and nodes are copied from the
** cascade's lists, not by following a tensor to the node that defines it, so
** the recursion is as deep as one expression, not as a chain of statements.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"

/* Old pointer -> its copy: open addressing, grown at half load. */
typedef struct Memo {
	const void **key;
	void **val;
	size_t n, cap;
	Arena *a;
} Memo;

static size_t slot(const Memo *m, const void *p)
{
	size_t h = (size_t)((uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 7;
	size_t i = h & (m->cap - 1);
	while (m->key[i] && m->key[i] != p)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void *oom(void)
{
	fprintf(stderr, "attnc: out of memory\n");
	abort();
}

static void memo_put(Memo *m, const void *p, void *copy)
{
	if (2 * (m->n + 1) > m->cap) {
		Memo g = {0};
		g.cap = m->cap ? 2 * m->cap : 256;
		g.key = calloc(g.cap, sizeof *g.key);
		g.val = calloc(g.cap, sizeof *g.val);
		if (!g.key || !g.val)
			oom();
		for (size_t i = 0; i < m->cap; i++) {
			if (m->key[i]) {
				size_t j = slot(&g, m->key[i]);
				g.key[j] = m->key[i], g.val[j] = m->val[i];
			}
		}
		free(m->key), free(m->val);
		m->key = g.key, m->val = g.val, m->cap = g.cap;
	}
	size_t i = slot(m, p);
	m->key[i] = p, m->val[i] = copy;
	m->n++;
}

static void *memo_get(const Memo *m, const void *p)
{
	return m->cap ? m->val[slot(m, p)] : NULL;
}

/* The copy of n bytes at p, made once. */
static void *dup(Memo *m, const void *p, size_t n)
{
	if (!p)
		return NULL;
	void *c = memo_get(m, p);
	if (!c) {
		c = arena_alloc(m->a, n ? n : 1);
		memcpy(c, p, n);
		memo_put(m, p, c);
	}
	return c;
}

static const char *str(Memo *m, const char *s)
{
	return s ? dup(m, s, strlen(s) + 1) : NULL;
}

static Dim *dim(Memo *m, const Dim *d);
static Param *param(Memo *m, const Param *p);
static Tensor *tensor(Memo *m, const Tensor *t);

static Expr *expr(Memo *m, const Expr *e)
{
	if (!e)
		return NULL;
	Expr *c = memo_get(m, e);
	if (c)
		return c;
	c = dup(m, e, sizeof *e);
	c->dim = dim(m, e->dim), c->param = param(m, e->param), c->tensor = tensor(m, e->tensor);
	if (e->args) {
		Expr **old = e->args;
		int fresh = !memo_get(m, old);
		c->args = dup(m, old, sizeof *old * (size_t)(e->nargs ? e->nargs : 1));
		for (int i = 0; fresh && i < e->nargs; i++)
			c->args[i] = expr(m, old[i]);
	}
	return c;
}

static Dim *dim(Memo *m, const Dim *d)
{
	if (!d || memo_get(m, d))
		return memo_get(m, d);
	Dim *c = dup(m, d, sizeof *d);
	c->name = str(m, d->name);
	return c;
}

static Param *param(Memo *m, const Param *p)
{
	if (!p || memo_get(m, p))
		return memo_get(m, p);
	Param *c = dup(m, p, sizeof *p);
	c->name = str(m, p->name);
	c->deflt = expr(m, p->deflt);
	return c;
}

static Node *node(Memo *m, const Node *n);

static Tensor *tensor(Memo *m, const Tensor *t)
{
	if (!t || memo_get(m, t))
		return memo_get(m, t);
	Tensor *c = dup(m, t, sizeof *t);
	c->name = str(m, t->name);
	if (t->shape && !memo_get(m, t->shape)) {
		c->shape = dup(m, t->shape, sizeof *t->shape * (size_t)(t->rank ? t->rank : 1));
		for (int k = 0; k < t->rank; k++)
			c->shape[k] = expr(m, t->shape[k]);
	} else {
		c->shape = memo_get(m, t->shape);
	}
	c->domain = expr(m, t->domain);
	if (t->pack) {
		Pack *p = dup(m, t->pack, sizeof *t->pack);
		p->shape = dup(m, t->pack->shape, sizeof(Expr *) * (size_t)t->pack->rank);
		p->at = dup(m, t->pack->at, sizeof(Expr *) * (size_t)t->pack->rank);
		for (int k = 0; k < p->rank; k++)
			p->shape[k] = expr(m, t->pack->shape[k]),
			p->at[k] = expr(m, t->pack->at[k]);
		p->table = tensor(m, t->pack->table);
		c->pack = p;
	}
	c->def = NULL; /* set by the copy of the node (retain_cascade) */
	return c;
}

static Node *node(Memo *m, const Node *n)
{
	if (!n || memo_get(m, n))
		return memo_get(m, n);
	Node *c = dup(m, n, sizeof *n);
	c->out = tensor(m, n->out);
	int nv = n->nfree + n->nred;
	if (n->vars && !memo_get(m, n->vars)) {
		c->vars = dup(m, n->vars, sizeof *n->vars * (size_t)(nv ? nv : 1));
		for (int k = 0; k < nv; k++) {
			c->vars[k].name = str(m, n->vars[k].name);
			c->vars[k].extent = expr(m, n->vars[k].extent);
		}
	} else {
		c->vars = memo_get(m, n->vars);
	}
	c->body = expr(m, n->body);
	c->filter = expr(m, n->filter);
	c->origin = str(m, n->origin);
	return c;
}

/* The vector's elements copied by f, in a vector of the same capacity. */
static void vec(Memo *m, PtrVec *dst, const PtrVec *src, void *(*f)(Memo *, const void *))
{
	*dst = *src;
	if (!src->v)
		return;
	dst->v = arena_alloc(m->a, sizeof *dst->v * (size_t)src->cap);
	for (int i = 0; i < src->n; i++)
		dst->v[i] = f(m, src->v[i]);
}

static void *vdim(Memo *m, const void *p)
{
	return dim(m, p);
}
static void *vparam(Memo *m, const void *p)
{
	return param(m, p);
}
static void *vtensor(Memo *m, const void *p)
{
	return tensor(m, p);
}
static void *vnode(Memo *m, const void *p)
{
	return node(m, p);
}

Cascade *retain_cascade(Arena *a, const Cascade *c)
{
	Memo m = {0};
	m.a = a;
	Cascade *r = ARENA_NEW(a, Cascade);
	*r = *c;
	r->name = str(&m, c->name);
	vec(&m, &r->dims, &c->dims, vdim);
	vec(&m, &r->params, &c->params, vparam);
	vec(&m, &r->tensors, &c->tensors, vtensor);
	vec(&m, &r->nodes, &c->nodes, vnode);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		((Tensor *)r->tensors.v[i])->def = node(&m, t->def);
	}
	free(m.key), free(m.val);
	return r;
}
