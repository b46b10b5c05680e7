/*
** lang/sema.c: semantic analysis of one attention block, top level.
** Declarations become dims, params and tensors; statements are ordered by
** their data dependences (so a file may define a tensor after its use) and
** lowered one by one; the block's outputs and inputs are checked last.
*/
#include <string.h>

#include "sema.h"

/* What a name is, in the words of the declaration, for messages that say
** why a use does not fit it. */
static const char *sym_kind_name(const Sym *y)
{
	switch (y->kind) {
	case SYM_DIM: return "dim";
	case SYM_CONST: return "const";
	case SYM_PARAM: return "param";
	default:
		return !y->tensor                  ? "tensor"
		       : y->tensor->kind == TK_IN  ? "input"
		       : y->tensor->kind == TK_OUT ? "output"
						   : "tensor";
	}
}

/* One namespace per attention block: dims, consts, params and tensors may
** not share a name, so every use is unambiguous. */
static Sym *declare(Sema *s, const char *name, SymKind k, SrcLoc loc)
{
	Sym *old = scope_sym(s, name);
	if (old) {
		diag_error(s->d, loc, "redefinition of '%s'", name);
		diag_note(s->d, old->loc, "previous definition of %s '%s' is here",
			  sym_kind_name(old), name);
		return NULL;
	}
	Sym *y = ARENA_NEW(s->a, Sym);
	y->name = name, y->kind = k, y->loc = loc;
	ptrvec_push(s->a, &s->syms, y);
	return y;
}

/* Element types by their spelling in the language; f64 is internal to
** the compiler, so a file cannot ask for it. */
static int parse_dtype(Sema *s, const char *name, SrcLoc loc, DType *out)
{
	for (int t = 0; t < DT_COUNT; t++) {
		if (t != DT_F64 && !strcmp(name, dtype_name((DType)t))) {
			*out = (DType)t;
			return 1;
		}
	}
	diag_error(s->d, loc,
		   "unknown type '%s'; expected one of bf16, f16, f32, f8e4m3, f8e5m2, i32, bool",
		   name);
	return 0;
}

/* The value type an element of type t has in expressions. */
static VType vtype_of(DType t)
{
	return t == DT_BOOL ? VT_BOOL : t == DT_I32 ? VT_INT : VT_FLOAT;
}

/* A dim is a size fixed at compile time or given at run time; ids follow
** declaration order. */
static void declare_dim(Sema *s, AstItem *it)
{
	Sym *y = declare(s, it->name, SYM_DIM, it->nameloc);
	if (!y)
		return;
	Dim *d = ARENA_NEW(s->a, Dim);
	d->name = it->name, d->id = s->c->dims.n, d->fixed = it->fixed, d->loc = it->nameloc;
	ptrvec_push(s->a, &s->c->dims, d);
	y->dim = d, y->decl = it;
}

/* Constants fold to literals at once, so later stages never see them. */
static void declare_const(Sema *s, AstItem *it)
{
	Expr *v = sema_scalar_expr(s, it->value, 0, "a const");
	Sym *y = declare(s, it->name, SYM_CONST, it->nameloc);
	if (!y || !v)
		return;
	y->decl = it;
	if (v->type == VT_FLOAT) {
		y->value = expr_float(s->a, expr_eval_float(v, NULL, NULL));
	} else if (v->type == VT_INT) {
		y->value = expr_int(s->a, expr_eval_int(v, NULL, NULL));
	} else {
		diag_error(s->d, it->value->loc, "const '%s' must be a number", it->name);
		return;
	}
	y->value->loc = it->value->loc;
}

