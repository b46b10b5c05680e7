/*
** lowering/gpu/tune.c: the spill/tile-size retry loop. A kernel whose
** registers do not fit spills to local memory, and only ptxas knows: each
** round generates PTX for every cascade, the driver's assembler reports
** ptxas's spills per entry, and the target's policy (GpuTarget.retune)
** picks another tile-size choice for each kernel over its budget; the
** round's machine code is kept where no kernel is generated again. The
** driver assembles all targets of a round at once, so that they take the
** time of one where nothing spills. gpu_refusal asks the question of
** gpu_emit_program's per cascade, for a bundle of two targets.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* The entry names of p's kernels (NAME_fwd), malloc'd, or NULL. */
static char **entry_names(const Program *p)
{
	int nc = p->cascades.n;
	char **names = calloc((size_t)nc + 1, sizeof *names);
	for (int i = 0; i < nc && names; i++) {
		const Cascade *c = p->cascades.v[i];
		size_t len = strlen(c->name) + 8;
		if (!(names[i] = malloc(len))) {
			for (int k = 0; k < i; k++)
				free(names[k]);
			free(names);
			return NULL;
		}
		snprintf(names[i], len, "%s_fwd", c->name);
	}
	return names;
}

int gpu_compile(const GpuTarget *t, const Program *p, Diag *d, const GpuAssembler *as, char **buf,
		size_t *n, GpuKernelInfo *info, int parts)
{
	int nc = p->cascades.n, rc = 0;
	int *tiling = calloc((size_t)nc + 1, sizeof *tiling);
	long *spills = calloc((size_t)nc + 1, sizeof *spills);
	char **names = entry_names(p);
	if (!tiling || !spills || !names)
		rc = GPU_ERR_MEMORY;
	for (int round = 0; round <= t->retune_rounds && !rc; round++) {
		free(*buf), *buf = NULL, *n = 0;
		FILE *m = open_memstream(buf, n);
		if (!m) {
			rc = GPU_ERR_MEMORY;
			break;
		}
		rc = gpu_emit_program(t, m, p, d, info, tiling, parts) ? GPU_ERR_INPUT : 0;
		fclose(m);
		if (rc || !as)
			break;
		rc = as->assemble(as->ctx, *buf, *n, (const char *const *)names, spills, nc);
		if (rc)
			break;
		int again = 0;
		for (int i = 0; i < nc && round < t->retune_rounds; i++) {
			int choice = t->retune(&info[i], spills[i]);
			if (choice)
				tiling[i] = choice, again = 1;
		}
		rc = as->settle(as->ctx, !again);
		if (!again)
			break;
	}
	for (int i = 0; i < nc && names; i++)
		free(names[i]);
	free(tiling), free(spills), free(names);
	return rc;
}

/* A bundle of two targets compiles the second's module from the cascades
** it takes, and must know which before generating any: the test that
** gpu_emit_program makes (gpu_shape, then the target's refusal), asked
** alone. */
const char *gpu_refusal(Arena *a, const GpuTarget *t, const Cascade *c, int parts)
{
	Plan *p = plan_build(a, c, t->name);
	KernelShape s;
	const char *why = gpu_shape(a, p, &s);
	s.with_parts = parts, s.cta_slices = gpu_cta_slices(t, &s);
	if (!why && t->refusal)
		why = t->refusal(p, &s);
	if (!why)
		why = gpu_packed_refusal(c);
	return why;
}
