/*
** test/unit/rt_fakecuda.c: a stand-in libcuda.so.1 for rt_dlopen, so the real
** loading path (dlopen, dlsym of cuGetProcAddress, every entry point through
** it) runs without a GPU. Built twice: with FAKECUDA_V2 it exports
** cuGetProcAddress_v2 (CUDA 12+ drivers), without it only the 4-argument
** cuGetProcAddress of 11.3+ drivers. Environment: FAKECUDA_DEVICES (default
** 1; 0 makes cuInit fail with CUDA_ERROR_NO_DEVICE), FAKECUDA_HIDE=cuXxx (that
** entry point is "not found"), FAKECUDA_CC (compute capability, default 90),
** FAKECUDA_SMS (multiprocessor count, default 132).
** fakecuda_requests and fakecuda_bad_requests count lookups, bad ones being
** for another cudaVersion than 12000, with flags, or by a versioned name
** (cuMemAlloc_v2); fakecuda_launch_block, fakecuda_launch_smem and
** fakecuda_smem_optin give the last launch's block size and dynamic shared
** memory and the last MAX_DYNAMIC_SHARED_SIZE_BYTES set; the records of
** tensor maps and of the last launch's parameters and grid, and the log of
** launches and async memsets (fakecuda_call), are in rt_fakecuda.h: a
** function is a name that cuModuleGetFunction interned, so that the log
** says which entry ran. Streams and events are heap handles with numbers counted
** per thread (s1, e1, ...; NULL is s0), freed by their destroy, so a leaked
** one is LeakSanitizer's to see; event records and stream waits are written
** to the calling thread's trace (fakecuda_trace), where the fake NCCL
** (rt_fakenccl.c, built into a third variant) and the tests write too. The
** fills and device-to-device copies write host memory: tests pass host
** buffers as device pointers.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fakecuda.h"

typedef int CUresult;
typedef struct CUctx_st *CUcontext;

static _Thread_local CUcontext cur;
static int requests, bad_requests;
static unsigned launch_block, launch_smem;
static int smem_optin;

static FakeTmap tmaps[FAKECUDA_MAX_TMAPS];
static int tmap_calls, nparams;
static uintptr_t params[FAKECUDA_MAX_PARAMS];
static uint32_t words[FAKECUDA_MAX_PARAMS];
static unsigned grid[3];
static unsigned char param_bytes[FAKECUDA_MAX_PARAMS];
static FakeCall calls[FAKECUDA_MAX_CALLS];
static atomic_int ncalls;
/* the functions' names (cuModuleGetFunction is called under the runtime's
** lock of its modules; the flag keeps the table whole regardless) */
static char fn_names[32][FAKECUDA_NAME_BYTES];
static int nfn;
static atomic_flag fn_lock = ATOMIC_FLAG_INIT;

static _Thread_local char trace[FAKECUDA_TRACE_BYTES];
static _Thread_local size_t trace_len;
static _Thread_local int handle_ids[2]; /* streams, events made by this thread */
static atomic_int handles_live;

#define API __attribute__((visibility("default")))

API int fakecuda_requests(void);
API int fakecuda_bad_requests(void);
API int fakecuda_launch_block(void);
API int fakecuda_launch_smem(void);
API int fakecuda_smem_optin(void);
API int fakecuda_tmap_calls(void);
API const FakeTmap *fakecuda_tmap(int i);
API void fakecuda_record_params(int n);
API const uintptr_t *fakecuda_launch_params(void);
API const uint32_t *fakecuda_launch_words(void);
API unsigned fakecuda_launch_grid(int i);
API const char *fakecuda_trace(void);
API void fakecuda_trace_clear(void);
API int fakecuda_handles_live(void);
API int fakecuda_calls(void);
API const FakeCall *fakecuda_call(int i);
API void fakecuda_param_bytes(int i, int n);
API CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags,
				 int *status);
API CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, unsigned long long flags);

/* How many lookups rt_dlopen's driver made. */
int fakecuda_requests(void)
{
	return requests;
}

/* Lookups that ask for anything but the CUDA 12.0 ABI by base name. */
int fakecuda_bad_requests(void)
{
	return bad_requests;
}

/* What the last launch and attribute call were given. */
int fakecuda_launch_block(void)
{
	return (int)launch_block;
}

int fakecuda_launch_smem(void)
{
	return (int)launch_smem;
}

int fakecuda_smem_optin(void)
{
	return smem_optin;
}

/* Tensor maps encoded so far, and what each was given. */
int fakecuda_tmap_calls(void)
{
	return tmap_calls;
}

const FakeTmap *fakecuda_tmap(int i)
{
	return i >= 0 && i < tmap_calls && i < FAKECUDA_MAX_TMAPS ? &tmaps[i] : NULL;
}

