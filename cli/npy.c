/*
** cli/npy.c: the .npy reader and writer (see npy.h).
**
** Format (numpy.lib.format): "\x93NUMPY", major, minor, a little-endian
** header length (u16 for 1.0, u32 for 2.0), then an ASCII Python dict
** {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
** and a newline, then the raw elements in C order.
*/
#define _POSIX_C_SOURCE 200809L

#include "npy.h"
#include "../support/atomic_file.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *descr;
	char kind;
	int size;
} type_tab[NPY_TYPE_COUNT] = {
    [NPY_BOOL] = {"|b1", 'b', 1}, [NPY_U8] = {"|u1", 'u', 1},  [NPY_I32] = {"<i4", 'i', 4},
    [NPY_I64] = {"<i8", 'i', 8},  [NPY_F16] = {"<f2", 'f', 2}, [NPY_F32] = {"<f4", 'f', 4},
    [NPY_F64] = {"<f8", 'f', 8},
};

const char *npy_type_descr(NpyType t)
{
	return t < NPY_TYPE_COUNT ? type_tab[t].descr : "?";
}

int npy_type_size(NpyType t)
{
	return t < NPY_TYPE_COUNT ? type_tab[t].size : 0;
}

/* Safe on a zeroed or already freed array. */
void npy_free(NpyArray *a)
{
	free(a->data);
	a->data = NULL;
}

/* ---- header parsing ----------------------------------------------------- */

/* A cursor over the header dict; errors stop at the first problem. */
typedef struct Hdr {
	const char *s, *end;
	char *err;
	size_t errlen;
} Hdr;

/* Every parse failure goes through here, so messages share one prefix. */
static int hdr_fail(Hdr *h, const char *what)
{
	snprintf(h->err, h->errlen, "malformed header: %s", what);
	return -1;
}

/* Python allows any whitespace between tokens of the dict. */
static void hdr_ws(Hdr *h)
{
	while (h->s < h->end && (*h->s == ' ' || *h->s == '\t' || *h->s == '\n' || *h->s == '\r'))
		h->s++;
}

/* Consumes c after optional whitespace; 0 if it was there. */
static int hdr_expect(Hdr *h, char c)
{
	hdr_ws(h);
	if (h->s < h->end && *h->s == c) {
		h->s++;
		return 0;
	}
	return -1;
}

/* A Python string literal in single or double quotes, without escapes (the
** keys and descr strings numpy writes never need them). */
static int hdr_string(Hdr *h, char *out, size_t outlen)
{
	hdr_ws(h);
	if (h->s >= h->end || (*h->s != '\'' && *h->s != '"'))
		return hdr_fail(h, "expected a quoted string");
	char q = *h->s++;
	size_t n = 0;
	while (h->s < h->end && *h->s != q) {
		if (*h->s == '\\' || n + 1 >= outlen)
			return hdr_fail(h, "unsupported string literal");
		out[n++] = *h->s++;
	}
	if (h->s >= h->end)
		return hdr_fail(h, "unterminated string");
	h->s++;
	out[n] = 0;
	return 0;
}

/* True or False, the only values of fortran_order. */
static int hdr_bool(Hdr *h, int *v)
{
	hdr_ws(h);
	size_t left = (size_t)(h->end - h->s);
	if (left >= 4 && !strncmp(h->s, "True", 4)) {
		h->s += 4, *v = 1;
		return 0;
	}
	if (left >= 5 && !strncmp(h->s, "False", 5)) {
		h->s += 5, *v = 0;
		return 0;
	}
	return hdr_fail(h, "fortran_order must be True or False");
}

/* A tuple of non-negative integers: (), (3,), (2, 3). Python 2 wrote "3L". */
static int hdr_shape(Hdr *h, NpyArray *a)
{
	if (hdr_expect(h, '('))
		return hdr_fail(h, "shape must be a tuple");
	a->rank = 0;
	for (;;) {
		hdr_ws(h);
		if (h->s < h->end && *h->s == ')') {
			h->s++;
			return 0;
		}
		if (h->s >= h->end || *h->s < '0' || *h->s > '9')
			return hdr_fail(h, "shape entries must be non-negative integers");
		long v = 0;
		while (h->s < h->end && *h->s >= '0' && *h->s <= '9') {
			int dgt = *h->s++ - '0';
			if (v > (LONG_MAX - dgt) / 10)
				return hdr_fail(h, "shape entry too large");
			v = v * 10 + dgt;
		}
		if (h->s < h->end && *h->s == 'L')
			h->s++;
		if (a->rank == NPY_MAX_RANK)
			return hdr_fail(h, "more than 32 dimensions");
		a->shape[a->rank++] = v;
		hdr_ws(h);
		if (h->s < h->end && *h->s == ',')
			h->s++;
		else if (h->s >= h->end || *h->s != ')')
			return hdr_fail(h, "expected ',' or ')' in shape");
	}
}

