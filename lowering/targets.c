/*
** lowering/targets.c: the list of GPU targets. A new target is a new
** directory of lowering/ that defines its GpuTarget, and a line here.
*/
#include <string.h>

#include "targets.h"

extern const GpuTarget T_sm80, T_sm90;

static const GpuTarget *const all[] = {&T_sm80, &T_sm90};

/* By --target name: the driver's one way to reach a target. */
const GpuTarget *gpu_target(const char *name)
{
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}
