/*
** compiler/rewrite.c: the algebraic rewrites that bring a cascade to one pass
** (research/einsum.md §3), applied to the plan's copy of the cascade.
**
**   reindex a temporary read only as T[.., x / G, x % G, ..] is computed
**           over x (compiler/reindex.c): GQA written with O[b, hk*G+g, ..]
**           gets one index space for its heads, as the kernel's grid needs.
**   CSE     identical reductions are computed once (logsumexp and softmax
**           of the same scores share their max).
**   R1      defer: in sum[j](c * h_j) a factor c that does not depend on j
**           moves after the reduction: sum[j](E/Z * V) = sum[j](E*V) / Z.
**           Where c divides by a sum that is empty, the result is the
**           empty reduction's identity (0), as before the rewrite.
**   R3      fission over +/-: sum[j]((A - B) * V) = sum[j](A*V) - sum[j](B*V),
**           so each term can be deferred and rebased on its own reference
**           (differential attention: two running states, one V stream).
**   R2      rebase: a running sum whose terms depend on running maxes r_m
**           only as exp(-k_m r_m) * h(x) (the ratio test: g(x,r')/g(x,r) is
**           independent of x) is carried across tiles and rescaled by
**           rho(r, r') = exp(k (r - r')) whenever r grows. A reference may be
**           any function of running maxes and stream-independent values:
**           max(max[j] S, sink[h]) is a running max whose initial value is
**           the sink (R4).
**   R5      split by indices (GPU targets): a tile's contraction whose terms
**           read different indices, sum[d]((q - k)^2) = sum[d](q q)
**           - 2 sum[d](q k) + sum[d](k k), becomes one contraction per set
**           of indices: the tensor cores take q . k, and the sums per row
**           and per key run before the stream (compiler/pass_split.c).
**   R6      one term (compiler/onehot.c): sum[k](T[k] where k == e) is the
**           read T[e] where e lies in k's range, else the identity.
** R1, R3, R5 and R6 rewrite the IR (meaning preserved); R2 is recorded in the
** plan (which node reads which running value, and with what rescale).
*/
#include <math.h>
#include <string.h>

#include "plan.h"

/* ---- IR surgery --------------------------------------------------------- */

static int tensor_used(const Cascade *c, const Tensor *t)
{
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = c->nodes.v[i];
		if (expr_reads(n->body, t) || expr_reads(n->filter, t))
			return 1;
	}
	for (int i = 0; i < c->tensors.n; i++)
		if (expr_reads(((Tensor *)c->tensors.v[i])->domain, t))
			return 1;
	return 0;
}

static void renumber(Cascade *c)
{
	/* node ids change: plan_passes must not keep stale per-node facts */
	for (int i = 0; i < c->nodes.n; i++)
		((Node *)c->nodes.v[i])->id = i;
	for (int i = 0; i < c->tensors.n; i++)
		((Tensor *)c->tensors.v[i])->id = i;
}

/* Drops temporaries nothing reads (after CSE redirected their readers). */
static void remove_dead(Cascade *c)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = c->nodes.n - 1; i >= 0; i--) {
			Node *n = c->nodes.v[i];
			if (n->out->kind != TK_TEMP || tensor_used(c, n->out))
				continue;
			memmove(&c->nodes.v[i], &c->nodes.v[i + 1],
				sizeof(void *) * (size_t)(c->nodes.n - i - 1));
			c->nodes.n--;
			for (int t = 0; t < c->tensors.n; t++)
				if (c->tensors.v[t] == n->out) {
					memmove(&c->tensors.v[t], &c->tensors.v[t + 1],
						sizeof(void *) * (size_t)(c->tensors.n - t - 1));
					c->tensors.n--;
					break;
				}
			changed = 1;
		}
	}
	renumber(c);
}

static void insert_node(Arena *a, Cascade *c, int at, Node *n)
{
	ptrvec_push(a, &c->nodes, NULL);
	memmove(&c->nodes.v[at + 1], &c->nodes.v[at],
		sizeof(void *) * (size_t)(c->nodes.n - 1 - at));
	c->nodes.v[at] = n;
	renumber(c);
}

static int vars_equal(const Node *x, const Node *y)
{
	if (x->nfree != y->nfree || x->nred != y->nred)
		return 0;
	for (int v = 0; v < x->nfree + x->nred; v++)
		if (!expr_equal(x->vars[v].extent, y->vars[v].extent))
			return 0;
	return 1;
}

/* The body of node n, or where it only reads an element-wise map (no
** reduction, no filter of its own) at n's own indices in order, the map's
** body, which then means the same at every point: so that a reduction of
** exp(S - m) written out (logsumexp's) is seen to be softmax's reduction
** of its map O.softmax.exp. */
static const Expr *map_inlined(const Node *n)
{
	const Expr *b = n->body;
	if (!b || b->kind != EX_ACCESS || b->tensor->kind != TK_TEMP || !b->tensor->def)
		return b;
	const Node *m = b->tensor->def;
	if (m->nred || m->filter || m->nfree != n->nfree + n->nred || b->nargs != m->nfree)
		return b;
	for (int v = 0; v < m->nfree; v++)
		if (b->args[v]->kind != EX_INDEX || b->args[v]->var != v ||
		    !expr_equal(m->vars[v].extent, n->vars[v].extent))
			return b;
	return m->body;
}

