/*
** test/unit/cpu_engine.c: the CPU engine (cli/cpu_engine.c) on
** hand-written C sources standing in for the C back end's output: a tiny
** cascade "t" built with the IR constructors, its generic entry point
** t_run_generic in f32 and in f64, an OpenMP version run repeatedly, and
** every error path (syntax error, missing symbol, nonzero return, no
** compiler, bad i32 input, unbound buffer); then the compile-once API
** (cpu_engine_load/_call/_unload) on one module with both entry points.
** $TMPDIR points at a scratch directory that must be empty after every
** call.
**
** usage: test_cpu_engine SCRATCH_DIR
*/
#include "host_testutil.h"

#include <dirent.h>
#include <time.h>

#include "cli/cpu_engine.h"

enum { N = 7 };

/* X, K, M, Y, Z, NM, T in c->tensors order; T is a temporary. */
static const char src_f32[] =
    "#include <stdint.h>\n"
    "int t_run_generic(const long *dims, const double *params, void *const *data,\n"
    "                  int nthreads)\n"
    "{\n"
    "\tconst float *x = data[0];\n"
    "\tconst int32_t *k = data[1];\n"
    "\tconst uint8_t *m = data[2];\n"
    "\tfloat *y = data[3];\n"
    "\tint32_t *z = data[4];\n"
    "\tuint8_t *nm = data[5];\n"
    "\t(void)nthreads;\n"
    "\tif (data[6] != 0)\n"
    "\t\treturn 9;\n"
    "\tfor (long i = 0; i < dims[0]; i++) {\n"
    "\t\ty[i] = 2.0f * x[i] + (float)params[0];\n"
    "\t\tz[i] = k[i] + m[i] + OFFSET;\n"
    "\t\tnm[i] = !m[i];\n"
    "\t}\n"
    "\treturn 0;\n"
    "}\n";

static const char src_f64[] =
    "#include <stdint.h>\n"
    "int t_run_generic(const long *dims, const double *params, void *const *data,\n"
    "                  int nthreads)\n"
    "{\n"
    "\tconst double *x = data[0];\n"
    "\tconst int32_t *k = data[1];\n"
    "\tconst uint8_t *m = data[2];\n"
    "\tdouble *y = data[3];\n"
    "\tint32_t *z = data[4];\n"
    "\tuint8_t *nm = data[5];\n"
    "\t(void)nthreads;\n"
    "\tfor (long i = 0; i < dims[0]; i++) {\n"
    "\t\ty[i] = 2.0 * x[i] + params[0];\n"
    "\t\tz[i] = k[i] + m[i];\n"
    "\t\tnm[i] = !m[i];\n"
    "\t}\n"
    "\treturn 0;\n"
    "}\n";

/* Guarded as generated code must be: it also builds without -fopenmp. */
static const char src_omp[] =
    "#include <stdint.h>\n"
    "#include <math.h>\n"
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "int t_run_generic(const long *dims, const double *params, void *const *data,\n"
    "                  int nthreads)\n"
    "{\n"
    "\tconst float *x = data[0];\n"
    "\tconst int32_t *k = data[1];\n"
    "\tconst uint8_t *m = data[2];\n"
    "\tfloat *y = data[3];\n"
    "\tint32_t *z = data[4];\n"
    "\tuint8_t *nm = data[5];\n"
    "\tlong n = dims[0];\n"
    "#ifdef _OPENMP\n"
    "\tif (nthreads <= 0)\n"
    "\t\tnthreads = omp_get_max_threads();\n"
    "#pragma omp parallel for num_threads(nthreads)\n"
    "#else\n"
    "\t(void)nthreads;\n"
    "#endif\n"
    "\tfor (long i = 0; i < n; i++) {\n"
    "\t\ty[i] = 2.0f * x[i] + (float)params[0] + 0.0f * sqrtf(fabsf(x[i]));\n"
    "\t\tz[i] = k[i] + m[i];\n"
    "\t\tnm[i] = !m[i];\n"
    "\t}\n"
    "\treturn 0;\n"
    "}\n";

static const char src_syntax[] =
    "int t_run_generic(const long *dims, const double *params, void *const *data,\n"
    "                  int nthreads)\n"
    "{\n"
    "\treturn 0 +;\n"
    "}\n";

static const char src_nosym[] = "int t_run_other(void);\nint t_run_other(void) { return 0; }\n";

