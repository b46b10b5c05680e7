/*
** cli/run.c: the `attnc run` subcommand (see run.h).
**
** run_cascade goes through fixed steps, each a small function that reports
** its own errors: check the names given on the command line, take sizes from
** --sizes, fixed dims and the shapes of .npy inputs, check every shape,
** bind params, load or generate inputs, run the engine, then write and
** summarise the outputs. All buffers hang off one Run and are freed by
** run_free on every path.
*/
#define _POSIX_C_SOURCE 200809L

#include "run.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../compiler/grad.h"
#include "../lang/front.h"
#include "../lowering/c/c_emit.h"
#include "cpu_engine.h"
#include "inputs.h"
#include "interp.h"
#include "npy.h"
#include "../lowering/mlir/refexec.h"

/* Largest tensor `attnc run` agrees to allocate: 2^37 f64 values (1 TiB). */
#define RUN_MAX_NUMEL (1L << 37)

typedef struct Run Run;
struct Run {
	const Cascade *c;
	const RunConfig *cfg;
	FILE *out, *err;
	Binding b;
	int ndims, nparams, ntensors;
	char (*dimsrc)[160];         /* [ndims]: where each size came from; "" = unknown */
	const char **npypath;        /* [ntensors]: --input file of each input, or NULL */
	NpyArray *npy;               /* [ntensors]: the loaded files */
	const RunRange **range;      /* [ntensors]: --range of each i32 input, or NULL */
	int *pgiven;                 /* [nparams] */
	long (*shape)[NPY_MAX_RANK]; /* [ntensors]: evaluated shapes */
	long *numel;                 /* [ntensors] */
	const Run *saved;            /* a backward's forward run: its outputs are inputs here */
};

/* Every message of run_cascade starts the same way, as diag_load_file's do. */
__attribute__((format(printf, 2, 3))) static int errorf(Run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("attnc: error: ", r->err);
	vfprintf(r->err, fmt, ap);
	fputc('\n', r->err);
	va_end(ap);
	return RUN_EUSER;
}

/* Zero is the right default for everything but the engine. */
void run_config_init(RunConfig *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->engine = refexec_available() ? RUN_ENGINE_MLIR : RUN_ENGINE_INTERP;
}

/* ---- names ---------------------------------------------------------------- */

/* Lists the names of a cascade's dims, params or inputs after a message
** about an unknown name, so the user sees the choices. */
static void list_names(Run *r, const char *what, int which)
{
	const PtrVec *v = which == 0 ? &r->c->dims : which == 1 ? &r->c->params : &r->c->tensors;
	int n = 0;
	fprintf(r->err, "attnc: note: %s of '%s':", what, r->c->name);
	for (int i = 0; i < v->n; i++) {
		const char *name = which == 0   ? ((Dim *)v->v[i])->name
				   : which == 1 ? ((Param *)v->v[i])->name
						: ((Tensor *)v->v[i])->name;
		if (which == 2 && ((Tensor *)v->v[i])->kind != TK_IN)
			continue;
		fprintf(r->err, " %s", name);
		n++;
	}
	fprintf(r->err, "%s\n", n ? "" : " (none)");
}

/* The `in` tensor a --input or --range names, or NULL after an error. */
static const Tensor *input_named(Run *r, const char *name, const char *opt)
{
	const Tensor *t = cascade_tensor(r->c, name);
	if (!t || t->kind != TK_IN) {
		errorf(r, "%s %s: '%s' has no input named '%s'%s", opt, name, r->c->name, name,
		       t ? (t->kind == TK_OUT ? " (it is an output)" : " (it is computed)") : "");
		list_names(r, "inputs", 2);
		return NULL;
	}
	return t;
}

/* Every name on the command line must exist in the cascade; later options
** for the same name override earlier ones. */
static int check_names(Run *r)
{
	const RunConfig *cfg = r->cfg;
	for (int i = 0; i < cfg->nsizes; i++)
		if (!cascade_dim(r->c, cfg->sizes[i].name)) {
			errorf(r, "--sizes: '%s' has no dim named '%s'", r->c->name,
			       cfg->sizes[i].name);
			list_names(r, "dims", 0);
			return RUN_EUSER;
		}
	for (int i = 0; i < cfg->nparams; i++)
		if (!cascade_param(r->c, cfg->params[i].name)) {
			errorf(r, "--param: '%s' has no param named '%s'", r->c->name,
			       cfg->params[i].name);
			list_names(r, "params", 1);
			return RUN_EUSER;
		}
	for (int i = 0; i < cfg->ninputs; i++) {
		const Tensor *t = input_named(r, cfg->inputs[i].name, "--input");
		if (!t)
			return RUN_EUSER;
		r->npypath[t->id] = cfg->inputs[i].path;
	}
	for (int i = 0; i < cfg->nranges; i++) {
		const RunRange *g = &cfg->ranges[i];
		const char *opt = g->offsets ? "--offsets" : "--range";
		const Tensor *t = input_named(r, g->name, opt);
		if (!t)
			return RUN_EUSER;
		if (t->dtype != DT_I32)
			return errorf(r, "%s %s: '%s' is %s; %s apply to i32 inputs only", opt,
				      g->name, g->name, dtype_name(t->dtype),
				      g->offsets ? "offsets" : "ranges");
		if (g->offsets && t->rank != 1)
			return errorf(r, "--offsets %s: '%s' has rank %d; offsets are a vector",
				      g->name, g->name, t->rank);
		if (!g->offsets && (g->lo > g->hi || g->lo < INT32_MIN || g->hi > INT32_MAX))
			return errorf(r, "--range %s: %ld:%ld is not a valid i32 range", g->name,
				      g->lo, g->hi);
		r->range[t->id] = g;
	}
	return RUN_OK;
}

