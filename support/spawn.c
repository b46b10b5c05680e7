/*
** support/spawn.c: external tools with logged output (see spawn.h).
*/
#define _POSIX_C_SOURCE 200809L
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* access() alone accepts directories, which execve then refuses. */
int spawn_is_program(const char *path)
{
	struct stat st;
	return access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Done up front, before any child exists, so the caller can say which tool
** is missing and where it looked. */
int spawn_find_program(const char *name, char *out, size_t n)
{
	if (strchr(name, '/')) {
		if (strlen(name) >= n || !spawn_is_program(name))
			return -1;
		strcpy(out, name);
		return 0;
	}
	const char *path = getenv("PATH");
	path = path ? path : "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len + strlen(name) + 2 < n) {
			/* an empty entry means the current directory */
			snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "./", name);
			if (spawn_is_program(out))
				return 0;
		}
		if (!end)
			return -1;
		p = end;
	}
}

/* posix_spawn rather than fork + exec: no copy of a large compiler process,
** and every failure to start comes back as an errno here. */
int spawn_logged(const char *path, char *const argv[], const char *log, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int e = posix_spawn_file_actions_init(&fa);
	if (e)
		return e;
	e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!e)
		e = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC,
						     0600);
	if (!e)
		e = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (!e)
		e = posix_spawn(pid, path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return e;
}

/* A signal (SIGCHLD from another job, a terminal resize) must not be
** mistaken for the tool's failure. */
int spawn_wait(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return errno;
	return 0;
}
