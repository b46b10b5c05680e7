/*
** lowering/mlir/mlir_none.c: the MLIR entry points of an attnc built with
** -DATTNC_MLIR=OFF. The compiler, the C and PTX back ends and the runtime
** need no LLVM; only the interchange and the reference executor do, and
** they answer here with the reason instead of being missing at link time.
*/
#include <stdio.h>

#include "mlir_emit.h"
#include "refexec.h"

static const char without_mlir[] =
    "this attnc was built without MLIR (-DATTNC_MLIR=OFF); rebuild with LLVM/MLIR 19 "
    "(libmlir-19-dev) for --emit=mlir and the mlir engine";

/* --emit=mlir: one line on errout, and failure (exit 3 in the driver). */
int mlir_emit_program(FILE *out, FILE *errout, const Program *p, int use_f64)
{
	(void)out, (void)p, (void)use_f64;
	fprintf(errout, "attnc: error: %s\n", without_mlir);
	return 1;
}

/* The mlir engine: the reason, for the caller's one-line message. */
int refexec_run(const Binding *b, int use_f64, char *err, size_t errlen)
{
	(void)b, (void)use_f64;
	snprintf(err, errlen, "%s", without_mlir);
	return 1;
}

/* The mlir engine cannot run: `attnc run` defaults to the interpreter. */
int refexec_available(void)
{
	return 0;
}
