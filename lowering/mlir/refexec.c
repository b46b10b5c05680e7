/*
** lowering/mlir/refexec.c: the reference executor.
**
** The cascade is built as the same linalg-on-tensors IR that --emit=mlir
** prints, except that the func takes its inputs and outputs as memrefs
** (bufferization.to_tensor in, materialize_in_destination out). MLIR's own
** passes lower it to the LLVM dialect, the ExecutionEngine JIT-compiles it,
** and it runs on the Binding's buffers, converted to the working precision.
** Every resource (context, pass manager, engine, buffers) is released on
** every path; errors come back as a message, never an abort.
*/
#define _GNU_SOURCE /* nftw, mkdtemp, setenv; ST_NOEXEC */
#include "refexec.h"

#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <mlir-c/Diagnostics.h>
#include <mlir-c/ExecutionEngine.h>
#include <mlir-c/Pass.h>
#include <mlir-c/RegisterEverything.h>

#include "mlir_build.h"

/*
** The lowering. Bufferization first (the func already has memref
** boundaries, so no function-boundary bufferization is needed), then
** explicit deallocation of the temporaries, then linalg to loops and every
** dialect to LLVM. convert-math-to-llvm takes what LLVM has intrinsics for
** (exp, exp2, log, log2, sqrt, absf; rsqrt as 1 / sqrt), and x86 codegen
** turns the transcendental ones into libm calls; what is left (tanh) goes
** (and erf) to libm through convert-math-to-libm, which must run second because it
** rejects the math ops it has no libm name for. arith-expand expands
** floordivsi.
*/
static const char pipeline[] = "builtin.module("
			       "one-shot-bufferize,"
			       "buffer-deallocation-pipeline,"
			       "convert-linalg-to-loops,"
			       "convert-scf-to-cf,"
			       "arith-expand,"
			       "convert-math-to-llvm,"
			       "convert-math-to-libm,"
			       "expand-strided-metadata,"
			       "finalize-memref-to-llvm,"
			       "convert-arith-to-llvm,"
			       "convert-index-to-llvm,"
			       "convert-cf-to-llvm,"
			       "convert-func-to-llvm,"
			       "reconcile-unrealized-casts)";

/* A ranked memref descriptor as the C interface passes it:
** {allocated, aligned, offset, sizes[R], strides[R]}. */
typedef struct MemRef {
	void *alloc, *aligned;
	int64_t offset;
	int64_t dims[];
} MemRef;

/* Everything one run allocates, so that one function frees it all. */
typedef struct Run {
	const Binding *b;
	int use_f64;
	char *err;
	size_t errlen;
	int nargs;
	void **args;    /* packed arguments: a pointer to each value */
	int64_t *ints;  /* dims and int params */
	double *fl64;   /* float params (f64) */
	float *fl32;    /* float params (f32) */
	MemRef **descs; /* per tensor (in and out), or NULL */
	void **bufs;    /* per tensor: working-precision copy of the data */
} Run;

