/*
** runtime/attnrt.h: libattnrt, the small C runtime that attnc's generated GPU
** kernels link against. It loads the CUDA driver (libcuda.so.1) lazily with
** dlopen, so a program built with it starts and fails with a one-line message
** on a machine without a GPU; it never needs cudart or the CUDA headers.
**
** Every function is thread-safe and returns ATTNRT_OK (0) or one of the
** ATTNRT_ERR_* codes; after a nonzero return, attnrt_last_error() gives this
** thread's one-line message, which starts with "attnrt: ". Device pointers
** and CUDA handles (CUstream, CUevent, CUfunction) travel as void *.
*/
#ifndef ATTNRT_H
#define ATTNRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when the structs or signatures below change or gain something;
** generated code may check it with #if. 2: per-image launch values
** (ATTNRT_IMAGE_LAUNCH) and attnrt_kernel_config; AttnrtImage and
** AttnrtKernel keep version 1's layout, so version-1 code runs unchanged.
** 3: attnrt_tensor_map, the TMA tensor maps that sm_90a kernels take; code
** for earlier versions is unaffected. 4: context parallelism: the device
** helpers (attnrt_use_device, attnrt_device_sms, attnrt_memset, streams,
** attnrt_stream_wait_event, attnrt_memcpy_dtod_async), NCCL communicators
** (AttnrtComm, ATTNRT_ERR_NO_NCCL, ATTNRT_ERR_COMM) and the ring
** (attnrt_ring_run); nothing earlier changes. */
#define ATTNRT_API_VERSION 4

#if defined(__GNUC__)
#define ATTNRT_API __attribute__((visibility("default")))
#else
#define ATTNRT_API
#endif

enum {
	ATTNRT_OK = 0,
	ATTNRT_ERR_NO_DRIVER = 1, /* libcuda.so.1 missing, unloadable or too old */
	ATTNRT_ERR_NO_DEVICE = 2, /* a driver, but no GPU (cuInit: CUDA_ERROR_NO_DEVICE) */
	ATTNRT_ERR_CUDA = 3,      /* a CUDA driver call failed */
	ATTNRT_ERR_NO_IMAGE = 4,  /* no image of the kernel can run on this device */
	ATTNRT_ERR_LOAD = 5,      /* the driver rejected the image (JIT log in the message) */
	ATTNRT_ERR_RESOURCES = 6, /* the kernel needs more shared memory than the device has */
	ATTNRT_ERR_ARGUMENT = 7,  /* a bad argument (attnrt_check_tensor and the like) */
	ATTNRT_ERR_NOMEM = 8,     /* a host allocation failed */
	ATTNRT_ERR_NO_NCCL = 9,   /* libnccl.so.2 missing, unloadable or too old (< 2.7) */
	ATTNRT_ERR_COMM = 10      /* an NCCL call failed (ncclGetErrorString in the message) */
};

/* This thread's message for its last failed call ("" if none yet). */
ATTNRT_API const char *attnrt_last_error(void);
/* Sets this thread's message to "attnrt: " + the formatted text (on one line)
** and returns code: for generated code's own checks (a grid too large...). */
ATTNRT_API int attnrt_set_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* "ATTNRT_ERR_NO_DRIVER" and so on, for logs. */
ATTNRT_API const char *attnrt_error_name(int code);

/* Loads the driver, calls cuInit, and makes a context current on this thread:
** the current one if any, else device 0's primary context. Optional: every
** other function does the same on first use. */
ATTNRT_API int attnrt_init(void);
ATTNRT_API int attnrt_device_count(int *n);
/* The current device's ordinal and compute capability (major * 10 + minor). */
ATTNRT_API int attnrt_current_device(int *device, int *sm);
/* Makes device ordinal's primary context current on the calling thread, so
** that this thread's later calls (allocations, kernels, attnrt_comm_init)
** use that device. ATTNRT_ERR_ARGUMENT for an ordinal out of range. */
ATTNRT_API int attnrt_use_device(int ordinal);
/* The current device's multiprocessor count. */
ATTNRT_API int attnrt_device_sms(int *n);
/* cuDriverGetVersion: 12040 for CUDA 12.4. */
ATTNRT_API int attnrt_driver_version(int *version);