/* A launch's params array has no length: the test says how many to keep. */
void fakecuda_record_params(int n)
{
	nparams = n < 0 ? 0 : n > FAKECUDA_MAX_PARAMS ? FAKECUDA_MAX_PARAMS : n;
}

const uintptr_t *fakecuda_launch_params(void)
{
	return params;
}

/* What the recorded params held during the launch: a launcher's values
** (grid magic) are on its stack, gone when the test looks. */
const uint32_t *fakecuda_launch_words(void)
{
	return words;
}

/* The last launch's grid: how many CTAs a launcher asked for. */
unsigned fakecuda_launch_grid(int i)
{
	return i >= 0 && i < 3 ? grid[i] : 0;
}

/* The log of launches and async memsets, over all threads. */
int fakecuda_calls(void)
{
	return atomic_load(&ncalls);
}

const FakeCall *fakecuda_call(int i)
{
	return i >= 0 && i < atomic_load(&ncalls) && i < FAKECUDA_MAX_CALLS ? &calls[i] : NULL;
}

/* A parameter of 64 bits (pointers, s64) is logged whole where the test
** says so; the others are read as 32 bits, no more than they hold. */
void fakecuda_param_bytes(int i, int n)
{
	if (i >= 0 && i < FAKECUDA_MAX_PARAMS)
		param_bytes[i] = n == 8 ? 8 : 4;
}

/* The next entry of the log, NULL once it is full. */
static FakeCall *call_new(int kind, void *stream)
{
	int i = atomic_fetch_add(&ncalls, 1);
	if (i >= FAKECUDA_MAX_CALLS)
		return NULL;
	FakeCall *c = &calls[i];
	memset(c, 0, sizeof *c);
	c->kind = kind, c->stream = (uintptr_t)stream;
	return c;
}

/* This thread's trace: what its streams were asked to do, in order. */
const char *fakecuda_trace(void)
{
	return trace;
}

void fakecuda_trace_clear(void)
{
	trace_len = 0;
	trace[0] = 0;
}

