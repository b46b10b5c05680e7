/*
** examples/c/ring_example.c: causal attention (examples/causal.attn) over
** one sequence split across every GPU of the machine: context parallelism,
** ring attention. attnc --parts generated gen/causal.{c,h}, whose
** causal_launch_cp runs one rank's share: libattnrt rotates the K/V shards
** around the ring over NCCL while each step's kernels run, and the partial
** results are merged by the rule the compiler derived from the cascade.
**
** The sequence of N rows is cut into 2P chunks; rank r holds chunks r and
** 2P-1-r of Q, K, V, O and L, one after the other (zig-zag: under the
** causal mask every rank gets the same work). The parent makes the inputs
** and the CPU reference (the portable C backend), and the NCCL id, then
** starts one process per GPU; each takes its shard, runs causal_launch_cp
** and checks its rows of O and L against the reference (relative L2 error
** < 1e-2). With one GPU, the one rank runs without NCCL; a machine with
** several GPUs but no libnccl.so.2 gets the runtime's one-line error.
**
** usage: ring_example [N [H]]      (defaults 2048 4; B is 1, D is 128;
**                                   N a multiple of 256 P)
*/
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <attnrt.h>

#include "causal.h"
#include "example_util.h"
#include "reference.h"

enum { D = 128 };

/* Global row g's place in rank r's shard of C-row chunks, or -1. */
static long shard_row(long g, long c, int p, int r)
{
	if (g / c == r)
		return g % c;
	if (g / c == 2L * p - 1 - r)
		return c + g % c;
	return -1;
}

/* Copies rank r's rows of a [H, N, w] tensor (global) to or from its
** [H, 2C, w] shard; `to_shard` says which way. */
static void shard_copy(float *global, float *shard, long h, long n, long w, long c, int p, int r,
		       int to_shard)
{
	for (long x = 0; x < h; x++)
		for (long g = 0; g < n; g++) {
			long l = shard_row(g, c, p, r);
			if (l < 0)
				continue;
			float *a = global + (x * n + g) * w, *b = shard + (x * 2 * c + l) * w;
			memcpy(to_shard ? b : a, to_shard ? a : b, (size_t)w * sizeof *a);
		}
}

/* Fails with the runtime's message, naming the rank (rank < 0: the
** parent's own calls, whose message is the whole line). */
static int report(int rank, int rc)
{
	if (rc && rank < 0)
		fprintf(stderr, "%s\n", attnrt_last_error());
	else if (rc)
		fprintf(stderr, "rank %d: %s\n", rank, attnrt_last_error());
	return rc;
}

