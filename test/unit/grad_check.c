/*
** test/unit/grad_check.c: the derived backward (compiler/grad.h) against
** central finite differences in f64, on every block of every .attn file
** in the directories given.
**
** Per block, at small runtime sizes (fixed dims as declared), for both the
** naive derivation and the one with the FlashAttention rewrites:
**   - inputs: seeded normals, i32 masks that include fully masked rows
**     (kv_len and prefix_len 0 for one batch), dX random (0 where the
**     forward output is not finite, e.g. the -inf logsumexp of an empty
**     row, whose derivative means nothing);
**   - for a random direction U of each differentiated input alone, then
**     of all of them together:
**         fd = sum_X dX . (f(x + hU) - f(x - hU)) / 2h      (interpreter)
**         an = sum_Y dY . U_Y                               (backward, interpreter)
**     with |fd - an| <= 1e-6 * max(|fd|, |an|) + 1e-9;
**   - the C back end's code for the backward (f64) against the
**     interpreter's dY, max relative error <= 1e-10.
** A block whose backward cannot be derived must be listed in
** not_derivable[] and fail with a diagnostic naming the tensor; any other
** failure is an error, so every new example is covered. Last, the check's
** own sensitivity: the causal backward with one derivative off by 0.1%
** must fail it.
**
** usage: test_grad_check SCRATCH_DIR DIR...
*/
#include "host_testutil.h"

#include <dirent.h>

#include "cli/cpu_engine.h"
#include "cli/inputs.h"
#include "cli/interp.h"
#include "compiler/grad.h"
#include "lang/front.h"
#include "lowering/c/c_emit.h"

#define SEED   0x9a7dULL
#define H_STEP 1e-5
#define TOL_FD 1e-6
#define TOL_C  1e-10

/* Blocks whose backward is a diagnostic, and the tensor it names. */
static const struct {
	const char *block, *tensor;
} not_derivable[] = {{"paged_decode", "Kc"}, {"paged_decode_hnd", "Kc"}, {"paged_prefill", "Kc"}};

static int nblocks, nchecks, nc_checked;

/* Small sizes by dim name; -1 for a dim with no rule. */
static long small_size(const char *name)
{
	static const struct {
		const char *name;
		long v;
	} t[] = {{"B", 2},
		 {"H", 2},
		 {"HKV", 2},
		 {"G", 2},
		 {"N", 5},
		 {"M", 6},
		 {"P", 2},
		 {"MAXP", 3},
		 {"NP", 7},
		 /* an image or video past the 7-wide window along its rows, with
		 ** few pixels (the checks cost the square of their count) */
		 {"T", 2},
		 {"IH", 8},
		 {"IW", 2}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(t[i].name, name))
			return t[i].v;
	return -1;
}

/* The sizes of c's dims, or -1 for one the test does not know. */
static int draw_dims(const Cascade *c, long *dims)
{
	for (int k = 0; k < c->dims.n; k++) {
		const Dim *d = c->dims.v[k];
		dims[k] = d->fixed ? d->fixed : small_size(d->name);
		if (dims[k] < 0) {
			fprintf(stderr, "%s: no size for dim %s; extend small_size\n", c->name,
				d->name);
			return -1;
		}
	}
	return 0;
}

static long dim_of(const Cascade *c, const long *dims, const char *name)
{
	const Dim *d = cascade_dim(c, name);
	return d ? dims[d->id] : 1;
}

