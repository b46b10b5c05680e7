/*
** test/unit/naive_examples.c: every attention block of every example file,
** compiled by the front end and run by the reference executor in f64, must
** match a naive f64 implementation written directly from the variant's
** textbook formula (the equations in each example's header comment), not
** from the cascade IR: plain loops over (b, h, i) that compute the scores,
** apply the variant's mask and score modification, and normalise.
**
** One generic softmax function takes small per-variant hooks (visibility,
** score modification, the K/V head of a query head, a sink logit, the decode
** kv_len); sigmoid attention and differential attention have their own
** functions. Each block runs on a few shapes whose runtime dims all differ,
** causal blocks also with N = 1; i32 inputs are chosen to exercise the masks
** (kv_len 0 and full, prefix_len 0 and full, several documents per row).
** A block without an entry in `specs` fails the test, so every new example
** needs a reference here.
**
** argv[1]: the examples directory.
*/
#include "host_testutil.h"

#include <dirent.h>

#include "cli/inputs.h"
#include "cli/interp.h"
#include "lowering/mlir/refexec.h"
#include "lang/front.h"

/* Relative tolerance: max |a - b| / max(1, |b|) over every output element. */
#define NAIVE_TOL 1e-10
/* Largest number of runtime dims in a shape string. */
#define MAX_NAMED 8

/* ---- the naive implementations ------------------------------------------- */

typedef struct Naive Naive;
/* Is key j visible to query i of sequence b? */
typedef int (*VisibleFn)(const Naive *a, long b, long i, long j);
/* The score of (b, h, i, j) from s = scale * q_i . k_j. */
typedef double (*ScoreFn)(const Naive *a, long b, long h, long i, long j, double s);

/*
** Sizes, data and hooks of one evaluation. Layouts are the examples' own,
** row-major: Q[B, H, N, D], K[B, HKV, M, D], V[B, HKV, M, DV],
** O[B, H, N, DV], L[B, H, N]. Decode (q[B, H, D]) is N = 1; MQA
** (K[B, M, D]) is HKV = 1; query head h reads K/V head h / (H / HKV).
*/
struct Naive {
	long B, H, HKV, N, M, D, DV, W;
	long VW; /* the width of a row of V: DV, or more when V is the first DV
		    columns of a wider tensor (absorbed MLA reads them from KV) */
	double scale, cap, b0;
	long LW, LG; /* Longformer's window on either side and global tokens */
	double eps;  /* threshold.attn's least probability kept */
	const double *Q, *K, *V, *Q2, *K2;
	const double *slope, *bias, *sink, *lam, *kv_len, *prefix_len, *doc, *bucket_bias;
	const double *logit_scale; /* cosine.attn's temperature per head */
	/* a paged cache (paged_decode.attn): K[NP, P, HKV, D], key j of sequence
	** b in page block[b, j / P] at slot j % P; NULL: contiguous; heads_first:
	** the pages hold each head's slots together, K[NP, HKV, P, D]
	** (paged_decode_hnd.attn) */
	const double *block;
	long NP, P, MAXP;
	int heads_first;
	/* neighbourhood attention: tokens are the pixels of T frames of IH x IW
	** (T = 1 for an image), row-major */
	long T, IH, IW;
	/* a packed batch (varlen.attn): TQ query and TK key tokens in all,
	** sequence b's at rows cu_q[b] .. and cu_k[b] .. */
	long TQ, TK;
	const double *cu_q, *cu_k;
	VisibleFn visible;
	ScoreFn score; /* NULL: the score is s */
	double *O, *L; /* L may be NULL */
};

/* The dot product every score starts from. */
static double dot(const double *x, const double *y, long n)
{
	double s = 0;
	for (long d = 0; d < n; d++)
		s += x[d] * y[d];
	return s;
}

/* Row i of query head h (Q or Q2). */
static const double *q_row(const Naive *a, const double *Q, long b, long h, long i)
{
	return Q + ((b * a->H + h) * a->N + i) * a->D;
}

/* Row j of the K/V head that query head h reads (GQA/MQA: h / group size). */
static const double *kv_row(const Naive *a, const double *X, long width, long b, long h, long j)
{
	long hk = h / (a->H / a->HKV);
	if (a->block) {
		long page = (long)a->block[b * a->MAXP + j / a->P];
		if (a->heads_first)
			return X + ((page * a->HKV + hk) * a->P + j % a->P) * width;
		return X + ((page * a->P + j % a->P) * a->HKV + hk) * width;
	}
	if (a->cu_k && !a->cu_q) /* a decode step's packed cache: K[TK, HKV, D] */
		return X + (((long)a->cu_k[b] + j) * a->HKV + hk) * width;
	return X + ((b * a->HKV + hk) * a->M + j) * width;
}

/* Full attention: every key is visible. */
static int vis_all(const Naive *a, long b, long i, long j)
{
	return 1;
}

/* Causal: query i sees keys j <= i. */
static int vis_causal(const Naive *a, long b, long i, long j)
{
	return j <= i;
}

/* Causal aligned bottom-right: query i sits at position i + (M - N). */
static int vis_causal_br(const Naive *a, long b, long i, long j)
{
	return j <= i + (a->M - a->N);
}

/* Sliding window: the W most recent keys, itself included. */
static int vis_window(const Naive *a, long b, long i, long j)
{
	return j <= i && j > i - a->W;
}

/* Longformer: keys within W positions on either side, and the first G
** tokens global (every query sees them, they see every key). */
static int vis_longformer(const Naive *a, long b, long i, long j)
{
	return labs(i - j) <= a->LW || j < a->LG || i < a->LG;
}

/* Prefix-LM: the whole prefix, then causal. */
static int vis_prefix(const Naive *a, long b, long i, long j)
{
	return j < (long)a->prefix_len[b] || j <= i;
}

/* Document mask: same document and causal. */
static int vis_document(const Naive *a, long b, long i, long j)
{
	return a->doc[b * a->N + i] == a->doc[b * a->N + j] && j <= i;
}

/* Decode over a KV cache: the first kv_len[b] slots. */
static int vis_kv_len(const Naive *a, long b, long i, long j)
{
	return j < (long)a->kv_len[b];
}

