/*
** test/unit/cpu_examples.c: every attention block of every example file,
** run through the C back end and checked three ways (one mode per ctest):
**
**   cpu_vs_reference           the generated C (compiled once per block and
**                              precision with cpu_engine_load) against the
**                              MLIR reference executor: f32 on 5 seeded
**                              random shape sets (sizes that are no multiple
**                              of 16, one set with N = 1 or M = 1, GQA group
**                              sizes 1, 4 and 8, masks with i32 inputs at 0
**                              and the full length), relative L2 error
**                              < 1e-5 per output; then one f64 set, < 1e-12
**   merge_rule                 NAME_run_partitioned on random splits of the
**                              KV stream (2 to 6 unequal parts, with an empty
**                              part and a part of length 1) against the
**                              unsplit run in f64, max error <= 1e-12; bad
**                              bounds must return 1
**   rewrite_preserves_meaning  the interpreter on the cascade as the front
**                              end made it and on plan_build's rewritten
**                              copy, same inputs, max error <= 1e-12
**
** Every comparison also wants the same +-inf positions and no NaN; outputs
** are poisoned with NaN before each run, so an unwritten element shows. A
** block the test cannot drive (an unknown runtime dim or i32 input, C that
** does not compile) fails it: every new example must be covered.
**
** usage: test_cpu_examples MODE EXAMPLES_DIR SCRATCH_DIR
*/
#include "host_testutil.h"

#include <dirent.h>
#include <time.h>

#include "cli/cpu_engine.h"
#include "cli/inputs.h"
#include "cli/interp.h"
#include "compiler/plan.h"
#include "lowering/mlir/refexec.h"
#include "lang/front.h"
#include "lowering/c/c_emit.h"

#define TOL_F32 1e-5  /* relative L2, f32 C against f32 reference */
#define TOL_F64 1e-12 /* f64 everywhere else */
#define SEED    0x5eed2024ULL

enum { NSETS_F32 = 5, NSETS_MERGE = 3, NSETS_REWRITE = 3, MAX_BLOCKS = 64 };
enum { MAX_WORK = 250000 }; /* cap on B * H * N * M of one shape */

typedef enum Mode { MODE_CPU, MODE_MERGE, MODE_REWRITE } Mode;
static const char *const mode_names[] = {"cpu_vs_reference", "merge_rule",
					 "rewrite_preserves_meaning"};

/* How a shape set draws the sizes of N and M. */
typedef enum SetKind {
	SET_TINY,   /* N = 1 (M = 1 when the block has no N) */
	SET_M1,     /* M = 1 when the block has N and M, else random */
	SET_LARGE,  /* B = H = 1, several KV tiles, past the sliding window */
	SET_RANDOM, /* N, M in [1, 190] */
	SET_STREAM, /* N, M in [65, 190]: several tiles for the merge test */
	SET_SHORT,  /* N, M in [8, 63] */
	SET_SMALL,  /* N, M in [2, 40]: the interpreter is slow */
	SET_SMALL1, /* the same, N = 1 (or M = 1) */
} SetKind;

/* The largest error seen per block, for the closing table. */
typedef struct BlockErr {
	char name[96];
	double err[2]; /* per mode: f32 and f64 (cpu), or the one error */
	int lines;     /* -1: not covered */
	int skipped;   /* merge_rule: no one-pass plan, nothing to split */
} BlockErr;

static BlockErr blocks[MAX_BLOCKS];
static int nblocks, nblocks_seen, nlines;
static Mode mode;
static double t_build, t_ref, t_c; /* seconds in compiling, the reference, the C */

/* Monotonic seconds, for the time summary. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- shapes ------------------------------------------------------------- */

/* A sequence length in [lo, hi] that is no multiple of 16 (tiles of 16 and
** 64 then always end in a partial one); 1 is allowed. */
static long draw_len(InputsRng *r, long lo, long hi)
{
	for (;;) {
		long v = inputs_rng_int(r, lo, hi);
		if (v % 16 || lo == hi)
			return v;
	}
}

/* The dims array index of runtime dim name, or -1. */
static int dim_index(const Cascade *c, const char *name)
{
	const Dim *d = cascade_dim(c, name);
	return d && !d->fixed ? d->id : -1;
}

/* B * H * N * M of a shape: what a reference run costs. */
static long shape_work(const Cascade *c, const long *dims)
{
	long w = 1;
	/* an image's or video's pixels (T, IH, IW) are both N and M */
	static const char *const names[] = {"B", "H",  "HKV", "G", "N",  "M",
					    "T", "IH", "IW",  "T", "IH", "IW"};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		int i = dim_index(c, names[k]);
		w *= i >= 0 ? dims[i] : 1;
	}
	return w;
}

