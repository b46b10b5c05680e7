/*
** test/unit/rt_ring.c: communicators and the ring (runtime/comm.c,
** runtime/ring.c) without a GPU. Without NCCL: ATTNRT_ERR_NO_NCCL and its
** message, and a communicator of one rank whose ring calls its one step on
** the local buffers with neither NCCL nor a driver. Then rings of 2, 3 and 4
** ranks, one thread each, against rt_fakecuda_nccl (a stand-in libcuda and
** libnccl in one module, loaded through ATTNRT_CUDA_DRIVER and ATTNRT_NCCL):
** each step sees the shard of rank (r - s + P) % P intact in local, recv0,
** recv1, recv0..., and rank 0's trace shows the order of the two streams'
** events, waits, groups and steps, the same on a second run (the stream and
** events are kept in the communicator); a step's failure and an NCCL
** failure stop every rank alike, with the caller's stream left waiting for
** a posted exchange; nothing is leaked. And every argument refusal.
**
** usage: test_rt_ring FAKECUDA_NCCL.so
*/
#include "rt_testutil.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "nccl.h"
#include "rt_fakecuda.h"

enum { NBUFS = 2, MAX_STEPS = 8 };

static const size_t shard_bytes[NBUFS] = {16, 24};

/* The fake's records, resolved once (the runtime loads the same module). */
static FakecudaTrace trace_of;
static FakecudaTraceClear trace_clear;
static FakecudaTraceAdd trace_add;
static FakecudaHandlesLive handles_live;

/* One rank of a ring: its buffers, and what its steps saw. */
typedef struct Rank {
	int rank, nranks, fail_at;
	const void *id;
	void *stream;
	void *local[NBUFS], *recv0[NBUFS], *recv1[NBUFS];
	int steps, bad, src[MAX_STEPS];
	char set[MAX_STEPS]; /* 'L', '0' or '1': the set each step got */
	int rc;
	char msg[512], trace[2][FAKECUDA_TRACE_BYTES];
} Rank;

/* Buffer i of rank src's shard holds this byte throughout. */
static unsigned char pattern(int src, int i)
{
	return (unsigned char)(0x10 * (src + 1) + i);
}

/* The compute a kernel would queue: here, look at the buffers now, since
** the fake has already done what the streams would have by then. */
static int step_fn(void *ctx, int step, int src_rank, void *const *bufs, void *stream)
{
	Rank *r = ctx;
	char set = bufs == r->local ? 'L' : bufs == r->recv0 ? '0' : bufs == r->recv1 ? '1' : '?';
	if (step != r->steps || stream != r->stream || r->steps >= MAX_STEPS)
		r->bad++;
	for (int i = 0; i < NBUFS; i++)
		for (size_t k = 0; k < shard_bytes[i]; k++)
			if (((unsigned char *)bufs[i])[k] != pattern(src_rank, i)) {
				r->bad++;
				break;
			}
	if (r->steps < MAX_STEPS) {
		r->src[r->steps] = src_rank;
		r->set[r->steps] = set;
	}
	r->steps++;
	trace_add("step %d from %d %c; ", step, src_rank, set);
	if (step == r->fail_at)
		return attnrt_set_error(ATTNRT_ERR_ARGUMENT, "step %d refused", step);
	return ATTNRT_OK;
}

