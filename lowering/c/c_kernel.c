/*
** lowering/c/c_kernel.c: loops of the C back end.
**
** Streamed (one-pass plans): OpenMP over the grid (batch, heads, query
** tiles); per grid point the KV index is walked tile by tile, optionally
** split into partitions whose partial states are merged with the plan's
** merge rule. Per tile, each node's mask gets a tile class from the
** interval test (empty tiles skipped, full tiles unmasked), TILE nodes fill
** tile buffers, running references grow, rebased sums are rescaled by rho
** and accumulate, and after the stream the epilogue finalises and writes
** the outputs.
** Materialised (multi-pass plans, prologue nodes): each node's whole
** iteration space, into whole tensors: passes are paid for with memory.
*/
#include <stdlib.h>
#include <string.h>

#include "c_gen.h"

static const Node *node(const CGen *g, int i)
{
	return g->p->c->nodes.v[i];
}
static const NodePlan *np(const CGen *g, int i)
{
	return &g->p->np[i];
}

static const char *vname(CGen *g, int i, int v)
{
	if (g->streamed && cg_local_dim(g, i, v) == LD_GRID)
		return arena_printf(g->a, "g_%d", g->p->cls[i][v]);
	return arena_printf(g->a, "v%d", v);
}

static void set_vars(CGen *g, int i)
{
	const Node *n = node(g, i);
	g->var = ARENA_ARRAY(g->a, const char *, n->nfree + n->nred + 1);
	for (int v = 0; v < n->nfree + n->nred; v++)
		g->var[v] = vname(g, i, v);
}

/* Opens the loop of variable v (unless it is a grid index) and returns 1
** when it did. */
static int open_loop(CGen *g, int i, int v)
{
	const Node *n = node(g, i);
	const char *lo = "0", *hi = NULL;
	if (g->streamed) {
		switch (cg_local_dim(g, i, v)) {
		case LD_GRID: return 0;
		case LD_QTILE: lo = "q0", hi = "q1"; break;
		case LD_STREAM: lo = "j0", hi = "j1"; break;
		default: break;
		}
	}
	if (!hi)
		hi = cg_expr_str(g, n->vars[v].extent);
	cg_line(g, "for (long v%d = %s; v%d < %s; v%d++) {", v, lo, v, hi, v);
	g->ind++;
	return 1;
}

static void close_loops(CGen *g, int n)
{
	while (n--) {
		g->ind--;
		cg_line(g, "}");
	}
}

static Expr **free_args(CGen *g, const Node *n)
{
	Expr **args = ARENA_ARRAY(g->a, Expr *, n->nfree + 1);
	for (int k = 0; k < n->nfree; k++)
		args[k] = expr_index(g->a, k);
	return args;
}

static void store(CGen *g, const Node *n, const char *prefix)
{
	cg_indent(g);
	cg_addr(g, n->out, free_args(g, n), prefix);
}

/* The same element in the global output tensor, whatever its storage. */
static void store_global(CGen *g, const Node *n)
{
	Store save = g->st[n->out->id];
	g->st[n->out->id].kind = ST_GLOBAL;
	store(g, n, "b");
	g->st[n->out->id] = save;
}

static const char *identity(RedOp r)
{
	switch (r) {
	case RED_SUM: return "(real)0";
	case RED_PROD: return "(real)1";
	case RED_MAX: return "(-INFINITY)";
	case RED_MIN: return "(INFINITY)";
	default: return "0";
	}
}

static void combine(CGen *g, RedOp r, const char *acc, const char *x)
{
	switch (r) {
	case RED_SUM: cg_line(g, "%s += %s;", acc, x); break;
	case RED_PROD: cg_line(g, "%s *= %s;", acc, x); break;
	case RED_MAX: cg_line(g, "%s = attn_maxf(%s, %s);", acc, acc, x); break;
	case RED_MIN: cg_line(g, "%s = attn_minf(%s, %s);", acc, acc, x); break;
	default: break;
	}
}