/* ---- sizes ------------------------------------------------------------- */

/* --sizes first, then fixed sizes; a --sizes value must agree with a fixed one. */
static int sizes_from_config(Run *r)
{
	for (int i = 0; i < r->cfg->nsizes; i++) {
		const RunSize *s = &r->cfg->sizes[i];
		Dim *d = cascade_dim(r->c, s->name);
		if (s->value < 1)
			return errorf(r, "--sizes %s=%ld: sizes must be at least 1", s->name,
				      s->value);
		if (d->fixed && d->fixed != s->value)
			return errorf(r, "--sizes %s=%ld conflicts with the fixed size %s = %ld",
				      s->name, s->value, s->name, d->fixed);
		r->b.dims[d->id] = s->value;
		snprintf(r->dimsrc[d->id], sizeof r->dimsrc[0], "from --sizes");
	}
	for (int i = 0; i < r->ndims; i++) {
		Dim *d = r->c->dims.v[i];
		if (d->fixed && !r->dimsrc[i][0]) {
			r->b.dims[i] = d->fixed;
			snprintf(r->dimsrc[i], sizeof r->dimsrc[0], "its fixed size");
		}
	}
	return RUN_OK;
}

/* Which .npy element types may feed a tensor of dtype t: integers for i32,
** bools or integers for bool, and anything numeric for floats. */
static int input_type_ok(DType t, NpyType f)
{
	int is_float = f == NPY_F16 || f == NPY_F32 || f == NPY_F64;
	if (t == DT_I32)
		return !is_float && f != NPY_BOOL;
	if (t == DT_BOOL)
		return !is_float;
	return 1;
}

/* Loads one --input file and takes (or checks) the size of every dim that
** appears as a bare `N` entry of the tensor's shape. */
static int load_input(Run *r, const Tensor *t)
{
	char why[512];
	const char *path = r->npypath[t->id];
	NpyArray *a = &r->npy[t->id];
	if (npy_read(path, a, why, sizeof why))
		return errorf(r, "input '%s': %s", t->name, why);
	if (!input_type_ok(t->dtype, a->type))
		return errorf(r, "input '%s' (%s): dtype %s does not fit the declared %s (%s)",
			      t->name, path, npy_type_descr(a->type), dtype_name(t->dtype),
			      t->dtype == DT_I32    ? "give integer data"
			      : t->dtype == DT_BOOL ? "give bool or integer data"
						    : "give float or integer data");
	if (a->rank != t->rank)
		return errorf(r, "input '%s' (%s) has rank %d, but '%s' is declared with rank %d",
			      t->name, path, a->rank, t->name, t->rank);
	for (int k = 0; k < t->rank; k++) {
		const Expr *e = t->shape[k];
		if (e->kind != EX_DIM)
			continue;
		int id = e->dim->id;
		if (a->shape[k] < 1)
			return errorf(r,
				      "input '%s' (%s): dimension %d (%s) has size %ld; sizes must "
				      "be at least 1",
				      t->name, path, k, e->dim->name, a->shape[k]);
		if (r->dimsrc[id][0] && r->b.dims[id] != a->shape[k])
			return errorf(
			    r,
			    "input '%s' (%s): dimension %d (%s) has size %ld, but %s = %ld "
			    "%s",
			    t->name, path, k, e->dim->name, a->shape[k], e->dim->name,
			    r->b.dims[id], r->dimsrc[id]);
		if (!r->dimsrc[id][0]) {
			r->b.dims[id] = a->shape[k];
			snprintf(r->dimsrc[id], sizeof r->dimsrc[0], "from input '%s' (%s)",
				 t->name, path);
		}
	}
	return RUN_OK;
}

/* Loads the --input files in declaration order, then insists every dim is
** known, naming each one that is not. */
static int resolve_sizes(Run *r)
{
	int rc = sizes_from_config(r), missing = 0;
	for (int i = 0; i < r->ntensors && !rc; i++)
		if (r->npypath[i])
			rc = load_input(r, r->c->tensors.v[i]);
	for (int i = 0; i < r->ndims && !rc; i++) {
		Dim *d = r->c->dims.v[i];
		if (!r->dimsrc[i][0])
			missing = errorf(r, "size of dim '%s' is not known; pass --sizes %s=...",
					 d->name, d->name);
	}
	return rc ? rc : missing;
}

/* Prints a tensor's declared shape, e.g. "Q[B, HKV*G, N, D]", into err. */
static void print_decl(Run *r, const Tensor *t)
{
	fprintf(r->err, "%s[", t->name);
	for (int k = 0; k < tensor_buf_rank(t); k++) {
		if (k)
			fputs(", ", r->err);
		expr_print(r->err, tensor_buf_shape(t)[k], NULL);
	}
	fputc(']', r->err);
}

