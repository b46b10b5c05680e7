/*
** examples/c/attn_example.c: causal attention (examples/causal.attn) on the
** GPU from plain C. attnc generated gen/causal.{c,h} at build time; they
** embed the kernel images (sm_80 and sm_90 cubins, PTX) and define
** causal_launch, which validates the arguments and launches through
** libattnrt. The program fills seeded random
** bf16 Q, K, V, runs the kernel, copies O (bf16) and L (f32) back, and
** compares them with the portable C backend's float result (reference.c):
** relative L2 error < 1e-2 passes. Without a GPU it prints the runtime's
** one-line error and exits 1.
**
** usage: attn_example [N [B [H]]]      (defaults 300 2 4; D is 128)
*/
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <attnrt.h>

#include "causal.h"
#include "example_util.h"
#include "reference.h"

enum { D = 128 };

/* The generated GPU interface (gen/causal.h): device pointers, the free
** dims, then causal_gpu_defaults fills D = 128 and the default scale; NULL
** strides mean row-major contiguous. Launches on stream without syncing;
** returns 0 or an attnrt code (message in attnrt_last_error()). */
static int run_gpu(void *q, void *k, void *v, void *o, void *l, long b, long h, long n,
		   void *stream)
{
	causal_gpu_args a;
	memset(&a, 0, sizeof a);
	a.Q = q;
	a.K = k;
	a.V = v;
	a.O = o;
	a.L = l;
	a.B = b;
	a.H = h;
	a.N = n;
	causal_gpu_defaults(&a);
	return causal_launch(&a, stream);
}

/* Fails with the runtime's message; the caller frees and exits. */
static int report(int rc)
{
	if (rc)
		fprintf(stderr, "%s\n", attnrt_last_error());
	return rc;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300, b = argc > 2 ? atol(argv[2]) : 2,
	     h = argc > 3 ? atol(argv[3]) : 4;
	if (n < 1 || b < 1 || h < 1) {
		fprintf(stderr, "usage: attn_example [N [B [H]]]\n");
		return 2;
	}
	if (attnrt_init() != ATTNRT_OK) {
		fprintf(stderr, "%s\n", attnrt_last_error());
		return 1;
	}
	int dev = 0, sm = 0;
	if (report(attnrt_current_device(&dev, &sm)))
		return 1;
	printf("device %d (sm_%d): causal attention, B=%ld H=%ld N=%ld D=%d, bf16\n", dev, sm, b, h,
	       n, D);

	size_t nqkv = (size_t)(b * h * n * D), nl = (size_t)(b * h * n);
	double scale = 1.0 / sqrt((double)D); /* the default of causal.attn */
	uint16_t *hq = malloc(nqkv * 2), *hk = malloc(nqkv * 2), *hv = malloc(nqkv * 2),
		 *ho = malloc(nqkv * 2);
	float *fq = malloc(nqkv * 4), *fk = malloc(nqkv * 4), *fv = malloc(nqkv * 4),
	      *fo = malloc(nqkv * 4), *ro = malloc(nqkv * 4), *gl = malloc(nl * 4),
	      *rl = malloc(nl * 4);
	void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *dl = NULL, *e0 = NULL, *e1 = NULL;
	int status = 1;
	if (!hq || !hk || !hv || !ho || !fq || !fk || !fv || !fo || !ro || !gl || !rl) {
		fprintf(stderr, "attn_example: out of memory\n");
		goto done;
	}
	uint64_t seed = 42;
	fill(hq, fq, nqkv, &seed);
	fill(hk, fk, nqkv, &seed);
	fill(hv, fv, nqkv, &seed);

	if (report(attnrt_malloc(&dq, nqkv * 2)) || report(attnrt_malloc(&dk, nqkv * 2)) ||
	    report(attnrt_malloc(&dv, nqkv * 2)) || report(attnrt_malloc(&dout, nqkv * 2)) ||
	    report(attnrt_malloc(&dl, nl * 4)) || report(attnrt_memcpy_htod(dq, hq, nqkv * 2)) ||
	    report(attnrt_memcpy_htod(dk, hk, nqkv * 2)) ||
	    report(attnrt_memcpy_htod(dv, hv, nqkv * 2)) || report(attnrt_event_create(&e0)) ||
	    report(attnrt_event_create(&e1)))
		goto done;

	/* once to load the module (and JIT, if it must), once timed */
	float ms = 0;
	if (report(run_gpu(dq, dk, dv, dout, dl, b, h, n, NULL)) || report(attnrt_synchronize()) ||
	    report(attnrt_event_record(e0, NULL)) ||
	    report(run_gpu(dq, dk, dv, dout, dl, b, h, n, NULL)) ||
	    report(attnrt_event_record(e1, NULL)) || report(attnrt_event_elapsed_ms(e0, e1, &ms)) ||
	    report(attnrt_memcpy_dtoh(ho, dout, nqkv * 2)) ||
	    report(attnrt_memcpy_dtoh(gl, dl, nl * 4)))
		goto done;
	double flops = 2.0 * 2.0 * (double)b * (double)h * (double)n * (double)(n + 1) / 2 * D;
	printf("kernel: %.3f ms (%.1f TFLOP/s causal)\n", ms, ms > 0 ? flops / (ms * 1e9) : 0.0);

	if (reference_causal(fq, fk, fv, ro, rl, b, h, n, D, scale) != 0) {
		fprintf(stderr, "attn_example: the CPU reference failed\n");
		goto done;
	}
	for (size_t i = 0; i < nqkv; i++)
		fo[i] = from_bf16(ho[i]);
	double eo = rel_l2(fo, ro, nqkv), el = rel_l2(gl, rl, nl);
	int ok = eo < 1e-2 && el < 1e-2;
	printf("relative L2 error vs the C backend: O %.3e, L %.3e (limit 1e-2): %s\n", eo, el,
	       ok ? "PASS" : "FAIL");
	status = ok ? 0 : 1;
done:
	attnrt_event_destroy(e0);
	attnrt_event_destroy(e1);
	attnrt_free(dq);
	attnrt_free(dk);
	attnrt_free(dv);
	attnrt_free(dout);
	attnrt_free(dl);
	free(hq), free(hk), free(hv), free(ho);
	free(fq), free(fk), free(fv), free(fo), free(ro), free(gl), free(rl);
	return status;
}
