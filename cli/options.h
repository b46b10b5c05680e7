/*
** cli/options.h: the command line of `attnc` (not `attnc run`, run.c): GNU
** long options in both spellings (--opt=V and --opt V), and the one table
** of which output forms each target can give.
*/
#ifndef ATTN_OPTIONS_H
#define ATTN_OPTIONS_H

enum { EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_TOOL = 3 };

typedef enum Emit {
	EMIT_NONE,
	EMIT_CASCADE,
	EMIT_MLIR,
	EMIT_PLAN,
	EMIT_EXPLAIN,
	EMIT_C,
	EMIT_HEADER,
	EMIT_PTX
} Emit;

typedef struct Options {
	const char *file;    /* the .attn input */
	const char *out;     /* -o: a path, "-" for standard output, or NULL */
	const char *request; /* --target as named: sm_80,sm_90a (default), sm_80, ... */
	/* The target of the forms that print one target's output (--emit=plan,
	** --explain, --emit=ptx) and of the GPU bundle's first module: sm_80,
	** sm_90a, sm_100a or cpu (sm_80 for sm_80,sm_90a) */
	const char *target;
	const char *also;  /* the bundle's second module's target (sm_90a), or NULL */
	int target_given;  /* --target was given (--emit=c and header default to cpu) */
	const char *ptxas; /* --ptxas, or NULL: look it up */
	int no_cache;      /* --no-cache: run ptxas every time */
	int parts;         /* --parts: every kernel also gets NAME_fwd_part */
	int grad;          /* --grad: the backward (compiler/grad.h) */
	Emit emit;
	int f64;
	int max_errors;
} Options;

/* Fills o from argv. Returns -1 when attnc should go on, else the exit
** status to return at once (0 after --help or --version, EXIT_USAGE after
** one message on standard error). */
int options_parse(Options *o, int argc, char **argv);

#endif
