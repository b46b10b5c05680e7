/*
** test/unit/mlir_gqa.c: grouped-query accesses K[b, h / G, j, d] (index
** arithmetic with a runtime G, read by tensor.extract), a reduction whose
** variable appears only inside index arithmetic ((j + 1) % N, which needs
** the shape-only operand), and the emitted text for both.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowering/mlir/mlir_emit.h"
#include "lowering/mlir/refexec.h"
#include "mlir_cases.h"

enum { NB = 2, NHKV = 2, NG = 3, NN = 4, ND = 3, NHQ = NHKV * NG };

static long q4(long b, long h, long i, long d)
{
	return ((b * NHQ + h) * NN + i) * ND + d;
}
static long k4(long b, long h, long j, long d)
{
	return ((b * NHKV + h) * NN + j) * ND + d;
}

/* S, O and KS by the definition. */
static void naive(const double *Q, const double *K, const double *V, double *O, double *KS)
{
	for (long b = 0; b < NB; b++)
		for (long h = 0; h < NHQ; h++) {
			for (long i = 0; i < NN; i++)
				for (long e = 0; e < ND; e++) {
					double o = 0;
					for (long j = 0; j < NN; j++) {
						double s = 0;
						for (long d = 0; d < ND; d++)
							s += Q[q4(b, h, i, d)] *
							     K[k4(b, h / NG, j, d)];
						o += s * V[k4(b, h / NG, j, e)];
					}
					O[q4(b, h, i, e)] = o;
				}
			for (long d = 0; d < ND; d++) {
				double s = 0;
				for (long j = 0; j < NN; j++)
					s += K[k4(b, h / NG, (j + 1) % NN, d)];
				KS[(b * NHQ + h) * ND + d] = s;
			}
		}
}

static void run(int use_f64)
{
	TB tb;
	case_gqa(&tb);
	Binding bd;
	long dims[5] = {NB, NHKV, NG, NN, ND};
	tb_bind(&tb, &bd, dims);
	unsigned seed = 11;
	tb_fill(bd.data[0], NB * NHQ * NN * ND, -1, 1, &seed);
	tb_fill(bd.data[1], NB * NHKV * NN * ND, -1, 1, &seed);
	tb_fill(bd.data[3], NB * NHKV * NN * ND, -1, 1, &seed);
	double *O = calloc(NB * NHQ * NN * ND, sizeof(double));
	double *KS = calloc(NB * NHQ * ND, sizeof(double));
	naive(bd.data[0], bd.data[1], bd.data[3], O, KS);
	char err[512];
	int rc = refexec_run(&bd, use_f64, err, sizeof err);
	CHECK(rc == 0, "refexec_run: %s", err);
	if (rc == 0) {
		double eo = tb_relerr(bd.data[2], O, NB * NHQ * NN * ND);
		double ek = tb_relerr(bd.data[4], KS, NB * NHQ * ND);
		double tol = use_f64 ? 1e-12 : 1e-5;
		printf("gqa %s: O rel err %.3g, KS rel err %.3g\n", use_f64 ? "f64" : "f32", eo,
		       ek);
		CHECK(eo < tol, "O error %g", eo);
		CHECK(ek < tol, "KS error %g", ek);
	}
	free(O), free(KS);
	tb_unbind(&tb, &bd);
	tb_free(&tb);
}

/* The non-bare accesses are tensor.extract, the bare ones `ins` operands,
** and the KS node gets an i1 shape-only operand for j. */
static void check_text(void)
{
	TB tb;
	case_gqa(&tb);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = mlir_emit_program(f, stderr, &tb.p, 0);
	fclose(f);
	CHECK(rc == 0, "emit failed");
	CHECK(strstr(buf, "func.func @gqa(") != NULL, "no func");
	CHECK(strstr(buf, "tensor.extract %arg6[") != NULL, "K not read by tensor.extract");
	CHECK(strstr(buf, "tensor.extract %arg7[") != NULL, "V not read by tensor.extract");
	CHECK(strstr(buf, "arith.floordivsi") != NULL, "h / G is not a floor division");
	CHECK(strstr(buf, "tensor<?xi1>") != NULL, "no shape-only operand for KS");
	CHECK(strstr(buf, "ins(%arg5 : tensor<?x?x?x?xf32>)") != NULL, "Q is not an ins operand");
	free(buf);
	tb_free(&tb);
}

int main(void)
{
	check_text();
	run(1);
	run(0);
	return tb_failures != 0;
}