/* Appends to this thread's trace; a full trace ends in "...". */
void fakecuda_trace_add(const char *fmt, ...)
{
	size_t room = sizeof trace - trace_len;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(trace + trace_len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		snprintf(trace + sizeof trace - 4, 4, "...");
	else
		trace_len += (size_t)n;
}

/* Streams and events not yet destroyed, over all threads. */
int fakecuda_handles_live(void)
{
	return atomic_load(&handles_live);
}

/* A handle's number in the trace; 0 for NULL (the default stream). */
int fakecuda_handle_id(const void *h)
{
	return h ? ((const FakeHandle *)h)->id : 0;
}

/* A stream or event, numbered per thread and kind. */
static FakeHandle *handle_new(int kind)
{
	FakeHandle *h = malloc(sizeof *h);
	if (!h)
		return NULL;
	h->kind = kind;
	h->id = ++handle_ids[kind == 's' ? 0 : 1];
	atomic_fetch_add(&handles_live, 1);
	return h;
}

static CUresult handle_free(void *h, int kind)
{
	if (!h || ((FakeHandle *)h)->kind != kind)
		return 400; /* CUDA_ERROR_INVALID_HANDLE */
	free(h);
	atomic_fetch_sub(&handles_live, 1);
	return 0;
}

static int ndev(void)
{
	const char *e = getenv("FAKECUDA_DEVICES");
	return e ? atoi(e) : 1;
}

static CUresult f_init(unsigned flags)
{
	(void)flags;
	return ndev() > 0 ? 0 : 100;
}
static CUresult f_version(int *v)
{
	return *v = 12040, 0;
}
static CUresult f_errname(CUresult r, const char **s)
{
	*s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : r == 0 ? "CUDA_SUCCESS" : NULL;
	return *s ? 0 : 1;
}
static CUresult f_errstr(CUresult r, const char **s)
{
	*s = r == 100 ? "no CUDA-capable device is detected" : r == 0 ? "no error" : NULL;
	return *s ? 0 : 1;
}
static CUresult f_count(int *n)
{
	return *n = ndev(), 0;
}
static CUresult f_devget(int *d, int o)
{
	return o < ndev() ? (*d = o, 0) : 101;
}
static CUresult f_attr(int *v, int a, int d)
{
	const char *e = getenv("FAKECUDA_CC");
	int cc = e ? atoi(e) : 90;
	(void)d;
	const char *s = getenv("FAKECUDA_SMS");
	int sms = s ? atoi(s) : 132;
	*v = a == 75 ? cc / 10 : a == 76 ? cc % 10 : a == 97 ? 232448 : a == 16 ? sms : 0;
	return 0;
}
static CUresult f_retain(CUcontext *c, int d)
{
	return *c = (CUcontext)(uintptr_t)(0x100 + d), 0;
}
static CUresult f_setcur(CUcontext c)
{
	return cur = c, 0;
}
static CUresult f_getcur(CUcontext *c)
{
	return *c = cur, 0;
}
static CUresult f_getdev(int *d)
{
	return cur ? (*d = (int)((uintptr_t)cur - 0x100), 0) : 201;
}
static CUresult f_sync(void)
{
	return 0;
}
static CUresult f_load(void **m, const void *img, unsigned n, int *o, void **v)
{
	(void)img, (void)n, (void)o, (void)v;
	return *m = (void *)(uintptr_t)0x200, 0;
}
/* A function is its interned name (500 = CUDA_ERROR_NOT_FOUND when the
** table is full). */
static CUresult f_getfn(void **f, void *m, const char *name)
{
	if (!m)
		return 1;
	while (atomic_flag_test_and_set(&fn_lock))
		;
	int i = 0;
	while (i < nfn && strcmp(fn_names[i], name))
		i++;
	if (i == nfn && nfn < 32)
		snprintf(fn_names[nfn++], FAKECUDA_NAME_BYTES, "%s", name);
	*f = i < nfn ? fn_names[i] : NULL;
	atomic_flag_clear(&fn_lock);
	return *f ? 0 : 500;
}
static CUresult f_unload(void *m)
{
	return m ? 0 : 1;
}
static CUresult f_setattr(void *f, int a, int v)
{
	(void)f;
	if (a == 8) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
		smem_optin = v;
	return 0;
}
static CUresult f_getattr(int *v, int a, void *f)
{
	(void)a, (void)f;
	return *v = 0, 0;
}
static CUresult f_launch(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
			 unsigned g, unsigned s, void *st, void **p, void **x)
{
	(void)e, (void)g, (void)x;
	launch_block = d, launch_smem = s;
	grid[0] = a, grid[1] = b, grid[2] = c;
	FakeCall *log = call_new('l', st);
	if (log && f)
		snprintf(log->name, sizeof log->name, "%s", (const char *)f);
	for (int i = 0; i < nparams; i++) {
		params[i] = (uintptr_t)p[i];
		memcpy(&words[i], p[i], sizeof words[i]);
		if (log && param_bytes[i] == 8)
			memcpy(&log->param[i], p[i], 8);
		else if (log)
			log->param[i] = words[i];
	}
	if (log)
		memcpy(log->grid, grid, sizeof grid);
	return f ? 0 : 1;
}
static CUresult f_malloc(unsigned long long *p, size_t n)
{
	(void)n;
	return *p = 0x1000, 0;
}
static CUresult f_free(unsigned long long p)
{
	return p ? 0 : 1;
}
static CUresult f_htod(unsigned long long d, const void *s, size_t n)
{
	(void)d, (void)s, (void)n;
	return 0;
}
static CUresult f_dtoh(void *d, unsigned long long s, size_t n)
{
	(void)s;
	memset(d, 0, n);
	return 0;
}
static CUresult f_ssync(void *s)
{
	(void)s;
	return 0;
}
static CUresult f_evcreate(void **e, unsigned f)
{
	(void)f;
	*e = handle_new('e');
	return *e ? 0 : 2;
}
static CUresult f_evrecord(void *e, void *s)
{
	fakecuda_trace_add("record e%d s%d; ", fakecuda_handle_id(e), fakecuda_handle_id(s));
	return e ? 0 : 400;
}
static CUresult f_evsync(void *e)
{
	(void)e;
	return 0;
}
static CUresult f_elapsed(float *ms, void *a, void *b)
{
	(void)a, (void)b;
	return *ms = 0, 0;
}
static CUresult f_evdestroy(void *e)
{
	return handle_free(e, 'e');
}
static CUresult f_memset(unsigned long long d, unsigned char v, size_t n)
{
	memset((void *)(uintptr_t)d, v, n);
	return 0;
}
static CUresult f_memset_async(unsigned long long d, unsigned char v, size_t n, void *s)
{
	FakeCall *log = call_new('m', s);
	if (log)
		log->dst = (uintptr_t)d, log->bytes = n, log->value = v;
	memset((void *)(uintptr_t)d, v, n);
	return 0;
}
static CUresult f_dtod_async(unsigned long long d, unsigned long long src, size_t n, void *s)
{
	(void)s;
	memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
	return 0;
}
static CUresult f_streamcreate(void **s, unsigned flags)
{
	if (flags != 1) /* the runtime makes CU_STREAM_NON_BLOCKING ones only */
		return 1;
	*s = handle_new('s');
	return *s ? 0 : 2;
}
static CUresult f_streamdestroy(void *s)
{
	return handle_free(s, 's');
}
static CUresult f_waitevent(void *s, void *e, unsigned flags)
{
	fakecuda_trace_add("wait s%d e%d; ", fakecuda_handle_id(s), fakecuda_handle_id(e));
	return e && flags == 0 ? 0 : 1;
}

/* Records its arguments; 1 = CUDA_ERROR_INVALID_VALUE for a bad rank. */
static CUresult f_tmap(void *map, int dtype, unsigned rank, void *addr,
		       const unsigned long long *dims, const unsigned long long *strides,
		       const unsigned *box, const unsigned *estride, int interleave, int swizzle,
		       int l2, int oob)
{
	if (rank < 1 || rank > 5)
		return 1;
	if (tmap_calls < FAKECUDA_MAX_TMAPS) {
		FakeTmap *t = &tmaps[tmap_calls];
		t->map = (uintptr_t)map, t->addr = (uintptr_t)addr, t->rank = rank;
		t->dtype = dtype, t->interleave = interleave, t->swizzle = swizzle, t->l2 = l2;
		t->oob = oob;
		for (unsigned i = 0; i < rank; i++) {
			t->dim[i] = dims[i], t->box[i] = box[i], t->estride[i] = estride[i];
			if (i + 1 < rank)
				t->stride[i] = strides[i];
		}
	}
	tmap_calls++;
	memset(map, 0xcd, 128);
	return 0;
}

#define F(name, fn)                                                                                \
	{                                                                                          \
		name, (void (*)(void))fn                                                           \
	}
static const struct {
	const char *name;
	void (*fn)(void);
} table[] = {
    F("cuInit", f_init),
    F("cuDriverGetVersion", f_version),
    F("cuGetErrorName", f_errname),
    F("cuGetErrorString", f_errstr),
    F("cuDeviceGetCount", f_count),
    F("cuDeviceGet", f_devget),
    F("cuDeviceGetAttribute", f_attr),
    F("cuDevicePrimaryCtxRetain", f_retain),
    F("cuCtxSetCurrent", f_setcur),
    F("cuCtxGetCurrent", f_getcur),
    F("cuCtxGetDevice", f_getdev),
    F("cuCtxSynchronize", f_sync),
    F("cuModuleLoadDataEx", f_load),
    F("cuModuleGetFunction", f_getfn),
    F("cuModuleUnload", f_unload),
    F("cuFuncSetAttribute", f_setattr),
    F("cuFuncGetAttribute", f_getattr),
    F("cuLaunchKernel", f_launch),
    F("cuMemAlloc", f_malloc),
    F("cuMemFree", f_free),
    F("cuMemcpyHtoD", f_htod),
    F("cuMemcpyDtoH", f_dtoh),
    F("cuStreamSynchronize", f_ssync),
    F("cuEventCreate", f_evcreate),
    F("cuEventRecord", f_evrecord),
    F("cuEventSynchronize", f_evsync),
    F("cuEventElapsedTime", f_elapsed),
    F("cuEventDestroy", f_evdestroy),
    F("cuTensorMapEncodeTiled", f_tmap),
    F("cuMemsetD8", f_memset),
    F("cuMemsetD8Async", f_memset_async),
    F("cuMemcpyDtoDAsync", f_dtod_async),
    F("cuStreamCreate", f_streamcreate),
    F("cuStreamDestroy", f_streamdestroy),
    F("cuStreamWaitEvent", f_waitevent),
};

/* The lookup both exported variants share; 500 = CUDA_ERROR_NOT_FOUND. */
static CUresult lookup(const char *sym, void **pfn, int ver, unsigned long long flags, int *status)
{
	requests++;
	if (ver != 12000 || flags != 0 || strstr(sym, "_v"))
		bad_requests++;
	const char *hide = getenv("FAKECUDA_HIDE");
	*pfn = NULL;
	*status = 1;
	if (hide && !strcmp(hide, sym))
		return 500;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (!strcmp(table[i].name, sym)) {
			memcpy(pfn, &table[i].fn, sizeof *pfn);
			*status = 0;
			return 0;
		}
	return 500;
}

#ifdef FAKECUDA_V2
/* The CUDA 12 form, with the query status. */
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags,
			     int *status)
{
	int st;
	CUresult r = lookup(sym, pfn, ver, flags, &st);
	if (status)
		*status = st;
	return r;
}
#else
/* The 11.3+ form, without the status argument. */
CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, unsigned long long flags)
{
	int st;
	return lookup(sym, pfn, ver, flags, &st);
}
#endif