/* i32 inputs by name: lengths with an empty batch, a page table, doc ids. */
static int fill_i32(const Cascade *c, const long *dims, const Tensor *t, double *buf)
{
	long n = tensor_numel(t, dims);
	InputsRng r;
	inputs_rng_init(&r, SEED, t->name);
	if (!strcmp(t->name, "kv_len") || !strcmp(t->name, "prefix_len")) {
		long full = cascade_dim(c, "MAXP") ? dim_of(c, dims, "MAXP") * dim_of(c, dims, "P")
			    : cascade_dim(c, "M")  ? dim_of(c, dims, "M")
						   : dim_of(c, dims, "N");
		for (long i = 0; i < n; i++)
			buf[i] = i == 0 ? 0 : (double)inputs_rng_int(&r, 1, full);
		return 0;
	}
	if (!strcmp(t->name, "block")) {
		for (long i = 0; i < n; i++)
			buf[i] = (double)((i * 3) % dim_of(c, dims, "NP"));
		return 0;
	}
	if (!strcmp(t->name, "doc")) {
		long len = tensor_dim_size(t, 1, dims);
		for (long i = 0; i < n; i++)
			buf[i] = (double)((i % len) / 2);
		return 0;
	}
	fprintf(stderr, "%s: no rule for i32 input %s; extend fill_i32\n", c->name, t->name);
	return -1;
}

/* The forward tensor whose gradient the backward's tensor named `name`
** is: dX, or d_X where dX is a C keyword. */
static const Tensor *gradient_of(const Cascade *f, const char *name)
{
	if (name[0] != 'd')
		return NULL;
	const Tensor *t = cascade_tensor(f, name + 1);
	return t || name[1] != '_' ? t : cascade_tensor(f, name + 2);
}

/* A binding of c with every buffer allocated (inputs, outputs). */
static Binding bind(const Cascade *c, const long *dims)
{
	Binding b = {c, calloc((size_t)c->dims.n + 1, sizeof(long)),
		     calloc((size_t)c->params.n + 1, sizeof(double)),
		     calloc((size_t)c->tensors.n + 1, sizeof(double *))};
	memcpy(b.dims, dims, sizeof(long) * (size_t)c->dims.n);
	cascade_param_defaults(c, dims, b.params, NULL);
	for (int k = 0; k < c->tensors.n; k++) {
		const Tensor *t = c->tensors.v[k];
		if (t->kind != TK_TEMP)
			b.data[k] = calloc((size_t)tensor_numel(t, dims) + 1, sizeof(double));
	}
	return b;
}

static void unbind(Binding *b)
{
	for (int k = 0; k < b->c->tensors.n; k++)
		free(b->data[k]);
	free(b->data), free(b->dims), free(b->params);
}

static int run(const Binding *b)
{
	char err[512];
	if (interp_run(b, err, sizeof err)) {
		fprintf(stderr, "%s: interpreter: %s\n", b->c->name, err);
		return -1;
	}
	return 0;
}

/* One block's state: the forward binding at x, the backward's, the
** directions (one buffer per forward tensor, NULL where no gradient). */
typedef struct Case {
	const Cascade *f, *b;
	Binding fx, bx;
	double **u;  /* [forward tensors]: direction, NULL where no gradient */
	double **dx; /* [forward tensors]: the dX buffer of a float output */
	double **dy; /* [forward tensors]: the dY buffer of an input */
} Case;

/* sum over float outputs X of dX . f(x + s U) (U masked by `only`: -1 all). */
static double probe(Case *k, double s, int only, double *out)
{
	Binding p = bind(k->f, k->fx.dims);
	for (int i = 0; i < k->f->tensors.n; i++) {
		const Tensor *t = k->f->tensors.v[i];
		if (t->kind != TK_IN)
			continue;
		long n = tensor_numel(t, k->fx.dims);
		for (long e = 0; e < n; e++)
			p.data[i][e] = k->fx.data[i][e] +
				       (k->u[i] && (only < 0 || only == i) ? s * k->u[i][e] : 0);
	}
	int bad = run(&p);
	double dot = 0;
	for (int i = 0; i < k->f->tensors.n && !bad; i++) {
		const Tensor *t = k->f->tensors.v[i];
		const double *dx = k->dx[i];
		if (!dx)
			continue;
		long n = tensor_numel(t, k->fx.dims);
		for (long e = 0; e < n; e++)
			if (dx[e] != 0)
				dot += dx[e] * p.data[i][e];
	}
	unbind(&p);
	*out = dot;
	return bad;
}

