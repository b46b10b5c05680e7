"""Absorbed MLA decode: attnc's wide-head kernel against PyTorch, in one process.

Runs on the GPU machine from a folder with gen/mla_absorbed.c (examples/mla_absorbed.attn
compiled for the default bundle with --parts), runtime/ (the runtime's sources),
decode.py and rundir.sh beside this script, and build.json (commit and target).
One query token per sequence and H query heads attend to one latent head: keys are
the cache rows KV[b, j, 0:576], values their first 512 columns, keys j < kv_len[b].
attnc's kernel keeps 64 heads per CTA and computes V's 512 columns in two slices of
256, one CTA each, each computing the scores again (docs/gpu.md, wide heads). It runs
three ways: NAME_launch (a CTA per 64 heads and slice), NAME_launch_part with the
splits the launcher picks (split-KV) and as stream-K. The bundle runs sm_90a's kernels on
Hopper (since c731e9f; 64 heads a CTA, each consumer warpgroup one slice of 256 columns,
both computing the scores). Where gen/mla_absorbed_sm80.c is there too (--target=sm_80
--parts), the same three launches of sm_80's kernels run beside them (attnc_sm80*).

Anchors on the same tensors: SDPA (whichever backend takes 576/512 with one K/V
head, enable_gqa) and the eager product softmax(q K^T s) V in bf16 (what a user
without FlashMLA writes). FlashMLA itself is not installed on the device.
Bandwidth counts the cache bytes a step must read once, 2 * 576 * sum(kv_len), over
the median time; the copy ceiling is a device-to-device copy of 2 GiB. TFLOP/s
counts 2 * H * sum(kv_len) * (576 + 512). Every attnc output is checked against
the eager product in f32 (rel L2 below 1e-2).

usage: python3 mla_decode.py    writes DATE-COMMIT-mla_decode/{meta.json,mla_decode.json,
mla_decode.txt} under $OUT (bench/rundir.sh)
"""
import ctypes
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode import Part, bench, library, run_folder  # noqa: E402  (decode.py's helpers)

DL, DR = 512, 64
rows = []
meta = {}


def rec(**kw):
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def eager(q, KV, lens, scale):
    """softmax(q K^T scale) V per sequence, masked past kv_len (bf16 products)."""
    s = torch.einsum("bhd,bjd->bhj", q, KV).float() * scale
    j = torch.arange(KV.shape[1], device=q.device)
    s = s.masked_fill(j[None, None, :] >= lens[:, None, None], float("-inf"))
    p = torch.softmax(s, dim=-1).to(q.dtype)
    return torch.einsum("bhj,bje->bhe", p, KV[:, :, :DL])


