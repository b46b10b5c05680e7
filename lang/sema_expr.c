/*
** lang/sema_expr.c: typing expressions and turning them into IR Exprs.
** Three value types (int, float, bool) and no implicit mixing in
** arithmetic, so that float(j - i) is written where it is meant; math
** functions convert an int argument, as a C call would.
**
** A reduction inside an expression is hoisted into a node of its own
** (lang/node.c) and read back; its body is an expression again, so this
** file owns that recursion. softmax and logsumexp are desugared into max,
** exp, sum (and a division or a log), the textbook three-pass form.
*/
#include <math.h>
#include <string.h>

#include "sema.h"

/* A one-operand IR node (unary op, cast, call) with its location. */
static Expr *node1(Sema *s, ExprKind k, VType t, int op, Expr *x, SrcLoc loc)
{
	Expr *e = expr_new(s->a, k, t, loc);
	e->op = op;
	e->nargs = 1;
	e->args = ARENA_ARRAY(s->a, Expr *, 1);
	e->args[0] = x;
	return e;
}

/* A float math function of one argument, at the argument's location. */
static Expr *call1(Sema *s, Fn f, Expr *x)
{
	return node1(s, EX_CALL, VT_FLOAT, f, x, x->loc);
}

/* The language's one conversion, int -> float: written float(...), or made
** for a math function's argument and a param's default, as C would. */
Expr *sema_to_float(Sema *s, Expr *e, AstExpr *src)
{
	if (!e || e->type == VT_FLOAT)
		return e;
	return node1(s, EX_CAST, VT_FLOAT, 0, e, src ? src->loc : e->loc);
}

/* A condition (where, select, ?:): anything but a bool is an error, as
** there is no truth value for numbers. */
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

/* An expression outside any statement (a shape, const, default or index
** range): no indices, no tensors, params only where allowed; `what` names
** it in the errors. */
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