void plan_merge_same(Cascade *c, void (*merged)(void *, const Node *, const Node *), void *ud)
{
	for (int i = 0; i < c->nodes.n; i++) {
		Node *x = c->nodes.v[i];
		for (int j = i + 1; j < c->nodes.n; j++) {
			Node *y = c->nodes.v[j];
			if (y->out->kind != TK_TEMP || y->red != x->red || !vars_equal(x, y) ||
			    x->out->type != y->out->type ||
			    !expr_equal(map_inlined(x), map_inlined(y)) ||
			    !expr_equal(x->filter, y->filter))
				continue;
			for (int k = 0; k < c->nodes.n; k++) {
				Node *z = c->nodes.v[k];
				expr_redirect(z->body, y->out, x->out);
				expr_redirect(z->filter, y->out, x->out);
			}
			for (int t = 0; t < c->tensors.n; t++)
				expr_redirect(((Tensor *)c->tensors.v[t])->domain, y->out, x->out);
			if (merged)
				merged(ud, y, x);
		}
	}
}

typedef struct CseNote {
	Plan *p;
	Arena *a;
} CseNote;

/* The CSE's line of --explain. */
static void cse_note(void *ud, const Node *y, const Node *x)
{
	const CseNote *n = ud;
	plan_note(n->p, n->a, y->loc, "CSE: %s is the same reduction as %s; computed once",
		  y->out->name, x->out->name);
}

/* Common subexpressions (plan_merge_same), then the nodes they leave
** dead removed. */
static void cse(Arena *a, Plan *p)
{
	CseNote n = {p, a};
	plan_merge_same(p->c, cse_note, &n);
	remove_dead(p->c);
}

/* ---- R1 defer and R3 fission ---------------------------------------------- */

typedef struct Factors {
	Expr *num[32], *den[32];
	int nnum, nden, neg;
} Factors;

/* Flattens a product/quotient into numerator and denominator factors. */
static int factorize(Expr *e, Factors *f, int in_den)
{
	if (e->kind == EX_BINOP && (e->op == OP_MUL || e->op == OP_DIV) && e->type == VT_FLOAT)
		return factorize(e->args[0], f, in_den) &&
		       factorize(e->args[1], f, e->op == OP_DIV ? !in_den : in_den);
	if (e->kind == EX_UNOP && e->op == OP_NEG) {
		f->neg ^= 1;
		return factorize(e->args[0], f, in_den);
	}
	if (in_den ? f->nden == 32 : f->nnum == 32)
		return 0;
	if (in_den)
		f->den[f->nden++] = e;
	else
		f->num[f->nnum++] = e;
	return 1;
}

static Expr *product(Arena *a, Expr **xs, int n)
{
	Expr *r = NULL;
	for (int i = 0; i < n; i++)
		r = r ? expr_binop(a, OP_MUL, r, xs[i]) : xs[i];
	return r ? r : expr_float(a, 1.0);
}

/* Reads a value complete only after a pass (a running or post-stream node). */
static int reads_completed(const Plan *p, const Expr *e)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor->def) {
		NodeRole r = p->np[e->tensor->def->id].role;
		if (r == ROLE_RUNNING || r == ROLE_EPILOGUE)
			return 1;
	}
	for (int i = 0; i < e->nargs; i++)
		if (reads_completed(p, e->args[i]))
			return 1;
	return 0;
}

static Tensor *new_temp(Arena *a, Cascade *c, const Node *like, const char *name)
{
	Tensor *t = ARENA_NEW(a, Tensor);
	t->name = name, t->kind = TK_TEMP, t->type = VT_FLOAT, t->dtype = DT_F32;
	t->rank = like->nfree, t->loc = like->loc;
	t->shape = ARENA_ARRAY(a, Expr *, like->nfree + 1);
	for (int k = 0; k < like->nfree; k++)
		t->shape[k] = like->vars[k].extent;
	t->domain = like->out->domain;
	t->id = c->tensors.n;
	ptrvec_push(a, &c->tensors, t);
	return t;
}

static Expr *access_free(Arena *a, Tensor *t, int nfree)
{
	Expr *e = expr_new(a, EX_ACCESS, t->type, t->loc);
	e->tensor = t;
	e->nargs = nfree;
	e->args = ARENA_ARRAY(a, Expr *, nfree + 1);
	for (int k = 0; k < nfree; k++)
		e->args[k] = expr_index(a, k);
	return e;
}

