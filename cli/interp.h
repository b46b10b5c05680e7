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

/* Runs b's cascade on its buffers. Returns 0; 1 where the given data
** caused the error (a gathered index or a packed output's offsets out of
** range); -1 for any other; a one-line reason in err. */
int interp_run(const Binding *b, char *err, size_t errlen);

#endif
