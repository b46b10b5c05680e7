/*
** compiler/grad_explain.c: what --explain says of a backward's GPU cut
** (grad_split.c): its kernels in the order NAME_bwd_launch runs them, what
** each computes, and what the atomic launch does instead.
*/
#include <string.h>

#include "grad_cut.h"

/* The outputs of piece c that the next kernels or the caller get, as a
** list for grad_split_explain. */
static void piece_outputs(FILE *out, const Cascade *c)
{
	int n = 0;
	for (int t = 0; t < c->tensors.n; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->kind == TK_OUT)
			fprintf(out, "%s%s", n++ ? ", " : "", x->name);
	}
}

/* The tensor of c that a piece names `name` (cascade_c_name_is), or NULL. */
static const Tensor *tensor_by_c_name(const Cascade *c, const char *name)
{
	for (int t = 0; t < c->tensors.n; t++)
		if (cascade_c_name_is(((const Tensor *)c->tensors.v[t])->name, name))
			return c->tensors.v[t];
	return NULL;
}

/* --explain --grad with a GPU target: the kernels of the cut, in the order
** NAME_bwd_launch runs them, each with what it computes; where the parts
** of GQA's gradients are summed, and what the atomic launch does instead.
** Why: the cut decides the backward's speed and its workspace, and is
** otherwise visible only in the generated launcher. */
void grad_split_explain(FILE *out, const GradSplit *s)
{
	int n = s->nstats + (s->pre != NULL) + (s->dq != NULL) + s->ndkv + s->ngrp;
	fprintf(out, "  on the GPU: %s_launch runs %d kernel%s in order, sums in a fixed order\n",
		s->bwd->name, n, n > 1 ? "s" : "");
	/* whether the passes write logsumexps alone, some, or none */
	int lse = 0, other = 0;
	for (int k = 0; k < s->nstats; k++)
		for (int t = 0; t < s->stats[k]->tensors.n; t++) {
			const Tensor *x = s->stats[k]->tensors.v[t];
			if (x->kind == TK_OUT && strstr(x->name, "_lse"))
				lse = 1;
			else if (x->kind == TK_OUT)
				other = 1;
		}
	for (int k = 0; k < s->nstats; k++) {
		fprintf(out, "    %s: %s: ", s->stats[k]->name,
			s->stats[k]->prologue ? "a row pass, before the stream"
					      : "over query tiles, streaming the keys");
		piece_outputs(out, s->stats[k]);
		fputs(k + 1 < s->nstats ? "\n"
		      : !other ? " (the forward saved no logsumexp of these scores: save L = "
				 "logsumexp[j](..) as an output and this pass goes)\n"
		      : lse    ? " (values the forward did not save; an output L = "
				 "logsumexp[j](..) spares the softmax's)\n"
			       : " (values the forward did not save)\n",
		      out);
	}
	if (s->pre) {
		fprintf(out, "    %s: a row pass over the query rows: ", s->pre->name);
		piece_outputs(out, s->pre);
		fputs(" (read by the kernels below, held in the workspace)\n", out);
	}
	if (s->dq) {
		fprintf(out, "    %s: over query tiles, streaming the keys: ", s->dq->name);
		piece_outputs(out, s->dq);
		fputc('\n', out);
	}
	for (int k = 0; k < s->ndkv; k++) {
		fprintf(out, "    %s: over key tiles, streaming the query rows: ", s->dkv[k]->name);
		piece_outputs(out, s->dkv[k]);
		fputs(s->ngqa
			  ? " (_grp: each query head's part of a gradient that also reduces over "
			    "the heads sharing a K/V head, f32 in the workspace)\n"
			  : "\n",
		      out);
	}
	for (int k = 0; k < s->ngrp; k++) {
		const Node *x = s->grp[k]->nodes.v[s->grp[k]->nodes.n - 1];
		if (!x->nred) {
			/* a gradient summed from parts (an input read as several
			** operands) */
			fprintf(out, "    %s: a row pass: %s, the sum of ", s->grp[k]->name,
				x->out->name);
			int np = 0;
			for (int t = 0; t < s->grp[k]->tensors.n; t++) {
				const Tensor *y = s->grp[k]->tensors.v[t];
				const Tensor *w =
				    y->kind == TK_IN ? tensor_by_c_name(s->bwd, y->name) : NULL;
				if (w && w->def && w->def->nred == 1)
					fprintf(out, "%s%s", np++ ? ", " : "", y->name);
			}
			fputs(" (the kernels' parts, f32 in the workspace) and terms of its "
			      "rows\n",
			      out);
			continue;
		}
		if (s->grp[k]->value_last) {
			fprintf(out,
				"    %s: a row pass over the keys: %s, its parts summed over %s\n",
				s->grp[k]->name, x->out->name, x->vars[x->nfree].name);
			continue;
		}
		/* the terms the row pass wrote (a sink's), or parts per key */
		const Tensor *part = x->body->kind == EX_ACCESS ? x->body->tensor : NULL;
		const Tensor *by_pre = s->pre && part ? cascade_tensor(s->pre, part->name) : NULL;
		fprintf(out, "    %s: a row pass: %s, %s summed over ", s->grp[k]->name,
			x->out->name,
			by_pre && by_pre->kind == TK_OUT ? "the row pass's terms per query row"
							 : "its parts per key");
		for (int v = x->nfree; v < x->nfree + x->nred; v++)
			fprintf(out, "%s%s", v > x->nfree ? ", " : "", x->vars[v].name);
		fputs(" in a fixed order\n", out);
	}
	if (s->fused)
		fprintf(out,
			"  %s_launch_atomic: %s instead of %s adds dQ's f32 sums from the kernel "
			"over key tiles (no dQ kernel), in no fixed order; %s converts them\n",
			s->bwd->name, s->fused->name, s->dkv[s->fused_at]->name, s->post->name);
}
