/*
** lowering/c/c_emit.c: the portable C back end (`attnc --target=cpu
** --emit=c`). One C99 translation unit per file: small helpers, then per
** cascade an implementation of its plan, the generic entry point used by
** `attnc run --target=cpu`, a partitioned entry point that splits the KV
** stream and merges partial states (the merge rule, exercised), and a
** typed API declared in the generated header.
*/
#include <stdlib.h>
#include <string.h>

#include "c_emit.h"
#include "c_gen.h"

static const char *helpers =
    "static inline long attn_fdiv(long a, long b) { long q = a / b; return (a % b != 0 && ((a < 0) "
    "!= (b < 0))) ? q - 1 : q; }\n"
    "static inline long attn_fmod(long a, long b) { long m = a % b; return (m != 0 && ((m < 0) != "
    "(b < 0))) ? m + b : m; }\n"
    "static inline long attn_imax(long a, long b) { return a > b ? a : b; }\n"
    "static inline long attn_imin(long a, long b) { return a < b ? a : b; }\n"
    "static inline long attn_min4(long a, long b, long c, long d) { return attn_imin(attn_imin(a, "
    "b), attn_imin(c, d)); }\n"
    "static inline long attn_max4(long a, long b, long c, long d) { return attn_imax(attn_imax(a, "
    "b), attn_imax(c, d)); }\n"
    "/* NaN-propagating max/min with -inf/+inf as exact identities */\n"
    "static inline real attn_maxf(real a, real b) { return (a != a || b != b) ? (real)NAN : (a > b "
    "? a : b); }\n"
    "static inline real attn_minf(real a, real b) { return (a != a || b != b) ? (real)NAN : (a < b "
    "? a : b); }\n"
    "static inline real attn_sigmoid(real x) { return (real)1 / ((real)1 + R_EXP(-x)); }\n"
    "static inline real attn_rsqrt(real x) { return (real)1 / R_SQRT(x); }\n"
    "static inline real attn_relu(real x) { return x > 0 ? x : (real)0; }\n"
    "static inline real attn_sign(real x) { return x > 0 ? (real)1 : x < 0 ? (real)-1 : x; }\n"
    "static inline real attn_elu(real x) { return x > 0 ? x : R_EXPM1(x); }\n"
    "static inline real attn_softplus(real x) { return (x > 0 ? x : (real)0) + "
    "R_LOG1P(R_EXP(-R_FABS(x))); }\n"
    "/* int(x): toward zero, saturated to the i32 range, NaN 0 */\n"
    "static inline long attn_int(real x) { return x != x ? 0L : x >= (real)2147483647 ? "
    "2147483647L : x <= (real)-2147483648.0 ? -2147483647L - 1 : (long)x; }\n"
    "/* ilog2(n): floor(log2 n), -1 for n <= 0 */\n"
    "static inline long attn_ilog2(long n) { long r = -1; for (; n > 0; n >>= 1) r++; return r; "
    "}\n"
    "/* a gathered index (data) inside its extent n, else 0 and *bad set: the entry returns 1 */\n"
    "static inline long attn_gix(long x, long n, atomic_int *bad) { if (x >= 0 && x < n) return x; "
    "atomic_store_explicit(bad, 1, memory_order_relaxed); return 0; }\n";

static const char *elem_type(const Tensor *t, int f64)
{
	if (t->type == VT_INT)
		return "int32_t";
	if (t->type == VT_BOOL)
		return "uint8_t";
	return f64 ? "double" : "float";
}

static void print_shape_comment(FILE *o, const Tensor *t)
{
	fprintf(o, "[");
	for (int k = 0; k < t->rank; k++) {
		if (k)
			fputs(", ", o);
		expr_print(o, t->shape[k], NULL);
	}
	fprintf(o, "] %s", dtype_name(t->dtype));
}

