/*
** lowering/gpu/iface_cp.c: the generated context-parallel launch of a
** kernel with partial states (--parts): ring attention over P ranks.
**
** The sequence is cut into 2P chunks of C = N / (2P) rows; rank r holds
** chunks r and 2P - 1 - r of every tensor read along the query rows (Q,
** and the outputs) and of every tensor read along the keys (K, V): the
** zig-zag sharding, which gives each rank the same share of a causal
** mask's work. The K/V shards travel around the ring (libattnrt's
** attnrt_ring_run, NCCL); at each step every rank launches NAME_fwd_part
** for its two query chunks against the two K/V chunks it holds, with the
** mask evaluated at global positions: the tensors' base pointers are moved
** so that global row g of a chunk lands on its local row, and the dims
** are the global ones. The states of each query chunk are carried from
** launch to launch in the workspace and merged by the plan's merge rule;
** the last launch writes the outputs. A K/V chunk that a mask hides from
** a query chunk's rows (causal: a later chunk) costs a launch whose CTAs
** return at once.
**
** Which tensors are sharded, and along which dimension, is read from the
** plan: a tensor whose subscript at one position is the query index is a
** query shard, at one position the key index a K/V shard; a tensor read
** with neither is the same on every rank. Anything else (a tensor read
** along both, or through an expression of the query or key index) has no
** context-parallel launch, and the generated header says why.
*/
#include <string.h>

#include "gpu.h"
#include "iface.h"

enum { CP_WHOLE, CP_QUERY, CP_KEY };

typedef struct CpRoles {
	int role[64]; /* per tensor: CP_* */
	int seq[64];  /* the dimension sharded */
	const char *why;
} CpRoles;

/* Dimension d of tensor t is indexed with role (CP_*, -1: through an
** expression of the query or key index). */
static void cp_dim(CpRoles *r, const Tensor *t, int d, int role)
{
	if (r->why || role == CP_WHOLE)
		return;
	if (role < 0) {
		r->why = "a tensor is read through an expression of the query or key index";
		return;
	}
	if (r->role[t->id] != CP_WHOLE && (r->role[t->id] != role || r->seq[t->id] != d)) {
		r->why = "a tensor is read along both the query rows and the keys";
		return;
	}
	r->role[t->id] = role, r->seq[t->id] = d;
}

/* The role of variable v of node `node`: the class it lies in. */
static int cp_var(const Plan *p, int node, int v)
{
	const IndexClass *k = &p->classes[p->cls[node][v]];
	return k->stream ? CP_KEY : k->qtile ? CP_QUERY : CP_WHOLE;
}

/* The roles of the tensor reads in e, an expression of node `node`. */
static void cp_expr(const Plan *p, int node, const Expr *e, CpRoles *r)
{
	if (!e || r->why)
		return;
	if (e->kind == EX_ACCESS && e->tensor->kind != TK_TEMP)
		for (int d = 0; d < e->nargs; d++) {
			const Expr *a = e->args[d];
			int role = CP_WHOLE;
			if (a->kind == EX_INDEX)
				role = cp_var(p, node, a->var);
			else
				for (int k = 0; k < p->nclasses; k++)
					if ((p->classes[k].stream || p->classes[k].qtile) &&
					    plan_reads_class(p, node, a, k))
						role = -1;
			cp_dim(r, e->tensor, d, role);
		}
	for (int i = 0; i < e->nargs; i++)
		cp_expr(p, node, e->args[i], r);
}

/* The roles of p's tensors, or r->why. */
static void cp_roles(const Plan *p, CpRoles *r)
{
	const Cascade *c = p->c;
	memset(r, 0, sizeof *r);
	if (c->tensors.n > 64 || p->stream < 0) {
		r->why = "the cascade has no stream over keys";
		return;
	}
	int qc = -1;
	for (int k = 0; k < p->nclasses; k++)
		if (p->classes[k].qtile)
			qc = k;
	const Expr *qe = qc >= 0 ? p->classes[qc].extent : NULL, *ke = p->classes[p->stream].extent;
	if (!qe || qe->kind != EX_DIM || ke->kind != EX_DIM || qe->dim != ke->dim) {
		r->why = "the query rows and the keys are not one sequence (one dim)";
		return;
	}
	for (int i = 0; i < c->nodes.n && !r->why; i++) {
		const Node *n = c->nodes.v[i];
		cp_expr(p, i, n->body, r);
		cp_expr(p, i, n->filter, r);
		/* an output's dimensions are its node's free variables, in order */
		for (int d = 0; n->out->kind == TK_OUT && d < n->nfree; d++)
			cp_dim(r, n->out, d, cp_var(p, i, d));
	}
	for (int i = 0; i < c->tensors.n && !r->why; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_OUT && r->role[i] != CP_QUERY)
			r->why = "an output is not indexed by the query rows";
	}
}

