"""Packed variable-length prefill (cu_seqlens): attnc against FlashAttention-2's
varlen kernel and cuDNN on the padded batch, in one process.

Runs on the GPU machine from a folder holding decode.py (whose timing and
run folder it uses), gen/varlen.c (examples/varlen.attn
compiled for the default bundle), optionally gen/varlen80.c (sm_80's kernel
alone), the runtime sources in runtime/, rundir.sh and build.json (as
bench/prepare.sh writes them). The cascade: causal attention over ragged
sequences packed without padding, GQA with HKV = 8 K/V heads of G = 4 query
heads, D = 128, bf16; q, K and V are [tokens, heads, D], sequence b's rows
cu[b] to cu[b + 1] - 1 (query and key lengths equal: plain prefill).

Per shape, on the same tensors:
  attnc            varlen_launch_generic (the bundle: sm_90a's kernel on Hopper)
  attnc_sm80       the same cascade compiled for sm_80 alone, where present
  fa2_varlen       torch.ops.aten._flash_attention_forward with cu_seqlens (the
                   FlashAttention-2 varlen kernel torch ships), enable GQA by
                   its own head counts
  cudnn_nested     SDPA's cuDNN backend on the ragged batch as torch nested
                   (jagged) tensors, K and V repeated to the query heads,
                   where this torch takes them (else the row says why)
  cudnn_padded     SDPA's cuDNN backend on the batch padded to the longest
                   sequence (is_causal; what a padded launch costs; K and V
                   repeated to the query heads)
TFLOP/s count the causal pairs each sequence has (n (n + 1) / 2), 4 H D
flops a pair, over the median time (triton do_bench). attnc's and FA2's
outputs are compared on every packed row (rel L2 below 1e-2, no NaN).

Then a few new tokens after long cached prefixes (speculative decoding,
chunked prefill; kind "append"): sequence b has lq[b] queries and lk[b] >=
lq[b] keys, the queries the last lq[b] positions (causal at the bottom
right). The plain grid is b x heads x one query tile, so attnc's kernel of
partial states (gen/varlen.c built with --parts) also runs split-KV
(attnc_split: NAME_launch_part_generic, the launcher's split count) and
stream-K (attnc_streamk), against fa2_varlen on the same tensors and SDPA's
cuDNN on the batch padded to the longest (no mask: the causal corner is
lq^2 / 2 of lq lk pairs; its time is the anchor, its output is not compared).
TB/s count the K and V bytes each sequence reads once.

Last the backward of the prefill shapes (kind "bwd"), where gen/varlen_g.c
(examples/varlen.attn built with --grad; gen/varlen_g80.c sm_80's alone)
is present: varlen_bwd_launch_generic on attnc's own forward's o and lse,
dO random, dlse zero, against FlashAttention-2's varlen backward
(torch.ops.aten._flash_attention_backward) on its own forward's, the
same q, K, V and dO; FLOPs 2.5 times the forward's, dq, dK and dV
compared (rel L2 below 2e-2).

usage: python3 varlen.py    writes DATE-COMMIT-varlen/{meta,varlen}.json and
varlen.txt under $OUT (bench/rundir.sh, bench/results/README.md)
"""
import ctypes
import json
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# timing, build, check, run folder; rec records a row in rows (attnc rows with meta)
from decode import Part, bench, checked_launch, library, meta, rec, rel, rows, run_folder

HERE = os.path.dirname(os.path.abspath(__file__))
D, HKV, G = 128, 8, 4


def shapes():
    """(label, lengths): ragged batches with lengths uniform in 1..L, and the
    balanced batch of each one's total (the same work without raggedness)."""
    g = torch.Generator().manual_seed(5)
    out = []
    for label, n, top in (("16x1..4k", 16, 4096), ("64x1..1k", 64, 1024), ("4x1..16k", 4, 16384)):
        lens = torch.randint(1, top + 1, (n,), generator=g).tolist()
        out.append((label, lens))
        mean = sum(lens) // n
        out.append((label.split("x")[0] + "x" + str(mean) + "_balanced", [mean] * n))
    out.append(("8x2k", [2048] * 8))
    return out