/* Both entry points of the compile-once API, in f64: the partitioned one
** returns 1 for NULL bounds, writes Y[i] = bounds[nparts] + i for i >= 1
** only (Y[0] keeps what the caller put there) and returns 3 when asked to
** by params[0]. */
static const char src_module[] =
    "#include <stdint.h>\n"
    "int t_run_generic(const long *dims, const double *params, void *const *data,\n"
    "                  int nthreads)\n"
    "{\n"
    "\tconst double *x = data[0];\n"
    "\tdouble *y = data[3];\n"
    "\t(void)nthreads;\n"
    "\tfor (long i = 0; i < dims[0]; i++)\n"
    "\t\ty[i] = 2.0 * x[i] + params[0];\n"
    "\treturn 0;\n"
    "}\n"
    "int t_run_partitioned(const long *dims, const double *params, void *const *data,\n"
    "                      int nthreads, const long *bounds, int nparts)\n"
    "{\n"
    "\tdouble *y = data[3];\n"
    "\t(void)nthreads;\n"
    "\tif (!bounds || nparts < 1)\n"
    "\t\treturn 1;\n"
    "\tif (params[0] == 3.0)\n"
    "\t\treturn 3;\n"
    "\tfor (long i = 1; i < dims[0]; i++)\n"
    "\t\ty[i] = (double)bounds[nparts] + (double)i;\n"
    "\treturn 0;\n"
    "}\n";

static const char src_fails[] =
    "int t_run_generic(const long *dims, const double *params, void *const *data,\n"
    "                  int nthreads)\n"
    "{\n"
    "\t(void)dims, (void)params, (void)data, (void)nthreads;\n"
    "\treturn 7;\n"
    "}\n";

/* attention t { dims N; param p : f32; in X[N] : f32; in K[N] : i32;
** in M[N] : bool; out Y = 2*X + p; out Z = K + int(M); out NM = !M; }
** plus an unused temporary T, so that data[] holds a NULL. */
static Cascade *build_t(Arena *a)
{
	Cascade *c = tb_cascade(a, "t");
	Dim *n = tb_dimdecl(a, c, "N", 0);
	Param *p = tb_paramdecl(a, c, "p", VT_FLOAT, expr_float(a, 0.5));
	Tensor *X = tb_tensor(a, c, "X", TK_IN, DT_F32, 1, tb_dim(a, n));
	Tensor *K = tb_tensor(a, c, "K", TK_IN, DT_I32, 1, tb_dim(a, n));
	Tensor *M = tb_tensor(a, c, "M", TK_IN, DT_BOOL, 1, tb_dim(a, n));
	Tensor *Y = tb_tensor(a, c, "Y", TK_OUT, DT_F32, 1, tb_dim(a, n));
	Tensor *Z = tb_tensor(a, c, "Z", TK_OUT, DT_I32, 1, tb_dim(a, n));
	Tensor *NM = tb_tensor(a, c, "NM", TK_OUT, DT_BOOL, 1, tb_dim(a, n));
	Tensor *T = tb_tensor(a, c, "T", TK_TEMP, DT_F32, 1, tb_dim(a, n));
	tb_node(a, c, Y, RED_NONE,
		BIN(OP_ADD, BIN(OP_MUL, expr_float(a, 2.0), tb_at(a, X, IX(0))), tb_param(a, p)),
		NULL, 0);
	tb_node(a, c, Z, RED_NONE,
		BIN(OP_ADD, tb_at(a, K, IX(0)),
		    tb_select(a, tb_at(a, M, IX(0)), expr_int(a, 1), expr_int(a, 0))),
		NULL, 0);
	tb_node(a, c, NM, RED_NONE, tb_unop(a, OP_NOT, tb_at(a, M, IX(0))), NULL, 0);
	tb_node(a, c, T, RED_NONE, tb_at(a, X, IX(0)), NULL, 0);
	return c;
}

/* A binding of t with n elements; outputs are filled with -99 so that
** untouched values show. */
typedef struct TBind {
	Binding b;
	long dims[1];
	double params[1];
	double *data[7];
} TBind;

static void tbind_init(TBind *t, const Cascade *c, long n)
{
	memset(t, 0, sizeof *t);
	t->b.c = c, t->b.dims = t->dims, t->b.params = t->params, t->b.data = t->data;
	t->dims[0] = n;
	t->params[0] = 0.25;
	for (int i = 0; i < 6; i++)
		t->data[i] = malloc((size_t)n * sizeof(double));
	for (long i = 0; i < n; i++) {
		t->data[0][i] = 0.1 * (double)(i - 3);
		t->data[1][i] = (double)((i % 3 - 1) * 2147483000L + i % 7);
		t->data[2][i] = (i % 3) == 0 ? 1.0 : 0.0;
		t->data[3][i] = t->data[4][i] = t->data[5][i] = -99;
	}
}

static void tbind_free(TBind *t)
{
	for (int i = 0; i < 7; i++)
		free(t->data[i]);
}

