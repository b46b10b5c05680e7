/*
** lang/lower.c: statements -> extended-Einsum nodes of the cascade IR.
**
** A statement becomes one node whose free indices are its left-hand side.
** A reduction at the top of the right-hand side is that node's reduction; a
** reduction nested inside an expression is hoisted into a node of its own
** whose result is a temporary tensor over the indices it uses. softmax and
** logsumexp are desugared into max, exp, sum (and a division or a log), the
** textbook three-pass form; finding the one-pass form is the compiler's job,
** not the front end's. Every node inherits the presence domains of the
** tensors it reads, so `where` masks propagate to all consumers.
*/
#include <string.h>

#include "sema.h"

RedOp lower_redop(const char *name)
{
	if (!strcmp(name, "sum"))
		return RED_SUM;
	if (!strcmp(name, "max"))
		return RED_MAX;
	if (!strcmp(name, "min"))
		return RED_MIN;
	if (!strcmp(name, "prod"))
		return RED_PROD;
	return RED_NONE;
}

static DType dtype_of(VType t)
{
	return t == VT_BOOL ? DT_BOOL : t == VT_INT ? DT_I32 : DT_F32;
}

/* Temporaries are named after the statement that made them, e.g. "S.sum",
** "O.softmax.max", with a number when a statement makes several. */
static const char *temp_name(Sema *s, const char *role)
{
	const char *base = s->st->item->name;
	const char *name = arena_printf(s->a, "%s.%s", base, role);
	for (int n = 2; cascade_tensor(s->c, name); n++)
		name = arena_printf(s->a, "%s.%s%d", base, role, n);
	return name;
}

static Tensor *make_temp(Sema *s, const char *name, VType t, int rank, SrcLoc loc)
{
	Tensor *tn = ARENA_NEW(s->a, Tensor);
	tn->name = name, tn->kind = TK_TEMP, tn->type = t, tn->dtype = dtype_of(t);
	tn->rank = rank, tn->loc = loc, tn->id = s->c->tensors.n;
	tn->shape = ARENA_ARRAY(s->a, Expr *, rank ? rank : 1);
	ptrvec_push(s->a, &s->c->tensors, tn);
	return tn;
}

/* Adds the conjuncts of e to v, flattening && and dropping duplicates. */
static void add_conj(Sema *s, PtrVec *v, Expr *e)
{
	if (!e)
		return;
	if (e->kind == EX_BINOP && e->op == OP_AND) {
		add_conj(s, v, e->args[0]);
		add_conj(s, v, e->args[1]);
		return;
	}
	if (e->kind == EX_BOOL && e->ival)
		return;
	for (int i = 0; i < v->n; i++)
		if (expr_equal(v->v[i], e))
			return;
	ptrvec_push(s->a, v, e);
}

static void collect_accesses(Sema *s, Expr *e, PtrVec *out)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS)
		ptrvec_push(s->a, out, e);
	for (int i = 0; i < e->nargs; i++)
		collect_accesses(s, e->args[i], out);
}

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

