/*
** lowering/gpu/hoist.c: moving straight-line code into the kernel's
** prologue, and the register facts that decide whether that keeps its
** meaning (which instructions write or read a register). The data ranges
** over the CTA's rows are computed once this way even where the kernel
** first asks for them inside a loop.
*/
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* Registers are named by class and number; both must agree. */
int gpu_same_preg(PReg a, PReg b)
{
	return a.n == b.n && a.cls == b.cls;
}

/* Whether instruction in writes r: the instructions attnc emits put their
** destination first (stores and copies start with a memory operand). */
static int writes(const PtxInst *in, PReg r)
{
	const PtxOpnd *d = &in->a[0];
	if (!in->n)
		return 0;
	if (d->k == PO_REG)
		return gpu_same_preg(d->r, r);
	for (int v = 0; d->k == PO_VEC && v < d->nvec; v++)
		if (gpu_same_preg(d->vec[v], r))
			return 1;
	return 0;
}

/* Whether instructions code[from, to) hold a label (a point control can
** reach from elsewhere) or write register r1 or r2 (those that are set). */
int gpu_code_has(const PtxFunc *f, int from, int to, PReg r1, PReg r2)
{
	for (int i = from; i < to; i++) {
		const PtxInst *in = &f->code[i];
		if (in->op == PTX_LABEL)
			return 1;
		if ((r1.n && writes(in, r1)) || (r2.n && writes(in, r2)))
			return 1;
	}
	return 0;
}

/* Whether code[from, to) writes r. */
static int written(const PtxFunc *f, int from, int to, PReg r)
{
	for (int i = from; i < to; i++)
		if (writes(&f->code[i], r))
			return 1;
	return 0;
}

/* The end of the kernel's straight-line prologue: the first label, branch
** or ret. Code before it runs once, in every thread, converged, and
** dominates all code after it. */
int gpu_prologue_end(const PtxFunc *f)
{
	int i = 0;
	while (i < f->ncode && f->code[i].op != PTX_LABEL && f->code[i].op != PTX_BRA &&
	       f->code[i].op != PTX_RET)
		i++;
	return i;
}

enum { READS_MAX = 16 };

/* The registers instruction in reads: every register operand but a
** destination, memory bases, and the guard; a guarded instruction also
** keeps its destination's old value. -1 when they are more than READS_MAX
** (a wide vector operand, as wgmma's accumulators): nothing is moved then,
** rather than a read being missed. */
static int reads(const PtxInst *in, PReg *r)
{
	int n = 0;
	for (int k = 0; k < in->n; k++) {
		const PtxOpnd *o = &in->a[k];
		int dest = k == 0 && (o->k == PO_REG || o->k == PO_VEC);
		if (dest && !in->guard.n)
			continue;
		int add = o->k == PO_REG || o->k == PO_MEM ? 1 : o->k == PO_VEC ? o->nvec : 0;
		if (n + add + 1 > READS_MAX)
			return -1; /* more than the callers hold: they move nothing */
		if (o->k == PO_REG || o->k == PO_MEM)
			r[n++] = o->r;
		for (int v = 0; o->k == PO_VEC && v < o->nvec; v++)
			r[n++] = o->vec[v];
	}
	if (in->guard.n)
		r[n++] = in->guard;
	return n;
}

/* Moves the code just emitted, code[s, ncode), to the end of the prologue
** when that keeps its meaning: the registers it sets are used nowhere in
** between, and no register it reads from outside is written between the
** prologue and s (so each holds there the value it holds at s:
** set in the prologue, or never set, like the destination of a predicated
** load). The CTA's row range is then computed once even when the kernel
** first classifies a tile inside a loop. Returns the new end of the moved
** code, or -1; code that was after the prologue's end moved n = ncode - s
** instructions on (the caller's records of positions follow). */
int gpu_hoist(PtxFunc *f, int s)
{
	int p = gpu_prologue_end(f), n = f->ncode - s;
	if (p > s || n <= 0)
		return -1;
	for (int i = s; i < f->ncode; i++) {
		PReg r[READS_MAX];
		int nr = reads(&f->code[i], r);
		if (nr < 0)
			return -1;
		for (int k = 0; k < nr; k++) {
			if (!r[k].n || written(f, s, i, r[k]))
				continue; /* set by the moved code itself */
			if (written(f, p, s, r[k]))
				return -1; /* set, or changed, after the prologue */
		}
		/* what it sets must be its own: not used by the code it moves over */
		const PtxOpnd *d = &f->code[i].a[0];
		for (int j = p; j < s && d->k == PO_REG; j++) {
			PReg u[READS_MAX];
			int nu = reads(&f->code[j], u);
			if (nu < 0)
				return -1;
			for (int k = 0; k < nu; k++)
				if (gpu_same_preg(u[k], d->r))
					return -1;
			if (writes(&f->code[j], d->r))
				return -1;
		}
	}
	PtxInst *tmp = malloc(sizeof *tmp * (size_t)n);
	if (!tmp)
		return -1;
	memcpy(tmp, f->code + s, sizeof *tmp * (size_t)n);
	memmove(f->code + p + n, f->code + p, sizeof *tmp * (size_t)(s - p));
	memcpy(f->code + p, tmp, sizeof *tmp * (size_t)n);
	free(tmp);
	return p + n;
}
