/*
** test/unit/rt_fakenccl.c: a stand-in libnccl.so.2 for rt_ring, built into
** one module with rt_fakecuda (the variant rt_fakecuda_nccl), so that the
** ranks of a ring run as threads of one process without a GPU. A
** communicator is a rank of a world found by its unique id; ncclSend and
** ncclRecv inside a group are kept until ncclGroupEnd, which posts the
** sends (a copy of the bytes, queued for the peer) and then waits for the
** receives: ranks that post matching groups never deadlock, as with NCCL.
** Streams are not modelled: the copies happen at ncclGroupEnd, which is
** what a stream that ran at once would do. Every call is written to the
** thread's trace ("group; send 16 to 1 s2; recv 16 from 1 s2; end; ").
** FAKENCCL_FAIL=ncclSend (or another entry's name) makes that call return
** ncclInvalidUsage; a group in which a call failed is dropped at
** ncclGroupEnd, which returns the same error.
*/
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fakecuda.h"

#define API __attribute__((visibility("default")))

enum {
	MAX_RANKS = 8,
	MAX_WORLDS = 4,
	MAX_OPS = 64,
	NCCL_OK = 0,
	NCCL_INVALID_ARGUMENT = 4,
	NCCL_INVALID_USAGE = 5
};

typedef struct ncclUniqueId {
	char internal[128];
} ncclUniqueId;

typedef struct Message {
	struct Message *next;
	size_t bytes;
	unsigned char data[];
} Message;

typedef struct World {
	ncclUniqueId id;
	int nranks, members;
	Message *queue[MAX_RANKS][MAX_RANKS]; /* [from][to], oldest first */
} World;

typedef struct ncclComm {
	World *world;
	int rank;
} ncclComm;

typedef struct Op {
	int send;
	void *buf;
	size_t bytes;
	int peer;
	ncclComm *comm;
} Op;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arrived = PTHREAD_COND_INITIALIZER;
static World *worlds[MAX_WORLDS];
static int ids_made;

static _Thread_local int group_depth, group_result;
static _Thread_local int nops;
static _Thread_local Op ops[MAX_OPS];

API const char *ncclGetErrorString(int result);
API int ncclGetUniqueId(ncclUniqueId *id);
API int ncclCommInitRank(ncclComm **comm, int nranks, ncclUniqueId id, int rank);
API int ncclCommDestroy(ncclComm *comm);
API int ncclGroupStart(void);
API int ncclGroupEnd(void);
API int ncclSend(const void *buf, size_t count, int datatype, int peer, ncclComm *comm,
		 void *stream);
API int ncclRecv(void *buf, size_t count, int datatype, int peer, ncclComm *comm, void *stream);

/* The failure a test asked for through FAKENCCL_FAIL. */
static int fails(const char *call)
{
	const char *f = getenv("FAKENCCL_FAIL");
	return f && !strcmp(f, call);
}

/* NCCL's texts for the results the fake returns. */
const char *ncclGetErrorString(int result)
{
	return result == NCCL_OK                 ? "no error"
	       : result == NCCL_INVALID_ARGUMENT ? "invalid argument"
	       : result == NCCL_INVALID_USAGE    ? "invalid usage"
						 : "unknown result";
}

/* Distinct ids in one process are all a fake world needs. */
int ncclGetUniqueId(ncclUniqueId *id)
{
	if (fails("ncclGetUniqueId"))
		return NCCL_INVALID_USAGE;
	memset(id, 0, sizeof *id);
	pthread_mutex_lock(&lock);
	int n = ++ids_made;
	pthread_mutex_unlock(&lock);
	memcpy(id->internal, "fakenccl", 8);
	memcpy(id->internal + 8, &n, sizeof n);
	return NCCL_OK;
}

/* Joins (or starts) the world of id; a world ends with its last member. */
int ncclCommInitRank(ncclComm **comm, int nranks, ncclUniqueId id, int rank)
{
	if (fails("ncclCommInitRank"))
		return NCCL_INVALID_USAGE;
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return NCCL_INVALID_ARGUMENT;
	ncclComm *c = calloc(1, sizeof *c);
	if (!c)
		return NCCL_INVALID_USAGE;
	int rc = NCCL_INVALID_USAGE;
	pthread_mutex_lock(&lock);
	World *w = NULL;
	for (int i = 0; i < MAX_WORLDS && !w; i++)
		if (worlds[i] && !memcmp(&worlds[i]->id, &id, sizeof id))
			w = worlds[i];
	for (int i = 0; i < MAX_WORLDS && !w; i++)
		if (!worlds[i] && (w = worlds[i] = calloc(1, sizeof *w)) != NULL) {
			w->id = id;
			w->nranks = nranks;
		}
	if (w && w->nranks == nranks) {
		w->members++;
		c->world = w;
		c->rank = rank;
		*comm = c;
		rc = NCCL_OK;
	}
	pthread_mutex_unlock(&lock);
	if (rc)
		free(c);
	return rc;
}

