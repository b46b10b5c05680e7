/*
** test/unit/grad_cut_check.c: the backward's GPU cut (compiler/grad_split.c)
** computes the backward it was cut from, on every block of every .attn file
** in the directories given, with no GPU.
**
** Per block whose backward the GPU takes, at small runtime sizes: the
** forward and the whole backward (grad_derive with the rewrites) run in the
** f64 interpreter (grad_testutil.h's inputs); then the cut's pieces run in
** the order NAME_bwd_launch runs their kernels (first passes, row pass,
** dQ, the kernels over key tiles, the sums), each piece's inputs taken from
** what an earlier piece wrote (the workspace) or else from the backward's
** inputs, and every gradient the pieces write must equal the whole
** backward's to 1e-9. The launch with atomics (the fused kernel and its
** conversion instead of the dQ kernel) runs the same way. A refused block
** prints the first line of its diagnostic. The check's own sensitivity:
** causal's cut with its dQ kernel's node off by 0.1% must fail.
**
** Why: the GPU suite compares the kernels with the C backward on a GPU;
** this finds a cut that drops, duplicates or misorders a term before any
** kernel is generated, and on CI.
**
** usage: test_grad_cut_check DIR...
*/
#include "grad_testutil.h"

#define TOL_CUT 1e-9

static int nblocks, ncut, nrefused, natomic;

/* What the pieces run so far wrote, by tensor name: the workspace and the
** gradients. */
typedef struct Pool {
	int n;
	const char *name[256];
	double *buf[256];
	long numel[256];
} Pool;

static int pool_find(const Pool *p, const char *name)
{
	for (int i = p->n - 1; i >= 0; i--)
		if (!strcmp(p->name[i], name))
			return i;
	return -1;
}

static void pool_free(Pool *p)
{
	for (int i = 0; i < p->n; i++)
		free(p->buf[i]);
	p->n = 0;
}

/* Piece c run in the interpreter: its inputs from the pool, else from the
** whole backward's binding k->bx; its outputs added to the pool. */
static int run_piece(const Case *k, const Cascade *c, Pool *pool)
{
	long dims[64];
	for (int d = 0; d < c->dims.n && d < 64; d++) {
		const Dim *x = cascade_dim(k->b, ((const Dim *)c->dims.v[d])->name);
		if (!x) {
			fprintf(stderr, "%s: dim %s is not the backward's\n", c->name,
				((const Dim *)c->dims.v[d])->name);
			return -1;
		}
		dims[d] = k->bx.dims[x->id];
	}
	Binding b = bind(c, dims);
	int bad = 0;
	for (int t = 0; t < c->tensors.n && !bad; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->kind != TK_IN)
			continue;
		long n = tensor_numel(x, dims);
		int at = pool_find(pool, x->name);
		const Tensor *w = at < 0 ? cascade_tensor(k->b, x->name) : NULL;
		const double *src = at >= 0 ? pool->buf[at] : w ? k->bx.data[w->id] : NULL;
		long have = at >= 0 ? pool->numel[at] : w ? tensor_numel(w, k->bx.dims) : -1;
		if (!src || have != n) {
			fprintf(stderr, "%s: input %s is %s\n", c->name, x->name,
				src ? "of another size than what wrote it"
				    : "written by no earlier piece");
			bad = 1;
			break;
		}
		memcpy(b.data[t], src, sizeof(double) * (size_t)n);
	}
	for (int t = 0; t < c->tensors.n && !bad; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->kind == TK_OUT)
			for (long e = 0; e < tensor_numel(x, dims); e++)
				b.data[t][e] = NAN;
	}
	bad = bad || run(&b);
	for (int t = 0; t < c->tensors.n && !bad; t++) {
		const Tensor *x = c->tensors.v[t];
		if (x->kind != TK_OUT)
			continue;
		if (pool->n == 256) {
			fprintf(stderr, "%s: more than 256 tensors written\n", c->name);
			bad = 1;
			break;
		}
		pool->name[pool->n] = x->name, pool->buf[pool->n] = b.data[t];
		pool->numel[pool->n++] = tensor_numel(x, dims);
		b.data[t] = NULL;
	}
	unbind(&b);
	return bad ? -1 : 0;
}

