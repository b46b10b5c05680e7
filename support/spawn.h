/*
** support/spawn.h: running the external tools attnc drives (ptxas, the
** system C compiler) with their output captured in a log file, and finding
** them on $PATH the way execvp would, so that "not found" is a clear message
** rather than a failed child.
*/
#ifndef ATTN_SPAWN_H
#define ATTN_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Whether path names an executable regular file. */
int spawn_is_program(const char *path);
/* execvp's lookup of name: a name with a '/' is taken as it is, else each
** $PATH entry in turn (an empty entry is the current directory). Writes the
** program's path into out (size n); 0 when found, -1 when not. */
int spawn_find_program(const char *name, char *out, size_t n);
/* Starts the program at path with argv, standard input from /dev/null and
** standard output and error into log (created 0600). Returns 0, or an errno
** when it could not start. */
int spawn_logged(const char *path, char *const argv[], const char *log, pid_t *pid);
/* Waits for pid, retrying when a signal interrupts; *status is waitpid's.
** Returns 0 or an errno. */
int spawn_wait(pid_t pid, int *status);

#endif
