/*
** runtime/tmap.c: TMA tensor maps for kernels that load their tiles with
** cp.async.bulk.tensor. A map describes a whole tensor in global memory and
** the box one copy moves; the generated launcher encodes one per tiled
** tensor before each launch and passes it by value. The encoding is the
** driver's (cuTensorMapEncodeTiled); this file checks TMA's rules first, so
** that a refusal names the dimension and the rule instead of the driver's
** bare CUDA_ERROR_INVALID_VALUE, and turns the tensor's order (outermost
** first, strides in elements) into the driver's (innermost first, strides
** in bytes).
*/
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"

enum {
	TMAP_MAX_RANK = 5,
	TMAP_MAX_BOX = 256,
	TMAP_ALIGN = 16,   /* global address and strides (bytes) */
	TMAP_SWIZZLE = 128 /* the box's inner bytes under 128-byte swizzle */
};
#define TMAP_MAX_DIM    (1ull << 32)
#define TMAP_MAX_STRIDE (1ull << 40)

/* The data type TMA copies elem_size bytes as: any element of that size
** moves the same way, since the maps fill nothing but zeros. 4-byte
** elements are f32: the one tensor a kernel adds to through its map
** (cp.reduce.async.bulk.tensor, whose .add takes the map's type) is a sum
** in f32. -1: none. */
static int data_type(int elem_size)
{
	switch (elem_size) {
	case 1: return AR_CU_TENSOR_MAP_DATA_TYPE_UINT8;
	case 2: return AR_CU_TENSOR_MAP_DATA_TYPE_UINT16;
	case 4: return AR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	case 8: return AR_CU_TENSOR_MAP_DATA_TYPE_UINT64;
	default: return -1;
	}
}

/* "{a, b, c}" of n values, for the message of a refused encoding. */
static void list_u64(char *buf, size_t size, const uint64_t *v, int n)
{
	size_t at = (size_t)snprintf(buf, size, "{");
	for (int i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s%llu", i ? ", " : "",
				       (unsigned long long)v[i]);
	if (at < size)
		snprintf(buf + at, size - at, "}");
}

/* The byte strides of dimensions 0..rank-2 (tensor order) into bytes[],
** checked against TMA's rules. A dimension of extent 1 is never stepped
** along, so whatever stride the caller gave it is replaced by the rows'
** size rounded up to 16 bytes (or 16 where that is too large): a valid
** value, so that an arbitrary stride there does not refuse the tensor. */
static int byte_strides(const int64_t *shape, const int64_t *strides, int rank, int elem_size,
			uint64_t *bytes)
{
	int last = rank - 1;
	if (strides && shape[last] > 1 && strides[last] != 1)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_tensor_map: the last dimension must be contiguous (its "
				   "stride is %lld); TMA copies rows of adjacent elements",
				   (long long)strides[last]);
	/* inner: the bytes one step along dimension d + 1 moves, and its extent */
	uint64_t inner = (uint64_t)elem_size, contiguous = (uint64_t)elem_size;
	for (int d = last - 1; d >= 0; d--) {
		uint64_t span = 0;
		if (__builtin_mul_overflow(inner, (uint64_t)shape[d + 1], &span) ||
		    __builtin_mul_overflow(contiguous, (uint64_t)shape[d + 1], &contiguous))
			span = contiguous = TMAP_MAX_STRIDE;
		uint64_t b;
		if (shape[d] == 1) {
			b = (span + TMAP_ALIGN - 1) / TMAP_ALIGN * TMAP_ALIGN;
			if (b == 0 || b >= TMAP_MAX_STRIDE)
				b = TMAP_ALIGN;
		} else if (!strides) {
			b = contiguous;
		} else {
			int64_t s = strides[d], sb;
			if (s < 0)
				return attnrt_fail(
				    ATTNRT_ERR_ARGUMENT,
				    "attnrt_tensor_map: stride %d is %lld; TMA needs "
				    "non-negative strides",
				    d, (long long)s);
			if (__builtin_mul_overflow(s, (int64_t)elem_size, &sb) ||
			    (uint64_t)sb >= TMAP_MAX_STRIDE)
				return attnrt_fail(
				    ATTNRT_ERR_ARGUMENT,
				    "attnrt_tensor_map: stride %d is %lld elements; TMA "
				    "needs less than 2^40 bytes",
				    d, (long long)s);
			b = (uint64_t)sb;
		}
		if (b >= TMAP_MAX_STRIDE)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "attnrt_tensor_map: the rows of dimension %d are %llu "
					   "bytes apart; TMA needs less than 2^40",
					   d, (unsigned long long)b);
		if (b % TMAP_ALIGN != 0)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "attnrt_tensor_map: stride %d is %llu elements (%llu "
					   "bytes), not a multiple of %d bytes as TMA needs",
					   d, (unsigned long long)(b / (uint64_t)elem_size),
					   (unsigned long long)b, TMAP_ALIGN);
		bytes[d] = b;
		inner = b;
	}
	return ATTNRT_OK;
}

