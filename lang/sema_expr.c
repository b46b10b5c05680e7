/*
** lang/sema_expr.c: typing expressions and turning them into IR Exprs.
** Three value types (int, float, bool) and no implicit mixing in
** arithmetic, so that float(j - i) is written where it is meant; math
** functions convert an int argument, as a C call would.
*/
#include <math.h>
#include <string.h>

#include "sema.h"

static Expr *node1(Sema *s, ExprKind k, VType t, int op, Expr *x, SrcLoc loc)
{
	Expr *e = expr_new(s->a, k, t, loc);
	e->op = op;
	e->nargs = 1;
	e->args = ARENA_ARRAY(s->a, Expr *, 1);
	e->args[0] = x;
	return e;
}

Expr *sema_to_float(Sema *s, Expr *e, AstExpr *src)
{
	if (!e || e->type == VT_FLOAT)
		return e;
	return node1(s, EX_CAST, VT_FLOAT, 0, e, src ? src->loc : e->loc);
}

Expr *sema_bool(Sema *s, AstExpr *src, const char *what)
{
	Expr *e = sema_expr(s, src);
	if (e && e->type != VT_BOOL) {
		diag_error(s->d, src->loc,
			   "%s must be a condition (a comparison or a bool tensor), not %s", what,
			   vtype_name(e->type));
		return NULL;
	}
	return e;
}

Expr *sema_scalar_expr(Sema *s, AstExpr *e, int allow_params, const char *what)
{
	const char *sw = s->scalar_what;
	int sp = s->allow_params;
	Stmt *st = s->st;
	s->scalar_what = what, s->allow_params = allow_params, s->st = NULL;
	Expr *r = sema_expr(s, e);
	s->scalar_what = sw, s->allow_params = sp, s->st = st;
	return r;
}

static Expr *name_expr(Sema *s, AstExpr *e)
{
	if (s->st) {
		for (int i = s->st->nscope - 1; i >= 0; i--)
			if (!strcmp(s->st->scope[i].name, e->name))
				return expr_copy(s->a, s->st->scope[i].e);
	}
	Sym *y = sema_lookup(s, e->name);
	if (!y) {
		diag_error(s->d, e->loc, "use of undeclared name '%s'", e->name);
		return NULL;
	}
	Expr *r;
	switch (y->kind) {
	case SYM_DIM:
		if (s->scalar_what && !s->allow_params && !y->dim->fixed &&
		    !strcmp(s->scalar_what, "a const")) {
			diag_error(s->d, e->loc,
				   "a const must be a compile-time value; '%s' is a runtime dim",
				   e->name);
			return NULL;
		}
		r = expr_new(s->a, EX_DIM, VT_INT, e->loc);
		r->dim = y->dim;
		return r;
	case SYM_CONST:
		if (!y->value)
			return NULL;
		r = expr_copy(s->a, y->value);
		r->loc = e->loc;
		return r;
	case SYM_PARAM:
		if (!y->param)
			return NULL; /* its declaration failed and was reported */
		if (s->scalar_what && !s->allow_params) {
			diag_error(s->d, e->loc,
				   "%s cannot use param '%s': params are runtime scalars",
				   s->scalar_what, e->name);
			return NULL;
		}
		r = expr_new(s->a, EX_PARAM, y->param->type, e->loc);
		r->param = y->param;
		return r;
	default:
		diag_error(s->d, e->loc, "'%s' is a tensor; subscript it as %s[...]", e->name,
			   e->name);
		return NULL;
	}
}

