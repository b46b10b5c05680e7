/*
** compiler/ptxas.h: running NVIDIA's assembler on generated PTX.
*/
#ifndef ATTN_PTXAS_H
#define ATTN_PTXAS_H

#include <stddef.h>

/* The ptxas to use: `explicit` (--ptxas) if given, else $CUDA_PATH/bin,
** /usr/local/cuda/bin, then $PATH; NULL with a message in err if none. */
const char *ptxas_find(const char *explicit_path, char *err, size_t errlen);
/* Assembles PTX text for arch (e.g. "sm_80") into a malloc'd cubin; on
** failure returns nonzero with ptxas's own first error lines in err. */
int ptxas_assemble(const char *ptxas, const char *ptx, size_t n, const char *arch,
		   unsigned char **cubin, size_t *cubin_size, char *err, size_t errlen);

#endif