/* The first message wins; later ones are usually consequences of it. */
static void seterr(Run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(Run *r, const char *fmt, ...)
{
	if (!r->err || !r->errlen || r->err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

/* MLIR diagnostics (verifier, pass failures) become the error message. */
typedef struct DiagBuf {
	char *s;
	size_t cap, len;
} DiagBuf;

/* Diagnostic text is streamed in pieces; keep one line, truncated. */
static void diag_append(MlirStringRef s, void *ud)
{
	DiagBuf *d = ud;
	for (size_t i = 0; i < s.length && d->len + 1 < d->cap; i++)
		d->s[d->len++] = s.data[i] == '\n' ? ' ' : s.data[i];
	if (d->cap)
		d->s[d->len] = 0;
}

/* The first error is the cause; notes and later errors are dropped. */
static MlirLogicalResult diag_collect(MlirDiagnostic dg, void *ud)
{
	DiagBuf *d = ud;
	if (d->len == 0 && mlirDiagnosticGetSeverity(dg) == MlirDiagnosticError) {
		diag_append(mlir_str("MLIR: "), d);
		mlirDiagnosticPrint(dg, diag_append, d);
	}
	return mlirLogicalResultSuccess();
}

/* Pass registration is global to the process and must happen once. */
static void register_once(void)
{
	mlirRegisterAllPasses();
}

/* Pipeline parse errors (a pass missing from this MLIR build). */
static void pipeline_error(MlirStringRef s, void *ud)
{
	diag_append(s, ud);
}

/* ---- marshalling ---------------------------------------------------------- */

/* Bytes per element of a tensor's storage in the JIT-compiled code. */
static size_t elem_size(const Tensor *t, int use_f64)
{
	if (t->type == VT_FLOAT)
		return use_f64 ? 8 : 4;
	return t->type == VT_INT ? 4 : 1;
}

/* f64 inputs to the working type (bools as 0/1 bytes, as i1 is stored). */
static void to_work(const Tensor *t, int use_f64, const double *src, void *dst, long n)
{
	for (long i = 0; i < n; i++) {
		if (t->type == VT_FLOAT && use_f64)
			((double *)dst)[i] = src[i];
		else if (t->type == VT_FLOAT)
			((float *)dst)[i] = (float)src[i];
		else if (t->type == VT_INT)
			((int32_t *)dst)[i] = (int32_t)src[i];
		else
			((uint8_t *)dst)[i] = src[i] != 0;
	}
}

/* Working-type outputs back to the Binding's f64. */
static void from_work(const Tensor *t, int use_f64, const void *src, double *dst, long n)
{
	for (long i = 0; i < n; i++) {
		if (t->type == VT_FLOAT && use_f64)
			dst[i] = ((const double *)src)[i];
		else if (t->type == VT_FLOAT)
			dst[i] = ((const float *)src)[i];
		else if (t->type == VT_INT)
			dst[i] = ((const int32_t *)src)[i];
		else
			dst[i] = ((const uint8_t *)src)[i] & 1;
	}
}

/* A contiguous row-major descriptor over a fresh working buffer; inputs
** are converted into it. */
static int make_memref(Run *r, const Tensor *t)
{
	const Binding *b = r->b;
	long n = tensor_numel(t, b->dims);
	if (!b->data || !b->data[t->id]) {
		seterr(r, "no data bound for tensor %s", t->name);
		return 1;
	}
	if (n < 0) {
		seterr(r, "tensor %s has a negative size", t->name);
		return 1;
	}
	size_t es = elem_size(t, r->use_f64);
	r->bufs[t->id] = calloc((size_t)(n ? n : 1), es);
	MemRef *m = calloc(1, sizeof(MemRef) + sizeof(int64_t) * 2 * (size_t)t->rank);
	r->descs[t->id] = m;
	if (!r->bufs[t->id] || !m) {
		seterr(r, "out of memory for tensor %s", t->name);
		return 1;
	}
	m->alloc = m->aligned = r->bufs[t->id];
	int64_t stride = 1;
	for (int k = t->rank - 1; k >= 0; k--) {
		m->dims[k] = tensor_dim_size(t, k, b->dims);
		m->dims[t->rank + k] = stride;
		stride *= m->dims[k];
	}
	if (t->kind == TK_IN)
		to_work(t, r->use_f64, b->data[t->id], r->bufs[t->id], n);
	return 0;
}

/* Packed arguments in the func's order: dims, params, inputs, outputs. */
static int marshal(Run *r)
{
	const Cascade *c = r->b->c;
	int nd = c->dims.n, np = c->params.n, nt = c->tensors.n;
	r->args = calloc((size_t)(nd + np + nt) + 1, sizeof(void *));
	r->ints = calloc((size_t)(nd + np) + 1, sizeof(int64_t));
	r->fl64 = calloc((size_t)np + 1, sizeof(double));
	r->fl32 = calloc((size_t)np + 1, sizeof(float));
	r->descs = calloc((size_t)nt + 1, sizeof(MemRef *));
	r->bufs = calloc((size_t)nt + 1, sizeof(void *));
	if (!r->args || !r->ints || !r->fl64 || !r->fl32 || !r->descs || !r->bufs) {
		seterr(r, "out of memory");
		return 1;
	}
	for (int i = 0; i < nd; i++) {
		Dim *d = c->dims.v[i];
		if (r->b->dims[i] < 0 || (d->fixed > 0 && r->b->dims[i] != d->fixed)) {
			seterr(r, "dim %s = %ld is not a valid size", d->name, r->b->dims[i]);
			return 1;
		}
		r->ints[i] = r->b->dims[i];
		r->args[r->nargs++] = &r->ints[i];
	}
	for (int i = 0; i < np; i++) {
		Param *p = c->params.v[i];
		double v = r->b->params ? r->b->params[i] : 0.0;
		r->ints[nd + i] = (int64_t)v, r->fl64[i] = v, r->fl32[i] = (float)v;
		r->args[r->nargs++] = p->type == VT_INT ? (void *)&r->ints[nd + i]
				      : r->use_f64      ? (void *)&r->fl64[i]
							: (void *)&r->fl32[i];
	}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < nt; i++) {
			Tensor *t = c->tensors.v[i];
			if (t->kind != (pass ? TK_OUT : TK_IN))
				continue;
			if (make_memref(r, t))
				return 1;
			r->args[r->nargs++] = &r->descs[i];
		}
	return 0;
}

/* Outputs back to f64 in the Binding. */
static void unmarshal(Run *r)
{
	const Cascade *c = r->b->c;
	for (int i = 0; i < c->tensors.n; i++) {
		Tensor *t = c->tensors.v[i];
		if (t->kind == TK_OUT)
			from_work(t, r->use_f64, r->bufs[i], r->b->data[i],
				  tensor_numel(t, r->b->dims));
	}
}

/* Frees whatever marshal() got to allocate (NULL-safe). */
static void run_free(Run *r)
{
	int nt = r->b->c->tensors.n;
	for (int i = 0; i < nt; i++) {
		if (r->descs)
			free(r->descs[i]);
		if (r->bufs)
			free(r->bufs[i]);
	}
	free(r->args), free(r->ints), free(r->fl64), free(r->fl32);
	free(r->descs), free(r->bufs);
}

/* ---- compile and run -------------------------------------------------------- */

/* Parses and runs the lowering pipeline on the module. */
static int lower(MlirContext ctx, MlirModule m, DiagBuf *d)
{
	MlirPassManager pm = mlirPassManagerCreate(ctx);
	MlirLogicalResult ok = mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
						     mlir_str(pipeline), pipeline_error, d);
	if (mlirLogicalResultIsSuccess(ok))
		ok = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m));
	mlirPassManagerDestroy(pm);
	return mlirLogicalResultIsFailure(ok);
}

