/*
** test/gpu/harness.c: the GPU test suite's checker for one example, run on a
** GPU machine from files attnc produced elsewhere. Built once per example
** with -DNAME=<cascade> against gen/<file>.c (the GPU interface: kernels
** embedded, launched through libattnrt) and gen/<file>_cpu.c (the portable
** C back end, itself checked against the MLIR reference in CI).
**
**   harness B=2,H=4,N=300[,ramp=R] [seed]
**           [--int NAME=lo:hi[:run]|NAME=perm:DIM|NAME=cum:TOTAL:MAX]
**           [--time ITERS]
**
** Seeded random inputs (normal, rounded to bf16/f16 where declared; with
** ramp=R, element e of n is also scaled by 1 + R e / n, so that scores
** grow along the keys and running maxes keep moving; i32 inputs uniform in
** lo:hi, or with :run in runs of 1 to run equal values, like the ids of
** packed documents; perm:DIM, distinct values drawn from a random
** permutation of 0 to DIM - 1, like a page table whose pages no two
** sequences share; cum:TOTAL:MAX, cumulative offsets of ragged sequences
** of at most MAX, 0 and 1 among them, summing to TOTAL (cu_seqlens)), outputs
** poisoned with NaN before the launch, then every output compared with the
** C back end: relative L2 error, NaN count, and the positions of infinities
** (logsumexp of empty rows is -inf). Prints one line per output, and
** "PASS" or "FAIL" last; exits 1 on failure or any runtime error.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <attnrt.h>
#ifdef PARTS
#include HEADER
#endif

#include "gpu_testutil.h"

void F(_counts)(int *, int *, int *);
const char *F(_tensor_info)(int, int *, int *, int *);
const char *F(_dim_name)(int);
long F(_dim_fixed)(int);
void F(_param_defaults)(const long *, double *);
void F(_tensor_shape)(int, const long *, long *);
int F(_run_generic)(const long *, const double *, void *const *, int);
#ifdef WORKSPACE
size_t F(_workspace_bytes_generic)(const long *);
int F(_launch_generic)(void *const *, const int64_t *const *, const long *, const double *, void *,
		       size_t, void *);
#else
int F(_launch_generic)(void *const *, const int64_t *const *, const long *, const double *, void *);
#endif

/* The forward's launch on the default stream; where it runs as one kernel
** a pass (WORKSPACE: its plan keeps several), with a workspace of NaNs, so
** that a kernel that reads what no earlier one wrote shows in the output. */
static int launch(void *const *dev, const long *dims, const double *params)
{
#ifdef WORKSPACE
	static void *ws;
	static size_t have;
	size_t need = F(_workspace_bytes_generic)(dims);
	if (need > have) {
		if (ws)
			attnrt_free(ws);
		ws = NULL, have = 0;
		int rc = attnrt_malloc(&ws, need);
		if (rc)
			return rc;
		have = need;
		if ((rc = attnrt_memset(ws, 0xff, need)))
			return rc;
	}
	return F(_launch_generic)(dev, NULL, dims, params, ws, have, NULL);
#else
	return F(_launch_generic)(dev, NULL, dims, params, NULL);
#endif
}

static uint16_t to_f16(float f)
{
	/* round to nearest even through the hardware-free path: use _Float16 if the compiler has it */
	_Float16 h = (_Float16)f;
	uint16_t r;
	memcpy(&r, &h, 2);
	return r;
}
static float from_f16(uint16_t u)
{
	_Float16 h;
	memcpy(&h, &u, 2);
	return (float)h;
}

static int esize(int dt)
{
	return dt == T_F32 || dt == T_I32 ? 4 : dt == T_BOOL ? 1 : 2;
}

static int check(int rc, const char *what)
{
	if (rc) {
		printf("%s: %s\nFAIL\n", what, attnrt_last_error());
		exit(1);
	}
	return rc;
}

