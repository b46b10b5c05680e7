/*
** lowering/gpu/iface.h: the generated C interface of GPU kernels (x.h,
** x.c): what the driver hands over (the PTX, the machine code per compute
** capability, what each kernel needs at launch) and the two writers.
*/
#ifndef ATTN_GPU_IFACE_H
#define ATTN_GPU_IFACE_H

#include <stdio.h>

#include "target.h"

typedef struct Blob {
	unsigned char *data;
	size_t size;
} Blob;

/* The whole module assembled by ptxas for one compute capability. */
typedef struct GpuCubin {
	int sm; /* compute capability times ten */
	Blob code;
} GpuCubin;

typedef struct GpuImages {
	Arena *arena;
	const char *target; /* the plan's target (GpuTarget.name) */
	const char *ptx;
	size_t ptx_size;
	int ncubins;
	GpuCubin cubin[GPU_MAX_CUBINS]; /* in the order of GpuTarget.cubin_sms */
	GpuKernelInfo *info;            /* per cascade: shared memory, rows per CTA, packing */
} GpuImages;

void gpu_iface_header(FILE *out, const Program *prog);
void gpu_iface_source(FILE *out, const Program *prog, const GpuImages *im, const char *header_name);

#endif
