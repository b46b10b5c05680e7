/*
** cli/attnc.c: the attnc command.
**
**   attnc [options] FILE.attn        compile (today: check, or --emit a form)
**   attnc run FILE.attn [options]    run the reference on seeded inputs
**
** Exit status: 0 success, 1 errors in the input, 2 usage errors, 3 a tool
** or internal failure. Output files are written whole or not at all.
*/
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lang/front.h"
#include "../support/atomic_file.h"
#include "../lowering/mlir/mlir_emit.h"
#include "../compiler/plan.h"
#include "../lowering/c/c_emit.h"
#include "../lowering/gpu/iface.h"
#include "../lowering/targets.h"
#include "ptxas.h"
#include "run.h"

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

static const char *usage_text =
    "usage: attnc [options] FILE.attn\n"
    "       attnc run FILE.attn [run options]   (see 'attnc run --help')\n"
    "\n"
    "Compiles attention variants written as cascades of Einsums.\n"
    "\n"
    "options:\n"
    "  --emit=cascade     print the cascade IR (stable text form)\n"
    "  --emit=mlir        print the cascade as MLIR (func.func of linalg.generic)\n"
    "  --emit=plan        print the kernel plan (roles, passes, running states, masks)\n"
    "  --emit=c           portable C99 for the plan (--target=cpu); with -o X.c the\n"
    "                     header X.h is written beside it\n"
    "  --emit=header      only the generated C header\n"
    "  --emit=ptx         PTX of the one-pass GPU kernel (--target=sm_80; the same\n"
    "                     PTX runs on Hopper and newer GPUs)\n"
    "  --explain          say what the compiler did: passes before and after, each\n"
    "                     rewrite, the running state, and what forces a slower path\n"
    "  --target=T         sm_80, sm_90a, sm_100a or cpu (default sm_80; sm_90a and\n"
    "                     sm_100a code generation is not implemented yet)\n"
    "  -o OUT             with a GPU target and no --emit: write OUT.ptx, OUT.sm80.cubin,\n"
    "                     OUT.sm90.cubin, OUT.h and OUT.c (cubins and PTX embedded;\n"
    "                     link -lattnrt)\n"
    "  --ptxas=PATH       the ptxas to use (default: $CUDA_PATH/bin, /usr/local/cuda/bin, PATH)\n"
    "  --f64              use f64 as the float type of --emit=mlir\n"
    "  -o PATH            write the output to PATH instead of standard output\n"
    "  --max-errors=N     stop after N errors (default 20)\n"
    "  -h, --help         print this help\n"
    "  --version          print the version\n"
    "\n"
    "Without --emit and -o, attnc checks the file and reports diagnostics only.\n"
    "Exit status: 0 success, 1 errors in the input, 2 usage errors, 3 tool failure.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "attnc: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\ntry 'attnc --help'\n");
	return EXIT_USAGE;
}

static const char *targets[] = {"sm_80", "sm_90a", "sm_100a", "cpu"};

/* Plans each cascade in a scratch arena of its own: planning copies the IR. */
static void emit_plans(FILE *out, Emit emit, const Program *p, const char *target)
{
	for (int i = 0; i < p->cascades.n; i++) {
		Arena a;
		arena_init(&a);
		Plan *pl = plan_build(&a, p->cascades.v[i], target);
		if (i)
			fputc('\n', out);
		if (emit == EMIT_PLAN)
			plan_print(out, pl);
		else
			plan_explain(out, pl);
		arena_free(&a);
	}
}

/* Writes a file whole or not at all (support/atomic_file.h), its contents
** from fn: a failed run leaves no partial output. */
static int write_atomic(const char *path, int (*fn)(FILE *, void *), void *ctx)
{
	AtomicFile af;
	int e = atomic_open(&af, path, 0);
	if (e) {
		fprintf(stderr, "attnc: error: cannot write '%s': %s\n", path, strerror(e));
		return EXIT_TOOL;
	}
	int rc = fn(af.fp, ctx);
	if (rc)
		atomic_abort(&af);
	else if ((e = atomic_commit(&af))) {
		fprintf(stderr, "attnc: error: cannot write '%s': %s\n", path, strerror(e));
		rc = EXIT_TOOL;
	}
	return rc;
}

typedef struct GpuOut {
	const Program *p;
	GpuImages *im;
	const char *header;
} GpuOut;