void iface_cp_decls(FILE *o, const Cascade *c)
{
	Arena a;
	arena_init(&a);
	CpRoles r;
	cp_roles(plan_build(&a, c, "cpu"), &r); /* the classes: any target's */
	arena_free(&a);
	const char *n = c->name;
	if (r.why) {
		fprintf(o, "/* %s has no context-parallel launch: %s. */\n", n, r.why);
		return;
	}
	fprintf(o,
		"/* Context parallelism (ring attention) over the ranks of comm (libattnrt's\n"
		"** attnrt_comm_*, NCCL): a holds this rank's zig-zag shards of the sequence\n"
		"** dim (chunks r and 2P-1-r of N / 2P rows each, in that order, contiguous\n"
		"** in the tensors read along the keys) and the global N, a multiple of 256 P.\n"
		"** workspace: NAME_cp_workspace_bytes bytes of device memory, 256-byte aligned.\n"
		"** Asynchronous on stream, like NAME_launch. */\n"
		"struct AttnrtComm;\n"
		"int %s_cp_workspace_bytes(const %s_gpu_args *a, int nranks, size_t *bytes);\n"
		"int %s_launch_cp(const %s_gpu_args *a, struct AttnrtComm *comm, void *workspace, "
		"size_t bytes, void *stream);\n",
		n, n, n, n);
}

/* The tensors that travel around the ring, in cascade order: their count. */
static int cp_nkeys(const Cascade *c, const CpRoles *r)
{
	int nk = 0;
	for (int i = 0; i < c->tensors.n; i++)
		nk += r->role[i] == CP_KEY;
	return nk;
}

/* NAME_cp and its step: one ring step's four launches. */
static void cp_step(FILE *o, const Cascade *c, const CpRoles *r)
{
	const char *n = c->name;
	int nt = c->tensors.n;
	fprintf(o,
		"\ntypedef struct %s_cp {\n\tvoid *ptrs[%d];\n\tint64_t st[%d][8];\n"
		"\tconst int64_t *strides[%d];\n\tlong dims[%d];\n\tdouble params[%d];\n"
		"\tlong C;\n\tint P, r;\n\tvoid *state[2];\n\tsize_t state_bytes;\n} %s_cp;\n",
		n, nt + 1, nt + 1, nt + 1, c->dims.n + 1, c->params.n + 1, n);
	fprintf(o,
		"\n/* Ring step `step`: this rank's query chunks against the K/V chunks of rank\n"
		"** src (in bufs), each launch's rows and keys at their global positions; the\n"
		"** states of a query chunk carried from its first launch to its last. */\n"
		"static int %s_cp_step(void *ctx, int step, int src, void *const *bufs, void "
		"*stream)\n{\n\t%s_cp *c = ctx;\n"
		"\tfor (int qa = 0; qa < 2; qa++) {\n"
		"\t\tlong ga = qa ? 2L * c->P - 1 - c->r : c->r;\n"
		"\t\tfor (int kb = 0; kb < 2; kb++) {\n"
		"\t\t\tlong gb = kb ? 2L * c->P - 1 - src : src;\n"
		"\t\t\tvoid *ptrs[%d];\n\t\t\tmemcpy(ptrs, c->ptrs, sizeof ptrs);\n",
		n, n, nt + 1);
	for (int i = 0, s = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (r->role[i] == CP_WHOLE || t->kind == TK_TEMP)
			continue;
		int key = r->role[i] == CP_KEY;
		fprintf(o, "\t\t\tptrs[%d] = (void *)((uintptr_t)", i);
		if (key)
			fprintf(o, "bufs[%d]", s++);
		else
			fprintf(o, "c->ptrs[%d]", i);
		fprintf(o, " + (uintptr_t)(intptr_t)((%s - %s) * c->C * c->st[%d][%d] * %d));\n",
			key ? "kb" : "qa", key ? "gb" : "ga", i, r->seq[i], dtype_size(t->dtype));
	}
	fprintf(
	    o,
	    "\t\t\tint flags = step || kb ? ATTN_PART_MERGE_IN : 0;\n"
	    "\t\t\tif (step == c->P - 1 && kb == 1)\n\t\t\t\tflags |= ATTN_PART_FINALIZE;\n"
	    "\t\t\tattn_gpu_part pt = {ga * c->C, ga * c->C + c->C, gb * c->C, gb * c->C + c->C, "
	    "1, flags, NULL, 0, c->state[qa], c->state_bytes};\n"
	    "\t\t\tint rc = %s_launch_impl(ptrs, c->strides, c->dims, c->params, &pt, NULL, "
	    "stream);\n\t\t\tif (rc)\n\t\t\t\treturn rc;\n\t\t}\n\t}\n\treturn 0;\n}\n",
	    n);
}

