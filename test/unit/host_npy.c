/*
** test/unit/host_npy.c: the .npy reader and writer: round trips of every
** written dtype, hand-made files of every read dtype (including format 2.0
** and the byte-order spellings), and the precise error for each kind of
** malformed file. argv[1] is a scratch directory.
*/
#include "host_testutil.h"

#include "cli/npy.h"

/* A .npy image with the given version, header dict and raw data, padded the
** way numpy pads (so the reader sees realistic files). */
static size_t make_file(unsigned char *out, int major, const char *dict, const void *data, size_t n)
{
	size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
	size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
	memcpy(out, "\x93NUMPY", 6);
	out[6] = (unsigned char)major, out[7] = 0;
	for (size_t i = 0; i < pre - 8; i++)
		out[8 + i] = (unsigned char)(hl >> (8 * i));
	memcpy(out + pre, dict, dl);
	memset(out + pre + dl, ' ', hl - dl - 1);
	out[total - 1] = '\n';
	memcpy(out + total, data, n);
	return total + n;
}

/* Parses an image and expects failure with `want` inside the message. */
static void expect_error(const unsigned char *buf, size_t n, const char *want)
{
	NpyArray a;
	char err[256] = "";
	int rc = npy_parse(buf, n, &a, err, sizeof err);
	CHECK(rc != 0);
	if (!strstr(err, want)) {
		fprintf(stderr, "error '%s' does not mention '%s'\n", err, want);
		tu_failures++;
	}
	if (rc == 0)
		npy_free(&a);
}

/* Every writable dtype survives write + read with its values. */
static void test_round_trip(const char *dir)
{
	static const double v[6] = {1.5, -2.25, 0.0, 1e30, -7.0, 3.0};
	long shape[2] = {2, 3};
	NpyType types[] = {NPY_F32, NPY_F64, NPY_I32, NPY_BOOL};
	for (int t = 0; t < 4; t++) {
		char path[512], err[256];
		snprintf(path, sizeof path, "%s/rt%d.npy", dir, t);
		CHECK(npy_write(path, types[t], 2, shape, v, err, sizeof err) == 0);
		NpyArray a;
		CHECK(npy_read(path, &a, err, sizeof err) == 0);
		CHECK(a.type == types[t] && a.rank == 2 && a.shape[0] == 2 && a.shape[1] == 3);
		CHECK(a.numel == 6);
		for (int i = 0; i < 6 && a.data; i++) {
			double want = types[t] == NPY_F32    ? (double)(float)v[i]
				      : types[t] == NPY_I32  ? round(v[i])
				      : types[t] == NPY_BOOL ? (v[i] != 0)
							     : v[i];
			if (types[t] == NPY_I32 && fabs(v[i]) > 2147483647.0)
				want = v[i] > 0 ? 2147483647.0 : -2147483648.0;
			CHECK_SAME(a.data[i], want);
		}
		npy_free(&a);
	}
	/* rank 0 and rank 1 headers: "()" and "(3,)" */
	char path[512], err[256];
	snprintf(path, sizeof path, "%s/scalar.npy", dir);
	CHECK(npy_write(path, NPY_F64, 0, NULL, v, err, sizeof err) == 0);
	NpyArray a;
	CHECK(npy_read(path, &a, err, sizeof err) == 0 && a.rank == 0 && a.numel == 1);
	CHECK(a.data && a.data[0] == 1.5);
	npy_free(&a);
	size_t n;
	unsigned char *img;
	long s3 = 3;
	CHECK(npy_encode(NPY_F32, 1, &s3, v, &img, &n, err, sizeof err) == 0);
	CHECK(n == 128 + 12); /* numpy's usual 128-byte header */
	CHECK(strstr((char *)img + 10, "'shape': (3,), }") != NULL);
	CHECK(strstr((char *)img + 10, "'descr': '<f4'") != NULL);
	free(img);
	/* writing over a missing directory fails without leaving anything */
	snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
	CHECK(npy_write(path, NPY_F32, 1, &s3, v, err, sizeof err) != 0);
	CHECK(strstr(err, "cannot") != NULL);
}