/* One image of a kernel: a cubin for sm (80, 90, 100, ...), or PTX text
** (sm 0, NUL-terminated, size including the NUL). An entry with sm
** ATTNRT_IMAGE_LAUNCH is no image but the kernel's per-image launch values:
** data is an array of AttnrtImageLaunch and size its size in bytes. */
typedef struct AttnrtImage {
	int sm;
	const void *data;
	size_t size;
} AttnrtImage;

#define ATTNRT_IMAGE_LAUNCH (-1)

/* Where one image launches differently from the kernel's defaults: an sm_90a
** image may need more dynamic shared memory and a larger block than the
** sm_80 image of the same kernel. sm names the image (its AttnrtImage.sm,
** 0 = the PTX image); a 0 in smem_bytes or threads keeps the kernel's value;
** the first entry for an sm counts. A kernel lists them in its images as
**   {ATTNRT_IMAGE_LAUNCH, launch, sizeof launch}
** rather than in AttnrtImage itself, so that images written {sm, data, size}
** stay complete initialisers (no -Wmissing-field-initializers under -Wextra)
** and programs built against version 1 keep their layout. A version-1
** runtime refuses the entry as an invalid image, so a kernel that needs its
** own launch values never runs without them. */
typedef struct AttnrtImageLaunch {
	int sm;
	unsigned smem_bytes;
	unsigned threads;
} AttnrtImageLaunch;

/* A kernel as generated code embeds it, as a zero-initialised static. */
typedef struct AttnrtKernel {
	const char *name; /* entry symbol */
	const AttnrtImage *images;
	int nimages;
	unsigned smem_bytes; /* dynamic shared memory per block, unless the image says */
	unsigned threads;    /* block size (x; y = z = 1), unless the image says */
	void *cache;         /* runtime-owned: leave NULL */
} AttnrtKernel;

/* The CUfunction of k for the current device. The module is loaded once per
** device (and context): the cubin with the largest sm <= the device's compute
** capability within the same major version (sm_80 runs on 8.x, sm_90 on 9.x);
** otherwise the PTX image, JIT-compiled by the driver. Sets the dynamic
** shared memory limit when the chosen image's smem_bytes needs the opt-in
** (> 48 KiB). */
ATTNRT_API int attnrt_kernel_get(AttnrtKernel *k, void **function_out);
/* The image attnrt_kernel_get chose for the current device: its sm, 0 = PTX. */
ATTNRT_API int attnrt_kernel_image(AttnrtKernel *k, int *sm_out);
/* What runs on the current device, for kernel-info reports: the chosen
** image's sm (0 = PTX) and the dynamic shared memory and block size that
** attnrt_launch gives it. Any output may be NULL. */
ATTNRT_API int attnrt_kernel_config(AttnrtKernel *k, int *sm, unsigned *smem_bytes,
				    unsigned *threads);
/* Unloads k's modules and frees its cache (not concurrently with its use). */
ATTNRT_API void attnrt_kernel_release(AttnrtKernel *k);
/* cuLaunchKernel on grid (gx, gy, gz), block (threads, 1, 1) and smem_bytes
** of dynamic shared memory as attnrt_kernel_config gives them, on stream (a
** CUstream; NULL = the default stream), with params the usual array of
** pointers to each argument. Does not synchronise. */
ATTNRT_API int attnrt_launch(AttnrtKernel *k, unsigned gx, unsigned gy, unsigned gz, void *stream,
			     void **params);

/* u32 division by d (d >= 1; 0 is taken as 1) of dividends below 2^31 as a
** multiply and a shift: q = (n * m) >> s, the product in 64 bits (m < 2^32,
** 31 <= s <= 63; Granlund and Montgomery's round-up method with N = 31).
** Generated launchers pass these for the divisors of a kernel's grid decode,
** which a GPU otherwise divides by in some twenty instructions each. */
ATTNRT_API void attnrt_divmagic(uint64_t d, uint32_t *m, uint32_t *s);

/* Validates one tensor argument before a launch. kernel and tensor name the
** message; shape, expected_shape and strides (in elements; NULL = row-major
** contiguous) have rank entries; expected_shape[k] < 0 leaves dimension k
** free. Checks, in order: ptr not NULL, sizes positive and as expected, the
** last dimension contiguous, the other strides non-negative and keeping rows
** align_bytes-aligned, ptr align_bytes-aligned (align_bytes <= 1: none).
** Strides of dimensions of extent 1 are not checked. */
ATTNRT_API int attnrt_check_tensor(const char *kernel, const char *tensor, const void *ptr,
				   int rank, const int64_t *shape, const int64_t *expected_shape,
				   const int64_t *strides, int elem_size, int align_bytes);
