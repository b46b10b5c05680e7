/*
** lang/lower.c: statements -> extended-Einsum nodes of the cascade IR.
** A statement becomes one node whose free indices are its left-hand side;
** a reduction at the top of the right-hand side is that node's reduction.
** Reductions nested in the right-hand side are hoisted into nodes of their
** own while the expression is typed (lang/sema_expr.c).
*/
#include <string.h>

#include "sema.h"

/* A free index of its own range at the next place of the space. */
static Expr *bind_free(Sema *s, Stmt *st, Space *sp, AstExpr *name)
{
	VarInfo *v = scope_var(st, name->name);
	sp->v[sp->n] = (IndexVar){name->name, v->extent, name->loc};
	Expr *x = expr_index(s->a, sp->n++);
	scope_bind(st, name->name, x);
	return x;
}

/* The packed row T[b, ...] + i at position k: b, ... and i are free indices
** of their own ranges, and the buffer's position k is the sum. */
static Expr *bind_packed(Sema *s, Stmt *st, Space *sp, Pack *pk, AstExpr *table, AstExpr *row)
{
	for (int i = 0; i < table->nargs; i++)
		bind_free(s, st, sp, table->args[i]);
	pk->row = sp->n;
	Expr *r = bind_free(s, st, sp, row), *off = sema_expr(s, table);
	if (!off)
		return NULL;
	pk->table = off->tensor;
	return expr_binop(s->a, OP_ADD, off, r);
}

/* A packed output's node computes its logical tensor: its shape becomes
** the space's, and the declared one its buffer's. */
static void make_packed(Sema *s, Tensor *t, Pack *pk, const Space *sp)
{
	Pack *p = ARENA_NEW(s->a, Pack);
	*p = *pk;
	p->rank = t->rank, p->shape = t->shape;
	t->pack = p, t->rank = sp->n;
	t->shape = ARENA_ARRAY(s->a, Expr *, sp->n);
	for (int k = 0; k < sp->n; k++)
		t->shape[k] = sp->v[k].extent;
}

/* The statement's free indices: one per left-hand position; a*X+b is one
** variable h spanning the dimension, with a = h / X and b = h % X; a packed
** row T[b] + i is b and i. */
static int bind_lhs(Sema *s, Stmt *st, Space *sp)
{
	AstItem *it = st->item;
	Tensor *t = st->lhs;
	int ok = 1, packed = 0;
	Pack pk = {0};
	Expr *at[MAX_VARS];
	AstExpr *table, *row;
	for (int k = 0; k < it->nidx; k++) {
		AstExpr *ix = it->idx[k];
		if (sema_pack_pattern(s, ix, &table, &row)) {
			at[k] = bind_packed(s, st, sp, &pk, table, row);
			ok = ok && at[k];
			packed = 1;
			continue;
		}
		if (ix->kind == A_NAME) {
			VarInfo *v = scope_var(st, ix->name);
			sp->v[sp->n] =
			    (IndexVar){ix->name, t->shape ? t->shape[k] : v->extent, ix->loc};
			at[k] = expr_index(s->a, sp->n++);
			scope_bind(st, ix->name, at[k]);
			continue;
		}
		AstExpr *a = ix->args[0]->args[0], *x = ix->args[0]->args[1], *b = ix->args[1];
		Expr *xe = sema_expr(s, x);
		VarInfo *va = scope_var(st, a->name), *vb = scope_var(st, b->name);
		if (!xe || !va || !vb)
			return 0;
		Expr *span = expr_binop(s->a, OP_MUL, va->extent, xe);
		if (!sema_extent_equal(vb->extent, xe)) {
			diag_error(s->d, b->loc,
				   "in a left-hand subscript a*%s+b, '%s' must range over %s",
				   x->name, b->name, x->name);
			ok = 0;
		} else if (t->shape && !sema_extent_equal(t->shape[k], span) &&
			   !expr_equal(t->shape[k], span)) {
			diag_error(
			    s->d, ix->loc,
			    "'%s' spans %s*%s values but dimension %d of '%s' has a different size",
			    a->name, va->name, x->name, k + 1, t->name);
			ok = 0;
		}
		int h = sp->n++;
		sp->v[h] = (IndexVar){arena_printf(s->a, "%s_%s", a->name, b->name),
				      t->shape ? t->shape[k] : span, ix->loc};
		at[k] = expr_index(s->a, h);
		scope_bind(st, a->name, expr_binop(s->a, OP_DIV, expr_index(s->a, h), xe));
		scope_bind(st, b->name, expr_binop(s->a, OP_MOD, expr_index(s->a, h), xe));
	}
	if (ok && packed) {
		pk.at = ARENA_ARRAY(s->a, Expr *, it->nidx);
		memcpy(pk.at, at, sizeof(Expr *) * (size_t)it->nidx);
		make_packed(s, t, &pk, sp);
	}
	return ok;
}

