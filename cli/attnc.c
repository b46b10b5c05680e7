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
#include "../compiler/grad.h"
#include "../lowering/c/c_emit.h"
#include "../lowering/gpu/iface.h"
#include "../lowering/targets.h"
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
	if (emit != EMIT_PLAN) {
		fputc('\n', out);
		plan_explain_limits(out);
	}
}

/* The files of one output (the GPU bundle: up to seven; C and its header: two),
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

/* Renames every staged file into place, or none of them; a failure names
** the file it concerns. */
static int commit_staged(Staged *s)
{
	char *names[8];
	int n = s->n, at = 0;
	for (int i = 0; i < n; i++)
		names[i] = strdup(s->f[i].path);
	int e = atomic_commit_all(s->f, n, &at);
	s->n = 0;
	int rc = e ? cannot_write(names[at] ? names[at] : "output", e) : 0;
	for (int i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

/* What the GPU bundle's writers need. A bundle of two targets has the
** second target's module in im->alt, and for each cascade of p the second
** target refused, why (and the base name of the files, for the note). */
typedef struct GpuOut {
	const Program *p;
	GpuImages *im;
	const char *header;
	const char *const *why;
	const char *base;
	int bundle; /* the header declares NAME_kernel_info */
	int parts;  /* and the functions around NAME_fwd_part (--parts) */
} GpuOut;

static int put_ptx(FILE *o, void *ctx)
{
	GpuOut *g = ctx;
	return fwrite(g->im->ptx, 1, g->im->ptx_size, o) == g->im->ptx_size ? 0 : EXIT_TOOL;
}

/* The second module's PTX, and after it a note per cascade it left out:
** someone reading the file sees why a kernel is missing and which files
** hold the code that runs instead. */
static int put_alt_ptx(FILE *o, void *ctx)
{
	GpuOut *g = ctx;
	const GpuImages *alt = g->im->alt;
	if (fwrite(alt->ptx, 1, alt->ptx_size, o) != alt->ptx_size)
		return EXIT_TOOL;
	for (int i = 0; i < g->p->cascades.n; i++) {
		if (!g->why[i])
			continue;
		fprintf(o, "\n// %s: no %s kernel here: %s\n// (it runs from %s.ptx and its cubins",
			((const Cascade *)g->p->cascades.v[i])->name, alt->target, g->why[i],
			g->base);
		for (int k = 0; k < g->im->ncubins; k++)
			fprintf(o, "%s %s.sm%d.cubin", k ? "," : "", g->base, g->im->cubin[k].sm);
		fputs(")\n", o);
	}
	return 0;
}

static int put_blob(FILE *o, void *ctx)
{
	Blob *b = ctx;
	return fwrite(b->data, 1, b->size, o) == b->size ? 0 : EXIT_TOOL;
}

static int put_h(FILE *o, void *ctx)
{
	GpuOut *g = ctx;
	gpu_iface_header_parts(o, g->p, g->bundle, g->parts);
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

/* ptxas's -arch for machine code sm of target t: sm_90a where the target's
** instructions (wgmma, setmaxnreg) need the arch-specific variant. */
static void arch_of(char *arch, size_t n, const GpuTarget *t, int sm)
{
	snprintf(arch, n, "sm_%d%s", sm, t->cubin_arch_suffix ? t->cubin_arch_suffix : "");
}

static int assemble_round(void *ctx, const char *ptx, size_t n, const char *const *funcs,
			  long *spills, int nfuncs)
{
	Assembly *as = ctx;
	int last = as->t->ncubins - 1;
	char arch[16];
	free(as->cubin[last].code.data), as->cubin[last].code.data = NULL;
	for (int k = 0; k < last && as->all; k++) {
		arch_of(arch, sizeof arch, as->t, as->t->cubin_sms[k]);
		as->started[k] =
		    !ptxas_start(&as->job[k], as->px, ptx, n, arch, as->err, sizeof as->err);
		if (!as->started[k]) {
			for (int j = 0; j < k; j++)
				if (as->started[j])
					ptxas_cancel(&as->job[j]), as->started[j] = 0;
			return ptxas_failed(arch, as->err);
		}
	}
	arch_of(arch, sizeof arch, as->t, as->t->cubin_sms[last]);
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
			arch_of(arch, sizeof arch, as->t, as->t->cubin_sms[k]);
			rc = ptxas_failed(arch, as->err);
		}
	}
	return rc;
}

/* PTX for every cascade, tuned with ptxas's feedback when px is given
** (gpu_compile); the machine code of the final PTX in cubin[] (only the
** last compute capability's unless all). */
static int emit_ptx_tuned(const GpuTarget *t, const Program *p, Diag *d, const char *px, char **buf,
			  size_t *n, GpuKernelInfo *info, GpuCubin *cubin, int all, int parts)
{
	Assembly as = {.t = t, .px = px, .cubin = cubin, .all = all};
	GpuAssembler cb = {assemble_round, settle_round, &as};
	for (int k = 0; k < t->ncubins; k++)
		cubin[k].sm = t->cubin_sms[k];
	int rc = gpu_compile(t, p, d, px ? &cb : NULL, buf, n, info, parts);
	return rc == GPU_ERR_INPUT ? EXIT_INPUT : rc == GPU_ERR_MEMORY ? EXIT_TOOL : rc;
}

/* A bundle's second target t2 takes some cascades of p: they make the
** program its module is compiled from (p2), alt_index[i] is cascade i's
** index there or -1, and why[i] the reason t2 gave for a cascade it left
** out (NULL: taken). A refusal is no error: that cascade runs from the
** first module's code everywhere. Each cascade is planned in an arena of
** its own, as gpu_emit_program does, so that memory does not grow with the
** blocks of a file; a reason is kept in a. With parts, the cascades are
** asked for their entries of partial states too. */
static void split_program(Arena *a, const GpuTarget *t2, const Program *p, Program *p2,
			  int *alt_index, const char **why, int parts)
{
	memset(p2, 0, sizeof *p2);
	for (int i = 0; i < p->cascades.n; i++) {
		const Cascade *c = p->cascades.v[i];
		Arena scratch;
		arena_init(&scratch);
		const char *r = gpu_refusal(&scratch, t2, c, parts);
		why[i] = r ? arena_printf(a, "%s", r) : NULL;
		arena_free(&scratch);
		alt_index[i] = why[i] ? -1 : p2->cascades.n;
		if (!why[i])
			ptrvec_push(a, &p2->cascades, (void *)c);
	}
}

/* The identifier of a target in file names: its name in letters and
** digits (sm_90a: sm90a). */
static const char *file_ident(Arena *a, const char *name)
{
	char *s = arena_printf(a, "%s", name), *w = s;
	for (const char *r = name; *r; r++)
		if (*r != '_' && *r != ',' && *r != '.')
			*w++ = *r;
	*w = 0;
	return s;
}

/* The GPU compile: PTX for every cascade, assembled by ptxas for the
** target's compute capabilities, then OUT.ptx, OUT.h and OUT.c (the cubins
** and PTX embedded). With a second target t2 (a bundle), also t2's module,
** compiled from the cascades t2 takes, as OUT.<t2>.ptx and
** OUT.<t2>.cubin: OUT.ptx and its cubins are the first target's alone,
** the same files its own compile writes, so that the bundle's files are
** the same set whatever t2 refused. */
static int compile_gpu(const GpuTarget *t, const GpuTarget *t2, const char *outbase,
		       const Program *p, Diag *d, const char *ptxas_opt, int parts)
{
	char *buf = NULL, *buf2 = NULL;
	size_t n = 0, n2 = 0;
	Arena a;
	arena_init(&a);
	GpuImages im = {0}, im2 = {0};
	im.arena = &a;
	im.target = t->name;
	im.ncubins = t->ncubins;
	im.info = ARENA_ARRAY(&a, GpuKernelInfo, p->cascades.n + 1);
	Program p2 = {{0}, {0}, {0}};
	int *alt_index = ARENA_ARRAY(&a, int, p->cascades.n + 1);
	const char **why = ARENA_ARRAY(&a, const char *, p->cascades.n + 1);
	if (t2) {
		split_program(&a, t2, p, &p2, alt_index, why, parts);
		im2.arena = &a;
		im2.target = t2->name;
		im2.ncubins = t2->ncubins;
		im2.info = ARENA_ARRAY(&a, GpuKernelInfo, p2.cascades.n + 1);
		im.alt = &im2, im.alt_index = alt_index;
	}
	char err[2048];
	int rc = 0;
	const char *px = ptxas_find(ptxas_opt, err, sizeof err);
	if (!px) {
		fprintf(stderr, "attnc: error: %s\n", err);
		rc = EXIT_TOOL;
	}
	/* the cubins come from the tuning's last ptxas run */
	if (!rc)
		rc = emit_ptx_tuned(t, p, d, px, &buf, &n, im.info, im.cubin, 1, parts);
	if (!rc && t2)
		rc = emit_ptx_tuned(t2, &p2, d, px, &buf2, &n2, im2.info, im2.cubin, 1, parts);
	im.ptx = buf, im.ptx_size = n;
	im2.ptx = buf2, im2.ptx_size = n2;
	if (!rc) {
		const char *slash = strrchr(outbase, '/');
		const char *base = slash ? slash + 1 : outbase;
		GpuOut g = {p, &im, arena_printf(&a, "%s.h", base), why, base, t2 != NULL, parts};
		Staged st = {0};
		rc = stage(&st, arena_printf(&a, "%s.ptx", outbase), put_ptx, &g);
		if (!rc)
			rc = stage(&st, arena_printf(&a, "%s.h", outbase), put_h, &g);
		if (!rc)
			rc = stage(&st, arena_printf(&a, "%s.c", outbase), put_c, &g);
		for (int k = 0; k < im.ncubins && !rc; k++)
			rc = stage(&st, arena_printf(&a, "%s.sm%d.cubin", outbase, im.cubin[k].sm),
				   put_blob, &im.cubin[k].code);
		if (t2) {
			const char *id = file_ident(&a, t2->name);
			if (!rc)
				rc = stage(&st, arena_printf(&a, "%s.%s.ptx", outbase, id),
					   put_alt_ptx, &g);
			for (int k = 0; k < im2.ncubins && !rc; k++)
				rc = stage(&st,
					   im2.ncubins == 1
					       ? arena_printf(&a, "%s.%s.cubin", outbase, id)
					       : arena_printf(&a, "%s.%s.sm%d.cubin", outbase, id,
							      im2.cubin[k].sm),
					   put_blob, &im2.cubin[k].code);
		}
		if (!rc)
			rc = commit_staged(&st);
	}
	for (int k = 0; k < GPU_MAX_CUBINS; k++)
		free(im.cubin[k].code.data), free(im2.cubin[k].code.data);
	free(buf), free(buf2);
	arena_free(&a);
	return rc;
}

/* Prints the emitted form to standard output, or writes it whole or not at
** all to path (support/atomic_file.h). */
static int emit_to(const char *path, Emit emit, const Program *p, int f64, const char *target,
		   Diag *diag, const char *ptxas_opt, int parts)
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
		/* options.c lets only a target with code generation get here */
		const GpuTarget *t = gpu_target(target);
		GpuKernelInfo *info = calloc((size_t)p->cascades.n + 1, sizeof *info);
		GpuCubin cubin[GPU_MAX_CUBINS] = {{0}};
		const char *px = ptxas_find(ptxas_opt, err, sizeof err);
		if (!info)
			rc = EXIT_TOOL;
		else
			rc = emit_ptx_tuned(t, p, diag, px, &buf, &n, info, cubin, 0, parts);
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
** which needs no ptxas (a bundle's, the same as its OUT.h). */
static int emit_gpu_header(const char *path, const Program *p, int bundle, int parts)
{
	GpuOut g = {p, NULL, NULL, NULL, NULL, bundle, parts};
	if (!path) {
		put_h(stdout, &g);
		return fflush(stdout) || ferror(stdout) ? EXIT_TOOL : 0;
	}
	Staged st = {0};
	int rc = stage(&st, path, put_h, &g);
	return rc ? rc : commit_staged(&st);
}

/* Whether target t refuses a backward's kernel with dQ's atomic sums (the
** target then has no NAME_bwd_launch_atomic). */
static int no_atomic_launch(const GpuTarget *t, const GradSplit *sp)
{
	Arena scratch;
	arena_init(&scratch);
	int no = gpu_refusal(&scratch, t, sp->fused, 0) != NULL;
	arena_free(&scratch);
	return no;
}

/* --grad: each cascade's backward (compiler/grad.h). --emit=cascade gets
** the backward cascades alone, --explain the derivation's notes (printed
** here), the other forms each forward followed by its backward. For GPU
** target t (NULL: none), the pieces of its launches; the launch with
** atomics only where t takes its fused kernel (sm_80's: a bundle runs that
** image on Hopper too). NULL after a diagnostic. */
/* --explain --grad with GPU target t: the kernels grad_split cuts the
** backward b of c into (grad_split_explain), or the reason the GPU refuses
** it, taken from the diagnostic it would give: the explanation itself is
** not an error. */
static void explain_gpu_cut(Arena *a, Diag *d, const Cascade *c, const Cascade *b,
			    const GpuTarget *t, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	Diag q = *d;
	q.errors = q.warnings = q.suppressed = 0;
	q.out = open_memstream(&buf, &len);
	if (!q.out)
		return;
	GradSplit s;
	int refused = grad_split(a, &q, c, b, &s);
	fclose(q.out);
	if (refused) {
		const char *why = buf ? strstr(buf, "error: ") : NULL;
		int n = why ? (int)strcspn(why + 7, "\n") : 0;
		fprintf(out, "  on the GPU: refused: %.*s\n", n, why ? why + 7 : "");
	} else {
		if (s.fused && no_atomic_launch(t, &s))
			s.fused = s.post = NULL;
		grad_split_explain(out, &s);
	}
	free(buf);
}

static Program *with_backward(Arena *a, Diag *d, const Program *p, Emit emit, FILE *out,
			      const GpuTarget *t, const GpuTarget *explain_t)
{
	int gpu = t != NULL;
	Program *r = ARENA_NEW(a, Program);
	int failed = 0;
	for (int i = 0; i < p->cascades.n && !diag_too_many(d); i++) {
		Cascade *c = p->cascades.v[i];
		PtrVec notes = {0};
		Cascade *b = grad_derive(a, d, c, 1, &notes);
		failed |= !b;
		if (failed)
			continue; /* the next block's diagnostics still come */
		if (emit != EMIT_CASCADE)
			ptrvec_push(a, &r->cascades, c);
		if (gpu) {
			GradSplit *sp = ARENA_NEW(a, GradSplit), s;
			failed |= grad_split(a, d, c, b, sp);
			if (!failed && sp->fused && no_atomic_launch(t, sp))
				sp->fused = sp->post = NULL, sp->acc.n = 0;
			s = *sp;
			if (!failed)
				ptrvec_push(a, &r->grads, sp);
			for (int k = 0; !failed && k < s.nstats; k++)
				ptrvec_push(a, &r->cascades, s.stats[k]);
			if (!failed && s.pre)
				ptrvec_push(a, &r->cascades, s.pre);
			if (!failed && s.dq)
				ptrvec_push(a, &r->cascades, s.dq);
			for (int k = 0; !failed && k < s.ndkv; k++)
				ptrvec_push(a, &r->cascades, s.dkv[k]);
			if (!failed && s.fused) {
				ptrvec_push(a, &r->cascades, s.fused);
				ptrvec_push(a, &r->cascades, s.post);
			}
			for (int k = 0; !failed && k < s.ngrp; k++)
				ptrvec_push(a, &r->cascades, s.grp[k]);
			continue;
		}
		ptrvec_push(a, &r->cascades, b);
		if (emit != EMIT_EXPLAIN)
			continue;
		fprintf(out, "%s%s: the backward of %s\n", i ? "\n" : "", b->name, c->name);
		for (int k = 0; k < b->tensors.n; k++) {
			const Tensor *x = b->tensors.v[k];
			if (x->kind != TK_TEMP)
				fprintf(out, "  %s %s\n", x->kind == TK_IN ? "in " : "out",
					x->name);
		}
		for (int k = 0; k < notes.n; k++)
			fprintf(out, "  %s\n", (const char *)notes.v[k]);
		if (explain_t)
			explain_gpu_cut(a, d, c, b, explain_t, out);
	}
	return failed ? NULL : r;
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
	ptxas_cache_enable(!o.no_cache);
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
	if (p && o.grad) {
		int gpu = gpu_code ||
			  (o.emit == EMIT_HEADER && o.target_given && strcmp(o.target, "cpu"));
		int explain_gpu = o.emit == EMIT_EXPLAIN && strcmp(o.target, "cpu");
		p = with_backward(&arena, &d, p, o.emit, stdout, gpu ? gpu_target(o.target) : NULL,
				  explain_gpu ? gpu_target(o.target) : NULL);
		if (o.emit == EMIT_EXPLAIN)
			o.emit = EMIT_NONE, out = NULL; /* the notes were the output */
	}
	/* a forward of several passes runs as one kernel a pass */
	if (p && (gpu_code || (o.emit == EMIT_HEADER && o.target_given && strcmp(o.target, "cpu"))))
		p = pass_split_program(&arena, &d, p, gpu_target(o.target)->name);
	if (f < 0 || !p)
		rc = EXIT_INPUT;
	else if (gpu_code && p->cascades.n == 0) {
		fprintf(stderr,
			"attnc: error: %s defines no attention block: no kernel to compile\n",
			o.file);
		rc = EXIT_INPUT;
	} else if (o.emit == EMIT_HEADER && o.target_given && strcmp(o.target, "cpu"))
		rc = emit_gpu_header(out, p, o.also != NULL, o.parts);
	else if (o.emit == EMIT_C && out)
		rc = emit_c_pair(out, p, o.f64);
	else if (o.emit != EMIT_NONE)
		rc = emit_to(out, o.emit, p, o.f64, o.target, &d, o.ptxas, o.parts);
	else if (out)
		/* options.c lets only a target with code generation get here */
		rc = compile_gpu(gpu_target(o.target), o.also ? gpu_target(o.also) : NULL, out, p,
				 &d, o.ptxas, o.parts);
	if (d.suppressed)
		fprintf(stderr, "attnc: %d more errors not shown (--max-errors=%d)\n", d.suppressed,
			d.max_errors);
	if (d.errors)
		fprintf(stderr, "%d error%s generated.\n", d.errors, d.errors == 1 ? "" : "s");
	arena_free(&arena);
	return rc;
}