/* The pieces of s in launch order (atomic: the launch with the fused
** kernel), run into a fresh pool, and each gradient of the backward k->b
** compared with the whole backward's. */
static int run_cut(const Case *k, const GradSplit *s, int atomic, int quiet)
{
	const Cascade *order[4 * GRAD_MAX_DKV + 4];
	int n = 0;
	for (int i = 0; i < s->nstats; i++)
		order[n++] = s->stats[i];
	if (s->pre)
		order[n++] = s->pre;
	if (s->dq && !atomic)
		order[n++] = s->dq;
	for (int i = 0; i < s->ndkv; i++)
		order[n++] = atomic && i == s->fused_at ? s->fused : s->dkv[i];
	for (int i = 0; i < s->ngrp; i++)
		order[n++] = s->grp[i];
	if (atomic)
		order[n++] = s->post;
	Pool pool = {0};
	int bad = 0;
	for (int i = 0; i < n && !bad; i++)
		bad = run_piece(k, order[i], &pool);
	for (int t = 0; t < k->b->tensors.n && !bad; t++) {
		const Tensor *x = k->b->tensors.v[t];
		if (x->kind != TK_OUT)
			continue;
		int at = pool_find(&pool, x->name);
		if (at < 0) {
			fprintf(stderr, "%s: no piece writes %s\n", k->b->name, x->name);
			bad = 1;
			break;
		}
		const double *want = k->bx.data[t], *got = pool.buf[at];
		for (long e = 0; e < pool.numel[at]; e++) {
			double y = want[e], g = got[e];
			int same = isnan(y) ? isnan(g) : fabs(g - y) <= TOL_CUT * fmax(1, fabs(y));
			if (!same) {
				if (!quiet)
					fprintf(stderr,
						"%s%s: %s[%ld] = %.17g from the pieces, %.17g "
						"from the whole backward\n",
						k->b->name, atomic ? " (atomic launch)" : "",
						x->name, e, g, y);
				bad = 1;
				break;
			}
		}
	}
	pool_free(&pool);
	return bad ? -1 : 0;
}

/* One block: its backward, its cut (or the reason the GPU refuses it),
** both launches. */
static void test_block(const Cascade *c, const char *file)
{
	nblocks++;
	long *dims = calloc((size_t)c->dims.n + 1, sizeof *dims);
	CHECK(draw_dims(c, dims) == 0);
	Arena a;
	arena_init(&a);
	char *msg = NULL;
	size_t mlen = 0;
	FILE *mf = open_memstream(&msg, &mlen);
	Diag d;
	diag_init(&d, &a, mf);
	Cascade *b = grad_derive(&a, &d, c, 1, NULL);
	GradSplit s;
	int refused = !b || grad_split(&a, &d, c, b, &s);
	fclose(mf);
	if (refused) {
		char *nl = strchr(msg, '\n');
		if (nl)
			*nl = 0;
		printf("grad_cut_check: %s:%s: no GPU cut: %s\n", file, c->name, msg);
		nrefused++;
	} else {
		Case k;
		memset(&k, 0, sizeof k);
		int bad = setup(&k, c, b, dims) || run_cut(&k, &s, 0, 0);
		int abad = !bad && s.fused && run_cut(&k, &s, 1, 0);
		if (bad || abad)
			fprintf(stderr, "%s:%s: the cut's pieces FAILED%s\n", file, c->name,
				abad ? " (atomic launch)" : "");
		tu_failures += bad + abad;
		ncut += !bad, natomic += !bad && s.fused && !abad;
		if (!bad)
			printf("grad_cut_check: %s:%s: %d pieces%s compute the backward\n", file,
			       c->name,
			       s.nstats + (s.pre != NULL) + (s.dq != NULL) + s.ndkv + s.ngrp,
			       s.fused ? ", and the atomic launch's," : "");
		teardown(&k);
	}
	free(msg);
	arena_free(&a);
	free(dims);
}

/* The check must be able to fail: causal's dQ kernel with its gradient
** scaled by 1.001 must not match. */
static void test_sensitivity(const Cascade *c)
{
	Arena a;
	arena_init(&a);
	Diag d;
	diag_init(&d, &a, stderr);
	long dims[16];
	CHECK(c->dims.n < 16 && draw_dims(c, dims) == 0);
	Cascade *b = grad_derive(&a, &d, c, 1, NULL);
	GradSplit s;
	CHECK(b && !grad_split(&a, &d, c, b, &s) && s.dq);
	Tensor *dq = b && s.dq ? cascade_tensor(s.dq, "dQ") : NULL;
	CHECK(dq && dq->def);
	if (dq && dq->def) {
		dq->def->body = expr_binop(&a, OP_MUL, dq->def->body, expr_float(&a, 1.001));
		Case k;
		memset(&k, 0, sizeof k);
		CHECK(setup(&k, c, b, dims) == 0);
		CHECK(run_cut(&k, &s, 0, 1) != 0);
		printf("grad_cut_check: a dQ kernel off by 0.1%% fails the check, as it must\n");
		teardown(&k);
	}
	arena_free(&a);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR...\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	Arena keep;
	arena_init(&keep);
	const Cascade *causal = NULL;
	for (int i = 1; i < argc; i++)
		grad_test_dir(argv[i], &keep, &causal, test_block);
	CHECK(causal != NULL);
	if (causal)
		test_sensitivity(causal);
	printf("grad_cut_check: %d blocks, %d cut and run piece by piece (%d also with "
	       "atomics), %d refused by the GPU\n",
	       nblocks, ncut, natomic, nrefused);
	arena_free(&keep);
	return tu_report("grad_cut_check");
}