/* One rank's thread: its device, communicator, stream and buffers, and two
** rings unless the first fails. */
static void *rank_main(void *arg)
{
	Rank *r = arg;
	AttnrtComm *comm = NULL;
	r->rc = attnrt_use_device(r->rank);
	if (!r->rc)
		r->rc = attnrt_comm_init(&comm, r->nranks, r->rank, r->id);
	if (!r->rc)
		r->rc = attnrt_stream_create(&r->stream);
	for (int i = 0; i < NBUFS && !r->rc; i++) {
		r->local[i] = malloc(shard_bytes[i]);
		r->recv0[i] = malloc(shard_bytes[i]);
		r->recv1[i] = malloc(shard_bytes[i]);
		r->rc = attnrt_memset(r->local[i], pattern(r->rank, i), shard_bytes[i]);
		if (!r->rc)
			r->rc = attnrt_memset_async(r->recv0[i], 0xee, shard_bytes[i], r->stream);
		if (!r->rc)
			r->rc = attnrt_memset_async(r->recv1[i], 0xee, shard_bytes[i], r->stream);
	}
	for (int run = 0; run < 2 && !r->rc; run++) {
		trace_clear();
		r->steps = 0;
		r->rc = attnrt_ring_run(comm, NBUFS, r->local, shard_bytes, r->recv0, r->recv1,
					step_fn, r, r->stream);
		snprintf(r->trace[run], sizeof r->trace[run], "%s", trace_of());
	}
	if (r->rc)
		snprintf(r->msg, sizeof r->msg, "%s", attnrt_last_error());
	if (r->stream && attnrt_stream_synchronize(r->stream) != ATTNRT_OK)
		r->bad++;
	attnrt_stream_destroy(r->stream);
	attnrt_comm_destroy(comm);
	for (int i = 0; i < NBUFS; i++) {
		free(r->local[i]);
		free(r->recv0[i]);
		free(r->recv1[i]);
	}
	return NULL;
}

/* Runs a ring of nranks threads; ranks[] keeps what each saw. */
static void run_world(Rank *ranks, int nranks, int fail_at)
{
	unsigned char id[ATTNRT_COMM_ID_BYTES];
	CHECK(attnrt_comm_unique_id(id) == ATTNRT_OK);
	pthread_t threads[MAX_STEPS];
	for (int i = 0; i < nranks; i++) {
		memset(&ranks[i], 0, sizeof ranks[i]);
		ranks[i].rank = i;
		ranks[i].nranks = nranks;
		ranks[i].fail_at = fail_at;
		ranks[i].id = id;
		CHECK(pthread_create(&threads[i], NULL, rank_main, &ranks[i]) == 0);
	}
	for (int i = 0; i < nranks; i++)
		pthread_join(threads[i], NULL);
	CHECK(handles_live() == 0);
}

/* Rank 0's exchange of one step: to rank 1, from rank P - 1. */
static const char *group_text(int nranks)
{
	static char text[256];
	snprintf(text, sizeof text,
		 "group; send 16 to 1 s2; send 24 to 1 s2; recv 16 from %d s2; recv 24 from %d "
		 "s2; end; ",
		 nranks - 1, nranks - 1);
	return text;
}

/* A whole ring: every rank saw every shard in order, in the right set. */
static void check_ring(int nranks, const char *want0)
{
	Rank ranks[MAX_STEPS];
	run_world(ranks, nranks, -1);
	for (int r = 0; r < nranks; r++) {
		Rank *k = &ranks[r];
		if (k->rc)
			fprintf(stderr, "P = %d, rank %d: %s\n", nranks, r, k->msg);
		CHECK(k->rc == ATTNRT_OK && k->bad == 0 && k->steps == nranks);
		for (int s = 0; s < nranks && s < MAX_STEPS; s++) {
			CHECK(k->src[s] == (r - s + nranks) % nranks);
			CHECK(k->set[s] == (s == 0 ? 'L' : s % 2 ? '0' : '1'));
		}
	}
	CHECK_STR(ranks[0].trace[0], want0);
	CHECK_STR(ranks[0].trace[1], want0);
}

