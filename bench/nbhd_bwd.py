"""Neighbourhood attention's backward (examples/neighborhood2d.attn,
neighborhood3d.attn) against FlexAttention's, in one process, on the same tensors.

The examples save no logsumexp, so attnc's NAME_bwd_launch runs NAME_bwd_stats
first (the softmax's max and sum again), then the row term, dQ, and dK with dV;
the window skips tiles in each of them as in the forward. FlexAttention gets the
same window as a mask_mod and its block mask (neighborhood.py's window), compiled;
its backward is timed as forward and backward together less the forward alone
(its compiled backward takes no retained graph). attnc's dQ, dK and dV are checked
against Flex's (rel L2 below 2e-2). Columns: ms, vs_flex = flex_ms / attnc_ms
(>= 1: attnc is faster), and the stats kernel's share of attnc's time.

Runs on the GPU machine from a folder with gen/neighborhood2d.c and
gen/neighborhood3d.c (compiled with --grad for the default bundle), runtime/,
decode.py, anchors.py, neighborhood.py and rundir.sh beside it, and build.json.
usage: python3 nbhd_bwd.py    writes DATE-COMMIT-nbhd_bwd/{meta.json,nbhd_bwd.json,
nbhd_bwd.txt} under $OUT (bench/rundir.sh)
"""
import ctypes
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bwd_extras import kernel_ms, launch, fwd, rel  # noqa: E402
from decode import bench, library, run_folder  # noqa: E402
from neighborhood import window  # noqa: E402

H, D = 16, 64
rows = []
meta = {}


def rec(**kw):
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def main():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    flex = torch.compile(flex_attention, dynamic=False)
    out = run_folder("nbhd_bwd", "bench/nbhd_bwd.py", meta)
    stream = torch.cuda.current_stream().cuda_stream
    lines = [f"{'shape':<26} {'attnc ms':>9} {'flex ms':>9} {'vs_flex':>8} {'stats':>6} {'rel_l2':>8}"]
    for name, shape, radius, B in [("neighborhood2d", (64, 64), (3, 3), 8),
                                   ("neighborhood3d", (8, 32, 32), (1, 3, 3), 4)]:
        lib = library(name, name)
        N = 1
        for s in shape:
            N *= s
        torch.manual_seed(N)
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        scale = D ** -0.5
        bm = create_block_mask(window(shape, radius), B=None, H=None, Q_LEN=N, KV_LEN=N)
        qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
        flex(qr, kr, vr, block_mask=bm, scale=scale).backward(do)
        ref = [t.grad.float() for t in (qr, kr, vr)]
        tf = bench(lambda: flex(q, k, v, block_mask=bm, scale=scale))
        tfb = bench(lambda: flex(qr, kr, vr, block_mask=bm, scale=scale).backward(do))
        fms = tfb - tf
        label = "%s_%s" % (name, "x".join(map(str, shape)))
        rec(shape=label, sys="flex", ms=round(fms, 4), fwd_ms=round(tf, 4), fwd_bwd_ms=round(tfb, 4))
        dims = (B, H) + shape + (D,)
        o = torch.empty_like(q)
        fwd(lib, name, (q, k, v, o), dims, (scale,), stream)
        g = tuple(torch.full_like(t, float("nan")) for t in (q, k, v))
        run = launch(lib, name, (q, k, v, o, do) + g, dims, (scale,), stream)
        run()
        torch.cuda.synchronize()
        errs = [round(rel(x, r), 5) for x, r in zip(g, ref)]
        ms = bench(run)
        ks = kernel_ms(run)
        stats = sum(t for kname, t in ks.items() if "_stats" in kname)
        rec(shape=label, sys="attnc", ms=round(ms, 4), vs_flex=round(fms / ms, 3), rel_l2=errs, kernels=ks,
            stats_share=round(stats / max(sum(ks.values()), 1e-9), 3), **meta)
        if max(errs) > 2e-2:
            print(f"FAIL {label}: rel_l2 {errs}", flush=True)
        lines.append(f"{label:<26} {ms:>9.4f} {fms:>9.4f} {fms / ms:>8.2f} "
                     f"{stats / max(sum(ks.values()), 1e-9):>6.2f} {max(errs):>8.1e}")
        del q, k, v, do, qr, kr, vr, ref, o, g
        torch.cuda.empty_cache()
    lines.append(f"{meta['device']}, {meta['date']}, commit {meta['commit']}, target {meta['target']}")
    with open(os.path.join(out, "nbhd_bwd.json"), "w") as f:
        json.dump(rows, f, indent=1)
    open(os.path.join(out, "nbhd_bwd.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