static const char *ctype(const Tensor *t)
{
	return t->type == VT_FLOAT ? "real" : t->type == VT_INT ? "long" : "unsigned char";
}

/* The body's value into `x`, skipping masked points (`cls` says whether the
** mask must be evaluated at all in this tile). */
static void eval_body(CGen *g, const Node *n, const char *cls)
{
	if (n->filter) {
		cg_indent(g);
		fprintf(g->o, "if (%s != 1 && !(", cls);
		cg_expr(g, n->filter);
		fputs(")) continue;\n", g->o);
	}
	cg_indent(g);
	fprintf(g->o, "%s x = ", n->out->type == VT_FLOAT || n->red != RED_NONE ? "real" : "long");
	cg_expr(g, n->body);
	fputs(";\n", g->o);
}

/* A whole node over its iteration space, into whole tensors: the pass
** structure of a multi-pass plan, and the prologue of a one-pass one. */
void cg_materialised(CGen *g, int i)
{
	const Node *n = node(g, i);
	int save = g->streamed;
	g->streamed = 0;
	set_vars(g, i);
	cg_line(g, "/* %s (%s) */", n->out->name, n->origin ? n->origin : "statement");
	if (n->nfree)
		cg_line(g, "#pragma omp parallel for schedule(static)");
	int opened = 0;
	for (int v = 0; v < n->nfree; v++)
		opened += open_loop(g, i, v);
	if (n->red == RED_NONE) {
		cg_line(g, "do {");
		g->ind++;
		eval_body(g, n, "2");
		store(g, n, "t");
		fputs(" = x;\n", g->o);
		g->ind--;
		cg_line(g, "} while (0);");
	} else {
		cg_line(g, "real acc = %s;", identity(n->red));
		if (n->out->domain) {
			cg_indent(g);
			fputs("if (", g->o);
			cg_expr(g, n->out->domain);
			fputs(") {\n", g->o);
		} else {
			cg_line(g, "{");
		}
		g->ind++;
		int inner = 0;
		for (int v = n->nfree; v < n->nfree + n->nred; v++)
			inner += open_loop(g, i, v);
		eval_body(g, n, "2");
		combine(g, n->red, "acc", "x");
		close_loops(g, inner);
		g->ind--;
		cg_line(g, "}");
		store(g, n, "t");
		fputs(" = acc;\n", g->o);
	}
	close_loops(g, opened);
	g->streamed = save;
}

/* ---- the one-pass kernel ------------------------------------------------ */

static int stream_role(const CGen *g, int i)
{
	NodeRole r = np(g, i)->role;
	return r == ROLE_TILE || r == ROLE_RUNNING || (r == ROLE_EPILOGUE && np(g, i)->is_ref);
}

static int temp_args_ok(const CGen *g, const Expr *e)
{
	if (!e)
		return 1;
	if (e->kind == EX_ACCESS && e->tensor->def &&
	    np(g, e->tensor->def->id)->role != ROLE_PROLOGUE)
		for (int k = 0; k < e->nargs; k++)
			if (e->args[k]->kind != EX_INDEX)
				return 0;
	for (int k = 0; k < e->nargs; k++)
		if (!temp_args_ok(g, e->args[k]))
			return 0;
	return 1;
}

int cg_streamable(CGen *g, const char **why)
{
	const Plan *p = g->p;
	if (p->stream < 0) {
		*why = "no streamed index";
		return 0;
	}
	if (p->passes_after != 1) {
		*why = "the plan needs several passes";
		return 0;
	}
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Node *n = node(g, i);
		if (np(g, i)->role == ROLE_PROLOGUE)
			continue;
		if (!temp_args_ok(g, n->body) || !temp_args_ok(g, n->filter)) {
			*why = "a computed tensor is read at shifted indices";
			return 0;
		}
		/* two variables of one logical index: a computed tensor read
		** along both (T[b, h, j] * T[b, h, i]); the tiles would name
		** one range for both */
		for (int v = 0; v < n->nfree + n->nred; v++)
			for (int w = v + 1; w < n->nfree + n->nred; w++)
				if (p->cls[i][v] == p->cls[i][w]) {
					*why = "a node uses one index twice";
					return 0;
				}
	}
	return 1;
}

