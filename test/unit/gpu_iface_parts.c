/*
** test/unit/gpu_iface_parts.c: the generated C around NAME_fwd_part, the
** kernel of partial states (--parts: lowering/gpu/iface_part.c, iface_cp.c),
** before any GPU runs it: examples/causal.attn (one sequence: a
** context-parallel launch) with a hand-made GpuKernelInfo of an sm_90a-like
** kernel with two TMA maps, and examples/decode.attn (GQA-packed, no
** context-parallel launch) with an sm_80-like one. Checked per example:
** the header (attn_gpu_part, its flags, every declaration, and for decode
** the comment that says why it has no NAME_launch_cp), the source (the
** API version guard, NAME_kernel_part's entry, the packed flag of the
** rows' check, and for causal the ring step's pointer arithmetic as
** emitted), its build with -Wall -Wextra -Werror, and
** gpu_iface_parts_harness.c linked with it and libattnrt, run against
** rt_fakecuda (the stand-in libcuda): argument errors, sizes, the split's
** memset and launch parameters, and the ring of one rank. The causal
** harness runs again with two ranks as threads over rt_fakecuda_nccl.
**
** usage: test_gpu_iface_parts EXAMPLES SCRATCH CC RUNTIME_DIR LIBATTNRT FAKECUDA
**        FAKECUDA_NCCL HARNESS FLAGS
** (FLAGS: extra compiler and linker flags, space-separated, maybe empty)
*/
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../lang/front.h"
#include "../../lowering/gpu/gpu.h"
#include "../../lowering/gpu/iface.h"
#include "iface_testutil.h"

/* The header (with the part declarations) and the source of p, one
** sm_90 cubin and the PTX, with info as the kernel's, into dir/NAME.h and
** dir/NAME.c. */
static int write_files(const char *dir, const char *name, const Program *p, GpuKernelInfo *info)
{
	static const unsigned char cubin[] = "CUBIN90";
	static const char ptx[] = ".version 8.0\n.target sm_90a\n.address_size 64\n";
	char path[1024], hname[64];
	snprintf(hname, sizeof hname, "%s.h", name);
	snprintf(path, sizeof path, "%s/%s", dir, hname);
	FILE *h = fopen(path, "w");
	if (!h)
		return -1;
	gpu_iface_header_parts(h, p, 0, 1);
	if (fclose(h))
		return -1;
	Arena a;
	arena_init(&a);
	GpuImages im;
	one_image(&im, &a, "sm_90a", ptx, 90, cubin, sizeof cubin, info);
	snprintf(path, sizeof path, "%s/%s.c", dir, name);
	FILE *f = fopen(path, "w");
	int rc = -1;
	if (f) {
		gpu_iface_source(f, p, &im, hname);
		rc = fclose(f) ? -1 : 0;
	}
	arena_free(&a);
	return rc;
}

/* The parameters of NAME_fwd_part before its part parameters: pointers,
** strides, dims, params, then the grid's magic ones (iface.c's order). */
static int part_slot(const Cascade *c)
{
	Arena a;
	arena_init(&a);
	int n = gpu_magic_params(plan_build(&a, c, "sm_90a")) + c->dims.n + c->params.n;
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		n += t->kind == TK_TEMP ? 0 : 1 + t->rank;
	}
	arena_free(&a);
	return n;
}

typedef struct Tools {
	char *cc, *rtdir, *lib, *harness, *fake, *fake_nccl;
	const char *flags;
} Tools;