/* The typed argument struct and prototypes, shared by the .c and the .h.
** The guard is the block's name, so headers of different kernels coexist in
** one translation unit (their public names differ by that same name); the
** extern "C" block lets C++ include the header and link the C objects. */
static void emit_decls(FILE *o, const Cascade *c, int f64)
{
	fprintf(o, "#ifndef ATTN_GEN_%s_H\n#define ATTN_GEN_%s_H\n", c->name, c->name);
	fprintf(o, "#include <stdint.h>\n");
	fprintf(o, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
	fprintf(o,
		"/* Arguments of %s: tensors are row-major and contiguous; float tensors\n"
		"** are passed as %s whatever their declared dtype. */\n",
		c->name, f64 ? "double" : "float");
	fprintf(o, "typedef struct %s_args {\n", c->name);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		fprintf(o, "\t%s%s *%s; /* ", t->kind == TK_IN ? "const " : "", elem_type(t, f64),
			t->name);
		print_shape_comment(o, t);
		fputs(" */\n", o);
	}
	for (int i = 0; i < c->dims.n; i++) {
		const Dim *d = c->dims.v[i];
		if (d->fixed)
			fprintf(o, "\tlong %s; /* must be %ld */\n", d->name, d->fixed);
		else
			fprintf(o, "\tlong %s;\n", d->name);
	}
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		fprintf(o, "\t%s %s; /* ", p->type == VT_INT ? "long" : "double", p->name);
		if (p->deflt) {
			fputs("default ", o);
			expr_print(o, p->deflt, NULL);
		} else {
			fputs("required", o);
		}
		fputs(" */\n", o);
	}
	fprintf(o, "} %s_args;\n", c->name);
	fprintf(o, "/* Fills the params with their defaults (dims must be set first). */\n");
	fprintf(o, "void %s_defaults(%s_args *a);\n", c->name, c->name);
	fprintf(o, "/* Runs the cascade; nthreads <= 0: the OpenMP default. Returns 0, 1 for bad\n"
		   "** sizes or data (a gathered index outside its tensor, offsets placing a\n"
		   "** packed point outside its buffer), 2 when out of memory. */\n");
	fprintf(o, "int %s_run(const %s_args *a, int nthreads);\n", c->name, c->name);
	fprintf(o,
		"int %s_run_generic(const long *dims, const double *params, void *const *data, int "
		"nthreads);\n",
		c->name);
	fprintf(o, "/* The KV stream split at bounds[0] = 0 < ... < bounds[nparts] = its length;\n"
		   "** partial states are merged with the plan's merge rule. */\n");
	fprintf(o,
		"int %s_run_partitioned(const long *dims, const double *params, void *const *data, "
		"int nthreads, const long *bounds, int nparts);\n",
		c->name);
	fprintf(o, "#ifdef __cplusplus\n}\n#endif\n");
	fprintf(o, "#endif\n");
}

/* Locals for dims, params, tensors and their strides, checked sizes. */
static const char *temp_type(const Tensor *t)
{
	return t->type == VT_FLOAT ? "real" : t->type == VT_INT ? "long" : "unsigned char";
}

static void emit_bindings(CGen *g)
{
	const Cascade *c = g->c;
	/* whole-tensor temporaries start NULL, so every exit can free them */
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP && g->st[t->id].kind == ST_GLOBAL)
			cg_line(g, "%s *t_%d = NULL;", temp_type(t), t->id);
	}
	for (int i = 0; i < c->dims.n; i++) {
		const Dim *d = c->dims.v[i];
		cg_line(g, "const long d_%d = dims[%d];", d->id, i);
		cg_line(g, "if (d_%d < 1%s) return 1;", d->id,
			d->fixed ? arena_printf(g->a, " || d_%d != %ldL", d->id, d->fixed) : "");
		cg_line(g, "(void)d_%d;", d->id);
	}
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		cg_line(g, "const %s p_%d = (%s)params[%d];", p->type == VT_INT ? "long" : "real",
			p->id, p->type == VT_INT ? "long" : "real", i);
		cg_line(g, "(void)p_%d;", p->id);
	}
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		const char *size = "1";
		for (int k = t->rank - 1; k >= 0; k--) {
			cg_line(g, "const long s_%d_%d = %s;", t->id, k, size);
			cg_line(g, "(void)s_%d_%d;", t->id, k);
			size = arena_printf(g->a, "%s*%s", size, cg_expr_str(g, t->shape[k]));
		}
		cg_line(g, "const long n_t%d = %s; (void)n_t%d;", t->id, size, t->id);
		const char *ty = t->type == VT_FLOAT ? "real"
				 : t->type == VT_INT ? "int32_t"
						     : "uint8_t";
		if (t->kind == TK_TEMP) {
			if (g->st[t->id].kind == ST_GLOBAL) {
				ty = temp_type(t);
				cg_line(g, "t_%d = calloc((size_t)n_t%d, sizeof(%s));", t->id,
					t->id, ty);
				cg_line(g, "if (!t_%d) { status = 2; goto done; }", t->id);
			}
			continue;
		}
		if (t->pack) {
			cg_packed_buffer(g, t);
			continue;
		}
		cg_line(g, "%s%s *t_%d = (%s *)data[%d];", t->kind == TK_IN ? "const " : "", ty,
			t->id, ty, t->id);
		cg_line(g, "if (!t_%d) { status = 1; goto done; }", t->id);
		if (t->kind == TK_OUT)
			cg_line(g, "memset(t_%d, 0, sizeof(*t_%d) * (size_t)n_t%d);", t->id, t->id,
				t->id);
	}
}

