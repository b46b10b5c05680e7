/*
** runtime/driver.c: finding the CUDA driver and the context. libcuda.so.1
** (or $ATTNRT_CUDA_DRIVER) is dlopen'ed on first use; only cuGetProcAddress_v2
** (or the 4-argument cuGetProcAddress of 11.3+ drivers) is taken with dlsym,
** and every other entry point comes through it for cudaVersion 12000, because
** cuda.h silently renames symbols (cuMemAlloc -> cuMemAlloc_v2) and a plain
** dlsym would return legacy ABIs. The outcome of loading and cuInit is
** computed once and kept, failures included, so every later call reports the
** same one-line message. Also the thread-local error message, and the
** choice of device (attnrt_use_device, one primary context per device).
*/
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

#define MSG_SIZE 4096

static _Thread_local char tl_msg[MSG_SIZE];

enum { ST_UNTRIED, ST_READY, ST_FAILED };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_state = ST_UNTRIED;
static AttnrtDriver g_table;
static int g_use_fake;
static void *g_handle;
static int g_fail_code;
static char g_fail_msg[1024];
/* primary contexts retained so far, by ordinal; those of ordinals past the
** table are retained on every attnrt_use_device (the driver counts them) */
#define MAX_CACHED_DEVICES 64
static ARcontext g_primary[MAX_CACHED_DEVICES];

/* The entries of AttnrtDriver by driver symbol name, for cuGetProcAddress.
** cuDriverGetVersion comes first so later failures can quote the version.
** An optional entry that the driver lacks stays NULL instead of failing the
** load: only the calls that need it fail, with their own message. */
static const struct {
	const char *name;
	size_t offset;
	int optional;
} entries[] = {
#define E(f)                                                                                       \
	{                                                                                          \
#f, offsetof(AttnrtDriver, f), 0                                                   \
	}
#define OPT(f)                                                                                     \
	{                                                                                          \
#f, offsetof(AttnrtDriver, f), 1                                                   \
	}
    E(cuDriverGetVersion),
    E(cuInit),
    E(cuGetErrorName),
    E(cuGetErrorString),
    E(cuDeviceGetCount),
    E(cuDeviceGet),
    E(cuDeviceGetAttribute),
    E(cuDevicePrimaryCtxRetain),
    E(cuCtxSetCurrent),
    E(cuCtxGetCurrent),
    E(cuCtxGetDevice),
    E(cuCtxSynchronize),
    E(cuModuleLoadDataEx),
    E(cuModuleGetFunction),
    E(cuModuleUnload),
    E(cuFuncSetAttribute),
    E(cuFuncGetAttribute),
    E(cuLaunchKernel),
    E(cuMemAlloc),
    E(cuMemFree),
    E(cuMemcpyHtoD),
    E(cuMemcpyDtoH),
    E(cuStreamSynchronize),
    E(cuEventCreate),
    E(cuEventRecord),
    E(cuEventSynchronize),
    E(cuEventElapsedTime),
    E(cuEventDestroy),
    OPT(cuTensorMapEncodeTiled),
    OPT(cuMemsetD8),
    OPT(cuMemsetD8Async),
    OPT(cuMemcpyDtoDAsync),
    OPT(cuStreamCreate),
    OPT(cuStreamDestroy),
    OPT(cuStreamWaitEvent),
#undef E
#undef OPT
};
#define NENTRIES (sizeof entries / sizeof entries[0])
_Static_assert(sizeof(AttnrtDriver) == NENTRIES * sizeof(void (*)(void)),
	       "every AttnrtDriver entry is listed in entries[]");

typedef ARresult (*GetProc2)(const char *sym, void **pfn, int ver, unsigned long long flags,
			     int *status);
typedef ARresult (*GetProc1)(const char *sym, void **pfn, int ver, unsigned long long flags);

/* The message of the calling thread's last failure. */
const char *attnrt_last_error(void)
{
	return tl_msg;
}

