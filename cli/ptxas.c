/*
** cli/ptxas.c: assembling PTX with ptxas, in a private temp directory;
** ptxas's own messages are passed on (first lines) when it fails.
*/
#define _XOPEN_SOURCE 700 /* realpath */
#include "ptxas.h"
#include "../support/atomic_file.h"
#include "../support/sha256.h"
#include "../support/spawn.h"

#include <errno.h>
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

static int cache_on = 1;

void ptxas_cache_enable(int on)
{
	cache_on = on;
}

/* mkdir -p with private modes: a failure only means no cache. */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = 0;
		int bad = mkdir(path, 0700) && errno != EEXIST;
		*p = c;
		if (bad)
			return -1;
		if (!c)
			return 0;
	}
}

/* The cache entry's path for this run of ptxas, without suffix, or "" when
** there is no cache (off, no home, a directory that cannot be made). The
** key covers everything that decides ptxas's output. */
static void cache_entry(PtxasJob *j, const char *ptxas, const char *ptx, size_t n, const char *arch)
{
	char dir[3900], *real = realpath(ptxas, NULL);
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct stat st;
	j->cache[0] = 0;
	if (!cache_on || !real || stat(real, &st)) {
		free(real);
		return;
	}
	if (xdg && *xdg == '/')
		snprintf(dir, sizeof dir, "%s/attnc/ptxas", xdg);
	else if (home && *home == '/')
		snprintf(dir, sizeof dir, "%s/.cache/attnc/ptxas", home);
	else
		dir[0] = 0;
	if (!dir[0] || strlen(dir) > 3800 || make_dirs(dir)) {
		free(real);
		return;
	}
	char id[4400], hex[65];
	snprintf(id, sizeof id, "attnc ptxas cache 1\n%s\n%lld %lld.%09ld %llu\n%s\n-O3 -v\n", real,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
		 (unsigned long long)st.st_ino, arch);
	free(real);
	Sha256 h;
	sha256_init(&h);
	sha256_update(&h, id, strlen(id));
	sha256_update(&h, ptx, n);
	sha256_hex(&h, hex);
	snprintf(j->cache, sizeof j->cache, "%s/%s", dir, hex);
}

/* A cache entry is its cubin and ptxas's log (the spill report): the log
** is written first, so an entry with a cubin is whole. */
static int cache_has(const PtxasJob *j)
{
	char c[4300], l[4300];
	snprintf(c, sizeof c, "%s.cubin", j->cache);
	snprintf(l, sizeof l, "%s.log", j->cache);
	return access(c, R_OK) == 0 && access(l, R_OK) == 0;
}

/* Copies a finished job's files into its cache entry, whole or not at all. */
static void cache_store(const PtxasJob *j)
{
	const char *from[2] = {j->log, j->out}, *suffix[2] = {"log", "cubin"};
	for (int k = 0; k < 2; k++) {
		unsigned char *d = NULL;
		size_t n = 0;
		char to[4300];
		snprintf(to, sizeof to, "%s.%s", j->cache, suffix[k]);
		AtomicFile af;
		if (slurp(from[k], &d, &n) || atomic_open(&af, to)) {
			free(d);
			return;
		}
		if (fwrite(d, 1, n, af.fp) != n)
			atomic_abort(&af);
		else
			atomic_commit(&af);
		free(d);
	}
}

/* Writes the PTX into a private directory and starts ptxas on it; the
** job is finished (waited for, read, cleaned up) by ptxas_finish. */
int ptxas_start(PtxasJob *j, const char *ptxas, const char *ptx, size_t n, const char *arch,
		char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	memset(j, 0, sizeof *j);
	cache_entry(j, ptxas, ptx, n, arch);
	if (j->cache[0] && cache_has(j)) {
		j->hit = 1;
		snprintf(j->out, sizeof j->out, "%s.cubin", j->cache);
		snprintf(j->log, sizeof j->log, "%s.log", j->cache);
		return 0;
	}
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
	int ran = j->running && !spawn_wait(j->pid, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if ((j->hit || ran) && slurp(j->out, cubin, cubin_size) == 0) {
		rc = 0;
		if (ran && j->cache[0])
			cache_store(j);
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
	if (!j->hit)
		unlink(j->in), unlink(j->out), unlink(j->log), rmdir(j->dir);
	j->hit = 0;
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