static void emit_frees(CGen *g)
{
	for (int i = 0; i < g->c->tensors.n; i++) {
		const Tensor *t = g->c->tensors.v[i];
		if ((t->kind == TK_TEMP && g->st[t->id].kind == ST_GLOBAL) || t->pack)
			cg_line(g, "free(t_%d);", t->id);
	}
}

static void emit_cascade_impl(CGen *g)
{
	const Cascade *c = g->c;
	const char *why = NULL;
	g->streamed = cg_streamable(g, &why);
	fprintf(g->o, "\n/* %s: %d pass%s over the KV stream (%s). */\n", c->name,
		g->p->passes_after, g->p->passes_after == 1 ? "" : "es",
		g->streamed ? "one-pass plan: running states, tiles, merge rule"
			    : arena_printf(g->a, "materialised: %s", why));
	fprintf(g->o,
		"static int %s_impl(const long *dims, const double *params, void *const *data, int "
		"nthreads, const long *bounds, int nparts)\n{\n",
		c->name);
	g->ind = 1;
	cg_line(g, "int status = 0;");
	/* reads through data-dependent subscripts check them (attn_gix) */
	g->gathers = cg_cascade_gathers(c);
	if (g->gathers)
		cg_line(g, "atomic_int gather_bad = 0;");
	cg_line(g, "(void)bounds; (void)nparts;");
	cg_line(g, "#ifdef _OPENMP");
	cg_line(g, "if (nthreads > 0) omp_set_num_threads(nthreads);");
	cg_line(g, "#else");
	cg_line(g, "(void)nthreads;");
	cg_line(g, "#endif");
	/* temporaries made in the stream live in per-thread buffers; the rest
	** are whole tensors */
	for (int i = 0; i < c->tensors.n; i++)
		g->st[i].kind = ST_GLOBAL;
	if (g->streamed)
		for (int i = 0; i < c->nodes.n; i++)
			if (g->p->np[i].role != ROLE_PROLOGUE)
				g->st[((Node *)c->nodes.v[i])->out->id].kind = ST_LOCAL;
	emit_bindings(g);
	for (int i = 0; i < c->nodes.n; i++)
		if (!g->streamed || g->p->np[i].role == ROLE_PROLOGUE)
			cg_materialised(g, i);
	if (g->streamed) {
		cg_line(g, "{");
		g->ind++;
		cg_line(g, "if (!bounds) nparts = 1;");
		cg_stream_kernel(g);
		g->ind--;
		cg_line(g, "}");
	}
	for (int i = 0; i < c->tensors.n; i++)
		if (((Tensor *)c->tensors.v[i])->pack)
			cg_store_packed(g, c->tensors.v[i]);
	if (g->gathers)
		cg_line(g, "if (atomic_load(&gather_bad)) status = 1;");
	fputs("done:\n", g->o);
	cg_line(g, "(void)0;");
	emit_frees(g);
	cg_line(g, "return status;");
	fputs("}\n", g->o);
}