/* Names for the codes, so callers can log them without a table of their own. */
const char *attnrt_error_name(int code)
{
	switch (code) {
	case ATTNRT_OK: return "ATTNRT_OK";
	case ATTNRT_ERR_NO_DRIVER: return "ATTNRT_ERR_NO_DRIVER";
	case ATTNRT_ERR_NO_DEVICE: return "ATTNRT_ERR_NO_DEVICE";
	case ATTNRT_ERR_CUDA: return "ATTNRT_ERR_CUDA";
	case ATTNRT_ERR_NO_IMAGE: return "ATTNRT_ERR_NO_IMAGE";
	case ATTNRT_ERR_LOAD: return "ATTNRT_ERR_LOAD";
	case ATTNRT_ERR_RESOURCES: return "ATTNRT_ERR_RESOURCES";
	case ATTNRT_ERR_ARGUMENT: return "ATTNRT_ERR_ARGUMENT";
	case ATTNRT_ERR_NOMEM: return "ATTNRT_ERR_NOMEM";
	case ATTNRT_ERR_NO_NCCL: return "ATTNRT_ERR_NO_NCCL";
	case ATTNRT_ERR_COMM: return "ATTNRT_ERR_COMM";
	default: return "ATTNRT_ERR_UNKNOWN";
	}
}

/* Formats "attnrt: ..." into buf and flattens it to one line. */
static void format_msg(char *buf, size_t size, const char *fmt, va_list ap)
{
	/* generated launchers (API 1 to 3) write the prefix themselves: it is
	** kept once */
	int n = strncmp(fmt, "attnrt: ", 8) ? snprintf(buf, size, "attnrt: ") : 0;
	vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
}

/* One place sets the thread's message, so every message has the same shape. */
int attnrt_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	format_msg(tl_msg, sizeof tl_msg, fmt, ap);
	va_end(ap);
	return code;
}

/* Public twin of attnrt_fail, for generated code's own checks. */
int attnrt_set_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	format_msg(tl_msg, sizeof tl_msg, fmt, ap);
	va_end(ap);
	return code;
}

/* The driver's own name and text for r; both calls can fail on old drivers. */
void attnrt_cuda_describe(const AttnrtDriver *d, ARresult r, char *buf, size_t size)
{
	const char *name = NULL, *str = NULL;
	if (d && d->cuGetErrorName(r, &name) != AR_CUDA_SUCCESS)
		name = NULL;
	if (d && d->cuGetErrorString(r, &str) != AR_CUDA_SUCCESS)
		str = NULL;
	if (name && str)
		snprintf(buf, size, "%s (%s)", name, str);
	else if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "CUDA error %d", r);
}

