/*
** lang/front.h: the front end's one entry point.
** Lexes and parses a registered source file, runs semantic analysis and
** builds the cascade IR. Reports every error through the Diag.
*/
#ifndef ATTN_FRONT_H
#define ATTN_FRONT_H

#include "../compiler/cascade.h"

/* Returns the program, or NULL when d->errors > 0 after the call. */
Program *front_compile(Arena *a, Diag *d, int file);

#endif
