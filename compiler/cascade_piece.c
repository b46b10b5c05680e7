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

/* A new cascade NAME from the nodes keep[] of c (a private copy), in
** order: the outputs among them are out[] (others become temporaries),
** results of an earlier kernel that they read (row[]) become f32 inputs, and tensors nothing reads
** are dropped. Ids are renumbered; dims and params are shared. */
Cascade *cascade_piece(Arena *a, const Cascade *c0, const char *name, const char *keep,
		       const char *out, const char *row)
{
	Cascade *c = cascade_clone(a, c0);
	int nt = c->tensors.n;
	char *used = ARENA_ARRAY(a, char, nt + 1);
	for (int i = 0; i < c->nodes.n; i++) {
		if (!keep[i])
			continue;
		const Node *n = c->nodes.v[i];
		used[n->out->id] = 1;
		for (int t = 0; t < nt; t++)
			if (expr_reads(n->body, c->tensors.v[t]) ||
			    expr_reads(n->filter, c->tensors.v[t]))
				used[t] = 1;
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
