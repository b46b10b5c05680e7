/*
** support/atomic_file.h: files written whole or not at all. A writer streams
** into a temporary beside the destination and renames it into place only
** when every write succeeded, so readers see the old file or the complete
** new one, and a failed run leaves no partial output behind.
**
** What stands at the destination decides how it is written:
**   nothing, or a regular file   a temporary renamed over it
**   a symbolic link              the same at the file it points to (the
**                                link stays a link)
**   a character device or FIFO   written through (-o /dev/null, a pipe):
**                                there is nothing to replace
**   a directory, a block device, refused with ATOMIC_EDIR / ATOMIC_ESPECIAL
**   a socket, a dangling link    or ATOMIC_EDANGLING
** New files get mode 0666 less the umask, as with any tool that creates one.
*/
#ifndef ATTN_ATOMIC_FILE_H
#define ATTN_ATOMIC_FILE_H

#include <stdio.h>

enum {
	ATOMIC_EDIR = -1,     /* the destination is a directory */
	ATOMIC_ESPECIAL = -2, /* a block device or socket: never replaced */
	ATOMIC_EDANGLING = -3 /* a symbolic link to nothing */
};

typedef struct AtomicFile {
	FILE *fp;   /* write here between open and commit */
	char *path; /* the destination, links resolved (malloc'd) */
	char *tmp;  /* the temporary beside it (malloc'd), NULL when direct */
	int direct; /* written through: a character device or FIFO */
} AtomicFile;

/* Opens f->fp for path (see above). Returns 0, or an errno or ATOMIC_E*
** code with nothing left behind. */
int atomic_open(AtomicFile *f, const char *path);
/* Flushes and closes f->fp and renames the temporary over the destination.
** Returns 0, or an errno (EIO for a failed write without one) after
** removing the temporary. */
int atomic_commit(AtomicFile *f);
/* Commits n files together: every one is flushed and closed before any is
** renamed, and none is renamed unless all were written; on failure every
** temporary is removed. Returns 0 or the first errno, with the index of the
** file it concerns in *failed (when not NULL). */
int atomic_commit_all(AtomicFile *f, int n, int *failed);
/* Closes f->fp and removes the temporary: the destination is untouched. */
void atomic_abort(AtomicFile *f);
/* The message for a code of atomic_open or atomic_commit. */
const char *atomic_strerror(int code);

#endif
