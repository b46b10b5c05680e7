/*
** compiler/cascade.c: constructors, host-side evaluation of index and scalar
** expressions, lookups, and the stable text form printed by --emit=cascade.
*/
#define _POSIX_C_SOURCE 200809L
#include "cascade.h"

#include <stdlib.h>

#include <limits.h>
#include <math.h>
#include <string.h>

static const char *dtype_names[DT_COUNT] = {"bool", "i32",  "f8e4m3", "f8e5m2",
					    "f16",  "bf16", "f32",    "f64"};

const char *dtype_name(DType t)
{
	return t < DT_COUNT ? dtype_names[t] : "?";
}

int dtype_is_float(DType t)
{
	return t >= DT_F8E4M3 && t <= DT_F64;
}

const char *vtype_name(VType t)
{
	return t == VT_BOOL ? "bool" : t == VT_INT ? "int" : "float";
}

/* Spelling and binding strength of each operator, for printing. */
static const struct {
	const char *s;
	int prec;
} op_tab[OP_COUNT] = {
    [OP_NEG] = {"-", 7},   [OP_NOT] = {"!", 7}, [OP_ADD] = {"+", 5}, [OP_SUB] = {"-", 5},
    [OP_MUL] = {"*", 6},   [OP_DIV] = {"/", 6}, [OP_MOD] = {"%", 6}, [OP_MAX] = {"max", 9},
    [OP_MIN] = {"min", 9}, [OP_LT] = {"<", 4},  [OP_LE] = {"<=", 4}, [OP_GT] = {">", 4},
    [OP_GE] = {">=", 4},   [OP_EQ] = {"==", 4}, [OP_NE] = {"!=", 4}, [OP_AND] = {"&&", 3},
    [OP_OR] = {"||", 2},
};

const char *op_spelling(Op op)
{
	return op < OP_COUNT ? op_tab[op].s : "?";
}

static const char *fn_names[FN_COUNT] = {
    "exp",   "exp2",  "log", "log2",  "tanh", "sigmoid", "sqrt", "rsqrt", "abs",     "relu",
    "log1p", "expm1", "erf", "floor", "ceil", "round",   "sign", "elu",   "softplus"};

const char *fn_name(Fn f)
{
	return f < FN_COUNT ? fn_names[f] : f == FN_INT ? "int" : f == FN_ILOG2 ? "ilog2" : "?";
}

/* int(x) rounds toward zero like C's cast, but is defined everywhere: NaN
** gives 0 and values past the i32 range (infinities too) give its ends,
** which is what the GPU's conversion instruction does. */
long fn_int(double x)
{
	if (x != x)
		return 0;
	if (x >= 2147483647.0)
		return 2147483647L;
	if (x <= -2147483648.0)
		return -2147483648L;
	return (long)x;
}

/* ilog2(n) = floor(log2 n), exact on integers (no float rounding near
** powers of two); n <= 0 has no logarithm and gives -1, the index of the
** highest set bit of 0 counted the usual way (bit length - 1). */
long fn_ilog2(long n)
{
	long r = -1;
	for (; n > 0; n >>= 1)
		r++;
	return r;
}

const char *redop_name(RedOp r)
{
	static const char *n[] = {"none", "sum", "max", "min", "prod"};
	return r <= RED_PROD ? n[r] : "?";
}

/* What node n is, in the words of the user's source: 'O' for a
** statement's own node; for a temporary named after its statement and
** role ("S.sum", "O.softmax.max", numbered from the second), "the sum over
** d in 'S'" or "the softmax max over j in 'O'" (diagnostics name what the
** user wrote, not the temporaries lang/node.c makes). */
const char *node_what(Arena *a, const Node *n)
{
	const char *name = n->out->name, *dot = strchr(name, '.');
	if (n->out->kind != TK_TEMP || !dot)
		return arena_printf(a, "'%s'", name);
	size_t len = strlen(dot + 1);
	while (len > 1 && dot[len] >= '0' && dot[len] <= '9')
		len--;
	char *role = arena_printf(a, "%.*s", (int)len, dot + 1);
	for (char *c = role; *c; c++)
		if (*c == '.')
			*c = ' ';
	const char *over = "";
	for (int k = 0; k < n->nred; k++)
		over = arena_printf(a, "%s%s%s", over, k ? ", " : " over ",
				    n->vars[n->nfree + k].name);
	return arena_printf(a, "the %s%s in '%.*s'", role, over, (int)(dot - name), name);
}