/* Evaluates every tensor's shape (temporaries too, so an engine never sees
** an impossible size), applies the size cap, and checks .npy shapes against
** compound entries such as HKV*G. */
static int check_shapes(Run *r)
{
	for (int i = 0; i < r->ntensors; i++) {
		const Tensor *t = r->c->tensors.v[i];
		long n = 1;
		int bad = tensor_buf_rank(t) > NPY_MAX_RANK;
		for (int k = 0; k < tensor_buf_rank(t) && !bad; k++) {
			long *s = &r->shape[i][k];
			bad = expr_eval_extent(tensor_buf_shape(t)[k], r->b.dims, s) || *s < 0 ||
			      (*s && n > RUN_MAX_NUMEL / *s);
			n *= bad ? 1 : *s;
		}
		if (bad) {
			errorf(r,
			       "tensor '%s' is too large or has a negative extent at these sizes",
			       t->name);
			fputs("attnc: note: declared as ", r->err);
			print_decl(r, t);
			fputc('\n', r->err);
			return RUN_EUSER;
		}
		r->numel[i] = n;
		for (int k = 0; r->npypath[i] && k < tensor_buf_rank(t); k++) {
			if (r->npy[i].shape[k] == r->shape[i][k])
				continue;
			errorf(
			    r,
			    "input '%s' (%s): dimension %d has size %ld, but the declaration needs "
			    "%ld",
			    t->name, r->npypath[i], k, r->npy[i].shape[k], r->shape[i][k]);
			fputs("attnc: note: declared as ", r->err);
			print_decl(r, t);
			fputc('\n', r->err);
			return RUN_EUSER;
		}
	}
	return RUN_OK;
}

/* ---- params and inputs ---------------------------------------------------- */

/* --param values first (i32 params must get integers), then defaults. */
static int bind_params(Run *r)
{
	for (int i = 0; i < r->cfg->nparams; i++) {
		const RunParam *g = &r->cfg->params[i];
		Param *p = cascade_param(r->c, g->name);
		if (p->type == VT_INT &&
		    !(g->value == floor(g->value) && fabs(g->value) < 2147483648.0))
			return errorf(r, "--param %s=%g: '%s' is an i32 param; give an integer",
				      g->name, g->value, g->name);
		r->b.params[p->id] = g->value;
		r->pgiven[p->id] = 1;
	}
	int miss = cascade_param_defaults(r->c, r->b.dims, r->b.params, r->pgiven);
	if (miss >= 0) {
		const char *name = ((Param *)r->c->params.v[miss])->name;
		return errorf(r, "param '%s' has no default; pass --param %s=VALUE", name, name);
	}
	return RUN_OK;
}

/* Takes over a loaded .npy buffer as the tensor's data: i32 values must be
** integers in range, bools become 0/1, floats are rounded to the declared
** dtype (what a kernel reading that dtype would see). */
static int adopt_input(Run *r, const Tensor *t)
{
	NpyArray *a = &r->npy[t->id];
	long changed = 0;
	for (long i = 0; i < a->numel; i++) {
		double v = a->data[i], w = v;
		if (t->dtype == DT_I32) {
			if (!(v == floor(v) && v >= INT32_MIN && v <= INT32_MAX))
				return errorf(
				    r, "input '%s' (%s): element %ld is %g, not an i32 value",
				    t->name, r->npypath[t->id], i, v);
		} else if (t->dtype == DT_BOOL) {
			w = v != 0;
		} else {
			w = inputs_round(v, t->dtype);
			changed += !(w == v || (isnan(w) && isnan(v)));
		}
		a->data[i] = w;
	}
	if (changed && !r->cfg->quiet)
		fprintf(r->err, "attnc: note: input '%s': %ld of %ld values rounded to %s\n",
			t->name, changed, a->numel, dtype_name(t->dtype));
	r->b.data[t->id] = a->data;
	a->data = NULL;
	return RUN_OK;
}

/* Default range of generated i32 values: 0 to the largest runtime dim. */
static long default_int_hi(Run *r)
{
	long hi = 0, hi_all = 0;
	for (int i = 0; i < r->ndims; i++) {
		Dim *d = r->c->dims.v[i];
		hi_all = r->b.dims[i] > hi_all ? r->b.dims[i] : hi_all;
		if (!d->fixed && r->b.dims[i] > hi)
			hi = r->b.dims[i];
	}
	hi = hi ? hi : hi_all;
	return hi > INT32_MAX ? INT32_MAX : hi;
}