/* NAME_cp_setup: the shards' strides and sizes from the caller's arguments
** (the global N), the chunk size, and the bytes of one query chunk's
** states (a launch's own computation of them). */
static void cp_setup(FILE *o, const Cascade *c, const CpRoles *r, const Plan *p)
{
	const char *n = c->name;
	int nt = c->tensors.n, seqdim = p->classes[p->stream].extent->dim->id;
	fprintf(o,
		"\nstatic int %s_cp_setup(const %s_gpu_args *a, int P, int r, %s_cp *c, size_t "
		"*kv_bytes)\n{\n",
		n, n, n);
	iface_unpack_args(o, c);
	fprintf(
	    o,
	    "\tlong N = dims[%d];\n"
	    "\tif (P < 1 || r < 0 || r >= P)\n\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, "
	    "\"%s_launch_cp: rank %%d of %%d\", r, P);\n"
	    "\tif (N < 256L * P || N %% (256L * P))\n\t\treturn "
	    "attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s_launch_cp: N = %%ld is not a "
	    "multiple of 256 P = %%ld (2P chunks of whole 128-row tiles)\", N, 256L * P);\n"
	    "\tmemset(c, 0, sizeof *c);\n\tc->C = N / (2L * P), c->P = P, c->r = r;\n"
	    "\tmemcpy(c->ptrs, ptrs, sizeof c->ptrs);\n\tmemcpy(c->dims, dims, sizeof c->dims);\n"
	    "\tmemcpy(c->params, params, sizeof c->params);\n",
	    seqdim, n, n);
	for (int i = 0, s = 0; i < nt; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		if (r->role[i] == CP_WHOLE) {
			fprintf(o, "\tc->strides[%d] = strides[%d];\n", i, i);
			continue;
		}
		/* the local shard: the sequence dim 2C long */
		fprintf(
		    o,
		    "\t{\n\t\tint64_t shape[%d];\n\t\t%s_shape(%d, dims, shape);\n"
		    "\t\tshape[%d] = 2 * c->C;\n\t\tint64_t numel = 1;\n"
		    "\t\tfor (int d = %d; d >= 0; d--)\n"
		    "\t\t\tc->st[%d][d] = d == %d ? 1 : c->st[%d][d + 1] * shape[d + 1], numel *= "
		    "shape[d];\n",
		    tensor_buf_rank(t) + 1, n, i, r->seq[i], tensor_buf_rank(t) - 1, i,
		    tensor_buf_rank(t) - 1, i);
		if (r->role[i] == CP_KEY)
			fprintf(o,
				"\t\tif (strides[%d])\n\t\t\treturn "
				"attnrt_set_error(ATTNRT_ERR_ARGUMENT, "
				"\"%s_launch_cp: %s travels around the ring: it must be contiguous "
				"(NULL strides)\");\n\t\tkv_bytes[%d] = (size_t)numel * %d;\n",
				i, n, t->name, s++, dtype_size(t->dtype));
		else
			fprintf(o,
				"\t\tif (strides[%d])\n\t\t\tmemcpy(c->st[%d], strides[%d], %d * "
				"sizeof "
				"(int64_t));\n\t\t(void)numel;\n",
				i, i, i, tensor_buf_rank(t));
		fprintf(o, "\t\tc->strides[%d] = c->st[%d];\n\t}\n", i, i);
	}
	fprintf(o,
		"\tsize_t sizes[3] = {0, 0, 0};\n"
		"\tattn_gpu_part pt = {0, c->C, 0, 0, 1, ATTN_PART_MERGE_IN, NULL, 0, NULL, 0};\n"
		"\tint rc = %s_launch_impl(ptrs, c->strides, dims, params, &pt, sizes, NULL);\n"
		"\tc->state_bytes = (sizes[0] + 255) / 256 * 256;\n\treturn rc;\n}\n",
		n);
}