double redop_identity(RedOp r)
{
	switch (r) {
	case RED_SUM: return 0.0;
	case RED_PROD: return 1.0;
	case RED_MAX: return -INFINITY;
	case RED_MIN: return INFINITY;
	default: return 0.0;
	}
}

Expr *expr_new(Arena *a, ExprKind k, VType t, SrcLoc loc)
{
	Expr *e = ARENA_NEW(a, Expr);
	e->kind = k, e->type = t, e->loc = loc;
	return e;
}

Expr *expr_int(Arena *a, long v)
{
	Expr *e = expr_new(a, EX_INT, VT_INT, NOLOC);
	e->ival = v;
	return e;
}

Expr *expr_float(Arena *a, double v)
{
	Expr *e = expr_new(a, EX_FLOAT, VT_FLOAT, NOLOC);
	e->fval = v;
	return e;
}

Expr *expr_index(Arena *a, int var)
{
	Expr *e = expr_new(a, EX_INDEX, VT_INT, NOLOC);
	e->var = var;
	return e;
}

/* Result type follows the operands for arithmetic, bool for comparisons and
** logic; the front end has already checked that the operands agree. */
Expr *expr_binop(Arena *a, Op op, Expr *l, Expr *r)
{
	VType t = (op >= OP_LT) ? VT_BOOL : l->type;
	Expr *e = expr_new(a, EX_BINOP, t, loc_span(l->loc, r->loc));
	e->op = op;
	e->nargs = 2;
	e->args = ARENA_ARRAY(a, Expr *, 2);
	e->args[0] = l, e->args[1] = r;
	return e;
}

Expr *expr_neg(Arena *a, Expr *x)
{
	Expr *e = expr_new(a, EX_UNOP, x->type, x->loc);
	e->op = OP_NEG, e->nargs = 1;
	e->args = ARENA_ARRAY(a, Expr *, 2);
	e->args[0] = x;
	return e;
}

void expr_redirect(Expr *e, const Tensor *from, Tensor *to)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && e->tensor == from)
		e->tensor = to;
	for (int i = 0; i < e->nargs; i++)
		expr_redirect(e->args[i], from, to);
}

Expr *expr_and(Arena *a, Expr *l, Expr *r)
{
	if (!l)
		return r;
	if (!r)
		return l;
	return expr_binop(a, OP_AND, l, r);
}

/* Structural equality: same operators, literals, variables and tensors. */
int expr_equal(const Expr *a, const Expr *b)
{
	return expr_equal_by(a, b, NULL, NULL);
}

/* A subscript that reads a tensor is a gather: its value comes from data,
** which no rule of the language bounds. */
int expr_reads_any(const Expr *e)
{
	if (e->kind == EX_ACCESS)
		return 1;
	for (int k = 0; k < e->nargs; k++)
		if (expr_reads_any(e->args[k]))
			return 1;
	return 0;
}

/* The first access in e (NULL: none) whose subscripts read a tensor (a
** gather), or NULL. */
const Expr *expr_offset_row(const Expr *s, const Expr **row)
{
	if (!(s->kind == EX_BINOP && s->op == OP_ADD))
		return NULL;
	for (int side = 0; side < 2; side++) {
		const Expr *t = s->args[side], *v = s->args[!side];
		if (t->kind != EX_ACCESS || v->kind != EX_INDEX || t->tensor->kind != TK_IN ||
		    t->type != VT_INT)
			continue;
		int plain = 1;
		for (int k = 0; k < t->nargs; k++)
			plain &= t->args[k]->kind == EX_INDEX;
		if (plain) {
			*row = v;
			return t;
		}
	}
	return NULL;
}

const Expr *expr_gathered_read(const Expr *e)
{
	if (!e)
		return NULL;
	for (int k = 0; k < e->nargs; k++) {
		if (e->kind == EX_ACCESS && expr_reads_any(e->args[k]))
			return e;
		const Expr *r = expr_gathered_read(e->args[k]);
		if (r)
			return r;
	}
	return NULL;
}

