/*
** runtime/nccl.h: libattnrt's internal view of NCCL, loaded with dlopen like
** the CUDA driver so that the runtime builds and runs without it. The few
** types and constants used are restated with their values from NCCL's
** nccl.h; the entry points are the plain symbols of libnccl.so.2 (2.7 or
** later, for ncclSend and ncclRecv). Also the communicator (AttnrtComm)
** that runtime/comm.c makes and runtime/ring.c uses. Not installed.
*/
#ifndef ATTNRT_NCCL_H
#define ATTNRT_NCCL_H

#include "driver.h"

typedef int ARncclResult;                    /* ncclResult_t */
typedef struct ncclComm *ARncclComm;         /* ncclComm_t, the same tag */
typedef struct ARncclUniqueId {              /* ncclUniqueId, passed by value */
	char internal[ATTNRT_COMM_ID_BYTES]; /* NCCL_UNIQUE_ID_BYTES */
} ARncclUniqueId;

enum {
	AR_NCCL_SUCCESS = 0, /* ncclSuccess */
	AR_NCCL_INT8 = 0     /* ncclInt8 (= ncclChar): counts are bytes */
};

/* The NCCL entry points libattnrt calls; all are required. */
typedef struct AttnrtNccl {
	const char *(*ncclGetErrorString)(ARncclResult result);
	ARncclResult (*ncclGetUniqueId)(ARncclUniqueId *id);
	ARncclResult (*ncclCommInitRank)(ARncclComm *comm, int nranks, ARncclUniqueId id, int rank);
	ARncclResult (*ncclCommDestroy)(ARncclComm comm);
	ARncclResult (*ncclGroupStart)(void);
	ARncclResult (*ncclGroupEnd)(void);
	ARncclResult (*ncclSend)(const void *buf, size_t count, int datatype, int peer,
				 ARncclComm comm, ARstream stream);
	ARncclResult (*ncclRecv)(void *buf, size_t count, int datatype, int peer, ARncclComm comm,
				 ARstream stream);
} AttnrtNccl;

/* A communicator: NCCL's (none for one rank), and what the ring keeps
** between calls on it: its communication stream and events, made on the
** first ring of two or more ranks and destroyed with the communicator. */
struct AttnrtComm {
	ARncclComm nccl;
	int nranks, rank;
	int owns_nccl; /* made by attnrt_comm_init: destroyed with the AttnrtComm */
	ARstream stream;
	ARevent caller_ready; /* the caller's stream before the ring's first send */
	ARevent received[2];  /* recv0's, recv1's receive done (on stream) */
	ARevent consumed[2];  /* the last step reading recv0, recv1 done (caller's stream) */
};

/* libnccl.so.2 (or $ATTNRT_NCCL) loaded, once; the outcome is kept, so a
** failure repeats the same ATTNRT_ERR_NO_NCCL message. */
int attnrt_nccl(const AttnrtNccl **out);
/* For a failed NCCL call: "attnrt: <what>: <ncclGetErrorString> (NCCL error
** r)", ATTNRT_ERR_COMM. */
int attnrt_fail_nccl(const AttnrtNccl *n, ARncclResult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Closes the library and forgets the outcome, so that the next call loads
** again with the environment of then (tests only: not concurrently with any
** other call). */
ATTNRT_API void attnrt_nccl_reset_for_testing(void);

#endif
