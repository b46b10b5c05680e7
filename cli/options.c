/*
** cli/options.c: attnc's options and the rule of what each target can emit
** (see options.h). Every refusal is one line naming what was asked, then a
** pointer to --help, and exit status 2.
*/
#define _GNU_SOURCE /* getopt_long */
#include "options.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: attnc [options] FILE.attn\n"
    "       attnc run FILE.attn [run options]   (see 'attnc run --help')\n"
    "\n"
    "Compiles attention variants written as cascades of Einsums.\n"
    "Options take their value as --opt=V or --opt V.\n"
    "\n"
    "options:\n"
    "  --emit=cascade     print the cascade IR (stable text form)\n"
    "  --emit=mlir        print the cascade as MLIR (func.func of linalg.generic)\n"
    "  --emit=plan        print the kernel plan (roles, passes, running states, masks)\n"
    "  --emit=c           portable C99 for the plan (--target=cpu); with -o X.c the\n"
    "                     header X.h is written beside it\n"
    "  --emit=header      only the generated C header: the portable C back end's\n"
    "                     with --target=cpu, the GPU kernels' with a GPU target\n"
    "  --emit=ptx         PTX of the one-pass GPU kernels (sm_80's also runs on newer\n"
    "                     GPUs; sm_90a's, with wgmma and TMA, on Hopper)\n"
    "  --explain          say what the compiler did: passes before and after, each\n"
    "                     rewrite, the running state, and what forces a slower path\n"
    "  --target=T         sm_80,sm_90a (default), sm_80, sm_90a, sm_100a or cpu;\n"
    "                     sm_80,sm_90a bundles both GPU targets' kernels (its\n"
    "                     --emit=ptx, plans and --explain are sm_80's); sm_100a\n"
    "                     gives plans and --explain, not code yet\n"
    "  -o OUT             write the output to OUT ('-': standard output), whole or\n"
    "                     not at all; with a GPU target and no --emit, OUT is a base\n"
    "                     name: OUT.ptx, OUT.sm80.cubin, OUT.sm90.cubin, OUT.h and\n"
    "                     OUT.c (cubins and PTX embedded; link -lattnrt), and with\n"
    "                     sm_80,sm_90a OUT.sm90a.ptx and OUT.sm90a.cubin too\n"
    "  --ptxas=PATH       the ptxas to use (default: $CUDA_PATH/bin, /usr/local/cuda/bin,\n"
    "                     then $PATH)\n"
    "  --no-cache         run ptxas even where its result for the same PTX, target and\n"
    "                     ptxas is cached ($XDG_CACHE_HOME/attnc, else ~/.cache/attnc)\n"
    "  --parts            also build each kernel's entry of partial states,\n"
    "                     NAME_fwd_part: split-KV decode (NAME_launch_split) and\n"
    "                     launches over parts of the keys (NAME_launch_part); where\n"
    "                     masks read lengths, NAME_fwd_streamk (stream-K, which\n"
    "                     NAME_launch_split takes where it can)\n"
    "  --grad             the backward too (NAME_bwd, derived by reverse mode):\n"
    "                     --emit=cascade prints it, --explain says how each\n"
    "                     gradient was derived, --emit=c and --emit=header\n"
    "                     (--target=cpu) add it beside the forward; with -o or\n"
    "                     --emit=ptx (a GPU target) its\n"
    "                     GPU kernels and NAME_bwd_launch (docs/gpu.md)\n"
    "  --f64              use f64 as the float type of --emit=mlir and --emit=c\n"
    "  --max-errors=N     stop after N errors (default 20)\n"
    "  -h, --help         print this help\n"
    "  --version          print the version\n"
    "\n"
    "Without --emit and -o, attnc checks the file and reports diagnostics only.\n"
    "Exit status: 0 success, 1 errors in the input, 2 usage errors, 3 tool failure.\n";