/* Whether e (NULL: no) reads tensor t anywhere. */
int expr_reads(const Expr *e, const Tensor *t)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor == t)
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (expr_reads(e->args[i], t))
			return 1;
	return 0;
}

/* f's count so far is n (factors past max are counted, not kept). */
static int factors_from(const Expr *e, const Expr **f, int n, int max)
{
	if (e->kind == EX_BINOP && e->op == OP_MUL && e->type == VT_FLOAT)
		return factors_from(e->args[1], f, factors_from(e->args[0], f, n, max), max);
	if (n < max)
		f[n] = e;
	return n + 1;
}

int expr_factors(const Expr *e, const Expr **f, int max)
{
	return factors_from(e, f, 0, max);
}

/* e's reads after the n already counted (past max: counted, not kept). */
static int reads_from(const Expr *e, const Expr **r, int n, int max)
{
	if (!e)
		return n;
	if (e->kind == EX_ACCESS && n++ < max)
		r[n - 1] = e;
	for (int k = 0; k < e->nargs; k++)
		n = reads_from(e->args[k], r, n, max);
	return n;
}

int node_reads(const Node *n, const Expr **r, int max)
{
	return reads_from(n->filter, r, reads_from(n->body, r, 0, max), max);
}

int expr_equal_by(const Expr *a, const Expr *b, int (*same_var)(int, int, void *), void *ud)
{
	if (a == b && !same_var)
		return 1;
	if (!a || !b)
		return a == b;
	if (a->kind != b->kind || a->nargs != b->nargs)
		return 0;
	switch (a->kind) {
	case EX_FLOAT:
		if (a->fval != b->fval)
			return 0;
		break;
	case EX_INT:
	case EX_BOOL:
		if (a->ival != b->ival)
			return 0;
		break;
	case EX_INDEX:
		if (same_var ? !same_var(a->var, b->var, ud) : a->var != b->var)
			return 0;
		break;
	case EX_DIM:
		if (a->dim != b->dim)
			return 0;
		break;
	case EX_PARAM:
		if (a->param != b->param)
			return 0;
		break;
	case EX_ACCESS:
		if (a->tensor != b->tensor)
			return 0;
		break;
	default:
		if (a->op != b->op)
			return 0;
		break;
	}
	for (int i = 0; i < a->nargs; i++)
		if (!expr_equal_by(a->args[i], b->args[i], same_var, ud))
			return 0;
	return 1;
}

Expr *expr_copy(Arena *a, const Expr *e)
{
	return expr_subst(a, e, NULL, 0);
}

Expr *expr_subst(Arena *a, const Expr *e, Expr *const *sub, int nsub)
{
	if (!e)
		return NULL;
	if (e->kind == EX_INDEX && sub && e->var < nsub && sub[e->var])
		return expr_subst(a, sub[e->var], NULL, 0);
	Expr *c = ARENA_NEW(a, Expr);
	*c = *e;
	if (e->nargs) {
		c->args = ARENA_ARRAY(a, Expr *, e->nargs);
		for (int i = 0; i < e->nargs; i++)
			c->args[i] = expr_subst(a, e->args[i], sub, nsub);
	}
	return c;
}

unsigned long long expr_vars(const Expr *e)
{
	if (!e)
		return 0;
	unsigned long long m = 0;
	if (e->kind == EX_INDEX && e->var < 64)
		m |= 1ull << e->var;
	for (int i = 0; i < e->nargs; i++)
		m |= expr_vars(e->args[i]);
	return m;
}

