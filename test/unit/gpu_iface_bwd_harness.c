/*
** test/unit/gpu_iface_bwd_harness.c: built by test_gpu_iface_bwd
** (gpu_iface_bwd.c) with the launchers of examples/causal.attn's forward
** and backward it generated, and libattnrt. Runs them against rt_fakecuda
** and checks, from the fake's log of launches, what lowering/gpu/
** iface_bwd.c says: the workspace's size (the row pass's f32 result,
** 256-byte aligned), a workspace too small or missing refused with nothing
** queued, and NAME_bwd_launch as four launches on the caller's stream in
** order (row pass, dQ, dV, dK) with their grids, the row pass writing
** into the workspace and the kernels reading the caller's tensors.
**
** usage: harness FAKECUDA.so
*/
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "causal.h"
#include "rt_fakecuda.h"

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static FakecudaCalls ncalls;
static FakecudaCall call;
static FakecudaParamBytes param_bytes;
static FakecudaRecordParams record;

/* The fake's records, resolved from the module the runtime loaded. */
static int load_records(const char *fake)
{
	void *h = dlopen(fake, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD), *s;
	if (h && (s = dlsym(h, "fakecuda_calls")))
		memcpy(&ncalls, &s, sizeof s);
	if (h && (s = dlsym(h, "fakecuda_call")))
		memcpy(&call, &s, sizeof s);
	if (h && (s = dlsym(h, "fakecuda_param_bytes")))
		memcpy(&param_bytes, &s, sizeof s);
	if (h && (s = dlsym(h, "fakecuda_record_params")))
		memcpy(&record, &s, sizeof s);
	if (!ncalls || !call || !param_bytes || !record) {
		fprintf(stderr, "harness: %s lacks the fakecuda_* records\n", fake);
		return 1;
	}
	/* the first nine parameters are 8 bytes in every piece: tensor
	** pointers, then strides */
	for (int i = 0; i < 9; i++)
		param_bytes(i, 8);
	record(9);
	return 0;
}