static int put_ptx(FILE *o, void *ctx)
{
	GpuOut *g = ctx;
	return fwrite(g->im->ptx, 1, g->im->ptx_size, o) == g->im->ptx_size ? 0 : EXIT_TOOL;
}

static int put_blob(FILE *o, void *ctx)
{
	Blob *b = ctx;
	return fwrite(b->data, 1, b->size, o) == b->size ? 0 : EXIT_TOOL;
}

static int put_h(FILE *o, void *ctx)
{
	gpu_iface_header(o, ((GpuOut *)ctx)->p);
	return 0;
}

static int put_c(FILE *o, void *ctx)
{
	GpuOut *g = ctx;
	gpu_iface_source(o, g->p, g->im, g->header);
	return 0;
}

/* ptxas's errors for arch, reported with the kernel file's context. */
static int ptxas_failed(const char *arch, const char *err)
{
	fprintf(stderr, "attnc: error: ptxas -arch=%s rejected the kernels of this file: %.1500s\n",
		arch, err);
	return EXIT_TOOL;
}

/* The ptxas runs of the retry loop (gpu_compile): each round assembles the
** target's machine code at once, the earlier compute capabilities as
** background jobs (dropped when the round's PTX is generated again), the
** last one in the foreground with its spill report. */
typedef struct Assembly {
	const GpuTarget *t;
	const char *px;
	GpuCubin *cubin; /* [t->ncubins] */
	int all;         /* every cubin, else only the last (its spills) */
	PtxasJob job[GPU_MAX_CUBINS];
	int started[GPU_MAX_CUBINS];
	char err[2048];
} Assembly;

static void arch_of(char *arch, size_t n, int sm)
{
	snprintf(arch, n, "sm_%d", sm);
}

static int assemble_round(void *ctx, const char *ptx, size_t n, const char *const *funcs,
			  long *spills, int nfuncs)
{
	Assembly *as = ctx;
	int last = as->t->ncubins - 1;
	char arch[16];
	free(as->cubin[last].code.data), as->cubin[last].code.data = NULL;
	for (int k = 0; k < last && as->all; k++) {
		arch_of(arch, sizeof arch, as->t->cubin_sms[k]);
		as->started[k] =
		    !ptxas_start(&as->job[k], as->px, ptx, n, arch, as->err, sizeof as->err);
		if (!as->started[k]) {
			for (int j = 0; j < k; j++)
				if (as->started[j])
					ptxas_cancel(&as->job[j]), as->started[j] = 0;
			return ptxas_failed(arch, as->err);
		}
	}
	arch_of(arch, sizeof arch, as->t->cubin_sms[last]);
	if (ptxas_assemble_v(as->px, ptx, n, arch, &as->cubin[last].code.data,
			     &as->cubin[last].code.size, as->err, sizeof as->err, funcs, spills,
			     nfuncs)) {
		for (int k = 0; k < last; k++)
			if (as->started[k])
				ptxas_cancel(&as->job[k]), as->started[k] = 0;
		return ptxas_failed(arch, as->err);
	}
	return 0;
}

static int settle_round(void *ctx, int final)
{
	Assembly *as = ctx;
	int rc = 0;
	for (int k = 0; k < as->t->ncubins - 1; k++) {
		if (!as->started[k])
			continue;
		as->started[k] = 0;
		if (!final) {
			ptxas_cancel(&as->job[k]);
			continue;
		}
		Blob *b = &as->cubin[k].code;
		free(b->data), b->data = NULL;
		if (!rc && ptxas_finish(&as->job[k], &b->data, &b->size, as->err, sizeof as->err,
					NULL, NULL, 0)) {
			char arch[16];
			arch_of(arch, sizeof arch, as->t->cubin_sms[k]);
			rc = ptxas_failed(arch, as->err);
		}
	}
	return rc;
}

/* PTX for every cascade, tuned with ptxas's feedback when px is given
** (gpu_compile); the machine code of the final PTX in cubin[] (only the
** last compute capability's unless all). */
static int emit_ptx_tuned(const GpuTarget *t, const Program *p, Diag *d, const char *px, char **buf,
			  size_t *n, GpuKernelInfo *info, GpuCubin *cubin, int all)
{
	Assembly as = {.t = t, .px = px, .cubin = cubin, .all = all};
	GpuAssembler cb = {assemble_round, settle_round, &as};
	for (int k = 0; k < t->ncubins; k++)
		cubin[k].sm = t->cubin_sms[k];
	int rc = gpu_compile(t, p, d, px ? &cb : NULL, buf, n, info);
	return rc == GPU_ERR_INPUT ? EXIT_INPUT : rc == GPU_ERR_MEMORY ? EXIT_TOOL : rc;
}

