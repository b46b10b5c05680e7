/*
** test/unit/rt_fake.c: libattnrt against a fake CUDA driver installed with
** attnrt_set_driver_for_testing. The fake has up to four devices of chosen
** compute capabilities, a per-thread current context, and counters; its
** module loads record which image they got and can fail with a chosen error
** and JIT log. Covered: cuInit failures (CUDA_ERROR_NO_DEVICE), image
** selection by compute capability (cubins within a major version, the PTX
** fallback, NO_BINARY_FOR_GPU retry, no image), JIT and PTX-version
** messages, the module cache (one load per device under 8 threads, one
** primary-context retain), the shared-memory opt-in, launch arguments and
** error propagation with the kernel name, per-image launch values (an sm_90
** image with its own shared memory and block size beside sm_80's defaults),
** the memory and event wrappers, thread-local messages, and TMA tensor maps
** (the driver's argument order, the replaced strides of size-1 dimensions,
** each refusal, a driver without cuTensorMapEncodeTiled), and the device
** helpers of context parallelism (attnrt_use_device's one retain per
** device, the multiprocessor count, fills, streams, waits and copies with
** what the driver got, and a driver without them).
*/
#include "rt_testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "driver.h"

enum { MAXDEV = 4 };

static struct {
	int ndev;
	int cc[MAXDEV];
	int optin[MAXDEV];
	int static_smem;
	int version;
	ARresult init_result, cubin_result, ptx_result, getfn_result, launch_result;
	const char *jit_log;
	atomic_int loads[MAXDEV], unloads, retains, setattr_calls, inits;
	int setattr_value;
	char loaded[MAXDEV][16]; /* the first bytes of the last image loaded */
	size_t loaded_len[MAXDEV];
	/* the last launch */
	ARfunction l_fn;
	unsigned l_grid[3], l_block[3], l_smem;
	ARstream l_stream;
	void **l_params, **l_extra;
	ARdeviceptr next_ptr;
	size_t copied;
	/* the last cuTensorMapEncodeTiled, as the driver got it */
	int t_calls;
	ARresult tmap_result;
	void *t_map, *t_addr;
	int t_dtype, t_interleave, t_swizzle, t_l2, t_oob;
	uint32_t t_rank, t_box[5], t_estride[5];
	uint64_t t_dim[5], t_stride[4];
	/* the last fill, copy, stream and wait */
	ARdeviceptr m_ptr, m_src;
	int m_value;
	size_t m_bytes;
	ARstream m_stream;
	unsigned m_flags;
	int streams_live;
	ARevent w_event;
} F;

static _Thread_local ARcontext cur;

/* Fake handles encode the device, never dereferenced. */
static ARcontext ctx_of(int dev)
{
	return (ARcontext)(uintptr_t)(0x1000 + 16 * dev);
}

static int dev_of_ctx(ARcontext c)
{
	return (int)(((uintptr_t)c - 0x1000) / 16);
}

/* The fake entry points, in AttnrtDriver order: each does the least that
** lets the runtime's logic be observed through F. */
static ARresult f_init(unsigned flags)
{
	(void)flags;
	atomic_fetch_add(&F.inits, 1);
	return F.init_result;
}

static ARresult f_version(int *v)
{
	*v = F.version;
	return 0;
}

static const struct {
	ARresult r;
	const char *name, *str;
} errs[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
};

static ARresult f_errname(ARresult r, const char **s)
{
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].r == r)
			return *s = errs[i].name, 0;
	*s = NULL;
	return 1;
}

static ARresult f_errstr(ARresult r, const char **s)
{
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].r == r)
			return *s = errs[i].str, 0;
	*s = NULL;
	return 1;
}

static ARresult f_count(int *n)
{
	*n = F.ndev;
	return 0;
}

static ARresult f_devget(ARdevice *d, int ordinal)
{
	if (ordinal < 0 || ordinal >= F.ndev)
		return 101;
	*d = ordinal;
	return 0;
}

