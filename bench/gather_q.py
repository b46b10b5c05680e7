"""Q rows read through a gather (test/lit/ptx/Inputs/gather_q.attn, a query
permutation: S = Q[b, h, perm[b, i]] . K[b, h, j], unscaled) against the same
attention on Q gathered first, in one process, on the same tensors.

Runs on the GPU machine from a folder holding decode.py (whose timing and run
folder it uses), gen/gather_q_dD.c for D 64 and 128 (the default bundle: the
sm_90a kernel on Hopper) and gen/gather_q80_dD.c (sm_80's kernel alone), the
runtime sources in runtime/, rundir.sh and build.json (as bench/prepare.sh
writes them). Per head dim and length, with B N = 32k tokens and H = 16:
  attnc, attnc_sm80   NAME_launch_generic
  cudnn, fa2          SDPA's backends on Q already gathered (the gather's
                      copy not counted: the anchors' own speed)
  cudnn_gather        Q gathered by torch (advanced indexing) and then SDPA's
                      cuDNN backend, as a user without a fused gather runs it
TFLOP/s count 4 B H N^2 D over the median time; attnc's outputs are compared
with the anchors' (rel L2 below 1e-2, no NaN).

usage: python3 gather_q.py    writes DATE-COMMIT-gather_q/{meta,gather_q}.json
and gather_q.txt under $OUT (bench/rundir.sh, bench/results/README.md)
"""
import ctypes
import json
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# timing, build, check, run folder; rec records a row in rows (attnc rows with meta)
from decode import bench, checked_launch, library, meta, rec, rows, run_folder

HERE = os.path.dirname(os.path.abspath(__file__))
H = 16


def main():
    run = run_folder("gather_q", "bench/gather_q.py", meta)
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    for D in (128, 64):
        libs = [(sys, library(name, "gather_q")) for sys, name in
                (("attnc", "gather_q_d%d" % D), ("attnc_sm80", "gather_q80_d%d" % D))
                if os.path.exists(os.path.join(HERE, "gen", name + ".c"))]
        for N in (2048, 8192):
            B = 32768 // N
            q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            perm = torch.stack([torch.randperm(N, device="cuda") for _ in range(B)]).to(torch.int32)
            idx = perm.long()[:, None, :, None].expand(B, H, N, D)
            qg = torch.gather(q, 2, idx)
            flops = 4 * B * H * N * N * D
            base = dict(kind="gather_q", B=B, H=H, N=N, D=D)
            ref = None
            for name, backend, fn in (
                    ("cudnn", SDPBackend.CUDNN_ATTENTION, lambda: F.scaled_dot_product_attention(qg, k, v, scale=1.0)),
                    ("fa2", SDPBackend.FLASH_ATTENTION, lambda: F.scaled_dot_product_attention(qg, k, v, scale=1.0)),
                    ("cudnn_gather", SDPBackend.CUDNN_ATTENTION,
                     lambda: F.scaled_dot_product_attention(torch.gather(q, 2, idx), k, v, scale=1.0))):
                try:
                    with sdpa_kernel(backend):
                        r = fn()
                        ms = bench(fn)
                    ref = r if ref is None else ref
                    rec(sys=name, ms=ms, tflops=flops / ms / 1e9, **base)
                except Exception as e:
                    rec(sys=name, error=str(e)[:200], **base)
            o = None
            for name, lib in libs:
                o = torch.full((B, H, N, D), float("nan"), device="cuda", dtype=torch.bfloat16)
                ptrs = (ctypes.c_void_p * 5)(*[x.data_ptr() for x in (q, k, v, perm, o)])
                dims = (ctypes.c_long * 4)(B, H, N, D)
                params = (ctypes.c_double * 1)(0.0)
                call = lambda: lib.gather_q_launch_generic(ptrs, None, dims, params, stream())
                rec(sys=name, **checked_launch(lib, call, o, ref, flops), **base)
            del q, k, v, qg, o
            torch.cuda.empty_cache()
    with open(os.path.join(run, "gather_q.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["%-4s %-6s %-13s %9s %9s %9s %9s" % ("D", "N", "system", "ms", "TFLOP/s", "x_cudnn", "x_fa2")]
    for r in rows:
        if "ms" not in r:
            lines.append("%-4s %-6s %-13s %s" % (r["D"], r["N"], r["sys"], r.get("error", "")))
            continue
        an = {x["sys"]: x.get("ms") for x in rows if x["D"] == r["D"] and x["N"] == r["N"]}
        lines.append("%-4d %-6d %-13s %9.3f %9.1f %9s %9s%s" % (
            r["D"], r["N"], r["sys"], r["ms"], r["tflops"],
            "%.2f" % (an["cudnn"] / r["ms"]) if an.get("cudnn") else "-",
            "%.2f" % (an["fa2"] / r["ms"]) if an.get("fa2") else "-",
            "" if r.get("ok", True) else "  CHECK FAILED rel %s nan %s" % (r.get("rel_l2"), r.get("nan"))))
    open(os.path.join(run, "gather_q.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
