/*
** compiler/cascade_piece.c: a cascade cut from some nodes of another, for
** a computation the GPU runs as several kernels: a backward's row pass, dQ
** and dK/dV kernels (grad_split.c), a forward's passes over the keys
** (pass_split.c). What one piece computes for a later one travels as an
** f32 tensor, an output of the first and an input of the second.
*/
#include <string.h>

#include "plan.h"

/* A temporary's name as the generated interfaces' fields take it: the
** dots of desugared names (dO.softmax.sum) become underscores. */
const char *cascade_c_name(Arena *a, const char *name)
{
	char *r = arena_printf(a, "%s", name);
	for (char *q = r; *q; q++)
		if (*q == '.')
			*q = '_';
	return r;
}

int cascade_c_name_is(const char *name, const char *c_name)
{
	while (*name && (*name == *c_name || (*name == '.' && *c_name == '_')))
		name++, c_name++;
	return !*name && !*c_name;
}

/* The class in plan p of each dimension of each of its cascade's tensors
** (slot off(t) + k, tensors in order), or -1: the class of a variable
** that writes it or reads it as a plain index. */
static int *slot_classes(Arena *a, const Plan *p)
{
	const Cascade *c = p->c;
	int n = 0;
	int *off = ARENA_ARRAY(a, int, c->tensors.n + 1);
	for (int t = 0; t < c->tensors.n; t++)
		off[t] = n, n += ((const Tensor *)c->tensors.v[t])->rank;
	int *slot = ARENA_ARRAY(a, int, n + 1);
	for (int k = 0; k < n; k++)
		slot[k] = -1;
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *x = c->nodes.v[i];
		for (int v = 0; v < x->nfree; v++)
			slot[off[x->out->id] + v] = p->cls[i][v];
		const Expr *r[256];
		int nr = node_reads(x, r, 256);
		for (int m = 0; m < nr && m < 256; m++)
			for (int k = 0; k < r[m]->nargs; k++)
				if (r[m]->args[k]->kind == EX_INDEX &&
				    slot[off[r[m]->tensor->id] + k] < 0)
					slot[off[r[m]->tensor->id] + k] =
					    p->cls[i][r[m]->args[k]->var];
	}
	/* the slots' offsets are by the source's tensor order: prepend them */
	int *r = ARENA_ARRAY(a, int, n + c->tensors.n + 1);
	memcpy(r, off, sizeof(int) * (size_t)c->tensors.n);
	memcpy(r + c->tensors.n, slot, sizeof(int) * (size_t)n);
	return r;
}

/* Piece r's ties (Cascade.ties): each dimension of its tensors tied to the
** first one of the same class in the source's plan (slot: slot_classes of
** the source, whose tensors c, the source's clone, lists in order; only
** that class where only >= 0). Why:
** a piece's own classes join only through what it computes; two softmaxes'
** statistics in one pass share no tensor, and their query rows would be two
** classes, one of them not the tiled rows. */
static void tie_classes(Arena *a, const Cascade *c0, const Cascade *c, Cascade *r, const Plan *src,
			const int *slot, int only)
{
	int nclasses = src->nclasses, ns = src->c->tensors.n;
	int *first = ARENA_ARRAY(a, int, 2 * nclasses + 2);
	for (int k = 0; k < 2 * nclasses; k++)
		first[k] = -1;
	/* a class over two dimensions of one tensor (GQA's packed rows, a
	** query head's g and its rows i, tiled together) is not one index:
	** it ties nothing */
	char *packed = ARENA_ARRAY(a, char, nclasses + 1);
	for (int t = 0; t < ns; t++) {
		const Tensor *y = src->c->tensors.v[t];
		for (int k = 0; k < y->rank; k++)
			for (int m = 0; m < k; m++) {
				int cl = slot[ns + slot[t] + k];
				if (cl >= 0 && cl == slot[ns + slot[t] + m])
					packed[cl] = 1;
			}
	}
	int cap = 0;
	for (int t = 0; t < c->tensors.n; t++)
		cap += ((const Tensor *)c->tensors.v[t])->rank;
	int *ties = ARENA_ARRAY(a, int, 4 * cap + 4), n = 0;
	for (int t = 0; t < c->tensors.n; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->id >= r->tensors.n || r->tensors.v[x->id] != x)
			continue; /* not in the piece */
		/* the source's tensor: the same, or the one of its name */
		int st = t;
		if (src->c != c0) {
			const Tensor *y =
			    cascade_tensor(src->c, ((const Tensor *)c0->tensors.v[t])->name);
			if (!y || y->rank != x->rank)
				continue;
			st = y->id;
		}
		for (int k = 0; k < x->rank; k++) {
			int cl = slot[ns + slot[st] + k];
			if (cl < 0 || packed[cl] || (only >= 0 && cl != only))
				continue;
			if (first[2 * cl] < 0) {
				first[2 * cl] = x->id, first[2 * cl + 1] = k;
				continue;
			}
			int *q = ties + 4 * n++;
			q[0] = first[2 * cl], q[1] = first[2 * cl + 1], q[2] = x->id, q[3] = k;
		}
	}
	r->ties = ties, r->nties = n;
}

