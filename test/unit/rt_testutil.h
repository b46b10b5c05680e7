/*
** test/unit/rt_testutil.h: shared by the rt_* unit tests of libattnrt: check
** macros (exact string comparison prints both sides), and running this same
** test binary as a child process with a changed environment, capturing its
** stderr, to see what a program really prints.
*/
#ifndef ATTN_RT_TESTUTIL_H
#define ATTN_RT_TESTUTIL_H

#define _POSIX_C_SOURCE 200809L

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnrt.h"

extern char **environ;

static int rt_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			rt_failures++;                                                             \
		}                                                                                  \
	} while (0)

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *rt_g = (got), *rt_w = (want);                                          \
		if (!rt_g || strcmp(rt_g, rt_w) != 0) {                                            \
			fprintf(stderr, "%s:%d: %s\n  got:  %s\n  want: %s\n", __FILE__, __LINE__, \
				#got, rt_g ? rt_g : "(null)", rt_w);                               \
			rt_failures++;                                                             \
		}                                                                                  \
	} while (0)

/* rc must be code and this thread's message exactly msg. */
#define CHECK_FAIL(rc, code, msg)                                                                  \
	do {                                                                                       \
		int rt_rc = (rc);                                                                  \
		if (rt_rc != (code)) {                                                             \
			fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__,     \
				__LINE__, #rc, attnrt_error_name(rt_rc), #code,                    \
				attnrt_last_error());                                              \
			rt_failures++;                                                             \
		}                                                                                  \
		CHECK_STR(attnrt_last_error(), msg);                                               \
	} while (0)

/* The summary line, and the exit status for ctest. */
static inline int rt_report(const char *name)
{
	if (rt_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name, rt_failures);
	else
		printf("%s: all checks passed\n", name);
	return rt_failures ? 1 : 0;
}

/* Runs /proc/self/exe with args (argv[1..]) and NAME=value (value NULL:
** unset) in the environment; returns its exit status (-1 if it did not exit)
** and its stderr, malloc'd, in *err. */
static inline int rt_run_self(const char *arg, const char *name, const char *value, char **err)
{
	size_t n = 0, len = strlen(name);
	while (environ[n])
		n++;
	char **env = calloc(n + 2, sizeof *env);
	char *setting = NULL;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], name, len) != 0 || environ[i][len] != '=')
			env[m++] = environ[i];
	if (value) {
		setting = malloc(len + strlen(value) + 2);
		sprintf(setting, "%s=%s", name, value);
		env[m++] = setting;
	}
	env[m] = NULL;
	int fds[2];
	*err = NULL;
	if (pipe(fds) != 0) {
		free(env);
		free(setting);
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	char *argv[] = {(char *)"self", (char *)arg, NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	free(env);
	free(setting);
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap);
	ssize_t got;
	while ((got = read(fds[0], buf + used, cap - used - 1)) > 0) {
		used += (size_t)got;
		if (used + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	buf[used] = 0;
	close(fds[0]);
	*err = buf;
	if (rc != 0)
		return -1;
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#endif
