/*
** cli/ptxas.h: running NVIDIA's assembler on generated PTX.
*/
#ifndef ATTN_PTXAS_H
#define ATTN_PTXAS_H

#include <stddef.h>
#include <sys/types.h>

/* The ptxas to use: `explicit` (--ptxas) if given, else $CUDA_PATH/bin,
** /usr/local/cuda/bin, then $PATH; NULL with a message in err if none. */
const char *ptxas_find(const char *explicit_path, char *err, size_t errlen);
/* Assembles PTX text for arch (e.g. "sm_80") into a malloc'd cubin; on
** failure returns nonzero with ptxas's own first error lines in err. */
/* The same, also reporting per entry function funcs[i] the spill-store
** bytes of ptxas -v in spills[i] (-1 when not reported). */
int ptxas_assemble_v(const char *ptxas, const char *ptx, size_t n, const char *arch,
		     unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen,
		     const char *const *funcs, long *spills, int nfuncs);
int ptxas_assemble(const char *ptxas, const char *ptx, size_t n, const char *arch,
		   unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen);
/* The same in two halves, so that several ptxas runs overlap: start writes
** the PTX and spawns ptxas; finish waits for it and reads the cubin (and
** the spills), and always cleans up. A job whose start failed (err set)
** needs no finish. */
typedef struct PtxasJob {
	char dir[4096], in[4200], out[4200], log[4200];
	pid_t pid;
	int running;
	char cache[4096]; /* the cache entry's path without suffix, or "" */
	int hit;          /* the entry was there: ptxas did not run */
} PtxasJob;
/* The cache of ptxas's results (on by default): entries under
** $XDG_CACHE_HOME/attnc/ptxas (else ~/.cache/attnc/ptxas), keyed by the
** SHA-256 of the PTX, the target, ptxas's options and the ptxas binary
** (its path, size, modification time and inode), so that a repeat compile
** of an unchanged kernel runs no ptxas. Off: every job runs ptxas. */
void ptxas_cache_enable(int on);
int ptxas_start(PtxasJob *j, const char *ptxas, const char *ptx, size_t n, const char *arch,
		char *err, size_t errlen);
int ptxas_finish(PtxasJob *j, unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen,
		 const char *const *funcs, long *spills, int nfuncs);
/* Stops a started job and cleans up (its result is not wanted). */
void ptxas_cancel(PtxasJob *j);

#endif