/* Inputs from files are adopted, the rest generated; outputs zeroed. */
static int bind_tensors(Run *r)
{
	for (int i = 0; i < r->ntensors; i++) {
		const Tensor *t = r->c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		const Tensor *ft = r->saved ? cascade_tensor(r->saved->c, t->name) : NULL;
		if (t->kind == TK_IN && ft && ft->kind == TK_OUT) {
			/* a forward output the backward reads: the value just computed */
			size_t n = (size_t)r->numel[i];
			r->b.data[i] = malloc((n ? n : 1) * sizeof(double));
			if (!r->b.data[i])
				return errorf(r, "out of memory"), RUN_EINTERNAL;
			memcpy(r->b.data[i], r->saved->b.data[ft->id], n * sizeof(double));
			continue;
		}
		if (t->kind == TK_IN && r->npypath[i]) {
			int rc = adopt_input(r, t);
			if (rc)
				return rc;
			continue;
		}
		size_t n = r->numel[i] ? (size_t)r->numel[i] : 1;
		r->b.data[i] =
		    t->kind == TK_IN ? malloc(n * sizeof(double)) : calloc(n, sizeof(double));
		if (!r->b.data[i])
			return errorf(r, "out of memory for '%s' (%ld elements)", t->name,
				      r->numel[i]),
			       RUN_EINTERNAL;
		const RunRange *g = r->range[i];
		if (t->kind == TK_IN && g && g->offsets) {
			if (inputs_offsets(r->b.data[i], r->numel[i], r->cfg->seed, t->name, g->lo,
					   g->hi))
				return errorf(r,
					      "--offsets %s=%ld:%ld: %ld sequences of at most %ld "
					      "cannot hold %ld",
					      t->name, g->lo, g->hi, r->numel[i] - 1, g->hi, g->lo),
				       RUN_EUSER;
		} else if (t->kind == TK_IN) {
			long lo = r->range[i] ? r->range[i]->lo : 0;
			long hi = r->range[i] ? r->range[i]->hi : default_int_hi(r);
			inputs_fill(r->b.data[i], r->numel[i], t->dtype, r->cfg->seed, t->name, lo,
				    hi);
		}
	}
	return RUN_OK;
}

/* ---- outputs -------------------------------------------------------------- */

/* printf's spelling of NaN varies ("-nan" on glibc); ours does not. */
static void print_num(FILE *out, const char *label, double v, int digits)
{
	if (isnan(v))
		fprintf(out, " %s nan", label);
	else if (isinf(v))
		fprintf(out, " %s %sinf", label, v < 0 ? "-" : "");
	else
		fprintf(out, " %s %.*e", label, digits, v);
}

/* Outputs are written (and summarised) in the working precision, whatever
** their declared dtype (docs/cli.md): i32 and bool results are exact in it. */
static NpyType out_type(Run *r)
{
	return r->cfg->use_f64 ? NPY_F64 : NPY_F32;
}

/* One line per output: shape, type, min/max (NaNs skipped), mean, l2 norm
** and a position-weighted checksum sum_k x_k * (k % 7 + 1). */
static void summarise(Run *r, const Tensor *t)
{
	const double *x = r->b.data[t->id];
	long n = r->numel[t->id], nnan = 0, ninf = 0;
	int f32 = out_type(r) == NPY_F32;
	double mn = NAN, mx = NAN, sum = 0, sq = 0, ck = 0;
	for (long k = 0; k < n; k++) {
		double v = f32 ? inputs_round(x[k], DT_F32) : x[k]; /* as written */
		nnan += isnan(v) != 0;
		ninf += isinf(v) != 0;
		if (!isnan(v)) {
			mn = isnan(mn) || v < mn ? v : mn;
			mx = isnan(mx) || v > mx ? v : mx;
		}
		sum += v, sq += v * v, ck += v * (double)(k % 7 + 1);
	}
	fprintf(r->out, "%s: shape [", t->name);
	for (int k = 0; k < tensor_buf_rank(t); k++)
		fprintf(r->out, "%s%ld", k ? ", " : "", r->shape[t->id][k]);
	fprintf(r->out, "] %s", f32 ? "f32" : "f64");
	print_num(r->out, "min", mn, 4);
	print_num(r->out, "max", mx, 4);
	print_num(r->out, "mean", n ? sum / (double)n : NAN, 4);
	print_num(r->out, "l2", sqrt(sq), 4);
	print_num(r->out, "checksum", ck, 9);
	if (nnan)
		fprintf(r->out, " nan=%ld", nnan);
	if (ninf)
		fprintf(r->out, " inf=%ld", ninf);
	fputc('\n', r->out);
}

/* mkdir -p: creates each missing component of dir. */
static int make_dirs(const char *dir)
{
	size_t n = strlen(dir);
	char *p = malloc(n + 1);
	int rc = 0;
	if (!p)
		return -1;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n && !rc; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		struct stat st;
		if (mkdir(p, 0777) && errno != EEXIST)
			rc = -1;
		else if (stat(p, &st) || !S_ISDIR(st.st_mode))
			rc = -1, errno = ENOTDIR;
		p[i] = c;
	}
	free(p);
	return rc;
}

/* Writes (when asked) and summarises every output in declaration order. */
static int emit_outputs(Run *r)
{
	const char *dir = r->cfg->out_dir;
	if (dir && make_dirs(dir)) {
		errorf(r, "cannot create output directory '%s': %s", dir, strerror(errno));
		return RUN_EINTERNAL;
	}
	for (int i = 0; i < r->ntensors; i++) {
		const Tensor *t = r->c->tensors.v[i];
		if (t->kind != TK_OUT)
			continue;
		if (dir) {
			char why[512];
			size_t len = strlen(dir) + strlen(t->name) + 8;
			char *path = malloc(len);
			if (!path)
				return errorf(r, "out of memory"), RUN_EINTERNAL;
			snprintf(path, len, "%s/%s.npy", dir, t->name);
			int bad = npy_write(path, out_type(r), tensor_buf_rank(t), r->shape[i],
					    r->b.data[i], why, sizeof why);
			free(path);
			if (bad)
				return errorf(r, "%s", why), RUN_EINTERNAL;
		}
		if (!r->cfg->quiet)
			summarise(r, t);
	}
	return RUN_OK;
}

