/*
** lang/parse_state.h: what the scanner and the parser share.
*/
#ifndef ATTN_PARSE_STATE_H
#define ATTN_PARSE_STATE_H

#include "ast.h"

/* Brackets nest at most this deep: deeper input would only exhaust the
** parser's stack, which gives no location. */
enum { PARSE_MAX_NESTING = AST_MAX_DEPTH };

typedef struct ParseState ParseState;
struct ParseState {
	Arena *arena;   /* where nodes go: `block` inside a block, else `program` */
	Arena *program; /* what outlives a block: the block list and names */
	Arena block;    /* one block's tree, emptied after each block */
	/* called at the end of each block that parsed, before its tree is freed */
	void (*done)(ParseState *ps, AstAttention *att);
	void *ctx;
	Diag *diag;
	int file;
	int line, col;  /* scanner cursor, 1-based */
	SrcLoc comment; /* start of an open block comment */
	AstFile *result;
	AstAttention *current; /* the block being parsed */
	int nesting;           /* open '(' and '[' */
	int too_deep;          /* nesting went past the limit: scanning stopped */
};

#endif
