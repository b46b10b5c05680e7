/*
** cli/cpu_engine.c: the CPU engine (see cpu_engine.h).
**
** Loading goes through fixed steps: find the compiler ($CC split at blanks,
** else cc, looked up in $PATH), make a private directory with mkdtemp, write
** the source, probe -fopenmp once per process, run the compiler through
** posix_spawn with its output captured in a log file and dlopen the result;
** the directory is then removed (the loaded object stays mapped). A call
** converts the inputs, calls the entry point and converts the outputs back.
** Everything a step acquires hangs off one Work and work_free releases it
** on every path; the directory is emptied and removed whatever happened.
** A CpuModule keeps only the dlopen handle.
*/
#define _POSIX_C_SOURCE 200809L

#include "cpu_engine.h"
#include "../support/spawn.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* CE_DIR leaves room under CE_PATH for any file name in the directory. */
enum { CE_PATH = 4096, CE_DIR = CE_PATH - 512, CE_LOG = 16384, CE_MSG_LINES = 3 };

/* Storage of a bound tensor as the generated code sees it. */
typedef enum Elem { EL_F32, EL_F64, EL_I32, EL_U8 } Elem;

typedef struct Work {
	char *err;
	size_t errlen;
	const char *ccname; /* the compiler command as the user sees it */
	char *ccbuf;        /* its copy, split in place into ccargv */
	char **ccargv;
	int ccargc;
	char ccpath[CE_PATH]; /* the resolved program */
	char dir[CE_DIR];     /* the private directory; "" until made */
	void *dl;
	void **data; /* [ntensors] buffers handed to the entry point */
	int ntensors;
} Work;

struct CpuModule {
	void *dl; /* the loaded shared object */
};

static const char ce_probe_source[] = "#include <omp.h>\n"
				      "int attnc_probe(int n);\n"
				      "int attnc_probe(int n)\n"
				      "{\n"
				      "\tint s = 0;\n"
				      "#pragma omp parallel for reduction(+ : s)\n"
				      "\tfor (int i = 0; i < n; i++)\n"
				      "\t\ts += i;\n"
				      "\treturn s + omp_get_max_threads();\n"
				      "}\n";

