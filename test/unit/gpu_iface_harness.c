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
** Built with -DBUNDLE (and -DMAGIC_PARAMS=M, the grid magic's count), the
** launcher is a bundle's: an sm_80 module of 64-row CTAs without maps and
** an sm_90a module of 128-row, 384-thread CTAs with the two maps. Run with
** FAKECUDA_CC=90 and again with 80 (the device's compute capability, which
** the runtime reads once per context), it checks that gqa_kernel_info and
** the launch follow the image that runs: block size, shared memory, the
** grid's x and its magic values from that image's rows per CTA (the sm_90a
** kernel persistent: at most 132 CTAs, the fake device's SMs), and the
** maps encoded and passed only for the sm_90a image, so that a stride TMA
** cannot take fails that image's launch and not the sm_80 one's.
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

/* What the fake driver recorded (rt_fakecuda.h), resolved once. */
static FakecudaTmapCalls calls;
static FakecudaTmap tmap;
static FakecudaRecordParams record;
static FakecudaLaunchParams params;
static FakecudaLaunchWords words;
static FakecudaLaunchGrid grid;
static int (*block)(void), (*smem)(void);

/* Resolves the records from the fake the runtime loaded; nonzero (after
** saying so) where one is missing. */
static int load_records(const char *fake)
{
	void *s;
	if ((s = fake_sym(fake, "fakecuda_tmap_calls")))
		memcpy(&calls, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_tmap")))
		memcpy(&tmap, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_record_params")))
		memcpy(&record, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_launch_params")))
		memcpy(&params, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_launch_words")))
		memcpy(&words, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_launch_grid")))
		memcpy(&grid, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_launch_block")))
		memcpy(&block, &s, sizeof s);
	if ((s = fake_sym(fake, "fakecuda_launch_smem")))
		memcpy(&smem, &s, sizeof s);
	if (!calls || !tmap || !record || !params || !words || !grid || !block || !smem) {
		fprintf(stderr, "harness: %s lacks the fakecuda_* records\n", fake);
		return 1;
	}
	return 0;
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

#ifdef BUNDLE
/* The bundle's launch on a device of compute capability cc (see the top). */
static int bundle(gqa_gpu_args *a, int cc)
{
	int hopper = cc == 90;
	attn_gpu_kernel_info ki;
	memset(&ki, 0, sizeof ki);
	CHECK(gqa_kernel_info(&ki) == ATTNRT_OK);
	CHECK(ki.target && !strcmp(ki.target, hopper ? "sm_90a" : "sm_80"));
	CHECK(ki.sm == cc && ki.block_n == 64);
	CHECK(ki.threads == (hopper ? 384u : 128u) && ki.smem_bytes == (hopper ? 100000u : 50000u));
	CHECK(ki.block_m == (hopper ? 128u : 64u));
	CHECK(gqa_kernel_info(NULL) == ATTNRT_ERR_ARGUMENT);

	/* an sm_80 launch has no maps after the magic: record no more */
	record(hopper ? PARAMS_BEFORE_MAPS + 2 : PARAMS_BEFORE_MAPS);
	int before = calls();
	int rc = gqa_launch(a, NULL);
	if (rc)
		fprintf(stderr, "harness: gqa_launch: %s\n", attnrt_last_error());
	CHECK(rc == ATTNRT_OK);
	unsigned gx = (unsigned)((a->N + ki.block_m - 1) / ki.block_m),
		 gy = (unsigned)(a->B * a->HKV * a->G);
	if (hopper) /* persistent: min(gx gy, the fake device's 132 SMs) CTAs in x */
		CHECK(grid(0) == (gx * gy < 132 ? gx * gy : 132) && grid(1) == 1 && grid(2) == 1);
	else
		CHECK(grid(0) == gx && grid(1) == gy && grid(2) == 1);
	CHECK(block() == (int)ki.threads && smem() == (int)ki.smem_bytes);
	/* the magic's first values: G = ceil(256 / gx) grid rows a group, G * gx */
	const uint32_t *w = words();
	int m0 = PARAMS_BEFORE_MAPS - MAGIC_PARAMS;
	if (w[m0] != (gx + 255) / gx || w[m0 + 1] != (gx + 255) / gx * gx) {
		fprintf(stderr, "sm_%d: grid magic %u, %u for gx = %u\n", cc, w[m0], w[m0 + 1], gx);
		failures++;
	}
	if (hopper) {
		/* encoded in tensor order (Q, then K), passed in the info's (K, Q) */
		CHECK(calls() == before + 2);
		const FakeTmap *mq = tmap(before), *mk = tmap(before + 1);
		const uintptr_t *p = params();
		CHECK(mq && mk && mq->addr == (uintptr_t)a->Q && mk->addr == (uintptr_t)a->K);
		if (mq && mk)
			CHECK(p[PARAMS_BEFORE_MAPS] == mk->map &&
			      p[PARAMS_BEFORE_MAPS + 1] == mq->map);
	} else {
		CHECK(calls() == before);
	}

	/* a K stride TMA cannot step: only the sm_90a image's launch fails */
	static const int64_t far[] = {1ll << 39, 128, 2 * 128, 1};
	const int64_t *saved = a->K_strides;
	a->K_strides = far;
	record(0);
	rc = gqa_launch(a, NULL);
	if (hopper) {
		CHECK(rc == ATTNRT_ERR_ARGUMENT);
		CHECK(!strcmp(attnrt_last_error(),
			      "attnrt: attnrt_tensor_map: stride 0 is "
			      "549755813888 elements; TMA needs less than 2^40 "
			      "bytes"));
	} else {
		CHECK(rc == ATTNRT_OK);
		CHECK(calls() == before);
	}
	a->K_strides = saved;
	return 0;
}
#endif

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
	if (load_records(fake))
		return 1;
#ifdef BUNDLE
	const char *cc = getenv("FAKECUDA_CC");
	a.N = 300;
	if (bundle(&a, cc ? atoi(cc) : 90))
		return 1;
	attnrt_set_driver_for_testing(NULL);
	if (failures)
		fprintf(stderr, "gpu_iface harness (bundle, sm_%s): %d check(s) failed\n",
			cc ? cc : "90", failures);
	return failures ? 1 : 0;
#endif

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
