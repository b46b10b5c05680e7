/*
** lowering/c/c_emit.h: the portable C back end (`attnc --target=cpu --emit=c`).
** Writes one C99 translation unit per cascade: a typed API plus the generic
** entry point NAME_run_generic(dims, params, data, nthreads) that
** `attnc run --engine cpu` (cli/cpu_engine.c) compiles and calls.
*/
#ifndef ATTN_C_EMIT_H
#define ATTN_C_EMIT_H

#include <stdio.h>

#include "../../compiler/cascade.h"
#include "../../support/diag.h"

/* Writes the portable C for cascade c (a whole translation unit, with NAME_run_generic). Returns 0 or nonzero after reporting through d. */
int c_emit_cascade(FILE *out, const Cascade *c, Diag *d, int use_f64);
/* Every cascade of a file in one translation unit, and its header. */
int c_emit_program(FILE *out, const Program *p, Diag *d, int use_f64);
int c_emit_header(FILE *out, const Program *p, int use_f64);
/* Whether c's C code is the streamed one-pass kernel (else materialised:
** its partitioned entry point checks the bounds but merges nothing). */
int c_emit_streamed(const Cascade *c);

#endif