/* Decode over a packed cache (varlen_decode.attn): sequence b's keys. */
static int vis_cu_k(const Naive *a, long b, long i, long j)
{
	return j < (long)(a->cu_k[b + 1] - a->cu_k[b]);
}

/* Prefill over a paged cache (paged_prefill.attn): the first kv_len[b]
** keys, causal with query i at position kv_len[b] - N + i. */
static int vis_kv_causal(const Naive *a, long b, long i, long j)
{
	return j < (long)a->kv_len[b] && j <= (long)a->kv_len[b] - a->N + i;
}

/* Whether coordinate y of a key lies in the window of radius r around
** coordinate x of the query, on an axis of n positions: the 2r + 1
** positions from NATTEN's start, clamped so that the window stays inside. */
static int in_window(long x, long y, long r, long n)
{
	long s = x - r < 0 ? 0 : x - r;
	if (s > n - 2 * r - 1)
		s = n - 2 * r - 1;
	return y >= s && y <= s + 2 * r;
}

/* 2-D neighbourhood attention, 7 x 7: pixel (i / IW, i % IW). */
static int vis_na2d(const Naive *a, long b, long i, long j)
{
	return in_window(i / a->IW, j / a->IW, 3, a->IH) &&
	       in_window(i % a->IW, j % a->IW, 3, a->IW);
}

/* 3-D neighbourhood attention, 3 x 7 x 7: voxel (frame, row, column). */
static int vis_na3d(const Naive *a, long b, long i, long j)
{
	long f = a->IH * a->IW;
	return in_window(i / f, j / f, 1, a->T) && vis_na2d(a, b, i % f, j % f);
}

/* ALiBi: a per-head linear penalty on the distance j - i. */
static double score_alibi(const Naive *a, long b, long h, long i, long j, double s)
{
	return s + a->slope[h] * (double)(j - i);
}

/* Relative-position bias: an additive bias[h, i, j] shared by the batch. */
static double score_bias(const Naive *a, long b, long h, long i, long j, double s)
{
	return s + a->bias[(h * a->N + i) * a->M + j];
}

/* T5's bucket of the relative position j - i (Raffel et al. 2020; Hugging
** Face's _relative_position_bucket, bidirectional, 32 buckets, max_distance
** 128), written from the paper's code, not from the example. */
static long t5_bucket(long i, long j)
{
	long half = 16, exact = 8, r = j - i, n = r < 0 ? -r : r;
	long base = r > 0 ? half : 0;
	if (n < exact)
		return base + n;
	long large = exact + (long)(log((double)n / exact) / log(128.0 / exact) * (half - exact));
	return base + (large < half - 1 ? large : half - 1);
}

/* T5: a learned scalar per head and bucket of j - i. */
static double score_t5(const Naive *a, long b, long h, long i, long j, double s)
{
	return s + a->bucket_bias[h * 32 + t5_bucket(i, j)];
}

/* Cosine attention (Swin V2): exp(min(logit_scale[h], log 100)) times the
** cosine of q_i and k_j, each norm at least eps (F.normalize). */
static double score_cosine(const Naive *a, long b, long h, long i, long j, double s)
{
	const double *q = q_row(a, a->Q, b, h, i), *k = kv_row(a, a->K, a->D, b, h, j);
	double nq = fmax(sqrt(dot(q, q, a->D)), a->eps), nk = fmax(sqrt(dot(k, k, a->D)), a->eps);
	return exp(fmin(a->logit_scale[h], log(100.0))) * dot(q, k, a->D) / (nq * nk);
}

/* Gaussian-kernel attention: minus the squared distance of q_i and k_j,
** times scale / 2. */
static double score_gaussian(const Naive *a, long b, long h, long i, long j, double s)
{
	const double *q = q_row(a, a->Q, b, h, i), *k = kv_row(a, a->K, a->D, b, h, j);
	double d2 = 0;
	for (long d = 0; d < a->D; d++)
		d2 += (q[d] - k[d]) * (q[d] - k[d]);
	return -0.5 * a->scale * d2;
}

/* Gemma 2 soft-capping: cap * tanh(s / cap). */
static double score_softcap(const Naive *a, long b, long h, long i, long j, double s)
{
	return a->cap * tanh(s / a->cap);
}

/* ALiBi under the soft-cap (softcap_alibi.attn): cap * tanh((s + m_h (j - i)) / cap). */
static double score_softcap_alibi(const Naive *a, long b, long h, long i, long j, double s)
{
	return a->cap * tanh(score_alibi(a, b, h, i, j, s) / a->cap);
}

/* Softmax attention with the log-sum-exp: the textbook loop, with an
** optional sink logit that joins the denominator but has no value. */
static void naive_softmax(const Naive *a)
{
	double *s = malloc((size_t)a->M * sizeof *s), *p = malloc((size_t)a->M * sizeof *p);
	char *vis = malloc((size_t)a->M);
	for (long b = 0; b < a->B; b++)
		for (long h = 0; h < a->H; h++)
			for (long i = 0; i < a->N; i++) {
				const double *q = q_row(a, a->Q, b, h, i);
				double m = -INFINITY, z = 0;
				for (long j = 0; j < a->M; j++) {
					vis[j] = (char)a->visible(a, b, i, j);
					if (!vis[j])
						continue;
					s[j] =
					    a->scale * dot(q, kv_row(a, a->K, a->D, b, h, j), a->D);
					if (a->score)
						s[j] = a->score(a, b, h, i, j, s[j]);
					m = s[j] > m ? s[j] : m;
				}
				if (a->sink && a->sink[h] > m)
					m = a->sink[h];
				for (long j = 0; j < a->M; j++)
					if (vis[j])
						z += p[j] = exp(s[j] - m);
				if (a->sink)
					z += exp(a->sink[h] - m);
				double *o = a->O + ((b * a->H + h) * a->N + i) * a->DV;
				for (long e = 0; e < a->DV; e++) {
					double acc = 0;
					for (long j = 0; j < a->M; j++)
						if (vis[j])
							acc += p[j] *
							       kv_row(a, a->V, a->VW, b, h, j)[e];
					o[e] = z > 0 ? acc / z : 0.0;
				}
				if (a->L)
					a->L[(b * a->H + h) * a->N + i] =
					    z > 0 ? m + log(z) : -INFINITY;
			}
	free(s);
	free(p);
	free(vis);
}

