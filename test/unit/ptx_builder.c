/*
** test/unit/ptx_builder.c: the PTX builder (lowering/ptx) on what sm_90a
** kernels need: vector operands of any width (a wgmma m64n128 f32
** accumulator is 64 registers per thread, m64n256 is 128), b64 matrix
** descriptors, a predicate and immediates in one eight-operand wgmma,
** transaction barriers, a TMA load and store through a tensor map passed by
** value, the proxy fence and setmaxnreg. The printed text is compared line
** by line; then, given ptxas, the module is assembled for sm_90a.
**
** usage: test_ptx_builder text
**        test_ptx_builder ptxas SCRATCH_DIR PTXAS
** The second assembles only; PTXAS "-" (none found at configure time, as on
** CI) is a skip, exit 77, which ctest reports as not run rather than passed.
*/
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../lowering/ptx/ptx.h"

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* One instruction with its operands given inline. */
static void emit(PtxFunc *f, PtxOpcode op, const char *mods, int n, PtxOpnd a, PtxOpnd b, PtxOpnd c,
		 PtxOpnd d)
{
	PtxOpnd o[4] = {a, b, c, d};
	ptx_emit(f, op, mods, n, o);
}

static const PtxOpnd none = {0};

/* "{%f1, %f2, ..., %fN}" as the printer writes an accumulator. */
static char *vec_text(const char *prefix, int first, int n)
{
	char *s = malloc((size_t)n * 16 + 3), *w = s;
	*w++ = '{';
	for (int i = 0; i < n; i++)
		w += sprintf(w, "%s%s%d", i ? ", " : "", prefix, first + i);
	*w++ = '}';
	*w = 0;
	return s;
}

