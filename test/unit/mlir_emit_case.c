/*
** test/unit/mlir_emit_case.c: prints the MLIR of a shared test cascade
** (`attention`, `gqa`, or `both` in one module; optionally `f64`) so that
** ctest can feed it to mlir-opt-19 and check that MLIR's own parser and
** verifier accept it.
*/
#include <stdio.h>
#include <string.h>

#include "lowering/mlir/mlir_emit.h"
#include "mlir_cases.h"

int main(int argc, char **argv)
{
	TB tb, tb2;
	const char *which = argc > 1 ? argv[1] : "attention";
	if (!strcmp(which, "gqa"))
		case_gqa(&tb);
	else
		case_causal_attention(&tb);
	if (!strcmp(which, "both")) {
		case_gqa(&tb2);
		ptrvec_push(&tb.a, &tb.p.cascades, tb2.c);
	}
	int use_f64 = argc > 2 && !strcmp(argv[2], "f64");
	int rc = mlir_emit_program(stdout, stderr, &tb.p, use_f64);
	tb_free(&tb);
	if (!strcmp(which, "both"))
		tb_free(&tb2);
	return rc;
}
