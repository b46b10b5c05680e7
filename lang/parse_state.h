/*
** lang/parse_state.h: what the scanner and the parser share.
*/
#ifndef ATTN_PARSE_STATE_H
#define ATTN_PARSE_STATE_H

#include "ast.h"

/* Brackets nest at most this deep: deeper input would only exhaust the
** parser's stack, which gives no location. */
enum { PARSE_MAX_NESTING = AST_MAX_DEPTH };

typedef struct ParseState {
	Arena *arena;
	Diag *diag;
	int file;
	int line, col;  /* scanner cursor, 1-based */
	SrcLoc comment; /* start of an open block comment */
	AstFile *result;
	AstAttention *current; /* the block being parsed */
	int nesting;           /* open '(' and '[' */
	int too_deep;          /* nesting went past the limit: scanning stopped */
} ParseState;

#endif