/* A sum node over the same space as x with another body, inserted before x. */
static Node *split_off(Arena *a, Plan *p, Node *x, Expr *body, const char *suffix)
{
	Cascade *c = p->c;
	Node *n = ARENA_NEW(a, Node);
	*n = *x;
	n->vars = ARENA_ARRAY(a, IndexVar, x->nfree + x->nred + 1);
	memcpy(n->vars, x->vars, sizeof(IndexVar) * (size_t)(x->nfree + x->nred));
	n->body = body;
	const char *name = arena_printf(a, "%s.%s", x->out->name, suffix);
	for (int k = 2; cascade_tensor(c, name); k++)
		name = arena_printf(a, "%s.%s%d", x->out->name, suffix, k);
	n->out = new_temp(a, c, x, name);
	n->out->def = n;
	n->origin = suffix;
	insert_node(a, c, x->id, n);
	return n;
}

/* Turns x into the element-wise finaliser `body` over its free indices. */
static void make_map(Arena *a, Node *x, Expr *body)
{
	x->red = RED_NONE;
	x->nred = 0;
	x->body = body;
	x->filter = x->out->domain;
	(void)a;
}

/* The identity of an empty sum survives the deferral: a denominator that is
** itself a (possibly empty) sum is 0 exactly when the row had no point. */
static Expr *guard_empty(Arena *a, Expr *value, Expr **den, int nden)
{
	for (int i = nden - 1; i >= 0; i--) {
		Expr *d = den[i];
		if (d->kind != EX_ACCESS || !d->tensor->def || d->tensor->def->red != RED_SUM)
			continue;
		Expr *s = expr_new(a, EX_SELECT, VT_FLOAT, value->loc);
		s->nargs = 3;
		s->args = ARENA_ARRAY(a, Expr *, 3);
		s->args[0] = expr_binop(a, OP_EQ, expr_copy(a, d), expr_float(a, 0.0));
		s->args[1] = expr_float(a, 0.0);
		s->args[2] = value;
		value = s;
	}
	return value;
}

static unsigned long long free_mask(const Node *x)
{
	return x->nfree >= 64 ? ~0ull : (1ull << x->nfree) - 1;
}

/* An element-wise temporary of the stream with a factor that is a completed
** value independent of the stream (A = SN / SD in the textbook cascade), or
** made of such temporaries: what R1 could move out if it could see it. */
static int map_reads_completed(const Plan *p, const Node *d, int depth)
{
	if (d->red != RED_NONE || d->out->kind != TK_TEMP || p->np[d->id].role != ROLE_TILE ||
	    depth > 16)
		return 0;
	Factors f = {0};
	if (factorize(d->body, &f, 0)) {
		int sv = p->np[d->id].svar;
		for (int i = 0; i < f.nnum + f.nden; i++) {
			Expr *x = i < f.nnum ? f.num[i] : f.den[i - f.nnum];
			if (reads_completed(p, x) && (sv < 0 || !(expr_vars(x) & (1ull << sv))))
				return 1;
		}
	}
	const Expr *todo[128];
	int n = 0;
	todo[n++] = d->body;
	while (n) {
		const Expr *e = todo[--n];
		if (e->kind == EX_ACCESS && e->tensor->def &&
		    map_reads_completed(p, e->tensor->def, depth + 1))
			return 1;
		for (int i = 0; i < e->nargs && n < 128; i++)
			todo[n++] = e->args[i];
	}
	return 0;
}

/* Fusion before R1: such temporaries are substituted into the sum, so that
** the completed factor becomes visible to the deferral. */
static Expr *inline_maps(Arena *a, const Plan *p, Expr *e, int *changed)
{
	if (e->kind == EX_ACCESS && e->tensor->def && map_reads_completed(p, e->tensor->def, 0)) {
		*changed = 1;
		Expr *b = expr_subst(a, e->tensor->def->body, e->args, e->nargs);
		return inline_maps(a, p, b, changed);
	}
	for (int i = 0; i < e->nargs; i++)
		e->args[i] = inline_maps(a, p, e->args[i], changed);
	return e;
}

