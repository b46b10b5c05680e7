/*
** lowering/gpu/iface.c: the C interface of generated GPU kernels.
** For a file x.attn, x.h declares per cascade a typed argument struct and a
** launch function; x.c embeds the target's cubins and the PTX (for
** newer GPUs), validates arguments through libattnrt and launches on the
** caller's stream. One .c file plus -lattnrt links into any C program.
** A bundle of two targets (GpuImages.alt) embeds the second target's
** cubins too: each cascade the second target took has images of its own,
** in which they replace the first's of the same compute capability, with
** their launch values (AttnrtImageLaunch); its launcher asks the runtime
** which image runs and sets rows per CTA and tensor maps by it, and
** NAME_kernel_info tells which.
*/
#include <string.h>

#include "gpu.h"
#include "iface.h"

/* Integer expressions over dims, as C over `dims[]`. */
static void dim_expr(FILE *o, const Expr *e)
{
	switch (e->kind) {
	case EX_INT: fprintf(o, "%ldL", e->ival); break;
	case EX_DIM:
		if (e->dim->fixed)
			fprintf(o, "%ldL", e->dim->fixed);
		else
			fprintf(o, "dims[%d]", e->dim->id);
		break;
	case EX_BINOP:
		fputc('(', o);
		dim_expr(o, e->args[0]);
		fprintf(o, " %s ", op_spelling((Op)e->op));
		dim_expr(o, e->args[1]);
		fputc(')', o);
		break;
	default: fputs("0L", o); break;
	}
}

/* The declarations of one cascade; with info (a bundle), NAME_kernel_info's
** too. */
static void decls(FILE *o, const Cascade *c, int info)
{
	fprintf(o,
		"/* %s on the GPU. Tensor pointers are device pointers; strides are in\n"
		"** elements (NULL: row-major contiguous); the last dimension must be\n"
		"** contiguous. */\n",
		c->name);
	fprintf(o, "typedef struct %s_gpu_args {\n", c->name);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		fprintf(o, "\t%svoid *%s; /* %s, %d dims */\n", t->kind == TK_IN ? "const " : "",
			t->name, dtype_name(t->dtype), t->rank);
		fprintf(o, "\tconst int64_t *%s_strides;\n", t->name);
	}
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tlong %s;\n", ((Dim *)c->dims.v[i])->name);
	for (int i = 0; i < c->params.n; i++) {
		const Param *p = c->params.v[i];
		fprintf(o, "\t%s %s;\n", p->type == VT_INT ? "int32_t" : "float", p->name);
	}
	fprintf(o, "} %s_gpu_args;\n", c->name);
	fprintf(o, "/* Sets fixed dims and param defaults (set the other dims first). */\n");
	fprintf(o, "void %s_gpu_defaults(%s_gpu_args *a);\n", c->name, c->name);
	fprintf(o, "/* Checks the arguments and launches on stream (a CUstream, NULL: the\n"
		   "** default stream) without synchronising. Returns 0 or an ATTNRT_ERR_* code;\n"
		   "** attnrt_last_error() says why. */\n");
	fprintf(o, "int %s_launch(const %s_gpu_args *a, void *stream);\n", c->name, c->name);
	if (info) {
		fprintf(o,
			"/* Which image of %s's kernel runs on the current device, and how (the\n"
			"** image is loaded as the first launch would). Returns 0 or an\n"
			"** ATTNRT_ERR_* code. */\n",
			c->name);
		fprintf(o, "int %s_kernel_info(attn_gpu_kernel_info *info);\n", c->name);
	}
	fprintf(o, "/* The same with arrays in cascade order (tensors: in/out only, temporaries\n"
		   "** NULL), for harnesses; and the shape of tensor i for given dims. */\n");
	fprintf(o,
		"int %s_launch_generic(void *const *ptrs, const int64_t *const *strides, const "
		"long *dims, const double *params, void *stream);\n",
		c->name);
	fprintf(o, "void %s_shape(int tensor, const long *dims, int64_t *shape);\n", c->name);
}

/* The include guard names the file's cascades, whose names its functions
** carry too: two generated headers can be included in one file exactly when
** their declarations do not collide. */
static void guard_name(FILE *o, const Program *prog)
{
	fputs("ATTN_GEN_GPU", o);
	for (int i = 0; i < prog->cascades.n; i++)
		fprintf(o, "_%s", ((const Cascade *)prog->cascades.v[i])->name);
	fputs("_H", o);
}

