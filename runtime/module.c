/*
** runtime/module.c: from an AttnrtKernel (several embedded images of one
** kernel) to a CUfunction for the current device. The image is chosen by the
** device's compute capability, loaded with cuModuleLoadDataEx (with JIT log
** buffers, so a rejected PTX reports why), and kept in the kernel's cache,
** one entry per (context, device): with primary contexts that is one load per
** device. A single mutex guards every cache, so concurrent first launches
** load a module exactly once. How the chosen image launches (its
** AttnrtImageLaunch values, else the kernel's) is read at each launch, as
** the kernel's own values always were.
*/
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

typedef struct Loaded {
	ARcontext ctx;
	ARdevice dev;
	ARmodule mod;
	ARfunction fn;
	int sm; /* the image used: its sm, 0 = PTX */
} Loaded;

typedef struct KernelCache {
	int n, cap;
	Loaded *v;
} KernelCache;

static pthread_mutex_t g_modules = PTHREAD_MUTEX_INITIALIZER;

/* Catches what generated code could get wrong before any driver call. */
static int check_kernel(const AttnrtKernel *k)
{
	if (!k)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "NULL kernel");
	const char *name = k->name ? k->name : "(unnamed)";
	if (!k->name || !*k->name)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "kernel %s: no entry symbol name", name);
	int nreal = 0;
	for (int i = 0; k->images && i < k->nimages; i++) {
		const AttnrtImage *im = &k->images[i];
		int table = im->sm == ATTNRT_IMAGE_LAUNCH;
		if (!im->data || !im->size || (im->sm < 0 && !table) ||
		    (table && im->size % sizeof(AttnrtImageLaunch)))
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "kernel %s: image %d is empty or invalid", name, i);
		nreal += !table;
		for (size_t j = 0; table && j < im->size / sizeof(AttnrtImageLaunch); j++) {
			const AttnrtImageLaunch *l = (const AttnrtImageLaunch *)im->data + j;
			if (l->threads > 1024)
				return attnrt_fail(ATTNRT_ERR_ARGUMENT,
						   "kernel %s: block size %u for sm_%d is not in "
						   "1..1024",
						   name, l->threads, l->sm);
		}
	}
	if (nreal == 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "kernel %s: no images", name);
	if (k->threads == 0 || k->threads > 1024)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "kernel %s: block size %u is not in 1..1024", name, k->threads);
	return ATTNRT_OK;
}

/* CUDA's binary compatibility: a cubin for X.y runs on X.z with z >= y. */
static int pick_cubin(const AttnrtKernel *k, int cc)
{
	int best = -1;
	for (int i = 0; i < k->nimages; i++) {
		int sm = k->images[i].sm;
		if (sm > 0 && sm / 10 == cc / 10 && sm <= cc &&
		    (best < 0 || sm > k->images[best].sm))
			best = i;
	}
	return best;
}

/* The PTX image, if the kernel has one. */
static int pick_ptx(const AttnrtKernel *k)
{
	for (int i = 0; i < k->nimages; i++)
		if (k->images[i].sm == 0)
			return i;
	return -1;
}

/* How the image of k for sm launches: its AttnrtImageLaunch values where
** it has them (the first entry for its sm), else the kernel's. */
static void image_launch(const AttnrtKernel *k, int sm, unsigned *smem, unsigned *threads)
{
	*smem = k->smem_bytes, *threads = k->threads;
	for (int i = 0; i < k->nimages; i++) {
		if (k->images[i].sm != ATTNRT_IMAGE_LAUNCH)
			continue;
		const AttnrtImageLaunch *l = k->images[i].data;
		for (size_t j = 0; j < k->images[i].size / sizeof *l; j++)
			if (l[j].sm == sm) {
				if (l[j].smem_bytes)
					*smem = l[j].smem_bytes;
				if (l[j].threads)
					*threads = l[j].threads;
				return;
			}
	}
}

