/*
** lowering/c/c_gen.h: state shared by the C back end's files.
**   c_emit.c     the translation unit: helpers, entry points, header
**   c_expr.c     expressions, tensor addressing, interval tests of masks
**   c_kernel.c   node loops: materialised (prologue, multi-pass plans) and
**                streamed (one pass: grid x query tiles x KV tiles with
**                running states, rescales and the merge of partitions)
*/
#ifndef ATTN_C_GEN_H
#define ATTN_C_GEN_H

#include <stdio.h>

#include "../../compiler/plan.h"

/* Where a tensor lives in the generated code. */
typedef enum StoreKind {
	ST_GLOBAL, /* whole tensor, row-major: inputs, outputs, materialised temps */
	ST_LOCAL,  /* per grid point and tile: TILE buffers, running states, epilogue values */
} StoreKind;

/* How one dimension of a local buffer is indexed. */
typedef enum LocalDim {
	LD_GRID,   /* fixed for the whole grid point: not stored */
	LD_QTILE,  /* query tile: index - q0, extent TQ */
	LD_STREAM, /* KV tile: index - j0, extent TKV */
	LD_FULL,   /* any other index: full extent */
} LocalDim;

typedef struct Store {
	StoreKind kind;
	LocalDim *ld; /* [rank] for ST_LOCAL */
} Store;

typedef struct CGen {
	FILE *o;
	Arena *a;
	const Plan *p;
	const Cascade *c;
	int f64;
	int streamed;       /* the one-pass kernel (else everything materialised) */
	Store *st;          /* [ntensors] */
	const char **var;   /* C expression of each variable of the node being emitted */
	const char *prefix; /* buffer prefix for local reads: "b" (current) unless rebasing */
	int ind;            /* indentation */
	int gathers;        /* the cascade reads through data (cg_cascade_gathers) */
} CGen;

/* c_expr.c */
void cg_line(CGen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_expr(CGen *g, const Expr *e);
const char *cg_expr_str(CGen *g, const Expr *e);
void cg_indent(CGen *g);
/* The address (C expression) of element args of tensor t, in buffer prefix. */
void cg_addr(CGen *g, const Tensor *t, Expr *const *args, const char *prefix);
const char *cg_real(const CGen *g);
/* Some read of c's has a subscript that reads data (a gather): such
** subscripts are checked against their extents (attn_gix). */
int cg_cascade_gathers(const Cascade *c);
/* Emits `int NAME = class of node's filter over the current tile box;` (0
** never, 1 always, 2 decided per element), by compiler/intervals.c's rule. */
void cg_tile_class(CGen *g, int node, const char *name);
LocalDim cg_local_dim(const CGen *g, int node, int var);

/* c_kernel.c */
int cg_streamable(CGen *g, const char **why);
void cg_materialised(CGen *g, int node);
void cg_stream_kernel(CGen *g);
/* A packed output (Tensor.pack): its node computes the logical tensor into
** a buffer of the entry's own, whose present points cg_store_packed stores
** at their places in the caller's. */
void cg_packed_buffer(CGen *g, const Tensor *t);
void cg_store_packed(CGen *g, const Tensor *t);

#endif