/* What NAME_kernel_info reports: one type for every bundle's header that a
** file includes, under a guard that names its layout's version. */
static void kernel_info_type(FILE *o)
{
	fputs("#ifndef ATTN_GPU_KERNEL_INFO_V1\n#define ATTN_GPU_KERNEL_INFO_V1\n"
	      "/* What runs on the current device (NAME_kernel_info). */\n"
	      "typedef struct attn_gpu_kernel_info {\n"
	      "\tconst char *target;  /* the --target the image's code was compiled for */\n"
	      "\tint sm;               /* the image: a cubin's compute capability times ten,\n"
	      "\t                      ** 0: the PTX, compiled by the driver */\n"
	      "\tunsigned threads;     /* threads per CTA */\n"
	      "\tunsigned smem_bytes;  /* dynamic shared memory per CTA */\n"
	      "\tunsigned block_m;     /* query rows per CTA (the grid's x: the query rows\n"
	      "\t                      ** over block_m, rounded up) */\n"
	      "\tunsigned block_n;     /* keys per tile */\n"
	      "} attn_gpu_kernel_info;\n#endif\n",
	      o);
}

/* C11 and C++ alike: the declarations have C linkage in C++. */
static void header(FILE *o, const Program *prog, int bundle)
{
	fputs("/* Generated by attnc. Do not edit. Link with -lattnrt. */\n#ifndef ", o);
	guard_name(o, prog);
	fputs("\n#define ", o);
	guard_name(o, prog);
	fputs("\n#include <stdint.h>\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n", o);
	if (bundle)
		kernel_info_type(o);
	for (int i = 0; i < prog->cascades.n; i++)
		decls(o, prog->cascades.v[i], bundle);
	fputs("#ifdef __cplusplus\n}\n#endif\n#endif\n", o);
}

/* One target's header has what it had before bundles. */
void gpu_iface_header(FILE *o, const Program *prog)
{
	header(o, prog, 0);
}

/* A bundle's launchers choose per image: NAME_kernel_info says which. */
void gpu_iface_header_bundle(FILE *o, const Program *prog)
{
	header(o, prog, 1);
}

static void bytes(FILE *o, const char *name, const unsigned char *d, size_t n)
{
	fprintf(o, "static const unsigned char %s[%zu] __attribute__((aligned(16))) = {", name,
		n ? n : 1);
	for (size_t i = 0; i < n; i++)
		fprintf(o, "%s%u,", i % 24 ? "" : "\n\t", d[i]);
	fputs("\n};\n", o);
}

/* Whether tensor map k of a kernel names an input or output tensor of
** the cascade, of that tensor's rank: the launcher encodes nothing else. */
static int tmap_ok(const Cascade *c, const GpuKernelInfo *info, int k)
{
	const GpuTmap *m = &info->tmap[k];
	if (m->tensor < 0 || m->tensor >= c->tensors.n)
		return 0;
	const Tensor *t = c->tensors.v[m->tensor];
	return t->kind != TK_TEMP && m->rank == t->rank && m->rank >= 1 &&
	       m->rank <= GPU_TMAP_MAX_RANK;
}

/* The encoding of tensor i's maps (GpuKernelInfo.tmap), emitted in its
** check block where its pointer, shape and strides (s: the caller's, else
** contiguous) are at hand, after the check, whose message names the
** dimensions and so comes first. The box is the lowering's, in tensor
** order. */
static void tmap_encode(FILE *o, const Cascade *c, const GpuKernelInfo *info, int ntmaps, int i)
{
	const Tensor *t = c->tensors.v[i];
	for (int k = 0; k < ntmaps; k++) {
		const GpuTmap *m = &info->tmap[k];
		if (m->tensor != i || !tmap_ok(c, info, k))
			continue;
		fprintf(o, "\t\tstatic const uint32_t box%d[%d] = {", k, m->rank);
		for (int d = 0; d < m->rank; d++)
			fprintf(o, "%s%uu", d ? ", " : "", m->box[d]);
		fputs("};\n", o);
		fprintf(o,
			"\t\tif ((rc = attnrt_tensor_map(tmaps[%d], ptrs[%d], %d, shape, s, %d, "
			"box%d))) return rc;\n",
			k, i, t->rank, dtype_size(t->dtype), k);
	}
}