/* Public: TMA's rules checked, then the driver's encoding (see attnrt.h). */
int attnrt_tensor_map(void *map, const void *ptr, int rank, const int64_t *shape,
		      const int64_t *strides, int elem_size, const uint32_t *box)
{
	if (!map || (uintptr_t)map % ATTNRT_TENSOR_MAP_ALIGN != 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_tensor_map: the map at %p is not %d-byte aligned", map,
				   ATTNRT_TENSOR_MAP_ALIGN);
	if (rank < 1 || rank > TMAP_MAX_RANK)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_tensor_map: rank %d is not in 1..%d as TMA needs", rank,
				   TMAP_MAX_RANK);
	if (!shape || !box)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_tensor_map: NULL %s",
				   shape ? "box" : "shape");
	int dtype = data_type(elem_size);
	if (dtype < 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_tensor_map: element size %d is not 1, 2, 4 or 8 bytes",
				   elem_size);
	if (!ptr)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT, "attnrt_tensor_map: null pointer");
	if ((uintptr_t)ptr % TMAP_ALIGN != 0)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_tensor_map: pointer %p is not %d-byte aligned as TMA "
				   "needs",
				   ptr, TMAP_ALIGN);
	for (int d = 0; d < rank; d++) {
		if (shape[d] < 1 || (uint64_t)shape[d] > TMAP_MAX_DIM)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "attnrt_tensor_map: dimension %d is %lld; TMA needs 1 "
					   "to 2^32",
					   d, (long long)shape[d]);
		if (box[d] < 1 || box[d] > TMAP_MAX_BOX)
			return attnrt_fail(ATTNRT_ERR_ARGUMENT,
					   "attnrt_tensor_map: box dimension %d is %u; TMA needs 1 "
					   "to %d",
					   d, (unsigned)box[d], TMAP_MAX_BOX);
	}
	unsigned row = box[rank - 1] * (unsigned)elem_size;
	if (row % TMAP_ALIGN != 0 || row > TMAP_SWIZZLE)
		return attnrt_fail(ATTNRT_ERR_ARGUMENT,
				   "attnrt_tensor_map: the box's last dimension is %u elements (%u "
				   "bytes); 128-byte swizzle needs a multiple of %d bytes up to %d",
				   (unsigned)box[rank - 1], row, TMAP_ALIGN, TMAP_SWIZZLE);
	uint64_t bytes[TMAP_MAX_RANK] = {0};
	int rc = byte_strides(shape, strides, rank, elem_size, bytes);
	if (rc)
		return rc;

	/* a current context, as the driver's other calls have */
	const AttnrtDriver *d;
	if ((rc = attnrt_context(&d, NULL, NULL)) != 0)
		return rc;
	if (!d->cuTensorMapEncodeTiled) {
		int v = 0;
		char vt[32] = "unknown";
		if (d->cuDriverGetVersion(&v) == AR_CUDA_SUCCESS && v > 0)
			snprintf(vt, sizeof vt, "%d.%d", v / 1000, v % 1000 / 10);
		return attnrt_fail(ATTNRT_ERR_NO_DRIVER,
				   "the CUDA driver (version %s) is too old for sm_90a kernels: it "
				   "lacks cuTensorMapEncodeTiled (a CUDA 12.0 or later driver is "
				   "needed)",
				   vt);
	}
	/* the driver's order: innermost dimension first, strides in bytes of
	** all but the innermost */
	uint64_t gdim[TMAP_MAX_RANK], gstride[TMAP_MAX_RANK];
	uint32_t gbox[TMAP_MAX_RANK], estride[TMAP_MAX_RANK];
	for (int i = 0; i < rank; i++) {
		gdim[i] = (uint64_t)shape[rank - 1 - i];
		gbox[i] = box[rank - 1 - i];
		estride[i] = 1;
		if (i > 0)
			gstride[i - 1] = bytes[rank - 1 - i];
	}
	memset(map, 0, ATTNRT_TENSOR_MAP_BYTES);
	ARresult r = d->cuTensorMapEncodeTiled(
	    map, dtype, (uint32_t)rank, (void *)(uintptr_t)ptr, gdim, gstride, gbox, estride,
	    AR_CU_TENSOR_MAP_INTERLEAVE_NONE, AR_CU_TENSOR_MAP_SWIZZLE_128B,
	    AR_CU_TENSOR_MAP_L2_PROMOTION_L2_128B, AR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != AR_CUDA_SUCCESS) {
		uint64_t b64[TMAP_MAX_RANK];
		for (int i = 0; i < rank; i++)
			b64[i] = gbox[i];
		char dims[128], st[128], bx[128];
		list_u64(dims, sizeof dims, gdim, rank);
		list_u64(st, sizeof st, gstride, rank - 1);
		list_u64(bx, sizeof bx, b64, rank);
		return attnrt_fail_cuda(d, r,
					"cuTensorMapEncodeTiled (innermost first: dims %s, byte "
					"strides %s, box %s)",
					dims, st, bx);
	}
	return ATTNRT_OK;
}