/* A param is a runtime scalar, f32 or i32, with an optional default that
** may use other params; an int default of an f32 param is converted. */
static void declare_param(Sema *s, AstItem *it)
{
	DType t = DT_F32;
	int ok = parse_dtype(s, it->type, it->typeloc, &t);
	if (ok && t != DT_F32 && t != DT_I32) {
		diag_error(s->d, it->typeloc, "a param has type f32 or i32, not %s", it->type);
		ok = 0;
	}
	Expr *dv = NULL;
	if (it->value) {
		dv = sema_scalar_expr(s, it->value, 1, "a param default");
		if (dv && ok && t == DT_F32 && dv->type == VT_INT)
			dv = sema_to_float(s, dv, it->value);
		if (dv && ok && vtype_of(t) != dv->type) {
			diag_error(s->d, it->value->loc,
				   "default of param '%s' has type %s, but the param is %s",
				   it->name, vtype_name(dv->type), dtype_name(t));
			dv = NULL;
		}
	}
	if (it->trainable)
		diag_error(
		    s->d, it->trainloc,
		    "'trainable' marks an input tensor that gets a gradient; param '%s' is a "
		    "runtime scalar and gets none (declare it as `in %s[1] : f32 trainable`)",
		    it->name, it->name);
	Sym *y = declare(s, it->name, SYM_PARAM, it->nameloc);
	if (!y || !ok)
		return;
	Param *p = ARENA_NEW(s->a, Param);
	p->name = it->name, p->id = s->c->params.n, p->dtype = t, p->type = vtype_of(t);
	p->deflt = dv, p->loc = it->nameloc;
	ptrvec_push(s->a, &s->c->params, p);
	y->param = p, y->decl = it;
}

/* Tensors are numbered in the order they are made: inputs and outputs in
** declaration order, temporaries as their statements are lowered. */
static Tensor *new_tensor(Sema *s, const char *name, TensorKind k, SrcLoc loc)
{
	Tensor *t = ARENA_NEW(s->a, Tensor);
	t->name = name, t->kind = k, t->loc = loc, t->id = s->c->tensors.n;
	ptrvec_push(s->a, &s->c->tensors, t);
	return t;
}

/* `trainable` asks for the gradient of an input (compiler/grad.c): an out
** has none to ask for, and an integer or bool input is not differentiable.
** ok_type says the dtype parsed (else t means nothing). */
static int trainable_ok(Sema *s, AstItem *it, DType t, int ok_type)
{
	if (!it->trainable)
		return 1;
	if (it->kind == I_OUT) {
		diag_error(s->d, it->trainloc,
			   "'trainable' marks an input that gets a gradient; '%s' is an output",
			   it->name);
		return 0;
	}
	if (ok_type && !dtype_is_float(t)) {
		diag_error(s->d, it->trainloc,
			   "'trainable' needs a floating-point input; '%s' is %s and has no "
			   "gradient",
			   it->name, dtype_name(t));
		return 0;
	}
	return 1;
}

/* An input or output with its element type and a shape of integer scalar
** expressions (dims, consts, literals). */
static void declare_tensor(Sema *s, AstItem *it)
{
	DType t = DT_F32;
	int ok = parse_dtype(s, it->type, it->typeloc, &t);
	Expr **shape = ARENA_ARRAY(s->a, Expr *, it->nidx);
	for (int k = 0; k < it->nidx; k++) {
		shape[k] = sema_scalar_expr(s, it->idx[k], 0, "a tensor shape");
		if (shape[k] && shape[k]->type != VT_INT) {
			diag_error(s->d, it->idx[k]->loc, "a tensor shape must be an integer");
			shape[k] = NULL;
		}
		ok = ok && shape[k];
	}
	/* a misplaced mark is reported, and the tensor declared all the same */
	int trainable = trainable_ok(s, it, t, ok) && it->trainable;
	Sym *y = declare(s, it->name, SYM_TENSOR, it->nameloc);
	if (!y || !ok)
		return;
	Tensor *tn = new_tensor(s, it->name, it->kind == I_IN ? TK_IN : TK_OUT, it->nameloc);
	tn->dtype = t, tn->type = vtype_of(t), tn->rank = it->nidx, tn->shape = shape;
	tn->trainable = trainable;
	y->tensor = tn, y->decl = it;
}

