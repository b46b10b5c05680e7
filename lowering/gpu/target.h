/*
** lowering/gpu/target.h: a GPU target as the driver sees it, in the manner
** of QBE's struct Target: data (names, versions, tile sizes, the machine
** code the PTX is assembled for) and function pointers (the PTX emitter and
** the per-target spill/tile-size retry policy). Each target is a directory
** of lowering/ that defines one GpuTarget; lowering/targets.h lists them.
** The retry loop itself is generic (tune.c): the driver hands it a
** callback that runs ptxas, so that nothing here spawns a process.
*/
#ifndef ATTN_GPU_TARGET_H
#define ATTN_GPU_TARGET_H

#include <stdio.h>

#include "../../compiler/plan.h"

/* What the generated C interface needs of each kernel. */
typedef struct GpuKernelInfo {
	unsigned smem;        /* dynamic shared memory bytes */
	unsigned threads;     /* threads per CTA */
	unsigned block_m;     /* query rows per CTA */
	unsigned block_n;     /* keys per tile */
	int data_masks;       /* some mask reads data: the scan's work is per CTA */
	int split_v;          /* the kernel copies the next V tile apart from its K */
	int table;            /* the kernel keeps a tile table (document ids along the keys) */
	long pack;            /* GQA packing: 0 none, > 0 rows per group, < 0 -(dim index + 1) */
	int one_window;       /* a second entry, NAME_fwd_short, for keys up to window_keys */
	unsigned window_keys; /* keys one tile-table window covers */
} GpuKernelInfo;

enum { GPU_MAX_CUBINS = 4 };

typedef struct GpuTarget {
	const char *name;        /* --target and the plan's target: "sm_80" */
	int sm;                  /* compute capability times ten */
	const char *ptx_target;  /* the module's .target */
	const char *ptx_version; /* the module's .version */
	/* the machine code the PTX is assembled for (compute capabilities times
	** ten), in the order the generated C embeds it; ptxas's spill report
	** comes from the last */
	int ncubins;
	int cubin_sms[GPU_MAX_CUBINS];
	int block_n;       /* keys per tile */
	int warps;         /* warps per CTA */
	int threads;       /* threads per CTA */
	unsigned smem_max; /* dynamic shared memory a CTA may take (bytes) */
	/* PTX for every cascade of prog into out, info (NULL or per cascade)
	** filled; tiling (NULL or per cascade) the tile-size choice of each
	** (KernelShape.tiling). Nonzero after reporting through d why a
	** cascade cannot be lowered. */
	int (*emit_program)(FILE *out, const Program *prog, Diag *d, GpuKernelInfo *info,
			    const int *tiling);
	/* The retry policy: rounds of regeneration after the first, and the
	** tile-size choice for a kernel that ptxas spilled spill_bytes of (0:
	** keep it). */
	int retune_rounds;
	int (*retune)(const GpuKernelInfo *k, long spill_bytes);
} GpuTarget;

/* What the retry loop asks of the driver: assemble one round's PTX and
** report each entry's spill-store bytes (funcs[i] -> spills[i], -1 when not
** reported), then keep that round's machine code (final) or drop it. Both
** return 0 or the driver's own nonzero code, after reporting the failure. */
typedef struct GpuAssembler {
	int (*assemble)(void *ctx, const char *ptx, size_t n, const char *const *funcs,
			long *spills, int nfuncs);
	int (*settle)(void *ctx, int final);
	void *ctx;
} GpuAssembler;

/* gpu_compile's own failures (the assembler's codes are positive). */
enum { GPU_ERR_INPUT = -1, GPU_ERR_MEMORY = -2 };

/* tune.c: PTX for every cascade of p into *buf (malloc'd, *n bytes), info
** filled per cascade. With as (NULL: no ptxas) every round's PTX is
** assembled and a kernel that spills over the target's budget is generated
** again with its next tile-size choice (GpuTarget.retune); the last round's
** machine code is kept. */
int gpu_compile(const GpuTarget *t, const Program *p, Diag *d, const GpuAssembler *as, char **buf,
		size_t *n, GpuKernelInfo *info);

#endif
