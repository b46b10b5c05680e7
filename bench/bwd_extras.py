"""What the backward's extra kernels cost: attnc against itself, in one process.

Two A/B pairs, each on the same tensors, each side its own library:
  - causal (examples/causal.attn, which saves L) against causal_nol (the same
    cascade with no L): without a saved logsumexp, NAME_bwd_launch first runs
    NAME_bwd_stats, a kernel over query tiles that computes the softmax's max and
    sum again (compiler/grad_split.c);
  - softcap_alibi (examples/softcap_alibi.attn: the slope trainable) against
    softcap_alibi_frozen (the slope not trainable): dslope costs a part per key in
    the kernel over key tiles and a row pass that sums the parts.
cuDNN's causal backward (SDPA) is timed on the same q, k, v, dO for scale. attnc's
dQ, dK, dV of causal and causal_nol are checked against SDPA's (rel L2 below 2e-2),
and dslope against PyTorch autograd of the same softcap + ALiBi in f32 at the
smaller shape.

Each launch's kernels are also timed one by one (torch.profiler).

Runs on the GPU machine from a folder with gen/{causal,causal_nol,softcap_alibi,
softcap_alibi_frozen}.c (each compiled with --grad for the default bundle; causal_nol
is examples/causal.attn without its `out L` and L statement, softcap_alibi_frozen
examples/softcap_alibi.attn with `trainable` removed),
runtime/, decode.py and rundir.sh beside it, and build.json.
usage: python3 bwd_extras.py    writes DATE-COMMIT-bwd_extras/{meta.json,
bwd_extras.json,bwd_extras.txt} under $OUT (bench/rundir.sh)
"""
import ctypes
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode import bench, library, run_folder  # noqa: E402  (decode.py's helpers)

D = 128
rows = []
meta = {}


def rec(**kw):
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def launch(lib, name, tensors, dims, params, stream):
    """NAME_bwd_launch_generic on the tensors in the backward's order, with a
    workspace of the size it asks for; returns the call (for timing)."""
    fn = getattr(lib, name + "_bwd_launch_generic")
    fn.restype = ctypes.c_int
    wsb = getattr(lib, name + "_bwd_workspace_bytes_generic")
    wsb.restype = ctypes.c_size_t
    cd = (ctypes.c_long * len(dims))(*dims)
    cp = (ctypes.c_double * len(params))(*params)
    ptrs = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
    nbytes = wsb(cd)
    ws = torch.empty(max(nbytes, 256), dtype=torch.uint8, device="cuda")

    def run():
        rc = fn(ptrs, None, cd, cp, ctypes.c_void_p(ws.data_ptr()), ctypes.c_size_t(nbytes),
                ctypes.c_void_p(stream))
        if rc:
            raise RuntimeError(lib.attnrt_last_error().decode())
    run.keep = (ws, ptrs, cd, cp)
    return run


def fwd(lib, name, tensors, dims, params, stream):
    """NAME_launch_generic; a forward of several passes (a values-before-the-stream
    prologue: cosine's norms) takes a workspace of the size it asks for."""
    cd = (ctypes.c_long * len(dims))(*dims)
    cp = (ctypes.c_double * len(params))(*params)
    ptrs = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
    fn = getattr(lib, name + "_launch_generic")
    if hasattr(lib, name + "_workspace_bytes_generic"):
        wsb = getattr(lib, name + "_workspace_bytes_generic")
        wsb.restype = ctypes.c_size_t
        nbytes = wsb(cd)
        ws = torch.empty(max(nbytes, 256), dtype=torch.uint8, device="cuda")
        rc = fn(ptrs, None, cd, cp, ctypes.c_void_p(ws.data_ptr()), ctypes.c_size_t(nbytes),
                ctypes.c_void_p(stream))
        torch.cuda.synchronize()
    else:
        rc = fn(ptrs, None, cd, cp, ctypes.c_void_p(stream))
    assert rc == 0, lib.attnrt_last_error()


def kernel_ms(run, calls=5):
    """ms per call of each kernel a launch runs (torch.profiler: CUPTI sees the
    generated launchers' driver-API launches), by kernel name."""
    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            run()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t:
            out[e.key] = round(t / 1000 / calls, 4)
    return out


def rel(x, r):
    return ((x.float() - r).norm() / r.norm()).item()


def softcap_alibi_ref(q, k, v, slope, do, cap):
    """dslope by autograd of the example's forward in f32."""
    B, H, N, _ = q.shape
    s = slope.detach().clone().requires_grad_()
    i = torch.arange(N, device="cuda")
    rel_pos = (i[None, :] - i[:, None]).float()
    x = (q.float() @ k.float().transpose(-1, -2)) * D ** -0.5 + s[None, :, None, None] * rel_pos
    x = cap * torch.tanh(x / cap)
    x = x.masked_fill(i[None, :] > i[:, None], float("-inf"))
    o = torch.softmax(x, -1) @ v.float()
    o.backward(do.float())
    return s.grad


