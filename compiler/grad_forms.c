/*
** compiler/grad_forms.c: the backward rewritten into the forms the GPU's
** kernels take, before and while grad_split.c cuts it: an incoming gradient
** scaled per row substituted into its GEMMs, signs and factors that do not
** read a sum's index taken out of it, sums over several indices nested so
** that the inner one is a tile or an output the kernels already compute,
** (nodes computed twice are then made one by rewrite.c's CSE,
** plan_merge_same).
*/
#include <string.h>

#include "grad_cut.h"

/* The product of f[0..n) (factors of a body, shared, not copied), or
** NULL for none. */
static Expr *product(Arena *a, const Expr **f, int n)
{
	Expr *r = NULL;
	for (int k = 0; k < n; k++)
		r = r ? expr_binop(a, OP_MUL, r, (Expr *)f[k]) : (Expr *)f[k];
	return r;
}

/* The output of node m, the part of gradient node x that a kernel writes
** (x's name and suffix, over m's free variables): a temporary of the
** backward (not the caller's), f32, an output of the kernel and an input of
** the row pass that sums the parts (cascade_piece). */
Tensor *grad_part_tensor(Arena *a, Cascade *b, const Node *x, Node *m, const char *suffix)
{
	Tensor *t = ARENA_NEW(a, Tensor);
	*t = *x->out;
	t->name = arena_printf(a, "%s%s", x->out->name, suffix);
	t->kind = TK_TEMP, t->dtype = DT_F32, t->trainable = 0, t->domain = NULL;
	t->pack = NULL; /* a part lies in the workspace as it is */
	t->rank = m->nfree, t->id = b->tensors.n;
	t->shape = ARENA_ARRAY(a, Expr *, m->nfree + 1);
	for (int v = 0; v < m->nfree; v++)
		t->shape[v] = m->vars[v].extent;
	t->def = m, m->out = t;
	ptrvec_push(a, &b->tensors, t);
	return t;
}

const Tensor *grad_forward_of(const Cascade *fwd, const char *name)
{
	if (name[0] != 'd' || cascade_tensor(fwd, name))
		return NULL;
	return cascade_tensor(fwd, name + (name[1] == '_' ? 2 : 1));
}

/* The forward output whose incoming gradient x is (dO for O), or NULL. */
const Tensor *grad_output_of(const Cascade *fwd, const Tensor *x)
{
	const Tensor *o = x->kind == TK_IN ? grad_forward_of(fwd, x->name) : NULL;
	return o && o->kind == TK_OUT && tensor_buf_rank(o) == x->rank ? o : NULL;
}

/* Whether e reads an incoming gradient (the divisor of one scaled by
** grad_inline_incoming must not). */
static int reads_gradient(const Cascade *fwd, const Expr *e)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && grad_output_of(fwd, e->tensor))
		return 1;
	for (int k = 0; k < e->nargs; k++)
		if (reads_gradient(fwd, e->args[k]))
			return 1;
	return 0;
}

/* Every read of e's tensor t (node d's output, elementwise) replaced by
** d's body at the read's subscripts. */
static Expr *substitute_reads(Arena *a, Expr *e, const Node *d)
{
	if (!e)
		return e;
	if (e->kind == EX_ACCESS && e->tensor == d->out)
		return expr_subst(a, d->body, e->args, e->nargs);
	for (int k = 0; k < e->nargs; k++)
		e->args[k] = substitute_reads(a, e->args[k], d);
	return e;
}

/* e with each product of a quotient, (x / z) * y, made (x * y) / z: the
** divisor at the top, where grad_factor_sums and the GEMMs look for it. */
static Expr *hoist_divisors(Arena *a, Expr *e)
{
	if (!e || e->kind == EX_ACCESS)
		return e;
	for (int k = 0; k < e->nargs; k++)
		e->args[k] = hoist_divisors(a, e->args[k]);
	if (e->kind != EX_BINOP || e->op != OP_MUL || e->type != VT_FLOAT)
		return e;
	for (int side = 0; side < 2; side++) {
		Expr *q = e->args[side];
		if (q->kind == EX_BINOP && q->op == OP_DIV && q->type == VT_FLOAT) {
			Expr *x = side ? expr_binop(a, OP_MUL, e->args[0], q->args[0])
				       : expr_binop(a, OP_MUL, q->args[0], e->args[1]);
			return expr_binop(a, OP_DIV, hoist_divisors(a, x), q->args[1]);
		}
	}
	return e;
}