/* Builds dir/NAME.c with -Werror, then the harness with it for case
** (CAUSAL, DECODE) and defs, and runs it with args. */
static void build_and_run(const Tools *t, const char *dir, const char *name, const char *kase,
			  char *const *defs, int ndefs)
{
	char log[1024], src[1024], obj[1024], exe[1024], inc[1024], rtinc[1024], def[64];
	snprintf(log, sizeof log, "%s/cc.log", dir);
	snprintf(src, sizeof src, "%s/%s.c", dir, name);
	snprintf(obj, sizeof obj, "%s/%s.o", dir, name);
	snprintf(exe, sizeof exe, "%s/harness", dir);
	snprintf(inc, sizeof inc, "-I%s", dir);
	snprintf(rtinc, sizeof rtinc, "-I%s", t->rtdir);
	snprintf(def, sizeof def, "-DCASE_%s", kase);
	char *copy;
	char *compile[] = {t->cc, "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc,
			   inc,   "-c",       src,     "-o",      obj};
	char **cv = command(compile, 11, t->flags, &copy);
	int built = run(cv, log) == 0;
	CHECK(built);
	free(cv), free(copy);
	char *link[32] = {t->cc, "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc, inc, def};
	int n = 8;
	for (int i = 0; i < ndefs; i++)
		link[n++] = defs[i];
	char *tail[] = {obj, t->harness, t->lib, "-o", exe, "-ldl", "-lpthread", "-lm"};
	for (int i = 0; i < 8; i++)
		link[n++] = tail[i];
	char **lv = command(link, n, t->flags, &copy);
	built = built && run(lv, log) == 0;
	CHECK(built);
	free(lv), free(copy);
	if (!built)
		return;
	char *hv[] = {exe, t->fake, NULL};
	snprintf(log, sizeof log, "%s/harness.log", dir);
	CHECK(run(hv, log) == 0);
	if (!strcmp(kase, "CAUSAL")) {
		/* two ranks as threads, over the stand-in NCCL */
		char *hv2[] = {exe, t->fake_nccl, "ring", NULL};
		snprintf(log, sizeof log, "%s/harness-ring.log", dir);
		CHECK(run(hv2, log) == 0);
	}
}

/* The declarations every --parts header has for a cascade called n. */
static void expect_decls(const char *what, const char *h, const char *n)
{
	char want[1024];
	snprintf(want, sizeof want,
		 "int %s_launch_part(const %s_gpu_args *a, const attn_gpu_part *part, void "
		 "*stream);\n"
		 "int %s_part_bytes(const %s_gpu_args *a, const attn_gpu_part *part, size_t "
		 "*state_bytes, size_t *workspace_bytes);\n",
		 n, n, n, n);
	expect_text(what, h, want);
	snprintf(want, sizeof want,
		 "long %s_part_keys(const long *dims);\n"
		 "int %s_launch_part_generic(void *const *ptrs, const int64_t *const *strides, "
		 "const long *dims, const double *params, const attn_gpu_part *part, void "
		 "*stream);\n",
		 n, n);
	expect_text(what, h, want);
	snprintf(want, sizeof want,
		 "int %s_split_workspace_bytes(const %s_gpu_args *a, size_t *bytes);\n"
		 "int %s_launch_split(const %s_gpu_args *a, void *workspace, size_t bytes, void "
		 "*stream);\n",
		 n, n, n, n);
	expect_text(what, h, want);
	expect_text(
	    what, h,
	    "enum { ATTN_PART_MERGE_IN = 1, ATTN_PART_FINALIZE = 2, ATTN_PART_STREAM_K = 4,\n"
	    "       ATTN_PART_ZEROED = 8 };\n"
	    "typedef struct attn_gpu_part {\n\tlong q_begin, q_end;\n\tlong k_begin, k_end;\n"
	    "\tint splits;\n\tint flags;\n\tvoid *workspace;\n\tsize_t workspace_bytes;\n"
	    "\tvoid *state;\n\tsize_t state_bytes;\n} attn_gpu_part;\n");
	expect_text(what, h, "#ifndef ATTN_GPU_PART_V1\n#define ATTN_GPU_PART_V1\n");
}

/* What every --parts source has for a cascade called n of info (packed:
** GQA packing). */
static void expect_source(const char *what, const char *s, const char *n, const GpuKernelInfo *i,
			  int packed)
{
	char want[1024];
	expect_text(what, s,
		    "#if ATTNRT_API_VERSION < 4\n#error \"kernels of partial states (--parts) need "
		    "attnrt.h of API version 4 or later\"\n#endif\n");
	snprintf(want, sizeof want,
		 "static AttnrtKernel %s_kernel_part = {\"%s_fwd_part\", attn_images, sizeof "
		 "attn_images / sizeof attn_images[0], %uu, %u, NULL};\n",
		 n, n, i->smem, i->threads);
	expect_text(what, s, want);
	snprintf(want, sizeof want, "iface_part_rows(\"%s\", part, %d, &q0, &q1, kext)", n, packed);
	expect_text(what, s, want);
	/* the part's launch: NAME_kernel_part, grid z the splits */
	snprintf(want, sizeof want,
		 "\tif (part)\n\t\treturn attnrt_launch(&%s_kernel_part, (unsigned)gx, "
		 "(unsigned)gy, pz, stream, args);\n",
		 n);
	expect_text(what, s, want);
	/* the states' and the launch values are the image's */
	snprintf(
	    want, sizeof want,
	    "iface_part_params(\"%s\", part, gx * gy, q0, q1, kext, %uu, %uu, %uu, %uu, %s, %uu, "
	    "sizes, pp, pw, &pmode, &pz, &psk);\n",
	    n, i->part_cta_bytes, i->threads, i->smem, (unsigned)i->streamk, packed ? "grp" : "0L",
	    i->threads > 128 ? i->block_m / 2 : 0);
	expect_text(what, s, want);
}

int main(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: test_gpu_iface_parts EXAMPLES SCRATCH CC RUNTIME_DIR "
				"LIBATTNRT FAKECUDA FAKECUDA_NCCL HARNESS FLAGS\n");
		return 2;
	}
	const char *examples = argv[1], *scratch = argv[2];
	Tools t = {argv[3], argv[4], argv[5], argv[8], argv[6], argv[7], argv[9]};
	if (mkdir(scratch, 0755) && errno != EEXIST) {
		fprintf(stderr, "cannot create %s: %s\n", scratch, strerror(errno));
		return 1;
	}
	Arena ar;
	arena_init(&ar);
	Diag d;
	diag_init(&d, &ar, stderr);
	char path[2048], dir[1024], want[1024];

	/* causal: one sequence, so a context-parallel launch */
	snprintf(path, sizeof path, "%s/causal.attn", examples);
	int f = diag_load_file(&d, path);
	Program *p = f < 0 ? NULL : front_compile(&ar, &d, f);
	if (!p || p->cascades.n != 1) {
		fprintf(stderr, "cannot compile %s\n", path);
		return 1;
	}
	const Cascade *c = p->cascades.v[0];
	int q = tensor_index(c, "Q"), k = tensor_index(c, "K");
	CHECK(q == 0 && k == 1 && tensor_index(c, "V") == 2 && tensor_index(c, "O") == 3 &&
	      tensor_index(c, "L") == 4);
	GpuKernelInfo info[2];
	memset(info, 0, sizeof info);
	info[0] = (GpuKernelInfo){.smem = 180000, .threads = 384, .block_m = 128, .block_n = 64};
	info[0].parts = 1, info[0].part_cta_bytes = 69632;
	info[0].ntmaps = 2;
	info[0].tmap[0] = (GpuTmap){k, 4, {1, 1, GPU_BN, GPU_TMAP_INNER}, 0};
	info[0].tmap[1] = (GpuTmap){q, 4, {1, 1, 128, GPU_TMAP_INNER}, 0};
	snprintf(dir, sizeof dir, "%s/causal", scratch);
	CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
	CHECK(write_files(dir, "causal", p, info) == 0);
	snprintf(path, sizeof path, "%s/causal.h", dir);
	char *h = slurp(path);
	snprintf(path, sizeof path, "%s/causal.c", dir);
	char *s = slurp(path);
	CHECK(h && s);
	if (!h || !s)
		return 1;
	expect_decls("causal.h", h, "causal");
	expect_text("causal.h", h,
		    "struct AttnrtComm;\n"
		    "int causal_cp_workspace_bytes(const causal_gpu_args *a, int nranks, size_t "
		    "*bytes);\n"
		    "int causal_launch_cp(const causal_gpu_args *a, struct AttnrtComm *comm, void "
		    "*workspace, size_t bytes, void *stream);\n");
	CHECK(!strstr(h, "no context-parallel launch"));
	expect_source("causal.c", s, "causal", &info[0], 0);
	/* the ring step: query chunk qa is global chunk ga, the K/V chunk kb of
	** the buffers global chunk gb; each tensor's base moved by (local -
	** global) chunks along its sequence dim (2 for all), in its element's
	** bytes */
	expect_text("causal.c", s,
		    "\t\tlong ga = qa ? 2L * c->P - 1 - c->r : c->r;\n"
		    "\t\tfor (int kb = 0; kb < 2; kb++) {\n"
		    "\t\t\tlong gb = kb ? 2L * c->P - 1 - src : src;\n");
	static const struct {
		int i;
		const char *base, *diff;
		int bytes;
	} moved[] = {{0, "c->ptrs[0]", "qa - ga", 2},
		     {1, "bufs[0]", "kb - gb", 2},
		     {2, "bufs[1]", "kb - gb", 2},
		     {3, "c->ptrs[3]", "qa - ga", 2},
		     {4, "c->ptrs[4]", "qa - ga", 4}};
	for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++) {
		snprintf(want, sizeof want,
			 "\t\t\tptrs[%d] = (void *)((uintptr_t)%s + (uintptr_t)(intptr_t)((%s) * "
			 "c->C * c->st[%d][2] * %d));\n",
			 moved[i].i, moved[i].base, moved[i].diff, moved[i].i, moved[i].bytes);
		expect_text("causal.c", s, want);
	}
	expect_text(
	    "causal.c", s,
	    "\t\t\tint flags = step || kb ? ATTN_PART_MERGE_IN : 0;\n"
	    "\t\t\tif (step == c->P - 1 && kb == 1)\n\t\t\t\tflags |= ATTN_PART_FINALIZE;\n");
	/* K and V travel: two buffers a set */
	expect_text("causal.c", s,
		    "\treturn attnrt_ring_run(comm, 2, local, kv, recv0, recv1, causal_cp_step, "
		    "&c, stream);\n");
	/* the part parameters after the magic ones, before the maps */
	const char *pa = expect_text("causal.c", s, "\t\targs[k++] = &pmode;\n");
	const char *mg = expect_text("causal.c", s, "\t\targs[k++] = &gm[i];\n");
	const char *mp = expect_text(
	    "causal.c", s, "\tfor (int i = 0; i < 2; i++)\n\t\targs[k++] = (void *)&tmaps[i];\n");
	CHECK(!pa || !mg || !mp || (mg < pa && pa < mp));
	CHECK(!strstr(s, "#error \"attnc"));
	char slot[64], sdef[64], bdef[64], tdef[64], mdef[64], mrows[64];
	snprintf(slot, sizeof slot, "-DPART_SLOT=%d", part_slot(c));
	snprintf(sdef, sizeof sdef, "-DSMEM=%u", info[0].smem);
	snprintf(bdef, sizeof bdef, "-DCTA_BYTES=%u", info[0].part_cta_bytes);
	snprintf(tdef, sizeof tdef, "-DTHREADS=%u", info[0].threads);
	snprintf(mrows, sizeof mrows, "-DBLOCK_M=%u", info[0].block_m);
	snprintf(mdef, sizeof mdef, "-DNTMAPS=%d", info[0].ntmaps);
	char *cdefs[] = {slot, sdef, bdef, tdef, mrows, mdef};
	build_and_run(&t, dir, "causal", "CAUSAL", cdefs, 6);
	free(h), free(s);

	/* decode: GQA-packed rows, the query heads and the keys two dims */
	snprintf(path, sizeof path, "%s/decode.attn", examples);
	f = diag_load_file(&d, path);
	p = f < 0 ? NULL : front_compile(&ar, &d, f);
	if (!p || p->cascades.n != 1) {
		fprintf(stderr, "cannot compile %s\n", path);
		return 1;
	}
	c = p->cascades.v[0];
	const Dim *gd = cascade_dim(c, "G");
	CHECK(gd != NULL);
	int g = gd ? gd->id : 0;
	memset(info, 0, sizeof info);
	info[0] = (GpuKernelInfo){.smem = 50000, .threads = 128, .block_m = 64, .block_n = 64};
	info[0].parts = 1, info[0].part_cta_bytes = 34816, info[0].pack = -(g + 1);
	info[0].streamk = 1; /* kv_len: the lengths are read on the device */
	snprintf(dir, sizeof dir, "%s/decode", scratch);
	CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
	CHECK(write_files(dir, "decode", p, info) == 0);
	snprintf(path, sizeof path, "%s/decode.h", dir);
	h = slurp(path);
	snprintf(path, sizeof path, "%s/decode.c", dir);
	s = slurp(path);
	CHECK(h && s);
	if (!h || !s)
		return 1;
	expect_decls("decode.h", h, "decode");
	expect_text("decode.h", h,
		    "/* decode has no context-parallel launch: the query rows and the keys are "
		    "not one sequence (one dim). */\n");
	CHECK(!strstr(h, "launch_cp") && !strstr(h, "cp_workspace_bytes"));
	expect_source("decode.c", s, "decode", &info[0], 1);
	CHECK(!strstr(s, "launch_cp") && !strstr(s, "attnrt_ring_run"));
	snprintf(slot, sizeof slot, "-DPART_SLOT=%d", part_slot(c));
	snprintf(sdef, sizeof sdef, "-DSMEM=%u", info[0].smem);
	snprintf(bdef, sizeof bdef, "-DCTA_BYTES=%u", info[0].part_cta_bytes);
	snprintf(tdef, sizeof tdef, "-DTHREADS=%u", info[0].threads);
	snprintf(mrows, sizeof mrows, "-DBLOCK_M=%u", info[0].block_m);
	snprintf(mdef, sizeof mdef, "-DNTMAPS=%d", info[0].ntmaps);
	char *ddefs[] = {slot, sdef, bdef, tdef, mrows, mdef};
	build_and_run(&t, dir, "decode", "DECODE", ddefs, 6);
	free(h), free(s);

	arena_free(&ar);
	if (failures)
		fprintf(stderr, "gpu_iface_parts: %d check(s) failed\n", failures);
	else
		printf("gpu_iface_parts: all checks passed\n");
	return failures ? 1 : 0;
}
