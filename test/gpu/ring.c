/*
** test/gpu/ring.c: context parallelism on P GPUs against one GPU. Built
** with -DNAME=<cascade> against gen/<file>.c (attnc --parts: the kernel
** of partial states and NAME_launch_cp) and the runtime, for a cascade of
** Q, K, V [B, H, N, D] bf16 and outputs O [B, H, N, D] (and L [B, H, N]
** f32 where declared: causal.attn, full attention over one sequence).
**
**   ring P B H N [--time ITERS] [--no-check]
**
** The parent makes the NCCL id and forks one process per rank (before any
** CUDA call), each on device r: it makes the same seeded inputs, takes its
** zig-zag shards (chunks r and 2P-1-r of N / 2P rows), runs NAME_launch_cp,
** and compares its rows of O (and L) with NAME_launch on the whole inputs
** on its own GPU (relative L2 error below 1e-2, no NaN). With --time, the
** median of ITERS timed runs of each (events on the rank's stream, all
** ranks started together by a barrier on the host), and of the K/V
** rotation alone (attnrt_ring_run with steps that queue nothing); rank 0
** prints the speedup of P GPUs over one and the share of the rotation that
** is at least hidden behind the kernels. Prints "PASS" or "FAIL" last; exits 1 on
** failure.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <attnrt.h>
#include HEADER

#include "gpu_testutil.h"

typedef F(_gpu_args) Args;

static int check(int rc, int rank, const char *what)
{
	if (rc) {
		printf("rank %d: %s: %s\nFAIL\n", rank, what, attnrt_last_error());
		fflush(stdout);
		_exit(1);
	}
	return rc;
}

/* A value in [-2, 2) from element e of tensor t: a hash, so that every rank
** makes the same inputs fast without sharing them. */
static float value(uint64_t t, uint64_t e)
{
	uint64_t x = (e + 1) * 0x9E3779B97F4A7C15ull ^ (t + 1) * 0xD1B54A32D192ED03ull;
	x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
	return (float)((double)(x >> 40) / (double)(1ull << 24) * 4.0 - 2.0);
}

/* Global row g of the sequence as local row of rank r's zig-zag shard, or -1. */
static long local_row(long g, long C, int P, int r)
{
	long chunk = g / C;
	if (chunk == r)
		return g % C;
	if (chunk == 2L * P - 1 - r)
		return C + g % C;
	return -1;
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
			double t = v[k];
			v[k] = v[k - 1], v[k - 1] = t;
		}
	return n ? v[n / 2] : 0;
}

/* The ring's step that queues nothing: the K/V rotation timed alone. */
static int no_step(void *ctx, int step, int src, void *const *bufs, void *stream)
{
	(void)ctx, (void)step, (void)src, (void)bufs, (void)stream;
	return ATTNRT_OK;
}

/* A host barrier of the P processes: a byte to each other rank's pipe,
** then one from each (pipes made by the parent before the fork). */
static int (*pipes)[2];
static void barrier(int P, int r)
{
	char b = 1;
	for (int k = 0; k < P; k++)
		if (k != r && write(pipes[k][1], &b, 1) != 1)
			_exit(1);
	for (int k = 0; k < P - 1; k++)
		if (read(pipes[r][0], &b, 1) != 1)
			_exit(1);
}

