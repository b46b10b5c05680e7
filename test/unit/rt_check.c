/*
** test/unit/rt_check.c: attnrt_check_tensor and attnrt_check_tensor_named,
** the validation generated code runs before a launch: every error message,
** exactly, with and without dimension names, and the cases that must pass
** (free dimensions, NULL strides, extent-1 dimensions with any stride,
** padded rows that stay aligned). Needs no driver.
*/
#include "rt_testutil.h"

#include <stdint.h>

#define ARG ATTNRT_ERR_ARGUMENT

static _Alignas(64) unsigned char buf[4096];

/* Q[B, H, N, D] bf16, contiguous, as the causal kernel sees it. */
static void test_ok(void)
{
	int64_t shape[4] = {2, 4, 300, 128}, want[4] = {2, 4, 300, 128};
	int64_t strides[4] = {4 * 300 * 128, 300 * 128, 128, 1};
	const char *names[4] = {"B", "H", "N", "D"};
	CHECK(attnrt_check_tensor("causal", "Q", buf, 4, shape, want, strides, 2, 16) == ATTNRT_OK);
	CHECK(attnrt_check_tensor("causal", "Q", buf, 4, shape, want, NULL, 2, 16) == ATTNRT_OK);
	CHECK(attnrt_check_tensor_named("causal", "Q", buf, 4, shape, want, strides, 2, 16,
					names) == ATTNRT_OK);
	/* expected < 0: free; NULL expected: all free */
	int64_t free_n[4] = {2, 4, -1, 128};
	CHECK(attnrt_check_tensor("causal", "Q", buf, 4, shape, free_n, strides, 2, 16) ==
	      ATTNRT_OK);
	CHECK(attnrt_check_tensor("causal", "Q", buf, 4, shape, NULL, strides, 2, 16) == ATTNRT_OK);
	/* padded rows (stride 136 elements = 272 bytes) and a transposed B/H */
	int64_t padded[4] = {300 * 136, 2 * 300 * 136, 136, 1};
	CHECK(attnrt_check_tensor("causal", "Q", buf, 4, shape, want, padded, 2, 16) == ATTNRT_OK);
	/* extent-1 dimensions: any stride, even a negative one or a non-unit last */
	int64_t s1[3] = {1, 5, 1}, st1[3] = {-3, 4, 7};
	CHECK(attnrt_check_tensor("k", "L", buf, 3, s1, s1, st1, 4, 16) == ATTNRT_OK);
	/* L[B, H, N] f32 with N = 301: rows of 1204 bytes are fine at 4-byte alignment */
	int64_t l[3] = {2, 4, 301};
	CHECK(attnrt_check_tensor("causal", "L", buf + 4, 3, l, l, NULL, 4, 4) == ATTNRT_OK);
	/* align_bytes <= 1: no alignment checks at all */
	CHECK(attnrt_check_tensor("causal", "L", buf + 1, 3, l, l, NULL, 4, 0) == ATTNRT_OK);
}