void iface_cp_functions(FILE *o, const Cascade *c, const Plan *p)
{
	CpRoles r;
	cp_roles(p, &r);
	if (r.why)
		return;
	const char *n = c->name;
	int nk = cp_nkeys(c, &r);
	cp_step(o, c, &r);
	cp_setup(o, c, &r, p);
	fprintf(o,
		"\n/* The workspace: each query chunk's states, then two sets of receive buffers\n"
		"** for the K/V shards (each 256-byte aligned). */\n"
		"static size_t %s_cp_layout(const %s_cp *c, const size_t *kv_bytes, void *base, "
		"void **recv0, void **recv1)\n{\n"
		"\tuintptr_t at = (uintptr_t)base + 2 * c->state_bytes;\n"
		"\tfor (int set = 0; set < 2; set++)\n\t\tfor (int s = 0; s < %d; s++) {\n"
		"\t\t\tif (base)\n\t\t\t\t(set ? recv1 : recv0)[s] = (void *)at;\n"
		"\t\t\tat += (kv_bytes[s] + 255) / 256 * 256;\n\t\t}\n"
		"\treturn (size_t)(at - (uintptr_t)base);\n}\n",
		n, n, nk);
	fprintf(o,
		"\nint %s_cp_workspace_bytes(const %s_gpu_args *a, int nranks, size_t *bytes)\n{\n"
		"\t%s_cp c;\n\tsize_t kv[%d];\n"
		"\tint rc = %s_cp_setup(a, nranks, 0, &c, kv);\n"
		"\tif (!rc && bytes)\n\t\t*bytes = %s_cp_layout(&c, kv, NULL, NULL, NULL);\n"
		"\treturn rc;\n}\n",
		n, n, n, nk, n, n);
	fprintf(
	    o,
	    "\nint %s_launch_cp(const %s_gpu_args *a, struct AttnrtComm *comm, void *workspace, "
	    "size_t bytes, void *stream)\n{\n"
	    "\tint r = 0, P = 0, rc;\n"
	    "\tif ((rc = attnrt_comm_rank(comm, &r, &P)))\n\t\treturn rc;\n"
	    "\t%s_cp c;\n\tsize_t kv[%d];\n\tvoid *recv0[%d], *recv1[%d], *local[%d];\n"
	    "\tif ((rc = %s_cp_setup(a, P, r, &c, kv)))\n\t\treturn rc;\n"
	    "\tsize_t need = %s_cp_layout(&c, kv, NULL, NULL, NULL);\n"
	    "\tif (!workspace || bytes < need || (uintptr_t)workspace %% 256)\n\t\treturn "
	    "attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s_launch_cp: the workspace must be "
	    "256-byte aligned and %%zu bytes (%%zu given)\", need, workspace ? bytes : 0);\n"
	    "\t%s_cp_layout(&c, kv, workspace, recv0, recv1);\n"
	    "\tc.state[0] = workspace;\n"
	    "\tc.state[1] = (void *)((uintptr_t)workspace + c.state_bytes);\n",
	    n, n, n, nk, nk, nk, nk, n, n, n, n);
	for (int i = 0, s = 0; i < c->tensors.n; i++)
		if (r.role[i] == CP_KEY)
			fprintf(o, "\tlocal[%d] = c.ptrs[%d];\n", s++, i);
	fprintf(o,
		"\treturn attnrt_ring_run(comm, %d, local, kv, recv0, recv1, %s_cp_step, &c, "
		"stream);\n}\n",
		nk, n);
}