/* An incoming gradient scaled per row (a sink's dO / Z, where the sum Z is
** not rewritten to 1 by grad_lse_for_gpu) is substituted into its readers,
** where it is a GEMM's operand: dO stays the bf16 input the tensor cores
** read, and grad_factor_sums takes the divisor out of the sum over e. Kept as a
** temporary, the row pass would write it in f32 over the value index. */
void grad_inline_incoming(Arena *a, const Cascade *fwd, Cascade *b)
{
	for (int i = 0; i < b->nodes.n; i++) {
		const Node *d = b->nodes.v[i];
		const Expr *q = d->body;
		if (d->red != RED_NONE || d->filter || d->out->kind != TK_TEMP ||
		    q->kind != EX_BINOP || q->op != OP_DIV || q->type != VT_FLOAT ||
		    q->args[0]->kind != EX_ACCESS || !grad_output_of(fwd, q->args[0]->tensor) ||
		    reads_gradient(fwd, q->args[1]))
			continue;
		for (int j = i + 1; j < b->nodes.n; j++) {
			Node *y = b->nodes.v[j];
			int reads = expr_reads(y->body, d->out);
			y->body = substitute_reads(a, y->body, d);
			y->filter = substitute_reads(a, y->filter, d);
			if (reads)
				y->body = hoist_divisors(a, y->body);
		}
	}
}

/* The terms of an additive expression e (sums, differences, negations,
** constant multiples) with their coefficients, equal terms made one:
** appended to t/k[0..n), up to max; returns the new count, or -1 past max. */
static int linear_terms(const Expr *e, double c, const Expr **t, double *k, int n, int max)
{
	if (n < 0)
		return n;
	if (e->type == VT_FLOAT && e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_SUB))
		return linear_terms(e->args[1], e->op == OP_SUB ? -c : c, t, k,
				    linear_terms(e->args[0], c, t, k, n, max), max);
	if (e->type == VT_FLOAT && e->kind == EX_UNOP && e->op == OP_NEG)
		return linear_terms(e->args[0], -c, t, k, n, max);
	if (e->type == VT_FLOAT && e->kind == EX_BINOP && e->op == OP_MUL)
		for (int side = 0; side < 2; side++)
			if (e->args[side]->kind == EX_FLOAT)
				return linear_terms(e->args[!side], c * e->args[side]->fval, t, k,
						    n, max);
	for (int m = 0; m < n; m++)
		if (expr_equal(t[m], e)) {
			k[m] += c;
			return n;
		}
	if (n == max)
		return -1;
	t[n] = e, k[n] = c;
	return n + 1;
}

/* coef * e, without the multiplication where coef is 1 or -1. */
static Expr *scaled(Arena *a, double coef, Expr *e)
{
	return coef == 1    ? e
	       : coef == -1 ? expr_neg(a, e)
			    : expr_binop(a, OP_MUL, expr_float(a, coef), e);
}

