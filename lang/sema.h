/*
** lang/sema.h: state shared by the semantic-analysis files, which form
** layers: each calls only the files listed below it.
**   sema.c        one attention block: declarations, statement order,
**                 final checks
**   lower.c       statements -> extended-Einsum nodes
**   sema_index.c  index variables: binding rules, ranges, quasi-affinity
**   sema_expr.c   typed expressions: AST -> IR Expr, reductions included
**                 (hoisted, softmax and logsumexp desugared)
**   node.c        building nodes: temporaries, filters closed over the
**                 domains of what they read, hoisting
**   scope.c       what a name means: symbols, index variables, bindings
** retain.c, beside them, copies a block's cascade out of the scratch arena
** the analysis ran in (lang/front.c calls both).
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
	/* temporaries made so far for each role (lang/node.c names them) */
	const char *roles[16];
	int nmade[16];
	int nroles;
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
	int chain_reported; /* a chain of definitions past the limit was reported */
} Sema;

/* sema.c: one attention block -> its cascade; errors go to d. */
Cascade *sema_attention(Arena *a, Diag *d, AstAttention *att);

/* retain.c: a deep copy of c in a, sharing nothing with c's arena. */
Cascade *retain_cascade(Arena *a, const Cascade *c);

/* lower.c: the statement's node; returns 0 after reporting errors. */
int lower_statement(Sema *s, Stmt *st);

/* sema_index.c: discovers the statement's index names, checks binding rules
** and infers every range; returns 0 after reporting errors. */
int sema_index_statement(Sema *s, Stmt *st);
/* True when e reads a tensor whose definition failed (already reported). */
int sema_reads_failed(Sema *s, AstExpr *e);
/* `T[b, ...] + i` on the left: a packed output's row (sema_index.c). */
int sema_pack_pattern(Sema *s, AstExpr *e, AstExpr **table, AstExpr **row);
/* Whether two ranges are the same: by value when both are constant. */
int sema_extent_equal(const Expr *a, const Expr *b);

/* sema_expr.c */
Expr *sema_expr(Sema *s, AstExpr *e); /* in the current scope */
Expr *sema_scalar_expr(Sema *s, AstExpr *e, int allow_params, const char *what);
Expr *sema_to_float(Sema *s, Expr *e, AstExpr *src);
Expr *sema_bool(Sema *s, AstExpr *e, const char *what);
RedOp sema_redop(const char *name); /* RED_NONE when not sum/max/min/prod */
/* The index e of a slice subscript `e < E`, or NULL. */
AstExpr *sema_slice(Sema *s, AstExpr *arg);
/* 1 when body is a float; else reports (unless body is NULL) and returns 0. */
int sema_want_float(Sema *s, AstExpr *src, const char *red, Expr *body);

/* node.c */
DType node_dtype(VType t);
/* Adds the conjuncts of e to v, flattening && and dropping duplicates. */
void node_add_conj(Sema *s, PtrVec *v, Expr *e);
Node *node_make(Sema *s, Tensor *out, const IndexVar *vars, int nfree, int nred, RedOp red,
		Expr *body, Expr *filter, Expr *own, SrcLoc loc, const char *origin);
/* The read, in the enclosing space, of body hoisted into a node of its own. */
Expr *node_hoist(Sema *s, const Space *ext, int nouter, RedOp red, Expr *body, Expr *filter,
		 int keep, const char *role, SrcLoc loc);

/* scope.c */
Sym *scope_sym(Sema *s, const char *name);
VarInfo *scope_var(Stmt *st, const char *name);
Expr *scope_bound(const Stmt *st, const char *name);
void scope_bind(Stmt *st, const char *name, Expr *e);
int scope_reduce(Sema *s, Stmt *st, const char *name, SrcLoc loc);

#endif
