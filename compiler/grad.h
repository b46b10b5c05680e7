/*
** compiler/grad.h: the backward cascade, derived from the forward one by
** reverse-mode differentiation of its nodes (docs/compiler.md, "The
** derivation").
**
** grad_derive builds, from a forward Cascade NAME, an ordinary Cascade
** NAME_bwd that every evaluator runs like any other:
**
**   inputs    every forward input (same names, in order), then the forward
**             outputs the backward reads (L, O: saved values), then dX for
**             every floating-point forward output X (same shape, f32)
**   outputs   dY for every input Y that gets a gradient (same shape and
**             dtype as Y), in declaration order
**
** An input gets a gradient when grad_wants says so: a 16- or 8-bit float
** input (the activations Q, K, V) always, an f32 input only when declared
** `trainable`, integers and bools never. The forward temporaries the
** backward needs are recomputed in it; dead nodes are removed.
*/
#ifndef ATTN_GRAD_H
#define ATTN_GRAD_H

#include "cascade.h"

/* Whether the forward input t gets a gradient (dY output). */
int grad_wants(const Tensor *t);

/* The backward cascade of c, allocated in a, or NULL after reporting why
** through d (a read that cannot carry a gradient, prod, a name clash).
** Each line of `notes` (const char *, may be NULL) says how a gradient was
** derived, for --explain. flash: apply the rewrites of compiler/grad_flash.c
** (the row term Delta and P recomputed from a saved logsumexp). */
Cascade *grad_derive(Arena *a, Diag *d, const Cascade *c, int flash, PtrVec *notes);

#endif
