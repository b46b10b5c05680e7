/*
** lang/ast.c: parse-tree constructors and the driver of scanner + parser.
*/
#include "ast.h"

#include "parse_state.h"
#include "parser.h"
#include "lexer.h"

AstExpr *ast_expr(Arena *a, AstKind k, SrcLoc loc)
{
	AstExpr *e = ARENA_NEW(a, AstExpr);
	e->kind = k, e->loc = loc, e->nameloc = loc;
	return e;
}

AstExpr *ast_binary(Arena *a, Op op, AstExpr *l, AstExpr *r)
{
	AstExpr *e = ast_expr(a, A_BINARY, loc_span(l->loc, r->loc));
	e->op = op;
	e->nargs = 2;
	e->args = ARENA_ARRAY(a, AstExpr *, 2);
	e->args[0] = l, e->args[1] = r;
	return e;
}

/* Scans the file from memory (it was read whole for the caret display) and
** always tears the scanner down, whatever the parser decided. */
AstFile *ast_parse(Arena *a, Diag *d, int file)
{
	ParseState ps = {0};
	ps.arena = a, ps.diag = d, ps.file = file, ps.line = 1, ps.col = 1;
	ps.result = ARENA_NEW(a, AstFile);
	yyscan_t scanner;
	if (attn_yylex_init_extra(&ps, &scanner)) {
		diag_error(d, NOLOC, "cannot start the scanner");
		return NULL;
	}
	const SourceFile *f = &d->files[file];
	YY_BUFFER_STATE buf = attn_yy_scan_bytes(f->text, (int)f->size, scanner);
	int rc = attn_yyparse(scanner, &ps);
	attn_yy_delete_buffer(buf, scanner);
	attn_yylex_destroy(scanner);
	if (rc == 2)
		diag_error(d, NOLOC, "out of memory while parsing");
	else if (rc == 1 && d->errors == 0)
		diag_error(d, NOLOC, "syntax error");
	return ps.result;
}
