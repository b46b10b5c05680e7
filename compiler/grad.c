/*
** compiler/grad.c: the reverse sweep that derives NAME_bwd (grad.h).
**
** The backward cascade first recomputes the forward temporaries (a forward
** output is read from its saved value instead), then walks the forward
** nodes in reverse topological order. The adjoint of a tensor is the sum of
** one contribution per distinct read of it (grad_read.c builds each); a
** node's local adjoint at a point of its space is
**
**   none, sum   the adjoint of its output there
**   max, min    the adjoint of its output, shared by the points equal to
**               the result (k ties get 1/k each), 0 elsewhere
**   prod        no rule: a diagnostic
**
** times the symbolic derivative of the body with respect to the read
** (grad_expr.c). Only tensors on a path from an input that gets a gradient
** to a float output carry adjoints ("active"). The max that softmax and
** logsumexp desugaring puts in front of the exponentials (lang/sema_expr.c)
** only keeps them finite: the result does not depend on it, so it is a
** constant here (a stop-gradient). Absent points (domains, `where`) stay
** absent: every contribution keeps its node's filter.
*/
#include <string.h>

#include "grad_int.h"

int grad_wants(const Tensor *t)
{
	if (t->kind != TK_IN || !dtype_is_float(t->dtype))
		return 0;
	return dtype_size(t->dtype) <= 2 || t->trainable;
}

/* ---- names ---------------------------------------------------------------- */

/* Whether name is taken by a dim, param or tensor of the forward. */
static const SrcLoc *taken(const Grad *g, const char *name)
{
	for (int i = 0; i < g->f->tensors.n; i++) {
		const Tensor *t = g->f->tensors.v[i];
		if (!strcmp(t->name, name))
			return &t->loc;
	}
	for (int i = 0; i < g->f->dims.n; i++) {
		const Dim *d = g->f->dims.v[i];
		if (!strcmp(d->name, name))
			return &d->loc;
	}
	for (int i = 0; i < g->f->params.n; i++) {
		const Param *p = g->f->params.v[i];
		if (!strcmp(p->name, name))
			return &p->loc;
	}
	return NULL;
}

/* The name of the gradient of t in the backward's interface, dT (d_T where
** dT is a C keyword, as `do` of an output o: the generated C interfaces use
** names as fields); a forward name that is already that is an error (the
** interface would be ambiguous). */
static const char *interface_name(Grad *g, const Tensor *t, const char *role)
{
	static const char *const keywords[] = {"do", "double", "default"};
	const char *name = arena_printf(g->a, "d%s", t->name);
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (!strcmp(name, keywords[i]))
			name = arena_printf(g->a, "d_%s", t->name);
	const SrcLoc *at = taken(g, name);
	if (at) {
		diag_error(g->d, *at,
			   "'%s' is taken: the backward of '%s' (%s_bwd) needs that name for the "
			   "%s of '%s'; rename '%s'",
			   name, g->f->name, g->f->name, role, t->name, name);
		g->failed = 1;
	}
	return name;
}

/* ---- setup ---------------------------------------------------------------- */

/* The backward's tensors before the sweep: inputs, saved outputs, the dX
** inputs, and copies of the temporaries with the nodes that recompute them. */
static void setup(Grad *g)
{
	const Cascade *f = g->f;
	int nt = f->tensors.n;
	for (int i = 0; i < nt; i++) {
		const Tensor *t = f->tensors.v[i];
		Tensor *c = grad_new_tensor(g, t->name, t->kind == TK_TEMP ? TK_TEMP : TK_IN, NULL);
		Tensor keep = *c;
		*c = *t;
		c->id = keep.id, c->kind = keep.kind, c->def = NULL, c->trainable = t->trainable;
		g->val[i] = c;
	}
	for (int i = 0; i < nt; i++) {
		const Tensor *t = f->tensors.v[i];
		g->val[i]->domain = grad_remap(g, t->domain);
		if (t->kind == TK_OUT && t->type == VT_FLOAT) {
			g->dx[i] = grad_new_tensor(g, interface_name(g, t, "incoming gradient"),
						   TK_IN, g->val[i]);
			g->dx[i]->loc = t->loc;
			if (t->pack) {
				/* read where its output is stored, and only there */
				g->dx[i]->pack = t->pack;
				g->dx[i]->domain = g->val[i]->domain;
			}
		}
	}
	for (int i = 0; i < f->nodes.n; i++) {
		const Node *n = f->nodes.v[i];
		if (n->out->kind == TK_OUT)
			continue; /* its saved value is an input */
		Node *c = ARENA_NEW(g->a, Node);
		*c = *n;
		c->id = g->b->nodes.n;
		c->out = g->val[n->out->id];
		c->out->def = c;
		c->vars = ARENA_ARRAY(g->a, IndexVar, n->nfree + n->nred + 1);
		memcpy(c->vars, n->vars, sizeof(IndexVar) * (size_t)(n->nfree + n->nred));
		c->body = grad_remap(g, n->body);
		c->filter = grad_remap(g, n->filter);
		ptrvec_push(g->a, &g->b->nodes, c);
	}
}