/* A failed driver call: the caller's context, then the CUDA error. */
int attnrt_fail_cuda(const AttnrtDriver *d, ARresult r, const char *fmt, ...)
{
	char what[1024], err[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	attnrt_cuda_describe(d, r, err, sizeof err);
	return attnrt_fail(ATTNRT_ERR_CUDA, "%s: %s", what, err);
}

/* Records the (permanent) failure of loading or cuInit; under g_lock. */
static void fail_global(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_global(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	format_msg(g_fail_msg, sizeof g_fail_msg, fmt, ap);
	va_end(ap);
	g_fail_code = code;
}

/* The driver version as "12.4", for messages. */
static void version_text(int v, char *buf, size_t size)
{
	if (v > 0)
		snprintf(buf, size, "%d.%d", v / 1000, v % 1000 / 10);
	else
		snprintf(buf, size, "unknown");
}

/* One rule for the libraries named by an environment variable (the driver,
** NCCL): which file, and whether a failure means it is missing. */
void *attnrt_dlopen(const char *env, const char *soname, AttnrtLib *lib)
{
	const char *named = getenv(env);
	lib->named = named && *named;
	lib->path = lib->named ? named : soname;
	dlerror();
	void *h = dlopen(lib->path, RTLD_NOW | RTLD_LOCAL);
	lib->why = h ? NULL : dlerror();
	lib->missing = !h && (strchr(lib->path, '/')
				  ? access(lib->path, F_OK) != 0
				  : (!lib->why || strstr(lib->why, "No such file") != NULL));
	return h;
}

/* dlopen + cuGetProcAddress into g_table; under g_lock. Returns 0 or fails. */
static int load_library(void)
{
	AttnrtLib lib;
	void *h = attnrt_dlopen("ATTNRT_CUDA_DRIVER", "libcuda.so.1", &lib);
	const char *path = lib.path, *env = lib.named ? path : NULL;
	if (!h) {
		const char *why = lib.why;
		int missing = lib.missing;
		if (missing && !env)
			fail_global(ATTNRT_ERR_NO_DRIVER,
				    "no CUDA driver: libcuda.so.1 not found (set "
				    "ATTNRT_CUDA_DRIVER to its path)");
		else if (missing)
			fail_global(ATTNRT_ERR_NO_DRIVER,
				    "no CUDA driver: %s not found (ATTNRT_CUDA_DRIVER)", path);
		else
			fail_global(ATTNRT_ERR_NO_DRIVER,
				    "CUDA driver %s found but failed to load: %s", path,
				    why ? why : "unknown dlopen error");
		return -1;
	}
	GetProc2 get2 = NULL;
	GetProc1 get1 = NULL;
	void *sym = dlsym(h, "cuGetProcAddress_v2");
	if (sym)
		memcpy(&get2, &sym, sizeof sym);
	else if ((sym = dlsym(h, "cuGetProcAddress")) != NULL)
		memcpy(&get1, &sym, sizeof sym);
	else {
		fail_global(ATTNRT_ERR_NO_DRIVER,
			    "CUDA driver %s has no cuGetProcAddress (it predates "
			    "CUDA 11.3; a CUDA 12 driver is needed)",
			    path);
		dlclose(h);
		return -1;
	}
	AttnrtDriver t;
	memset(&t, 0, sizeof t);
	for (size_t i = 0; i < NENTRIES; i++) {
		void *p = NULL;
		int status = AR_CU_GET_PROC_ADDRESS_SUCCESS;
		ARresult r = get2 ? get2(entries[i].name, &p, ATTNRT_CUDA_VERSION,
					 AR_CU_GET_PROC_ADDRESS_DEFAULT, &status)
				  : get1(entries[i].name, &p, ATTNRT_CUDA_VERSION,
					 AR_CU_GET_PROC_ADDRESS_DEFAULT);
		if (r != AR_CUDA_SUCCESS || status != AR_CU_GET_PROC_ADDRESS_SUCCESS || !p) {
			if (entries[i].optional)
				continue;
			int v = 0;
			char vt[32];
			if (t.cuDriverGetVersion && t.cuDriverGetVersion(&v) != AR_CUDA_SUCCESS)
				v = 0;
			version_text(v, vt, sizeof vt);
			fail_global(ATTNRT_ERR_NO_DRIVER,
				    "CUDA driver %s (version %s) lacks %s for CUDA 12.0 "
				    "(a CUDA 12 driver is needed)",
				    path, vt, entries[i].name);
			dlclose(h);
			return -1;
		}
		memcpy((char *)&t + entries[i].offset, &p, sizeof p);
	}
	g_table = t;
	g_handle = h;
	return 0;
}

/* cuInit(0) on the table; under g_lock. NO_DEVICE gets its own message. */
static int init_driver(void)
{
	ARresult r = g_table.cuInit(0);
	if (r == AR_CUDA_SUCCESS)
		return 0;
	if (r == AR_CUDA_ERROR_NO_DEVICE) {
		fail_global(ATTNRT_ERR_NO_DEVICE,
			    "CUDA driver found but no GPU (cuInit: CUDA_ERROR_NO_DEVICE)");
	} else {
		char err[512];
		attnrt_cuda_describe(&g_table, r, err, sizeof err);
		fail_global(ATTNRT_ERR_CUDA, "cuInit failed: %s", err);
	}
	return -1;
}

/* Loads and initialises once; afterwards a single atomic load. */
int attnrt_driver(const AttnrtDriver **out)
{
	int st = atomic_load_explicit(&g_state, memory_order_acquire);
	if (st == ST_UNTRIED) {
		pthread_mutex_lock(&g_lock);
		st = atomic_load_explicit(&g_state, memory_order_relaxed);
		if (st == ST_UNTRIED) {
			int ok = (g_use_fake || load_library() == 0) && init_driver() == 0;
			st = ok ? ST_READY : ST_FAILED;
			atomic_store_explicit(&g_state, st, memory_order_release);
		}
		pthread_mutex_unlock(&g_lock);
	}
	if (st == ST_FAILED) {
		pthread_mutex_lock(&g_lock);
		snprintf(tl_msg, sizeof tl_msg, "%s", g_fail_msg);
		int code = g_fail_code;
		pthread_mutex_unlock(&g_lock);
		*out = NULL;
		return code;
	}
	*out = &g_table;
	return ATTNRT_OK;
}

/* Retaining is not free and each retain must be balanced to release the
** context, which libattnrt never does: one retain per device, kept for the
** life of the process. */
int attnrt_primary_context(const AttnrtDriver *d, int ordinal, ARcontext *ctx)
{
	const char *call = "cuDeviceGet";
	ARresult r = AR_CUDA_SUCCESS;
	ARcontext c = NULL;
	int cached = ordinal >= 0 && ordinal < MAX_CACHED_DEVICES;
	pthread_mutex_lock(&g_lock);
	if (cached)
		c = g_primary[ordinal];
	if (!c) {
		ARdevice dev = 0;
		r = d->cuDeviceGet(&dev, ordinal);
		if (r == AR_CUDA_SUCCESS) {
			call = "cuDevicePrimaryCtxRetain";
			r = d->cuDevicePrimaryCtxRetain(&c, dev);
		}
		if (r != AR_CUDA_SUCCESS)
			c = NULL;
		else if (cached)
			g_primary[ordinal] = c;
	}
	pthread_mutex_unlock(&g_lock);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "%s (device %d)", call, ordinal);
	*ctx = c;
	return ATTNRT_OK;
}

/* The current context, or device 0's primary context made current here. */
int attnrt_context(const AttnrtDriver **out, ARcontext *ctx_out, ARdevice *dev_out)
{
	const AttnrtDriver *d;
	int rc = attnrt_driver(&d);
	if (rc)
		return rc;
	ARcontext ctx = NULL;
	ARresult r = d->cuCtxGetCurrent(&ctx);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuCtxGetCurrent");
	if (!ctx) {
		if ((rc = attnrt_primary_context(d, 0, &ctx)) != 0)
			return rc;
		r = d->cuCtxSetCurrent(ctx);
		if (r != AR_CUDA_SUCCESS)
			return attnrt_fail_cuda(d, r,
						"cuCtxSetCurrent (device 0's primary context)");
	}
	ARdevice dev = 0;
	r = d->cuCtxGetDevice(&dev);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuCtxGetDevice");
	*out = d;
	if (ctx_out)
		*ctx_out = ctx;
	if (dev_out)
		*dev_out = dev;
	return ATTNRT_OK;
}

/* A program that drives several GPUs (one thread per rank of a ring) picks
** each thread's device here; without it every thread gets device 0. */
int attnrt_use_device(int ordinal)
{
	const AttnrtDriver *d;
	int rc = attnrt_driver(&d);
	if (rc)
		return rc;
	int n = 0;
	ARresult r = d->cuDeviceGetCount(&n);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuDeviceGetCount");
	if (ordinal < 0 || ordinal >= n)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_use_device: device %d does not exist (%d device%s)",
				   ordinal, n, n == 1 ? "" : "s");
	ARcontext ctx = NULL;
	if ((rc = attnrt_primary_context(d, ordinal, &ctx)) != 0)
		return rc;
	r = d->cuCtxSetCurrent(ctx);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuCtxSetCurrent (device %d's primary context)",
					ordinal);
	return ATTNRT_OK;
}

