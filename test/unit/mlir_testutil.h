/*
** test/unit/mlir_testutil.h: building cascades by hand for the MLIR and
** reference-executor tests (the front end is not involved), binding them to
** data, and comparing results.
*/
#ifndef ATTN_MLIR_TESTUTIL_H
#define ATTN_MLIR_TESTUTIL_H

#include "compiler/cascade.h"

/* A cascade under construction and the arena that owns it. */
typedef struct TB {
	Arena a;
	Cascade *c;
	Program p; /* holding just c */
} TB;

void tb_init(TB *tb, const char *name);
void tb_free(TB *tb);
Dim *tb_dim(TB *tb, const char *name);
Param *tb_param(TB *tb, const char *name, VType t);
/* A tensor with `rank` shape expressions following. */
Tensor *tb_tensor(TB *tb, const char *name, TensorKind k, DType dt, int rank, ...);

Expr *tb_d(TB *tb, Dim *d);   /* EX_DIM */
Expr *tb_p(TB *tb, Param *p); /* EX_PARAM */
Expr *tb_i(TB *tb, int var);  /* EX_INDEX */
Expr *tb_n(TB *tb, long v);   /* EX_INT */
Expr *tb_f(TB *tb, double v); /* EX_FLOAT */
Expr *tb_bin(TB *tb, Op op, Expr *l, Expr *r);
Expr *tb_un(TB *tb, Op op, Expr *x);
Expr *tb_call(TB *tb, Fn f, Expr *x);
Expr *tb_cast(TB *tb, Expr *x);
Expr *tb_sel(TB *tb, Expr *c, Expr *a, Expr *b);
/* t[args...] with t->rank index expressions following. */
Expr *tb_at(TB *tb, Tensor *t, ...);

/* A node defining out: nfree + nred extents follow. */
Node *tb_node(TB *tb, Tensor *out, RedOp red, int nfree, int nred, Expr *body, Expr *filter, ...);

/* Allocates the Binding's arrays (zeroed) for the given dim sizes. */
void tb_bind(TB *tb, Binding *b, const long *dims);
void tb_unbind(TB *tb, Binding *b);
/* Deterministic pseudo-random fill in [lo, hi). */
void tb_fill(double *x, long n, double lo, double hi, unsigned *seed);

/* Normwise relative difference max|got-want| / max(max|want|, tiny);
** positions where want is +-inf or NaN must match exactly (else returns
** inf). */
double tb_relerr(const double *got, const double *want, long n);

/* Test bookkeeping: CHECK prints the failure and counts it. */
extern int tb_failures;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			tb_failures++;                                                             \
		}                                                                                  \
	} while (0)

#endif
