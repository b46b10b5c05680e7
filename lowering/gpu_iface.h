/*
** lowering/gpu_iface.h: the generated C interface of GPU kernels (x.h, x.c).
*/
#ifndef ATTN_GPU_IFACE_H
#define ATTN_GPU_IFACE_H

#include <stdio.h>

#include "../compiler/plan.h"

typedef struct Blob {
	unsigned char *data;
	size_t size;
} Blob;

typedef struct GpuImages {
	Arena *arena;
	const char *ptx;
	size_t ptx_size;
	Blob cubin80, cubin90; /* the whole module, assembled by ptxas */
	struct Sm80Info *info; /* per cascade: shared memory, rows per CTA, packing */
} GpuImages;

void gpu_iface_header(FILE *out, const Program *prog);
void gpu_iface_source(FILE *out, const Program *prog, const GpuImages *im, const char *header_name);

#endif
