/*
** lang/front.c: the front end's entry point (lang/front.h), the whole
** front end in order: scan and parse a file into the tree (lexer.l,
** parser.y, ast.c), then analyse each attention block into a cascade
** (sema.c and the files below it).
*/
#include <string.h>

#include "front.h"
#include "sema.h"

#include "parse_state.h"
#include "parser.h"
#include "lexer.h"

/* Scans the file from memory (it was read whole for the caret display) and
** always tears the scanner down, whatever the parser decided. Returns the
** tree, possibly partial after errors, which are reported through d. */
static AstFile *parse(Arena *a, Diag *d, int file)
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
	if (rc == 2 && d->errors == 0)
		diag_error(d, NOLOC, "out of memory while parsing");
	else if (rc == 1 && d->errors == 0)
		diag_error(d, NOLOC, "syntax error");
	return ps.result;
}

/* Blocks are analysed one by one, each in its own namespace; only their
** names must differ across the file, since a program is looked up by them.
** Semantic analysis starts only on a file that parsed without error. */
Program *front_compile(Arena *a, Diag *d, int file)
{
	AstFile *f = parse(a, d, file);
	if (!f || d->errors || !depth_check(d, f))
		return NULL;
	Program *p = ARENA_NEW(a, Program);
	if (f->attentions.n == 0)
		diag_warning(d, (SrcLoc){file, 1, 1, 0}, "no 'attention' block in this file");
	for (int i = 0; i < f->attentions.n && !diag_too_many(d); i++) {
		AstAttention *att = f->attentions.v[i];
		for (int j = 0; j < i; j++) {
			AstAttention *prev = f->attentions.v[j];
			if (!strcmp(prev->name, att->name)) {
				diag_error(d, att->nameloc, "redefinition of attention '%s'",
					   att->name);
				diag_note(d, prev->nameloc, "previous definition is here");
			}
		}
		ptrvec_push(a, &p->cascades, sema_attention(a, d, att));
	}
	return d->errors ? NULL : p;
}