/* The analytic side: sum over inputs Y of dY . U_Y. */
static double analytic(const Case *k, int only)
{
	double dot = 0;
	for (int i = 0; i < k->f->tensors.n; i++) {
		if (!k->u[i] || (only >= 0 && only != i))
			continue;
		long n = tensor_numel(k->f->tensors.v[i], k->fx.dims);
		for (long e = 0; e < n; e++)
			dot += k->dy[i][e] * k->u[i][e];
	}
	return dot;
}

/* Central differences against the backward for one direction; 0 or -1. */
static int check_direction(Case *k, int only, const char *what, int quiet)
{
	double fp, fm;
	if (probe(k, H_STEP, only, &fp) || probe(k, -H_STEP, only, &fm))
		return -1;
	double fd = (fp - fm) / (2 * H_STEP), an = analytic(k, only);
	double err = fabs(fd - an), tol = TOL_FD * fmax(fabs(fd), fabs(an)) + 1e-9;
	nchecks++;
	if (isfinite(fd) && isfinite(an) && err <= tol)
		return 0;
	if (!quiet)
		fprintf(stderr, "%s: direction %s: finite differences %.12g, backward %.12g\n",
			k->b->name, what, fd, an);
	return -1;
}

/* The forward at x, then the backward's inputs bound from it. */
static int setup(Case *k, const Cascade *f, const Cascade *b, const long *dims)
{
	k->f = f, k->b = b;
	k->fx = bind(f, dims);
	int nf = f->tensors.n + 1;
	k->u = calloc((size_t)nf, sizeof *k->u);
	k->dx = calloc((size_t)nf, sizeof *k->dx);
	k->dy = calloc((size_t)nf, sizeof *k->dy);
	for (int i = 0; i < f->tensors.n; i++) {
		const Tensor *t = f->tensors.v[i];
		long n = tensor_numel(t, dims);
		if (t->kind != TK_IN)
			continue;
		if (t->dtype == DT_I32) {
			if (fill_i32(f, dims, t, k->fx.data[i]))
				return -1;
		} else {
			inputs_fill(k->fx.data[i], n, t->dtype, SEED, t->name, 0, 0);
		}
		if (grad_wants(t)) {
			k->u[i] = calloc((size_t)n + 1, sizeof(double));
			char name[256];
			snprintf(name, sizeof name, "U.%s", t->name);
			inputs_fill(k->u[i], n, DT_F64, SEED, name, 0, 0);
		}
	}
	if (run(&k->fx))
		return -1;
	k->bx = bind(b, dims);
	for (int j = 0; j < b->tensors.n; j++) {
		const Tensor *t = b->tensors.v[j];
		const Tensor *ft = cascade_tensor(f, t->name);
		long n = tensor_numel(t, dims);
		if (t->kind == TK_IN && ft) {
			memcpy(k->bx.data[j], k->fx.data[ft->id], sizeof(double) * (size_t)n);
		} else if (t->kind == TK_IN && (ft = gradient_of(f, t->name))) {
			/* dX: random where the forward output is finite */
			inputs_fill(k->bx.data[j], n, DT_F64, SEED, t->name, 0, 0);
			for (long e = 0; e < n; e++)
				if (!isfinite(k->fx.data[ft->id][e]))
					k->bx.data[j][e] = 0;
			k->dx[ft->id] = k->bx.data[j];
		} else if (t->kind == TK_OUT && (ft = gradient_of(f, t->name))) {
			k->dy[ft->id] = k->bx.data[j];
		} else if (t->kind == TK_IN) {
			fprintf(stderr, "%s: input %s is neither forward nor dX\n", b->name,
				t->name);
			return -1;
		}
	}
	for (int i = 0; i < f->tensors.n; i++)
		if (k->u[i] && !k->dy[i]) {
			fprintf(stderr, "%s: no d%s output\n", b->name,
				((Tensor *)f->tensors.v[i])->name);
			return -1;
		}
	return run(&k->bx);
}