/* One rank: its shard on GPU r, causal_launch_cp, its rows checked. */
static int rank_main(int p, int r, const void *id, long h, long n, float *const *in, float *ro,
		     float *rl)
{
	long c = n / (2 * p), rows = h * 2 * c;
	size_t nx = (size_t)(rows * D);
	uint16_t *hx = malloc(nx * 2);
	float *fx = malloc(nx * 4), *fl = malloc((size_t)rows * 4), *wo = malloc(nx * 4),
	      *wl = malloc((size_t)rows * 4);
	void *d[5] = {0}, *ws = NULL, *stream = NULL;
	AttnrtComm *comm = NULL;
	int rc = 1;
	if (!hx || !fx || !fl || !wo || !wl || report(r, attnrt_use_device(r)) ||
	    report(r, attnrt_comm_init(&comm, p, r, id)))
		goto done;
	for (int t = 0; t < 5; t++)
		if (report(r, attnrt_malloc(&d[t], t < 4 ? nx * 2 : (size_t)rows * 4)))
			goto done;
	for (int t = 0; t < 3; t++) {
		shard_copy(in[t], fx, h, n, D, c, p, r, 1);
		for (size_t e = 0; e < nx; e++)
			hx[e] = to_bf16(fx[e]);
		if (report(r, attnrt_memcpy_htod(d[t], hx, nx * 2)))
			goto done;
	}
	/* the shard's tensors with the whole sequence's dims (N is the global
	** length); causal_launch_cp moves each chunk to its global rows itself */
	causal_gpu_args a;
	memset(&a, 0, sizeof a);
	a.Q = d[0], a.K = d[1], a.V = d[2], a.O = d[3], a.L = d[4];
	a.B = 1, a.H = h, a.N = n;
	causal_gpu_defaults(&a);
	size_t bytes = 0;
	if (report(r, causal_cp_workspace_bytes(&a, p, &bytes)) ||
	    report(r, attnrt_malloc(&ws, bytes)) || report(r, attnrt_stream_create(&stream)) ||
	    report(r, causal_launch_cp(&a, comm, ws, bytes, stream)) ||
	    report(r, attnrt_stream_synchronize(stream)) ||
	    report(r, attnrt_memcpy_dtoh(hx, d[3], nx * 2)) ||
	    report(r, attnrt_memcpy_dtoh(fl, d[4], (size_t)rows * 4)))
		goto done;
	for (size_t e = 0; e < nx; e++)
		fx[e] = from_bf16(hx[e]);
	shard_copy(ro, wo, h, n, D, c, p, r, 1);
	shard_copy(rl, wl, h, n, 1, c, p, r, 1);
	double eo = rel_l2(fx, wo, nx), el = rel_l2(fl, wl, (size_t)rows);
	rc = !(eo < 1e-2 && el < 1e-2);
	printf("rank %d of %d: rows %ld..%ld and %ld..%ld, relative L2 error O %.3e, L %.3e: %s\n",
	       r, p, r * c, (r + 1) * c - 1, (2L * p - 1 - r) * c, (2L * p - r) * c - 1, eo, el,
	       rc ? "FAIL" : "PASS");
done:
	fflush(stdout); /* the rank ends in _exit, which does not flush */
	if (stream)
		attnrt_stream_destroy(stream);
	attnrt_comm_destroy(comm);
	for (int t = 0; t < 5; t++)
		attnrt_free(d[t]);
	attnrt_free(ws);
	free(hx), free(fx), free(fl), free(wo), free(wl);
	return rc;
}

/* The GPU count, from a child process: CUDA must not start in the parent,
** whose forked ranks could not use it then. 0 when there is no GPU (the
** child prints the runtime's reason). */
static int gpu_count(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		int n = 0;
		_exit(report(-1, attnrt_device_count(&n)) ? 0 : n > 255 ? 255 : n);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 0;
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2048, h = argc > 2 ? atol(argv[2]) : 4;
	int p = gpu_count();
	if (p < 1)
		return 1;
	if (n < 1 || h < 1 || n % (256L * p)) {
		fprintf(stderr, "usage: ring_example [N [H]], N a multiple of %ld (256 per GPU)\n",
			256L * p);
		return 2;
	}
	unsigned char id[ATTNRT_COMM_ID_BYTES] = {0};
	if (p > 1 && report(-1, attnrt_comm_unique_id(id)))
		return 1;
	printf("%d GPU(s): causal attention, B=1 H=%ld N=%ld D=%d, bf16, ring of %d rank(s)\n", p,
	       h, n, D, p);
	size_t nx = (size_t)(h * n * D);
	uint16_t *tmp = malloc(nx * 2);
	float *in[3], *ro = malloc(nx * 4), *rl = malloc((size_t)(h * n) * 4);
	uint64_t seed = 42;
	for (int t = 0; t < 3; t++)
		if ((in[t] = malloc(nx * 4)))
			fill(tmp, in[t], nx, &seed);
	if (!tmp || !ro || !rl || !in[0] || !in[1] || !in[2] ||
	    reference_causal(in[0], in[1], in[2], ro, rl, 1, h, n, D, 1.0 / sqrt((double)D))) {
		fprintf(stderr, "ring_example: out of memory, or the CPU reference failed\n");
		return 1;
	}
	fflush(stdout);
	for (int r = 0; r < p; r++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(rank_main(p, r, p > 1 ? id : NULL, h, n, in, ro, rl));
		if (pid < 0) {
			perror("ring_example: fork");
			return 1;
		}
	}
	int fail = 0, st;
	while (wait(&st) > 0)
		fail |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf("%s\n", fail ? "FAIL" : "PASS");
	return fail;
}
