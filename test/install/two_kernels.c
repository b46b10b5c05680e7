/*
** test/install/two_kernels.c: two kernels compiled by the installed attnc
** (examples/causal.attn and examples/full.attn, --target=cpu) in one C11
** program: both generated headers in one file, each kernel run on seeded
** inputs and checked against reference.h. Prints one line per kernel and
** PASS; exits 1 on any failure.
*/
#include <stdio.h>
#include <stdlib.h>

#include "cpu/causal.h"
#include "cpu/full.h"
#include "reference.h"

enum { B = 2, H = 3, N = 70, M = 45, D = 128 };

/* One kernel's verdict: its return code and its deviation from reference.h. */
static int verdict(const char *name, int rc, double dev)
{
	printf("%s: rc %d, max deviation from the reference %.3g\n", name, rc, dev);
	return rc != 0 || !(dev < 1e-4);
}

int main(void)
{
	size_t nq = (size_t)B * H * N * D; /* M < N: K and V of full fit in k, v */
	float *q = malloc(nq * sizeof *q), *k = malloc(nq * sizeof *k), *v = malloc(nq * sizeof *v);
	float *o = malloc(nq * sizeof *o), *l = malloc((size_t)B * H * N * sizeof *l);
	unsigned seed = 7;
	int bad = 0;
	if (!q || !k || !v || !o || !l)
		return 1;
	ref_fill(q, nq, &seed), ref_fill(k, nq, &seed), ref_fill(v, nq, &seed);

	causal_args c = {q, k, v, o, l, B, H, N, D, 0};
	causal_defaults(&c);
	int rc = causal_run(&c, 0);
	bad |= verdict("causal", rc, ref_deviation(q, k, v, o, l, B, H, N, N, D, c.scale, 1));

	/* full: N queries over M keys (cross-attention), K and V shorter */
	full_args f = {q, k, v, o, l, B, H, N, M, D, 0};
	full_defaults(&f);
	rc = full_run(&f, 0);
	bad |= verdict("full", rc, ref_deviation(q, k, v, o, l, B, H, N, M, D, f.scale, 0));

	free(q), free(k), free(v), free(o), free(l);
	puts(bad ? "FAIL" : "PASS");
	return bad;
}