/* Sigmoid attention: an element-wise sigmoid(s + b0), no normaliser. */
static void naive_sigmoid(const Naive *a)
{
	for (long b = 0; b < a->B; b++)
		for (long h = 0; h < a->H; h++)
			for (long i = 0; i < a->N; i++) {
				const double *q = q_row(a, a->Q, b, h, i);
				double *o = a->O + ((b * a->H + h) * a->N + i) * a->DV;
				for (long e = 0; e < a->DV; e++)
					o[e] = 0;
				for (long j = 0; j < a->M; j++) {
					if (!a->visible(a, b, i, j))
						continue;
					double s =
					    a->scale * dot(q, kv_row(a, a->K, a->D, b, h, j), a->D);
					double w = 1.0 / (1.0 + exp(-(s + a->b0)));
					const double *v = kv_row(a, a->V, a->VW, b, h, j);
					for (long e = 0; e < a->DV; e++)
						o[e] += w * v[e];
				}
			}
}

/* Linear attention (Katharopoulos et al. 2020, the quadratic form): the
** weights phi(q_i) . phi(k_j), phi(x) = elu(x) + 1, over the visible keys,
** normalised by their sum. */
static double elu1(double x)
{
	return x > 0 ? x + 1.0 : exp(x);
}

/* A packed ragged batch (varlen.attn): per sequence b of lq queries and
** lk keys, each at its offset, query i sees the keys j <= i + lk - lq
** (causal, aligned bottom-right); rows O[T, H, DV] and L[T, H] packed as q.
** A query that sees no key gives O = 0 and L = -inf. */
static void naive_varlen(const Naive *a)
{
	long G = a->H / a->HKV;
	double *p = malloc((size_t)(a->TK + 1) * sizeof *p);
	for (long b = 0; b < a->B; b++) {
		long q0 = (long)a->cu_q[b], lq = (long)a->cu_q[b + 1] - q0;
		long k0 = (long)a->cu_k[b], lk = (long)a->cu_k[b + 1] - k0;
		for (long h = 0; h < a->H; h++)
			for (long i = 0; i < lq; i++) {
				const double *q = a->Q + ((q0 + i) * a->H + h) * a->D;
				double *o = a->O + ((q0 + i) * a->H + h) * a->DV, mx = -INFINITY,
				       z = 0;
				long n = lk < i + lk - lq + 1 ? lk : i + lk - lq + 1;
				for (long j = 0; j < n; j++) {
					const double *k = a->K + ((k0 + j) * a->HKV + h / G) * a->D;
					p[j] = a->scale * dot(q, k, a->D);
					mx = fmax(mx, p[j]);
				}
				for (long j = 0; j < n; j++)
					z += p[j] = exp(p[j] - mx);
				for (long e = 0; e < a->DV; e++) {
					double acc = 0;
					for (long j = 0; j < n; j++)
						acc +=
						    p[j] / z *
						    a->V[((k0 + j) * a->HKV + h / G) * a->DV + e];
					o[e] = n > 0 ? acc : 0.0;
				}
				a->L[(q0 + i) * a->H + h] = n > 0 ? mx + log(z) : -INFINITY;
			}
	}
	free(p);
}

static void naive_linear(const Naive *a)
{
	for (long b = 0; b < a->B; b++)
		for (long h = 0; h < a->H; h++)
			for (long i = 0; i < a->N; i++) {
				const double *q = q_row(a, a->Q, b, h, i);
				double *o = a->O + ((b * a->H + h) * a->N + i) * a->DV, z = 0;
				for (long e = 0; e < a->DV; e++)
					o[e] = 0;
				for (long j = 0; j < a->M; j++) {
					if (!a->visible(a, b, i, j))
						continue;
					const double *k = kv_row(a, a->K, a->D, b, h, j);
					double w = 0;
					for (long d = 0; d < a->D; d++)
						w += elu1(q[d]) * elu1(k[d]);
					const double *v = kv_row(a, a->V, a->VW, b, h, j);
					for (long e = 0; e < a->DV; e++)
						o[e] += w * v[e];
					z += w;
				}
				for (long e = 0; e < a->DV; e++)
					o[e] /= z;
			}
}

/* The softmax weights of one row of (Q, K) over the visible keys; 0 where
** invisible, all 0 for an empty row. Differential attention needs two. */
static void softmax_row(const Naive *a, const double *Q, const double *K, long b, long h, long i,
			double *p)
{
	double m = -INFINITY, z = 0;
	for (long j = 0; j < a->M; j++) {
		p[j] = -INFINITY;
		if (a->visible(a, b, i, j))
			p[j] =
			    a->scale * dot(q_row(a, Q, b, h, i), kv_row(a, K, a->D, b, h, j), a->D);
		m = p[j] > m ? p[j] : m;
	}
	for (long j = 0; j < a->M; j++)
		z += p[j] = a->visible(a, b, i, j) ? exp(p[j] - m) : 0.0;
	for (long j = 0; j < a->M; j++)
		p[j] = z > 0 ? p[j] / z : 0.0;
}

/* Thresholded attention: the probabilities of at least eps, summed as
** they are (threshold.attn). */
static void naive_threshold(const Naive *a)
{
	double *p = malloc((size_t)a->M * sizeof *p);
	for (long b = 0; b < a->B; b++)
		for (long h = 0; h < a->H; h++)
			for (long i = 0; i < a->N; i++) {
				softmax_row(a, a->Q, a->K, b, h, i, p);
				double *o = a->O + ((b * a->H + h) * a->N + i) * a->DV;
				for (long e = 0; e < a->DV; e++) {
					double acc = 0;
					for (long j = 0; j < a->M; j++)
						if (p[j] >= a->eps)
							acc += p[j] *
							       kv_row(a, a->V, a->VW, b, h, j)[e];
					o[e] = acc;
				}
			}
	free(p);
}

