/*
** test/gpu/grad_harness.c: the GPU suite's checker for one example's
** backward (attnc --grad), run on a GPU machine from files attnc produced
** elsewhere. Built with -DNAME=<cascade>_bwd -DFWD=<cascade> against
** gen/<file>.c (the GPU interface with NAME_bwd_launch) and gen/<file>_cpu.c
** (the portable C back end of the forward and the backward).
**
**   grad_harness B=2,H=4,N=300[,ramp=R] [seed] [--int NAME=lo:hi[:run]|NAME=cum:TOTAL:MAX]
**
** Seeded random inputs (normal, rounded to bf16/f16 where declared; i32 in
** lo:hi, with :run in runs, or cum:TOTAL:MAX ragged offsets as harness.c's), the saved outputs (O, L) computed by the C
** forward from them (O rounded to its dtype, as a GPU forward stores it),
** incoming gradients (dO, dL) random, rounded to the dtype the GPU takes
** (NAME_elem_bytes). The gradients are poisoned with NaN, the backward
** launched with a workspace of NAME_workspace_bytes filled with garbage,
** and every gradient compared with the C backward's: relative L2 error
** below 2e-2 for bf16 and f16 gradients (P and dS are rounded to 16 bits
** for the tensor cores, as FlashAttention's are) and 5e-3 for f32, no NaN.
** Both launches are checked so: NAME_launch, run twice, which must give
** the same bytes both times, and NAME_launch_atomic (dQ by atomic adds
** where the kernels fuse it). Prints one line per gradient and launch,
** then PASS or FAIL; exits 1 on failure.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <attnrt.h>

#include "gpu_testutil.h"

#define G(x) CAT(FWD, x)

void F(_counts)(int *, int *, int *);
const char *F(_tensor_info)(int, int *, int *, int *);
const char *F(_dim_name)(int);
long F(_dim_fixed)(int);
void F(_param_defaults)(const long *, double *);
void F(_tensor_shape)(int, const long *, long *);
int F(_run_generic)(const long *, const double *, void *const *, int);
void G(_counts)(int *, int *, int *);
const char *G(_tensor_info)(int, int *, int *, int *);
void G(_tensor_shape)(int, const long *, long *);
int G(_run_generic)(const long *, const double *, void *const *, int);
int F(_launch_generic)(void *const *, const int64_t *const *, const long *, const double *, void *,
		       size_t, void *);
int F(_launch_atomic_generic)(void *const *, const int64_t *const *, const long *, const double *,
			      void *, size_t, void *);
size_t F(_workspace_bytes_generic)(const long *);
int F(_elem_bytes)(int);

static void check(int rc, const char *what)
{
	if (rc) {
		printf("%s: %s\nFAIL\n", what, attnrt_last_error());
		exit(1);
	}
}

/* v as the device stores it in es bytes of dtype dt (raw), widened back. */
static float store(int dt, int es, float v, void *raw, long e)
{
	if (es == 4 && dt != T_I32) {
		((float *)raw)[e] = v;
		return v;
	}
	if (es == 4) {
		((int32_t *)raw)[e] = (int32_t)v;
		return v;
	}
	if (es == 1) {
		((uint8_t *)raw)[e] = (uint8_t)v;
		return v;
	}
	if (dt == T_F16) {
		_Float16 h = (_Float16)v;
		memcpy((uint16_t *)raw + e, &h, 2);
		return (float)h;
	}
	uint16_t h = to_bf16(v);
	((uint16_t *)raw)[e] = h;
	return from_bf16(h);
}

static float load(int dt, int es, const void *raw, long e)
{
	if (es == 4)
		return ((const float *)raw)[e];
	if (dt == T_F16) {
		_Float16 h;
		memcpy(&h, (const uint16_t *)raw + e, 2);
		return (float)h;
	}
	return from_bf16(((const uint16_t *)raw)[e]);
}

/* The backward's tensors: host values (f32), their raw bytes in the
** device's dtype, device copies, and the first run's
** gradients. */
static int nt;
static void *host_f[64], *dev[64], *hraw[64], *first[64];
static long numel[64];
static int kind[64], dt[64], es[64];
static const char *name[64];

static int launch_and_compare(int run, const long *dims, const double *params, void *ws,
			      size_t bytes);

