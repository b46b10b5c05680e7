/*
** test/unit/iface_testutil.h: what the tests of the generated GPU interface
** (gpu_iface.c, gpu_iface_parts.c, gpu_iface_bwd.c) share: checks, text
** expectations, files, a module's images, and the compiler and harness runs. Static, one copy per test.
*/
#ifndef ATTN_IFACE_TESTUTIL_H
#define ATTN_IFACE_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../../compiler/cascade.h"
#include "../../lowering/gpu/iface.h"
#include "../../support/spawn.h"

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* The generated text (what: which file) must hold want; says which when
** it does not. */
__attribute__((unused)) static const char *expect_text(const char *what, const char *text,
						       const char *want)
{
	const char *at = strstr(text, want);
	if (!at) {
		fprintf(stderr, "%s lacks: %s\n", what, want);
		failures++;
	}
	return at;
}

/* The index of the tensor called name in c, or -1. */
__attribute__((unused)) static int tensor_index(const Cascade *c, const char *name)
{
	const Tensor *t = cascade_tensor(c, name);
	return t ? t->id : -1;
}

/* The whole file at path, NUL-terminated (NULL: unreadable). */
__attribute__((unused)) static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, got;
	char *s = malloc(cap);
	while (s && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap)
			s = realloc(s, cap *= 2);
	}
	fclose(f);
	if (s)
		s[n] = 0;
	return s;
}

/* Runs argv (argv[0] a path) with its output into log; 0 when it exits 0,
** else prints the log. */
__attribute__((unused)) static int run(char *const argv[], const char *log)
{
	pid_t pid;
	int status = 0, e = spawn_logged(argv[0], argv, log, &pid);
	if (!e)
		e = spawn_wait(pid, &status);
	if (!e && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "%s failed (%s):\n", argv[0], e ? strerror(e) : "nonzero exit");
	char *out = slurp(log);
	fprintf(stderr, "%s\n", out ? out : "(no log)");
	free(out);
	return -1;
}

/* argv of fixed then the space-separated words of flags (copied), NULL
** last; free both. */
__attribute__((unused)) static char **command(char *const *fixed, int nfixed, const char *flags,
					      char **copy)
{
	*copy = strdup(flags);
	char **argv = calloc((size_t)nfixed + strlen(flags) / 2 + 2, sizeof *argv);
	int n = 0;
	for (int i = 0; i < nfixed; i++)
		argv[n++] = fixed[i];
	for (char *w = strtok(*copy, " "); w; w = strtok(NULL, " "))
		argv[n++] = w;
	argv[n] = NULL;
	return argv;
}

/* *im as one module of target: its PTX text (NUL-terminated), one cubin
** of n bytes for compute capability sm, and its kernels' info; the
** emitter's allocations in a. */
__attribute__((unused)) static void one_image(GpuImages *im, Arena *a, const char *target,
					      const char *ptx, int sm, const unsigned char *cubin,
					      size_t n, GpuKernelInfo *info)
{
	*im = (GpuImages){0};
	im->arena = a;
	im->target = target;
	im->ptx = ptx;
	im->ptx_size = strlen(ptx);
	im->ncubins = 1;
	im->cubin[0] = (GpuCubin){sm, {(unsigned char *)cubin, n}};
	im->info = info;
}

#endif
