/*
** runtime/launch.c: launching a kernel on the caller's stream, and the thin
** device-memory, synchronisation and event wrappers that tests, examples and
** benchmarks use. Each makes sure a context is current (attnrt_context), so
** a program's first call may be any of them; errors name the kernel or the
** call.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>

#include "driver.h"

/* cuLaunchKernel with the chosen image's block and shared memory; no sync. */
int attnrt_launch(AttnrtKernel *k, unsigned gx, unsigned gy, unsigned gz, void *stream,
		  void **params)
{
	void *fnp = NULL;
	unsigned smem = 0, threads = 0;
	int rc = attnrt_kernel_resolve(k, &fnp, NULL, &smem, &threads);
	if (rc)
		return rc;
	if (gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "kernel %s: bad grid %ux%ux%u", k->name, gx,
				   gy, gz);
	const AttnrtDriver *d;
	rc = attnrt_driver(&d);
	if (rc)
		return rc;
	ARresult r = d->cuLaunchKernel((ARfunction)fnp, gx, gy, gz, threads, 1, 1, smem,
				       (ARstream)stream, params, NULL);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r,
					"kernel %s: launch (grid %ux%ux%u, block %u, %u bytes of "
					"shared memory) failed",
					k->name, gx, gy, gz, threads, smem);
	return ATTNRT_OK;
}

/* l = ceil(log2 d) and m = floor(2^(31 + l) / d) + 1: m d lies in
** (2^(31 + l), 2^(31 + l) + d] with d <= 2^l, so floor(n m / 2^(31 + l)) is
** n / d for every n < 2^31; and m < 2^32 since 2^l < 2 d. */
void attnrt_divmagic(uint64_t d, uint32_t *m, uint32_t *s)
{
	unsigned l = 0;
	if (d < 1)
		d = 1;
	if (d > (1ull << 32))
		d = 1ull << 32; /* dividends are below 2^31: the quotient is 0 anyway */
	while ((1ull << l) < d)
		l++;
	*m = (uint32_t)((1ull << (31 + l)) / d + 1);
	*s = 31 + l;
}

/* Device pointers travel as void *; 0 bytes gives NULL without a call. */
int attnrt_malloc(void **dptr, size_t bytes)
{
	if (!dptr)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_malloc: NULL dptr");
	*dptr = NULL;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc || bytes == 0)
		return rc;
	ARdeviceptr p = 0;
	ARresult r = d->cuMemAlloc(&p, bytes);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemAlloc(%zu bytes)", bytes);
	*dptr = (void *)(uintptr_t)p;
	return ATTNRT_OK;
}

/* Like free(): NULL is a no-op. */
int attnrt_free(void *dptr)
{
	if (!dptr)
		return ATTNRT_OK;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARresult r = d->cuMemFree((ARdeviceptr)(uintptr_t)dptr);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemFree(%p)", dptr);
	return ATTNRT_OK;
}

/* Synchronous host-to-device copy. */
int attnrt_memcpy_htod(void *dst, const void *src, size_t bytes)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc || bytes == 0)
		return rc;
	ARresult r = d->cuMemcpyHtoD((ARdeviceptr)(uintptr_t)dst, src, bytes);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemcpyHtoD(%zu bytes)", bytes);
	return ATTNRT_OK;
}

/* Synchronous device-to-host copy. */
int attnrt_memcpy_dtoh(void *dst, const void *src, size_t bytes)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc || bytes == 0)
		return rc;
	ARresult r = d->cuMemcpyDtoH(dst, (ARdeviceptr)(uintptr_t)src, bytes);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuMemcpyDtoH(%zu bytes)", bytes);
	return ATTNRT_OK;
}

/* Where asynchronous kernel errors surface: after a launch, before reading. */
int attnrt_synchronize(void)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARresult r = d->cuCtxSynchronize();
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuCtxSynchronize");
	return ATTNRT_OK;
}

/* The same for one stream. */
int attnrt_stream_synchronize(void *stream)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARresult r = d->cuStreamSynchronize((ARstream)stream);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuStreamSynchronize");
	return ATTNRT_OK;
}

/* A timing event (CU_EVENT_DEFAULT) in the current context. */
int attnrt_event_create(void **event)
{
	if (!event)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_event_create: NULL event");
	*event = NULL;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARevent e = NULL;
	ARresult r = d->cuEventCreate(&e, AR_CU_EVENT_DEFAULT);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuEventCreate");
	*event = e;
	return ATTNRT_OK;
}

/* Records event on stream (NULL = the default stream). */
int attnrt_event_record(void *event, void *stream)
{
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARresult r = d->cuEventRecord((ARevent)event, (ARstream)stream);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuEventRecord");
	return ATTNRT_OK;
}

/* Waits for end, then the milliseconds from start to end. */
int attnrt_event_elapsed_ms(void *start, void *end, float *ms)
{
	if (!ms)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_event_elapsed_ms: NULL ms");
	*ms = 0;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARresult r = d->cuEventSynchronize((ARevent)end);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuEventSynchronize");
	r = d->cuEventElapsedTime(ms, (ARevent)start, (ARevent)end);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuEventElapsedTime");
	return ATTNRT_OK;
}

/* NULL is a no-op, like attnrt_free. */
int attnrt_event_destroy(void *event)
{
	if (!event)
		return ATTNRT_OK;
	const AttnrtDriver *d;
	int rc = attnrt_context(&d, NULL, NULL);
	if (rc)
		return rc;
	ARresult r = d->cuEventDestroy((ARevent)event);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "cuEventDestroy");
	return ATTNRT_OK;
}
