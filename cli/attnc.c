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
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lang/front.h"
#include "../support/atomic_file.h"
#include "../lowering/mlir/mlir_emit.h"
#include "../compiler/plan.h"
#include "../lowering/c/c_emit.h"
#include "../lowering/gpu_iface.h"
#include "../lowering/sm80/sm80.h"
#include "ptxas.h"
#include "options.h"
#include "run.h"

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

/* The files of one output (the GPU bundle: five; C and its header: two),
** written together or not at all: each is staged beside its destination and
** all are renamed into place only when every one was written. */
typedef struct Staged {
	AtomicFile f[8];
	int n;
} Staged;

/* Why a destination cannot be written, in one line. */
static int cannot_write(const char *path, int code)
{
	fprintf(stderr, "attnc: error: cannot write '%s': %s\n", path, atomic_strerror(code));
	return EXIT_TOOL;
}

/* Stages path with fn's contents; on failure every staged file is removed
** and the message given. */
static int stage(Staged *s, const char *path, int (*fn)(FILE *, void *), void *ctx)
{
	int rc, e = atomic_open(&s->f[s->n], path);
	if (e) {
		rc = cannot_write(path, e);
	} else {
		FILE *fp = s->f[s->n++].fp;
		if ((rc = fn(fp, ctx)) != 0)
			fprintf(stderr, "attnc: error: cannot write '%s'\n", path);
	}
	if (rc)
		while (s->n)
			atomic_abort(&s->f[--s->n]);
	return rc;
}

