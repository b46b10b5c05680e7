"""Causal linear attention (examples/linear.attn): attnc against PyTorch, in one process.

Runs on the GPU machine from a folder with gen/linear.c (examples/linear.attn compiled
for the default bundle), runtime/ (the runtime's sources), decode.py and rundir.sh
beside this script, and build.json (commit and target). The block is the quadratic
form of Katharopoulos et al.: feature maps phi(x) = elu(x) + 1 of Q and K (two row
passes, phi stored as bf16 in the caller's workspace), then one kernel over the keys
that sums phi(q).phi(k) v and phi(q).phi(k) for j <= i. Timed three ways on the same
tensors: the block (NAME_launch_generic: the three kernels in order), and its pass
over the keys alone (NAME_pass1_launch_generic, reading the phi the block left in the
workspace), which says what the row passes cost.

Anchors on the same shapes: the eager product in PyTorch (phi in bf16, masked bf16
matmuls, what a user without a fused kernel writes), and causal softmax attention
through SDPA's cuDNN and FlashAttention-2 backends on the same Q, K, V: the cost of
the tensor-core work of the same shape, which linear attention's quadratic form has
no reason to exceed (it has no exponentials). TFLOP/s count the causal half of the
two products, 2 * B * H * N^2 * D. Every attnc output is checked against the
product in f32 (rel L2 below 1e-2).

usage: python3 linear.py    writes DATE-COMMIT-linear/{meta.json,linear.json,linear.txt}
under $OUT (bench/rundir.sh)
"""
import ctypes
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode import bench, library, run_folder  # noqa: E402  (decode.py's helpers)

D = 64
rows = []
meta = {}


def rec(**kw):
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def eager(q, k, v):
    """The quadratic form as a user writes it: phi in the inputs' dtype, masked products."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    a = fq @ fk.transpose(-1, -2)
    a = torch.tril(a)
    return (a @ v) / a.float().sum(-1, keepdim=True).to(a.dtype)


def main():
    out = run_folder("linear", "bench/linear.py", meta)
    lib = library("linear", "linear_attn")
    lib.linear_attn_pass1_launch_generic.restype = ctypes.c_int
    lib.linear_attn_workspace_bytes_generic.restype = ctypes.c_size_t
    stream = torch.cuda.current_stream().cuda_stream
    for B, H, N in [(16, 16, 2048), (4, 16, 8192), (2, 16, 16384)]:
        torch.manual_seed(N)
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        dims = (ctypes.c_long * 4)(B, H, N, D)
        ws_bytes = lib.linear_attn_workspace_bytes_generic(dims)
        ws = torch.empty(ws_bytes, dtype=torch.uint8, device="cuda")
        ptrs = (ctypes.c_void_p * 4)(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr())
        # the pass alone: V, fq, fk, O (the block's workspace holds fq at 0, fk after it)
        half = ws_bytes // 2
        pptrs = (ctypes.c_void_p * 4)(v.data_ptr(), ws.data_ptr(), ws.data_ptr() + half, o.data_ptr())

        def block():
            rc = lib.linear_attn_launch_generic(ptrs, None, dims, None, ctypes.c_void_p(ws.data_ptr()),
                                                ctypes.c_size_t(ws_bytes), ctypes.c_void_p(stream))
            if rc:
                raise RuntimeError(lib.attnrt_last_error().decode())

        def pass1():
            rc = lib.linear_attn_pass1_launch_generic(pptrs, None, dims, None, ctypes.c_void_p(stream))
            if rc:
                raise RuntimeError(lib.attnrt_last_error().decode())

        fq, fk = F.elu(q.float()) + 1, F.elu(k.float()) + 1
        a = torch.tril(fq @ fk.transpose(-1, -2))
        ref = (a @ v.float()) / a.sum(-1, keepdim=True)
        del a, fq, fk
        label = f"{B}x{N}"
        flops = 2 * B * H * N * N * D
        for name, run in (("attnc", block), ("attnc_pass", pass1)):
            o.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            err = ((o.float() - ref).norm() / ref.norm()).item()
            t = bench(run)
            rec(shape=label, sys=name, B=B, H=H, N=N, D=D, ms=round(t, 4), tflops=round(flops / t / 1e9, 1),
                rel_l2=err, **meta)
            if not err < 1e-2:
                print(f"FAIL {label} {name}: rel_l2 {err}", flush=True)
        e = eager(q, k, v)
        rec(shape=label, sys="eager_check", rel_l2=((e.float() - ref).norm() / ref.norm()).item())
        del e
        te = bench(lambda: eager(q, k, v))
        rec(shape=label, sys="eager", ms=round(te, 4), tflops=round(flops / te / 1e9, 1))
        for sname, be in (("cudnn_causal_softmax", SDPBackend.CUDNN_ATTENTION),
                          ("fa2_causal_softmax", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(be):
                    ts = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                rec(shape=label, sys=sname, ms=round(ts, 4), tflops=round(flops / ts / 1e9, 1))
            except RuntimeError as x:
                rec(shape=label, sys=sname, error=str(x).splitlines()[0][:120])
        del q, k, v, o, ws, ref
        torch.cuda.empty_cache()
    with open(os.path.join(out, "linear.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = [f"{'shape':<10} {'sys':<12} {'ms':>8} {'TFLOP/s':>8} {'vs eager':>8} {'vs cuDNN sm':>11} "
             f"{'vs FA2 sm':>9}"]
    by = {(r.get("shape"), r["sys"]): r for r in rows}
    for r in rows:
        if not r["sys"].startswith("attnc"):
            continue
        cols = []
        for other in ("eager", "cudnn_causal_softmax", "fa2_causal_softmax"):
            x = by.get((r["shape"], other), {})
            cols.append(f"{x['ms'] / r['ms']:.2f}" if "ms" in x else "-")
        lines.append(f"{r['shape']:<10} {r['sys']:<12} {r['ms']:>8.4f} {r['tflops']:>8.1f} {cols[0]:>8} "
                     f"{cols[1]:>11} {cols[2]:>9}")
    lines.append(f"{meta['device']}, {meta['date']}, commit {meta['commit']}, target {meta['target']}")
    open(os.path.join(out, "linear.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
