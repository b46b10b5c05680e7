/*
** lang/ast.c: parse-tree constructors, called by the parser's actions.
*/
#include "ast.h"

/* A zeroed node of kind k; its name's location is the node's own until the
** parser knows better, so every node has a place to put a caret. */
AstExpr *ast_expr(Arena *a, AstKind k, SrcLoc loc)
{
	AstExpr *e = ARENA_NEW(a, AstExpr);
	e->kind = k, e->loc = loc, e->nameloc = loc;
	return e;
}

/* A binary node spans both operands, so an error about the operation
** underlines all of it. */
AstExpr *ast_binary(Arena *a, Op op, AstExpr *l, AstExpr *r)
{
	AstExpr *e = ast_expr(a, A_BINARY, loc_span(l->loc, r->loc));
	e->op = op;
	e->nargs = 2;
	e->args = ARENA_ARRAY(a, AstExpr *, 2);
	e->args[0] = l, e->args[1] = r;
	return e;
}