/* Differential attention: (softmax(Q1 K1^T) - lam[h] softmax(Q2 K2^T)) V. */
static void naive_diff(const Naive *a)
{
	double *p1 = malloc((size_t)a->M * sizeof *p1), *p2 = malloc((size_t)a->M * sizeof *p2);
	for (long b = 0; b < a->B; b++)
		for (long h = 0; h < a->H; h++)
			for (long i = 0; i < a->N; i++) {
				softmax_row(a, a->Q, a->K, b, h, i, p1);
				softmax_row(a, a->Q2, a->K2, b, h, i, p2);
				double *o = a->O + ((b * a->H + h) * a->N + i) * a->DV;
				for (long e = 0; e < a->DV; e++) {
					double acc = 0;
					for (long j = 0; j < a->M; j++)
						acc += (p1[j] - a->lam[h] * p2[j]) *
						       kv_row(a, a->V, a->VW, b, h, j)[e];
					o[e] = acc;
				}
			}
	free(p1);
	free(p2);
}

/* ---- what each example is ------------------------------------------------ */

typedef enum Form { F_SOFTMAX, F_SIGMOID, F_DIFF, F_THRESHOLD, F_LINEAR, F_VARLEN } Form;
typedef enum Heads { HEADS_MHA, HEADS_GQA, HEADS_MQA } Heads;

/* One attention block: its formula, tensor names, fixed head dims (from the
** example's text) and the shapes to run, "NAME=size ..." over its runtime
** dims. */
typedef struct Spec {
	const char *file, *block;
	Form form;
	Heads heads;
	VisibleFn visible;
	ScoreFn score;
	long d, dv, w;         /* QK head dim, V head dim, window (0: none) */
	const char *q, *k, *v; /* diff: Q1, K1 (Q2, K2 by name) */
	const char *o, *l;     /* l: NULL when the block has no log-sum-exp */
	const char *shapes[5]; /* NULL-terminated */
	int used;
	long vw;      /* V's row width when V is a slice of a wider tensor; 0: dv */
	double scale; /* the textbook scale; 0: 1 / sqrt(d) */
} Spec;

#define MHA3 "B=2 H=3 N=5", "B=3 H=2 N=1", "B=1 H=4 N=9"