/* Local buffers: one per tensor made inside the stream, per thread. */
static void alloc_locals(CGen *g)
{
	const Plan *p = g->p;
	for (int i = 0; i < p->c->nodes.n; i++) {
		if (np(g, i)->role == ROLE_PROLOGUE)
			continue;
		const Node *n = node(g, i);
		const Tensor *t = n->out;
		Store *s = &g->st[t->id];
		s->kind = ST_LOCAL;
		s->ld = ARENA_ARRAY(g->a, LocalDim, t->rank + 1);
		const char *size = "1";
		for (int k = t->rank - 1; k >= 0; k--) {
			s->ld[k] = cg_local_dim(g, i, k);
			if (s->ld[k] == LD_GRID)
				continue; /* fixed per grid point: not stored */
			cg_line(g, "const long ls_%d_%d = %s;", t->id, k, size);
			const char *ext = s->ld[k] == LD_QTILE ? "TQ"
					  : s->ld[k] == LD_STREAM
					      ? "TKV"
					      : cg_expr_str(g, n->vars[k].extent);
			size = arena_printf(g->a, "%s*%s", size, ext);
		}
		cg_line(g, "const long n_%d = %s;", t->id, size);
		const char *ty = ctype(t);
		int state = np(g, i)->role == ROLE_RUNNING || np(g, i)->is_ref;
		const char *pre[] = {"b", "pv", "tb", "rs"};
		for (int k = 0; k < (state ? 4 : 1); k++)
			cg_line(g, "%s *%s_%d = malloc(sizeof(%s) * (size_t)n_%d);", ty, pre[k],
				t->id, ty, t->id);
	}
	cg_line(g, "int oom = 0;");
	for (int i = 0; i < p->c->nodes.n; i++) {
		if (np(g, i)->role == ROLE_PROLOGUE)
			continue;
		int id = node(g, i)->out->id;
		int state = np(g, i)->role == ROLE_RUNNING || np(g, i)->is_ref;
		cg_line(g, "oom |= !b_%d%s;", id,
			state ? arena_printf(g->a, " || !pv_%d || !tb_%d || !rs_%d", id, id, id)
			      : "");
	}
}

static void free_locals(CGen *g)
{
	for (int i = 0; i < g->p->c->nodes.n; i++) {
		if (np(g, i)->role == ROLE_PROLOGUE)
			continue;
		int id = node(g, i)->out->id;
		cg_line(g, "free(b_%d);", id);
		if (np(g, i)->role == ROLE_RUNNING || np(g, i)->is_ref)
			cg_line(g, "free(pv_%d); free(tb_%d); free(rs_%d);", id, id, id);
	}
}

/* Nodes of the stream and the epilogue that are not running states: over
** their free indices in this grid point (and tile), reducing any other
** index in place; absent points of outputs are written 0. */
static void map_node(CGen *g, int i, const char *cls)
{
	const Node *n = node(g, i);
	set_vars(g, i);
	int opened = 0;
	for (int v = 0; v < n->nfree; v++)
		opened += open_loop(g, i, v);
	int out = n->out->kind == TK_OUT;
	int local = g->st[n->out->id].kind == ST_LOCAL;
	const Expr *dom = n->red == RED_NONE ? n->filter : n->out->domain;
	if (out && dom) {
		cg_indent(g);
		fputs("if (!(", g->o);
		cg_expr(g, dom);
		fputs(")) {\n", g->o);
		g->ind++;
		store_global(g, n);
		fputs(" = 0;\n", g->o);
		cg_line(g, "continue;");
		g->ind--;
		cg_line(g, "}");
	}
	if (n->red == RED_NONE) {
		eval_body(g, n, cls);
	} else {
		cg_line(g, "real acc = %s;", identity(n->red));
		int inner = 0;
		for (int v = n->nfree; v < n->nfree + n->nred; v++)
			inner += open_loop(g, i, v);
		eval_body(g, n, cls);
		combine(g, n->red, "acc", "x");
		close_loops(g, inner);
		cg_line(g, "real x = acc;");
	}
	if (local) {
		store(g, n, "b");
		fputs(" = x;\n", g->o);
	}
	if (out) {
		store_global(g, n);
		fputs(" = x;\n", g->o);
	}
	close_loops(g, opened);
}

