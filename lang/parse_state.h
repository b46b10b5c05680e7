/*
** lang/parse_state.h: what the scanner and the parser share.
*/
#ifndef ATTN_PARSE_STATE_H
#define ATTN_PARSE_STATE_H

#include "ast.h"

typedef struct ParseState {
	Arena *arena;
	Diag *diag;
	int file;
	int line, col;  /* scanner cursor, 1-based */
	SrcLoc comment; /* start of an open block comment */
	AstFile *result;
	AstAttention *current; /* the block being parsed */
} ParseState;

#endif
