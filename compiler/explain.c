/*
** compiler/explain.c: the plan as text: --emit=plan (stable, for FileCheck)
** and --explain (for people: what the compiler did and why).
*/
#include <string.h>

#include "plan.h"

static const char *role_name(NodeRole r)
{
	static const char *n[] = {"prologue", "tile", "running", "epilogue"};
	return n[r];
}

static void print_vars(FILE *out, const Node *n, int from, int to)
{
	for (int v = from; v < to; v++)
		fprintf(out, "%s%s", v > from ? ", " : "", n->vars[v].name);
}

/* Prints the grid classes, those of the first output's indices in its
** order first (b h i, as the user wrote O[b, h, i, e]), then the others;
** `tiled` marks the query tile with a star. */
static void print_grid(FILE *out, const Plan *p, int tiled)
{
	unsigned long long done = 0;
	int first = -1;
	for (int i = 0; i < p->c->nodes.n && first < 0; i++)
		if (((const Node *)p->c->nodes.v[i])->out->kind == TK_OUT &&
		    p->np[i].role != ROLE_PROLOGUE)
			first = i;
	int nf = first >= 0 ? ((const Node *)p->c->nodes.v[first])->nfree : 0;
	for (int pass = 0; pass < 2; pass++)
		for (int m = 0; m < (pass ? p->nclasses : nf); m++) {
			int k = pass ? m : p->cls[first][m];
			if (!p->classes[k].grid || (k < 64 && (done >> k & 1)))
				continue;
			done |= k < 64 ? 1ull << k : 0;
			fprintf(out, " %s%s", p->classes[k].name,
				tiled && p->classes[k].qtile ? "*" : "");
		}
}

/* Size of a running state per grid point (per query row), as text. */
static void print_state_size(FILE *out, const Plan *p, int i)
{
	const Node *n = p->c->nodes.v[i];
	int first = 1;
	for (int v = 0; v < n->nfree; v++) {
		if (p->classes[p->cls[i][v]].grid)
			continue;
		fputs(first ? "" : " x ", out);
		expr_print(out, n->vars[v].extent, NULL);
		first = 0;
	}
	if (first)
		fputs("1", out);
}

/* Indexed by MaskKind. */
static const char *mask_text[] = {
    [MASK_AFFINE] = "affine: tiles classified by interval test",
    [MASK_RUNTIME] = "data per grid point: tiles classified at run time",
    [MASK_RANGE] = "data per position: tiles classified at run time by the data's min and max",
    [MASK_ELEMENT] = "per element: no tile skipping"};

typedef struct MaskCtx {
	FILE *out;
	const Plan *p;
	int node;
} MaskCtx;

static void print_mask(const Expr *conj, void *ud)
{
	MaskCtx *m = ud;
	const Node *n = m->p->c->nodes.v[m->node];
	fputs("      mask ", m->out);
	expr_print(m->out, conj, n);
	fprintf(m->out, " : %s\n", mask_text[plan_mask_kind(m->p, m->node, conj)]);
}

static void print_running(FILE *out, const Plan *p, int i)
{
	const Node *n = p->c->nodes.v[i];
	const NodePlan *np = &p->np[i];
	fprintf(out, "      state %s per row: ", redop_name(n->red));
	print_state_size(out, p, i);
	if (n->red == RED_MAX || n->red == RED_MIN) {
		fprintf(out, "; init %s; merge %s(a, b)\n", n->red == RED_MAX ? "-inf" : "inf",
			redop_name(n->red));
		return;
	}
	if (!np->run.nrefs) {
		fputs(n->red == RED_PROD ? "; init 1; merge a * b\n" : "; init 0; merge a + b\n",
		      out);
		return;
	}
	fputs("; init 0; rho(r, r') = ", out);
	for (int m = 0; m < np->run.nrefs; m++) {
		const Node *ref = p->c->nodes.v[np->run.ref[m]];
		if (np->run.k[m] == 1.0)
			fprintf(out, "%sexp(%s - %s')", m ? " * " : "", ref->out->name,
				ref->out->name);
		else
			fprintf(out, "%sexp(%g * (%s - %s'))", m ? " * " : "", np->run.k[m],
				ref->out->name, ref->out->name);
	}
	fputs("; merge rho(r_a, r) a + rho(r_b, r) b\n", out);
}

