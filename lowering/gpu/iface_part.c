/*
** lowering/gpu/iface_part.c: the generated C around NAME_fwd_part, the
** kernel of partial states (gpu/parts.c), for files compiled with
** --parts: a launch over some keys and query rows whose states are carried
** (NAME_launch_part), split-KV with a heuristic split count
** (NAME_launch_split), the sizes they need (NAME_part_bytes,
** NAME_split_workspace_bytes). The memory is the caller's: nothing here
** allocates on the launch path.
*/
#include "gpu.h"
#include "iface.h"

void iface_part_types(FILE *o)
{
	fputs(
	    "#ifndef ATTN_GPU_PART_V1\n#define ATTN_GPU_PART_V1\n#include <stddef.h>\n"
	    "/* A launch of NAME_fwd_part: the query rows [q_begin, q_end) (q_end 0: all) over\n"
	    "** the keys [k_begin, k_end) (k_end 0: all; k_begin a multiple of 64 unless the\n"
	    "** range is empty), split into\n"
	    "** `splits` parts along the keys (0: chosen from the device, the grid and the\n"
	    "** workspace). flags: ATTN_PART_MERGE_IN merges the states in `state` (of an\n"
	    "** earlier launch over the same rows) into this one's; ATTN_PART_FINALIZE writes\n"
	    "** the outputs, else the states are written to `state`. The workspace of a split\n"
	    "** (NAME_part_bytes) needs no initialisation: the launch zeroes its counters on\n"
	    "** the stream, unless ATTN_PART_ZEROED says that they are zero already (every\n"
	    "** launch leaves them so: the caller zeroes a workspace once, before its first\n"
	    "** launch, and writes nothing else into it). Both are device memory, 16-byte\n"
	    "** aligned. ATTN_PART_STREAM_K\n"
	    "** cuts the keys as stream-K instead (where the kernel has NAME_fwd_streamk:\n"
	    "** masks that read lengths on the device): as many CTAs as the device runs at\n"
	    "** once, each an equal share of all the rows' key tiles; splits is not read. */\n"
	    "enum { ATTN_PART_MERGE_IN = 1, ATTN_PART_FINALIZE = 2, ATTN_PART_STREAM_K = 4,\n"
	    "       ATTN_PART_ZEROED = 8 };\n"
	    "typedef struct attn_gpu_part {\n"
	    "\tlong q_begin, q_end;\n\tlong k_begin, k_end;\n\tint splits;\n\tint flags;\n"
	    "\tvoid *workspace;\n\tsize_t workspace_bytes;\n\tvoid *state;\n\tsize_t state_bytes;\n"
	    "} attn_gpu_part;\n#endif\n",
	    o);
}

void iface_part_decls(FILE *o, const Cascade *c)
{
	const char *n = c->name;
	fprintf(o,
		"/* %s's kernel of partial states (attn_gpu_part). NAME_part_bytes gives the\n"
		"** bytes of its states and of a split's workspace on the current device; it\n"
		"** checks the arguments as a launch does (the tensors' pointers too). */\n"
		"int %s_launch_part(const %s_gpu_args *a, const attn_gpu_part *part, void "
		"*stream);\n"
		"int %s_part_bytes(const %s_gpu_args *a, const attn_gpu_part *part, size_t "
		"*state_bytes, size_t *workspace_bytes);\n"
		"/* The same with the arrays of NAME_launch_generic, for harnesses; and the\n"
		"** extent of the keys for given dims. */\n"
		"long %s_part_keys(const long *dims);\n"
		"int %s_launch_part_generic(void *const *ptrs, const int64_t *const *strides, "
		"const long *dims, const double *params, const attn_gpu_part *part, void "
		"*stream);\n",
		n, n, n, n, n, n, n);
	fprintf(o,
		"/* Split-KV (Flash-Decoding): the keys of every CTA split so that the grid\n"
		"** fills the device, the parts merged by the plan's merge rule; workspace as\n"
		"** NAME_split_workspace_bytes says (a smaller one makes fewer parts). Where\n"
		"** the image that runs has a stream-K entry that takes the launch and the\n"
		"** workspace holds it, the launch is stream-K's (ATTN_PART_STREAM_K): its\n"
		"** CTAs share ragged lengths' tiles evenly and cut equal lengths as\n"
		"** split-KV does. */\n"
		"int %s_split_workspace_bytes(const %s_gpu_args *a, size_t *bytes);\n"
		"int %s_launch_split(const %s_gpu_args *a, void *workspace, size_t bytes, void "
		"*stream);\n",
		n, n, n, n);
}

