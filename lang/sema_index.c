/*
** lang/sema_index.c: index variables of a statement.
** Every name that is not a declared symbol is an index. Indices on the left
** are free; a reduction binds its own; anything else is an error. Ranges are
** inferred by unifying each plain index with the tensor dimension it
** subscripts (TC-style range inference), and must agree everywhere.
*/
#include <string.h>

#include "sema.h"

static int check_affine(Sema *s, AstExpr *e);

/* A statement that reads a failed tensor is not checked at all, so one
** error does not cascade into many. */
int sema_reads_failed(Sema *s, AstExpr *e)
{
	if (!e)
		return 0;
	if (e->kind == A_ACCESS) {
		Sym *y = scope_sym(s, e->name);
		if (y && y->failed)
			return 1;
	}
	for (int i = 0; i < e->nargs; i++)
		if (sema_reads_failed(s, e->args[i]))
			return 1;
	return sema_reads_failed(s, e->body) || sema_reads_failed(s, e->where);
}

/* Every name that is not a declared symbol is an index. */
static int is_index_name(Sema *s, AstExpr *e)
{
	return e->kind == A_NAME && !scope_sym(s, e->name);
}

/* The statement's VarInfo for name, made at its first use. */
static VarInfo *add_var(Sema *s, Stmt *st, const char *name, SrcLoc loc)
{
	VarInfo *v = scope_var(st, name);
	if (v)
		return v;
	if (st->nvars == MAX_VARS) {
		diag_error(s->d, loc, "too many index variables in one statement (limit %d)",
			   MAX_VARS);
		return NULL;
	}
	v = &st->vars[st->nvars++];
	memset(v, 0, sizeof *v);
	v->name = name, v->loc = loc;
	return v;
}

/* True when every leaf of e is a literal or a fixed-size dim. */
static int is_constant(const Expr *e)
{
	if (e->kind == EX_DIM && !e->dim->fixed)
		return 0;
	if (e->kind == EX_PARAM || e->kind == EX_INDEX || e->kind == EX_ACCESS)
		return 0;
	for (int i = 0; i < e->nargs; i++)
		if (!is_constant(e->args[i]))
			return 0;
	return 1;
}

/* Constant-valued extents (literals, fixed dims) compare by value; others
** structurally, so N and N agree while N and M do not. */
int sema_extent_equal(const Expr *a, const Expr *b)
{
	if (is_constant(a) && is_constant(b))
		return expr_eval_int(a, NULL, NULL) == expr_eval_int(b, NULL, NULL);
	return expr_equal(a, b);
}

/* Remembers which access gave v its range, for the note of a later clash. */
static void describe_access(AstExpr *acc, VarInfo *v)
{
	v->from = acc->loc;
	v->from_text = acc->name;
}

/* `wide` is `narrow + c`, c a positive literal: the offsets of a packed
** batch, cu[B + 1], are read at b and b + 1 with b spanning B. */
static int extent_plus(const Expr *wide, const Expr *narrow)
{
	return wide->kind == EX_BINOP && wide->op == OP_ADD && wide->args[1]->kind == EX_INT &&
	       wide->args[1]->ival > 0 && sema_extent_equal(wide->args[0], narrow);
}

/* Records that index `name` spans `extent`, reporting a clash with an
** earlier range. A range X and a dimension X + c agree, and the index
** takes X: it reads the first X positions of that dimension. */
static void bind_extent(Sema *s, Stmt *st, const char *name, Expr *extent, AstExpr *acc, SrcLoc at)
{
	VarInfo *v = scope_var(st, name);
	if (!v || !extent)
		return;
	if (!v->extent || extent_plus(v->extent, extent)) {
		v->extent = extent;
		describe_access(acc, v);
		return;
	}
	if (extent_plus(extent, v->extent))
		return;
	if (!sema_extent_equal(v->extent, extent)) {
		const char *a = expr_str(s->a, v->extent, NULL), *b = expr_str(s->a, extent, NULL);
		diag_error(s->d, at,
			   "index '%s' is bound to two different ranges: %s (from '%s') and %s "
			   "(from '%s')",
			   name, a, v->from_text, b, acc->name);
		diag_note(s->d, v->from, "'%s' gets the range %s here", name, a);
	}
}

