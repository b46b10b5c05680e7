/*
** compiler/pipeline.c: the compiler's pass pipeline, in one place (QBE's
** style): copy the cascade, find its indices and stream, count its passes,
** rewrite it, and choose the kernel's grid and tiles.
*/
#include <string.h>

#include "plan.h"

/* The passes of the textbook cascade and what forces each one, for
** --explain: every barrier is a statement reading a completed reduction. */
static void note_barriers(Arena *a, Plan *p)
{
	for (int i = 0; i < p->c->nodes.n; i++) {
		NodePlan *np = &p->np[i];
		Node *x = p->c->nodes.v[i];
		if ((np->role != ROLE_TILE && np->role != ROLE_RUNNING) || np->barrier < 0)
			continue;
		const Node *b = p->c->nodes.v[np->barrier];
		if (np->pass > p->np[np->barrier].pass && p->np[np->barrier].role != ROLE_TILE)
			plan_note(p, a, x->loc,
				  "barrier: %s needs %s complete, so it runs in pass %d",
				  x->out->name, b->out->name, np->pass);
	}
}

/* A GPU plan with no stream (a backward's row pass, a forward's values
** before its stream: lowering/gpu/rowpass.c): the grid is the indices
** every output is indexed by, the last of the first output's tiled (as
** the query rows are). A temporary over fewer (a scale per head beside
** norms per row) is computed again at each row. */
static void row_grid(Plan *p)
{
	Cascade *c = p->c;
	for (int k = 0; k < p->nclasses; k++)
		p->classes[k].grid = 1;
	int first = -1;
	for (int i = 0; i < c->nodes.n; i++) {
		Node *n = c->nodes.v[i];
		if (n->out->kind != TK_OUT)
			continue;
		for (int k = 0; k < p->nclasses; k++)
			if (!(plan_node_class(p, i, k) & 1))
				p->classes[k].grid = 0;
		if (first < 0)
			first = i;
	}
	if (first < 0)
		return;
	Node *n = c->nodes.v[first];
	if (c->value_last && n->nfree)
		p->classes[p->cls[first][n->nfree - 1]].grid = 0;
	for (int v = n->nfree - 1; v >= 0; v--)
		if (p->classes[p->cls[first][v]].grid) {
			p->classes[p->cls[first][v]].qtile = 1;
			return;
		}
}

/* An output summed within a tile over the kernel's rows and added to by
** every CTA (Tensor.added_to: a backward's dQ = sum[j](dS K) in the kernel
** over key tiles, lowering/gpu/shape.c's sums over rows). Its indices are
** the stream's and a value index, so it has no say in the grid. */
static int summed_across_tiles(const Plan *p, int i)
{
	return ((const Node *)p->c->nodes.v[i])->out->added_to;
}

/* The grid class of an index some input is read at as a row at an offset
** (K[cu_k[b] + j, ..]: j's), or -1: a backward's kernel over key tiles has
** no packed output to say that the keys are its rows, and its parts'
** logical dims (dK_grp[b, j, h, d]) put the heads last. The GPU reads rows
** at offsets only as the tiled rows or the stream. */
static int offset_rows_class(const Plan *p)
{
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Expr *r[64];
		int nr = node_reads(p->c->nodes.v[i], r, 64);
		for (int k = 0; k < nr && k < 64; k++)
			for (int m = 0; m < r[k]->nargs; m++) {
				const Expr *row = NULL;
				if (expr_offset_row(r[k]->args[m], &row) &&
				    p->classes[p->cls[i][row->var]].grid)
					return p->cls[i][row->var];
			}
	}
	return -1;
}