/* A device address of the fake's (16-byte aligned, never dereferenced). */
static void *fake_ptr(int i)
{
	return (void *)(uintptr_t)(0x1000000u * (unsigned)(i + 1));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: harness FAKECUDA.so\n");
		return 2;
	}
	setenv("ATTNRT_CUDA_DRIVER", argv[1], 1);
	CHECK(attnrt_init() == ATTNRT_OK);
	if (load_records(argv[1]))
		return 1;
	void *stream = NULL;
	CHECK(attnrt_stream_create(&stream) == ATTNRT_OK && stream);
	causal_bwd_gpu_args a;
	memset(&a, 0, sizeof a);
	a.B = 2, a.H = 3, a.N = 300;
	causal_bwd_gpu_defaults(&a);
	CHECK(a.D == 128 && a.scale > 0.088f && a.scale < 0.0885f);
	a.Q = fake_ptr(0), a.K = fake_ptr(1), a.V = fake_ptr(2), a.O = fake_ptr(3);
	a.L = fake_ptr(4), a.dO = fake_ptr(5), a.dL = fake_ptr(6);
	a.dQ = fake_ptr(7), a.dK = fake_ptr(8), a.dV = fake_ptr(9);
	/* Delta: B H N f32, then dQ's sums, B H N D f32, each 256-byte aligned;
	** host memory, since the fake's fill writes it */
	size_t dbytes = (2 * 3 * 300 * 4 + 255) / 256 * 256;
	size_t need = dbytes + (2 * 3 * 300 * 128 * 4 + 255) / 256 * 256;
	CHECK(causal_bwd_workspace_bytes(&a) == need);
	void *ws = aligned_alloc(256, need);
	CHECK(ws != NULL);
	if (!ws)
		return 1;
	int before = ncalls();
	CHECK(causal_bwd_launch_atomic(&a, ws, need - 1, stream) == ATTNRT_ERR_ARGUMENT);
	CHECK(causal_bwd_launch(&a, ws, dbytes - 1, stream) == ATTNRT_ERR_ARGUMENT);
	CHECK(strstr(attnrt_last_error(), "causal_bwd: the workspace has") != NULL);
	CHECK(causal_bwd_launch(&a, NULL, need, stream) == ATTNRT_ERR_ARGUMENT);
	CHECK(ncalls() == before);
	/* a missing tensor: the piece that reads it refuses, nothing after it */
	a.dL = NULL;
	CHECK(causal_bwd_launch(&a, ws, need, stream) != ATTNRT_OK);
	a.dL = fake_ptr(6);
	before = ncalls();
	/* the fixed order needs the row pass's part of the workspace alone */
	CHECK(causal_bwd_launch(&a, ws, dbytes, stream) == ATTNRT_OK);
	CHECK(ncalls() == before + 3);
	static const char *const names[3] = {"causal_bwd_pre_fwd", "causal_bwd_dq_fwd",
					     "causal_bwd_dkv_fwd"};
	/* the row pass: 128 rows a CTA; the others 64 (the unit test's values) */
	static const unsigned gx[3] = {3, 5, 5};
	for (int i = 0; i < 3; i++) {
		const FakeCall *k = call(before + i);
		CHECK(k && k->kind == 'l');
		if (!k)
			continue;
		CHECK(!strcmp(k->name, names[i]));
		CHECK(k->stream == (uintptr_t)stream);
		CHECK(k->grid[0] == gx[i] && k->grid[1] == 6 && k->grid[2] == 1);
	}
	/* the launch with dQ fused into the dK/dV kernel: its sums zeroed on
	** the stream, then the row pass, dK and dV with dQ's sums, their
	** conversion */
	int fast = ncalls();
	CHECK(causal_bwd_launch_atomic(&a, ws, dbytes, stream) == ATTNRT_ERR_ARGUMENT);
	CHECK(causal_bwd_launch_atomic(&a, ws, need, stream) == ATTNRT_OK);
	CHECK(ncalls() == fast + 4);
	const FakeCall *m = call(fast);
	CHECK(m && m->kind == 'm' && m->dst == (uintptr_t)ws + dbytes &&
	      m->bytes == need - dbytes && m->value == 0 && m->stream == (uintptr_t)stream);
	static const char *const fnames[3] = {"causal_bwd_pre_fwd", "causal_bwd_dkvq_fwd",
					      "causal_bwd_post_fwd"};
	for (int i = 0; i < 3; i++) {
		const FakeCall *k = call(fast + 1 + i);
		CHECK(k && k->kind == 'l' && !strcmp(k->name, fnames[i]) &&
		      k->stream == (uintptr_t)stream);
	}
	/* the dK/dV kernel adds to the sums in the workspace; the conversion
	** reads them and writes the caller's dQ */
	const FakeCall *dkq = call(fast + 2), *post = call(fast + 3);
	int sums = 0;
	for (int p = 0; dkq && p < 9; p++)
		sums |= dkq->param[p] == (uintptr_t)ws + dbytes;
	CHECK(sums);
	CHECK(post && post->param[0] == (uintptr_t)ws + dbytes &&
	      post->param[1] == (uintptr_t)a.dQ);
	/* the row pass reads O and dO and writes Delta into the workspace */
	const FakeCall *pre = call(before);
	CHECK(pre && pre->param[0] == (uintptr_t)a.O && pre->param[1] == (uintptr_t)a.dO &&
	      pre->param[2] == (uintptr_t)ws);
	/* dQ's first tensors are the caller's Q, K, V */
	const FakeCall *dq = call(before + 1);
	CHECK(dq && dq->param[0] == (uintptr_t)a.Q && dq->param[1] == (uintptr_t)a.K &&
	      dq->param[2] == (uintptr_t)a.V);
	CHECK(attnrt_stream_destroy(stream) == ATTNRT_OK);
	free(ws);
	if (failures)
		fprintf(stderr, "gpu_iface_bwd harness: %d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
