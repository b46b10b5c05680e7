/*
** lang/node.c: building the cascade's nodes from typed expressions.
**
** A statement becomes one node whose free indices are its left-hand side
** (lang/lower.c). A reduction nested inside an expression is hoisted into a
** node of its own whose result is a temporary tensor over the indices it
** uses (lang/sema_expr.c). Every node inherits the presence domains of the
** tensors it reads, so `where` masks propagate to all consumers.
*/
#include <string.h>

#include "sema.h"

/* The storage type of a temporary follows its value type: bool and int
** values are kept exactly, everything else is f32. */
DType node_dtype(VType t)
{
	return t == VT_BOOL ? DT_BOOL : t == VT_INT ? DT_I32 : DT_F32;
}

/* Temporaries are named after the statement that made them, e.g. "S.sum",
** "O.softmax.max", with a number when a statement makes several: the k-th
** of a role gets k from 2 on. Only this function makes names with a dot and
** a statement's name is unique in its block, so counting per role gives the
** first free name without searching the cascade, which made a statement
** of thousands of reductions take cubic time. */
static const char *temp_name(Sema *s, const char *role)
{
	Stmt *st = s->st;
	const char *base = st->item->name;
	int r = 0;
	while (r < st->nroles && strcmp(st->roles[r], role))
		r++;
	if (r == st->nroles && r < (int)(sizeof st->roles / sizeof *st->roles))
		st->roles[st->nroles++] = role;
	int k = r < st->nroles ? ++st->nmade[r] : 0;
	if (k > 1)
		return arena_printf(s->a, "%s.%s%d", base, role, k);
	const char *name = arena_printf(s->a, "%s.%s", base, role);
	/* the search, only for a role past the table (never in practice) */
	for (int n = 2; !k && cascade_tensor(s->c, name); n++)
		name = arena_printf(s->a, "%s.%s%d", base, role, n);
	return name;
}

/* A temporary of the given rank; its shape is filled by the node that
** defines it. */
static Tensor *make_temp(Sema *s, const char *name, VType t, int rank, SrcLoc loc)
{
	Tensor *tn = ARENA_NEW(s->a, Tensor);
	tn->name = name, tn->kind = TK_TEMP, tn->type = t, tn->dtype = node_dtype(t);
	tn->rank = rank, tn->loc = loc, tn->id = s->c->tensors.n;
	tn->shape = ARENA_ARRAY(s->a, Expr *, rank ? rank : 1);
	ptrvec_push(s->a, &s->c->tensors, tn);
	return tn;
}

/* Adds the conjuncts of e to v, flattening && and dropping duplicates. */
void node_add_conj(Sema *s, PtrVec *v, Expr *e)
{
	if (!e)
		return;
	if (e->kind == EX_BINOP && e->op == OP_AND) {
		node_add_conj(s, v, e->args[0]);
		node_add_conj(s, v, e->args[1]);
		return;
	}
	if (e->kind == EX_BOOL && e->ival)
		return;
	for (int i = 0; i < v->n; i++)
		if (expr_equal(v->v[i], e))
			return;
	ptrvec_push(s->a, v, e);
}

/* Every tensor read in e, for closing a filter over their domains. */
static void collect_accesses(Sema *s, Expr *e, PtrVec *out)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS)
		ptrvec_push(s->a, out, e);
	for (int i = 0; i < e->nargs; i++)
		collect_accesses(s, e->args[i], out);
}

/* The conjunction of v, or of the conjuncts that mention only variables in
** `within` when restrict_vars is set (a tensor's domain is over its own
** indices). */
static Expr *conj_all(Sema *s, PtrVec *v, unsigned long long within, int restrict_vars)
{
	Expr *r = NULL;
	for (int i = 0; i < v->n; i++) {
		Expr *c = v->v[i];
		if (!restrict_vars || (expr_vars(c) & ~within) == 0)
			r = expr_and(s->a, r, c);
	}
	return r;
}

/* Adds to conj the domains of every tensor read in body or in conj's own
** conjuncts, transitively through the conjuncts added: a node never reads
** a point its producer left absent. */
static void close_domains(Sema *s, PtrVec *conj, Expr *body)
{
	PtrVec work = {0}, acc = {0};
	ptrvec_push(s->a, &work, body);
	for (int i = 0; i < conj->n; i++)
		ptrvec_push(s->a, &work, conj->v[i]);
	for (int w = 0; w < work.n; w++) {
		acc.n = 0;
		collect_accesses(s, work.v[w], &acc);
		for (int i = 0; i < acc.n; i++) {
			Expr *a = acc.v[i];
			if (!a->tensor->domain)
				continue;
			int before = conj->n;
			node_add_conj(s, conj,
				      expr_subst(s->a, a->tensor->domain, a->args, a->nargs));
			for (int k = before; k < conj->n; k++)
				ptrvec_push(s->a, &work, conj->v[k]);
		}
	}
}