/* The value of a reference (indexed like running node x) in buffer prefix. */
static void ref_value(CGen *g, int x, int ref, const char *prefix)
{
	const Node *r = node(g, ref), *n = node(g, x);
	Expr **args = ARENA_ARRAY(g->a, Expr *, r->nfree + 1);
	for (int k = 0; k < r->nfree; k++) {
		args[k] = expr_index(g->a, 0);
		for (int v = 0; v < n->nfree; v++)
			if (g->p->cls[x][v] == g->p->cls[ref][k])
				args[k] = expr_index(g->a, v);
	}
	cg_addr(g, r->out, args, prefix);
}

/* rho for running sum x between the references in buffers `from` and `to`. */
static void emit_rho(CGen *g, int x, const char *name, const char *from, const char *to)
{
	const Running *run = &np(g, x)->run;
	cg_line(g, "real %s = 1;", name);
	for (int m = 0; m < run->nrefs; m++) {
		cg_indent(g);
		fputs("{ real ra = ", g->o);
		ref_value(g, x, run->ref[m], from);
		fputs(", rb = ", g->o);
		ref_value(g, x, run->ref[m], to);
		fprintf(g->o, "; if (ra != rb) %s *= R_EXP((real)%a * (ra - rb)); }\n", name,
			run->k[m]);
	}
}

/* One running node's update for the current tile. */
static void running_node(CGen *g, int i)
{
	const Node *n = node(g, i);
	const NodePlan *q = np(g, i);
	set_vars(g, i);
	int opened = 0;
	for (int v = 0; v < n->nfree; v++)
		opened += open_loop(g, i, v);
	cg_line(g, "real acc = %s;", identity(n->red));
	cg_line(g, "if (c_%d != 0) {", i);
	g->ind++;
	int inner = 0;
	for (int v = n->nfree; v < n->nfree + n->nred; v++)
		inner += open_loop(g, i, v);
	{
		char cls[32];
		snprintf(cls, sizeof cls, "c_%d", i);
		eval_body(g, n, cls);
	}
	combine(g, n->red, "acc", "x");
	close_loops(g, inner);
	g->ind--;
	cg_line(g, "}");
	cg_indent(g);
	fputs("real *st = &", g->o);
	cg_addr(g, n->out, free_args(g, n), "b");
	fputs(";\n", g->o);
	if (n->red == RED_SUM && q->run.nrefs) {
		emit_rho(g, i, "rho", "pv", "b");
		cg_line(g, "*st = *st * rho + acc;");
	} else {
		combine(g, n->red, "*st", "acc");
	}
	close_loops(g, opened);
}

/* Fills every running state with its identity, then the references that
** are functions of running maxes (a sink's initial value). */
static void init_states(CGen *g)
{
	for (int i = 0; i < g->p->c->nodes.n; i++)
		if (np(g, i)->role == ROLE_RUNNING)
			cg_line(g, "for (long e = 0; e < n_%d; e++) b_%d[e] = %s;",
				node(g, i)->out->id, node(g, i)->out->id,
				identity(node(g, i)->red));
	for (int i = 0; i < g->p->c->nodes.n; i++)
		if (np(g, i)->role == ROLE_EPILOGUE && np(g, i)->is_ref) {
			cg_line(g, "{");
			g->ind++;
			map_node(g, i, "2");
			g->ind--;
			cg_line(g, "}");
		}
}

