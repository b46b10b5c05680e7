/*
** compiler/grad_expr.c: symbolic derivatives of expressions.
**
** Every builder here treats NULL as the float 0 and folds what it can
** (x * 1, x + 0, 0 * x, literals, double negation), so a derivative that
** does not depend on a read vanishes instead of printing as a chain of
** zeros, and the derived cascade reads like one written by hand.
*/
#include <math.h>

#include "grad_int.h"

/* A float literal's value, when e is one. */
static int lit(const Expr *e, double *v)
{
	if (e && e->kind == EX_FLOAT) {
		*v = e->fval;
		return 1;
	}
	return 0;
}

/* Whether e is the literal v. */
static int is_lit(const Expr *e, double v)
{
	double x;
	return lit(e, &x) && x == v;
}

Expr *gx_num(Grad *g, double v)
{
	return expr_float(g->a, v);
}

static Expr *bin(Grad *g, Op op, Expr *x, Expr *y)
{
	Expr *e = expr_binop(g->a, op, x, y);
	e->loc = NOLOC;
	return e;
}

Expr *gx_neg(Grad *g, Expr *x)
{
	double v;
	if (!x)
		return NULL;
	if (lit(x, &v))
		return v == 0 ? NULL : gx_num(g, -v);
	if (x->kind == EX_UNOP && x->op == OP_NEG)
		return x->args[0];
	Expr *e = expr_new(g->a, EX_UNOP, VT_FLOAT, NOLOC);
	e->op = OP_NEG, e->nargs = 1;
	e->args = ARENA_ARRAY(g->a, Expr *, 1);
	e->args[0] = x;
	return e;
}

Expr *gx_add(Grad *g, Expr *x, Expr *y)
{
	double u, v;
	if (!x || is_lit(x, 0))
		return y && !is_lit(y, 0) ? y : NULL;
	if (!y || is_lit(y, 0))
		return x;
	if (lit(x, &u) && lit(y, &v))
		return gx_num(g, u + v);
	if (y->kind == EX_UNOP && y->op == OP_NEG)
		return bin(g, OP_SUB, x, y->args[0]);
	if (x->kind == EX_UNOP && x->op == OP_NEG)
		return bin(g, OP_SUB, y, x->args[0]);
	return bin(g, OP_ADD, x, y);
}

Expr *gx_sub(Grad *g, Expr *x, Expr *y)
{
	double u, v;
	if (!y || is_lit(y, 0))
		return x && !is_lit(x, 0) ? x : NULL;
	if (!x || is_lit(x, 0))
		return gx_neg(g, y);
	if (lit(x, &u) && lit(y, &v))
		return gx_num(g, u - v);
	if (y->kind == EX_UNOP && y->op == OP_NEG)
		return bin(g, OP_ADD, x, y->args[0]);
	return bin(g, OP_SUB, x, y);
}

Expr *gx_mul(Grad *g, Expr *x, Expr *y)
{
	double u, v;
	if (!x || !y || is_lit(x, 0) || is_lit(y, 0))
		return NULL;
	if (lit(x, &u) && lit(y, &v))
		return gx_num(g, u * v);
	if (is_lit(x, 1))
		return y;
	if (is_lit(y, 1))
		return x;
	if (is_lit(x, -1))
		return gx_neg(g, y);
	if (is_lit(y, -1))
		return gx_neg(g, x);
	/* x * (c ? y : 0) is c ? x * y : 0: the derivative of a max or a relu */
	if (y->kind == EX_SELECT && (is_lit(y->args[1], 0) || is_lit(y->args[2], 0)))
		return gx_select(g, y->args[0], gx_mul(g, x, y->args[1]), gx_mul(g, x, y->args[2]));
	if (x->kind == EX_SELECT && (is_lit(x->args[1], 0) || is_lit(x->args[2], 0)))
		return gx_select(g, x->args[0], gx_mul(g, x->args[1], y), gx_mul(g, x->args[2], y));
	/* a division last: x * (a / b) is x * a / b */
	if (y->kind == EX_BINOP && y->op == OP_DIV && y->type == VT_FLOAT)
		return gx_div(g, gx_mul(g, x, y->args[0]), y->args[1]);
	if (x->kind == EX_BINOP && x->op == OP_DIV && x->type == VT_FLOAT)
		return gx_div(g, gx_mul(g, x->args[0], y), x->args[1]);
	/* a sign in front reads better than inside a product */
	if (x->kind == EX_UNOP && x->op == OP_NEG)
		return gx_neg(g, gx_mul(g, x->args[0], y));
	if (y->kind == EX_UNOP && y->op == OP_NEG)
		return gx_neg(g, gx_mul(g, x, y->args[0]));
	return bin(g, OP_MUL, x, y);
}