/* The size of runtime dim name, else of fallback (decode has no N). */
static long size_of(const Cascade *c, const long *dims, const char *name, const char *fallback)
{
	int i = dim_index(c, name);
	if (i < 0)
		i = dim_index(c, fallback);
	return i >= 0 ? dims[i] : 1;
}

/* Draws every runtime dim of c for one shape set and writes "B=2 H=3 ..."
** into desc. Known dims: B, H, HKV in [1, 3], G cycling through 1, 4, 8
** with gi, N and M by kind (M != N). Returns -1 for a dim it does not know,
** so that a new example cannot go untested silently. */
static int draw_shape(const Cascade *c, InputsRng *r, SetKind kind, int gi, long *dims, char *desc,
		      size_t desclen)
{
	static const long gsizes[3] = {1, 4, 8};
	long lo = 1, hi = 190;
	int iN = dim_index(c, "N"), iM = dim_index(c, "M");
	switch (kind) {
	case SET_LARGE: lo = 200, hi = 330; break;
	case SET_STREAM: lo = 65, hi = 190; break;
	case SET_SHORT: lo = 8, hi = 63; break;
	case SET_SMALL:
	case SET_SMALL1: lo = 2, hi = 40; break;
	default: break;
	}
	for (int k = 0; k < c->dims.n; k++) {
		const Dim *d = c->dims.v[k];
		if (d->fixed) {
			dims[k] = d->fixed;
			continue;
		}
		if (!strcmp(d->name, "B") || !strcmp(d->name, "H") || !strcmp(d->name, "HKV"))
			dims[k] = kind == SET_LARGE ? 1 : inputs_rng_int(r, 1, 3);
		else if (!strcmp(d->name, "G"))
			dims[k] = gsizes[gi % 3];
		else if (!strcmp(d->name, "N") || !strcmp(d->name, "M"))
			dims[k] = draw_len(r, lo, hi);
		/* a paged cache (paged_decode.attn): pages of P slots, MAXP
		** pages per sequence covering a drawn length, a pool of NP
		** pages with some to spare; dims come in declaration order,
		** B before them */
		/* an image or video (neighborhood2d/3d.attn): T frames of IH x IW
		** pixels, the window's 7 (3 frames) both sides of a border */
		else if (!strcmp(d->name, "IH") || !strcmp(d->name, "IW"))
			dims[k] = kind == SET_TINY ? 1 : inputs_rng_int(r, 2, 10);
		/* a packed batch (varlen.attn): sequences of at most NQ queries
		** and NK keys, T and TK tokens in all, below */
		else if (!strcmp(d->name, "NQ") || !strcmp(d->name, "NK"))
			dims[k] = kind == SET_TINY ? 1 : draw_len(r, lo, hi);
		else if (!strcmp(d->name, "TK") ||
			 (!strcmp(d->name, "T") && dim_index(c, "NQ") >= 0))
			dims[k] = -1;
		else if (!strcmp(d->name, "T"))
			dims[k] = kind == SET_TINY ? 1 : inputs_rng_int(r, 1, 4);
		else if (!strcmp(d->name, "P"))
			dims[k] = (long[]){1, 4, 16}[gi % 3];
		else if (!strcmp(d->name, "MAXP")) {
			long p = size_of(c, dims, "P", "P");
			dims[k] = (draw_len(r, lo, hi) + p - 1) / p;
		} else if (!strcmp(d->name, "NP"))
			dims[k] = -1; /* after B and MAXP, below */
		else {
			fprintf(stderr, "%s: no rule for runtime dim %s; extend draw_shape\n",
				c->name, d->name);
			return -1;
		}
	}
	int iNP = dim_index(c, "NP");
	if (iNP >= 0)
		dims[iNP] = size_of(c, dims, "B", "B") * size_of(c, dims, "MAXP", "MAXP") +
			    inputs_rng_int(r, 0, 3);
	int one = kind == SET_TINY || kind == SET_SMALL1 ? (iN >= 0 ? iN : iM)
		  : kind == SET_M1 && iN >= 0            ? iM
							 : -1;
	if (one >= 0)
		dims[one] = 1;
	while (iN >= 0 && iM >= 0 && dims[iM] == dims[iN])
		dims[one == iM ? iN : iM] = draw_len(r, one >= 0 ? 2 : lo, hi);
	/* keep the reference cheap: fewer batches, then fewer heads */
	static const char *const shrink[] = {"B", "H", "HKV"};
	for (size_t k = 0; k < 3; k++) {
		int i = dim_index(c, shrink[k]);
		while (i >= 0 && dims[i] > 1 && shape_work(c, dims) > MAX_WORK)
			dims[i]--;
	}
	/* a packed batch's tokens: up to a sequence short of B full ones */
	static const char *const packed[][2] = {{"T", "NQ"}, {"TK", "NK"}};
	for (size_t k = 0; k < 2; k++) {
		int i = dim_index(c, packed[k][0]);
		if (dim_index(c, packed[k][1]) < 0)
			continue;
		long full = size_of(c, dims, "B", "B") * size_of(c, dims, packed[k][1], "N");
		if (i >= 0)
			dims[i] =
			    full - inputs_rng_int(r, 0, size_of(c, dims, packed[k][1], "N") - 1);
	}
	size_t n = 0;
	desc[0] = 0;
	for (int k = 0; k < c->dims.n && n < desclen; k++) {
		const Dim *d = c->dims.v[k];
		if (!d->fixed)
			n += (size_t)snprintf(desc + n, desclen - n, "%s%s=%ld", n ? " " : "",
					      d->name, dims[k]);
	}
	return 0;
}