/* A warpgroup kernel: TMA-load a 64x64 bf16 tile of B into shared memory
** behind an mbarrier, run one wgmma of shape m64nNk16 into an N/2-register
** f32 accumulator, store two of its registers and TMA-store the tile back.
** The vector of registers is a local array, overwritten after the emit: the
** instruction must keep its own copy. */
static void build_wgmma(PtxFunc *f, Arena *a, const char *name, int n)
{
	ptx_func_init(f, a, name, 128);
	f->smem_bytes = 1024 + 64 * 64 * 2;
	f->smem_align = 1024;
	const char *out = ptx_param(f, "out", ".u64");
	const char *tmap = ptx_param_bytes(f, "tmap", 64, 128);
	PReg tid = ptx_reg(f, PC_B32), sbase = ptx_reg(f, PC_B32), tile = ptx_reg(f, PC_B32);
	PReg lead = ptx_reg(f, PC_PRED), done = ptx_reg(f, PC_PRED), scd = ptx_reg(f, PC_PRED);
	PReg state = ptx_reg(f, PC_B64), adesc = ptx_reg(f, PC_B64), bdesc = ptx_reg(f, PC_B64);
	PReg optr = ptx_reg(f, PC_B64), tptr = ptx_reg(f, PC_B64);
	PReg coord[2];
	coord[0] = ptx_reg(f, PC_B32);
	coord[1] = ptx_reg(f, PC_B32);
	PReg acc[128];
	for (int i = 0; i < n / 2; i++)
		acc[i] = ptx_reg(f, PC_F32);

	emit(f, PTX_MOV, ".u32", 2, po_r(tid), po_sym("%tid.x"), none, none);
	emit(f, PTX_MOV, ".u32", 2, po_r(sbase), po_sym("smem"), none, none);
	emit(f, PTX_ADD, ".u32", 3, po_r(tile), po_r(sbase), po_i(1024), none);
	emit(f, PTX_MOV, ".u32", 2, po_r(coord[0]), po_i(0), none, none);
	emit(f, PTX_MOV, ".u32", 2, po_r(coord[1]), po_i(64), none, none);
	emit(f, PTX_SETP, ".eq.u32", 3, po_r(lead), po_r(tid), po_i(0), none);
	/* TMA reads the map by its generic address */
	emit(f, PTX_MOV, ".b64", 2, po_r(tptr), po_sym(tmap), none, none);
	emit(f, PTX_CVTA, ".param.u64", 2, po_r(tptr), po_r(tptr), none, none);
	emit(f, PTX_MBAR_INIT, ".shared::cta.b64", 2, po_mem(sbase, 0), po_i(1), none, none);
	ptx_guard(f, lead, 0);
	emit(f, PTX_FENCE_PROXY_ASYNC, ".shared::cta", 0, none, none, none, none);
	emit(f, PTX_BAR, "", 1, po_i(0), none, none, none);
	emit(f, PTX_MBAR_ARRIVE, ".expect_tx.shared::cta.b64", 3, po_r(state), po_mem(sbase, 0),
	     po_i(64 * 64 * 2), none);
	ptx_guard(f, lead, 0);
	emit(f, PTX_CP_BULK_TENSOR, ".2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
	     3, po_mem(tile, 0), po_mem_vec(po_mem(tptr, 0), coord, 2), po_mem(sbase, 0), none);
	ptx_guard(f, lead, 0);
	int wait = ptx_new_label(f);
	ptx_label(f, wait);
	emit(f, PTX_MBAR_TRY_WAIT, ".parity.shared::cta.b64", 3, po_r(done), po_mem(sbase, 0),
	     po_i(0), none);
	emit(f, PTX_BRA, "", 1, po_label(wait), none, none, none);
	ptx_guard(f, done, 1);

	/* descriptors: start address >> 4 in bits 0-13, 128-byte swizzle */
	emit(f, PTX_CVT, ".u64.u32", 2, po_r(bdesc), po_r(tile), none, none);
	emit(f, PTX_SHR, ".u64", 3, po_r(bdesc), po_r(bdesc), po_i(4), none);
	emit(f, PTX_OR, ".b64", 3, po_r(bdesc), po_r(bdesc), po_i(0x4000004000010000ll), none);
	emit(f, PTX_MOV, ".b64", 2, po_r(adesc), po_r(bdesc), none, none);
	emit(f, PTX_SETP, ".ne.u32", 3, po_r(scd), po_r(tid), po_r(tid), none);
	emit(f, PTX_WGMMA_FENCE, ".sync.aligned", 0, none, none, none, none);
	char shape[64];
	snprintf(shape, sizeof shape, ".sync.aligned.m64n%dk16.f32.bf16.bf16", n);
	const char *mods = arena_strdup(a, shape);
	PtxOpnd w[8] = {po_vec(acc, n / 2),
			po_r(adesc),
			po_r(bdesc),
			po_r(scd),
			po_i(1),
			po_i(1),
			po_i(0),
			po_i(1)};
	ptx_emit(f, PTX_WGMMA, mods, 8, w);
	PReg first = acc[0];
	acc[0] = acc[1]; /* the instruction keeps the vector it was given */
	emit(f, PTX_WGMMA_COMMIT, ".sync.aligned", 0, none, none, none, none);
	emit(f, PTX_WGMMA_WAIT, ".sync.aligned", 1, po_i(0), none, none, none);

	emit(f, PTX_LD, ".param.u64", 2, po_r(optr), po_memsym(out, 0), none, none);
	emit(f, PTX_ST, ".global.f32", 2, po_mem(optr, 0), po_r(first), none, none);
	emit(f, PTX_ST, ".global.f32", 2, po_mem(optr, 4), po_r(acc[n / 2 - 1]), none, none);
	emit(f, PTX_FENCE_PROXY_ASYNC, ".shared::cta", 0, none, none, none, none);
	emit(f, PTX_MBAR_EXPECT_TX, ".relaxed.cta.shared::cta.b64", 2, po_mem(sbase, 0), po_i(0),
	     none, none);
	emit(f, PTX_CP_BULK_TENSOR, ".2d.global.shared::cta.tile.bulk_group", 2,
	     po_mem_vec(po_mem(tptr, 0), coord, 2), po_mem(tile, 0), none, none);
	ptx_guard(f, lead, 0);
	emit(f, PTX_CP_BULK_COMMIT, "", 0, none, none, none, none);
	emit(f, PTX_CP_BULK_WAIT, ".read", 1, po_i(0), none, none, none);
	emit(f, PTX_RET, "", 0, none, none, none, none);
}