/* R1 on one sum: returns 1 when it moved every completed value out. */
static int defer(Arena *a, Plan *p, Node *x)
{
	Factors f = {0};
	if (!factorize(x->body, &f, 0))
		return 0;
	Expr *in[64], *out_num[32], *out_den[32];
	int nin = 0, non = 0, nod = 0, inden[64];
	unsigned long long fm = free_mask(x);
	for (int i = 0; i < f.nnum + f.nden; i++) {
		int isden = i >= f.nnum;
		Expr *e = isden ? f.den[i - f.nnum] : f.num[i];
		if ((expr_vars(e) & ~fm) == 0 && reads_completed(p, e)) {
			if (isden)
				out_den[nod++] = e;
			else
				out_num[non++] = e;
		} else {
			inden[nin] = isden;
			in[nin++] = e;
		}
	}
	/* completed values left inside (a running max in an exponent) are R2's
	** business; R1 only needs to have moved something out */
	if (non + nod == 0)
		return 0;
	/* inner body: the factors left, keeping numerator / denominator */
	Expr *numer[64], *denom[64];
	int nn = 0, nd = 0;
	for (int i = 0; i < nin; i++) {
		if (inden[i])
			denom[nd++] = in[i];
		else
			numer[nn++] = in[i];
	}
	Expr *inner = product(a, numer, nn);
	if (nd)
		inner = expr_binop(a, OP_DIV, inner, product(a, denom, nd));
	if (f.neg)
		inner = expr_binop(a, OP_MUL, expr_float(a, -1.0), inner);
	Node *n = split_off(a, p, x, inner, "defer");
	Expr *val = access_free(a, n->out, x->nfree);
	if (non)
		val = expr_binop(a, OP_MUL, product(a, out_num, non), val);
	if (nod)
		val = expr_binop(a, OP_DIV, val, product(a, out_den, nod));
	val = guard_empty(a, val, out_den, nod);
	if (non) {
		/* an empty reduction is 0 before the rewrite; a moved factor (exp(-m)
		** of an empty row is inf) must not turn it into NaN */
		Expr *s = expr_new(a, EX_SELECT, VT_FLOAT, val->loc);
		s->nargs = 3;
		s->args = ARENA_ARRAY(a, Expr *, 3);
		s->args[0] =
		    expr_binop(a, OP_EQ, access_free(a, n->out, x->nfree), expr_float(a, 0.0));
		s->args[1] = expr_float(a, 0.0);
		s->args[2] = val;
		val = s;
	}
	const char *moved = expr_str(a, nod ? out_den[0] : out_num[0], x);
	make_map(a, x, val);
	plan_note(p, a, x->loc,
		  "R1 defer: %s: the factor %s does not depend on %s, so it is applied once after "
		  "the reduction (%s)",
		  x->out->name, moved, p->classes[p->stream].name, n->out->name);
	return 1;
}

typedef struct Term {
	Expr *e;
	int neg;
} Term;

/* Expands a body into signed terms, distributing products over sums. */
static int expand(Arena *a, Expr *e, int neg, Term *out, int *n, int cap)
{
	if (e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_SUB) && e->type == VT_FLOAT)
		return expand(a, e->args[0], neg, out, n, cap) &&
		       expand(a, e->args[1], e->op == OP_SUB ? !neg : neg, out, n, cap);
	if (e->kind == EX_UNOP && e->op == OP_NEG)
		return expand(a, e->args[0], !neg, out, n, cap);
	if (e->kind == EX_BINOP && (e->op == OP_MUL || e->op == OP_DIV) && e->type == VT_FLOAT) {
		Term l[16], r[16];
		int nl = 0, nr = 0;
		if (!expand(a, e->args[0], 0, l, &nl, 16))
			return 0;
		if (e->op == OP_MUL) {
			if (!expand(a, e->args[1], 0, r, &nr, 16))
				return 0;
		} else {
			r[0] = (Term){e->args[1], 0}, nr = 1;
		}
		if (nl == 1 && nr == 1) {
			if (*n == cap)
				return 0;
			out[(*n)++] = (Term){expr_binop(a, (Op)e->op, l[0].e, r[0].e),
					     neg ^ l[0].neg ^ r[0].neg};
			return 1;
		}
		for (int i = 0; i < nl; i++)
			for (int j = 0; j < nr; j++) {
				if (*n == cap)
					return 0;
				out[(*n)++] = (Term){expr_binop(a, (Op)e->op, l[i].e, r[j].e),
						     neg ^ l[i].neg ^ r[j].neg};
			}
		return 1;
	}
	if (*n == cap)
		return 0;
	out[(*n)++] = (Term){e, neg};
	return 1;
}

/* R3: one sum per term, then x adds them up; each term is deferred alone. */
static int fission(Arena *a, Plan *p, Node *x)
{
	Term t[16];
	int n = 0;
	if (!expand(a, x->body, 0, t, &n, 16) || n < 2)
		return 0;
	Expr *sum = NULL;
	Node *parts[16];
	for (int i = 0; i < n; i++) {
		parts[i] = split_off(a, p, x, t[i].e, "term");
		Expr *acc = access_free(a, parts[i]->out, x->nfree);
		if (!sum)
			sum = t[i].neg ? expr_binop(a, OP_SUB, expr_float(a, 0.0), acc) : acc;
		else
			sum = expr_binop(a, t[i].neg ? OP_SUB : OP_ADD, sum, acc);
	}
	make_map(a, x, sum);
	plan_note(p, a, x->loc,
		  "R3 fission: %s = a sum of %d reductions, one per term, sharing the %s stream",
		  x->out->name, n, p->classes[p->stream].name);
	return 1;
}

/* Applies R1 (and R3 where R1 alone cannot) until no sum over the stream
** reads a completed value that a rewrite can move out. */
static void defer_all(Arena *a, Plan *p)
{
	for (int round = 0; round < 8; round++) {
		plan_classes(a, p);
		plan_passes(a, p, 0);
		int changed = 0;
		for (int i = 0; i < p->c->nodes.n && !changed; i++) {
			Node *x = p->c->nodes.v[i];
			if (p->np[i].role != ROLE_RUNNING || x->red != RED_SUM)
				continue;
			int fused = 0;
			x->body = inline_maps(a, p, x->body, &fused);
			if (fused)
				plan_note(p, a, x->loc,
					  "fusion: element-wise temporaries that read a completed "
					  "reduction are substituted into %s",
					  x->out->name);
			if (!reads_completed(p, x->body))
				continue;
			if (defer(a, p, x) || fission(a, p, x))
				changed = 1;
		}
		if (!changed)
			return;
	}
}

