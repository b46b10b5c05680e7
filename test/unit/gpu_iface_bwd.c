/*
** test/unit/gpu_iface_bwd.c: the generated C of a GPU backward
** (lowering/gpu/iface_bwd.c) before any GPU runs it. examples/causal.attn's
** backward is derived (grad_derive) and cut into its kernels (grad_split:
** the row pass, dQ, dV and dK at head dim 128); the program of the forward
** and those pieces is written as a header and a source with hand-made
** kernel values, as attnc -o writes them. Checked: the pieces and their
** order, the header's declarations, the source's calls of each piece's
** launcher in order with the workspace for the row pass's result, its
** build with -Wall -Wextra -Werror, and gpu_iface_bwd_harness.c linked
** with it and libattnrt, run against rt_fakecuda (the stand-in libcuda).
**
** usage: test_gpu_iface_bwd EXAMPLES SCRATCH CC RUNTIME_DIR LIBATTNRT FAKECUDA
**        HARNESS FLAGS
*/
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../compiler/grad.h"
#include "../../lang/front.h"
#include "../../lowering/gpu/gpu.h"
#include "../../lowering/gpu/iface.h"
#include "iface_testutil.h"

/* The header and the source of p, one sm_80 cubin and the PTX, with
** info per cascade, into dir/causal.h and dir/causal.c. */
static int write_files(const char *dir, const Program *p, GpuKernelInfo *info)
{
	static const unsigned char cubin[] = "CUBIN80";
	static const char ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n";
	char path[1024];
	snprintf(path, sizeof path, "%s/causal.h", dir);
	FILE *h = fopen(path, "w");
	if (!h)
		return -1;
	gpu_iface_header(h, p);
	if (fclose(h))
		return -1;
	Arena a;
	arena_init(&a);
	GpuImages im;
	one_image(&im, &a, "sm_80", ptx, 80, cubin, sizeof cubin, info);
	snprintf(path, sizeof path, "%s/causal.c", dir);
	FILE *f = fopen(path, "w");
	int rc = -1;
	if (f) {
		gpu_iface_source(f, p, &im, "causal.h");
		rc = fclose(f) ? -1 : 0;
	}
	arena_free(&a);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 9) {
		fprintf(stderr, "usage: test_gpu_iface_bwd EXAMPLES SCRATCH CC RUNTIME_DIR "
				"LIBATTNRT FAKECUDA HARNESS FLAGS\n");
		return 2;
	}
	const char *examples = argv[1], *scratch = argv[2];
	char *cc = argv[3], *rtdir = argv[4], *lib = argv[5], *fake = argv[6], *harness = argv[7];
	if (mkdir(scratch, 0755) && errno != EEXIST) {
		fprintf(stderr, "cannot create %s: %s\n", scratch, strerror(errno));
		return 1;
	}
	Arena ar;
	arena_init(&ar);
	Diag d;
	diag_init(&d, &ar, stderr);
	char path[2048];
	snprintf(path, sizeof path, "%s/causal.attn", examples);
	int f = diag_load_file(&d, path);
	Program *p = f < 0 ? NULL : front_compile(&ar, &d, f);
	if (!p || p->cascades.n != 1) {
		fprintf(stderr, "cannot compile %s\n", path);
		return 1;
	}
	Cascade *c = p->cascades.v[0];
	Cascade *b = grad_derive(&ar, &d, c, 1, NULL);
	GradSplit *s = ARENA_NEW(&ar, GradSplit);
	CHECK(b && !grad_split(&ar, &d, c, b, s));
	if (!b || failures)
		return 1;
	/* the pieces: the row pass, dQ, then dK and dV in one kernel at D = 128 */
	CHECK(s->pre && !strcmp(s->pre->name, "causal_bwd_pre"));
	CHECK(s->dq && !strcmp(s->dq->name, "causal_bwd_dq"));
	CHECK(s->ndkv == 1 && !strcmp(s->dkv[0]->name, "causal_bwd_dkv"));
	CHECK(s->ws.n == 1);
	if (failures)
		return 1;
	/* dO comes in O's dtype; the row pass's result is an f32 input of dQ */
	CHECK(cascade_tensor(s->bwd, "dO")->dtype == DT_BF16);
	CHECK(cascade_tensor(s->bwd, "dL")->dtype == DT_F32);
	const Tensor *delta = cascade_tensor(s->dq, "dO_softmax_sum");
	CHECK(delta && delta->kind == TK_IN && delta->dtype == DT_F32);
	CHECK(!cascade_tensor(s->dq, "dK") && !cascade_tensor(s->dq, "dV"));
	Program *g = ARENA_NEW(&ar, Program);
	ptrvec_push(&ar, &g->cascades, c);
	ptrvec_push(&ar, &g->cascades, s->pre);
	ptrvec_push(&ar, &g->cascades, s->dq);
	ptrvec_push(&ar, &g->cascades, s->dkv[0]);
	/* dQ fused into the dK/dV kernel (its f32 sums), and their conversion */
	CHECK(s->fused && s->post && s->fused_at == 0 && s->acc.n == 1);
	if (failures)
		return 1;
	ptrvec_push(&ar, &g->cascades, s->fused);
	ptrvec_push(&ar, &g->cascades, s->post);
	ptrvec_push(&ar, &g->grads, s);
	GpuKernelInfo info[6];
	memset(info, 0, sizeof info);
	for (int i = 0; i < 6; i++)
		info[i] =
		    (GpuKernelInfo){.smem = 60000, .threads = 128, .block_m = 64, .block_n = 64};
	info[0].block_m = 128, info[1].block_m = 128, info[1].smem = 0;
	info[5].block_m = 128, info[5].smem = 0;
	char dir[512];
	snprintf(dir, sizeof dir, "%s/causal", scratch);
	CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
	CHECK(write_files(dir, g, info) == 0);
	snprintf(path, sizeof path, "%s/causal.h", dir);
	char *h = slurp(path);
	snprintf(path, sizeof path, "%s/causal.c", dir);
	char *src = slurp(path);
	CHECK(h && src);
	if (!h || !src)
		return 1;
	expect_text("causal.h", h,
		    "size_t causal_bwd_workspace_bytes(const causal_bwd_gpu_args *a);\n"
		    "size_t causal_bwd_workspace_bytes_generic(const long *dims);\n");
	expect_text("causal.h", h,
		    "int causal_bwd_launch(const causal_bwd_gpu_args *a, void *workspace, size_t "
		    "bytes, void *stream);\n");
	expect_text("causal.h", h, "\tconst void *dO; /* bf16, 4 dims */\n");
	expect_text("causal.h", h, "\tvoid *dQ; /* bf16, 4 dims */\n");
	/* the pieces in order, the row pass's result in the workspace: the
	** launch in a fixed order, then the one with dQ's sums zeroed, added
	** to by dK's kernel and converted */
	const char *o1 = expect_text("causal.c", src, "causal_bwd_pre_launch_generic(pp, ps, dims");
	const char *o2 = expect_text("causal.c", src, "causal_bwd_dq_launch_generic(pp, ps, dims");
	const char *o3 = expect_text("causal.c", src, "causal_bwd_dkv_launch_generic(pp, ps, dims");
	CHECK(o1 && o2 && o3 && o1 < o2 && o2 < o3);
	expect_text("causal.c", src, "\t\tpp[2] = ws + off[0];\n");
	const char *f0 = expect_text("causal.c", src, "int causal_bwd_launch_atomic_generic(");
	const char *f1 =
	    f0 ? expect_text("causal.c", f0, "attnrt_memset_async(ws + off[1], 0") : NULL;
	const char *f2 =
	    f1 ? expect_text("causal.c", f1, "causal_bwd_pre_launch_generic(pp") : NULL;
	const char *f4 =
	    f2 ? expect_text("causal.c", f2, "causal_bwd_dkvq_launch_generic(pp") : NULL;
	const char *f5 =
	    f4 ? expect_text("causal.c", f4, "causal_bwd_post_launch_generic(pp") : NULL;
	const char *f6 = f5 ? strstr(f0, "\n}\n") : NULL;
	CHECK(f5 && f6 && f5 < f6 && !strstr(f0, "causal_bwd_dq_launch_generic(pp"));
	CHECK(!strstr(src, "#error \"attnc"));
	/* the build, then the harness against the stand-in driver */
	char log[1024], obj[1024], exe[1024], inc[1024], rtinc[1024], *copy;
	snprintf(log, sizeof log, "%s/cc.log", dir);
	snprintf(path, sizeof path, "%s/causal.c", dir);
	snprintf(obj, sizeof obj, "%s/causal.o", dir);
	snprintf(exe, sizeof exe, "%s/harness", dir);
	snprintf(inc, sizeof inc, "-I%s", dir);
	snprintf(rtinc, sizeof rtinc, "-I%s", rtdir);
	char *compile[] = {cc,  "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc,
			   inc, "-c",       path,    "-o",      obj};
	char **cv = command(compile, 11, argv[8], &copy);
	int built = run(cv, log) == 0;
	CHECK(built);
	free(cv), free(copy);
	char *link[] = {cc,      "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc,       inc,  obj,
			harness, lib,        "-o",    exe,       "-ldl",    "-lpthread", "-lm"};
	char **lv = command(link, 15, argv[8], &copy);
	built = built && run(lv, log) == 0;
	CHECK(built);
	free(lv), free(copy);
	if (built) {
		char *hv[] = {exe, fake, NULL};
		snprintf(log, sizeof log, "%s/harness.log", dir);
		CHECK(run(hv, log) == 0);
	}
	free(h), free(src);
	arena_free(&ar);
	if (failures)
		fprintf(stderr, "gpu_iface_bwd: %d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