/* Whether n is the max that softmax or logsumexp desugaring made. */
static int is_desugared_stabiliser(const Node *n)
{
	return n->red == RED_MAX && n->origin &&
	       (!strcmp(n->origin, "softmax.max") || !strcmp(n->origin, "logsumexp.max"));
}

/* Whether n's output is a stabiliser: the desugared max, or a max the user
** wrote whose value the outputs do not depend on (grad_shift.c). Only maxes
** are tried: they are what keeps exponentials finite. */
static int is_stabiliser(Grad *g, const Node *n)
{
	if (is_desugared_stabiliser(n))
		return 1;
	int is_max = n->red == RED_MAX ||
		     (n->red == RED_NONE && n->body->kind == EX_BINOP && n->body->op == OP_MAX);
	return is_max && grad_shift_invariant(g->a, g->f, n->out);
}

/* Marks in `out` every float tensor read in e (outside subscripts). */
static void float_reads(const Expr *e, char *out)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS) {
		if (e->type == VT_FLOAT)
			out[e->tensor->id] = 1;
		return; /* subscripts are integers */
	}
	for (int i = 0; i < e->nargs; i++)
		float_reads(e->args[i], out);
}

/* Active tensors: reachable forward from an input that gets a gradient and
** backward from a float output, through node bodies (filters carry no
** gradient, stabilisers are constants). */
static void activity(Grad *g)
{
	const Cascade *f = g->f;
	int nt = f->tensors.n;
	char *varies = ARENA_ARRAY(g->a, char, nt + 1);
	char *useful = ARENA_ARRAY(g->a, char, nt + 1);
	char *r = ARENA_ARRAY(g->a, char, nt + 1);
	for (int i = 0; i < nt; i++) {
		const Tensor *t = f->tensors.v[i];
		varies[i] = (char)grad_wants(t);
		useful[i] = t->kind == TK_OUT && t->type == VT_FLOAT;
	}
	for (int i = 0; i < f->nodes.n; i++) {
		const Node *n = f->nodes.v[i];
		g->stop[n->out->id] = (char)is_stabiliser(g, n);
		if (g->stop[n->out->id] || n->out->type != VT_FLOAT)
			continue;
		memset(r, 0, (size_t)nt);
		float_reads(n->body, r);
		for (int k = 0; k < nt; k++)
			varies[n->out->id] |= r[k] && varies[k];
	}
	for (int i = f->nodes.n - 1; i >= 0; i--) {
		const Node *n = f->nodes.v[i];
		if (!useful[n->out->id] || g->stop[n->out->id] || n->out->type != VT_FLOAT)
			continue;
		memset(r, 0, (size_t)nt);
		float_reads(n->body, r);
		for (int k = 0; k < nt; k++)
			useful[k] |= r[k];
	}
	for (int i = 0; i < nt; i++)
		g->active[i] = varies[i] && useful[i];
}

/* ---- the sweep ------------------------------------------------------------ */

/* The distinct reads of active tensors in e, by structure. */
static void active_reads(Grad *g, const Expr *e, PtrVec *out)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS) {
		if (e->type != VT_FLOAT || !g->active[e->tensor->id])
			return;
		for (int i = 0; i < out->n; i++)
			if (expr_equal(out->v[i], e))
				return;
		ptrvec_push(g->a, out, (void *)e);
		return;
	}
	for (int i = 0; i < e->nargs; i++)
		active_reads(g, e->args[i], out);
}

/* The free variables 0..nfree-1 of n, as the subscripts of a read. */
static Expr *out_read(Grad *g, Tensor *t)
{
	return grad_read_at(g, t, NULL);
}

