/*
** compiler/grad_cut.h: what the files of the backward's GPU cut share.
**   grad_split.c  the cut into kernels (grad.h's GradSplit)
**   grad_forms.c  the backward rewritten into the forms the kernels take
**   grad_explain.c what --explain says of the cut
*/
#ifndef ATTN_GRAD_CUT_H
#define ATTN_GRAD_CUT_H

#include "grad.h"
#include "plan.h"

/* The output of node m, a part of gradient node x (x's name and suffix,
** over m's free variables): an f32 temporary of b. */
Tensor *grad_part_tensor(Arena *a, Cascade *b, const Node *x, Node *m, const char *suffix);
/* The forward tensor X a backward's name dX (or d_X, where dX was taken)
** is the gradient of, or NULL. */
const Tensor *grad_forward_of(const Cascade *fwd, const char *name);
/* The forward output whose incoming gradient x is (dO for O), or NULL. */
const Tensor *grad_output_of(const Cascade *fwd, const Tensor *x);
/* An incoming gradient scaled per row (dO / Z) substituted into its readers. */
void grad_inline_incoming(Arena *a, const Cascade *fwd, Cascade *b);
/* A gradient's sum of terms that read its index and terms that do not, as
** sums of each (Gaussian attention's dQ). */
void grad_split_linear(Arena *a, Cascade *b);
/* Factors, divisors and signs that do not read a sum's index out of it. */
void grad_factor_sums(Arena *a, Cascade *b);
/* One sum over several indices from node `from` on nested (the query rows
** and keys being classes I and J of plan bp): the position after it, or -1. */
int grad_nest_sum(Arena *a, Plan *bp, int I, int J, int from);

#endif
