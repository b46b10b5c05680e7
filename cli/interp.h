/*
** cli/interp.h: a naive f64 interpreter of the cascade IR.
** It loops over each node's iteration space exactly as cascade.h defines,
** with no tiling and no cleverness: the independent check on the MLIR
** reference executor, and a debugging engine for `attnc run --engine=interp`.
*/
#ifndef ATTN_INTERP_H
#define ATTN_INTERP_H

#include <stddef.h>

#include "../compiler/cascade.h"

int interp_run(const Binding *b, char *err, size_t errlen);

#endif