/* The shape, contiguous strides and strides as launched (s) of tensor i,
** in a block of its own that the caller closes, entered where cond holds
** (NULL: always). */
static void tensor_block(FILE *o, const Cascade *c, int i, const char *cond)
{
	const Tensor *t = c->tensors.v[i];
	if (cond)
		fprintf(o, "\tif (%s) {\n", cond);
	else
		fputs("\t{\n", o);
	fprintf(o, "\t\tint64_t shape[%d], def[%d];\n\t\t%s_shape(%d, dims, shape);\n", t->rank + 1,
		t->rank + 1, c->name, i);
	fprintf(o,
		"\t\tfor (int d = %d; d >= 0; d--) def[d] = d == %d ? 1 : def[d + 1] * "
		"shape[d + 1];\n",
		t->rank - 1, t->rank - 1);
	fprintf(o, "\t\tconst int64_t *s = strides && strides[%d] ? strides[%d] : def;\n", i, i);
}

/* The identifier of the second module's cubin k: attn_ and its target's
** name in letters and digits, and the compute capability where it has
** several cubins. */
static void alt_cubin_name(char *buf, size_t size, const GpuImages *alt, int k)
{
	size_t w = (size_t)snprintf(buf, size, "attn_");
	for (const char *t = alt->target; *t && w + 1 < size; t++)
		if ((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') ||
		    (*t >= '0' && *t <= '9'))
			buf[w++] = *t;
	buf[w] = 0;
	if (alt->ncubins > 1)
		snprintf(buf + w, size - w, "_%d", alt->cubin[k].sm);
}

/* Whether the second module has a cubin for compute capability sm. */
static int alt_has(const GpuImages *alt, int sm)
{
	for (int k = 0; alt && k < alt->ncubins; k++)
		if (alt->cubin[k].sm == sm)
			return 1;
	return 0;
}

/* Whether some cascade keeps the first module's images (the second target
** refused it). */
static int some_refused(const Program *prog, const GpuImages *im)
{
	for (int i = 0; i < prog->cascades.n; i++)
		if (!im->alt || im->alt_index[i] < 0)
			return 1;
	return 0;
}

/* A cascade of a bundle that the second target took: its images (the
** first module's cubins, the second's in place of those of the same
** compute capability, the first's PTX) and the second's launch values. */
static void alt_images(FILE *o, const char *n, const GpuImages *im, const GpuKernelInfo *ai)
{
	const GpuImages *alt = im->alt;
	char name[64];
	fprintf(o, "\nstatic const AttnrtImageLaunch %s_launch_values[] = {", n);
	for (int k = 0; k < alt->ncubins; k++)
		fprintf(o, "%s{%d, %uu, %uu}", k ? ", " : "", alt->cubin[k].sm, ai->smem,
			ai->threads);
	fputs("};\n", o);
	fprintf(o, "static const AttnrtImage %s_images[] = {\n", n);
	for (int k = 0; k < im->ncubins; k++)
		if (!alt_has(alt, im->cubin[k].sm))
			fprintf(o, "\t{%d, attn_sm%d, sizeof attn_sm%d},\n", im->cubin[k].sm,
				im->cubin[k].sm, im->cubin[k].sm);
	for (int k = 0; k < alt->ncubins; k++) {
		alt_cubin_name(name, sizeof name, alt, k);
		fprintf(o, "\t{%d, %s, sizeof %s},\n", alt->cubin[k].sm, name, name);
	}
	fprintf(o,
		"\t{0, attn_ptx, sizeof attn_ptx},\n\t{ATTNRT_IMAGE_LAUNCH, %s_launch_values, "
		"sizeof %s_launch_values},\n};\n",
		n, n);
}

/* C for "the image that runs is one of the second module's", from the
** chosen image's sm in var. */
static void alt_test(FILE *o, const GpuImages *alt, const char *var)
{
	for (int k = 0; k < alt->ncubins; k++)
		fprintf(o, "%s%s == %d", k ? " || " : "", var, alt->cubin[k].sm);
}

/* The tensor maps of kernel info, where cond holds: each encoded in a
** block of its tensor's. */
static void tmap_blocks(FILE *o, const Cascade *c, const GpuKernelInfo *info, int ntmaps,
			const char *cond)
{
	for (int i = 0; i < c->tensors.n; i++) {
		int any = 0;
		for (int k = 0; k < ntmaps; k++)
			any |= info->tmap[k].tensor == i && tmap_ok(c, info, k);
		if (!any)
			continue;
		tensor_block(o, c, i, cond);
		tmap_encode(o, c, info, ntmaps, i);
		fputs("\t}\n", o);
	}
}

/* Checks that a kernel's tensor maps are ones the launcher can encode, and
** how many it encodes. */
static int tmaps_checked(FILE *o, const Cascade *c, const GpuKernelInfo *info)
{
	int ntmaps = info->ntmaps;
	if (ntmaps > GPU_MAX_TMAPS) {
		fprintf(o, "#error \"attnc: %s takes %d tensor maps, more than %d\"\n", c->name,
			ntmaps, GPU_MAX_TMAPS);
		ntmaps = GPU_MAX_TMAPS;
	}
	return ntmaps;
}

/* NAME_kernel_info of a bundle's cascade: the chosen image's sm and launch
** values from the runtime, the rest from the module that holds it. */
static void kernel_info_fn(FILE *o, const char *n, const GpuImages *im, int idx,
			   const GpuKernelInfo *ai)
{
	const GpuKernelInfo *pi = &im->info[idx];
	fprintf(o, "\nint %s_kernel_info(attn_gpu_kernel_info *info)\n{\n", n);
	fprintf(o,
		"\tint sm = 0;\n\tunsigned smem = 0, threads = 0;\n\tif (!info)\n\t\treturn "
		"attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"attnrt: %s_kernel_info: NULL info\");\n"
		"\tint rc = attnrt_kernel_config(&%s_kernel, &sm, &smem, &threads);\n"
		"\tif (rc)\n\t\treturn rc;\n",
		n, n);
	if (ai) {
		fputs("\tint alt_image = ", o);
		alt_test(o, im->alt, "sm");
		fputs(";\n", o);
		fprintf(o, "\tinfo->target = alt_image ? \"%s\" : \"%s\";\n", im->alt->target,
			im->target);
		fprintf(o, "\tinfo->block_m = alt_image ? %uu : %uu;\n", ai->block_m, pi->block_m);
		fprintf(o, "\tinfo->block_n = alt_image ? %uu : %uu;\n", ai->block_n, pi->block_n);
	} else {
		fprintf(o, "\tinfo->target = \"%s\";\n", im->target);
		fprintf(o, "\tinfo->block_m = %uu;\n", pi->block_m);
		fprintf(o, "\tinfo->block_n = %uu;\n", pi->block_n);
	}
	fputs("\tinfo->sm = sm;\n\tinfo->threads = threads;\n\tinfo->smem_bytes = smem;\n"
	      "\treturn ATTNRT_OK;\n}\n",
	      o);
}

/* One cascade's launch code: shapes, checks, parameters, grid. In a bundle,
** a cascade that the second target took (ai, its info there) launches by
** the image that runs: the rows per CTA, the grid and its magic values,
** the tensor maps (encoded only for an image that takes them) and the
** short entry are that image's module's. */
static void launcher(FILE *o, const Cascade *c, const GpuImages *im, int idx)
{
	Arena a;
	arena_init(&a);
	Plan *p = plan_build(&a, c, im->target);
	KernelShape sh;
	int shaped = gpu_shape(&a, p, &sh) == NULL;
	const char *n = c->name;
	const GpuKernelInfo *ai =
	    im->alt && im->alt_index[idx] >= 0 ? &im->alt->info[im->alt_index[idx]] : NULL;
	const char *imgs = "attn_images";
	if (ai) {
		alt_images(o, n, im, ai);
		imgs = arena_printf(&a, "%s_images", n);
	}
	int short1 = im->info[idx].one_window, short2 = ai && ai->one_window;
	fprintf(o,
		"\nstatic AttnrtKernel %s_kernel = {\"%s_fwd\", %s, sizeof %s / "
		"sizeof %s[0], %uu, %u, NULL};\n",
		n, n, imgs, imgs, imgs, im->info[idx].smem, im->info[idx].threads);
	if (short1 || short2)
		fprintf(o,
			"static AttnrtKernel %s_kernel_short = {\"%s_fwd_short\", %s, "
			"sizeof %s / sizeof %s[0], %uu, %u, NULL};\n",
			n, n, imgs, imgs, imgs, im->info[idx].smem, im->info[idx].threads);
	fprintf(o,
		"\nvoid %s_shape(int tensor, const long *dims, int64_t *shape)\n{\n\tswitch "
		"(tensor) {\n",
		n);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		fprintf(o, "\tcase %d:\n", i);
		for (int k = 0; k < t->rank; k++) {
			fprintf(o, "\t\tshape[%d] = ", k);
			dim_expr(o, t->shape[k]);
			fputs(";\n", o);
		}
		fputs("\t\tbreak;\n", o);
	}
	fputs("\tdefault: break;\n\t}\n}\n", o);
	fprintf(o,
		"\nint %s_launch_generic(void *const *ptrs, const int64_t *const *strides, const "
		"long *dims, const double *params, void *stream)\n{\n",
		n);
	fprintf(o, "\tstatic const char *const dim_names[] = {");
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\"%s\", ", ((Dim *)c->dims.v[i])->name);
	fprintf(o, "NULL};\n");
	fprintf(o, "\tvoid *args[%d];\n\tint k = 0, rc;\n", 256);
	/* TMA tensor maps, by value after the magic parameters (target.h); a
	** map the launcher cannot encode is the lowering's error, made loud */
	const GpuKernelInfo *info = &im->info[idx];
	int ntmaps = tmaps_checked(o, c, info), ntmaps2 = ai ? tmaps_checked(o, c, ai) : 0;
	if (ntmaps > 0 || ntmaps2 > 0)
		fprintf(o, "\t_Alignas(64) unsigned char tmaps[%d][128];\n",
			ntmaps > ntmaps2 ? ntmaps : ntmaps2);
	for (int k = 0; k < ntmaps + ntmaps2; k++)
		if (!tmap_ok(c, k < ntmaps ? info : ai, k < ntmaps ? k : k - ntmaps))
			fprintf(o,
				"#error \"attnc: tensor map %d of %s names no input or output "
				"tensor of its rank\"\n",
				k < ntmaps ? k : k - ntmaps, n);
	fprintf(
	    o,
	    "\tuint64_t ptr[%d];\n\tint64_t st[%d], dm[%d];\n\tfloat pf[%d];\n\tint32_t pi[%d];\n",
	    c->tensors.n + 1, c->tensors.n * 8 + 1, c->dims.n + 1, c->params.n + 1,
	    c->params.n + 1);
	for (int i = 0; i < c->dims.n; i++) {
		const Dim *d = c->dims.v[i];
		if (d->fixed)
			fprintf(o,
				"\tif ((rc = attnrt_check_dim(\"%s\", \"%s\", dims[%d], %ld))) "
				"return rc;\n",
				n, d->name, i, d->fixed);
	}
	/* the kernels convert index differences to float through 32 bits */
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o,
			"\tif (dims[%d] < 0 || dims[%d] > 2147483647L - (1L << 20))\n\t\treturn "
			"attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"attnrt: %s: %s = %%ld is out of "
			"range (0 to 2^31 - 2^20)\", dims[%d]);\n",
			i, i, n, ((const Dim *)c->dims.v[i])->name, i);
	/* pointers first, then strides, then dims, then params: the kernel ABI */
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		/* tiles copied to shared memory in 16-byte chunks need 16-byte rows;
		** other reads are per element */
		int tiled = 0;
		for (int k = 0; shaped && k < sh.nqk; k++)
			tiled |= sh.qk[k].a->tensor->id == i || sh.qk[k].b->tensor->id == i;
		for (int k = 0; shaped && k < sh.nvreads; k++)
			tiled |= sh.vreads[k]->tensor->id == i;
		for (int k = 0; k < ntmaps; k++)
			tiled |= info->tmap[k].tensor == i;
		int align = tiled ? 16 : dtype_size(t->dtype);
		tensor_block(o, c, i, NULL);
		fprintf(o, "\t\tconst char *names[%d] = {", t->rank + 1);
		for (int k = 0; k < t->rank; k++) {
			fputs("\"", o);
			expr_print(o, t->shape[k], NULL);
			fputs("\", ", o);
		}
		fputs("NULL};\n", o);
		fprintf(o,
			"\t\tif ((rc = attnrt_check_tensor_named(\"%s\", \"%s\", ptrs[%d], %d, "
			"shape, shape, s, %d, %d, names))) return rc;\n",
			n, t->name, i, t->rank, dtype_size(t->dtype), align);
		/* a bundle's maps are the image's that runs: encoded below */
		if (!ai)
			tmap_encode(o, c, info, ntmaps, i);
		fprintf(o, "\t\tptr[%d] = (uint64_t)(uintptr_t)ptrs[%d];\n", i, i);
		fprintf(o, "\t\tfor (int d = 0; d < %d; d++) st[%d + d] = s[d];\n\t}\n", t->rank,
			i * 8);
	}
	for (int i = 0; i < c->tensors.n; i++)
		if (((Tensor *)c->tensors.v[i])->kind != TK_TEMP)
			fprintf(o, "\targs[k++] = &ptr[%d];\n", i);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind == TK_TEMP)
			continue;
		for (int k = 0; k < t->rank; k++)
			fprintf(o, "\targs[k++] = &st[%d];\n", i * 8 + k);
	}
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tdm[%d] = dims[%d];\n\targs[k++] = &dm[%d];\n", i, i, i);
	for (int i = 0; i < c->params.n; i++) {
		const Param *pa = c->params.v[i];
		if (pa->type == VT_INT)
			fprintf(o, "\tpi[%d] = (int32_t)params[%d];\n\targs[k++] = &pi[%d];\n", i,
				i, i);
		else
			fprintf(o, "\tpf[%d] = (float)params[%d];\n\targs[k++] = &pf[%d];\n", i, i,
				i);
	}
	fputs("\t(void)k; (void)dim_names; (void)pi; (void)pf;\n", o);
	if (ai) {
		/* one question to the runtime, after the checks (which need no
		** driver): which image runs, and so whose rows and maps */
		fprintf(o,
			"\t/* the image that runs on this device decides the rows per CTA and the "
			"tensor maps */\n\tint image_sm = 0;\n\tif ((rc = "
			"attnrt_kernel_config(&%s_kernel, &image_sm, NULL, NULL)))\n\t\treturn "
			"rc;\n\tint alt_image = ",
			n);
		alt_test(o, im->alt, "image_sm");
		fputs(";\n", o);
		tmap_blocks(o, c, info, ntmaps, "!alt_image");
		tmap_blocks(o, c, ai, ntmaps2, "alt_image");
	}
	/* grid: x = query tiles, y = the other grid indices */
	int qc = -1;
	fputs("\tlong gy = 1;\n", o);
	for (int k = 0; k < p->nclasses; k++) {
		if (!p->classes[k].grid)
			continue;
		if (p->classes[k].qtile) {
			qc = k;
			continue;
		}
		fputs("\tgy *= ", o);
		dim_expr(o, p->classes[k].extent);
		fputs(";\n", o);
	}
	fputs("\tlong qext = ", o);
	if (qc >= 0)
		dim_expr(o, p->classes[qc].extent);
	else
		fputs("1", o);
	unsigned bm = im->info[idx].block_m;
	long pk = im->info[idx].pack;
	if (ai) {
		/* the rows per CTA of the image that runs: a variable */
		fprintf(o, ";\n\tlong bm = alt_image ? %uL : %uL", ai->block_m, bm);
		if (pk > 0)
			fprintf(o, ";\n\tlong grp = %ldL", pk);
		else if (pk)
			fprintf(o, ";\n\tlong grp = dims[%ld]", -pk - 1);
		if (pk)
			fprintf(
			    o,
			    ";\n\tif (grp < 1)\n\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, "
			    "\"attnrt: %s: the query heads per K/V head must be positive\");\n"
			    "\tlong gx = (qext + grp - 1) / grp * ((grp + bm - 1) / bm);\n",
			    n);
		else
			fputs(";\n\tlong gx = (qext + bm - 1) / bm;\n", o);
		fprintf(o,
			"\t/* CTA tiles: the %s image's %u query rows x %u keys, the others' %u x "
			"%u */\n",
			im->alt->target, ai->block_m, ai->block_n, bm, im->info[idx].block_n);
	} else if (pk) {
		/* GQA packing: each group of G rows (one K/V head) in its own tiles */
		if (pk > 0)
			fprintf(o, ";\n\tlong grp = %ldL", pk);
		else
			fprintf(o, ";\n\tlong grp = dims[%ld]", -pk - 1);
		fprintf(o,
			";\n\tif (grp < 1)\n\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, "
			"\"attnrt: %s: the query heads per K/V head must be positive\");\n"
			"\tlong gx = (qext + grp - 1) / grp * ((grp + %u - 1) / %u);\n",
			n, bm, bm);
	} else {
		fprintf(o, ";\n\tlong gx = (qext + %u - 1) / %u;\n", bm, bm);
	}
	/* benchmarks read the tile shape from here (bench/anchors.py); a
	** bundle's depends on the device: NAME_kernel_info tells it */
	if (!ai)
		fprintf(o, "\t/* CTA tile: %u query rows x %u keys */\n", bm,
			im->info[idx].block_n);
	fprintf(o,
		"\tif (gy > 65535 || gx > 2147483647L || gx * gy > 2147483647L)\n\t\treturn "
		"attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"attnrt: %s: the grid (%%ld x %%ld blocks) "
		"is too large\", gx, gy);\n",
		n);
	/* the grid decode's divisors as magic pairs, after the cascade's params
	** (lowering/gpu/gpu.h, GPU_MAGIC_*): the launch order's groups of
	** G = ceil(256 / gx) values of the rest, then each grid class's extent */
	int nm = gpu_magic_params(p);
	fprintf(o, "\tuint32_t gm[%d];\n\t{\n", nm);
	fputs("\t\tuint64_t nx = gx > 0 ? (uint64_t)gx : 1, G = (nx + 255) / nx, GT = G * nx;\n"
	      "\t\tuint64_t ng = ((uint64_t)gy + G - 1) / G, GL = (uint64_t)gy - (ng - 1) * G;\n"
	      "\t\tgm[0] = (uint32_t)G;\n\t\tgm[1] = (uint32_t)GT;\n"
	      "\t\tattnrt_divmagic(GT, &gm[2], &gm[3]);\n"
	      "\t\tattnrt_divmagic(G, &gm[4], &gm[5]);\n"
	      "\t\tattnrt_divmagic(GL, &gm[6], &gm[7]);\n",
	      o);
	for (int k = 0, m = GPU_MAGIC_FIXED; k < p->nclasses; k++) {
		if (!p->classes[k].grid || p->classes[k].qtile)
			continue;
		fputs("\t\tattnrt_divmagic((uint64_t)(", o);
		dim_expr(o, p->classes[k].extent);
		fprintf(o, "), &gm[%d], &gm[%d]);\n", m, m + 1);
		m += 2;
	}
	fprintf(o, "\t}\n\tfor (int i = 0; i < %d; i++)\n\t\targs[k++] = &gm[i];\n", nm);
	if (ntmaps > 0 && !ai)
		fprintf(o, "\tfor (int i = 0; i < %d; i++)\n\t\targs[k++] = (void *)&tmaps[i];\n",
			ntmaps);
	for (int second = 0; ai && second < 2; second++)
		if (second ? ntmaps2 : ntmaps)
			fprintf(
			    o,
			    "\tif (%salt_image)\n\t\tfor (int i = 0; i < %d; i++)\n\t\t\targs[k++] "
			    "= (void *)&tmaps[i];\n",
			    second ? "" : "!", second ? ntmaps2 : ntmaps);
	fprintf(o, "\tAttnrtKernel *kern = &%s_kernel;\n", n);
	if ((short1 || short2) && p->stream >= 0) {
		/* keys within the tile table's first window: no refill (in a
		** bundle, where the module of the image that runs has the entry) */
		fputs("\tif (", o);
		if (ai && !short2)
			fputs("!alt_image && ", o);
		else if (ai && !short1)
			fputs("alt_image && ", o);
		dim_expr(o, p->classes[p->stream].extent);
		if (short1 && short2 && ai->window_keys != im->info[idx].window_keys)
			fprintf(o, " <= (alt_image ? %uL : %uL)", ai->window_keys,
				im->info[idx].window_keys);
		else
			fprintf(o, " <= %u", short1 ? im->info[idx].window_keys : ai->window_keys);
		fprintf(o, ")\n\t\tkern = &%s_kernel_short;\n", n);
	}
	fputs("\treturn attnrt_launch(kern, (unsigned)gx, (unsigned)gy, 1, stream, args);\n}\n", o);
	/* typed API */
	fprintf(o, "\nvoid %s_gpu_defaults(%s_gpu_args *a)\n{\n", n, n);
	for (int i = 0; i < c->dims.n; i++) {
		const Dim *d = c->dims.v[i];
		if (d->fixed)
			fprintf(o, "\ta->%s = %ld;\n", d->name, d->fixed);
	}
	fprintf(o, "\tlong dims[%d];\n", c->dims.n + 1);
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tdims[%d] = a->%s;\n", i, ((Dim *)c->dims.v[i])->name);
	fputs("\t(void)dims;\n", o);
	for (int i = 0; i < c->params.n; i++) {
		const Param *pa = c->params.v[i];
		if (!pa->deflt)
			continue;
		/* defaults are computed like the CPU back end does: in double */
		fprintf(o, "\ta->%s = (%s)(", pa->name, pa->type == VT_INT ? "int32_t" : "float");
		if (pa->deflt->kind == EX_CALL && pa->deflt->op == FN_RSQRT) {
			fputs("1.0 / sqrt((double)", o);
			const Expr *x = pa->deflt->args[0];
			dim_expr(o, x->kind == EX_CAST ? x->args[0] : x);
			fputs(")", o);
		} else if (pa->deflt->kind == EX_FLOAT) {
			fprintf(o, "%.17g", pa->deflt->fval);
		} else if (pa->deflt->kind == EX_INT) {
			fprintf(o, "%ld", pa->deflt->ival);
		} else {
			fputs("0 /* set by the caller */", o);
		}
		fputs(");\n", o);
	}
	fputs("}\n", o);
	fprintf(o, "\nint %s_launch(const %s_gpu_args *a, void *stream)\n{\n", n, n);
	fprintf(o,
		"\tvoid *ptrs[%d] = {0};\n\tconst int64_t *strides[%d] = {0};\n\tlong "
		"dims[%d];\n\tdouble params[%d];\n",
		c->tensors.n + 1, c->tensors.n + 1, c->dims.n + 1, c->params.n + 1);
	for (int i = 0; i < c->tensors.n; i++) {
		const Tensor *t = c->tensors.v[i];
		if (t->kind != TK_TEMP)
			fprintf(o, "\tptrs[%d] = (void *)a->%s;\n\tstrides[%d] = a->%s_strides;\n",
				i, t->name, i, t->name);
	}
	for (int i = 0; i < c->dims.n; i++)
		fprintf(o, "\tdims[%d] = a->%s;\n", i, ((Dim *)c->dims.v[i])->name);
	for (int i = 0; i < c->params.n; i++)
		fprintf(o, "\tparams[%d] = a->%s;\n", i, ((Param *)c->params.v[i])->name);
	fputs("\t(void)params;\n", o);
	fprintf(o, "\treturn %s_launch_generic(ptrs, strides, dims, params, stream);\n}\n", n);
	if (im->alt)
		kernel_info_fn(o, n, im, idx, ai);
	arena_free(&a);
}

