/*
** support/atomic_file.h: files written whole or not at all. A writer streams
** into a temporary beside the destination and renames it into place only
** when every write succeeded, so readers see the old file or the complete
** new one, and a failed run leaves no partial output behind.
*/
#ifndef ATTN_ATOMIC_FILE_H
#define ATTN_ATOMIC_FILE_H

#include <stdio.h>

typedef struct AtomicFile {
	FILE *fp;         /* write here between open and commit */
	const char *path; /* the destination */
	char *tmp;        /* the temporary beside it (malloc'd) */
} AtomicFile;

/* Creates the temporary for path (mode 0: mkstemp's 0600; else that mode)
** and opens f->fp on it. Returns 0, or an errno with nothing left behind. */
int atomic_open(AtomicFile *f, const char *path, unsigned mode);
/* Flushes and closes f->fp and renames the temporary over the destination.
** Returns 0, or an errno (EIO for a failed write without one) after
** removing the temporary. */
int atomic_commit(AtomicFile *f);
/* Closes f->fp and removes the temporary: the destination is untouched. */
void atomic_abort(AtomicFile *f);

#endif
