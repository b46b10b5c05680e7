/*
** compiler/pass_split.c: a forward the GPU runs as several kernels in
** order, each cut from it as a one-pass cascade of its own.
**
** Passes: a plan that keeps several passes over the keys (a filter on
** normalised probabilities needs the completed softmax denominator).
** Piece k computes what pass k completes: the running reductions of pass
** k and the epilogue values after it. What a later pass reads of them
** (per query row: a max, a sum) piece k writes as an f32 output, and
** every later piece reads as an input; the values per (query, key) pair
** are computed again by each piece that reads them, as FlashAttention's
** backward recomputes P, since storing them would take N x N memory.
**
** Prologues: values computed before the stream (a norm per query row, a
** scale per head) and values per key reduced over another index (a norm
** per key) are computed by row passes first (lowering/gpu/rowpass.c),
** one kernel for each set of indices they are over, and read by the
** passes as f32 inputs: the passes' grid stays the queries'.
**
** Each piece is an ordinary cascade, planned and lowered as the forward
** kernels are.
*/
#include <string.h>

#include "plan.h"

/* Whether node j reads node i's result. */
static int reads(const Cascade *c, int j, int i)
{
	const Node *n = c->nodes.v[j];
	const Tensor *t = ((const Node *)c->nodes.v[i])->out;
	return expr_reads(n->body, t) || expr_reads(n->filter, t);
}

/* Whether node i has a free index that is neither the stream nor a grid
** index: a key's feature map elu(K) + 1 over (j, d), whose elements a
** tile does not compute (its products take their operands from memory). */
static int extra_index(const Plan *p, int i)
{
	const Node *n = p->c->nodes.v[i];
	for (int v = 0; v < n->nfree; v++)
		if (plan_index_kind(p, i, v) == IDX_OTHER)
			return 1;
	return 0;
}

/* Whether expression e reads tensor t inside a product summed over a
** variable that subscripts t: t is then an operand of the tensor cores. */
static int contracted(const Expr *e, const Tensor *t, int var)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && e->tensor == t)
		for (int m = 0; m < e->nargs; m++)
			if (e->args[m]->kind == EX_INDEX && e->args[m]->var == var)
				return 1;
	for (int k = 0; k < e->nargs; k++)
		if (contracted(e->args[k], t, var))
			return 1;
	return 0;
}

/* Whether a node after i sums node i's result over one of its subscripts
** (among the nodes outside pre[], where pre is given): the result is then
** an operand of a product on the tensor cores. */
static int operand(const Plan *p, const char *pre, int i)
{
	const Cascade *c = p->c;
	const Tensor *t = ((const Node *)c->nodes.v[i])->out;
	for (int j = i + 1; j < c->nodes.n; j++) {
		const Node *n = c->nodes.v[j];
		for (int v = n->nfree; v < n->nfree + n->nred && !(pre && pre[j]); v++)
			if (contracted(n->body, t, v))
				return 1;
	}
	return 0;
}

/* The nodes a prologue row pass computes (pre[i]): the plan's values
** before the stream, and values over the keys but not the query rows
** that are reduced over another index (a key's norm, sum[d](K K)), have
** an index of their own and are an operand of a later product (a key's
** feature map over d) or are computed from such. The GPU's passes take
** neither: a pass has no code before its stream, and its tiles reduce over
** the head dim only in Q K^T. */
static void mark_pre(const Plan *p, char *pre)
{
	int q = -1;
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].qtile)
			q = k;
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Node *n = p->c->nodes.v[i];
		NodeRole r = p->np[i].role;
		if (r == ROLE_PROLOGUE)
			pre[i] = 1;
		if (r != ROLE_TILE || q < 0 || (plan_node_class(p, i, q) & 1) || n->out->added_to)
			continue;
		pre[i] = n->nred > 0 || (extra_index(p, i) && operand(p, NULL, i));
		for (int d = 0; d < i && !pre[i]; d++)
			pre[i] = pre[d] && reads(p->c, i, d);
	}
}

