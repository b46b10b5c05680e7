/*
** test/unit/rt_fakecuda.h: what rt_fakecuda (the stand-in libcuda) records
** for the tests that load it, rt_dlopen and gpu_iface's launcher harness:
** each cuTensorMapEncodeTiled's arguments and the parameters of the last
** launch (their addresses, and the first 32 bits each points to, read
** during the launch: the launcher's locals are gone after it), and its
** grid; and a log of every launch and cuMemsetD8Async in the order made
** (FakeCall), for launchers that queue several. The tests reach these through dlsym on the loaded fake
** (fakecuda_sym), since the runtime, not the test, loaded it.
*/
#ifndef ATTN_RT_FAKECUDA_H
#define ATTN_RT_FAKECUDA_H

#include <stdint.h>

enum {
	FAKECUDA_MAX_TMAPS = 16,
	FAKECUDA_MAX_PARAMS = 64,
	FAKECUDA_TRACE_BYTES = 8192,
	FAKECUDA_MAX_CALLS = 64,
	FAKECUDA_NAME_BYTES = 64
};

/* A stream ('s') or event ('e'): id counts those of its kind that the
** creating thread made, from 1. */
typedef struct FakeHandle {
	int kind, id;
} FakeHandle;

/* Within the fake module (rt_fakenccl.c writes the same trace); the first
** is exported for the tests too. */
__attribute__((visibility("default"))) void fakecuda_trace_add(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
int fakecuda_handle_id(const void *h);

/* One cuTensorMapEncodeTiled, arrays innermost dimension first. Addresses
** as integers: the launcher's maps are gone when the test reads them. */
typedef struct FakeTmap {
	uintptr_t map, addr;
	int dtype, interleave, swizzle, l2, oob;
	unsigned rank, box[5], estride[5];
	unsigned long long dim[5], stride[4];
} FakeTmap;

/* One cuLaunchKernel ('l') or cuMemsetD8Async ('m'), from any thread, in
** the order made. A launch's param[i] holds what its i-th parameter pointed
** to during it: 32 bits, or 64 where fakecuda_param_bytes said 8 (the
** first n of fakecuda_record_params). */
typedef struct FakeCall {
	int kind;
	char name[FAKECUDA_NAME_BYTES]; /* the launch's function (cuModuleGetFunction's name) */
	uintptr_t stream;
	unsigned grid[3];
	uint64_t param[FAKECUDA_MAX_PARAMS];
	uintptr_t dst; /* the memset's */
	size_t bytes;
	unsigned value;
} FakeCall;

/* The exports, by name and type:
**   int fakecuda_tmap_calls(void)             encodings since the fake loaded
**   const FakeTmap *fakecuda_tmap(int i)      the i-th (from 0), NULL past the
**                                             last recorded
**   void fakecuda_record_params(int n)        later launches keep their first n
**                                             (<= FAKECUDA_MAX_PARAMS) params
**   const uintptr_t *fakecuda_launch_params(void)  those of the last launch
**   const uint32_t *fakecuda_launch_words(void)    the 32 bits each pointed to
**   unsigned fakecuda_launch_grid(int i)      its grid's x, y or z (i = 0..2)
**   const char *fakecuda_trace(void)          this thread's trace: "record e1
**                                             s1; wait s2 e1; group; ..."
**   void fakecuda_trace_clear(void)           empties it
**   int fakecuda_handles_live(void)           streams and events not destroyed
**   void fakecuda_trace_add(const char *fmt, ...)  appends to it
**   int fakecuda_calls(void)                  launches and async memsets logged
**                                             since the fake loaded
**   const FakeCall *fakecuda_call(int i)      the i-th (from 0), NULL past the
**                                             last or FAKECUDA_MAX_CALLS
**   void fakecuda_param_bytes(int i, int n)   later launches read param i as n
**                                             (4 or 8) bytes into FakeCall
** and the environment's FAKECUDA_SMS, the multiprocessor count (default
** 132). */
typedef int (*FakecudaTmapCalls)(void);
typedef const FakeTmap *(*FakecudaTmap)(int i);
typedef void (*FakecudaRecordParams)(int n);
typedef const uintptr_t *(*FakecudaLaunchParams)(void);
typedef const uint32_t *(*FakecudaLaunchWords)(void);
typedef unsigned (*FakecudaLaunchGrid)(int i);
typedef const char *(*FakecudaTrace)(void);
typedef void (*FakecudaTraceClear)(void);
typedef int (*FakecudaHandlesLive)(void);
typedef void (*FakecudaTraceAdd)(const char *fmt, ...);
typedef int (*FakecudaCalls)(void);
typedef const FakeCall *(*FakecudaCall)(int i);
typedef void (*FakecudaParamBytes)(int i, int n);

#endif