/* A gradient summed over one index whose body has a factor that adds terms
** that read the index and terms that do not (Gaussian attention's dQ =
** sum[j](dS ((Q - K) + (Q - K)))) becomes the terms that do not read it
** times the sum of the other factors, plus a sum per term that reads it
** (dQ = 2 Q sum[j](dS) - 2 sum[j](dS K)): each sum a kernel's part (a
** row sum, a contraction with a bf16 input), the gradient their sum in a
** row pass (grad_split.c's gradients summed from parts). */
void grad_split_linear(Arena *a, Cascade *b)
{
	for (int i = 0; i < b->nodes.n; i++) {
		Node *x = b->nodes.v[i];
		const Expr *f[16], *t[16];
		double k[16];
		int r = x->nfree, n = 0, at = -1, nt = 0, nin = 0;
		if (x->out->kind == TK_OUT && x->red == RED_SUM && x->nred == 1 &&
		    x->out->type == VT_FLOAT)
			n = expr_factors(x->body, f, 16);
		for (int m = 0; m < n && n <= 16 && at < 0; m++) {
			nt = linear_terms(f[m], 1, t, k, 0, 16);
			nin = 0;
			for (int q = 0; q < nt; q++)
				nin += expr_vars(t[q]) >> r & 1;
			if (nt > 1 && nin && nin < nt)
				at = m;
		}
		if (at < 0)
			continue;
		const Expr *rest[16];
		int nr = 0;
		for (int m = 0; m < n; m++)
			if (m != at)
				rest[nr++] = f[m];
		Expr *A = nr ? product(a, rest, nr) : expr_float(a, 1);
		/* the sum of the other factors, over the free indices they read */
		unsigned long long used = expr_vars(A) | (x->filter ? expr_vars(x->filter) : 0);
		Node *s = ARENA_NEW(a, Node);
		*s = *x;
		s->vars = ARENA_ARRAY(a, IndexVar, r + 2);
		Expr **sub = ARENA_ARRAY(a, Expr *, r + 2),
		     *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
		rd->args = ARENA_ARRAY(a, Expr *, r + 1);
		s->nfree = 0;
		for (int v = 0; v <= r; v++)
			if (v == r || (used >> v & 1)) {
				if (v < r)
					rd->args[rd->nargs++] = expr_index(a, v);
				sub[v] = expr_index(a, s->nfree);
				s->vars[s->nfree++] = x->vars[v];
			} else
				sub[v] = expr_int(a, 0);
		s->nfree--;
		s->body = expr_subst(a, A, sub, r + 1);
		s->filter = x->filter ? expr_subst(a, x->filter, sub, r + 1) : NULL;
		rd->tensor = grad_part_tensor(a, b, x, s, ".rows");
		Expr *out = NULL, *body = NULL;
		int at_node = i;
		cascade_insert_node(a, b, at_node++, s);
		for (int q = 0; q < nt; q++) {
			if (k[q] == 0)
				continue;
			if (!(expr_vars(t[q]) >> r & 1)) {
				Expr *e = scaled(a, k[q], (Expr *)t[q]);
				out = out ? expr_binop(a, OP_ADD, out, e) : e;
				continue;
			}
			/* a sum per term that reads the index */
			Node *m = ARENA_NEW(a, Node);
			*m = *x;
			m->body = expr_binop(a, OP_MUL, A, (Expr *)t[q]);
			Expr *pr = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
			pr->tensor = grad_part_tensor(a, b, x, m, arena_printf(a, ".t%d", q));
			pr->nargs = r;
			pr->args = ARENA_ARRAY(a, Expr *, r + 1);
			for (int v = 0; v < r; v++)
				pr->args[v] = expr_index(a, v);
			cascade_insert_node(a, b, at_node++, m);
			Expr *e = scaled(a, k[q], pr);
			body = body ? expr_binop(a, OP_ADD, body, e) : e;
		}
		if (out) {
			Expr *e = expr_binop(a, OP_MUL, out, rd);
			body = body ? expr_binop(a, OP_ADD, e, body) : e;
		}
		x->red = RED_NONE, x->nred = 0, x->filter = NULL;
		x->body = body ? body : expr_float(a, 0);
		i = at_node;
	}
}