/* Every failure leaves one line in err and makes the caller return -1. */
__attribute__((format(printf, 2, 3))) static int fail(Work *w, const char *fmt, ...)
{
	if (w->err && w->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->err, w->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Paths inside the private directory; names are short and fixed. */
static void path_in(const Work *w, const char *name, char *out)
{
	snprintf(out, CE_PATH, "%s/%s", w->dir, name);
}

/* ---- the compiler --------------------------------------------------------- */

/* $CC (split at blanks, so "ccache gcc" and "gcc -m64" work), else cc. */
static int find_compiler(Work *w)
{
	const char *env = getenv("CC");
	int from_env = env && env[strspn(env, " \t\n")];
	w->ccname = from_env ? env : "cc";
	size_t n = strlen(w->ccname);
	w->ccbuf = malloc(n + 1);
	w->ccargv = calloc(n / 2 + 2, sizeof *w->ccargv);
	if (!w->ccbuf || !w->ccargv)
		return fail(w, "out of memory");
	memcpy(w->ccbuf, w->ccname, n + 1);
	char *save = NULL;
	for (char *tok = strtok_r(w->ccbuf, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save))
		w->ccargv[w->ccargc++] = tok;
	if (spawn_find_program(w->ccargv[0], w->ccpath, sizeof w->ccpath))
		return fail(w, "C compiler '%s' not found%s", w->ccargv[0],
			    from_env ? " (from $CC)" : "; install one or set $CC");
	return 0;
}

/* Runs the compiler on src into the shared object so, its output going to
** cc.log; *status is waitpid's. Returns -1 only when it could not run. */
static int run_compiler(Work *w, const char *src, const char *so, int openmp, int *status)
{
	static char *const flags[] = {"-std=c99", "-O2", "-fPIC", "-shared"};
	char log[CE_PATH];
	int nflags = (int)(sizeof flags / sizeof flags[0]);
	char **argv = calloc((size_t)(w->ccargc + nflags + 8), sizeof *argv);
	if (!argv)
		return fail(w, "out of memory");
	int k = 0;
	for (int i = 0; i < w->ccargc; i++)
		argv[k++] = w->ccargv[i];
	for (int i = 0; i < nflags; i++)
		argv[k++] = flags[i];
	if (openmp)
		argv[k++] = "-fopenmp";
	argv[k++] = "-o";
	argv[k++] = (char *)so;
	argv[k++] = (char *)src;
	argv[k++] = "-lm";
	argv[k] = NULL;

	path_in(w, "cc.log", log);
	pid_t pid;
	int e = spawn_logged(w->ccpath, argv, log, &pid);
	free(argv);
	if (e)
		return fail(w, "cannot run C compiler '%s': %s", w->ccname, strerror(e));
	if ((e = spawn_wait(pid, status)))
		return fail(w, "waiting for C compiler '%s': %s", w->ccname, strerror(e));
	return 0;
}

/* Copies one log line into msg without the private directory's prefix, so
** messages name "kernel.c:3:5" rather than a temporary path. */
static size_t append_line(const Work *w, char *msg, size_t m, size_t cap, const char *line,
			  size_t n)
{
	size_t dl = strlen(w->dir);
	for (size_t i = 0; i < n && m + 1 < cap;) {
		if (dl && n - i > dl && !strncmp(line + i, w->dir, dl) && line[i + dl] == '/') {
			i += dl + 1;
			continue;
		}
		msg[m++] = line[i] == '\t' ? ' ' : line[i];
		i++;
	}
	msg[m] = 0;
	return m;
}

/* "compilation failed: " and the first few lines with "error:" in them
** (else the first few lines, else the exit status), joined with "; ". */
static int report_compile_failure(Work *w, int status)
{
	char path[CE_PATH], msg[1024] = "";
	char *text = calloc(CE_LOG, 1);
	size_t m = 0;
	int nlines = 0;
	if (!text)
		return fail(w, "out of memory");
	path_in(w, "cc.log", path);
	FILE *f = fopen(path, "r");
	if (f) {
		size_t got = fread(text, 1, CE_LOG - 1, f);
		text[got] = 0;
		fclose(f);
	}
	for (int pass = 0; pass < 2 && !nlines; pass++)
		for (char *p = text; *p && nlines < CE_MSG_LINES;) {
			char *end = strchr(p, '\n');
			size_t n = end ? (size_t)(end - p) : strlen(p);
			char save = p[n];
			p[n] = 0;
			int take = pass ? p[strspn(p, " \t\r")] != 0 : strstr(p, "error:") != NULL;
			p[n] = save;
			if (take) {
				if (nlines++)
					m = append_line(w, msg, m, sizeof msg, "; ", 2);
				m = append_line(w, msg, m, sizeof msg, p, n);
			}
			p += n + (end != NULL);
		}
	free(text);
	if (nlines)
		return fail(w, "compilation failed: %s", msg);
	if (WIFSIGNALED(status))
		return fail(w, "compilation failed: '%s' was killed by signal %d", w->ccname,
			    WTERMSIG(status));
	return fail(w, "compilation failed: '%s' exited with status %d and no message", w->ccname,
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* ---- files ------------------------------------------------------------------ */

/* A private directory under $TMPDIR (else /tmp). */
static int make_dir(Work *w)
{
	const char *tmp = getenv("TMPDIR");
	tmp = tmp && *tmp ? tmp : "/tmp";
	if (strlen(tmp) + sizeof "/attnc-cpu-XXXXXX" > sizeof w->dir)
		return fail(w, "$TMPDIR is too long");
	snprintf(w->dir, sizeof w->dir, "%s/attnc-cpu-XXXXXX", tmp);
	if (!mkdtemp(w->dir)) {
		w->dir[0] = 0;
		return fail(w, "cannot create a temporary directory under '%s': %s", tmp,
			    strerror(errno));
	}
	return 0;
}

/* Writes text to the file name in the private directory. */
static int write_source(Work *w, const char *name, const char *text)
{
	char path[CE_PATH];
	path_in(w, name, path);
	FILE *f = fopen(path, "w");
	if (!f)
		return fail(w, "cannot write '%s': %s", path, strerror(errno));
	size_t n = strlen(text);
	int bad = fwrite(text, 1, n, f) != n;
	bad |= fclose(f) != 0;
	return bad ? fail(w, "cannot write '%s'", path) : 0;
}

/* Empties and removes the private directory, whatever the compiler left. */
static void remove_dir(Work *w)
{
	if (!w->dir[0])
		return;
	DIR *d = opendir(w->dir);
	if (d) {
		struct dirent *e;
		char path[CE_PATH];
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			path_in(w, e->d_name, path);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(w->dir);
	w->dir[0] = 0;
}

/* ---- OpenMP ---------------------------------------------------------------- */

/* An OpenMP runtime must never be unloaded while its worker threads live
** (they sleep inside its code), so once one is loaded it is pinned. */
static void pin_openmp_runtime(void)
{
#if defined(RTLD_NOLOAD) && defined(RTLD_NODELETE)
	static int pinned;
	static const char *const names[] = {"libgomp.so.1", "libomp.so.5", "libomp.so",
					    "libiomp5.so"};
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !pinned; i++)
		pinned = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
#endif
}

/* Compiles and loads a tiny OpenMP file with -fopenmp; 1 if that works. */
static int probe_openmp_uncached(Work *w)
{
	char src[CE_PATH], so[CE_PATH];
	int status = 0, ok = 0;
	if (write_source(w, "probe.c", ce_probe_source))
		return -1;
	path_in(w, "probe.c", src);
	path_in(w, "probe.so", so);
	if (run_compiler(w, src, so, 1, &status))
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
		ok = h != NULL;
		if (h) {
			pin_openmp_runtime();
			dlclose(h);
		}
	}
	unlink(src);
	unlink(so);
	return ok;
}

/* The probe's answer, cached per process for the compiler command it was
** made with (a different $CC is probed again). */
static int probe_openmp(Work *w)
{
	static char cached_cc[512];
	static int cached = -1;
	if (cached >= 0 && !strcmp(cached_cc, w->ccname))
		return cached;
	int ok = probe_openmp_uncached(w);
	if (ok >= 0 && strlen(w->ccname) < sizeof cached_cc) {
		strcpy(cached_cc, w->ccname);
		cached = ok;
	}
	return ok;
}

/* ---- data ------------------------------------------------------------------ */

/* The generated code's element type for a tensor of dtype t. */
static Elem elem_of(DType t, int use_f64)
{
	if (t == DT_I32)
		return EL_I32;
	if (t == DT_BOOL)
		return EL_U8;
	return use_f64 ? EL_F64 : EL_F32;
}

/* Bytes per element of e. */
static size_t elem_size(Elem e)
{
	switch (e) {
	case EL_F32: return sizeof(float);
	case EL_F64: return sizeof(double);
	case EL_I32: return sizeof(int32_t);
	case EL_U8: return sizeof(uint8_t);
	}
	return sizeof(double);
}

/* One input's f64 values in the generated code's type; i32 values must be
** integers in range (converting anything else would be undefined). */
static int convert_input(Work *w, const Tensor *t, Elem e, const double *src, void *dst, long n)
{
	for (long k = 0; k < n; k++) {
		double v = src[k];
		switch (e) {
		case EL_F32: ((float *)dst)[k] = (float)v; break;
		case EL_F64: ((double *)dst)[k] = v; break;
		case EL_U8: ((uint8_t *)dst)[k] = v != 0; break;
		case EL_I32:
			if (!(v >= INT32_MIN && v <= INT32_MAX) || (double)(int32_t)v != v)
				return fail(w, "input '%s': element %ld (%g) is not an i32 value",
					    t->name, k, v);
			((int32_t *)dst)[k] = (int32_t)v;
			break;
		}
	}
	return 0;
}

/* One output back into f64 (bools as exactly 0 or 1). */
static void convert_output(Elem e, const void *src, double *dst, long n)
{
	for (long k = 0; k < n; k++)
		switch (e) {
		case EL_F32: dst[k] = ((const float *)src)[k]; break;
		case EL_F64: dst[k] = ((const double *)src)[k]; break;
		case EL_I32: dst[k] = ((const int32_t *)src)[k]; break;
		case EL_U8: dst[k] = ((const uint8_t *)src)[k] ? 1.0 : 0.0; break;
		}
}

/* Allocates a buffer for every input and output and fills the inputs and
** the float outputs from b (i32/bool outputs start at 0, since b may hold a
** poison value there that no integer type can carry); temporaries stay
** NULL. */
static int bind_buffers(Work *w, const Binding *b, int use_f64)
{
	const Cascade *c = b->c;
	w->ntensors = c->tensors.n;
	w->data = calloc((size_t)w->ntensors + 1, sizeof *w->data);
	if (!w->data)
		return fail(w, "out of memory");
	for (int i = 0; i < w->ntensors; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		if (!b->data[i])
			return fail(w, "no buffer is bound to %s '%s'",
				    t->kind == TK_IN ? "input" : "output", t->name);
		Elem e = elem_of(t->dtype, use_f64);
		long n = tensor_numel(t, b->dims);
		size_t cnt = n > 0 ? (size_t)n : 1;
		if (n < 0 || cnt > SIZE_MAX / elem_size(e))
			return fail(w, "tensor '%s' has an impossible size (%ld elements)", t->name,
				    n);
		w->data[i] = calloc(cnt, elem_size(e));
		if (!w->data[i])
			return fail(w, "out of memory for '%s' (%ld elements)", t->name, n);
		if (t->kind == TK_IN && convert_input(w, t, e, b->data[i], w->data[i], n))
			return -1;
		if (t->kind == TK_OUT && (e == EL_F32 || e == EL_F64) &&
		    convert_input(w, t, e, b->data[i], w->data[i], n))
			return -1;
	}
	return 0;
}

/* ---- driver ------------------------------------------------------------- */

/* Compiles the source and loads it into w->dl. */
static int build(Work *w, const char *c_source)
{
	char src[CE_PATH], so[CE_PATH];
	int status = 0;
	if (find_compiler(w) || make_dir(w) || write_source(w, "kernel.c", c_source))
		return -1;
	int openmp = probe_openmp(w);
	if (openmp < 0)
		return -1;
	path_in(w, "kernel.c", src);
	path_in(w, "kernel.so", so);
	if (run_compiler(w, src, so, openmp, &status))
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return report_compile_failure(w, status);
	w->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!w->dl) {
		const char *why = dlerror();
		char msg[1024] = "unknown reason";
		if (why)
			append_line(w, msg, 0, sizeof msg, why, strlen(why));
		return fail(w, "cannot load the compiled code: %s", msg);
	}
	if (openmp)
		pin_openmp_runtime();
	return 0;
}

/* Releases whatever the steps acquired, in reverse order. */
static void work_free(Work *w)
{
	if (w->dl)
		dlclose(w->dl);
	for (int i = 0; w->data && i < w->ntensors; i++)
		free(w->data[i]);
	free(w->data);
	remove_dir(w);
	free(w->ccargv);
	free(w->ccbuf);
}

/* A Work that reports into err (cleared first). */
static void work_init(Work *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	w->err = err, w->errlen = errlen;
	if (err && errlen)
		err[0] = 0;
}

/* Public: compile and load; the handle moves from the Work to the module. */
CpuModule *cpu_engine_load(const char *c_source, char *err, size_t errlen)
{
	Work w;
	CpuModule *m = NULL;
	work_init(&w, err, errlen);
	if (!c_source)
		fail(&w, "cpu_engine_load: missing source");
	else if (!build(&w, c_source)) {
		m = malloc(sizeof *m);
		if (m) {
			m->dl = w.dl;
			w.dl = NULL;
		} else {
			fail(&w, "out of memory");
		}
	}
	work_free(&w);
	return m;
}

/* Public: dlclose and free. */
void cpu_engine_unload(CpuModule *m)
{
	if (!m)
		return;
	if (m->dl)
		dlclose(m->dl);
	free(m);
}

/* The steps of one call of symbol (generic or, when partitioned is set,
** partitioned signature); outputs are written back only on success. */
static int work_call(Work *w, void *dl, const char *symbol, int partitioned, const Binding *b,
		     int use_f64, const long *bounds, int nparts)
{
	if (!dl || !b || !b->c || !symbol)
		return fail(w, "cpu_engine_call: missing argument");
	dlerror();
	void *sym = dlsym(dl, symbol);
	if (!sym)
		return fail(w, "symbol '%s' not found in the compiled code", symbol);
	if (bind_buffers(w, b, use_f64))
		return -1;
	int rc;
	if (partitioned) {
		CpuEnginePartEntry fn;
		memcpy(&fn, &sym, sizeof fn); /* POSIX guarantees the conversion */
		rc = fn(b->dims, b->params, w->data, 0, bounds, nparts);
	} else {
		CpuEngineEntry fn;
		memcpy(&fn, &sym, sizeof fn);
		rc = fn(b->dims, b->params, w->data, 0);
	}
	if (rc == 1) {
		/* where attnc run checked the sizes before: the data */
		fail(w,
		     "generated code returned error 1: the sizes, bounds or data are outside what "
		     "it takes (a gathered index outside its tensor, or a packed output's offsets "
		     "placing a point outside its buffer)");
		return rc;
	}
	if (rc) {
		fail(w, "generated code returned error %d%s", rc,
		     rc == 2 ? " (out of memory)" : "");
		return rc;
	}
	for (int i = 0; i < w->ntensors; i++) {
		const Tensor *t = b->c->tensors.v[i];
		if (t->kind == TK_OUT)
			convert_output(elem_of(t->dtype, use_f64), w->data[i], b->data[i],
				       tensor_numel(t, b->dims));
	}
	return 0;
}

/* Public: NAME_run_generic or NAME_run_partitioned of a loaded module. */
int cpu_engine_call(CpuModule *m, const char *entry_prefix, const Binding *b, int use_f64,
		    const long *bounds, int nparts, char *err, size_t errlen)
{
	Work w;
	work_init(&w, err, errlen);
	if (!m || !entry_prefix)
		return fail(&w, "cpu_engine_call: missing argument");
	const char *suffix = nparts ? "_run_partitioned" : "_run_generic";
	size_t n = strlen(entry_prefix) + strlen(suffix) + 1;
	char *symbol = malloc(n);
	if (!symbol)
		return fail(&w, "out of memory");
	snprintf(symbol, n, "%s%s", entry_prefix, suffix);
	int rc = work_call(&w, m->dl, symbol, nparts != 0, b, use_f64, bounds, nparts);
	free(symbol);
	work_free(&w);
	return rc;
}

/* Public entry with the precision flag: load, one generic call, unload. */
int cpu_engine_run_ex(const Binding *b, const char *c_source, const char *entry_name, int use_f64,
		      char *err, size_t errlen)
{
	Work w;
	work_init(&w, err, errlen);
	if (!b || !b->c || !c_source || !entry_name)
		return fail(&w, "cpu_engine_run: missing argument");
	CpuModule *m = cpu_engine_load(c_source, err, errlen);
	if (!m)
		return -1;
	int rc = work_call(&w, m->dl, entry_name, 0, b, use_f64, NULL, 0);
	work_free(&w);
	cpu_engine_unload(m);
	return rc == 1 ? 1 : rc ? -1 : 0;
}

/* f32 buffers: what `attnc run --engine cpu` uses by default. */
int cpu_engine_run(const Binding *b, const char *c_source, const char *entry_name, char *err,
		   size_t errlen)
{
	return cpu_engine_run_ex(b, c_source, entry_name, 0, err, errlen);
}

/* The probe on its own, for tests and diagnostics; needs its own directory. */
int cpu_engine_has_openmp(char *err, size_t errlen)
{
	Work w;
	work_init(&w, err, errlen);
	int rc = find_compiler(&w) ? -1 : 0;
	rc = rc ? rc : make_dir(&w);
	rc = rc ? rc : probe_openmp(&w);
	work_free(&w);
	return rc;
}
