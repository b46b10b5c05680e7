/*
** cli/npy.h: reading and writing NumPy .npy files (format 1.0 and 2.0,
** C order only), the exchange format of `attnc run --input/--out-dir`.
** Everything comes in and goes out as f64; the file's element type only
** decides the encoding. Byte order is handled explicitly, so the code does
** not depend on the host's endianness.
*/
#ifndef ATTN_NPY_H
#define ATTN_NPY_H

#include <stddef.h>

#define NPY_MAX_RANK 32

/* Element types we read (all of them) and write (BOOL, I32, F32, F64). */
typedef enum NpyType {
	NPY_BOOL, /* |b1 */
	NPY_U8,   /* |u1 */
	NPY_I32,  /* <i4 */
	NPY_I64,  /* <i8 */
	NPY_F16,  /* <f2 */
	NPY_F32,  /* <f4 */
	NPY_F64,  /* <f8 */
	NPY_TYPE_COUNT
} NpyType;

typedef struct NpyArray {
	NpyType type; /* the element type found in the file */
	int rank;
	long shape[NPY_MAX_RANK];
	long numel;
	double *data; /* malloc'd, numel values (never NULL after a successful read) */
} NpyArray;

/* The descr string ("<f4", "|b1", ...) of a type. */
const char *npy_type_descr(NpyType t);
/* Bytes per element. */
int npy_type_size(NpyType t);

/* Reads a whole file. Returns 0, or nonzero with "PATH: reason" in err (and
** nothing to free). */
int npy_read(const char *path, NpyArray *a, char *err, size_t errlen);
/* Parses an in-memory image of a .npy file; err gets the reason alone. */
int npy_parse(const void *buf, size_t n, NpyArray *a, char *err, size_t errlen);
void npy_free(NpyArray *a);

/* Serialises to a malloc'd buffer (*out, *outlen). type must be NPY_BOOL,
** NPY_I32, NPY_F32 or NPY_F64; values are converted (f32: IEEE rounding,
** i32: rounded and clamped, NaN -> 0; bool: nonzero -> true). */
int npy_encode(NpyType type, int rank, const long *shape, const double *data, unsigned char **out,
	       size_t *outlen, char *err, size_t errlen);
/* Writes a file atomically: a temporary in the same directory, renamed over
** PATH only once complete, so a failure never leaves a partial file. */
int npy_write(const char *path, NpyType type, int rank, const long *shape, const double *data,
	      char *err, size_t errlen);

#endif
