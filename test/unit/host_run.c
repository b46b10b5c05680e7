/*
** test/unit/host_run.c: `attnc run` end to end on the interpreter engine:
** run_cascade on a hand-built cascade and run_main on .attn files written
** into the scratch directory (argv[1]). Outputs are checked against the
** reference loops on regenerated inputs, summary lines against the written
** files, and each documented error against its exit status and message.
*/
#include "host_testutil.h"

#include <fcntl.h>
#include <unistd.h>

#include "cli/inputs.h"
#include "cli/npy.h"
#include "cli/run.h"

static const char *scratch;

/* Rotating static buffers: enough for the arguments of one call. */
static char *next_buf(void)
{
	static char bufs[16][600];
	static int k;
	return bufs[k++ % 16];
}

/* scratch/name */
static const char *sp(const char *name)
{
	char *b = next_buf();
	snprintf(b, 600, "%s/%s", scratch, name);
	return b;
}

/* NAME=scratch/file, the form of --input */
static const char *inp(const char *name, const char *file)
{
	char *b = next_buf();
	snprintf(b, 600, "%s=%s/%s", name, scratch, file);
	return b;
}

static void write_text(const char *name, const char *text)
{
	CHECK(tu_write(sp(name), text, strlen(text)) == 0);
}

static char run_stdout[1 << 16], run_stderr[1 << 16];

/* run_main on a NULL-terminated argv, with stdout and stderr captured into
** run_stdout and run_stderr. */
static int run_list(const char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	char outp[600], errp[600];
	snprintf(outp, sizeof outp, "%s/stdout.txt", scratch);
	snprintf(errp, sizeof errp, "%s/stderr.txt", scratch);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fo, 1), dup2(fe, 2);
	close(fo), close(fe);
	int rc = run_main(argc, (char **)argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1), dup2(se, 2);
	close(so), close(se);
	char *o = tu_slurp(outp, NULL), *e = tu_slurp(errp, NULL);
	snprintf(run_stdout, sizeof run_stdout, "%s", o ? o : "");
	snprintf(run_stderr, sizeof run_stderr, "%s", e ? e : "");
	free(o);
	free(e);
	return rc;
}

#define RUN(...) run_list((const char *[]){"run", __VA_ARGS__, NULL})