static Spec specs[] = {
    {"full.attn",
     "full",
     F_SOFTMAX,
     HEADS_MHA,
     vis_all,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {"B=2 H=3 N=5 M=7", "B=3 H=2 N=7 M=4", "B=4 H=2 N=1 M=6"},
     0,
     0,
     0.0},
    {"causal.attn",
     "causal",
     F_SOFTMAX,
     HEADS_MHA,
     vis_causal,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3},
     0,
     0,
     0.0},
    {"alibi.attn",
     "alibi",
     F_SOFTMAX,
     HEADS_MHA,
     vis_causal,
     score_alibi,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3},
     0,
     0,
     0.0},
    {"mla.attn",
     "mla",
     F_SOFTMAX,
     HEADS_MHA,
     vis_causal,
     NULL,
     192,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3},
     0,
     0,
     0.0},
    {"softcap.attn",
     "softcap",
     F_SOFTMAX,
     HEADS_MHA,
     vis_causal,
     score_softcap,
     256,
     256,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3},
     0,
     0,
     0.0},
    {"softcap_alibi.attn",
     "softcap_alibi",
     F_SOFTMAX,
     HEADS_MHA,
     vis_causal,
     score_softcap_alibi,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3},
     0,
     0,
     0.0},
    {"sliding_window.attn",
     "sliding_window",
     F_SOFTMAX,
     HEADS_MHA,
     vis_window,
     NULL,
     128,
     128,
     256,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3, "B=1 H=2 N=261"},
     0,
     0,
     0.0},
    {"longformer.attn",
     "longformer",
     F_SOFTMAX,
     HEADS_MHA,
     vis_longformer,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 N=20", "B=3 H=2 N=1", "B=1 H=2 N=300"},
     0,
     0,
     0.0},
    {"threshold.attn",
     "threshold",
     F_THRESHOLD,
     HEADS_MHA,
     vis_all,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 N=5", "B=3 H=2 N=1", "B=1 H=2 N=700"},
     0,
     0,
     0.0},
    {"prefix_lm.attn",
     "prefix_lm",
     F_SOFTMAX,
     HEADS_MHA,
     vis_prefix,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {"B=5 H=3 N=6", "B=5 H=2 N=1", "B=5 H=4 N=9"},
     0,
     0,
     0.0},
    {"document.attn",
     "document",
     F_SOFTMAX,
     HEADS_MHA,
     vis_document,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {"B=2 H=3 N=8", "B=3 H=2 N=1", "B=3 H=1 N=13"},
     0,
     0,
     0.0},
    {"relpos_bias.attn",
     "relpos_bias",
     F_SOFTMAX,
     HEADS_MHA,
     vis_all,
     score_bias,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 N=5 M=7", "B=3 H=2 N=6 M=4", "B=2 H=3 N=1 M=5"},
     0,
     0,
     0.0},
    {"t5_bias.attn",
     "t5_bias",
     F_SOFTMAX,
     HEADS_MHA,
     vis_all,
     score_t5,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 N=5 M=7", "B=1 H=2 N=30 M=170", "B=2 H=3 N=1 M=5"},
     0,
     0,
     0.0},
    {"cosine.attn",
     "cosine",
     F_SOFTMAX,
     HEADS_MHA,
     vis_all,
     score_cosine,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 N=5 M=7", "B=1 H=2 N=30 M=17", "B=2 H=3 N=1 M=5"},
     0,
     0,
     0.0},
    {"gaussian.attn",
     "gaussian",
     F_SOFTMAX,
     HEADS_MHA,
     vis_all,
     score_gaussian,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 N=5 M=7", "B=1 H=2 N=30 M=17", "B=2 H=3 N=1 M=5"},
     0,
     0,
     0.0},
    {"sink.attn",
     "gpt_oss_sink",
     F_SOFTMAX,
     HEADS_MHA,
     vis_causal,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {MHA3},
     0,
     0,
     0.0},
    {"mqa.attn",
     "mqa",
     F_SOFTMAX,
     HEADS_MQA,
     vis_causal,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {MHA3},
     0,
     0,
     0.0},
    {"gqa.attn",
     "gqa",
     F_SOFTMAX,
     HEADS_GQA,
     vis_causal_br,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     "L",
     {"B=2 HKV=3 G=4 N=5 M=7", "B=2 HKV=3 G=4 N=1 M=6", "B=1 HKV=2 G=3 N=4 M=9",
      "B=3 HKV=2 G=4 N=7 M=5"},
     0,
     0,
     0.0},
    {"multi.attn",
     "gqa_heads",
     F_SOFTMAX,
     HEADS_GQA,
     vis_causal,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 HKV=3 G=4 N=5", "B=2 HKV=3 G=4 N=1", "B=3 HKV=1 G=2 N=6"},
     0,
     0,
     0.0},
    {"multi.attn",
     "gqa_groups",
     F_SOFTMAX,
     HEADS_GQA,
     vis_causal,
     NULL,
     128,
     128,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 HKV=3 G=4 N=5", "B=2 HKV=3 G=4 N=1", "B=3 HKV=1 G=2 N=6"},
     0,
     0,
     0.0},
    {"decode.attn",
     "decode",
     F_SOFTMAX,
     HEADS_GQA,
     vis_kv_len,
     NULL,
     128,
     128,
     0,
     "q",
     "K",
     "V",
     "o",
     "lse",
     {"B=5 HKV=3 G=2 M=7", "B=5 HKV=2 G=3 M=1", "B=6 HKV=1 G=4 M=9"},
     0,
     0,
     0.0},
    {"neighborhood2d.attn",
     "neighborhood2d",
     F_SOFTMAX,
     HEADS_MHA,
     vis_na2d,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=2 H=3 IH=8 IW=9", "B=1 H=2 IH=5 IW=11", "B=1 H=2 IH=3 IW=4", "B=3 H=1 IH=10 IW=7"},
     0,
     0,
     0.0},
    {"neighborhood3d.attn",
     "neighborhood3d",
     F_SOFTMAX,
     HEADS_MHA,
     vis_na3d,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {"B=1 H=2 T=4 IH=7 IW=8", "B=2 H=1 T=3 IH=9 IW=7", "B=1 H=2 T=3 IH=4 IW=5"},
     0,
     0,
     0.0},
    {"mla_absorbed.attn",
     "mla_absorbed",
     F_SOFTMAX,
     HEADS_MQA,
     vis_kv_len,
     NULL,
     576,
     512,
     0,
     "q",
     "KV",
     "KV",
     "o",
     "lse",
     {"B=5 H=3 M=7", "B=6 H=2 M=1", "B=2 H=4 M=9"},
     0,
     576,
     0.07216878364870323},
    {"paged_decode.attn",
     "paged_decode",
     F_SOFTMAX,
     HEADS_GQA,
     vis_kv_len,
     NULL,
     128,
     128,
     0,
     "q",
     "Kc",
     "Vc",
     "o",
     "lse",
     {"B=2 HKV=3 G=4 NP=13 P=5 MAXP=6", "B=3 HKV=1 G=2 NP=16 P=4 MAXP=5",
      "B=1 HKV=2 G=3 NP=7 P=16 MAXP=4"},
     0,
     0,
     0.0},
    {"paged_decode_hnd.attn",
     "paged_decode_hnd",
     F_SOFTMAX,
     HEADS_GQA,
     vis_kv_len,
     NULL,
     128,
     128,
     0,
     "q",
     "Kc",
     "Vc",
     "o",
     "lse",
     {"B=2 HKV=3 G=4 NP=13 P=5 MAXP=6", "B=3 HKV=2 G=4 NP=19 P=5 MAXP=6",
      "B=1 HKV=2 G=3 NP=7 P=16 MAXP=4"},
     0,
     0,
     0.0},
    {"varlen.attn",
     "varlen",
     F_VARLEN,
     HEADS_GQA,
     NULL,
     NULL,
     128,
     128,
     0,
     "q",
     "K",
     "V",
     "o",
     "lse",
     {"B=3 T=9 TK=13 HKV=2 G=4 NQ=5 NK=6", "B=4 T=7 TK=2 HKV=1 G=3 NQ=5 NK=6",
      "B=2 T=8 TK=11 HKV=3 G=1 NQ=6 NK=9"},
     0,
     0,
     0.0},
    {"varlen_decode.attn",
     "varlen_decode",
     F_SOFTMAX,
     HEADS_GQA,
     vis_cu_k,
     NULL,
     128,
     128,
     0,
     "q",
     "K",
     "V",
     "o",
     "lse",
     {"B=3 TK=13 HKV=2 G=4 NK=6", "B=4 TK=2 HKV=1 G=3 NK=5", "B=2 TK=11 HKV=3 G=1 NK=9"},
     0,
     0,
     0.0},
    {"paged_prefill.attn",
     "paged_prefill",
     F_SOFTMAX,
     HEADS_GQA,
     vis_kv_causal,
     NULL,
     128,
     128,
     0,
     "q",
     "Kc",
     "Vc",
     "o",
     "lse",
     {"B=2 HKV=3 G=4 N=5 NP=17 P=6 MAXP=7", "B=3 HKV=2 G=4 N=1 NP=19 P=5 MAXP=6",
      "B=2 HKV=3 G=5 N=9 NP=11 P=16 MAXP=4"},
     0,
     0,
     0.0},
    {"sigmoid.attn",
     "sigmoid_attn",
     F_SIGMOID,
     HEADS_MHA,
     vis_causal,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {MHA3},
     0,
     0,
     0.0},
    {"linear.attn",
     "linear_attn",
     F_LINEAR,
     HEADS_MHA,
     vis_causal,
     NULL,
     64,
     64,
     0,
     "Q",
     "K",
     "V",
     "O",
     NULL,
     {MHA3},
     0,
     0,
     0.0},
    {"diff.attn",
     "diff_attn",
     F_DIFF,
     HEADS_MHA,
     vis_causal,
     NULL,
     64,
     128,
     0,
     "Q1",
     "K1",
     "V",
     "O",
     NULL,
     {MHA3},
     0,
     0,
     0.0},
};
enum { NSPECS = sizeof specs / sizeof specs[0] };

/* The largest error of each example file, for the summary. */
typedef struct FileErr {
	char file[64];
	double err;
	int cases;
} FileErr;
static FileErr file_errs[32];
static int nfile_errs;

/* ---- shapes and inputs ---------------------------------------------------- */