/* The driver is there but older than a call needs: say which entry point and
** which driver, as the loader does for the required ones. */
int attnrt_fail_missing(const AttnrtDriver *d, const char *entry, const char *call)
{
	int v = 0;
	char vt[32];
	if (d->cuDriverGetVersion(&v) != AR_CUDA_SUCCESS)
		v = 0;
	version_text(v, vt, sizeof vt);
	return attnrt_fail(ATTNRT_ERR_NO_DRIVER, "%s: the CUDA driver (version %s) lacks %s", call,
			   vt, entry);
}

/* Compute capability as one number, the form AttnrtImage.sm uses. */
int attnrt_device_sm(const AttnrtDriver *d, ARdevice dev, int *sm)
{
	int major = 0, minor = 0;
	ARresult r =
	    d->cuDeviceGetAttribute(&major, AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (r == AR_CUDA_SUCCESS)
		r = d->cuDeviceGetAttribute(&minor, AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
					    dev);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(
		    d, r, "cuDeviceGetAttribute(compute capability) of device %d", dev);
	*sm = major * 10 + minor;
	return ATTNRT_OK;
}

/* Public entry: driver, cuInit and a current context, so failures show early. */
int attnrt_init(void)
{
	const AttnrtDriver *d;
	return attnrt_context(&d, NULL, NULL);
}

/* Needs only cuInit, not a context. */
int attnrt_device_count(int *n)
{
	const AttnrtDriver *d;
	if (!n)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_device_count: NULL argument");
	*n = 0;
	int rc = attnrt_driver(&d);
	if (rc)
		return rc;
	ARresult r = d->cuDeviceGetCount(n);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuDeviceGetCount");
	return ATTNRT_OK;
}

/* What generated code or an example prints to say where it runs. */
int attnrt_current_device(int *device, int *sm)
{
	const AttnrtDriver *d;
	ARdevice dev = 0;
	int rc = attnrt_context(&d, NULL, &dev);
	if (rc)
		return rc;
	if (device)
		*device = dev;
	if (sm)
		return attnrt_device_sm(d, dev, sm);
	return ATTNRT_OK;
}

/* Persistent kernels size their grid by it (one CTA per multiprocessor). */
int attnrt_device_sms(int *n)
{
	if (!n)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_device_sms: NULL argument");
	*n = 0;
	const AttnrtDriver *d;
	ARdevice dev = 0;
	int rc = attnrt_context(&d, NULL, &dev);
	if (rc)
		return rc;
	ARresult r = d->cuDeviceGetAttribute(n, AR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	if (r != AR_CUDA_SUCCESS) {
		*n = 0;
		return attnrt_fail_cuda(
		    d, r, "cuDeviceGetAttribute(multiprocessor count) of device %d", dev);
	}
	return ATTNRT_OK;
}

/* For messages about PTX versions and for bug reports. */
int attnrt_driver_version(int *version)
{
	const AttnrtDriver *d;
	if (!version)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_driver_version: NULL argument");
	int rc = attnrt_driver(&d);
	if (rc)
		return rc;
	ARresult r = d->cuDriverGetVersion(version);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuDriverGetVersion");
	return ATTNRT_OK;
}

/* Swaps the table and forgets cuInit and the primary context (tests only). */
int attnrt_set_driver_for_testing(const AttnrtDriver *fake)
{
	if (fake) {
		for (size_t i = 0; i < NENTRIES; i++) {
			void *p;
			memcpy(&p, (const char *)fake + entries[i].offset, sizeof p);
			if (!p && !entries[i].optional)
				return attnrt_fail(ATTNRT_ERR_ARGUMENT,
						   "attnrt_set_driver_for_testing: %s is NULL",
						   entries[i].name);
		}
	}
	pthread_mutex_lock(&g_lock);
	if (g_handle) {
		dlclose(g_handle);
		g_handle = NULL;
	}
	if (fake)
		g_table = *fake;
	else
		memset(&g_table, 0, sizeof g_table);
	g_use_fake = fake != NULL;
	memset(g_primary, 0, sizeof g_primary);
	g_fail_code = 0;
	g_fail_msg[0] = 0;
	atomic_store_explicit(&g_state, ST_UNTRIED, memory_order_release);
	pthread_mutex_unlock(&g_lock);
	return ATTNRT_OK;
}
