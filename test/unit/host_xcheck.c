/*
** test/unit/host_xcheck.c: the interpreter and the MLIR reference executor
** must agree. First on the hand-built cascades (causal attention with an
** empty batch, and the every-operator cascade), in f64 (to rounding noise)
** and f32 (to f32 accuracy); then on every block of every example
** file through run_cascade, on two shape sets whose runtime dims all differ
** (so a transposed index cannot hide), the second with sizes of 1.
** argv[1]: scratch directory; argv[2]: the examples directory.
*/
#include "host_testutil.h"

#include <dirent.h>

#include "cli/inputs.h"
#include "cli/interp.h"
#include "cli/npy.h"
#include "lowering/mlir/refexec.h"
#include "cli/run.h"
#include "lang/front.h"

/* Copies of every in/out buffer, so two engines see the same inputs. */
static void bind_clone(Binding *dst, const Binding *src)
{
	bind_alloc(dst, src->c, src->dims, src->params);
	for (int i = 0; i < src->c->tensors.n; i++) {
		const Tensor *t = src->c->tensors.v[i];
		if (t->kind == TK_IN)
			memcpy(dst->data[i], src->data[i],
			       (size_t)tensor_numel(t, src->dims) * sizeof(double));
	}
}

/* Compares every output of two bindings within tol (relative to max(1,|x|)),
** infinities and NaNs matching exactly. */
static void compare_outputs(const Binding *x, const Binding *y, double tol, const char *what)
{
	for (int i = 0; i < x->c->tensors.n; i++) {
		const Tensor *t = x->c->tensors.v[i];
		if (t->kind != TK_OUT)
			continue;
		long n = tensor_numel(t, x->dims), bad = 0;
		for (long k = 0; k < n; k++) {
			double a = x->data[i][k], b = y->data[i][k];
			int ok = (isnan(a) && isnan(b)) || a == b ||
				 fabs(a - b) <= tol * fmax(1.0, fabs(b));
			if (!ok && bad++ < 3)
				fprintf(stderr, "%s: %s[%ld]: interp %.17g, refexec %.17g\n", what,
					t->name, k, a, b);
		}
		CHECK(bad == 0);
	}
}

/* One hand-built cascade, bound and filled by the caller, in both precisions. */
static void xcheck_binding(Binding *b, const char *what)
{
	char err[1024] = "";
	int rc = interp_run(b, err, sizeof err);
	if (rc)
		fprintf(stderr, "%s: interp: %s\n", what, err);
	CHECK(rc == 0);
	for (int f64 = 1; f64 >= 0; f64--) {
		Binding r;
		bind_clone(&r, b);
		rc = refexec_run(&r, f64, err, sizeof err);
		if (rc)
			fprintf(stderr, "%s: refexec (%s): %s\n", what, f64 ? "f64" : "f32", err);
		CHECK(rc == 0);
		if (!rc)
			compare_outputs(b, &r, f64 ? 1e-12 : 2e-5, what);
		bind_free(&r, b->c);
	}
}

static void test_hand_built(void)
{
	Arena ar;
	arena_init(&ar);
	Arena *a = &ar;
	Cascade *c = tb_causal(a, "causal", DT_BF16, 0);
	long dims[4] = {3, 2, 6, 5};
	double params[1];
	CHECK(cascade_param_defaults(c, dims, params, NULL) == -1);
	Binding b;
	bind_alloc(&b, c, dims, params);
	long n = 3 * 2 * 6 * 5;
	inputs_fill(buf_of(&b, "Q"), n, DT_BF16, 1, "Q", 0, 0);
	inputs_fill(buf_of(&b, "K"), n, DT_BF16, 1, "K", 0, 0);
	inputs_fill(buf_of(&b, "V"), n, DT_BF16, 1, "V", 0, 0);
	double *kv = buf_of(&b, "kv_len");
	kv[0] = 0, kv[1] = 3, kv[2] = 6;
	xcheck_binding(&b, "causal");
	bind_free(&b, c);

	c = tb_ops(a);
	long nd[1] = {NOPS};
	double pc[1] = {3};
	bind_alloc(&b, c, nd, pc);
	memcpy(buf_of(&b, "x"), ops_x, sizeof ops_x);
	memcpy(buf_of(&b, "k"), ops_k, sizeof ops_k);
	memcpy(buf_of(&b, "m"), ops_m, sizeof ops_m);
	xcheck_binding(&b, "ops");
	bind_free(&b, c);
	arena_free(a);
}

/* Sizes of the i-th runtime dim in each shape set: pairwise different
** within a set, so swapping two dims changes some result. */
static const long shape_sets[2][8] = {{3, 2, 5, 4, 6, 7, 8, 9}, {2, 1, 4, 3, 1, 5, 6, 7}};