static void teardown(Case *k)
{
	for (int i = 0; i < k->f->tensors.n; i++)
		free(k->u[i]);
	free(k->u), free(k->dx), free(k->dy);
	unbind(&k->fx);
	if (k->bx.c)
		unbind(&k->bx);
}

/* Every direction: each differentiated input alone, then all together. */
static int check_all(Case *k, int quiet)
{
	int bad = 0;
	for (int i = 0; i < k->f->tensors.n; i++)
		if (k->u[i])
			bad |= check_direction(k, i, ((Tensor *)k->f->tensors.v[i])->name, quiet);
	return bad | check_direction(k, -1, "all inputs", quiet);
}

/* The C back end's backward in f64 against the interpreter's dY. */
static int check_c(Case *k)
{
	char *src = NULL, err[1024];
	size_t len = 0;
	Arena a;
	arena_init(&a);
	Diag d;
	diag_init(&d, &a, stderr);
	FILE *fp = open_memstream(&src, &len);
	int bad = !fp || c_emit_cascade(fp, k->b, &d, 1) || d.errors;
	if (fp)
		bad |= fclose(fp) != 0;
	arena_free(&a);
	CpuModule *m = bad ? NULL : cpu_engine_load(src, err, sizeof err);
	free(src);
	if (!m) {
		fprintf(stderr, "%s: the C back end %s\n", k->b->name,
			bad ? "does not take the backward" : err);
		return -1;
	}
	Binding c = bind(k->b, k->bx.dims);
	for (int j = 0; j < k->b->tensors.n; j++) {
		const Tensor *t = k->b->tensors.v[j];
		if (t->kind == TK_IN)
			memcpy(c.data[j], k->bx.data[j],
			       sizeof(double) * (size_t)tensor_numel(t, c.dims));
		else if (t->kind == TK_OUT)
			for (long e = 0; e < tensor_numel(t, c.dims); e++)
				c.data[j][e] = NAN;
	}
	int rc = cpu_engine_call(m, k->b->name, &c, 1, NULL, 0, err, sizeof err);
	if (rc)
		fprintf(stderr, "%s: the C code failed: %s\n", k->b->name, err);
	for (int j = 0; j < k->b->tensors.n && !rc; j++) {
		const Tensor *t = k->b->tensors.v[j];
		if (t->kind != TK_OUT)
			continue;
		for (long e = 0; e < tensor_numel(t, c.dims); e++) {
			double x = c.data[j][e], y = k->bx.data[j][e];
			if (!(fabs(x - y) <= TOL_C * fmax(1, fabs(y)))) {
				fprintf(stderr, "%s: C %s[%ld] = %.17g, interpreter %.17g\n",
					k->b->name, t->name, e, x, y);
				rc = -1;
				break;
			}
		}
	}
	unbind(&c);
	cpu_engine_unload(m);
	nc_checked += !rc;
	return rc ? -1 : 0;
}

/* Whether c is expected to have no backward, and the tensor to name. */
static const char *expected_refusal(const Cascade *c)
{
	for (size_t i = 0; i < sizeof not_derivable / sizeof not_derivable[0]; i++)
		if (!strcmp(not_derivable[i].block, c->name))
			return not_derivable[i].tensor;
	return NULL;
}

