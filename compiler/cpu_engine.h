/*
** compiler/cpu_engine.h: the CPU engine of `attnc run`.
** Takes the portable C that the C back end writes for a cascade (one C99
** translation unit exporting NAME_run_generic), compiles it into a shared
** object with the system C compiler ($CC, else cc), loads it, converts the
** Binding's f64 buffers to the generated code's element types, calls the
** entry point and converts the outputs back. Every file it makes lives in a
** private temporary directory that is removed before it returns.
*/
#ifndef ATTN_CPU_ENGINE_H
#define ATTN_CPU_ENGINE_H

#include <stddef.h>

#include "cascade.h"

/* The generic entry point of generated code. dims: one size per dim;
** params: one value per param; data: one pointer per tensor in
** c->tensors order (NULL for temporaries). Element types of TK_IN/TK_OUT
** buffers: float (double when generated with use_f64) for float dtypes,
** int32_t for i32, uint8_t holding 0/1 for bool. nthreads <= 0: the
** implementation's default. Returns 0, or nonzero with outputs unspecified. */
typedef int (*CpuEngineEntry)(const long *dims, const double *params, void *const *data,
			      int nthreads);

/* Compiles c_source, runs entry_name on b's inputs and writes every TK_OUT
** buffer of b->data (as f64). Float tensors travel as f32. Returns 0, or
** nonzero with a one-line reason in err (b's outputs then unspecified). */
int cpu_engine_run(const Binding *b, const char *c_source, const char *entry_name, char *err,
		   size_t errlen);

/* The same, with float tensors as double when use_f64 is set (code emitted
** with use_f64 = 1). */
int cpu_engine_run_ex(const Binding *b, const char *c_source, const char *entry_name, int use_f64,
		      char *err, size_t errlen);

/* Whether the C compiler accepts -fopenmp (and has omp.h): 1 or 0, probed
** once per process and compiler; -1 (with err set) when no compiler can be
** run at all. */
int cpu_engine_has_openmp(char *err, size_t errlen);

#endif