/* A parsed shape string: runtime dim names and sizes. */
typedef struct Named {
	int n;
	char name[MAX_NAMED][16];
	long v[MAX_NAMED];
} Named;

/* Parses "B=2 H=3 ..."; 0 on success. */
static int parse_shape(const char *s, Named *nm)
{
	nm->n = 0;
	int used;
	while (nm->n < MAX_NAMED &&
	       sscanf(s, " %15[A-Za-z]=%ld%n", nm->name[nm->n], &nm->v[nm->n], &used) == 2) {
		nm->n++;
		s += used;
	}
	while (*s == ' ')
		s++;
	return *s != 0;
}

/* The size of a named dim, or dflt when the shape does not name it. */
static long named(const Named *nm, const char *name, long dflt)
{
	for (int k = 0; k < nm->n; k++)
		if (!strcmp(nm->name[k], name))
			return nm->v[k];
	return dflt;
}

/* The buffer of tensor name in b, or NULL when the block has none. */
static double *opt_buf(Binding *b, const char *name)
{
	const Tensor *t = cascade_tensor(b->c, name);
	return t ? b->data[t->id] : NULL;
}

/* Fills an i32 input so that its mask is exercised: kv_len and prefix_len
** cycle through 0, full, short and nearly full; doc ids are sorted small
** integers, a new document starting with probability 1/3, so rows hold
** several documents. Returns 0, or -1 for an i32 input it does not know. */
static int fill_i32(const Tensor *t, double *buf, long n, const Naive *a, uint64_t seed)
{
	if (!strcmp(t->name, "kv_len")) {
		const long pat[5] = {0, a->M, 1, a->M / 2, a->M - 1};
		for (long b = 0; b < n; b++)
			buf[b] = (double)pat[b % 5];
		return 0;
	}
	if (!strcmp(t->name, "prefix_len")) {
		const long pat[5] = {0, 2, a->N, a->N - 1, 1};
		for (long b = 0; b < n; b++)
			buf[b] = (double)(pat[b % 5] < a->N ? pat[b % 5] : a->N);
		return 0;
	}
	if (!strcmp(t->name, "block") && a->NP >= n) {
		/* each sequence's pages, distinct, from a shuffled pool */
		InputsRng r;
		inputs_rng_init(&r, seed, t->name);
		long pool[256];
		if (a->NP > 256)
			return -1;
		for (long i = 0; i < a->NP; i++)
			pool[i] = i;
		for (long i = a->NP - 1; i > 0; i--) {
			long k = inputs_rng_int(&r, 0, i), x = pool[i];
			pool[i] = pool[k], pool[k] = x;
		}
		for (long i = 0; i < n; i++)
			buf[i] = (double)pool[i];
		return 0;
	}
	if (!strcmp(t->name, "cu_q") || !strcmp(t->name, "cu_k")) {
		int q = t->name[3] == 'q';
		return inputs_offsets(buf, n, seed, t->name, q ? a->TQ : a->TK, q ? a->N : a->M);
	}
	if (!strcmp(t->name, "doc")) {
		InputsRng r;
		inputs_rng_init(&r, seed, t->name);
		for (long b = 0; b < a->B; b++) {
			long id = inputs_rng_int(&r, 0, 2);
			for (long i = 0; i < a->N; i++) {
				if (i > 0 && inputs_rng_int(&r, 0, 2) == 0)
					id++;
				buf[b * a->N + i] = (double)id;
			}
		}
		return 0;
	}
	return -1;
}

/* The sizes and hooks of the naive evaluation, from the shape alone. */
static void naive_setup(Naive *a, const Spec *sp, const Named *nm)
{
	memset(a, 0, sizeof *a);
	long hkv = named(nm, "HKV", 0), g = named(nm, "G", 0);
	a->B = named(nm, "B", 0);
	a->H = named(nm, "H", hkv * g);
	a->HKV = sp->heads == HEADS_GQA ? hkv : sp->heads == HEADS_MQA ? 1 : a->H;
	a->T = named(nm, "T", 1), a->IH = named(nm, "IH", 0), a->IW = named(nm, "IW", 0);
	a->N = named(nm, "N", a->IH ? a->T * a->IH * a->IW : 1);
	a->M = named(nm, "M", a->N);
	a->NP = named(nm, "NP", 0), a->P = named(nm, "P", 0), a->MAXP = named(nm, "MAXP", 0);
	if (a->MAXP) /* paged: the keys are the pages' slots */
		a->M = a->MAXP * a->P;
	if (sp->form == F_VARLEN) /* T is the tokens: N and M the longest sequence's */
		a->TQ = a->T, a->TK = named(nm, "TK", 0), a->T = 1, a->N = named(nm, "NQ", 0),
		a->M = named(nm, "NK", 0);
	if (sp->visible == vis_cu_k) /* a decode step over a packed cache */
		a->TK = named(nm, "TK", 0), a->M = named(nm, "NK", 0);
	a->D = sp->d, a->DV = sp->dv, a->W = sp->w, a->VW = sp->vw ? sp->vw : sp->dv;
	a->visible = sp->visible, a->score = sp->score;
}

/* The default of param name, checked against the example's own formula. */
static double param_value(const Binding *b, const char *name, double textbook, const char *what)
{
	const Param *p = cascade_param(b->c, name);
	if (!p)
		return textbook;
	double v = b->params[p->id];
	if (!(fabs(v - textbook) <= 1e-15 * fmax(1.0, fabs(textbook)))) {
		fprintf(stderr, "%s: param %s defaults to %.17g, expected %.17g\n", what, name, v,
			textbook);
		tu_failures++;
	}
	return v;
}

/* ---- one case --------------------------------------------------------------- */

/* Compares one output: the worst relative error, infinities equal, no NaN;
** returns the error (INFINITY on a failure). */
static double compare(const char *what, const char *name, const double *got, const double *want,
		      long n)
{
	double worst = 0;
	long bad = 0;
	for (long k = 0; k < n; k++) {
		double x = got[k], y = want[k], e;
		if (isnan(x) || isnan(y))
			e = INFINITY;
		else if (isinf(x) || isinf(y))
			e = x == y ? 0 : INFINITY;
		else
			e = fabs(x - y) / fmax(1.0, fabs(y));
		if (e > NAIVE_TOL && bad++ < 3)
			fprintf(stderr, "%s: %s[%ld]: refexec %.17g, naive %.17g\n", what, name, k,
				x, y);
		worst = e > worst ? e : worst;
	}
	if (bad) {
		fprintf(stderr, "%s: %s: %ld of %ld elements differ\n", what, name, bad, n);
		tu_failures++;
	}
	return worst;
}

