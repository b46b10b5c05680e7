/*
** runtime/driver.h: libattnrt's internal view of the CUDA driver API. The
** types and constants are restated here (values from CUDA's cuda.h, checked
** against it by test/unit/rt_abi.c where the header exists), so the runtime
** builds without the CUDA toolkit. Every entry point lives in one table of
** function pointers, filled through cuGetProcAddress with a fixed
** cudaVersion, or by a unit test with a fake (attnrt_set_driver_for_testing).
** Entry points only some kernels need are optional: NULL where the driver
** lacks them, and the call that needs one says so. Not installed.
*/
#ifndef ATTNRT_DRIVER_H
#define ATTNRT_DRIVER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

/* The cudaVersion every entry point is requested for: the CUDA 12.0 ABI. */
#define ATTNRT_CUDA_VERSION 12000

typedef int ARresult;                   /* CUresult */
typedef int ARdevice;                   /* CUdevice */
typedef unsigned long long ARdeviceptr; /* CUdeviceptr */
typedef struct CUctx_st *ARcontext;     /* same tags as cuda.h */
typedef struct CUmod_st *ARmodule;
typedef struct CUfunc_st *ARfunction;
typedef struct CUstream_st *ARstream;
typedef struct CUevent_st *ARevent;

enum {
	AR_CUDA_SUCCESS = 0,
	AR_CUDA_ERROR_INVALID_VALUE = 1,
	AR_CUDA_ERROR_OUT_OF_MEMORY = 2,
	AR_CUDA_ERROR_NOT_INITIALIZED = 3,
	AR_CUDA_ERROR_NO_DEVICE = 100,
	AR_CUDA_ERROR_INVALID_DEVICE = 101,
	AR_CUDA_ERROR_INVALID_CONTEXT = 201,
	AR_CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
	AR_CUDA_ERROR_INVALID_PTX = 218,
	AR_CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	AR_CUDA_ERROR_NOT_FOUND = 500,
	AR_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,

	AR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	AR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,

	AR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
	AR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,

	AR_CU_JIT_INFO_LOG_BUFFER = 3,
	AR_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
	AR_CU_JIT_ERROR_LOG_BUFFER = 5,
	AR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,

	AR_CU_GET_PROC_ADDRESS_DEFAULT = 0,
	AR_CU_GET_PROC_ADDRESS_SUCCESS = 0,
	AR_CU_EVENT_DEFAULT = 0,
	AR_CU_EVENT_DISABLE_TIMING = 2,
	AR_CU_STREAM_NON_BLOCKING = 1,

	/* cuTensorMapEncodeTiled's enums (CUtensorMapDataType and so on) */
	AR_CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
	AR_CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
	AR_CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
	AR_CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4,
	AR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
	AR_CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
	AR_CU_TENSOR_MAP_SWIZZLE_128B = 3,
	AR_CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
	AR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
};

/* Shared memory a block may use without the opt-in attribute. */
#define ATTNRT_SMEM_DEFAULT_LIMIT (48u * 1024u)

