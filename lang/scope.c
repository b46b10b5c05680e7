/*
** lang/scope.c: what a name means. A name is one of the block's symbols
** (dim, const, param, tensor) or an index of the statement being lowered,
** which its scope binds to an expression over the node's space (a reduction
** binds its own indices, shadowing outer ones). Every other file of sema
** asks here, so that none of them has to ask another.
*/
#include <string.h>

#include "sema.h"

/* A linear search: a block declares a few dozen names, and one namespace
** for all kinds keeps every use unambiguous. */
Sym *scope_sym(Sema *s, const char *name)
{
	for (int i = 0; i < s->syms.n; i++) {
		Sym *y = s->syms.v[i];
		if (!strcmp(y->name, name))
			return y;
	}
	return NULL;
}

/* The statement's record of an index name: its range and where it came
** from, found by name since the AST refers to indices by name. */
VarInfo *scope_var(Stmt *st, const char *name)
{
	for (int i = 0; i < st->nvars; i++)
		if (!strcmp(st->vars[i].name, name))
			return &st->vars[i];
	return NULL;
}

/* The innermost binding of name, searched from the last pushed, so that a
** reduction's index shadows an outer one of the same name; NULL when the
** scope does not bind it. */
Expr *scope_bound(const Stmt *st, const char *name)
{
	for (int i = st->nscope - 1; i >= 0; i--)
		if (!strcmp(st->scope[i].name, name))
			return st->scope[i].e;
	return NULL;
}

/* Binds name to e over the current space; a binding past MAX_VARS is
** dropped rather than written past the array. */
void scope_bind(Stmt *st, const char *name, Expr *e)
{
	if (st->nscope < MAX_VARS)
		st->scope[st->nscope++] = (ScopeEntry){name, e};
}

/* Adds a reduced variable to the current space and binds its name, with the
** range index inference gave it (1 for a name it never saw). */
int scope_reduce(Sema *s, Stmt *st, const char *name, SrcLoc loc)
{
	Space *sp = st->sp;
	if (sp->n == MAX_VARS) {
		diag_error(s->d, loc, "too many index variables (limit %d)", MAX_VARS);
		return 0;
	}
	VarInfo *v = scope_var(st, name);
	sp->v[sp->n] = (IndexVar){name, v ? v->extent : expr_int(s->a, 1), loc};
	scope_bind(st, name, expr_index(s->a, sp->n));
	sp->n++;
	return 1;
}