/* ---- R5: contractions split by the indices of their terms ------------- */

/* Two terms are the same product up to the order of its factors. */
static int same_product(const Expr *x, const Expr *y)
{
	const Expr *fx[8], *fy[8];
	int nx = expr_factors(x, fx, 8), ny = expr_factors(y, fy, 8);
	if (nx != ny || nx > 8)
		return 0;
	char used[8] = {0};
	for (int i = 0; i < nx; i++) {
		int hit = -1;
		for (int j = 0; j < ny && hit < 0; j++)
			if (!used[j] && expr_equal(fx[i], fy[j]))
				hit = j;
		if (hit < 0)
			return 0;
		used[hit] = 1;
	}
	return 1;
}

/* x's sum of body over the free indices `keep` (a mask of x's) and x's
** reduced ones, as a temporary NAME.suffix inserted before x; the access
** to it from x's space. */
static Expr *split_sub(Arena *a, Plan *p, Node *x, Expr *body, unsigned long long keep,
		       const char *suffix)
{
	int nf = 0, nv = x->nfree + x->nred;
	Expr **sub = ARENA_ARRAY(a, Expr *, nv + 1);
	Node *n = split_off(a, p, x, body, suffix);
	for (int v = 0; v < nv; v++)
		if (v >= x->nfree || (keep >> v & 1)) {
			sub[v] = expr_index(a, nf);
			n->vars[nf++] = x->vars[v];
		}
	n->nfree = nf - x->nred;
	n->body = expr_subst(a, body, sub, nv);
	Tensor *t = n->out;
	t->rank = n->nfree, t->domain = NULL;
	for (int k = 0; k < n->nfree; k++)
		t->shape[k] = n->vars[k].extent;
	Expr *e = expr_new(a, EX_ACCESS, t->type, t->loc);
	e->tensor = t, e->nargs = n->nfree;
	e->args = ARENA_ARRAY(a, Expr *, n->nfree + 1);
	for (int v = 0, k = 0; v < x->nfree; v++)
		if (keep >> v & 1)
			e->args[k++] = expr_index(a, v);
	return e;
}

/* R5 on x, a sum over indices other than the stream's of the product of
** sums of reads: its terms grouped by the free indices they read, one
** contraction per group (equal products once, with their count), and x
** their weighted sum. Only where some group reads fewer indices than x. */
static int split_by_indices(Arena *a, Plan *p, Node *x)
{
	if (x->red != RED_SUM || !x->nred || x->filter || x->nfree > 60)
		return 0;
	int sv = -1;
	for (int v = 0; v < x->nfree + x->nred; v++)
		if (p->cls[x->id][v] == p->stream) {
			if (v >= x->nfree)
				return 0;
			sv = v;
		}
	Term t[16];
	int n = 0;
	if (sv < 0 || !expand(a, x->body, 0, t, &n, 16) || n < 2)
		return 0;
	unsigned long long all = (1ull << x->nfree) - 1, mask[16];
	int partial = 0;
	for (int i = 0; i < n; i++) {
		mask[i] = expr_vars(t[i].e) & all;
		partial |= mask[i] != all;
	}
	if (!partial)
		return 0;
	/* the groups, in the order of their first term; within a group, each
	** product once with its signed count */
	Expr *sum = NULL;
	char done[16] = {0};
	const char *names = "";
	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		Expr *prod[16];
		double coef[16];
		int np = 0;
		for (int k = i; k < n; k++) {
			if (done[k] || mask[k] != mask[i])
				continue;
			done[k] = 1;
			int m = 0;
			while (m < np && !same_product(prod[m], t[k].e))
				m++;
			if (m == np)
				prod[np] = t[k].e, coef[np++] = 0;
			coef[m] += t[k].neg ? -1 : 1;
		}
		Expr *body = NULL;
		double w = np == 1 ? coef[0] : 1;
		for (int m = 0; m < np; m++) {
			if (coef[m] == 0)
				continue;
			Expr *term = np == 1
					 ? prod[m]
					 : expr_binop(a, OP_MUL, expr_float(a, coef[m]), prod[m]);
			body = body ? expr_binop(a, OP_ADD, body, term) : term;
		}
		if (!body)
			continue;
		Expr *part = split_sub(a, p, x, body, mask[i],
				       mask[i] == all         ? "pair"
				       : !(mask[i] >> sv & 1) ? "row"
							      : "key");
		names = arena_printf(a, "%s%s%s", names, *names ? ", " : "", part->tensor->name);
		if (w != 1)
			part = expr_binop(a, OP_MUL, expr_float(a, w), part);
		sum = sum ? expr_binop(a, OP_ADD, sum, part) : part;
	}
	make_map(a, x, sum ? sum : expr_float(a, 0.0));
	plan_note(p, a, x->loc,
		  "R5 split: %s = a weighted sum of contractions over the indices each term "
		  "reads (%s); only the one over every index is a product of tiles",
		  x->out->name, names);
	return 1;
}