Expr *gx_div(Grad *g, Expr *x, Expr *y)
{
	double u, v;
	if (!x || is_lit(x, 0))
		return NULL;
	if (is_lit(y, 1))
		return x;
	if (lit(x, &u) && lit(y, &v) && v != 0)
		return gx_num(g, u / v);
	if (x->kind == EX_UNOP && x->op == OP_NEG)
		return gx_neg(g, gx_div(g, x->args[0], y));
	return bin(g, OP_DIV, x, y);
}

Expr *gx_select(Grad *g, Expr *c, Expr *x, Expr *y)
{
	if (!x && !y)
		return NULL;
	if (c->kind == EX_BOOL)
		return c->ival ? x : y;
	Expr *e = expr_new(g->a, EX_SELECT, VT_FLOAT, NOLOC);
	e->nargs = 3;
	e->args = ARENA_ARRAY(g->a, Expr *, 3);
	e->args[0] = c, e->args[1] = x ? x : gx_num(g, 0), e->args[2] = y ? y : gx_num(g, 0);
	return e;
}

/* f(x) for a math function f. */
static Expr *call(Grad *g, Fn f, Expr *x)
{
	Expr *e = expr_new(g->a, EX_CALL, VT_FLOAT, NOLOC);
	e->op = f, e->nargs = 1;
	e->args = ARENA_ARRAY(g->a, Expr *, 1);
	e->args[0] = x;
	return e;
}

/* f'(x) for every Fn; NULL where it is zero (the step functions: floor,
** ceil, round and sign are constant almost everywhere). Kinks take the
** derivative of the right-hand piece at 0 for abs (sign(0) = 0), relu and
** elu (0 and 1 from the left: relu'(0) = 0, elu'(0) = exp(0) = 1). */
static Expr *fn_prime(Grad *g, Fn f, const Expr *x0)
{
	Expr *x = expr_copy(g->a, x0);
	Expr *zero = gx_num(g, 0);
	switch (f) {
	case FN_EXP: return call(g, FN_EXP, x);
	case FN_EXP2: return gx_mul(g, call(g, FN_EXP2, x), gx_num(g, 0.69314718055994530942));
	case FN_LOG: return gx_div(g, gx_num(g, 1), x);
	case FN_LOG2:
		return gx_div(g, gx_num(g, 1), gx_mul(g, x, gx_num(g, 0.69314718055994530942)));
	case FN_TANH: {
		Expr *t = call(g, FN_TANH, x);
		return gx_sub(g, gx_num(g, 1), gx_mul(g, t, expr_copy(g->a, t)));
	}
	case FN_SIGMOID: {
		Expr *s = call(g, FN_SIGMOID, x);
		return gx_mul(g, s, gx_sub(g, gx_num(g, 1), expr_copy(g->a, s)));
	}
	case FN_SQRT: return gx_div(g, gx_num(g, 0.5), call(g, FN_SQRT, x));
	case FN_RSQRT:
		return gx_neg(g, gx_div(g, gx_mul(g, gx_num(g, 0.5), call(g, FN_RSQRT, x)),
					expr_copy(g->a, x)));
	case FN_ABS: return call(g, FN_SIGN, x);
	case FN_RELU: return gx_select(g, bin(g, OP_GT, x, zero), gx_num(g, 1), NULL);
	case FN_LOG1P: return gx_div(g, gx_num(g, 1), gx_add(g, gx_num(g, 1), x));
	case FN_EXPM1: return call(g, FN_EXP, x);
	case FN_ERF:
		/* 2 / sqrt(pi) * exp(-x^2) */
		return gx_mul(g, gx_num(g, 1.1283791670955126),
			      call(g, FN_EXP, gx_neg(g, gx_mul(g, x, expr_copy(g->a, x)))));
	case FN_ELU:
		return gx_select(g, bin(g, OP_GT, x, zero), gx_num(g, 1),
				 call(g, FN_EXP, expr_copy(g->a, x)));
	case FN_SOFTPLUS: return call(g, FN_SIGMOID, x);
	default: return NULL; /* floor, ceil, round, sign */
	}
}

