/*
** examples/c/grad_example.c: causal attention's forward and backward on the
** GPU from plain C (attnc --grad: examples/causal.attn's backward, derived
** from its cascade). attnc generated gen/grad/causal.{c,h} at build time:
** causal_launch (O and the logsumexp L, which the backward needs) and
** causal_bwd_launch (dQ, dK, dV from Q, K, V, O, L and the incoming dO,
** dL), whose kernels (a row pass, dQ over query tiles, dK and dV over key
** tiles) take a workspace of causal_bwd_workspace_bytes. The program runs
** both on seeded random bf16 inputs and dO, copies the gradients back, and
** compares them with the portable C backend's backward on the same O and L
** (grad_reference.c): relative L2 error < 2e-2 passes (P and dS are
** rounded to bf16 for the tensor cores). Without a GPU it prints the
** runtime's one-line error and exits 1.
**
** usage: grad_example [N [B [H]]]      (defaults 300 2 4; D is 128)
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
#include "grad_reference.h"

enum { D = 128 };

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
		fprintf(stderr, "usage: grad_example [N [B [H]]]\n");
		return 2;
	}
	if (attnrt_init() != ATTNRT_OK) {
		fprintf(stderr, "%s\n", attnrt_last_error());
		return 1;
	}
	size_t nx = (size_t)(b * h * n * D), nl = (size_t)(b * h * n);
	/* host copies: bf16 for the GPU, float for the CPU; d* device buffers */
	uint16_t *hx[5];    /* Q, K, V, dO, then O (read back) */
	float *fx[5], *fl;  /* the same as floats; L */
	float *g[3], *r[3]; /* the GPU's gradients and the reference's */
	uint16_t *hg = malloc(nx * 2);
	void *dx[5] = {0}, *dl = NULL, *ddl = NULL, *dg[3] = {0}, *ws = NULL, *e0 = NULL,
	     *e1 = NULL;
	int status = 1, oom = !hg;
	for (int i = 0; i < 5; i++)
		oom |= !(hx[i] = malloc(nx * 2)) || !(fx[i] = malloc(nx * 4));
	for (int i = 0; i < 3; i++)
		oom |= !(g[i] = malloc(nx * 4)) || !(r[i] = malloc(nx * 4));
	float *zl = calloc(nl, 4);
	oom |= !(fl = malloc(nl * 4)) || !zl;
	if (oom) {
		fprintf(stderr, "grad_example: out of memory\n");
		return 1;
	}
	uint64_t seed = 7;
	for (int i = 0; i < 4; i++)
		fill(hx[i], fx[i], nx, &seed);
	for (int i = 0; i < 5; i++)
		if (report(attnrt_malloc(&dx[i], nx * 2)) ||
		    (i < 4 && report(attnrt_memcpy_htod(dx[i], hx[i], nx * 2))))
			goto done;
	for (int i = 0; i < 3; i++)
		if (report(attnrt_malloc(&dg[i], nx * 2)))
			goto done;
	if (report(attnrt_malloc(&dl, nl * 4)) || report(attnrt_malloc(&ddl, nl * 4)) ||
	    report(attnrt_memcpy_htod(ddl, zl, nl * 4)) || report(attnrt_event_create(&e0)) ||
	    report(attnrt_event_create(&e1)))
		goto done;

	/* the forward: O and L */
	causal_gpu_args f;
	memset(&f, 0, sizeof f);
	f.Q = dx[0], f.K = dx[1], f.V = dx[2], f.O = dx[4], f.L = dl;
	f.B = b, f.H = h, f.N = n;
	causal_gpu_defaults(&f);
	if (report(causal_launch(&f, NULL)))
		goto done;

	/* the backward: dQ, dK, dV (dL = 0: the loss reads O alone) */
	causal_bwd_gpu_args a;
	memset(&a, 0, sizeof a);
	a.Q = dx[0], a.K = dx[1], a.V = dx[2], a.O = dx[4], a.L = dl, a.dO = dx[3], a.dL = ddl;
	a.dQ = dg[0], a.dK = dg[1], a.dV = dg[2];
	a.B = b, a.H = h, a.N = n;
	causal_bwd_gpu_defaults(&a);
	size_t bytes = causal_bwd_workspace_bytes(&a);
	if (bytes && report(attnrt_malloc(&ws, bytes)))
		goto done;
	float ms = 0;
	/* once to load the module, once timed */
	if (report(causal_bwd_launch(&a, ws, bytes, NULL)) || report(attnrt_synchronize()) ||
	    report(attnrt_event_record(e0, NULL)) ||
	    report(causal_bwd_launch(&a, ws, bytes, NULL)) ||
	    report(attnrt_event_record(e1, NULL)) || report(attnrt_event_elapsed_ms(e0, e1, &ms)))
		goto done;
	/* FLOPs: 2.5 times the causal forward's */
	double flops = 2.5 * 4.0 * (double)b * (double)h * (double)n * (double)(n + 1) / 2 * D;
	printf("causal backward, B=%ld H=%ld N=%ld D=%d: %.3f ms (%.1f TFLOP/s), workspace %zu "
	       "bytes\n",
	       b, h, n, D, ms, ms > 0 ? flops / (ms * 1e9) : 0.0, bytes);
	if (report(attnrt_memcpy_dtoh(hx[4], dx[4], nx * 2)) ||
	    report(attnrt_memcpy_dtoh(fl, dl, nl * 4)))
		goto done;
	for (size_t i = 0; i < nx; i++)
		fx[4][i] = from_bf16(hx[4][i]);
	for (int k = 0; k < 3; k++) {
		if (report(attnrt_memcpy_dtoh(hg, dg[k], nx * 2)))
			goto done;
		for (size_t i = 0; i < nx; i++)
			g[k][i] = from_bf16(hg[i]);
	}
	if (reference_causal_bwd(fx[0], fx[1], fx[2], fx[4], fl, fx[3], zl, r[0], r[1], r[2], b, h,
				 n, D, a.scale)) {
		fprintf(stderr, "grad_example: the CPU reference failed\n");
		goto done;
	}
	double e[3];
	int ok = 1;
	for (int k = 0; k < 3; k++)
		e[k] = rel_l2(g[k], r[k], nx), ok &= e[k] < 2e-2;
	printf("relative L2 error vs the C backend: dQ %.3e, dK %.3e, dV %.3e (limit 2e-2): %s\n",
	       e[0], e[1], e[2], ok ? "PASS" : "FAIL");
	status = ok ? 0 : 1;
done:
	attnrt_event_destroy(e0);
	attnrt_event_destroy(e1);
	for (int i = 0; i < 5; i++)
		attnrt_free(dx[i]), free(hx[i]), free(fx[i]);
	for (int i = 0; i < 3; i++)
		attnrt_free(dg[i]), free(g[i]), free(r[i]);
	attnrt_free(dl), attnrt_free(ddl), attnrt_free(ws);
	free(hg), free(fl), free(zl);
	return status;
}