static void test_rings(void)
{
	char g2[256], g3[256], g4[256], want[4096];
	snprintf(g2, sizeof g2, "%s", group_text(2));
	snprintf(g3, sizeof g3, "%s", group_text(3));
	snprintf(g4, sizeof g4, "%s", group_text(4));

	snprintf(want, sizeof want,
		 "record e1 s1; wait s2 e1; %srecord e2 s2; step 0 from 0 L; wait s1 e2; "
		 "step 1 from 1 0; ",
		 g2);
	check_ring(2, want);

	snprintf(want, sizeof want,
		 "record e1 s1; wait s2 e1; %srecord e2 s2; step 0 from 0 L; %srecord e3 s2; "
		 "wait s1 e2; step 1 from 2 0; wait s1 e3; step 2 from 1 1; ",
		 g3, g3);
	check_ring(3, want);

	/* recv0 is received into again: after step 1, which read it, is done */
	snprintf(want, sizeof want,
		 "record e1 s1; wait s2 e1; %srecord e2 s2; step 0 from 0 L; %srecord e3 s2; "
		 "wait s1 e2; step 1 from 3 0; record e4 s1; wait s2 e4; %srecord e2 s2; "
		 "wait s1 e3; step 2 from 2 1; wait s1 e2; step 3 from 1 0; ",
		 g4, g4, g4);
	check_ring(4, want);
}

/* A step that fails stops the ring with its code and message; the caller's
** stream still waits for the exchange already posted. */
static void test_failures(void)
{
	Rank ranks[2];
	char want[1024];
	run_world(ranks, 2, 0);
	for (int r = 0; r < 2; r++) {
		CHECK(ranks[r].rc == ATTNRT_ERR_ARGUMENT && ranks[r].steps == 1);
		CHECK_STR(ranks[r].msg, "attnrt: step 0 refused");
	}
	snprintf(want, sizeof want,
		 "record e1 s1; wait s2 e1; %srecord e2 s2; step 0 from 0 L; wait s1 e2; ",
		 group_text(2));
	CHECK_STR(ranks[0].trace[0], want);

	/* NCCL refuses the first send: the group is closed, no step runs */
	setenv("FAKENCCL_FAIL", "ncclSend", 1);
	run_world(ranks, 2, -1);
	unsetenv("FAKENCCL_FAIL");
	for (int r = 0; r < 2; r++)
		CHECK(ranks[r].rc == ATTNRT_ERR_COMM && ranks[r].steps == 0);
	CHECK_STR(ranks[0].msg, "attnrt: attnrt_ring_run: ncclSend (step 0, buffer 0, 16 bytes to "
				"rank 1): invalid usage (NCCL error 5)");
	CHECK_STR(ranks[0].trace[0], "record e1 s1; wait s2 e1; group; send 16 to 1 s2; end; ");

	setenv("FAKENCCL_FAIL", "ncclCommInitRank", 1);
	unsigned char id[ATTNRT_COMM_ID_BYTES];
	AttnrtComm *comm = NULL;
	CHECK(attnrt_comm_unique_id(id) == ATTNRT_OK);
	CHECK_FAIL(attnrt_comm_init(&comm, 2, 1, id), ATTNRT_ERR_COMM,
		   "attnrt: ncclCommInitRank (rank 1 of 2): invalid usage (NCCL error 5)");
	CHECK(comm == NULL);
	unsetenv("FAKENCCL_FAIL");
}

/* The step of a one-rank ring: called once, on local, from rank 0. */
static int one_step(void *ctx, int step, int src_rank, void *const *bufs, void *stream)
{
	int *seen = ctx;
	seen[0]++;
	seen[1] = step;
	seen[2] = src_rank;
	seen[3] = bufs[0] == (void *)seen && stream == (void *)(uintptr_t)0x77;
	return seen[4];
}