/* Makes the node, closing its filter over the domains of every tensor it
** reads (transitively through the conjuncts added), and gives the output
** the part of the filter that mentions free indices only. */
static Node *make_node(Sema *s, Tensor *out, const IndexVar *vars, int nfree, int nred, RedOp red,
		       Expr *body, Expr *filter, SrcLoc loc, const char *origin)
{
	PtrVec conj = {0}, work = {0}, acc = {0};
	add_conj(s, &conj, filter);
	ptrvec_push(s->a, &work, body);
	for (int i = 0; i < conj.n; i++)
		ptrvec_push(s->a, &work, conj.v[i]);
	for (int w = 0; w < work.n; w++) {
		acc.n = 0;
		collect_accesses(s, work.v[w], &acc);
		for (int i = 0; i < acc.n; i++) {
			Expr *a = acc.v[i];
			if (!a->tensor->domain)
				continue;
			int before = conj.n;
			add_conj(s, &conj, expr_subst(s->a, a->tensor->domain, a->args, a->nargs));
			for (int k = before; k < conj.n; k++)
				ptrvec_push(s->a, &work, conj.v[k]);
		}
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
	out->domain = conj_all(s, &conj, freemask, 1);
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
static Expr *hoist(Sema *s, const Space *ext, int nouter, RedOp red, Expr *body, Expr *filter,
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
	make_node(s, tn, vars, nfree, nred, red, expr_subst(s->a, body, sub, ext->n),
		  expr_subst(s->a, filter, sub, ext->n), loc, role);
	Expr *r = expr_new(s->a, EX_ACCESS, t, loc);
	r->tensor = tn;
	r->nargs = nfree;
	r->args = ARENA_ARRAY(s->a, Expr *, nfree ? nfree : 1);
	for (int i = 0; i < nfree; i++)
		r->args[i] = expr_index(s->a, freev[i]);
	return r;
}

static void scope_push(Stmt *st, const char *name, Expr *e)
{
	if (st->nscope < MAX_VARS)
		st->scope[st->nscope++] = (ScopeEntry){name, e};
}

/* Adds a reduced variable to the current space and binds its name. */
static int space_push(Sema *s, Stmt *st, const char *name, SrcLoc loc)
{
	Space *sp = st->sp;
	if (sp->n == MAX_VARS) {
		diag_error(s->d, loc, "too many index variables (limit %d)", MAX_VARS);
		return 0;
	}
	VarInfo *v = sema_var(st, name);
	sp->v[sp->n] = (IndexVar){name, v ? v->extent : expr_int(s->a, 1), loc};
	scope_push(st, name, expr_index(s->a, sp->n));
	sp->n++;
	return 1;
}

static Expr *call1(Sema *s, Fn f, Expr *x)
{
	Expr *e = expr_new(s->a, EX_CALL, VT_FLOAT, x->loc);
	e->op = f;
	e->nargs = 1;
	e->args = ARENA_ARRAY(s->a, Expr *, 1);
	e->args[0] = x;
	return e;
}

static int want_float(Sema *s, AstExpr *src, const char *red, Expr *body)
{
	if (!body)
		return 0;
	if (body->type == VT_FLOAT)
		return 1;
	diag_error(s->d, src->loc, "'%s' reduces numbers, but its operand is %s%s", red,
		   vtype_name(body->type),
		   body->type == VT_INT ? " (convert it with float(...))" : "");
	return 0;
}

/* softmax[j](x) = exp(x - max[j] x) / sum[j] exp(x - max[j] x), with j kept:
** the max and the sum range over a fresh copy of j, the exponentials over
** the enclosing j. */
static Expr *lower_softmax(Sema *s, AstExpr *e)
{
	Stmt *st = s->st;
	Space *sp = st->sp;
	if (e->nargs != 1) {
		diag_error(s->d, e->loc, "softmax normalises over exactly one index");
		return NULL;
	}
	const char *j = e->args[0]->name;
	Expr *outer = NULL;
	for (int i = st->nscope - 1; i >= 0 && !outer; i--)
		if (!strcmp(st->scope[i].name, j))
			outer = st->scope[i].e;
	if (!outer || outer->kind != EX_INDEX) {
		diag_error(
		    s->d, e->args[0]->loc,
		    "softmax over '%s' needs '%s' to be a plain index of the enclosing expression",
		    j, j);
		return NULL;
	}
	int q = outer->var, nouter = sp->n, nscope = st->nscope;
	if (!space_push(s, st, j, e->args[0]->loc))
		return NULL;
	int r = sp->n - 1;
	Expr *xr = sema_expr(s, e->body);
	Expr *wr = e->where ? sema_bool(s, e->where, "a 'where' clause") : NULL;
	Space ext = *sp;
	sp->n = nouter, st->nscope = nscope;
	if (!want_float(s, e, "softmax", xr) || (e->where && !wr))
		return NULL;
	Expr *m = hoist(s, &ext, nouter, RED_MAX, xr, wr, -1, "softmax.max", e->loc);
	Expr *sub[MAX_VARS] = {0};
	sub[r] = expr_index(s->a, q);
	Expr *xo = expr_subst(s->a, xr, sub, ext.n);
	Expr *wo = expr_subst(s->a, wr, sub, ext.n);
	Expr *ex = call1(s, FN_EXP, expr_binop(s->a, OP_SUB, xo, m));
	Expr *en = hoist(s, sp, nouter, RED_NONE, ex, wo, q, "softmax.exp", e->loc);
	Expr *back[MAX_VARS] = {0};
	back[q] = expr_index(s->a, r);
	Expr *er = expr_subst(s->a, en, back, nouter);
	Expr *z = hoist(s, &ext, nouter, RED_SUM, er, NULL, -1, "softmax.sum", e->loc);
	Expr *d = expr_binop(s->a, OP_DIV, en, z);
	d->loc = e->loc;
	return d;
}

Expr *lower_reduction(Sema *s, AstExpr *e)
{
	if (!strcmp(e->name, "softmax"))
		return lower_softmax(s, e);
	RedOp red = lower_redop(e->name);
	int lse = !strcmp(e->name, "logsumexp");
	if (red == RED_NONE && !lse) {
		diag_error(
		    s->d, e->nameloc,
		    "unknown reduction '%s'; expected sum, max, min, prod, softmax or logsumexp",
		    e->name);
		return NULL;
	}
	Stmt *st = s->st;
	Space *sp = st->sp;
	int nouter = sp->n, nscope = st->nscope;
	for (int i = 0; i < e->nargs; i++)
		if (!space_push(s, st, e->args[i]->name, e->args[i]->loc))
			return NULL;
	Expr *body = sema_expr(s, e->body);
	Expr *w = e->where ? sema_bool(s, e->where, "a 'where' clause") : NULL;
	Space ext = *sp;
	sp->n = nouter, st->nscope = nscope;
	if (!want_float(s, e, e->name, body) || (e->where && !w))
		return NULL;
	if (!lse)
		return hoist(s, &ext, nouter, red, body, w, -1, e->name, e->loc);
	/* logsumexp[j](x) = max[j] x + log(sum[j] exp(x - max[j] x)) */
	Expr *m = hoist(s, &ext, nouter, RED_MAX, body, w, -1, "logsumexp.max", e->loc);
	Expr *ex = call1(s, FN_EXP, expr_binop(s->a, OP_SUB, body, m));
	Expr *z = hoist(s, &ext, nouter, RED_SUM, ex, w, -1, "logsumexp.sum", e->loc);
	Expr *r = expr_binop(s->a, OP_ADD, m, call1(s, FN_LOG, z));
	r->loc = e->loc;
	return r;
}

/* The statement's free indices: one per left-hand position; a*X+b is one
** variable h spanning the dimension, with a = h / X and b = h % X. */
static int bind_lhs(Sema *s, Stmt *st, Space *sp)
{
	AstItem *it = st->item;
	Tensor *t = st->lhs;
	int ok = 1;
	for (int k = 0; k < it->nidx; k++) {
		AstExpr *ix = it->idx[k];
		if (ix->kind == A_NAME) {
			VarInfo *v = sema_var(st, ix->name);
			sp->v[k] =
			    (IndexVar){ix->name, t->shape ? t->shape[k] : v->extent, ix->loc};
			scope_push(st, ix->name, expr_index(s->a, k));
			continue;
		}
		AstExpr *a = ix->args[0]->args[0], *x = ix->args[0]->args[1], *b = ix->args[1];
		Expr *xe = sema_expr(s, x);
		VarInfo *va = sema_var(st, a->name), *vb = sema_var(st, b->name);
		if (!xe || !va || !vb)
			return 0;
		Expr *span = expr_binop(s->a, OP_MUL, va->extent, xe);
		if (!extent_equal(vb->extent, xe)) {
			diag_error(s->d, b->loc,
				   "in a left-hand subscript a*%s+b, '%s' must range over %s",
				   x->name, b->name, x->name);
			ok = 0;
		} else if (t->shape && !extent_equal(t->shape[k], span) &&
			   !expr_equal(t->shape[k], span)) {
			diag_error(
			    s->d, ix->loc,
			    "'%s' spans %s*%s values but dimension %d of '%s' has a different size",
			    a->name, va->name, x->name, k + 1, t->name);
			ok = 0;
		}
		sp->v[k] = (IndexVar){arena_printf(s->a, "%s_%s", a->name, b->name),
				      t->shape ? t->shape[k] : span, ix->loc};
		scope_push(st, a->name, expr_binop(s->a, OP_DIV, expr_index(s->a, k), xe));
		scope_push(st, b->name, expr_binop(s->a, OP_MOD, expr_index(s->a, k), xe));
	}
	sp->n = it->nidx;
	return ok;
}

static int check_assign(Sema *s, Stmt *st, Expr *body)
{
	Tensor *t = st->lhs;
	if (t->kind == TK_TEMP) {
		t->type = body->type;
		t->dtype = dtype_of(body->type);
		return 1;
	}
	if (t->type == body->type)
		return 1;
	diag_error(s->d, st->item->rhs->loc, "cannot assign %s %s value to '%s' of type %s",
		   body->type == VT_INT ? "an" : "a", vtype_name(body->type), t->name,
		   dtype_name(t->dtype));
	return 0;
}

int lower_statement(Sema *s, Stmt *st)
{
	Space sp;
	memset(&sp, 0, sizeof sp);
	st->sp = &sp;
	AstItem *it = st->item;
	if (!bind_lhs(s, st, &sp))
		return 0;
	int nfree = sp.n;
	if (!st->lhs->shape) {
		st->lhs->shape = ARENA_ARRAY(s->a, Expr *, nfree ? nfree : 1);
		for (int k = 0; k < nfree; k++)
			st->lhs->shape[k] = sp.v[k].extent;
	}
	AstExpr *rhs = it->rhs;
	RedOp red = rhs->kind == A_REDUCE ? lower_redop(rhs->name) : RED_NONE;
	if (red != RED_NONE)
		for (int i = 0; i < rhs->nargs; i++)
			if (!space_push(s, st, rhs->args[i]->name, rhs->args[i]->loc))
				return 0;
	int errors = s->d->errors;
	Expr *where = it->where ? sema_bool(s, it->where, "a 'where' clause") : NULL;
	PtrVec push = {0};
	add_conj(s, &push, where);
	st->push = (Expr **)push.v, st->npush = push.n;
	Expr *body, *filter = where;
	if (red != RED_NONE) {
		body = sema_expr(s, rhs->body);
		if (rhs->where)
			filter =
			    expr_and(s->a, filter, sema_bool(s, rhs->where, "a 'where' clause"));
		if (!want_float(s, rhs, rhs->name, body))
			return 0;
	} else {
		body = sema_expr(s, rhs);
	}
	if (!body || s->d->errors != errors || !check_assign(s, st, body)) {
		st->lhs->shape = st->lhs->kind == TK_TEMP ? NULL : st->lhs->shape;
		return 0;
	}
	make_node(s, st->lhs, sp.v, nfree, sp.n - nfree, red, body, filter, it->loc, "statement");
	return 1;
}