/* The usual rules, one per operator; max and min send the derivative to
** the branch they chose (the first on a tie), select to the branch its
** condition picks, and comparisons and integers carry none. */
Expr *gx_diff(Grad *g, const Expr *e, const Expr *R)
{
	Arena *a = g->a;
	if (!e || e->type != VT_FLOAT)
		return NULL;
	switch (e->kind) {
	case EX_ACCESS: return expr_equal(e, R) ? gx_num(g, 1) : NULL;
	case EX_UNOP: return e->op == OP_NEG ? gx_neg(g, gx_diff(g, e->args[0], R)) : NULL;
	case EX_SELECT:
		return gx_select(g, expr_copy(a, e->args[0]), gx_diff(g, e->args[1], R),
				 gx_diff(g, e->args[2], R));
	case EX_CALL: {
		Expr *d = gx_diff(g, e->args[0], R);
		return d ? gx_mul(g, d, fn_prime(g, (Fn)e->op, e->args[0])) : NULL;
	}
	case EX_BINOP: break;
	default: return NULL; /* literals, params, dims, casts of integers */
	}
	Expr *x = e->args[0], *y = e->args[1];
	Expr *dx = gx_diff(g, x, R), *dy = gx_diff(g, y, R);
	if (!dx && !dy)
		return NULL;
	switch ((Op)e->op) {
	case OP_ADD: return gx_add(g, dx, dy);
	case OP_SUB: return gx_sub(g, dx, dy);
	case OP_MUL:
		return gx_add(g, gx_mul(g, dx, expr_copy(a, y)), gx_mul(g, expr_copy(a, x), dy));
	case OP_DIV:
		/* (dx - x dy / y) / y */
		return gx_div(
		    g, gx_sub(g, dx, gx_div(g, gx_mul(g, expr_copy(a, x), dy), expr_copy(a, y))),
		    expr_copy(a, y));
	case OP_MAX:
	case OP_MIN:
		return gx_select(
		    g, bin(g, e->op == OP_MAX ? OP_GE : OP_LE, expr_copy(a, x), expr_copy(a, y)),
		    dx, dy);
	default: return NULL;
	}
}

Expr *gx_simplify(Grad *g, const Expr *e)
{
	if (!e)
		return gx_num(g, 0);
	if (e->type != VT_FLOAT || !e->nargs || e->kind == EX_ACCESS || e->kind == EX_CAST)
		return expr_copy(g->a, e);
	Expr *x = gx_simplify(g, e->args[0]);
	Expr *r = NULL;
	switch (e->kind) {
	case EX_UNOP: r = gx_neg(g, x); break;
	case EX_CALL: r = call(g, (Fn)e->op, x); break;
	case EX_SELECT:
		r = gx_select(g, expr_copy(g->a, e->args[0]), gx_simplify(g, e->args[1]),
			      gx_simplify(g, e->args[2]));
		break;
	case EX_BINOP: {
		Expr *y = gx_simplify(g, e->args[1]);
		switch ((Op)e->op) {
		case OP_ADD: r = gx_add(g, x, y); break;
		case OP_SUB: r = gx_sub(g, x, y); break;
		case OP_MUL: r = gx_mul(g, x, y); break;
		case OP_DIV: r = gx_div(g, x, y); break;
		default: r = bin(g, (Op)e->op, x, y); break;
		}
		break;
	}
	default: return expr_copy(g->a, e);
	}
	if (r)
		r->loc = e->loc;
	return r ? r : gx_num(g, 0);
}

Expr *gx_replace(Grad *g, const Expr *e, const Expr *from, const Expr *to)
{
	if (!e)
		return NULL;
	if (expr_equal(e, from))
		return expr_copy(g->a, to);
	Expr *c = ARENA_NEW(g->a, Expr);
	*c = *e;
	if (e->nargs) {
		c->args = ARENA_ARRAY(g->a, Expr *, e->nargs);
		for (int i = 0; i < e->nargs; i++)
			c->args[i] = gx_replace(g, e->args[i], from, to);
	}
	return c;
}

int gx_count(const Expr *e, const Expr *R)
{
	if (!e)
		return 0;
	if (expr_equal(e, R))
		return 1;
	int n = 0;
	for (int i = 0; i < e->nargs; i++)
		n += gx_count(e->args[i], R);
	return n;
}
