"""GQA backward: attnc's kernels against PyTorch's, in one process.

Runs on the GPU machine from a folder with gen/gqa.c (examples/gqa.attn compiled with
--grad for the default bundle), gen/causal.c (examples/causal.attn the same way: its
MHA backward at the same query heads), runtime/, decode.py and rundir.sh beside this
script, and build.json. examples/gqa.attn is causal (M = N) with HKV K/V heads of G
query heads each, D 128, bf16. attnc's backward (NAME_bwd_launch: the row term, dQ,
then dK and dV per query head in f32, then a row pass per gradient that sums each
K/V head's G parts in a fixed order) runs on the same tensors as SDPA's backward
(cuDNN and FlashAttention-2 backends, enable_gqa) and FlexAttention's (enable_gqa,
causal block mask; forward and backward timed together less the forward, since its
compiled backward takes no retained graph). TFLOP/s count 2.5x the causal forward, 2.5 * 2 * B * H * N^2 * D.
attnc's dQ, dK and dV are checked against SDPA's (rel L2 below 2e-2).

usage: python3 gqa_bwd.py    writes DATE-COMMIT-gqa_bwd/{meta.json,gqa_bwd.json,gqa_bwd.txt}
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

D = 128
rows = []
meta = {}


def rec(**kw):
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def call(lib, fn, ptrs, dims, params, ws, nbytes, stream):
    rc = getattr(lib, fn)(ptrs, None, dims, params, ctypes.c_void_p(ws), ctypes.c_size_t(nbytes),
                          ctypes.c_void_p(stream))
    if rc:
        raise RuntimeError(lib.attnrt_last_error().decode())


def main():
    out = run_folder("gqa_bwd", "bench/gqa_bwd.py", meta)
    gqa = library("gqa", "gqa")
    mha = library("causal", "causal")
    for lib, n in ((gqa, "gqa"), (mha, "causal")):
        getattr(lib, n + "_bwd_launch_generic").restype = ctypes.c_int
        getattr(lib, n + "_bwd_workspace_bytes_generic").restype = ctypes.c_size_t
    stream = torch.cuda.current_stream().cuda_stream
    scale = D ** -0.5
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention)
    except Exception:  # noqa: BLE001
        flex = None
    for B, HKV, G, N in [(8, 8, 4, 2048), (2, 8, 4, 8192), (2, 4, 8, 8192)]:
        H = HKV * G
        torch.manual_seed(N + G)
        q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
        do = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
        qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
        o_ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True, enable_gqa=True)
        o_ref.backward(do)
        ref = (qr.grad.float(), kr.grad.float(), vr.grad.float())
        # the forward's saved outputs, from attnc's forward (O and L)
        o = torch.empty_like(q)
        lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
        dims = (ctypes.c_long * 6)(B, HKV, G, N, N, D)
        params = (ctypes.c_double * 1)(scale)
        fptrs = (ctypes.c_void_p * 5)(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr())
        rc = gqa.gqa_launch_generic(fptrs, None, dims, params, ctypes.c_void_p(stream))
        assert rc == 0, gqa.attnrt_last_error()
        dl = torch.zeros(B, H, N, device="cuda", dtype=torch.float32)
        dq, dk, dv = (torch.full_like(t, float("nan")) for t in (q, k, v))
        ptrs = (ctypes.c_void_p * 10)(*[t.data_ptr() for t in (q, k, v, o, lse, do, dl, dq, dk, dv)])
        nbytes = gqa.gqa_bwd_workspace_bytes_generic(dims)
        ws = torch.empty(max(nbytes, 256), dtype=torch.uint8, device="cuda")
        run = lambda: call(gqa, "gqa_bwd_launch_generic", ptrs, dims, params, ws.data_ptr(), nbytes, stream)
        run()
        torch.cuda.synchronize()
        errs = [((x.float() - r).norm() / r.norm()).item() for x, r in zip((dq, dk, dv), ref)]
        label = f"{B}x{N}_h{H}_g{G}"
        flops = 2.5 * 2 * B * H * N * N * D
        t = bench(run)
        rec(shape=label, sys="attnc_gqa", ms=round(t, 4), tflops=round(flops / t / 1e9, 1),
            rel_l2=[round(e, 5) for e in errs], **meta)
        if max(errs) > 2e-2:
            print(f"FAIL {label}: rel_l2 {errs}", flush=True)
        # attnc's MHA backward at the same query heads (K and V repeated)
        kx, vx = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)
        mdims = (ctypes.c_long * 4)(B, H, N, D)
        mo, ml = torch.empty_like(q), torch.empty_like(lse)
        mptrs = (ctypes.c_void_p * 5)(q.data_ptr(), kx.data_ptr(), vx.data_ptr(), mo.data_ptr(), ml.data_ptr())
        rc = mha.causal_launch_generic(mptrs, None, mdims, params, ctypes.c_void_p(stream))
        assert rc == 0, mha.attnrt_last_error()
        mq, mk, mv = torch.empty_like(q), torch.empty_like(kx), torch.empty_like(vx)
        mb = (ctypes.c_void_p * 10)(*[t.data_ptr() for t in (q, kx, vx, mo, ml, do, dl, mq, mk, mv)])
        mn = mha.causal_bwd_workspace_bytes_generic(mdims)
        mws = torch.empty(max(mn, 256), dtype=torch.uint8, device="cuda")
        try:
            mrun = lambda: call(mha, "causal_bwd_launch_generic", mb, mdims, params, mws.data_ptr(), mn, stream)
            mrun()
            tm = bench(mrun)
            rec(shape=label, sys="attnc_mha_same_heads", ms=round(tm, 4), tflops=round(flops / tm / 1e9, 1))
        except Exception as e:  # noqa: BLE001
            rec(shape=label, sys="attnc_mha_same_heads", error=str(e)[:200])
        for sname, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(be):
                    qb, kb, vb = (t.detach().requires_grad_() for t in (q, k, v))
                    ob = F.scaled_dot_product_attention(qb, kb, vb, is_causal=True, enable_gqa=True)
                ts = bench(lambda: torch.autograd.grad(ob, (qb, kb, vb), do, retain_graph=True))
                rec(shape=label, sys=sname, ms=round(ts, 4), tflops=round(flops / ts / 1e9, 1))
            except Exception as e:  # noqa: BLE001
                rec(shape=label, sys=sname, error=str(e).splitlines()[0][:160])
        if flex is not None:
            try:
                bm = create_block_mask(lambda b, h, i, j: i >= j, None, None, N, N)
                qb, kb, vb = (t.detach().requires_grad_() for t in (q, k, v))
                # its compiled backward takes no retained graph: forward and
                # backward timed together, less the forward alone
                tf = bench(lambda: flex(q, k, v, block_mask=bm, enable_gqa=True))
                tfb = bench(lambda: flex(qb, kb, vb, block_mask=bm, enable_gqa=True).backward(do))
                ts = tfb - tf
                rec(shape=label, sys="flex", ms=round(ts, 4), tflops=round(flops / ts / 1e9, 1),
                    fwd_ms=round(tf, 4), fwd_bwd_ms=round(tfb, 4))
            except Exception as e:  # noqa: BLE001
                rec(shape=label, sys="flex", error=str(e).splitlines()[0][:160])
        del q, k, v, do, qr, kr, vr, o_ref, ref, dq, dk, dv, ws, kx, vx, mo, ml, mq, mk, mv
        torch.cuda.empty_cache()
    with open(os.path.join(out, "gqa_bwd.json"), "w") as f:
        json.dump(rows, f, indent=1)
    by = {(r.get("shape"), r["sys"]): r for r in rows}
    lines = [f"{'shape':<22} {'attnc ms':>9} {'TFLOP/s':>8} {'vs cuDNN':>8} {'vs FA2':>7} {'vs Flex':>7} {'vs own MHA':>10}"]
    for r in rows:
        if r["sys"] != "attnc_gqa":
            continue
        cols = []
        for other in ("cudnn", "fa2", "flex", "attnc_mha_same_heads"):
            x = by.get((r["shape"], other), {})
            cols.append(f"{x['ms'] / r['ms']:.2f}" if "ms" in x else "-")
        lines.append(f"{r['shape']:<22} {r['ms']:>9.4f} {r['tflops']:>8.1f} {cols[0]:>8} {cols[1]:>7} {cols[2]:>7} {cols[3]:>10}")
    lines.append(f"{meta['device']}, {meta['date']}, commit {meta['commit']}, target {meta['target']}")
    open(os.path.join(out, "gqa_bwd.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