/* A packed output stores each present point at its offset row: rows past
** a sequence's end must be absent, or they would overwrite the next
** sequence's. Its domain must bound the row index. */
static int check_packed_domain(Sema *s, Stmt *st)
{
	Tensor *t = st->lhs;
	if (!t->pack || (t->domain && (expr_vars(t->domain) >> t->pack->row & 1)))
		return 1;
	const char *row = st->sp->v[t->pack->row].name, *tab = t->pack->table->name;
	diag_error(s->d, st->item->nameloc,
		   "'%s' is written packed at offsets '%s', but nothing makes its rows past a "
		   "sequence's end absent: they would overwrite the next sequence's; bound '%s' "
		   "by a 'where', e.g. 'where %s < %s[b + 1] - %s[b]'",
		   t->name, tab, row, row, tab, tab);
	return 0;
}

/* A temporary takes the type of its value; a declared output must be
** given a value of its own type, since there are no implicit conversions. */
static int check_assign(Sema *s, Stmt *st, Expr *body)
{
	Tensor *t = st->lhs;
	if (t->kind == TK_TEMP) {
		t->type = body->type;
		t->dtype = node_dtype(body->type);
		return 1;
	}
	if (t->type == body->type)
		return 1;
	diag_error(s->d, st->item->rhs->loc, "cannot assign %s %s value to '%s' of type %s",
		   body->type == VT_INT ? "an" : "a", vtype_name(body->type), t->name,
		   dtype_name(t->dtype));
	return 0;
}

/* The right-hand side is typed in the statement's space, after the
** statement-level where (whose conjuncts are pushed into hoisted nodes);
** any error leaves no node, and a temporary no shape. */
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
	RedOp red = rhs->kind == A_REDUCE ? sema_redop(rhs->name) : RED_NONE;
	if (red != RED_NONE)
		for (int i = 0; i < rhs->nargs; i++)
			if (!scope_reduce(s, st, rhs->args[i]->name, rhs->args[i]->loc))
				return 0;
	int errors = s->d->errors;
	Expr *where = it->where ? sema_bool(s, it->where, "a 'where' clause") : NULL;
	PtrVec push = {0};
	node_add_conj(s, &push, where);
	st->push = (Expr **)push.v, st->npush = push.n;
	Expr *body, *own = NULL;
	if (red != RED_NONE) {
		body = sema_expr(s, rhs->body);
		if (rhs->where)
			own = sema_bool(s, rhs->where, "a 'where' clause");
		if (!sema_want_float(s, rhs, rhs->name, body))
			return 0;
	} else {
		body = sema_expr(s, rhs);
	}
	if (!body || s->d->errors != errors || !check_assign(s, st, body)) {
		st->lhs->shape = st->lhs->kind == TK_TEMP ? NULL : st->lhs->shape;
		return 0;
	}
	node_make(s, st->lhs, sp.v, nfree, sp.n - nfree, red, body, where, own, it->loc,
		  "statement");
	return check_packed_domain(s, st);
}