/* Every output on the device against the C back end's (host_f): relative
** L2 error, NaNs, infinities in the same places; one line per output,
** labelled with how the kernel was launched. Returns nonzero on a mismatch. */
static int compare(int nt, const int *kind, const int *dt, const char *const *name,
		   const long *numel, void *const *dev, void *const *hraw, void *const *host_f,
		   const char *how)
{
	int fail = 0;
	for (int i = 0; i < nt; i++) {
		if (kind[i] != K_OUT)
			continue;
		check(attnrt_memcpy_dtoh(hraw[i], dev[i], (size_t)numel[i] * (size_t)esize(dt[i])),
		      "download");
		double num = 0, den = 0;
		long nan = 0, infbad = 0;
		for (long e = 0; e < numel[i]; e++) {
			float g = dt[i] == T_BF16  ? from_bf16(((uint16_t *)hraw[i])[e])
				  : dt[i] == T_F16 ? from_f16(((uint16_t *)hraw[i])[e])
						   : ((float *)hraw[i])[e];
			float c = ((float *)host_f[i])[e];
			if (isnan(g)) {
				nan++;
				continue;
			}
			if (isinf(c) || isinf(g)) {
				infbad += !(isinf(c) && isinf(g) && (c > 0) == (g > 0));
				continue;
			}
			num += ((double)g - c) * ((double)g - c), den += (double)c * c;
		}
		double rel = den > 0 ? sqrt(num / den) : sqrt(num);
		double tol = (dt[i] == T_BF16) ? 1e-2 : 5e-3;
		int ok = nan == 0 && infbad == 0 && rel < tol;
		fail |= !ok;
		/* HARNESS_DEBUG: the first elements that differ, for a failing output */
		for (long e = 0, shown = 0;
		     !ok && getenv("HARNESS_DEBUG") && e < numel[i] && shown < 6; e++) {
			float g = dt[i] == T_BF16  ? from_bf16(((uint16_t *)hraw[i])[e])
				  : dt[i] == T_F16 ? from_f16(((uint16_t *)hraw[i])[e])
						   : ((float *)hraw[i])[e];
			float c = ((float *)host_f[i])[e];
			if (!(fabsf(g - c) <= 0.05f * (1 + fabsf(c))))
				printf("  %s%s[%ld] = %g, expected %g\n", name[i], how, e, g, c),
				    shown++;
		}
		printf("%s %s%s numel %ld rel_l2 %.3e nan %ld inf_mismatch %ld %s\n", STR(NAME),
		       name[i], how, numel[i], rel, nan, infbad, ok ? "ok" : "BAD");
	}
	return fail;
}

/* Outputs poisoned again (all-ones: NaN in every float type). */
static void poison(int nt, const int *kind, const int *dt, const long *numel, void *const *dev,
		   void *const *hraw)
{
	for (int i = 0; i < nt; i++)
		if (kind[i] == K_OUT) {
			memset(hraw[i], 0xFF, (size_t)numel[i] * (size_t)esize(dt[i]));
			check(attnrt_memcpy_htod(dev[i], hraw[i],
						 (size_t)numel[i] * (size_t)esize(dt[i])),
			      "poison");
		}
}

#ifdef PARTS

/* Three launches over parts of the keys, the states carried from each to
** the next, on poisoned outputs; then the outputs compared (label how). */
static int chain3(int nt, const int *kind, const int *dt, const char *const *name,
		  const long *numel, void *const *dev, void *const *hraw, void *const *host_f,
		  const long *dims, const double *params, const attn_gpu_part *c, const char *how)
{
	poison(nt, kind, dt, numel, dev, hraw);
	for (int i = 0; i < 3; i++)
		check(F(_launch_part_generic)(dev, NULL, dims, params, &c[i], NULL),
		      "launch chain");
	check(attnrt_synchronize(), "kernel chain");
	return compare(nt, kind, dt, name, numel, dev, hraw, host_f, how);
}