def main():
    out = run_folder("bwd_extras", "bench/bwd_extras.py", meta)
    libs = {n: library(n, n) for n in ("causal", "causal_nol", "softcap_alibi", "softcap_alibi_frozen")}
    stream = torch.cuda.current_stream().cuda_stream
    scale, cap = D ** -0.5, 50.0
    for B, H, N in [(1, 4, 1024), (8, 16, 2048), (2, 16, 8192)]:
        label = f"{B}x{N}_h{H}"
        torch.manual_seed(N)
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        dims = (B, H, N, D)
        flops = 2.5 * 2 * B * H * N * N * D
        # cuDNN's causal backward and its gradients, the reference of both causal sides
        qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ob = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
            ref = [g.float() for g in torch.autograd.grad(ob, (qr, kr, vr), do, retain_graph=True)]
            tc = bench(lambda: torch.autograd.grad(ob, (qr, kr, vr), do, retain_graph=True))
        rec(shape=label, sys="cudnn_causal", ms=round(tc, 4), tflops=round(flops / tc / 1e9, 1))
        o = torch.empty_like(q)
        lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
        fwd(libs["causal"], "causal", (q, k, v, o, lse), dims, (scale,), stream)
        dl = torch.zeros_like(lse)
        times = {}
        for name, ts in (("causal", lambda g: (q, k, v, o, lse, do, dl) + g),
                         ("causal_nol", lambda g: (q, k, v, o, do) + g)):
            g = tuple(torch.full_like(t, float("nan")) for t in (q, k, v))
            run = launch(libs[name], name, ts(g), dims, (scale,), stream)
            run()
            torch.cuda.synchronize()
            errs = [round(rel(x, r), 5) for x, r in zip(g, ref)]
            t = bench(run)
            times[name] = t
            rec(shape=label, sys="attnc_" + name, ms=round(t, 4), tflops=round(flops / t / 1e9, 1), rel_l2=errs,
                vs_cudnn=round(tc / t, 3), kernels=kernel_ms(run), **meta)
            if max(errs) > 2e-2:
                print(f"FAIL {label} {name}: rel_l2 {errs}", flush=True)
        # softcap + ALiBi: the slope trainable, then not
        slope = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)], device="cuda")
        o2 = torch.empty_like(q)
        l2 = torch.empty_like(lse)
        fwd(libs["softcap_alibi"], "softcap_alibi", (q, k, v, slope, o2, l2), dims, (scale, cap), stream)
        for name in ("softcap_alibi", "softcap_alibi_frozen"):
            g = tuple(torch.full_like(t, float("nan")) for t in (q, k, v))
            ds = (torch.full((H,), float("nan"), device="cuda"),) if name == "softcap_alibi" else ()
            run = launch(libs[name], name, (q, k, v, slope, o2, l2, do, dl) + g + ds, dims, (scale, cap), stream)
            run()
            torch.cuda.synchronize()
            extra = {}
            if ds and N <= 2048 and B * H <= 8:
                r = softcap_alibi_ref(q, k, v, slope, do, cap)
                extra["dslope_rel_l2"] = round(rel(ds[0], r), 5)
                if extra["dslope_rel_l2"] > 2e-2 or not math.isfinite(extra["dslope_rel_l2"]):
                    print(f"FAIL {label} dslope: {ds[0].tolist()} vs {r.tolist()}", flush=True)
            t = bench(run)
            times[name] = t
            rec(shape=label, sys="attnc_" + name, ms=round(t, 4), tflops=round(flops / t / 1e9, 1),
                vs_cudnn_causal=round(tc / t, 3), kernels=kernel_ms(run), **extra, **meta)
        rec(shape=label, sys="overhead", stats=round(times["causal_nol"] / times["causal"], 3),
            dslope=round(times["softcap_alibi"] / times["softcap_alibi_frozen"], 3))
        del q, k, v, do, qr, kr, vr, ob, ref, o, lse, o2, l2
        torch.cuda.empty_cache()
    with open(os.path.join(out, "bwd_extras.json"), "w") as f:
        json.dump(rows, f, indent=1)
    by = {(r.get("shape"), r["sys"]): r for r in rows}
    lines = [f"{'shape':<14} {'causal':>8} {'no L':>8} {'x':>6} {'sa':>8} {'frozen':>8} {'x':>6} {'cuDNN':>8}"]
    for shape in dict.fromkeys(r["shape"] for r in rows):
        m = lambda s: by.get((shape, s), {}).get("ms", float("nan"))
        lines.append(f"{shape:<14} {m('attnc_causal'):>8.4f} {m('attnc_causal_nol'):>8.4f} "
                     f"{m('attnc_causal_nol') / m('attnc_causal'):>6.3f} {m('attnc_softcap_alibi'):>8.4f} "
                     f"{m('attnc_softcap_alibi_frozen'):>8.4f} "
                     f"{m('attnc_softcap_alibi') / m('attnc_softcap_alibi_frozen'):>6.3f} {m('cudnn_causal'):>8.4f}")
    lines.append("ms of NAME_bwd_launch; x: the pair's ratio (no L / with L; trainable / frozen)")
    for r in rows:
        if "kernels" in r:
            lines.append(f"  {r['shape']} {r['sys']}: " + ", ".join(f"{k} {v}" for k, v in r["kernels"].items()))
    lines.append(f"{meta['device']}, {meta['date']}, commit {meta['commit']}, target {meta['target']}")
    open(os.path.join(out, "bwd_extras.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