/* `a*X+b` with a, b index names and X a dim or const: the GQA head index. */
static int split_pattern(Sema *s, AstExpr *e, AstExpr **a, AstExpr **x, AstExpr **b)
{
	if (e->kind != A_BINARY || e->op != OP_ADD)
		return 0;
	AstExpr *m = e->args[0];
	if (m->kind != A_BINARY || m->op != OP_MUL)
		return 0;
	if (!is_index_name(s, m->args[0]) || !is_index_name(s, e->args[1]))
		return 0;
	AstExpr *xx = m->args[1];
	Sym *y = xx->kind == A_NAME ? scope_sym(s, xx->name) : NULL;
	if (!y || (y->kind != SYM_DIM && y->kind != SYM_CONST))
		return 0;
	*a = m->args[0], *x = xx, *b = e->args[1];
	return 1;
}

/* A slice `e < E` at position k (from 0) of a dimension `dim` gives e the
** range E, which must fit: a fixed size at most the dimension's when both
** are fixed, else the dimension's own extent (nothing could check it). */
static void infer_slice(Sema *s, Stmt *st, AstExpr *acc, AstExpr *arg, int k, Expr *dim)
{
	AstExpr *ix = arg->args[0];
	Expr *ext = sema_scalar_expr(s, arg->args[1], 0, "a slice bound");
	if (!ext)
		return;
	if (ext->type != VT_INT) {
		diag_error(s->d, arg->args[1]->loc, "a slice bound must be an integer, not %s",
			   vtype_name(ext->type));
		return;
	}
	const char *et = expr_str(s->a, ext, NULL), *dt = expr_str(s->a, dim, NULL);
	if (is_constant(ext) && is_constant(dim)) {
		long n = expr_eval_int(ext, NULL, NULL), size = expr_eval_int(dim, NULL, NULL);
		if (n < 1) {
			diag_error(s->d, arg->loc,
				   "slice '%s < %s' is empty: a slice takes at least one position",
				   ix->name, et);
			return;
		}
		if (n > size) {
			diag_error(
			    s->d, arg->loc,
			    "slice '%s < %s' is out of range: it reads positions 0 to %ld of "
			    "dimension %d of '%s', which has %ld",
			    ix->name, et, n - 1, k + 1, acc->name, size);
			return;
		}
	} else if (!sema_extent_equal(ext, dim)) {
		diag_error(s->d, arg->loc,
			   "slice '%s < %s' cannot be checked against dimension %d of '%s' (%s): "
			   "its bound must be a compile-time size or that dimension's extent",
			   ix->name, et, k + 1, acc->name, dt);
		return;
	}
	bind_extent(s, st, ix->name, ext, acc, ix->loc);
}

/* Infers ranges from one subscript position k of a tensor whose shape is
** known: a plain index takes the dimension, a slice `e < E` the range E; a*X+b
** over a dimension P*X gives a the range P and b the range X. */
static void infer_position(Sema *s, Stmt *st, AstExpr *acc, AstExpr *arg, int k, Expr *dim)
{
	if (!dim)
		return;
	if (sema_slice(s, arg)) {
		infer_slice(s, st, acc, arg, k, dim);
		return;
	}
	if (is_index_name(s, arg)) {
		bind_extent(s, st, arg->name, dim, acc, arg->loc);
		return;
	}
	AstExpr *a, *x, *b;
	if (split_pattern(s, arg, &a, &x, &b) && dim->kind == EX_BINOP && dim->op == OP_MUL) {
		Sym *y = scope_sym(s, x->name);
		Expr *xe = y->kind == SYM_DIM ? expr_new(s->a, EX_DIM, VT_INT, x->loc) : y->value;
		if (y->kind == SYM_DIM)
			xe->dim = y->dim;
		if (sema_extent_equal(dim->args[1], xe)) {
			bind_extent(s, st, a->name, dim->args[0], acc, a->loc);
			bind_extent(s, st, b->name, dim->args[1], acc, b->loc);
		}
	}
}