/* Records the error of one case under its file. */
static void note_error(const char *file, double err)
{
	int k = 0;
	while (k < nfile_errs && strcmp(file_errs[k].file, file))
		k++;
	if (k == nfile_errs) {
		if (nfile_errs == (int)(sizeof file_errs / sizeof file_errs[0]))
			return;
		snprintf(file_errs[k].file, sizeof file_errs[k].file, "%s", file);
		nfile_errs++;
	}
	file_errs[k].err = err > file_errs[k].err ? err : file_errs[k].err;
	file_errs[k].cases++;
}

/* Checks that a shape names exactly the block's runtime dims, with sizes
** that all differ, and fills dims[] (fixed dims at their size). */
static int bind_dims(const Cascade *c, const Named *nm, long *dims, const char *what)
{
	int ok = 1, runtime = 0;
	for (int k = 0; k < c->dims.n; k++) {
		const Dim *d = c->dims.v[k];
		dims[k] = d->fixed ? d->fixed : named(nm, d->name, 0);
		runtime += !d->fixed;
		if (!d->fixed && dims[k] < 1) {
			fprintf(stderr, "%s: no size for runtime dim %s\n", what, d->name);
			ok = 0;
		}
	}
	for (int k = 0; k < nm->n; k++) {
		const Dim *d = cascade_dim(c, nm->name[k]);
		if (!d || d->fixed) {
			fprintf(stderr, "%s: %s is not a runtime dim\n", what, nm->name[k]);
			ok = 0;
		}
		for (int l = 0; l < k; l++)
			if (nm->v[l] == nm->v[k]) {
				fprintf(stderr, "%s: %s and %s are both %ld\n", what, nm->name[l],
					nm->name[k], nm->v[k]);
				ok = 0;
			}
	}
	if (runtime != nm->n)
		ok = 0;
	CHECK(ok);
	return ok;
}

/* Fills every input: floats from the seeded generator (rounded to their
** dtype), i32 through fill_i32. 0 on success. */
static int bind_inputs(Binding *b, const Naive *a, uint64_t seed, const char *what)
{
	for (int k = 0; k < b->c->tensors.n; k++) {
		const Tensor *t = b->c->tensors.v[k];
		if (t->kind != TK_IN)
			continue;
		long n = tensor_numel(t, b->dims);
		if (dtype_is_float(t->dtype))
			inputs_fill(b->data[k], n, t->dtype, seed, t->name, 0, 0);
		else if (t->dtype != DT_I32 || fill_i32(t, b->data[k], n, a, seed)) {
			fprintf(stderr, "%s: no naive fill for input %s\n", what, t->name);
			CHECK(0);
			return -1;
		}
	}
	return 0;
}

/* Points the naive evaluation at the bound inputs and the example's
** params, and checks that the block's outputs are exactly the ones the
** naive code computes. 0 on success. */
static int naive_bind(Naive *a, const Spec *sp, Binding *b, double *O, double *L, const char *what)
{
	a->Q = opt_buf(b, sp->q), a->K = opt_buf(b, sp->k), a->V = opt_buf(b, sp->v);
	a->Q2 = opt_buf(b, "Q2"), a->K2 = opt_buf(b, "K2");
	a->slope = opt_buf(b, "slope"), a->bias = opt_buf(b, "bias"), a->sink = opt_buf(b, "sink");
	a->lam = opt_buf(b, "lam"), a->kv_len = opt_buf(b, "kv_len");
	a->prefix_len = opt_buf(b, "prefix_len"), a->doc = opt_buf(b, "doc");
	a->block = opt_buf(b, "block"), a->bucket_bias = opt_buf(b, "bucket_bias");
	a->logit_scale = opt_buf(b, "logit_scale");
	a->cu_q = opt_buf(b, "cu_q"), a->cu_k = opt_buf(b, "cu_k");
	const Tensor *tk = cascade_tensor(b->c, sp->k);
	a->heads_first = a->block && tk && tk->rank == 4 && tk->shape[1]->kind == EX_DIM &&
			 !strcmp(tk->shape[1]->dim->name, "HKV");
	a->O = O, a->L = sp->l ? L : NULL;
	a->scale = param_value(b, "scale", sp->scale ? sp->scale : 1.0 / sqrt((double)sp->d), what);
	a->cap = param_value(b, "cap", 50.0, what);
	a->b0 = param_value(b, "b0", -log((double)a->N), what);
	a->LW = (long)param_value(b, "W", 256, what), a->LG = (long)param_value(b, "G", 16, what);
	a->eps = param_value(b, "eps", sp->score == score_cosine ? 1e-12 : 0.002, what);
	int ok =
	    a->Q && a->K && a->V && (sp->form != F_DIFF || (a->Q2 && a->K2 && a->lam)) &&
	    (sp->score != score_alibi || a->slope) &&
	    (sp->score != score_softcap_alibi || a->slope) &&
	    (sp->score != score_bias || a->bias) && (sp->score != score_t5 || a->bucket_bias) &&
	    (sp->score != score_cosine || a->logit_scale) &&
	    (sp->visible != vis_kv_len || a->kv_len) &&
	    (sp->visible != vis_kv_causal || a->kv_len) &&
	    (sp->visible != vis_prefix || a->prefix_len) &&
	    (sp->visible != vis_document || a->doc) &&
	    (sp->form != F_VARLEN || (a->cu_q && a->cu_k)) && (sp->visible != vis_cu_k || a->cu_k);
	for (int k = 0; k < b->c->params.n; k++) {
		const char *pn = ((Param *)b->c->params.v[k])->name;
		if (strcmp(pn, "scale") && strcmp(pn, "cap") && strcmp(pn, "b0") &&
		    (sp->visible != vis_longformer || (strcmp(pn, "W") && strcmp(pn, "G"))) &&
		    ((sp->form != F_THRESHOLD && sp->score != score_cosine) || strcmp(pn, "eps"))) {
			fprintf(stderr, "%s: param %s has no naive counterpart\n", what, pn);
			ok = 0;
		}
	}
	int nout = 0;
	for (int k = 0; k < b->c->tensors.n; k++) {
		const Tensor *t = b->c->tensors.v[k];
		if (t->kind != TK_OUT)
			continue;
		nout++;
		if (strcmp(t->name, sp->o) && (!sp->l || strcmp(t->name, sp->l))) {
			fprintf(stderr, "%s: output %s has no naive counterpart\n", what, t->name);
			ok = 0;
		}
	}
	ok =
	    ok && nout == 1 + (sp->l != NULL) && opt_buf(b, sp->o) && (!sp->l || opt_buf(b, sp->l));
	/* the head dims of the spec must be the example's */
	const Tensor *tq = cascade_tensor(b->c, sp->q), *tv = cascade_tensor(b->c, sp->v);
	ok = ok && tensor_dim_size(tq, tq->rank - 1, b->dims) == sp->d &&
	     tensor_dim_size(tv, tv->rank - 1, b->dims) == a->VW;
	if (!ok)
		fprintf(stderr, "%s: the block does not match its naive spec\n", what);
	CHECK(ok);
	return ok ? 0 : -1;
}

