/*
** bench/bench.c: the C benchmark of attnc's GPU kernels (issue 4). A plain
** C11 program linked with attnc-generated GPU interfaces (gen/NAME.c, which
** launch through libattnrt) and timed with the CUDA driver API itself: one
** cuEvent pair per launch on a stream of our own, warm-up launches first
** (a count and a minimum time), then the median, minimum and 90th
** percentile of the timed launches.
**
**   bench [-v full,causal] [-D 128,64] [-N 2048,8192] [-B B | -t TOKENS] [-H 16]
**         [-r REPS] [-w WARMUP] [--warmup-ms T] [--device I] [--json FILE]
**         [--raw FILE] [--bm BM] [--list] [--selftest]
**
** Inputs are random bf16 normals (never zero), one set of Q, K, V (and the
** variant's extra input) and O per rotation slot, in enough slots that one
** cycle over them touches more than twice the L2 (cuDeviceGetAttribute
** CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE): consecutive launches read data the
** previous ones did not leave in L2, as in real use. FLOPs are
** 4 * B * H * N * N * D times the fraction of (query, key) pairs the mask
** keeps, counted exactly on the host from the masks of bench/attn (the
** same definitions as bench/anchors.py's mask_mods). A second count,
** tflops_tiles, is the work left after tile skipping: 4 * H * D times the
** (query, key) pairs of every CTA tile the kernel computes, a tile being BM
** query rows by 64 keys (from multiples of BM and 64, clipped to N x N),
** computed in full when the mask keeps any pair in it and skipped otherwise.
**
** The kernels linked in come from bin/bench_kernels.h, which build-bench.sh
** writes: the generated headers and BENCH_KERNELS(X), one X(name, BM) each,
** BM being the kernel's query rows per CTA as its launcher's grid says
** (gen/NAME.c: `(qext + BM - 1) / BM`; 128 where absent; --bm overrides). A
** variant V at head dim D runs the kernel V_dD (bench/prepare.sh's names),
** else a kernel named V. Every CUDA and attnrt call is checked; a failure
** prints the driver's or the runtime's message and exits 1.
*/
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <attnrt.h>
#include <cuda.h>

#include "bench_kernels.h"

/* The generated NAME_launch_generic: tensors in declaration order, NULL
** strides (contiguous), dims and params in declaration order. */
typedef int (*LaunchFn)(void *const *ptrs, const int64_t *const *strides, const long *dims,
			const double *params, void *stream);

typedef struct Kernel {
	const char *name;
	LaunchFn launch;
	long bm; /* query rows per CTA tile, from the launcher's grid */
	long bn; /* keys per tile, from the launcher's tile comment */
} Kernel;

#define BENCH_ENTRY(n, bm, bn) {#n, n##_launch_generic, bm, bn},
static const Kernel kernels[] = {BENCH_KERNELS(BENCH_ENTRY)};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

enum Mask { M_FULL, M_CAUSAL, M_SLIDING, M_PREFIX, M_DOCUMENT };
enum Extra { X_NONE, X_SLOPE, X_DOC };

/* A variant of bench/attn: its mask, the input between V and O, params. */
typedef struct Family {
	const char *name;
	enum Mask mask;
	long w;           /* window (sliding), prefix (prefix LM), document length */
	enum Extra extra; /* X_SLOPE: slope[H] f32; X_DOC: doc[B, N] i32 */
	double cap;       /* soft-capping param after scale, 0: none */
} Family;

static const Family families[] = {
    {"full", M_FULL, 0, X_NONE, 0},
    {"causal", M_CAUSAL, 0, X_NONE, 0},
    {"sliding1024", M_SLIDING, 1024, X_NONE, 0},
    {"prefixlm1024", M_PREFIX, 1024, X_NONE, 0},
    {"document1024", M_DOCUMENT, 1024, X_DOC, 0},
    {"alibi", M_FULL, 0, X_SLOPE, 0},
    {"alibi_causal", M_CAUSAL, 0, X_SLOPE, 0},
    {"softcap30", M_FULL, 0, X_NONE, 30.0},
};
#define NFAMILIES (sizeof families / sizeof families[0])

#define MAXLIST 32

typedef struct Options {
	const char *variants[MAXLIST];
	long ds[MAXLIST], ns[MAXLIST];
	int nvariants, nds, nns;
	long batch, heads, tokens;
	long bm; /* --bm: query rows per CTA for every kernel; 0: each its own */
	int reps, warmup, device;
	double warmup_ms;
	const char *json, *raw;
	int list, selftest;
} Options;

/* One measured configuration, kept for the table at the end. */
typedef struct Result {
	const char *kernel;
	long B, H, N, D, bm;
	double kept, median, min, p90, tflops, set_mib;
	size_t nsets;
	double tiles, tflops_tiles; /* the computed tiles' fraction and TFLOP/s */
} Result;