/* The kernel's grid: indices every running state is indexed by and some
** tile value is too (batch, heads, queries; not the value dimension of V,
** which only the states carry); the query-like one, last in the first
** output, is tiled. A tile value indexed by fewer of them (a bucket of
** (i, j) only, T5's) is the same at every point of the missing ones: it
** is computed again at each, and must not take them out of the grid (they
** would become state dims, B x H floats per query row). */
static void choose_grid(Plan *p)
{
	Cascade *c = p->c;
	int any = 0, tiles = 0;
	for (int i = 0; i < c->nodes.n; i++)
		if (!summed_across_tiles(p, i))
			any |= p->np[i].role == ROLE_RUNNING, tiles |= p->np[i].role == ROLE_TILE;
	for (int k = 0; k < p->nclasses; k++) {
		/* in every running state, free in some tile value and summed by
		** none (a reference backward's dV = sum[i](..) over a stream of b
		** would sum across grid points) */
		int all = k != p->stream, some = !tiles, summed = 0;
		for (int i = 0; i < c->nodes.n; i++) {
			NodeRole r = p->np[i].role;
			if (summed_across_tiles(p, i) || (r != ROLE_RUNNING && r != ROLE_TILE))
				continue;
			int m = plan_node_class(p, i, k);
			if (r == ROLE_RUNNING)
				all &= m & 1;
			else
				some |= m & 1, summed |= m & 2;
		}
		p->classes[k].grid = all && some && !summed;
	}
	if (!any && (p->stream >= 0 || !strcmp(p->target, "cpu")))
		for (int k = 0; k < p->nclasses; k++)
			p->classes[k].grid = 0;
	if (!any && p->stream < 0 && strcmp(p->target, "cpu"))
		row_grid(p);
	int offset_rows = offset_rows_class(p);
	for (int i = 0; i < c->nodes.n; i++) {
		Node *n = c->nodes.v[i];
		if (n->out->kind != TK_OUT || p->np[i].role == ROLE_PROLOGUE ||
		    summed_across_tiles(p, i))
			continue;
		/* a packed output's rows at offsets are the tiled rows, wherever
		** its logical dims put them (o[cu[b] + i, h, e] is over b, i, h, e) */
		int row = n->out->pack ? n->out->pack->row : -1;
		if (row >= 0 && p->classes[p->cls[i][row]].grid) {
			p->classes[p->cls[i][row]].qtile = 1;
			return;
		}
		if (offset_rows >= 0) {
			p->classes[offset_rows].qtile = 1;
			return;
		}
		for (int v = n->nfree - 1; v >= 0; v--)
			if (p->classes[p->cls[i][v]].grid) {
				p->classes[p->cls[i][v]].qtile = 1;
				return;
			}
	}
}

/* The largest compile-time dim of c (0: none), a head dim's stand-in. */
static long widest_fixed_dim(const Cascade *c)
{
	long w = 0;
	for (int i = 0; i < c->dims.n; i++) {
		const Dim *d = c->dims.v[i];
		if (d->fixed > w)
			w = d->fixed;
	}
	return w;
}

/* The fewest equal slices, each a multiple of 32 (the kernels' k-steps and
** 16-byte copies) within PLAN_MAX_DV: absorbed MLA's 512 is two of 256. */
int plan_value_slices(long dv)
{
	for (int k = 1; dv > 0 && dv % 32 == 0 && k <= PLAN_MAX_VSLICES; k++)
		if (dv % k == 0 && dv / k % 32 == 0 && dv / k <= PLAN_MAX_DV)
			return k;
	return 0;
}

static void choose_tiles(Plan *p)
{
	if (!strcmp(p->target, "cpu"))
		p->tile_q = 16, p->tile_kv = 64, p->stages = 1;
	else if (!strcmp(p->target, "sm_80"))
		/* the GPU kernel: 128 query rows per CTA (64 where ptxas spills the
		** 128-row kernel, lowering/gpu/tune.c), key tiles of GPU_BN, double
		** buffered */
		p->tile_q = 128, p->tile_kv = 64, p->stages = 2;
	else if (!strcmp(p->target, "sm_90a"))
		/* two consumer warpgroups of 64 rows, key tiles of 128 where the head
		** dims (the fixed dims) are at most 128, else 64 (lowering/sm90's
		** sm90_block_n, which also keeps 64 with --parts and where 128
		** spills), a ring of at least 2 stages (up to 4 where shared memory
		** allows, lowering/sm90/layout.c) */
		p->tile_q = 128, p->tile_kv = widest_fixed_dim(p->c) <= 128 ? 128 : 64,
		p->stages = 2;
	else
		p->tile_q = 128, p->tile_kv = 128, p->stages = 2;
}

Plan *plan_build(Arena *a, const Cascade *c, const char *target)
{
	Plan *p = ARENA_NEW(a, Plan);
	p->orig = c;
	p->c = cascade_clone(a, c);
	p->target = target ? target : "cpu";
	plan_classes(a, p);
	p->passes_before = plan_passes(a, p, 0);
	note_barriers(a, p);
	p->passes_defer = p->passes_after = p->passes_before;
	plan_rewrite(a, p);
	choose_grid(p);
	choose_tiles(p);
	return p;
}