long floordiv(long a, long b)
{
	if (b == 0)
		return 0;
	long q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

long floormod(long a, long b)
{
	if (b == 0)
		return 0;
	long m = a % b;
	if (m != 0 && ((m < 0) != (b < 0)))
		m += b;
	return m;
}

long expr_eval_int(const Expr *e, const long *dims, const long *vars)
{
	switch (e->kind) {
	case EX_INT:
	case EX_BOOL: return e->ival;
	case EX_FLOAT: return (long)e->fval;
	case EX_INDEX: return vars ? vars[e->var] : 0;
	case EX_DIM: return e->dim->fixed ? e->dim->fixed : dims ? dims[e->dim->id] : 0;
	case EX_UNOP: {
		long x = expr_eval_int(e->args[0], dims, vars);
		return e->op == OP_NEG ? -x : !x;
	}
	case EX_SELECT:
		return expr_eval_int(e->args[0], dims, vars)
			   ? expr_eval_int(e->args[1], dims, vars)
			   : expr_eval_int(e->args[2], dims, vars);
	case EX_BINOP: {
		long x = expr_eval_int(e->args[0], dims, vars);
		long y = expr_eval_int(e->args[1], dims, vars);
		switch ((Op)e->op) {
		case OP_ADD: return x + y;
		case OP_SUB: return x - y;
		case OP_MUL: return x * y;
		case OP_DIV: return floordiv(x, y);
		case OP_MOD: return floormod(x, y);
		case OP_MAX: return x > y ? x : y;
		case OP_MIN: return x < y ? x : y;
		case OP_LT: return x < y;
		case OP_LE: return x <= y;
		case OP_GT: return x > y;
		case OP_GE: return x >= y;
		case OP_EQ: return x == y;
		case OP_NE: return x != y;
		case OP_AND: return x && y;
		case OP_OR: return x || y;
		default: return 0;
		}
	}
	case EX_CALL:
		if (e->op == FN_ILOG2)
			return fn_ilog2(expr_eval_int(e->args[0], dims, vars));
		return e->op == FN_INT ? fn_int(expr_eval_float(e->args[0], dims, NULL)) : 0;
	default: return 0;
	}
}

double fn_apply(Fn f, double x)
{
	switch (f) {
	case FN_EXP: return exp(x);
	case FN_EXP2: return exp2(x);
	case FN_LOG: return log(x);
	case FN_LOG2: return log2(x);
	case FN_TANH: return tanh(x);
	case FN_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case FN_SQRT: return sqrt(x);
	case FN_RSQRT: return 1.0 / sqrt(x);
	case FN_ABS: return fabs(x);
	case FN_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
	case FN_LOG1P: return log1p(x);
	case FN_EXPM1: return expm1(x);
	case FN_ERF: return erf(x);
	case FN_FLOOR: return floor(x);
	case FN_CEIL: return ceil(x);
	case FN_ROUND: return nearbyint(x); /* ties to even in the default rounding mode */
	case FN_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
	case FN_ELU: return x > 0 ? x : expm1(x);
	case FN_SOFTPLUS: return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x)));
	case FN_INT: return (double)fn_int(x);
	case FN_ILOG2: /* x holds an int, exactly up to 2^53 */
		return x >= 0x1p62 ? 62.0 : x < 1.0 ? -1.0 : (double)fn_ilog2((long)x);
	default: return NAN;
	}
}

double expr_eval_float(const Expr *e, const long *dims, const double *params)
{
	switch (e->kind) {
	case EX_FLOAT: return e->fval;
	case EX_INT:
	case EX_BOOL: return (double)e->ival;
	case EX_DIM: return (double)(e->dim->fixed ? e->dim->fixed : dims ? dims[e->dim->id] : 0);
	case EX_PARAM: return params ? params[e->param->id] : 0.0;
	case EX_CAST: return expr_eval_float(e->args[0], dims, params);
	case EX_CALL: return fn_apply((Fn)e->op, expr_eval_float(e->args[0], dims, params));
	case EX_UNOP: {
		double x = expr_eval_float(e->args[0], dims, params);
		return e->op == OP_NEG ? -x : !x;
	}
	case EX_SELECT:
		return expr_eval_float(e->args[0], dims, params)
			   ? expr_eval_float(e->args[1], dims, params)
			   : expr_eval_float(e->args[2], dims, params);
	case EX_BINOP: {
		double x = expr_eval_float(e->args[0], dims, params);
		double y = expr_eval_float(e->args[1], dims, params);
		int ints = e->args[0]->type == VT_INT;
		switch ((Op)e->op) {
		case OP_ADD: return x + y;
		case OP_SUB: return x - y;
		case OP_MUL: return x * y;
		case OP_DIV: return ints ? (double)floordiv((long)x, (long)y) : x / y;
		case OP_MOD: return (double)floormod((long)x, (long)y);
		case OP_MAX: return x > y ? x : y;
		case OP_MIN: return x < y ? x : y;
		case OP_LT: return x < y;
		case OP_LE: return x <= y;
		case OP_GT: return x > y;
		case OP_GE: return x >= y;
		case OP_EQ: return x == y;
		case OP_NE: return x != y;
		case OP_AND: return x && y;
		case OP_OR: return x || y;
		default: return NAN;
		}
	}
	default: return NAN;
	}
}

