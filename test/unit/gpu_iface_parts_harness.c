/*
** test/unit/gpu_iface_parts_harness.c: built by test_gpu_iface_parts
** (gpu_iface_parts.c) with the launchers of partial states it generated,
** libattnrt and -DCASE_CAUSAL or -DCASE_DECODE, with the kernel's values:
** -DPART_SLOT (the first part parameter's slot: pointers, strides, dims,
** params and the grid's magic come before it), -DCTA_BYTES (its states per
** CTA), -DTHREADS, -DSMEM, -DBLOCK_M, -DNTMAPS. Runs them against
** rt_fakecuda with FAKECUDA_SMS=100 and checks, from the fake's log of
** launches and memsets, what the generated rules (lowering/gpu/
** iface_part.c, iface_cp.c) say, each expectation computed here again:
**   - argument errors: ATTNRT_ERR_ARGUMENT, the message, nothing queued;
**   - NAME_part_bytes and NAME_split_workspace_bytes: states = CTAs x the
**     kernel's bytes per CTA, workspace = 256-aligned counters (36 bytes a
**     CTA: 8 warps' tickets and a claim word) + splits x states, splits 0 chosen from the SM count, the
**     occupancy and the keys;
**   - a split's launch: the counters zeroed on the caller's stream, then
**     NAME_fwd_part with grid z the splits and the part parameters after
**     the magic ones (before the maps); fewer splits in a smaller
**     workspace; an empty key range passed at a tile boundary;
**   - causal: NAME_launch_cp on one rank (four launches of the zig-zag
**     chunks' rows and keys, the modes, the states in the workspace),
**     NAME_cp_workspace_bytes, and what it refuses.
** Run as `harness FAKECUDA_NCCL.so ring` (causal), two ranks as threads
** run NAME_launch_cp over the stand-in NCCL, and each launch's tensor
** pointers are checked: the query shards' moved by (local - global chunk)
** C rows, the K/V ones' the same from the buffers of the ring's step.
**
** usage: harness FAKECUDA.so | harness FAKECUDA_NCCL.so ring
*/
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "rt_fakecuda.h"
#ifdef CASE_CAUSAL
#include "causal.h"
#else
#include "decode.h"
#endif

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

enum { SMS = 100, MERGE = ATTN_PART_MERGE_IN, FIN = ATTN_PART_FINALIZE };

/* The fake's records, resolved from the module the runtime loaded. */
static FakecudaCalls ncalls;
static FakecudaCall call;
static FakecudaParamBytes param_bytes;
static FakecudaRecordParams record;
static FakecudaLaunchParams params;
static FakecudaTmapCalls tmap_calls;
static FakecudaTmap tmap;

static int load_records(const char *fake)
{
	void *h = dlopen(fake, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD), *s;
#define GET(var, name)                                                                             \
	if (h && (s = dlsym(h, name)))                                                             \
		memcpy(&var, &s, sizeof s);
	GET(ncalls, "fakecuda_calls")
	GET(call, "fakecuda_call")
	GET(param_bytes, "fakecuda_param_bytes")
	GET(record, "fakecuda_record_params")
	GET(params, "fakecuda_launch_params")
	GET(tmap_calls, "fakecuda_tmap_calls")
	GET(tmap, "fakecuda_tmap")
#undef GET
	if (!ncalls || !call || !param_bytes || !record || !params || !tmap_calls || !tmap) {
		fprintf(stderr, "harness: %s lacks the fakecuda_* records\n", fake);
		return 1;
	}
	/* the part parameters: five s64, three u64, the u32 mode */
	for (int i = 0; i < 8; i++)
		param_bytes(PART_SLOT + i, 8);
	record(PART_SLOT + 9 + NTMAPS);
	return 0;
}

static size_t align256(size_t n)
{
	return (n + 255) / 256 * 256;
}

/* The split count the launcher chooses for ncta CTAs over keys keys on the
** fake device (SMS multiprocessors, 232448 bytes of shared memory each):
** the fewest parts of the least waves(s) * (keys / s + 1024), at most
** 2 slots / ncta + 1 and keys / 256. */
static long auto_splits(long ncta, long keys)
{
	long occ = 232448L / (SMEM + 1024L);
	if (occ > 2048L / THREADS)
		occ = 2048L / THREADS;
	if (occ < 1)
		occ = 1;
	long slots = SMS * occ, most = (keys + 255) / 256, best = 1, cost = -1;
	if (most > 2 * slots / ncta + 1)
		most = 2 * slots / ncta + 1;
	for (long s = 1; s <= most; s++) {
		long c = (ncta * s + slots - 1) / slots * ((keys + s - 1) / s + 1024);
		if (cost < 0 || c < cost)
			cost = c, best = s;
	}
	return best;
}

/* The bytes of the counters of ncta CTAs: 8 warps' tickets and the row's
** claim word each, 256-aligned. */
static size_t counter_bytes(long ncta)
{
	return align256((size_t)ncta * 36);
}

