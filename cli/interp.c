/*
** cli/interp.c: the naive f64 interpreter (see interp.h).
**
** Each node is evaluated by walking its expression trees at every point of
** its iteration space, exactly as the top comment of cascade.h says: absent
** output points (out->domain false) are 0, reductions start at the identity
** and skip points where the filter is false, RED_NONE nodes store the body.
** Every tensor is a contiguous row-major f64 buffer; temporaries are
** allocated when their node runs and freed at the end. INT values are
** evaluated in 64-bit integers (floor division and modulo), BOOL as 0/1.
** Indexing is bounds-checked: an out-of-range access is reported, since
** this engine exists to catch mistakes, not to be fast. The one shortcut:
** a reduction's filter that mentions no reduced variable is tested once per
** free point (expressions are pure, so the result is the same).
*/
#include "interp.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_VARS = 64 };
/* Largest tensor we agree to allocate: 2^37 f64 values (1 TiB). */
#define INTERP_MAX_NUMEL (1L << 37)

typedef struct Interp {
	const Binding *b;
	const Cascade *c;
	double **buf;  /* [ntensors]: caller's buffers for in/out, ours for temps */
	int *owned;    /* [ntensors]: buf[i] is a temporary we allocated */
	long **size;   /* [ntensors] -> rank extents */
	long **stride; /* [ntensors] -> rank row-major strides */
	long *sizemem;
	long var[MAX_VARS]; /* the current iteration point */
	int failed;
	int data_failed; /* the first error is the given data's (fail_data) */
	char *err;
	size_t errlen;
} Interp;

/* Records the first error only: later ones are usually consequences; data
** says whether the given data caused it (interp_run reports it as the
** user's: a gathered index or offsets out of range). */
static void vfail(Interp *in, int data, const char *fmt, va_list ap)
{
	if (in->failed)
		return;
	in->failed = 1, in->data_failed = data;
	vsnprintf(in->err, in->errlen, fmt, ap);
}