/* One message, one exit status: the shape of every usage error. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "attnc: error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\ntry 'attnc --help'\n");
	va_end(ap);
	return EXIT_USAGE;
}

static const struct {
	const char *name;
	Emit emit;
} emit_names[] = {{"cascade", EMIT_CASCADE}, {"mlir", EMIT_MLIR},
		  {"plan", EMIT_PLAN},       {"c", EMIT_C},
		  {"header", EMIT_HEADER},   {"ptx", EMIT_PTX}};

/* Which forms a target gives, written once: 'y' it does, 'n' it cannot, with
** the reason in why_not. Index: target, then Emit. EMIT_NONE with -o is the
** GPU bundle (the CPU's output is --emit=c). A request of two targets names
** the one whose forms it gives where a form is one target's (code: plans,
** --explain, --emit=ptx, the bundle's first module) and the one whose module
** the bundle adds (also). */
static const struct {
	const char *name;
	const char *emits; /* NONE CASCADE MLIR PLAN EXPLAIN C HEADER PTX */
	const char *why_not;
	const char *code; /* NULL: name */
	const char *also; /* NULL: none */
} target_table[] = {
    {"sm_80,sm_90a", "yyyyynyy", NULL, "sm_80", "sm_90a"},
    {"sm_80", "yyyyynyy", NULL, NULL, NULL},
    {"sm_90a", "yyyyynyy", NULL, NULL, NULL},
    {"sm_100a", "nyyyynnn",
     "code generation for sm_100a (tcgen05) is not implemented yet; --target=sm_80 gives "
     "kernels that also run on Blackwell",
     NULL, NULL},
    {"cpu", "nyyyyyyn", "--target=cpu gives C (--emit=c or --emit=header), not PTX or a GPU bundle",
     NULL, NULL},
};

/* Without --target: the table's first request, the bundle of both GPU
** targets (and the portable C back end for --emit=c and --emit=header). */
enum { DEFAULT_TARGET = 0 };

/* Sets the request of table entry i: its name, and the targets it means. */
static void set_target(Options *o, size_t i)
{
	o->request = target_table[i].name;
	o->target = target_table[i].code ? target_table[i].code : target_table[i].name;
	o->also = target_table[i].also;
}

/* What was asked for, as the user wrote it, for messages. */
static const char *request_label(Emit e)
{
	static const char *const labels[] = {[EMIT_NONE] = "-o without --emit, the GPU bundle",
					     [EMIT_CASCADE] = "--emit=cascade",
					     [EMIT_MLIR] = "--emit=mlir",
					     [EMIT_PLAN] = "--emit=plan",
					     [EMIT_EXPLAIN] = "--explain",
					     [EMIT_C] = "--emit=c",
					     [EMIT_HEADER] = "--emit=header",
					     [EMIT_PTX] = "--emit=ptx"};
	return labels[e];
}

/* The combination of target, form and -o that was asked for is one the
** table allows; --emit=c with a GPU target is the portable C back end,
** which needs no target. */
static int check_request(const Options *o, int target_given)
{
	for (size_t t = 0; t < sizeof target_table / sizeof target_table[0]; t++) {
		if (strcmp(o->request, target_table[t].name))
			continue;
		Emit e = o->emit;
		if (e == EMIT_NONE && !o->out)
			return -1; /* check only: every target */
		if ((e == EMIT_C || e == EMIT_HEADER) && !target_given)
			return -1; /* the C back end is the default for C and headers */
		if (target_table[t].emits[e] == 'y')
			break;
		if (e == EMIT_C)
			return usage_error("--emit=c is the portable C back end: use --target=cpu "
					   "(the GPU kernels' C interface comes with -o)");
		return usage_error("%s (asked for: %s)", target_table[t].why_not, request_label(e));
	}
	int gpu_out = o->emit == EMIT_PTX || (o->emit == EMIT_NONE && o->out) ||
		      (o->emit == EMIT_HEADER && target_given && strcmp(o->target, "cpu"));
	if (o->grad && gpu_out && o->parts)
		return usage_error("--grad: the backward's kernels have no entry of partial states "
				   "(--parts) yet");
	if (o->out && !strcmp(o->out, "-") && o->emit == EMIT_NONE)
		return usage_error(
		    "-o - writes one form to standard output; the GPU bundle is several "
		    "files: give a base name");
	return -1;
}