/* A sum over one index whose body has factors that do not read it
** (sigmoid's dS = sum[e](dO V s'(S)), s' per (i, j)) becomes the sum of the
** others (a contraction the tensor cores take, dP = sum[e](dO V)) times
** them, as a node of its own after it. The filter must not read the
** reduced index. */
void grad_factor_sums(Arena *a, Cascade *b)
{
	PtrVec nodes = {0};
	for (int i = 0; i < b->nodes.n; i++) {
		Node *x = b->nodes.v[i];
		const Expr *f[16], *dep[16], *ind[16], *num = x->body, *div[8];
		int r = x->nfree, nd = 0, ni = 0, ndiv = 0, neg = 0;
		/* a sign leaves the sum, and divisors that do not read the reduced
		** index too (dP = sum[e](dO V) / Z where the forward saved no
		** logsumexp) */
		if (num->kind == EX_UNOP && num->op == OP_NEG && num->type == VT_FLOAT &&
		    x->red == RED_SUM)
			num = num->args[0], neg = 1;
		while (num->kind == EX_BINOP && num->op == OP_DIV && num->type == VT_FLOAT &&
		       !(expr_vars(num->args[1]) >> r & 1) && ndiv < 8)
			div[ndiv++] = num->args[1], num = num->args[0];
		int n = x->red == RED_SUM && x->nred == 1 && x->out->type == VT_FLOAT
			    ? expr_factors(num, f, 16)
			    : 0;
		if (n > 16 || (x->filter && (expr_vars(x->filter) >> r & 1)))
			n = 0;
		for (int k = 0; k < n; k++) {
			if (expr_vars(f[k]) >> r & 1)
				dep[nd++] = f[k];
			else
				ind[ni++] = f[k];
		}
		if (!nd || !(ni + ndiv + neg)) {
			ptrvec_push(a, &nodes, x);
			continue;
		}
		Tensor *t = ARENA_NEW(a, Tensor);
		*t = *x->out;
		t->name = arena_printf(a, "%s.c", x->out->name);
		t->kind = TK_TEMP, t->dtype = DT_F32, t->trainable = 0;
		t->id = b->tensors.n;
		ptrvec_push(a, &b->tensors, t);
		Node *c = ARENA_NEW(a, Node);
		*c = *x;
		c->out = t, c->body = product(a, dep, nd);
		t->def = c;
		ptrvec_push(a, &nodes, c);
		Expr *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
		rd->tensor = t, rd->nargs = x->nfree;
		rd->args = ARENA_ARRAY(a, Expr *, x->nfree + 1);
		for (int v = 0; v < x->nfree; v++)
			rd->args[v] = expr_index(a, v);
		x->red = RED_NONE, x->nred = 0;
		x->body = ni ? expr_binop(a, OP_MUL, rd, product(a, ind, ni)) : rd;
		while (ndiv)
			x->body = expr_binop(a, OP_DIV, x->body, (Expr *)div[--ndiv]);
		if (neg)
			x->body = expr_neg(a, x->body);
		ptrvec_push(a, &nodes, x);
	}
	for (int i = 0; i < nodes.n; i++)
		((Node *)nodes.v[i])->id = i;
	b->nodes = nodes;
}

/* The variables e's plain subscripts name, appended to order[0..n) in
** the order they first appear; returns the new count. */
static int vars_in_order(const Expr *e, int *order, int n)
{
	if (e->kind == EX_INDEX) {
		for (int k = 0; k < n; k++)
			if (order[k] == e->var)
				return n;
		order[n++] = e->var;
		return n;
	}
	for (int k = 0; k < e->nargs && n < 63; k++)
		n = vars_in_order(e->args[k], order, n);
	return n;
}

