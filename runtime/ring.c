/*
** runtime/ring.c: ring attention's K/V rotation, written once for any
** kernel. P ranks pass their shards around a ring over NCCL while each
** computes on the shard it holds; the caller's callback queues that compute.
** Two streams: the caller's, on which every step runs, and the
** communicator's own, on which every exchange runs, so that step s overlaps
** the exchange that brings step s + 1's shard. They are ordered by events
** only (the host never waits): the first exchange after the caller's prior
** work, each step after the receive of its set, each receive after the
** step that last read the set it overwrites, and on return the caller's
** stream after everything. The stream and events are made once per
** communicator and kept in it (runtime/nccl.h's AttnrtComm): events are
** re-recorded freely, since a stream waits for an event's record of the
** time of the wait.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>

#include "nccl.h"

#define MAX_BUFS 8

/* The set of buffers step s reads: local, then recv0, recv1, recv0... */
static void *const *set_of(int s, void *const *local, void *const *recv0, void *const *recv1)
{
	return s == 0 ? local : s % 2 ? recv0 : recv1;
}

/* Which receive set (0: recv0, 1: recv1) step s >= 1 reads. */
static int recv_index(int s)
{
	return s % 2 ? 0 : 1;
}

/* Every precondition as its own one-line message, before any work. */
static int check_args(const AttnrtComm *comm, int nbufs, void *const *local, const size_t *bytes,
		      void *const *recv0, void *const *recv1, AttnrtRingStep step)
{
	const char *f = "attnrt_ring_run";
	if (!comm)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: NULL comm", f);
	if (nbufs < 1 || nbufs > MAX_BUFS)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: nbufs is %d; 1 to %d buffers per set",
				   f, nbufs, MAX_BUFS);
	if (!local || !bytes || !step)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: NULL %s", f,
				   !local   ? "local"
				   : !bytes ? "bytes"
					    : "step");
	for (int i = 0; i < nbufs; i++) {
		if (!local[i])
			return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: local[%d] is NULL", f, i);
		if (bytes[i] == 0)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: bytes[%d] is 0", f, i);
	}
	if (comm->nranks == 1)
		return ATTNRT_OK;
	if (!recv0 || !recv1)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: NULL %s (%d ranks need both sets)", f,
				   !recv0 ? "recv0" : "recv1", comm->nranks);
	for (int i = 0; i < nbufs; i++) {
		if (!recv0[i] || !recv1[i])
			return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s[%d] is NULL", f,
					   !recv0[i] ? "recv0" : "recv1", i);
		if (recv0[i] == local[i] || recv1[i] == local[i] || recv0[i] == recv1[i])
			return attnrt_fail(
			    ATTNRT_ERR_ARGUMENT, "%s: %s[%d] and %s[%d] are the same buffer", f,
			    recv0[i] == recv1[i] ? "recv0" : "local", i,
			    recv1[i] == local[i] || recv0[i] == recv1[i] ? "recv1" : "recv0", i);
	}
	return ATTNRT_OK;
}

/* The stream and events of comm's rings, made on its first one; a driver
** that lacks what the ring needs is said before anything is made. */
static int ring_resources(const AttnrtDriver *d, AttnrtComm *comm)
{
	if (comm->stream)
		return ATTNRT_OK;
	const char *f = "attnrt_ring_run";
	if (!d->cuStreamCreate)
		return attnrt_fail_missing(d, "cuStreamCreate", f);
	if (!d->cuStreamDestroy)
		return attnrt_fail_missing(d, "cuStreamDestroy", f);
	if (!d->cuStreamWaitEvent)
		return attnrt_fail_missing(d, "cuStreamWaitEvent", f);
	ARevent events[5] = {NULL};
	ARstream s = NULL;
	ARresult r = d->cuStreamCreate(&s, AR_CU_STREAM_NON_BLOCKING);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "%s: cuStreamCreate", f);
	for (int i = 0; i < 5; i++) {
		r = d->cuEventCreate(&events[i], AR_CU_EVENT_DISABLE_TIMING);
		if (r != AR_CUDA_SUCCESS) {
			int rc = attnrt_fail_cuda(d, r, "%s: cuEventCreate", f);
			while (i-- > 0)
				d->cuEventDestroy(events[i]);
			d->cuStreamDestroy(s);
			return rc;
		}
	}
	comm->stream = s;
	comm->caller_ready = events[0];
	comm->received[0] = events[1];
	comm->received[1] = events[2];
	comm->consumed[0] = events[3];
	comm->consumed[1] = events[4];
	return ATTNRT_OK;
}

/* waiter waits (on the device) for event's record on recorder. */
static int order_after(const AttnrtDriver *d, ARstream waiter, ARstream recorder, ARevent event,
		       const char *what)
{
	ARresult r = d->cuEventRecord(event, recorder);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "attnrt_ring_run: cuEventRecord (%s)", what);
	r = d->cuStreamWaitEvent(waiter, event, 0);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "attnrt_ring_run: cuStreamWaitEvent (%s)", what);
	return ATTNRT_OK;
}