/* Expects status want and, when given, a substring of stderr. */
#define EXPECT_RUN(want, msg, ...)                                                                 \
	do {                                                                                       \
		int tu_rc = RUN(__VA_ARGS__);                                                      \
		if (tu_rc != (want) || ((msg) && !strstr(run_stderr, (msg) ? (msg) : ""))) {       \
			fprintf(stderr, "%s:%d: status %d (want %d), stderr:\n%s\n", __FILE__,     \
				__LINE__, tu_rc, (want), run_stderr);                              \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

static const char causal_src[] =
    "attention causal_kv {\n"
    "  dims B, H, N;\n"
    "  dims D = 8;\n"
    "  in  Q[B, H, N, D] : bf16;\n"
    "  in  K[B, H, N, D] : bf16;\n"
    "  in  V[B, H, N, D] : bf16;\n"
    "  in  kv_len[B] : i32;\n"
    "  out O[B, H, N, D] : bf16;\n"
    "  out L[B, H, N] : f32;\n"
    "  param scale : f32 = rsqrt(D);\n"
    "  S[b, h, i, j] = scale * sum[d](Q[b, h, i, d] * K[b, h, j, d]) where j <= i && j < "
    "kv_len[b];\n"
    "  O[b, h, i, e] = sum[j](softmax[j](S[b, h, i, j]) * V[b, h, j, e]);\n"
    "  L[b, h, i]    = logsumexp[j](S[b, h, i, j]);\n"
    "}\n";

static const char multi_src[] = "attention first {\n"
				"  dims N;\n"
				"  in x[N] : f32;\n"
				"  out y[N] : f32;\n"
				"  y[i] = x[i] * 2.0;\n"
				"}\n"
				"attention second {\n"
				"  dims N;\n"
				"  in x[N] : f32;\n"
				"  param c : i32;\n"
				"  out y[N] : f32;\n"
				"  y[i] = x[i] + float(c);\n"
				"}\n";

static const char gqa_src[] = "attention gqa {\n"
			      "  dims B, HKV, G, N;\n"
			      "  dims D = 4;\n"
			      "  in  Q[B, HKV*G, N, D] : f16;\n"
			      "  in  K[B, HKV, N, D]   : f16;\n"
			      "  out O[B, HKV*G, N]    : f32;\n"
			      "  O[b, h, i] = sum[j, d](Q[b, h, i, d] * K[b, h / G, j, d]);\n"
			      "}\n";

/* Reads an output file, expecting the given rank and f32/f64 type. */
static int read_out(const char *dir, const char *name, NpyType t, NpyArray *a)
{
	char path[600], err[256];
	snprintf(path, sizeof path, "%s/%s.npy", dir, name);
	if (npy_read(path, a, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		tu_failures++;
		return -1;
	}
	CHECK(a->type == t);
	return 0;
}

/* The summary line of output `name` in text, or NULL. */
static const char *summary_line(const char *text, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "%s: shape [", name);
	const char *p = strstr(text, key);
	return p && (p == text || p[-1] == '\n') ? p : NULL;
}

/* The summary's checksum must be the file's, printed the same way. */
static void check_checksum(const char *line, const NpyArray *a)
{
	double ck = 0;
	for (long k = 0; k < a->numel; k++)
		ck += a->data[k] * (double)(k % 7 + 1);
	char want[64];
	snprintf(want, sizeof want, " checksum %.9e", ck);
	const char *eol = strchr(line, '\n');
	const char *at = strstr(line, want);
	if (!at || (eol && at > eol)) {
		fprintf(stderr, "summary '%.*s' lacks '%s'\n", eol ? (int)(eol - line) : 80, line,
			want);
		tu_failures++;
	}
}

/* causal_kv through the front end and the interpreter, against the reference
** loops on the same generated inputs; then every summary field. */
static void test_causal_file(void)
{
	write_text("causal.attn", causal_src);
	const char *out = sp("out/causal"); /* nested, missing: created */
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--sizes", "B=2,H=2,N=5", "--engine=interp",
		   "--precision", "f64", "--seed", "11", "--out-dir", out);
	long B = 2, H = 2, N = 5, D = 8, n = B * H * N * D;
	double *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
	double kv[2], *O = malloc(n * sizeof *O), L[20];
	inputs_fill(q, n, DT_BF16, 11, "Q", 0, 0);
	inputs_fill(k, n, DT_BF16, 11, "K", 0, 0);
	inputs_fill(v, n, DT_BF16, 11, "V", 0, 0);
	inputs_fill(kv, 2, DT_I32, 11, "kv_len", 0, 5); /* default: 0..largest runtime dim */
	tu_causal_ref(B, H, N, D, 1 / sqrt(8.0), q, k, v, kv, O, L);
	NpyArray o, l;
	if (!read_out(out, "O", NPY_F64, &o)) {
		CHECK(o.rank == 4 && o.shape[0] == 2 && o.shape[3] == 8 && o.numel == n);
		for (long i = 0; i < n && o.numel == n; i++)
			CHECK_NEAR(o.data[i], O[i], 1e-12);
		const char *line = summary_line(run_stdout, "O");
		CHECK(line && !strncmp(line, "O: shape [2, 2, 5, 8] f64 min ", 30));
		if (line)
			check_checksum(line, &o);
		npy_free(&o);
	}
	if (!read_out(out, "L", NPY_F64, &l)) {
		for (long i = 0; i < 20 && l.numel == 20; i++)
			CHECK_NEAR(l.data[i], L[i], 1e-12);
		npy_free(&l);
	}
	free(q), free(k), free(v), free(O);

	/* every row empty: O = 0, L = -inf, no NaN; inf counted */
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--sizes=B=2,H=2,N=5", "--engine", "interp",
		   "--range", "kv_len=0:0", "--out-dir", out);
	CHECK(strstr(run_stdout, "O: shape [2, 2, 5, 8] f32 min 0.0000e+00 max 0.0000e+00 mean "
				 "0.0000e+00 l2 0.0000e+00 checksum 0.000000000e+00\n") != NULL);
	CHECK(strstr(run_stdout, "L: shape [2, 2, 5] f32 min -inf max -inf mean -inf l2 inf "
				 "checksum -inf inf=20\n") != NULL);
	CHECK(!strstr(run_stdout, "nan"));
	if (!read_out(out, "L", NPY_F32, &l)) {
		for (long i = 0; i < l.numel; i++)
			CHECK_SAME(l.data[i], -INFINITY);
		npy_free(&l);
	}

	/* f32 output agrees with the f64 run; same seed -> same line; quiet */
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--sizes", "B=2,H=2,N=5", "--engine=interp",
		   "--seed", "11");
	static char first[sizeof run_stdout];
	memcpy(first, run_stdout, sizeof first);
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--seed", "11", "--sizes",
		   "B=2,H=2,N=5");
	CHECK(!strcmp(first, run_stdout));
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--seed", "12", "--sizes",
		   "B=2,H=2,N=5");
	CHECK(strcmp(first, run_stdout) != 0);
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--quiet", "--sizes",
		   "B=1,H=1,N=2");
	CHECK(run_stdout[0] == 0);
}