/* The local adjoint of a max or min node: the output's adjoint shared by
** the points that attain the result; the count of them is a node of its own. */
static Expr *extremum_local(Grad *g, const Node *n, Expr *A)
{
	Tensor *T = g->val[n->out->id];
	Expr *body = grad_remap(g, n->body);
	Expr *hit = expr_binop(g->a, OP_EQ, body, out_read(g, T));
	Tensor *ties =
	    grad_new_tensor(g, arena_printf(g->a, "%s.ties", n->out->name), TK_TEMP, NULL);
	grad_new_node(g, ties, n->vars, n->nfree, n->nred, RED_SUM,
		      gx_select(g, hit, gx_num(g, 1), NULL), grad_remap(g, n->filter), n->loc,
		      "ties of a max");
	grad_note(g,
		  "%s (%s[%s] at %d:%d): the adjoint goes to the points equal to the result, "
		  "split evenly between ties (%s counts them)",
		  n->out->name, redop_name(n->red), n->vars[n->nfree].name, n->loc.line, n->loc.col,
		  ties->name);
	return gx_select(g, expr_copy(g->a, hit), gx_div(g, A, out_read(g, ties)), NULL);
}

/* One forward node's contributions to the adjoints of what it reads. */
static void sweep_node(Grad *g, const Node *n)
{
	Tensor *A = g->adj[n->out->id];
	if (!A || !g->active[n->out->id])
		return;
	PtrVec rs = {0};
	active_reads(g, n->body, &rs);
	if (!rs.n)
		return;
	if (n->red == RED_PROD) {
		diag_error(g->d, n->loc,
			   "cannot derive the gradient through 'prod' (computing '%s'): a product "
			   "reduction has no backward rule here; write it as exp(sum(log(...))) "
			   "when its factors are positive",
			   n->out->name);
		g->failed = 1;
		return;
	}
	Expr *local = out_read(g, A);
	if (n->red == RED_MAX || n->red == RED_MIN)
		local = extremum_local(g, n, local);
	/* the derivative of exp(x) is the node's own value: read it */
	Expr *self = expr_new(g->a, EX_ACCESS, VT_FLOAT, NOLOC);
	self->tensor = n->out, self->nargs = n->nfree;
	self->args = ARENA_ARRAY(g->a, Expr *, n->nfree + 1);
	for (int k = 0; k < n->nfree; k++)
		self->args[k] = expr_index(g->a, k);
	for (int i = 0; i < rs.n; i++) {
		const Expr *R = rs.v[i];
		Tensor *c = NULL;
		if (n->red == RED_SUM)
			c = grad_row_term(g, n, local, R);
		if (!c) {
			Expr *d = gx_diff(g, n->body, R);
			if (!d)
				continue;
			if (n->red == RED_NONE)
				d = gx_replace(g, d, n->body, self);
			c = grad_contribution(
			    g, n, gx_mul(g, expr_copy(g->a, local), grad_remap(g, d)), R);
		}
		if (c)
			ptrvec_push(g->a, &g->contrib[R->tensor->id], c);
	}
}

/* The gradient `into` of input t as its one contribution c, read at
** offsets (grad_read.c): c's node writes it, and it is stored packed as a
** forward's packed output is, where the node's domain bounds the offset's
** row (rows past a sequence would overwrite the next one's). */
static Tensor *packed_into(Grad *g, const Tensor *t, Tensor *c, Tensor *into)
{
	if (!c->domain || !(expr_vars(c->domain) >> c->pack->row & 1)) {
		diag_error(g->d, t->loc,
			   "cannot derive the gradient of '%s': it is read at offsets '%s', and "
			   "nothing bounds the rows each offset reaches (a `where` on '%s' would), "
			   "so its gradient would be stored over the next sequence's rows",
			   t->name, c->pack->table->name, c->def->vars[c->pack->row].name);
		g->failed = 1;
		return NULL;
	}
	into->def = c->def, into->domain = c->domain, into->pack = c->pack;
	into->rank = c->rank, into->shape = c->shape;
	c->def->out = into;
	c->name = NULL;
	return into;
}