/* Makes the node, closing its filter over the domains of every tensor it
** reads, and gives the output the part of the filter that mentions free
** indices only. `own` is a reduction's own `where`: it filters the reduced
** points and nothing else, so a conjunct of it over free indices only makes
** the reduction empty at those points (its identity) but not absent
** (docs/language.md 7.1); it joins the filter, never the domain. */
Node *node_make(Sema *s, Tensor *out, const IndexVar *vars, int nfree, int nred, RedOp red,
		Expr *body, Expr *filter, Expr *own, SrcLoc loc, const char *origin)
{
	PtrVec conj = {0}, dom = {0};
	node_add_conj(s, &conj, filter);
	node_add_conj(s, &conj, own);
	close_domains(s, &conj, body);
	if (own) {
		node_add_conj(s, &dom, filter);
		close_domains(s, &dom, body);
	}
	Node *n = ARENA_NEW(s->a, Node);
	n->id = s->c->nodes.n;
	n->out = out, n->nfree = nfree, n->nred = nred, n->red = red;
	n->vars = ARENA_ARRAY(s->a, IndexVar, nfree + nred ? nfree + nred : 1);
	memcpy(n->vars, vars, sizeof(IndexVar) * (size_t)(nfree + nred));
	n->body = body;
	n->filter = conj_all(s, &conj, 0, 0);
	n->loc = loc, n->origin = origin;
	unsigned long long freemask = nfree >= 64 ? ~0ull : (1ull << nfree) - 1;
	out->domain = conj_all(s, own ? &dom : &conj, freemask, 1);
	out->def = n;
	for (int k = 0; k < nfree; k++)
		out->shape[k] = vars[k].extent;
	ptrvec_push(s->a, &s->c->nodes, n);
	return n;
}

/*
** Hoists body (over the space ext, whose first nouter variables belong to the
** enclosing expression and the rest are reduced here) into its own node and
** returns the read of its result in the enclosing space. The node's free
** indices are the enclosing ones the body uses (plus `keep`, when >= 0).
** Conjuncts of the statement's `where` over those indices are pushed down:
** the consumer never reads outside them, and the compiler can use them.
*/
Expr *node_hoist(Sema *s, const Space *ext, int nouter, RedOp red, Expr *body, Expr *filter,
		 int keep, const char *role, SrcLoc loc)
{
	Stmt *st = s->st;
	unsigned long long used = expr_vars(body) | expr_vars(filter);
	if (keep >= 0)
		used |= 1ull << keep;
	int freev[MAX_VARS], nfree = 0;
	Expr *sub[MAX_VARS] = {0};
	for (int k = 0; k < nouter; k++)
		if (used & (1ull << k))
			freev[nfree++] = k;
	unsigned long long freemask = 0;
	for (int i = 0; i < nfree; i++)
		freemask |= 1ull << freev[i];
	/* a reduction's own where filters it only (node_make); the where of an
	** element-wise value (softmax's exponentials) is its domain */
	Expr *own = red == RED_NONE ? NULL : filter;
	if (own)
		filter = NULL;
	for (int i = 0; i < st->npush; i++)
		if ((expr_vars(st->push[i]) & ~freemask) == 0)
			filter = expr_and(s->a, filter, st->push[i]);
	IndexVar vars[MAX_VARS];
	for (int i = 0; i < nfree; i++) {
		vars[i] = ext->v[freev[i]];
		sub[freev[i]] = expr_index(s->a, i);
	}
	int nred = ext->n - nouter;
	for (int k = 0; k < nred; k++) {
		vars[nfree + k] = ext->v[nouter + k];
		sub[nouter + k] = expr_index(s->a, nfree + k);
	}
	VType t = red == RED_NONE ? body->type : VT_FLOAT;
	Tensor *tn = make_temp(s, temp_name(s, role), t, nfree, loc);
	node_make(s, tn, vars, nfree, nred, red, expr_subst(s->a, body, sub, ext->n),
		  expr_subst(s->a, filter, sub, ext->n), expr_subst(s->a, own, sub, ext->n), loc,
		  role);
	Expr *r = expr_new(s->a, EX_ACCESS, t, loc);
	r->tensor = tn;
	r->nargs = nfree;
	r->args = ARENA_ARRAY(s->a, Expr *, nfree ? nfree : 1);
	for (int i = 0; i < nfree; i++)
		r->args[i] = expr_index(s->a, freev[i]);
	return r;
}