/* Sizes from .npy shapes, and every way they can disagree. */
static void test_inputs_and_sizes(void)
{
	char err[256];
	long qs[4] = {1, 2, 3, 8}, ks[4] = {1, 2, 4, 8}, kvs[1] = {1};
	double data[64] = {0}, kvd[1] = {2.5};
	CHECK(npy_write(sp("q.npy"), NPY_F32, 4, qs, data, err, sizeof err) == 0);
	CHECK(npy_write(sp("k.npy"), NPY_F32, 4, ks, data, err, sizeof err) == 0);
	CHECK(npy_write(sp("kvf.npy"), NPY_F64, 1, kvs, kvd, err, sizeof err) == 0);
	kvd[0] = 2;
	CHECK(npy_write(sp("kvi.npy"), NPY_I32, 1, kvs, kvd, err, sizeof err) == 0);
	/* B, H, N from Q's shape */
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--input", inp("Q", "q.npy"));
	EXPECT_RUN(1, "size of dim 'N' is not known; pass --sizes N=...", sp("causal.attn"),
		   "--engine=interp");
	CHECK(strstr(run_stderr, "size of dim 'B' is not known") != NULL); /* all are named */
	EXPECT_RUN(1, "input 'K' (", sp("causal.attn"), "--engine=interp", "--input",
		   inp("Q", "q.npy"), "--input", inp("K", "k.npy"));
	CHECK(strstr(run_stderr, "dimension 2 (N) has size 4, but N = 3 from input 'Q'") != NULL);
	EXPECT_RUN(1, "dimension 2 (N) has size 3, but N = 7 from --sizes", sp("causal.attn"),
		   "--engine=interp", "--sizes", "N=7", "--input", inp("Q", "q.npy"));
	EXPECT_RUN(1, "conflicts with the fixed size D = 8", sp("causal.attn"), "--engine=interp",
		   "--sizes", "B=1,H=1,N=2,D=4");
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--sizes", "B=1,H=1,N=2,D=8");
	EXPECT_RUN(1, "kvf.npy): dtype <f8 does not fit the declared i32 (give integer data)",
		   sp("causal.attn"), "--engine=interp", "--input", inp("Q", "q.npy"), "--input",
		   inp("kv_len", "kvf.npy"));
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--input", inp("Q", "q.npy"),
		   "--input", inp("kv_len", "kvi.npy"));
	EXPECT_RUN(1, "rank 1, but 'Q' is declared with rank 4", sp("causal.attn"),
		   "--engine=interp", "--input", inp("Q", "kvi.npy"));
	/* Q.npy turned Fortran-ordered by patching its header */
	unsigned char *img;
	size_t len;
	CHECK(npy_encode(NPY_F32, 4, qs, data, &img, &len, err, sizeof err) == 0);
	char *fo = strstr((char *)img + 10, "False");
	if (fo)
		memcpy(fo, "True ", 5);
	CHECK(tu_write(sp("fortran.npy"), img, len) == 0);
	free(img);
	EXPECT_RUN(1, "fortran.npy: fortran_order is True", sp("causal.attn"), "--engine=interp",
		   "--input", inp("Q", "fortran.npy"));
	EXPECT_RUN(1, "cannot open", sp("causal.attn"), "--engine=interp", "--input",
		   inp("Q", "missing.npy"));
	/* compound shapes are checked, not inferred */
	write_text("gqa.attn", gqa_src);
	long gq[4] = {1, 5, 3, 4};
	CHECK(npy_write(sp("gq.npy"), NPY_F32, 4, gq, data, err, sizeof err) == 0);
	EXPECT_RUN(1, "dimension 1 has size 5, but the declaration needs 4", sp("gqa.attn"),
		   "--engine=interp", "--sizes", "HKV=2,G=2", "--input", inp("Q", "gq.npy"));
	CHECK(strstr(run_stderr, "declared as Q[B, HKV * G, N, D]") != NULL);
	EXPECT_RUN(0, NULL, sp("gqa.attn"), "--engine=interp", "--sizes", "HKV=5,G=1", "--input",
		   inp("Q", "gq.npy"));
	/* sizes too large to hold are refused before anything is allocated */
	EXPECT_RUN(1, "too large", sp("causal.attn"), "--engine=interp", "--sizes",
		   "B=100000000,H=100000000,N=100000000");
	EXPECT_RUN(1, "too large", sp("causal.attn"), "--engine=interp", "--sizes",
		   "B=1,H=1,N=4611686018427387904");
}