/* The adjoint of forward tensor t from its contributions (and the incoming
** dX of an output): one contribution is the adjoint itself, several are
** summed. A term whose domain is smaller than the others' is guarded by it,
** so the sum never reads a tensor outside its domain. */
static Tensor *finish(Grad *g, const Tensor *t, Tensor *into)
{
	PtrVec *cs = &g->contrib[t->id];
	PtrVec terms = *cs;
	Tensor *dx = g->dx[t->id];
	if (dx) {
		terms = (PtrVec){0};
		ptrvec_push(g->a, &terms, dx);
		for (int i = 0; i < cs->n; i++)
			ptrvec_push(g->a, &terms, cs->v[i]);
	}
	if (terms.n == 0 && !into)
		return NULL;
	for (int i = 0; i < terms.n && terms.n > 1; i++)
		if (((Tensor *)terms.v[i])->pack) {
			diag_error(g->d, t->loc,
				   "cannot derive the gradient of '%s': it is read at offsets and "
				   "elsewhere too, and the sum of its gradients would be stored at "
				   "the offsets' rows",
				   t->name);
			g->failed = 1;
			return NULL;
		}
	if (terms.n == 1 && (!into || ((Tensor *)terms.v[0])->kind == TK_TEMP)) {
		Tensor *c = terms.v[0];
		if (into && c->pack)
			return packed_into(g, t, c, into);
		if (into) {
			into->def = c->def, into->domain = c->domain;
			c->def->out = into;
			c->name = NULL; /* dropped: `into` took its node */
			return into;
		}
		if (c->kind == TK_TEMP)
			c->name = arena_printf(g->a, "d%s", t->name);
		return c;
	}
	Tensor *out =
	    into ? into
		 : grad_new_tensor(g, arena_printf(g->a, "d%s", t->name), TK_TEMP, g->val[t->id]);
	IndexVar vars[GRAD_MAX_VARS];
	const Node *first = terms.n ? ((Tensor *)terms.v[terms.n - 1])->def : t->def;
	for (int k = 0; k < t->rank; k++) {
		const char *name =
		    first && k < first->nfree ? first->vars[k].name : arena_printf(g->a, "x%d", k);
		vars[k] = (IndexVar){name, expr_copy(g->a, g->val[t->id]->shape[k]), NOLOC};
	}
	/* the conjuncts every term's domain has */
	PtrVec common = {0};
	for (int i = 0; i < terms.n; i++) {
		PtrVec cj = {0};
		grad_conjuncts(g, &cj, ((Tensor *)terms.v[i])->domain);
		if (i == 0) {
			common = cj;
			continue;
		}
		PtrVec keep = {0};
		for (int a = 0; a < common.n; a++)
			for (int b = 0; b < cj.n; b++)
				if (expr_equal(common.v[a], cj.v[b])) {
					ptrvec_push(g->a, &keep, common.v[a]);
					break;
				}
		common = keep;
	}
	Expr *filter = NULL, *body = NULL;
	for (int a = 0; a < common.n; a++)
		filter = expr_and(g->a, filter, common.v[a]);
	for (int i = 0; i < terms.n; i++) {
		Tensor *c = terms.v[i];
		Expr *r = out_read(g, c), *guard = NULL;
		PtrVec cj = {0};
		grad_conjuncts(g, &cj, c->domain);
		for (int b = 0; b < cj.n; b++) {
			int in = 0;
			for (int a = 0; a < common.n; a++)
				in |= expr_equal(common.v[a], cj.v[b]);
			if (!in)
				guard = expr_and(g->a, guard, cj.v[b]);
		}
		body = gx_add(g, body, guard ? gx_select(g, guard, r, NULL) : r);
	}
	grad_new_node(g, out, vars, t->rank, 0, RED_NONE, body ? body : gx_num(g, 0), filter,
		      t->def ? t->def->loc : t->loc,
		      terms.n ? "gradient sum" : "no gradient flows");
	return out;
}

/* The sweep proper: outputs' and temporaries' adjoints finished as their
** defining node is reached, then the dY outputs of the inputs. */
static void sweep(Grad *g)
{
	const Cascade *f = g->f;
	for (int i = f->nodes.n - 1; i >= 0 && !diag_too_many(g->d); i--) {
		const Node *n = f->nodes.v[i];
		if (g->active[n->out->id])
			g->adj[n->out->id] = finish(g, n->out, NULL);
		sweep_node(g, n);
	}
}

/* dY for every input that gets one, as the backward's outputs. */
static void outputs(Grad *g, PtrVec *dys)
{
	for (int i = 0; i < g->f->tensors.n; i++) {
		const Tensor *t = g->f->tensors.v[i];
		if (!grad_wants(t))
			continue;
		Tensor *o = grad_new_tensor(g, interface_name(g, t, "gradient"), TK_OUT, g->val[i]);
		o->dtype = t->dtype;
		if (g->failed)
			continue;
		finish(g, t, o);
		ptrvec_push(g->a, dys, o);
		grad_note(g, "%s: %s input: %s%s", o->name, dtype_name(t->dtype),
			  t->trainable
			      ? "declared trainable"
			      : "a 16- or 8-bit float input (an activation) always gets one",
			  g->contrib[i].n ? "" : "; nothing it feeds reaches an output: zero");
	}
}

