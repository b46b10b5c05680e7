/*
** lang/ast.h: the parse tree of a .attn file.
** Names are still strings here; lang/sema*.c resolves them and builds the
** cascade IR. All nodes live in the compile arena.
*/
#ifndef ATTN_AST_H
#define ATTN_AST_H

#include "../compiler/cascade.h"
#include "../support/diag.h"

/* The deepest expression tree accepted, in nodes from the root: far above
** any attention formula, and low enough that every later recursive walk
** (typing, passes, emitters, the interpreter) stays well inside an 8 MB
** stack even under AddressSanitizer. */
enum { AST_MAX_DEPTH = 256 };
/* The most reductions one block may hold: each is one to three nodes, and
** the passes' time grows faster than the number of nodes (about 1 s in
** compiler/rewrite.c at this limit). */
enum { AST_MAX_REDUCTIONS = 256 };

typedef enum AstKind {
	A_INT,
	A_FLOAT,
	A_INF,
	A_NAME,   /* name */
	A_ACCESS, /* name[args] */
	A_CALL,   /* name(args) */
	A_REDUCE, /* name[args](body where) : args are the index names */
	A_UNARY,  /* op args[0] */
	A_BINARY, /* args[0] op args[1] */
	A_COND,   /* args[0] ? args[1] : args[2] */
} AstKind;

typedef struct AstExpr AstExpr;
struct AstExpr {
	AstKind kind;
	Op op;
	const char *name;
	long ival;
	double fval;
	int nargs;
	AstExpr **args;
	AstExpr *body, *where; /* A_REDUCE */
	SrcLoc loc;            /* the whole expression */
	SrcLoc nameloc;        /* the name of a NAME/ACCESS/CALL/REDUCE */
};

typedef enum ItemKind { I_DIM, I_CONST, I_PARAM, I_IN, I_OUT, I_INDEX, I_STMT } ItemKind;

typedef struct AstItem {
	ItemKind kind;
	const char *name;
	SrcLoc loc, nameloc;
	long fixed;       /* I_DIM: compile-time size or 0 */
	AstExpr *value;   /* I_CONST value, I_PARAM default, I_INDEX range */
	const char *type; /* I_PARAM, I_IN, I_OUT: dtype name */
	SrcLoc typeloc;
	int trainable;   /* I_PARAM, I_IN, I_OUT: `trainable` followed the type */
	SrcLoc trainloc; /* where it was written */
	int nidx;
	AstExpr **idx;        /* I_IN/I_OUT shape, I_STMT left-hand indices */
	AstExpr *rhs, *where; /* I_STMT */
} AstItem;

typedef struct AstAttention {
	const char *name;
	SrcLoc loc, nameloc;
	PtrVec items; /* AstItem* */
} AstAttention;

typedef struct AstFile {
	PtrVec attentions; /* AstAttention* */
} AstFile;

AstExpr *ast_expr(Arena *a, AstKind k, SrcLoc loc);
AstExpr *ast_binary(Arena *a, Op op, AstExpr *l, AstExpr *r);

/* lang/limits.c: reports every expression of the block deeper than
** AST_MAX_DEPTH, and a block of more than AST_MAX_REDUCTIONS reductions;
** returns 0 when there was one. */
int limits_check(Diag *d, const AstAttention *att);

#endif