/* Entries left in the scratch TMPDIR: the engine must leave none. */
static int tmp_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Y, Z and NM as the f32 source computes them (offset added to Z). */
static void check_f32_results(const TBind *t, long offset)
{
	for (long i = 0; i < t->dims[0]; i++) {
		float y = 2.0f * (float)t->data[0][i] + (float)t->params[0];
		CHECK_SAME(t->data[3][i], (double)y);
		CHECK_SAME(t->data[4][i], t->data[1][i] + t->data[2][i] + (double)offset);
		CHECK_SAME(t->data[5][i], t->data[2][i] != 0 ? 0.0 : 1.0);
	}
}

/* The f32 path; CC carries a -D so that splitting $CC is exercised too. */
static void test_f32(const Cascade *c, const char *tmp)
{
	TBind t;
	char err[1024];
	tbind_init(&t, c, N);
	t.data[0][N - 1] = 1e300; /* becomes +inf in f32 */
	setenv("CC", "  cc   -DOFFSET=5 ", 1);
	double t0 = now_s();
	int rc = cpu_engine_run(&t.b, src_f32, "t_run_generic", err, sizeof err);
	double dt = now_s() - t0;
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "cpu_engine_run: %s\n", err);
	CHECK(err[0] == 0);
	check_f32_results(&t, 5);
	CHECK(isinf(t.data[3][N - 1]) && t.data[3][N - 1] > 0);
	CHECK(tmp_entries(tmp) == 0);
	printf("cpu_engine: first f32 run (probe + compile + run) took %.3f s\n", dt);
	CHECK(dt < 30);
	unsetenv("CC");
	tbind_free(&t);
}

/* use_f64: the same values travel as double, so 0.1 stays 0.1. */
static void test_f64(const Cascade *c, const char *tmp)
{
	TBind t;
	char err[1024];
	tbind_init(&t, c, N);
	double t0 = now_s();
	int rc = cpu_engine_run_ex(&t.b, src_f64, "t_run_generic", 1, err, sizeof err);
	printf("cpu_engine: f64 run (compile + run) took %.3f s\n", now_s() - t0);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "cpu_engine_run_ex: %s\n", err);
	for (long i = 0; i < N; i++) {
		CHECK_SAME(t.data[3][i], 2.0 * t.data[0][i] + 0.25);
		CHECK_SAME(t.data[4][i], t.data[1][i] + t.data[2][i]);
		CHECK_SAME(t.data[5][i], t.data[2][i] != 0 ? 0.0 : 1.0);
	}
	CHECK(tmp_entries(tmp) == 0);
	tbind_free(&t);
}

/* OpenMP code, loaded and unloaded several times in one process. */
static void test_openmp(const Cascade *c, const char *tmp)
{
	char err[1024];
	int omp = cpu_engine_has_openmp(err, sizeof err);
	printf("cpu_engine: the C compiler %s -fopenmp\n", omp > 0 ? "accepts" : "does not accept");
	CHECK(omp >= 0);
	for (int round = 0; round < 3; round++) {
		TBind t;
		tbind_init(&t, c, 100000);
		int rc = cpu_engine_run(&t.b, src_omp, "t_run_generic", err, sizeof err);
		CHECK(rc == 0);
		if (rc)
			fprintf(stderr, "cpu_engine_run (openmp): %s\n", err);
		else
			check_f32_results(&t, 0);
		CHECK(tmp_entries(tmp) == 0);
		tbind_free(&t);
	}
}

/* rc != 0, err mentions want, nothing written, nothing left behind. */
static void expect_error(const Cascade *c, const char *tmp, const char *src, const char *entry,
			 const char *want, TBind *t)
{
	char err[1024];
	TBind own;
	if (!t) {
		tbind_init(&own, c, N);
		t = &own;
	}
	int rc = cpu_engine_run(&t->b, src, entry, err, sizeof err);
	CHECK(rc != 0);
	if (!strstr(err, want)) {
		fprintf(stderr, "cpu_engine: error '%s' does not contain '%s'\n", err, want);
		tu_failures++;
	}
	CHECK(!strchr(err, '\n'));
	CHECK(!strstr(err, "attnc-cpu-")); /* no temporary paths */
	CHECK(tmp_entries(tmp) == 0);
	for (int k = 3; k < 6; k++)
		for (long i = 0; i < t->dims[0]; i++)
			CHECK_SAME(t->data[k][i], -99.0);
	if (t == &own)
		tbind_free(&own);
}

