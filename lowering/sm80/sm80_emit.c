/*
** lowering/sm80/sm80_emit.c: PTX for every cascade of a file (--target=sm_80).
** The same PTX is assembled for sm_80 and sm_90 and kept for newer GPUs,
** whose drivers compile it at load time. A cascade whose masks keep a
** tile table has two entries: NAME_fwd and NAME_fwd_short, the same kernel
** for keys that fit the table's first window, without its refill.
*/
#include "sm80.h"

int sm80_emit_program(FILE *out, const Program *prog, Diag *d, GpuKernelInfo *info,
		      const int *tiling)
{
	Arena a;
	arena_init(&a);
	int n = prog->cascades.n, rc = 0;
	PtxFunc **fs = ARENA_ARRAY(&a, PtxFunc *, 2 * n + 1);
	int nf = n;
	for (int i = 0; i < n && !rc; i++) {
		const Cascade *c = prog->cascades.v[i];
		Plan *p = plan_build(&a, c, "sm_80");
		KernelShape s;
		const char *why = gpu_shape(&a, p, &s);
		if (why) {
			diag_error(d, c->loc, "cannot generate an sm_80 kernel for '%s': %s",
				   c->name, why);
			rc = 1;
			break;
		}
		s.tiling = tiling ? tiling[i] : 0;
		fs[i] = sm80_kernel(&a, p, &s);
		int one_window = sm80_onewin_wanted(&s);
		if (one_window) {
			/* the same kernel without the table's refill (KernelShape.one_window) */
			KernelShape s1;
			gpu_shape(&a, p, &s1);
			s1.tiling = s.tiling, s1.one_window = 1;
			fs[nf++] = sm80_kernel(&a, p, &s1);
		}
		if (info) {
			info[i].smem = fs[i]->smem_bytes;
			info[i].block_m = (unsigned)(SM80_WARPS * 16 * sm80_row_blocks(&s));
			info[i].block_n = SM80_BN;
			info[i].data_masks = sm80_data_masks(p);
			info[i].split_v = s.split_v;
			info[i].table = s.table;
			info[i].pack = 0;
			info[i].one_window = one_window;
			info[i].window_keys = SM80_WINDOW_KEYS;
			info[i].threads = SM80_THREADS;
			if (s.pack && s.pack->kind == EX_INT)
				info[i].pack = s.pack->ival;
			else if (s.pack)
				info[i].pack = -(long)(s.pack->dim->id + 1);
		}
	}
	if (!rc)
		ptx_print_module(out, "sm_80", "7.8", fs, nf);
	arena_free(&a);
	return rc;
}