/* No NCCL and no driver: one rank still runs; more say what is missing. */
static void test_no_nccl(void)
{
	setenv("ATTNRT_NCCL", "/nonexistent", 1);
	setenv("ATTNRT_CUDA_DRIVER", "/nonexistent", 1);
	attnrt_set_driver_for_testing(NULL);
	attnrt_nccl_reset_for_testing();
	const char *msg =
	    "attnrt: no NCCL: /nonexistent could not be loaded (not found; named by ATTNRT_NCCL)";
	unsigned char id[ATTNRT_COMM_ID_BYTES] = {0};
	CHECK_FAIL(attnrt_comm_unique_id(id), ATTNRT_ERR_NO_NCCL, msg);
	CHECK_FAIL(attnrt_comm_unique_id(id), ATTNRT_ERR_NO_NCCL, msg);
	AttnrtComm *comm = (AttnrtComm *)id;
	CHECK_FAIL(attnrt_comm_init(&comm, 2, 0, id), ATTNRT_ERR_NO_NCCL, msg);
	CHECK(comm == NULL);
	CHECK_FAIL(attnrt_comm_wrap(&comm, id, 2, 1), ATTNRT_ERR_NO_NCCL, msg);

	CHECK(attnrt_comm_init(&comm, 1, 0, NULL) == ATTNRT_OK && comm != NULL);
	int rank = -1, nranks = -1;
	CHECK(attnrt_comm_rank(comm, &rank, &nranks) == ATTNRT_OK && rank == 0 && nranks == 1);
	int seen[5] = {0, -1, -1, 0, 0};
	void *local[] = {seen};
	size_t bytes[] = {sizeof seen};
	void *stream = (void *)(uintptr_t)0x77;
	CHECK(attnrt_ring_run(comm, 1, local, bytes, NULL, NULL, one_step, seen, stream) ==
	      ATTNRT_OK);
	CHECK(seen[0] == 1 && seen[1] == 0 && seen[2] == 0 && seen[3] == 1);
	seen[4] = ATTNRT_ERR_RESOURCES;
	CHECK(attnrt_ring_run(comm, 1, local, bytes, NULL, NULL, one_step, seen, stream) ==
	      ATTNRT_ERR_RESOURCES);
	CHECK(seen[0] == 2);
	attnrt_comm_destroy(comm);

	CHECK(attnrt_comm_wrap(&comm, NULL, 1, 0) == ATTNRT_OK);
	CHECK(attnrt_comm_rank(comm, NULL, &nranks) == ATTNRT_OK && nranks == 1);
	attnrt_comm_destroy(comm);
	attnrt_comm_destroy(NULL);
}

