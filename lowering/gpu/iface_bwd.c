/*
** lowering/gpu/iface_bwd.c: the generated C interface of a backward on the
** GPU (compiler/grad_split.c cuts NAME_bwd into the row pass, the dQ kernel
** and the dK/dV kernel, each an ordinary cascade with its own launcher from
** iface.c). NAME_bwd_gpu_args holds the backward's tensors (the forward's
** inputs, its saved outputs, the incoming gradients, the gradients it
** writes), dims and params; NAME_bwd_launch runs the pieces in order on one
** stream, each piece's tensors taken from the args by name and the row
** pass's results from the caller's workspace (NAME_bwd_workspace_bytes).
** Its sums are in a fixed order. Where grad_split also fused dQ into a
** kernel over key tiles, NAME_bwd_launch_atomic zeroes dQ's f32 sums in
** the workspace, runs that kernel, whose CTAs add to them in any order,
** and the pass that converts them (slower than NAME_bwd_launch where a
** CTA holds 64 keys: bench/RESULTS.md).
*/
#include <string.h>

#include "../../compiler/grad.h"
#include "gpu.h"
#include "iface.h"

/* Workspace tensor k: the row pass's results (and GQA's parts per query
** head), then dQ's f32 sums. */
static const Tensor *ws_tensor(const GradSplit *s, int k)
{
	return k < s->ws.n ? s->ws.v[k] : s->acc.v[k - s->ws.n];
}

/* A workspace tensor's name as the pieces have it (dots made underscores,
** as grad_split names them). */
static int ws_index(const void *ctx, const Tensor *t)
{
	const GradSplit *s = ctx;
	for (int k = 0; k < s->ws.n + s->acc.n; k++)
		if (cascade_c_name_is(ws_tensor(s, k)->name, t->name))
			return k;
	return -1;
}

/* The header's part: what a caller of the backward needs. */
void iface_bwd_decls(FILE *o, const GradSplit *s)
{
	const Cascade *c = s->bwd;
	const char *n = c->name;
	iface_args_struct(o, c);
	fprintf(o,
		"/* Sets fixed dims and param defaults (set the other dims first). */\n"
		"void %s_gpu_defaults(%s_gpu_args *a);\n",
		n, n);
	fprintf(o,
		"/* Bytes of device memory %s_launch_atomic needs as its workspace for these\n"
		"** dims: the row pass's results, dQ's f32 sums and the scratch of kernels\n"
		"** run as several passes (0: none). %s_launch takes this much too (it\n"
		"** may need less: not dQ's sums, where no kernel runs as passes). */\n"
		"size_t %s_workspace_bytes(const %s_gpu_args *a);\n"
		"size_t %s_workspace_bytes_generic(const long *dims);\n",
		n, n, n, n, n);
	fprintf(
	    o,
	    "/* The backward's kernels in order on stream (a CUstream, NULL: the default\n"
	    "** stream), without synchronising: the row pass, then dQ, dK and dV. The\n"
	    "** workspace (bytes >= %s_workspace_bytes) is the caller's device memory.\n"
	    "** The sums are in a fixed order: the same bytes every run. The atomic\n"
	    "** form %s\n"
	    "** Returns 0 or an ATTNRT_ERR_* code; attnrt_last_error() says why. */\n"
	    "int %s_launch(const %s_gpu_args *a, void *workspace, size_t bytes, void "
	    "*stream);\n"
	    "int %s_launch_atomic(const %s_gpu_args *a, void *workspace, size_t bytes, "
	    "void *stream);\n"
	    "int %s_launch_generic(void *const *ptrs, const int64_t *const *strides, const long "
	    "*dims, const double *params, void *workspace, size_t bytes, void *stream);\n"
	    "int %s_launch_atomic_generic(void *const *ptrs, const int64_t *const "
	    "*strides, const long *dims, const double *params, void *workspace, size_t bytes, "
	    "void *stream);\n"
	    "void %s_shape(int tensor, const long *dims, int64_t *shape);\n"
	    "/* Bytes per element of tensor i: incoming gradients of 16-bit outputs\n"
	    "** come in their dtype (the CPU's backward takes them in f32). */\n"
	    "int %s_elem_bytes(int tensor);\n",
	    n,
	    s->fused ? "adds dQ's parts from the dK/dV kernel by f32 atomics, in no fixed\n"
		       "** order (today slower than the fixed order's dQ kernel)."
		     : "is the same launch (this backward's dQ is not fused).",
	    n, n, n, n, n, n, n, n);
}

/* Whether piece p runs as several kernels of its own (one of prog's
** PassSplits: Gaussian's dQ kernel, whose key norms are values before its
** stream, a row pass first); such a piece takes a workspace of its own. */
static int split_piece(const Program *prog, const Cascade *p)
{
	for (int i = 0; p && i < prog->passes.n; i++)
		if (((const PassSplit *)prog->passes.v[i])->fwd == p)
			return 1;
	return 0;
}

/* The pieces of s, in no particular order, into r (at most 4 *
** GRAD_MAX_DKV + 4); returns how many. */
static int all_pieces(const GradSplit *s, const Cascade **r)
{
	int n = 0;
	for (int k = 0; k < s->nstats; k++)
		r[n++] = s->stats[k];
	const Cascade *one[4] = {s->pre, s->dq, s->fused, s->post};
	for (int k = 0; k < 4; k++)
		if (one[k])
			r[n++] = one[k];
	for (int k = 0; k < s->ndkv; k++)
		r[n++] = s->dkv[k];
	for (int k = 0; k < s->ngrp; k++)
		r[n++] = s->grp[k];
	return n;
}