/* Each failure, with its exact message. */
static void test_errors(void)
{
	int64_t shape[4] = {2, 4, 300, 128}, want[4] = {2, 4, 256, 128};
	int64_t strides[4] = {4 * 300 * 128, 300 * 128, 128, 1};
	const char *names[4] = {"B", "H", "M", "D"};

	CHECK_FAIL(attnrt_check_tensor("causal", "O", NULL, 4, shape, shape, strides, 2, 16), ARG,
		   "attnrt: causal: O: null pointer");
	CHECK_FAIL(
	    attnrt_check_tensor_named("causal", "K", buf, 4, shape, want, strides, 2, 16, names),
	    ARG, "attnrt: causal: K: dimension 2 is 300 but the kernel expects M = 256");
	CHECK_FAIL(attnrt_check_tensor("causal", "K", buf, 4, shape, want, strides, 2, 16), ARG,
		   "attnrt: causal: K: dimension 2 is 300 but the kernel expects 256");
	/* a NULL or empty name falls back to the plain form */
	const char *some[4] = {"B", "H", NULL, ""};
	CHECK_FAIL(
	    attnrt_check_tensor_named("causal", "K", buf, 4, shape, want, strides, 2, 16, some),
	    ARG, "attnrt: causal: K: dimension 2 is 300 but the kernel expects 256");

	int64_t zero[4] = {2, 0, 300, 128};
	CHECK_FAIL(attnrt_check_tensor_named("causal", "V", buf, 4, zero, NULL, NULL, 2, 16, names),
		   ARG, "attnrt: causal: V: dimension 1 (H) is 0; sizes must be positive");
	int64_t neg[4] = {2, 4, -5, 128};
	CHECK_FAIL(attnrt_check_tensor("causal", "V", buf, 4, neg, NULL, NULL, 2, 16), ARG,
		   "attnrt: causal: V: dimension 2 is -5; sizes must be positive");

	int64_t noncontig[4] = {4 * 300 * 256, 300 * 256, 256, 2};
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 4, shape, shape, noncontig, 2, 16), ARG,
		   "attnrt: causal: Q: the last dimension must be contiguous (its stride is 2)");
	int64_t negstride[4] = {4 * 300 * 128, -300 * 128, 128, 1};
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 4, shape, shape, negstride, 2, 16), ARG,
		   "attnrt: causal: Q: stride 1 is -38400; strides must be non-negative");
	int64_t odd[4] = {4 * 300 * 132, 300 * 132, 132, 1};
	CHECK_FAIL(
	    attnrt_check_tensor("causal", "Q", buf, 4, shape, shape, odd, 2, 16), ARG,
	    "attnrt: causal: Q: stride 2 is 132 elements (264 bytes), not a multiple of 16 bytes");
	int64_t huge[4] = {INT64_MAX / 2, 300 * 128, 128, 1};
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 4, shape, shape, huge, 4, 16), ARG,
		   "attnrt: causal: Q: stride 0 is 4611686018427387903, too large");
	/* contiguous (NULL strides) rows that break the alignment: D = 100 bf16 */
	int64_t d100[4] = {2, 4, 300, 100};
	CHECK_FAIL(
	    attnrt_check_tensor("causal", "Q", buf, 4, d100, NULL, NULL, 2, 16), ARG,
	    "attnrt: causal: Q: stride 2 is 100 elements (200 bytes), not a multiple of 16 bytes");

	char want_msg[128];
	snprintf(want_msg, sizeof want_msg, "attnrt: causal: Q: pointer %p is not 16-byte aligned",
		 (void *)(buf + 8));
	CHECK(strncmp(want_msg, "attnrt: causal: Q: pointer 0x", 29) == 0);
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf + 8, 4, shape, shape, strides, 2, 16),
		   ARG, want_msg);

	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 0, shape, shape, strides, 2, 16), ARG,
		   "attnrt: causal: Q: bad rank 0");
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 17, shape, shape, strides, 2, 16), ARG,
		   "attnrt: causal: Q: bad rank 17");
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 4, NULL, shape, strides, 2, 16), ARG,
		   "attnrt: causal: Q: bad rank 0");
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf, 4, shape, shape, strides, 0, 16), ARG,
		   "attnrt: causal: Q: bad element size 0");
	CHECK_FAIL(attnrt_check_tensor(NULL, NULL, NULL, 4, shape, shape, strides, 2, 16), ARG,
		   "attnrt: (kernel): (tensor): null pointer");

	/* the order of the checks: shape before strides before the pointer */
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf + 8, 4, shape, want, noncontig, 2, 16),
		   ARG, "attnrt: causal: Q: dimension 2 is 300 but the kernel expects 256");
	CHECK_FAIL(attnrt_check_tensor("causal", "Q", buf + 8, 4, shape, shape, noncontig, 2, 16),
		   ARG,
		   "attnrt: causal: Q: the last dimension must be contiguous (its stride is 2)");
}

/* attnrt_check_dim and attnrt_set_error, for generated code's own checks. */
static void test_dim_and_custom(void)
{
	CHECK(attnrt_check_dim("causal", "D", 128, 128) == ATTNRT_OK);
	CHECK_FAIL(attnrt_check_dim("causal", "D", 64, 128), ARG,
		   "attnrt: causal: D is 64 but the kernel was compiled for D = 128");
	CHECK_FAIL(attnrt_set_error(ARG, "causal: grid %d x %d is too large", 3, 70000), ARG,
		   "attnrt: causal: grid 3 x 70000 is too large");
	CHECK_FAIL(attnrt_set_error(ATTNRT_ERR_CUDA, "two\nlines"), ATTNRT_ERR_CUDA,
		   "attnrt: two lines");
}

int main(void)
{
	test_ok();
	test_errors();
	test_dim_and_custom();
	return rt_report("rt_check");
}