void gpu_iface_source(FILE *o, const Program *prog, const GpuImages *im, const char *header_name)
{
	fputs("/* Generated by attnc. Do not edit. Link with -lattnrt. */\n", o);
	fputs("#include <math.h>\n#include <stdint.h>\n#include <attnrt.h>\n", o);
	fprintf(o, "#include \"%s\"\n", header_name);
	/* one module holds every kernel of the file: machine code per compute
	** capability, and the PTX that newer GPUs' drivers compile at load time */
	bytes(o, "attn_ptx", (const unsigned char *)im->ptx, im->ptx_size + 1);
	/* in a bundle, only the cubins some cascade's images name */
	const GpuImages *alt = im->alt;
	int shared = some_refused(prog, im), taken = 0;
	for (int i = 0; alt && i < prog->cascades.n; i++)
		taken |= im->alt_index[i] >= 0;
	for (int k = 0; k < im->ncubins; k++) {
		char name[32];
		if (!shared && alt_has(alt, im->cubin[k].sm))
			continue;
		snprintf(name, sizeof name, "attn_sm%d", im->cubin[k].sm);
		bytes(o, name, im->cubin[k].code.data, im->cubin[k].code.size);
	}
	for (int k = 0; taken && k < alt->ncubins; k++) {
		char name[64];
		alt_cubin_name(name, sizeof name, alt, k);
		bytes(o, name, alt->cubin[k].code.data, alt->cubin[k].code.size);
	}
	if (shared) {
		fputs("static const AttnrtImage attn_images[] = {\n", o);
		for (int k = 0; k < im->ncubins; k++)
			fprintf(o, "\t{%d, attn_sm%d, sizeof attn_sm%d},\n", im->cubin[k].sm,
				im->cubin[k].sm, im->cubin[k].sm);
		fputs("\t{0, attn_ptx, sizeof attn_ptx},\n};\n", o);
	}
	/* tensor maps came with version 3 of the runtime's interface, launch
	** values per image with version 2 */
	int tmaps = 0;
	for (int i = 0; i < prog->cascades.n; i++)
		tmaps |= im->info[i].ntmaps > 0 ||
			 (alt && im->alt_index[i] >= 0 && alt->info[im->alt_index[i]].ntmaps > 0);
	if (tmaps)
		fputs(
		    "#if !defined(ATTNRT_API_VERSION) || ATTNRT_API_VERSION < 3\n#error \"these "
		    "kernels take TMA tensor maps: they need attnrt.h of API version 3 or later\"\n"
		    "#endif\n",
		    o);
	else if (taken)
		fputs("#if !defined(ATTNRT_API_VERSION) || ATTNRT_API_VERSION < 2\n#error \"these "
		      "kernels have launch values per image: they need attnrt.h of API version 2 "
		      "or later\"\n#endif\n",
		      o);
	for (int i = 0; i < prog->cascades.n; i++)
		launcher(o, prog->cascades.v[i], im, i);
}