void plan_print(FILE *out, const Plan *p)
{
	const Cascade *c = p->c;
	fprintf(out, "plan %s target %s {\n", c->name, p->target);
	if (p->stream >= 0) {
		fprintf(out, "  stream %s < ", p->classes[p->stream].name);
		expr_print(out, p->classes[p->stream].extent, NULL);
		fprintf(out, " tile %d\n", p->tile_kv);
	} else {
		fputs("  stream none\n", out);
	}
	fputs("  grid", out);
	print_grid(out, p, 1);
	fprintf(out, "   (* tiled by %d)\n", p->tile_q);
	fprintf(out, "  passes %d -> %d (defer) -> %d (rebase)\n", p->passes_before,
		p->passes_defer, p->passes_after);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = c->nodes.v[i];
		const NodePlan *np = &p->np[i];
		fprintf(out, "  %%%d %s", i, role_name(np->role));
		if (np->role == ROLE_TILE || np->role == ROLE_RUNNING)
			fprintf(out, " pass %d", np->pass);
		else if (np->role == ROLE_EPILOGUE)
			fprintf(out, " after pass %d", np->pass);
		if (np->is_ref)
			fputs(" reference", out);
		fprintf(out, ": %s[", n->out->name);
		print_vars(out, n, 0, n->nfree);
		fputs("] = ", out);
		if (n->red != RED_NONE) {
			fprintf(out, "%s[", redop_name(n->red));
			print_vars(out, n, n->nfree, n->nfree + n->nred);
			fputs("](", out);
		}
		expr_print(out, n->body, n);
		fputs(n->red != RED_NONE ? ")\n" : "\n", out);
		if (np->role == ROLE_RUNNING)
			print_running(out, p, i);
		if (np->role == ROLE_TILE || np->role == ROLE_RUNNING) {
			MaskCtx m = {out, p, i};
			plan_conjuncts(n->filter, print_mask, &m);
		}
	}
	fputs("}\n", out);
}

static void print_loc(FILE *out, SrcLoc loc)
{
	if (loc.file >= 0 && loc.line > 0)
		fprintf(out, " (line %d:%d)", loc.line, loc.col);
}

/* What the language cannot say yet, once after the blocks: a reader of
** --explain asking why a variant is missing or slow finds it here. */
void plan_explain_limits(FILE *out)
{
	fputs("not expressible yet (docs/language.md section 12):\n"
	      "  scans: an iterative rank (iter c in NC) or a running reduction along an index\n"
	      "  (scan_sum, scan_prod); chunkwise linear attention and stick-breaking attention\n"
	      "  in linear time need them. A cascade can only recompute every prefix, e.g.\n"
	      "  prod[k](1.0 - sigmoid(S[b, h, i, k]) where j < k && k < i), N times the work\n",
	      out);
}