/* ---- inputs ------------------------------------------------------------- */

/* Fills an i32 input so that its mask is exercised: kv_len and prefix_len
** take the full length, a random length, 0, full - 1 and 1, batch b of set
** s getting pattern (s + b) mod 5 (so 5 sets cover all with B = 1, and set
** 5, the f64 one, starts at full rather than at empty rows only); doc ids
** are sorted, a new document starting with probability 1/3 and at least two
** documents per row of 3 or more. Returns -1 for an input it does not know. */
static int fill_i32(const Binding *b, const Tensor *t, double *buf, int set, uint64_t seed)
{
	const Cascade *c = b->c;
	InputsRng r;
	inputs_rng_init(&r, seed, t->name);
	int kv = !strcmp(t->name, "kv_len"), pre = !strcmp(t->name, "prefix_len");
	if ((kv || pre) && t->rank == 1) {
		long full = kv ? size_of(c, b->dims, "M", "N") : size_of(c, b->dims, "N", "M");
		if (kv && dim_index(c, "MAXP") >= 0) /* a paged cache: its pages' slots */
			full = size_of(c, b->dims, "MAXP", "MAXP") * size_of(c, b->dims, "P", "P");
		for (long i = 0; i < tensor_dim_size(t, 0, b->dims); i++) {
			long pat[5] = {full, inputs_rng_int(&r, 0, full), 0, full - 1,
				       1 < full ? 1 : full};
			buf[i] = (double)pat[(set + i) % 5];
		}
		return 0;
	}
	/* a page table: each sequence's pages, distinct, from a shuffled pool */
	if (!strcmp(t->name, "block") && t->rank == 2) {
		long rows = tensor_dim_size(t, 0, b->dims), n = tensor_dim_size(t, 1, b->dims);
		long np = size_of(c, b->dims, "NP", "NP");
		if (np < rows * n)
			return -1;
		long *pool = malloc((size_t)np * sizeof *pool);
		if (!pool)
			return -1;
		for (long i = 0; i < np; i++)
			pool[i] = i;
		for (long i = np - 1; i > 0; i--) {
			long k = inputs_rng_int(&r, 0, i), x = pool[i];
			pool[i] = pool[k], pool[k] = x;
		}
		for (long i = 0; i < rows * n; i++)
			buf[i] = (double)pool[i];
		free(pool);
		return 0;
	}
	/* a packed batch's offsets (cu_q over T tokens of at most NQ a
	** sequence, cu_k over TK of at most NK), as attnc run --offsets makes them */
	if (!strncmp(t->name, "cu_", 3) && t->rank == 1) {
		int q = !strcmp(t->name, "cu_q");
		return inputs_offsets(buf, tensor_dim_size(t, 0, b->dims), seed, t->name,
				      size_of(c, b->dims, q ? "T" : "TK", "T"),
				      size_of(c, b->dims, q ? "NQ" : "NK", "N"));
	}
	if (!strcmp(t->name, "doc") && t->rank == 2) {
		long rows = tensor_dim_size(t, 0, b->dims), n = tensor_dim_size(t, 1, b->dims);
		for (long row = 0; row < rows; row++) {
			double *d = buf + row * n;
			long id = inputs_rng_int(&r, 0, 2);
			for (long i = 0; i < n; i++) {
				if (i > 0 && inputs_rng_int(&r, 0, 2) == 0)
					id++;
				d[i] = (double)id;
			}
			if (n >= 3 && d[0] == d[n - 1])
				for (long i = n / 2; i < n; i++)
					d[i] += 1;
		}
		return 0;
	}
	return -1;
}