/* Each refusal, before any NCCL or driver call. */
static void test_arguments(void)
{
	unsigned char id[ATTNRT_COMM_ID_BYTES] = {0};
	AttnrtComm *comm = NULL;
	CHECK_FAIL(attnrt_comm_unique_id(NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_unique_id: NULL id");
	CHECK_FAIL(attnrt_comm_init(NULL, 1, 0, id), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_init: NULL comm");
	CHECK_FAIL(attnrt_comm_init(&comm, 0, 0, id), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_init: nranks is 0; at least 1 is needed");
	CHECK_FAIL(attnrt_comm_init(&comm, 2, 2, id), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_init: rank 2 is outside 0 .. 1");
	CHECK_FAIL(attnrt_comm_init(&comm, 2, -1, id), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_init: rank -1 is outside 0 .. 1");
	CHECK_FAIL(attnrt_comm_init(&comm, 2, 0, NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_init: NULL id (2 ranks need a unique id)");
	CHECK_FAIL(attnrt_comm_wrap(&comm, NULL, 2, 0), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_wrap: NULL nccl_comm (2 ranks)");
	CHECK_FAIL(attnrt_comm_wrap(&comm, id, 3, 3), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_wrap: rank 3 is outside 0 .. 2");
	CHECK_FAIL(attnrt_comm_rank(NULL, NULL, NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_comm_rank: NULL comm");
	CHECK(comm == NULL);

	/* a communicator of two ranks around a handle the ring never reaches */
	CHECK(attnrt_comm_wrap(&comm, id, 2, 0) == ATTNRT_OK);
	char a[16], b[16], c[16], e[16];
	void *local[] = {a, b}, *recv0[] = {c, e}, *recv1[] = {e, c};
	void *holes[] = {a, NULL}, *late_hole[] = {e, NULL}, *same[] = {c, c};
	size_t bytes[] = {16, 16}, zero[] = {16, 0};
	const char *f = "attnrt: attnrt_ring_run: ";
	char want[256];
#define REFUSED(call, text)                                                                        \
	do {                                                                                       \
		snprintf(want, sizeof want, "%s%s", f, text);                                      \
		CHECK_FAIL(call, ATTNRT_ERR_ARGUMENT, want);                                       \
	} while (0)
	REFUSED(attnrt_ring_run(NULL, 2, local, bytes, recv0, recv1, one_step, NULL, NULL),
		"NULL comm");
	REFUSED(attnrt_ring_run(comm, 0, local, bytes, recv0, recv1, one_step, NULL, NULL),
		"nbufs is 0; 1 to 8 buffers per set");
	REFUSED(attnrt_ring_run(comm, 9, local, bytes, recv0, recv1, one_step, NULL, NULL),
		"nbufs is 9; 1 to 8 buffers per set");
	REFUSED(attnrt_ring_run(comm, 2, NULL, bytes, recv0, recv1, one_step, NULL, NULL),
		"NULL local");
	REFUSED(attnrt_ring_run(comm, 2, local, NULL, recv0, recv1, one_step, NULL, NULL),
		"NULL bytes");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, recv0, recv1, NULL, NULL, NULL),
		"NULL step");
	REFUSED(attnrt_ring_run(comm, 2, holes, bytes, recv0, recv1, one_step, NULL, NULL),
		"local[1] is NULL");
	REFUSED(attnrt_ring_run(comm, 2, local, zero, recv0, recv1, one_step, NULL, NULL),
		"bytes[1] is 0");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, NULL, recv1, one_step, NULL, NULL),
		"NULL recv0 (2 ranks need both sets)");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, recv0, NULL, one_step, NULL, NULL),
		"NULL recv1 (2 ranks need both sets)");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, recv0, late_hole, one_step, NULL, NULL),
		"recv1[1] is NULL");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, same, recv1, one_step, NULL, NULL),
		"recv0[1] and recv1[1] are the same buffer");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, local, recv1, one_step, NULL, NULL),
		"local[0] and recv0[0] are the same buffer");
	REFUSED(attnrt_ring_run(comm, 2, local, bytes, recv0, local, one_step, NULL, NULL),
		"local[0] and recv1[0] are the same buffer");
#undef REFUSED
	attnrt_comm_destroy(comm);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_rt_ring FAKECUDA_NCCL.so\n");
		return 2;
	}
	test_no_nccl();

	/* from here on, the fake driver and NCCL (one module) */
	setenv("ATTNRT_CUDA_DRIVER", argv[1], 1);
	setenv("ATTNRT_NCCL", argv[1], 1);
	setenv("FAKECUDA_DEVICES", "4", 1);
	attnrt_set_driver_for_testing(NULL);
	attnrt_nccl_reset_for_testing();
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	void *syms[4] = {NULL};
	const char *names[4] = {"fakecuda_trace", "fakecuda_trace_clear", "fakecuda_trace_add",
				"fakecuda_handles_live"};
	for (int i = 0; h && i < 4; i++)
		syms[i] = dlsym(h, names[i]);
	if (!syms[0] || !syms[1] || !syms[2] || !syms[3]) {
		fprintf(stderr, "%s lacks the fakecuda_* records (%s)\n", argv[1], dlerror());
		return 1;
	}
	memcpy(&trace_of, &syms[0], sizeof trace_of);
	memcpy(&trace_clear, &syms[1], sizeof trace_clear);
	memcpy(&trace_add, &syms[2], sizeof trace_add);
	memcpy(&handles_live, &syms[3], sizeof handles_live);

	test_arguments();
	test_rings();
	test_failures();

	attnrt_set_driver_for_testing(NULL);
	attnrt_nccl_reset_for_testing();
	dlclose(h);
	return rt_report("rt_ring");
}