/* A sum over several indices of a product, as a sum over one of them (e)
** nested inside the others: T = sum[e](the factors that read e), and the
** node sums T times the rest over the other indices. Which index:
**   a row value (the query rows free), the keys: FlashAttention's row term
**     of a normaliser with no saved output, differential attention's
**     sum[e, j](dO P1 V), becomes sum[e](dO O1) with O1 = sum[j](P1 V),
**     the output a first pass computes (as the forward does);
**   a trainable input's gradient (neither free), an index of neither the
**     rows nor the keys: dlam[h] = sum[b, i, e, j](-(dO V P2 / Z2)) becomes
**     sum[b, i, j](-(P2 T / Z2)) with T = sum[e](dO V), the tile dP the
**     kernels already multiply out (plan_merge_same finds it), and
**     split_scalar then takes the rest.
** The filter goes with T where it reads e. One node from node `from` on:
** T is inserted before it; returns the position after it, or -1 where no
** node nests (the plan's classes are stale after an insertion). */
int grad_nest_sum(Arena *a, Plan *bp, int I, int J, int from)
{
	Cascade *b = bp->c;
	for (int i = from; i < b->nodes.n; i++) {
		Node *x = b->nodes.v[i];
		if (x->red != RED_SUM || x->nred < 2 || x->out->type != VT_FLOAT)
			continue;
		int rows = plan_node_class(bp, i, I) & 1;
		if (!rows && !(plan_node_class(bp, i, I) & 2 && plan_node_class(bp, i, J) & 2))
			continue;
		/* x's body: [-] product / divisors */
		const Expr *num = x->body, *f[16], *div[8];
		int neg = 0, ndiv = 0;
		if (num->kind == EX_UNOP && num->op == OP_NEG)
			num = num->args[0], neg = 1;
		while (num->kind == EX_BINOP && num->op == OP_DIV && num->type == VT_FLOAT &&
		       ndiv < 8)
			div[ndiv++] = num->args[1], num = num->args[0];
		int nf = expr_factors(num, f, 16);
		if (nf > 16)
			continue;
		/* the first index of the kind that splits the factors */
		int e = -1, ni = 0, no = 0, filter_in = 0;
		unsigned long long bit = 0, keep = 0, fv = expr_vars(x->filter);
		const Expr *in[16], *out[16];
		for (int v = x->nfree; v < x->nfree + x->nred && e < 0; v++) {
			int c = bp->cls[i][v], ok = rows ? c == J : c != I && c != J;
			bit = 1ull << v, keep = 0, ni = no = 0;
			for (int k = 0; k < ndiv; k++)
				ok &= !(expr_vars(div[k]) & bit);
			for (int k = 0; k < nf && ok; k++) {
				if (expr_vars(f[k]) & bit)
					in[ni++] = f[k], keep |= expr_vars(f[k]);
				else
					out[no++] = f[k];
			}
			filter_in = (fv & bit) != 0;
			if (ok && ni >= 2 && no && !(filter_in && (fv & ~(keep | bit))))
				e = v;
		}
		if (e < 0)
			continue;
		/* T over the variables the inner factors read, in the order
		** their subscripts name them (so that T is written as the tile
		** the kernels already compute, dP[b, h, i, j]), then e */
		keep &= ~bit;
		int nv = x->nfree + x->nred, tf = 0, map[64], order[64], no_ = 0;
		for (int k = 0; k < ni; k++)
			no_ = vars_in_order(in[k], order, no_);
		for (int v = 0; v < nv; v++)
			order[no_++] = v; /* any not read plainly, in x's order */
		IndexVar *tv = ARENA_ARRAY(a, IndexVar, nv + 1);
		Expr **sub = ARENA_ARRAY(a, Expr *, nv + 1);
		for (int v = 0; v < nv; v++)
			map[v] = -1;
		for (int k = 0; k < no_; k++) {
			int v = order[k];
			if (keep >> v & 1 && map[v] < 0)
				map[v] = tf, tv[tf++] = x->vars[v];
		}
		map[e] = tf, tv[tf] = x->vars[e];
		for (int v = 0; v < nv; v++)
			sub[v] = expr_index(a, map[v] < 0 ? 0 : map[v]);
		Node *t = ARENA_NEW(a, Node);
		*t = *x;
		t->nfree = tf, t->nred = 1, t->vars = tv;
		t->body = expr_subst(a, product(a, in, ni), sub, nv);
		t->filter =
		    x->filter && !(fv & ~(keep | bit)) ? expr_subst(a, x->filter, sub, nv) : NULL;
		Tensor *tt = grad_part_tensor(a, b, x, t, ".inner");
		/* x: e dropped, the variables after it one lower */
		Expr *rd = expr_new(a, EX_ACCESS, VT_FLOAT, x->loc);
		rd->tensor = tt, rd->nargs = tf;
		rd->args = ARENA_ARRAY(a, Expr *, tf + 1);
		for (int v = 0; v < nv; v++)
			if (keep >> v & 1)
				rd->args[map[v]] = expr_index(a, v); /* T's order */
		Expr *body = expr_binop(a, OP_MUL, product(a, out, no), rd);
		while (ndiv)
			body = expr_binop(a, OP_DIV, body, (Expr *)div[--ndiv]);
		if (neg)
			body = expr_neg(a, body);
		IndexVar *xv = ARENA_ARRAY(a, IndexVar, nv);
		for (int v = 0, k = 0; v < nv; v++) {
			sub[v] = expr_index(a, v < e ? v : v - 1);
			if (v != e)
				xv[k++] = x->vars[v];
		}
		x->body = expr_subst(a, body, sub, nv);
		x->filter = x->filter && !filter_in ? expr_subst(a, x->filter, sub, nv) : NULL;
		x->vars = xv, x->nred--;
		cascade_insert_node(a, b, i, t);
		return i + 2;
	}
	return -1;
}
