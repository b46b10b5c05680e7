/*
** lowering/gpu/iface_passes.c: the generated C interface of a forward that
** runs as one kernel a pass (compiler/pass_split.c cuts NAME into
** NAME_pass1, NAME_pass2, ..., each an ordinary cascade with its own
** launcher from iface.c). NAME_gpu_args holds the forward's tensors, dims
** and params as a one-pass forward's does; NAME_launch runs the pieces in
** order on one stream, each piece's tensors taken from the args by name
** and what one piece leaves for a later one (per query row: a max, a sum)
** from the caller's workspace (NAME_workspace_bytes). Values computed
** before the stream (a norm per row or key) are pieces too, row passes
** NAME_pro1, NAME_pro2, ... that run first.
*/
#include <string.h>

#include "gpu.h"
#include "iface.h"

/* The workspace slot of a piece's tensor that passes between pieces, or -1. */
static int ws_index(const void *ctx, const Tensor *t)
{
	const PassSplit *s = ctx;
	for (int k = 0; k < s->ws.n; k++)
		if (!strcmp(((const Tensor *)s->ws.v[k])->name, t->name))
			return k;
	return -1;
}

/* The header's part: what a caller of the forward needs. */
void iface_passes_decls(FILE *o, const PassSplit *s)
{
	const Cascade *c = s->fwd;
	const char *n = c->name;
	int npass = s->npieces - s->npre, narrow = 0;
	for (int k = 0; k < s->ws.n; k++)
		narrow |= ((const Tensor *)s->ws.v[k])->dtype != DT_F32;
	fprintf(o, "/* %s on the GPU, as %d kernels in order (", n, s->npieces);
	if (s->npre)
		fprintf(o, "%d row pass%s computing values\n** before the stream, then ", s->npre,
			s->npre > 1 ? "es" : "");
	fprintf(o,
		"%d pass%s over the keys: attnc --explain\n"
		"** says why). Tensor pointers are device pointers; strides are in elements\n"
		"** (NULL: row-major contiguous); the last dimension must be contiguous. */\n",
		npass, npass > 1 ? "es" : "");
	iface_args_struct(o, c);
	fprintf(
	    o,
	    "/* Sets fixed dims and param defaults (set the other dims first). */\n"
	    "void %s_gpu_defaults(%s_gpu_args *a);\n"
	    "/* Bytes of device memory %s_launch needs as its workspace for these dims:\n"
	    "** what one kernel leaves for the next, %s. */\n"
	    "size_t %s_workspace_bytes(const %s_gpu_args *a);\n"
	    "size_t %s_workspace_bytes_generic(const long *dims);\n"
	    "/* Checks the arguments and launches the kernels in order on stream (a\n"
	    "** CUstream, NULL: the default stream) without synchronising; the\n"
	    "** workspace (bytes >= %s_workspace_bytes) is the caller's device memory,\n"
	    "** in use until the last kernel ends. Returns 0 or an ATTNRT_ERR_* code;\n"
	    "** attnrt_last_error() says why. */\n"
	    "int %s_launch(const %s_gpu_args *a, void *workspace, size_t bytes, void "
	    "*stream);\n"
	    "/* The same with arrays in cascade order (tensors: in/out only, temporaries\n"
	    "** NULL), for harnesses; and the shape of tensor i for given dims. */\n"
	    "int %s_launch_generic(void *const *ptrs, const int64_t *const *strides, const long "
	    "*dims, const double *params, void *workspace, size_t bytes, void *stream);\n"
	    "void %s_shape(int tensor, const long *dims, int64_t *shape);\n",
	    n, n, n,
	    narrow ? "f32 per query row (or key), and 16-bit elements\n** of the values a later "
		     "kernel multiplies on the tensor cores"
		   : "f32 per query row (or key)",
	    n, n, n, n, n, n, n, n);
}

/* The source's part: the workspace layout (each tensor in its dtype,
** contiguous and 256-byte aligned), the pieces' launches in order, the shapes, and
** the typed API over them. */
void iface_passes_functions(FILE *o, const PassSplit *s)
{
	const Cascade *c = s->fwd;
	const char *n = c->name;
	int nw = s->ws.n;
	iface_ws_layout(o, n, &s->ws, NULL);
	fprintf(o,
		"\nsize_t %s_workspace_bytes_generic(const long *dims)\n{\n\tsize_t off[%d];\n"
		"\treturn %s_ws_layout(dims, off);\n}\n",
		n, nw + 1, n);
	fprintf(o,
		"\nint %s_launch_generic(void *const *ptrs, const int64_t *const *strides, const "
		"long *dims, const double *params, void *workspace, size_t bytes, void "
		"*stream)\n{\n\tsize_t off[%d];\n\tsize_t need = %s_ws_layout(dims, off);\n"
		"\tif (bytes < need || (need && !workspace))\n\t\treturn "
		"attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"attnrt: %s: the workspace has %%zu "
		"bytes; these dims need %%zu (%s_workspace_bytes)\", workspace ? bytes : 0, "
		"need);\n\tchar *ws = workspace;\n\tint rc;\n\t(void)ws;\n",
		n, nw + 1, n, n, n);
	for (int k = 0; k < s->npieces; k++)
		iface_piece_call(o, s->piece[k], c, ws_index, s, NULL);
	fputs("\treturn 0;\n}\n", o);
	iface_shape_fn(o, c, n);
	/* the typed API over the generic one; defaults through the first
	** piece's, whose dims and params are the forward's */
	iface_defaults_via(o, c, s->piece[0]);
	fprintf(o, "\nsize_t %s_workspace_bytes(const %s_gpu_args *a)\n{\n", n, n);
	iface_unpack_args(o, c);
	fprintf(o, "\t(void)ptrs, (void)strides;\n\treturn %s_workspace_bytes_generic(dims);\n}\n",
		n);
	fprintf(o,
		"\nint %s_launch(const %s_gpu_args *a, void *workspace, size_t bytes, void "
		"*stream)\n{\n",
		n, n);
	iface_unpack_args(o, c);
	fprintf(o,
		"\treturn %s_launch_generic(ptrs, strides, dims, params, workspace, bytes, "
		"stream);\n}\n",
		n);
}