/* Whether node i's result is one value per grid point of a pass (a
** completed reduction, or what the epilogue computes from them) or a
** prologue's: such a result can pass from one kernel to the next. Values
** per (query, key) are computed again. */
static int per_row(const Plan *p, const char *pre, int i)
{
	NodeRole r = p->np[i].role;
	return pre[i] || r == ROLE_RUNNING || r == ROLE_EPILOGUE;
}

/* The piece that completes node i: the pass of a reduction or of the
** epilogue after it; 0 for the prologues, which run first. */
static int home(const Plan *p, const char *pre, int i)
{
	return pre[i] ? 0 : p->np[i].pass;
}

/* Node i into piece k's keep[]: with what it reads, down to the results
** of earlier pieces, which become its inputs (row[]). A prologue (k = 0)
** computes all it reads itself. */
static void need(const Plan *p, const char *pre, int k, int i, char *keep, char *row)
{
	if (keep[i])
		return;
	keep[i] = 1;
	for (int d = 0; d < i; d++) {
		if (!reads(p->c, i, d))
			continue;
		if (k > 0 && per_row(p, pre, d) && home(p, pre, d) < k)
			row[d] = 1;
		else
			need(p, pre, k, d, keep, row);
	}
}

/* The classes node i is over, as a bit set (a prologue's row pass runs
** over one such set). */
static unsigned long long class_set(const Plan *p, int i)
{
	unsigned long long m = 0;
	const Node *n = p->c->nodes.v[i];
	for (int v = 0; v < n->nfree; v++)
		m |= 1ull << (p->cls[i][v] & 63);
	return m;
}

/* A later piece reading the user's output t needs it as f32 (the
** workspace's element); 0 after a diagnostic at node i. */
static int passable(Diag *d, const Cascade *c, const Node *n, const Tensor *t)
{
	if (t->kind != TK_OUT || t->dtype == DT_F32)
		return 1;
	diag_error(d, n->loc,
		   "cannot run '%s' as one kernel a pass: a later kernel reads the output "
		   "'%s', which is not f32",
		   c->name, t->name);
	return 0;
}

/* The first 16-bit input that expression e reads (its dtype), or 0. */
static DType narrow_input(const Expr *e)
{
	if (!e)
		return 0;
	if (e->kind == EX_ACCESS && !e->tensor->def &&
	    (e->tensor->dtype == DT_BF16 || e->tensor->dtype == DT_F16))
		return e->tensor->dtype;
	for (int k = 0; k < e->nargs; k++) {
		DType d = narrow_input(e->args[k]);
		if (d)
			return d;
	}
	return 0;
}

/* The dtype in which a prologue's result passes to the passes: f32, but a
** value that a pass sums over one of its indices (a feature map elu(Q) + 1
** read by sum[d]) is an operand of the tensor cores, which take 16-bit
** elements: the dtype of the inputs it is computed from, else bf16. Why:
** the row pass rounds once where the kernel would round every tile. */
DType pass_split_dtype(const Plan *p, const char *pre, int i)
{
	const Cascade *c = p->c;
	const Node *x = c->nodes.v[i];
	if (!pre[i] || !extra_index(p, i) || x->out->type != VT_FLOAT || !operand(p, pre, i))
		return DT_F32;
	DType d = narrow_input(x->body);
	for (int j = 0; j < i && !d; j++)
		if (pre[j] && reads(c, i, j))
			d = narrow_input(((const Node *)c->nodes.v[j])->body);
	return d ? d : DT_BF16;
}

/* Sets the dtype of the tensors in piece pc that carry a prologue's result
** (by name) to the one pass_split_dtype gives. */
static void narrow_piece(Arena *a, const Plan *p, const char *pre, Cascade *pc)
{
	for (int i = 0; i < p->c->nodes.n; i++) {
		DType d = pass_split_dtype(p, pre, i);
		if (d == DT_F32)
			continue;
		const char *name = cascade_c_name(a, ((const Node *)p->c->nodes.v[i])->out->name);
		for (int t = 0; t < pc->tensors.n; t++) {
			Tensor *x = pc->tensors.v[t];
			if (x->kind != TK_TEMP && !strcmp(x->name, name))
				x->dtype = d;
		}
	}
}

