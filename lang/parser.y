/*
** lang/parser.y: the grammar of .attn files (pure bison, with locations).
** Actions only build the tree; every check lives in lang/sema*.c so that the
** grammar stays readable and conflict-free (%expect 0).
*/
%require "3.8"
%define api.pure full
%define api.prefix {attn_yy}
%define api.token.prefix {TOK_}
%define api.header.include {"parser.h"}
%define parse.error detailed
%define parse.lac full
%locations
%expect 0
%param {yyscan_t scanner} {ParseState *ps}

%code requires {
#include "parse_state.h"
#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif
#define ATTN_YYLTYPE SrcLoc
#define ATTN_YYLTYPE_IS_DECLARED 1
#define ATTN_YYLTYPE_IS_TRIVIAL 1
/* A rule's span runs from its first symbol to its last when they share a
** line; otherwise the caret marks the first symbol. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                           \
	do {                                                                  \
		if (N) {                                                      \
			(Cur) = YYRHSLOC(Rhs, 1);                             \
			(Cur) = loc_span((Cur), YYRHSLOC(Rhs, N));            \
		} else {                                                      \
			(Cur) = YYRHSLOC(Rhs, 0);                             \
			(Cur).col += (Cur).len;                               \
			(Cur).len = 0;                                        \
		}                                                             \
	} while (0)
}

%code provides {
#define YYSTYPE ATTN_YYSTYPE
#define YYLTYPE ATTN_YYLTYPE
#define YY_DECL int attn_yylex(ATTN_YYSTYPE *yylval_param, ATTN_YYLTYPE *yylloc_param, \
			       yyscan_t yyscanner, ParseState *ps)
YY_DECL;
}

%code {
#include <string.h>

static void attn_yyerror(ATTN_YYLTYPE *loc, yyscan_t scanner, ParseState *ps, const char *msg);
static void not_a_decl(ParseState *ps, const char *name, SrcLoc at, SrcLoc next);
static AstItem *item_new(ParseState *ps, ItemKind k, SrcLoc loc);
static void add_item(ParseState *ps, AstItem *it);
static AstExpr **vec_array(PtrVec *v, int *n);
}

%token ATTENTION "'attention'" DIMS "'dims'" CONST "'const'" PARAM "'param'"
%token IN "'in'" OUT "'out'" INDEX "'index'" WHERE "'where'" INF "'inf'"
%token TRAINABLE "'trainable'"
%token ANDAND "'&&'" OROR "'||'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='"
%union {
	const char *str;
	long ival;
	double fval;
	AstExpr *expr;
	PtrVec *list;
	AstItem *item;
}

%token <str> IDENT "identifier"
%token <ival> INTLIT "integer"
%token <fval> FLOATLIT "number"

%type <expr> expr primary
%type <list> exprs args
%type <item> tensor_decl
%type <ival> trainable

%right '?' ':'
%left OROR
%left ANDAND
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%%

file:
	%empty
	| file attention
	;

attention:
	ATTENTION IDENT '{' {
		ps->current = ARENA_NEW(ps->program, AstAttention);
		ps->current->name = $2, ps->current->loc = @1, ps->current->nameloc = @2;
		ptrvec_push(ps->program, &ps->result->attentions, ps->current);
		ps->arena = &ps->block;
	} items '}' {
		ps->arena = ps->program;
		ps->done(ps, ps->current);
		arena_free(&ps->block);
	}
	| error '}' { yyerrok; ps->arena = ps->program; }
	;

items:
	%empty
	| items item
	;

item:
	DIMS dim_list ';'
	| CONST IDENT '=' expr ';' {
		AstItem *it = item_new(ps, I_CONST, @$);
		it->name = $2, it->nameloc = @2, it->value = $4;
		add_item(ps, it);
	}
	| PARAM IDENT ':' IDENT trainable ';' {
		AstItem *it = item_new(ps, I_PARAM, @$);
		it->name = $2, it->nameloc = @2, it->type = $4, it->typeloc = @4;
		it->trainable = $5 != 0, it->trainloc = @5;
		add_item(ps, it);
	}
	| PARAM IDENT ':' IDENT trainable '=' expr ';' {
		AstItem *it = item_new(ps, I_PARAM, @$);
		it->name = $2, it->nameloc = @2, it->type = $4, it->typeloc = @4, it->value = $7;
		it->trainable = $5 != 0, it->trainloc = @5;
		add_item(ps, it);
	}
	| IN tensor_decl ';' { $2->kind = I_IN; add_item(ps, $2); }
	| OUT tensor_decl ';' { $2->kind = I_OUT; add_item(ps, $2); }
	| INDEX IDENT IN expr ';' {
		AstItem *it = item_new(ps, I_INDEX, @$);
		it->name = $2, it->nameloc = @2, it->value = $4;
		add_item(ps, it);
	}
	| IDENT IDENT IN expr ';' { not_a_decl(ps, $1, @1, @2); }
	| IDENT '[' exprs ']' '=' expr ';' {
		AstItem *it = item_new(ps, I_STMT, @$);
		it->name = $1, it->nameloc = @1, it->idx = vec_array($3, &it->nidx), it->rhs = $6;
		add_item(ps, it);
	}
	| IDENT '[' exprs ']' '=' expr WHERE expr ';' {
		AstItem *it = item_new(ps, I_STMT, @$);
		it->name = $1, it->nameloc = @1, it->idx = vec_array($3, &it->nidx), it->rhs = $6;
		it->where = $8;
		add_item(ps, it);
	}
	| error ';' { yyerrok; }
	;

dim_list:
	dim
	| dim_list ',' dim
	;

dim:
	IDENT {
		AstItem *it = item_new(ps, I_DIM, @1);
		it->name = $1, it->nameloc = @1;
		add_item(ps, it);
	}
	| IDENT '=' INTLIT {
		AstItem *it = item_new(ps, I_DIM, @$);
		it->name = $1, it->nameloc = @1, it->fixed = $3;
		if ($3 <= 0)
			diag_error(ps->diag, @3, "a fixed dim size must be positive");
		add_item(ps, it);
	}
	;

tensor_decl:
	IDENT '[' exprs ']' ':' IDENT trainable {
		$$ = item_new(ps, I_IN, @$);
		$$->name = $1, $$->nameloc = @1, $$->idx = vec_array($3, &$$->nidx);
		$$->type = $6, $$->typeloc = @6;
		$$->trainable = $7 != 0, $$->trainloc = @7;
	}
	;

/* `trainable` after a type: the input gets a gradient (lang/sema.c checks
** where it may appear) */
trainable:
	%empty { $$ = 0; }
	| TRAINABLE { $$ = 1; }
	;

exprs:
	expr { $$ = ARENA_NEW(ps->arena, PtrVec); ptrvec_push(ps->arena, $$, $1); }
	| exprs ',' expr { $$ = $1; ptrvec_push(ps->arena, $$, $3); }
	;

args:
	%empty { $$ = ARENA_NEW(ps->arena, PtrVec); }
	| exprs
	;

expr:
	primary
	| expr '?' expr ':' expr {
		$$ = ast_expr(ps->arena, A_COND, @$);
		$$->nargs = 3;
		$$->args = ARENA_ARRAY(ps->arena, AstExpr *, 3);
		$$->args[0] = $1, $$->args[1] = $3, $$->args[2] = $5;
	}
	| expr OROR expr { $$ = ast_binary(ps->arena, OP_OR, $1, $3); }
	| expr ANDAND expr { $$ = ast_binary(ps->arena, OP_AND, $1, $3); }
	| expr EQ expr { $$ = ast_binary(ps->arena, OP_EQ, $1, $3); }
	| expr NE expr { $$ = ast_binary(ps->arena, OP_NE, $1, $3); }
	| expr '<' expr { $$ = ast_binary(ps->arena, OP_LT, $1, $3); }
	| expr LE expr { $$ = ast_binary(ps->arena, OP_LE, $1, $3); }
	| expr '>' expr { $$ = ast_binary(ps->arena, OP_GT, $1, $3); }
	| expr GE expr { $$ = ast_binary(ps->arena, OP_GE, $1, $3); }
	| expr '+' expr { $$ = ast_binary(ps->arena, OP_ADD, $1, $3); }
	| expr '-' expr { $$ = ast_binary(ps->arena, OP_SUB, $1, $3); }
	| expr '*' expr { $$ = ast_binary(ps->arena, OP_MUL, $1, $3); }
	| expr '/' expr { $$ = ast_binary(ps->arena, OP_DIV, $1, $3); }
	| expr '%' expr { $$ = ast_binary(ps->arena, OP_MOD, $1, $3); }
	| '-' expr %prec UNARY {
		$$ = ast_expr(ps->arena, A_UNARY, @$);
		$$->op = OP_NEG, $$->nargs = 1;
		$$->args = ARENA_ARRAY(ps->arena, AstExpr *, 1);
		$$->args[0] = $2;
	}
	| '!' expr %prec UNARY {
		$$ = ast_expr(ps->arena, A_UNARY, @$);
		$$->op = OP_NOT, $$->nargs = 1;
		$$->args = ARENA_ARRAY(ps->arena, AstExpr *, 1);
		$$->args[0] = $2;
	}
	;

primary:
	INTLIT { $$ = ast_expr(ps->arena, A_INT, @1); $$->ival = $1; }
	| FLOATLIT { $$ = ast_expr(ps->arena, A_FLOAT, @1); $$->fval = $1; }
	| INF { $$ = ast_expr(ps->arena, A_INF, @1); }
	| IDENT { $$ = ast_expr(ps->arena, A_NAME, @1); $$->name = $1; $$->nameloc = @1; }
	| IDENT '[' exprs ']' {
		$$ = ast_expr(ps->arena, A_ACCESS, @$);
		$$->name = $1, $$->nameloc = @1, $$->args = vec_array($3, &$$->nargs);
	}
	| IDENT '(' args ')' {
		$$ = ast_expr(ps->arena, A_CALL, @$);
		$$->name = $1, $$->nameloc = @1, $$->args = vec_array($3, &$$->nargs);
	}
	| IDENT '[' exprs ']' '(' expr ')' {
		$$ = ast_expr(ps->arena, A_REDUCE, @$);
		$$->name = $1, $$->nameloc = @1, $$->args = vec_array($3, &$$->nargs);
		$$->body = $6;
	}
	| IDENT '[' exprs ']' '(' expr WHERE expr ')' {
		$$ = ast_expr(ps->arena, A_REDUCE, @$);
		$$->name = $1, $$->nameloc = @1, $$->args = vec_array($3, &$$->nargs);
		$$->body = $6, $$->where = $8;
	}
	| '(' expr ')' { $$ = $2; $$->loc = @$; }
	;

%%

/* After the scanner stopped at too deep a nesting, the end of input it
** pretends is no second error. A full stack comes from a chain of prefix
** operators or '?:' thousands deep, so it is reported as what it is. */
static void attn_yyerror(ATTN_YYLTYPE *loc, yyscan_t scanner, ParseState *ps, const char *msg)
{
	(void)scanner;
	if (ps->too_deep)
		return;
	if (!strcmp(msg, "memory exhausted"))
		diag_error(ps->diag, *loc, "expression nested too deeply (the limit is %d levels)",
			   AST_MAX_DEPTH);
	else
		diag_error(ps->diag, *loc, "%s", msg);
}

/* `iter c in NC;` is how the research sketch declares an iterative rank for
** scans and recurrences, which the language cannot express yet: the message
** says so instead of a bare syntax error (other names get the one they
** had). */
static void not_a_decl(ParseState *ps, const char *name, SrcLoc at, SrcLoc next)
{
	if (strcmp(name, "iter"))
		diag_error(ps->diag, next, "syntax error, unexpected identifier, expecting '['");
	else
		diag_error(ps->diag, at,
			   "'iter' declares an iterative rank for scans and recurrences, which "
			   "cannot be written yet: chunkwise linear attention and stick-breaking "
			   "attention in linear time need them (docs/language.md section 12)");
}

static AstItem *item_new(ParseState *ps, ItemKind k, SrcLoc loc)
{
	AstItem *it = ARENA_NEW(ps->arena, AstItem);
	it->kind = k, it->loc = loc;
	return it;
}

/* Items outside an attention block cannot happen: the grammar only reaches
** item inside one, after `current` is set. */
static void add_item(ParseState *ps, AstItem *it)
{
	if (ps->current)
		ptrvec_push(ps->arena, &ps->current->items, it);
}

static AstExpr **vec_array(PtrVec *v, int *n)
{
	*n = v->n;
	return (AstExpr **)v->v;
}