/* The driver entry points libattnrt calls, in their CUDA 12.0 ABI (the _v2
** variants where cuda.h renames them: cuMemAlloc_v2, cuEventDestroy_v2...).
** Those after the required ones may be NULL (see driver.c's entries[]). */
typedef struct AttnrtDriver {
	ARresult (*cuInit)(unsigned flags);
	ARresult (*cuDriverGetVersion)(int *version);
	ARresult (*cuGetErrorName)(ARresult err, const char **name);
	ARresult (*cuGetErrorString)(ARresult err, const char **str);
	ARresult (*cuDeviceGetCount)(int *count);
	ARresult (*cuDeviceGet)(ARdevice *dev, int ordinal);
	ARresult (*cuDeviceGetAttribute)(int *value, int attrib, ARdevice dev);
	ARresult (*cuDevicePrimaryCtxRetain)(ARcontext *ctx, ARdevice dev);
	ARresult (*cuCtxSetCurrent)(ARcontext ctx);
	ARresult (*cuCtxGetCurrent)(ARcontext *ctx);
	ARresult (*cuCtxGetDevice)(ARdevice *dev);
	ARresult (*cuCtxSynchronize)(void);
	ARresult (*cuModuleLoadDataEx)(ARmodule *mod, const void *image, unsigned nopts, int *opts,
				       void **vals);
	ARresult (*cuModuleGetFunction)(ARfunction *fn, ARmodule mod, const char *name);
	ARresult (*cuModuleUnload)(ARmodule mod);
	ARresult (*cuFuncSetAttribute)(ARfunction fn, int attrib, int value);
	ARresult (*cuFuncGetAttribute)(int *value, int attrib, ARfunction fn);
	ARresult (*cuLaunchKernel)(ARfunction fn, unsigned gx, unsigned gy, unsigned gz,
				   unsigned bx, unsigned by, unsigned bz, unsigned smem,
				   ARstream stream, void **params, void **extra);
	ARresult (*cuMemAlloc)(ARdeviceptr *dptr, size_t bytes);
	ARresult (*cuMemFree)(ARdeviceptr dptr);
	ARresult (*cuMemcpyHtoD)(ARdeviceptr dst, const void *src, size_t bytes);
	ARresult (*cuMemcpyDtoH)(void *dst, ARdeviceptr src, size_t bytes);
	ARresult (*cuStreamSynchronize)(ARstream stream);
	ARresult (*cuEventCreate)(ARevent *event, unsigned flags);
	ARresult (*cuEventRecord)(ARevent event, ARstream stream);
	ARresult (*cuEventSynchronize)(ARevent event);
	ARresult (*cuEventElapsedTime)(float *ms, ARevent start, ARevent end);
	ARresult (*cuEventDestroy)(ARevent event);
	/* Optional (CUDA 12.0 drivers have it; only TMA kernels need it): map
	** is a CUtensorMap (128 bytes, 64-byte aligned), the enums are ints, the
	** arrays innermost dimension first and the strides in bytes. */
	ARresult (*cuTensorMapEncodeTiled)(void *map, int dtype, uint32_t rank, void *addr,
					   const uint64_t *dims, const uint64_t *strides,
					   const uint32_t *box, const uint32_t *elem_strides,
					   int interleave, int swizzle, int l2_promotion,
					   int oob_fill);
	/* Optional for fakes and tests (every CUDA 12.0 driver has them): the
	** fills, streams and device-to-device copies that the ring and the
	** device helpers use; a call that needs a missing one says so. */
	ARresult (*cuMemsetD8)(ARdeviceptr dptr, unsigned char value, size_t bytes);
	ARresult (*cuMemsetD8Async)(ARdeviceptr dptr, unsigned char value, size_t bytes,
				    ARstream stream);
	ARresult (*cuMemcpyDtoDAsync)(ARdeviceptr dst, ARdeviceptr src, size_t bytes,
				      ARstream stream);
	ARresult (*cuStreamCreate)(ARstream *stream, unsigned flags);
	ARresult (*cuStreamDestroy)(ARstream stream);
	ARresult (*cuStreamWaitEvent)(ARstream stream, ARevent event, unsigned flags);
} AttnrtDriver;

/* Installs a fake driver (every required entry non-NULL; an optional one may
** be NULL, as an old driver's) in place of libcuda, or with NULL goes back to
** loading libcuda.so.1; either way the next call starts over (cuInit, the
** primary context). Tests only: not concurrently with any other runtime
** call. Returns ATTNRT_ERR_ARGUMENT for an incomplete table. */
ATTNRT_API int attnrt_set_driver_for_testing(const AttnrtDriver *fake);

/* The loaded and initialised driver (cuInit done), or an error code. */
int attnrt_driver(const AttnrtDriver **out);
/* The driver with a current context on this thread (see attnrt_init). */
int attnrt_context(const AttnrtDriver **out, ARcontext *ctx, ARdevice *dev);
/* Device ordinal's primary context, retained once per device and kept. */
int attnrt_primary_context(const AttnrtDriver *d, int ordinal, ARcontext *ctx);
/* ATTNRT_ERR_NO_DRIVER naming the driver's version and the optional entry
** point (a NULL one in the table) that call needs. */
int attnrt_fail_missing(const AttnrtDriver *d, const char *entry, const char *call);
/* The compute capability of dev as major * 10 + minor. */
int attnrt_device_sm(const AttnrtDriver *d, ARdevice dev, int *sm);
/* k loaded for the current context: its CUfunction, the image's sm and its
** launch values (NULL outputs are skipped; on failure fn is NULL, sm -1,
** the rest 0). */
int attnrt_kernel_resolve(AttnrtKernel *k, void **fn, int *sm, unsigned *smem_bytes,
			  unsigned *threads);

/* A library libattnrt loads at run time: the file the environment variable
** env names (when set and not empty), else soname. NULL when dlopen fails,
** with missing set where the file does not exist (rather than failing to
** load) and why to dlerror's text (or NULL). *path is what was tried, *named
** whether env gave it. */
typedef struct AttnrtLib {
	const char *path;
	int named, missing;
	const char *why;
} AttnrtLib;
void *attnrt_dlopen(const char *env, const char *soname, AttnrtLib *lib);

/* Sets this thread's message ("attnrt: " is prepended; newlines become
** spaces) and returns code. */
int attnrt_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For a failed driver call: "attnrt: <what>: CUDA_ERROR_X (its string)". */
int attnrt_fail_cuda(const AttnrtDriver *d, ARresult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "CUDA_ERROR_X (its string)" for r into buf. */
void attnrt_cuda_describe(const AttnrtDriver *d, ARresult r, char *buf, size_t size);

#endif
