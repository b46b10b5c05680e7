/*
** runtime/nccl.c: finding NCCL. libnccl.so.2 (or $ATTNRT_NCCL) is dlopen'ed
** on the first call that needs it, never at load time, so a program that
** runs on one GPU needs no NCCL at all. Loaded by its soname, it is the copy
** a framework already loaded in the process, whose communicators the caller
** may pass to attnrt_comm_wrap. The outcome is computed once and kept,
** failures included, as the driver's is.
*/
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "nccl.h"

enum { ST_UNTRIED, ST_READY, ST_FAILED };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_state = ST_UNTRIED;
static AttnrtNccl g_table;
static void *g_handle;
static char g_fail_msg[1024];

/* The entries of AttnrtNccl by symbol name. */
static const struct {
	const char *name;
	size_t offset;
} entries[] = {
#define E(f)                                                                                       \
	{                                                                                          \
#f, offsetof(AttnrtNccl, f)                                                        \
	}
    E(ncclGetErrorString), E(ncclGetUniqueId), E(ncclCommInitRank), E(ncclCommDestroy),
    E(ncclGroupStart),     E(ncclGroupEnd),    E(ncclSend),         E(ncclRecv),
#undef E
};
#define NENTRIES (sizeof entries / sizeof entries[0])
_Static_assert(sizeof(AttnrtNccl) == NENTRIES * sizeof(void (*)(void)),
	       "every AttnrtNccl entry is listed in entries[]");

/* dlopen + dlsym into g_table; under g_lock. 0, or g_fail_msg is set. */
static int load_library(void)
{
	AttnrtLib lib;
	void *h = attnrt_dlopen("ATTNRT_NCCL", "libnccl.so.2", &lib);
	const char *path = lib.path;
	if (!h) {
		snprintf(g_fail_msg, sizeof g_fail_msg, "no NCCL: %s could not be loaded (%s; %s)",
			 path,
			 lib.missing ? "not found"
			 : lib.why   ? lib.why
				     : "unknown dlopen error",
			 lib.named ? "named by ATTNRT_NCCL" : "ATTNRT_NCCL may name it");
		return -1;
	}
	AttnrtNccl t;
	for (size_t i = 0; i < NENTRIES; i++) {
		void *p = dlsym(h, entries[i].name);
		if (!p) {
			snprintf(g_fail_msg, sizeof g_fail_msg,
				 "no NCCL: %s lacks %s (NCCL 2.7 or later is needed)", path,
				 entries[i].name);
			dlclose(h);
			return -1;
		}
		memcpy((char *)&t + entries[i].offset, &p, sizeof p);
	}
	g_table = t;
	g_handle = h;
	return 0;
}

/* Loads once; afterwards a single atomic load. */
int attnrt_nccl(const AttnrtNccl **out)
{
	int st = atomic_load_explicit(&g_state, memory_order_acquire);
	if (st == ST_UNTRIED) {
		pthread_mutex_lock(&g_lock);
		st = atomic_load_explicit(&g_state, memory_order_relaxed);
		if (st == ST_UNTRIED) {
			st = load_library() == 0 ? ST_READY : ST_FAILED;
			atomic_store_explicit(&g_state, st, memory_order_release);
		}
		pthread_mutex_unlock(&g_lock);
	}
	if (st == ST_FAILED) {
		pthread_mutex_lock(&g_lock);
		int rc = attnrt_fail(ATTNRT_ERR_NO_NCCL, "%s", g_fail_msg);
		pthread_mutex_unlock(&g_lock);
		*out = NULL;
		return rc;
	}
	*out = &g_table;
	return ATTNRT_OK;
}

/* A failed NCCL call: the caller's context, then NCCL's own text. */
int attnrt_fail_nccl(const AttnrtNccl *n, ARncclResult r, const char *fmt, ...)
{
	char what[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	const char *text = n ? n->ncclGetErrorString(r) : NULL;
	return attnrt_fail(ATTNRT_ERR_COMM, "%s: %s (NCCL error %d)", what,
			   text ? text : "unknown error", r);
}

/* Tests load a fake after a missing library in one process. */
void attnrt_nccl_reset_for_testing(void)
{
	pthread_mutex_lock(&g_lock);
	if (g_handle)
		dlclose(g_handle);
	g_handle = NULL;
	memset(&g_table, 0, sizeof g_table);
	g_fail_msg[0] = 0;
	atomic_store_explicit(&g_state, ST_UNTRIED, memory_order_release);
	pthread_mutex_unlock(&g_lock);
}