/* Kernels unroll and size their tiles by extents known when they are
** generated; every other size is a runtime dim. A sum or product of fixed
** extents is fixed (absorbed MLA's DL + DR = 576); 0 where any part is not. */
long expr_fixed_extent(const Expr *e)
{
	if (e->kind == EX_INT)
		return e->ival;
	if (e->kind == EX_DIM && e->dim->fixed)
		return e->dim->fixed;
	if (e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_MUL)) {
		long a = expr_fixed_extent(e->args[0]), b = expr_fixed_extent(e->args[1]);
		if (a <= 0 || b <= 0 || a > (1L << 31) || b > (1L << 31))
			return 0;
		return e->op == OP_ADD ? a + b : a * b;
	}
	return 0;
}

/* Shape and extent expressions (dims, literals, + - * / %, max, min) with
** overflow detection: a huge dim size gives an error instead of wrapping
** (cascade.c's expr_eval_int does not check). */
int expr_eval_extent(const Expr *e, const long *dims, long *out)
{
	long x = 0, y = 0;
	switch (e->kind) {
	case EX_INT:
	case EX_BOOL: *out = e->ival; return 0;
	case EX_DIM: *out = dims[e->dim->id]; return 0;
	case EX_UNOP:
		if (expr_eval_extent(e->args[0], dims, &x) || (e->op == OP_NEG && x == LONG_MIN))
			return -1;
		*out = e->op == OP_NEG ? -x : !x;
		return 0;
	case EX_SELECT:
		if (expr_eval_extent(e->args[0], dims, &x))
			return -1;
		return expr_eval_extent(e->args[x ? 1 : 2], dims, out);
	case EX_BINOP: break;
	default: return -1;
	}
	if (expr_eval_extent(e->args[0], dims, &x) || expr_eval_extent(e->args[1], dims, &y))
		return -1;
	switch ((Op)e->op) {
	case OP_ADD: return __builtin_add_overflow(x, y, out) ? -1 : 0;
	case OP_SUB: return __builtin_sub_overflow(x, y, out) ? -1 : 0;
	case OP_MUL: return __builtin_mul_overflow(x, y, out) ? -1 : 0;
	case OP_DIV:
		if (y == 0 || (y == -1 && x == LONG_MIN))
			return -1;
		*out = floordiv(x, y);
		return 0;
	case OP_MOD:
		if (y == 0)
			return -1;
		*out = y == -1 ? 0 : floormod(x, y);
		return 0;
	case OP_MAX: *out = x > y ? x : y; return 0;
	case OP_MIN: *out = x < y ? x : y; return 0;
	case OP_LT: *out = x < y; return 0;
	case OP_LE: *out = x <= y; return 0;
	case OP_GT: *out = x > y; return 0;
	case OP_GE: *out = x >= y; return 0;
	case OP_EQ: *out = x == y; return 0;
	case OP_NE: *out = x != y; return 0;
	case OP_AND: *out = x && y; return 0;
	case OP_OR: *out = x || y; return 0;
	default: return -1;
	}
}

long tensor_dim_size(const Tensor *t, int k, const long *dims)
{
	return expr_eval_int(tensor_buf_shape(t)[k], dims, NULL);
}

long tensor_numel(const Tensor *t, const long *dims)
{
	long n = 1;
	for (int k = 0; k < tensor_buf_rank(t); k++)
		n *= tensor_dim_size(t, k, dims);
	return n;
}