/* The GPU compile: PTX for every cascade, assembled by ptxas for the
** target's compute capabilities, then OUT.ptx, OUT.h and OUT.c (the cubins
** and PTX embedded). */
static int compile_gpu(const GpuTarget *t, const char *outbase, const Program *p, Diag *d,
		       const char *ptxas_opt)
{
	char *buf = NULL;
	size_t n = 0;
	Arena a;
	arena_init(&a);
	GpuImages im = {0};
	im.arena = &a;
	im.target = t->name;
	im.ncubins = t->ncubins;
	im.info = ARENA_ARRAY(&a, GpuKernelInfo, p->cascades.n + 1);
	char err[2048];
	int rc = 0;
	const char *px = ptxas_find(ptxas_opt, err, sizeof err);
	if (!px) {
		fprintf(stderr, "attnc: error: %s\n", err);
		rc = EXIT_TOOL;
	}
	/* the cubins come from the tuning's last ptxas run */
	if (!rc)
		rc = emit_ptx_tuned(t, p, d, px, &buf, &n, im.info, im.cubin, 1);
	im.ptx = buf, im.ptx_size = n;
	if (!rc) {
		const char *slash = strrchr(outbase, '/');
		GpuOut g = {p, &im, arena_printf(&a, "%s.h", slash ? slash + 1 : outbase)};
		rc = write_atomic(arena_printf(&a, "%s.ptx", outbase), put_ptx, &g);
		if (!rc)
			rc = write_atomic(arena_printf(&a, "%s.h", outbase), put_h, &g);
		if (!rc)
			rc = write_atomic(arena_printf(&a, "%s.c", outbase), put_c, &g);
		for (int k = 0; k < im.ncubins && !rc; k++)
			rc =
			    write_atomic(arena_printf(&a, "%s.sm%d.cubin", outbase, im.cubin[k].sm),
					 put_blob, &im.cubin[k].code);
	}
	for (int k = 0; k < im.ncubins; k++)
		free(im.cubin[k].code.data);
	free(buf);
	arena_free(&a);
	return rc;
}