/* A temporary that only copies another tensor of its shape (an adjoint
** passed through a sum or a log of a sum that became 1) is not kept: its
** readers read the original, and the copy dies. Its domain is inside the
** original's (the copy's filter has the original's domain), so no reader
** reads the original outside it. */
static void propagate_copies(Grad *g)
{
	for (int i = 0; i < g->b->nodes.n; i++) {
		Node *n = g->b->nodes.v[i];
		Expr *x = n->body;
		if (n->red != RED_NONE || n->out->kind != TK_TEMP || x->kind != EX_ACCESS ||
		    x->nargs != n->nfree || x->tensor == n->out)
			continue;
		int same = 1;
		for (int k = 0; k < n->nfree && same; k++)
			same = x->args[k]->kind == EX_INDEX && x->args[k]->var == k &&
			       expr_equal(x->tensor->shape[k], n->out->shape[k]);
		for (int j = i + 1; j < g->b->nodes.n && same; j++) {
			Node *m = g->b->nodes.v[j];
			int changed = 0;
			m->body = grad_swap_reads(g, m->body, n->out, x->tensor, &changed);
			m->filter = grad_swap_reads(g, m->filter, n->out, x->tensor, &changed);
		}
	}
}

/* A copy of e in which a read of a packed tensor at logical point p reads
** its buffer at pack->at(p) (the forward's offsets remapped to the
** backward's). A copy: subexpressions may be shared with other nodes, or
** with the forward. */
static Expr *unpack_read(Grad *g, const Expr *e)
{
	if (!e)
		return NULL;
	Expr *c = ARENA_NEW(g->a, Expr);
	*c = *e;
	if (e->nargs) {
		c->args = ARENA_ARRAY(g->a, Expr *, e->nargs);
		for (int i = 0; i < e->nargs; i++)
			c->args[i] = unpack_read(g, e->args[i]);
	}
	const Tensor *t = e->tensor;
	if (e->kind != EX_ACCESS || t->kind != TK_IN || !t->pack)
		return c;
	Expr **at = ARENA_ARRAY(g->a, Expr *, t->pack->rank + 1);
	for (int k = 0; k < t->pack->rank; k++)
		at[k] = expr_subst(g->a, grad_remap(g, t->pack->at[k]), c->args, c->nargs);
	c->args = at, c->nargs = t->pack->rank;
	return c;
}

/* The forward's packed outputs and their incoming gradients are inputs of
** the backward, which reads them at logical points (the sweep's rules do
** not know packing): each read becomes one of the caller's buffer at the
** place the forward stored the point, and the tensor the buffer. The
** readers' filters were closed over the logical domain as they were made,
** so no reader reaches a row past its sequence. */
static void unpack_inputs(Grad *g)
{
	for (int i = 0; i < g->b->nodes.n; i++) {
		Node *n = g->b->nodes.v[i];
		n->body = unpack_read(g, n->body);
		n->filter = unpack_read(g, n->filter);
		n->out->domain = unpack_read(g, n->out->domain);
	}
	for (int i = 0; i < g->made.n; i++) {
		Tensor *t = g->made.v[i];
		if (t->kind != TK_IN || !t->pack)
			continue;
		t->rank = t->pack->rank;
		t->shape = ARENA_ARRAY(g->a, Expr *, t->rank + 1);
		for (int k = 0; k < t->rank; k++)
			t->shape[k] = grad_remap(g, t->pack->shape[k]);
		t->domain = NULL, t->pack = NULL;
	}
}

/* ---- dead nodes and the final order --------------------------------------- */

/* Marks every tensor e reads. */
static void mark_reads(const Expr *e, char *live)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS)
		live[e->tensor->id] = 1;
	for (int i = 0; i < e->nargs; i++)
		mark_reads(e->args[i], live);
}

