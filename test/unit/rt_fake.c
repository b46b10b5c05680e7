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
** the memory and event wrappers, and thread-local messages.
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
	attnrt_set_driver_for_testing(NULL);
	return rt_report("rt_fake");
}
