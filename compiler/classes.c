/*
** compiler/classes.c: logical indices of a cascade.
** Each node has its own index variables; two variables are the same
** logical index when they subscript the same tensor dimension as a plain
** index (union-find over (tensor, dimension) pairs). An input dimension
** that one node subscripts with two different indices (doc[b, i] ==
** doc[b, j], or X[b, i, d] * X[b, j, d]) is shared by both and joins none. The streamed index is
** the one a reduction removes while reading it from a temporary: the KV
** position j of attention, which flows through S, P, ... into the final
** contraction, unlike a head dimension d that is contracted from inputs.
*/
#include <string.h>

#include "plan.h"

typedef struct UF {
	int *parent;
	int n;
} UF;

static int uf_find(UF *u, int x)
{
	while (u->parent[x] != x)
		x = u->parent[x] = u->parent[u->parent[x]];
	return x;
}

static void uf_union(UF *u, int a, int b)
{
	a = uf_find(u, a), b = uf_find(u, b);
	if (a != b)
		u->parent[a > b ? a : b] = a < b ? a : b;
}

/* Notes which variable subscripts each input dimension in one node
** (-2 once two different ones do). */
static void input_uses(const Expr *e, const int *off, int *user)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && !e->tensor->def)
		for (int m = 0; m < e->nargs; m++) {
			int *u = &user[off[e->tensor->id] + m];
			int v = e->args[m]->kind == EX_INDEX ? e->args[m]->var : -2;
			*u = *u == -1 ? v : *u == v ? v : -2;
		}
	for (int i = 0; i < e->nargs; i++)
		input_uses(e->args[i], off, user);
}

/* Records pair[var] for every plain-index use of a node variable. */
static void bind_uses(UF *u, const int *off, const Expr *e, int *first, const int *user)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS) {
		for (int m = 0; m < e->nargs; m++) {
			const Expr *x = e->args[m];
			int pair = off[e->tensor->id] + m;
			if (x->kind != EX_INDEX || (!e->tensor->def && user[pair] != x->var))
				continue;
			if (first[x->var] < 0)
				first[x->var] = pair;
			else
				uf_union(u, first[x->var], pair);
		}
	}
	for (int i = 0; i < e->nargs; i++)
		bind_uses(u, off, e->args[i], first, user);
}

/* Whether expression e reads a temporary (or an output computed in the
** cascade) whose node thru[] marks. */
static int reads_marked(const Expr *e, const char *thru)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor->def && thru[e->tensor->def->id])
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_marked(e->args[i], thru))
			return 1;
	return 0;
}

/* A reduced variable that subscripts a temporary (or an output computed in
** the cascade) marks its class as a candidate stream: 2 where that
** temporary is computed through a reduction (thru[]: the scores), 1 where
** it is a map of the inputs alone (a feature map's elu(Q) + 1, read over
** the head dim d: linear attention's d would otherwise win the count below
** and be streamed, with N x N state). */
static int reads_temp_with(const Expr *e, int var, const char *thru)
{
	if (!e)
		return 0;
	int r = 0;
	if (e->kind == EX_ACCESS && e->tensor->def)
		for (int m = 0; m < e->nargs; m++)
			if (e->args[m]->kind == EX_INDEX && e->args[m]->var == var)
				r = thru[e->tensor->def->id] ? 2 : 1;
	for (int i = 0; i < e->nargs && r < 2; i++) {
		int x = reads_temp_with(e->args[i], var, thru);
		r = x > r ? x : r;
	}
	return r;
}