/* Entry points around the implementation: generic (arrays in cascade
** order), partitioned (the merge rule), typed (the header's struct). */
static void emit_entries(CGen *g)
{
	const Cascade *c = g->c;
	FILE *o = g->o;
	fprintf(o,
		"\nint %s_run_generic(const long *dims, const double *params, void *const *data, "
		"int nthreads)\n{\n",
		c->name);
	fprintf(o, "\treturn %s_impl(dims, params, data, nthreads, NULL, 1);\n}\n", c->name);
	fprintf(o,
		"\nint %s_run_partitioned(const long *dims, const double *params, void *const "
		"*data, int nthreads, const long *bounds, int nparts)\n{\n",
		c->name);
	fprintf(o, "\tif (!bounds || nparts < 1 || bounds[0] != 0)\n\t\treturn 1;\n");
	fprintf(o, "\tfor (int k = 0; k < nparts; k++)\n\t\tif (bounds[k + 1] < "
		   "bounds[k])\n\t\t\treturn 1;\n");
	if (g->p->stream >= 0) {
		fprintf(o, "\t{\n\t\tconst long *d = dims; (void)d;\n");
		/* the stream's length, from the dims */
		for (int i = 0; i < c->dims.n; i++)
			fprintf(o, "\t\tconst long d_%d = dims[%d]; (void)d_%d;\n",
				((Dim *)c->dims.v[i])->id, i, ((Dim *)c->dims.v[i])->id);
		fprintf(o, "\t\tif (bounds[nparts] != %s)\n\t\t\treturn 1;\n",
			cg_expr_str(g, g->p->classes[g->p->stream].extent));
		fprintf(o, "\t}\n");
	}
	if (g->streamed) {
		fprintf(o, "\treturn %s_impl(dims, params, data, nthreads, bounds, nparts);\n}\n",
			c->name);
	} else {
		fprintf(o, "\t/* a materialised plan has no partial states to merge */\n");
		fprintf(o, "\treturn %s_impl(dims, params, data, nthreads, NULL, 1);\n}\n",
			c->name);
	}
	fprintf(o, "\nvoid %s_defaults(%s_args *a)\n{\n", c->name, c->name);
	fprintf(o, "\t(void)a;\n");
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tconst long d_%d = a->%s; (void)d_%d;\n", ((Dim *)c->dims.v[i])->id,
			((Dim *)c->dims.v[i])->name, ((Dim *)c->dims.v[i])->id);
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		fprintf(o, "\t%s p_%d = a->%s;\n", p->type == VT_INT ? "long" : "real", p->id,
			p->name);
		if (p->deflt) {
			fprintf(o, "\tp_%d = ", p->id);
			g->o = o;
			cg_expr(g, p->deflt);
			fprintf(o, ";\n");
		}
		fprintf(o, "\ta->%s = p_%d;\n", p->name, p->id);
	}
	fprintf(o, "}\n");
	/* introspection, for generic harnesses (the GPU test suite) */
	fprintf(o,
		"\nvoid %s_counts(int *ntensors, int *ndims, int *nparams)\n{\n\t*ntensors = %d, "
		"*ndims = %d, *nparams = %d;\n}\n",
		c->name, c->tensors.n, c->dims.n, c->params.n);
	fprintf(o,
		"\nconst char *%s_tensor_info(int i, int *kind, int *dtype, int "
		"*rank)\n{\n\tswitch (i) {\n",
		c->name);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		fprintf(o, "\tcase %d: *kind = %d, *dtype = %d, *rank = %d; return \"%s\";\n", i,
			(int)t->kind, (int)t->dtype, tensor_buf_rank(t), t->name);
	}
	fprintf(o, "\tdefault: return 0;\n\t}\n}\n");
	fprintf(o, "\nconst char *%s_dim_name(int i)\n{\n\tstatic const char *const n[] = {",
		c->name);
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\"%s\", ", ((Dim *)c->dims.v[i])->name);
	fprintf(o, "0};\n\treturn i >= 0 && i < %d ? n[i] : 0;\n}\n", c->dims.n);
	fprintf(o, "\nlong %s_dim_fixed(int i)\n{\n\tstatic const long f[] = {", c->name);
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "%ldL, ", ((Dim *)c->dims.v[i])->fixed);
	fprintf(o, "0};\n\treturn i >= 0 && i < %d ? f[i] : 0;\n}\n", c->dims.n);
	fprintf(o, "\nvoid %s_param_defaults(const long *dims, double *params)\n{\n", c->name);
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tconst long d_%d = dims[%d]; (void)d_%d;\n", ((Dim *)c->dims.v[i])->id,
			i, ((Dim *)c->dims.v[i])->id);
	fprintf(o, "\t(void)params;\n");
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		fprintf(o, "\t{\n\t\t%s p_%d = 0;\n", p->type == VT_INT ? "long" : "real", p->id);
		if (p->deflt) {
			fprintf(o, "\t\tp_%d = ", p->id);
			g->o = o;
			cg_expr(g, p->deflt);
			fprintf(o, ";\n");
		}
		fprintf(o, "\t\tparams[%d] = (double)p_%d;\n\t}\n", i, p->id);
	}
	fprintf(o, "}\n");
	fprintf(o, "\nvoid %s_tensor_shape(int i, const long *dims, long *shape)\n{\n", c->name);
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tconst long d_%d = dims[%d]; (void)d_%d;\n", ((Dim *)c->dims.v[i])->id,
			i, ((Dim *)c->dims.v[i])->id);
	fprintf(o, "\tswitch (i) {\n");
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		fprintf(o, "\tcase %d:\n", i);
		for (int k = 0; k < tensor_buf_rank(t); k++) {
			fprintf(o, "\t\tshape[%d] = ", k);
			g->o = o;
			cg_expr(g, tensor_buf_shape(t)[k]);
			fprintf(o, ";\n");
		}
		fprintf(o, "\t\tbreak;\n");
	}
	fprintf(o, "\tdefault: break;\n\t}\n}\n");
	fprintf(o, "\nint %s_run(const %s_args *a, int nthreads)\n{\n", c->name, c->name);
	/* params zeroed: a cascade without any still passes the array */
	fprintf(o, "\tlong dims[%d];\n\tdouble params[%d] = {0};\n\tvoid *data[%d];\n",
		c->dims.n + 1, c->params.n + 1, c->tensors.n + 1);
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tdims[%d] = a->%s;\n", i, ((Dim *)c->dims.v[i])->name);
	for (int i = 0; i < c->params.n; i++)
		fprintf(o, "\tparams[%d] = (double)a->%s;\n", i, ((Param *)c->params.v[i])->name);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			fprintf(o, "\tdata[%d] = NULL;\n", i);
		else
			fprintf(o, "\tdata[%d] = (void *)a->%s;\n", i, t->name);
	}
	fprintf(o, "\treturn %s_impl(dims, params, data, nthreads, NULL, 1);\n}\n", c->name);
}