/* A statement either defines a declared output or introduces a temporary
** whose rank is its left-hand side's and whose ranges come later. */
static void declare_statement(Sema *s, AstItem *it)
{
	Sym *y = scope_sym(s, it->name);
	if (y && y->kind != SYM_TENSOR) {
		diag_error(s->d, it->nameloc, "'%s' is a %s, not a tensor; it cannot be assigned",
			   it->name, sym_kind_name(y));
		return;
	}
	if (y && y->tensor && y->tensor->kind == TK_IN) {
		diag_error(s->d, it->nameloc, "cannot assign to input '%s'", it->name);
		diag_note(s->d, y->loc, "'%s' is declared as an input here", it->name);
		return;
	}
	if (y && y->stmt) {
		diag_error(s->d, it->nameloc, "redefinition of '%s'", it->name);
		diag_note(s->d, y->stmt->nameloc, "previous definition of '%s' is here", it->name);
		return;
	}
	if (!y) {
		y = declare(s, it->name, SYM_TENSOR, it->nameloc);
		y->decl = it;
	}
	if (y->tensor && y->tensor->rank != it->nidx) {
		diag_error(s->d, it->nameloc, "'%s' has rank %d but is assigned with %d indices",
			   it->name, y->tensor->rank, it->nidx);
		return;
	}
	y->stmt = it;
}

/* The statement-defined tensors e reads, the edges of the dependence
** order. */
static void collect_tensor_refs(Sema *s, AstExpr *e, PtrVec *out)
{
	if (!e)
		return;
	if (e->kind == A_ACCESS) {
		Sym *y = scope_sym(s, e->name);
		if (y && y->kind == SYM_TENSOR && y->stmt)
			ptrvec_push(s->a, out, y);
	}
	for (int i = 0; i < e->nargs; i++)
		collect_tensor_refs(s, e->args[i], out);
	collect_tensor_refs(s, e->body, out);
	collect_tensor_refs(s, e->where, out);
}

/* Depth-first ordering of statements by what they read; a back edge is a
** cyclic definition, reported once at the statement that closes the cycle. */
static void order_visit(Sema *s, Sym *y, Sym **path, int depth, PtrVec *order)
{
	if (y->state == 2)
		return;
	if (y->state == 1) {
		int from = depth > 0 ? depth - 1 : 0;
		while (from > 0 && path[from] != y)
			from--;
		char buf[512];
		size_t n = 0;
		buf[0] = 0;
		for (int i = from; i < depth && n < sizeof buf - 64; i++)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s -> ", path[i]->name);
		snprintf(buf + n, sizeof buf - n, "%s", y->name);
		diag_error(s->d, y->stmt->nameloc, "cyclic definition: '%s' depends on itself (%s)",
			   y->name, buf);
		for (int i = from; i < depth; i++)
			path[i]->failed = 1;
		return;
	}
	y->state = 1;
	if (depth < 256)
		path[depth] = y;
	PtrVec deps = {0};
	collect_tensor_refs(s, y->stmt->rhs, &deps);
	collect_tensor_refs(s, y->stmt->where, &deps);
	for (int i = 0; i < deps.n && depth < 255; i++)
		order_visit(s, deps.v[i], path, depth + 1, order);
	/* The recursion stops at 256 statements, each reading the next: the
	** rest of such a chain would be analysed out of order. */
	for (int i = 0; i < deps.n && depth == 255 && !y->failed; i++) {
		Sym *dep = deps.v[i];
		if (dep->state == 2)
			continue;
		y->failed = 1;
		if (!s->chain_reported)
			diag_error(s->d, y->stmt->nameloc,
				   "definitions chained too deeply: '%s' is the 256th of a chain "
				   "each reading the next (the limit is 256)",
				   y->name);
		s->chain_reported = 1;
	}
	y->state = 2;
	ptrvec_push(s->a, order, y->stmt);
}

