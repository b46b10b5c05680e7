/*
** lowering/ptx/ptx.h: the PTX builder shared by every GPU target.
** A kernel is a list of instructions on typed virtual registers, built in
** the compile arena and printed at the end, when the register counts and
** the shared-memory size are known; ptxas does the real allocation.
*/
#ifndef ATTN_PTX_H
#define ATTN_PTX_H

#include <stdint.h>
#include <stdio.h>

#include "../../support/arena.h"

typedef enum PtxOpcode {
#define PTX_OP(id, mn) PTX_##id,
#include "ptx_ops.def"
#undef PTX_OP
	PTX_NOPS
} PtxOpcode;

/* Register classes, printed as %p, %h, %r, %rd, %f. */
typedef enum PtxCls { PC_PRED, PC_B16, PC_B32, PC_B64, PC_F32, PC_NCLS } PtxCls;

typedef struct PReg {
	uint8_t cls;
	uint32_t n; /* 0: no register */
} PReg;

typedef enum PoKind { PO_NONE, PO_REG, PO_IMM, PO_FIMM, PO_SYM, PO_MEM, PO_VEC, PO_LABEL } PoKind;

/* An operand: a register, an integer or f32 immediate, a symbol (a kernel
** parameter), a memory reference [reg+off] or [sym+off], a vector {a, b, ...}
** or a label. */
typedef struct PtxOpnd {
	uint8_t k;
	PReg r;
	int64_t imm;
	float f;
	const char *sym;
	int32_t off;
	uint8_t nvec;
	PReg vec[4];
} PtxOpnd;

typedef struct PtxInst {
	uint16_t op;
	const char *mods; /* ".lo.s64", ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", ... */
	uint8_t n;
	PtxOpnd a[6];
	PReg guard; /* @guard or @!guard when set */
	uint8_t neg;
} PtxInst;

typedef struct PtxParam {
	const char *name;
	const char *type; /* ".u64", ".s64", ".f32", ".s32" */
} PtxParam;

typedef struct PtxFunc {
	Arena *a;
	const char *name;
	PtxParam *params;
	int nparams, capparams;
	PtxInst *code;
	int ncode, capcode;
	uint32_t nreg[PC_NCLS];
	uint32_t smem_bytes; /* dynamic shared memory */
	int maxntid;
	int nlabels;
} PtxFunc;

void ptx_func_init(PtxFunc *f, Arena *a, const char *name, int maxntid);
const char *ptx_param(PtxFunc *f, const char *name, const char *type);
PReg ptx_reg(PtxFunc *f, PtxCls c);
int ptx_new_label(PtxFunc *f);

PtxOpnd po_r(PReg r);
PtxOpnd po_i(int64_t v);
PtxOpnd po_f(float v);
PtxOpnd po_sym(const char *s);
PtxOpnd po_mem(PReg base, int32_t off);
PtxOpnd po_memsym(const char *s, int32_t off);
PtxOpnd po_vec(const PReg *r, int n);
PtxOpnd po_label(int l);

/* Appends an instruction with up to 6 operands (po_none-terminated list). */
PtxInst *ptx_emit(PtxFunc *f, PtxOpcode op, const char *mods, int n, const PtxOpnd *ops);
void ptx_label(PtxFunc *f, int l);
/* The instruction just emitted runs only where guard is (neg: is not) set. */
void ptx_guard(PtxFunc *f, PReg guard, int neg);

/* One module: header for the target, then each function. */
void ptx_print_module(FILE *out, const char *target, const char *version, PtxFunc **fs, int n);

#endif
