/*
** lowering/mlir/mlir_emit.h: the cascade as MLIR (func.func of linalg.generic on
** tensors), built through the MLIR C API and verified before printing.
*/
#ifndef ATTN_MLIR_EMIT_H
#define ATTN_MLIR_EMIT_H

#include <stdio.h>

#include "../../compiler/cascade.h"

/* Prints one module holding a func.func per cascade of p, with f32 (or f64)
** as the float element type. Returns 0, or nonzero after printing the MLIR
** verifier's diagnostics to errout (an internal error: our IR was wrong). */
int mlir_emit_program(FILE *out, FILE *errout, const Program *p, int use_f64);

#endif