/* Fills every input of b: floats from the seeded generator (rounded to
** their dtype), i32 through fill_i32, bools 3/4 true. 0, or -1 for an i32
** input with no rule. */
static int fill_inputs(const Binding *b, int set, uint64_t seed)
{
	for (int k = 0; k < b->c->tensors.n; k++) {
		const Tensor *t = b->c->tensors.v[k];
		if (t->kind != TK_IN)
			continue;
		long n = tensor_numel(t, b->dims);
		if (t->dtype != DT_I32)
			inputs_fill(b->data[k], n, t->dtype, seed, t->name, 0, 0);
		else if (fill_i32(b, t, b->data[k], set, seed)) {
			fprintf(stderr, "%s: no rule for i32 input %s; extend fill_i32\n",
				b->c->name, t->name);
			return -1;
		}
	}
	return 0;
}

/* NaN in every output element, so that one no engine writes shows up. */
static void poison(const Binding *b)
{
	for (int k = 0; k < b->c->tensors.n; k++) {
		const Tensor *t = b->c->tensors.v[k];
		if (t->kind == TK_OUT)
			for (long i = 0; i < tensor_numel(t, b->dims); i++)
				b->data[k][i] = NAN;
	}
}

/* A binding of c (possibly another cascade with the same dims and params,
** like plan_build's copy) whose inputs are src's, matched by name; outputs
** poisoned. 0, or -1 when the in/out tensors do not correspond. */
static int bind_like(Binding *dst, const Cascade *c, const Binding *src)
{
	int ok = 1, nio = 0, src_nio = 0;
	bind_alloc(dst, c, src->dims, src->params);
	for (int k = 0; k < c->tensors.n; k++) {
		const Tensor *t = c->tensors.v[k];
		if (t->kind == TK_TEMP)
			continue;
		nio++;
		const Tensor *s = cascade_tensor(src->c, t->name);
		if (!s || s->kind != t->kind ||
		    tensor_numel(s, src->dims) != tensor_numel(t, src->dims)) {
			fprintf(stderr, "%s: in/out tensor %s has no counterpart\n", c->name,
				t->name);
			ok = 0;
			continue;
		}
		if (t->kind == TK_IN)
			memcpy(dst->data[k], src->data[s->id],
			       (size_t)tensor_numel(t, src->dims) * sizeof(double));
	}
	for (int k = 0; k < src->c->tensors.n; k++)
		src_nio += ((const Tensor *)src->c->tensors.v[k])->kind != TK_TEMP;
	poison(dst);
	return ok && nio == src_nio ? 0 : -1;
}

/* ---- comparisons -------------------------------------------------------- */

/* Relative L2 error ||got - want|| / ||want|| over the finite elements
** (0 when both norms are 0, inf when only want's is); *bad counts NaNs and
** differing +-inf positions, *inf matching infinities. */
static double rel_l2(const double *got, const double *want, long n, long *bad, long *inf)
{
	double num = 0, den = 0, gn = 0;
	for (long i = 0; i < n; i++) {
		double x = got[i], y = want[i];
		if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
			*bad += !(isinf(x) && x == y);
			*inf += isinf(x) && x == y;
			continue;
		}
		num += (x - y) * (x - y), den += y * y, gn += x * x;
	}
	if (den == 0)
		return gn == 0 ? 0 : INFINITY;
	return sqrt(num / den);
}

/* max |got - want| / max(1, |want|) over the finite elements (the tests'
** usual measure); *bad and *inf as in rel_l2. */
static double max_rel(const double *got, const double *want, long n, long *bad, long *inf)
{
	double worst = 0;
	for (long i = 0; i < n; i++) {
		double x = got[i], y = want[i];
		if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
			*bad += !(isinf(x) && x == y);
			*inf += isinf(x) && x == y;
			continue;
		}
		double e = fabs(x - y) / fmax(1.0, fabs(y));
		worst = e > worst ? e : worst;
	}
	return worst;
}