/* Hand-encoded files of each readable dtype decode to the right values. */
static void test_read_dtypes(void)
{
	unsigned char buf[512];
	NpyArray a;
	char err[256];
	/* f2: 1.0, -2.0, inf, smallest subnormal 2^-24 */
	static const unsigned char f2[] = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c, 0x01, 0x00};
	size_t n = make_file(buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }",
			     f2, sizeof f2);
	CHECK(npy_parse(buf, n, &a, err, sizeof err) == 0);
	CHECK(a.type == NPY_F16 && a.numel == 4);
	CHECK_SAME(a.data[0], 1.0);
	CHECK_SAME(a.data[1], -2.0);
	CHECK_SAME(a.data[2], INFINITY);
	CHECK_SAME(a.data[3], ldexp(1, -24));
	npy_free(&a);
	/* i8: -1 and 2^40; i4: -5; u1: 200; b1: 1, 0 (format 2.0, '=' and '|') */
	static const unsigned char i8[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0,    0,    0,    0,    0,    1,    0,    0};
	n = make_file(buf, 2, "{'descr': '=i8', 'fortran_order': False, 'shape': (2,)}", i8, 16);
	CHECK(npy_parse(buf, n, &a, err, sizeof err) == 0);
	CHECK(a.type == NPY_I64 && a.data[0] == -1.0 && a.data[1] == ldexp(1, 40));
	npy_free(&a);
	static const unsigned char i4[] = {0xfb, 0xff, 0xff, 0xff};
	n = make_file(buf, 1, "{\"descr\": \"<i4\", \"shape\": (1, 1), \"fortran_order\": False}",
		      i4, 4);
	CHECK(npy_parse(buf, n, &a, err, sizeof err) == 0);
	CHECK(a.type == NPY_I32 && a.rank == 2 && a.data[0] == -5.0);
	npy_free(&a);
	static const unsigned char u1[] = {200, 1, 0};
	n = make_file(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", u1, 3);
	CHECK(npy_parse(buf, n, &a, err, sizeof err) == 0);
	CHECK(a.type == NPY_U8 && a.data[0] == 200 && a.data[1] == 1 && a.data[2] == 0);
	npy_free(&a);
	n = make_file(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", u1, 3);
	CHECK(npy_parse(buf, n, &a, err, sizeof err) == 0);
	CHECK(a.type == NPY_BOOL && a.data[0] == 1 && a.data[1] == 1 && a.data[2] == 0);
	npy_free(&a);
	/* empty arrays are fine */
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", "", 0);
	CHECK(npy_parse(buf, n, &a, err, sizeof err) == 0 && a.numel == 0 && a.data);
	npy_free(&a);
}

/* Each malformed file is rejected with a message that says why. */
static void test_errors(void)
{
	unsigned char buf[512];
	static const unsigned char four[16] = {0};
	size_t n;
	expect_error((const unsigned char *)"PK\x03\x04 not numpy", 16, "bad magic");
	expect_error((const unsigned char *)"\x93NUMPY", 6, "bad magic");
	n = make_file(buf, 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four, 4);
	expect_error(buf, n, "version 3.0");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four,
		      16);
	expect_error(buf, n, "fortran_order is True");
	n = make_file(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", four, 8);
	expect_error(buf, n, "unsupported dtype '<c8'");
	n = make_file(buf, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", four, 4);
	expect_error(buf, n, "big-endian");
	n = make_file(buf, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
		      four, 4);
	expect_error(buf, n, "structured");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four,
		      16);
	expect_error(buf, n, "truncated data: shape needs 24 bytes");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four,
		      12);
	expect_error(buf, n, "4 unexpected bytes");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False}", four, 4);
	expect_error(buf, n, "no 'shape' key");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
		      four, 4);
	expect_error(buf, n, "unexpected or repeated key 'x'");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", four,
		      4);
	expect_error(buf, n, "non-negative");
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,) junk", four,
		      4);
	expect_error(buf, n, "malformed header");
	n = make_file(buf, 1,
		      "{'descr': '<f4', 'fortran_order': False, "
		      "'shape': (4294967296, 4294967296, 4294967296), }",
		      four, 4);
	expect_error(buf, n, "too large");
	/* header length pointing past the end of the file */
	n = make_file(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four, 0);
	expect_error(buf, n - 10, "truncated header");
	/* a file that does not exist names its path */
	NpyArray a;
	char err[256];
	CHECK(npy_read("/nonexistent/q.npy", &a, err, sizeof err) != 0);
	CHECK(strstr(err, "/nonexistent/q.npy: cannot open") == err);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	tu_mkdirs(dir);
	test_round_trip(dir);
	test_read_dtypes();
	test_errors();
	return tu_report("host_npy");
}