/* ---- driver ------------------------------------------------------------- */

/* The C back end's source for the cascade, in a malloc'd string (*src);
** its messages go through cfg->diag, else a fresh Diag on r->err. */
static int emit_c_source(Run *r, char **src)
{
	size_t len = 0;
	Arena a;
	Diag fresh, *d = r->cfg->diag;
	arena_init(&a);
	if (!d) {
		diag_init(&fresh, &a, r->err);
		d = &fresh;
	}
	int errors = d->errors, bad = 1;
	FILE *f = open_memstream(src, &len);
	if (f) {
		bad = c_emit_cascade(f, r->c, d, r->cfg->use_f64) || d->errors > errors;
		bad |= fclose(f) != 0;
	}
	arena_free(&a);
	if (!f || bad) {
		if (f)
			free(*src);
		*src = NULL;
		errorf(r, "the C back end could not translate '%s'%s", r->c->name,
		       f ? "" : " (out of memory)");
		return RUN_EINTERNAL;
	}
	return RUN_OK;
}

/* The CPU engine: emit C, then compile, load and run it (cpu_engine.h). */
static int run_cpu(Run *r, char *why, size_t n)
{
	char *src = NULL;
	if (emit_c_source(r, &src))
		return -2; /* reported */
	size_t elen = strlen(r->c->name) + sizeof "_run_generic";
	char *entry = malloc(elen);
	int bad = -1;
	if (entry) {
		snprintf(entry, elen, "%s_run_generic", r->c->name);
		bad = cpu_engine_run_ex(&r->b, src, entry, r->cfg->use_f64, why, n);
	} else {
		snprintf(why, n, "out of memory");
	}
	free(entry);
	free(src);
	return bad;
}

/* The chosen engine; its failure is ours (exit 3), not the user's, except
** where the interpreter or the C back end's code says that the data given
** caused it (1: a gathered index or offsets out of range; exit 1). */
static int run_engine(Run *r)
{
	char why[1024] = "";
	int bad;
	const char *what;
	if (r->cfg->engine == RUN_ENGINE_INTERP) {
		what = "interpreter";
		bad = interp_run(&r->b, why, sizeof why);
	} else if (r->cfg->engine == RUN_ENGINE_CPU) {
		what = "CPU engine";
		bad = run_cpu(r, why, sizeof why);
		if (bad == -2)
			return RUN_EINTERNAL;
	} else {
		what = "reference executor";
		bad = refexec_run(&r->b, r->cfg->use_f64, why, sizeof why);
	}
	if (!bad)
		return RUN_OK;
	if (bad == 1 && r->cfg->engine != RUN_ENGINE_MLIR) {
		errorf(r, "'%s' cannot run on the data given (%s): %s", r->c->name, what, why);
		return RUN_EUSER;
	}
	errorf(r, "%s failed on '%s': %s", what, r->c->name, why[0] ? why : "no reason given");
	return RUN_EINTERNAL;
}

/* Every per-run array at once (zeroed, one spare slot so empty cascades
** still get non-NULL pointers); run_free copes with any of them missing. */
static int run_alloc(Run *r)
{
	size_t nd = (size_t)r->ndims + 1, np = (size_t)r->nparams + 1, nt = (size_t)r->ntensors + 1;
	r->b.c = r->c;
	r->b.dims = calloc(nd, sizeof *r->b.dims);
	r->b.params = calloc(np, sizeof *r->b.params);
	r->b.data = calloc(nt, sizeof *r->b.data);
	r->dimsrc = calloc(nd, sizeof *r->dimsrc);
	r->npypath = calloc(nt, sizeof *r->npypath);
	r->npy = calloc(nt, sizeof *r->npy);
	r->range = calloc(nt, sizeof *r->range);
	r->pgiven = calloc(np, sizeof *r->pgiven);
	r->shape = calloc(nt, sizeof *r->shape);
	r->numel = calloc(nt, sizeof *r->numel);
	return r->b.dims && r->b.params && r->b.data && r->dimsrc && r->npypath && r->npy &&
		       r->range && r->pgiven && r->shape && r->numel
		   ? 0
		   : -1;
}

/* Releases bound buffers (inputs, outputs, unadopted .npy data) and arrays. */
static void run_free(Run *r)
{
	for (int i = 0; i < r->ntensors; i++) {
		if (r->b.data)
			free(r->b.data[i]);
		if (r->npy)
			npy_free(&r->npy[i]);
	}
	free(r->b.dims);
	free(r->b.params);
	free(r->b.data);
	free(r->dimsrc);
	free(r->npypath);
	free(r->npy);
	free(r->range);
	free(r->pgiven);
	free(r->shape);
	free(r->numel);
}