/* Ranges from every position of one access to a tensor of known shape. */
static void infer_access(Sema *s, Stmt *st, AstExpr *acc)
{
	Sym *y = scope_sym(s, acc->name);
	if (!y || y->kind != SYM_TENSOR || !y->tensor || !y->tensor->shape)
		return;
	if (y->tensor->rank != acc->nargs)
		return; /* reported when the expression is typed */
	for (int k = 0; k < acc->nargs; k++)
		infer_position(s, st, acc, acc->args[k], k, y->tensor->shape[k]);
}

/* The research sketch's scans (and the usual names of prefix sums), which
** the language cannot express yet: they get a message that says so rather
** than an unknown reduction. */
static int is_scan(const char *name)
{
	static const char *const scans[] = {"scan",   "scan_sum", "scan_prod", "scan_max",
					    "cumsum", "cumprod",  "cummax"};
	for (size_t i = 0; i < sizeof scans / sizeof *scans; i++)
		if (!strcmp(name, scans[i]))
			return 1;
	return 0;
}

/* Walks the right-hand side with the stack of reduction-bound names,
** checking the binding rules and collecting ranges. */
static int walk(Sema *s, Stmt *st, AstExpr *e, const char **bound, int nb, int in_index)
{
	if (!e)
		return 1;
	int ok = 1;
	switch (e->kind) {
	case A_NAME:
		if (!scope_sym(s, e->name)) {
			VarInfo *v = scope_var(st, e->name);
			int is_bound = v && v->on_lhs;
			for (int i = 0; i < nb && !is_bound; i++)
				is_bound = !strcmp(bound[i], e->name);
			if (!is_bound && v && v->reported)
				return 0;
			if (!is_bound) {
				if (v)
					v->reported = 1;
				if (in_index || (v && v->as_index))
					diag_error(
					    s->d, e->loc,
					    "index '%s' is not bound: it is not on the left-hand "
					    "side of '%s' and no enclosing reduction binds it",
					    e->name, st->item->name);
				else
					diag_error(s->d, e->loc, "use of undeclared name '%s'",
						   e->name);
				return 0;
			}
		}
		return 1;
	case A_ACCESS: {
		Sym *y = scope_sym(s, e->name);
		if (y && y->kind == SYM_TENSOR && y->tensor && y->tensor->pack) {
			diag_error(
			    s->d, e->nameloc,
			    "'%s' is written packed at offsets and cannot be read by another "
			    "statement; read the value it is computed from",
			    e->name);
			return 0;
		}
		if (y && y->kind == SYM_TENSOR && y->tensor && y->tensor->rank != e->nargs) {
			diag_error(s->d, e->loc, "'%s' has rank %d but is subscripted with %d %s",
				   e->name, y->tensor->rank, e->nargs,
				   e->nargs == 1 ? "index" : "indices");
			return 0;
		}
		for (int i = 0; i < e->nargs; i++) {
			int good = walk(s, st, e->args[i], bound, nb, 1);
			ok &= good && check_affine(s, e->args[i]);
		}
		if (ok)
			infer_access(s, st, e);
		return ok;
	}
	case A_REDUCE: {
		if (is_scan(e->name)) {
			diag_error(
			    s->d, e->nameloc,
			    "'%s' is a scan (a running reduction along an index), which cannot "
			    "be written yet: chunkwise linear attention and stick-breaking "
			    "attention in linear time need one (docs/language.md section 12)",
			    e->name);
			return 0;
		}
		const char *nbound[MAX_VARS];
		int n = nb < MAX_VARS ? nb : MAX_VARS;
		if (n)
			memcpy(nbound, bound, sizeof(char *) * (size_t)n);
		int keeps = !strcmp(e->name, "softmax");
		for (int i = 0; i < e->nargs; i++) {
			AstExpr *ix = e->args[i];
			if (ix->kind != A_NAME) {
				diag_error(s->d, ix->loc,
					   "'%s[...]' takes index names, not expressions", e->name);
				ok = 0;
				continue;
			}
			Sym *y = scope_sym(s, ix->name);
			if (y) {
				diag_error(
				    s->d, ix->loc,
				    "'%s' is a %s, not an index; '%s[...]' takes index names",
				    ix->name, y->kind == SYM_DIM ? "dim" : "declared name",
				    e->name);
				ok = 0;
				continue;
			}
			VarInfo *v = scope_var(st, ix->name);
			int outer = v && v->on_lhs;
			for (int j = 0; j < nb && !outer; j++)
				outer = !strcmp(bound[j], ix->name);
			if (keeps && !outer) {
				diag_error(
				    s->d, ix->loc,
				    "softmax[%s] keeps index '%s', so '%s' must appear on the "
				    "left-hand side or be reduced by an enclosing reduction",
				    ix->name, ix->name, ix->name);
				ok = 0;
			} else if (!keeps && v && v->on_lhs) {
				diag_error(s->d, ix->loc,
					   "index '%s' is reduced by '%s' but also appears on the "
					   "left-hand side of '%s'",
					   ix->name, e->name, st->item->name);
				ok = 0;
			} else if (!keeps && outer) {
				diag_error(s->d, ix->loc,
					   "index '%s' is already bound by an enclosing reduction",
					   ix->name);
				ok = 0;
			} else if (!keeps && n < MAX_VARS) {
				nbound[n++] = ix->name;
			}
		}
		ok &= walk(s, st, e->body, nbound, n, 0);
		ok &= walk(s, st, e->where, nbound, n, 0);
		return ok;
	}
	default:
		for (int i = 0; i < e->nargs; i++)
			ok &= walk(s, st, e->args[i], bound, nb, in_index);
		return ok;
	}
}