/* Prints the emitted form to standard output, or writes it whole or not at
** all to path (support/atomic_file.h). */
static int emit_to(const char *path, Emit emit, const Program *p, int f64, const char *target,
		   Diag *diag, const char *ptxas_opt)
{
	FILE *out = stdout;
	AtomicFile af;
	if (path) {
		int e = atomic_open(&af, path, 0);
		if (e) {
			fprintf(stderr, "attnc: error: cannot write '%s': %s\n", path, strerror(e));
			return EXIT_TOOL;
		}
		out = af.fp;
	}
	int rc = 0;
	if (emit == EMIT_CASCADE)
		program_print(out, p);
	else if (emit == EMIT_MLIR && mlir_emit_program(out, stderr, p, f64))
		rc = EXIT_TOOL;
	else if (emit == EMIT_PLAN || emit == EMIT_EXPLAIN)
		emit_plans(out, emit, p, target);
	else if (emit == EMIT_C && c_emit_program(out, p, NULL, f64))
		rc = EXIT_TOOL;
	else if (emit == EMIT_HEADER)
		c_emit_header(out, p, f64);
	else if (emit == EMIT_PTX) {
		/* the same PTX as the full compile when ptxas is there */
		char err[2048], *buf = NULL;
		size_t n = 0;
		const GpuTarget *t = gpu_target(target);
		if (!t)
			t = gpu_target_default();
		GpuKernelInfo *info = calloc((size_t)p->cascades.n + 1, sizeof *info);
		GpuCubin cubin[GPU_MAX_CUBINS] = {{0}};
		const char *px = ptxas_find(ptxas_opt, err, sizeof err);
		if (!info)
			rc = EXIT_TOOL;
		else
			rc = emit_ptx_tuned(t, p, diag, px, &buf, &n, info, cubin, 0);
		if (!rc && fwrite(buf, 1, n, out) != n)
			rc = EXIT_TOOL;
		free(buf), free(info);
		for (int k = 0; k < GPU_MAX_CUBINS; k++)
			free(cubin[k].code.data);
	}
	if (!path) {
		if (fflush(out) || ferror(out)) {
			fprintf(stderr, "attnc: error: write failed: %s\n", strerror(errno));
			rc = EXIT_TOOL;
		}
	} else if (rc) {
		atomic_abort(&af);
	} else {
		int e = atomic_commit(&af);
		if (e) {
			fprintf(stderr, "attnc: error: cannot write '%s': %s\n", path, strerror(e));
			rc = EXIT_TOOL;
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "run"))
		return run_main(argc - 1, argv + 1);
	const char *file = NULL, *out = NULL, *target = "sm_80", *ptxas_opt = NULL;
	Emit emit = EMIT_NONE;
	int f64 = 0, max_errors = 20;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("attnc %s\n", ATTNC_VERSION);
			return 0;
		} else if (!strncmp(a, "--emit=", 7)) {
			if (!strcmp(a + 7, "cascade"))
				emit = EMIT_CASCADE;
			else if (!strcmp(a + 7, "mlir"))
				emit = EMIT_MLIR;
			else if (!strcmp(a + 7, "plan"))
				emit = EMIT_PLAN;
			else if (!strcmp(a + 7, "c"))
				emit = EMIT_C;
			else if (!strcmp(a + 7, "header"))
				emit = EMIT_HEADER;
			else if (!strcmp(a + 7, "ptx"))
				emit = EMIT_PTX;
			else
				return usage_error("unknown --emit form '%s' (expected cascade, "
						   "mlir, plan, c, header or ptx)",
						   a + 7);
		} else if (!strcmp(a, "--explain")) {
			emit = EMIT_EXPLAIN;
		} else if (!strncmp(a, "--target=", 9)) {
			int ok = 0;
			for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++)
				if (!strcmp(a + 9, targets[t]))
					ok = 1, target = targets[t];
			if (!ok)
				return usage_error(
				    "unknown target '%s' (expected sm_80, sm_90a, sm_100a or cpu)",
				    a + 9);
		} else if (!strncmp(a, "--ptxas=", 8)) {
			ptxas_opt = a + 8;
		} else if (!strcmp(a, "--f64")) {
			f64 = 1;
		} else if (!strncmp(a, "--max-errors=", 13)) {
			char *end;
			long v = strtol(a + 13, &end, 10);
			if (*end || v < 1 || v > 100000)
				return usage_error("bad --max-errors value '%s'", a + 13);
			max_errors = (int)v;
		} else if (!strcmp(a, "-o")) {
			if (++i == argc)
				return usage_error("%s needs a path", "-o");
			out = argv[i];
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (file) {
			return usage_error("more than one input file ('%s')", a);
		} else {
			file = a;
		}
	}
	if (!file)
		return usage_error("%s", "no input file");
	Arena arena;
	arena_init(&arena);
	Diag d;
	diag_init(&d, &arena, stderr);
	d.max_errors = max_errors;
	int rc = 0;
	int f = diag_load_file(&d, file);
	Program *p = f < 0 ? NULL : front_compile(&arena, &d, f);
	if (f < 0)
		rc = EXIT_INPUT;
	else if (!p)
		rc = EXIT_INPUT;
	else if (emit != EMIT_NONE)
		rc = emit_to(out, emit, p, f64, target, &d, ptxas_opt);
	else if (out && strcmp(target, "cpu")) {
		if (!gpu_target(target)) {
			fprintf(stderr,
				"attnc: error: code generation for %s (wgmma/TMA, tcgen05) is not "
				"implemented yet; --target=sm_80 gives PTX that also runs on "
				"Hopper and newer GPUs\n",
				target);
			rc = EXIT_USAGE;
		} else {
			rc = compile_gpu(gpu_target(target), out, p, &d, ptxas_opt);
		}
	}
	if (rc == 0 && p && emit == EMIT_C && out) {
		/* the header goes beside the C file: x.c -> x.h */
		size_t n = strlen(out);
		char *h = malloc(n + 3);
		if (!h)
			rc = EXIT_TOOL;
		else {
			memcpy(h, out, n + 1);
			if (n > 2 && !strcmp(h + n - 2, ".c"))
				h[n - 1] = 'h';
			else
				strcat(h, ".h");
			rc = emit_to(h, EMIT_HEADER, p, f64, target, &d, ptxas_opt);
			free(h);
		}
	}
	if (d.suppressed)
		fprintf(stderr, "attnc: %d more errors not shown (--max-errors=%d)\n", d.suppressed,
			d.max_errors);
	if (d.errors)
		fprintf(stderr, "%d error%s generated.\n", d.errors, d.errors == 1 ? "" : "s");
	arena_free(&arena);
	return rc;
}