__attribute__((format(printf, 2, 3))) static void fail(Interp *in, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(in, 0, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void fail_data(Interp *in, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(in, 1, fmt, ap);
	va_end(ap);
}

/* Float to integer for data read from i32/bool buffers and int params:
** values are integral already; the clamps only keep odd values (e.g. the
** -inf of an empty int max) from being undefined behaviour. */
static long d2l(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 9.2e18)
		return LONG_MAX;
	if (x <= -9.2e18)
		return LONG_MIN;
	return (long)x;
}

/* Wrapping arithmetic: int overflow in user index math must not be UB. */
static long wrap_add(long x, long y)
{
	return (long)((unsigned long)x + (unsigned long)y);
}
static long wrap_sub(long x, long y)
{
	return (long)((unsigned long)x - (unsigned long)y);
}
static long wrap_mul(long x, long y)
{
	return (long)((unsigned long)x * (unsigned long)y);
}

/* Floor division and modulo without the LONG_MIN / -1 trap. */
static long safe_div(long x, long y)
{
	if (y == -1)
		return wrap_sub(0, x);
	return floordiv(x, y);
}

static long safe_mod(long x, long y)
{
	return y == -1 ? 0 : floormod(x, y);
}

/* NaN-propagating max/min, like MLIR's arith.maximumf/minimumf. */
static double fmax_nan(double x, double y)
{
	return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
}
static double fmin_nan(double x, double y)
{
	return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
}

static double ev_num(Interp *in, const Expr *e);
static long ev_int(Interp *in, const Expr *e);

/* Address of tensor[args] after a bounds check; NULL (and an error) when out
** of range or when the tensor has not been computed yet. */
static const double *access(Interp *in, const Expr *e)
{
	const Tensor *t = e->tensor;
	if (!in->buf[t->id]) {
		fail(in, "'%s' is read before it is computed", t->name);
		return NULL;
	}
	if (e->nargs != t->rank) {
		fail(in, "'%s' accessed with %d indices, rank is %d", t->name, e->nargs, t->rank);
		return NULL;
	}
	long off = 0;
	for (int k = 0; k < t->rank; k++) {
		long i = ev_int(in, e->args[k]);
		if (i < 0 || i >= in->size[t->id][k]) {
			(expr_reads_any(e->args[k]) ? fail_data : fail)(
			    in, "index %ld of dimension %d of '%s' is out of range [0, %ld)", i, k,
			    t->name, in->size[t->id][k]);
			return NULL;
		}
		off += i * in->stride[t->id][k];
	}
	return in->buf[t->id] + off;
}

/* Comparisons look at the operand type: floats compare as f64, ints and
** bools as 64-bit integers. */
static long ev_compare(Interp *in, const Expr *e)
{
	const Expr *l = e->args[0], *r = e->args[1];
	if (l->type == VT_FLOAT || r->type == VT_FLOAT) {
		double x = ev_num(in, l), y = ev_num(in, r);
		switch ((Op)e->op) {
		case OP_LT: return x < y;
		case OP_LE: return x <= y;
		case OP_GT: return x > y;
		case OP_GE: return x >= y;
		case OP_EQ: return x == y;
		default: return x != y;
		}
	}
	long x = ev_int(in, l), y = ev_int(in, r);
	switch ((Op)e->op) {
	case OP_LT: return x < y;
	case OP_LE: return x <= y;
	case OP_GT: return x > y;
	case OP_GE: return x >= y;
	case OP_EQ: return x == y;
	default: return x != y;
	}
}

/* Binary operators on INT and BOOL values (and comparisons of anything). */
static long ev_int_binop(Interp *in, const Expr *e)
{
	Op op = (Op)e->op;
	if (op >= OP_LT && op <= OP_NE)
		return ev_compare(in, e);
	if (op == OP_AND) /* short-circuit: the right side may index by the left */
		return ev_int(in, e->args[0]) && ev_int(in, e->args[1]);
	if (op == OP_OR)
		return ev_int(in, e->args[0]) || ev_int(in, e->args[1]);
	long x = ev_int(in, e->args[0]), y = ev_int(in, e->args[1]);
	switch (op) {
	case OP_ADD: return wrap_add(x, y);
	case OP_SUB: return wrap_sub(x, y);
	case OP_MUL: return wrap_mul(x, y);
	case OP_DIV: return safe_div(x, y);
	case OP_MOD: return safe_mod(x, y);
	case OP_MAX: return x > y ? x : y;
	case OP_MIN: return x < y ? x : y;
	default: fail(in, "operator '%s' on integers", op_spelling(op)); return 0;
	}
}

/* Value of an INT or BOOL expression (bools are 0/1). */
static long ev_int(Interp *in, const Expr *e)
{
	switch (e->kind) {
	case EX_INT:
	case EX_BOOL: return e->ival;
	case EX_FLOAT: return d2l(e->fval);
	case EX_INDEX: return e->var >= 0 && e->var < MAX_VARS ? in->var[e->var] : 0;
	case EX_DIM: return in->b->dims[e->dim->id];
	case EX_PARAM: return d2l(in->b->params[e->param->id]);
	case EX_ACCESS: {
		const double *p = access(in, e);
		return p ? (e->type == VT_BOOL ? *p != 0 : d2l(*p)) : 0;
	}
	case EX_UNOP:
		return e->op == OP_NEG ? wrap_sub(0, ev_int(in, e->args[0]))
				       : !ev_int(in, e->args[0]);
	case EX_BINOP: return ev_int_binop(in, e);
	case EX_SELECT:
		return ev_int(in, e->args[0]) ? ev_int(in, e->args[1]) : ev_int(in, e->args[2]);
	case EX_CALL:
		if (e->op == FN_INT)
			return fn_int(ev_num(in, e->args[0]));
		if (e->op == FN_ILOG2)
			return fn_ilog2(ev_int(in, e->args[0]));
		fail(in, "function '%s' has no integer value", fn_name((Fn)e->op));
		return 0;
	default: fail(in, "expression kind %d has no integer value", (int)e->kind); return 0;
	}
}

/* Arithmetic on FLOAT values in f64. OP_MOD is int-only in the language;
** a floor modulo is given anyway rather than an error. */
static double ev_float_binop(Interp *in, const Expr *e)
{
	double x = ev_num(in, e->args[0]), y = ev_num(in, e->args[1]);
	switch ((Op)e->op) {
	case OP_ADD: return x + y;
	case OP_SUB: return x - y;
	case OP_MUL: return x * y;
	case OP_DIV: return x / y;
	case OP_MOD: return x - y * floor(x / y);
	case OP_MAX: return fmax_nan(x, y);
	case OP_MIN: return fmin_nan(x, y);
	default: fail(in, "operator '%s' on floats", op_spelling((Op)e->op)); return NAN;
	}
}

/* Value of an expression of any type as f64: FLOAT directly, INT and BOOL
** converted (how a stored int/bool result and a cast look). */
static double ev_num(Interp *in, const Expr *e)
{
	if (e->type != VT_FLOAT)
		return (double)ev_int(in, e);
	switch (e->kind) {
	case EX_FLOAT: return e->fval;
	case EX_INT:
	case EX_BOOL: return (double)e->ival;
	case EX_PARAM: return in->b->params[e->param->id];
	case EX_DIM: return (double)in->b->dims[e->dim->id];
	case EX_ACCESS: {
		const double *p = access(in, e);
		return p ? *p : 0.0;
	}
	case EX_UNOP: return -ev_num(in, e->args[0]);
	case EX_BINOP: return ev_float_binop(in, e);
	case EX_SELECT:
		return ev_int(in, e->args[0]) ? ev_num(in, e->args[1]) : ev_num(in, e->args[2]);
	case EX_CALL: return fn_apply((Fn)e->op, ev_num(in, e->args[0]));
	case EX_CAST: return ev_num(in, e->args[0]);
	default: fail(in, "expression kind %d has no float value", (int)e->kind); return NAN;
	}
}

/* Row-major odometer over var[lo..hi): returns 0 once it wraps around. */
static int next_point(long *var, const long *ext, int lo, int hi)
{
	for (int k = hi - 1; k >= lo; k--) {
		if (++var[k] < ext[k])
			return 1;
		var[k] = 0;
	}
	return 0;
}

/* Combines one body value into a reduction accumulator. */
static double combine(RedOp r, double acc, double v)
{
	switch (r) {
	case RED_SUM: return acc + v;
	case RED_PROD: return acc * v;
	case RED_MAX: return fmax_nan(acc, v);
	case RED_MIN: return fmin_nan(acc, v);
	default: return v;
	}
}

/* The value of out[p] at the current free point (vars 0..nfree set). */
static double eval_point(Interp *in, const Node *n, const long *ext)
{
	if (n->out->domain && !ev_int(in, n->out->domain))
		return 0.0;
	if (n->red == RED_NONE)
		return ev_num(in, n->body);
	double acc = redop_identity(n->red);
	int lo = n->nfree, hi = n->nfree + n->nred;
	/* A filter over free variables only has one value for the whole
	** reduction: test it once (expressions have no side effects). */
	unsigned long long red_mask = (hi >= 64 ? ~0ull : (1ull << hi) - 1) & ~((1ull << lo) - 1);
	const Expr *filter = n->filter;
	if (filter && !(expr_vars(filter) & red_mask)) {
		if (!ev_int(in, filter))
			return acc;
		filter = NULL;
	}
	for (int k = lo; k < hi; k++) {
		if (ext[k] <= 0)
			return acc;
		in->var[k] = 0;
	}
	do {
		if (!filter || ev_int(in, filter))
			acc = combine(n->red, acc, ev_num(in, n->body));
		if (in->failed)
			break;
	} while (next_point(in->var, ext, lo, hi));
	return acc;
}

/* Product of extents, or -1 when negative, overflowing or over the cap. */
static long checked_numel(const long *ext, int n)
{
	long p = 1;
	for (int k = 0; k < n; k++) {
		if (ext[k] < 0)
			return -1;
		if (ext[k] && p > INTERP_MAX_NUMEL / ext[k])
			return -1;
		p *= ext[k];
	}
	return p;
}

/* Iteration extents: the output's shape for free vars (checked against the
** node's own extent expressions), the extent expressions for reduced ones. */
static int node_extents(Interp *in, const Node *n, long *ext)
{
	const Tensor *t = n->out;
	if (n->nfree != t->rank || n->nfree < 0 || n->nred < 0 || n->nfree + n->nred > MAX_VARS) {
		fail(in, "node %d (%s): %d free and %d reduced variables for a rank-%d output",
		     n->id, t->name, n->nfree, n->nred, t->rank);
		return -1;
	}
	for (int k = 0; k < n->nfree + n->nred; k++) {
		long e = k < n->nfree ? in->size[t->id][k] : -1, v = e;
		const Expr *x = n->vars[k].extent;
		if ((k >= n->nfree || x) && (!x || expr_eval_extent(x, in->b->dims, &v))) {
			fail(in, "node %d (%s): cannot evaluate the extent of '%s'", n->id, t->name,
			     n->vars[k].name);
			return -1;
		}
		if (k < n->nfree && v != e) {
			fail(in,
			     "node %d (%s): extent of '%s' differs from the output's dimension %d",
			     n->id, t->name, n->vars[k].name, k);
			return -1;
		}
		e = v;
		if (e < 0) {
			fail(in, "node %d (%s): negative extent %ld for '%s'", n->id, t->name, e,
			     n->vars[k].name);
			return -1;
		}
		ext[k] = e;
	}
	return 0;
}

/* Stores the present points of a packed output, computed into a logical
** buffer, at their places in the caller's buffer (Pack): each place must
** be inside it and reached once, since two points of one place would
** leave the result to the order of the stores (a GPU's is none). */
static int store_packed(Interp *in, const Node *n, const long *ext, const double *val)
{
	const Tensor *t = n->out;
	const Pack *pk = t->pack;
	long size[MAX_VARS], numel = 1;
	for (int k = 0; k < pk->rank; k++) {
		if (expr_eval_extent(pk->shape[k], in->b->dims, &size[k]))
			return fail(in, "'%s' has a negative or too large shape", t->name), -1;
		numel *= size[k];
	}
	unsigned char *seen = calloc(numel ? (size_t)numel : 1, 1);
	if (!seen)
		return fail(in, "out of memory for '%s'", t->name), -1;
	double *buf = in->b->data[t->id];
	long p = 0;
	for (int k = 0; k < n->nfree; k++)
		in->var[k] = 0;
	do {
		if (t->domain && !ev_int(in, t->domain)) {
			p++;
			continue;
		}
		long at = 0;
		for (int k = 0; k < pk->rank && !in->failed; k++) {
			long x = ev_int(in, pk->at[k]);
			if (x < 0 || x >= size[k]) {
				fail_data(in, "'%s' stores a point at %ld in dimension %d of %ld",
					  t->name, x, k, size[k]);
				break;
			}
			at = at * size[k] + x;
		}
		if (!in->failed && seen[at])
			fail_data(in,
				  "'%s' stores two points at element %ld: the offsets '%s' overlap",
				  t->name, at, pk->table->name);
		if (in->failed)
			break;
		seen[at] = 1;
		buf[at] = val[p++];
	} while (next_point(in->var, ext, 0, n->nfree));
	free(seen);
	return in->failed ? -1 : 0;
}

/* Runs one node over its whole free space. */
static int run_node(Interp *in, const Node *n)
{
	const Tensor *t = n->out;
	long ext[MAX_VARS];
	if (node_extents(in, n, ext))
		return -1;
	if (t->kind == TK_IN) {
		fail(in, "node %d writes the input '%s'", n->id, t->name);
		return -1;
	}
	if (!in->buf[t->id]) {
		long numel = checked_numel(in->size[t->id], t->rank);
		in->buf[t->id] = calloc(numel ? (size_t)numel : 1, sizeof(double));
		in->owned[t->id] = 1;
		if (!in->buf[t->id]) {
			fail(in, "out of memory for '%s' (%ld elements)", t->name, numel);
			return -1;
		}
	}
	double *out = in->buf[t->id];
	for (int k = 0; k < n->nfree; k++) {
		if (ext[k] == 0)
			return 0;
		in->var[k] = 0;
	}
	long p = 0;
	do {
		out[p++] = eval_point(in, n, ext);
		if (in->failed)
			return -1;
	} while (next_point(in->var, ext, 0, n->nfree));
	return t->pack ? store_packed(in, n, ext, out) : 0;
}

/* Shapes and strides of every tensor, with the size guard, and a check that
** the caller bound every input and output. */
static int setup(Interp *in)
{
	const Cascade *c = in->c;
	int nt = c->tensors.n, total = 0;
	for (int i = 0; i < nt; i++)
		total += ((Tensor *)c->tensors.v[i])->rank;
	in->buf = calloc((size_t)nt + 1, sizeof *in->buf);
	in->owned = calloc((size_t)nt + 1, sizeof *in->owned);
	in->size = calloc((size_t)nt + 1, sizeof *in->size);
	in->stride = calloc((size_t)nt + 1, sizeof *in->stride);
	in->sizemem = calloc(2 * (size_t)total + 1, sizeof *in->sizemem);
	if (!in->buf || !in->owned || !in->size || !in->stride || !in->sizemem) {
		fail(in, "out of memory");
		return -1;
	}
	long *mem = in->sizemem;
	for (int i = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->id != i) {
			fail(in, "tensor '%s' has id %d at position %d", t->name, t->id, i);
			return -1;
		}
		in->size[i] = mem, in->stride[i] = mem + t->rank;
		mem += 2 * t->rank;
		int bad = 0;
		for (int k = 0; k < t->rank; k++)
			bad |= expr_eval_extent(t->shape[k], in->b->dims, &in->size[i][k]);
		if (bad || checked_numel(in->size[i], t->rank) < 0) {
			fail(in, "tensor '%s' has a negative or too large shape", t->name);
			return -1;
		}
		long s = 1;
		for (int k = t->rank - 1; k >= 0; k--)
			in->stride[i][k] = s, s *= in->size[i][k];
		if (t->kind != TK_TEMP) {
			in->buf[i] = in->b->data ? in->b->data[i] : NULL;
			if (!in->buf[i]) {
				fail(in, "no buffer bound for %s '%s'",
				     t->kind == TK_IN ? "input" : "output", t->name);
				return -1;
			}
			if (t->pack)
				in->buf[i] = NULL; /* its node computes the logical tensor */
		}
	}
	return 0;
}

/* Frees what setup and the nodes allocated; the caller's buffers stay. */
static void teardown(Interp *in)
{
	for (int i = 0; in->buf && in->owned && i < in->c->tensors.n; i++)
		if (in->owned[i])
			free(in->buf[i]);
	free(in->buf);
	free(in->owned);
	free(in->size);
	free(in->stride);
	free(in->sizemem);
}

/* Nodes in order (they are topologically sorted); stops at the first error:
** returns 1 where the given data caused it, -1 for any other. */
int interp_run(const Binding *b, char *err, size_t errlen)
{
	Interp in;
	memset(&in, 0, sizeof in);
	in.b = b, in.c = b->c, in.err = err, in.errlen = errlen;
	if (errlen)
		err[0] = 0;
	if (!setup(&in)) {
		for (int i = 0; i < in.c->nodes.n && !in.failed; i++)
			run_node(&in, in.c->nodes.v[i]);
	}
	teardown(&in);
	return in.failed ? (in.data_failed ? 1 : -1) : 0;
}
