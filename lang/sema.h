/*
** lang/sema.h: state shared by the semantic-analysis files.
**   sema.c        symbols, declarations, statement order, final checks
**   sema_index.c  index variables: binding rules, ranges, quasi-affinity
**   sema_expr.c   typed expressions: AST -> IR Expr
**   lower.c       statements -> extended-Einsum nodes (hoisting reductions,
**                 desugaring softmax and logsumexp, inheriting domains)
*/
#ifndef ATTN_SEMA_H
#define ATTN_SEMA_H

#include "ast.h"

enum { MAX_VARS = 48 };

typedef enum SymKind { SYM_DIM, SYM_CONST, SYM_PARAM, SYM_TENSOR } SymKind;

typedef struct Sym {
	const char *name;
	SymKind kind;
	SrcLoc loc;
	Dim *dim;
	Param *param;
	Tensor *tensor;
	Expr *value;   /* SYM_CONST: a literal */
	AstItem *decl; /* declaring item (in/out/dims/...) */
	AstItem *stmt; /* SYM_TENSOR: defining statement, if any */
	int used;
	int state;  /* statement ordering: 0 new, 1 visiting, 2 done */
	int failed; /* its definition had errors: uses are not checked again */
} Sym;

/* An index name of the statement being lowered and its range. */
typedef struct VarInfo {
	const char *name;
	Expr *extent; /* NULL until inferred */
	SrcLoc loc;   /* first use */
	SrcLoc from;  /* the access that gave the range */
	const char *from_text;
	int on_lhs;
	int as_index; /* used inside some [...] */
	int reported; /* an unbound-index error was given */
} VarInfo;

/* The iteration space of the node under construction. */
typedef struct Space {
	IndexVar v[MAX_VARS];
	int n;
} Space;

typedef struct ScopeEntry {
	const char *name;
	Expr *e; /* over the current space */
} ScopeEntry;

typedef struct Stmt {
	AstItem *item;
	Tensor *lhs;
	VarInfo vars[MAX_VARS];
	int nvars;
	Space *sp;
	ScopeEntry scope[MAX_VARS];
	int nscope;
	Expr **push; /* statement-level where conjuncts, for pushing into hoisted nodes */
	int npush;
	int ntemps;
} Stmt;

typedef struct Sema {
	Arena *a;
	Diag *d;
	Cascade *c;
	AstAttention *att;
	PtrVec syms;             /* Sym* */
	PtrVec indexdecl;        /* AstItem* of `index` items */
	Stmt *st;                /* statement being lowered, or NULL (declarations) */
	const char *scalar_what; /* set while typing a shape, const or default */
	int allow_params;
} Sema;

/* sema.c */
Sym *sema_lookup(Sema *s, const char *name);

/* sema_index.c: discovers the statement's index names, checks binding rules
** and infers every range; returns 0 after reporting errors. */
int sema_index_statement(Sema *s, Stmt *st);
VarInfo *sema_var(Stmt *st, const char *name);
/* True when e reads a tensor whose definition failed (already reported). */
int sema_reads_failed(Sema *s, AstExpr *e);
/* 1 when e is quasi-affine in index names, else reports and returns 0. */
int sema_check_affine(Sema *s, AstExpr *e);
int extent_equal(const Expr *a, const Expr *b);

/* sema_expr.c */
Expr *sema_expr(Sema *s, AstExpr *e); /* in the current scope */
Expr *sema_scalar_expr(Sema *s, AstExpr *e, int allow_params, const char *what);
Expr *sema_to_float(Sema *s, Expr *e, AstExpr *src);
Expr *sema_bool(Sema *s, AstExpr *e, const char *what);

/* lower.c */
int lower_statement(Sema *s, Stmt *st);
Expr *lower_reduction(Sema *s, AstExpr *e); /* a reduction met inside an expression */
RedOp lower_redop(const char *name);        /* RED_NONE when not sum/max/min/prod */

#endif
