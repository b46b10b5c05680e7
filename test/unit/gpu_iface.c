/*
** test/unit/gpu_iface.c: the generated C interface (lowering/gpu/iface.c)
** of a kernel that takes TMA tensor maps, before any target produces one:
** examples/gqa.attn with a hand-made GpuKernelInfo of two maps, K's first
** and Q's second, so that the parameters' order (the info's) differs from
** the encoding's (the tensors'). Checked: the text has the version guard,
** the aligned map array, one attnrt_tensor_map per map with its box, and
** the maps after the magic parameters; the same kernel without maps has
** none of it; the source builds with -Wall -Wextra -Werror; and linked
** with libattnrt against rt_fakecuda (the stand-in libcuda), its launch
** gives the driver the maps in the right order and the right parameter
** slots (gpu_iface_harness.c).
**
** Then a bundle of two targets (GpuImages.alt): an sm_80 module of 64-row
** CTAs without maps and a one-window entry, and an sm_90a module of the
** kernel above. Checked: the text (per-image launch values and images, no
** unused cubin, the image asked for once, maps and the short entry per
** image, NAME_kernel_info), its build, and the harness built with -DBUNDLE
** run on a fake device of compute capability 9.0 and of 8.0.
**
** usage: test_gpu_iface EXAMPLES SCRATCH CC RUNTIME_DIR LIBATTNRT FAKECUDA HARNESS FLAGS
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

/* gpu_iface_source of images im for p into path (its header gqa.h). */
static int put_source(const char *path, const Program *p, const GpuImages *im)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	gpu_iface_source(f, p, im, "gqa.h");
	return fclose(f) ? -1 : 0;
}

/* gpu_iface_source for p into path, with info[0] as the kernel's. */
static int write_source(const char *path, const Program *p, GpuKernelInfo *info)
{
	static const unsigned char cubin[] = "CUBIN90";
	static const char ptx[] = ".version 8.0\n.target sm_90a\n.address_size 64\n";
	Arena a;
	arena_init(&a);
	GpuImages im;
	one_image(&im, &a, "sm_90a", ptx, 90, cubin, sizeof cubin, info);
	int rc = put_source(path, p, &im);
	arena_free(&a);
	return rc;
}