/* The same, naming dimension k dim_names[k] in the message ("N = 256"). */
ATTNRT_API int attnrt_check_tensor_named(const char *kernel, const char *tensor, const void *ptr,
					 int rank, const int64_t *shape,
					 const int64_t *expected_shape, const int64_t *strides,
					 int elem_size, int align_bytes,
					 const char *const *dim_names);

/* TMA (sm_90a kernels): encodes into map (ATTNRT_TENSOR_MAP_BYTES, aligned
** to ATTNRT_TENSOR_MAP_ALIGN) the CUDA tensor map of a whole tensor in
** global memory, which a kernel takes by value (a pointer to map in its
** params array). ptr, rank (1..5), shape and strides (in elements; NULL =
** row-major contiguous) describe the tensor outermost dimension first, as
** attnrt_check_tensor does; box[d] is the elements along dimension d that
** one copy moves. The map uses 128-byte swizzle, no interleave, 128-byte
** L2 promotion, and reads elements outside the tensor as zero. Elements of
** 4 bytes are f32 (a reduction through the map, cp.reduce.async.bulk.tensor
** .add, adds floats); those of 1, 2 or 8 bytes move as unsigned integers. Refused with
** ATTNRT_ERR_ARGUMENT and a message naming the rule: ptr not 16-byte
** aligned, a size outside 1..2^32, a last dimension that is not contiguous,
** another stride not a multiple of 16 bytes or not below 2^40 bytes, a box
** entry outside 1..256, a box row (box[rank - 1] * elem_size) not a
** multiple of 16 bytes up to 128, elem_size not 1, 2, 4 or 8. Strides of
** dimensions of extent 1 are not used (nor checked). ATTNRT_ERR_NO_DRIVER
** where the driver predates tensor maps (CUDA 12.0). */
#define ATTNRT_TENSOR_MAP_BYTES 128
#define ATTNRT_TENSOR_MAP_ALIGN 64
ATTNRT_API int attnrt_tensor_map(void *map, const void *ptr, int rank, const int64_t *shape,
				 const int64_t *strides, int elem_size, const uint32_t *box);

/* A compile-time dimension: "attnrt: causal: D is 64 but the kernel was
** compiled for D = 128". */
ATTNRT_API int attnrt_check_dim(const char *kernel, const char *dim, int64_t value,
				int64_t expected);

/* Device memory and synchronisation, for tests and examples. */
ATTNRT_API int attnrt_malloc(void **dptr, size_t bytes);
ATTNRT_API int attnrt_free(void *dptr);
ATTNRT_API int attnrt_memcpy_htod(void *dst, const void *src, size_t bytes);
ATTNRT_API int attnrt_memcpy_dtoh(void *dst, const void *src, size_t bytes);
/* Sets bytes bytes at dptr to value (its low 8 bits) with cuMemsetD8, on
** the legacy default stream; as CUDA's memsets of device memory go, it may
** return before the fill is done (a synchronize, or later work on a stream
** that synchronises with the default one, sees it). _async: cuMemsetD8Async
** on stream. */
ATTNRT_API int attnrt_memset(void *dptr, int value, size_t bytes);
ATTNRT_API int attnrt_memset_async(void *dptr, int value, size_t bytes, void *stream);
/* Device-to-device copy of bytes bytes on stream, no synchronisation. */
ATTNRT_API int attnrt_memcpy_dtod_async(void *dst, const void *src, size_t bytes, void *stream);
/* A stream in the current context that does not synchronise with the legacy
** default stream (CU_STREAM_NON_BLOCKING). Destroying one with work still
** queued is allowed: the driver releases it once the work is done. */
ATTNRT_API int attnrt_stream_create(void **stream);
ATTNRT_API int attnrt_stream_destroy(void *stream);
/* Work queued on stream after this waits for event's last record (at the
** time of this call) to complete; the host does not wait. */
ATTNRT_API int attnrt_stream_wait_event(void *stream, void *event);
/* Waits for all work on the current context (cuCtxSynchronize). */
ATTNRT_API int attnrt_synchronize(void);
ATTNRT_API int attnrt_stream_synchronize(void *stream);

