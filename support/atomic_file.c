/*
** support/atomic_file.c: whole-or-nothing output files (see atomic_file.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary lives in the destination's directory so that the final
** rename never crosses file systems. */
int atomic_open(AtomicFile *f, const char *path, unsigned mode)
{
	size_t n = strlen(path) + 16;
	memset(f, 0, sizeof *f);
	f->path = path;
	if (!(f->tmp = malloc(n)))
		return ENOMEM;
	snprintf(f->tmp, n, "%s.tmpXXXXXX", path);
	int fd = mkstemp(f->tmp);
	if (fd < 0 || !(f->fp = fdopen(fd, "wb"))) {
		int e = errno ? errno : EIO;
		if (fd >= 0)
			close(fd), unlink(f->tmp);
		free(f->tmp), f->tmp = NULL;
		return e;
	}
	if (mode)
		(void)fchmod(fd, (mode_t)mode);
	return 0;
}

/* fclose reports late write errors (a full disk often shows only there), so
** it is checked before the rename as well as fflush and ferror. */
int atomic_commit(AtomicFile *f)
{
	int e = 0;
	errno = 0;
	if (fflush(f->fp) || ferror(f->fp))
		e = errno ? errno : EIO;
	if (fclose(f->fp) && !e)
		e = errno ? errno : EIO;
	f->fp = NULL;
	if (!e && rename(f->tmp, f->path))
		e = errno;
	if (e)
		unlink(f->tmp);
	free(f->tmp), f->tmp = NULL;
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
	free(f->tmp), f->tmp = NULL;
}
