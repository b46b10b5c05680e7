/*
** test/unit/gpu_iface_harness.c: built by test_gpu_iface (gpu_iface.c)
** with the launcher it generated for examples/gqa.attn with two TMA tensor
** maps (tmaps[0] over K, tmaps[1] over Q), libattnrt, and
** -DPARAMS_BEFORE_MAPS=N (the kernel's parameters before the maps). Runs
** gqa_launch against rt_fakecuda and checks what the driver got: each
** map's encoding (innermost first, byte strides, the box reversed, K with
** the caller's strides), the maps as parameters N and N + 1 in the info's
** order, and a tensor TMA cannot map refused before any launch. First,
** with no driver at all, the launch fails with the runtime's one line.
**
** usage: harness FAKECUDA.so
*/
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "driver.h"
#include "gqa.h"
#include "rt_fakecuda.h"

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* Symbol name of the fake the runtime loaded (dlopen finds the same one). */
static void *fake_sym(const char *path, const char *name)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	return h ? dlsym(h, name) : NULL;
}

/* One encoding as the fake recorded it, against what TMA must be given. */
static void expect_map(const FakeTmap *t, const void *ptr, const unsigned long long *dim,
		       const unsigned long long *stride, const unsigned *box)
{
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(t->addr == (uintptr_t)ptr && t->rank == 4 && t->dtype == 1 && t->interleave == 0 &&
	      t->swizzle == 3 && t->l2 == 2 && t->oob == 0);
	for (int i = 0; i < 4; i++) {
		if (t->dim[i] != dim[i] || t->box[i] != box[i] || t->estride[i] != 1 ||
		    (i < 3 && t->stride[i] != stride[i])) {
			fprintf(
			    stderr,
			    "map of %p, entry %d: dim %llu box %u stride %llu; expected dim %llu "
			    "box %u stride %llu\n",
			    ptr, i, t->dim[i], t->box[i], i < 3 ? t->stride[i] : 0, dim[i], box[i],
			    i < 3 ? stride[i] : 0);
			failures++;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: harness FAKECUDA.so\n");
		return 2;
	}
	const char *fake = argv[1];
	gqa_gpu_args a;
	memset(&a, 0, sizeof a);
	a.B = 2, a.HKV = 2, a.G = 3, a.N = 100, a.M = 300;
	gqa_gpu_defaults(&a);
	a.Q = (const void *)(uintptr_t)0x7f0000100000ull;
	a.K = (const void *)(uintptr_t)0x7f0000200000ull;
	a.V = (const void *)(uintptr_t)0x7f0000300000ull;
	a.O = (void *)(uintptr_t)0x7f0000400000ull;
	a.L = (void *)(uintptr_t)0x7f0000500000ull;
	/* K stored [B, M, HKV, D] */
	static const int64_t k_strides[] = {300 * 2 * 128, 128, 2 * 128, 1};
	a.K_strides = k_strides;

	setenv("ATTNRT_CUDA_DRIVER", "/nonexistent", 1);
	CHECK(gqa_launch(&a, NULL) == ATTNRT_ERR_NO_DRIVER);
	CHECK(!strcmp(attnrt_last_error(),
		      "attnrt: no CUDA driver: /nonexistent not found (ATTNRT_CUDA_DRIVER)"));

	setenv("ATTNRT_CUDA_DRIVER", fake, 1);
	attnrt_set_driver_for_testing(NULL);
	CHECK(attnrt_init() == ATTNRT_OK);
	FakecudaTmapCalls calls = NULL;
	FakecudaTmap tmap = NULL;
	FakecudaRecordParams record = NULL;
	FakecudaLaunchParams params = NULL;
	void *s;
	if ((s = fake_sym(fake, "fakecuda_tmap_calls")))
		memcpy(&calls, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_tmap")))
		memcpy(&tmap, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_record_params")))
		memcpy(&record, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_launch_params")))
		memcpy(&params, &s, sizeof s);
	if (!calls || !tmap || !record || !params) {
		fprintf(stderr, "harness: %s lacks the fakecuda_* records\n", fake);
		return 1;
	}

	record(PARAMS_BEFORE_MAPS + 2);
	int rc = gqa_launch(&a, NULL);
	if (rc)
		fprintf(stderr, "harness: gqa_launch: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK);
	CHECK(calls() == 2);
	/* encoded in tensor order: Q (contiguous [2, 6, 100, 128]), then K */
	const FakeTmap *mq = tmap(0), *mk = tmap(1);
	expect_map(mq, a.Q, (const unsigned long long[]){128, 100, 6, 2},
		   (const unsigned long long[]){256, 25600, 153600},
		   (const unsigned[]){64, 128, 1, 1});
	expect_map(mk, a.K, (const unsigned long long[]){128, 300, 2, 2},
		   (const unsigned long long[]){512, 256, 153600},
		   (const unsigned[]){64, 64, 1, 1});
	/* passed in the info's order: K's map, then Q's, each 64-byte aligned */
	const uintptr_t *p = params();
	if (mq && mk) {
		CHECK(p[PARAMS_BEFORE_MAPS] == mk->map && p[PARAMS_BEFORE_MAPS + 1] == mq->map);
		CHECK(mk->map % 64 == 0 && mq->map == mk->map + 128);
	}

	/* a K stride TMA cannot step (2^40 bytes): refused, nothing launched */
	static const int64_t far[] = {1ll << 39, 128, 2 * 128, 1};
	a.K_strides = far;
	record(0);
	CHECK(gqa_launch(&a, NULL) == ATTNRT_ERR_ARGUMENT);
	CHECK(!strcmp(attnrt_last_error(), "attnrt: attnrt_tensor_map: stride 0 is 549755813888 "
					   "elements; TMA needs less than 2^40 bytes"));
	CHECK(calls() == 3);

	attnrt_set_driver_for_testing(NULL);
	if (failures)
		fprintf(stderr, "gpu_iface harness: %d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