/* nftw callback: removes every entry, the children before their directory. */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* A fresh directory under base, on a file system that allows mapping files
** executable (LLVM's perf listener maps its dump file PROT_EXEC); "" if none. */
static void private_dir(char *dir, size_t size, const char *base)
{
	struct statvfs vfs;
	dir[0] = 0;
	if (!base || !*base || (size_t)snprintf(dir, size, "%s/attnc-jit-XXXXXX", base) >= size)
		dir[0] = 0;
	else if (!mkdtemp(dir))
		dir[0] = 0;
	else if (statvfs(dir, &vfs) || (vfs.f_flag & ST_NOEXEC))
		rmdir(dir), dir[0] = 0;
}

/*
** Creates the engine without leaving files behind. LLVM's perf listener
** (built into Debian's LLVM; MLIR's C API has no switch for it) creates
** $JITDUMPDIR/.debug/jit/llvm-IR-jit-DATE-XXXXXX/jit-PID.dump, JITDUMPDIR
** defaulting to $HOME, when a process makes its first JIT, and keeps the file
** open until exit: one file left per `attnc run`, and an error message on
** every run where that directory cannot be written. Unless the user set
** JITDUMPDIR (to profile with perf), the first engine is made with JITDUMPDIR
** naming a private directory, removed as soon as the engine exists; the
** listener writes on into its unlinked file, which is freed at exit. Only if
** neither $TMPDIR (or /tmp) nor $HOME can hold that directory does LLVM's
** default stay.
*/
static MlirExecutionEngine engine_create(MlirModule m)
{
	static int listener_made;
	char dir[4096] = "";
	if (!listener_made && !getenv("JITDUMPDIR")) {
		private_dir(dir, sizeof dir, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!dir[0])
			private_dir(dir, sizeof dir, getenv("HOME"));
		if (dir[0] && setenv("JITDUMPDIR", dir, 1))
			rmdir(dir), dir[0] = 0;
	}
	listener_made = 1;
	MlirExecutionEngine jit = mlirExecutionEngineCreate(m, 2, 0, NULL, false);
	if (dir[0]) {
		unsetenv("JITDUMPDIR");
		nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	}
	return jit;
}

/* JIT-compiles the lowered module and calls the cascade's entry point. */
static int execute(Run *r, MlirContext ctx, MlirModule m, DiagBuf *d)
{
	mlirRegisterAllLLVMTranslations(ctx);
	MlirExecutionEngine jit = engine_create(m);
	if (mlirExecutionEngineIsNull(jit)) {
		seterr(r, "cannot JIT-compile cascade %s%s%s", r->b->c->name, d->len ? ": " : "",
		       d->s);
		return 1;
	}
	int rc = 0;
	if (mlirLogicalResultIsFailure(
		mlirExecutionEngineInvokePacked(jit, mlir_str(r->b->c->name), r->args))) {
		seterr(r, "cannot find the entry point of cascade %s", r->b->c->name);
		rc = 1;
	}
	mlirExecutionEngineDestroy(jit);
	return rc;
}

/* Build, verify, lower and run in one context that lives for this call. */
static int compile_and_run(Run *r)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_once);
	char dbuf[512] = "";
	DiagBuf d = {dbuf, sizeof dbuf, 0};
	MlirContext ctx = mlir_context_new();
	mlirContextAttachDiagnosticHandler(ctx, diag_collect, &d, NULL);
	MlirModule m = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
	const Cascade *c = r->b->c;
	char berr[256] = "";
	int rc = 0;
	if (mlir_build_module(ctx, m, &c, 1, r->use_f64, 1, berr, sizeof berr)) {
		seterr(r, "cannot express cascade %s in MLIR: %s", c->name, berr);
		rc = 1;
	} else if (!mlirOperationVerify(mlirModuleGetOperation(m))) {
		seterr(r, "internal error: invalid MLIR for cascade %s: %s", c->name, dbuf);
		rc = 1;
	} else if (lower(ctx, m, &d)) {
		seterr(r, "internal error: lowering cascade %s failed: %s", c->name, dbuf);
		rc = 1;
	} else {
		rc = execute(r, ctx, m, &d);
	}
	mlirModuleDestroy(m);
	mlirContextDestroy(ctx);
	return rc;
}

/* Marshal, compile and run, unmarshal; run_free on every path. */
int refexec_run(const Binding *b, int use_f64, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	Run r = {.b = b, .use_f64 = use_f64, .err = err, .errlen = errlen};
	if (!b || !b->c || !b->dims) {
		seterr(&r, "incomplete binding");
		return 1;
	}
	int rc = marshal(&r);
	if (!rc)
		rc = compile_and_run(&r);
	if (!rc)
		unmarshal(&r);
	run_free(&r);
	return rc;
}

/* Built with MLIR: the mlir engine runs (mlir_none.c answers 0). */
int refexec_available(void)
{
	return 1;
}
