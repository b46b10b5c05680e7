/*
** cli/run.h: `attnc run`, evaluating a cascade on the host.
** run_main is the subcommand (argument parsing, front end, cascade choice);
** run_cascade is the part that needs no front end: sizes, params, inputs,
** the engine, and the outputs (.npy files and one summary line each).
**
** Exit codes: RUN_OK; RUN_EUSER for errors in the .attn file or in data the
** user supplied (bad .npy, shape mismatch, unknown names, unwritable output
** directory); RUN_EUSAGE for malformed command lines; RUN_EINTERNAL when an
** engine fails.
*/
#ifndef ATTN_RUN_H
#define ATTN_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "../compiler/cascade.h"

enum { RUN_OK = 0, RUN_EUSER = 1, RUN_EUSAGE = 2, RUN_EINTERNAL = 3 };

/* MLIR: the reference executor; INTERP: the f64 interpreter; CPU: the C
** back end's code, built with the system C compiler (cpu_engine.h). */
typedef enum RunEngine { RUN_ENGINE_MLIR, RUN_ENGINE_INTERP, RUN_ENGINE_CPU } RunEngine;

typedef struct RunSize {
	const char *name;
	long value;
} RunSize;

typedef struct RunInput {
	const char *name; /* an `in` tensor */
	const char *path; /* its .npy file */
} RunInput;

typedef struct RunParam {
	const char *name;
	double value;
} RunParam;

typedef struct RunRange {
	const char *name; /* an i32 `in` tensor */
	long lo, hi;      /* inclusive */
	/* --offsets NAME=TOTAL:LONGEST: cumulative offsets (inputs_offsets),
	** lo the total and hi the longest step */
	int offsets;
} RunRange;

typedef struct RunConfig {
	const RunSize *sizes;
	int nsizes;
	const RunInput *inputs;
	int ninputs;
	const RunParam *params;
	int nparams;
	const RunRange *ranges;
	int nranges;
	uint64_t seed;
	const char *out_dir; /* NULL: write no files */
	int use_f64;         /* --precision f64 */
	RunEngine engine;
	int quiet;       /* no summary lines */
	Diag *diag;      /* C back end messages (cpu engine); NULL: a fresh one on err */
	FILE *out, *err; /* NULL: stdout, stderr */
} RunConfig;

/* Defaults: seed 0, f32, the MLIR engine, stdout/stderr, nothing given. */
void run_config_init(RunConfig *cfg);

/* Binds sizes, params and inputs to c, runs the engine, writes and
** summarises the outputs. Returns an exit code (RUN_OK, ...); every message
** goes to cfg->err, summary lines to cfg->out. */
int run_cascade(const Cascade *c, const RunConfig *cfg);

/* The same for c and then its backward bwd (grad_derive): bwd's inputs
** that are c's outputs take the values c just computed, the others are
** bound as for any cascade (the same seed gives c's inputs the same values
** again; dX inputs are generated or read like any input). Both cascades'
** outputs are written and summarised. */
int run_cascade_grad(const Cascade *c, const Cascade *bwd, const RunConfig *cfg);

/* The whole `attnc run` subcommand; argv[0] is "run". */
int run_main(int argc, char **argv);

#endif