int main(int argc, char **argv)
{
	int nd, np, ft, fd, fp;
	F(_counts)(&nt, &nd, &np);
	G(_counts)(&ft, &fd, &fp);
	long dims[32] = {0};
	const char *ints[16];
	int nints = 0;
	double ramp = 0;
	for (int i = 0; i < nd; i++)
		dims[i] = F(_dim_fixed)(i);
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--int") && a + 1 < argc)
			ints[nints++] = argv[++a];
		else if (strchr(argv[a], '=')) {
			char *s = strdup(argv[a]), *save = NULL;
			for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!strncmp(t, "ramp=", 5))
					ramp = atof(t + 5);
				for (int i = 0; i < nd; i++) {
					size_t l = strlen(F(_dim_name)(i));
					if (!strncmp(t, F(_dim_name)(i), l) && t[l] == '=')
						dims[i] = atol(t + l + 1);
				}
			}
			free(s);
		} else
			rng ^= (uint64_t)atoll(argv[a]) * 0x9E3779B97F4A7C15ull;
	}
	long maxdim = 1;
	for (int i = 0; i < nd; i++)
		if (!F(_dim_fixed)(i) && dims[i] > maxdim)
			maxdim = dims[i];
	double params[32];
	F(_param_defaults)(dims, params);
	check(attnrt_init(), "init");
	void *fwd[64] = {0};
	int rank[64];
	/* the backward's inputs: random where they are the forward's inputs or
	** incoming gradients */
	for (int i = 0; i < nt; i++) {
		name[i] = F(_tensor_info)(i, &kind[i], &dt[i], &rank[i]);
		if (kind[i] == K_TEMP)
			continue;
		long shape[8];
		F(_tensor_shape)(i, dims, shape);
		numel[i] = 1;
		for (int k = 0; k < rank[i]; k++)
			numel[i] *= shape[k];
		es[i] = F(_elem_bytes)(i);
		host_f[i] = calloc((size_t)numel[i] + 1, 4);
		hraw[i] = calloc((size_t)numel[i] + 1, (size_t)es[i]);
		check(attnrt_malloc(&dev[i], (size_t)numel[i] * (size_t)es[i] + 16), "malloc");
		long lo = 0, hi = maxdim, run = 1, left = 0;
		int cum = 0;
		for (int q = 0; q < nints; q++) {
			size_t l = strlen(name[i]);
			if (strncmp(ints[q], name[i], l) || ints[q][l] != '=')
				continue;
			if (!strncmp(ints[q] + l + 1, "cum:", 4)) {
				/* a packed batch's offsets (cum_offsets) */
				if (dt[i] != T_I32 || !cum_offsets(ints[q] + l + 5, dims, nd,
								   hraw[i], host_f[i], numel[i]))
					return 1;
				cum = 1;
				continue;
			}
			sscanf(ints[q] + l + 1, "%ld:%ld:%ld", &lo, &hi, &run);
		}
		int32_t v = 0;
		for (long e = 0; kind[i] == K_IN && !cum && e < numel[i]; e++) {
			if (dt[i] == T_I32) {
				if (left-- <= 0) {
					v = (int32_t)(lo + (long)(unit() * (double)(hi - lo + 1)));
					left = run > 1 ? (long)(unit() * (double)run) : 0;
				}
				((int32_t *)host_f[i])[e] = v, ((int32_t *)hraw[i])[e] = v;
			} else if (dt[i] == T_BOOL) {
				uint8_t b = unit() < 0.75;
				((uint8_t *)host_f[i])[e] = b, ((uint8_t *)hraw[i])[e] = b;
			} else {
				float x =
				    (float)(normal() * (1 + ramp * (double)e / (double)numel[i]));
				((float *)host_f[i])[e] = store(dt[i], es[i], x, hraw[i], e);
			}
		}
	}
	/* the saved outputs from the C forward on the same inputs */
	int fk[64];
	float *fbuf[64] = {0};
	for (int i = 0; i < ft; i++) {
		int r, d;
		const char *fn = G(_tensor_info)(i, &fk[i], &d, &r);
		if (fk[i] == K_TEMP)
			continue;
		long shape[8], n = 1;
		G(_tensor_shape)(i, dims, shape);
		for (int k = 0; k < r; k++)
			n *= shape[k];
		fbuf[i] = calloc((size_t)n + 1, 4);
		for (int b = 0; b < nt; b++)
			if (!strcmp(name[b], fn) && fk[i] == K_IN)
				memcpy(fbuf[i], host_f[b], (size_t)n * 4);
		fwd[i] = fbuf[i];
	}
	if (G(_run_generic)(dims, params, fwd, 0)) {
		printf("C forward failed\nFAIL\n");
		return 1;
	}
	for (int i = 0; i < ft; i++) {
		int r, d;
		const char *fn = G(_tensor_info)(i, &fk[i], &d, &r);
		for (int b = 0; fk[i] == K_OUT && b < nt; b++)
			if (!strcmp(name[b], fn) && kind[b] == K_IN)
				for (long e = 0; e < numel[b]; e++)
					((float *)host_f[b])[e] =
					    store(dt[b], es[b], fbuf[i][e], hraw[b], e);
	}
	for (int i = 0; i < nt; i++)
		if (kind[i] == K_IN)
			check(attnrt_memcpy_htod(dev[i], hraw[i], (size_t)numel[i] * (size_t)es[i]),
			      "upload");
	if (F(_run_generic)(dims, params, host_f, 0)) {
		printf("C backward failed\nFAIL\n");
		return 1;
	}
	size_t bytes = F(_workspace_bytes_generic)(dims);
	void *ws = NULL;
	if (bytes)
		check(attnrt_malloc(&ws, bytes), "malloc workspace");
	int fail = 0;
	for (int run = 0; run < 3; run++)
		fail |= launch_and_compare(run, dims, params, ws, bytes);
	if (ws)
		attnrt_free(ws);
	for (int i = 0; i < nt; i++) {
		free(host_f[i]), free(hraw[i]), free(first[i]);
		if (dev[i])
			attnrt_free(dev[i]);
	}
	for (int i = 0; i < ft; i++)
		free(fbuf[i]);
	printf(fail ? "FAIL\n" : "PASS\n");
	return fail;
}