/* Marks every symbol e reads, for the unused-input and unused-temporary
** warnings. */
static void mark_uses(Sema *s, AstExpr *e)
{
	if (!e)
		return;
	if (e->kind == A_ACCESS) {
		Sym *y = scope_sym(s, e->name);
		if (y)
			y->used = 1;
	}
	for (int i = 0; i < e->nargs; i++)
		mark_uses(s, e->args[i]);
	mark_uses(s, e->body);
	mark_uses(s, e->where);
}

/* Outputs must be written, inputs should be read, temporaries should feed
** something: the last two are warnings, as unused variables are in C. */
static void check_block(Sema *s)
{
	for (int i = 0; i < s->att->items.n; i++) {
		AstItem *it = s->att->items.v[i];
		if (it->kind == I_STMT) {
			mark_uses(s, it->rhs);
			mark_uses(s, it->where);
			/* a packed output's offsets are read on the left */
			for (int k = 0; k < it->nidx; k++)
				mark_uses(s, it->idx[k]);
		}
	}
	for (int i = 0; i < s->syms.n; i++) {
		Sym *y = s->syms.v[i];
		if (y->kind != SYM_TENSOR)
			continue;
		/* temporaries get their Tensor when lowered, after this check */
		TensorKind k = y->tensor ? y->tensor->kind : y->stmt ? TK_TEMP : TK_IN;
		if (k == TK_OUT && !y->stmt)
			diag_error(s->d, y->loc, "output '%s' is never written", y->name);
		else if (k == TK_IN && y->tensor && !y->used)
			diag_warning(s->d, y->loc, "input '%s' is never used", y->name);
		else if (k == TK_TEMP && !y->used && y->stmt)
			diag_warning(
			    s->d, y->stmt->nameloc,
			    "'%s' is computed but never used; declare it 'out' to return it",
			    y->name);
	}
}

/* Declarations first, then the statements in dependence order, so a
** statement sees every symbol of the block and every tensor it reads is
** already lowered; a statement whose inputs failed is skipped quietly. */
Cascade *sema_attention(Arena *a, Diag *d, AstAttention *att)
{
	Sema sema = {0}, *s = &sema;
	s->a = a, s->d = d;
	Cascade *c = ARENA_NEW(s->a, Cascade);
	c->name = att->name, c->loc = att->nameloc;
	s->c = c, s->att = att;
	for (int i = 0; i < att->items.n && !diag_too_many(s->d); i++) {
		AstItem *it = att->items.v[i];
		switch (it->kind) {
		case I_DIM: declare_dim(s, it); break;
		case I_CONST: declare_const(s, it); break;
		case I_PARAM: declare_param(s, it); break;
		case I_IN:
		case I_OUT: declare_tensor(s, it); break;
		case I_INDEX: ptrvec_push(s->a, &s->indexdecl, it); break;
		case I_STMT: break;
		}
	}
	for (int i = 0; i < att->items.n; i++) {
		AstItem *it = att->items.v[i];
		if (it->kind == I_STMT)
			declare_statement(s, it);
	}
	PtrVec order = {0};
	Sym *path[256];
	for (int i = 0; i < s->syms.n; i++) {
		Sym *y = s->syms.v[i];
		if (y->kind == SYM_TENSOR && y->stmt)
			order_visit(s, y, path, 0, &order);
	}
	check_block(s);
	for (int i = 0; i < order.n && !diag_too_many(s->d); i++) {
		Stmt st = {0};
		st.item = order.v[i];
		Sym *y = scope_sym(s, st.item->name);
		if (!y->tensor) {
			y->tensor = new_tensor(s, st.item->name, TK_TEMP, st.item->nameloc);
			y->tensor->rank = st.item->nidx;
		}
		st.lhs = y->tensor;
		s->st = &st;
		if (y->failed || sema_reads_failed(s, st.item->rhs) ||
		    sema_reads_failed(s, st.item->where) || !sema_index_statement(s, &st) ||
		    !lower_statement(s, &st))
			y->failed = 1;
		s->st = NULL;
	}
	return c;
}
