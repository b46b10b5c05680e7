/*
** lowering/ptx/ptx.c: building and printing PTX (see ptx.h).
*/
#include "ptx.h"

#include <stdlib.h>
#include <string.h>

static const char *mnemonics[PTX_NOPS] = {
#define PTX_OP(id, mn) [PTX_##id] = mn,
#include "ptx_ops.def"
#undef PTX_OP
};

/* Register class: PTX declaration type and name prefix. */
static const struct {
	const char *type, *prefix;
} cls_tab[PC_NCLS] = {
    [PC_PRED] = {".pred", "%p"}, [PC_B16] = {".b16", "%h"}, [PC_B32] = {".b32", "%r"},
    [PC_B64] = {".b64", "%rd"},  [PC_F32] = {".f32", "%f"},
};

void ptx_func_init(PtxFunc *f, Arena *a, const char *name, int maxntid)
{
	memset(f, 0, sizeof *f);
	f->a = a, f->name = name, f->maxntid = maxntid;
}

/* Parameters are named FUNC_NAME, so several kernels share one module. */
static const char *add_param(PtxFunc *f, const char *name, PtxParam p)
{
	if (f->nparams == f->capparams) {
		int cap = f->capparams ? f->capparams * 2 : 16;
		f->params = arena_realloc(f->a, f->params, sizeof(PtxParam) * (size_t)f->capparams,
					  sizeof(PtxParam) * (size_t)cap);
		f->capparams = cap;
	}
	p.name = arena_printf(f->a, "%s_%s", f->name, name);
	f->params[f->nparams++] = p;
	return p.name;
}

const char *ptx_param(PtxFunc *f, const char *name, const char *type)
{
	return add_param(f, name, (PtxParam){.type = type});
}

/* Tensor maps travel by value in the parameter space (CUDA's
** __grid_constant__), where cp.async.bulk.tensor reads them. */
const char *ptx_param_bytes(PtxFunc *f, const char *name, uint32_t align, uint32_t nbytes)
{
	return add_param(f, name, (PtxParam){.type = ".b8", .align = align, .nbytes = nbytes});
}

PReg ptx_reg(PtxFunc *f, PtxCls c)
{
	PReg r = {(uint8_t)c, ++f->nreg[c]};
	return r;
}

int ptx_new_label(PtxFunc *f)
{
	return ++f->nlabels;
}

PtxOpnd po_r(PReg r)
{
	return (PtxOpnd){.k = PO_REG, .r = r};
}
PtxOpnd po_i(int64_t v)
{
	return (PtxOpnd){.k = PO_IMM, .imm = v};
}
PtxOpnd po_f(float v)
{
	return (PtxOpnd){.k = PO_FIMM, .f = v};
}
PtxOpnd po_sym(const char *s)
{
	return (PtxOpnd){.k = PO_SYM, .sym = s};
}
PtxOpnd po_mem(PReg base, int32_t off)
{
	return (PtxOpnd){.k = PO_MEM, .r = base, .off = off};
}
PtxOpnd po_memsym(const char *s, int32_t off)
{
	return (PtxOpnd){.k = PO_MEM, .sym = s, .off = off};
}
PtxOpnd po_label(int l)
{
	return (PtxOpnd){.k = PO_LABEL, .imm = l};
}

/* The operand borrows r until ptx_emit copies it: see PtxOpnd. */
PtxOpnd po_vec(const PReg *r, int n)
{
	return (PtxOpnd){.k = PO_VEC, .nvec = n, .vec = r};
}

/* TMA addresses a box of a tensor by its map and one coordinate per
** dimension, both inside one pair of brackets. */
PtxOpnd po_mem_vec(PtxOpnd m, const PReg *r, int n)
{
	m.nvec = n, m.vec = r;
	return m;
}

/* An instruction outlives its caller's arrays: its vectors move into the
** arena. More operands than PTX_MAXOPND is a caller bug, never input's. */
PtxInst *ptx_emit(PtxFunc *f, PtxOpcode op, const char *mods, int n, const PtxOpnd *ops)
{
	if (n < 0 || n > PTX_MAXOPND) {
		fprintf(stderr, "ptx_emit: %d operands for %s (at most %d)\n", n, mnemonics[op],
			PTX_MAXOPND);
		abort();
	}
	if (f->ncode == f->capcode) {
		int cap = f->capcode ? f->capcode * 2 : 256;
		f->code = arena_realloc(f->a, f->code, sizeof(PtxInst) * (size_t)f->capcode,
					sizeof(PtxInst) * (size_t)cap);
		f->capcode = cap;
	}
	PtxInst *in = &f->code[f->ncode++];
	memset(in, 0, sizeof *in);
	in->op = (uint16_t)op, in->mods = mods ? mods : "", in->n = (uint8_t)n;
	for (int i = 0; i < n; i++) {
		in->a[i] = ops[i];
		in->a[i].vec = NULL, in->a[i].nvec = 0;
		if (ops[i].nvec > 0) {
			PReg *v = ARENA_ARRAY(f->a, PReg, ops[i].nvec);
			memcpy(v, ops[i].vec, sizeof *v * (size_t)ops[i].nvec);
			in->a[i].vec = v, in->a[i].nvec = ops[i].nvec;
		}
	}
	return in;
}

