/*
** test/unit/rt_dlopen.c: libattnrt's real driver loading against
** rt_fakecuda, a stand-in libcuda: dlopen through ATTNRT_CUDA_DRIVER,
** cuGetProcAddress_v2 and the legacy cuGetProcAddress, every entry point
** requested by base name for cudaVersion 12000, cuInit's
** CUDA_ERROR_NO_DEVICE, a driver that lacks an entry point, and a kernel
** whose sm_90 image launches with its own shared memory and block size on a
** 9.0 device and with the kernel's on an 8.0 one, and a tensor map encoded
** through the driver's cuTensorMapEncodeTiled, or refused by a driver that
** lacks it.
**
** usage: test_rt_dlopen FAKE_V2.so FAKE_V1.so
*/
#include "rt_testutil.h"

#include <dlfcn.h>

#include "driver.h"
#include "rt_fakecuda.h"

static const AttnrtImageLaunch launch_90[] = {{90, 200000, 384}};
static const AttnrtImage images[] = {
    {80, "CUBIN80", 8}, {90, "CUBIN90", 8}, {ATTNRT_IMAGE_LAUNCH, launch_90, sizeof launch_90}};

/* Calls fakecuda_* in the module the runtime loaded (dlopen gives its handle). */
static int fake_counter(const char *path, const char *name)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	int (*fn)(void);
	void *sym = dlsym(h, name);
	memcpy(&fn, &sym, sizeof fn);
	int n = sym ? fn() : -1;
	dlclose(h);
	return n;
}

/* A tensor map through the loaded driver: the fake saw the arguments in
** its order, innermost dimension first with byte strides. */
static void check_tmap(const char *path)
{
	_Alignas(64) unsigned char map[128] = {0};
	const void *ptr = (const void *)(uintptr_t)0x7f0000200000ull;
	int64_t shape[] = {2, 4, 100, 64};
	uint32_t box[] = {1, 1, 128, 64};
	CHECK(attnrt_tensor_map(map, ptr, 4, shape, NULL, 2, box) == ATTNRT_OK);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	void *sym = h ? dlsym(h, "fakecuda_tmap") : NULL;
	FakecudaTmap get = NULL;
	memcpy(&get, &sym, sizeof get);
	const FakeTmap *t = sym ? get(0) : NULL;
	CHECK(t && t->map == (uintptr_t)map && t->addr == (uintptr_t)ptr && map[0] == 0xcd);
	if (t) {
		CHECK(t->rank == 4 && t->dtype == 1 && t->interleave == 0 && t->swizzle == 3 &&
		      t->l2 == 2 && t->oob == 0);
		CHECK(t->dim[0] == 64 && t->dim[1] == 100 && t->dim[2] == 4 && t->dim[3] == 2);
		CHECK(t->stride[0] == 128 && t->stride[1] == 12800 && t->stride[2] == 51200);
		CHECK(t->box[0] == 64 && t->box[1] == 128 && t->box[2] == 1 && t->box[3] == 1);
		CHECK(t->estride[0] == 1 && t->estride[3] == 1);
	}
	CHECK(fake_counter(path, "fakecuda_tmap_calls") == 1);
	if (h)
		dlclose(h);
}

/* A new process's view: next call loads the driver again with this env. */
static void restart(const char *path, const char *devices, const char *hide)
{
	attnrt_set_driver_for_testing(NULL);
	unsetenv("FAKECUDA_CC");
	setenv("ATTNRT_CUDA_DRIVER", path, 1);
	setenv("FAKECUDA_DEVICES", devices, 1);
	if (hide)
		setenv("FAKECUDA_HIDE", hide, 1);
	else
		unsetenv("FAKECUDA_HIDE");
}