/* A new cascade NAME from the nodes keep[] of c (a private copy), in
** order: the outputs among them are out[] (others become temporaries),
** results of an earlier kernel that they read (row[]) become f32 inputs, and tensors nothing reads
** are dropped. Ids are renumbered; dims and params are shared. */
Cascade *cascade_piece(Arena *a, const Cascade *c0, const char *name, const char *keep,
		       const char *out, const char *row, const Plan *src, int src_cls)
{
	int *slot = src ? slot_classes(a, src) : NULL;
	Cascade *c = cascade_clone(a, c0);
	int nt = c->tensors.n;
	char *used = ARENA_ARRAY(a, char, nt + 1);
	for (int i = 0; i < c->nodes.n; i++) {
		if (!keep[i])
			continue;
		const Node *n = c->nodes.v[i];
		const Pack *pk = n->out->pack;
		used[n->out->id] = 1;
		/* and what the output's domain and its packed place read (the
		** offsets of a backward's dV summed from GQA's parts, whose
		** node reads the parts alone) */
		for (int t = 0; t < nt; t++) {
			const Tensor *x = c->tensors.v[t];
			int by_pack = 0;
			for (int k = 0; pk && k < pk->rank; k++)
				by_pack |= expr_reads(pk->at[k], x);
			if (expr_reads(n->body, x) || expr_reads(n->filter, x) ||
			    expr_reads(n->out->domain, x) || by_pack)
				used[t] = 1;
		}
	}
	Cascade *r = ARENA_NEW(a, Cascade);
	r->name = name, r->loc = c->loc, r->dims = c->dims, r->params = c->params;
	/* inputs (the original ones, then the row pass's results), outputs,
	** temporaries: the order the interfaces take */
	for (int pass = 0; pass < 4; pass++)
		for (int t = 0; t < nt; t++) {
			Tensor *x = c->tensors.v[t];
			if (!used[t])
				continue;
			int d = x->def ? x->def->id : -1;
			int is_row = d >= 0 && !keep[d] && row[d];
			int is_out = d >= 0 && keep[d] && out[d];
			int cls = x->kind == TK_IN ? 0 : is_row ? 1 : is_out ? 2 : 3;
			if (cls != pass)
				continue;
			if (is_row || (d >= 0 && keep[d] && out[d] && strchr(x->name, '.')))
				x->name = cascade_c_name(a, x->name);
			if (is_row)
				x->kind = TK_IN, x->def = NULL, x->dtype = DT_F32;
			else if (d >= 0)
				x->kind = is_out ? TK_OUT : TK_TEMP;
			x->id = r->tensors.n;
			ptrvec_push(a, &r->tensors, x);
		}
	for (int i = 0; i < c->nodes.n; i++)
		if (keep[i]) {
			Node *n = c->nodes.v[i];
			n->id = r->nodes.n;
			ptrvec_push(a, &r->nodes, n);
		}
	if (slot)
		tie_classes(a, c0, c, r, src, slot, src_cls);
	return r;
}

/* Node n into c at position at (c->nodes.n: last), every node's id its
** new position. Why: the backward's cut adds nodes before the ones that
** read them (grad_split.c's parts, grad_flash.c's logsumexp). */
void cascade_insert_node(Arena *a, Cascade *c, int at, Node *n)
{
	PtrVec nodes = {0};
	for (int k = 0; k < c->nodes.n; k++) {
		if (k == at)
			ptrvec_push(a, &nodes, n);
		ptrvec_push(a, &nodes, c->nodes.v[k]);
	}
	if (at >= c->nodes.n)
		ptrvec_push(a, &nodes, n);
	for (int k = 0; k < nodes.n; k++)
		((Node *)nodes.v[k])->id = k;
	c->nodes = nodes;
}
