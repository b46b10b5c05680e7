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
** or a label. A memory reference with a vector is a tensor map and its
** coordinates, [sym, {c0, c1}] (cp.async.bulk.tensor). A vector has any
** number of registers (a wgmma m64n256 f32 accumulator has 128): po_vec
** points at the caller's array and ptx_emit copies it into the function's
** arena, so instructions own their vectors and may be moved by value. */
typedef struct PtxOpnd {
	uint8_t k;
	PReg r;
	int64_t imm;
	float f;
	const char *sym;
	int32_t off;
	int nvec;
	const PReg *vec;
} PtxOpnd;

/* The most operands one instruction takes: wgmma.mma_async has eight (d,
** a-desc, b-desc, scale-d and four immediates); vectors count as one. */
#define PTX_MAXOPND 8

typedef struct PtxInst {
	uint16_t op;
	const char *mods; /* ".lo.s64", ".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", ... */
	uint8_t n;
	PtxOpnd a[PTX_MAXOPND];
	PReg guard; /* @guard or @!guard when set */
	uint8_t neg;
} PtxInst;

typedef struct PtxParam {
	const char *name;
	const char *type; /* ".u64", ".s64", ".f32", ".s32"; ".b8" for a byte array */
	uint32_t align;   /* a byte array's alignment */
	uint32_t nbytes;  /* 0: a scalar; else a byte array (a TMA tensor map: 64, 128) */
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
	uint32_t smem_align; /* of the dynamic shared memory; 0: 128 (TMA swizzles need 1024) */
	int maxntid;
	int minnctapersm; /* 0: not given */
	int nlabels;
} PtxFunc;

void ptx_func_init(PtxFunc *f, Arena *a, const char *name, int maxntid);
const char *ptx_param(PtxFunc *f, const char *name, const char *type);
/* A parameter of nbytes bytes aligned to align, passed by value: a TMA
** tensor map (.param .align 64 .b8 NAME[128]), addressed as po_sym. */
const char *ptx_param_bytes(PtxFunc *f, const char *name, uint32_t align, uint32_t nbytes);
PReg ptx_reg(PtxFunc *f, PtxCls c);
int ptx_new_label(PtxFunc *f);

PtxOpnd po_r(PReg r);
PtxOpnd po_i(int64_t v);
PtxOpnd po_f(float v);
PtxOpnd po_sym(const char *s);
PtxOpnd po_mem(PReg base, int32_t off);
PtxOpnd po_memsym(const char *s, int32_t off);
PtxOpnd po_vec(const PReg *r, int n);
/* m (po_mem or po_memsym, offset 0) with coordinates: [tmap, {c0, ...}]. */
PtxOpnd po_mem_vec(PtxOpnd m, const PReg *r, int n);
PtxOpnd po_label(int l);

/* Appends an instruction with n operands, n <= PTX_MAXOPND (more is a bug in
** the caller: it aborts), copying their vectors into the arena. */
PtxInst *ptx_emit(PtxFunc *f, PtxOpcode op, const char *mods, int n, const PtxOpnd *ops);
void ptx_label(PtxFunc *f, int l);
/* The instruction just emitted runs only where guard is (neg: is not) set. */
void ptx_guard(PtxFunc *f, PReg guard, int neg);

/* One module: header for the target, then each function (a blank line
** between functions). A caller that prints functions as it builds them (so
** that each one's memory can go) uses the three parts: the header with the
** largest ptx_smem_align of all functions, then each function. */
void ptx_print_module(FILE *out, const char *target, const char *version, PtxFunc **fs, int n);
void ptx_print_header(FILE *out, const char *target, const char *version, uint32_t smem_align);
void ptx_print_func(FILE *out, const PtxFunc *f);
uint32_t ptx_smem_align(const PtxFunc *f);

#endif