/* One (block, shape): refexec in f64 against the naive formula. */
static void run_case(const Cascade *c, Spec *sp, int shape)
{
	char what[256];
	snprintf(what, sizeof what, "%s:%s [%s]", sp->file, sp->block, sp->shapes[shape]);
	Named nm;
	CHECK(parse_shape(sp->shapes[shape], &nm) == 0);
	long *dims = calloc((size_t)c->dims.n + 1, sizeof *dims);
	double *params = calloc((size_t)c->params.n + 1, sizeof *params);
	Naive a;
	naive_setup(&a, sp, &nm);
	if (!bind_dims(c, &nm, dims, what)) {
		free(dims);
		free(params);
		return;
	}
	CHECK(cascade_param_defaults(c, dims, params, NULL) == -1);
	Binding b;
	bind_alloc(&b, c, dims, params);
	uint64_t seed = 1000 + (uint64_t)shape;
	/* rows: B x N of every head, or a packed batch's tokens */
	long rows = sp->form == F_VARLEN ? a.TQ : a.B * a.N;
	double *O = calloc((size_t)(rows * a.H * a.DV), sizeof *O);
	double *L = calloc((size_t)(rows * a.H), sizeof *L);
	if (!bind_inputs(&b, &a, seed, what) && !naive_bind(&a, sp, &b, O, L, what)) {
		char err[1024] = "";
		/* a packed output is not in the MLIR interchange: the f64
		** interpreter stands in for the reference executor */
		int rc = sp->form == F_VARLEN ? interp_run(&b, err, sizeof err)
					      : refexec_run(&b, 1, err, sizeof err);
		if (rc)
			fprintf(stderr, "%s: refexec: %s\n", what, err);
		CHECK(rc == 0);
		if (sp->form == F_SIGMOID)
			naive_sigmoid(&a);
		else if (sp->form == F_LINEAR)
			naive_linear(&a);
		else if (sp->form == F_DIFF)
			naive_diff(&a);
		else if (sp->form == F_THRESHOLD)
			naive_threshold(&a);
		else if (sp->form == F_VARLEN)
			naive_varlen(&a);
		else
			naive_softmax(&a);
		const Tensor *to = cascade_tensor(c, sp->o);
		CHECK(tensor_numel(to, dims) == rows * a.H * a.DV);
		double err_o =
		    rc ? INFINITY : compare(what, sp->o, opt_buf(&b, sp->o), O, rows * a.H * a.DV);
		double err_l = 0;
		if (sp->l && !rc)
			err_l = compare(what, sp->l, opt_buf(&b, sp->l), L, rows * a.H);
		double worst = err_o > err_l ? err_o : err_l;
		printf("naive_examples: %-20s %-15s %-24s max error %.3g (%s)\n", sp->file,
		       sp->block, sp->shapes[shape], worst, worst <= NAIVE_TOL ? "ok" : "FAIL");
		note_error(sp->file, worst);
	}
	free(O);
	free(L);
	bind_free(&b, c);
	free(dims);
	free(params);
}

/* The spec of one block, or NULL. */
static Spec *find_spec(const char *file, const char *block)
{
	for (int k = 0; k < NSPECS; k++)
		if (!strcmp(specs[k].file, file) && !strcmp(specs[k].block, block))
			return &specs[k];
	return NULL;
}

/* Every block of one example file. */
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
		Spec *sp = find_spec(file, c->name);
		if (!sp) {
			fprintf(stderr, "%s:%s: no naive reference; add one to naive_examples.c\n",
				file, c->name);
			CHECK(sp != NULL);
			continue;
		}
		sp->used = 1;
		for (int s = 0; s < 5 && sp->shapes[s]; s++)
			run_case(c, sp, s);
	}
	arena_free(&ar);
}

/* Every example file in sorted order, then the coverage checks both ways. */
int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s EXAMPLES_DIR\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* result lines and errors interleave in order */
	struct dirent **ents = NULL;
	int nents = scandir(argv[1], &ents, NULL, alphasort), files = 0;
	CHECK(nents >= 0);
	for (int k = 0; k < nents; k++) {
		const char *name = ents[k]->d_name;
		size_t len = strlen(name);
		if (len >= 6 && !strcmp(name + len - 5, ".attn")) {
			test_file(argv[1], name);
			files++;
		}
		free(ents[k]);
	}
	free(ents);
	CHECK(files > 0);
	for (int k = 0; k < NSPECS; k++)
		if (!specs[k].used) {
			fprintf(stderr, "%s:%s: spec matches no example block\n", specs[k].file,
				specs[k].block);
			CHECK(specs[k].used);
		}
	for (int k = 0; k < nfile_errs; k++)
		printf("naive_examples: %-20s %d case(s), max error %.3g\n", file_errs[k].file,
		       file_errs[k].cases, file_errs[k].err);
	return tu_report("naive_examples");
}