/* Keeps what the outputs need: inputs, dX and dY always, saved outputs and
** temporaries when read; tensors in the cascade's order (inputs, outputs,
** temporaries), nodes in the order they were made (topological). */
static void assemble(Grad *g, PtrVec *dys)
{
	int nm = g->made.n;
	char *live = ARENA_ARRAY(g->a, char, nm + 1);
	for (int i = 0; i < nm; i++) {
		Tensor *t = g->made.v[i];
		t->id = i;
		live[i] = t->name && t->kind == TK_OUT;
	}
	for (int i = g->b->nodes.n - 1; i >= 0; i--) {
		Node *n = g->b->nodes.v[i];
		if (!live[n->out->id])
			continue;
		mark_reads(n->body, live);
		mark_reads(n->filter, live);
		mark_reads(n->out->domain, live);
	}
	PtrVec tensors = {0}, nodes = {0};
	for (int i = 0; i < g->f->tensors.n; i++)
		if (((Tensor *)g->f->tensors.v[i])->kind == TK_IN)
			ptrvec_push(g->a, &tensors, g->val[i]);
	for (int i = 0; i < g->f->tensors.n; i++)
		if (grad_is_output(g, g->f->tensors.v[i]) && live[g->val[i]->id])
			ptrvec_push(g->a, &tensors, g->val[i]);
	for (int i = 0; i < g->f->tensors.n; i++)
		if (g->dx[i])
			ptrvec_push(g->a, &tensors, g->dx[i]);
	for (int i = 0; i < dys->n; i++)
		ptrvec_push(g->a, &tensors, dys->v[i]);
	for (int i = 0; i < nm; i++) {
		Tensor *t = g->made.v[i];
		if (t->kind == TK_TEMP && t->name && live[i])
			ptrvec_push(g->a, &tensors, t);
	}
	for (int i = 0; i < g->b->nodes.n; i++) {
		Node *n = g->b->nodes.v[i];
		if (live[n->out->id])
			ptrvec_push(g->a, &nodes, n);
	}
	for (int i = 0; i < tensors.n; i++)
		((Tensor *)tensors.v[i])->id = i;
	for (int i = 0; i < nodes.n; i++)
		((Node *)nodes.v[i])->id = i;
	g->b->tensors = tensors, g->b->nodes = nodes;
}

Cascade *grad_derive(Arena *a, Diag *d, const Cascade *c, int flash, PtrVec *notes)
{
	Grad g;
	memset(&g, 0, sizeof g);
	int nt = c->tensors.n + 1;
	g.a = a, g.d = d, g.f = c, g.notes = notes;
	g.b = ARENA_NEW(a, Cascade);
	g.b->name = arena_printf(a, "%s_bwd", c->name), g.b->loc = c->loc;
	g.b->dims = c->dims, g.b->params = c->params; /* shared: never rewritten */
	g.val = ARENA_ARRAY(a, Tensor *, nt);
	g.dx = ARENA_ARRAY(a, Tensor *, nt);
	g.adj = ARENA_ARRAY(a, Tensor *, nt);
	g.contrib = ARENA_ARRAY(a, PtrVec, nt);
	g.active = ARENA_ARRAY(a, char, nt);
	g.stop = ARENA_ARRAY(a, char, nt);
	setup(&g);
	activity(&g);
	for (int i = 0; i < c->nodes.n; i++) {
		const Node *n = c->nodes.v[i];
		if (g.stop[n->out->id] && is_desugared_stabiliser(n))
			grad_note(&g,
				  "%s (the %s at %d:%d): treated as a constant (stop-gradient): "
				  "the result does not depend on the stabilising max",
				  n->out->name, n->origin, n->loc.line, n->loc.col);
		else if (g.stop[n->out->id])
			grad_note(
			    &g,
			    "%s (at %d:%d): treated as a constant (stop-gradient): every output "
			    "is unchanged when it shifts (the exponentials exp(x - %s) it "
			    "scales cancel in ratios and logs)",
			    n->out->name, n->loc.line, n->loc.col, n->out->name);
	}
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_IN && !grad_wants(t))
			grad_note(&g, "%s: no gradient (%s)", t->name,
				  dtype_is_float(t->dtype) ? "an f32 input not declared trainable"
							   : "not a floating-point input");
	}
	if (g.failed)
		return NULL;
	sweep(&g);
	PtrVec dys = {0};
	if (!g.failed)
		outputs(&g, &dys);
	if (g.failed)
		return NULL;
	if (flash)
		grad_from_lse(&g);
	propagate_copies(&g);
	unpack_inputs(&g);
	assemble(&g, &dys);
	return g.b;
}