static void copy_refs(CGen *g, const char *to, const char *from, int all_states)
{
	for (int i = 0; i < g->p->c->nodes.n; i++) {
		int state = np(g, i)->role == ROLE_RUNNING || np(g, i)->is_ref;
		if (!state || (!all_states && !np(g, i)->is_ref))
			continue;
		int id = node(g, i)->out->id;
		cg_line(g, "memcpy(%s_%d, %s_%d, sizeof(*%s_%d) * (size_t)n_%d);", to, id, from, id,
			to, id, id);
	}
}

/* Merges the states of the previous partitions (tb) into this one's (b):
** maxes take the max, plain sums add, rebased sums are each rescaled to the
** merged reference: rho(r_a, r) a + rho(r_b, r) b. */
static void merge_states(CGen *g)
{
	const Plan *p = g->p;
	copy_refs(g, "rs", "b", 0);
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Node *n = node(g, i);
		if (np(g, i)->role != ROLE_RUNNING || (n->red != RED_MAX && n->red != RED_MIN))
			continue;
		int id = n->out->id;
		cg_line(g, "for (long e = 0; e < n_%d; e++) b_%d[e] = attn_%sf(b_%d[e], tb_%d[e]);",
			id, id, n->red == RED_MAX ? "max" : "min", id, id);
	}
	for (int i = 0; i < p->c->nodes.n; i++)
		if (np(g, i)->role == ROLE_EPILOGUE && np(g, i)->is_ref) {
			cg_line(g, "{");
			g->ind++;
			map_node(g, i, "2");
			g->ind--;
			cg_line(g, "}");
		}
	for (int i = 0; i < p->c->nodes.n; i++) {
		const Node *n = node(g, i);
		if (np(g, i)->role != ROLE_RUNNING || n->red == RED_MAX || n->red == RED_MIN)
			continue;
		int id = n->out->id;
		if (n->red == RED_SUM && np(g, i)->run.nrefs) {
			cg_line(g, "{");
			g->ind++;
			set_vars(g, i);
			int opened = 0;
			for (int v = 0; v < n->nfree; v++)
				opened += open_loop(g, i, v);
			emit_rho(g, i, "rho_a", "tb", "b");
			emit_rho(g, i, "rho_b", "rs", "b");
			cg_indent(g);
			fputs("{ real *st = &", g->o);
			cg_addr(g, n->out, free_args(g, n), "b");
			fputs(", *pt = &", g->o);
			cg_addr(g, n->out, free_args(g, n), "tb");
			fputs("; *st = rho_a * *pt + rho_b * *st; }\n", g->o);
			close_loops(g, opened);
			g->ind--;
			cg_line(g, "}");
		} else {
			cg_line(g, "for (long e = 0; e < n_%d; e++) b_%d[e] %s= tb_%d[e];", id, id,
				n->red == RED_PROD ? "*" : "+", id);
		}
	}
}

/* Running results that are outputs themselves are written after the stream. */
static void write_running_outputs(CGen *g)
{
	for (int i = 0; i < g->p->c->nodes.n; i++) {
		const Node *n = node(g, i);
		if (np(g, i)->role != ROLE_RUNNING || n->out->kind != TK_OUT)
			continue;
		set_vars(g, i);
		int opened = 0;
		for (int v = 0; v < n->nfree; v++)
			opened += open_loop(g, i, v);
		cg_indent(g);
		fputs("real x = ", g->o);
		if (n->out->domain) {
			fputs("!(", g->o);
			cg_expr(g, n->out->domain);
			fputs(") ? (real)0 : ", g->o);
		}
		cg_addr(g, n->out, free_args(g, n), "b");
		fputs(";\n", g->o);
		store_global(g, n);
		fputs(" = x;\n", g->o);
		close_loops(g, opened);
	}
}