/* Launch run (0 and 1: NAME_launch, 2: NAME_launch_atomic) with the
** gradients poisoned and the workspace garbage, and compare the gradients
** with the C backward's; the second run must give the first one's bytes. */
static int launch_and_compare(int run, const long *dims, const double *params, void *ws,
			      size_t bytes)
{
	for (int i = 0; i < nt; i++) {
		if (kind[i] != K_OUT)
			continue;
		/* all-ones: NaN in bf16, f16 and f32 */
		memset(hraw[i], 0xFF, (size_t)numel[i] * (size_t)es[i]);
		check(attnrt_memcpy_htod(dev[i], hraw[i], (size_t)numel[i] * (size_t)es[i]),
		      "upload");
	}
	if (bytes)
		check(attnrt_memset(ws, 0xA5, bytes), "memset workspace");
	if (run == 2)
		check(F(_launch_atomic_generic)(dev, NULL, dims, params, ws, bytes, NULL),
		      "launch (atomic)");
	else
		check(F(_launch_generic)(dev, NULL, dims, params, ws, bytes, NULL), "launch");
	check(attnrt_synchronize(), "kernels");
	int fail = 0;
	for (int i = 0; i < nt; i++) {
		if (kind[i] != K_OUT)
			continue;
		size_t nb = (size_t)numel[i] * (size_t)es[i];
		check(attnrt_memcpy_dtoh(hraw[i], dev[i], nb), "download");
		if (run == 0 && (first[i] = malloc(nb + 1)))
			memcpy(first[i], hraw[i], nb);
		if (run == 1) {
			int same = first[i] && !memcmp(first[i], hraw[i], nb);
			fail |= !same;
			printf("%s %s deterministic: %s\n", STR(NAME), name[i],
			       same ? "the same bytes twice" : "BAD: bytes differ between runs");
			continue;
		}
		double num = 0, den = 0;
		long nan = 0;
		for (long e = 0; e < numel[i]; e++) {
			float g = load(dt[i], es[i], hraw[i], e), c = ((float *)host_f[i])[e];
			if (isnan(g) || isinf(g)) {
				nan++;
				continue;
			}
			num += ((double)g - c) * ((double)g - c), den += (double)c * c;
		}
		double rel = den > 0 ? sqrt(num / den) : sqrt(num);
		int ok = nan == 0 && rel < (es[i] == 2 ? 2e-2 : 5e-3);
		fail |= !ok;
		printf("%s %s%s numel %ld rel_l2 %.3e nan %ld inf_mismatch 0 %s\n", STR(NAME),
		       name[i], run ? " (atomic)" : "", numel[i], rel, nan, ok ? "ok" : "BAD");
	}
	return fail;
}