/* First sweep: every index-like name gets a VarInfo, and we note which are
** used as subscripts (to word the unbound-index error well). */
static void collect(Sema *s, Stmt *st, AstExpr *e, int in_index)
{
	if (!e)
		return;
	if (e->kind == A_NAME && !scope_sym(s, e->name)) {
		VarInfo *v = add_var(s, st, e->name, e->loc);
		if (v && in_index)
			v->as_index = 1;
	}
	int sub = e->kind == A_ACCESS ? 1 : in_index;
	for (int i = 0; i < e->nargs; i++)
		collect(s, st, e->args[i], e->kind == A_REDUCE ? 0 : sub);
	collect(s, st, e->body, 0);
	collect(s, st, e->where, 0);
}

/* `T[b, ...] + i` (or `i + T[b, ...]`) with T a tensor and b, ..., i index
** names: a packed output's row, *table the access and *row i. */
int sema_pack_pattern(Sema *s, AstExpr *e, AstExpr **table, AstExpr **row)
{
	if (e->kind != A_BINARY || e->op != OP_ADD)
		return 0;
	for (int side = 0; side < 2; side++) {
		AstExpr *t = e->args[side], *r = e->args[1 - side];
		if (t->kind != A_ACCESS || !is_index_name(s, r))
			continue;
		for (int k = 0; k < t->nargs; k++)
			if (!is_index_name(s, t->args[k]))
				return 0;
		*table = t, *row = r;
		return 1;
	}
	return 0;
}

/* The offsets of a packed output are an i32 input read at index names
** only, at one position of an `out`: anything else has no packed layout. */
static int check_pack(Sema *s, Stmt *st, AstExpr *ix, AstExpr *table, int *npacked)
{
	Sym *y = scope_sym(s, table->name);
	Tensor *t = y && y->kind == SYM_TENSOR ? y->tensor : NULL;
	if (st->lhs->kind != TK_OUT) {
		diag_error(s->d, ix->loc,
			   "only an 'out' can be written packed at offsets ('%s' is a temporary)",
			   st->item->name);
		return 0;
	}
	if (++*npacked > 1) {
		diag_error(s->d, ix->loc,
			   "'%s' is written packed at two positions; a packed "
			   "output has one dimension of rows at offsets",
			   st->item->name);
		return 0;
	}
	if (!t || t->kind != TK_IN || t->dtype != DT_I32) {
		diag_error(s->d, table->nameloc,
			   "the offsets of a packed output must be an i32 input, and '%s' is not",
			   table->name);
		return 0;
	}
	if (t->rank != table->nargs) {
		diag_error(s->d, table->loc, "'%s' has rank %d but is subscripted with %d %s",
			   table->name, t->rank, table->nargs,
			   table->nargs == 1 ? "index" : "indices");
		return 0;
	}
	return 1;
}

