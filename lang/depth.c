/*
** lang/depth.c: the depth limit of expression trees (AST_MAX_DEPTH).
** Checked once, right after parsing and before anything else walks the
** tree, so that semantic analysis, the passes, the emitters and the
** interpreter may recurse over expressions without watching their stack.
** This walk itself uses an explicit stack: it is the one that sees trees of
** any depth, such as a flat sum of 16,000 terms (a left-leaning tree).
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
** caret goes (for nested parentheses, the innermost accepted level + 1). */
static int depth_of(Walk *w, const AstExpr *e, const AstExpr **first)
{
	int max = 0;
	*first = NULL;
	w->n = 0;
	push(w, e, 1);
	while (w->n) {
		Frame f = w->v[--w->n];
		if (f.level > max)
			max = f.level;
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

/* One error per expression past the limit. */
static int check(Diag *d, Walk *w, const AstExpr *e)
{
	const AstExpr *first;
	int n = depth_of(w, e, &first);
	if (n <= AST_MAX_DEPTH)
		return 1;
	diag_error(d, first->loc, "expression nested too deeply (%d levels; the limit is %d)", n,
		   AST_MAX_DEPTH);
	return 0;
}

int depth_check(Diag *d, const AstAttention *att)
{
	Walk w = {0};
	int ok = 1;
	for (int j = 0; j < att->items.n; j++) {
		const AstItem *it = att->items.v[j];
		for (int k = 0; k < it->nidx; k++)
			ok &= check(d, &w, it->idx[k]);
		if (it->value)
			ok &= check(d, &w, it->value);
		if (it->rhs)
			ok &= check(d, &w, it->rhs);
		if (it->where)
			ok &= check(d, &w, it->where);
	}
	free(w.v);
	return ok;
}
