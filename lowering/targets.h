/*
** lowering/targets.h: the GPU targets attnc generates code for, found by
** their --target name. The driver reaches a target only through its
** GpuTarget; lowering/gpu/ knows none of them by name.
*/
#ifndef ATTN_TARGETS_H
#define ATTN_TARGETS_H

#include "gpu/target.h"

/* The target called name ("sm_80"), or NULL. */
const GpuTarget *gpu_target(const char *name);

#endif
