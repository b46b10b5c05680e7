/*
** runtime/stream.c: streams, the waits between them, and the fills and
** device-to-device copies queued on them: what a program needs to overlap
** communication with computation (runtime/ring.c is built on them). Their
** entry points are optional in the driver table (a fake may lack them), so
** each call first makes sure the one it needs is there.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>

#include "driver.h"

/* A fill ordered with the legacy default stream, for zeroing accumulators. */
int attnrt_memset(void *dptr, int value, size_t bytes)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc || bytes == 0)
		return rc;
	if (!d->cuMemsetD8)
		return attnrt_fail_missing(d, "cuMemsetD8", "attnrt_memset");
	ARresult r = d->cuMemsetD8((ARdeviceptr)(uintptr_t)dptr, (unsigned char)value, bytes);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemsetD8(%p, %d, %zu bytes)", dptr, value & 0xff,
					bytes);
	return ATTNRT_OK;
}

/* The same on the caller's stream, so it orders with the caller's kernels. */
int attnrt_memset_async(void *dptr, int value, size_t bytes, void *stream)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc || bytes == 0)
		return rc;
	if (!d->cuMemsetD8Async)
		return attnrt_fail_missing(d, "cuMemsetD8Async", "attnrt_memset_async");
	ARresult r = d->cuMemsetD8Async((ARdeviceptr)(uintptr_t)dptr, (unsigned char)value, bytes,
					(ARstream)stream);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemsetD8Async(%p, %d, %zu bytes)", dptr,
					value & 0xff, bytes);
	return ATTNRT_OK;
}

/* Moving a shard between buffers without a round trip through the host. */
int attnrt_memcpy_dtod_async(void *dst, const void *src, size_t bytes, void *stream)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc || bytes == 0)
		return rc;
	if (!d->cuMemcpyDtoDAsync)
		return attnrt_fail_missing(d, "cuMemcpyDtoDAsync", "attnrt_memcpy_dtod_async");
	ARresult r = d->cuMemcpyDtoDAsync((ARdeviceptr)(uintptr_t)dst, (ARdeviceptr)(uintptr_t)src,
					  bytes, (ARstream)stream);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemcpyDtoDAsync(%zu bytes)", bytes);
	return ATTNRT_OK;
}

/* Non-blocking, so that work on it never waits for the legacy default
** stream behind the caller's back: every dependency is an explicit event. */
int attnrt_stream_create(void **stream)
{
	if (!stream)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_stream_create: NULL stream");
	*stream = NULL;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	if (!d->cuStreamCreate)
		return attnrt_fail_missing(d, "cuStreamCreate", "attnrt_stream_create");
	ARstream s = NULL;
	ARresult r = d->cuStreamCreate(&s, AR_CU_STREAM_NON_BLOCKING);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuStreamCreate");
	*stream = s;
	return ATTNRT_OK;
}

/* NULL is a no-op, like attnrt_free; queued work still runs. */
int attnrt_stream_destroy(void *stream)
{
	if (!stream)
		return ATTNRT_OK;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	if (!d->cuStreamDestroy)
		return attnrt_fail_missing(d, "cuStreamDestroy", "attnrt_stream_destroy");
	ARresult r = d->cuStreamDestroy((ARstream)stream);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuStreamDestroy");
	return ATTNRT_OK;
}

/* An ordering between two streams that the host never waits for. */
int attnrt_stream_wait_event(void *stream, void *event)
{
	if (!event)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_stream_wait_event: NULL event");
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	if (!d->cuStreamWaitEvent)
		return attnrt_fail_missing(d, "cuStreamWaitEvent", "attnrt_stream_wait_event");
	ARresult r = d->cuStreamWaitEvent((ARstream)stream, (ARevent)event, 0);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuStreamWaitEvent");
	return ATTNRT_OK;
}