/* Every output of got (matched by name) against want's: appends "NAME err"
** pairs (and "(k inf)" when k infinities matched) to line and returns the worst error, INFINITY when NaN or inf
** positions differ (then one element is printed to stderr). */
static double compare_all(const Binding *got, const Binding *want, int l2, char *line, size_t cap)
{
	double worst = 0;
	size_t n = strlen(line);
	for (int k = 0; k < want->c->tensors.n; k++) {
		const Tensor *t = want->c->tensors.v[k];
		if (t->kind != TK_OUT)
			continue;
		const Tensor *g = cascade_tensor(got->c, t->name);
		long cnt = tensor_numel(t, want->dims), bad = 0, inf = 0;
		const double *x = got->data[g->id], *y = want->data[k];
		double e = l2 ? rel_l2(x, y, cnt, &bad, &inf) : max_rel(x, y, cnt, &bad, &inf);
		if (bad) {
			for (long i = 0; i < cnt; i++)
				if (isnan(x[i]) || isnan(y[i]) ||
				    ((isinf(x[i]) || isinf(y[i])) && x[i] != y[i])) {
					fprintf(stderr,
						"  %s[%ld]: got %.17g, want %.17g (%ld such)\n",
						t->name, i, x[i], y[i], bad);
					break;
				}
			e = INFINITY;
		}
		if (n < cap)
			n += (size_t)snprintf(line + n, cap - n, " %s %.2e", t->name, e);
		if (inf && n < cap)
			n += (size_t)snprintf(line + n, cap - n, " (%ld inf)", inf);
		worst = e > worst || isnan(e) ? e : worst;
	}
	return worst;
}

/* Records one printed (block, shape) line and its error in the table. */
static void note(int blk, int col, const char *line, double err, double tol)
{
	int ok = err <= tol;
	printf("%s: %s%s\n", mode_names[mode], line, ok ? "  ok" : "  FAIL");
	if (!ok) {
		fprintf(stderr, "%s: FAIL (tolerance %g): %s\n", mode_names[mode], tol, line);
		tu_failures++;
	}
	double *e = &blocks[blk].err[col];
	*e = err > *e || isnan(err) ? err : *e;
	blocks[blk].lines++;
	nlines++;
}

/* ---- the C back end ----------------------------------------------------- */

/* The C for c in one precision, compiled and loaded once; NULL (reported)
** when it cannot be emitted or built. */
static CpuModule *load_c(const Cascade *c, int use_f64)
{
	char *src = NULL, err[1024];
	size_t len = 0;
	Arena a;
	arena_init(&a);
	Diag d;
	diag_init(&d, &a, stderr);
	double t0 = now_s();
	FILE *f = open_memstream(&src, &len);
	int bad = !f || c_emit_cascade(f, c, &d, use_f64) || d.errors;
	if (f)
		bad |= fclose(f) != 0;
	arena_free(&a);
	CpuModule *m = bad ? NULL : cpu_engine_load(src, err, sizeof err);
	if (bad)
		fprintf(stderr, "%s: the C back end failed (%s)\n", c->name,
			use_f64 ? "f64" : "f32");
	else if (!m)
		fprintf(stderr, "%s: %s C does not build: %s\n", c->name, use_f64 ? "f64" : "f32",
			err);
	free(src);
	t_build += now_s() - t0;
	return m;
}

/* Runs NAME_run_generic (nparts 0) or _partitioned on b; the engine's or
** the code's status, reported when nonzero and not expected. */
static int call_c(CpuModule *m, const Binding *b, int use_f64, const long *bounds, int nparts,
		  int expect)
{
	char err[1024] = "";
	double t0 = now_s();
	int rc = cpu_engine_call(m, b->c->name, b, use_f64, bounds, nparts, err, sizeof err);
	t_c += now_s() - t0;
	if (rc != expect)
		fprintf(stderr, "%s: cpu_engine_call returned %d, expected %d: %s\n", b->c->name,
			rc, expect, err);
	return rc;
}

/* The reference executor on b; 0 or its reported failure. */
static int call_ref(const Binding *b, int use_f64)
{
	char err[1024] = "";
	double t0 = now_s();
	/* a packed output is not in the MLIR interchange: the f64 interpreter
	** stands in for the reference executor */
	int packed = 0;
	for (int i = 0; i < b->c->tensors.n; i++)
		packed |= ((const Tensor *)b->c->tensors.v[i])->pack != NULL;
	int rc = packed ? interp_run(b, err, sizeof err) : refexec_run(b, use_f64, err, sizeof err);
	t_ref += now_s() - t0;
	if (rc)
		fprintf(stderr, "%s: refexec (%s): %s\n", b->c->name, use_f64 ? "f64" : "f32", err);
	return rc;
}

/* ---- the three modes ---------------------------------------------------- */

