/*
** test/unit/rt_nodriver.c: libattnrt without a CUDA driver. With
** ATTNRT_CUDA_DRIVER=/nonexistent every entry point fails with the same
** one-line message, in every thread, and validation still works. Then the
** binary runs itself as a child (--child: attnrt_init, print the message,
** exit 1) under several settings of ATTNRT_CUDA_DRIVER, and checks that the
** whole of its stderr is exactly one line: not found (by path, and by the
** default name where this machine has no libcuda.so.1), found but not a
** library (/dev/null), and a library that is not a CUDA driver (libm.so.6).
*/
#include "rt_testutil.h"

#include <dlfcn.h>
#include <pthread.h>

static const char nonexistent_msg[] =
    "attnrt: no CUDA driver: /nonexistent not found (ATTNRT_CUDA_DRIVER)";
static const char default_msg[] =
    "attnrt: no CUDA driver: libcuda.so.1 not found (set ATTNRT_CUDA_DRIVER to its path)";

static const AttnrtImage images[] = {{80, "cubin", 5}};
static AttnrtKernel kernel = {"k", images, 1, 0, 128, NULL};

/* A second thread sees no message until its own call fails. */
static void *other_thread(void *arg)
{
	(void)arg;
	CHECK_STR(attnrt_last_error(), "");
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	return NULL;
}

/* Every entry point reports the cached failure. */
static void test_in_process(void)
{
	CHECK_STR(attnrt_last_error(), "");
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	CHECK_FAIL(attnrt_init(), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	int n = 7;
	CHECK_FAIL(attnrt_device_count(&n), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	CHECK(n == 0);
	void *p = &n;
	CHECK_FAIL(attnrt_malloc(&p, 16), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	CHECK(p == NULL);
	CHECK(attnrt_free(NULL) == ATTNRT_OK);
	void *fn = &n;
	CHECK_FAIL(attnrt_kernel_get(&kernel, &fn), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	CHECK(fn == NULL);
	CHECK_FAIL(attnrt_launch(&kernel, 1, 1, 1, NULL, NULL), ATTNRT_ERR_NO_DRIVER,
		   nonexistent_msg);
	CHECK(kernel.cache == NULL);
	attnrt_kernel_release(&kernel);
	int v = 0;
	CHECK_FAIL(attnrt_driver_version(&v), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	CHECK_FAIL(attnrt_synchronize(), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	void *ev = &n;
	CHECK_FAIL(attnrt_event_create(&ev), ATTNRT_ERR_NO_DRIVER, nonexistent_msg);
	CHECK(ev == NULL);
	/* validation needs no driver */
	int64_t shape[2] = {4, 8};
	CHECK(attnrt_check_tensor("k", "Q", images, 2, shape, shape, NULL, 2, 1) == ATTNRT_OK);
	CHECK_STR(attnrt_error_name(ATTNRT_ERR_NO_DRIVER), "ATTNRT_ERR_NO_DRIVER");

	pthread_t t;
	CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
	pthread_join(t, NULL);
}

/* The child's stderr must be want (one line, newline-terminated) and it
** must exit 1. want_prefix: only the start is fixed (dlerror text follows). */
static void check_child(const char *value, const char *want, int prefix_only)
{
	char *err = NULL;
	int status = rt_run_self("--child", "ATTNRT_CUDA_DRIVER", value, &err);
	CHECK(status == 1);
	size_t len = strlen(err);
	CHECK(len > 0 && err[len - 1] == '\n');
	CHECK(strchr(err, '\n') == err + len - 1);
	CHECK(strncmp(err, "attnrt: ", 8) == 0);
	if (len)
		err[len - 1] = 0;
	if (prefix_only) {
		if (strncmp(err, want, strlen(want)) != 0) {
			fprintf(stderr, "child message '%s' does not start with '%s'\n", err, want);
			rt_failures++;
		}
	} else {
		CHECK_STR(err, want);
	}
	free(err);
}

/* What a program prints, under each ATTNRT_CUDA_DRIVER setting. */
static void test_children(void)
{
	check_child("/nonexistent", nonexistent_msg, 0);
	check_child("/dev/null",
		    "attnrt: CUDA driver /dev/null found but failed to load: /dev/null: ", 1);
	check_child("libm.so.6",
		    "attnrt: CUDA driver libm.so.6 has no cuGetProcAddress (it predates "
		    "CUDA 11.3; a CUDA 12 driver is needed)",
		    0);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		printf("rt_nodriver: libcuda.so.1 is present; default-name checks skipped\n");
		dlclose(h);
		return;
	}
	check_child(NULL, default_msg, 0);
	check_child("", default_msg, 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child")) {
		if (attnrt_init() == ATTNRT_OK)
			return 0;
		fprintf(stderr, "%s\n", attnrt_last_error());
		return 1;
	}
	setenv("ATTNRT_CUDA_DRIVER", "/nonexistent", 1);
	test_in_process();
	test_children();
	return rt_report("rt_nodriver");
}