int cascade_param_defaults(const Cascade *c, const long *dims, double *params, const int *given)
{
	for (int i = 0; i < c->params.n; i++) {
		Param *p = c->params.v[i];
		if (given && given[i])
			continue;
		if (!p->deflt)
			return i;
		double v = expr_eval_float(p->deflt, dims, params);
		params[i] = p->type == VT_INT ? (double)(long)v : v;
	}
	return -1;
}

Tensor *cascade_tensor(const Cascade *c, const char *name)
{
	for (int i = 0; i < c->tensors.n; i++) {
		Tensor *t = c->tensors.v[i];
		if (!strcmp(t->name, name))
			return t;
	}
	return NULL;
}

Dim *cascade_dim(const Cascade *c, const char *name)
{
	for (int i = 0; i < c->dims.n; i++) {
		Dim *d = c->dims.v[i];
		if (!strcmp(d->name, name))
			return d;
	}
	return NULL;
}

Param *cascade_param(const Cascade *c, const char *name)
{
	for (int i = 0; i < c->params.n; i++) {
		Param *p = c->params.v[i];
		if (!strcmp(p->name, name))
			return p;
	}
	return NULL;
}

/* ---- printing ---------------------------------------------------------- */

static int expr_prec(const Expr *e)
{
	switch (e->kind) {
	case EX_BINOP: return op_tab[e->op].prec;
	case EX_UNOP: return 7;
	case EX_SELECT: return 1;
	default: return 10;
	}
}

static void print_sub(FILE *out, const Expr *e, const Node *scope, int min_prec)
{
	int paren = expr_prec(e) < min_prec;
	if (paren)
		fputc('(', out);
	expr_print(out, e, scope);
	if (paren)
		fputc(')', out);
}

static void print_float(FILE *out, double v)
{
	if (isinf(v))
		fputs(v < 0 ? "-inf" : "inf", out);
	else if (fabs(v) < 1e15 && v == (double)(long)v) /* the cast only in range */
		fprintf(out, "%.1f", v);
	else
		fprintf(out, "%.9g", v);
}

/* Index variables print by name when the node is known, else as %k. */
void expr_print(FILE *out, const Expr *e, const Node *scope)
{
	if (!e) {
		fputs("true", out);
		return;
	}
	switch (e->kind) {
	case EX_FLOAT: print_float(out, e->fval); break;
	case EX_INT: fprintf(out, "%ld", e->ival); break;
	case EX_BOOL: fputs(e->ival ? "true" : "false", out); break;
	case EX_INDEX:
		if (scope && e->var < scope->nfree + scope->nred)
			fputs(scope->vars[e->var].name, out);
		else
			fprintf(out, "%%%d", e->var);
		break;
	case EX_DIM: fputs(e->dim->name, out); break;
	case EX_PARAM: fputs(e->param->name, out); break;
	case EX_ACCESS:
		fprintf(out, "%s[", e->tensor->name);
		for (int i = 0; i < e->nargs; i++) {
			if (i)
				fputs(", ", out);
			expr_print(out, e->args[i], scope);
		}
		fputc(']', out);
		break;
	case EX_UNOP:
		fputs(op_tab[e->op].s, out);
		print_sub(out, e->args[0], scope, 8);
		break;
	case EX_BINOP:
		if (e->op == OP_MAX || e->op == OP_MIN) {
			fprintf(out, "%s(", op_tab[e->op].s);
			expr_print(out, e->args[0], scope);
			fputs(", ", out);
			expr_print(out, e->args[1], scope);
			fputc(')', out);
		} else {
			int p = op_tab[e->op].prec;
			/* comparisons do not chain; left-assoc elsewhere */
			print_sub(out, e->args[0], scope, p == 4 ? p + 1 : p);
			fprintf(out, " %s ", op_tab[e->op].s);
			print_sub(out, e->args[1], scope, p + 1);
		}
		break;
	case EX_SELECT:
		print_sub(out, e->args[0], scope, 2);
		fputs(" ? ", out);
		print_sub(out, e->args[1], scope, 2);
		fputs(" : ", out);
		print_sub(out, e->args[2], scope, 1);
		break;
	case EX_CALL:
		fprintf(out, "%s(", fn_name((Fn)e->op));
		expr_print(out, e->args[0], scope);
		fputc(')', out);
		break;
	case EX_CAST:
		fputs("float(", out);
		expr_print(out, e->args[0], scope);
		fputc(')', out);
		break;
	}
}

