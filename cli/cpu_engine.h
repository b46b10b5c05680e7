/*
** cli/cpu_engine.h: the CPU engine of `attnc run`.
** Takes the portable C that the C back end writes for a cascade (one C99
** translation unit exporting NAME_run_generic), compiles it into a shared
** object with the system C compiler ($CC, else cc), loads it, converts the
** Binding's f64 buffers to the generated code's element types, calls the
** entry point and converts the outputs back. Every file it makes lives in a
** private temporary directory that is removed before it returns.
**
** Two ways in: cpu_engine_run/_ex compile, run once and unload;
** cpu_engine_load/_call/_unload compile once and run many times (tests run
** one kernel on many shapes, and its partitioned entry on many splits).
*/
#ifndef ATTN_CPU_ENGINE_H
#define ATTN_CPU_ENGINE_H

#include <stddef.h>

#include "../compiler/cascade.h"

/* The generic entry point of generated code. dims: one size per dim;
** params: one value per param; data: one pointer per tensor in
** c->tensors order (NULL for temporaries). Element types of TK_IN/TK_OUT
** buffers: float (double when generated with use_f64) for float dtypes,
** int32_t for i32, uint8_t holding 0/1 for bool. nthreads <= 0: the
** implementation's default. Returns 0, or nonzero with outputs unspecified. */
typedef int (*CpuEngineEntry)(const long *dims, const double *params, void *const *data,
			      int nthreads);

/* The partitioned entry point NAME_run_partitioned: the same arguments,
** then the KV stream split at bounds[0] = 0 <= ... <= bounds[nparts] (its
** length); returns 1 for bad bounds. */
typedef int (*CpuEnginePartEntry)(const long *dims, const double *params, void *const *data,
				  int nthreads, const long *bounds, int nparts);

/* A compiled and loaded translation unit (opaque). */
typedef struct CpuModule CpuModule;

/* Compiles c_source into a shared object and loads it; the temporary
** directory is gone when it returns. NULL with a one-line reason in err. */
CpuModule *cpu_engine_load(const char *c_source, char *err, size_t errlen);

/* Runs entry point NAME_run_generic (nparts == 0) or NAME_run_partitioned
** (nparts != 0, bounds and nparts passed on unchecked, so the generated
** code's own checks apply) of module m on b, NAME being entry_prefix, and
** writes every TK_OUT buffer of b->data (as f64). Float tensors travel as
** double when use_f64 is set (code emitted with use_f64 = 1), else as float.
** Float outputs start with b's values converted (so a caller can poison
** them: what the code does not write comes back as it was); i32 and bool
** outputs start at 0. Returns 0; or the entry point's nonzero status as it
** returned it (generated code: 1 for bad sizes or bounds, 2 when out of
** memory), b's outputs untouched; or -1 when the engine itself failed (no
** such symbol, bad binding). err gets one line for every nonzero return. */
int cpu_engine_call(CpuModule *m, const char *entry_prefix, const Binding *b, int use_f64,
		    const long *bounds, int nparts, char *err, size_t errlen);

/* Unloads the module and frees it; NULL is allowed. */
void cpu_engine_unload(CpuModule *m);

/* Compiles c_source, runs entry_name on b's inputs and writes every TK_OUT
** buffer of b->data (as f64). Float tensors travel as f32. Returns 0; 1
** where the generated code refused the sizes or data (its status 1); -1
** for any other failure; a one-line reason in err (b's outputs then
** unspecified). */
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