void ptx_label(PtxFunc *f, int l)
{
	PtxOpnd o = po_label(l);
	ptx_emit(f, PTX_LABEL, "", 1, &o);
}

void ptx_guard(PtxFunc *f, PReg guard, int neg)
{
	if (f->ncode) {
		f->code[f->ncode - 1].guard = guard;
		f->code[f->ncode - 1].neg = (uint8_t)neg;
	}
}

static void print_reg(FILE *o, PReg r)
{
	fprintf(o, "%s%u", cls_tab[r.cls].prefix, r.n);
}

/* {a, b, ...}: wgmma accumulators run to 128 registers on one line. */
static void print_vec(FILE *o, const PReg *v, int n)
{
	fputc('{', o);
	for (int i = 0; i < n; i++) {
		if (i)
			fputs(", ", o);
		print_reg(o, v[i]);
	}
	fputc('}', o);
}

static void print_opnd(FILE *o, const PtxOpnd *x)
{
	switch (x->k) {
	case PO_REG: print_reg(o, x->r); break;
	case PO_IMM: fprintf(o, "%lld", (long long)x->imm); break;
	case PO_FIMM: {
		uint32_t bits;
		memcpy(&bits, &x->f, 4);
		fprintf(o, "0f%08X", bits);
		break;
	}
	case PO_SYM: fputs(x->sym, o); break;
	case PO_MEM:
		fputc('[', o);
		if (x->sym)
			fputs(x->sym, o);
		else
			print_reg(o, x->r);
		if (x->off)
			fprintf(o, "+%d", x->off);
		if (x->nvec) {
			fputs(", ", o);
			print_vec(o, x->vec, x->nvec);
		}
		fputc(']', o);
		break;
	case PO_VEC: print_vec(o, x->vec, x->nvec); break;
	case PO_LABEL: fprintf(o, "$L%lld", (long long)x->imm); break;
	default: break;
	}
}

/* One function, as the module prints it after its header. */
void ptx_print_func(FILE *o, const PtxFunc *f)
{
	fprintf(o, ".visible .entry %s(\n", f->name);
	for (int i = 0; i < f->nparams; i++) {
		const PtxParam *p = &f->params[i];
		const char *sep = i + 1 < f->nparams ? "," : "";
		if (p->nbytes)
			fprintf(o, "\t.param .align %u %s %s[%u]%s\n", p->align, p->type, p->name,
				p->nbytes, sep);
		else
			fprintf(o, "\t.param %s %s%s\n", p->type, p->name, sep);
	}
	fprintf(o, ")\n.maxntid %d, 1, 1\n", f->maxntid);
	if (f->minnctapersm)
		fprintf(o, ".minnctapersm %d\n", f->minnctapersm);
	fputs("{\n", o);
	for (int c = 0; c < PC_NCLS; c++)
		if (f->nreg[c])
			fprintf(o, "\t.reg %s %s<%u>;\n", cls_tab[c].type, cls_tab[c].prefix,
				f->nreg[c] + 1);
	for (int i = 0; i < f->ncode; i++) {
		const PtxInst *in = &f->code[i];
		if (in->op == PTX_LABEL) {
			fprintf(o, "$L%lld:\n", (long long)in->a[0].imm);
			continue;
		}
		fputc('\t', o);
		if (in->guard.n) {
			fputs(in->neg ? "@!" : "@", o);
			print_reg(o, in->guard);
			fputc(' ', o);
		}
		fprintf(o, "%s%s", mnemonics[in->op], in->mods);
		for (int k = 0; k < in->n; k++) {
			fputs(k ? ", " : " ", o);
			print_opnd(o, &in->a[k]);
		}
		fputs(";\n", o);
	}
	fputs("}\n", o);
}

/* The module's alignment of dynamic shared memory: the most demanding of
** the functions that use it (0: none does). */
uint32_t ptx_smem_align(const PtxFunc *f)
{
	return f->smem_bytes ? (f->smem_align ? f->smem_align : 128) : 0;
}

/* Dynamic shared memory is one module-scope symbol, so the header needs the
** largest alignment of all functions before any of them is printed. */
void ptx_print_header(FILE *out, const char *target, const char *version, uint32_t smem_align)
{
	fprintf(
	    out,
	    "// Generated by attnc. Do not edit.\n.version %s\n.target %s\n.address_size 64\n\n",
	    version, target);
	if (smem_align)
		fprintf(out, ".extern .shared .align %u .b8 smem[];\n\n", smem_align);
}

void ptx_print_module(FILE *out, const char *target, const char *version, PtxFunc **fs, int n)
{
	uint32_t align = 0;
	for (int i = 0; i < n; i++) {
		uint32_t a = ptx_smem_align(fs[i]);
		align = a > align ? a : align;
	}
	ptx_print_header(out, target, version, align);
	for (int i = 0; i < n; i++) {
		if (i)
			fputc('\n', out);
		ptx_print_func(out, fs[i]);
	}
}