/* The distinct class sets of the nodes kept[] (the prologue values that a
** pass reads or the user wants), in the order of their first node: one row
** pass each. */
static int prologue_sets(const Plan *p, const char *kept, unsigned long long *sets)
{
	int count = 0;
	for (int i = 0; i < p->c->nodes.n; i++) {
		unsigned long long set = class_set(p, i);
		int dup = !kept[i];
		for (int k = 0; k < count && !dup; k++)
			dup = sets[k] == set;
		if (!dup && count < 64)
			sets[count++] = set;
	}
	return count;
}

/* A prologue piece: the nodes kept[] whose results are over the class set
** `set` (its outputs), with all they read. */
static Cascade *prologue(Arena *a, const Plan *p, const char *pre, const char *kept,
			 unsigned long long set, const char *name)
{
	int n = p->c->nodes.n;
	char *keep = ARENA_ARRAY(a, char, n + 1), *out = ARENA_ARRAY(a, char, n + 1),
	     *row = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++)
		out[i] = kept[i] && class_set(p, i) == set;
	int value_last = 0;
	for (int i = 0; i < n; i++)
		if (out[i]) {
			need(p, pre, 0, i, keep, row);
			value_last |= extra_index(p, i);
		}
	Cascade *pc = cascade_piece(a, p->c, name, keep, out, row, p, -1);
	/* a feature map over (i, d): its row pass loops over d, a row a thread */
	pc->value_last = value_last;
	return pc;
}

/* What a GPU runs before the passes (--explain): pre[] as mark_pre sets
** it, and the count of row passes, one for each set of indices among the
** values the passes read (a node outside pre[] reads them) or the user
** wants. */
int pass_split_prologues(Arena *a, const Plan *p, char *pre)
{
	int n = p->c->nodes.n;
	char *kept = ARENA_ARRAY(a, char, n + 1);
	unsigned long long sets[64];
	mark_pre(p, pre);
	for (int i = 0; i < n; i++) {
		kept[i] = pre[i] && ((const Node *)p->c->nodes.v[i])->out->kind == TK_OUT;
		for (int j = i + 1; j < n && pre[i] && !kept[i]; j++)
			kept[i] = !pre[j] && reads(p->c, j, i);
	}
	return prologue_sets(p, kept, sets);
}