int ncclCommDestroy(ncclComm *comm)
{
	if (!comm)
		return NCCL_INVALID_ARGUMENT;
	pthread_mutex_lock(&lock);
	World *w = comm->world;
	if (--w->members == 0) {
		for (int i = 0; i < MAX_WORLDS; i++)
			if (worlds[i] == w)
				worlds[i] = NULL;
		for (int f = 0; f < MAX_RANKS; f++)
			for (int t = 0; t < MAX_RANKS; t++)
				while (w->queue[f][t]) {
					Message *m = w->queue[f][t];
					w->queue[f][t] = m->next;
					free(m);
				}
		free(w);
	}
	pthread_mutex_unlock(&lock);
	free(comm);
	return NCCL_OK;
}

int ncclGroupStart(void)
{
	fakecuda_trace_add("group; ");
	if (fails("ncclGroupStart"))
		return NCCL_INVALID_USAGE;
	if (group_depth++ == 0) {
		nops = 0;
		group_result = NCCL_OK;
	}
	return NCCL_OK;
}

/* Posts a copy of op's bytes for its peer. */
static int post(const Op *op)
{
	Message *m = malloc(sizeof *m + op->bytes);
	if (!m)
		return NCCL_INVALID_USAGE;
	m->next = NULL;
	m->bytes = op->bytes;
	memcpy(m->data, op->buf, op->bytes);
	pthread_mutex_lock(&lock);
	Message **tail = &op->comm->world->queue[op->comm->rank][op->peer];
	while (*tail)
		tail = &(*tail)->next;
	*tail = m;
	pthread_cond_broadcast(&arrived);
	pthread_mutex_unlock(&lock);
	return NCCL_OK;
}

/* Waits for the peer's next message to op's rank; its size must match. */
static int take(const Op *op)
{
	pthread_mutex_lock(&lock);
	Message **head = &op->comm->world->queue[op->peer][op->comm->rank];
	while (!*head)
		pthread_cond_wait(&arrived, &lock);
	Message *m = *head;
	*head = m->next;
	pthread_mutex_unlock(&lock);
	int rc = m->bytes == op->bytes ? NCCL_OK : NCCL_INVALID_USAGE;
	if (!rc)
		memcpy(op->buf, m->data, m->bytes);
	free(m);
	return rc;
}

/* The group's sends first, then its receives, as NCCL fuses them. */
int ncclGroupEnd(void)
{
	fakecuda_trace_add("end; ");
	if (group_depth == 0)
		return NCCL_INVALID_USAGE;
	if (--group_depth > 0)
		return NCCL_OK;
	int rc = group_result;
	if (!rc && fails("ncclGroupEnd"))
		rc = NCCL_INVALID_USAGE;
	for (int i = 0; i < nops && !rc; i++)
		if (ops[i].send)
			rc = post(&ops[i]);
	for (int i = 0; i < nops && !rc; i++)
		if (!ops[i].send)
			rc = take(&ops[i]);
	nops = 0;
	return rc;
}

/* One send or receive: queued in a group, else a group of its own. */
static int add_op(const char *call, int send, void *buf, size_t count, int datatype, int peer,
		  ncclComm *comm)
{
	int rc = NCCL_OK;
	if (fails(call))
		rc = NCCL_INVALID_USAGE;
	else if (!comm || !buf || datatype != 0 || peer < 0 || peer >= comm->world->nranks)
		rc = NCCL_INVALID_ARGUMENT;
	else if (nops == MAX_OPS)
		rc = NCCL_INVALID_USAGE;
	int alone = group_depth == 0;
	if (alone)
		ncclGroupStart();
	if (rc)
		group_result = group_result ? group_result : rc;
	else
		ops[nops++] = (Op){send, buf, count, peer, comm};
	int end = alone ? ncclGroupEnd() : NCCL_OK;
	return rc ? rc : end;
}

int ncclSend(const void *buf, size_t count, int datatype, int peer, ncclComm *comm, void *stream)
{
	fakecuda_trace_add("send %zu to %d s%d; ", count, peer, fakecuda_handle_id(stream));
	return add_op("ncclSend", 1, (void *)buf, count, datatype, peer, comm);
}

int ncclRecv(void *buf, size_t count, int datatype, int peer, ncclComm *comm, void *stream)
{
	fakecuda_trace_add("recv %zu from %d s%d; ", count, peer, fakecuda_handle_id(stream));
	return add_op("ncclRecv", 0, buf, count, datatype, peer, comm);
}