/* Step s's exchange, one NCCL group on comm's stream: send to the right,
** receive from the left. A failed call still closes the group, so NCCL is
** never left inside one; the first error is the one reported. */
static int exchange(const AttnrtNccl *n, const AttnrtComm *comm, int s, int nbufs,
		    void *const *send, void *const *recv, const size_t *bytes)
{
	int right = (comm->rank + 1) % comm->nranks;
	int left = (comm->rank - 1 + comm->nranks) % comm->nranks;
	ARncclResult r = n->ncclGroupStart();
	if (r != AR_NCCL_SUCCESS)
		return attnrt_fail_nccl(n, r, "attnrt_ring_run: ncclGroupStart (step %d)", s);
	int rc = ATTNRT_OK;
	for (int i = 0; i < nbufs && !rc; i++) {
		r = n->ncclSend(send[i], bytes[i], AR_NCCL_INT8, right, comm->nccl, comm->stream);
		if (r != AR_NCCL_SUCCESS)
			rc = attnrt_fail_nccl(
			    n, r,
			    "attnrt_ring_run: ncclSend (step %d, buffer %d, %zu bytes to rank %d)",
			    s, i, bytes[i], right);
	}
	for (int i = 0; i < nbufs && !rc; i++) {
		r = n->ncclRecv(recv[i], bytes[i], AR_NCCL_INT8, left, comm->nccl, comm->stream);
		if (r != AR_NCCL_SUCCESS)
			rc = attnrt_fail_nccl(n, r,
					      "attnrt_ring_run: ncclRecv (step %d, buffer %d, %zu "
					      "bytes from rank %d)",
					      s, i, bytes[i], left);
	}
	r = n->ncclGroupEnd();
	if (r != AR_NCCL_SUCCESS && !rc)
		rc = attnrt_fail_nccl(n, r, "attnrt_ring_run: ncclGroupEnd (step %d)", s);
	return rc;
}

/* The steps in order, each exchange posted before the step it overlaps. */
int attnrt_ring_run(AttnrtComm *comm, int nbufs, void *const *local, const size_t *bytes,
		    void *const *recv0, void *const *recv1, AttnrtRingStep step, void *ctx,
		    void *stream)
{
	int rc = check_args(comm, nbufs, local, bytes, recv0, recv1, step);
	if (rc)
		return rc;
	int nranks = comm->nranks, rank = comm->rank;
	if (nranks == 1)
		return step(ctx, 0, 0, local, stream);
	const AttnrtNccl *n;
	const AttnrtDriver *d;
	if ((rc = attnrt_nccl(&n)) != 0 || (rc = attnrt_context(&d, NULL, NULL)) != 0 ||
	    (rc = ring_resources(d, comm)) != 0)
		return rc;
	ARstream caller = (ARstream)stream;
	if ((rc = order_after(d, comm->stream, caller, comm->caller_ready, "the caller's stream")))
		return rc;
	int unwaited = -1; /* a received[] the caller's stream has not waited for */
	for (int s = 0; s < nranks && !rc; s++) {
		void *const *cur = set_of(s, local, recv0, recv1);
		if (s + 1 < nranks) {
			int next = recv_index(s + 1);
			ARresult r = AR_CUDA_SUCCESS;
			/* the set received into was read by step s - 1 */
			if (s >= 2)
				r = d->cuStreamWaitEvent(comm->stream, comm->consumed[next], 0);
			if (r != AR_CUDA_SUCCESS) {
				rc = attnrt_fail_cuda(d, r,
						      "attnrt_ring_run: cuStreamWaitEvent (step %d "
						      "read recv%d)",
						      s - 1, next);
				break;
			}
			rc = exchange(n, comm, s, nbufs, cur, set_of(s + 1, local, recv0, recv1),
				      bytes);
			if (rc)
				break;
			r = d->cuEventRecord(comm->received[next], comm->stream);
			if (r != AR_CUDA_SUCCESS) {
				rc = attnrt_fail_cuda(
				    d, r, "attnrt_ring_run: cuEventRecord (recv%d received)", next);
				break;
			}
			unwaited = next;
		}
		if (s >= 1) {
			int at = recv_index(s);
			ARresult r = d->cuStreamWaitEvent(caller, comm->received[at], 0);
			if (r != AR_CUDA_SUCCESS) {
				rc = attnrt_fail_cuda(
				    d, r, "attnrt_ring_run: cuStreamWaitEvent (recv%d received)",
				    at);
				break;
			}
			if (unwaited == at)
				unwaited = -1;
		}
		rc = step(ctx, s, (rank - s + nranks) % nranks, cur, stream);
		/* the set is received into again in step s + 1's exchange */
		if (!rc && s >= 1 && s + 2 < nranks) {
			ARresult r = d->cuEventRecord(comm->consumed[recv_index(s)], caller);
			if (r != AR_CUDA_SUCCESS)
				rc = attnrt_fail_cuda(
				    d, r, "attnrt_ring_run: cuEventRecord (recv%d consumed)",
				    recv_index(s));
		}
	}
	/* stopped early: the caller's stream still waits for the posted
	** exchange, so that its synchronize covers it (the first error stays) */
	if (unwaited >= 0) {
		ARresult r = d->cuStreamWaitEvent(caller, comm->received[unwaited], 0);
		if (r != AR_CUDA_SUCCESS && !rc)
			rc = attnrt_fail_cuda(d, r,
					      "attnrt_ring_run: cuStreamWaitEvent (the "
					      "ring's last exchange)");
	}
	return rc;
}