static void test_errors(const Cascade *c, const char *tmp)
{
	char err[1024];
	expect_error(c, tmp, src_syntax, "t_run_generic", "compilation failed: kernel.c:4", NULL);
	expect_error(c, tmp, src_syntax, "t_run_generic", "error: expected expression", NULL);
	expect_error(c, tmp, src_nosym, "t_run_generic", "symbol 't_run_generic' not found", NULL);
	expect_error(c, tmp, src_fails, "t_run_generic", "generated code returned error 7", NULL);
	/* OFFSET is only defined through $CC in test_f32 */
	expect_error(c, tmp, src_f32, "t_run_generic", "OFFSET", NULL);

	setenv("CC", "/nonexistent/attnc-cc", 1);
	expect_error(c, tmp, src_f32, "t_run_generic",
		     "C compiler '/nonexistent/attnc-cc' not found", NULL);
	setenv("CC", "attnc-no-such-compiler -O1", 1);
	expect_error(c, tmp, src_f32, "t_run_generic",
		     "C compiler 'attnc-no-such-compiler' not found", NULL);
	unsetenv("CC");

	TBind t;
	tbind_init(&t, c, N);
	t.data[1][2] = 1.5;
	expect_error(c, tmp, src_fails, "t_run_generic", "input 'K': element 2 (1.5) is not an i32",
		     &t);
	t.data[1][2] = 4294967296.0;
	expect_error(c, tmp, src_fails, "t_run_generic", "is not an i32 value", &t);
	t.data[1][2] = NAN;
	expect_error(c, tmp, src_fails, "t_run_generic", "is not an i32 value", &t);
	t.data[1][2] = 3;
	free(t.data[4]);
	t.data[4] = NULL;
	CHECK(cpu_engine_run(&t.b, src_fails, "t_run_generic", err, sizeof err) != 0);
	CHECK(strstr(err, "no buffer is bound to output 'Z'") != NULL);
	CHECK(tmp_entries(tmp) == 0);
	tbind_free(&t);

	/* a tiny errlen truncates; a zero one is allowed */
	tbind_init(&t, c, N);
	CHECK(cpu_engine_run(&t.b, src_fails, "t_run_generic", err, 8) != 0);
	CHECK(strlen(err) == 7);
	CHECK(cpu_engine_run(&t.b, src_fails, "t_run_generic", NULL, 0) != 0);
	CHECK(tmp_entries(tmp) == 0);
	tbind_free(&t);
}

/* Compile once, call many times: several sizes through the generic entry,
** the partitioned one with its status passed through, poison kept where
** the code does not write, and the error paths of load and call. */
static void test_module(const Cascade *c, const char *tmp)
{
	char err[1024];
	CpuModule *m = cpu_engine_load(src_module, err, sizeof err);
	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "cpu_engine_load: %s\n", err);
		return;
	}
	CHECK(err[0] == 0);
	CHECK(tmp_entries(tmp) == 0); /* the directory is gone once loaded */
	for (long n = 1; n <= 9; n += 4) {
		TBind t;
		tbind_init(&t, c, n);
		CHECK(cpu_engine_call(m, "t", &t.b, 1, NULL, 0, err, sizeof err) == 0);
		for (long i = 0; i < n; i++)
			CHECK_SAME(t.data[3][i], 2.0 * t.data[0][i] + 0.25);
		tbind_free(&t);
	}
	TBind t;
	tbind_init(&t, c, N);
	const long bounds[3] = {0, 4, 7};
	t.data[3][0] = NAN;
	CHECK(cpu_engine_call(m, "t", &t.b, 1, bounds, 2, err, sizeof err) == 0);
	CHECK(isnan(t.data[3][0]));
	for (long i = 1; i < N; i++)
		CHECK_SAME(t.data[3][i], 7.0 + (double)i);
	/* nonzero statuses come back as the code returned them, outputs untouched */
	t.data[3][1] = -5;
	CHECK(cpu_engine_call(m, "t", &t.b, 1, NULL, 2, err, sizeof err) == 1);
	CHECK(strstr(err, "generated code returned error 1") != NULL);
	t.params[0] = 3.0;
	CHECK(cpu_engine_call(m, "t", &t.b, 1, bounds, 2, err, sizeof err) == 3);
	CHECK_SAME(t.data[3][1], -5.0);
	CHECK(cpu_engine_call(m, "u", &t.b, 1, NULL, 0, err, sizeof err) == -1);
	CHECK(strstr(err, "symbol 'u_run_generic' not found") != NULL);
	CHECK(cpu_engine_call(NULL, "t", &t.b, 1, NULL, 0, err, sizeof err) == -1);
	tbind_free(&t);
	cpu_engine_unload(m);
	cpu_engine_unload(NULL);
	CHECK(cpu_engine_load(src_syntax, err, sizeof err) == NULL);
	CHECK(strstr(err, "compilation failed: kernel.c:4") != NULL);
	CHECK(tmp_entries(tmp) == 0);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	char tmp[1024];
	snprintf(tmp, sizeof tmp, "%s/tmp", dir);
	tu_mkdirs(tmp);
	setenv("TMPDIR", tmp, 1);
	unsetenv("CC");
	Arena a;
	arena_init(&a);
	Cascade *c = build_t(&a);
	test_f32(c, tmp);
	test_f64(c, tmp);
	test_openmp(c, tmp);
	test_errors(c, tmp);
	test_module(c, tmp);
	arena_free(&a);
	return tu_report("cpu_engine");
}