/* The steps in order on r (set up by the caller); the first failure's
** status is the result. r's buffers stay for the caller to free. */
static int run_steps(Run *r, const Cascade *c, const RunConfig *cfg)
{
	r->c = c, r->cfg = cfg;
	r->out = cfg->out ? cfg->out : stdout;
	r->err = cfg->err ? cfg->err : stderr;
	r->ndims = c->dims.n, r->nparams = c->params.n, r->ntensors = c->tensors.n;
	int rc = run_alloc(r) ? (errorf(r, "out of memory"), RUN_EINTERNAL) : RUN_OK;
	if (!rc)
		rc = check_names(r);
	if (!rc)
		rc = resolve_sizes(r);
	if (!rc)
		rc = check_shapes(r);
	if (!rc)
		rc = bind_params(r);
	if (!rc)
		rc = bind_tensors(r);
	if (!rc)
		rc = run_engine(r);
	if (!rc)
		rc = emit_outputs(r);
	return rc;
}

int run_cascade(const Cascade *c, const RunConfig *cfg)
{
	Run r;
	memset(&r, 0, sizeof r);
	int rc = run_steps(&r, c, cfg);
	run_free(&r);
	return rc;
}

int run_cascade_grad(const Cascade *c, const Cascade *bwd, const RunConfig *cfg)
{
	/* the forward takes the --input files of its own inputs; the dX files
	** are the backward's */
	RunConfig fc = *cfg;
	RunInput *ins = calloc((size_t)cfg->ninputs + 1, sizeof *ins);
	if (!ins)
		return RUN_EINTERNAL;
	fc.inputs = ins, fc.ninputs = 0;
	for (int i = 0; i < cfg->ninputs; i++)
		if (cascade_tensor(c, cfg->inputs[i].name))
			ins[fc.ninputs++] = cfg->inputs[i];
	Run f, b;
	memset(&f, 0, sizeof f);
	memset(&b, 0, sizeof b);
	int rc = run_steps(&f, c, &fc);
	if (!rc) {
		b.saved = &f;
		rc = run_steps(&b, bwd, cfg);
		run_free(&b);
	}
	run_free(&f);
	free(ins);
	return rc;
}

/* ---- command line --------------------------------------------------------- */

static const char usage_text[] =
    "usage: attnc run FILE.attn [options]\n"
    "\n"
    "Evaluates one attention block of FILE.attn on seeded random (or given)\n"
    "inputs and prints one summary line per output.\n"
    "\n"
    "options:\n"
    "  --entry NAME           the attention block to run (needed if FILE has several)\n"
    "  --sizes B=2,H=4,...    sizes of dims (else fixed sizes, else .npy input shapes)\n"
    "  --seed N               seed for generated inputs (default 0)\n"
    "  --input NAME=FILE.npy  read input NAME from a .npy file (repeatable)\n"
    "  --param NAME=VALUE     set a param, overriding its default (repeatable)\n"
    "  --range NAME=LO:HI     values of a generated i32 input (default 0:largest runtime dim)\n"
    "  --offsets NAME=TOTAL:LONGEST\n"
    "                         a generated i32 vector of cumulative offsets (cu_seqlens):\n"
    "                         0 first, TOTAL last, ragged steps of 0 to LONGEST\n"
    "  --out-dir DIR          write each output as DIR/NAME.npy (DIR is created)\n"
    "  --precision f32|f64    working precision of the mlir and cpu engines and of\n"
    "                         written float outputs (default f32; interp always\n"
    "                         computes in f64)\n"
    "  --engine mlir|interp|cpu\n"
    "                         the MLIR reference executor (default), the f64\n"
    "                         interpreter, or the C back end's code built with the\n"
    "                         system C compiler ($CC, else cc) and loaded; an attnc\n"
    "                         built without MLIR defaults to interp\n"
    "  --target cpu           the same as --engine cpu\n"
    "  --grad                 also run the backward (NAME_bwd, see attnc --grad):\n"
    "                         the forward's outputs, then the gradients dY of the\n"
    "                         inputs that get one, from seeded random dX (or\n"
    "                         --input dX=FILE.npy) for every float output X\n"
    "  --quiet                print no summary lines\n"
    "  --help                 show this help\n"
    "\n"
    "Generated inputs: floats are standard normals rounded to the tensor's dtype,\n"
    "i32 values uniform in their range, bools true with probability 3/4; each\n"
    "tensor's values depend only on the seed and its name.\n"
    "Summary: NAME: shape [...] TYPE min max mean l2 checksum (sum x_k*(k%7+1))\n"
    "Exit status: 0 ok, 1 error in the .attn file or in given data, 2 usage error,\n"
    "3 internal failure.\n";

/* What the command line said, with arrays sized for the worst case. */
typedef struct Args {
	const char *file, *entry;
	RunConfig cfg;
	RunSize *sizes;
	RunInput *inputs;
	RunParam *params;
	RunRange *ranges;
	int help;
	int grad; /* --grad */
} Args;