/* R5 on every contraction of a GPU plan (the C back end sums the terms as
** written, which keeps a difference's accuracy). */
static void split_all(Arena *a, Plan *p)
{
	if (!p->target || !strcmp(p->target, "cpu"))
		return;
	for (int i = 0; i < p->c->nodes.n; i++)
		if (split_by_indices(a, p, p->c->nodes.v[i])) {
			plan_classes(a, p);
			i = -1;
		}
}

/* ---- R2: the scale analysis ------------------------------------------- */

/* An expression's dependence on running references: its value is
** exp(-sum k_m r_m) * (something independent of the references), or it is
** a reference itself (raw), or it depends on them in a way no rescale can
** follow (bad). */
typedef struct Scale {
	int bad, raw;
	int n;
	int ref[PLAN_MAX_REFS];
	double k[PLAN_MAX_REFS];
} Scale;

typedef struct ScaleCtx {
	Plan *p;
	Scale *node; /* per node, for TILE and reference nodes */
	const char *why;
} ScaleCtx;

static Scale bad(ScaleCtx *sc, const char *why)
{
	Scale s = {0};
	s.bad = 1;
	if (!sc->why)
		sc->why = why;
	return s;
}

static int scale_zero(const Scale *s)
{
	return !s->bad && !s->raw && s->n == 0;
}

static int scale_same(const Scale *x, const Scale *y)
{
	if (x->n != y->n || x->bad || y->bad || x->raw || y->raw)
		return 0;
	for (int i = 0; i < x->n; i++) {
		int found = 0;
		for (int j = 0; j < y->n; j++)
			found |= x->ref[i] == y->ref[j] && fabs(x->k[i] - y->k[j]) < 1e-12;
		if (!found)
			return 0;
	}
	return 1;
}

static Scale scale_add(ScaleCtx *sc, Scale x, Scale y, double sign)
{
	if (x.bad || y.bad)
		return x.bad ? x : y;
	if (x.raw || y.raw)
		return bad(sc, "a running max is used outside an exponential");
	for (int j = 0; j < y.n; j++) {
		int i = 0;
		while (i < x.n && x.ref[i] != y.ref[j])
			i++;
		if (i == x.n) {
			if (x.n == PLAN_MAX_REFS)
				return bad(sc, "too many references");
			x.ref[x.n] = y.ref[j], x.k[x.n++] = 0;
		}
		x.k[i] += sign * y.k[j];
	}
	return x;
}

static int is_zero_literal(const Expr *e)
{
	return e->kind == EX_FLOAT && e->fval == 0.0;
}

/* Linear form of an exponent in the references: e = e0 - sum c_m r_m. */
static int linear(ScaleCtx *sc, const Expr *e, Scale *coef, double sign);

static Scale scale_of(ScaleCtx *sc, const Expr *e);

static int linear(ScaleCtx *sc, const Expr *e, Scale *coef, double sign)
{
	if (e->kind == EX_BINOP && (e->op == OP_ADD || e->op == OP_SUB))
		return linear(sc, e->args[0], coef, sign) &&
		       linear(sc, e->args[1], coef, e->op == OP_SUB ? -sign : sign);
	if (e->kind == EX_UNOP && e->op == OP_NEG)
		return linear(sc, e->args[0], coef, -sign);
	if (e->kind == EX_BINOP && e->op == OP_MUL) {
		/* a constant times a linear form */
		for (int side = 0; side < 2; side++) {
			const Expr *k = e->args[side];
			if (k->kind == EX_FLOAT)
				return linear(sc, e->args[!side], coef, sign * k->fval);
			if (k->kind == EX_PARAM) {
				/* a runtime coefficient would make rho a runtime value */
				Scale s = scale_of(sc, e->args[!side]);
				return scale_zero(&s);
			}
		}
	}
	Scale s = scale_of(sc, e);
	if (s.bad)
		return 0;
	if (s.raw) {
		/* a reference itself: coefficient sign on each of its refs */
		for (int i = 0; i < s.n; i++) {
			Scale one = {0};
			one.n = 1, one.ref[0] = s.ref[i], one.k[0] = -sign * s.k[i];
			*coef = scale_add(sc, *coef, one, 1.0);
		}
		return !coef->bad;
	}
	return s.n == 0;
}

