/*
** lowering/gpu/keyvec.c: a tile body's float inputs read at the key alone
** (a backward's L and Delta along the streamed query rows, in the kernel
** over key tiles). Each warp loads a tile's values once, before the tile's
** first contraction, lane l the keys j0 + l + 32 r, so that the loads run
** while the contraction does; an element then takes its column's value
** from the lane that holds it (shfl.sync.idx). Loaded per column of the
** thread's after the contraction, they were 16 loads a tile and read, each
** with its 64-bit address live, and their latency stood before the tile's
** first exponential.
*/
#include "gpu.h"

/* Adds e's reads of the key alone, not yet listed, with node's variables;
** subscripts are not searched (their reads are integers). */
static void collect(KernelGen *g, KeyVecs *kv, int node, const Expr *e)
{
	if (!e)
		return;
	if (e->kind != EX_ACCESS) {
		for (int i = 0; i < e->nargs; i++)
			collect(g, kv, node, e->args[i]);
		return;
	}
	g->node = node;
	if (e->tensor->def || e->type != VT_FLOAT || gpu_read_follows(g, e) != 's')
		return;
	for (int k = 0; k < kv->n; k++)
		if (gpu_same_read(g, kv->r[k].node, kv->r[k].e, node, e, 0))
			return;
	if (kv->n == GPU_KEYVEC_MAX)
		return;
	kv->r[kv->n].node = node, kv->r[kv->n].e = e;
	for (int r = 0; r < g->bn / 32; r++)
		kv->r[kv->n].v[r] = gpu_reg(g, PC_F32);
	kv->n++;
}

/* The reads of the element-wise nodes (none where a tile's keys are not
** whole warps of lanes). Before the stream. */
void gpu_keyvec_init(KernelGen *g)
{
	KeyVecs *kv = ARENA_NEW(g->a, KeyVecs);
	g->keyvec = kv;
	if (g->bn % 32)
		return;
	int save = g->node;
	for (int i = 0; i < g->c->nodes.n; i++)
		if (g->s->node[i].kind == SN_MAP)
			collect(g, kv, i, gpu_node(g, i)->body);
	g->node = save;
	if (kv->n)
		kv->lane2 = gpu_reg(g, PC_B32);
}

/* The tile's values from its first key j0, before its contractions: lane l
** loads key min(j0 + l + 32 r, sext - 1) (padding reads an in-bounds key;
** its value is masked out). */
void gpu_keyvec_load(KernelGen *g, PReg j0)
{
	KeyVecs *kv = g->keyvec;
	if (!kv->n)
		return;
	PReg t32 = gpu_reg(g, PC_B32), l64 = gpu_reg(g, PC_B64), last = gpu_reg(g, PC_B64);
	gpu_op2(g, PTX_MOV, ".u32", po_r(t32), po_sym("%tid.x"));
	gpu_op3(g, PTX_AND, ".b32", po_r(t32), po_r(t32), po_i(31));
	gpu_op2(g, PTX_CVT, ".u64.u32", po_r(l64), po_r(t32));
	gpu_op3(g, PTX_AND, ".b32", po_r(kv->lane2), po_r(t32), po_i(3));
	gpu_op3(g, PTX_SHL, ".b32", po_r(kv->lane2), po_r(kv->lane2), po_i(1));
	gpu_op3(g, PTX_SUB, ".s64", po_r(last), po_r(g->sext), po_i(1));
	int node = g->node, elem = g->elem, stage = g->stage;
	PReg col = g->col, col_base = g->col_base;
	g->elem = -1, g->stage = 0, g->col_base = (PReg){0};
	for (int r = 0; r < g->bn / 32; r++) {
		PReg k = gpu_reg(g, PC_B64);
		gpu_op3(g, PTX_ADD, ".s64", po_r(k), po_r(j0), po_r(l64));
		gpu_op3(g, PTX_ADD, ".s64", po_r(k), po_r(k), po_i(32 * r));
		gpu_op3(g, PTX_MIN, ".s64", po_r(k), po_r(k), po_r(last));
		g->col = k;
		for (int i = 0; i < kv->n; i++) {
			g->node = kv->r[i].node;
			PReg v = gpu_load(g, kv->r[i].e->tensor, kv->r[i].e->args);
			gpu_op2(g, PTX_MOV, ".f32", po_r(kv->r[i].v[r]), po_r(v));
		}
	}
	g->node = node, g->elem = elem, g->stage = stage;
	g->col = col, g->col_base = col_base;
}