void cg_stream_kernel(CGen *g)
{
	const Plan *p = g->p;
	int qc = -1;
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].qtile)
			qc = k;
	const char *sext = cg_expr_str(g, p->classes[p->stream].extent);
	cg_line(g, "const long TQ = %d, TKV = %d;", qc >= 0 ? p->tile_q : 1, p->tile_kv);
	cg_line(g, "const long S_EXT = %s;", sext);
	cg_line(g, "const long Q_EXT = %s;", qc >= 0 ? cg_expr_str(g, p->classes[qc].extent) : "1");
	cg_line(g, "const long NQT = (Q_EXT + TQ - 1) / TQ;");
	cg_line(g, "int failed = 0;");
	cg_line(g, "#pragma omp parallel reduction(|:failed)");
	cg_line(g, "{");
	g->ind++;
	alloc_locals(g);
	int ngrid = 1;
	for (int k = 0; k < p->nclasses; k++)
		ngrid += p->classes[k].grid && !p->classes[k].qtile;
	cg_line(g, "if (oom) failed = 1;");
	cg_line(g, "#pragma omp for collapse(%d) schedule(dynamic, 1)", ngrid);
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].grid && !p->classes[k].qtile) {
			cg_line(g, "for (long g_%d = 0; g_%d < %s; g_%d++)", k, k,
				cg_expr_str(g, p->classes[k].extent), k);
		}
	cg_line(g, "for (long qt = 0; qt < NQT; qt++) {");
	g->ind++;
	cg_line(g, "if (oom) continue;");
	cg_line(g, "const long q0 = qt * TQ, q1 = q0 + TQ < Q_EXT ? q0 + TQ : Q_EXT;");
	cg_line(g, "(void)q1;");
	init_states(g);
	cg_line(g, "for (int part = 0; part < nparts; part++) {");
	g->ind++;
	cg_line(
	    g,
	    "const long lo = bounds ? bounds[part] : 0, hi = bounds ? bounds[part + 1] : S_EXT;");
	cg_line(g, "if (part > 0) {");
	g->ind++;
	copy_refs(g, "tb", "b", 1);
	init_states(g);
	g->ind--;
	cg_line(g, "}");
	cg_line(g, "for (long j0 = lo; j0 < hi; j0 += TKV) {");
	g->ind++;
	cg_line(g, "const long j1 = j0 + TKV < hi ? j0 + TKV : hi;");
	cg_line(g, "int any = 0;");
	for (int i = 0; i < p->c->nodes.n; i++) {
		if (np(g, i)->role != ROLE_TILE && np(g, i)->role != ROLE_RUNNING)
			continue;
		set_vars(g, i);
		char name[32];
		snprintf(name, sizeof name, "c_%d", i);
		cg_tile_class(g, i, name);
		cg_line(g, "any |= %s != 0;", name);
	}
	cg_line(g, "if (!any) continue; /* an empty tile: every mask is false on it */");
	copy_refs(g, "pv", "b", 0);
	for (int i = 0; i < p->c->nodes.n; i++) {
		if (!stream_role(g, i))
			continue;
		const Node *n = node(g, i);
		cg_line(g, "/* %s: %s */", n->out->name,
			np(g, i)->role == ROLE_TILE      ? "tile"
			: np(g, i)->role == ROLE_RUNNING ? "running"
							 : "reference");
		cg_line(g, "{");
		g->ind++;
		if (np(g, i)->role == ROLE_RUNNING) {
			running_node(g, i);
		} else if (np(g, i)->role == ROLE_TILE && n->red != RED_NONE) {
			/* a reduction inside the tile writes its identity where its
			** mask is false on the whole tile: a node without the mask
			** reads it (a sink's max(max[j](S), sink) on a row with no
			** key) */
			char cls[32];
			snprintf(cls, sizeof cls, "c_%d", i);
			map_node(g, i, cls);
		} else if (np(g, i)->role == ROLE_TILE) {
			char cls[32];
			snprintf(cls, sizeof cls, "c_%d", i);
			cg_line(g, "if (%s != 0) {", cls);
			g->ind++;
			map_node(g, i, cls);
			g->ind--;
			cg_line(g, "}");
		} else {
			map_node(g, i, "2");
		}
		g->ind--;
		cg_line(g, "}");
	}
	g->ind--;
	cg_line(g, "}");
	cg_line(g, "if (part > 0) {");
	g->ind++;
	merge_states(g);
	g->ind--;
	cg_line(g, "}");
	g->ind--;
	cg_line(g, "}");
	for (int i = 0; i < p->c->nodes.n; i++) {
		if (np(g, i)->role != ROLE_EPILOGUE)
			continue;
		cg_line(g, "/* %s: epilogue */", node(g, i)->out->name);
		cg_line(g, "{");
		g->ind++;
		map_node(g, i, "2");
		g->ind--;
		cg_line(g, "}");
	}
	write_running_outputs(g);
	g->ind--;
	cg_line(g, "}");
	free_locals(g);
	g->ind--;
	cg_line(g, "}");
	cg_line(g, "if (failed) { status = 2; goto done; }");
}

