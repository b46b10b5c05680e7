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
	/* A bundle of two targets: the second target's module, compiled from
	** the cascades it takes (its info indexed as that program's cascades;
	** its PTX is not embedded: the first's runs on newer GPUs), and per
	** cascade of the whole program its index there, -1 where the second
	** target refused it. For the cascades it holds, its cubins stand in for
	** the first module's of the same compute capability, with their own
	** launch values, rows per CTA and tensor maps. NULL: one target. */
	const struct GpuImages *alt;
	const int *alt_index;
} GpuImages;

void gpu_iface_header(FILE *out, const Program *prog);
/* The header of a bundle of two targets: gpu_iface_header's, with
** NAME_kernel_info (which image runs, and how) declared too. */
void gpu_iface_header_bundle(FILE *out, const Program *prog);
void gpu_iface_source(FILE *out, const Program *prog, const GpuImages *im, const char *header_name);

#endif