/* Maps a descr string to a type; '<', '|' and (on little-endian hosts) '='
** are accepted, '>' only where byte order does not matter. */
static int parse_descr(const char *d, NpyType *t, char *err, size_t errlen)
{
	const uint16_t one = 1;
	int host_le = *(const unsigned char *)&one == 1;
	if (strlen(d) == 3 && strchr("<|=>", d[0])) {
		for (int i = 0; i < NPY_TYPE_COUNT; i++) {
			if (strcmp(d + 1, type_tab[i].descr + 1))
				continue;
			int ok = d[0] == '<' || d[0] == '|' || (d[0] == '=' && host_le) ||
				 type_tab[i].size == 1;
			if (!ok) {
				snprintf(err, errlen,
					 "big-endian dtype '%s' is not supported; save "
					 "little-endian data",
					 d);
				return -1;
			}
			*t = (NpyType)i;
			return 0;
		}
	}
	snprintf(err, errlen, "unsupported dtype '%s' (supported: f2 f4 f8 i4 i8 b1 u1)", d);
	return -1;
}

/* Parses the dict; every key must appear once, and nothing else. */
static int parse_header(const char *text, size_t len, NpyArray *a, char *err, size_t errlen)
{
	Hdr h = {text, text + len, err, errlen};
	int seen_descr = 0, seen_fortran = 0, seen_shape = 0, fortran = 0;
	char key[64], descr[64];
	if (hdr_expect(&h, '{'))
		return hdr_fail(&h, "expected '{'");
	for (;;) {
		if (!hdr_expect(&h, '}'))
			break;
		if (hdr_string(&h, key, sizeof key))
			return -1;
		if (hdr_expect(&h, ':'))
			return hdr_fail(&h, "expected ':' after a key");
		if (!strcmp(key, "descr") && !seen_descr) {
			hdr_ws(&h);
			if (h.s < h.end && *h.s == '[') {
				snprintf(err, errlen,
					 "unsupported dtype: structured arrays are not supported");
				return -1;
			}
			if (hdr_string(&h, descr, sizeof descr))
				return -1;
			seen_descr = 1;
		} else if (!strcmp(key, "fortran_order") && !seen_fortran) {
			if (hdr_bool(&h, &fortran))
				return -1;
			seen_fortran = 1;
		} else if (!strcmp(key, "shape") && !seen_shape) {
			if (hdr_shape(&h, a))
				return -1;
			seen_shape = 1;
		} else {
			snprintf(err, errlen, "malformed header: unexpected or repeated key '%s'",
				 key);
			return -1;
		}
		if (!hdr_expect(&h, ','))
			continue;
		if (hdr_expect(&h, '}'))
			return hdr_fail(&h, "expected ',' or '}'");
		break;
	}
	hdr_ws(&h);
	while (h.s < h.end && *h.s == 0) /* some writers pad with NULs */
		h.s++;
	if (h.s != h.end)
		return hdr_fail(&h, "text after the closing '}'");
	if (!seen_descr || !seen_fortran || !seen_shape)
		return hdr_fail(&h, !seen_descr     ? "no 'descr' key"
				    : !seen_fortran ? "no 'fortran_order' key"
						    : "no 'shape' key");
	if (fortran) {
		snprintf(err, errlen,
			 "fortran_order is True; only C-order arrays are supported "
			 "(save np.ascontiguousarray(x))");
		return -1;
	}
	return parse_descr(descr, &a->type, err, errlen);
}

/* ---- element decoding --------------------------------------------------- */

/* Little-endian unsigned load of n bytes. */
static uint64_t load_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* IEEE binary16 bits to double, exactly (subnormals, inf and NaN kept). */
static double half_to_double(unsigned h)
{
	int sign = h >> 15, ex = (h >> 10) & 31;
	unsigned man = h & 1023;
	double v;
	if (ex == 0)
		v = ldexp((double)man, -24);
	else if (ex == 31)
		v = man ? NAN : INFINITY;
	else
		v = ldexp((double)(man | 1024), ex - 25);
	return sign ? -v : v;
}