void plan_classes(Arena *a, Plan *p)
{
	Cascade *c = p->c;
	int *off = ARENA_ARRAY(a, int, c->tensors.n + 1), npairs = 0;
	for (int i = 0; i < c->tensors.n; i++) {
		off[i] = npairs;
		npairs += ((Tensor *)c->tensors.v[i])->rank;
	}
	UF u = {ARENA_ARRAY(a, int, npairs + 1), npairs};
	for (int i = 0; i < npairs; i++)
		u.parent[i] = i;
	int **first = ARENA_ARRAY(a, int *, c->nodes.n + 1);
	int *user = ARENA_ARRAY(a, int, npairs + 1);
	for (int ni = 0; ni < c->nodes.n; ni++) {
		Node *n = c->nodes.v[ni];
		int nv = n->nfree + n->nred;
		first[ni] = ARENA_ARRAY(a, int, nv + 1);
		for (int v = 0; v < nv; v++)
			first[ni][v] = v < n->nfree ? off[n->out->id] + v : -1;
		for (int k = 0; k < npairs; k++)
			user[k] = -1;
		input_uses(n->body, off, user);
		input_uses(n->filter, off, user);
		bind_uses(&u, off, n->body, first[ni], user);
		bind_uses(&u, off, n->filter, first[ni], user);
	}
	for (int k = 0; k < c->nties; k++) {
		const int *t = c->ties + 4 * k;
		uf_union(&u, off[t[0]] + t[1], off[t[2]] + t[3]);
	}
	/* number the classes: one per root that some variable uses, plus one
	** per variable that subscripts nothing plainly */
	int *cls_of_root = ARENA_ARRAY(a, int, npairs + 1);
	for (int i = 0; i < npairs; i++)
		cls_of_root[i] = -1;
	int cap = npairs + 64;
	for (int ni = 0; ni < c->nodes.n; ni++) {
		Node *n = c->nodes.v[ni];
		cap += n->nfree + n->nred;
	}
	p->classes = ARENA_ARRAY(a, IndexClass, cap);
	p->cls = ARENA_ARRAY(a, int *, c->nodes.n + 1);
	p->nclasses = 0;
	for (int ni = 0; ni < c->nodes.n; ni++) {
		Node *n = c->nodes.v[ni];
		int nv = n->nfree + n->nred;
		p->cls[ni] = ARENA_ARRAY(a, int, nv + 1);
		for (int v = 0; v < nv; v++) {
			int k;
			if (first[ni][v] >= 0) {
				int r = uf_find(&u, first[ni][v]);
				if (cls_of_root[r] < 0) {
					cls_of_root[r] = p->nclasses++;
					IndexClass *ic = &p->classes[cls_of_root[r]];
					ic->name = n->vars[v].name, ic->extent = n->vars[v].extent;
				}
				k = cls_of_root[r];
			} else {
				k = p->nclasses++;
				p->classes[k].name = n->vars[v].name;
				p->classes[k].extent = n->vars[v].extent;
			}
			p->cls[ni][v] = k;
		}
	}
	/* the stream: the candidate class that the most nodes carry freely */
	/* thru[i]: node i's result is computed through a reduction, its own or
	** one it reads (S = sum[d](Q K) is, a feature map elu(Q) + 1 is not: a
	** map of the inputs alone is an input expression written apart, like
	** float(Q)); the nodes are in topological order */
	char *thru = ARENA_ARRAY(a, char, c->nodes.n + 1);
	for (int ni = 0; ni < c->nodes.n; ni++) {
		const Node *n = c->nodes.v[ni];
		thru[ni] = n->nred || reads_marked(n->body, thru) || reads_marked(n->filter, thru);
	}
	int *cand = ARENA_ARRAY(a, int, p->nclasses + 1);
	for (int ni = 0; ni < c->nodes.n; ni++) {
		Node *n = c->nodes.v[ni];
		for (int v = n->nfree; v < n->nfree + n->nred && !n->out->added_to; v++) {
			int r = reads_temp_with(n->body, v, thru), *x = &cand[p->cls[ni][v]];
			*x = r > *x ? r : *x;
		}
	}
	/* candidates that read a reduction's result first, then the others */
	int tier = 0;
	for (int k = 0; k < p->nclasses; k++)
		tier = cand[k] > tier ? cand[k] : tier;
	int best = -1, bestn = 0;
	for (int k = 0; k < p->nclasses; k++) {
		if (!cand[k] || cand[k] < tier)
			continue;
		int cnt = 1;
		for (int ni = 0; ni < c->nodes.n; ni++) {
			Node *n = c->nodes.v[ni];
			for (int v = 0; v < n->nfree; v++)
				cnt += p->cls[ni][v] == k;
		}
		if (cnt > bestn)
			best = k, bestn = cnt;
	}
	p->stream = best;
	if (best >= 0)
		p->classes[best].stream = 1;
}

/* The one rule of what an index is to a kernel: the streamed index (the
** keys), the tiled grid index (the query rows), another grid index, or
** none of those (a contracted or value index). The shape recognition, the
** mask kinds and both back ends' expression code ask it. */
IndexKind plan_index_kind(const Plan *p, int node, int v)
{
	const IndexClass *ic = &p->classes[p->cls[node][v]];
	if (ic->stream)
		return IDX_KEY;
	if (ic->qtile)
		return IDX_QUERY;
	return ic->grid ? IDX_GRID : IDX_OTHER;
}

int plan_node_class(const Plan *p, int node, int cls)
{
	const Node *n = p->c->nodes.v[node];
	int m = 0;
	for (int v = 0; v < n->nfree + n->nred; v++)
		if (p->cls[node][v] == cls)
			m |= v < n->nfree ? 1 : 2;
	return m;
}

int plan_reads_class(const Plan *p, int node, const Expr *e, int cls)
{
	unsigned long long vars = expr_vars(e);
	for (int v = 0; v < 64; v++)
		if ((vars >> v & 1) && p->cls[node][v] == cls)
			return 1;
	return 0;
}