/* A working fake: init, devices, a kernel load and a launch. */
static void check_working(const char *path)
{
	restart(path, "2", NULL);
	CHECK(attnrt_init() == ATTNRT_OK);
	int n = 0, v = 0, dev = -1, sm = 0;
	CHECK(attnrt_device_count(&n) == ATTNRT_OK && n == 2);
	CHECK(attnrt_driver_version(&v) == ATTNRT_OK && v == 12040);
	CHECK(attnrt_current_device(&dev, &sm) == ATTNRT_OK && dev == 0 && sm == 90);
	AttnrtKernel k = {"k", images, 3, 100000, 128, NULL};
	int x = 3;
	void *params[] = {&x};
	CHECK(attnrt_launch(&k, 4, 1, 1, NULL, params) == ATTNRT_OK);
	CHECK(attnrt_kernel_image(&k, &sm) == ATTNRT_OK && sm == 90);
	CHECK(fake_counter(path, "fakecuda_launch_block") == 384);
	CHECK(fake_counter(path, "fakecuda_launch_smem") == 200000);
	CHECK(fake_counter(path, "fakecuda_smem_optin") == 200000);
	attnrt_kernel_release(&k);
	check_tmap(path);
	void *p = NULL;
	CHECK(attnrt_malloc(&p, 64) == ATTNRT_OK && p != NULL && attnrt_free(p) == ATTNRT_OK);
	int reqs = fake_counter(path, "fakecuda_requests");
	if (reqs < 28)
		fprintf(stderr, "%s: %d lookups (%s)\n", path, reqs, attnrt_last_error());
	CHECK(reqs >= 28);
	CHECK(fake_counter(path, "fakecuda_bad_requests") == 0);

	/* an 8.0 device runs the sm_80 image with the kernel's values */
	restart(path, "1", NULL);
	setenv("FAKECUDA_CC", "80", 1);
	CHECK(attnrt_launch(&k, 4, 1, 1, NULL, params) == ATTNRT_OK);
	unsigned smem = 0, threads = 0;
	CHECK(attnrt_kernel_config(&k, &sm, &smem, &threads) == ATTNRT_OK);
	CHECK(sm == 80 && smem == 100000 && threads == 128);
	CHECK(fake_counter(path, "fakecuda_launch_block") == 128);
	CHECK(fake_counter(path, "fakecuda_launch_smem") == 100000);
	CHECK(fake_counter(path, "fakecuda_smem_optin") == 100000);
	attnrt_kernel_release(&k);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_rt_dlopen FAKE_V2.so FAKE_V1.so\n");
		return 2;
	}
	const char *v2 = argv[1], *v1 = argv[2];

	restart(v2, "0", NULL);
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DEVICE,
		   "attnrt: CUDA driver found but no GPU (cuInit: CUDA_ERROR_NO_DEVICE)");

	check_working(v2);
	check_working(v1);

	char want[1024];
	restart(v2, "1", "cuLaunchKernel");
	snprintf(want, sizeof want,
		 "attnrt: CUDA driver %s (version 12.4) lacks cuLaunchKernel for "
		 "CUDA 12.0 (a CUDA 12 driver is needed)",
		 v2);
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DRIVER, want);

	restart(v1, "1", "cuDriverGetVersion");
	snprintf(want, sizeof want,
		 "attnrt: CUDA driver %s (version unknown) lacks cuDriverGetVersion "
		 "for CUDA 12.0 (a CUDA 12 driver is needed)",
		 v1);
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DRIVER, want);

	/* a driver without tensor maps loads; only they fail */
	restart(v2, "1", "cuTensorMapEncodeTiled");
	CHECK(attnrt_init() == ATTNRT_OK);
	_Alignas(64) unsigned char map[128];
	int64_t shape[] = {8, 64};
	uint32_t box[] = {8, 64};
	CHECK_FAIL(
	    attnrt_tensor_map(map, (void *)(uintptr_t)0x7f0000200000ull, 2, shape, NULL, 2, box),
	    ATTNRT_ERR_NO_DRIVER,
	    "attnrt: the CUDA driver (version 12.4) is too old for sm_90a kernels: it lacks "
	    "cuTensorMapEncodeTiled (a CUDA 12.0 or later driver is needed)");

	attnrt_set_driver_for_testing(NULL);
	unsetenv("FAKECUDA_HIDE");
	return rt_report("rt_dlopen");
}
