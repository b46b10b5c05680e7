/*
** test/fuzz/fuzz_pipeline.c: libFuzzer target for everything after the
** front end. An input that compiles is planned for sm_80 and for the CPU
** (plan and --explain text), emitted as portable C with its header (f32
** and f64) and as sm_80 PTX through the driver's program-level entry,
** without ptxas. None of it may crash, hang or leak; a cascade a back end
** cannot take is refused through the Diag. Inputs that do not compile are
** fuzz_front's business and return at once.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/plan.h"
#include "lang/front.h"
#include "lowering/c/c_emit.h"
#include "lowering/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The PTX of every cascade, as `attnc --emit=ptx` makes it when no ptxas
** is found (one round, no per-cascade caps). The one place that names the
** PTX back end's entry point, so that a rename touches one line. */
static void emit_ptx(FILE *out, const Program *p, Diag *d)
{
	GpuKernelInfo *info = calloc((size_t)p->cascades.n + 1, sizeof *info);
	char *buf = NULL;
	size_t n = 0;
	if (info && !gpu_compile(gpu_target("sm_80"), p, d, NULL, &buf, &n, info, 0))
		fwrite(buf, 1, n, out);
	free(buf);
	free(info);
}

/* Plans each cascade for target in a scratch arena of its own, as the
** driver's --emit=plan and --explain do: planning copies the IR. */
static void plans(FILE *out, const Program *p, const char *target)
{
	for (int i = 0; i < p->cascades.n; i++) {
		Arena a;
		arena_init(&a);
		Plan *pl = plan_build(&a, p->cascades.v[i], target);
		plan_print(out, pl);
		plan_explain(out, pl);
		arena_free(&a);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (memchr(data, 0, size))
		return 0; /* attnc rejects NUL bytes before the front end */
	Arena a;
	arena_init(&a);
	Diag d;
	diag_init(&d, &a, sink);
	char *text = arena_strndup(&a, (const char *)data, size);
	int f = diag_add_file(&d, "fuzz.attn", text, size);
	Program *p = front_compile(&a, &d, f);
	if (p) {
		plans(sink, p, "sm_80");
		plans(sink, p, "cpu");
		for (int f64 = 0; f64 < 2; f64++) {
			c_emit_program(sink, p, &d, f64);
			c_emit_header(sink, p, f64);
		}
		emit_ptx(sink, p, &d);
	}
	arena_free(&a);
	return 0;
}
