/*
** lowering/gpu/iface_args.c: C that every generated launcher writes (iface.c,
** iface_part.c, iface_cp.c): integer expressions over the dims, and a
** cascade's typed arguments as the arrays of NAME_launch_generic.
*/
#include "gpu.h"
#include "iface.h"

/* Integer expressions over dims, as C over `dims[]`. */
void iface_dim_expr(FILE *o, const Expr *e)
{
	switch (e->kind) {
	case EX_INT: fprintf(o, "%ldL", e->ival); break;
	case EX_DIM:
		if (e->dim->fixed)
			fprintf(o, "%ldL", e->dim->fixed);
		else
			fprintf(o, "dims[%d]", e->dim->id);
		break;
	case EX_BINOP:
		fputc('(', o);
		iface_dim_expr(o, e->args[0]);
		fprintf(o, " %s ", op_spelling((Op)e->op));
		iface_dim_expr(o, e->args[1]);
		fputc(')', o);
		break;
	default: fputs("0L", o); break;
	}
}

/* NAME_shape(tensor, dims, shape): each input's and output's shape from the
** dims, for the forward's launcher and the backward's alike (dims unused
** where every shape is fixed). */
void iface_shape_fn(FILE *o, const Cascade *c, const char *name)
{
	fprintf(o,
		"\nvoid %s_shape(int tensor, const long *dims, int64_t *shape)\n{\n\tswitch "
		"(tensor) {\n",
		name);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		fprintf(o, "\tcase %d:\n", i);
		for (int k = 0; k < tensor_buf_rank(t); k++) {
			fprintf(o, "\t\tshape[%d] = ", k);
			iface_dim_expr(o, tensor_buf_shape(t)[k]);
			fputs(";\n", o);
		}
		fputs("\t\tbreak;\n", o);
	}
	fputs("\tdefault: break;\n\t}\n\t(void)dims;\n}\n", o);
}

/* The typed arguments `a` (NAME_gpu_args) as the arrays ptrs, strides, dims
** and params, declared and filled. */
void iface_unpack_args(FILE *o, const Cascade *c)
{
	fprintf(o,
		"\tvoid *ptrs[%d] = {0};\n\tconst int64_t *strides[%d] = {0};\n\tlong "
		"dims[%d];\n\tdouble params[%d] = {0};\n",
		c->tensors.n + 1, c->tensors.n + 1, c->dims.n + 1, c->params.n + 1);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP)
			fprintf(o, "\tptrs[%d] = (void *)a->%s;\n\tstrides[%d] = a->%s_strides;\n",
				i, t->name, i, t->name);
	}
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tdims[%d] = a->%s;\n", i, ((Dim *)c->dims.v[i])->name);
	for (int i = 0; i < c->params.n; i++)
		fprintf(o, "\tparams[%d] = a->%s;\n", i, ((Param *)c->params.v[i])->name);
	fputs("\t(void)params;\n", o);
}

/* NAME_gpu_args: per input and output tensor a device pointer and optional
** strides, then the dims and the params. */
void iface_args_struct(FILE *o, const Cascade *c)
{
	fprintf(o, "typedef struct %s_gpu_args {\n", c->name);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		fprintf(o, "\t%svoid *%s; /* %s, %d dims */\n", t->kind == TK_IN ? "const " : "",
			t->name, dtype_name(t->dtype), tensor_buf_rank(t));
		fprintf(o, "\tconst int64_t *%s_strides;\n", t->name);
	}
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tlong %s;\n", ((Dim *)c->dims.v[i])->name);
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		fprintf(o, "\t%s %s;\n", p->type == VT_INT ? "int32_t" : "float", p->name);
	}
	fprintf(o, "} %s_gpu_args;\n", c->name);
}
