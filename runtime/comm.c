/*
** runtime/comm.c: communicators (AttnrtComm), an NCCL communicator and
** this rank's place in it, plus what the ring keeps between calls. One of
** a single rank needs neither NCCL nor a GPU, so a program written for P
** ranks runs unchanged, and is tested, with P = 1.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "nccl.h"

/* One check for init and wrap, so both refuse the same things alike. */
static int check_ranks(const char *call, AttnrtComm **comm, int nranks, int rank)
{
	if (!comm)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: NULL comm", call);
	*comm = NULL;
	if (nranks < 1)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: nranks is %d; at least 1 is needed",
				   call, nranks);
	if (rank < 0 || rank >= nranks)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: rank %d is outside 0 .. %d", call,
				   rank, nranks - 1);
	return ATTNRT_OK;
}

/* The AttnrtComm around nccl, with nothing of the ring's made yet. */
static int comm_new(AttnrtComm **comm, ARncclComm nccl, int nranks, int rank, int owns_nccl)
{
	AttnrtComm *c = calloc(1, sizeof *c);
	if (!c)
		return attnrt_fail(ATTNRT_ERR_NOMEM, "out of memory for a communicator");
	c->nccl = nccl;
	c->nranks = nranks;
	c->rank = rank;
	c->owns_nccl = owns_nccl;
	*comm = c;
	return ATTNRT_OK;
}

/* Rank 0 makes the id; NCCL's bootstrap finds the others through it. */
int attnrt_comm_unique_id(void *id)
{
	if (!id)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_comm_unique_id: NULL id");
	const AttnrtNccl *n;
	int rc = attnrt_nccl(&n);
	if (rc)
		return rc;
	ARncclUniqueId uid;
	memset(&uid, 0, sizeof uid);
	ARncclResult r = n->ncclGetUniqueId(&uid);
	if (r != AR_NCCL_SUCCESS)
		return attnrt_fail_nccl(n, r, "ncclGetUniqueId");
	memcpy(id, uid.internal, sizeof uid.internal);
	return ATTNRT_OK;
}

/* NCCL binds a communicator to the device current at its creation: the
** caller chose it (attnrt_use_device), else device 0 as everywhere. */
int attnrt_comm_init(AttnrtComm **comm, int nranks, int rank, const void *id)
{
	int rc = check_ranks("attnrt_comm_init", comm, nranks, rank);
	if (rc)
		return rc;
	if (nranks == 1)
		return comm_new(comm, NULL, 1, 0, 0);
	if (!id)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_comm_init: NULL id (%d ranks need a unique id)", nranks);
	const AttnrtNccl *n;
	if ((rc = attnrt_nccl(&n)) != 0)
		return rc;
	const AttnrtDriver *d;
	if ((rc = attnrt_context(&d, NULL, NULL)) != 0)
		return rc;
	ARncclUniqueId uid;
	memcpy(uid.internal, id, sizeof uid.internal);
	ARncclComm nc = NULL;
	ARncclResult r = n->ncclCommInitRank(&nc, nranks, uid, rank);
	if (r != AR_NCCL_SUCCESS)
		return attnrt_fail_nccl(n, r, "ncclCommInitRank (rank %d of %d)", rank, nranks);
	if ((rc = comm_new(comm, nc, nranks, rank, 1)) != 0)
		n->ncclCommDestroy(nc);
	return rc;
}

/* Frameworks make their own communicators; the ring runs on them as is.
** NCCL is loaded here, so that a missing one is said before any ring. */
int attnrt_comm_wrap(AttnrtComm **comm, void *nccl_comm, int nranks, int rank)
{
	int rc = check_ranks("attnrt_comm_wrap", comm, nranks, rank);
	if (rc)
		return rc;
	if (nranks > 1) {
		if (!nccl_comm)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "attnrt_comm_wrap: NULL nccl_comm (%d ranks)", nranks);
		const AttnrtNccl *n;
		if ((rc = attnrt_nccl(&n)) != 0)
			return rc;
	}
	return comm_new(comm, (ARncclComm)nccl_comm, nranks, rank, 0);
}

/* For callers that only hold the communicator. */
int attnrt_comm_rank(const AttnrtComm *comm, int *rank, int *nranks)
{
	if (!comm)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_comm_rank: NULL comm");
	if (rank)
		*rank = comm->rank;
	if (nranks)
		*nranks = comm->nranks;
	return ATTNRT_OK;
}

/* Queued work on the ring's stream and events keeps running: the driver
** releases them when it is done. Errors have no one to go to. */
void attnrt_comm_destroy(AttnrtComm *comm)
{
	if (!comm)
		return;
	const AttnrtDriver *d = NULL;
	if (comm->stream && attnrt_driver(&d) == ATTNRT_OK && d->cuStreamDestroy) {
		ARevent *events[] = {&comm->caller_ready, &comm->received[0], &comm->received[1],
				     &comm->consumed[0], &comm->consumed[1]};
		for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
			if (*events[i])
				d->cuEventDestroy(*events[i]);
		d->cuStreamDestroy(comm->stream);
	}
	const AttnrtNccl *n;
	if (comm->owns_nccl && comm->nccl && attnrt_nccl(&n) == ATTNRT_OK)
		n->ncclCommDestroy(comm->nccl);
	free(comm);
}