/* getopt_long gives both spellings of every option and GNU's messages for
** a missing value; attnc adds its own for bad values. */
int options_parse(Options *o, int argc, char **argv)
{
	enum {
		OPT_EMIT = 256,
		OPT_EXPLAIN,
		OPT_TARGET,
		OPT_PTXAS,
		OPT_NOCACHE,
		OPT_PARTS,
		OPT_GRAD,
		OPT_F64,
		OPT_MAXERR,
		OPT_VERSION
	};
	static const struct option longopts[] = {
	    {"emit", required_argument, NULL, OPT_EMIT},
	    {"explain", no_argument, NULL, OPT_EXPLAIN},
	    {"target", required_argument, NULL, OPT_TARGET},
	    {"ptxas", required_argument, NULL, OPT_PTXAS},
	    {"no-cache", no_argument, NULL, OPT_NOCACHE},
	    {"parts", no_argument, NULL, OPT_PARTS},
	    {"grad", no_argument, NULL, OPT_GRAD},
	    {"f64", no_argument, NULL, OPT_F64},
	    {"max-errors", required_argument, NULL, OPT_MAXERR},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {NULL, 0, NULL, 0}};
	memset(o, 0, sizeof *o);
	set_target(o, DEFAULT_TARGET);
	o->max_errors = 20;
	int target_given = 0, c;
	opterr = 0, optind = 1;
	/* options may follow the file, as with GNU tools; '-' alone is an operand */
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h': fputs(usage_text, stdout); return 0;
		case OPT_VERSION: printf("attnc %s\n", ATTNC_VERSION); return 0;
		case OPT_EMIT: {
			size_t i, n = sizeof emit_names / sizeof emit_names[0];
			for (i = 0; i < n && strcmp(v, emit_names[i].name); i++)
				;
			if (i == n)
				return usage_error(
				    "unknown --emit form '%s' (expected cascade, mlir, "
				    "plan, c, header or ptx)",
				    v);
			o->emit = emit_names[i].emit;
			break;
		}
		case OPT_EXPLAIN: o->emit = EMIT_EXPLAIN; break;
		case OPT_TARGET: {
			size_t i, n = sizeof target_table / sizeof target_table[0];
			for (i = 0; i < n && strcmp(v, target_table[i].name); i++)
				;
			if (i == n)
				return usage_error(
				    "unknown target '%s' (expected sm_80,sm_90a (both), sm_80, "
				    "sm_90a, sm_100a or cpu)",
				    v);
			set_target(o, i);
			target_given = 1;
			break;
		}
		case OPT_PTXAS:
			if (!*v)
				return usage_error("--ptxas needs the path of a ptxas program");
			o->ptxas = v;
			break;
		case OPT_NOCACHE: o->no_cache = 1; break;
		case OPT_PARTS: o->parts = 1; break;
		case OPT_GRAD: o->grad = 1; break;
		case OPT_F64: o->f64 = 1; break;
		case OPT_MAXERR: {
			char *end;
			long n = strtol(v, &end, 10);
			if (!*v || *end || n < 1 || n > 100000)
				return usage_error(
				    "bad --max-errors value '%s' (expected 1 to 100000)", v);
			o->max_errors = (int)n;
			break;
		}
		case 'o':
			if (!*v)
				return usage_error("-o needs a path ('-' for standard output)");
			o->out = v;
			break;
		case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
		default: {
			/* getopt_long says '?' for "--f64=1" too: name what was wrong */
			const char *arg = argv[optind - 1], *eq = strchr(arg, '=');
			for (const struct option *lo = longopts; eq && lo->name; lo++)
				if (lo->has_arg == no_argument &&
				    !strncmp(arg + 2, lo->name, strlen(lo->name)) &&
				    arg + 2 + strlen(lo->name) == eq)
					return usage_error("option '--%s' takes no value",
							   lo->name);
			return usage_error("unknown option '%s'", arg);
		}
		}
	}
	if (optind == argc)
		return usage_error("no input file");
	if (argc - optind > 1)
		return usage_error("more than one input file ('%s', '%s')", argv[optind],
				   argv[optind + 1]);
	o->file = argv[optind];
	o->target_given = target_given;
	return check_request(o, target_given);
}