/* Stream-K (ATTN_PART_STREAM_K, where the kernel has the entry: masks that
** read lengths) on the same inputs: over all keys twice (each launch zeroes
** its counters), and as the middle of a chain whose states are carried
** from a split-KV launch over [0, a) and on into one over [b, end), the
** last also stream-K. A launch it refuses (no entry, too many rows) is
** skipped, and says so. */
static int check_streamk(int nt, const int *kind, const int *dt, const char *const *name,
			 const long *numel, void *const *dev, void *const *hraw,
			 void *const *host_f, const long *dims, const double *params, void *ws,
			 void *st, size_t big, long a, long b)
{
	int fail = 0, SK = ATTN_PART_STREAM_K;
	attn_gpu_part pt = {0, 0, 0, 0, 0, ATTN_PART_FINALIZE | SK, ws, big, NULL, 0};
	if (F(_launch_part_generic)(dev, NULL, dims, params, &pt, NULL)) {
		printf("streamk skipped: %s\n", attnrt_last_error());
		return 0;
	}
	check(attnrt_synchronize(), "kernel stream-K");
	for (int r = 0; r < 2; r++) {
		poison(nt, kind, dt, numel, dev, hraw);
		check(F(_launch_part_generic)(dev, NULL, dims, params, &pt, NULL), "launch sk");
		check(attnrt_synchronize(), "kernel stream-K");
		fail |= compare(nt, kind, dt, name, numel, dev, hraw, host_f,
				r ? "/streamk2" : "/streamk");
	}
	attn_gpu_part c[3] = {
	    {0, 0, 0, a, 2, 0, ws, big, st, big},
	    {0, 0, a, b, 0, ATTN_PART_MERGE_IN | SK, ws, big, st, big},
	    {0, 0, b, 0, 0, ATTN_PART_MERGE_IN | ATTN_PART_FINALIZE | SK, ws, big, st, big}};
	fail |= chain3(nt, kind, dt, name, numel, dev, hraw, host_f, dims, params, c,
		       "/streamk_chain3");
	return fail;
}

