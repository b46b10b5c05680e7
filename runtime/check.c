/*
** runtime/check.c: validation of tensor arguments, called by generated code
** before a launch so that a wrong shape, stride or alignment is a one-line
** message naming the kernel, the tensor and the dimension, instead of a
** silent wrong answer or an illegal-address fault. Needs no driver.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>

#include "driver.h"

#define MAX_RANK 16

/* " (N)" after "dimension 2" when the dimension has a name. */
static const char *dim_name(const char *const *names, int k)
{
	return names && names[k] && *names[k] ? names[k] : NULL;
}

/* Row strides keep rows align_bytes-aligned (for vector loads and TMA). */
static int check_stride(const char *kn, const char *tn, int k, int64_t stride, int elem_size,
			int align_bytes)
{
	if (stride < 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "%s: %s: stride %d is %lld; strides must be "
				   "non-negative",
				   kn, tn, k, (long long)stride);
	int64_t bytes;
	if (__builtin_mul_overflow(stride, (int64_t)elem_size, &bytes))
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s: stride %d is %lld, too large", kn,
				   tn, k, (long long)stride);
	if (align_bytes > 1 && bytes % align_bytes != 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "%s: %s: stride %d is %lld elements (%lld bytes), "
				   "not a multiple of %d bytes",
				   kn, tn, k, (long long)stride, (long long)bytes, align_bytes);
	return ATTNRT_OK;
}

/* Public: the named form, which the plain form calls without names. */
int attnrt_check_tensor_named(const char *kernel, const char *tensor, const void *ptr, int rank,
			      const int64_t *shape, const int64_t *expected_shape,
			      const int64_t *strides, int elem_size, int align_bytes,
			      const char *const *dim_names)
{
	const char *kn = kernel ? kernel : "(kernel)", *tn = tensor ? tensor : "(tensor)";
	if (!ptr)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s: null pointer", kn, tn);
	if (rank < 1 || rank > MAX_RANK || !shape)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s: bad rank %d", kn, tn,
				   shape ? rank : 0);
	if (elem_size <= 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s: bad element size %d", kn, tn,
				   elem_size);
	for (int k = 0; k < rank; k++) {
		const char *nm = dim_name(dim_names, k);
		if (shape[k] <= 0)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "%s: %s: dimension %d%s%s%s is %lld; sizes "
					   "must be positive",
					   kn, tn, k, nm ? " (" : "", nm ? nm : "", nm ? ")" : "",
					   (long long)shape[k]);
		if (expected_shape && expected_shape[k] >= 0 && shape[k] != expected_shape[k])
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "%s: %s: dimension %d is %lld but the kernel "
					   "expects %s%s%lld",
					   kn, tn, k, (long long)shape[k], nm ? nm : "",
					   nm ? " = " : "", (long long)expected_shape[k]);
	}
	int last = rank - 1;
	if (strides) {
		if (shape[last] > 1 && strides[last] != 1)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "%s: %s: the last dimension must be "
					   "contiguous (its stride is %lld)",
					   kn, tn, (long long)strides[last]);
		for (int k = 0; k < last; k++) {
			if (shape[k] == 1)
				continue;
			int rc = check_stride(kn, tn, k, strides[k], elem_size, align_bytes);
			if (rc)
				return rc;
		}
	} else {
		/* row-major contiguous: only the alignment of the rows can fail */
		int64_t s = 1;
		for (int k = last - 1; k >= 0; k--) {
			if (__builtin_mul_overflow(s, shape[k + 1], &s))
				return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s: too many elements",
						   kn, tn);
			if (shape[k] == 1)
				continue;
			int rc = check_stride(kn, tn, k, s, elem_size, align_bytes);
			if (rc)
				return rc;
		}
	}
	if (align_bytes > 1 && (uintptr_t)ptr % (uintptr_t)align_bytes != 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "%s: %s: pointer %p is not %d-byte aligned",
				   kn, tn, ptr, align_bytes);
	return ATTNRT_OK;
}

/* Public: the form without dimension names. */
int attnrt_check_tensor(const char *kernel, const char *tensor, const void *ptr, int rank,
			const int64_t *shape, const int64_t *expected_shape, const int64_t *strides,
			int elem_size, int align_bytes)
{
	return attnrt_check_tensor_named(kernel, tensor, ptr, rank, shape, expected_shape, strides,
					 elem_size, align_bytes, NULL);
}

/* Fixed dims are baked into the kernel; a mismatch must not reach it. */
int attnrt_check_dim(const char *kernel, const char *dim, int64_t value, int64_t expected)
{
	if (value == expected)
		return ATTNRT_OK;
	const char *dn = dim ? dim : "(dim)";
	return attnrt_fail(
	    ATTNRT_ERR_ARGUMENT, "%s: %s is %lld but the kernel was compiled for %s = %lld",
	    kernel ? kernel : "(kernel)", dn, (long long)value, dn, (long long)expected);
}