void plan_explain(FILE *out, const Plan *p)
{
	const Cascade *c = p->c;
	fprintf(out, "%s:\n", c->name);
	if (p->stream < 0) {
		fputs("  no streamed index: every reduction reads inputs directly; 1 pass\n", out);
		return;
	}
	fprintf(out, "  streamed index: %s < ", p->classes[p->stream].name);
	expr_print(out, p->classes[p->stream].extent, NULL);
	fputc('\n', out);
	fprintf(out, "  passes over %s: %d as written, %d after defer/fission, %d after rebasing\n",
		p->classes[p->stream].name, p->passes_before, p->passes_defer, p->passes_after);
	for (int i = 0; i < p->nnotes; i++) {
		fprintf(out, "  %s", p->notes[i].text);
		print_loc(out, p->notes[i].loc);
		fputc('\n', out);
	}
	fputs("  running state per grid point (grid:", out);
	print_grid(out, p, 0);
	fputs("):\n", out);
	for (int i = 0; i < c->nodes.n; i++) {
		if (p->np[i].role != ROLE_RUNNING)
			continue;
		const Node *n = c->nodes.v[i];
		fprintf(out, "    %s: %s of ", n->out->name, redop_name(n->red));
		print_state_size(out, p, i);
		fputs(" floats", out);
		if (p->np[i].run.nrefs)
			fputs(", rescaled", out);
		fputc('\n', out);
	}
	/* each mask that cannot be decided per tile, once, at the statement
	** it came from (consumers inherit it) */
	int slow = 0;
	const char *seen[32];
	int nseen = 0;
	Arena tmp;
	arena_init(&tmp);
	for (int i = 0; i < c->nodes.n; i++) {
		const NodePlan *np = &p->np[i];
		if (np->role != ROLE_TILE && np->role != ROLE_RUNNING)
			continue;
		const Node *n = c->nodes.v[i];
		const Expr *stack[64];
		int ns = 0;
		if (n->filter)
			stack[ns++] = n->filter;
		while (ns) {
			const Expr *e = stack[--ns];
			if (e->kind == EX_BINOP && e->op == OP_AND && ns < 62) {
				stack[ns++] = e->args[0], stack[ns++] = e->args[1];
				continue;
			}
			MaskKind k = plan_mask_kind(p, i, e);
			if (k == MASK_AFFINE)
				continue;
			const char *text = expr_str(&tmp, e, n);
			int dup = 0;
			for (int s2 = 0; s2 < nseen && !dup; s2++)
				dup = !strcmp(seen[s2], text);
			if (!dup && nseen < 32) {
				fputs(slow++ ? "" : "  slower paths:\n", out);
				fprintf(out, "    mask %s is %s", text, mask_text[k]);
				print_loc(out, n->loc);
				fputc('\n', out);
				seen[nseen++] = text;
			}
		}
	}
	arena_free(&tmp);
	if (p->stream >= 0) {
		/* compiler/pass_split.c */
		Arena pa;
		arena_init(&pa);
		char *pre = ARENA_ARRAY(&pa, char, p->c->nodes.n + 1);
		int rows = pass_split_prologues(&pa, p, pre);
		int gpu = p->target && strcmp(p->target, "cpu");
		if (rows && !gpu)
			fputs("  before the stream (on a GPU target, row passes of their own "
			      "that run first):\n",
			      out);
		else if (rows)
			fprintf(out,
				"  before the stream, on the GPU: %d row pass%s (%s_pro1%s%s), one "
				"for each set of indices; the passes read their results as "
				"inputs, f32 unless a line says otherwise\n",
				rows, rows > 1 ? "es" : "", p->c->name, rows > 1 ? " to " : "",
				rows > 1 ? arena_printf(&pa, "%s_pro%d", p->c->name, rows) : "");
		for (int i = 0; i < p->c->nodes.n && rows; i++) {
			const Node *n = p->c->nodes.v[i];
			if (!pre[i])
				continue;
			fprintf(out, "    %s[", n->out->name);
			print_vars(out, n, 0, n->nfree);
			fputs("]", out);
			print_loc(out, n->loc);
			DType dt = pass_split_dtype(p, pre, i);
			if (gpu && dt != DT_F32)
				fprintf(out,
					", passed as %s: a pass contracts it on the tensor cores",
					dt == DT_BF16 ? "bf16" : "f16");
			fputc('\n', out);
		}
		arena_free(&pa);
	}
	/* lowering/gpu/shape.c: V wider than a CTA's accumulators */
	for (int i = 0; i < c->nodes.n && p->target && strcmp(p->target, "cpu"); i++) {
		const Node *n = c->nodes.v[i];
		if (p->np[i].role != ROLE_RUNNING || n->red != RED_SUM)
			continue;
		for (int v = 0; v < n->nfree; v++) {
			long dv = expr_fixed_extent(n->vars[v].extent);
			int k = plan_index_kind(p, i, v) == IDX_OTHER ? plan_value_slices(dv) : 1;
			if (k <= 1)
				continue;
			fputs(slow++ ? "" : "  slower paths:\n", out);
			fprintf(out,
				"    %s: its %ld columns over %s in %d slices of %ld, each "
				"computing the scores again: a CTA each, or a group of its warps "
				"each where the target has as many over the same rows (a warp "
				"holds %d columns)",
				n->out->name, dv, n->vars[v].name, k, dv / k, PLAN_MAX_DV);
			print_loc(out, n->loc);
			fputc('\n', out);
		}
	}
	if (p->passes_after > 1) {
		fputs(slow++ ? "" : "  slower paths:\n", out);
		const char *j = p->classes[p->stream].name;
		if (p->target && strcmp(p->target, "cpu"))
			/* compiler/pass_split.c */
			fprintf(out,
				"    %d passes over %s: on the GPU one kernel a pass (%s_pass1 to "
				"%s_pass%d), each row's completed reductions passed on in the "
				"launch's workspace and the values per %s computed again by each "
				"kernel that reads them\n",
				p->passes_after, j, p->c->name, p->c->name, p->passes_after, j);
		else
			fprintf(out,
				"    %d passes over %s: intermediate results of size %s are kept "
				"between passes\n",
				p->passes_after, j, j);
	}
	fprintf(out, "  tiles: %d queries x %d keys, %d stage%s (target %s)\n", p->tile_q,
		p->tile_kv, p->stages, p->stages == 1 ? "" : "s", p->target);
}