/* Renames every staged file into place, or none of them. */
static int commit_staged(Staged *s)
{
	const char *first = s->n ? s->f[0].path : "";
	char *name = strdup(first);
	int e = atomic_commit_all(s->f, s->n);
	s->n = 0;
	int rc = e ? cannot_write(name ? name : first, e) : 0;
	free(name);
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

/* Bytes of spill stores a 128-row kernel may have: measured on the H100,
** prefix-LM (88 bytes) ran 40% faster with 128 rows than with 64, ALiBi
** (184 bytes) 10% slower. Where masks read data (document ids) every CTA
** scans the stream's tiles with loads, so 64-row tiles double that work:
** document masking at D = 128 with 176 bytes ran 30-39% faster with 128
** rows (2k and 8k). */
enum { SPILL_OK = 128, SPILL_OK_DATA = 256 };

/* ptxas's errors for arch, reported with the kernel file's context. */
static int ptxas_failed(const char *arch, const char *err)
{
	fprintf(stderr, "attnc: error: ptxas -arch=%s rejected the kernels of this file: %.1500s\n",
		arch, err);
	return EXIT_TOOL;
}

/* PTX for every cascade, with ptxas's feedback when px is given: a kernel
** of 128-row tiles that ptxas spills more than SPILL_OK bytes of is
** generated again with the next K and V tiles copied together (where they
** were apart: the copy addresses then need no registers across the first
** contraction), then with 64-row tiles (fewer registers). The sm_90 cubin of
** the final PTX is returned in cubin90 when px is given, and its sm_80
** cubin in cubin80 when that is not NULL: each round assembles both at
** once (the sm_80 run is dropped when the round's PTX is regenerated), so
** that the two targets take the time of one where nothing spills. ptxas's
** errors are reported here. */
static int emit_ptx_tuned(const Program *p, Diag *d, const char *px, char **buf, size_t *n,
			  Sm80Info *info, Blob *cubin90, Blob *cubin80)
{
	char err[2048];
	int nc = p->cascades.n, rc = 0;
	int *cap = calloc((size_t)nc + 1, sizeof *cap);
	const char **funcs = calloc((size_t)nc + 1, sizeof *funcs);
	long *spills = calloc((size_t)nc + 1, sizeof *spills);
	char **names = calloc((size_t)nc + 1, sizeof *names);
	if (!cap || !funcs || !spills || !names)
		rc = EXIT_TOOL;
	for (int i = 0; i < nc && !rc; i++) {
		const Cascade *c = p->cascades.v[i];
		size_t len = strlen(c->name) + 8;
		if (!(names[i] = malloc(len)))
			rc = EXIT_TOOL;
		else
			snprintf(names[i], len, "%s_fwd", c->name), funcs[i] = names[i];
	}
	for (int round = 0; round < 3 && !rc; round++) {
		free(*buf), *buf = NULL, *n = 0;
		FILE *m = open_memstream(buf, n);
		if (!m) {
			rc = EXIT_TOOL;
			break;
		}
		rc = sm80_emit_program(m, p, d, info, cap) ? EXIT_INPUT : 0;
		fclose(m);
		if (rc || !px)
			break;
		free(cubin90->data), cubin90->data = NULL;
		PtxasJob j80;
		int sm80 = cubin80 && !ptxas_start(&j80, px, *buf, *n, "sm_80", err, sizeof err);
		if (cubin80 && !sm80) {
			rc = ptxas_failed("sm_80", err);
			break;
		}
		if (ptxas_assemble_v(px, *buf, *n, "sm_90", &cubin90->data, &cubin90->size, err,
				     sizeof err, funcs, spills, nc)) {
			if (sm80)
				ptxas_cancel(&j80);
			rc = ptxas_failed("sm_90", err);
			break;
		}
		int again = 0;
		for (int i = 0; i < nc && round < 2; i++) {
			if (info[i].block_m <= 64)
				continue;
			/* a tile table's kernel spills about as much with the copies
			** together: split, it ran 1.4-4.4% faster (document1024 D = 128) */
			if (info[i].split_v &&
			    spills[i] > (info[i].table ? SPILL_OK_DATA : SPILL_OK))
				cap[i] = SM80_CAP_NOSPLIT, again = 1;
			else if (spills[i] > (info[i].data_masks ? SPILL_OK_DATA : SPILL_OK))
				cap[i] = SM80_CAP_ROWS64, again = 1;
		}
		if (sm80 && again)
			ptxas_cancel(&j80);
		else if (sm80) {
			free(cubin80->data), cubin80->data = NULL;
			if (ptxas_finish(&j80, &cubin80->data, &cubin80->size, err, sizeof err,
					 NULL, NULL, 0))
				rc = ptxas_failed("sm_80", err);
		}
		if (!again)
			break;
	}
	for (int i = 0; i < nc && names; i++)
		free(names[i]);
	free(cap), free(funcs), free(spills), free(names);
	return rc;
}

/* The GPU compile: PTX for every cascade, assembled by ptxas for sm_80 and
** sm_90, then OUT.ptx, OUT.h and OUT.c (the cubins and PTX embedded). */
static int compile_gpu(const char *outbase, const Program *p, Diag *d, const char *ptxas_opt)
{
	char *buf = NULL;
	size_t n = 0;
	Arena a;
	arena_init(&a);
	GpuImages im = {0};
	im.arena = &a;
	im.info = ARENA_ARRAY(&a, Sm80Info, p->cascades.n + 1);
	char err[2048];
	int rc = 0;
	const char *px = ptxas_find(ptxas_opt, err, sizeof err);
	if (!px) {
		fprintf(stderr, "attnc: error: %s\n", err);
		rc = EXIT_TOOL;
	}
	/* the sm_90 cubin comes from the tuning's last ptxas run */
	if (!rc)
		rc = emit_ptx_tuned(p, d, px, &buf, &n, im.info, &im.cubin90, &im.cubin80);
	im.ptx = buf, im.ptx_size = n;
	if (!rc) {
		const char *slash = strrchr(outbase, '/');
		GpuOut g = {p, &im, arena_printf(&a, "%s.h", slash ? slash + 1 : outbase)};
		Staged st = {0};
		rc = stage(&st, arena_printf(&a, "%s.ptx", outbase), put_ptx, &g);
		if (!rc)
			rc = stage(&st, arena_printf(&a, "%s.h", outbase), put_h, &g);
		if (!rc)
			rc = stage(&st, arena_printf(&a, "%s.c", outbase), put_c, &g);
		if (!rc)
			rc = stage(&st, arena_printf(&a, "%s.sm80.cubin", outbase), put_blob,
				   &im.cubin80);
		if (!rc)
			rc = stage(&st, arena_printf(&a, "%s.sm90.cubin", outbase), put_blob,
				   &im.cubin90);
		if (!rc)
			rc = commit_staged(&st);
	}
	free(im.cubin80.data);
	free(im.cubin90.data);
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
		int e = atomic_open(&af, path);
		if (e)
			return cannot_write(path, e);
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
		Sm80Info *info = calloc((size_t)p->cascades.n + 1, sizeof *info);
		Blob c90 = {0};
		const char *px = ptxas_find(ptxas_opt, err, sizeof err);
		if (!info)
			rc = EXIT_TOOL;
		else
			rc = emit_ptx_tuned(p, diag, px, &buf, &n, info, &c90, NULL);
		if (!rc && fwrite(buf, 1, n, out) != n)
			rc = EXIT_TOOL;
		free(buf), free(info), free(c90.data);
	}
	if (!path) {
		if (fflush(out) || ferror(out)) {
			fprintf(stderr, "attnc: error: write failed: %s\n", strerror(errno));
			rc = EXIT_TOOL;
		}
	} else if (rc) {
		atomic_abort(&af);
	} else {
		char *name = strdup(path);
		int e = atomic_commit(&af);
		if (e)
			rc = cannot_write(name ? name : path, e);
		free(name);
	}
	return rc;
}