/* One element of type t at p, as f64 (i8 beyond 2^53 rounds). */
static double decode_elem(NpyType t, const unsigned char *p)
{
	uint64_t u = load_le(p, type_tab[t].size);
	switch (t) {
	case NPY_BOOL: return u != 0;
	case NPY_U8: return (double)u;
	case NPY_I32: return u >= 0x80000000u ? (double)u - 4294967296.0 : (double)u;
	case NPY_I64: return u >> 63 ? -(double)(~u) - 1.0 : (double)u;
	case NPY_F16: return half_to_double((unsigned)u);
	case NPY_F32: {
		uint32_t w = (uint32_t)u;
		float f;
		memcpy(&f, &w, sizeof f);
		return f;
	}
	case NPY_F64: {
		double d;
		memcpy(&d, &u, sizeof d);
		return d;
	}
	default: return 0;
	}
}

/* Product of the shape, or -1 when it (or its byte size) overflows. */
static long shape_numel(const NpyArray *a, int itemsize)
{
	long n = 1;
	for (int k = 0; k < a->rank; k++) {
		if (a->shape[k] != 0 && n > LONG_MAX / a->shape[k])
			return -1;
		n *= a->shape[k];
	}
	if (n > LONG_MAX / itemsize || (unsigned long)n > SIZE_MAX / sizeof(double))
		return -1;
	return n;
}

/* Magic, version, header, then exactly numel * itemsize bytes of data. */
int npy_parse(const void *buf, size_t n, NpyArray *a, char *err, size_t errlen)
{
	const unsigned char *p = buf;
	memset(a, 0, sizeof *a);
	if (n < 8 || memcmp(p, "\x93NUMPY", 6)) {
		snprintf(err, errlen, "not a .npy file (bad magic)");
		return -1;
	}
	int major = p[6], minor = p[7];
	if ((major != 1 && major != 2) || minor != 0) {
		snprintf(err, errlen, "unsupported .npy format version %d.%d (supported: 1.0, 2.0)",
			 major, minor);
		return -1;
	}
	size_t lenbytes = major == 1 ? 2 : 4;
	if (n < 8 + lenbytes) {
		snprintf(err, errlen, "truncated header");
		return -1;
	}
	size_t hlen = (size_t)load_le(p + 8, (int)lenbytes), off = 8 + lenbytes;
	if (hlen > n - off) {
		snprintf(err, errlen, "truncated header: %zu header bytes announced, %zu present",
			 hlen, n - off);
		return -1;
	}
	if (parse_header((const char *)p + off, hlen, a, err, errlen))
		return -1;
	off += hlen;
	int isz = type_tab[a->type].size;
	long numel = shape_numel(a, isz);
	if (numel < 0) {
		snprintf(err, errlen, "shape too large");
		return -1;
	}
	size_t need = (size_t)numel * (size_t)isz, have = n - off;
	if (have < need) {
		snprintf(err, errlen, "truncated data: shape needs %zu bytes of %s, file has %zu",
			 need, type_tab[a->type].descr, have);
		return -1;
	}
	if (have > need) {
		snprintf(err, errlen, "%zu unexpected bytes after the data", have - need);
		return -1;
	}
	a->numel = numel;
	a->data = malloc(((size_t)numel ? (size_t)numel : 1) * sizeof(double));
	if (!a->data) {
		snprintf(err, errlen, "out of memory for %ld elements", numel);
		return -1;
	}
	for (long i = 0; i < numel; i++)
		a->data[i] = decode_elem(a->type, p + off + (size_t)i * (size_t)isz);
	return 0;
}

/* Reads the file into memory first: .npy inputs are tensors we hold in f64
** anyway, so a second, smaller copy costs little and keeps parsing simple. */
int npy_read(const char *path, NpyArray *a, char *err, size_t errlen)
{
	char why[256];
	memset(a, 0, sizeof *a);
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, n = 0, got;
	unsigned char *buf = malloc(cap);
	while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n == cap) {
			unsigned char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb, cap *= 2;
		}
	}
	int bad = !buf || ferror(fp);
	fclose(fp);
	if (bad) {
		free(buf);
		snprintf(err, errlen, "%s: cannot read the file", path);
		return -1;
	}
	int rc = npy_parse(buf, n, a, why, sizeof why);
	free(buf);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, why);
	return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* Little-endian store of the low n bytes of v. */
static void store_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

/* One element in the file's encoding; integers are rounded half away from
** zero and clamped so no float-to-int conversion is ever undefined. */
static void encode_elem(NpyType t, double x, unsigned char *p)
{
	switch (t) {
	case NPY_BOOL: p[0] = x != 0; break;
	case NPY_I32: {
		double r = isnan(x)             ? 0
			   : x >= 2147483647.0  ? 2147483647.0
			   : x <= -2147483648.0 ? -2147483648.0
						: round(x);
		int64_t v = (int64_t)r;
		store_le(p, (uint64_t)v, 4);
		break;
	}
	case NPY_F32: {
		float f = (float)x;
		uint32_t w;
		memcpy(&w, &f, sizeof w);
		store_le(p, w, 4);
		break;
	}
	case NPY_F64: {
		uint64_t w;
		memcpy(&w, &x, sizeof w);
		store_le(p, w, 8);
		break;
	}
	default: break;
	}
}

