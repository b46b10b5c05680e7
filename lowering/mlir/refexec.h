/*
** lowering/mlir/refexec.h: the reference executor (the oracle).
** Lowers a cascade's MLIR (linalg on tensors) with MLIR's own pass pipeline
** and runs it with the ExecutionEngine, in f32 or f64.
*/
#ifndef ATTN_REFEXEC_H
#define ATTN_REFEXEC_H

#include <stddef.h>

#include "../../compiler/cascade.h"

/* Evaluates every node of b->c on the bound inputs and writes every TK_OUT
** tensor's buffer in b->data. use_f64 selects the working precision (inputs
** are converted to it; outputs come back as f64 either way). Returns 0, or
** nonzero with a one-line reason in err. */
int refexec_run(const Binding *b, int use_f64, char *err, size_t errlen);
/* 1 when this attnc was built with MLIR (refexec_run can run), else 0. */
int refexec_available(void);

#endif