/* Event timing: record two events on a stream, then elapsed_ms waits for the
** second and gives the milliseconds between them. */
ATTNRT_API int attnrt_event_create(void **event);
ATTNRT_API int attnrt_event_record(void *event, void *stream);
ATTNRT_API int attnrt_event_elapsed_ms(void *start, void *end, float *ms);
ATTNRT_API int attnrt_event_destroy(void *event);

/* Communicators for context parallelism, over NCCL (libnccl.so.2 2.7 or
** later, or the library $ATTNRT_NCCL names), loaded with dlopen on first
** use: without it these return ATTNRT_ERR_NO_NCCL, except for communicators
** of one rank, which never call NCCL. Not for concurrent use from several
** threads (NCCL's communicators are not). */
typedef struct AttnrtComm AttnrtComm;

#define ATTNRT_COMM_ID_BYTES 128 /* an ncclUniqueId */

/* ncclGetUniqueId into id (ATTNRT_COMM_ID_BYTES bytes): one rank makes it
** and hands it to the others (by MPI, a file, a socket...). */
ATTNRT_API int attnrt_comm_unique_id(void *id);
/* ncclCommInitRank on the current device (attnrt_use_device first): blocks
** until all nranks ranks have called it with the same id. rank is this
** process's or thread's place in 0 .. nranks - 1. With nranks 1, id may be
** NULL and NCCL is not needed. */
ATTNRT_API int attnrt_comm_init(AttnrtComm **comm, int nranks, int rank, const void *id);
/* A communicator around an ncclComm_t the caller made (with the libnccl
** that attnrt loads, the process's libnccl.so.2 or $ATTNRT_NCCL); the
** caller keeps it: attnrt_comm_destroy leaves it alone. nccl_comm may be
** NULL when nranks is 1. */
ATTNRT_API int attnrt_comm_wrap(AttnrtComm **comm, void *nccl_comm, int nranks, int rank);
ATTNRT_API int attnrt_comm_rank(const AttnrtComm *comm, int *rank, int *nranks);
/* Frees comm with the ring's stream and events, and its NCCL communicator
** if attnrt_comm_init made it. Synchronize the streams that the rings ran
** on first. NULL is a no-op. */
ATTNRT_API void attnrt_comm_destroy(AttnrtComm *comm);

/* Ring attention's K/V rotation, for any kernel: the ring moves the
** buffers, a callback launches the compute. Of P ranks, rank r's step s
** (0 .. P-1) sees rank (r - s + P) % P's shard, in bufs: local for s = 0,
** then recv0, recv1, recv0... (s odd: recv0, s even: recv1). step returns
** ATTNRT_OK, or a code that stops the ring and is returned (with the
** message the step set). */
typedef int (*AttnrtRingStep)(void *ctx, int step, int src_rank, void *const *bufs, void *stream);

/* Runs the P steps of the ring on comm. nbufs (1..8) device buffers per
** set: local[i] (this rank's shard, bytes[i] > 0 bytes, read only), and two
** receive sets recv0[i], recv1[i] of the same sizes, distinct from local
** and from each other (NULL allowed with one rank). Before step s < P-1,
** the ring posts, on its own communication stream and in one NCCL group,
** the sends of step s's set to rank (r + 1) % P and the receives of step
** s + 1's set from rank (r - 1 + P) % P; so the exchange overlaps step s.
** Each step is called on the host in order, to queue its work on stream
** (the caller's; NULL = the legacy default stream), which by then is made
** to wait (events, not the host) for the receive of that step's set; a
** receive into a set waits for the step that last read it, and the first
** sends wait for the work queued on stream before the call (the local
** shard may be written just before). Nothing waits on the host: on return
** stream is ordered after all the ring's work, so a synchronize of it sees
** everything done. The communication stream and events are made on the
** first call of a communicator of two or more ranks and kept in it. P = 1:
** step 0 on local, nothing else. If a step fails after its group was
** posted, the group still completes only when the other ranks post theirs:
** they must stop at the same step, or the communicator is unusable (abort
** it with ncclCommAbort; the process should not reuse it). */
ATTNRT_API int attnrt_ring_run(AttnrtComm *comm, int nbufs, void *const *local, const size_t *bytes,
			       void *const *recv0, void *const *recv1, AttnrtRingStep step,
			       void *ctx, void *stream);

#ifdef __cplusplus
}
#endif

#endif
