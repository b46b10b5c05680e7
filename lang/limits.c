/*
** lang/limits.c: the front end's limits on what one block may ask for.
** Checked on each block's tree as soon as it is parsed, before anything else
** walks it:
**  - depth (AST_MAX_DEPTH): semantic analysis, the passes, the emitters and
**    the interpreter recurse over expressions without watching their stack.
**    This walk itself uses an explicit stack: it is the one that sees trees
**    of any depth, such as a flat sum of 16,000 terms (a left-leaning tree).
**  - reductions (AST_MAX_REDUCTIONS): each becomes one to three nodes, and
**    the passes take time superlinear in a block's nodes.
*/
#include <stdio.h>
#include <stdlib.h>

#include "ast.h"

typedef struct Frame {
	const AstExpr *e;
	int level; /* 1 at the root */
} Frame;

typedef struct Walk {
	Frame *v;
	int n, cap;
} Walk;

/* Grows like the arena's vectors, but in malloc memory freed after the
** check, so a normal file leaves nothing behind. */
static void push(Walk *w, const AstExpr *e, int level)
{
	if (!e)
		return;
	if (w->n == w->cap) {
		int cap = w->cap ? w->cap * 2 : 64;
		Frame *v = realloc(w->v, sizeof *v * (size_t)cap);
		if (!v) {
			fprintf(stderr, "attnc: out of memory\n");
			abort();
		}
		w->v = v, w->cap = cap;
	}
	w->v[w->n++] = (Frame){e, level};
}

/* The depth of e; *first is the first node found past the limit, where the
** caret goes (for nested calls, the innermost accepted level + 1). Counts
** the reductions into *nred, noting the first one past the limit. */
static int depth_of(Walk *w, const AstExpr *e, const AstExpr **first, int *nred,
		    const AstExpr **red)
{
	int max = 0;
	*first = NULL;
	w->n = 0;
	push(w, e, 1);
	while (w->n) {
		Frame f = w->v[--w->n];
		if (f.level > max)
			max = f.level;
		if (f.e->kind == A_REDUCE && ++*nred == AST_MAX_REDUCTIONS + 1)
			*red = f.e;
		if (f.level == AST_MAX_DEPTH + 1 && !*first)
			*first = f.e;
		/* pushed in reverse so the leftmost subtree is visited first */
		push(w, f.e->where, f.level + 1);
		push(w, f.e->body, f.level + 1);
		for (int i = f.e->nargs - 1; i >= 0; i--)
			push(w, f.e->args[i], f.level + 1);
	}
	return max;
}

/* One error per expression past the depth limit. */
static int check(Diag *d, Walk *w, const AstExpr *e, int *nred, const AstExpr **red)
{
	const AstExpr *first;
	int n = depth_of(w, e, &first, nred, red);
	if (n <= AST_MAX_DEPTH)
		return 1;
	diag_error(d, first->loc, "expression nested too deeply (%d levels; the limit is %d)", n,
		   AST_MAX_DEPTH);
	return 0;
}

int limits_check(Diag *d, const AstAttention *att)
{
	Walk w = {0};
	int ok = 1, nred = 0;
	const AstExpr *red = NULL;
	for (int j = 0; j < att->items.n; j++) {
		const AstItem *it = att->items.v[j];
		for (int k = 0; k < it->nidx; k++)
			ok &= check(d, &w, it->idx[k], &nred, &red);
		if (it->value)
			ok &= check(d, &w, it->value, &nred, &red);
		if (it->rhs)
			ok &= check(d, &w, it->rhs, &nred, &red);
		if (it->where)
			ok &= check(d, &w, it->where, &nred, &red);
	}
	free(w.v);
	/* a tree too deep says enough about the block */
	if (ok && red) {
		diag_error(d, red->nameloc,
			   "too many reductions in attention '%s' (%d; the limit is %d)", att->name,
			   nred, AST_MAX_REDUCTIONS);
		ok = 0;
	}
	return ok;
}
