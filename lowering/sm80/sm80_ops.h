/*
** lowering/sm80/sm80_ops.h: the emit helpers that sm80_expr.c and
** sm80_scale.c share: a fresh register, and an instruction of up to four
** operands (E1..E4). sm80_kernel.c keeps its own, of five operands.
*/
#ifndef ATTN_SM80_OPS_H
#define ATTN_SM80_OPS_H

#include "sm80.h"

static inline PReg R(Gen *g, PtxCls c)
{
	return ptx_reg(g->f, c);
}

static inline void E(Gen *g, PtxOpcode op, const char *m, int n, PtxOpnd a, PtxOpnd b, PtxOpnd c,
		     PtxOpnd d)
{
	PtxOpnd o[4] = {a, b, c, d};
	ptx_emit(g->f, op, m, n, o);
}

#define E1(op, m, a)          E(g, op, m, 1, a, (PtxOpnd){0}, (PtxOpnd){0}, (PtxOpnd){0})
#define E2(op, m, a, b)       E(g, op, m, 2, a, b, (PtxOpnd){0}, (PtxOpnd){0})
#define E3(op, m, a, b, c)    E(g, op, m, 3, a, b, c, (PtxOpnd){0})
#define E4(op, m, a, b, c, d) E(g, op, m, 4, a, b, c, d)

#endif