/* Names, params and entries. */
static void test_names(void)
{
	write_text("multi.attn", multi_src);
	EXPECT_RUN(2, "several attention blocks", sp("multi.attn"), "--engine=interp", "--sizes",
		   "N=3");
	CHECK(strstr(run_stderr, " first second") && strstr(run_stderr, "try 'attnc run --help'"));
	EXPECT_RUN(0, NULL, sp("multi.attn"), "--entry", "first", "--engine=interp", "--sizes",
		   "N=3");
	CHECK(summary_line(run_stdout, "y") != NULL);
	EXPECT_RUN(1, "no attention block named 'third'", sp("multi.attn"), "--entry=third",
		   "--sizes", "N=3");
	EXPECT_RUN(1, "param 'c' has no default; pass --param c=VALUE", sp("multi.attn"),
		   "--entry=second", "--engine=interp", "--sizes", "N=3");
	EXPECT_RUN(1, "'c' is an i32 param; give an integer", sp("multi.attn"), "--entry=second",
		   "--engine=interp", "--sizes", "N=3", "--param", "c=1.5");
	EXPECT_RUN(0, NULL, sp("multi.attn"), "--entry=second", "--engine=interp", "--sizes", "N=3",
		   "--param", "c=-4");
	EXPECT_RUN(1, "has no param named 'zz'", sp("multi.attn"), "--entry=second",
		   "--engine=interp", "--sizes", "N=3", "--param", "zz=1");
	EXPECT_RUN(1, "has no dim named 'M'", sp("multi.attn"), "--entry=first", "--sizes", "M=3");
	EXPECT_RUN(1, "has no input named 'y' (it is an output)", sp("multi.attn"), "--entry=first",
		   "--sizes", "N=3", "--input", "y=y.npy");
	EXPECT_RUN(1, "ranges apply to i32 inputs only", sp("multi.attn"), "--entry=first",
		   "--sizes", "N=3", "--range", "x=0:3");
	/* --param overrides a default: scale = 0 makes all scores 0 */
	EXPECT_RUN(0, NULL, sp("causal.attn"), "--engine=interp", "--sizes", "B=1,H=1,N=3",
		   "--param", "scale=0", "--range", "kv_len=3:3");
	CHECK(strstr(run_stdout, "L: shape [1, 1, 3] f32 min 0.0000e+00 max 1.0986e+00") != NULL);
}