static Scale scale_of(ScaleCtx *sc, const Expr *e)
{
	Scale z = {0};
	if (!e)
		return z;
	switch (e->kind) {
	case EX_ACCESS: {
		for (int i = 0; i < e->nargs; i++) {
			Scale ix = scale_of(sc, e->args[i]);
			if (!scale_zero(&ix))
				return bad(sc, "a subscript depends on a reduction");
		}
		const Node *d = e->tensor->def;
		if (!d)
			return z;
		NodePlan *np = &sc->p->np[d->id];
		if (np->role == ROLE_PROLOGUE)
			return z;
		if (np->role == ROLE_TILE)
			return sc->node[d->id];
		if (np->is_ref) {
			Scale s = {0};
			s.raw = 1, s.n = 1, s.ref[0] = d->id, s.k[0] = 1.0;
			return s;
		}
		return bad(sc, "a completed reduction is read inside the stream");
	}
	case EX_CALL: {
		if (e->op == FN_EXP || e->op == FN_EXP2) {
			/* exp2(x) = exp(ln2 x): the same rescale with k scaled by ln 2 */
			Scale coef = {0};
			if (!linear(sc, e->args[0], &coef,
				    e->op == FN_EXP2 ? 0.6931471805599453 : 1.0) ||
			    coef.bad)
				return bad(sc, "an exponent is not linear in the running max");
			return coef;
		}
		Scale s = scale_of(sc, e->args[0]);
		if (!scale_zero(&s))
			return s.bad ? s : bad(sc, "a non-linear function of a rescaled value");
		return z;
	}
	case EX_BINOP: {
		Scale l = scale_of(sc, e->args[0]), r = scale_of(sc, e->args[1]);
		switch (e->op) {
		case OP_MUL: return scale_add(sc, l, r, 1.0);
		case OP_DIV: return scale_add(sc, l, r, -1.0);
		case OP_ADD:
		case OP_SUB:
			if (is_zero_literal(e->args[0]) && !r.raw)
				return r;
			if (is_zero_literal(e->args[1]) && !l.raw)
				return l;
			if (scale_zero(&l) && scale_zero(&r))
				return z;
			if (scale_same(&l, &r))
				return l;
			if (l.raw || r.raw)
				return bad(
				    sc, "a running max is added to a value outside an exponential");
			return bad(sc, "terms rescale differently");
		default:
			if (scale_zero(&l) && scale_zero(&r))
				return z;
			return bad(sc, "a comparison or max/min of a value that depends on the "
				       "running max (e.g. a threshold on probabilities)");
		}
	}
	case EX_UNOP:
		if (e->op == OP_NEG) {
			Scale s = scale_of(sc, e->args[0]);
			return s.raw ? bad(sc, "a negated running max outside an exponential") : s;
		}
		{
			Scale s = scale_of(sc, e->args[0]);
			return scale_zero(&s) ? z : bad(sc, "a condition on a rescaled value");
		}
	case EX_SELECT: {
		Scale c = scale_of(sc, e->args[0]);
		if (!scale_zero(&c))
			return bad(sc, "a condition depends on the running max");
		Scale x = scale_of(sc, e->args[1]), y = scale_of(sc, e->args[2]);
		if (is_zero_literal(e->args[1]))
			return y;
		if (is_zero_literal(e->args[2]))
			return x;
		if (scale_zero(&x) && scale_zero(&y))
			return z;
		return scale_same(&x, &y) ? x
					  : bad(sc, "the branches of a select rescale differently");
	}
	case EX_CAST: {
		Scale s = scale_of(sc, e->args[0]);
		return scale_zero(&s) ? z : bad(sc, "a conversion of a rescaled value");
	}
	default: return z;
	}
}

/* A reference: a running max, or an element-wise function of running maxes
** and stream-independent values (max(max[j] S, sink)). */
static int is_reference(Plan *p, int id)
{
	const Node *n = p->c->nodes.v[id];
	NodePlan *np = &p->np[id];
	if (np->role == ROLE_RUNNING)
		return n->red == RED_MAX;
	if (np->role != ROLE_EPILOGUE)
		return 0;
	/* reads only running maxes (or other references) and prologue values */
	const Expr *todo[256];
	int nt = 0, has_ref = 0;
	todo[nt++] = n->body;
	while (nt) {
		const Expr *e = todo[--nt];
		if (!e)
			continue;
		if (e->kind == EX_ACCESS && e->tensor->def) {
			NodePlan *d = &p->np[e->tensor->def->id];
			if (d->is_ref)
				has_ref = 1;
			else if (d->role != ROLE_PROLOGUE)
				return 0;
		}
		for (int i = 0; i < e->nargs && nt < 256; i++)
			todo[nt++] = e->args[i];
	}
	return has_ref;
}

