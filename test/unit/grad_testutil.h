/*
** test/unit/grad_testutil.h: what the checks of the derived backward share
** (grad_check.c: against finite differences; grad_cut_check.c: its GPU
** cut run piece by piece): small sizes for every dim the examples use,
** seeded inputs with masks that empty some rows, the forward run and the
** backward's inputs bound from it, all in the f64 interpreter.
*/
#ifndef ATTN_GRAD_TESTUTIL_H
#define ATTN_GRAD_TESTUTIL_H

#include "host_testutil.h"

#include <dirent.h>

#include "cli/inputs.h"
#include "cli/interp.h"
#include "compiler/grad.h"
#include "lang/front.h"

#define SEED 0x9a7dULL

/* Small sizes by dim name; -1 for a dim with no rule. */
static long small_size(const char *name)
{
	static const struct {
		const char *name;
		long v;
	} t[] = {{"B", 2},
		 {"H", 2},
		 {"HKV", 2},
		 {"G", 2},
		 {"N", 5},
		 {"M", 6},
		 {"P", 2},
		 {"MAXP", 3},
		 {"NP", 7},
		 /* an image or video past the 7-wide window along its rows, with
		 ** few pixels (the checks cost the square of their count) */
		 {"T", 2},
		 {"IH", 8},
		 {"IW", 2},
		 /* a packed batch (varlen.attn): T tokens of at most NQ a
		 ** sequence, TK keys of at most NK */
		 {"NQ", 3},
		 {"NK", 4},
		 {"TK", 6}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(t[i].name, name))
			return t[i].v;
	return -1;
}

/* The sizes of c's dims, or -1 for one the test does not know. */
static int draw_dims(const Cascade *c, long *dims)
{
	for (int k = 0; k < c->dims.n; k++) {
		const Dim *d = c->dims.v[k];
		dims[k] = d->fixed ? d->fixed : small_size(d->name);
		if (dims[k] < 0) {
			fprintf(stderr, "%s: no size for dim %s; extend small_size\n", c->name,
				d->name);
			return -1;
		}
	}
	return 0;
}

static long dim_of(const Cascade *c, const long *dims, const char *name)
{
	const Dim *d = cascade_dim(c, name);
	return d ? dims[d->id] : 1;
}

/* i32 inputs by name: lengths with an empty batch, a page table, doc ids. */
static int fill_i32(const Cascade *c, const long *dims, const Tensor *t, double *buf)
{
	long n = tensor_numel(t, dims);
	InputsRng r;
	inputs_rng_init(&r, SEED, t->name);
	if (!strcmp(t->name, "kv_len") || !strcmp(t->name, "prefix_len")) {
		long full = cascade_dim(c, "MAXP") ? dim_of(c, dims, "MAXP") * dim_of(c, dims, "P")
			    : cascade_dim(c, "M")  ? dim_of(c, dims, "M")
						   : dim_of(c, dims, "N");
		for (long i = 0; i < n; i++)
			buf[i] = i == 0 ? 0 : (double)inputs_rng_int(&r, 1, full);
		return 0;
	}
	if (!strcmp(t->name, "block")) {
		for (long i = 0; i < n; i++)
			buf[i] = (double)((i * 3) % dim_of(c, dims, "NP"));
		return 0;
	}
	if (!strcmp(t->name, "cu_q") || !strcmp(t->name, "cu_k")) {
		/* a packed batch's offsets: lengths up to NQ (NK) that fill T
		** (TK), the first sequences emptiest (a 0-long one where they
		** fit), never past the buffer */
		int q = t->name[3] == 'q';
		long total = dim_of(c, dims, q ? "T" : "TK"),
		     most = dim_of(c, dims, q ? "NQ" : "NK");
		long left = total, nseq = n - 1;
		buf[0] = 0;
		for (long b = 0; b < nseq; b++) {
			long room = most * (nseq - 1 - b); /* what the later ones can hold */
			long len = left > room ? left - room : 0;
			if (b == nseq - 1 || (len == 0 && b > 0 && left > 0))
				len = left < most ? left : most;
			left -= len;
			buf[b + 1] = buf[b] + (double)len;
		}
		return 0;
	}
	if (!strcmp(t->name, "doc")) {
		long len = tensor_dim_size(t, 1, dims);
		for (long i = 0; i < n; i++)
			buf[i] = (double)((i % len) / 2);
		return 0;
	}
	fprintf(stderr, "%s: no rule for i32 input %s; extend fill_i32\n", c->name, t->name);
	return -1;
}

/* The forward tensor whose gradient the backward's tensor named `name`
** is: dX, or d_X where dX is a C keyword. */
static const Tensor *gradient_of(const Cascade *f, const char *name)
{
	if (name[0] != 'd')
		return NULL;
	const Tensor *t = cascade_tensor(f, name + 1);
	return t || name[1] != '_' ? t : cascade_tensor(f, name + 2);
}

/* A binding of c with every buffer allocated (inputs, outputs). */
static Binding bind(const Cascade *c, const long *dims)
{
	Binding b = {c, calloc((size_t)c->dims.n + 1, sizeof(long)),
		     calloc((size_t)c->params.n + 1, sizeof(double)),
		     calloc((size_t)c->tensors.n + 1, sizeof(double *))};
	memcpy(b.dims, dims, sizeof(long) * (size_t)c->dims.n);
	cascade_param_defaults(c, dims, b.params, NULL);
	for (int k = 0; k < c->tensors.n; k++) {
		const Tensor *t = c->tensors.v[k];
		if (t->kind != TK_TEMP)
			b.data[k] = calloc((size_t)tensor_numel(t, dims) + 1, sizeof(double));
	}
	return b;
}