void iface_part_helpers(FILE *o)
{
	fputs(
	    "#include <string.h>\n"
	    "\n/* The rows and keys of a launch of NAME_fwd_part, checked. */\n"
	    "static int iface_part_rows(const char *kernel, const attn_gpu_part *part, int "
	    "packed, long *q0, long *q1, long kext)\n{\n"
	    "\tif (!part)\n\t\treturn 0;\n"
	    "\tlong qb = part->q_begin, qe = part->q_end ? part->q_end : *q1;\n"
	    "\tlong kb = part->k_begin, ke = part->k_end ? part->k_end : kext;\n"
	    "\tif (qb < 0 || qe <= qb || qe > *q1)\n"
	    "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: the query rows [%ld, %ld) "
	    "are not a non-empty part of [0, %ld)\", kernel, qb, qe, *q1);\n"
	    "\tif (packed && (qb != 0 || qe != *q1))\n"
	    "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: a kernel of packed query "
	    "heads takes all query rows\", kernel);\n"
	    "\tif (kb < 0 || ke < kb || ke > kext)\n"
	    "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: the keys [%ld, %ld) are not "
	    "a part of [0, %ld)\", kernel, kb, ke, kext);\n"
	    "\tif (kb % 64 && kb < ke)\n"
	    "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: k_begin = %ld is not a "
	    "multiple of 64 (the key tile)\", kernel, kb);\n"
	    "\tif (part->splits < 0 || part->splits > 65535)\n"
	    "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: splits = %d is out of range "
	    "(0 to 65535)\", kernel, part->splits);\n"
	    "\tif (part->flags & ~(ATTN_PART_MERGE_IN | ATTN_PART_FINALIZE | ATTN_PART_STREAM_K | "
	    "ATTN_PART_ZEROED))\n"
	    "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: unknown flags 0x%x\", "
	    "kernel, (unsigned)part->flags);\n"
	    "\t*q0 = qb, *q1 = qe;\n\treturn 0;\n}\n",
	    o);
	fprintf(o,
		"\n/* The plain grid's CTAs a stream-K launch takes at most. */\n"
		"enum { IFACE_SK_ROWS = %d };\n",
		GPU_SK_ROWS);
	/* an SM's shared memory for CTAs taken as GPU_CTA_SMEM_MAX, 1 KiB
	** more a CTA */
	fprintf(o,
		"\n/* CTAs the device runs at once of `threads` threads and smem bytes. */\n"
		"static long iface_part_slots(unsigned threads, unsigned smem)\n{\n"
		"\tint sms = 0;\n"
		"\tif (attnrt_device_sms(&sms) || sms < 1)\n\t\tsms = 132;\n"
		"\tlong occ = %dL / ((long)smem + 1024), by_threads = 2048L / (long)threads;\n"
		"\tif (occ > by_threads)\n\t\tocc = by_threads;\n\tif (occ < 1)\n\t\tocc = "
		"1;\n"
		"\treturn (long)sms * occ;\n}\n",
		GPU_CTA_SMEM_MAX);
	fputs(
	    "\n/* Parts per CTA for a grid of ncta CTAs over `keys` keys: the count s that\n"
	    "** minimises waves(s) * (keys / s + IFACE_PART_COST), waves(s) the rounds of\n"
	    "** ncta s CTAs on the device (`slots` of them at once: SMs times the CTAs\n"
	    "** an SM holds), IFACE_PART_COST the keys a part's fixed work (its start,\n"
	    "** its states stored and merged) costs as much as; the smallest s on a tie.\n"
	    "** A count that gives one CTA more than a whole wave leaves the device\n"
	    "** idle while that CTA alone runs (1 x 128k keys, 8 CTAs: 17 parts ran at\n"
	    "** 0.67x the speed of 16 on an H200, bench/RESULTS.md). Each part keeps\n"
	    "** 4 key tiles at least. */\n"
	    "enum { IFACE_PART_COST = 1024 };\n"
	    "static int iface_part_splits(long ncta, long keys, unsigned threads, unsigned "
	    "smem)\n{\n"
	    "\tlong slots = iface_part_slots(threads, smem), most = (keys + 255) / 256, best = 1;\n"
	    "\t/* past two waves' worth no count is cheaper than one within them */\n"
	    "\tif (most > 2 * slots / (ncta > 0 ? ncta : 1) + 1)\n"
	    "\t\tmost = 2 * slots / (ncta > 0 ? ncta : 1) + 1;\n"
	    "\tif (most > 65535)\n\t\tmost = 65535;\n"
	    "\tdouble cost = -1;\n"
	    "\tfor (long s = 1; s <= most; s++) {\n"
	    "\t\tlong waves = (ncta * s + slots - 1) / slots;\n"
	    "\t\tdouble c = (double)waves * (double)((keys + s - 1) / s + IFACE_PART_COST);\n"
	    "\t\tif (cost < 0 || c < cost)\n\t\t\tcost = c, best = s;\n\t}\n"
	    "\treturn (int)best;\n}\n",
	    o);
	fputs("\n/* The part parameters of a launch of ncta CTAs of cta bytes of states each\n"
	      "** (the image's), *splits chosen where 0; with sizes, the bytes of the states\n"
	      "** and of the workspace and the split count instead (returns -1). Stream-K\n"
	      "** (ATTN_PART_STREAM_K, where the image has the entry, sk, and a group of\n"
	      "** packed rows, group, is at most sk_group; 0: no limit) sets *sk_ctas to its\n"
	      "** CTAs; its workspace holds the counters, then the states of ncta + CTAs\n"
	      "** parts. */\n"
	      "static int iface_part_params(const char *kernel, const attn_gpu_part *part, long "
	      "ncta, long q0, long q1, long kext, size_t cta, unsigned threads, unsigned smem, "
	      "int sk, long group, long sk_group, size_t *sizes, int64_t *pp, uint64_t *pw, "
	      "uint32_t *mode, unsigned *splits, unsigned *sk_ctas)\n{\n"
	      "\tlong kb = part->k_begin, ke = part->k_end ? part->k_end : kext;\n"
	      "\t/* the counters: 8 warps' tickets and a claim word (claims.c) a CTA */\n"
	      "\tsize_t cnt = ((size_t)ncta * 36 + 255) / 256 * 256, st = (size_t)ncta * cta;\n"
	      "\tlong s = part->splits, P = 0;\n"
	      "\tif (part->flags & ATTN_PART_STREAM_K) {\n"
	      "\t\tif (!sk)\n"
	      "\t\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: the image that runs has no "
	      "stream-K entry (attnc emits one where masks read lengths on the device, unless "
	      "the target's producer scans masks that read data)\", kernel);\n"
	      "\t\tif (ncta > IFACE_SK_ROWS || (sk_group && group > sk_group))\n"
	      "\t\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: stream-K takes at most %d "
	      "CTAs of the plain grid (%ld) and groups of at most %ld packed rows (%ld)\", kernel, "
	      "IFACE_SK_ROWS, ncta, sk_group, group);\n"
	      "\t\tP = iface_part_slots(threads, smem);\n"
	      "\t\ts = 1;\n\t}\n"
	      "\tif (s == 0) {\n"
	      "\t\ts = iface_part_splits(ncta, ke - kb, threads, smem);\n"
	      "\t\twhile (!sizes && s > 1 && cnt + (size_t)s * st > part->workspace_bytes)\n"
	      "\t\t\ts--;\n\t}\n"
	      "\tsize_t ws = P ? cnt + (size_t)(ncta + P) * cta : s > 1 ? cnt + (size_t)s * st "
	      ": 0;\n"
	      "\tif (sizes) {\n\t\tsizes[0] = st, sizes[1] = ws, sizes[2] = (size_t)s;\n"
	      "\t\treturn -1;\n\t}\n"
	      "\tif (ws && (!part->workspace || part->workspace_bytes < ws || "
	      "(uintptr_t)part->workspace % 16))\n"
	      "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: %ld %s need a "
	      "16-byte aligned workspace of %zu bytes (%zu given)\", kernel, P ? P : s, P ? "
	      "\"stream-K CTAs\" : \"splits\", ws, part->workspace ? part->workspace_bytes : 0);\n"
	      "\tint carry = (part->flags & ATTN_PART_MERGE_IN) || !(part->flags & "
	      "ATTN_PART_FINALIZE);\n"
	      "\tif (carry && (!part->state || part->state_bytes < st || (uintptr_t)part->state "
	      "% 16))\n"
	      "\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s: the states need a 16-byte "
	      "aligned buffer of %zu bytes (%zu given)\", kernel, st, part->state ? "
	      "part->state_bytes : 0);\n"
	      "\tlong ch = ((ke - kb + s - 1) / s + 63) / 64 * 64;\n"
	      "\tif (kb == ke) /* no keys: at a tile boundary, so that the stream is empty */\n"
	      "\t\tkb = ke = kb / 64 * 64;\n"
	      "\tpp[0] = kb, pp[1] = ke, pp[2] = ch > 0 ? ch : 64, pp[3] = q0, pp[4] = q1;\n"
	      "\tpw[0] = ws ? (uint64_t)(uintptr_t)part->workspace + cnt : 0;\n"
	      "\tpw[1] = ws ? (uint64_t)(uintptr_t)part->workspace : 0;\n"
	      "\tpw[2] = carry ? (uint64_t)(uintptr_t)part->state : 0;\n"
	      "\t*mode = (uint32_t)(part->flags & (ATTN_PART_MERGE_IN | ATTN_PART_FINALIZE)), "
	      "*splits = (unsigned)s;\n"
	      "\t*sk_ctas = (unsigned)P;\n\treturn 0;\n}\n",
	      o);
}

