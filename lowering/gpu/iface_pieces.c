/*
** lowering/gpu/iface_pieces.c: the C a launch emits where it runs a block as
** several kernels, each cut from it as a cascade of its own (a backward's
** row pass, dQ and dK/dV kernels, iface_bwd.c; a forward's passes,
** iface_passes.c): the workspace's layout, one piece's launch with its
** tensors taken by name, and the block's defaults through a piece's.
*/
#include <string.h>

#include "gpu.h"
#include "iface.h"

/* The index of c's input or output named `name`, or -1: a temporary of the
** same name has no pointer in the launch's arrays (a piece's tensor of
** that name lives in the workspace). */
static int tensor_index(const Cascade *c, const char *name)
{
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP && !strcmp(t->name, name))
			return i;
	}
	return -1;
}

/* NAME_ws_layout: the workspace's tensors (Tensor*: a's, then b's where
** not NULL), each f32, contiguous and 256-byte aligned, its offset in
** off[]; the bytes in all. */
void iface_ws_layout(FILE *o, const char *name, const PtrVec *a, const PtrVec *b)
{
	fprintf(o,
		"\nstatic size_t %s_ws_layout(const long *dims, size_t *off)\n{\n\tsize_t n = 0;\n",
		name);
	int na = a->n, n = na + (b ? b->n : 0);
	for (int k = 0; k < n; k++) {
		const Tensor *t = k < na ? a->v[k] : b->v[k - na];
		fprintf(o, "\toff[%d] = n;\n\tn += ((size_t)", k);
		for (int d = 0; d < tensor_buf_rank(t); d++) {
			iface_dim_expr(o, tensor_buf_shape(t)[d]);
			fputs(" * (size_t)", o);
		}
		fprintf(o, "%d + 255) & ~(size_t)255;\n", dtype_size(t->dtype));
	}
	fputs("\t(void)dims, (void)off;\n\treturn n;\n}\n", o);
}

/* Piece p's launch inside the block's: its tensors from the block's arrays
** (whole's order) by name, those in the workspace (slot >= 0) from it;
** scratch (NULL: none), the C of a workspace pointer and its bytes, where p
** runs as several kernels of its own (a backward's kernel whose values
** before the stream take a pass). */
void iface_piece_call(FILE *o, const Cascade *p, const Cascade *whole,
		      int (*slot)(const void *ctx, const Tensor *t), const void *ctx,
		      const char *scratch)
{
	fprintf(o, "\t{\n\t\tvoid *pp[%d] = {0};\n\t\tconst int64_t *ps[%d] = {0};\n",
		p->tensors.n + 1, p->tensors.n + 1);
	for (int i = 0; i < p->tensors.n; i++) {
		const Tensor *t = p->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		int w = slot(ctx, t), b = tensor_index(whole, t->name);
		if (w >= 0)
			fprintf(o, "\t\tpp[%d] = ws + off[%d];\n", i, w);
		else if (b >= 0)
			fprintf(
			    o,
			    "\t\tpp[%d] = (void *)ptrs[%d];\n\t\tps[%d] = strides ? strides[%d] "
			    ": NULL;\n",
			    i, b, i, b);
		else
			fprintf(o, "#error \"attnc: %s's tensor %s is not %s's\"\n", p->name,
				t->name, whole->name);
	}
	fprintf(o,
		"\t\tif ((rc = %s_launch_generic(pp, ps, dims, params, %s%sstream)))\n\t\t\treturn "
		"rc;\n\t}\n",
		p->name, scratch ? scratch : "", scratch ? ", " : "");
}

/* NAME_gpu_defaults of block c through piece p's, whose dims and params
** are c's. */
void iface_defaults_via(FILE *o, const Cascade *c, const Cascade *p)
{
	const char *n = c->name;
	fprintf(o, "\nvoid %s_gpu_defaults(%s_gpu_args *a)\n{\n\t%s_gpu_args t;\n", n, n, p->name);
	fputs("\tmemset(&t, 0, sizeof t);\n", o);
	for (int i = 0; i < c->dims.n; i++) {
		const char *d = ((Dim *)c->dims.v[i])->name;
		fprintf(o, "\tt.%s = a->%s;\n", d, d);
	}
	fprintf(o, "\t%s_gpu_defaults(&t);\n", p->name);
	for (int i = 0; i < c->dims.n; i++) {
		const char *d = ((Dim *)c->dims.v[i])->name;
		fprintf(o, "\ta->%s = t.%s;\n", d, d);
	}
	for (int i = 0; i < c->params.n; i++) {
		const Param *pa = c->params.v[i];
		if (pa->deflt)
			fprintf(o, "\ta->%s = t.%s;\n", pa->name, pa->name);
	}
	fputs("}\n", o);
}