def fa2_forward(q, K, V, cq, ck, nq, nk, flops, base, more=lambda r: r):
    """FlashAttention-2's varlen forward (torch's _flash_attention_forward with
    cu_seqlens, causal at the bottom right) on these tensors: its row recorded
    (more adds fields), its output returned, or None where it fails."""
    fn = lambda: torch.ops.aten._flash_attention_forward(q, K, V, cq, ck, nq, nk, 0.0, True, False,
                                                         scale=D ** -0.5)[0]
    try:
        ref = fn()
        ms = bench(fn)
        rec(sys="fa2_varlen", **more(dict(ms=ms, tflops=flops / ms / 1e9)), **base)
        return ref
    except Exception as e:
        rec(sys="fa2_varlen", error=str(e)[:200], **base)
        return None


def bwd_library(name):
    """gen/NAME.c (varlen with --grad) built into lib/NAME.so, its launches typed."""
    lib = library(name, "varlen")
    lib.varlen_bwd_launch_generic.restype = ctypes.c_int
    lib.varlen_bwd_workspace_bytes_generic.restype = ctypes.c_size_t
    return lib


def backward_rows(blibs, label, lens, stream):
    """The backward of one prefill shape: FA2's varlen backward and attnc's."""
    B, T, L = len(lens), sum(lens), max(lens)
    H = HKV * G
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    q = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16)
    K = torch.randn(T, HKV, D, device="cuda", dtype=torch.bfloat16)
    V = torch.randn(T, HKV, D, device="cuda", dtype=torch.bfloat16)
    dO = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16)
    flops = 2.5 * 4 * H * D * sum(n * (n + 1) // 2 for n in lens)
    base = dict(kind="bwd", shape=label, B=B, tokens=T, longest=L, HKV=HKV, G=G, D=D)
    ref = None
    try:
        out, lse, seed, off, _ = torch.ops.aten._flash_attention_forward(q, K, V, cu, cu, L, L, 0.0, True, False,
                                                                          scale=D ** -0.5)

        def fa2():
            return torch.ops.aten._flash_attention_backward(dO, q, K, V, out, lse, cu, cu, L, L, 0.0, True, seed,
                                                            off, scale=D ** -0.5)
        ref = [x.float() for x in fa2()[:3]]
        ms = bench(fa2)
        rec(sys="fa2_varlen_bwd", ms=ms, tflops=flops / ms / 1e9, **base)
    except Exception as e:
        rec(sys="fa2_varlen_bwd", error=str(e)[:200], **base)
    dims = (ctypes.c_long * 8)(B, T, T, HKV, G, L, L, D)
    params = (ctypes.c_double * 1)(D ** -0.5)
    for name, lib in blibs:
        o = torch.empty(T, H, D, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(T, H, device="cuda", dtype=torch.float32)
        fp = (ctypes.c_void_p * 8)(*[x.data_ptr() for x in (q, K, V, cu, cu, o, lse)])
        if lib.varlen_launch_generic(fp, None, dims, params, stream()):
            rec(sys=name, error=lib.attnrt_last_error().decode(), **base)
            continue
        dlse = torch.zeros(T, H, device="cuda", dtype=torch.float32)
        grads = [torch.full_like(x, float("nan")) for x in (q, K, V)]
        ptrs = (ctypes.c_void_p * 13)(*[x.data_ptr() for x in (q, K, V, cu, cu, o, lse, dO, dlse)] +
                                      [x.data_ptr() for x in grads])
        wsb = lib.varlen_bwd_workspace_bytes_generic(dims)
        ws = torch.empty(max(wsb, 16), device="cuda", dtype=torch.uint8)
        call = lambda: lib.varlen_bwd_launch_generic(ptrs, None, dims, params, ctypes.c_void_p(ws.data_ptr()),
                                                     ctypes.c_size_t(wsb), stream())
        if call():
            rec(sys=name, error=lib.attnrt_last_error().decode(), **base)
            continue
        torch.cuda.synchronize()
        errs = [rel(g, r) if ref else None for g, r in zip(grads, ref or [None] * 3)]
        nan = sum(int(torch.isnan(g).sum().item()) for g in grads)
        ms = bench(call)
        rec(sys=name, ms=ms, tflops=flops / ms / 1e9, rel_l2=errs, nan=nan,
            ok=bool(ref and max(errs) < 2e-2 and nan == 0), **base)
        del o, lse, dlse, grads, ws
    del q, K, V, dO
    torch.cuda.empty_cache()


def append_shapes():
    """(label, lq, lk): new tokens after ragged cached prefixes, and one long
    balanced prefix each."""
    g = torch.Generator().manual_seed(6)
    out = []
    for label, n, q, top in (("4x16+1..32k", 4, 16, 32768), ("16x16+1..16k", 16, 16, 16384),
                             ("8x128+1..8k", 8, 128, 8192)):
        lk = [q + x for x in torch.randint(1, top + 1, (n,), generator=g).tolist()]
        out.append((label, [q] * n, lk))
    out.append(("1x64+64k", [64], [65536 + 64]))
    out.append(("2x16+128k", [16, 16], [131072 + 16] * 2))
    return out


def append_rows(libs, label, lq, lk, stream):
    """One append shape: FA2's varlen kernel, cuDNN on the padded batch, and
    attnc's plain, split-KV and stream-K launches on the same tensors."""
    B, T, TK, NQ, NK = len(lq), sum(lq), sum(lk), max(lq), max(lk)
    H = HKV * G
    cq = torch.tensor([0] + torch.tensor(lq).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    ck = torch.tensor([0] + torch.tensor(lk).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    q = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16)
    K = torch.randn(TK, HKV, D, device="cuda", dtype=torch.bfloat16)
    V = torch.randn(TK, HKV, D, device="cuda", dtype=torch.bfloat16)
    flops = 4 * H * D * sum(m * k - m * (m - 1) // 2 for m, k in zip(lq, lk))
    nbytes = 2 * TK * HKV * D * 2
    base = dict(kind="append", shape=label, B=B, tokens=T, kv_tokens=TK, longest_q=NQ, longest_k=NK,
                HKV=HKV, G=G, D=D)

    def tb(r):
        if "ms" in r:
            r["tbps"] = nbytes / r["ms"] / 1e9
        return r

    ref = fa2_forward(q, K, V, cq, ck, NQ, NK, flops, base, tb)
    qp = torch.randn(B, H, NQ, D, device="cuda", dtype=torch.bfloat16)
    Kp = torch.randn(B, H, NK, D, device="cuda", dtype=torch.bfloat16)
    Vp = torch.randn_like(Kp)
    try:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            fn = lambda: F.scaled_dot_product_attention(qp, Kp, Vp)
            ms = bench(fn)
        rec(sys="cudnn_padded", **tb(dict(ms=ms, tflops=flops / ms / 1e9)), **base)
    except Exception as e:
        rec(sys="cudnn_padded", error=str(e)[:200], **base)
    del qp, Kp, Vp
    ws_bytes = 1 << 28
    ws = torch.empty(ws_bytes, device="cuda", dtype=torch.uint8)
    o = torch.empty(T, H, D, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(T, H, device="cuda", dtype=torch.float32)
    ptrs = (ctypes.c_void_p * 8)(*[x.data_ptr() for x in (q, K, V, cq, ck, o, lse)])
    dims = (ctypes.c_long * 8)(B, T, TK, HKV, G, NQ, NK, D)
    params = (ctypes.c_double * 1)(D ** -0.5)
    split = Part(0, 0, 0, 0, 0, 2, ws.data_ptr(), ws_bytes, None, 0)
    sk = Part(0, 0, 0, 0, 0, 2 | 4, ws.data_ptr(), ws_bytes, None, 0)
    for name, lib in libs:
        runs = [("", lambda lib=lib: lib.varlen_launch_generic(ptrs, None, dims, params, stream()))]
        if hasattr(lib, "varlen_launch_part_generic"):
            runs += [(tag, lambda lib=lib, pt=pt: lib.varlen_launch_part_generic(
                ptrs, None, dims, params, ctypes.byref(pt), stream())) for tag, pt in
                     (("_split", split), ("_streamk", sk))]
        for tag, call in runs:
            o.fill_(float("nan"))
            rec(sys=name + tag, **tb(checked_launch(lib, call, o, ref, flops)), **base)
    del q, K, V, ws, o, lse
    torch.cuda.empty_cache()


def main():
    run = run_folder("varlen", "bench/varlen.py", meta)
    libs = [("attnc", library("varlen", "varlen"))]
    if os.path.exists(os.path.join(HERE, "gen", "varlen80.c")):
        libs.append(("attnc_sm80", library("varlen80", "varlen")))
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    H = HKV * G
    for label, lens in shapes():
        B, T, L = len(lens), sum(lens), max(lens)
        cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
        q = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16)
        K = torch.randn(T, HKV, D, device="cuda", dtype=torch.bfloat16)
        V = torch.randn(T, HKV, D, device="cuda", dtype=torch.bfloat16)
        flops = 4 * H * D * sum(n * (n + 1) // 2 for n in lens)
        base = dict(kind="varlen", shape=label, B=B, tokens=T, longest=L, HKV=HKV, G=G, D=D)

        ref = fa2_forward(q, K, V, cu, cu, L, L, flops, base)
        # the padded batch: [B, H, L, D], K and V repeated to the query heads
        qp = torch.zeros(B, H, L, D, device="cuda", dtype=torch.bfloat16)
        Kp = torch.zeros(B, H, L, D, device="cuda", dtype=torch.bfloat16)
        Vp = torch.zeros_like(Kp)
        for b in range(B):
            s, n = cu[b].item(), lens[b]
            qp[b, :, :n] = q[s:s + n].transpose(0, 1)
            Kp[b, :, :n] = K[s:s + n].repeat_interleave(G, 1).transpose(0, 1)
            Vp[b, :, :n] = V[s:s + n].repeat_interleave(G, 1).transpose(0, 1)
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                fn = lambda: F.scaled_dot_product_attention(qp, Kp, Vp, is_causal=True)
                ms = bench(fn)
            rec(sys="cudnn_padded", ms=ms, tflops=flops / ms / 1e9, **base)
        except Exception as e:
            rec(sys="cudnn_padded", error=str(e)[:200], **base)
        del qp, Kp, Vp
        # the same ragged batch as torch nested (jagged) tensors, K and V
        # repeated to the query heads: SDPA's cuDNN backend where it takes them
        try:
            nest = lambda x: torch.nested.nested_tensor_from_jagged(x, cu.long()).transpose(1, 2)
            qn, Kn, Vn = nest(q), nest(K.repeat_interleave(G, 1)), nest(V.repeat_interleave(G, 1))
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                fn = lambda: F.scaled_dot_product_attention(qn, Kn, Vn, is_causal=True)
                ms = bench(fn)
            rec(sys="cudnn_nested", ms=ms, tflops=flops / ms / 1e9, **base)
        except Exception as e:
            rec(sys="cudnn_nested", error=str(e)[:200], **base)
        for name, lib in libs:
            o = torch.full((T, H, D), float("nan"), device="cuda", dtype=torch.bfloat16)
            lse = torch.full((T, H), float("nan"), device="cuda", dtype=torch.float32)
            ptrs = (ctypes.c_void_p * 8)(*[x.data_ptr() for x in (q, K, V, cu, cu, o, lse)])
            dims = (ctypes.c_long * 8)(B, T, T, HKV, G, L, L, D)
            params = (ctypes.c_double * 1)(D ** -0.5)
            call = lambda: lib.varlen_launch_generic(ptrs, None, dims, params, stream())
            rec(sys=name, **checked_launch(lib, call, o, ref, flops), **base)
        del q, K, V
        torch.cuda.empty_cache()
    for label, lq, lk in append_shapes():
        append_rows(libs, label, lq, lk, stream)
    blibs = [(tag, bwd_library(f)) for tag, f in (("attnc_bwd", "varlen_g"), ("attnc_sm80_bwd", "varlen_g80"))
             if os.path.exists(os.path.join(HERE, "gen", f + ".c"))]
    for label, lens in shapes() if blibs else []:
        backward_rows(blibs, label, lens, stream)
    with open(os.path.join(run, "varlen.json"), "w") as f:
        json.dump(rows, f, indent=1)
    by = {}
    for r in rows:
        label = r["shape"] + (" bwd" if r["kind"] == "bwd" else "")
        by.setdefault(label, {})[r["sys"]] = r
    lines = ["%-22s %-18s %9s %9s %9s %9s %9s %7s" % ("shape", "system", "ms", "TFLOP/s", "x_fa2", "x_cudnn",
                                                      "x_cudnn_n", "TB/s")]
    for shape, s in by.items():
        for name, r in s.items():
            if "ms" not in r:
                lines.append("%-22s %-18s %s" % (shape, name, r.get("error", "")))
                continue
            fa = s.get("fa2_varlen_bwd" if shape.endswith(" bwd") else "fa2_varlen", {}).get("ms")
            cd = s.get("cudnn_padded", {}).get("ms")
            cn = s.get("cudnn_nested", {}).get("ms")
            lines.append("%-22s %-18s %9.3f %9.1f %9s %9s %9s %7s%s" % (
                shape, name, r["ms"], r["tflops"], "%.2f" % (fa / r["ms"]) if fa else "-",
                "%.2f" % (cd / r["ms"]) if cd else "-", "%.2f" % (cn / r["ms"]) if cn else "-",
                "%.2f" % r["tbps"] if "tbps" in r else "-",
                "" if r.get("ok", True) else "  CHECK FAILED rel %s nan %s" % (r.get("rel_l2"), r.get("nan"))))
    open(os.path.join(run, "varlen.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