void cg_packed_buffer(CGen *g, const Tensor *t)
{
	const char *size = "1";
	for (int k = t->pack->rank - 1; k >= 0; k--) {
		cg_line(g, "const long ps_%d_%d = %s; (void)ps_%d_%d;", t->id, k, size, t->id, k);
		size = arena_printf(g->a, "%s*%s", size, cg_expr_str(g, t->pack->shape[k]));
	}
	cg_line(g, "const long pn_%d = %s; (void)pn_%d;", t->id, size, t->id);
	cg_line(g, "real *pk_%d = (real *)data[%d];", t->id, t->id);
	cg_line(g, "real *t_%d = calloc((size_t)n_t%d, sizeof(real));", t->id, t->id);
	cg_line(g, "if (!pk_%d) { status = 1; goto done; }", t->id);
	cg_line(g, "if (!t_%d) { status = 2; goto done; }", t->id);
}

/* Over the logical tensor: a present point goes to its place (its offsets
** read from the caller's table), an absent one nowhere. A place outside
** the buffer (offsets past it) is an error the entry returns, not a
** write. */
void cg_store_packed(CGen *g, const Tensor *t)
{
	const Pack *pk = t->pack;
	int i = t->def->id, save = g->streamed;
	g->streamed = 0;
	set_vars(g, i);
	cg_line(g, "/* %s: its present points at their offsets in '%s' */", t->name,
		pk->table->name);
	int opened = 0;
	for (int v = 0; v < t->def->nfree; v++)
		opened += open_loop(g, i, v);
	if (t->domain) {
		cg_indent(g);
		fputs("if (!(", g->o);
		cg_expr(g, t->domain);
		fputs(")) continue;\n", g->o);
	}
	Expr **args = free_args(g, t->def);
	cg_line(g, "long at = 0;");
	for (int k = 0; k < pk->rank; k++) {
		cg_indent(g);
		fputs("{ const long x = ", g->o);
		cg_expr(g, expr_subst(g->a, pk->at[k], args, t->rank));
		fprintf(g->o,
			"; if (x < 0 || x >= %s) { status = 1; continue; } at += x*ps_%d_%d; }\n",
			cg_expr_str(g, pk->shape[k]), t->id, k);
	}
	Store st = g->st[t->id];
	g->st[t->id].kind = ST_GLOBAL;
	cg_indent(g);
	fprintf(g->o, "pk_%d[at] = (real)", t->id);
	cg_addr(g, t, args, "t");
	fputs(";\n", g->o);
	g->st[t->id] = st;
	close_loops(g, opened);
	g->streamed = save;
}