/* gpu_iface_source of a bundle for p (one cascade) into path: an sm_80
** module with first's info (cubins for 80 and 90, PTX) and an sm_90a one
** with second's (one cubin for 90). */
static int write_bundle(const char *path, const Program *p, GpuKernelInfo *first,
			GpuKernelInfo *second)
{
	static const unsigned char c80[] = "CUBIN80", c90[] = "CUBIN90", c90a[] = "CUBIN90A";
	static const char ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n";
	static const char ptx2[] = ".version 8.0\n.target sm_90a\n.address_size 64\n";
	static const int alt_index[1] = {0};
	Arena a;
	arena_init(&a);
	GpuImages im = {0}, alt = {0};
	im.arena = alt.arena = &a;
	im.target = "sm_80";
	im.ptx = ptx;
	im.ptx_size = sizeof ptx - 1;
	im.ncubins = 2;
	im.cubin[0] = (GpuCubin){80, {(unsigned char *)c80, sizeof c80}};
	im.cubin[1] = (GpuCubin){90, {(unsigned char *)c90, sizeof c90}};
	im.info = first;
	alt.target = "sm_90a";
	alt.ptx = ptx2;
	alt.ptx_size = sizeof ptx2 - 1;
	alt.ncubins = 1;
	alt.cubin[0] = (GpuCubin){90, {(unsigned char *)c90a, sizeof c90a}};
	alt.info = second;
	im.alt = &alt;
	im.alt_index = alt_index;
	int rc = put_source(path, p, &im);
	arena_free(&a);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 9) {
		fprintf(stderr, "usage: test_gpu_iface EXAMPLES SCRATCH CC RUNTIME_DIR LIBATTNRT "
				"FAKECUDA HARNESS FLAGS\n");
		return 2;
	}
	const char *examples = argv[1], *scratch = argv[2], *fake = argv[6];
	char *cc = argv[3], *rtdir = argv[4], *lib = argv[5], *harness = argv[7];
	if (mkdir(scratch, 0755) && errno != EEXIST) {
		fprintf(stderr, "cannot create %s: %s\n", scratch, strerror(errno));
		return 1;
	}
	char path[1024];
	Arena ar;
	arena_init(&ar);
	Diag d;
	diag_init(&d, &ar, stderr);
	snprintf(path, sizeof path, "%s/gqa.attn", examples);
	int f = diag_load_file(&d, path);
	Program *p = f < 0 ? NULL : front_compile(&ar, &d, f);
	if (!p || p->cascades.n != 1) {
		fprintf(stderr, "cannot compile %s\n", path);
		return 1;
	}
	const Cascade *c = p->cascades.v[0];
	int q = tensor_index(c, "Q"), k = tensor_index(c, "K");
	CHECK(q >= 0 && k >= 0);

	/* the kernel's parameters before the maps: pointers, strides, dims,
	** params, then the magic ones */
	Arena pa;
	arena_init(&pa);
	int nmagic = gpu_magic_params(plan_build(&pa, c, "sm_90a"));
	int base = nmagic + c->dims.n + c->params.n;
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		base += t->kind == TK_TEMP ? 0 : 1 + t->rank;
	}
	arena_free(&pa);

	GpuKernelInfo info[2];
	memset(info, 0, sizeof info);
	info[0] = (GpuKernelInfo){.smem = 100000, .threads = 384, .block_m = 128, .block_n = 64};
	info[0].ntmaps = 2;
	info[0].tmap[0] = (GpuTmap){k, 4, {1, 1, GPU_BN, GPU_TMAP_INNER}, 0};
	info[0].tmap[1] = (GpuTmap){q, 4, {1, 1, 128, GPU_TMAP_INNER}, 0};

	/* the header and the source, with maps and without */
	snprintf(path, sizeof path, "%s/gqa.h", scratch);
	FILE *h = fopen(path, "w");
	CHECK(h != NULL);
	if (h) {
		gpu_iface_header(h, p);
		CHECK(fclose(h) == 0);
	}
	char src[1024], plain_src[1024];
	snprintf(src, sizeof src, "%s/gqa.c", scratch);
	snprintf(plain_src, sizeof plain_src, "%s/gqa_plain.c", scratch);
	CHECK(write_source(src, p, info) == 0);
	GpuKernelInfo plain[2];
	memcpy(plain, info, sizeof plain);
	plain[0].ntmaps = 0;
	CHECK(write_source(plain_src, p, plain) == 0);

	char *text = slurp(src), *plain_text = slurp(plain_src);
	CHECK(text && plain_text);
	if (!text || !plain_text)
		return 1;
	char want[512];
	expect_text("the generated C", text,
		    "#if !defined(ATTNRT_API_VERSION) || ATTNRT_API_VERSION < 3\n#error");
	expect_text("the generated C", text, "\t_Alignas(64) unsigned char tmaps[2][128];\n");
	snprintf(want, sizeof want,
		 "\t\tstatic const uint32_t box0[4] = {1u, 1u, %du, %du};\n"
		 "\t\tif ((rc = attnrt_tensor_map(tmaps[0], ptrs[%d], 4, shape, s, 2, box0))) "
		 "return rc;\n",
		 GPU_BN, GPU_TMAP_INNER, k);
	const char *enc_k = expect_text("the generated C", text, want);
	snprintf(want, sizeof want,
		 "\t\tstatic const uint32_t box1[4] = {1u, 1u, 128u, %du};\n"
		 "\t\tif ((rc = attnrt_tensor_map(tmaps[1], ptrs[%d], 4, shape, s, 2, box1))) "
		 "return rc;\n",
		 GPU_TMAP_INNER, q);
	const char *enc_q = expect_text("the generated C", text, want);
	/* each after its tensor's check */
	snprintf(want, sizeof want, "\"%s\", \"K\", ptrs[%d], 4, shape, shape, s, 2, 16, names)",
		 c->name, k);
	const char *chk_k = expect_text("the generated C", text, want);
	CHECK(!chk_k || !enc_k || chk_k < enc_k);
	CHECK(!enc_q || !enc_k || enc_q < enc_k);
	const char *magic = expect_text("the generated C", text, "\t\targs[k++] = &gm[i];\n");
	const char *maps =
	    expect_text("the generated C", text,
			"\tfor (int i = 0; i < 2; i++)\n\t\targs[k++] = (void *)&tmaps[i];\n");
	const char *launch = expect_text("the generated C", text, "\treturn attnrt_launch(kern,");
	CHECK(!magic || !maps || !launch || (magic < maps && maps < launch));
	CHECK(strstr(text, "#error \"attnc") == NULL);
	/* without maps, nothing of them */
	CHECK(strstr(plain_text, "tmaps") == NULL && strstr(plain_text, "tensor_map") == NULL &&
	      strstr(plain_text, "ATTNRT_API_VERSION") == NULL);

	/* a map the launcher cannot encode is a compile error of the output */
	GpuKernelInfo bad[2];
	memcpy(bad, info, sizeof bad);
	bad[0].tmap[1].rank = 3;
	snprintf(path, sizeof path, "%s/gqa_bad.c", scratch);
	CHECK(write_source(path, p, bad) == 0);
	char *bad_text = slurp(path);
	CHECK(bad_text && strstr(bad_text, "#error \"attnc: tensor map 1 of gqa names no input or "
					   "output tensor of its rank\""));
	free(bad_text);

	/* it builds as it is, then runs against the stand-in driver */
	char log[1024], obj[1024], exe[1024], inc[1024], def[64];
	snprintf(log, sizeof log, "%s/cc.log", scratch);
	snprintf(obj, sizeof obj, "%s/gqa.o", scratch);
	snprintf(exe, sizeof exe, "%s/harness", scratch);
	snprintf(inc, sizeof inc, "-I%s", scratch);
	snprintf(def, sizeof def, "-DPARAMS_BEFORE_MAPS=%d", base);
	char rtinc[1024];
	snprintf(rtinc, sizeof rtinc, "-I%s", rtdir);
	char *copy;
	char *compile[] = {cc,  "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc,
			   inc, "-c",       src,     "-o",      obj};
	char **cv = command(compile, 11, argv[8], &copy);
	int built = run(cv, log) == 0;
	char **lv;
	CHECK(built);
	free(cv), free(copy);
	char *link[] = {cc,  "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc,  inc,         def,
			obj, harness,    lib,     "-o",      exe,       "-ldl", "-lpthread", "-lm"};
	lv = command(link, 16, argv[8], &copy);
	built = built && run(lv, log) == 0;
	CHECK(built);
	free(lv), free(copy);
	if (built) {
		char *hv[] = {exe, (char *)fake, NULL};
		snprintf(log, sizeof log, "%s/harness.log", scratch);
		CHECK(run(hv, log) == 0);
	}

	/* the bundle: sm_80's 64-row kernel without maps, with a short entry for
	** keys within one window; sm_90a's, the maps' kernel above */
	char bdir[512], bsrc[1024], bobj[1024], bexe[1024], binc[1024], mdef[64];
	snprintf(bdir, sizeof bdir, "%s/bundle", scratch);
	if (mkdir(bdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "cannot create %s: %s\n", bdir, strerror(errno));
		return 1;
	}
	GpuKernelInfo first[2];
	memset(first, 0, sizeof first);
	first[0] = (GpuKernelInfo){.smem = 50000, .threads = 128, .block_m = 64, .block_n = 64};
	first[0].one_window = 1, first[0].window_keys = 8192;
	snprintf(path, sizeof path, "%s/gqa.h", bdir);
	h = fopen(path, "w");
	CHECK(h != NULL);
	if (h) {
		gpu_iface_header_bundle(h, p);
		CHECK(fclose(h) == 0);
	}
	char *bh = slurp(path);
	CHECK(bh && strstr(bh, "typedef struct attn_gpu_kernel_info {") &&
	      strstr(bh, "int gqa_kernel_info(attn_gpu_kernel_info *info);"));
	free(bh);
	snprintf(bsrc, sizeof bsrc, "%s/gqa.c", bdir);
	/* sm_90a's kernel persistent: its launch takes at most a CTA an SM */
	info[0].persistent = 1;
	CHECK(write_bundle(bsrc, p, first, info) == 0);
	char *bt = slurp(bsrc);
	CHECK(bt != NULL);
	if (!bt)
		return 1;
	expect_text("the generated C", bt,
		    "static const AttnrtImageLaunch gqa_launch_values[] = {{90, 100000u, "
		    "384u}};\nstatic const AttnrtImage gqa_images[] = {\n"
		    "\t{80, attn_sm80, sizeof attn_sm80},\n\t{90, attn_sm90a, sizeof attn_sm90a},\n"
		    "\t{0, attn_ptx, sizeof attn_ptx},\n"
		    "\t{ATTNRT_IMAGE_LAUNCH, gqa_launch_values, sizeof gqa_launch_values},\n};\n");
	expect_text("the generated C", bt,
		    "static AttnrtKernel gqa_kernel = {\"gqa_fwd\", gqa_images, sizeof "
		    "gqa_images / sizeof gqa_images[0], 50000u, 128, NULL};\n");
	expect_text("the generated C", bt,
		    "static AttnrtKernel gqa_kernel_short = {\"gqa_fwd_short\", gqa_images, ");
	/* every block runs from the sm_90a cubin on 9.0: no sm_90 one, no
	** shared image list */
	CHECK(!strstr(bt, "attn_sm90[") && !strstr(bt, "attn_images"));
	const char *ask = expect_text("the generated C", bt,
				      "attnrt_kernel_config(&gqa_kernel, &image_sm, NULL, NULL)");
	const char *enc = strstr(bt, "attnrt_tensor_map(");
	CHECK(!ask || !enc || ask < enc);
	CHECK(!ask || !strstr(ask + 1, "attnrt_kernel_config(&gqa_kernel, &image_sm"));
	expect_text("the generated C", bt, "\tif (alt_image) {\n");
	expect_text("the generated C", bt,
		    "\tlong bm = alt_image ? 128L : 64L;\n\tlong gx = (qext + bm - 1) / bm;\n");
	expect_text("the generated C", bt,
		    "\tif (alt_image)\n\t\tfor (int i = 0; i < 2; i++)\n\t\t\targs[k++] = "
		    "(void *)&tmaps[i];\n");
	/* the short entry is sm_80's alone */
	expect_text("the generated C", bt,
		    "\tif (!alt_image && dims[4] <= 8192)\n\t\tkern = &gqa_kernel_short;\n");
	expect_text("the generated C", bt,
		    "\tinfo->target = alt_image ? \"sm_90a\" : \"sm_80\";\n"
		    "\tinfo->block_m = alt_image ? 128u : 64u;\n");
	CHECK(!strstr(bt, "CTA tile:"));
	expect_text("the generated C", bt,
		    "\tunsigned lx = (unsigned)gx, ly = (unsigned)gy;\n\tif (alt_image) {\n"
		    "\t\tint sms = 0;\n");
	expect_text("the generated C", bt,
		    "\t\tlx = (unsigned)(t < sms ? t : sms), ly = 1;\n\t}\n"
		    "\treturn attnrt_launch(kern, lx, ly, 1, stream, args);\n");
	free(bt);
	/* a short entry in both modules, with other windows; in the second's only */
	GpuKernelInfo both[2], only2[2], none1[2];
	memcpy(both, info, sizeof both);
	both[0].one_window = 1, both[0].window_keys = 4096;
	memcpy(only2, both, sizeof only2);
	memcpy(none1, first, sizeof none1);
	none1[0].one_window = 0;
	snprintf(path, sizeof path, "%s/windows.c", bdir);
	CHECK(write_bundle(path, p, first, both) == 0);
	char *wt = slurp(path);
	CHECK(wt && strstr(wt, "\tif (dims[4] <= (alt_image ? 4096L : 8192L))\n"));
	free(wt);
	CHECK(write_bundle(path, p, none1, only2) == 0);
	wt = slurp(path);
	CHECK(wt && strstr(wt, "\tif (alt_image && dims[4] <= 4096)\n"));
	free(wt);

	/* the bundle builds, and its harness runs on a 9.0 and an 8.0 device */
	snprintf(bobj, sizeof bobj, "%s/gqa.o", bdir);
	snprintf(bexe, sizeof bexe, "%s/harness", bdir);
	snprintf(binc, sizeof binc, "-I%s", bdir);
	snprintf(mdef, sizeof mdef, "-DMAGIC_PARAMS=%d", nmagic);
	char *bcompile[] = {cc,   "-std=c11", "-Wall", "-Wextra", "-Werror", rtinc,
			    binc, "-c",       bsrc,    "-o",      bobj};
	cv = command(bcompile, 11, argv[8], &copy);
	built = run(cv, log) == 0;
	CHECK(built);
	free(cv), free(copy);
	char *blink[] = {cc,   "-std=c11", "-Wall", "-Wextra",  "-Werror",   rtinc,
			 binc, def,        mdef,    "-DBUNDLE", bobj,        harness,
			 lib,  "-o",       bexe,    "-ldl",     "-lpthread", "-lm"};
	lv = command(blink, 18, argv[8], &copy);
	built = built && run(lv, log) == 0;
	CHECK(built);
	free(lv), free(copy);
	for (int dev = 0; built && dev < 2; dev++) {
		char *hv[] = {bexe, (char *)fake, NULL};
		setenv("FAKECUDA_CC", dev ? "80" : "90", 1);
		snprintf(log, sizeof log, "%s/harness-sm%s.log", bdir, dev ? "80" : "90");
		CHECK(run(hv, log) == 0);
	}
	unsetenv("FAKECUDA_CC");

	free(text), free(plain_text);
	arena_free(&ar);
	if (failures)
		fprintf(stderr, "gpu_iface: %d check(s) failed\n", failures);
	else
		printf("gpu_iface: all checks passed\n");
	return failures ? 1 : 0;
}