/* One block: both derivations (naive, then with the rewrites). */
static void test_block(const Cascade *c, const char *file)
{
	nblocks++;
	long *dims = calloc((size_t)c->dims.n + 1, sizeof *dims);
	CHECK(draw_dims(c, dims) == 0);
	for (int flash = 0; flash < 2; flash++) {
		Arena a;
		arena_init(&a);
		char *msg = NULL;
		size_t mlen = 0;
		FILE *mf = open_memstream(&msg, &mlen);
		Diag d;
		diag_init(&d, &a, mf);
		Cascade *b = grad_derive(&a, &d, c, flash, NULL);
		fclose(mf);
		const char *refuse = expected_refusal(c);
		if (refuse) {
			char want[128];
			snprintf(want, sizeof want, "gradient of '%s'", refuse);
			CHECK(!b && d.errors > 0 && strstr(msg, want));
			printf("grad_check: %s:%s: no backward, as expected (%s)\n", file, c->name,
			       want);
		} else if (!b) {
			fprintf(stderr, "%s:%s: no backward:\n%s", file, c->name, msg);
			tu_failures++;
		} else {
			Case k;
			memset(&k, 0, sizeof k);
			int bad = setup(&k, c, b, dims) || check_all(&k, 0);
			int cbad = !bad && flash && check_c(&k);
			if (bad || cbad)
				fprintf(stderr, "%s:%s: %s backward FAILED\n", file, c->name,
					flash ? "rewritten" : "naive");
			tu_failures += bad + cbad;
			if (!bad)
				printf(
				    "grad_check: %s:%s: %s backward matches finite differences%s\n",
				    file, c->name, flash ? "rewritten" : "naive",
				    flash && !cbad ? "; C back end agrees" : "");
			teardown(&k);
		}
		free(msg);
		arena_free(&a);
	}
	free(dims);
}

/* The check must be able to fail: the causal backward with its dQ node
** scaled by 1.001 (a wrong derivative) must not pass. */
static void test_sensitivity(const Cascade *c)
{
	Arena a;
	arena_init(&a);
	Diag d;
	diag_init(&d, &a, stderr);
	Cascade *b = grad_derive(&a, &d, c, 1, NULL);
	CHECK(b != NULL);
	long dims[16];
	CHECK(c->dims.n < 16 && draw_dims(c, dims) == 0);
	Tensor *dq = b ? cascade_tensor(b, "dQ") : NULL;
	CHECK(dq && dq->def);
	if (dq && dq->def) {
		Case k;
		memset(&k, 0, sizeof k);
		dq->def->body = expr_binop(&a, OP_MUL, dq->def->body, expr_float(&a, 1.001));
		CHECK(setup(&k, c, b, dims) == 0);
		CHECK(check_direction(&k, -1, "all inputs", 1) != 0);
		printf("grad_check: a derivative off by 0.1%% fails the check, as it must\n");
		teardown(&k);
	}
	arena_free(&a);
}

/* Every .attn file of dir, in sorted order; the causal block is kept for
** the sensitivity test. */
static void test_dir(const char *dir, Arena *keep, const Cascade **causal)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	CHECK(n >= 0);
	for (int e = 0; e < n; e++) {
		const char *name = ents[e]->d_name;
		size_t len = strlen(name);
		if (len >= 6 && !strcmp(name + len - 5, ".attn")) {
			char path[1024];
			snprintf(path, sizeof path, "%s/%s", dir, name);
			Diag d;
			diag_init(&d, keep, stderr);
			int f = diag_load_file(&d, path);
			Program *p = f < 0 ? NULL : front_compile(keep, &d, f);
			CHECK(p != NULL);
			for (int i = 0; p && i < p->cascades.n; i++) {
				const Cascade *c = p->cascades.v[i];
				test_block(c, name);
				if (!strcmp(c->name, "causal"))
					*causal = c;
			}
		}
		free(ents[e]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SCRATCH_DIR DIR...\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	char tmp[1024];
	snprintf(tmp, sizeof tmp, "%s/tmp", argv[1]);
	tu_mkdirs(tmp);
	setenv("TMPDIR", tmp, 1);
	Arena keep;
	arena_init(&keep);
	const Cascade *causal = NULL;
	for (int i = 2; i < argc; i++)
		test_dir(argv[i], &keep, &causal);
	CHECK(causal != NULL);
	if (causal)
		test_sensitivity(causal);
	printf("grad_check: %d blocks, %d directions checked, %d backwards run as C\n", nblocks,
	       nchecks, nc_checked);
	arena_free(&keep);
	return tu_report("grad_check");
}