/* The bytes of a split's workspace for ncta CTAs and s parts (0 for one). */
static size_t split_bytes(long ncta, long s)
{
	return s > 1 ? counter_bytes(ncta) + (size_t)s * (size_t)ncta * CTA_BYTES : 0;
}

/* rc is ATTNRT_ERR_ARGUMENT with message msg (after the runtime's
** "attnrt: "), and nothing was queued. */
static void expect_refused(int line, int rc, const char *msg, int before)
{
	const char *got = attnrt_last_error();
	if (rc != ATTNRT_ERR_ARGUMENT || strncmp(got, "attnrt: ", 8) || strcmp(got + 8, msg) ||
	    ncalls() != before) {
		fprintf(
		    stderr,
		    "%s:%d: expected ATTNRT_ERR_ARGUMENT \"%s\" and nothing queued; got %d \"%s\", "
		    "%d call(s)\n",
		    __FILE__, line, msg, rc, got, ncalls() - before);
		failures++;
	}
}
#define REFUSED(call_, msg)                                                                        \
	do {                                                                                       \
		int before_ = ncalls();                                                            \
		expect_refused(__LINE__, (call_), (msg), before_);                                 \
	} while (0)

/* What one launch of NAME_fwd_part must be. */
typedef struct Launch {
	unsigned gx, gy, gz;
	long kr0, kr1, kchunk, qr0, qr1;
	uintptr_t ws, cnt, st;
	unsigned mode;
} Launch;

/* Log entry i is a launch of NAME_fwd_part on stream as e says. */
static void expect_launch(int line, int i, const char *name, const void *stream, const Launch *e)
{
	const FakeCall *l = call(i);
	if (!l || l->kind != 'l') {
		fprintf(stderr, "%s:%d: call %d is no launch\n", __FILE__, line, i);
		failures++;
		return;
	}
	const uint64_t *p = l->param + PART_SLOT;
	uint64_t want[9] = {(uint64_t)e->kr0,
			    (uint64_t)e->kr1,
			    (uint64_t)e->kchunk,
			    (uint64_t)e->qr0,
			    (uint64_t)e->qr1,
			    e->ws,
			    e->cnt,
			    e->st,
			    e->mode};
	int bad = strcmp(l->name, name) || l->stream != (uintptr_t)stream || l->grid[0] != e->gx ||
		  l->grid[1] != e->gy || l->grid[2] != e->gz;
	for (int k = 0; k < 9; k++)
		bad |= p[k] != want[k];
	if (!bad)
		return;
	failures++;
	fprintf(stderr, "%s:%d: call %d: %s on %#lx, grid %u x %u x %u, part params", __FILE__,
		line, i, l->name, (unsigned long)l->stream, l->grid[0], l->grid[1], l->grid[2]);
	for (int k = 0; k < 9; k++)
		fprintf(stderr, " %#llx", (unsigned long long)p[k]);
	fprintf(stderr, "\n  expected %s on %#lx, grid %u x %u x %u, part params", name,
		(unsigned long)(uintptr_t)stream, e->gx, e->gy, e->gz);
	for (int k = 0; k < 9; k++)
		fprintf(stderr, " %#llx", (unsigned long long)want[k]);
	fputc('\n', stderr);
}

/* Log entry i zeroes bytes bytes at dst on stream. */
static void expect_memset(int line, int i, const void *dst, size_t bytes, const void *stream)
{
	const FakeCall *m = call(i);
	if (!m || m->kind != 'm' || m->dst != (uintptr_t)dst || m->bytes != bytes ||
	    m->value != 0 || m->stream != (uintptr_t)stream) {
		fprintf(stderr, "%s:%d: call %d is not a memset of %zu zero bytes at %p on %p\n",
			__FILE__, line, i, bytes, dst, stream);
		failures++;
	}
}

/* 256-byte aligned host memory (the fake fills and copies host memory),
** filled with 0xab. */
static void *buffer(size_t n)
{
	void *p = aligned_alloc(256, align256(n ? n : 1));
	if (p)
		memset(p, 0xab, n);
	return p;
}

#ifdef CASE_CAUSAL
/* causal over B x H heads of N rows, at fake addresses (K and V: given). */
static void causal_args(causal_gpu_args *a, long B, long H, long N, const void *k, const void *v)
{
	memset(a, 0, sizeof *a);
	a->B = B, a->H = H, a->N = N;
	causal_gpu_defaults(a);
	a->Q = (const void *)(uintptr_t)0x7f0000100000ull;
	a->K = k ? k : (const void *)(uintptr_t)0x7f0010200000ull;
	a->V = v ? v : (const void *)(uintptr_t)0x7f0020300000ull;
	a->O = (void *)(uintptr_t)0x7f0030400000ull;
	a->L = (void *)(uintptr_t)0x7f0040500000ull;
}

