/*
** compiler/intervals.h: tile classes, the one rule. A mask is decided for a
** whole tile of (query, key) positions by interval arithmetic over the
** tile's box: each integer subexpression gets bounds [lo, hi] valid at
** every point of the tile, and each comparison and boolean becomes
** "always", "never" or "depends" (decided per element). Which expressions
** get bounds and how they combine is decided here; a back end supplies an
** IvOps table that builds its own values (C text, PTX registers). A back
** end may refuse any leaf (an Iv with ok = 0): "depends" is always safe.
*/
#ifndef ATTN_INTERVALS_H
#define ATTN_INTERVALS_H

#include <stdint.h>

#include "plan.h"

/* A back end's value: C text (p) or a packed register (u). */
typedef union IvVal {
	const void *p;
	uint64_t u;
} IvVal;

/* Bounds of an integer expression over the tile. */
typedef struct Iv {
	IvVal lo, hi;
	unsigned ok : 1;     /* bounded; otherwise lo and hi mean nothing */
	unsigned point : 1;  /* one value over the tile: lo and hi are the same value */
	unsigned narrow : 1; /* the back end's own mark (the GPU's s32 data ranges) */
} Iv;

/* The class of a condition over the tile, as two of the back end's
** booleans: always (true at every point), never (false at every point);
** neither: it depends on the point. */
typedef struct IvTri {
	IvVal always, never;
} IvTri;

typedef struct IvOps {
	/* leaves; each may refuse (ok = 0) */
	Iv (*scalar)(void *ctx, const Expr *e);     /* literal, dim, param: a point */
	Iv (*grid)(void *ctx, const Expr *e);       /* an IDX_GRID index: a point */
	Iv (*rows)(void *ctx, const Expr *e);       /* an IDX_QUERY index: the tile's rows */
	Iv (*keys)(void *ctx, const Expr *e);       /* an IDX_KEY index: the tile's keys */
	Iv (*read_point)(void *ctx, const Expr *e); /* an i32 read at a point of the tile */
	/* an i32 read along the rows or keys: the data's min and max over the
	** tile; NULL where the back end has none */
	Iv (*read_range)(void *ctx, const Expr *e);
	/* x ready for arithmetic (the GPU widens s32 ranges); NULL: x itself */
	Iv (*widen)(void *ctx, Iv x);
	/* arithmetic on single values */
	IvVal (*zero)(void *ctx);
	IvVal (*dec)(void *ctx, IvVal x); /* x - 1 */
	IvVal (*neg)(void *ctx, IvVal x);
	/* OP_ADD, OP_SUB, OP_MUL, OP_MIN, OP_MAX, OP_DIV (floor, by a positive y) */
	IvVal (*arith)(void *ctx, Op op, IvVal x, IvVal y);
	/* floor x / y where the back end divides by divisor's value in its
	** own way (the GPU's magic parameters); x is a bound of the expression
	** dividend, which says how large it can be; NULL: arith's OP_DIV */
	IvVal (*divide)(void *ctx, IvVal x, IvVal y, const Expr *dividend, const Expr *divisor);
	/* c ? x : y for a boolean c (a test); NULL: x % y is only bounded by
	** [0, y - 1] */
	IvVal (*select)(void *ctx, IvVal c, IvVal x, IvVal y);
	IvVal (*min4)(void *ctx, const IvVal v[4]);
	IvVal (*max4)(void *ctx, const IvVal v[4]);
	/* booleans: a comparison of two values (OP_LT .. OP_NE; narrow: both
	** are the back end's narrow values), a constant, and, or */
	IvVal (*test)(void *ctx, Op cmp, IvVal x, IvVal y, int narrow);
	IvVal (*bconst)(void *ctx, int v);
	IvVal (*band)(void *ctx, IvVal x, IvVal y);
	IvVal (*bor)(void *ctx, IvVal x, IvVal y);
} IvOps;

/* e, an integer divisor, is known positive (floor division by it is
** monotone in the dividend). */
int iv_positive(const Expr *e);

/* Bounds of integer expression e (in node's variables) over the tile. */
Iv iv_bound(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e);
/* The tile class of condition e (in node's variables). */
IvTri iv_class(const IvOps *o, void *ctx, const Plan *p, int node, const Expr *e);

#endif
