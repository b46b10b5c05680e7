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
#include "grad_testutil.h"

#include "cli/cpu_engine.h"
#include "lowering/c/c_emit.h"

#define H_STEP 1e-5
#define TOL_FD 1e-6
#define TOL_C  1e-10

/* Blocks whose backward is a diagnostic, and the tensor it names. */
static const struct {
	const char *block, *tensor;
} not_derivable[] = {{"paged_decode", "Kc"}, {"paged_decode_hnd", "Kc"}, {"paged_prefill", "Kc"}};

static int nblocks, nchecks, nc_checked;

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
		grad_test_dir(argv[i], &keep, &causal, test_block);
	CHECK(causal != NULL);
	if (causal)
		test_sensitivity(causal);
	printf("grad_check: %d blocks, %d directions checked, %d backwards run as C\n", nblocks,
	       nchecks, nc_checked);
	arena_free(&keep);
	return tu_report("grad_check");
}