static void causal_cases(void *stream)
{
	enum { B = 2, H = 3, N = 16384, GY = B * H };
	causal_gpu_args a;
	causal_args(&a, B, H, N, NULL, NULL);
	char msg[256];
	attn_gpu_part pt;
	size_t sb = 0, wb = 0;
	long dims[] = {B, H, N, 128};
	CHECK(causal_part_keys(dims) == N);

	/* one part: no counters, no workspace; finalising alone needs no state */
	pt = (attn_gpu_part){0, 0, 0, 0, 1, FIN, NULL, 0, NULL, 0};
	int before = ncalls(), maps = tmap_calls();
	CHECK(causal_launch_part(&a, &pt, stream) == ATTNRT_OK && ncalls() == before + 1);
	Launch e = {128, GY, 1, 0, N, N, 0, N, 0, 0, 0, FIN};
	expect_launch(__LINE__, before, "causal_fwd_part", stream, &e);
	/* the maps after the mode: K's (tmaps[0], encoded second), then Q's */
	const uintptr_t *p = params();
	const FakeTmap *mq = tmap(maps), *mk = tmap(maps + 1);
	CHECK(tmap_calls() == maps + 2 && mq && mk);
	if (mq && mk)
		CHECK(p[PART_SLOT + 9] == mk->map && p[PART_SLOT + 10] == mq->map &&
		      mq->addr == (uintptr_t)a.Q && mk->addr == (uintptr_t)a.K);

	/* argument errors */
	REFUSED(causal_launch_part(&a, NULL, stream), "causal_launch_part: NULL part");
	REFUSED(causal_part_bytes(&a, NULL, &sb, &wb), "causal_part_bytes: NULL part");
	{
		void *ptrs[6] = {(void *)a.Q, (void *)a.K, (void *)a.V, a.O, a.L, NULL};
		double prm[2] = {a.scale, 0};
		REFUSED(causal_launch_part_generic(ptrs, NULL, dims, prm, NULL, stream),
			"causal_launch_part: NULL part");
	}
	static const long bad_rows[][2] = {{-1, 0}, {0, N + 1}, {100, 100}, {N, 0}, {200, 100}};
	for (int i = 0; i < 5; i++) {
		pt =
		    (attn_gpu_part){bad_rows[i][0], bad_rows[i][1], 0, 0, 1, FIN, NULL, 0, NULL, 0};
		snprintf(msg, sizeof msg,
			 "causal: the query rows [%ld, %ld) are not a non-empty part of [0, %d)",
			 bad_rows[i][0], bad_rows[i][1] ? bad_rows[i][1] : N, N);
		REFUSED(causal_launch_part(&a, &pt, stream), msg);
		REFUSED(causal_part_bytes(&a, &pt, &sb, &wb), msg);
	}
	pt = (attn_gpu_part){0, 0, 10, 100, 1, FIN, NULL, 0, NULL, 0};
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: k_begin = 10 is not a multiple of 64 (the key tile)");
	pt.k_begin = 128, pt.k_end = 64;
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: the keys [128, 64) are not a part of [0, 16384)");
	pt.k_begin = 0, pt.k_end = N + 64;
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: the keys [0, 16448) are not a part of [0, 16384)");
	pt.k_begin = -64, pt.k_end = 64;
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: the keys [-64, 64) are not a part of [0, 16384)");
	pt = (attn_gpu_part){0, 0, 0, 0, -1, FIN, NULL, 0, NULL, 0};
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: splits = -1 is out of range (0 to 65535)");
	pt.splits = 65536;
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: splits = 65536 is out of range (0 to 65535)");
	pt.splits = 1, pt.flags = 4; /* stream-K: causal reads no lengths */
	REFUSED(causal_launch_part(&a, &pt, stream),
		"causal: the image that runs has no stream-K entry (attnc emits one where masks "
		"read lengths on the device, unless the target's producer scans masks that "
		"read data)");
	pt.flags = MERGE | FIN | 16;
	REFUSED(causal_launch_part(&a, &pt, stream), "causal: unknown flags 0x13");

	/* sizes: rows [128, 512) are 3 CTAs of 128 rows per head */
	long ncta = 3 * GY;
	size_t st = (size_t)ncta * CTA_BYTES, ws3 = split_bytes(ncta, 3), cb = counter_bytes(ncta);
	CHECK(cb == 768 && ws3 == cb + 3 * st);
	pt = (attn_gpu_part){128, 512, 0, 640, 3, MERGE | FIN, NULL, 0, NULL, 0};
	CHECK(causal_part_bytes(&a, &pt, &sb, &wb) == ATTNRT_OK);
	CHECK(sb == st && wb == ws3);
	pt.splits = 1;
	CHECK(causal_part_bytes(&a, &pt, &sb, &wb) == ATTNRT_OK && sb == st && wb == 0);
	/* the launcher's choice: the keys' share of a device of SMS SMs */
	pt.splits = 0, pt.k_end = 0;
	long s0 = auto_splits(ncta, N);
	/* 100 SMs x 1 CTA: 5 parts of 18 CTAs are one wave (6 would be two) */
	CHECK(s0 == 5);
	CHECK(causal_part_bytes(&a, &pt, &sb, &wb) == ATTNRT_OK);
	CHECK(sb == st && wb == split_bytes(ncta, s0));
	size_t whole = 0;
	CHECK(causal_split_workspace_bytes(&a, &whole) == ATTNRT_OK);
	CHECK(whole == split_bytes(8L * N / 1024 * GY, auto_splits(8L * N / 1024 * GY, N)));

	/* a split without (or with too small, or unaligned) workspace */
	unsigned char *ws = buffer(ws3 + 16), *state = buffer(st + 16);
	pt = (attn_gpu_part){128, 512, 0, 640, 3, MERGE | FIN, NULL, 0, state, st};
	snprintf(msg, sizeof msg,
		 "causal: 3 splits need a 16-byte aligned workspace of %zu bytes (0 given)", ws3);
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	pt.workspace_bytes = ws3;
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	pt.workspace = ws, pt.workspace_bytes = ws3 - 1;
	snprintf(msg, sizeof msg,
		 "causal: 3 splits need a 16-byte aligned workspace of %zu bytes (%zu given)", ws3,
		 ws3 - 1);
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	pt.workspace = ws + 8, pt.workspace_bytes = ws3;
	snprintf(msg, sizeof msg,
		 "causal: 3 splits need a 16-byte aligned workspace of %zu bytes (%zu given)", ws3,
		 ws3);
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	/* a carry without (or with too small) a state buffer */
	pt.workspace = ws, pt.state = NULL, pt.state_bytes = 0;
	snprintf(msg, sizeof msg,
		 "causal: the states need a 16-byte aligned buffer of %zu bytes (0 given)", st);
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	pt.flags = 0;
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	pt.flags = MERGE;
	pt.state = state, pt.state_bytes = st - 1;
	snprintf(msg, sizeof msg,
		 "causal: the states need a 16-byte aligned buffer of %zu bytes (%zu given)", st,
		 st - 1);
	REFUSED(causal_launch_part(&a, &pt, stream), msg);
	pt.state = state + 4, pt.state_bytes = st;
	snprintf(msg, sizeof msg,
		 "causal: the states need a 16-byte aligned buffer of %zu bytes (%zu given)", st,
		 st);
	REFUSED(causal_launch_part(&a, &pt, stream), msg);

	/* a launch of 3 splits: the counters zeroed on the stream, then the
	** part with grid z 3, its keys in chunks of whole tiles */
	pt = (attn_gpu_part){128, 512, 0, 640, 3, MERGE | FIN, ws, ws3, state, st};
	before = ncalls();
	int rc = causal_launch_part(&a, &pt, stream);
	if (rc)
		fprintf(stderr, "causal_launch_part: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK && ncalls() == before + 2);
	expect_memset(__LINE__, before, ws, cb, stream);
	CHECK(ws[0] == 0 && ws[cb - 1] == 0 && ws[cb] == 0xab);
	e = (Launch){3,
		     GY,
		     3,
		     0,
		     640,
		     256,
		     128,
		     512,
		     (uintptr_t)ws + cb,
		     (uintptr_t)ws,
		     (uintptr_t)state,
		     MERGE | FIN};
	expect_launch(__LINE__, before + 1, "causal_fwd_part", stream, &e);
	/* the same launch with counters the caller says are zero: no memset,
	** and the kernel's mode without the flag */
	pt.flags |= ATTN_PART_ZEROED;
	memset(ws, 0xab, cb);
	before = ncalls();
	rc = causal_launch_part(&a, &pt, stream);
	if (rc)
		fprintf(stderr, "causal_launch_part: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK && ncalls() == before + 1 && ws[0] == 0xab);
	expect_launch(__LINE__, before, "causal_fwd_part", stream, &e);
	/* an empty key range anywhere: a tile boundary, one tile's chunk */
	pt = (attn_gpu_part){0, 128, 100, 100, 1, MERGE, NULL, 0, state, st};
	before = ncalls();
	rc = causal_launch_part(&a, &pt, stream);
	if (rc)
		fprintf(stderr, "causal_launch_part: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK && ncalls() == before + 1);
	e = (Launch){1, GY, 1, 64, 64, 64, 0, 128, 0, 0, (uintptr_t)state, MERGE};
	expect_launch(__LINE__, before, "causal_fwd_part", stream, &e);
	/* the plain launch is the other entry, with no part: its parameters end
	** with the tensor maps, so the fake driver reads no more (the part
	** slots would be past the launch's array) */
	record(PART_SLOT + NTMAPS);
	before = ncalls();
	CHECK(causal_launch(&a, stream) == ATTNRT_OK && ncalls() == before + 1);
	record(PART_SLOT + 9 + NTMAPS);
	CHECK(call(before) && !strcmp(call(before)->name, "causal_fwd") &&
	      call(before)->grid[2] == 1);

	/* split-KV at the launcher's count: as many as the workspace holds */
	long nall = 128L * GY, sall = auto_splits(nall, N);
	CHECK(sall == 1); /* 768 CTAs fill the device */
	pt = (attn_gpu_part){0, 0, 0, 0, 0, FIN, NULL, 0, NULL, 0};
	before = ncalls();
	CHECK(causal_launch_split(&a, NULL, 0, stream) == ATTNRT_OK && ncalls() == before + 1);
	e = (Launch){128, GY, 1, 0, N, N, 0, N, 0, 0, 0, FIN};
	expect_launch(__LINE__, before, "causal_fwd_part", stream, &e);
	free(ws), free(state);
}

/* The states of one query chunk of C rows, as NAME_launch_cp keeps them. */
static size_t cp_state_bytes(long C, long heads)
{
	return align256((size_t)((C + BLOCK_M - 1) / BLOCK_M * heads) * CTA_BYTES);
}

static void cp_cases(void *stream)
{
	enum { B = 2, H = 3, N = 16384, C = N / 2, GY = B * H };
	causal_gpu_args a;
	causal_args(&a, B, H, N, NULL, NULL);
	AttnrtComm *comm = NULL;
	for (int i = 0; i < 5; i++) /* the tensors' pointers */
		param_bytes(i, 8);
	CHECK(attnrt_comm_init(&comm, 1, 0, NULL) == ATTNRT_OK && comm);
	if (!comm)
		return;
	size_t kv = (size_t)B * H * N * 128 * 2, sb = cp_state_bytes(C, GY), need = 0;
	CHECK(causal_cp_workspace_bytes(&a, 1, &need) == ATTNRT_OK);
	CHECK(need == 2 * sb + 4 * align256(kv));
	/* two ranks: half the rows each, chunks of N / 4 */
	size_t need2 = 0;
	CHECK(causal_cp_workspace_bytes(&a, 2, &need2) == ATTNRT_OK);
	CHECK(need2 == 2 * cp_state_bytes(N / 4, GY) + 4 * align256(kv / 2));
	REFUSED(causal_cp_workspace_bytes(&a, 0, &need2), "causal_launch_cp: rank 0 of 0");

	/* the workspace is never touched on one rank: an address will do */
	unsigned char *w = (unsigned char *)(uintptr_t)0x7f5000000000ull;
	int before = ncalls();
	int rc = causal_launch_cp(&a, comm, w, need, stream);
	if (rc)
		fprintf(stderr, "causal_launch_cp: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK && ncalls() == before + 4);
	/* query chunk 0 against K/V chunks 0 then 1, then query chunk 1 */
	for (int i = 0; i < 4; i++) {
		int qa = i / 2, kb = i % 2;
		Launch e = {C / BLOCK_M,
			    GY,
			    1,
			    (long)kb * C,
			    (long)kb * C + C,
			    C,
			    (long)qa * C,
			    (long)qa * C + C,
			    0,
			    0,
			    (uintptr_t)(w + qa * sb),
			    kb ? MERGE | FIN : 0};
		expect_launch(__LINE__, before + i, "causal_fwd_part", stream, &e);
		const FakeCall *l = call(before + i);
		/* one rank: each chunk at its global place, the pointers the caller's */
		CHECK(l && l->param[0] == (uintptr_t)a.Q && l->param[1] == (uintptr_t)a.K &&
		      l->param[2] == (uintptr_t)a.V && l->param[3] == (uintptr_t)a.O &&
		      l->param[4] == (uintptr_t)a.L);
	}

	/* what it refuses, before any launch */
	char msg[256];
	snprintf(msg, sizeof msg,
		 "causal_launch_cp: the workspace must be 256-byte aligned and %zu bytes (%zu "
		 "given)",
		 need, need - 1);
	REFUSED(causal_launch_cp(&a, comm, w, need - 1, stream), msg);
	snprintf(msg, sizeof msg,
		 "causal_launch_cp: the workspace must be 256-byte aligned and %zu bytes (%zu "
		 "given)",
		 need, need);
	REFUSED(causal_launch_cp(&a, comm, w + 16, need, stream), msg);
	a.N = N + 128;
	REFUSED(causal_launch_cp(&a, comm, w, need, stream),
		"causal_launch_cp: N = 16512 is not a multiple of 256 P = 256 (2P chunks of "
		"whole 128-row tiles)");
	a.N = N;
	static const int64_t k_strides[] = {(int64_t)H * N * 128, (int64_t)N * 128, 128, 1};
	a.K_strides = k_strides;
	REFUSED(causal_launch_cp(&a, comm, w, need, stream),
		"causal_launch_cp: K travels around the ring: it must be contiguous (NULL "
		"strides)");
	a.K_strides = NULL;
	attnrt_comm_destroy(comm);
}

/* The ring of two ranks: B = 1, H = 2, N = 512, so chunks of C = 128 rows
** (one CTA of rows per head); each rank's K and V shards (2C rows, real
** memory, which the stand-in NCCL copies) are filled with its number. */
enum { RB = 1, RH = 2, RN = 512, RC = RN / 4, RKV = RB * RH * 2 * RC * 128 * 2 };

typedef struct Rank {
	int rank, rc;
	const void *id;
	void *stream;
	unsigned char *k, *v, *ws;
	causal_gpu_args a;
	char msg[256];
} Rank;

static void *rank_main(void *arg)
{
	Rank *r = arg;
	AttnrtComm *comm = NULL;
	r->k = buffer(RKV), r->v = buffer(RKV);
	memset(r->k, 0x10 + r->rank, RKV), memset(r->v, 0x20 + r->rank, RKV);
	causal_args(&r->a, RB, RH, RN, r->k, r->v);
	/* the query shards at addresses of the rank's own */
	r->a.Q = (const char *)r->a.Q + ((size_t)r->rank << 32);
	r->a.O = (char *)r->a.O + ((size_t)r->rank << 32);
	r->a.L = (char *)r->a.L + ((size_t)r->rank << 32);
	size_t need = 0;
	r->rc = attnrt_comm_init(&comm, 2, r->rank, r->id);
	if (!r->rc)
		r->rc = attnrt_stream_create(&r->stream);
	if (!r->rc)
		r->rc = causal_cp_workspace_bytes(&r->a, 2, &need);
	if (!r->rc && !(r->ws = buffer(need)))
		r->rc = ATTNRT_ERR_NOMEM;
	if (!r->rc)
		r->rc = causal_launch_cp(&r->a, comm, r->ws, need, r->stream);
	if (r->rc)
		snprintf(r->msg, sizeof r->msg, "%s", attnrt_last_error());
	if (r->stream)
		attnrt_stream_synchronize(r->stream);
	attnrt_comm_destroy(comm);
	return NULL;
}

/* Rank r's launches, in order: steps 0 and 1 (K/V of ranks r, then 1 - r,
** the second from recv0), each query chunk against each K/V chunk held. */
static void expect_rank(const Rank *r)
{
	size_t sb = cp_state_bytes(RC, RB * RH), row = 128 * 2;
	uintptr_t recv0k = (uintptr_t)r->ws + 2 * sb, recv0v = recv0k + RKV;
	int seen = 0;
	for (int i = 0; i < ncalls(); i++) {
		const FakeCall *l = call(i);
		if (!l || l->stream != (uintptr_t)r->stream)
			continue;
		int step = seen / 4, qa = seen / 2 % 2, kb = seen % 2;
		seen++;
		if (step > 1)
			continue;
		long src = (r->rank - step + 2) % 2, ga = qa ? 3 - r->rank : r->rank,
		     gb = kb ? 3 - src : src;
		unsigned mode = step || kb ? MERGE : 0;
		if (step == 1 && kb == 1)
			mode |= FIN;
		Launch e = {1,
			    RB * RH,
			    1,
			    gb * RC,
			    gb * RC + RC,
			    RC,
			    ga * RC,
			    ga * RC + RC,
			    0,
			    0,
			    (uintptr_t)r->ws + (size_t)qa * sb,
			    mode};
		expect_launch(__LINE__, i, "causal_fwd_part", r->stream, &e);
		/* global row g of a chunk at its local row: the bases moved by
		** (local - global chunk) x C rows */
		intptr_t dq = (intptr_t)(qa - ga) * RC, dk = (intptr_t)(kb - gb) * RC;
		uintptr_t k = step ? recv0k : (uintptr_t)r->k, v = step ? recv0v : (uintptr_t)r->v;
		uintptr_t want[5] = {(uintptr_t)r->a.Q + (uintptr_t)(dq * (intptr_t)row),
				     k + (uintptr_t)(dk * (intptr_t)row),
				     v + (uintptr_t)(dk * (intptr_t)row),
				     (uintptr_t)r->a.O + (uintptr_t)(dq * (intptr_t)row),
				     (uintptr_t)r->a.L + (uintptr_t)(dq * 4)};
		for (int t = 0; t < 5; t++)
			if (l->param[t] != want[t]) {
				fprintf(stderr,
					"rank %d, step %d, query chunk %d, K/V chunk %d: tensor %d "
					"at %#llx, expected %#lx\n",
					r->rank, step, qa, kb, t, (unsigned long long)l->param[t],
					(unsigned long)want[t]);
				failures++;
			}
	}
	if (seen != 8) {
		fprintf(stderr, "rank %d: %d launches, expected 8\n", r->rank, seen);
		failures++;
	}
	/* step 1 read the other rank's shards, received into recv0 */
	CHECK(((unsigned char *)recv0k)[0] == 0x10 + (1 - r->rank) &&
	      ((unsigned char *)recv0v)[RKV - 1] == 0x20 + (1 - r->rank));
}

static void ring_cases(void)
{
	for (int i = 0; i < 5; i++)
		param_bytes(i, 8);
	unsigned char id[ATTNRT_COMM_ID_BYTES];
	CHECK(attnrt_comm_unique_id(id) == ATTNRT_OK);
	Rank ranks[2];
	pthread_t threads[2];
	memset(ranks, 0, sizeof ranks);
	for (int i = 0; i < 2; i++) {
		ranks[i].rank = i, ranks[i].id = id;
		CHECK(pthread_create(&threads[i], NULL, rank_main, &ranks[i]) == 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < 2; i++) {
		if (ranks[i].rc)
			fprintf(stderr, "rank %d: %s\n", i, ranks[i].msg);
		CHECK(ranks[i].rc == ATTNRT_OK);
		if (!ranks[i].rc)
			expect_rank(&ranks[i]);
	}
	for (int i = 0; i < 2; i++) {
		attnrt_stream_destroy(ranks[i].stream);
		free(ranks[i].k), free(ranks[i].v), free(ranks[i].ws);
	}
}
#endif

#ifdef CASE_DECODE
static void decode_cases(void *stream)
{
	enum { B = 4, HKV = 2, G = 4, M = 32768 };
	decode_gpu_args a;
	memset(&a, 0, sizeof a);
	a.B = B, a.HKV = HKV, a.G = G, a.M = M;
	decode_gpu_defaults(&a);
	a.q = (const void *)(uintptr_t)0x7f0000100000ull;
	a.K = (const void *)(uintptr_t)0x7f0010200000ull;
	a.V = (const void *)(uintptr_t)0x7f0020300000ull;
	a.kv_len = (const void *)(uintptr_t)0x7f0030400000ull;
	a.o = (void *)(uintptr_t)0x7f0040500000ull;
	a.lse = (void *)(uintptr_t)0x7f0050600000ull;
	long dims[] = {B, HKV, G, M, 128};
	CHECK(decode_part_keys(dims) == M);
	char msg[256];
	size_t sb = 0, wb = 0;

	/* packed heads take all rows: a part of them is refused */
	attn_gpu_part pt = {0, 4, 0, 0, 1, FIN, NULL, 0, NULL, 0};
	REFUSED(decode_launch_part(&a, &pt, stream),
		"decode: a kernel of packed query heads takes all query rows");
	pt.q_begin = 4, pt.q_end = 0;
	REFUSED(decode_launch_part(&a, &pt, stream),
		"decode: a kernel of packed query heads takes all query rows");
	REFUSED(decode_part_bytes(&a, &pt, &sb, &wb),
		"decode: a kernel of packed query heads takes all query rows");
	pt.q_begin = 0, pt.q_end = 9;
	REFUSED(decode_launch_part(&a, &pt, stream),
		"decode: the query rows [0, 9) are not a non-empty part of [0, 8)");
	REFUSED(decode_launch_part(&a, NULL, stream), "decode_launch_part: NULL part");
	pt = (attn_gpu_part){0, 8, 0, 0, 1, MERGE | FIN, NULL, 0, NULL, 0};
	long ncta = 2 * B; /* 8 rows in groups of G = 4, a CTA each, per batch */
	size_t st = (size_t)ncta * CTA_BYTES;
	snprintf(msg, sizeof msg,
		 "decode: the states need a 16-byte aligned buffer of %zu bytes (0 given)", st);
	REFUSED(decode_launch_part(&a, &pt, stream), msg);

	/* the launcher's split count: 100 SMs x 4 CTAs over 8 CTAs */
	long s0 = auto_splits(ncta, M);
	CHECK(s0 == 50); /* 132 SMs would make 66 */
	size_t want = split_bytes(ncta, s0), whole = 0;
	size_t cb = counter_bytes(ncta);
	CHECK(cb == 512 && want == cb + 50 * st);
	pt = (attn_gpu_part){0, 0, 0, 0, 0, FIN, NULL, 0, NULL, 0};
	CHECK(decode_part_bytes(&a, &pt, &sb, &wb) == ATTNRT_OK && sb == st && wb == want);
	/* stream-K: as many CTAs as run at once, each part of every row's tiles;
	** the workspace holds the counters, then ncta + P parts' states (the
	** CTAs' counts of the rows' tiles are in their shared memory) */
	long occ = 232448L / (SMEM + 1024), P;
	if (occ > 2048L / THREADS)
		occ = 2048L / THREADS;
	P = 100 * occ;
	size_t skb = cb + (size_t)(ncta + P) * CTA_BYTES;
	/* NAME_split_workspace_bytes: enough for split-KV's parts and stream-K */
	CHECK(decode_split_workspace_bytes(&a, &whole) == ATTNRT_OK &&
	      whole == (want > skb ? want : skb));

	unsigned char *ws = buffer(whole);
	pt.workspace = ws, pt.workspace_bytes = want;
	int before = ncalls();
	int rc = decode_launch_part(&a, &pt, stream);
	if (rc)
		fprintf(stderr, "decode_launch_part: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK && ncalls() == before + 2);
	expect_memset(__LINE__, before, ws, cb, stream);
	CHECK(ws[0] == 0 && ws[cb - 1] == 0 && ws[cb] == 0xab);
	/* 32768 keys in 50 parts: 656 rounded up to whole tiles */
	Launch e = {2, B, 50, 0, M, 704, 0, 8, (uintptr_t)ws + cb, (uintptr_t)ws, 0, FIN};
	expect_launch(__LINE__, before + 1, "decode_fwd_part", stream, &e);
	/* NAME_launch_split: split-KV where the workspace cannot hold stream-K
	** (below; where it can, stream-K's launch): 20 parts' makes 20 */
	CHECK(split_bytes(ncta, 20) < skb);
	before = ncalls();
	CHECK(decode_launch_split(&a, ws, split_bytes(ncta, 20), stream) == ATTNRT_OK);
	CHECK(ncalls() == before + 2);
	expect_memset(__LINE__, before, ws, cb, stream);
	e = (Launch){2, B, 20, 0, M, 1664, 0, 8, (uintptr_t)ws + cb, (uintptr_t)ws, 0, FIN};
	expect_launch(__LINE__, before + 1, "decode_fwd_part", stream, &e);
	/* too small for two: one part, nothing to zero */
	before = ncalls();
	CHECK(decode_launch_split(&a, ws, split_bytes(ncta, 2) - 1, stream) == ATTNRT_OK);
	CHECK(ncalls() == before + 1);
	e = (Launch){2, B, 1, 0, M, M, 0, 8, 0, 0, 0, FIN};
	expect_launch(__LINE__, before, "decode_fwd_part", stream, &e);
	/* explicit splits over some keys, states carried in */
	unsigned char *state = buffer(st);
	pt = (attn_gpu_part){0, 0, 1024, 4096, 4, MERGE, ws, want, state, st};
	before = ncalls();
	CHECK(decode_launch_part(&a, &pt, stream) == ATTNRT_OK && ncalls() == before + 2);
	expect_memset(__LINE__, before, ws, cb, stream);
	e = (Launch){
	    2,    B, 4, 1024, 4096, 768, 0, 8, (uintptr_t)ws + cb, (uintptr_t)ws, (uintptr_t)state,
	    MERGE};
	expect_launch(__LINE__, before + 1, "decode_fwd_part", stream, &e);
	free(ws), free(state);

	/* stream-K asked for */
	pt = (attn_gpu_part){0, 0, 0, 0, 0, FIN | 4, NULL, 0, NULL, 0};
	CHECK(decode_part_bytes(&a, &pt, &sb, &wb) == ATTNRT_OK && sb == st && wb == skb);
	snprintf(msg, sizeof msg,
		 "decode: %ld stream-K CTAs need a 16-byte aligned workspace of %zu bytes (0 "
		 "given)",
		 P, skb);
	REFUSED(decode_launch_part(&a, &pt, stream), msg);
	ws = buffer(skb);
	pt.workspace = ws, pt.workspace_bytes = skb;
	/* its two parameters after the mode: the grid's x and y */
	for (int i = 9; i < 11; i++)
		param_bytes(PART_SLOT + i, 8);
	record(PART_SLOT + 11 + NTMAPS);
	before = ncalls();
	rc = decode_launch_part(&a, &pt, stream);
	if (rc)
		fprintf(stderr, "decode_launch_part (stream-K): %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK && ncalls() == before + 2);
	expect_memset(__LINE__, before, ws, cb, stream);
	e = (Launch){(unsigned)P, 1, 1, 0, M, M, 0, 8, (uintptr_t)ws + cb, (uintptr_t)ws, 0, FIN};
	expect_launch(__LINE__, before + 1, "decode_fwd_streamk", stream, &e);
	/* then the plain grid (2 x 4) */
	const FakeCall *l = call(before + 1);
	CHECK(l && l->param[PART_SLOT + 9] == 2 && l->param[PART_SLOT + 10] == B);
	/* NAME_launch_split takes stream-K where the workspace holds it */
	before = ncalls();
	CHECK(decode_launch_split(&a, ws, skb, stream) == ATTNRT_OK && ncalls() == before + 2);
	expect_memset(__LINE__, before, ws, cb, stream);
	expect_launch(__LINE__, before + 1, "decode_fwd_streamk", stream, &e);
	/* more rows than a stream-K launch takes */
	a.B = 300;
	snprintf(msg, sizeof msg,
		 "decode: stream-K takes at most 512 CTAs of the plain grid (600) and groups of at "
		 "most %ld packed rows (4)",
		 THREADS > 128 ? BLOCK_M / 2L : 0L);
	REFUSED(decode_launch_part(&a, &pt, stream), msg);
	free(ws);
}
#endif

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: harness FAKECUDA.so [ring]\n");
		return 2;
	}
	setenv("ATTNRT_CUDA_DRIVER", argv[1], 1);
	setenv("ATTNRT_NCCL", argv[1], 1);
	setenv("FAKECUDA_SMS", "100", 1);
	CHECK(attnrt_init() == ATTNRT_OK);
	if (load_records(argv[1]))
		return 1;
#ifdef CASE_CAUSAL
	if (argc == 3 && !strcmp(argv[2], "ring")) {
		ring_cases();
		if (failures)
			fprintf(stderr, "gpu_iface_parts harness (ring): %d check(s) failed\n",
				failures);
		return failures ? 1 : 0;
	}
#endif
	void *stream = NULL;
	CHECK(attnrt_stream_create(&stream) == ATTNRT_OK && stream);
#ifdef CASE_CAUSAL
	causal_cases(stream);
	cp_cases(stream);
#else
	decode_cases(stream);
#endif
	CHECK(attnrt_stream_destroy(stream) == ATTNRT_OK);
	if (failures)
		fprintf(stderr, "gpu_iface_parts harness: %d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