/* The value of a launch value that may differ by image: the second's where
** the image that runs is the second module's. */
static void per_image(FILE *o, const GpuKernelInfo *ai, unsigned v2, unsigned v1)
{
	if (ai)
		fprintf(o, "(alt_image ? %uu : %uu)", v2, v1);
	else
		fprintf(o, "%uu", v1);
}

void iface_part_args(FILE *o, const char *n, const GpuImages *im, int idx, const GpuKernelInfo *ai,
		     long pk)
{
	const GpuKernelInfo *pi = &im->info[idx];
	fprintf(o,
		"\tint64_t pp[5] = {0, 0, 0, 0, 0}, pg[2] = {gx, gy};\n\tuint64_t pw[3] = {0, 0, "
		"0};\n\tuint32_t pmode = 0;\n\tunsigned pz = 1, psk = 0;\n\tif (part) {\n"
		"\t\trc = iface_part_params(\"%s\", part, gx * gy, q0, q1, kext, ",
		n);
	per_image(o, ai, ai ? ai->part_cta_bytes : 0, pi->part_cta_bytes);
	fputs(", ", o);
	per_image(o, ai, ai ? ai->threads : 0, pi->threads);
	fputs(", ", o);
	per_image(o, ai, ai ? ai->smem : 0, pi->smem);
	fputs(", ", o);
	per_image(o, ai, ai ? (unsigned)ai->streamk : 0, (unsigned)pi->streamk);
	/* a producer's CTA (more threads than the builder's): the rows of
	** both halves of the CTA's consumers, or of the first alone, in every
	** work tile (the second's leave) */
	fprintf(o, ", %s, ", pk ? "grp" : "0L");
	per_image(o, ai, ai && ai->threads > GPU_THREADS ? ai->block_m / 2 : 0,
		  pi->threads > GPU_THREADS ? pi->block_m / 2 : 0);
	fputs(", sizes, pp, pw, &pmode, &pz, &psk);\n"
	      "\t\tif (rc)\n\t\t\treturn rc < 0 ? 0 : rc;\n"
	      "\t\t/* the split's counters, zeroed on the stream before the launch\n"
	      "\t\t** unless the caller says the last launch left them so */\n"
	      "\t\tif (pw[1] && !(part->flags & ATTN_PART_ZEROED) && (rc = "
	      "attnrt_memset_async((void *)(uintptr_t)pw[1], 0, "
	      "(size_t)(pw[0] - pw[1]), stream)))\n\t\t\treturn rc;\n"
	      "\t\tfor (int i = 0; i < 5; i++)\n\t\t\targs[k++] = &pp[i];\n"
	      "\t\tfor (int i = 0; i < 3; i++)\n\t\t\targs[k++] = &pw[i];\n"
	      "\t\targs[k++] = &pmode;\n"
	      "\t\tif (psk) {\n\t\t\targs[k++] = &pg[0];\n\t\t\targs[k++] = &pg[1];\n"
	      "\t\t}\n\t}\n",
	      o);
}

