/*
** compiler/pass_split.c: a forward whose plan keeps several passes over
** the keys (a filter on normalised probabilities needs the completed
** softmax denominator) cut into one-pass cascades that the GPU runs as
** kernels in order. Piece k computes what pass k completes: the running
** reductions of pass k and the epilogue values after it. What a later
** pass reads of them (per query row: a max, a sum) piece k writes as an
** f32 output, and every later piece reads as an input; the values per
** (query, key) pair are computed again by each piece that reads them,
** as FlashAttention's backward recomputes P, since storing them would
** take N x N memory. Each piece is an ordinary cascade, planned and
** lowered as the forward kernels are.
*/
#include <string.h>

#include "plan.h"

/* Whether node i's result is one value per grid point (a completed
** reduction, or what the epilogue computes from them): such a result can
** pass from one kernel to the next. Values per key are computed again. */
static int per_row(const Plan *p, int i)
{
	NodeRole r = p->np[i].role;
	return r == ROLE_RUNNING || r == ROLE_EPILOGUE;
}

/* The piece that completes node i: the pass of a reduction or of the
** epilogue after it. */
static int home(const Plan *p, int i)
{
	return p->np[i].pass;
}

/* Whether node j reads node i's result. */
static int reads(const Cascade *c, int j, int i)
{
	const Node *n = c->nodes.v[j];
	const Tensor *t = ((const Node *)c->nodes.v[i])->out;
	return expr_reads(n->body, t) || expr_reads(n->filter, t);
}

/* Node i into piece k's keep[]: with what it reads, down to the results
** of earlier pieces, which become its inputs (row[]). */
static void need(const Plan *p, int k, int i, char *keep, char *row)
{
	if (keep[i])
		return;
	keep[i] = 1;
	for (int d = 0; d < i; d++) {
		if (!reads(p->c, i, d))
			continue;
		if (per_row(p, d) && home(p, d) < k)
			row[d] = 1;
		else
			need(p, k, d, keep, row);
	}
}

/* Why: one kernel a pass, each from its own cascade, lets every target
** that lowers one-pass plans run the multi-pass ones unchanged. Fails
** (one diagnostic) where a piece would not be one pass itself, or where a
** later piece would read an output of the user's that is not f32. */
int pass_split(Arena *a, Diag *d, const Cascade *c, const char *target, PassSplit *s)
{
	memset(s, 0, sizeof *s);
	s->fwd = c;
	Plan *p = plan_build(a, c, target);
	int np = p->passes_after, n = p->c->nodes.n;
	if (np <= 1 || p->stream < 0)
		return 0;
	s->npieces = np;
	s->piece = ARENA_ARRAY(a, Cascade *, np + 1);
	/* last piece first: what a piece reads of earlier ones (row[]) is what
	** those must write (wanted[]) */
	char *wanted = ARENA_ARRAY(a, char, n + 1);
	for (int k = np; k >= 1; k--) {
		char *keep = ARENA_ARRAY(a, char, n + 1), *out = ARENA_ARRAY(a, char, n + 1),
		     *row = ARENA_ARRAY(a, char, n + 1);
		for (int i = 0; i < n; i++) {
			if (!per_row(p, i) || home(p, i) != k)
				continue;
			const Tensor *t = ((const Node *)p->c->nodes.v[i])->out;
			if (wanted[i] && t->kind == TK_OUT && t->dtype != DT_F32) {
				diag_error(
				    d, ((const Node *)p->c->nodes.v[i])->loc,
				    "cannot run '%s' as one kernel a pass: a later pass reads "
				    "the output '%s', which is not f32",
				    c->name, t->name);
				return 1;
			}
			out[i] = wanted[i] || t->kind == TK_OUT;
		}
		for (int i = 0; i < n; i++)
			if (out[i])
				need(p, k, i, keep, row);
		for (int i = 0; i < n; i++)
			wanted[i] |= row[i];
		Cascade *pc = cascade_piece(a, p->c, arena_printf(a, "%s_pass%d", c->name, k), keep,
					    out, row);
		pc->pass_of = c->name, pc->pass = k;
		Plan *pp = plan_build(a, pc, target);
		if (pp->passes_after != 1) {
			diag_error(d, c->loc,
				   "cannot run '%s' as one kernel a pass: its pass %d keeps %d "
				   "passes itself",
				   c->name, k, pp->passes_after);
			return 1;
		}
		s->piece[k - 1] = pc;
	}
	/* what passes between pieces: the tensors of each that are neither the
	** user's inputs nor outputs, once each, in the order pieces write them */
	for (int k = 0; k < np; k++) {
		const Cascade *pc = s->piece[k];
		for (int t = 0; t < pc->tensors.n; t++) {
			const Tensor *x = pc->tensors.v[t];
			if (x->kind != TK_OUT || cascade_tensor(c, x->name))
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