static void print_shape(FILE *out, const Tensor *t)
{
	fputc('[', out);
	for (int k = 0; k < t->rank; k++) {
		if (k)
			fputs(", ", out);
		expr_print(out, t->shape[k], NULL);
	}
	fputc(']', out);
}

static void print_node(FILE *out, const Node *n)
{
	fprintf(out, "  %%%d = %s[", n->id, n->out->name);
	for (int k = 0; k < n->nfree; k++)
		fprintf(out, "%s%s", k ? ", " : "", n->vars[k].name);
	fputs("] = ", out);
	if (n->red != RED_NONE) {
		fprintf(out, "%s[", redop_name(n->red));
		for (int k = 0; k < n->nred; k++)
			fprintf(out, "%s%s", k ? ", " : "", n->vars[n->nfree + k].name);
		fputs("](", out);
		expr_print(out, n->body, n);
		fputc(')', out);
	} else {
		expr_print(out, n->body, n);
	}
	if (n->filter) {
		fputs(" where ", out);
		expr_print(out, n->filter, n);
	}
	fprintf(out, "    ; %s", n->origin ? n->origin : "statement");
	if (n->loc.file >= 0)
		fprintf(out, " at %d:%d", n->loc.line, n->loc.col);
	fputc('\n', out);
	fputs("      ranges:", out);
	for (int k = 0; k < n->nfree + n->nred; k++) {
		fprintf(out, " %s%s<", k == n->nfree ? "| " : "", n->vars[k].name);
		expr_print(out, n->vars[k].extent, NULL);
	}
	fputc('\n', out);
}

/* A domain is stored over the tensor's own dimensions; print it with the
** defining node's variable names when there is one. */
static void print_tensor(FILE *out, const Tensor *t)
{
	static const char *kinds[] = {"in", "out", "temp"};
	fprintf(out, "  %s %s", kinds[t->kind], t->name);
	print_shape(out, t);
	fprintf(out, " : %s", dtype_name(t->dtype));
	if (t->trainable)
		fputs(" trainable", out);
	if (t->domain) {
		fputs(" present where ", out);
		expr_print(out, t->domain, t->def);
	}
	if (t->pack) {
		fputs(" stored packed in [", out);
		for (int k = 0; k < t->pack->rank; k++) {
			fputs(k ? ", " : "", out);
			expr_print(out, t->pack->shape[k], NULL);
		}
		fputs("] at [", out);
		for (int k = 0; k < t->pack->rank; k++) {
			fputs(k ? ", " : "", out);
			expr_print(out, t->pack->at[k], t->def);
		}
		fputc(']', out);
	}
	fputc('\n', out);
}

void cascade_print(FILE *out, const Cascade *c)
{
	fprintf(out, "cascade %s {\n", c->name);
	for (int i = 0; i < c->dims.n; i++) {
		Dim *d = c->dims.v[i];
		if (d->fixed)
			fprintf(out, "  dim %s = %ld\n", d->name, d->fixed);
		else
			fprintf(out, "  dim %s\n", d->name);
	}
	for (int i = 0; i < c->params.n; i++) {
		Param *p = c->params.v[i];
		fprintf(out, "  param %s : %s", p->name, dtype_name(p->dtype));
		if (p->deflt) {
			fputs(" = ", out);
			expr_print(out, p->deflt, NULL);
		}
		fputc('\n', out);
	}
	for (int i = 0; i < c->tensors.n; i++)
		print_tensor(out, c->tensors.v[i]);
	for (int i = 0; i < c->nodes.n; i++)
		print_node(out, c->nodes.v[i]);
	fputs("}\n", out);
}

void program_print(FILE *out, const Program *p)
{
	for (int i = 0; i < p->cascades.n; i++) {
		if (i)
			fputc('\n', out);
		cascade_print(out, p->cascades.v[i]);
	}
}

char *expr_str(Arena *a, const Expr *e, const Node *scope)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return arena_strdup(a, "?");
	expr_print(f, e, scope);
	fclose(f);
	char *r = arena_strdup(a, buf ? buf : "?");
	free(buf);
	return r;
}
