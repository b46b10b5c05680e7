/*
** support/atomic_file.c: whole-or-nothing output files (see atomic_file.h).
*/
#define _XOPEN_SOURCE 700 /* realpath */
#include "atomic_file.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process's umask, read without changing it for longer than a call. */
static mode_t current_umask(void)
{
	mode_t m = umask(022);
	umask(m);
	return m;
}

/* What the destination is decides the way to write it; a link is followed
** so that replacing the file keeps the user's link. */
static int classify(AtomicFile *f, const char *path)
{
	struct stat st;
	if (lstat(path, &st)) {
		if (errno != ENOENT)
			return errno;
		return (f->path = strdup(path)) ? 0 : ENOMEM;
	}
	if (S_ISLNK(st.st_mode)) {
		if (stat(path, &st))
			return errno == ENOENT ? ATOMIC_EDANGLING : errno;
		if (S_ISREG(st.st_mode))
			return (f->path = realpath(path, NULL)) ? 0 : errno;
	}
	if (S_ISDIR(st.st_mode))
		return ATOMIC_EDIR;
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		f->direct = 1;
	else if (!S_ISREG(st.st_mode))
		return ATOMIC_ESPECIAL;
	return (f->path = strdup(path)) ? 0 : ENOMEM;
}

/* The temporary lives in the destination's directory so that the final
** rename never crosses file systems. */
int atomic_open(AtomicFile *f, const char *path)
{
	memset(f, 0, sizeof *f);
	int e = classify(f, path);
	if (e) {
		free(f->path), f->path = NULL;
		return e;
	}
	if (f->direct) {
		if (!(f->fp = fopen(f->path, "wb"))) {
			e = errno;
			free(f->path), f->path = NULL;
		}
		return e;
	}
	size_t n = strlen(f->path) + 16;
	if (!(f->tmp = malloc(n))) {
		free(f->path), f->path = NULL;
		return ENOMEM;
	}
	snprintf(f->tmp, n, "%s.tmpXXXXXX", f->path);
	int fd = mkstemp(f->tmp);
	if (fd < 0 || !(f->fp = fdopen(fd, "wb"))) {
		e = errno ? errno : EIO;
		if (fd >= 0)
			close(fd), unlink(f->tmp);
		free(f->tmp), free(f->path);
		f->tmp = f->path = NULL;
		return e;
	}
	(void)fchmod(fd, 0666 & ~current_umask());
	return 0;
}

/* fclose reports late write errors (a full disk often shows only there), so
** it is checked as well as fflush and ferror. */
static int finish_writing(AtomicFile *f)
{
	int e = 0;
	errno = 0;
	if (fflush(f->fp) || ferror(f->fp))
		e = errno ? errno : EIO;
	if (fclose(f->fp) && !e)
		e = errno ? errno : EIO;
	f->fp = NULL;
	return e;
}

/* Frees what open allocated; the temporary, if any, is gone by then. */
static void release(AtomicFile *f)
{
	free(f->tmp), free(f->path);
	f->tmp = f->path = NULL;
}

int atomic_commit(AtomicFile *f)
{
	return atomic_commit_all(f, 1, NULL);
}

/* Writing every file before renaming any makes a failure (a full disk)
** leave all destinations as they were; only a rename failing part-way, which
** needs the directory to change under us, can leave a mix. */
int atomic_commit_all(AtomicFile *f, int n, int *failed)
{
	int e = 0, at = 0;
	for (int i = 0; i < n; i++) {
		int w = finish_writing(&f[i]);
		if (w && !e)
			e = w, at = i;
	}
	for (int i = 0; i < n; i++) {
		if (!f[i].tmp)
			continue;
		if (!e && rename(f[i].tmp, f[i].path))
			e = errno, at = i;
		if (e)
			unlink(f[i].tmp);
	}
	for (int i = 0; i < n; i++)
		release(&f[i]);
	if (failed)
		*failed = at;
	return e;
}

/* For a writer that failed part-way: nothing of it may stay behind. */
void atomic_abort(AtomicFile *f)
{
	if (f->fp)
		fclose(f->fp);
	f->fp = NULL;
	if (f->tmp)
		unlink(f->tmp);
	release(f);
}

const char *atomic_strerror(int code)
{
	switch (code) {
	case ATOMIC_EDIR: return "it is a directory";
	case ATOMIC_ESPECIAL:
		return "it is not a regular file (a block device or socket is never replaced)";
	case ATOMIC_EDANGLING: return "it is a symbolic link to nothing";
	default: return strerror(code);
	}
}
