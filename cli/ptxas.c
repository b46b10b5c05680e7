/*
** cli/ptxas.c: assembling PTX with ptxas, in a private temp directory;
** ptxas's own messages are passed on (first lines) when it fails.
*/
#define _POSIX_C_SOURCE 200809L
#include "ptxas.h"
#include "../support/spawn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *ptxas_find(const char *explicit_path, char *err, size_t errlen)
{
	static char buf[4096];
	if (explicit_path) {
		if (spawn_is_program(explicit_path))
			return explicit_path;
		snprintf(err, errlen, "ptxas '%s' (from --ptxas) is not an executable",
			 explicit_path);
		return NULL;
	}
	const char *cp = getenv("CUDA_PATH");
	if (cp) {
		snprintf(buf, sizeof buf, "%s/bin/ptxas", cp);
		if (spawn_is_program(buf))
			return buf;
	}
	if (spawn_is_program("/usr/local/cuda/bin/ptxas"))
		return "/usr/local/cuda/bin/ptxas";
	if (!spawn_find_program("ptxas", buf, sizeof buf))
		return buf;
	snprintf(err, errlen,
		 "ptxas not found (looked in --ptxas, $CUDA_PATH/bin, /usr/local/cuda/bin and "
		 "$PATH); install the CUDA toolkit or use --emit=ptx");
	return NULL;
}

static int slurp(const char *path, unsigned char **out, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t cap = 1 << 16, len = 0, got;
	unsigned char *b = malloc(cap);
	while (b && (got = fread(b + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap) {
			unsigned char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb, cap *= 2;
		}
	}
	fclose(f);
	if (!b)
		return -1;
	*out = b, *n = len;
	return 0;
}

/* Spill-store bytes ptxas -v reported for entry `func`, from its log:
** "Compiling entry function 'F'" ... "N bytes spill stores". */
static long spill_of(const char *log, const char *func)
{
	char key[512];
	snprintf(key, sizeof key, "entry function '%s'", func);
	const char *p = strstr(log, key);
	if (!p)
		return -1;
	const char *q = strstr(p, "bytes spill stores");
	const char *next = strstr(p + 1, "entry function '");
	if (!q || (next && next < q))
		return 0;
	while (q > p && q[-1] == ' ')
		q--;
	while (q > p && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return strtol(q, NULL, 10);
}

/* Writes the PTX into a private directory and starts ptxas on it; the
** job is finished (waited for, read, cleaned up) by ptxas_finish. */
int ptxas_start(PtxasJob *j, const char *ptxas, const char *ptx, size_t n, const char *arch,
		char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	memset(j, 0, sizeof *j);
	snprintf(j->dir, sizeof j->dir, "%s/attnc-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(j->dir)) {
		snprintf(err, errlen, "cannot create a temporary directory for ptxas");
		return 1;
	}
	snprintf(j->in, sizeof j->in, "%s/k.ptx", j->dir);
	snprintf(j->out, sizeof j->out, "%s/k.cubin", j->dir);
	snprintf(j->log, sizeof j->log, "%s/log", j->dir);
	FILE *f = fopen(j->in, "wb");
	if (!f || fwrite(ptx, 1, n, f) != n || fclose(f)) {
		if (f)
			fclose(f);
		snprintf(err, errlen, "cannot write PTX for ptxas");
		unlink(j->in), rmdir(j->dir);
		return 1;
	}
	char archopt[64];
	snprintf(archopt, sizeof archopt, "-arch=%s", arch);
	char *argv[] = {(char *)ptxas, archopt, "-O3", "-v", j->in, "-o", j->out, NULL};
	j->running = spawn_logged(ptxas, argv, j->log, &j->pid) == 0;
	return 0;
}

int ptxas_finish(PtxasJob *j, unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen,
		 const char *const *funcs, long *spills, int nfuncs)
{
	int rc = 1, st = 0;
	if (j->running && !spawn_wait(j->pid, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	    slurp(j->out, cubin, cubin_size) == 0) {
		rc = 0;
		unsigned char *l = NULL;
		size_t ln = 0;
		for (int i = 0; i < nfuncs; i++)
			spills[i] = -1;
		if (nfuncs && slurp(j->log, &l, &ln) == 0) {
			char *text = realloc(l, ln + 1);
			if (text) {
				text[ln] = 0;
				for (int i = 0; i < nfuncs; i++)
					spills[i] = spill_of(text, funcs[i]);
				l = (unsigned char *)text;
			}
			free(l);
		}
	} else {
		unsigned char *l = NULL;
		size_t ln = 0;
		if (slurp(j->log, &l, &ln) == 0) {
			size_t m = ln < errlen - 1 ? ln : errlen - 1;
			memcpy(err, l, m);
			err[m] = 0;
			for (char *c = err; *c; c++)
				if (*c == '\n')
					*c = ' ';
			free(l);
		} else {
			snprintf(err, errlen, "ptxas failed");
		}
	}
	j->running = 0;
	unlink(j->in), unlink(j->out), unlink(j->log), rmdir(j->dir);
	return rc;
}

void ptxas_cancel(PtxasJob *j)
{
	char err[16];
	unsigned char *cubin = NULL;
	size_t n = 0;
	if (j->running)
		kill(j->pid, SIGTERM);
	ptxas_finish(j, &cubin, &n, err, sizeof err, NULL, NULL, 0);
	free(cubin);
}

int ptxas_assemble(const char *ptxas, const char *ptx, size_t n, const char *arch,
		   unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen)
{
	return ptxas_assemble_v(ptxas, ptx, n, arch, cubin, cubin_size, err, errlen, NULL, NULL, 0);
}

int ptxas_assemble_v(const char *ptxas, const char *ptx, size_t n, const char *arch,
		     unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen,
		     const char *const *funcs, long *spills, int nfuncs)
{
	PtxasJob j;
	if (ptxas_start(&j, ptxas, ptx, n, arch, err, errlen))
		return 1;
	return ptxas_finish(&j, cubin, cubin_size, err, errlen, funcs, spills, nfuncs);
}