static Expr *access_expr(Sema *s, AstExpr *e)
{
	Sym *y = sema_lookup(s, e->name);
	if (!y) {
		diag_error(s->d, e->nameloc, "use of undeclared tensor '%s'", e->name);
		return NULL;
	}
	if (y->kind != SYM_TENSOR) {
		diag_error(s->d, e->nameloc, "'%s' is a %s, not a tensor; it cannot be subscripted",
			   e->name,
			   y->kind == SYM_DIM     ? "dim"
			   : y->kind == SYM_CONST ? "const"
						  : "param");
		return NULL;
	}
	if (s->scalar_what) {
		diag_error(s->d, e->loc, "%s cannot read tensor '%s'", s->scalar_what, e->name);
		return NULL;
	}
	Tensor *t = y->tensor;
	if (!t || !t->shape)
		return NULL; /* its definition failed and was reported */
	if (t->rank != e->nargs) {
		diag_error(s->d, e->loc, "'%s' has rank %d but is subscripted with %d %s", e->name,
			   t->rank, e->nargs, e->nargs == 1 ? "index" : "indices");
		return NULL;
	}
	Expr *r = expr_new(s->a, EX_ACCESS, t->type, e->loc);
	r->tensor = t;
	r->nargs = e->nargs;
	r->args = ARENA_ARRAY(s->a, Expr *, e->nargs);
	int ok = 1;
	for (int k = 0; k < e->nargs; k++) {
		r->args[k] = sema_expr(s, e->args[k]);
		if (r->args[k] && r->args[k]->type != VT_INT) {
			diag_error(s->d, e->args[k]->loc, "a subscript must be an integer, not %s",
				   vtype_name(r->args[k]->type));
			r->args[k] = NULL;
		}
		ok = ok && r->args[k];
	}
	return ok ? r : NULL;
}

static const struct {
	const char *name;
	Fn fn;
} fn_table[] = {
    {"exp", FN_EXP},   {"exp2", FN_EXP2},       {"log", FN_LOG},   {"log2", FN_LOG2},
    {"tanh", FN_TANH}, {"sigmoid", FN_SIGMOID}, {"sqrt", FN_SQRT}, {"rsqrt", FN_RSQRT},
    {"abs", FN_ABS},   {"relu", FN_RELU},
};

static int want_args(Sema *s, AstExpr *e, int n)
{
	if (e->nargs == n)
		return 1;
	diag_error(s->d, e->loc, "'%s' takes %d argument%s, but %d %s given", e->name, n,
		   n == 1 ? "" : "s", e->nargs, e->nargs == 1 ? "was" : "were");
	return 0;
}

/* Two operands of one operator must agree in type; the message says how to
** convert, because the usual cause is an index used as a number. */
static int same_type(Sema *s, AstExpr *src, const char *what, Expr *l, Expr *r)
{
	if (l->type == r->type)
		return 1;
	diag_error(s->d, src->loc, "mismatched operand types of '%s': %s and %s%s", what,
		   vtype_name(l->type), vtype_name(r->type),
		   (l->type == VT_FLOAT || r->type == VT_FLOAT) && l->type != VT_BOOL &&
			   r->type != VT_BOOL
		       ? " (convert the integer with float(...))"
		       : "");
	return 0;
}

static Expr *call_expr(Sema *s, AstExpr *e)
{
	if (!strcmp(e->name, "sum") || !strcmp(e->name, "softmax") || !strcmp(e->name, "prod") ||
	    !strcmp(e->name, "logsumexp")) {
		diag_error(s->d, e->nameloc, "'%s' is a reduction; write %s[index](...)", e->name,
			   e->name);
		return NULL;
	}
	Expr *a[3] = {0};
	if (!strcmp(e->name, "float")) {
		if (!want_args(s, e, 1) || !(a[0] = sema_expr(s, e->args[0])))
			return NULL;
		return a[0]->type == VT_FLOAT ? a[0] : sema_to_float(s, a[0], e);
	}
	if (!strcmp(e->name, "max") || !strcmp(e->name, "min")) {
		if (!want_args(s, e, 2))
			return NULL;
		a[0] = sema_expr(s, e->args[0]), a[1] = sema_expr(s, e->args[1]);
		if (!a[0] || !a[1] || !same_type(s, e, e->name, a[0], a[1]))
			return NULL;
		if (a[0]->type == VT_BOOL) {
			diag_error(s->d, e->loc, "'%s' needs numbers, not bool", e->name);
			return NULL;
		}
		Expr *r = expr_binop(s->a, e->name[1] == 'a' ? OP_MAX : OP_MIN, a[0], a[1]);
		r->loc = e->loc;
		return r;
	}
	if (!strcmp(e->name, "select")) {
		if (!want_args(s, e, 3))
			return NULL;
		a[0] = sema_bool(s, e->args[0], "the first argument of 'select'");
		a[1] = sema_expr(s, e->args[1]), a[2] = sema_expr(s, e->args[2]);
		if (!a[0] || !a[1] || !a[2] || !same_type(s, e, "select", a[1], a[2]))
			return NULL;
		Expr *r = expr_new(s->a, EX_SELECT, a[1]->type, e->loc);
		r->nargs = 3;
		r->args = ARENA_ARRAY(s->a, Expr *, 3);
		memcpy(r->args, a, sizeof a);
		return r;
	}
	for (size_t i = 0; i < sizeof fn_table / sizeof fn_table[0]; i++) {
		if (strcmp(e->name, fn_table[i].name))
			continue;
		if (!want_args(s, e, 1) || !(a[0] = sema_expr(s, e->args[0])))
			return NULL;
		if (a[0]->type == VT_BOOL) {
			diag_error(s->d, e->args[0]->loc, "'%s' needs a number, not bool", e->name);
			return NULL;
		}
		return node1(s, EX_CALL, VT_FLOAT, fn_table[i].fn,
			     sema_to_float(s, a[0], e->args[0]), e->loc);
	}
	diag_error(s->d, e->nameloc, "unknown function '%s'", e->name);
	return NULL;
}