/* The magic, version, length and dict, padded so the data starts on a
** 64-byte boundary as numpy does. Returns the header size. */
static size_t make_header(NpyType type, int rank, const long *shape, unsigned char *out, size_t cap)
{
	char dict[NPY_MAX_RANK * 24 + 128];
	int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
			 type_tab[type].descr);
	for (int k = 0; k < rank; k++)
		n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%ld", k ? ", " : "", shape[k]);
	n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", rank == 1 ? "," : "");
	size_t pre = 10, total = (pre + (size_t)n + 1 + 63) / 64 * 64;
	if (total > cap)
		return 0;
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	store_le(out + 8, total - pre, 2);
	memcpy(out + pre, dict, (size_t)n);
	memset(out + pre + n, ' ', total - pre - (size_t)n - 1);
	out[total - 1] = '\n';
	return total;
}

/* Rejects what we cannot write before anything is produced. */
static int check_writable(NpyType type, int rank, const long *shape, long *numel, char *err,
			  size_t errlen)
{
	if (type != NPY_BOOL && type != NPY_I32 && type != NPY_F32 && type != NPY_F64) {
		snprintf(err, errlen, "cannot write dtype %s", npy_type_descr(type));
		return -1;
	}
	if (rank < 0 || rank > NPY_MAX_RANK) {
		snprintf(err, errlen, "rank %d out of range", rank);
		return -1;
	}
	NpyArray tmp = {.rank = rank};
	for (int k = 0; k < rank; k++) {
		if (shape[k] < 0) {
			snprintf(err, errlen, "negative extent in shape");
			return -1;
		}
		tmp.shape[k] = shape[k];
	}
	*numel = shape_numel(&tmp, type_tab[type].size);
	if (*numel < 0) {
		snprintf(err, errlen, "shape too large");
		return -1;
	}
	return 0;
}

/* The whole file in memory (tests, and callers that want the bytes). */
int npy_encode(NpyType type, int rank, const long *shape, const double *data, unsigned char **out,
	       size_t *outlen, char *err, size_t errlen)
{
	long numel;
	unsigned char hdr[4096];
	*out = NULL, *outlen = 0;
	if (check_writable(type, rank, shape, &numel, err, errlen))
		return -1;
	size_t h = make_header(type, rank, shape, hdr, sizeof hdr);
	size_t isz = (size_t)type_tab[type].size, total = h + (size_t)numel * isz;
	unsigned char *buf = malloc(total);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(buf, hdr, h);
	for (long i = 0; i < numel; i++)
		encode_elem(type, data[i], buf + h + (size_t)i * isz);
	*out = buf, *outlen = total;
	return 0;
}

/* Streams header and elements through a chunk buffer into fp. */
static int write_stream(FILE *fp, NpyType type, int rank, const long *shape, const double *data,
			long numel)
{
	unsigned char hdr[4096], chunk[1 << 16];
	size_t h = make_header(type, rank, shape, hdr, sizeof hdr);
	if (fwrite(hdr, 1, h, fp) != h)
		return -1;
	size_t isz = (size_t)type_tab[type].size, per = sizeof chunk / isz;
	for (long i = 0; i < numel;) {
		size_t m = (size_t)(numel - i) < per ? (size_t)(numel - i) : per;
		for (size_t j = 0; j < m; j++)
			encode_elem(type, data[i + (long)j], chunk + j * isz);
		if (fwrite(chunk, isz, m, fp) != m)
			return -1;
		i += (long)m;
	}
	return 0;
}

/* Whole or not at all (support/atomic_file.h): readers see the old file or
** the complete new one. */
int npy_write(const char *path, NpyType type, int rank, const long *shape, const double *data,
	      char *err, size_t errlen)
{
	long numel;
	if (check_writable(type, rank, shape, &numel, err, errlen))
		return -1;
	AtomicFile af;
	int e = atomic_open(&af, path);
	if (e) {
		snprintf(err, errlen, "%s: cannot create: %s", path, atomic_strerror(e));
		return -1;
	}
	errno = 0;
	if (write_stream(af.fp, type, rank, shape, data, numel)) {
		e = errno ? errno : EIO;
		atomic_abort(&af);
	} else {
		e = atomic_commit(&af);
	}
	if (e)
		snprintf(err, errlen, "%s: cannot write: %s", path, atomic_strerror(e));
	return e ? -1 : 0;
}
