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
/* Either, with parts: the declarations around NAME_fwd_part (--parts). */
void gpu_iface_header_parts(FILE *out, const Program *prog, int bundle, int parts);
void gpu_iface_source(FILE *out, const Program *prog, const GpuImages *im, const char *header_name);

/* Between iface.c and iface_part.c (the launches of NAME_fwd_part): the
** typed arguments of a cascade's NAME_gpu_args `a` as the arrays ptrs,
** strides, dims and params of NAME_launch_generic, declared and filled. */
void iface_unpack_args(FILE *o, const Cascade *c);
/* Once per header and source: the types and the static helpers. */
void iface_part_types(FILE *o);
void iface_part_helpers(FILE *o);
/* Per cascade: its declarations; in NAME_launch_impl after the magic
** parameters, the part parameters; after it, the functions around it. */
void iface_part_decls(FILE *o, const Cascade *c);
void iface_part_args(FILE *o, const char *name, const GpuImages *im, int idx,
		     const GpuKernelInfo *ai, long pack);
void iface_part_functions(FILE *o, const Cascade *c, const Plan *p);
/* iface_cp.c: the context-parallel launch (ring attention), where the
** plan's tensors shard along one sequence; else the header says why. */
void iface_cp_decls(FILE *o, const Cascade *c);
void iface_cp_functions(FILE *o, const Cascade *c, const Plan *p);
/* The typed argument struct NAME_gpu_args of a cascade. */
void iface_args_struct(FILE *o, const Cascade *c);
/* iface_bwd.c: a GPU backward's NAME_bwd_launch over its pieces' launchers
** (Program.grads: GradSplit*, compiler/grad.h). */
struct GradSplit;
void iface_bwd_decls(FILE *o, const struct GradSplit *s);
void iface_bwd_functions(FILE *o, const struct GradSplit *s, const Program *prog);
/* iface_pieces.c: what the launches of a block run as several kernels
** (iface_bwd.c, iface_passes.c) emit alike. */
void iface_ws_layout(FILE *o, const char *name, const PtrVec *a, const PtrVec *b);
void iface_piece_call(FILE *o, const Cascade *p, const Cascade *whole,
		      int (*slot)(const void *ctx, const Tensor *t), const void *ctx,
		      const char *scratch);
void iface_defaults_via(FILE *o, const Cascade *c, const Cascade *p);
/* iface_passes.c: a forward that runs as one kernel a pass (PassSplit). */
void iface_passes_decls(FILE *o, const PassSplit *s);
void iface_passes_functions(FILE *o, const PassSplit *s);
/* An integer expression over dims as C over `dims[]`. */
void iface_dim_expr(FILE *o, const Expr *e);
/* NAME_shape, the inputs' and outputs' shapes from the dims. */
void iface_shape_fn(FILE *o, const Cascade *c, const char *name);
#endif