void iface_part_functions(FILE *o, const Cascade *c, const Plan *p)
{
	const char *n = c->name;
	fprintf(o, "\nlong %s_part_keys(const long *dims)\n{\n\t(void)dims;\n\treturn ", n);
	if (p->stream >= 0)
		iface_dim_expr(o, p->classes[p->stream].extent);
	else
		fputs("1L", o);
	fputs(";\n}\n", o);
	fprintf(o,
		"\nint %s_launch_generic(void *const *ptrs, const int64_t *const *strides, const "
		"long *dims, const double *params, void *stream)\n{\n"
		"\treturn %s_launch_impl(ptrs, strides, dims, params, NULL, NULL, stream);\n}\n",
		n, n);
	fprintf(o,
		"\nint %s_launch_part_generic(void *const *ptrs, const int64_t *const *strides, "
		"const long *dims, const double *params, const attn_gpu_part *part, void "
		"*stream)\n{\n\tif (!part)\n\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, "
		"\"%s_launch_part: NULL part\");\n"
		"\treturn %s_launch_impl(ptrs, strides, dims, params, part, NULL, stream);\n}\n",
		n, n, n);
	fprintf(o,
		"\nint %s_launch_part(const %s_gpu_args *a, const attn_gpu_part *part, void "
		"*stream)\n{\n",
		n, n);
	fprintf(o,
		"\tif (!part)\n\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s_launch_part: "
		"NULL part\");\n",
		n);
	iface_unpack_args(o, c);
	fprintf(o, "\treturn %s_launch_impl(ptrs, strides, dims, params, part, NULL, stream);\n}\n",
		n);
	fprintf(o,
		"\nint %s_part_bytes(const %s_gpu_args *a, const attn_gpu_part *part, size_t "
		"*state_bytes, size_t *workspace_bytes)\n{\n",
		n, n);
	fprintf(o,
		"\tif (!part)\n\t\treturn attnrt_set_error(ATTNRT_ERR_ARGUMENT, \"%s_part_bytes: "
		"NULL part\");\n",
		n);
	iface_unpack_args(o, c);
	fprintf(o,
		"\tsize_t sizes[3] = {0, 0, 0};\n"
		"\tint rc = %s_launch_impl(ptrs, strides, dims, params, part, sizes, NULL);\n"
		"\tif (state_bytes)\n\t\t*state_bytes = sizes[0];\n"
		"\tif (workspace_bytes)\n\t\t*workspace_bytes = sizes[1];\n\treturn rc;\n}\n",
		n);
	fprintf(o,
		"\n/* The workspace of a stream-K launch of a (0: none takes it). */\n"
		"static size_t %s_streamk_bytes(const %s_gpu_args *a)\n{\n"
		"\tattn_gpu_part part = {0, 0, 0, 0, 0, ATTN_PART_FINALIZE | ATTN_PART_STREAM_K, "
		"NULL, 0, NULL, 0};\n"
		"\tsize_t bytes = 0;\n"
		"\treturn %s_part_bytes(a, &part, NULL, &bytes) == ATTNRT_OK ? bytes : 0;\n}\n",
		n, n, n);
	fprintf(o,
		"\nint %s_split_workspace_bytes(const %s_gpu_args *a, size_t *bytes)\n{\n"
		"\tattn_gpu_part part = {0, 0, 0, 0, 0, ATTN_PART_FINALIZE, NULL, 0, NULL, 0};\n"
		"\tint rc = %s_part_bytes(a, &part, NULL, bytes);\n"
		"\tsize_t sk = rc == ATTNRT_OK ? %s_streamk_bytes(a) : 0;\n"
		"\tif (bytes && sk > *bytes)\n\t\t*bytes = sk;\n"
		"\treturn rc;\n}\n",
		n, n, n, n);
	fprintf(o,
		"\nint %s_launch_split(const %s_gpu_args *a, void *workspace, size_t bytes, void "
		"*stream)\n{\n"
		"\tsize_t sk = %s_streamk_bytes(a);\n"
		"\tattn_gpu_part part = {0, 0, 0, 0, 0, ATTN_PART_FINALIZE, workspace, bytes, "
		"NULL, 0};\n"
		"\tif (sk && sk <= bytes)\n\t\tpart.flags |= ATTN_PART_STREAM_K;\n"
		"\treturn %s_launch_part(a, &part, stream);\n}\n",
		n, n, n, n);
}