/* The kernel of partial states (attnc --parts) on the same inputs: split
** into 3 parts and into as many as the launcher picks (twice: each launch
** zeroes its own counters), as a chain of three launches over parts
** of the keys whose states are carried from one to the next (split, one
** part, split), and as two launches in either order. Every launch but the
** first of a chain merges stored states in, so that states stored from
** keys that come later are merged too. */
static int check_parts(int nt, const int *kind, const int *dt, const char *const *name,
		       const long *numel, void *const *dev, void *const *hraw, void *const *host_f,
		       const long *dims, const double *params)
{
	int fail = 0;
	size_t big = (size_t)1 << 28;
	void *ws, *st;
	check(attnrt_malloc(&ws, big), "malloc");
	check(attnrt_malloc(&st, big), "malloc");
	/* garbage in the workspace: the launcher zeroes what it needs */
	check(attnrt_memset(ws, 0xA5, big), "memset");
	static const int splits[3] = {3, 0, 0};
	static const char *const how[3] = {"/split3", "/splitauto", "/splitauto2"};
	for (int r = 0; r < 3; r++) {
		attn_gpu_part pt = {0, 0, 0, 0, splits[r], ATTN_PART_FINALIZE, ws, big, NULL, 0};
		poison(nt, kind, dt, numel, dev, hraw);
		check(F(_launch_part_generic)(dev, NULL, dims, params, &pt, NULL), "launch part");
		check(attnrt_synchronize(), "kernel part");
		fail |= compare(nt, kind, dt, name, numel, dev, hraw, host_f, how[r]);
	}
	/* counters the caller zeroed once (ATTN_PART_ZEROED: no memset on the
	** launch path): each launch must leave them zero for the next, split
	** and stream-K alike, or a later launch's outputs stay poisoned, its
	** parts merge too early, or its helpers wait at a barrier alone */
	check(attnrt_memset(ws, 0, big), "memset");
	static const int zsplits[5] = {3, 0, 0, 0, 0};
	static const char *const zhow[5] = {"/zeroed_split3", "/zeroed_auto", "/zeroed_auto2",
					    "/zeroed_streamk", "/zeroed_streamk2"};
	for (int r = 0; r < 5; r++) {
		int flags =
		    ATTN_PART_FINALIZE | ATTN_PART_ZEROED | (r >= 3 ? ATTN_PART_STREAM_K : 0);
		attn_gpu_part pt = {0, 0, 0, 0, zsplits[r], flags, ws, big, NULL, 0};
		poison(nt, kind, dt, numel, dev, hraw);
		int rc = F(_launch_part_generic)(dev, NULL, dims, params, &pt, NULL);
		if (rc) { /* stream-K only: a kernel without the entry */
			if (r < 3)
				check(rc, "launch zeroed");
			printf("%s skipped: %s\n", zhow[r], attnrt_last_error());
			break;
		}
		check(attnrt_synchronize(), "kernel zeroed");
		fail |= compare(nt, kind, dt, name, numel, dev, hraw, host_f, zhow[r]);
	}
	/* keys in three launches: [0, a), [a, b), [b, end), each non-empty
	** where the keys allow (k_end 0 would mean all of them) */
	long kext = F(_part_keys)(dims);
	long a = (kext / 3) / 64 * 64, b = (2 * kext / 3) / 64 * 64;
	if (a < 64)
		a = kext < 64 ? kext : 64;
	if (b <= a)
		b = a + 64 <= kext ? a + 64 : a;
	if (kext < 128)
		a = b = kext; /* one launch over all keys, then two over none */
	attn_gpu_part c[3] = {
	    {0, 0, 0, a, 2, 0, ws, big, st, big},
	    {0, 0, a, b, 1, ATTN_PART_MERGE_IN, ws, big, st, big},
	    {0, 0, b, 0, 2, ATTN_PART_MERGE_IN | ATTN_PART_FINALIZE, ws, big, st, big}};
	fail |= chain3(nt, kind, dt, name, numel, dev, hraw, host_f, dims, params, c, "/chain3");
	/* two launches of one part each: [0, a) stored then [a, end) merged
	** in and finalised, and the other way round */
	static const char *const dn[2] = {"/fwd2", "/rev2"};
	for (int v = 0; v < 2; v++) {
		attn_gpu_part p1 = {0, 0, v ? a : 0, v ? 0 : a, 1, 0, ws, big, st, big};
		attn_gpu_part p2 = {
		    0,  0,   v ? 0 : a, v ? a : 0, 1, ATTN_PART_MERGE_IN | ATTN_PART_FINALIZE,
		    ws, big, st,        big};
		poison(nt, kind, dt, numel, dev, hraw);
		check(F(_launch_part_generic)(dev, NULL, dims, params, &p1, NULL), "launch 2a");
		check(F(_launch_part_generic)(dev, NULL, dims, params, &p2, NULL), "launch 2b");
		check(attnrt_synchronize(), "kernel chain 2");
		fail |= compare(nt, kind, dt, name, numel, dev, hraw, host_f, dn[v]);
	}
	fail |= check_streamk(nt, kind, dt, name, numel, dev, hraw, host_f, dims, params, ws, st,
			      big, a, b);
	attnrt_free(ws), attnrt_free(st);
	return fail;
}
#endif

/* The first n values of a random permutation of 0..m-1 into v (n <= m):
** a page table's pages, each owned by one sequence, scattered over the
** pool. Returns 0 where m < n. */
static int fill_perm(int32_t *v, long n, long m)
{
	if (m < n)
		return 0;
	int32_t *all = malloc((size_t)m * sizeof *all);
	for (long i = 0; i < m; i++)
		all[i] = (int32_t)i;
	for (long i = 0; i < n; i++) {
		long k = i + (long)(unit() * (double)(m - i));
		if (k >= m)
			k = m - 1;
		int32_t t = all[i];
		all[i] = all[k], all[k] = t;
		v[i] = all[i];
	}
	free(all);
	return 1;
}

