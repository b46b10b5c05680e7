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

/* The backward as the GPU runs it (grad_split.c): pieces that are each an
** ordinary cascade, run in this order. pre: the row pass, values of the
** query rows that read no key (the row term Delta), its outputs held in
** the workspace (ws: the backward's tensors, Tensor*, in pre's output
** order); dq: over query tiles, streaming the keys, the gradients reduced
** over the keys (dQ); dkv: over key tiles, streaming the query rows, those
** reduced over the query rows (dK, dV). Incoming gradients of 16-bit
** outputs take the output's dtype. A NULL piece has nothing to do. */
enum { GRAD_MAX_DKV = 8 };
typedef struct GradSplit {
	Cascade *bwd; /* the backward with the GPU's dtypes: its interface */
	/* stats: where the forward saved no logsumexp, the reductions over the
	** keys the kernels read (the softmax's max and sum), a kernel over
	** query tiles run first (or several in order, where its plan keeps
	** several passes), its results in ws before pre's */
	Cascade *stats[GRAD_MAX_DKV];
	int nstats;
	Cascade *pre, *dq;
	/* one kernel for dK and dV, or, at head dims above 128, one per gradient
	** (NAME_bwd_dK, NAME_bwd_dV: both accumulators do not fit one) */
	Cascade *dkv[GRAD_MAX_DKV];
	int ndkv;
	PtrVec ws;
	/* The launch with atomics (NULL fused: none): dkv with dkv[fused_at]
	** replaced by fused, which also adds the dQ gradients to f32 sums (acc:
	** Tensor*, in the workspace after ws, zeroed first) in no fixed order,
	** and post, which converts them; dq does not run. */
	Cascade *fused, *post;
	int fused_at;
	PtrVec acc;
	/* GQA: gradients of a K/V head shared by a group of query heads, each
	** query head's part written by the kernels over key tiles (in ws, after
	** the row pass's results) and summed by a row pass each, run last */
	Cascade *grp[GRAD_MAX_DKV];
	int ngrp;
	/* the first ngqa of grp are GQA's; the others sum the parts per key of
	** a table's or trainable input's gradient (ALiBi's trainable slope) */
	int ngqa;
} GradSplit;

/* The backward b of a forward with a softmax but no saved logsumexp, as
** the GPU runs it (grad_split.c): its max m and sum z (a pass of their
** own) give L = m + log(z), and every node after reads P = exp(x - L) for
** exp(x - m), L for m and 1 for z, as where L was saved. Returns how many
** softmaxes it rewrote. */
int grad_lse_for_gpu(Arena *a, Cascade *b);
/* Fills s from the forward fwd and its backward bwd (grad_derive with
** flash); nonzero after one diagnostic per gradient that is neither kind. */
int grad_split(Arena *a, Diag *d, const Cascade *fwd, const Cascade *bwd, GradSplit *s);
/* The cut's kernels for --explain (a line each, indented under the notes;
** grad_explain.c). */
void grad_split_explain(FILE *out, const GradSplit *s);

#endif