/* Why: one kernel a pass, each from its own cascade, lets every target
** that lowers one-pass plans run the multi-pass ones, and those with
** values before the stream, unchanged. Fails (one diagnostic) where a
** piece would not be one pass itself, or where a later piece would read
** an output of the user's that is not f32. */
int pass_split(Arena *a, Diag *d, const Cascade *c, const char *target, PassSplit *s)
{
	memset(s, 0, sizeof *s);
	s->fwd = c;
	Plan *p = plan_build(a, c, target);
	int np = p->passes_after, n = p->c->nodes.n;
	if (p->stream < 0)
		return 0;
	char *pre = ARENA_ARRAY(a, char, n + 1);
	mark_pre(p, pre);
	int any_pre = 0;
	for (int i = 0; i < n; i++)
		any_pre |= pre[i];
	if (np <= 1 && !any_pre)
		return 0;
	s->piece = ARENA_ARRAY(a, Cascade *, np + n + 1);
	Cascade **passes = ARENA_ARRAY(a, Cascade *, np + 1);
	/* last piece first: what a piece reads of earlier ones (row[]) is what
	** those must write (wanted[]) */
	char *wanted = ARENA_ARRAY(a, char, n + 1);
	for (int k = np; k >= 1; k--) {
		char *keep = ARENA_ARRAY(a, char, n + 1), *out = ARENA_ARRAY(a, char, n + 1),
		     *row = ARENA_ARRAY(a, char, n + 1);
		for (int i = 0; i < n; i++) {
			if (!per_row(p, pre, i) || home(p, pre, i) != k)
				continue;
			const Node *x = p->c->nodes.v[i];
			if (wanted[i] && !passable(d, c, x, x->out))
				return 1;
			out[i] = wanted[i] || x->out->kind == TK_OUT;
		}
		for (int i = 0; i < n; i++)
			if (out[i])
				need(p, pre, k, i, keep, row);
		for (int i = 0; i < n; i++)
			wanted[i] |= row[i];
		Cascade *pc = cascade_piece(a, p->c, arena_printf(a, "%s_pass%d", c->name, k), keep,
					    out, row, p, -1);
		pc->pass_of = c->name, pc->pass = k;
		narrow_piece(a, p, pre, pc);
		Plan *pp = plan_build(a, pc, target);
		if (pp->passes_after != 1) {
			diag_error(d, c->loc,
				   "cannot run '%s' as one kernel a pass: its pass %d keeps %d "
				   "passes itself",
				   c->name, k, pp->passes_after);
			return 1;
		}
		passes[k - 1] = pc;
	}
	/* the prologues: one row pass for each set of indices that the values
	** a pass reads (or the user wants) are over */
	char *kept = ARENA_ARRAY(a, char, n + 1);
	for (int i = 0; i < n; i++) {
		const Node *x = p->c->nodes.v[i];
		kept[i] = pre[i] && (wanted[i] || x->out->kind == TK_OUT);
		if (pre[i] && wanted[i] && !passable(d, c, x, x->out))
			return 1;
	}
	unsigned long long sets[64];
	int nsets = prologue_sets(p, kept, sets);
	for (int k = 0; k < nsets; k++) {
		Cascade *pc =
		    prologue(a, p, pre, kept, sets[k], arena_printf(a, "%s_pro%d", c->name, k + 1));
		pc->pass_of = c->name, pc->pass = 0, pc->prologue = k + 1;
		narrow_piece(a, p, pre, pc);
		s->piece[s->npre++] = pc;
	}
	for (int k = 0; k < np; k++)
		s->piece[s->npre + k] = passes[k];
	s->npieces = s->npre + np;
	/* what passes between pieces: the tensors of each that are neither the
	** user's inputs nor outputs (a prologue's may have the name of one of
	** the user's temporaries), once each, in the order pieces write them */
	for (int k = 0; k < s->npieces; k++) {
		const Cascade *pc = s->piece[k];
		for (int t = 0; t < pc->tensors.n; t++) {
			const Tensor *x = pc->tensors.v[t], *u = cascade_tensor(c, x->name);
			if (x->kind != TK_OUT || (u && u->kind != TK_TEMP))
				continue;
			int seen = 0;
			for (int w = 0; w < s->ws.n; w++)
				seen |= !strcmp(((const Tensor *)s->ws.v[w])->name, x->name);
			if (!seen)
				ptrvec_push(a, &s->ws, (void *)x);
		}
	}
	return 0;
}

/* p with each cascade whose plan for target keeps several passes replaced
** by its pieces (pass_split), and the splits in passes; NULL after a
** diagnostic. */
Program *pass_split_program(Arena *a, Diag *d, const Program *p, const char *target)
{
	Program *r = ARENA_NEW(a, Program);
	r->grads = p->grads;
	int failed = 0;
	for (int i = 0; i < p->cascades.n; i++) {
		Cascade *c = p->cascades.v[i];
		PassSplit *s = ARENA_NEW(a, PassSplit);
		if (pass_split(a, d, c, target, s)) {
			failed = 1;
			continue;
		}
		if (!s->npieces) {
			ptrvec_push(a, &r->cascades, c);
			continue;
		}
		ptrvec_push(a, &r->passes, s);
		for (int k = 0; k < s->npieces; k++)
			ptrvec_push(a, &r->cascades, s->piece[k]);
	}
	return failed ? NULL : r;
}