int main(int argc, char **argv)
{
	int nt, nd, np;
	F(_counts)(&nt, &nd, &np);
	long dims[32] = {0};
	const char *ints[16];
	int nints = 0, iters = 0;
	double ramp = 0, pset[32], fillv[8];
	int pidx[32], npset = 0, nfill = 0;
	const char *fill[8];
	for (int i = 0; i < nd; i++)
		dims[i] = F(_dim_fixed)(i);
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--int") && a + 1 < argc)
			ints[nints++] = argv[++a];
		else if (!strcmp(argv[a], "--time") && a + 1 < argc)
			iters = atoi(argv[++a]);
		else if (strchr(argv[a], '=')) {
			char *s = strdup(argv[a]), *save = NULL;
			for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!strncmp(t, "ramp=", 5))
					ramp = atof(t + 5);
				/* paramK=V: the K-th param (declaration order) is V */
				if (!strncmp(t, "param", 5) && strchr(t, '=') && npset < 32)
					pidx[npset] = atoi(t + 5),
					pset[npset++] = atof(strchr(t, '=') + 1);
				/* name=V with a lower-case input's name: every element is V */
				else if (*t >= 'a' && *t <= 'z' && strncmp(t, "ramp=", 5) &&
					 nfill < 8) {
					char *eq = strchr(t, '=');
					fill[nfill] = strndup(t, (size_t)(eq - t));
					fillv[nfill++] = atof(eq + 1);
				}
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
	for (int i = 0; i < nd; i++) {
		if (dims[i] <= 0) {
			printf("dim %s not given\nFAIL\n", F(_dim_name)(i));
			return 1;
		}
		if (!F(_dim_fixed)(i) && dims[i] > maxdim)
			maxdim = dims[i];
	}
	double params[32];
	F(_param_defaults)(dims, params);
	for (int i = 0; i < npset; i++) {
		if (pidx[i] < 0 || pidx[i] >= np) {
			printf("param%d: the kernel has %d params\nFAIL\n", pidx[i], np);
			return 1;
		}
		params[pidx[i]] = pset[i];
	}
	check(attnrt_init(), "init");
	void *host_f[64] = {0}, *dev[64] = {0}, *hraw[64] = {0};
	long numel[64];
	int kind[64], dt[64], rank[64];
	const char *name[64];
	for (int i = 0; i < nt; i++) {
		name[i] = F(_tensor_info)(i, &kind[i], &dt[i], &rank[i]);
		if (kind[i] == K_TEMP)
			continue;
		long shape[8];
		F(_tensor_shape)(i, dims, shape);
		numel[i] = 1;
		for (int k = 0; k < rank[i]; k++)
			numel[i] *= shape[k];
		size_t cpu_es = dt[i] == T_I32 ? 4 : dt[i] == T_BOOL ? 1 : 4;
		host_f[i] = calloc((size_t)numel[i], cpu_es);
		hraw[i] = calloc((size_t)numel[i], (size_t)esize(dt[i]));
		check(attnrt_malloc(&dev[i], (size_t)numel[i] * (size_t)esize(dt[i])), "malloc");
		if (kind[i] == K_IN) {
			long lo = 0, hi = maxdim, run = 1, left = 0, perm = -1;
			int32_t v = 0;
			for (int q = 0; q < nints; q++) {
				size_t l = strlen(name[i]);
				if (strncmp(ints[q], name[i], l) || ints[q][l] != '=')
					continue;
				if (!strncmp(ints[q] + l + 1, "cum:", 4)) {
					/* cumulative offsets (cum_offsets) */
					if (dt[i] != T_I32 ||
					    !cum_offsets(ints[q] + l + 5, dims, nd, hraw[i],
							 host_f[i], numel[i]))
						return 1;
					perm = 0;
					continue;
				}
				if (!strncmp(ints[q] + l + 1, "perm:", 5)) {
					for (int k = 0; k < nd; k++)
						if (!strcmp(F(_dim_name)(k), ints[q] + l + 6))
							perm = dims[k];
					if (perm < 0) {
						printf("%s: no dim %s\nFAIL\n", ints[q],
						       ints[q] + l + 6);
						return 1;
					}
				} else
					sscanf(ints[q] + l + 1, "%ld:%ld:%ld", &lo, &hi, &run);
			}
			if (perm > 0) {
				if (dt[i] != T_I32 || !fill_perm(hraw[i], numel[i], perm)) {
					printf("%s: %ld distinct values of 0 to %ld - 1 do not "
					       "fit\nFAIL\n",
					       name[i], numel[i], perm);
					return 1;
				}
				memcpy(host_f[i], hraw[i], (size_t)numel[i] * 4);
			}
			for (long e = 0; e < numel[i] && perm < 0; e++) {
				if (dt[i] == T_I32) {
					/* runs of 1 to `run` equal values: packed documents */
					if (left-- <= 0) {
						v = (int32_t)(lo + (long)(unit() *
									  (double)(hi - lo + 1)));
						left = run > 1 ? (long)(unit() * (double)run) : 0;
					}
					((int32_t *)host_f[i])[e] = v, ((int32_t *)hraw[i])[e] = v;
				} else if (dt[i] == T_BOOL) {
					uint8_t v = unit() < 0.75;
					((uint8_t *)host_f[i])[e] = v, ((uint8_t *)hraw[i])[e] = v;
				} else {
					float v = (float)(normal() * (1 + ramp * (double)e /
									      (double)numel[i]));
					for (int q = 0; q < nfill; q++)
						if (!strcmp(fill[q], name[i]))
							v = (float)fillv[q];
					if (dt[i] == T_BF16) {
						uint16_t h = to_bf16(v);
						((uint16_t *)hraw[i])[e] = h, v = from_bf16(h);
					} else if (dt[i] == T_F16) {
						uint16_t h = to_f16(v);
						((uint16_t *)hraw[i])[e] = h, v = from_f16(h);
					} else {
						((float *)hraw[i])[e] = v;
					}
					((float *)host_f[i])[e] = v;
				}
			}
			check(attnrt_memcpy_htod(dev[i], hraw[i],
						 (size_t)numel[i] * (size_t)esize(dt[i])),
			      "upload");
		} else {
			/* poison: all-ones bit patterns are NaN in bf16, f16 and f32 */
			memset(hraw[i], 0xFF, (size_t)numel[i] * (size_t)esize(dt[i]));
			check(attnrt_memcpy_htod(dev[i], hraw[i],
						 (size_t)numel[i] * (size_t)esize(dt[i])),
			      "poison");
		}
	}
	check(launch(dev, dims, params), "launch");
	check(attnrt_synchronize(), "kernel");
	if (F(_run_generic)(dims, params, host_f, 0)) {
		printf("C back end failed\nFAIL\n");
		return 1;
	}
	int fail = compare(nt, kind, dt, name, numel, dev, hraw, host_f, "");
#ifdef PARTS
	fail |= check_parts(nt, kind, dt, name, numel, dev, hraw, host_f, dims, params);
#endif
	if (iters > 0) {
		void *e0, *e1;
		check(attnrt_event_create(&e0), "event");
		check(attnrt_event_create(&e1), "event");
		for (int w = 0; w < 3; w++)
			check(launch(dev, dims, params), "launch");
		float best = 1e30f;
		for (int r = 0; r < iters; r++) {
			float ms;
			attnrt_event_record(e0, NULL);
			check(launch(dev, dims, params), "launch");
			attnrt_event_record(e1, NULL);
			check(attnrt_event_elapsed_ms(e0, e1, &ms), "time");
			if (ms < best)
				best = ms;
		}
		printf("%s time_ms %.4f\n", STR(NAME), best);
	}
	for (int i = 0; i < nt; i++) {
		free(host_f[i]);
		free(hraw[i]);
		if (dev[i])
			attnrt_free(dev[i]);
	}
	printf(fail ? "FAIL\n" : "PASS\n");
	return fail;
}