static void unbind(Binding *b)
{
	for (int k = 0; k < b->c->tensors.n; k++)
		free(b->data[k]);
	free(b->data), free(b->dims), free(b->params);
}

static int run(const Binding *b)
{
	char err[512];
	if (interp_run(b, err, sizeof err)) {
		fprintf(stderr, "%s: interpreter: %s\n", b->c->name, err);
		return -1;
	}
	return 0;
}

/* One block's state: the forward binding at x, the backward's, the
** directions (one buffer per forward tensor, NULL where no gradient). */
typedef struct Case {
	const Cascade *f, *b;
	Binding fx, bx;
	double **u;  /* [forward tensors]: direction, NULL where no gradient */
	double **dx; /* [forward tensors]: the dX buffer of a float output */
	double **dy; /* [forward tensors]: the dY buffer of an input */
} Case;

/* The forward at x, then the backward's inputs bound from it. */
static int setup(Case *k, const Cascade *f, const Cascade *b, const long *dims)
{
	k->f = f, k->b = b;
	k->fx = bind(f, dims);
	int nf = f->tensors.n + 1;
	k->u = calloc((size_t)nf, sizeof *k->u);
	k->dx = calloc((size_t)nf, sizeof *k->dx);
	k->dy = calloc((size_t)nf, sizeof *k->dy);
	for (int i = 0; i < f->tensors.n; i++) {
		const Tensor *t = f->tensors.v[i];
		long n = tensor_numel(t, dims);
		if (t->kind != TK_IN)
			continue;
		if (t->dtype == DT_I32) {
			if (fill_i32(f, dims, t, k->fx.data[i]))
				return -1;
		} else {
			inputs_fill(k->fx.data[i], n, t->dtype, SEED, t->name, 0, 0);
		}
		if (grad_wants(t)) {
			k->u[i] = calloc((size_t)n + 1, sizeof(double));
			char name[256];
			snprintf(name, sizeof name, "U.%s", t->name);
			inputs_fill(k->u[i], n, DT_F64, SEED, name, 0, 0);
		}
	}
	if (run(&k->fx))
		return -1;
	k->bx = bind(b, dims);
	for (int j = 0; j < b->tensors.n; j++) {
		const Tensor *t = b->tensors.v[j];
		const Tensor *ft = cascade_tensor(f, t->name);
		long n = tensor_numel(t, dims);
		if (t->kind == TK_IN && ft) {
			memcpy(k->bx.data[j], k->fx.data[ft->id], sizeof(double) * (size_t)n);
		} else if (t->kind == TK_IN && (ft = gradient_of(f, t->name))) {
			/* dX: random where the forward output is finite */
			inputs_fill(k->bx.data[j], n, DT_F64, SEED, t->name, 0, 0);
			for (long e = 0; e < n; e++)
				if (!isfinite(k->fx.data[ft->id][e]))
					k->bx.data[j][e] = 0;
			k->dx[ft->id] = k->bx.data[j];
		} else if (t->kind == TK_OUT && (ft = gradient_of(f, t->name))) {
			k->dy[ft->id] = k->bx.data[j];
		} else if (t->kind == TK_IN) {
			fprintf(stderr, "%s: input %s is neither forward nor dX\n", b->name,
				t->name);
			return -1;
		}
	}
	for (int i = 0; i < f->tensors.n; i++)
		if (k->u[i] && !k->dy[i]) {
			fprintf(stderr, "%s: no d%s output\n", b->name,
				((Tensor *)f->tensors.v[i])->name);
			return -1;
		}
	return run(&k->bx);
}

static void teardown(Case *k)
{
	for (int i = 0; i < k->f->tensors.n; i++)
		free(k->u[i]);
	free(k->u), free(k->dx), free(k->dy);
	unbind(&k->fx);
	if (k->bx.c)
		unbind(&k->bx);
}

/* Every block of every .attn file of dir, in sorted order, through
** test_block (its cascade and file name); causal's kept in *causal for a
** sensitivity test. */
static void grad_test_dir(const char *dir, Arena *keep, const Cascade **causal,
			  void (*test_block)(const Cascade *, const char *))
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	CHECK(n >= 0);
	for (int e = 0; e < n; e++) {
		const char *name = ents[e]->d_name;
		size_t len = strlen(name);
		if (len >= 6 && !strcmp(name + len - 5, ".attn")) {
			char path[1024];
			snprintf(path, sizeof path, "%s/%s", dir, name);
			Diag d;
			diag_init(&d, keep, stderr);
			int f = diag_load_file(&d, path);
			Program *p = f < 0 ? NULL : front_compile(keep, &d, f);
			CHECK(p != NULL);
			for (int i = 0; p && i < p->cascades.n; i++) {
				const Cascade *c = p->cascades.v[i];
				test_block(c, name);
				if (!strcmp(c->name, "causal"))
					*causal = c;
			}
		}
		free(ents[e]);
	}
	free(ents);
}

#endif