/* Left-hand subscripts are plain index names, a*X+b, or a packed output's
** row T[b] + i; each name at most once, since a statement defines every
** element exactly once. */
static int check_lhs(Sema *s, Stmt *st)
{
	AstItem *it = st->item;
	int ok = 1, npacked = 0;
	for (int k = 0; k < it->nidx; k++) {
		AstExpr *ix = it->idx[k], *a, *x, *b, *table, *row;
		AstExpr *names[MAX_VARS];
		int nn = 0;
		if (is_index_name(s, ix))
			names[nn++] = ix;
		else if (split_pattern(s, ix, &a, &x, &b))
			names[nn++] = a, names[nn++] = b;
		else if (sema_pack_pattern(s, ix, &table, &row)) {
			if (!check_pack(s, st, ix, table, &npacked)) {
				ok = 0;
				continue;
			}
			for (int i = 0; i < table->nargs && nn < MAX_VARS - 1; i++)
				names[nn++] = table->args[i];
			names[nn++] = row;
		} else {
			diag_error(
			    s->d, ix->loc,
			    "a left-hand subscript must be an index name, of the form a*G+b, "
			    "or a packed row T[b] + i");
			ok = 0;
			continue;
		}
		for (int i = 0; i < nn; i++) {
			VarInfo *v = scope_var(st, names[i]->name);
			if (v && v->on_lhs) {
				diag_error(s->d, names[i]->loc,
					   "index '%s' appears twice on the left-hand side",
					   names[i]->name);
				ok = 0;
			}
			if (v)
				v->on_lhs = 1;
		}
	}
	return ok;
}

/* Temporaries' extents come from their uses; for a*X+b on the left of a
** temporary, b must span X. */
static int lhs_extents(Sema *s, Stmt *st)
{
	AstItem *it = st->item;
	AstExpr fake = {0};
	fake.kind = A_ACCESS, fake.name = it->name, fake.loc = it->nameloc;
	if (st->lhs->shape) {
		for (int k = 0; k < it->nidx; k++)
			infer_position(s, st, &fake, it->idx[k], k, st->lhs->shape[k]);
	}
	AstExpr *table, *row;
	for (int k = 0; k < it->nidx; k++)
		if (sema_pack_pattern(s, it->idx[k], &table, &row))
			infer_access(s, st, table);
	return 1;
}

/* Collect names, check the left-hand side, walk the right-hand side and
** the where, then add declared index ranges: every index must end with
** one range, or the statement is not lowered. */
int sema_index_statement(Sema *s, Stmt *st)
{
	AstItem *it = st->item;
	int errors = s->d->errors;
	for (int k = 0; k < it->nidx; k++)
		collect(s, st, it->idx[k], 1);
	collect(s, st, it->rhs, 0);
	collect(s, st, it->where, 0);
	if (s->d->errors != errors || !check_lhs(s, st))
		return 0;
	lhs_extents(s, st);
	/* statement-level where may use the top reduction's indices */
	const char *top[MAX_VARS];
	int ntop = 0;
	AstExpr *r = it->rhs;
	if (r->kind == A_REDUCE && strcmp(r->name, "softmax"))
		for (int i = 0; i < r->nargs && ntop < MAX_VARS; i++)
			if (r->args[i]->kind == A_NAME)
				top[ntop++] = r->args[i]->name;
	int ok = walk(s, st, it->rhs, NULL, 0, 0);
	if (it->where)
		ok &= walk(s, st, it->where, top, ntop, 0);
	if (!ok)
		return 0;
	for (int i = 0; i < s->indexdecl.n; i++) {
		AstItem *d = s->indexdecl.v[i];
		if (!scope_var(st, d->name))
			continue;
		Stmt *save = s->st;
		s->st = NULL;
		Expr *ext = sema_scalar_expr(s, d->value, 0, "an index range");
		s->st = save;
		AstExpr fake = {0};
		fake.kind = A_ACCESS, fake.name = "index declaration", fake.loc = d->loc;
		if (ext)
			bind_extent(s, st, d->name, ext, &fake, d->value->loc);
	}
	for (int i = 0; i < st->nvars; i++) {
		VarInfo *v = &st->vars[i];
		if (!v->extent) {
			diag_error(
			    s->d, v->loc,
			    "cannot infer the range of index '%s'; use it as a plain subscript of "
			    "a declared tensor, or declare 'index %s in <size>;'",
			    v->name, v->name);
			ok = 0;
		}
	}
	return ok && s->d->errors == errors;
}