static ARresult f_attr(int *v, int attrib, ARdevice d)
{
	if (d < 0 || d >= F.ndev)
		return 101;
	if (attrib == AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
		*v = F.cc[d] / 10;
	else if (attrib == AR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
		*v = F.cc[d] % 10;
	else if (attrib == AR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
		*v = F.optin[d];
	else if (attrib == AR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
		*v = 100 + d;
	else
		return 1;
	return 0;
}

static ARresult f_retain(ARcontext *c, ARdevice d)
{
	atomic_fetch_add(&F.retains, 1);
	*c = ctx_of(d);
	return 0;
}

static ARresult f_setcur(ARcontext c)
{
	cur = c;
	return 0;
}

static ARresult f_getcur(ARcontext *c)
{
	*c = cur;
	return 0;
}

static ARresult f_getdev(ARdevice *d)
{
	if (!cur)
		return AR_CUDA_ERROR_INVALID_CONTEXT;
	*d = dev_of_ctx(cur);
	return 0;
}

static ARresult f_ok(void)
{
	return 0;
}

static ARresult f_load(ARmodule *m, const void *image, unsigned n, int *opts, void **vals)
{
	if (!cur)
		return AR_CUDA_ERROR_INVALID_CONTEXT;
	int dev = dev_of_ctx(cur);
	char *elog = NULL;
	size_t elog_size = 0;
	int have_info = 0;
	for (unsigned i = 0; i < n; i++) {
		if (opts[i] == AR_CU_JIT_ERROR_LOG_BUFFER)
			elog = vals[i];
		else if (opts[i] == AR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			elog_size = (size_t)(uintptr_t)vals[i];
		else if (opts[i] == AR_CU_JIT_INFO_LOG_BUFFER)
			have_info = 1;
	}
	CHECK(elog && elog_size >= 1024 && have_info);
	const char *s = image;
	int ptx = !strncmp(s, ".version", 8);
	snprintf(F.loaded[dev], sizeof F.loaded[dev], "%s", ptx ? "PTX" : s);
	F.loaded_len[dev] = strlen(s);
	ARresult r = ptx ? F.ptx_result : F.cubin_result;
	if (r) {
		if (F.jit_log && elog)
			snprintf(elog, elog_size, "%s", F.jit_log);
		return r;
	}
	atomic_fetch_add(&F.loads[dev], 1);
	*m = (ARmodule)(uintptr_t)(0x2000 + 16 * dev);
	return 0;
}

static ARresult f_getfn(ARfunction *fn, ARmodule m, const char *name)
{
	(void)name;
	if (F.getfn_result)
		return F.getfn_result;
	*fn = (ARfunction)((uintptr_t)m + 0x1000);
	return 0;
}

static ARresult f_unload(ARmodule m)
{
	(void)m;
	atomic_fetch_add(&F.unloads, 1);
	return 0;
}

static ARresult f_setattr(ARfunction fn, int attrib, int value)
{
	(void)fn;
	CHECK(attrib == AR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
	atomic_fetch_add(&F.setattr_calls, 1);
	F.setattr_value = value;
	return 0;
}

static ARresult f_getattr(int *v, int attrib, ARfunction fn)
{
	(void)fn;
	CHECK(attrib == AR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
	*v = F.static_smem;
	return 0;
}

static ARresult f_launch(ARfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			 unsigned by, unsigned bz, unsigned smem, ARstream stream, void **params,
			 void **extra)
{
	F.l_fn = fn;
	F.l_grid[0] = gx, F.l_grid[1] = gy, F.l_grid[2] = gz;
	F.l_block[0] = bx, F.l_block[1] = by, F.l_block[2] = bz;
	F.l_smem = smem;
	F.l_stream = stream;
	F.l_params = params;
	F.l_extra = extra;
	return F.launch_result;
}

static ARresult f_malloc(ARdeviceptr *p, size_t n)
{
	(void)n;
	*p = F.next_ptr;
	return 0;
}

static ARresult f_free(ARdeviceptr p)
{
	return p == F.next_ptr ? 0 : 1;
}

static ARresult f_htod(ARdeviceptr dst, const void *src, size_t n)
{
	(void)src;
	F.copied += n;
	return dst == F.next_ptr ? 0 : 1;
}

static ARresult f_dtoh(void *dst, ARdeviceptr src, size_t n)
{
	memset(dst, 0x5a, n);
	F.copied += n;
	return src == F.next_ptr ? 0 : 1;
}

static ARresult f_streamsync(ARstream s)
{
	return s == (ARstream)(uintptr_t)0x77 ? 0 : 1;
}

static ARresult f_evcreate(ARevent *e, unsigned flags)
{
	*e = (ARevent)(uintptr_t)(0x3000 + flags);
	return 0;
}

static ARresult f_evrecord(ARevent e, ARstream s)
{
	(void)s;
	return e ? 0 : 1;
}

static ARresult f_evsync(ARevent e)
{
	return e ? 0 : 1;
}

static ARresult f_elapsed(float *ms, ARevent a, ARevent b)
{
	*ms = a && b ? 1.5f : 0;
	return a && b ? 0 : 1;
}

static ARresult f_evdestroy(ARevent e)
{
	return e ? 0 : 1;
}

/* Records everything it got and marks the map, whose bytes are opaque. */
static ARresult f_tmap(void *map, int dtype, uint32_t rank, void *addr, const uint64_t *dims,
		       const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides,
		       int interleave, int swizzle, int l2_promotion, int oob_fill)
{
	F.t_calls++;
	CHECK(rank >= 1 && rank <= 5);
	if (rank < 1 || rank > 5)
		return AR_CUDA_ERROR_INVALID_VALUE;
	F.t_map = map, F.t_addr = addr, F.t_rank = rank, F.t_dtype = dtype;
	F.t_interleave = interleave, F.t_swizzle = swizzle, F.t_l2 = l2_promotion;
	F.t_oob = oob_fill;
	memset(F.t_stride, 0, sizeof F.t_stride);
	for (uint32_t i = 0; i < rank; i++) {
		F.t_dim[i] = dims[i], F.t_box[i] = box[i], F.t_estride[i] = elem_strides[i];
		if (i + 1 < rank)
			F.t_stride[i] = strides[i];
	}
	if (F.tmap_result)
		return F.tmap_result;
	memset(map, 0xab, 128);
	return 0;
}

static ARresult f_memset(ARdeviceptr p, unsigned char value, size_t n)
{
	F.m_ptr = p, F.m_value = value, F.m_bytes = n, F.m_stream = NULL;
	return 0;
}

static ARresult f_memset_async(ARdeviceptr p, unsigned char value, size_t n, ARstream s)
{
	F.m_ptr = p, F.m_value = value, F.m_bytes = n, F.m_stream = s;
	return 0;
}

static ARresult f_dtod_async(ARdeviceptr dst, ARdeviceptr src, size_t n, ARstream s)
{
	F.m_ptr = dst, F.m_src = src, F.m_bytes = n, F.m_stream = s;
	return 0;
}

static ARresult f_streamcreate(ARstream *s, unsigned flags)
{
	F.m_flags = flags;
	F.streams_live++;
	*s = (ARstream)(uintptr_t)0x4000;
	return 0;
}

static ARresult f_streamdestroy(ARstream s)
{
	F.streams_live--;
	return s ? 0 : 1;
}

static ARresult f_waitevent(ARstream s, ARevent e, unsigned flags)
{
	F.m_stream = s, F.w_event = e, F.m_flags = flags;
	return e ? 0 : 1;
}

static const AttnrtDriver fake = {
    .cuInit = f_init,
    .cuDriverGetVersion = f_version,
    .cuGetErrorName = f_errname,
    .cuGetErrorString = f_errstr,
    .cuDeviceGetCount = f_count,
    .cuDeviceGet = f_devget,
    .cuDeviceGetAttribute = f_attr,
    .cuDevicePrimaryCtxRetain = f_retain,
    .cuCtxSetCurrent = f_setcur,
    .cuCtxGetCurrent = f_getcur,
    .cuCtxGetDevice = f_getdev,
    .cuCtxSynchronize = f_ok,
    .cuModuleLoadDataEx = f_load,
    .cuModuleGetFunction = f_getfn,
    .cuModuleUnload = f_unload,
    .cuFuncSetAttribute = f_setattr,
    .cuFuncGetAttribute = f_getattr,
    .cuLaunchKernel = f_launch,
    .cuMemAlloc = f_malloc,
    .cuMemFree = f_free,
    .cuMemcpyHtoD = f_htod,
    .cuMemcpyDtoH = f_dtoh,
    .cuStreamSynchronize = f_streamsync,
    .cuEventCreate = f_evcreate,
    .cuEventRecord = f_evrecord,
    .cuEventSynchronize = f_evsync,
    .cuEventElapsedTime = f_elapsed,
    .cuEventDestroy = f_evdestroy,
    .cuTensorMapEncodeTiled = f_tmap,
    .cuMemsetD8 = f_memset,
    .cuMemsetD8Async = f_memset_async,
    .cuMemcpyDtoDAsync = f_dtod_async,
    .cuStreamCreate = f_streamcreate,
    .cuStreamDestroy = f_streamdestroy,
    .cuStreamWaitEvent = f_waitevent,
};

/* A fresh fake with one device of capability cc, installed. */
static void reset(int cc)
{
	memset(&F, 0, sizeof F);
	F.ndev = 1;
	F.cc[0] = cc;
	F.optin[0] = 166912;
	F.version = 12040;
	F.next_ptr = 0x7f0000001000ull;
	cur = NULL;
	CHECK(attnrt_set_driver_for_testing(&fake) == ATTNRT_OK);
}

static const char ptx_text[] = ".version 8.0\n.target sm_80\n.address_size 64\n";
static const AttnrtImage img_all[] = {
    {0, ptx_text, sizeof ptx_text}, {90, "CUBIN90", 8}, {80, "CUBIN80", 8}};
static const AttnrtImage img_80_ptx[] = {{80, "CUBIN80", 8}, {0, ptx_text, sizeof ptx_text}};
static const AttnrtImage img_80[] = {{80, "CUBIN80", 8}};
static const AttnrtImage img_86_80[] = {{86, "CUBIN86", 8}, {80, "CUBIN80", 8}};
static const AttnrtImage img_100_ptx[] = {{100, "CUBIN100", 9}, {0, ptx_text, sizeof ptx_text}};
/* PTX without a NUL at all (ASan would see the driver read past it): the
** runtime must pass a terminated copy */
static const char ptx_nonul[11] = ".version 80";
static const AttnrtImage img_ptx_nonul[] = {{0, ptx_nonul, sizeof ptx_nonul}};

/* The image chosen for a device of capability cc, as the fake saw it. */
static void expect_pick(const AttnrtImage *images, int n, int cc, const char *want, int want_sm)
{
	reset(cc);
	AttnrtKernel k = {"k_sel", images, n, 0, 128, NULL};
	void *fn = NULL;
	int rc = attnrt_kernel_get(&k, &fn);
	if (rc)
		fprintf(stderr, "cc %d: %s\n", cc, attnrt_last_error());
	CHECK(rc == ATTNRT_OK && fn != NULL);
	if (strcmp(F.loaded[0], want) != 0) {
		fprintf(stderr, "cc %d: loaded %s, expected %s\n", cc, F.loaded[0], want);
		rt_failures++;
	}
	int sm = -1;
	CHECK(attnrt_kernel_image(&k, &sm) == ATTNRT_OK && sm == want_sm);
	CHECK(F.loads[0] == 1);
	attnrt_kernel_release(&k);
	CHECK(k.cache == NULL && F.unloads == 1);
}

/* cuInit's errors, cached: later calls repeat the message without cuInit. */
static void test_init(void)
{
	reset(80);
	F.init_result = AR_CUDA_ERROR_NO_DEVICE;
	const char *msg = "attnrt: CUDA driver found but no GPU (cuInit: CUDA_ERROR_NO_DEVICE)";
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DEVICE, msg);
	int n = 5;
	CHECK_FAIL(attnrt_device_count(&n), ATTNRT_ERR_NO_DEVICE, msg);
	CHECK(n == 0);
	AttnrtKernel k = {"k", img_80, 1, 0, 128, NULL};
	CHECK_FAIL(attnrt_launch(&k, 1, 1, 1, NULL, NULL), ATTNRT_ERR_NO_DEVICE, msg);
	CHECK(F.inits == 1);

	reset(80);
	F.init_result = AR_CUDA_ERROR_NOT_INITIALIZED;
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_CUDA,
		   "attnrt: cuInit failed: CUDA_ERROR_NOT_INITIALIZED (initialization error)");

	reset(80);
	F.init_result = 12345; /* unknown to cuGetErrorName */
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_CUDA, "attnrt: cuInit failed: CUDA error 12345");

	reset(86);
	F.ndev = 2;
	F.cc[1] = 90;
	CHECK(attnrt_init() == ATTNRT_OK);
	CHECK(cur == ctx_of(0) && F.retains == 1);
	CHECK(attnrt_device_count(&n) == ATTNRT_OK && n == 2);
	int dev = -1, sm = 0, v = 0;
	CHECK(attnrt_current_device(&dev, &sm) == ATTNRT_OK && dev == 0 && sm == 86);
	cur = ctx_of(1);
	CHECK(attnrt_current_device(&dev, &sm) == ATTNRT_OK && dev == 1 && sm == 90);
	CHECK(attnrt_driver_version(&v) == ATTNRT_OK && v == 12040);
	CHECK(F.inits == 1 && F.retains == 1);

	AttnrtDriver partial = fake;
	partial.cuEventDestroy = NULL;
	CHECK_FAIL(attnrt_set_driver_for_testing(&partial), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_set_driver_for_testing: cuEventDestroy is NULL");
}

/* Cubins run within their major version only (X.y on X.z, z >= y). */
static void test_selection(void)
{
	expect_pick(img_all, 3, 80, "CUBIN80", 80);
	expect_pick(img_all, 3, 86, "CUBIN80", 80);
	expect_pick(img_all, 3, 89, "CUBIN80", 80);
	expect_pick(img_all, 3, 90, "CUBIN90", 90);
	expect_pick(img_all, 3, 75, "PTX", 0);
	expect_pick(img_all, 3, 100, "PTX", 0);
	expect_pick(img_all, 3, 120, "PTX", 0);
	expect_pick(img_80_ptx, 2, 90, "PTX", 0);
	expect_pick(img_86_80, 2, 86, "CUBIN86", 86);
	expect_pick(img_86_80, 2, 89, "CUBIN86", 86);
	expect_pick(img_86_80, 2, 80, "CUBIN80", 80);
	expect_pick(img_ptx_nonul, 1, 90, "PTX", 0);
	CHECK(F.loaded_len[0] == sizeof ptx_nonul);

	reset(90);
	AttnrtKernel k = {"k_none", img_80, 1, 0, 128, NULL};
	void *fn = &k;
	CHECK_FAIL(attnrt_kernel_get(&k, &fn), ATTNRT_ERR_NO_IMAGE,
		   "attnrt: kernel k_none: no image runs on sm_90 (cubins: sm_80; no PTX)");
	CHECK(fn == NULL && F.loads[0] == 0);
	attnrt_kernel_release(&k);

	/* the driver refuses the cubin (sm_100a on a 10.3 device): PTX */
	reset(103);
	F.cubin_result = AR_CUDA_ERROR_NO_BINARY_FOR_GPU;
	AttnrtKernel kb = {"k_fallback", img_100_ptx, 2, 0, 128, NULL};
	int sm = -1;
	CHECK(attnrt_kernel_image(&kb, &sm) == ATTNRT_OK && sm == 0);
	CHECK_STR(F.loaded[0], "PTX");
	attnrt_kernel_release(&kb);

	/* ... and without a PTX image the driver's error stands */
	reset(103);
	F.cubin_result = AR_CUDA_ERROR_NO_BINARY_FOR_GPU;
	AttnrtKernel kc = {"k_nobin", img_100_ptx, 1, 0, 128, NULL};
	CHECK_FAIL(attnrt_kernel_get(&kc, &fn), ATTNRT_ERR_LOAD,
		   "attnrt: kernel k_nobin: loading the sm_100 cubin on sm_103 failed: "
		   "CUDA_ERROR_NO_BINARY_FOR_GPU (no kernel image is available for execution on "
		   "the device)");
	attnrt_kernel_release(&kc);
}

/* Driver refusals name the kernel and carry the JIT log on one line. */
static void test_load_errors(void)
{
	void *fn;
	reset(75);
	F.ptx_result = AR_CUDA_ERROR_INVALID_PTX;
	F.jit_log = "ptxas application ptx input, line 3; error   : bad\nline 4: worse\n\n";
	AttnrtKernel k = {"k_jit", img_all, 3, 0, 128, NULL};
	CHECK_FAIL(
	    attnrt_kernel_get(&k, &fn), ATTNRT_ERR_LOAD,
	    "attnrt: kernel k_jit: JIT of the PTX for sm_75 failed: CUDA_ERROR_INVALID_PTX (a PTX "
	    "JIT compilation failed): ptxas application ptx input, line 3; error   : bad; line 4: "
	    "worse");
	/* not cached: the next call tries again */
	F.jit_log = NULL;
	CHECK_FAIL(
	    attnrt_kernel_get(&k, &fn), ATTNRT_ERR_LOAD,
	    "attnrt: kernel k_jit: JIT of the PTX for sm_75 failed: CUDA_ERROR_INVALID_PTX (a PTX "
	    "JIT compilation failed)");
	F.ptx_result = 0;
	CHECK(attnrt_kernel_get(&k, &fn) == ATTNRT_OK && F.loads[0] == 1);
	attnrt_kernel_release(&k);

	reset(90);
	F.version = 12020;
	F.ptx_result = AR_CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
	AttnrtKernel ko = {"k_old", img_80_ptx, 2, 0, 128, NULL};
	CHECK_FAIL(
	    attnrt_kernel_get(&ko, &fn), ATTNRT_ERR_LOAD,
	    "attnrt: kernel k_old: the CUDA driver (version 12.2) is too old for the PTX of this "
	    "kernel (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); update the driver");
	attnrt_kernel_release(&ko);

	reset(80);
	F.getfn_result = AR_CUDA_ERROR_NOT_FOUND;
	AttnrtKernel kn = {"k_missing", img_all, 3, 0, 128, NULL};
	CHECK_FAIL(attnrt_kernel_get(&kn, &fn), ATTNRT_ERR_CUDA,
		   "attnrt: kernel k_missing: cuModuleGetFunction in the sm_80 cubin: "
		   "CUDA_ERROR_NOT_FOUND "
		   "(named symbol not found)");
	CHECK(F.loads[0] == 1 && F.unloads == 1);
	attnrt_kernel_release(&kn);

	/* malformed kernels, before any driver call */
	AttnrtKernel bad = {"k_bad", img_all, 3, 0, 0, NULL};
	CHECK_FAIL(attnrt_kernel_get(&bad, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_bad: block size 0 is not in 1..1024");
	bad.threads = 2048;
	CHECK_FAIL(attnrt_kernel_get(&bad, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_bad: block size 2048 is not in 1..1024");
	bad.threads = 128;
	bad.nimages = 0;
	CHECK_FAIL(attnrt_kernel_get(&bad, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_bad: no images");
	static const AttnrtImage empty[] = {{80, NULL, 0}};
	bad.images = empty;
	bad.nimages = 1;
	CHECK_FAIL(attnrt_kernel_get(&bad, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_bad: image 0 is empty or invalid");
	bad.name = NULL;
	CHECK_FAIL(attnrt_kernel_get(&bad, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel (unnamed): no entry symbol name");
	CHECK_FAIL(attnrt_kernel_get(NULL, &fn), ATTNRT_ERR_ARGUMENT, "attnrt: NULL kernel");
}

/* Opt-in above 48 KiB of dynamic + static shared memory, bounded by the device. */
static void test_smem(void)
{
	void *fn;
	struct {
		unsigned dyn;
		int stat, calls, ok;
	} cases[] = {
	    {0, 0, 0, 1},      {49152, 0, 0, 1},  {49153, 0, 1, 1},     {40000, 10000, 1, 1},
	    {166912, 0, 1, 1}, {166913, 0, 0, 0}, {166000, 1024, 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		reset(80);
		F.static_smem = cases[i].stat;
		AttnrtKernel k = {"k_smem", img_all, 3, cases[i].dyn, 128, NULL};
		int rc = attnrt_kernel_get(&k, &fn);
		CHECK((rc == ATTNRT_OK) == cases[i].ok);
		CHECK(F.setattr_calls == cases[i].calls);
		if (cases[i].calls)
			CHECK(F.setattr_value == (int)cases[i].dyn);
		if (!cases[i].ok)
			CHECK(rc == ATTNRT_ERR_RESOURCES && F.unloads == 1);
		/* cached: no second load, no second attribute call */
		if (cases[i].ok) {
			CHECK(attnrt_kernel_get(&k, &fn) == ATTNRT_OK);
			CHECK(F.loads[0] == 1 && F.setattr_calls == cases[i].calls);
		}
		attnrt_kernel_release(&k);
	}
	reset(86);
	F.optin[0] = 101376;
	AttnrtKernel k = {"k_smem", img_all, 3, 200000, 128, NULL};
	CHECK_FAIL(
	    attnrt_kernel_get(&k, &fn), ATTNRT_ERR_RESOURCES,
	    "attnrt: kernel k_smem needs 200000 bytes of dynamic shared memory but sm_86 allows at "
	    "most 101376 bytes per block");
	F.static_smem = 1024;
	CHECK_FAIL(
	    attnrt_kernel_get(&k, &fn), ATTNRT_ERR_RESOURCES,
	    "attnrt: kernel k_smem needs 200000 bytes of dynamic shared memory (+1024 static) but "
	    "sm_86 allows at most 101376 bytes per block");
	attnrt_kernel_release(&k);
}

/* Launch passes everything through and names the kernel on failure. */
static void test_launch(void)
{
	reset(90);
	AttnrtKernel k = {"k_launch", img_all, 3, 1024, 128, NULL};
	int a = 1;
	float b = 2;
	void *params[] = {&a, &b};
	ARstream s = (ARstream)(uintptr_t)0x77;
	CHECK(attnrt_launch(&k, 1, 2, 3, s, params) == ATTNRT_OK);
	void *fn = NULL;
	CHECK(attnrt_kernel_get(&k, &fn) == ATTNRT_OK && (void *)F.l_fn == fn);
	CHECK(F.l_grid[0] == 1 && F.l_grid[1] == 2 && F.l_grid[2] == 3);
	CHECK(F.l_block[0] == 128 && F.l_block[1] == 1 && F.l_block[2] == 1);
	CHECK(F.l_smem == 1024 && F.l_stream == s && F.l_params == params && F.l_extra == NULL);
	CHECK_STR(F.loaded[0], "CUBIN90");

	F.launch_result = AR_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	CHECK_FAIL(
	    attnrt_launch(&k, 1, 2, 3, NULL, params), ATTNRT_ERR_CUDA,
	    "attnrt: kernel k_launch: launch (grid 1x2x3, block 128, 1024 bytes of shared memory) "
	    "failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch)");
	CHECK(F.l_stream == NULL);
	F.launch_result = 0;
	CHECK_FAIL(attnrt_launch(&k, 0, 1, 1, NULL, params), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_launch: bad grid 0x1x1");
	CHECK_FAIL(attnrt_launch(&k, 1, 65536, 1, NULL, params), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_launch: bad grid 1x65536x1");
	CHECK(F.loads[0] == 1);
	attnrt_kernel_release(&k);
}

/* An sm_90 image that launches with more shared memory and a larger block
** than the kernel's defaults, which the sm_80 image and the PTX keep. */
static const AttnrtImageLaunch launch_90[] = {{90, 200000, 384}, {90, 1, 1}};
static const AttnrtImageLaunch launch_partial[] = {{80, 0, 512}, {0, 70000, 0}};
static const AttnrtImage img_launch[] = {{80, "CUBIN80", 8},
					 {ATTNRT_IMAGE_LAUNCH, launch_90, sizeof launch_90},
					 {90, "CUBIN90", 8},
					 {0, ptx_text, sizeof ptx_text}};
static const AttnrtImage img_partial[] = {
    {80, "CUBIN80", 8},
    {0, ptx_text, sizeof ptx_text},
    {ATTNRT_IMAGE_LAUNCH, launch_partial, sizeof launch_partial}};

/* One launch on a fresh fake device of capability cc: the image the fake
** loaded, the block and shared memory it was launched with, the opt-in
** value (0: none), and what attnrt_kernel_config reports. */
static void expect_launch(const AttnrtImage *images, int n, int cc, const char *image, int sm,
			  unsigned smem, unsigned threads, int setattr)
{
	reset(cc);
	F.optin[0] = 232448;
	AttnrtKernel k = {"k_cfg", images, n, 65536, 256, NULL};
	int x = 1;
	void *params[] = {&x};
	int rc = attnrt_launch(&k, 2, 1, 1, NULL, params);
	if (rc)
		fprintf(stderr, "cc %d: %s\n", cc, attnrt_last_error());
	CHECK(rc == ATTNRT_OK);
	CHECK_STR(F.loaded[0], image);
	if (F.l_block[0] != threads || F.l_smem != smem) {
		fprintf(stderr, "cc %d: launched block %u, %u bytes; expected %u, %u\n", cc,
			F.l_block[0], F.l_smem, threads, smem);
		rt_failures++;
	}
	CHECK(F.setattr_value == setattr && F.setattr_calls == (setattr != 0));
	int got_sm = -1;
	unsigned got_smem = 0, got_threads = 0;
	CHECK(attnrt_kernel_config(&k, &got_sm, &got_smem, &got_threads) == ATTNRT_OK);
	CHECK(got_sm == sm && got_smem == smem && got_threads == threads);
	CHECK(attnrt_kernel_config(&k, NULL, NULL, NULL) == ATTNRT_OK && F.loads[0] == 1);
	attnrt_kernel_release(&k);
}

/* Per-image launch values: the chosen image's, else the kernel's. */
static void test_image_launch(void)
{
	expect_launch(img_launch, 4, 90, "CUBIN90", 90, 200000, 384, 200000);
	expect_launch(img_launch, 4, 80, "CUBIN80", 80, 65536, 256, 65536);
	expect_launch(img_launch, 4, 86, "CUBIN80", 80, 65536, 256, 65536);
	expect_launch(img_launch, 4, 100, "PTX", 0, 65536, 256, 65536);
	/* a 0 keeps the kernel's value */
	expect_launch(img_partial, 3, 89, "CUBIN80", 80, 65536, 512, 65536);
	expect_launch(img_partial, 3, 90, "PTX", 0, 70000, 256, 70000);

	/* one device of each kind, one kernel: each launches its own way */
	reset(80);
	F.ndev = 2;
	F.cc[1] = 90;
	F.optin[1] = 232448;
	AttnrtKernel k = {"k_two", img_launch, 4, 40000, 128, NULL};
	CHECK(attnrt_launch(&k, 1, 1, 1, NULL, NULL) == ATTNRT_OK);
	CHECK(F.l_block[0] == 128 && F.l_smem == 40000 && F.setattr_calls == 0);
	cur = ctx_of(1);
	CHECK(attnrt_launch(&k, 1, 1, 1, NULL, NULL) == ATTNRT_OK);
	CHECK(F.l_block[0] == 384 && F.l_smem == 200000 && F.setattr_calls == 1);
	cur = ctx_of(0);
	CHECK(attnrt_launch(&k, 1, 1, 1, NULL, NULL) == ATTNRT_OK);
	CHECK(F.l_block[0] == 128 && F.l_smem == 40000 && F.loads[0] == 1 && F.loads[1] == 1);
	/* the kernel's values are read at each launch, as before images had their own */
	k.threads = 64;
	CHECK(attnrt_launch(&k, 1, 1, 1, NULL, NULL) == ATTNRT_OK && F.l_block[0] == 64);
	cur = ctx_of(1);
	CHECK(attnrt_launch(&k, 1, 1, 1, NULL, NULL) == ATTNRT_OK && F.l_block[0] == 384);
	attnrt_kernel_release(&k);

	/* the image's shared memory is what must fit, and what the message names */
	reset(90);
	F.optin[0] = 101376;
	void *fn = &k;
	AttnrtKernel kb = {"k_big", img_launch, 4, 1024, 128, NULL};
	CHECK_FAIL(attnrt_kernel_get(&kb, &fn), ATTNRT_ERR_RESOURCES,
		   "attnrt: kernel k_big needs 200000 bytes of dynamic shared memory but sm_90 "
		   "allows at most 101376 bytes per block");
	CHECK(fn == NULL);
	int sm = 5;
	unsigned smem = 5, threads = 5;
	CHECK(attnrt_kernel_config(&kb, &sm, &smem, &threads) == ATTNRT_ERR_RESOURCES);
	CHECK(sm == -1 && smem == 0 && threads == 0);
	attnrt_kernel_release(&kb);

	/* malformed tables, before any driver call */
	reset(90);
	static const AttnrtImageLaunch wide[] = {{90, 0, 2048}};
	static const AttnrtImage img_wide[] = {{90, "CUBIN90", 8},
					       {ATTNRT_IMAGE_LAUNCH, wide, sizeof wide}};
	AttnrtKernel kw = {"k_wide", img_wide, 2, 0, 128, NULL};
	CHECK_FAIL(attnrt_kernel_get(&kw, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_wide: block size 2048 for sm_90 is not in 1..1024");
	static const AttnrtImage img_torn[] = {{90, "CUBIN90", 8},
					       {ATTNRT_IMAGE_LAUNCH, launch_90, 5}};
	kw.images = img_torn;
	CHECK_FAIL(attnrt_kernel_get(&kw, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_wide: image 1 is empty or invalid");
	static const AttnrtImage img_only[] = {{ATTNRT_IMAGE_LAUNCH, launch_90, sizeof launch_90}};
	kw.images = img_only;
	kw.nimages = 1;
	CHECK_FAIL(attnrt_kernel_get(&kw, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_wide: no images");
	static const AttnrtImage img_neg[] = {{-2, "CUBIN", 6}};
	kw.images = img_neg;
	CHECK_FAIL(attnrt_kernel_get(&kw, &fn), ATTNRT_ERR_ARGUMENT,
		   "attnrt: kernel k_wide: image 0 is empty or invalid");
	CHECK(F.loads[0] == 0);
}

/* The wrappers convert handles faithfully and report failures. */
static void test_memory(void)
{
	reset(80);
	void *p = NULL;
	CHECK(attnrt_malloc(&p, 256) == ATTNRT_OK && (uintptr_t)p == 0x7f0000001000ull);
	char host[16] = "abc";
	CHECK(attnrt_memcpy_htod(p, host, sizeof host) == ATTNRT_OK);
	CHECK(attnrt_memcpy_dtoh(host, p, sizeof host) == ATTNRT_OK && host[15] == 0x5a);
	CHECK(F.copied == 32);
	CHECK(attnrt_memcpy_htod(p, host, 0) == ATTNRT_OK && F.copied == 32);
	CHECK(attnrt_free(p) == ATTNRT_OK);
	CHECK_FAIL(attnrt_free((void *)(uintptr_t)0x1234), ATTNRT_ERR_CUDA,
		   "attnrt: cuMemFree(0x1234): CUDA error 1");
	void *z = &p;
	CHECK(attnrt_malloc(&z, 0) == ATTNRT_OK && z == NULL);
	CHECK(attnrt_synchronize() == ATTNRT_OK);
	CHECK(attnrt_stream_synchronize((void *)(uintptr_t)0x77) == ATTNRT_OK);
	CHECK_FAIL(attnrt_stream_synchronize(NULL), ATTNRT_ERR_CUDA,
		   "attnrt: cuStreamSynchronize: CUDA error 1");
	void *e0 = NULL, *e1 = NULL;
	float ms = 0;
	CHECK(attnrt_event_create(&e0) == ATTNRT_OK && attnrt_event_create(&e1) == ATTNRT_OK);
	CHECK(attnrt_event_record(e0, NULL) == ATTNRT_OK &&
	      attnrt_event_record(e1, NULL) == ATTNRT_OK);
	CHECK(attnrt_event_elapsed_ms(e0, e1, &ms) == ATTNRT_OK && ms == 1.5f);
	CHECK(attnrt_event_destroy(e0) == ATTNRT_OK && attnrt_event_destroy(e1) == ATTNRT_OK);
	CHECK(attnrt_event_destroy(NULL) == ATTNRT_OK);
}

static AttnrtKernel shared_kernel = {"k_shared", img_all, 3, 65536, 256, NULL};
static atomic_int start_flag;
static ARfunction seen[8];

/* One of 8 threads: devices 0 and 1 by context, or none (device 0's primary). */
static void *hammer(void *arg)
{
	int id = (int)(intptr_t)arg;
	if (id % 4 != 3)
		cur = ctx_of(id % 2);
	while (!atomic_load(&start_flag))
		;
	intptr_t failed = 0;
	for (int i = 0; i < 2000; i++) {
		void *fn = NULL;
		if (attnrt_kernel_get(&shared_kernel, &fn) != ATTNRT_OK) {
			fprintf(stderr, "thread %d: %s\n", id, attnrt_last_error());
			failed++;
			break;
		}
		if (i == 0)
			seen[id] = fn;
		else if (seen[id] != fn)
			failed++;
	}
	return (void *)failed;
}

/* One module load per device even when 8 threads race for the first one. */
static void test_cache_threads(void)
{
	reset(80);
	F.ndev = 2;
	F.cc[1] = 90;
	F.optin[1] = 232448;
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		CHECK(pthread_create(&t[i], NULL, hammer, (void *)(intptr_t)i) == 0);
	atomic_store(&start_flag, 1);
	for (int i = 0; i < 8; i++) {
		void *failed = NULL;
		pthread_join(t[i], &failed);
		CHECK(failed == NULL);
	}
	CHECK(F.loads[0] == 1 && F.loads[1] == 1);
	CHECK(F.retains == 1);
	CHECK(F.setattr_calls == 2);
	for (int i = 0; i < 8; i++) {
		int dev = i % 4 == 3 ? 0 : i % 2;
		CHECK(seen[i] == (ARfunction)(uintptr_t)(0x2000 + 16 * dev + 0x1000));
	}
	cur = ctx_of(1);
	attnrt_kernel_release(&shared_kernel);
	CHECK(F.unloads == 2 && shared_kernel.cache == NULL);
	CHECK(cur == ctx_of(1));
}

static void *fail_in_thread(void *arg)
{
	(void)arg;
	AttnrtKernel k = {"k_thread", img_80, 1, 0, 128, NULL};
	void *fn;
	CHECK(attnrt_kernel_get(&k, &fn) == ATTNRT_ERR_NO_IMAGE);
	attnrt_kernel_release(&k);
	return NULL;
}

/* Another thread's failure leaves this thread's message alone. */
static void test_thread_local(void)
{
	reset(90);
	CHECK_FAIL(attnrt_check_tensor("k", "Q", NULL, 1, NULL, NULL, NULL, 2, 16),
		   ATTNRT_ERR_ARGUMENT, "attnrt: k: Q: null pointer");
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fail_in_thread, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_STR(attnrt_last_error(), "attnrt: k: Q: null pointer");
}

/* attnrt_set_error's message starts with "attnrt: " once, whether the
** caller wrote it (generated launchers do) or not. */
static void test_set_error(void)
{
	CHECK(attnrt_set_error(ATTNRT_ERR_ARGUMENT, "k: N = %d", 3) == ATTNRT_ERR_ARGUMENT);
	CHECK_STR(attnrt_last_error(), "attnrt: k: N = 3");
	attnrt_set_error(ATTNRT_ERR_ARGUMENT, "attnrt: k: grid of %d blocks", 7);
	CHECK_STR(attnrt_last_error(), "attnrt: k: grid of 7 blocks");
}

/* The last encoding was given exactly these arrays (innermost first). */
static void expect_tmap(int rank, const uint64_t *dims, const uint64_t *strides,
			const uint32_t *box)
{
	CHECK(F.t_rank == (uint32_t)rank);
	for (int i = 0; i < rank; i++) {
		if (F.t_dim[i] != dims[i] || F.t_box[i] != box[i] || F.t_estride[i] != 1 ||
		    (i + 1 < rank && F.t_stride[i] != strides[i])) {
			fprintf(stderr,
				"tmap entry %d: dim %llu box %u estride %u stride %llu; "
				"expected dim %llu box %u estride 1 stride %llu\n",
				i, (unsigned long long)F.t_dim[i], F.t_box[i], F.t_estride[i],
				(unsigned long long)(i + 1 < rank ? F.t_stride[i] : 0),
				(unsigned long long)dims[i], box[i],
				(unsigned long long)(i + 1 < rank ? strides[i] : 0));
			rt_failures++;
		}
	}
}

/* attnrt_tensor_map: the driver's order (innermost first, byte strides),
** the fixed modes, strides of size-1 dimensions replaced, each refusal
** before the driver is called, the driver's own failure, an old driver. */
static void test_tensor_map(void)
{
	reset(90);
	_Alignas(64) unsigned char map[2][128];
	const void *q = (const void *)(uintptr_t)0x7f0000100000ull;

	/* Q as [B, H, N, D] = [2, 3, 100, 64], contiguous, 64 x 64 boxes */
	int64_t shape[] = {2, 3, 100, 64};
	uint32_t box[] = {1, 1, 64, 64};
	CHECK(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, box) == ATTNRT_OK);
	CHECK(F.t_calls == 1 && F.t_map == map[0] && F.t_addr == q && map[0][127] == 0xab);
	CHECK(F.t_dtype == AR_CU_TENSOR_MAP_DATA_TYPE_UINT16);
	CHECK(F.t_interleave == AR_CU_TENSOR_MAP_INTERLEAVE_NONE);
	CHECK(F.t_swizzle == AR_CU_TENSOR_MAP_SWIZZLE_128B);
	CHECK(F.t_l2 == AR_CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
	CHECK(F.t_oob == AR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	expect_tmap(4, (const uint64_t[]){64, 100, 3, 2}, (const uint64_t[]){128, 12800, 38400},
		    (const uint32_t[]){64, 64, 1, 1});

	/* the same tensor laid out [B, N, H, D] in memory */
	int64_t bnhd[] = {19200, 64, 192, 1};
	CHECK(attnrt_tensor_map(map[1], q, 4, shape, bnhd, 2, box) == ATTNRT_OK);
	CHECK(F.t_map == map[1]);
	expect_tmap(4, (const uint64_t[]){64, 100, 3, 2}, (const uint64_t[]){384, 128, 38400},
		    (const uint32_t[]){64, 64, 1, 1});

	/* 4-byte elements: 32 of them make the 128-byte row; f32, so that a
	** reduction through the map adds floats */
	uint32_t box4[] = {1, 1, 16, 32};
	CHECK(attnrt_tensor_map(map[0], q, 4, shape, NULL, 4, box4) == ATTNRT_OK);
	CHECK(F.t_dtype == AR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
	expect_tmap(4, (const uint64_t[]){64, 100, 3, 2}, (const uint64_t[]){256, 25600, 76800},
		    (const uint32_t[]){32, 16, 1, 1});

	/* strides of size-1 dimensions are not used: the outermost (7, which TMA
	** would refuse) becomes the rows' bytes, 4 x 512 x 2 */
	int64_t s1[] = {1, 4, 8, 64}, st1[] = {7, 512, 64, 1};
	CHECK(attnrt_tensor_map(map[0], q, 4, s1, st1, 2, box) == ATTNRT_OK);
	expect_tmap(4, (const uint64_t[]){64, 8, 4, 1}, (const uint64_t[]){128, 1024, 4096},
		    (const uint32_t[]){64, 64, 1, 1});
	/* ... and one in the middle: 8 x 64 x 2 */
	int64_t s2[] = {2, 1, 8, 64}, st2[] = {512, 3, 64, 1};
	CHECK(attnrt_tensor_map(map[0], q, 4, s2, st2, 2, box) == ATTNRT_OK);
	expect_tmap(4, (const uint64_t[]){64, 8, 1, 2}, (const uint64_t[]){128, 1024, 1024},
		    (const uint32_t[]){64, 64, 1, 1});
	/* rows of 72 bytes round up to 80; a size-1 last dimension's stride is
	** free too */
	int64_t s3[] = {1, 36}, st3[] = {5, 1}, s4[] = {4, 1}, st4[] = {16, 5};
	uint32_t box2[] = {1, 8};
	CHECK(attnrt_tensor_map(map[0], q, 2, s3, st3, 2, box2) == ATTNRT_OK);
	expect_tmap(2, (const uint64_t[]){36, 1}, (const uint64_t[]){80}, (const uint32_t[]){8, 1});
	CHECK(attnrt_tensor_map(map[0], q, 2, s4, st4, 2, box2) == ATTNRT_OK);
	expect_tmap(2, (const uint64_t[]){1, 4}, (const uint64_t[]){32}, (const uint32_t[]){8, 1});
	/* contiguous rows of 72 bytes cannot be stepped along by TMA */
	int64_t s5[] = {2, 36};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 2, s5, NULL, 2, box2), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: stride 0 is 36 elements (72 bytes), not a multiple "
		   "of 16 bytes as TMA needs");
	/* rank 5, the most TMA has */
	int64_t s6[] = {2, 2, 2, 2, 64};
	uint32_t box6[] = {1, 1, 1, 2, 64};
	CHECK(attnrt_tensor_map(map[0], q, 5, s6, NULL, 2, box6) == ATTNRT_OK);
	expect_tmap(5, (const uint64_t[]){64, 2, 2, 2, 2}, (const uint64_t[]){128, 256, 512, 1024},
		    (const uint32_t[]){64, 2, 1, 1, 1});

	/* refusals, each before the driver is called */
	int calls = F.t_calls;
	char want[256];
	snprintf(want, sizeof want,
		 "attnrt: attnrt_tensor_map: pointer %p is not 16-byte aligned as TMA needs",
		 (const void *)((const char *)q + 8));
	CHECK_FAIL(attnrt_tensor_map(map[0], (const char *)q + 8, 4, shape, NULL, 2, box),
		   ATTNRT_ERR_ARGUMENT, want);
	snprintf(want, sizeof want,
		 "attnrt: attnrt_tensor_map: the map at %p is not 64-byte aligned",
		 (void *)(map[0] + 32));
	CHECK_FAIL(attnrt_tensor_map(map[0] + 32, q, 4, shape, NULL, 2, box), ATTNRT_ERR_ARGUMENT,
		   want);
	CHECK_FAIL(attnrt_tensor_map(map[0], NULL, 4, shape, NULL, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: null pointer");
	int64_t odd[] = {19200, 6400, 36, 1};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, odd, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: stride 2 is 36 elements (72 bytes), not a multiple "
		   "of 16 bytes as TMA needs");
	int64_t gap[] = {76800, 25600, 256, 2};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, gap, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: the last dimension must be contiguous (its stride "
		   "is 2); TMA copies rows of adjacent elements");
	int64_t neg[] = {19200, -6400, 64, 1};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, neg, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: stride 1 is -6400; TMA needs non-negative strides");
	int64_t huge[] = {1ll << 40, 6400, 64, 1};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, huge, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: stride 0 is 1099511627776 elements; TMA needs less "
		   "than 2^40 bytes");
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 0, shape, NULL, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: rank 0 is not in 1..5 as TMA needs");
	int64_t shape6[] = {1, 2, 3, 100, 64, 64};
	uint32_t box6b[] = {1, 1, 1, 1, 64, 64};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 6, shape6, NULL, 2, box6b), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: rank 6 is not in 1..5 as TMA needs");
	int64_t wide[] = {(1ll << 32) + 1, 64};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 2, wide, NULL, 2, box2), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: dimension 0 is 4294967297; TMA needs 1 to 2^32");
	int64_t empty[] = {2, 0, 100, 64};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, empty, NULL, 2, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: dimension 1 is 0; TMA needs 1 to 2^32");
	uint32_t box0[] = {1, 0, 64, 64}, box257[] = {1, 1, 257, 64};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, box0), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: box dimension 1 is 0; TMA needs 1 to 256");
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, box257), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: box dimension 2 is 257; TMA needs 1 to 256");
	uint32_t row256[] = {1, 1, 64, 128}, row8[] = {1, 1, 64, 4};
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, row256), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: the box's last dimension is 128 elements (256 "
		   "bytes); 128-byte swizzle needs a multiple of 16 bytes up to 128");
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, row8), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: the box's last dimension is 4 elements (8 bytes); "
		   "128-byte swizzle needs a multiple of 16 bytes up to 128");
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 3, box), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: element size 3 is not 1, 2, 4 or 8 bytes");
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_tensor_map: NULL box");
	CHECK(F.t_calls == calls);

	/* the driver's refusal, with what it was given */
	F.tmap_result = AR_CUDA_ERROR_INVALID_VALUE;
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, box), ATTNRT_ERR_CUDA,
		   "attnrt: cuTensorMapEncodeTiled (innermost first: dims {64, 100, 3, 2}, byte "
		   "strides {128, 12800, 38400}, box {64, 64, 1, 1}): CUDA error 1");

	/* a driver from before CUDA 12.0 loads, and only tensor maps fail */
	reset(90);
	AttnrtDriver old = fake;
	old.cuTensorMapEncodeTiled = NULL;
	CHECK(attnrt_set_driver_for_testing(&old) == ATTNRT_OK);
	F.version = 11080;
	CHECK(attnrt_init() == ATTNRT_OK);
	CHECK_FAIL(attnrt_tensor_map(map[0], q, 4, shape, NULL, 2, box), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: the CUDA driver (version 11.8) is too old for sm_90a kernels: it lacks "
		   "cuTensorMapEncodeTiled (a CUDA 12.0 or later driver is needed)");
	CHECK(F.t_calls == 0);
}

/* What a program that drives one GPU per thread calls besides launches. */
static void test_device_helpers(void)
{
	reset(90);
	F.ndev = 3;
	F.cc[1] = F.cc[2] = 90;
	CHECK(attnrt_use_device(2) == ATTNRT_OK && cur == ctx_of(2) && F.retains == 1);
	int dev = -1, sms = 0;
	CHECK(attnrt_current_device(&dev, NULL) == ATTNRT_OK && dev == 2);
	CHECK(attnrt_device_sms(&sms) == ATTNRT_OK && sms == 102);
	CHECK(attnrt_use_device(0) == ATTNRT_OK && cur == ctx_of(0) && F.retains == 2);
	CHECK(attnrt_use_device(2) == ATTNRT_OK && cur == ctx_of(2) && F.retains == 2);
	CHECK_FAIL(attnrt_use_device(3), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_use_device: device 3 does not exist (3 devices)");
	CHECK_FAIL(attnrt_use_device(-1), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_use_device: device -1 does not exist (3 devices)");
	CHECK(cur == ctx_of(2));
	CHECK_FAIL(attnrt_device_sms(NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_device_sms: NULL argument");

	void *p = (void *)(uintptr_t)0x7f0000002000ull, *q = (void *)(uintptr_t)0x7f0000003000ull;
	void *st = NULL;
	CHECK(attnrt_stream_create(&st) == ATTNRT_OK && st == (void *)(uintptr_t)0x4000);
	CHECK(F.m_flags == AR_CU_STREAM_NON_BLOCKING && F.streams_live == 1);
	CHECK(attnrt_memset(p, 0x1ff, 96) == ATTNRT_OK);
	CHECK(F.m_ptr == (uintptr_t)p && F.m_value == 0xff && F.m_bytes == 96 && !F.m_stream);
	CHECK(attnrt_memset_async(q, 7, 32, st) == ATTNRT_OK);
	CHECK(F.m_ptr == (uintptr_t)q && F.m_value == 7 && F.m_bytes == 32 && F.m_stream == st);
	CHECK(attnrt_memcpy_dtod_async(p, q, 64, st) == ATTNRT_OK);
	CHECK(F.m_ptr == (uintptr_t)p && F.m_src == (uintptr_t)q && F.m_bytes == 64);
	void *ev = NULL;
	CHECK(attnrt_event_create(&ev) == ATTNRT_OK);
	CHECK(attnrt_stream_wait_event(st, ev) == ATTNRT_OK);
	CHECK(F.m_stream == st && F.w_event == ev && F.m_flags == 0);
	CHECK_FAIL(attnrt_stream_wait_event(st, NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_stream_wait_event: NULL event");
	CHECK(attnrt_stream_destroy(st) == ATTNRT_OK && F.streams_live == 0);
	CHECK(attnrt_stream_destroy(NULL) == ATTNRT_OK && F.streams_live == 0);
	CHECK(attnrt_event_destroy(ev) == ATTNRT_OK);
	CHECK_FAIL(attnrt_stream_create(NULL), ATTNRT_ERR_ARGUMENT,
		   "attnrt: attnrt_stream_create: NULL stream");
	/* zero bytes: nothing to do, no driver call */
	F.m_bytes = 5;
	CHECK(attnrt_memset(p, 0, 0) == ATTNRT_OK && F.m_bytes == 5);

	/* a driver table without them (an in-process fake's): only they fail */
	reset(90);
	AttnrtDriver bare = fake;
	bare.cuMemsetD8 = NULL;
	bare.cuMemsetD8Async = NULL;
	bare.cuMemcpyDtoDAsync = NULL;
	bare.cuStreamCreate = NULL;
	bare.cuStreamDestroy = NULL;
	bare.cuStreamWaitEvent = NULL;
	CHECK(attnrt_set_driver_for_testing(&bare) == ATTNRT_OK);
	CHECK(attnrt_init() == ATTNRT_OK);
	CHECK_FAIL(attnrt_memset(p, 0, 8), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: attnrt_memset: the CUDA driver (version 12.4) lacks cuMemsetD8");
	CHECK_FAIL(attnrt_memset_async(p, 0, 8, NULL), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: attnrt_memset_async: the CUDA driver (version 12.4) lacks "
		   "cuMemsetD8Async");
	CHECK_FAIL(attnrt_memcpy_dtod_async(p, q, 8, NULL), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: attnrt_memcpy_dtod_async: the CUDA driver (version 12.4) lacks "
		   "cuMemcpyDtoDAsync");
	CHECK_FAIL(attnrt_stream_create(&st), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: attnrt_stream_create: the CUDA driver (version 12.4) lacks "
		   "cuStreamCreate");
	CHECK(st == NULL);
	CHECK_FAIL(attnrt_stream_destroy(q), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: attnrt_stream_destroy: the CUDA driver (version 12.4) lacks "
		   "cuStreamDestroy");
	CHECK_FAIL(attnrt_stream_wait_event(q, p), ATTNRT_ERR_NO_DRIVER,
		   "attnrt: attnrt_stream_wait_event: the CUDA driver (version 12.4) lacks "
		   "cuStreamWaitEvent");
}

int main(void)
{
	test_init();
	test_selection();
	test_load_errors();
	test_smem();
	test_launch();
	test_image_launch();
	test_memory();
	test_cache_threads();
	test_thread_local();
	test_set_error();
	test_tensor_map();
	test_device_helpers();
	attnrt_set_driver_for_testing(NULL);
	return rt_report("rt_fake");
}