/* A producer warpgroup's register give-back, as warp-specialised kernels
** start: setmaxnreg needs a kernel of whole warpgroups. */
static void build_setmaxnreg(PtxFunc *f, Arena *a)
{
	ptx_func_init(f, a, "wg_regs", 256);
	emit(f, PTX_SETMAXNREG, ".dec.sync.aligned.u32", 1, po_i(40), none, none, none);
	emit(f, PTX_RET, "", 0, none, none, none, none);
}

/* The whole module as text (the caller frees it). */
static char *module_text(PtxFunc **fs, int n)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *o = open_memstream(&buf, &size);
	if (!o)
		abort();
	ptx_print_module(o, "sm_90a", "8.0", fs, n);
	fclose(o);
	return buf;
}

/* Whether text holds want as a whole line. */
static void expect_line(const char *text, const char *want)
{
	size_t n = strlen(want);
	for (const char *p = text; (p = strstr(p, want)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0))
			return;
	fprintf(stderr, "missing line: %s\n", want);
	failures++;
}

static void check_text(const char *t)
{
	char *v64 = vec_text("%f", 1, 64), *v128 = vec_text("%f", 1, 128), line[2048];
	expect_line(t, ".target sm_90a");
	expect_line(t, ".extern .shared .align 1024 .b8 smem[];");
	expect_line(t, "\t.param .u64 wg128_out,");
	expect_line(t, "\t.param .align 64 .b8 wg128_tmap[128]");
	expect_line(t, "\t.reg .f32 %f<65>;");
	expect_line(t, "\t.reg .f32 %f<129>;");
	expect_line(t, "\t@%p1 mbarrier.init.shared::cta.b64 [%r2], 1;");
	expect_line(t, "\tfence.proxy.async.shared::cta;");
	expect_line(t, "\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r2], 8192;");
	expect_line(t, "\t@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
		       "complete_tx::bytes [%r3], [%rd5, {%r4, %r5}], [%r2];");
	expect_line(t, "\tmov.b64 %rd5, wg128_tmap;");
	expect_line(t, "$L1:");
	expect_line(t, "\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;");
	expect_line(t, "\t@!%p2 bra $L1;");
	expect_line(t, "\twgmma.fence.sync.aligned;");
	snprintf(
	    line, sizeof line,
	    "\twgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 %s, %%rd2, %%rd3, %%p3, 1, "
	    "1, 0, 1;",
	    v64);
	expect_line(t, line);
	snprintf(
	    line, sizeof line,
	    "\twgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 %s, %%rd2, %%rd3, %%p3, 1, "
	    "1, 0, 1;",
	    v128);
	expect_line(t, line);
	expect_line(t, "\twgmma.commit_group.sync.aligned;");
	expect_line(t, "\twgmma.wait_group.sync.aligned 0;");
	expect_line(t, "\tst.global.f32 [%rd4+4], %f64;");
	expect_line(t, "\tst.global.f32 [%rd4+4], %f128;");
	expect_line(t, "\tmbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r2], 0;");
	expect_line(t, "\t@%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group "
		       "[%rd5, {%r4, %r5}], [%r3];");
	expect_line(t, "\tcp.async.bulk.commit_group;");
	expect_line(t, "\tcp.async.bulk.wait_group.read 0;");
	expect_line(t, "\tsetmaxnreg.dec.sync.aligned.u32 40;");
	free(v64);
	free(v128);
}