/* Seed of shape set `set` of a block: the same on every run and machine. */
static uint64_t set_seed(const char *what, int set)
{
	uint64_t h = SEED;
	for (const char *p = what; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h + (uint64_t)set;
}

/* One shape of one block in one mode: draw, bind, fill. 0, or -1 after
** reporting (the block is then not covered). */
static int setup(const Cascade *c, const char *what, int set, SetKind kind, Binding *b, long *dims,
		 double *params, char *desc, size_t desclen)
{
	InputsRng r;
	uint64_t seed = set_seed(what, set);
	inputs_rng_init(&r, seed, mode_names[mode]);
	if (draw_shape(c, &r, kind, set, dims, desc, desclen))
		return -1;
	int miss = cascade_param_defaults(c, dims, params, NULL);
	if (miss >= 0) {
		fprintf(stderr, "%s: param %s has no default\n", what,
			((Param *)c->params.v[miss])->name);
		return -1;
	}
	bind_alloc(b, c, dims, params);
	if (fill_inputs(b, set, seed)) {
		bind_free(b, c);
		return -1;
	}
	poison(b);
	return 0;
}

/* cpu_vs_reference: 5 f32 sets and one f64 set of one block. */
static int run_cpu(const Cascade *c, const char *what, int blk, long *dims, double *params)
{
	static const SetKind kinds[NSETS_F32 + 1] = {SET_TINY,   SET_LARGE, SET_RANDOM,
						     SET_RANDOM, SET_M1,    SET_RANDOM};
	CpuModule *m[2] = {load_c(c, 0), load_c(c, 1)};
	int ok = m[0] && m[1];
	for (int set = 0; ok && set <= NSETS_F32; set++) {
		int f64 = set == NSETS_F32;
		char desc[128], line[512];
		Binding ref, cb;
		if (setup(c, what, set, kinds[set], &ref, dims, params, desc, sizeof desc)) {
			ok = 0;
			break;
		}
		double err = INFINITY;
		snprintf(line, sizeof line, "%-34s %s [%s]", what, f64 ? "f64" : "f32", desc);
		if (!bind_like(&cb, c, &ref) && !call_ref(&ref, f64) &&
		    !call_c(m[f64], &cb, f64, NULL, 0, 0))
			err = compare_all(&cb, &ref, 1, line, sizeof line);
		note(blk, f64, line, err, f64 ? TOL_F64 : TOL_F32);
		bind_free(&cb, c);
		bind_free(&ref, c);
	}
	cpu_engine_unload(m[0]);
	cpu_engine_unload(m[1]);
	return ok ? 0 : -1;
}

/* Fills bounds[0..k] with a random split of [0, len) into k parts: k == 2
** unequal; k >= 3 with one empty part and one of length 1 at random places
** (the rest random, possibly empty too). len >= 8. */
static void draw_split(InputsRng *r, long len, int k, long *bounds)
{
	long part[8] = {0};
	if (k == 2) {
		part[0] = inputs_rng_int(r, 1, len - 1);
		if (2 * part[0] == len)
			part[0]++;
		part[1] = len - part[0];
	} else {
		int e = (int)inputs_rng_int(r, 0, k - 1), one = (int)inputs_rng_int(r, 0, k - 2);
		one += one >= e;
		long left = len - 1;
		for (int p = 0, rest = k - 2; p < k; p++) {
			if (p == e)
				part[p] = 0;
			else if (p == one)
				part[p] = 1;
			else if (--rest == 0)
				part[p] = left;
			else
				left -= part[p] = inputs_rng_int(r, 0, left);
		}
	}
	bounds[0] = 0;
	for (int p = 0; p < k; p++)
		bounds[p + 1] = bounds[p] + part[p];
}

/* Bounds the generated code must refuse with 1; each is named when it is
** not, and a refused call must leave the (poisoned) outputs alone. */
static void check_bad_bounds(CpuModule *m, const Binding *b, long len, const char *what)
{
	const long start1[3] = {1, 2, len}, backwards[4] = {0, 5, 3, len};
	const long short_end[2] = {0, len - 1}, long_end[3] = {0, 1, len + 1};
	const long good[2] = {0, len};
	struct {
		const char *name;
		const long *bounds;
		int nparts;
	} cases[] = {{"bounds[0] = 1", start1, 2},
		     {"decreasing", backwards, 3},
		     {"bounds[nparts] = len - 1", short_end, 1},
		     {"bounds[nparts] = len + 1", long_end, 2},
		     {"nparts = -1", good, -1},
		     {"bounds = NULL", NULL, 2}};
	int bad = 0;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		poison(b);
		char err[1024] = "";
		int rc = cpu_engine_call(m, b->c->name, b, 1, cases[k].bounds, cases[k].nparts, err,
					 sizeof err);
		long written = 0;
		for (int t = 0; t < b->c->tensors.n; t++) {
			const Tensor *x = b->c->tensors.v[t];
			for (long i = 0; x->kind == TK_OUT && i < tensor_numel(x, b->dims); i++)
				written += !isnan(b->data[t][i]);
		}
		if (rc != 1 || written) {
			fprintf(stderr, "%s: bad bounds (%s, len %ld): returned %d, expected 1%s\n",
				what, cases[k].name, len, rc,
				written && rc == 1 ? ", outputs written" : "");
			bad++;
		}
	}
	printf("%s: %-34s bad bounds: %d of %d refused\n", mode_names[mode], what,
	       (int)(sizeof cases / sizeof cases[0]) - bad, (int)(sizeof cases / sizeof cases[0]));
	CHECK(bad == 0);
}