/* e mentions an index name (outside reductions, which a subscript cannot
** hold: they are refused when typed). */
static int mentions_index(Sema *s, AstExpr *e)
{
	if (!e)
		return 0;
	if (is_index_name(s, e))
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (mentions_index(s, e->args[i]))
			return 1;
	return 0;
}

/* Quasi-affine: sums of index names times constants or dims, index
** expressions divided or reduced modulo a constant or dim, offsets built
** from dims, consts and integer params, and gathers (reads of i32 inputs or
** computed int tensors, and computed indices such as int(...) or
** min(...), counted as mentioning an index). Multiplying two index expressions is
** not. Returns a mask: bit 0 set when e mentions an index, bit 1 set on
** error (already reported). */
static int affine(Sema *s, AstExpr *e)
{
	switch (e->kind) {
	case A_INT: return 0;
	case A_FLOAT:
	case A_INF:
		diag_error(s->d, e->loc, "a subscript must be an integer, not a floating value");
		return 2;
	case A_NAME: return scope_sym(s, e->name) ? 0 : 1;
	case A_ACCESS: {
		/* a gather: an i32 input read at (affine, already checked)
		** subscripts, such as a page table's block[b, j / P], or an int
		** tensor computed by an earlier statement (a bucket index) */
		Sym *y = scope_sym(s, e->name);
		const Tensor *t = y && y->kind == SYM_TENSOR ? y->tensor : NULL;
		int computed = t && t->kind != TK_IN && t->shape && t->type == VT_INT;
		if (!t || (!computed && (t->kind != TK_IN || t->dtype != DT_I32))) {
			diag_error(s->d, e->loc,
				   "a subscript may read only an int tensor (an i32 input or an "
				   "int value computed by a statement: a gather); '%s' is not one",
				   e->name);
			return 2;
		}
		return 1;
	}
	case A_CALL:
	case A_COND:
		/* a computed index (int(), ilog2(), min, max, clamp, select, ?:):
		** any int expression, read as a gather is; the typing checks it */
		return mentions_index(s, e);
	case A_UNARY: return affine(s, e->args[0]);
	case A_BINARY: {
		int l = affine(s, e->args[0]);
		if (l & 2)
			return 2;
		int r = affine(s, e->args[1]);
		if (r & 2)
			return 2;
		switch (e->op) {
		case OP_ADD:
		case OP_SUB: return l | r;
		case OP_MUL:
			if (l && r) {
				diag_error(
				    s->d, e->loc,
				    "subscript is not affine: it multiplies two index expressions");
				return 2;
			}
			return l | r;
		case OP_DIV:
		case OP_MOD:
			if (r) {
				diag_error(
				    s->d, e->loc,
				    "subscript is not affine: it divides by an index expression");
				return 2;
			}
			return l;
		default:
			diag_error(s->d, e->loc,
				   "subscript is not affine: '%s' is not allowed in a subscript",
				   op_spelling(e->op));
			return 2;
		}
	}
	default:
		diag_error(s->d, e->loc,
			   "subscript is not affine: use +, -, * by a constant or dim, / and %% by "
			   "a constant or dim");
		return 2;
	}
}

/* 1 when e is quasi-affine in index names or a slice `e < E` (whose bound
** infer_slice checks), else reports and returns 0. */
static int check_affine(Sema *s, AstExpr *e)
{
	return sema_slice(s, e) || !(affine(s, e) & 2);
}
