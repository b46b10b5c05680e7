/*
** lang/front.c: the front end's entry point (lang/front.h), the whole
** front end in order: scan and parse a file into the tree (lexer.l,
** parser.y, ast.c) and check each block against the limits (limits.c);
** then, on a file without error, parse it again and analyse each block into
** a cascade as soon as it is parsed (sema.c and the files below it).
*/
#include <string.h>

#include "front.h"
#include "sema.h"

#include "parse_state.h"
#include "parser.h"
#include "lexer.h"

/* Scans the file from memory (it was read whole for the caret display) and
** always tears the scanner down, whatever the parser decided. Each block's
** tree is handed to done as soon as the block is parsed, then freed, so the
** file's size does not decide the memory used. Returns the list of blocks
** (their names only); errors are reported through d. */
static AstFile *parse(Arena *a, Diag *d, int file, void (*done)(ParseState *, AstAttention *),
		      void *ctx)
{
	ParseState ps = {0};
	ps.arena = ps.program = a, ps.diag = d, ps.file = file, ps.line = 1, ps.col = 1;
	ps.done = done, ps.ctx = ctx;
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
	arena_free(&ps.block);
	if (rc == 2 && d->errors == 0)
		diag_error(d, NOLOC, "out of memory while parsing");
	else if (rc == 1 && d->errors == 0)
		diag_error(d, NOLOC, "syntax error");
	return ps.result;
}

/* The first pass only checks each block against the front end's limits
** (lang/limits.c), before anything recursive sees it. */
static void check_block(ParseState *ps, AstAttention *att)
{
	limits_check(ps->diag, att);
}

/* The second pass analyses each block into a cascade, kept in the program's
** arena; the analysis itself runs in a scratch arena freed at once. Each
** block has its own namespace; only block names must differ across the file,
** since a program is looked up by them. */
static void analyse_block(ParseState *ps, AstAttention *att)
{
	Program *p = ps->ctx;
	Diag *d = ps->diag;
	if (diag_too_many(d))
		return;
	for (int j = 0; j < ps->result->attentions.n - 1; j++) {
		AstAttention *prev = ps->result->attentions.v[j];
		if (!strcmp(prev->name, att->name)) {
			diag_error(d, att->nameloc, "redefinition of attention '%s'", att->name);
			diag_note(d, prev->nameloc, "previous definition is here");
		}
	}
	Arena scratch;
	arena_init(&scratch);
	ptrvec_push(ps->program, &p->cascades,
		    retain_cascade(ps->program, sema_attention(&scratch, d, att)));
	arena_free(&scratch);
}

/* The file is parsed twice: semantic analysis starts only on a file that
** parsed without error, and keeping every block's tree between the two
** would make memory grow with the file. */
Program *front_compile(Arena *a, Diag *d, int file)
{
	AstFile *f = parse(a, d, file, check_block, NULL);
	if (!f || d->errors)
		return NULL;
	Program *p = ARENA_NEW(a, Program);
	if (f->attentions.n == 0)
		diag_warning(d, (SrcLoc){file, 1, 1, 0}, "no 'attention' block in this file");
	else
		parse(a, d, file, analyse_block, p);
	return d->errors ? NULL : p;
}