/* merge_rule: splits of the stream against the unsplit f64 run. */
static int run_merge(const Cascade *c, const char *what, int blk, long *dims, double *params)
{
	Arena a;
	arena_init(&a);
	Plan *p = plan_build(&a, c, "cpu");
	int passes = p->passes_after, stream = p->stream;
	Expr *extent = stream >= 0 ? p->classes[stream].extent : NULL;
	if (passes != 1 || !extent || !c_emit_streamed(c)) {
		printf("%s: %-34s skipped: %d passes after the rewrite%s\n", mode_names[mode], what,
		       passes, passes == 1 && extent ? ", materialised C (no partial states)" : "");
		blocks[blk].skipped = 1;
		arena_free(&a);
		return 0;
	}
	CpuModule *m = load_c(c, 1);
	int ok = m != NULL;
	static const SetKind kinds[NSETS_MERGE] = {SET_STREAM, SET_SHORT, SET_STREAM};
	for (int set = 0; ok && set < NSETS_MERGE; set++) {
		char desc[128];
		Binding whole, part;
		if (setup(c, what, set, kinds[set], &whole, dims, params, desc, sizeof desc)) {
			ok = 0;
			break;
		}
		long len = expr_eval_int(extent, dims, NULL);
		InputsRng r;
		inputs_rng_init(&r, set_seed(what, set), "split");
		int base = bind_like(&part, c, &whole) || call_c(m, &whole, 1, NULL, 0, 0);
		if (!base && set == 0)
			check_bad_bounds(m, &part, len, what);
		for (int k = 2; k <= 6; k++) {
			long bounds[8];
			char line[512], bs[128];
			draw_split(&r, len, k, bounds);
			size_t n = 0;
			for (int q = 0; q <= k; q++)
				n += (size_t)snprintf(bs + n, sizeof bs - n, "%s%ld", q ? "," : "",
						      bounds[q]);
			snprintf(line, sizeof line, "%-34s [%s] len %ld bounds {%s}", what, desc,
				 len, bs);
			double err = INFINITY;
			poison(&part);
			if (!base && !call_c(m, &part, 1, bounds, k, 0))
				err = compare_all(&part, &whole, 0, line, sizeof line);
			note(blk, 0, line, err, TOL_F64);
		}
		bind_free(&part, c);
		bind_free(&whole, c);
	}
	cpu_engine_unload(m);
	arena_free(&a);
	return ok ? 0 : -1;
}

/* rewrite_preserves_meaning: the interpreter on both cascades. */
static int run_rewrite(const Cascade *c, const char *what, int blk, long *dims, double *params)
{
	Arena a;
	arena_init(&a);
	Plan *p = plan_build(&a, c, "cpu");
	int ok = 1;
	static const SetKind kinds[NSETS_REWRITE] = {SET_SMALL, SET_SMALL1, SET_SHORT};
	for (int set = 0; ok && set < NSETS_REWRITE; set++) {
		char desc[128], line[512], err[1024] = "";
		Binding orig, rw;
		if (setup(c, what, set, kinds[set], &orig, dims, params, desc, sizeof desc)) {
			ok = 0;
			break;
		}
		snprintf(line, sizeof line, "%-34s [%s] %d -> %d passes", what, desc,
			 p->passes_before, p->passes_after);
		double e = INFINITY, t0 = now_s();
		int bound = !bind_like(&rw, p->c, &orig);
		int ro = interp_run(&orig, err, sizeof err);
		if (ro)
			fprintf(stderr, "%s: interp (original): %s\n", what, err);
		int rr = bound ? interp_run(&rw, err, sizeof err) : -1;
		t_ref += now_s() - t0;
		if (bound && rr)
			fprintf(stderr, "%s: interp (rewritten): %s\n", what, err);
		if (bound && !ro && !rr)
			e = compare_all(&rw, &orig, 0, line, sizeof line);
		note(blk, 0, line, e, TOL_F64);
		bind_free(&rw, p->c);
		bind_free(&orig, c);
	}
	arena_free(&a);
	return ok ? 0 : -1;
}