/* Usage errors: one line, then the pointer to --help. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("attnc run: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\ntry 'attnc run --help'\n", stderr);
	va_end(ap);
	return RUN_EUSAGE;
}

/* A C identifier of length n at s. */
static int is_ident(const char *s, size_t n)
{
	if (n == 0 ||
	    !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* Whole-string signed decimal integer. */
static int parse_long(const char *s, long *v)
{
	char *end;
	if (!*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
		return -1;
	errno = 0;
	*v = strtol(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/* Splits "NAME=VALUE" (NAME an identifier), copying NAME into the arena. */
static int split_assign(Arena *a, const char *s, const char **name, const char **value)
{
	const char *eq = strchr(s, '=');
	if (!eq || !is_ident(s, (size_t)(eq - s)) || !eq[1])
		return -1;
	*name = arena_strndup(a, s, (size_t)(eq - s));
	*value = eq + 1;
	return 0;
}

/* "B=2,H=4": each entry NAME=INT with INT >= 1; later entries win. */
static int parse_sizes(Arena *a, Args *g, const char *s)
{
	const char *p = s;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *item = arena_strndup(a, p, n);
		const char *name, *val;
		long v;
		if (split_assign(a, item, &name, &val) || parse_long(val, &v))
			return usage_error(
			    "malformed --sizes '%s': expected NAME=SIZE[,NAME=SIZE...]", s);
		if (v < 1)
			return usage_error("--sizes %s=%ld: sizes must be at least 1", name, v);
		g->sizes[g->cfg.nsizes++] = (RunSize){name, v};
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* --seed: an unsigned 64-bit decimal. */
static int parse_seed(Args *g, const char *s)
{
	char *end;
	if (*s < '0' || *s > '9')
		return usage_error("malformed --seed '%s': expected a non-negative integer", s);
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return usage_error("malformed --seed '%s': expected a non-negative integer", s);
	g->cfg.seed = (uint64_t)v;
	return 0;
}

/* --param NAME=VALUE with VALUE any C float literal (inf allowed). */
static int parse_param(Arena *a, Args *g, const char *s)
{
	const char *name, *val;
	char *end;
	if (split_assign(a, s, &name, &val))
		return usage_error("malformed --param '%s': expected NAME=VALUE", s);
	errno = 0;
	double v = strtod(val, &end);
	if (*end || errno == ERANGE)
		return usage_error("malformed --param '%s': '%s' is not a number", s, val);
	g->params[g->cfg.nparams++] = (RunParam){name, v};
	return 0;
}

/* --range NAME=LO:HI with LO <= HI, both i32. */
static int parse_range(Arena *a, Args *g, const char *s)
{
	const char *name, *val;
	long lo, hi;
	if (split_assign(a, s, &name, &val))
		return usage_error("malformed --range '%s': expected NAME=LO:HI", s);
	const char *colon = strchr(val, ':');
	if (!colon || parse_long(arena_strndup(a, val, (size_t)(colon - val)), &lo) ||
	    parse_long(colon + 1, &hi))
		return usage_error("malformed --range '%s': expected NAME=LO:HI", s);
	if (lo > hi || lo < INT32_MIN || hi > INT32_MAX)
		return usage_error("--range '%s': need LO <= HI, both 32-bit integers", s);
	g->ranges[g->cfg.nranges++] = (RunRange){name, lo, hi, 0};
	return 0;
}

/* --offsets NAME=TOTAL:LONGEST, both non-negative i32. */
static int parse_offsets(Arena *a, Args *g, const char *s)
{
	const char *name, *val;
	long total, longest;
	const char *colon;
	if (split_assign(a, s, &name, &val) || !(colon = strchr(val, ':')) ||
	    parse_long(arena_strndup(a, val, (size_t)(colon - val)), &total) ||
	    parse_long(colon + 1, &longest))
		return usage_error("malformed --offsets '%s': expected NAME=TOTAL:LONGEST", s);
	if (total < 0 || longest < 0 || total > INT32_MAX || longest > INT32_MAX)
		return usage_error("--offsets '%s': TOTAL and LONGEST must be 32-bit and >= 0", s);
	g->ranges[g->cfg.nranges++] = (RunRange){name, total, longest, 1};
	return 0;
}

/* One option that takes a value. */
static int apply_option(Arena *a, Args *g, const char *opt, const char *val)
{
	if (!strcmp(opt, "--entry"))
		g->entry = val;
	else if (!strcmp(opt, "--sizes"))
		return parse_sizes(a, g, val);
	else if (!strcmp(opt, "--seed"))
		return parse_seed(g, val);
	else if (!strcmp(opt, "--input")) {
		const char *name, *path;
		if (split_assign(a, val, &name, &path))
			return usage_error("malformed --input '%s': expected NAME=FILE.npy", val);
		g->inputs[g->cfg.ninputs++] = (RunInput){name, path};
	} else if (!strcmp(opt, "--param"))
		return parse_param(a, g, val);
	else if (!strcmp(opt, "--range"))
		return parse_range(a, g, val);
	else if (!strcmp(opt, "--offsets"))
		return parse_offsets(a, g, val);
	else if (!strcmp(opt, "--out-dir"))
		g->cfg.out_dir = val;
	else if (!strcmp(opt, "--precision")) {
		if (strcmp(val, "f32") && strcmp(val, "f64"))
			return usage_error("--precision must be f32 or f64, not '%s'", val);
		g->cfg.use_f64 = !strcmp(val, "f64");
	} else if (!strcmp(opt, "--engine")) {
		if (!strcmp(val, "mlir"))
			g->cfg.engine = RUN_ENGINE_MLIR;
		else if (!strcmp(val, "interp"))
			g->cfg.engine = RUN_ENGINE_INTERP;
		else if (!strcmp(val, "cpu"))
			g->cfg.engine = RUN_ENGINE_CPU;
		else
			return usage_error("--engine must be mlir or interp or cpu, not '%s'", val);
	} else if (!strcmp(opt, "--target")) {
		if (strcmp(val, "cpu"))
			return usage_error("--target must be cpu, not '%s'", val);
		g->cfg.engine = RUN_ENGINE_CPU;
	} else
		return usage_error("unknown option '%s'", opt);
	return 0;
}

/* Whether opt is one of the options with a value (so the next argument is it). */
static int takes_value(const char *opt)
{
	static const char *const names[] = {"--entry",     "--sizes",  "--seed",    "--input",
					    "--param",     "--range",  "--offsets", "--out-dir",
					    "--precision", "--engine", "--target"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(opt, names[i]))
			return 1;
	return 0;
}

/* Options take "--opt VALUE" or "--opt=VALUE"; "--" ends them. */
static int parse_args(Arena *a, int argc, char **argv, Args *g)
{
	int ncomma = 0, nopts = 0;
	for (int i = 1; i < argc; i++)
		for (const char *p = argv[i]; *p; p++)
			ncomma += *p == ',';
	g->sizes = ARENA_ARRAY(a, RunSize, argc + ncomma + 1);
	g->inputs = ARENA_ARRAY(a, RunInput, argc + 1);
	g->params = ARENA_ARRAY(a, RunParam, argc + 1);
	g->ranges = ARENA_ARRAY(a, RunRange, argc + 1);
	g->cfg.sizes = g->sizes, g->cfg.inputs = g->inputs;
	g->cfg.params = g->params, g->cfg.ranges = g->ranges;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (nopts || s[0] != '-' || !s[1]) {
			if (g->file)
				return usage_error("unexpected argument '%s' (one FILE.attn only)",
						   s);
			g->file = s;
			continue;
		}
		if (!strcmp(s, "--")) {
			nopts = 1;
			continue;
		}
		if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			g->help = 1;
			return 0;
		}
		const char *eq = strchr(s, '=');
		char *opt = eq ? arena_strndup(a, s, (size_t)(eq - s)) : arena_strdup(a, s);
		if (!strcmp(opt, "--quiet") || !strcmp(opt, "--grad")) {
			if (eq)
				return usage_error("%s takes no value", opt);
			*(opt[2] == 'q' ? &g->cfg.quiet : &g->grad) = 1;
			continue;
		}
		const char *val = eq ? eq + 1 : NULL;
		if (!val) {
			if (!takes_value(opt))
				return usage_error("unknown option '%s'", opt);
			if (i + 1 >= argc)
				return usage_error("option '%s' needs a value", opt);
			val = argv[++i];
		}
		int rc = apply_option(a, g, opt, val);
		if (rc)
			return rc;
	}
	if (!g->file)
		return usage_error("no input file; usage: attnc run FILE.attn [options]");
	return 0;
}

/* The cascade to run: --entry by name, else the only one. */
static const Cascade *pick_cascade(const Program *p, const char *entry, const char *file, int *rc)
{
	for (int i = 0; entry && i < p->cascades.n; i++) {
		const Cascade *c = p->cascades.v[i];
		if (!strcmp(c->name, entry))
			return c;
	}
	if (!entry && p->cascades.n == 1)
		return p->cascades.v[0];
	if (!entry && p->cascades.n == 0) {
		fprintf(stderr, "attnc: error: %s defines no attention block\n", file);
		*rc = RUN_EUSER;
		return NULL;
	}
	if (entry)
		fprintf(stderr, "attnc: error: %s has no attention block named '%s'; it has:", file,
			entry);
	else
		fprintf(stderr,
			"attnc run: error: %s defines several attention blocks; pick one with "
			"--entry NAME:",
			file);
	for (int i = 0; i < p->cascades.n; i++)
		fprintf(stderr, " %s", ((Cascade *)p->cascades.v[i])->name);
	fputc('\n', stderr);
	if (!entry)
		fputs("try 'attnc run --help'\n", stderr);
	*rc = entry ? RUN_EUSER : RUN_EUSAGE;
	return NULL;
}

/* Parse, compile (one Arena for everything), pick a block, run it. */
int run_main(int argc, char **argv)
{
	Arena a;
	Args g;
	arena_init(&a);
	memset(&g, 0, sizeof g);
	run_config_init(&g.cfg);
	int rc = parse_args(&a, argc, argv, &g);
	if (!rc && g.help)
		fputs(usage_text, stdout);
	if (rc || g.help) {
		arena_free(&a);
		return rc;
	}
	Diag d;
	diag_init(&d, &a, stderr);
	int file = diag_load_file(&d, g.file);
	Program *p = file < 0 ? NULL : front_compile(&a, &d, file);
	g.cfg.diag = &d;
	if (!p || d.errors)
		rc = RUN_EUSER;
	const Cascade *c = rc ? NULL : pick_cascade(p, g.entry, g.file, &rc);
	const Cascade *bwd = c && g.grad ? grad_derive(&a, &d, c, 1, NULL) : NULL;
	if (c && g.grad && !bwd)
		rc = RUN_EUSER;
	else if (bwd)
		rc = run_cascade_grad(c, bwd, &g.cfg);
	else if (c)
		rc = run_cascade(c, &g.cfg);
	arena_free(&a);
	return rc;
}