/* A bare name: an index bound in the scope, else a dim, const or param; a
** const becomes a copy of its literal, so later stages never see it. */
static Expr *name_expr(Sema *s, AstExpr *e)
{
	Expr *bound = s->st ? scope_bound(s->st, e->name) : NULL;
	if (bound)
		return expr_copy(s->a, bound);
	Sym *y = scope_sym(s, e->name);
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

/* A slice subscript `e < E` reads the first E positions of a dimension:
** index e spans [0, E) and the element read is at e. Returns the index's
** name, or NULL when arg is not a slice (lang/sema_index.c checks E). */
AstExpr *sema_slice(Sema *s, AstExpr *arg)
{
	if (arg->kind != A_BINARY || arg->op != OP_LT)
		return NULL;
	AstExpr *x = arg->args[0];
	return x->kind == A_NAME && !scope_sym(s, x->name) ? x : NULL;
}

/* T[args]: the rank must match and every subscript be an integer; reading a
** tensor whose definition failed yields NULL quietly (already reported). */
static Expr *access_expr(Sema *s, AstExpr *e)
{
	Sym *y = scope_sym(s, e->name);
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
		AstExpr *slice = sema_slice(s, e->args[k]);
		r->args[k] = sema_expr(s, slice ? slice : e->args[k]);
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
    {"exp", FN_EXP},   {"exp2", FN_EXP2},       {"log", FN_LOG},           {"log2", FN_LOG2},
    {"tanh", FN_TANH}, {"sigmoid", FN_SIGMOID}, {"sqrt", FN_SQRT},         {"rsqrt", FN_RSQRT},
    {"abs", FN_ABS},   {"relu", FN_RELU},       {"log1p", FN_LOG1P},       {"expm1", FN_EXPM1},
    {"erf", FN_ERF},   {"floor", FN_FLOOR},     {"ceil", FN_CEIL},         {"round", FN_ROUND},
    {"sign", FN_SIGN}, {"elu", FN_ELU},         {"softplus", FN_SOFTPLUS},
};

/* Functions have fixed arity; the message counts what was given. */
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

/* name(args): float(), int(), ilog2(), max/min of two numbers, clamp,
** select, and the math functions of fn_table; reductions written as calls get a hint. */
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
	/* int(x): the one float -> int conversion, toward zero and saturating
	** (cascade.c fn_int); an int is already one */
	if (!strcmp(e->name, "int")) {
		if (!want_args(s, e, 1) || !(a[0] = sema_expr(s, e->args[0])))
			return NULL;
		if (a[0]->type == VT_BOOL) {
			diag_error(s->d, e->args[0]->loc, "'int' needs a number, not bool");
			return NULL;
		}
		return a[0]->type == VT_INT ? a[0]
					    : node1(s, EX_CALL, VT_INT, FN_INT, a[0], e->loc);
	}
	/* ilog2(n): exact integer log2, so bucket arithmetic stays in ints */
	if (!strcmp(e->name, "ilog2")) {
		if (!want_args(s, e, 1) || !(a[0] = sema_expr(s, e->args[0])))
			return NULL;
		if (a[0]->type != VT_INT) {
			diag_error(s->d, e->args[0]->loc, "'ilog2' needs an integer, not %s%s",
				   vtype_name(a[0]->type),
				   a[0]->type == VT_FLOAT ? " (convert it with int(...))" : "");
			return NULL;
		}
		return node1(s, EX_CALL, VT_INT, FN_ILOG2, a[0], e->loc);
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
	/* clamp(x, lo, hi) = min(max(x, lo), hi), of numbers of one type */
	if (!strcmp(e->name, "clamp")) {
		if (!want_args(s, e, 3))
			return NULL;
		for (int k = 0; k < 3; k++)
			if (!(a[k] = sema_expr(s, e->args[k])))
				return NULL;
		if (!same_type(s, e, "clamp", a[0], a[1]) || !same_type(s, e, "clamp", a[0], a[2]))
			return NULL;
		if (a[0]->type == VT_BOOL) {
			diag_error(s->d, e->loc, "'clamp' needs numbers, not bool");
			return NULL;
		}
		Expr *r = expr_binop(s->a, OP_MIN, expr_binop(s->a, OP_MAX, a[0], a[1]), a[2]);
		r->loc = r->args[0]->loc = e->loc;
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

/* l op r: && and || take conditions, the others numbers of one type
** (booleans only for == and !=), % integers. */
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

/* The reductions that map to one node's reduction; softmax and logsumexp
** are built from these. */
RedOp sema_redop(const char *name)
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

/* Reductions are over floats only: an int operand is almost always an index
** used as a number by mistake, and the message says how to convert it. */
int sema_want_float(Sema *s, AstExpr *src, const char *red, Expr *body)
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
static Expr *softmax(Sema *s, AstExpr *e)
{
	Stmt *st = s->st;
	Space *sp = st->sp;
	if (e->nargs != 1) {
		diag_error(s->d, e->loc, "softmax normalises over exactly one index");
		return NULL;
	}
	const char *j = e->args[0]->name;
	Expr *outer = scope_bound(st, j);
	if (!outer || outer->kind != EX_INDEX) {
		diag_error(
		    s->d, e->args[0]->loc,
		    "softmax over '%s' needs '%s' to be a plain index of the enclosing expression",
		    j, j);
		return NULL;
	}
	int q = outer->var, nouter = sp->n, nscope = st->nscope;
	if (!scope_reduce(s, st, j, e->args[0]->loc))
		return NULL;
	int r = sp->n - 1;
	Expr *xr = sema_expr(s, e->body);
	Expr *wr = e->where ? sema_bool(s, e->where, "a 'where' clause") : NULL;
	Space ext = *sp;
	sp->n = nouter, st->nscope = nscope;
	if (!sema_want_float(s, e, "softmax", xr) || (e->where && !wr))
		return NULL;
	Expr *m = node_hoist(s, &ext, nouter, RED_MAX, xr, wr, -1, "softmax.max", e->loc);
	Expr *sub[MAX_VARS] = {0};
	sub[r] = expr_index(s->a, q);
	Expr *xo = expr_subst(s->a, xr, sub, ext.n);
	Expr *wo = expr_subst(s->a, wr, sub, ext.n);
	Expr *ex = call1(s, FN_EXP, expr_binop(s->a, OP_SUB, xo, m));
	Expr *en = node_hoist(s, sp, nouter, RED_NONE, ex, wo, q, "softmax.exp", e->loc);
	Expr *back[MAX_VARS] = {0};
	back[q] = expr_index(s->a, r);
	Expr *er = expr_subst(s->a, en, back, nouter);
	Expr *z = node_hoist(s, &ext, nouter, RED_SUM, er, NULL, -1, "softmax.sum", e->loc);
	Expr *d = expr_binop(s->a, OP_DIV, en, z);
	d->loc = e->loc;
	return d;
}

/* sum, max, min, prod over the named indices, each its own node read back
** in the enclosing space; logsumexp becomes a max and a sum, the textbook
** form (finding the one-pass form is the compiler's job, not the front
** end's). */
static Expr *reduction(Sema *s, AstExpr *e)
{
	if (!strcmp(e->name, "softmax"))
		return softmax(s, e);
	RedOp red = sema_redop(e->name);
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
		if (!scope_reduce(s, st, e->args[i]->name, e->args[i]->loc))
			return NULL;
	Expr *body = sema_expr(s, e->body);
	Expr *w = e->where ? sema_bool(s, e->where, "a 'where' clause") : NULL;
	Space ext = *sp;
	sp->n = nouter, st->nscope = nscope;
	if (!sema_want_float(s, e, e->name, body) || (e->where && !w))
		return NULL;
	if (!lse)
		return node_hoist(s, &ext, nouter, red, body, w, -1, e->name, e->loc);
	/* logsumexp[j](x) = max[j] x + log(sum[j] exp(x - max[j] x)) */
	Expr *m = node_hoist(s, &ext, nouter, RED_MAX, body, w, -1, "logsumexp.max", e->loc);
	Expr *ex = call1(s, FN_EXP, expr_binop(s->a, OP_SUB, body, m));
	Expr *z = node_hoist(s, &ext, nouter, RED_SUM, ex, w, -1, "logsumexp.sum", e->loc);
	Expr *r = expr_binop(s->a, OP_ADD, m, call1(s, FN_LOG, z));
	r->loc = e->loc;
	return r;
}

/* The AST expression e as a typed IR Expr over the current space, or NULL
** after reporting errors. */
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
		return reduction(s, e);
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