static int rank_main(int P, int r, long B, long H, long N, int iters, int verify,
		     const unsigned char *id)
{
	const long D = 128, C = N / (2 * P), rows = B * H;
	check(attnrt_use_device(r), r, "device");
	AttnrtComm *comm;
	check(attnrt_comm_init(&comm, P, r, id), r, "comm");
	size_t full = (size_t)(rows * N * D), shard = (size_t)(rows * 2 * C * D);
	uint16_t *h = malloc(full * 2), *hs = malloc(shard * 2);
	void *dq, *dk, *dv, *dout, *sq, *sk, *sv, *so, *dl = NULL, *sl = NULL;
	void **full_ptr[3] = {&dq, &dk, &dv}, **shard_ptr[3] = {&sq, &sk, &sv};
	for (int t = 0; t < 3; t++) {
		for (size_t e = 0; e < full; e++)
			h[e] = to_bf16(value((uint64_t)t, e));
		for (long x = 0; x < rows; x++)
			for (long g = 0; g < N; g++) {
				long l = local_row(g, C, P, r);
				if (l >= 0)
					memcpy(hs + ((size_t)(x * 2 * C + l) * D),
					       h + ((size_t)(x * N + g) * D), (size_t)D * 2);
			}
		check(attnrt_malloc(full_ptr[t], full * 2), r, "malloc");
		check(attnrt_malloc(shard_ptr[t], shard * 2), r, "malloc");
		check(attnrt_memcpy_htod(*full_ptr[t], h, full * 2), r, "upload");
		check(attnrt_memcpy_htod(*shard_ptr[t], hs, shard * 2), r, "upload");
	}
	check(attnrt_malloc(&dout, full * 2), r, "malloc");
	check(attnrt_malloc(&so, shard * 2), r, "malloc");
	check(attnrt_memset(so, 0xFF, shard * 2), r, "poison");
	Args a, s;
	memset(&a, 0, sizeof a);
	a.B = B, a.H = H, a.N = N;
	F(_gpu_defaults)(&a);
	a.Q = dq, a.K = dk, a.V = dv, a.O = dout;
#ifdef HAS_L
	check(attnrt_malloc(&dl, (size_t)(rows * N) * 4), r, "malloc");
	check(attnrt_malloc(&sl, (size_t)(rows * 2 * C) * 4), r, "malloc");
	check(attnrt_memset(sl, 0xFF, (size_t)(rows * 2 * C) * 4), r, "poison");
	a.L = dl;
#endif
	/* the poison's fills (on the legacy stream) done before the
	** non-blocking stream's kernels write */
	check(attnrt_synchronize(), r, "fills");
	s = a;
	s.Q = sq, s.K = sk, s.V = sv, s.O = so;
#ifdef HAS_L
	s.L = sl;
#endif
	size_t wsb = 0;
	void *ws;
	check(F(_cp_workspace_bytes)(&s, P, &wsb), r, "workspace bytes");
	check(attnrt_malloc(&ws, wsb), r, "malloc");
	void *stream;
	check(attnrt_stream_create(&stream), r, "stream");
	check(F(_launch_cp)(&s, comm, ws, wsb, stream), r, "launch_cp");
	check(attnrt_stream_synchronize(stream), r, "cp kernels");
	int fail = 0;
	if (verify) {
		check(F(_launch)(&a, stream), r, "launch");
		check(attnrt_stream_synchronize(stream), r, "kernel");
		check(attnrt_memcpy_dtoh(h, dout, full * 2), r, "download");
		check(attnrt_memcpy_dtoh(hs, so, shard * 2), r, "download");
		double num = 0, den = 0;
		long nan = 0;
		for (long x = 0; x < rows; x++)
			for (long g = 0; g < N; g++) {
				long l = local_row(g, C, P, r);
				if (l < 0)
					continue;
				for (long d = 0; d < D; d++) {
					float u = from_bf16(hs[(x * 2 * C + l) * D + d]),
					      w = from_bf16(h[(x * N + g) * D + d]);
					if (isnan(u)) {
						nan++;
						continue;
					}
					num += ((double)u - w) * ((double)u - w),
					    den += (double)w * w;
				}
			}
		double rel = den > 0 ? sqrt(num / den) : sqrt(num);
		int ok = nan == 0 && rel < 1e-2;
		fail |= !ok;
		printf("rank %d/%d O rows %ld rel_l2 %.3e nan %ld %s\n", r, P, rows * 2 * C, rel,
		       nan, ok ? "ok" : "BAD");
#ifdef HAS_L
		float *lf = malloc((size_t)(rows * N) * 4),
		      *ls = malloc((size_t)(rows * 2 * C) * 4);
		check(attnrt_memcpy_dtoh(lf, dl, (size_t)(rows * N) * 4), r, "download");
		check(attnrt_memcpy_dtoh(ls, sl, (size_t)(rows * 2 * C) * 4), r, "download");
		double worst = 0;
		nan = 0;
		for (long x = 0; x < rows; x++)
			for (long g = 0; g < N; g++) {
				long l = local_row(g, C, P, r);
				if (l < 0)
					continue;
				float u = ls[x * 2 * C + l], w = lf[x * N + g];
				if (isnan(u))
					nan++;
				else if (fabs((double)u - w) > worst)
					worst = fabs((double)u - w);
			}
		ok = nan == 0 && worst < 1e-2;
		fail |= !ok;
		printf("rank %d/%d L max_abs_err %.3e nan %ld %s\n", r, P, worst, nan,
		       ok ? "ok" : "BAD");
		free(lf), free(ls);
#endif
	}
	if (iters > 0) {
		void *e0, *e1;
		double *tc = calloc((size_t)iters, sizeof *tc),
		       *t1 = calloc((size_t)iters, sizeof *t1);
		check(attnrt_event_create(&e0), r, "event");
		check(attnrt_event_create(&e1), r, "event");
		for (int it = 0; it < iters; it++) {
			float ms;
			barrier(P, r);
			check(attnrt_event_record(e0, stream), r, "event");
			check(F(_launch_cp)(&s, comm, ws, wsb, stream), r, "launch_cp");
			check(attnrt_event_record(e1, stream), r, "event");
			check(attnrt_event_elapsed_ms(e0, e1, &ms), r, "time");
			tc[it] = ms;
		}
		for (int it = 0; it < iters && r == 0; it++) {
			float ms;
			check(attnrt_event_record(e0, stream), r, "event");
			check(F(_launch)(&a, stream), r, "launch");
			check(attnrt_event_record(e1, stream), r, "event");
			check(attnrt_event_elapsed_ms(e0, e1, &ms), r, "time");
			t1[it] = ms;
		}
		/* the same rotation of this rank's K and V shards with no kernels:
		** what the ring would cost if nothing hid it */
		double *tr = calloc((size_t)iters, sizeof *tr);
		void *r0[2], *r1[2], *loc[2] = {sk, sv};
		size_t kvb[2] = {shard * 2, shard * 2};
		for (int t = 0; t < 2; t++) {
			check(attnrt_malloc(&r0[t], kvb[t]), r, "malloc");
			check(attnrt_malloc(&r1[t], kvb[t]), r, "malloc");
		}
		for (int it = 0; it < iters && P > 1; it++) {
			float ms;
			barrier(P, r);
			check(attnrt_event_record(e0, stream), r, "event");
			check(attnrt_ring_run(comm, 2, loc, kvb, r0, r1, no_step, NULL, stream), r,
			      "ring alone");
			check(attnrt_event_record(e1, stream), r, "event");
			check(attnrt_event_elapsed_ms(e0, e1, &ms), r, "time");
			tr[it] = ms;
		}
		for (int t = 0; t < 2; t++)
			attnrt_free(r0[t]), attnrt_free(r1[t]);
		double mc = median(tc, iters), mr = median(tr, iters);
		printf("rank %d/%d %s B=%ld H=%ld N=%ld cp_ms %.3f\n", r, P, STR(NAME), B, H, N,
		       mc);
		if (r == 0) {
			double m1 = median(t1, iters);
			/* the exposed transfer is at most the time above a perfect
			** split of the one-GPU time, so at least this share is hidden */
			double over = mc - m1 / P,
			       hidden = mr > 0 ? 1 - (over > 0 ? over : 0) / mr : 1;
			printf("scaling %s P=%d B=%ld H=%ld N=%ld one_gpu_ms %.3f cp_ms %.3f "
			       "speedup %.3f efficiency %.3f ring_alone_ms %.3f hidden_at_least "
			       "%.3f\n",
			       STR(NAME), P, B, H, N, m1, mc, m1 / mc, m1 / mc / P, mr,
			       hidden < 0 ? 0 : hidden);
		}
		free(tc), free(t1), free(tr);
	}
	fflush(stdout);
	check(attnrt_stream_synchronize(stream), r, "sync");
	attnrt_comm_destroy(comm);
	free(h), free(hs);
	return fail;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: ring P B H N [--time ITERS] [--no-check]\n");
		return 2;
	}
	int P = atoi(argv[1]), iters = 0, verify = 1;
	long B = atol(argv[2]), H = atol(argv[3]), N = atol(argv[4]);
	for (int i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "--time") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-check"))
			verify = 0;
	}
	if (P < 1 || B < 1 || H < 1 || N < 1) {
		fprintf(stderr, "ring: bad sizes\n");
		return 2;
	}
	unsigned char id[ATTNRT_COMM_ID_BYTES] = {0};
	if (P > 1 && attnrt_comm_unique_id(id)) {
		printf("%s\nFAIL\n", attnrt_last_error());
		return 1;
	}
	pipes = calloc((size_t)P, sizeof *pipes);
	for (int k = 0; k < P; k++)
		if (pipe(pipes[k]))
			return 1;
	fflush(stdout);
	for (int r = 0; r < P; r++)
		if (fork() == 0)
			_exit(rank_main(P, r, B, H, N, iters, verify, id));
	int fail = 0, st;
	while (wait(&st) > 0)
		fail |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf(fail ? "FAIL\n" : "PASS\n");
	return fail;
}