/* "sm_80 cubin" or "PTX" (JIT-compiled for the device), for messages. */
static void image_text(const AttnrtImage *im, char *buf, size_t size)
{
	if (im->sm)
		snprintf(buf, size, "sm_%d cubin", im->sm);
	else
		snprintf(buf, size, "PTX");
}

/* A JIT log as one line: lines joined by "; ", trailing blanks dropped. */
static void flatten_log(const char *in, char *out, size_t size)
{
	size_t n = strlen(in), w = 0;
	while (n && (in[n - 1] == '\n' || in[n - 1] == ' ' || in[n - 1] == '\r'))
		n--;
	for (size_t i = 0; i < n && w + 3 < size; i++) {
		if (in[i] == '\r')
			continue;
		if (in[i] == '\n') {
			out[w++] = ';';
			out[w++] = ' ';
		} else {
			out[w++] = in[i];
		}
	}
	out[w] = 0;
}

/* cuModuleLoadDataEx with error and info log buffers; PTX gets its NUL. */
static ARresult load_image(const AttnrtDriver *d, const AttnrtImage *im, ARmodule *mod, char *elog,
			   size_t elog_size, int *nomem)
{
	char ilog[4096];
	int opts[4] = {AR_CU_JIT_ERROR_LOG_BUFFER, AR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
		       AR_CU_JIT_INFO_LOG_BUFFER, AR_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
	void *vals[4] = {elog, (void *)(uintptr_t)elog_size, ilog, (void *)(uintptr_t)sizeof ilog};
	elog[0] = 0;
	ilog[0] = 0;
	const void *data = im->data;
	char *copy = NULL;
	if (im->sm == 0 && ((const char *)im->data)[im->size - 1] != 0) {
		copy = malloc(im->size + 1);
		if (!copy) {
			*nomem = 1;
			return AR_CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(copy, im->data, im->size);
		copy[im->size] = 0;
		data = copy;
	}
	ARresult r = d->cuModuleLoadDataEx(mod, data, 4, opts, vals);
	free(copy);
	elog[elog_size - 1] = 0;
	return r;
}

/* Dynamic shared memory beyond 48 KiB (with the static part) needs the
** opt-in attribute, up to the device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN. */
static int set_smem(const AttnrtDriver *d, const AttnrtKernel *k, unsigned smem, ARfunction fn,
		    ARdevice dev, int cc)
{
	if (smem == 0)
		return ATTNRT_OK;
	int stat = 0;
	ARresult r = d->cuFuncGetAttribute(&stat, AR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(d, r, "kernel %s: cuFuncGetAttribute(SHARED_SIZE_BYTES)",
					k->name);
	unsigned long long need = (unsigned long long)smem + (unsigned long long)stat;
	if (need <= ATTNRT_SMEM_DEFAULT_LIMIT)
		return ATTNRT_OK;
	int optin = 0;
	r = d->cuDeviceGetAttribute(&optin,
				    AR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(
		    d, r, "kernel %s: cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
		    k->name);
	if (need > (unsigned long long)optin) {
		if (stat)
			return attnrt_fail(
			    ATTNRT_ERR_RESOURCES,
			    "kernel %s needs %u bytes of dynamic shared memory (+%d static) "
			    "but sm_%d allows at most %d bytes per block",
			    k->name, smem, stat, cc, optin);
		return attnrt_fail(
		    ATTNRT_ERR_RESOURCES,
		    "kernel %s needs %u bytes of dynamic shared memory but sm_%d allows "
		    "at most %d bytes per block",
		    k->name, smem, cc, optin);
	}
	r = d->cuFuncSetAttribute(fn, AR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				  (int)smem);
	if (r != AR_CUDA_SUCCESS)
		return attnrt_fail_cuda(
		    d, r, "kernel %s: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)",
		    k->name, smem);
	return ATTNRT_OK;
}

/* The message for an image the driver refused, naming the kernel. */
static int fail_load(const AttnrtDriver *d, const AttnrtKernel *k, const AttnrtImage *im, int cc,
		     ARresult r, const char *elog)
{
	char what[64], err[512], log[2048];
	image_text(im, what, sizeof what);
	attnrt_cuda_describe(d, r, err, sizeof err);
	flatten_log(elog, log, sizeof log);
	const char *sep = *log ? ": " : "";
	if (r == AR_CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
		int v = 0;
		char vt[32] = "unknown";
		if (d->cuDriverGetVersion(&v) == AR_CUDA_SUCCESS && v > 0)
			snprintf(vt, sizeof vt, "%d.%d", v / 1000, v % 1000 / 10);
		return attnrt_fail(
		    ATTNRT_ERR_LOAD,
		    "kernel %s: the CUDA driver (version %s) is too old for the PTX "
		    "of this kernel (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); update the "
		    "driver%s%s",
		    k->name, vt, sep, log);
	}
	if (im->sm == 0)
		return attnrt_fail(ATTNRT_ERR_LOAD,
				   "kernel %s: JIT of the PTX for sm_%d failed: %s%s%s", k->name,
				   cc, err, sep, log);
	return attnrt_fail(ATTNRT_ERR_LOAD, "kernel %s: loading the %s on sm_%d failed: %s%s%s",
			   k->name, what, cc, err, sep, log);
}

/* Chooses, loads and prepares k for (ctx, dev); under g_modules. */
static int load_kernel(const AttnrtDriver *d, const AttnrtKernel *k, ARcontext ctx, ARdevice dev,
		       Loaded *out)
{
	int cc, rc = attnrt_device_sm(d, dev, &cc);
	if (rc)
		return rc;
	int ci = pick_cubin(k, cc), pi = pick_ptx(k);
	if (ci < 0 && pi < 0) {
		char have[256] = "";
		size_t n = 0;
		for (int i = 0; i < k->nimages && n < sizeof have - 16; i++)
			if (k->images[i].sm != ATTNRT_IMAGE_LAUNCH)
				n += (size_t)snprintf(have + n, sizeof have - n, "%ssm_%d",
						      n ? ", " : "", k->images[i].sm);
		return attnrt_fail(ATTNRT_ERR_NO_IMAGE,
				   "kernel %s: no image runs on sm_%d (cubins: %s; no PTX)",
				   k->name, cc, have);
	}
	char elog[8192];
	int nomem = 0, used = ci >= 0 ? ci : pi;
	ARmodule mod = NULL;
	ARresult r = load_image(d, &k->images[used], &mod, elog, sizeof elog, &nomem);
	if (r == AR_CUDA_ERROR_NO_BINARY_FOR_GPU && used == ci && pi >= 0) {
		/* e.g. an sm_100a cubin on a 10.3 device: the PTX may still JIT */
		used = pi;
		r = load_image(d, &k->images[used], &mod, elog, sizeof elog, &nomem);
	}
	if (nomem)
		return attnrt_fail(ATTNRT_ERR_NOMEM, "kernel %s: out of host memory", k->name);
	if (r != AR_CUDA_SUCCESS)
		return fail_load(d, k, &k->images[used], cc, r, elog);
	ARfunction fn = NULL;
	r = d->cuModuleGetFunction(&fn, mod, k->name);
	if (r != AR_CUDA_SUCCESS) {
		char what[64];
		image_text(&k->images[used], what, sizeof what);
		rc = attnrt_fail_cuda(d, r, "kernel %s: cuModuleGetFunction in the %s", k->name,
				      what);
		d->cuModuleUnload(mod);
		return rc;
	}
	unsigned smem, threads;
	image_launch(k, k->images[used].sm, &smem, &threads);
	rc = set_smem(d, k, smem, fn, dev, cc);
	if (rc) {
		d->cuModuleUnload(mod);
		return rc;
	}
	*out = (Loaded){ctx, dev, mod, fn, k->images[used].sm};
	return ATTNRT_OK;
}

/* The cache entry of k for the current context, loading it on first use. */
static int lookup(AttnrtKernel *k, Loaded *out)
{
	int rc = check_kernel(k);
	if (rc)
		return rc;
	const AttnrtDriver *d;
	ARcontext ctx;
	ARdevice dev;
	rc = attnrt_context(&d, &ctx, &dev);
	if (rc)
		return rc;
	pthread_mutex_lock(&g_modules);
	KernelCache *c = k->cache;
	if (c)
		for (int i = 0; i < c->n; i++)
			if (c->v[i].ctx == ctx && c->v[i].dev == dev) {
				*out = c->v[i];
				pthread_mutex_unlock(&g_modules);
				return ATTNRT_OK;
			}
	if (!c && !(c = k->cache = calloc(1, sizeof *c))) {
		pthread_mutex_unlock(&g_modules);
		return attnrt_fail(ATTNRT_ERR_NOMEM, "kernel %s: out of host memory", k->name);
	}
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 4;
		Loaded *v = realloc(c->v, (size_t)cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&g_modules);
			return attnrt_fail(ATTNRT_ERR_NOMEM, "kernel %s: out of host memory",
					   k->name);
		}
		c->v = v;
		c->cap = cap;
	}
	rc = load_kernel(d, k, ctx, dev, &c->v[c->n]);
	if (rc == ATTNRT_OK)
		*out = c->v[c->n++];
	pthread_mutex_unlock(&g_modules);
	return rc;
}

/* Everything a launch needs in one lookup (one lock): see driver.h. */
int attnrt_kernel_resolve(AttnrtKernel *k, void **fn, int *sm, unsigned *smem_bytes,
			  unsigned *threads)
{
	Loaded e = {0};
	e.sm = -1;
	unsigned smem = 0, nthreads = 0;
	int rc = lookup(k, &e);
	if (rc == ATTNRT_OK)
		image_launch(k, e.sm, &smem, &nthreads);
	if (fn)
		*fn = e.fn;
	if (sm)
		*sm = e.sm;
	if (smem_bytes)
		*smem_bytes = smem;
	if (threads)
		*threads = nthreads;
	return rc;
}

/* Public: the CUfunction, for callers that launch by themselves. */
int attnrt_kernel_get(AttnrtKernel *k, void **function_out)
{
	if (!function_out)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_kernel_get: NULL function_out");
	return attnrt_kernel_resolve(k, function_out, NULL, NULL, NULL);
}

/* Public: which image was chosen, for examples and tests to report. */
int attnrt_kernel_image(AttnrtKernel *k, int *sm_out)
{
	if (!sm_out)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_kernel_image: NULL sm_out");
	return attnrt_kernel_resolve(k, NULL, sm_out, NULL, NULL);
}

/* Public: the image and how it launches, for kernel-info reports. */
int attnrt_kernel_config(AttnrtKernel *k, int *sm, unsigned *smem_bytes, unsigned *threads)
{
	return attnrt_kernel_resolve(k, NULL, sm, smem_bytes, threads);
}

/* Unloads each module in its own context (then restores this thread's). */
void attnrt_kernel_release(AttnrtKernel *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&g_modules);
	KernelCache *c = k->cache;
	k->cache = NULL;
	pthread_mutex_unlock(&g_modules);
	if (!c)
		return;
	const AttnrtDriver *d;
	if (c->n && attnrt_driver(&d) == ATTNRT_OK) {
		ARcontext saved = NULL;
		if (d->cuCtxGetCurrent(&saved) != AR_CUDA_SUCCESS)
			saved = NULL;
		for (int i = 0; i < c->n; i++) {
			if (d->cuCtxSetCurrent(c->v[i].ctx) == AR_CUDA_SUCCESS)
				d->cuModuleUnload(c->v[i].mod);
		}
		d->cuCtxSetCurrent(saved);
	}
	free(c->v);
	free(c);
}
