/*
** compiler/grad_int.h: what the files of the derivation share.
**   grad.c        the driver: which tensors carry adjoints, the reverse
**                 sweep over the nodes, adjoint sums, dead nodes, assembly
**   grad_build.c  tensors, nodes, remapped expressions, closed filters
**   grad_read.c   one read's contribution node: subscripts made plain
**                 (h / G split, hk * G + g merged), variables renumbered,
**                 the filter closed over what it reads
**   grad_expr.c   symbolic derivatives of Expr, with the simplification
**                 that keeps the printed cascade readable
**   grad_shift.c  which maxes the outputs do not depend on (stabilisers)
**   grad_flash.c  the FlashAttention rewrites: the row term Delta, and P
**                 recomputed from a saved logsumexp
*/
#ifndef ATTN_GRAD_INT_H
#define ATTN_GRAD_INT_H

#include "grad.h"

enum { GRAD_MAX_VARS = 64 };

typedef struct Grad {
	Arena *a;
	Diag *d;
	const Cascade *f; /* the forward cascade */
	Cascade *b;       /* the backward, under construction */
	PtrVec made;      /* every backward tensor, in creation order */
	Tensor **val;     /* [f tensors]: the forward value as the backward reads it */
	Tensor **dx;      /* [f tensors]: the dX input of a float output, or NULL */
	PtrVec *contrib;  /* [f tensors]: contribution tensors of each adjoint */
	Tensor **adj;     /* [f tensors]: the finished adjoint, or NULL (none) */
	char *active;     /* [f tensors]: carries an adjoint */
	char *stop;       /* [f tensors]: a softmax/logsumexp stabiliser (constant) */
	PtrVec *notes;    /* --explain lines, or NULL */
	int failed;
} Grad;

/* grad_build.c */
void grad_note(Grad *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
Tensor *grad_new_tensor(Grad *g, const char *name, TensorKind k, const Tensor *like);
Node *grad_new_node(Grad *g, Tensor *out, const IndexVar *vars, int nfree, int nred, RedOp red,
		    Expr *body, Expr *filter, SrcLoc loc, const char *origin);
/* A copy of a forward expression reading the backward's tensors (and dims). */
Expr *grad_remap(Grad *g, const Expr *e);
/* The read t[vars 0..rank-1] of a backward tensor. */
Expr *grad_read_at(Grad *g, Tensor *t, const int *vars);
/* Every read of `from` in e (in place) becomes a read of `to` with the same
** subscripts, or the literal 1 when to is NULL; *changed is set if any. */
Expr *grad_swap_reads(Grad *g, Expr *e, const Tensor *from, Tensor *to, int *changed);
/* Whether forward tensor t is a forward output kept as a backward input. */
int grad_is_output(const Grad *g, const Tensor *t);

/* The conjuncts of f (NULL: none) pushed onto v, duplicates dropped. */
void grad_conjuncts(Grad *g, PtrVec *v, Expr *f);
/* f closed over the domains of every tensor read in body and in f itself. */
Expr *grad_close_filter(Grad *g, Expr *body, Expr *f);

/* grad_read.c: the contribution of one read R (of forward tensor R->tensor,
** inside forward node n) whose adjoint at each point of n's space is `local`
** (over n's variables, backward tensors). The new tensor, or NULL after a
** diagnostic. */
Tensor *grad_contribution(Grad *g, const Node *n, Expr *local, const Expr *R);

/* grad_expr.c: NULL stands for the float 0 in every builder. */
Expr *gx_num(Grad *g, double v);
Expr *gx_add(Grad *g, Expr *x, Expr *y);
Expr *gx_sub(Grad *g, Expr *x, Expr *y);
Expr *gx_mul(Grad *g, Expr *x, Expr *y);
Expr *gx_div(Grad *g, Expr *x, Expr *y);
Expr *gx_neg(Grad *g, Expr *x);
Expr *gx_select(Grad *g, Expr *c, Expr *x, Expr *y);
/* d e / d R, R a read (EX_ACCESS) compared structurally; NULL when zero. */
Expr *gx_diff(Grad *g, const Expr *e, const Expr *R);
/* e rebuilt bottom-up through the builders (never NULL: 0.0). */
Expr *gx_simplify(Grad *g, const Expr *e);
/* Copy of e with every subexpression equal to `from` replaced by `to`. */
Expr *gx_replace(Grad *g, const Expr *e, const Expr *from, const Expr *to);
/* How many times R occurs in e (structurally). */
int gx_count(const Expr *e, const Expr *R);

/* grad_shift.c: whether every float output of f is unchanged when temporary
** m becomes m + delta, for any delta over m's indices. */
int grad_shift_invariant(Arena *a, const Cascade *f, const Tensor *m);

/* grad_flash.c */
/* +1 when body is R times the rest, -1 when it is the rest divided by R
** (R occurring once), else 0. */
int grad_factor_sign(const Expr *body, const Expr *R);
/* The row-term contribution of a factor read R of reduction node n: the sum
** of n's body over its reduced indices is n's saved output. NULL when the
** rewrite does not apply. */
Tensor *grad_row_term(Grad *g, const Node *n, Expr *adj, const Expr *R);
/* After the sweep: stabilisers replaced by a saved logsumexp output and
** their sums by 1 where the scores and masks agree. */
void grad_from_lse(Grad *g);

#endif