static Expr *binary_expr(Sema *s, AstExpr *e)
{
	Expr *l = sema_expr(s, e->args[0]);
	Expr *r = sema_expr(s, e->args[1]);
	if (!l || !r)
		return NULL;
	Op op = e->op;
	const char *sp = op_spelling(op);
	if (op == OP_AND || op == OP_OR) {
		if (l->type != VT_BOOL || r->type != VT_BOOL) {
			diag_error(s->d, e->loc,
				   "operands of '%s' must be conditions, not %s and %s", sp,
				   vtype_name(l->type), vtype_name(r->type));
			return NULL;
		}
	} else if (!same_type(s, e, sp, l, r)) {
		return NULL;
	} else if (l->type == VT_BOOL && op != OP_EQ && op != OP_NE) {
		diag_error(s->d, e->loc, "'%s' needs numbers, not bool", sp);
		return NULL;
	} else if (op == OP_MOD && l->type != VT_INT) {
		diag_error(s->d, e->loc, "'%%' needs integers, not %s", vtype_name(l->type));
		return NULL;
	}
	Expr *x = expr_binop(s->a, op, l, r);
	x->loc = e->loc;
	return x;
}

Expr *sema_expr(Sema *s, AstExpr *e)
{
	Expr *x, *c, *t, *f;
	switch (e->kind) {
	case A_INT:
		x = expr_int(s->a, e->ival);
		x->loc = e->loc;
		return x;
	case A_FLOAT:
		x = expr_float(s->a, e->fval);
		x->loc = e->loc;
		return x;
	case A_INF:
		x = expr_float(s->a, INFINITY);
		x->loc = e->loc;
		return x;
	case A_NAME: return name_expr(s, e);
	case A_ACCESS: return access_expr(s, e);
	case A_CALL: return call_expr(s, e);
	case A_REDUCE:
		if (s->scalar_what || !s->st) {
			diag_error(s->d, e->loc, "%s cannot contain a reduction",
				   s->scalar_what ? s->scalar_what : "this expression");
			return NULL;
		}
		return lower_reduction(s, e);
	case A_UNARY:
		if (!(x = sema_expr(s, e->args[0])))
			return NULL;
		if (e->op == OP_NEG && x->type == VT_BOOL) {
			diag_error(s->d, e->loc, "unary '-' needs a number, not bool");
			return NULL;
		}
		if (e->op == OP_NOT && x->type != VT_BOOL) {
			diag_error(s->d, e->loc, "'!' needs a condition, not %s",
				   vtype_name(x->type));
			return NULL;
		}
		return node1(s, EX_UNOP, x->type, e->op, x, e->loc);
	case A_BINARY: return binary_expr(s, e);
	case A_COND:
		c = sema_bool(s, e->args[0], "the condition of '?:'");
		t = sema_expr(s, e->args[1]);
		f = sema_expr(s, e->args[2]);
		if (!c || !t || !f || !same_type(s, e, "?:", t, f))
			return NULL;
		x = expr_new(s->a, EX_SELECT, t->type, e->loc);
		x->nargs = 3;
		x->args = ARENA_ARRAY(s->a, Expr *, 3);
		x->args[0] = c, x->args[1] = t, x->args[2] = f;
		return x;
	}
	return NULL;
}