/* The command line itself: status 2 and one line plus the --help pointer. */
static void test_usage(void)
{
	EXPECT_RUN(2, "no input file", "--engine=interp");
	CHECK(strstr(run_stderr, "try 'attnc run --help'\n") != NULL);
	EXPECT_RUN(2, "unknown option '--bogus'", sp("causal.attn"), "--bogus");
	EXPECT_RUN(2, "unknown option '-x'", sp("causal.attn"), "-x");
	EXPECT_RUN(2, "malformed --sizes 'B=two'", sp("causal.attn"), "--sizes", "B=two");
	EXPECT_RUN(2, "malformed --sizes", sp("causal.attn"), "--sizes", "B=2,,H=3");
	EXPECT_RUN(2, "sizes must be at least 1", sp("causal.attn"), "--sizes", "B=0");
	EXPECT_RUN(2, "option '--sizes' needs a value", sp("causal.attn"), "--sizes");
	EXPECT_RUN(2, "--precision must be f32 or f64", sp("causal.attn"), "--precision", "f16");
	EXPECT_RUN(2, "--engine must be mlir or interp", sp("causal.attn"), "--engine=gpu");
	EXPECT_RUN(2, "malformed --seed", sp("causal.attn"), "--seed", "-1");
	EXPECT_RUN(2, "malformed --param", sp("causal.attn"), "--param", "scale=abc");
	EXPECT_RUN(2, "malformed --range", sp("causal.attn"), "--range", "kv_len=3");
	EXPECT_RUN(2, "need LO <= HI", sp("causal.attn"), "--range", "kv_len=3:1");
	EXPECT_RUN(2, "unexpected argument", sp("causal.attn"), sp("other.attn"));
	EXPECT_RUN(2, "--quiet takes no value", sp("causal.attn"), "--quiet=yes");
	EXPECT_RUN(0, NULL, "--help");
	CHECK(strstr(run_stdout, "usage: attnc run FILE.attn") != NULL);
	EXPECT_RUN(1, "cannot open", sp("nonexistent.attn"));
	write_text("bad.attn", "attention bad { dims N; out y[N] : f32; y[i] = ; }\n");
	EXPECT_RUN(1, "error", sp("bad.attn"), "--sizes", "N=2");
}

/* Where outputs cannot be written, status 3 and no partial files. */
static void test_output_errors(void)
{
	write_text("plainfile", "x");
	EXPECT_RUN(3, "cannot create output directory", sp("causal.attn"), "--engine=interp",
		   "--sizes", "B=1,H=1,N=2", "--out-dir", sp("plainfile/sub"));
}

/* run_cascade without the front end, on the hand-built cascade. */
static void test_run_cascade(void)
{
	Arena ar;
	arena_init(&ar);
	Arena *a = &ar;
	Cascade *c = tb_causal(a, "hand", DT_F16, 4);
	RunConfig cfg;
	run_config_init(&cfg);
	RunSize sizes[] = {{"B", 1}, {"H", 2}, {"N", 3}};
	RunRange range = {"kv_len", 2, 2, 0};
	cfg.sizes = sizes, cfg.nsizes = 3, cfg.ranges = &range, cfg.nranges = 1;
	cfg.engine = RUN_ENGINE_INTERP, cfg.use_f64 = 1, cfg.seed = 5;
	cfg.out_dir = sp("out/hand");
	FILE *out = tmpfile(), *err = tmpfile();
	cfg.out = out, cfg.err = err;
	CHECK(run_cascade(c, &cfg) == 0);
	long n = 1 * 2 * 3 * 4;
	double q[24], k[24], v[24], kv[1] = {2}, O[24], L[6];
	inputs_fill(q, n, DT_F16, 5, "Q", 0, 0);
	inputs_fill(k, n, DT_F16, 5, "K", 0, 0);
	inputs_fill(v, n, DT_F16, 5, "V", 0, 0);
	tu_causal_ref(1, 2, 3, 4, 0.5, q, k, v, kv, O, L);
	NpyArray o;
	if (!read_out(cfg.out_dir, "O", NPY_F64, &o)) {
		for (long i = 0; i < n && o.numel == n; i++)
			CHECK_SAME(o.data[i], O[i]);
		npy_free(&o);
	}
	/* an --input for a computed tensor is refused */
	RunInput in = {"S", "s.npy"};
	cfg.inputs = &in, cfg.ninputs = 1;
	CHECK(run_cascade(c, &cfg) == RUN_EUSER);
	fclose(out);
	fclose(err);
	arena_free(a);
}

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "host-run-scratch";
	tu_mkdirs(scratch);
	test_causal_file();
	test_inputs_and_sizes();
	test_names();
	test_usage();
	test_output_errors();
	test_run_cascade();
	return tu_report("host_run");
}