/* What sm_80 kernels print is unchanged: a 4-wide vector, [reg+off], the
** default 128-byte alignment of the dynamic shared memory. And a tensor map
** named by its symbol keeps the symbol inside the brackets. */
static void check_forms(void)
{
	Arena a;
	arena_init(&a);
	PtxFunc f, *fs[1] = {&f};
	ptx_func_init(&f, &a, "k", 128);
	f.smem_bytes = 256;
	const char *p = ptx_param(&f, "n", ".s32");
	PReg base = ptx_reg(&f, PC_B32), v[4];
	for (int i = 0; i < 4; i++)
		v[i] = ptx_reg(&f, PC_B32);
	emit(&f, PTX_LD, ".param.s32", 2, po_r(base), po_memsym(p, 0), none, none);
	emit(&f, PTX_LD, ".shared.v4.b32", 2, po_vec(v, 4), po_mem(base, 16), none, none);
	emit(&f, PTX_CP_BULK_TENSOR, ".2d.global.shared::cta.tile.bulk_group", 2,
	     po_mem_vec(po_memsym("tm", 0), v, 2), po_mem(base, 0), none, none);
	v[0] = base; /* changing the array after the emit changes nothing */
	char *t = module_text(fs, 1);
	expect_line(t, ".extern .shared .align 128 .b8 smem[];");
	expect_line(t, "\t.param .s32 k_n");
	expect_line(t, "\tld.shared.v4.b32 {%r2, %r3, %r4, %r5}, [%r1+16];");
	expect_line(
	    t, "\tcp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tm, {%r2, %r3}], "
	       "[%r1];");
	free(t);
	arena_free(&a);
}

/* ptxas -arch=sm_90a on the module; its messages go to our stderr. */
static int assemble(const char *ptxas, const char *dir, const char *text)
{
	char ptx[4096], cubin[4096], cmd[12288];
	snprintf(ptx, sizeof ptx, "%s/wgmma.ptx", dir);
	snprintf(cubin, sizeof cubin, "%s/wgmma.cubin", dir);
	FILE *o = fopen(ptx, "w");
	if (!o || fputs(text, o) < 0 || fclose(o) != 0) {
		fprintf(stderr, "cannot write %s\n", ptx);
		return 1;
	}
	snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90a '%s' -o '%s'", ptxas, ptx, cubin);
	int st = system(cmd);
	if (st != 0) {
		fprintf(stderr, "failed (status %d): %s\n", st, cmd);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int text_mode = argc == 2 && !strcmp(argv[1], "text");
	if (!text_mode && !(argc == 4 && !strcmp(argv[1], "ptxas"))) {
		fprintf(stderr, "usage: test_ptx_builder text | ptxas SCRATCH_DIR PTXAS\n");
		return 2;
	}
	Arena a;
	arena_init(&a);
	PtxFunc f1, f2, f3, *fs[3] = {&f1, &f2, &f3};
	build_wgmma(&f1, &a, "wg128", 128);
	build_wgmma(&f2, &a, "wg256", 256);
	build_setmaxnreg(&f3, &a);
	char *text = module_text(fs, 3);
	int rc;
	if (text_mode) {
		check_text(text);
		check_forms();
		rc = failures ? 1 : 0;
		if (failures)
			fprintf(stderr, "the module:\n%s", text);
		printf("ptx_builder: %s\n", failures ? "FAILED" : "ok");
	} else if (!strcmp(argv[3], "-")) {
		printf("ptx_builder_ptxas: SKIPPED: no ptxas was found at configure time\n");
		rc = 77;
	} else {
		mkdir(argv[2], 0777);
		rc = assemble(argv[3], argv[2], text);
		printf("ptx_builder_ptxas: %s\n", rc ? "FAILED" : "ok (sm_90a)");
	}
	free(text);
	arena_free(&a);
	return rc;
}