/* Runs one block with one engine into dir; 0 on success. */
static int run_block(const Cascade *c, RunEngine eng, const char *dir, int set)
{
	RunSize sizes[16];
	int ns = 0;
	for (int i = 0; i < c->dims.n && ns < 8; i++) {
		const Dim *d = c->dims.v[i];
		if (!d->fixed) {
			sizes[ns] = (RunSize){d->name, shape_sets[set][ns]};
			ns++;
		}
	}
	RunConfig cfg;
	run_config_init(&cfg);
	cfg.sizes = sizes, cfg.nsizes = ns, cfg.seed = 7, cfg.use_f64 = 1, cfg.engine = eng;
	/* a page table (paged_decode.attn) indexes the pool's NP pages */
	RunRange pages = {"block", 0, 0, 0};
	for (int i = 0; i < ns; i++)
		if (!strcmp(sizes[i].name, "NP") && cascade_tensor(c, "block"))
			pages.hi = sizes[i].value - 1, cfg.ranges = &pages, cfg.nranges = 1;
	/* a packed batch's offsets (varlen.attn): T tokens of at most NQ a
	** sequence, TK of at most NK */
	RunRange offsets[2] = {{"cu_q", 0, 0, 1}, {"cu_k", 0, 0, 1}};
	int first = cascade_tensor(c, "cu_q") ? 0 : 1; /* a decode step has no cu_q */
	for (int i = 0; i < ns; i++)
		for (int k = first; k < 2 && cascade_tensor(c, "cu_k"); k++) {
			if (!strcmp(sizes[i].name, k ? "TK" : "T"))
				offsets[k].lo = sizes[i].value;
			if (!strcmp(sizes[i].name, k ? "NK" : "NQ"))
				offsets[k].hi = sizes[i].value;
			cfg.ranges = offsets + first, cfg.nranges = 2 - first;
		}
	cfg.out_dir = dir, cfg.quiet = 1;
	return run_cascade(c, &cfg);
}

/* Both engines on one block of an example; outputs compared file by file. */
static void xcheck_block(const Cascade *c, const char *scratch, const char *file, int set)
{
	char di[700], dm[700], what[700];
	snprintf(di, sizeof di, "%s/%s.%d.interp", scratch, c->name, set);
	snprintf(dm, sizeof dm, "%s/%s.%d.mlir", scratch, c->name, set);
	snprintf(what, sizeof what, "%s:%s (shape set %d)", file, c->name, set);
	/* a packed output is not in the MLIR interchange yet: the C back end
	** stands in for the reference */
	int packed = 0;
	for (int i = 0; i < c->tensors.n; i++)
		packed |= ((const Tensor *)c->tensors.v[i])->pack != NULL;
	int ri = run_block(c, RUN_ENGINE_INTERP, di, set),
	    rm = run_block(c, packed ? RUN_ENGINE_CPU : RUN_ENGINE_MLIR, dm, set);
	if (ri || rm)
		fprintf(stderr, "%s: interp status %d, mlir status %d\n", what, ri, rm);
	CHECK(ri == 0 && rm == 0);
	for (int i = 0; !ri && !rm && i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_OUT)
			continue;
		char pi[800], pm[800], err[600];
		snprintf(pi, sizeof pi, "%s/%s.npy", di, t->name);
		snprintf(pm, sizeof pm, "%s/%s.npy", dm, t->name);
		NpyArray x, y;
		int ok = !npy_read(pi, &x, err, sizeof err) && !npy_read(pm, &y, err, sizeof err);
		CHECK(ok && x.numel == y.numel);
		long bad = 0;
		for (long k = 0; ok && k < x.numel && x.numel == y.numel; k++) {
			double a = x.data[k], b = y.data[k];
			if (!((isnan(a) && isnan(b)) || a == b ||
			      fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b))) &&
			    bad++ < 3)
				fprintf(stderr, "%s: %s[%ld]: interp %.17g, mlir %.17g\n", what,
					t->name, k, a, b);
		}
		CHECK(bad == 0);
		if (ok) {
			npy_free(&x);
			npy_free(&y);
		}
	}
}

/* Every block of every example file. */
static void test_examples(const char *scratch, const char *dir)
{
	DIR *dp = opendir(dir);
	CHECK(dp != NULL);
	struct dirent *de;
	int files = 0;
	while (dp && (de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".attn"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		Arena a;
		arena_init(&a);
		Diag d;
		diag_init(&d, &a, stderr);
		int f = diag_load_file(&d, path);
		Program *p = f < 0 ? NULL : front_compile(&a, &d, f);
		CHECK(p != NULL);
		for (int i = 0; p && i < p->cascades.n; i++)
			for (int set = 0; set < 2; set++)
				xcheck_block(p->cascades.v[i], scratch, de->d_name, set);
		arena_free(&a);
		files++;
	}
	if (dp)
		closedir(dp);
	CHECK(files > 0);
}

int main(int argc, char **argv)
{
	const char *scratch = argc > 1 ? argv[1] : "host-xcheck-scratch";
	tu_mkdirs(scratch);
	test_hand_built();
	if (argc > 2)
		test_examples(scratch, argv[2]);
	return tu_report("host_xcheck");
}