/* ---- driver ------------------------------------------------------------- */

/* Every block of one example file in the current mode; a block that
** cannot be driven is a failure. */
static void test_file(const char *dir, const char *file)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	Arena ar;
	arena_init(&ar);
	Diag d;
	diag_init(&d, &ar, stderr);
	int f = diag_load_file(&d, path);
	Program *p = f < 0 ? NULL : front_compile(&ar, &d, f);
	CHECK(p != NULL);
	for (int i = 0; p && i < p->cascades.n; i++) {
		const Cascade *c = p->cascades.v[i];
		nblocks_seen++;
		if (nblocks == MAX_BLOCKS) {
			CHECK(nblocks < MAX_BLOCKS);
			break;
		}
		int blk = nblocks++;
		snprintf(blocks[blk].name, sizeof blocks[blk].name, "%s:%s", file, c->name);
		long *dims = calloc((size_t)c->dims.n + 1, sizeof *dims);
		double *params = calloc((size_t)c->params.n + 1, sizeof *params);
		int rc = mode == MODE_CPU     ? run_cpu(c, blocks[blk].name, blk, dims, params)
			 : mode == MODE_MERGE ? run_merge(c, blocks[blk].name, blk, dims, params)
					      : run_rewrite(c, blocks[blk].name, blk, dims, params);
		if (rc) {
			fprintf(stderr, "%s: %s is not covered\n", mode_names[mode],
				blocks[blk].name);
			tu_failures++;
			blocks[blk].lines = -1;
		}
		free(dims);
		free(params);
	}
	arena_free(&ar);
}

/* Mode, then every example file in sorted order, then the table. */
int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s MODE EXAMPLES_DIR SCRATCH_DIR\n", argv[0]);
		return 2;
	}
	int found = 0;
	for (int k = 0; k < 3; k++)
		if (!strcmp(argv[1], mode_names[k]))
			mode = (Mode)k, found = 1;
	if (!found) {
		fprintf(stderr, "%s: unknown mode '%s'\n", argv[0], argv[1]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* result lines and errors interleave in order */
	char tmp[1024];
	snprintf(tmp, sizeof tmp, "%s/tmp", argv[3]);
	tu_mkdirs(tmp);
	setenv("TMPDIR", tmp, 1);
	struct dirent **ents = NULL;
	int nents = scandir(argv[2], &ents, NULL, alphasort), files = 0;
	CHECK(nents >= 0);
	for (int k = 0; k < nents; k++) {
		const char *name = ents[k]->d_name;
		size_t len = strlen(name);
		if (len >= 6 && !strcmp(name + len - 5, ".attn")) {
			test_file(argv[2], name);
			files++;
		}
		free(ents[k]);
	}
	free(ents);
	CHECK(files > 0);
	int covered = 0, skipped = 0;
	printf("%s: %-34s %5s %10s%s\n", mode_names[mode], "block", "lines", "max err",
	       mode == MODE_CPU ? "   max err f64" : "");
	for (int k = 0; k < nblocks; k++) {
		covered += blocks[k].lines > 0;
		skipped += blocks[k].skipped;
		if (mode == MODE_CPU)
			printf("%s: %-34s %5d %10.2e %13.2e\n", mode_names[mode], blocks[k].name,
			       blocks[k].lines, blocks[k].err[0], blocks[k].err[1]);
		else
			printf("%s: %-34s %5d %10.2e\n", mode_names[mode], blocks[k].name,
			       blocks[k].lines, blocks[k].err[0]);
	}
	printf("%s: %d result lines; %d of %d blocks in %d files covered, %d skipped\n",
	       mode_names[mode], nlines, covered, nblocks_seen, files, skipped);
	CHECK(covered + skipped == nblocks_seen);
	printf("%s: seconds spent: %.1f building C, %.1f in the %s, %.1f running C\n",
	       mode_names[mode], t_build, t_ref, mode == MODE_REWRITE ? "interpreter" : "reference",
	       t_c);
	return tu_report(mode_names[mode]);
}