static void emit_prelude(FILE *o, int f64)
{
	fputs("/* Generated by attnc (portable C back end). Do not edit. */\n", o);
	fputs("#include <math.h>\n#include <stdatomic.h>\n#include <stdint.h>\n#include "
	      "<stdlib.h>\n#include <string.h>\n",
	      o);
	fputs("#ifdef _OPENMP\n#include <omp.h>\n#endif\n", o);
	if (f64)
		fputs("typedef double real;\n#define R_EXP exp\n#define R_EXP2 exp2\n#define R_LOG "
		      "log\n"
		      "#define R_LOG2 log2\n#define R_TANH tanh\n#define R_SQRT sqrt\n#define "
		      "R_FABS fabs\n#define R_LOG1P log1p\n#define R_EXPM1 expm1\n#define R_ERF "
		      "erf\n#define R_FLOOR floor\n#define R_CEIL ceil\n#define R_RINT nearbyint\n",
		      o);
	else
		fputs("typedef float real;\n#define R_EXP expf\n#define R_EXP2 exp2f\n#define "
		      "R_LOG logf\n"
		      "#define R_LOG2 log2f\n#define R_TANH tanhf\n#define R_SQRT sqrtf\n#define "
		      "R_FABS fabsf\n#define R_LOG1P log1pf\n#define R_EXPM1 expm1f\n#define R_ERF "
		      "erff\n#define R_FLOOR floorf\n#define R_CEIL ceilf\n#define R_RINT "
		      "nearbyintf\n",
		      o);
	fputs(helpers, o);
}

/* One cascade's code: declarations, implementation, entry points. */
static int emit_one(FILE *out, const Cascade *c, int f64)
{
	Arena a;
	arena_init(&a);
	Plan *p = plan_build(&a, c, "cpu");
	CGen g = {0};
	g.o = out, g.a = &a, g.p = p, g.c = p->c, g.f64 = f64, g.prefix = "b";
	g.st = ARENA_ARRAY(&a, Store, p->c->tensors.n + 1);
	fputc('\n', out);
	emit_decls(out, c, f64);
	emit_cascade_impl(&g);
	emit_entries(&g);
	arena_free(&a);
	return 0;
}

int c_emit_streamed(const Cascade *c)
{
	Arena a;
	arena_init(&a);
	Plan *p = plan_build(&a, c, "cpu");
	CGen g = {0};
	g.a = &a, g.p = p, g.c = p->c, g.prefix = "b";
	g.st = ARENA_ARRAY(&a, Store, p->c->tensors.n + 1);
	const char *why = NULL;
	int r = cg_streamable(&g, &why);
	arena_free(&a);
	return r;
}

int c_emit_cascade(FILE *out, const Cascade *c, Diag *d, int use_f64)
{
	(void)d;
	emit_prelude(out, use_f64);
	return emit_one(out, c, use_f64);
}

int c_emit_program(FILE *out, const Program *p, Diag *d, int use_f64)
{
	(void)d;
	emit_prelude(out, use_f64);
	for (int i = 0; i < p->cascades.n; i++)
		if (emit_one(out, p->cascades.v[i], use_f64))
			return 1;
	return 0;
}

int c_emit_header(FILE *out, const Program *p, int use_f64)
{
	fputs("/* Generated by attnc (portable C back end). Do not edit. */\n", out);
	for (int i = 0; i < p->cascades.n; i++)
		emit_decls(out, p->cascades.v[i], use_f64);
	return 0;
}