def main():
    out = run_folder("mla_decode", "bench/mla_decode.py", meta)
    lib = library("mla_absorbed", "mla_absorbed")
    here = os.path.dirname(os.path.abspath(__file__))
    libs = [("attnc", lib)]
    if os.path.exists(os.path.join(here, "gen", "mla_absorbed_sm80.c")):
        libs.append(("attnc_sm80", library("mla_absorbed_sm80", "mla_absorbed")))
    ws_bytes = 1 << 28
    ws = torch.zeros(ws_bytes, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    scale = 192 ** -0.5
    big = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(big)
    ms = bench(lambda: dst.copy_(big))
    ceiling = 2 * big.numel() / ms / 1e9
    del big, dst
    rec(sys="copy", tbs=round(ceiling, 3))
    # (B, H, kv_len): DeepSeek-V3's 128 heads on one GPU and 16 under 8-way
    # tensor parallelism, batches of 8 to 128 sequences of 4k and 8k
    for B, H, L in [(64, 128, 4096), (8, 128, 8192), (128, 16, 4096), (32, 16, 8192), (4, 128, 4096)]:
        torch.manual_seed(B * 7 + H)
        q = torch.randn(B, H, DL + DR, device="cuda", dtype=torch.bfloat16)
        KV = torch.randn(B, L, DL + DR, device="cuda", dtype=torch.bfloat16)
        lens = torch.full((B,), L, dtype=torch.int32, device="cuda")
        o = torch.full((B, H, DL), float("nan"), device="cuda", dtype=torch.bfloat16)
        lse = torch.full((B, H), float("nan"), device="cuda", dtype=torch.float32)
        ptrs = (ctypes.c_void_p * 5)(q.data_ptr(), KV.data_ptr(), lens.data_ptr(), o.data_ptr(),
                                     lse.data_ptr())
        dims = (ctypes.c_long * 5)(B, H, L, DL, DR)
        params = (ctypes.c_double * 1)(scale)

        def plain_of(lb):
            def run():
                rc = lb.mla_absorbed_launch_generic(ptrs, None, dims, params,
                                                    ctypes.c_void_p(stream))
                if rc:
                    raise RuntimeError(lb.attnrt_last_error().decode())
            return run

        def split_of(lb, flags):
            pn = Part(0, 0, 0, 0, 0, flags, ws.data_ptr(), ws_bytes, None, 0)

            def run():
                rc = lb.mla_absorbed_launch_part_generic(ptrs, None, dims, params, ctypes.byref(pn),
                                                         ctypes.c_void_p(stream))
                if rc:
                    raise RuntimeError(lb.attnrt_last_error().decode())
            return run

        ref = eager(q.float(), KV.float(), lens, scale)
        s = (torch.einsum("bhd,bjd->bhj", q.float(), KV.float()) * scale)
        lref = torch.logsumexp(s, -1)
        del s
        label = f"{B}x{L}_h{H}"
        nbytes = 2 * (DL + DR) * B * L
        flops = 2 * H * B * L * (DL + DR + DL)
        # flags: 2 finalize, 4 stream-K (the part struct of decode.py)
        runs = []
        for nm, lb in libs:
            runs += [(nm, plain_of(lb)), (nm + "_split", split_of(lb, 2)),
                     (nm + "_streamk", split_of(lb, 2 | 4))]
        for name, run in runs:
            o.fill_(float("nan"))
            lse.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            err = ((o.float() - ref).norm() / ref.norm()).item()
            lse_err = (lse - lref).abs().max().item()
            t = bench(run)
            rec(shape=label, sys=name, ms=round(t, 4), tbs=round(nbytes / t / 1e9, 3),
                tflops=round(flops / t / 1e9, 1), rel_l2=err, lse_max_err=lse_err, **meta)
            if not (err < 1e-2 and lse_err < 1e-2):
                print(f"FAIL {label} {name}: rel_l2 {err} lse {lse_err}", flush=True)
        te = bench(lambda: eager(q, KV, lens, scale))
        rec(shape=label, sys="eager", ms=round(te, 4), tbs=round(nbytes / te / 1e9, 3),
            tflops=round(flops / te / 1e9, 1))
        q4, k4, v4 = q[:, :, None, :], KV[:, None], KV[:, None, :, :DL]
        try:
            ts = bench(lambda: F.scaled_dot_product_attention(q4, k4, v4, scale=scale,
                                                              enable_gqa=True))
            rec(shape=label, sys="sdpa", ms=round(ts, 4), tbs=round(nbytes / ts / 1e9, 3),
                tflops=round(flops / ts / 1e9, 1))
        except RuntimeError as e:
            rec(shape=label, sys="sdpa", error=str(e).splitlines()[0][:120])
        del q, KV, o, lse
        torch.cuda.empty_cache()
    with open(os.path.join(out, "mla_decode.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = [f"{'shape':<16} {'sys':<14} {'ms':>8} {'TB/s':>7} {'TFLOP/s':>8} {'vs eager':>8} {'vs sdpa':>8}"]
    by = {(r.get("shape"), r["sys"]): r for r in rows}
    for r in rows:
        if not r["sys"].startswith("attnc"):
            continue
        e, s = by.get((r["shape"], "eager"), {}), by.get((r["shape"], "sdpa"), {})
        ve = f"{e['ms'] / r['ms']:.2f}" if "ms" in e else "-"
        vs = f"{s['ms'] / r['ms']:.2f}" if "ms" in s else "-"
        lines.append(f"{r['shape']:<16} {r['sys']:<14} {r['ms']:>8.4f} {r['tbs']:>7.3f} "
                     f"{r['tflops']:>8.1f} {ve:>8} {vs:>8}")
    lines.append(f"copy ceiling {ceiling:.3f} TB/s")
    lines.append(f"{meta['device']}, {meta['date']}, commit {meta['commit']}, target {meta['target']}")
    open(os.path.join(out, "mla_decode.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
