/*
** test/unit/mlir_attention.c: the reference executor on causal softmax
** attention (the desugared cascade of mlir_cases.c), against a naive f64
** loop, in both precisions. Batch 0 has a key-length limit shorter than N,
** batch 1 has kv_len 0, so every one of its rows is fully masked: O must be
** 0 and L must be -inf there.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lowering/mlir/refexec.h"
#include "mlir_cases.h"

enum { NB = 2, NH = 2, NN = 7, ND = 5 };

/* Row-major offsets of [B, H, N, D] and [B, H, N]. */
static long at4(long b, long h, long i, long d)
{
	return ((b * NH + h) * NN + i) * ND + d;
}
static long at3(long b, long h, long i)
{
	return (b * NH + h) * NN + i;
}

/* The textbook computation, in the same accumulation order as the
** cascade: S = scale * (q . k) over unmasked keys, P = softmax, O = P V,
** L = max + log(sum). */
static void naive(const double *Q, const double *K, const double *V, const double *kvl,
		  double scale, double *O, double *L)
{
	for (long b = 0; b < NB; b++)
		for (long h = 0; h < NH; h++)
			for (long i = 0; i < NN; i++) {
				double s[NN], m = -INFINITY, sum = 0;
				int ok[NN];
				for (long j = 0; j < NN; j++) {
					ok[j] = j <= i && j < (long)kvl[b];
					double dot = 0;
					for (long d = 0; d < ND; d++)
						dot += Q[at4(b, h, i, d)] * K[at4(b, h, j, d)];
					s[j] = scale * dot;
					if (ok[j])
						m = fmax(m, s[j]);
				}
				for (long j = 0; j < NN; j++)
					if (ok[j])
						sum += exp(s[j] - m);
				for (long e = 0; e < ND; e++) {
					double o = 0;
					for (long j = 0; j < NN; j++)
						if (ok[j])
							o += exp(s[j] - m) / sum *
							     V[at4(b, h, j, e)];
					O[at4(b, h, i, e)] = o;
				}
				L[at3(b, h, i)] = m + log(sum);
			}
}

static void run(int use_f64)
{
	TB tb;
	case_causal_attention(&tb);
	Binding bd;
	long dims[4] = {NB, NH, NN, ND};
	tb_bind(&tb, &bd, dims);
	unsigned seed = 7;
	for (int t = 0; t < 3; t++)
		tb_fill(bd.data[t], NB * NH * NN * ND, -2, 2, &seed);
	bd.data[3][0] = 4, bd.data[3][1] = 0; /* kv_len */
	bd.params[0] = 1 / sqrt((double)ND);

	double *O = calloc(NB * NH * NN * ND, sizeof(double));
	double *L = calloc(NB * NH * NN, sizeof(double));
	naive(bd.data[0], bd.data[1], bd.data[2], bd.data[3], bd.params[0], O, L);

	char err[512];
	int rc = refexec_run(&bd, use_f64, err, sizeof err);
	CHECK(rc == 0, "refexec_run: %s", err);
	if (rc == 0) {
		double eo = tb_relerr(bd.data[4], O, NB * NH * NN * ND);
		double el = tb_relerr(bd.data[5], L, NB * NH * NN);
		double tol = use_f64 ? 1e-12 : 1e-5;
		printf("attention %s: O rel err %.3g, L rel err %.3g\n", use_f64 ? "f64" : "f32",
		       eo, el);
		CHECK(eo < tol, "O error %g", eo);
		CHECK(el < tol, "L error %g", el);
		/* the fully masked batch */
		double mo = bd.data[4][at4(1, 1, 3, 2)], ml = bd.data[5][at3(1, 0, 5)];
		CHECK(mo == 0, "masked O = %g", mo);
		CHECK(isinf(ml) && ml < 0, "masked L = %g", ml);
	}
	free(O), free(L);
	tb_unbind(&tb, &bd);
	tb_free(&tb);
}

/* A binding without data must fail with a message, not crash. */
static void run_missing_data(void)
{
	TB tb;
	case_causal_attention(&tb);
	Binding bd;
	long dims[4] = {NB, NH, NN, ND};
	tb_bind(&tb, &bd, dims);
	free(bd.data[1]);
	bd.data[1] = NULL;
	char err[512];
	int rc = refexec_run(&bd, 0, err, sizeof err);
	CHECK(rc != 0 && err[0], "missing data accepted");
	printf("missing data: %s\n", err);
	tb_unbind(&tb, &bd);
	tb_free(&tb);
}

int main(void)
{
	run(1);
	run(0);
	run_missing_data();
	return tb_failures != 0;
}