/* Every failure ends here: one line on stderr, exit status 1. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* A failed driver call, named by its source text and the driver's words. */
static void cu_check(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return;
	const char *name = NULL, *str = NULL;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = "CUDA error";
	if (cuGetErrorString(r, &str) != CUDA_SUCCESS)
		str = "no description";
	die("%s: %s (%d: %s)", what, name, (int)r, str);
}
#define CU(call) cu_check((call), #call)

/* A failed runtime call: attnrt_last_error() says why, in one line. */
static void rt_check(int rc, const char *what)
{
	if (rc != ATTNRT_OK)
		die("%s: %s (%s)", what, attnrt_last_error(), attnrt_error_name(rc));
}

/* The benchmark's inputs need only be random and reproducible: xorshift64. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void)
{
	uint64_t x = rng_state;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return rng_state = x;
}

/* bf16 by round-to-nearest-even, the way torch rounds randn to bf16. */
static uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7FFF + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* 4096 bf16 standard normals, none zero, so filling gigabytes costs one
** table load per element rather than a log and a cosine. */
static uint16_t normal_table[4096];
static void init_normal_table(void)
{
	for (size_t i = 0; i < 4096;) {
		double u1 = ((rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
		double u2 = ((rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
		uint16_t h = to_bf16((float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2)));
		if ((h & 0x7FFF) != 0)
			normal_table[i++] = h;
	}
}

/* Fresh random bf16 values for one tensor: five 12-bit table indices per
** 64-bit draw. */
static void fill_bf16(uint16_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint64_t r = rng_next();
		for (int k = 0; k < 5 && i < n; k++, r >>= 12)
			p[i++] = normal_table[r & 4095];
	}
}

/* The variant behind a kernel name: "causal_d64" and "causal" are causal. */
static const Family *family_of(const char *kernel)
{
	size_t len = strlen(kernel);
	const char *u = strrchr(kernel, '_');
	if (u && u[1] == 'd' && u[2] && strspn(u + 2, "0123456789") == strlen(u + 2))
		len = (size_t)(u - kernel);
	for (size_t f = 0; f < NFAMILIES; f++)
		if (strlen(families[f].name) == len && !strncmp(families[f].name, kernel, len))
			return &families[f];
	return NULL;
}

/* The kernel a variant runs at head dim d: V_dD first (prepare.sh compiles
** every variant for D = 128 and 64), else V itself (its D is checked by the
** generated launcher). */
static const Kernel *find_kernel(const char *variant, long d)
{
	char name[256];
	snprintf(name, sizeof name, "%s_d%ld", variant, d);
	for (size_t k = 0; k < NKERNELS; k++)
		if (!strcmp(kernels[k].name, name))
			return &kernels[k];
	for (size_t k = 0; k < NKERNELS; k++)
		if (!strcmp(kernels[k].name, variant))
			return &kernels[k];
	return NULL;
}

/* The where clause of the variant at (query i, key j), as bench/attn writes
** it and anchors.py's mask_mod does; doc holds the row's document ids. */
static int keep(const Family *f, long i, long j, const int32_t *doc)
{
	switch (f->mask) {
	case M_FULL: return 1;
	case M_CAUSAL: return j <= i;
	case M_SLIDING: return j <= i && i - j < f->w;
	case M_PREFIX: return j < f->w || j <= i;
	case M_DOCUMENT: return doc[i] == doc[j];
	}
	return 0;
}

/* The (query, key) pairs of one (batch, head) that the mask keeps, in O(n):
** each row's count in closed form, documents by their sizes. Exact, so the
** FLOP count is the work the kernel must do, not an approximation.
** --selftest checks it against keep() pair by pair. */
static int64_t kept_pairs(const Family *f, long n, const int32_t *doc)
{
	int64_t kept = 0;
	if (f->mask == M_DOCUMENT) {
		int64_t *size = calloc((size_t)n, sizeof *size);
		if (!size)
			die("out of host memory");
		for (long i = 0; i < n; i++) {
			if (doc[i] < 0 || doc[i] >= n)
				die("document id %d out of range", (int)doc[i]);
			size[doc[i]]++;
		}
		for (long id = 0; id < n; id++)
			kept += size[id] * size[id];
		free(size);
		return kept;
	}
	for (long i = 0; i < n; i++) {
		long row = n;
		if (f->mask == M_CAUSAL)
			row = i + 1;
		else if (f->mask == M_SLIDING)
			row = i + 1 < f->w ? i + 1 : f->w;
		else if (f->mask == M_PREFIX)
			row = i + 1 > f->w ? i + 1 : (f->w < n ? f->w : n);
		kept += row;
	}
	return kept;
}

/* Whether the mask keeps any (i, j) with r0 <= i <= r1 and c0 <= j <= c1:
** O(1) from the mask's shape, but for documents, whose ids may be anything,
** O(tile): the keys' ids are marked with this tile's stamp in mark (one
** entry per id, ids in [0, n)), then the rows' ids are looked up. */
static int tile_any(const Family *f, long r0, long r1, long c0, long c1, const int32_t *doc,
		    long *mark, long stamp)
{
	switch (f->mask) {
	case M_FULL: return 1;
	case M_CAUSAL: return c0 <= r1;
	/* i - j takes every value from r0 - c1 to r1 - c0 */
	case M_SLIDING: return c0 <= r1 && r0 - c1 < f->w;
	case M_PREFIX: return c0 < f->w || c0 <= r1;
	case M_DOCUMENT:
		for (long j = c0; j <= c1; j++)
			mark[doc[j]] = stamp;
		for (long i = r0; i <= r1; i++)
			if (mark[doc[i]] == stamp)
				return 1;
		return 0;
	}
	return 0;
}

/* The (query, key) pairs of one (batch, head) in the CTA tiles the kernel
** computes: tiles of bm rows by bn keys from (0, 0), clipped to
** n x n, each counted in full when the mask keeps any of its pairs (the
** others are skipped). --selftest checks it against keep() tile by tile. */
static int64_t tile_pairs(const Family *f, long n, long bm, long bn, const int32_t *doc)
{
	long *mark = NULL;
	if (f->mask == M_DOCUMENT) {
		mark = malloc((size_t)n * sizeof *mark);
		if (!mark)
			die("out of host memory");
		for (long i = 0; i < n; i++) {
			if (doc[i] < 0 || doc[i] >= n)
				die("document id %d out of range", (int)doc[i]);
			mark[i] = -1;
		}
	}
	int64_t pairs = 0;
	long stamp = 0;
	for (long r0 = 0; r0 < n; r0 += bm) {
		long r1 = (r0 + bm < n ? r0 + bm : n) - 1;
		for (long c0 = 0; c0 < n; c0 += bn) {
			long c1 = (c0 + bn < n ? c0 + bn : n) - 1;
			if (tile_any(f, r0, r1, c0, c1, doc, mark, stamp++))
				pairs += (int64_t)(r1 - r0 + 1) * (int64_t)(c1 - c0 + 1);
		}
	}
	free(mark);
	return pairs;
}

/* tile_pairs by keep() itself: every pair of every tile until one is kept. */
static int64_t tile_pairs_brute(const Family *f, long n, long bm, long bn, const int32_t *doc)
{
	int64_t pairs = 0;
	for (long r0 = 0; r0 < n; r0 += bm) {
		long r1 = (r0 + bm < n ? r0 + bm : n) - 1;
		for (long c0 = 0; c0 < n; c0 += bn) {
			long c1 = (c0 + bn < n ? c0 + bn : n) - 1;
			int any = 0;
			for (long i = r0; i <= r1 && !any; i++)
				for (long j = c0; j <= c1 && !any; j++)
					any = keep(f, i, j, doc);
			if (any)
				pairs += (int64_t)(r1 - r0 + 1) * (int64_t)(c1 - c0 + 1);
		}
	}
	return pairs;
}

/* Document ids of one batch row as anchors.py makes them: position / W. */
static void fill_doc(int32_t *doc, long n, long w)
{
	for (long i = 0; i < n; i++)
		doc[i] = (int32_t)(i / w);
}

/* Checks kept_pairs against the masks pair by pair and tile_pairs tile by
** tile (BM 64 and 128) on awkward lengths, and prints the fractions at the
** benchmark's lengths; needs no GPU. */
static int selftest(void)
{
	static const long lens[] = {1, 2, 63, 64, 65, 1000, 1023, 1024, 1025, 2047, 2048, 3001};
	static const long bms[] = {64, 128, 128}, bns[] = {64, 64, 128};
	int bad = 0;
	for (size_t f = 0; f < NFAMILIES; f++) {
		const Family *fam = &families[f];
		for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
			long n = lens[l];
			int32_t *doc = malloc((size_t)n * sizeof *doc);
			if (!doc)
				die("out of host memory");
			fill_doc(doc, n, fam->w > 0 ? fam->w : 1);
			int64_t brute = 0;
			for (long i = 0; i < n; i++)
				for (long j = 0; j < n; j++)
					brute += keep(fam, i, j, doc);
			int64_t fast = kept_pairs(fam, n, doc);
			if (brute != fast) {
				printf("selftest %s N=%ld: %lld pairs by the mask, %lld counted\n",
				       fam->name, n, (long long)brute, (long long)fast);
				bad = 1;
			}
			for (size_t b = 0; b < sizeof bms / sizeof bms[0]; b++) {
				int64_t tb = tile_pairs_brute(fam, n, bms[b], bns[b], doc);
				int64_t tf = tile_pairs(fam, n, bms[b], bns[b], doc);
				if (tb != tf) {
					printf(
					    "selftest %s N=%ld BM=%ld: %lld pairs in tiles by the "
					    "mask, %lld counted\n",
					    fam->name, n, bms[b], (long long)tb, (long long)tf);
					bad = 1;
				}
			}
			free(doc);
		}
		for (long n = 2048; n <= 8192; n *= 4) {
			int32_t *doc = malloc((size_t)n * sizeof *doc);
			if (!doc)
				die("out of host memory");
			fill_doc(doc, n, fam->w > 0 ? fam->w : 1);
			double nn = (double)n * (double)n;
			printf("selftest %-13s N=%ld kept %.6f  tiles %.6f (128x128) %.6f (128x64) "
			       "%.6f (64x64)\n",
			       fam->name, n, (double)kept_pairs(fam, n, doc) / nn,
			       (double)tile_pairs(fam, n, 128, 128, doc) / nn,
			       (double)tile_pairs(fam, n, 128, 64, doc) / nn,
			       (double)tile_pairs(fam, n, 64, 64, doc) / nn);
			free(doc);
		}
	}
	printf(bad ? "selftest FAIL\n" : "selftest PASS\n");
	return bad;
}

/* qsort's order for the timings. */
static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* One tensor of a rotation slot: its place in the slot and how it is filled. */
typedef struct Tensor {
	const char *name;
	size_t bytes, offset;
	int kind; /* 0: bf16 input, 1: slope, 2: doc, 3: output */
} Tensor;

/* The device memory of the rotation: nsets slots of slot bytes from pool,
** each holding the tensors t in the launcher's order (inputs, then O). */
typedef struct Rotation {
	CUdeviceptr pool;
	size_t slot, nsets;
	Tensor t[5];
	int nt;
} Rotation;

/* Device memory left, so the rotation never asks for more than fits. */
static size_t free_device_bytes(void)
{
	size_t free_b = 0, total_b = 0;
	CU(cuMemGetInfo(&free_b, &total_b));
	return free_b;
}

/* Lays out a slot for the variant's tensors, takes enough slots that one
** cycle over them touches more than 2 x L2 (at least two), and fills them:
** fresh random bf16 for every Q, K, V of every slot, the variant's slope or
** document ids, and O poisoned with NaN (all-ones bf16), so a launch that
** writes nothing shows in check_output. */
static void rotation_create(Rotation *rot, const Family *fam, long B, long H, long N, long D,
			    size_t l2, const int32_t *doc, const float *slope, const char *what)
{
	size_t qkv = (size_t)B * (size_t)H * (size_t)N * (size_t)D;
	if (qkv / (size_t)D / (size_t)N / (size_t)H != (size_t)B || qkv > ((size_t)1 << 40))
		die("%s: too large", what);
	int nt = 0;
	rot->t[nt++] = (Tensor){"Q", qkv * 2, 0, 0};
	rot->t[nt++] = (Tensor){"K", qkv * 2, 0, 0};
	rot->t[nt++] = (Tensor){"V", qkv * 2, 0, 0};
	if (fam->extra == X_SLOPE)
		rot->t[nt++] = (Tensor){"slope", (size_t)H * 4, 0, 1};
	else if (fam->extra == X_DOC)
		rot->t[nt++] = (Tensor){"doc", (size_t)B * (size_t)N * 4, 0, 2};
	rot->t[nt++] = (Tensor){"O", qkv * 2, 0, 3};
	rot->nt = nt;
	size_t slot = 0;
	for (int i = 0; i < nt; i++) {
		rot->t[i].offset = slot;
		slot += (rot->t[i].bytes + 255) & ~(size_t)255;
	}
	rot->slot = slot;

	size_t nsets = 2 * l2 / slot + 1, fit = free_device_bytes() / 10 * 9 / slot;
	if (nsets < 2)
		nsets = 2;
	if (nsets > fit) {
		if (fit < 1 || fit * slot <= 2 * l2)
			die("%s: %zu slots of %.1f MiB (> 2 x L2) do not fit in device memory",
			    what, nsets, (double)slot / 1048576.0);
		fprintf(stderr, "bench: %s: only %zu rotation slots of %.1f MiB fit\n", what, fit,
			(double)slot / 1048576.0);
		nsets = fit;
	}
	rot->nsets = nsets;
	CU(cuMemAlloc(&rot->pool, nsets * slot));

	uint16_t *host = malloc(qkv * 2);
	if (!host)
		die("out of host memory");
	for (size_t s = 0; s < nsets; s++)
		for (int i = 0; i < nt; i++) {
			const Tensor *t = &rot->t[i];
			CUdeviceptr p = rot->pool + s * slot + t->offset;
			if (t->kind == 0) {
				fill_bf16(host, t->bytes / 2);
				CU(cuMemcpyHtoD(p, host, t->bytes));
			} else if (t->kind == 1) {
				CU(cuMemcpyHtoD(p, slope, t->bytes));
			} else if (t->kind == 2) {
				CU(cuMemcpyHtoD(p, doc, t->bytes));
			} else {
				CU(cuMemsetD8(p, 0xFF, t->bytes));
			}
		}
	free(host);
}

/* One launch on slot s's tensors; a refused launch names the runtime's reason. */
static void launch_slot(const Kernel *k, const Rotation *rot, size_t s, const long *dims,
			const double *params, CUstream stream, const char *what)
{
	void *ptrs[5];
	for (int i = 0; i < rot->nt; i++)
		ptrs[i] = (void *)(uintptr_t)(rot->pool + s * rot->slot + rot->t[i].offset);
	rt_check(k->launch(ptrs, NULL, dims, params, (void *)stream), what);
}

/* Warm-up launches (at least o->warmup of them and o->warmup_ms of GPU
** time, so the clocks are up whatever the kernel's length), then o->reps
** launches each between its own pair of events, all queued without waiting
** so the GPU runs them back to back; ms gets each launch's time, *last the
** slot of the last one. The launches walk the slots in turn, so each reads
** inputs the previous ones left out of L2. Returns the warm-up's count. */
static size_t time_launches(const Kernel *k, const Rotation *rot, const long *dims,
			    const double *params, const Options *o, CUstream stream,
			    const char *what, float *ms, size_t *last)
{
	/* The first launch loads the module; wait for it so a failure is named.
	** Then batches of 1, 2, 4... launches, each timed, until both minimums
	** are met: a count alone is too short for small kernels, and a time
	** alone sized from one cold launch would be too. */
	launch_slot(k, rot, 0, dims, params, stream, what);
	CU(cuStreamSynchronize(stream));
	CUevent ev0, ev1;
	CU(cuEventCreate(&ev0, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&ev1, CU_EVENT_DEFAULT));
	size_t warmup = 1;
	double total = 0;
	for (size_t n = 1; warmup < (size_t)o->warmup || total < o->warmup_ms; n *= 2) {
		float t = 0;
		CU(cuEventRecord(ev0, stream));
		for (size_t i = 0; i < n; i++, warmup++)
			launch_slot(k, rot, warmup % rot->nsets, dims, params, stream, what);
		CU(cuEventRecord(ev1, stream));
		CU(cuEventSynchronize(ev1));
		CU(cuEventElapsedTime(&t, ev0, ev1));
		total += t;
	}
	CU(cuEventDestroy(ev0));
	CU(cuEventDestroy(ev1));
	int reps = o->reps;
	CUevent *ev = malloc(2 * (size_t)reps * sizeof *ev);
	if (!ev)
		die("out of host memory");
	for (int i = 0; i < 2 * reps; i++)
		CU(cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
	for (int i = 0; i < reps; i++) {
		*last = (warmup + (size_t)i) % rot->nsets;
		CU(cuEventRecord(ev[2 * i], stream));
		launch_slot(k, rot, *last, dims, params, stream, what);
		CU(cuEventRecord(ev[2 * i + 1], stream));
	}
	CU(cuStreamSynchronize(stream));
	for (int i = 0; i < reps; i++)
		CU(cuEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
	for (int i = 0; i < 2 * reps; i++)
		CU(cuEventDestroy(ev[i]));
	free(ev);
	return warmup;
}

/* O of slot s must be finite everywhere (it was NaN before the launches),
** or the times measured something other than attention. */
static void check_output(const Rotation *rot, size_t s, const char *what)
{
	const Tensor *o = &rot->t[rot->nt - 1];
	size_t n = o->bytes / 2, bad = 0;
	uint16_t *host = malloc(o->bytes);
	if (!host)
		die("out of host memory");
	CU(cuMemcpyDtoH(host, rot->pool + s * rot->slot + o->offset, o->bytes));
	for (size_t e = 0; e < n; e++)
		bad += (host[e] & 0x7F80) == 0x7F80;
	free(host);
	if (bad)
		die("%s: %zu of %zu outputs are NaN or infinite", what, bad, n);
}

/* Times one (kernel, B, H, N, D): counts the FLOPs, builds the rotation,
** times the launches, checks the output, prints a line (and a JSON row)
** and fills r for the table. */
static void run_config(const Kernel *k, const Family *fam, long B, long H, long N, long D,
		       const Options *o, CUstream stream, size_t l2, FILE *json, FILE *raw,
		       Result *r)
{
	char what[320];
	snprintf(what, sizeof what, "%s B=%ld H=%ld N=%ld D=%ld", k->name, B, H, N, D);
	int32_t *doc = malloc((size_t)B * (size_t)N * sizeof *doc);
	float *slope = malloc((size_t)H * sizeof *slope);
	float *ms = malloc((size_t)o->reps * sizeof *ms);
	if (!doc || !slope || !ms)
		die("out of host memory");
	for (long b = 0; b < B; b++)
		fill_doc(doc + b * N, N, fam->w > 0 ? fam->w : 1);
	for (long h = 0; h < H; h++) /* anchors.py: exp2(-8 (h + 1) / H) */
		slope[h] = (float)exp2(-8.0 * (double)(h + 1) / (double)H);

	/* Exact FLOPs: the kept pairs of every batch row, times H, times 4 D. */
	int64_t kept = 0;
	for (long b = 0; b < B; b++)
		kept += kept_pairs(fam, N, doc + b * N);
	double kept_frac = (double)kept / ((double)B * (double)N * (double)N);
	double flops = 4.0 * (double)H * (double)D * (double)kept;
	/* The work left after tile skipping: the pairs of the computed tiles. */
	long bm = o->bm ? o->bm : k->bm;
	int64_t tiled = 0;
	for (long b = 0; b < B; b++)
		tiled += tile_pairs(fam, N, bm, k->bn, doc + b * N);
	double tile_frac = (double)tiled / ((double)B * (double)N * (double)N);
	double tile_flops = 4.0 * (double)H * (double)D * (double)tiled;

	Rotation rot;
	rotation_create(&rot, fam, B, H, N, D, l2, doc, slope, what);
	long dims[4] = {B, H, N, D};
	double params[2] = {1.0 / sqrt((double)D), fam->cap};
	size_t last = 0;
	size_t warmup = time_launches(k, &rot, dims, params, o, stream, what, ms, &last);
	check_output(&rot, last, what);
	CU(cuMemFree(rot.pool));

	if (raw) {
		fprintf(raw, "%s B=%ld H=%ld N=%ld D=%ld slots=%zu ms:", k->name, B, H, N, D,
			rot.nsets);
		for (int i = 0; i < o->reps; i++)
			fprintf(raw, " %.4f", (double)ms[i]);
		fputc('\n', raw);
		fflush(raw);
	}
	qsort(ms, (size_t)o->reps, sizeof *ms, cmp_float);
	size_t n = (size_t)o->reps, p90 = (size_t)ceil(0.9 * (double)n);
	double median = n % 2 ? ms[n / 2] : 0.5 * ((double)ms[n / 2 - 1] + (double)ms[n / 2]);
	*r = (Result){.kernel = k->name,
		      .B = B,
		      .H = H,
		      .N = N,
		      .D = D,
		      .kept = kept_frac,
		      .median = median,
		      .min = ms[0],
		      .p90 = ms[p90 - 1],
		      .tflops = flops / median / 1e9,
		      .set_mib = (double)rot.slot / 1048576.0,
		      .nsets = rot.nsets,
		      .bm = bm,
		      .tiles = tile_frac,
		      .tflops_tiles = tile_flops / median / 1e9};
	printf("%-18s B=%-3ld H=%-3ld N=%-6ld D=%-4ld kept %.4f  slots %zu x %.1f MiB  "
	       "median %.4f ms  min %.4f  p90 %.4f  %.1f TFLOP/s  (warm-up %zu)  "
	       "tiles %.4f bm %ld tflops_tiles %.1f\n",
	       k->name, B, H, N, D, kept_frac, r->nsets, r->set_mib, r->median, r->min, r->p90,
	       r->tflops, warmup, tile_frac, bm, r->tflops_tiles);
	fflush(stdout);
	if (json) {
		fprintf(
		    json,
		    "{\"sys\": \"attnc_c\", \"variant\": \"%s\", \"kernel\": \"%s\", \"B\": %ld, "
		    "\"H\": %ld, \"N\": %ld, \"D\": %ld, \"kept\": %.8f, \"flop\": %.6e, "
		    "\"ms\": %.6f, \"min_ms\": %.6f, \"p90_ms\": %.6f, \"tflops\": %.3f, "
		    "\"reps\": %d, \"warmup\": %zu, \"slots\": %zu, "
		    "\"slot_mib\": %.3f, \"bm\": %ld, \"tile_frac\": %.8f, "
		    "\"tile_flop\": %.6e, \"tflops_tiles\": %.3f}\n",
		    fam->name, k->name, B, H, N, D, kept_frac, flops, r->median, r->min, r->p90,
		    r->tflops, o->reps, warmup, r->nsets, r->set_mib, bm, tile_frac, tile_flops,
		    r->tflops_tiles);
		fflush(json);
	}
	free(ms);
	free(doc);
	free(slope);
}

/* The usage text, for --help and for every command-line error. */
static void usage(FILE *to)
{
	fprintf(to,
		"usage: bench [options]\n"
		"  -v, --variant LIST  variants, comma-separated (default full,causal); V at\n"
		"                      head dim D runs the kernel V_dD, else V\n"
		"  -D, --headdim LIST  head dims (default 128,64)\n"
		"  -N, --seqlen LIST   sequence lengths, queries = keys (default 2048,8192)\n"
		"  -B, --batch B       batch (default: tokens / N, at least 1)\n"
		"  -t, --tokens T      B * N when -B is not given (default 32768)\n"
		"  -H, --heads H       heads (default 16)\n"
		"  -r, --reps R        timed launches, one event pair each (default 100)\n"
		"  -w, --warmup W      untimed launches first (default 20)\n"
		"  --warmup-ms T       and at least T ms of them (default 100)\n"
		"  --device I          CUDA device ordinal (default 0)\n"
		"  --json FILE         also write one JSON object per configuration\n"
		"  --raw FILE          and every launch's time, in launch order\n"
		"  --bm BM             query rows per CTA tile for tflops_tiles, the work\n"
		"                      left after tile skipping (tiles of BM x 64; default:\n"
		"                      each kernel's, which build-bench.sh reads from its\n"
		"                      gen/NAME.c, else 128)\n"
		"  --list              list the kernels linked in (with BM) and exit\n"
		"  --selftest          check the mask pair and tile counts on the host (no GPU)\n");
}

/* An integer option value of at least min, or a usage error. */
static long parse_long(const char *opt, const char *s, long min)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < min || v > (1L << 30)) {
		fprintf(stderr, "bench: %s: '%s' is not an integer >= %ld\n", opt, s, min);
		usage(stderr);
		exit(2);
	}
	return v;
}

/* Splits a comma-separated list into out (strings, or longs when nums). */
static int split(const char *opt, char *s, const char **strs, long *nums)
{
	int n = 0;
	for (char *p = strtok(s, ","); p; p = strtok(NULL, ",")) {
		if (n == MAXLIST) {
			fprintf(stderr, "bench: %s: more than %d values\n", opt, MAXLIST);
			exit(2);
		}
		if (nums)
			nums[n++] = parse_long(opt, p, 1);
		else
			strs[n++] = p;
	}
	if (n == 0) {
		fprintf(stderr, "bench: %s: empty list\n", opt);
		exit(2);
	}
	return n;
}

/* Options as "-N 2048", "--seqlen 2048" or "--seqlen=2048". */
static void parse_args(int argc, char **argv, Options *o)
{
	static char def_variants[] = "full,causal";
	*o = (Options){
	    .batch = 0, .heads = 16, .tokens = 32768, .reps = 100, .warmup = 20, .warmup_ms = 100};
	o->nvariants = split("--variant", def_variants, o->variants, NULL);
	o->ds[0] = 128, o->ds[1] = 64, o->nds = 2;
	o->ns[0] = 2048, o->ns[1] = 8192, o->nns = 2;
	for (int a = 1; a < argc; a++) {
		char *arg = argv[a], *val = NULL, *eq = NULL;
		if (!strncmp(arg, "--", 2) && (eq = strchr(arg, '=')) != NULL)
			*eq = 0, val = eq + 1;
#define IS(s, l) (!strcmp(arg, s) || !strcmp(arg, l))
		if (IS("-h", "--help")) {
			usage(stdout);
			exit(0);
		} else if (IS("--list", "--list")) {
			o->list = 1;
			continue;
		} else if (IS("--selftest", "--selftest")) {
			o->selftest = 1;
			continue;
		}
		if (!val) {
			if (a + 1 >= argc) {
				fprintf(stderr, "bench: %s needs a value\n", arg);
				usage(stderr);
				exit(2);
			}
			val = argv[++a];
		}
		if (IS("-v", "--variant"))
			o->nvariants = split(arg, val, o->variants, NULL);
		else if (IS("-D", "--headdim"))
			o->nds = split(arg, val, NULL, o->ds);
		else if (IS("-N", "--seqlen"))
			o->nns = split(arg, val, NULL, o->ns);
		else if (IS("-B", "--batch"))
			o->batch = parse_long(arg, val, 1);
		else if (IS("-t", "--tokens"))
			o->tokens = parse_long(arg, val, 1);
		else if (IS("-H", "--heads"))
			o->heads = parse_long(arg, val, 1);
		else if (IS("-r", "--reps"))
			o->reps = (int)parse_long(arg, val, 1);
		else if (IS("-w", "--warmup"))
			o->warmup = (int)parse_long(arg, val, 1);
		else if (IS("--warmup-ms", "--warmup-ms"))
			o->warmup_ms = (double)parse_long(arg, val, 0);
		else if (IS("--device", "--device"))
			o->device = (int)parse_long(arg, val, 0);
		else if (IS("--json", "--json"))
			o->json = val;
		else if (IS("--raw", "--raw"))
			o->raw = val;
		else if (IS("--bm", "--bm"))
			o->bm = parse_long(arg, val, 1);
		else {
			fprintf(stderr, "bench: unknown option %s\n", arg);
			usage(stderr);
			exit(2);
		}
#undef IS
	}
}

/* Parses, makes device I's primary context current (libattnrt then uses it),
** runs every (variant, D, N) in that order and prints the table. */
int main(int argc, char **argv)
{
	Options o;
	parse_args(argc, argv, &o);
	if (o.selftest)
		return selftest();
	if (o.list) {
		for (size_t k = 0; k < NKERNELS; k++) {
			const Family *f = family_of(kernels[k].name);
			printf("%s (%s) bm %ld bn %ld\n", kernels[k].name,
			       f ? f->name : "unknown variant", o.bm ? o.bm : kernels[k].bm,
			       kernels[k].bn);
		}
		return 0;
	}
	/* Every name resolves before the GPU is touched. */
	const Kernel *plan_k[MAXLIST][MAXLIST];
	for (int v = 0; v < o.nvariants; v++)
		for (int d = 0; d < o.nds; d++) {
			plan_k[v][d] = find_kernel(o.variants[v], o.ds[d]);
			if (!plan_k[v][d])
				die("no kernel %s_d%ld or %s linked in (bench --list shows them)",
				    o.variants[v], o.ds[d], o.variants[v]);
			if (!family_of(plan_k[v][d]->name))
				die("%s: unknown variant: bench knows the masks and inputs of "
				    "bench/attn's variants only",
				    plan_k[v][d]->name);
		}

	CUdevice dev;
	CUcontext ctx;
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, o.device));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	rt_check(attnrt_init(), "attnrt_init");
	char name[256];
	int l2 = 0, sms = 0, major = 0, minor = 0, driver = 0;
	CU(cuDeviceGetName(name, sizeof name, dev));
	CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
	CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	CU(cuDriverGetVersion(&driver));
	if (l2 <= 0)
		die("the device reports no L2 size");
	printf("device %d: %s, sm_%d%d, %d SMs, L2 %.1f MiB, driver %d.%d; warm-up %d launches "
	       "and %.0f ms, reps %d\n",
	       o.device, name, major, minor, sms, l2 / 1048576.0, driver / 1000, driver % 1000 / 10,
	       o.warmup, o.warmup_ms, o.reps);
	fflush(stdout);

	FILE *json = NULL, *raw = NULL;
	if (o.json && !(json = fopen(o.json, "w")))
		die("cannot write %s", o.json);
	if (o.raw && !(raw = fopen(o.raw, "w")))
		die("cannot write %s", o.raw);
	CUstream stream;
	CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	init_normal_table();
	Result *res = malloc((size_t)(o.nvariants * o.nds * o.nns) * sizeof *res);
	if (!res)
		die("out of host memory");
	int nres = 0;
	for (int d = 0; d < o.nds; d++)
		for (int n = 0; n < o.nns; n++)
			for (int v = 0; v < o.nvariants; v++) {
				long N = o.ns[n];
				long B = o.batch ? o.batch : (o.tokens / N > 0 ? o.tokens / N : 1);
				const Kernel *k = plan_k[v][d];
				run_config(k, family_of(k->name), B, o.heads, N, o.ds[d], &o,
					   stream, (size_t)l2, json, raw, &res[nres++]);
			}
	CU(cuStreamDestroy(stream));
	if (json && fclose(json) != 0)
		die("cannot write %s", o.json);
	if (raw && fclose(raw) != 0)
		die("cannot write %s", o.raw);

	printf("\n%-18s %4s %6s %4s %4s %7s %6s %10s %10s %10s %8s %4s %7s %12s\n", "kernel", "D",
	       "N", "B", "H", "kept", "slots", "median_ms", "min_ms", "p90_ms", "TFLOP/s", "bm",
	       "tiles", "tflops_tiles");
	for (int i = 0; i < nres; i++) {
		const Result *r = &res[i];
		printf("%-18s %4ld %6ld %4ld %4ld %7.4f %6zu %10.4f %10.4f %10.4f %8.1f %4ld %7.4f "
		       "%12.1f\n",
		       r->kernel, r->D, r->N, r->B, r->H, r->kept, r->nsets, r->median, r->min,
		       r->p90, r->tflops, r->bm, r->tiles, r->tflops_tiles);
	}
	free(res);
	CU(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