/* Decides which nodes can be carried across tiles and fills the plan's
** running-read matrix; returns the reason the first one could not. */
static const char *rebase(Arena *a, Plan *p)
{
	Cascade *c = p->c;
	int n = c->nodes.n;
	p->ref_ok = ARENA_ARRAY(a, unsigned char, (size_t)n *n + 1);
	ScaleCtx sc = {p, ARENA_ARRAY(a, Scale, n + 1), NULL};
	const char *first_why = NULL;
	for (int i = 0; i < n; i++) {
		p->np[i].run.nrefs = 0;
		p->np[i].is_ref = is_reference(p, i);
	}
	for (int i = 0; i < n; i++) {
		Node *x = c->nodes.v[i];
		NodePlan *np = &p->np[i];
		if (np->role != ROLE_TILE && np->role != ROLE_RUNNING)
			continue;
		sc.why = NULL;
		Scale f = scale_of(&sc, x->filter);
		Scale s = scale_of(&sc, x->body);
		if (!scale_zero(&f))
			s = bad(&sc, "a mask depends on the running max");
		if (np->role == ROLE_RUNNING && x->red != RED_SUM && !scale_zero(&s))
			s = bad(&sc, "a max or min over values that depend on the running max");
		if (s.raw)
			s = bad(&sc, "a running max used as a value");
		sc.node[i] = s;
		if (s.bad) {
			if (!first_why)
				first_why = arena_printf(a, "%s: %s", x->out->name,
							 sc.why ? sc.why : "unsupported");
			continue;
		}
		if (np->role == ROLE_RUNNING) {
			np->run.nrefs = s.n;
			for (int m = 0; m < s.n; m++)
				np->run.ref[m] = s.ref[m], np->run.k[m] = s.k[m];
		}
	}
	/* the matrix: x may use the running value of each reference its body
	** depends on, and the rescaled values of TILE nodes, when x is itself a
	** rescaled TILE node or a rebased sum; any other reader of a rescaled
	** value waits for its references to complete (compiler/passes.c) */
	for (int i = 0; i < n; i++) {
		Node *x = c->nodes.v[i];
		NodePlan *nx = &p->np[i];
		if (sc.node[i].bad || (nx->role != ROLE_TILE && nx->role != ROLE_RUNNING))
			continue;
		if (nx->role == ROLE_TILE && sc.node[i].n && x->out->kind == TK_OUT) {
			sc.node[i].bad = 1; /* an output needs the final reference */
			if (!first_why)
				first_why = arena_printf(
				    a, "%s is an output that needs the final reference",
				    x->out->name);
			continue;
		}
		if (nx->role == ROLE_RUNNING && x->red != RED_SUM)
			continue;
		if (nx->role == ROLE_TILE) {
			nx->run.nrefs = sc.node[i].n;
			for (int m = 0; m < sc.node[i].n; m++)
				nx->run.ref[m] = sc.node[i].ref[m], nx->run.k[m] = sc.node[i].k[m];
		}
		for (int j = 0; j < i; j++) {
			Node *y = c->nodes.v[j];
			if (!expr_reads(x->body, y->out) && !expr_reads(x->filter, y->out))
				continue;
			if (p->np[j].is_ref || (p->np[j].role == ROLE_TILE && !sc.node[j].bad))
				p->ref_ok[(size_t)i * n + j] = 1;
		}
	}
	/* references that are functions of running maxes may use their running values */
	for (int i = 0; i < n; i++) {
		if (!p->np[i].is_ref || p->np[i].role != ROLE_EPILOGUE)
			continue;
		for (int j = 0; j < i; j++)
			if (p->np[j].is_ref &&
			    expr_reads(((Node *)c->nodes.v[i])->body, ((Node *)c->nodes.v[j])->out))
				p->ref_ok[(size_t)i * n + j] = 1;
	}
	return first_why;
}

static const char *rho_text(Arena *a, const Plan *p, const Running *r)
{
	const char *s = "";
	for (int m = 0; m < r->nrefs; m++) {
		const Node *ref = p->c->nodes.v[r->ref[m]];
		const char *d = r->k[m] == 1.0 ? "r - r'" : arena_printf(a, "%g*(r - r')", r->k[m]);
		s = arena_printf(a, "%s%sexp(%s) on %s", s, m ? " * " : "", d, ref->out->name);
	}
	return s;
}

void plan_rewrite(Arena *a, Plan *p)
{
	if (p->stream < 0)
		return;
	plan_reindex(a, p);
	plan_onehot(a, p);
	cse(a, p);
	plan_classes(a, p);
	split_all(a, p);
	defer_all(a, p);
	remove_dead(p->c);
	plan_classes(a, p);
	p->passes_defer = plan_passes(a, p, 0);
	const char *why = rebase(a, p);
	p->passes_after = plan_passes(a, p, 1);
	for (int i = 0; i < p->c->nodes.n; i++) {
		NodePlan *np = &p->np[i];
		Node *x = p->c->nodes.v[i];
		if (np->role == ROLE_RUNNING && np->run.nrefs)
			plan_note(p, a, x->loc, "R2 rebase: %s runs across tiles with rho = %s",
				  x->out->name, rho_text(a, p, &np->run));
		if (np->is_ref && np->role == ROLE_EPILOGUE)
			plan_note(p, a, x->loc,
				  "R4: %s is a running reference built from running maxes and "
				  "%s-independent terms; they enter as its initial value",
				  x->out->name, p->classes[p->stream].name);
	}
	if (p->passes_after > 1 && why)
		plan_note(p, a, NOLOC, "no one-pass form: %s; the plan keeps %d passes", why,
			  p->passes_after);
}