typedef struct COut {
	const Program *p;
	int f64;
} COut;

static int put_c_source(FILE *o, void *ctx)
{
	COut *c = ctx;
	return c_emit_program(o, c->p, NULL, c->f64) ? EXIT_TOOL : 0;
}

static int put_c_header(FILE *o, void *ctx)
{
	COut *c = ctx;
	c_emit_header(o, c->p, c->f64);
	return 0;
}

/* --emit=c -o X.c: the source and its header X.h beside it (X.h too when
** the name does not end in .c: X.h), written together. */
static int emit_c_pair(const char *path, const Program *p, int f64)
{
	size_t n = strlen(path);
	char *h = malloc(n + 3);
	if (!h)
		return EXIT_TOOL;
	memcpy(h, path, n + 1);
	if (n > 2 && !strcmp(h + n - 2, ".c"))
		h[n - 1] = 'h';
	else
		strcat(h, ".h");
	COut c = {p, f64};
	Staged st = {0};
	int rc = stage(&st, path, put_c_source, &c);
	if (!rc)
		rc = stage(&st, h, put_c_header, &c);
	if (!rc)
		rc = commit_staged(&st);
	free(h);
	return rc;
}

/* --emit=header with a GPU target: the generated GPU interface's header,
** which needs no ptxas. */
static int emit_gpu_header(const char *path, const Program *p)
{
	GpuOut g = {p, NULL, NULL};
	if (!path) {
		put_h(stdout, &g);
		return fflush(stdout) || ferror(stdout) ? EXIT_TOOL : 0;
	}
	Staged st = {0};
	int rc = stage(&st, path, put_h, &g);
	return rc ? rc : commit_staged(&st);
}

/* A directory opens as a file on Linux and then fails to read with no
** reason given; say what it is instead. */
static int input_is_directory(const char *file)
{
	struct stat st;
	if (stat(file, &st) || !S_ISDIR(st.st_mode))
		return 0;
	fprintf(stderr, "attnc: error: cannot read '%s': it is a directory\n", file);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "run"))
		return run_main(argc - 1, argv + 1);
	Options o;
	int rc = options_parse(&o, argc, argv);
	if (rc >= 0)
		return rc;
	rc = 0;
	const char *out = o.out && strcmp(o.out, "-") ? o.out : NULL;
	if (input_is_directory(o.file))
		return EXIT_INPUT;
	Arena arena;
	arena_init(&arena);
	Diag d;
	diag_init(&d, &arena, stderr);
	d.max_errors = o.max_errors;
	int f = diag_load_file(&d, o.file);
	Program *p = f < 0 ? NULL : front_compile(&arena, &d, f);
	int gpu_code = o.emit == EMIT_PTX || (o.emit == EMIT_NONE && o.out);
	if (f < 0 || !p)
		rc = EXIT_INPUT;
	else if (gpu_code && p->cascades.n == 0) {
		fprintf(stderr,
			"attnc: error: %s defines no attention block: no kernel to compile\n",
			o.file);
		rc = EXIT_INPUT;
	} else if (o.emit == EMIT_HEADER && o.target_given && strcmp(o.target, "cpu"))
		rc = emit_gpu_header(out, p);
	else if (o.emit == EMIT_C && out)
		rc = emit_c_pair(out, p, o.f64);
	else if (o.emit != EMIT_NONE)
		rc = emit_to(out, o.emit, p, o.f64, o.target, &d, o.ptxas);
	else if (out)
		rc = compile_gpu(out, p, &d, o.ptxas);
	if (d.suppressed)
		fprintf(stderr, "attnc: %d more errors not shown (--max-errors=%d)\n", d.suppressed,
			d.max_errors);
	if (d.errors)
		fprintf(stderr, "%d error%s generated.\n", d.errors, d.errors == 1 ? "" : "s");
	arena_free(&arena);
	return rc;
}