/* One piece's launch (iface_piece_call), where there is the piece; one
** that runs as several kernels gets the scratch after the workspace's
** tensors. */
static void piece_call(FILE *o, const GradSplit *s, const Program *prog, const Cascade *p)
{
	if (p)
		iface_piece_call(o, p, s->bwd, ws_index, s,
				 split_piece(prog, p) ? "ws + total, scratch" : NULL);
}

/* The source's part: the workspace layout, the pieces' launches in
** order, shapes and element sizes, and the typed API over them. */
void iface_bwd_functions(FILE *o, const GradSplit *s, const Program *prog)
{
	const Cascade *c = s->bwd;
	const char *n = c->name;
	int nw = s->ws.n + s->acc.n;
	/* the workspace: each row-pass result, then dQ's f32 sums, then the
	** scratch of the pieces that run as several kernels (the most any of
	** them needs: they run one after another) */
	iface_ws_layout(o, n, &s->ws, &s->acc);
	const Cascade *pc[4 * GRAD_MAX_DKV + 4];
	int npc = all_pieces(s, pc), split = 0;
	for (int k = 0; k < npc; k++)
		split |= split_piece(prog, pc[k]);
	if (split) {
		fprintf(o, "\nstatic size_t %s_scratch(const long *dims)\n{\n\tsize_t n = 0, m;\n",
			n);
		for (int k = 0; k < npc; k++)
			if (split_piece(prog, pc[k]))
				fprintf(
				    o,
				    "\tif ((m = %s_workspace_bytes_generic(dims)) > n)\n\t\tn = "
				    "m;\n",
				    pc[k]->name);
		fputs("\treturn n;\n}\n", o);
	}
	fprintf(o,
		"\nsize_t %s_workspace_bytes_generic(const long *dims)\n{\n\tsize_t off[%d];\n"
		"\treturn %s_ws_layout(dims, off)",
		n, nw + 1, n);
	if (split)
		fprintf(o, " + %s_scratch(dims)", n);
	fputs(";\n}\n", o);
	/* both launches: the sums in a fixed order (a kernel of its own for
	** dQ), and with atomics (fused: dQ's sums zeroed, added to by the
	** kernel over key tiles, converted after it) */
	for (int atomic = 0; atomic < 2; atomic++) {
		int fused = atomic && s->fused;
		fprintf(o,
			"\nint %s_launch%s_generic(void *const *ptrs, const int64_t *const "
			"*strides, const long *dims, const double *params, void *workspace, "
			"size_t bytes, void *stream)\n{\n\tsize_t off[%d];\n\tsize_t need = "
			"%s_ws_layout(dims, off);\n",
			n, atomic ? "_atomic" : "", nw + 1, n);
		if (split)
			fprintf(o,
				"\tsize_t total = need, scratch = %s_scratch(dims);\n\tneed += "
				"scratch;\n",
				n);
		/* the fixed order does not use dQ's sums after the row pass's */
		if (!atomic && s->acc.n && !split)
			fprintf(o, "\tneed = off[%d];\n", s->ws.n);
		fprintf(o,
			"\tif (bytes < need || (need && !workspace))\n\t\treturn "
			"attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"attnrt: %s: the workspace has "
			"%%zu bytes; these dims need %%zu (%s_workspace_bytes)\", workspace ? "
			"bytes : 0, need);\n\tchar *ws = workspace;\n\tint rc;\n\t(void)ws;\n",
			n, n);
		if (fused)
			fprintf(o,
				"\tif ((rc = attnrt_memset_async(ws + off[%d], 0, %s - off[%d], "
				"stream)))\n\t\treturn rc;\n",
				s->ws.n, split ? "total" : "need", s->ws.n);
		for (int k = 0; k < s->nstats; k++)
			piece_call(o, s, prog, s->stats[k]);
		piece_call(o, s, prog, s->pre);
		if (!fused)
			piece_call(o, s, prog, s->dq);
		for (int k = 0; k < s->ndkv; k++)
			piece_call(o, s, prog, fused && k == s->fused_at ? s->fused : s->dkv[k]);
		if (fused)
			piece_call(o, s, prog, s->post);
		for (int k = 0; k < s->ngrp; k++)
			piece_call(o, s, prog, s->grp[k]);
		fputs("\treturn 0;\n}\n", o);
	}
	/* shapes: the pieces' tensors are the backward's */
	iface_shape_fn(o, c, n);
	fprintf(o, "\nint %s_elem_bytes(int tensor)\n{\n\tswitch (tensor) {\n", n);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP)
			fprintf(o, "\tcase %d: return %d;\n", i, dtype_size(t->dtype));
	}
	fputs("\tdefault: return 0;\n\t}\n}\n", o);
	/* the typed API over the generic one; defaults through a piece's */
	const Cascade *p = s->dq ? s->dq : s->dkv[0];
	iface_defaults_via(o, c, p);
	fprintf(o, "\nsize_t %s_workspace_bytes(const %s_gpu_args *a)\n{\n", n, n);
	iface_unpack_args(o, c);
	fprintf(o, "\t(void)ptrs, (void)strides;\n\treturn %s_workspace_bytes_generic(dims);\n}\n",
		n);
	for (int atomic = 0; atomic < 2; atomic++) {
		const char *suffix = atomic ? "_atomic" : "";
		fprintf(o,
			"\nint %s_launch%s(const %s_gpu_args *a, void *workspace, size_t bytes, "
			"void *stream)\n{\n",
			n, suffix, n);
		iface_unpack_args(o, c);
		fprintf(o,
			"\treturn %s_launch%s_generic(ptrs, strides, dims, params, workspace, "
			"bytes, stream);\n}\n",
			n, suffix);
	}
}
