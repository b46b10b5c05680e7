"""The backward of a learnable sink (examples/sink.attn), differential
attention (examples/diff.attn), cosine attention (examples/cosine.attn) and
Gaussian attention (examples/gaussian.attn) against FlexAttention, on the same
tensors.

FlexAttention has none of these variants as such; each is written the way a
Flex user would, and autograd gives its backward:
  - sink: a key 0 prepended to K and V (V's row zero), its score replaced by
    sink[h] (score_mod, sink a captured tensor that requires grad), the causal
    mask shifted by one: O = sum_j exp(S) v / (sum_j exp(S) + exp(sink));
  - diff: two flex_attention calls, (Q1, K1, V) and (Q2, K2, V), causal, and
    O = O1 - lam[h] O2 (head dim 64, value dim 128);
  - cosine: Q and K normalised by torch (F.normalize), then flex_attention with
    score_mod s * tau[h] (tau = exp(min(logit_scale, log 100)), not trained),
    full, head dim 128; attnc's cosine_lse (test/lit/grad/Inputs) is the same
    with its logsumexp saved, as Flex's forward saves it;
  - gaussian: -scale/2 |q - k|^2 = scale q.k - scale/2 |k|^2 - scale/2 |q|^2,
    whose last term is the same along a row, which softmax ignores; so
    flex_attention with score_mod s - scale/2 kn2[b, h, kv], kn2 = |k|^2 by
    torch (a captured tensor whose gradient autograd carries to K), full, head
    dim 64.
attnc runs NAME_bwd_launch (its forward saves no logsumexp, so the launch first
recomputes the statistics). Its dQ, dK, dV (and dsink, dlam) are checked
against Flex's gradients (rel L2 below 2e-2), and each launch's kernels are timed
one by one (torch.profiler).

Runs on the GPU machine from a folder with gen/{sink,diff,cosine,gaussian}.c (attnc --grad,
the default bundle), runtime/, decode.py and rundir.sh beside it, and build.json.
usage: python3 sink_diff_bwd.py [VARIANT,...] (sink, diff, cosine, cosine_lse, gaussian)    writes DATE-COMMIT-sink_diff_bwd/{meta.json,
sink_diff_bwd.json,sink_diff_bwd.txt} under $OUT (bench/rundir.sh)
"""
import json
import math
import os
import sys

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bwd_extras import fwd, kernel_ms, launch, rel  # noqa: E402
from decode import bench, library, run_folder  # noqa: E402

rows = []
meta = {}
flex = torch.compile(flex_attention, dynamic=False)


def rec(**kw):
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def attnc_side(label, sys, lib, casc, fwd_in, out_like, bwd_in, wants, ref, dims, params, flops, tf,
               stream, more_out=()):
    """attnc's forward on fwd_in (its output like out_like, then more_out), then
    NAME_bwd_launch on bwd_in(O) and the gradients of `wants` (NaN first), checked
    against ref and timed."""
    o = torch.empty_like(out_like)
    fwd(lib, casc, fwd_in + (o,) + more_out, dims, params, stream)
    g = tuple(torch.full_like(t, float("nan")) for t in wants)
    run = launch(lib, casc, bwd_in(o) + g, dims, params, stream)
    run()
    torch.cuda.synchronize()
    errs = [round(rel(x, r), 5) for x, r in zip(g, ref)]
    t = bench(run)
    rec(shape=label, sys=sys, ms=round(t, 4), tflops=round(flops / t / 1e9, 1), rel_l2=errs,
        vs_flex=round(tf / t, 3), kernels=kernel_ms(run), **meta)
    if max(errs) > 2e-2:
        print(f"FAIL {label} {sys}: rel_l2 {errs}", flush=True)


def sink_flex(q, k, v, sink, do):
    """The sink as a prepended key; returns (backward call, grads of q, k, v, sink)."""
    B, H, N, D = q.shape
    kp = torch.cat([torch.zeros(B, H, 1, D, device="cuda", dtype=k.dtype), k], 2)
    vp = torch.cat([torch.zeros(B, H, 1, D, device="cuda", dtype=v.dtype), v], 2)
    qr, kr, vr = (t.detach().requires_grad_() for t in (q, kp, vp))
    sr = sink.detach().clone().requires_grad_()

    def score(s, b, h, qi, kv):
        return torch.where(kv == 0, sr[h], s)

    def mask(b, h, qi, kv):
        return (kv == 0) | (kv - 1 <= qi)

    bm = create_block_mask(mask, 1, 1, N, N + 1, device="cuda")
    o = flex(qr, kr, vr, score_mod=score, block_mask=bm, scale=D ** -0.5)
    grads = torch.autograd.grad(o, (qr, kr, vr, sr), do, retain_graph=True)
    call = lambda: torch.autograd.grad(o, (qr, kr, vr, sr), do, retain_graph=True)
    return call, (grads[0].float(), grads[1][:, :, 1:].float(), grads[2][:, :, 1:].float(), grads[3].float())


def diff_flex(q1, k1, q2, k2, v, lam, do):
    B, H, N, D = q1.shape
    ts = [t.detach().requires_grad_() for t in (q1, k1, q2, k2, v)]
    lr = lam.detach().clone().requires_grad_()
    bm = create_block_mask(lambda b, h, qi, kv: kv <= qi, 1, 1, N, N, device="cuda")
    o1 = flex(ts[0], ts[1], ts[4], block_mask=bm, scale=D ** -0.5)
    o2 = flex(ts[2], ts[3], ts[4], block_mask=bm, scale=D ** -0.5)
    o = o1 - lr[None, :, None, None] * o2
    grads = torch.autograd.grad(o, ts + [lr], do, retain_graph=True)
    call = lambda: torch.autograd.grad(o, ts + [lr], do, retain_graph=True)
    return call, [g.float() for g in grads]


def cosine_flex(q, k, v, logit_scale, do):
    tau = torch.exp(torch.clamp(logit_scale, max=math.log(100.0)))
    ts = [t.detach().requires_grad_() for t in (q, k, v)]
    qn = torch.nn.functional.normalize(ts[0].float(), dim=-1, eps=1e-12).to(q.dtype)
    kn = torch.nn.functional.normalize(ts[1].float(), dim=-1, eps=1e-12).to(k.dtype)
    o = flex(qn, kn, ts[2], score_mod=lambda s, b, h, qi, kv: s * tau[h], scale=1.0)
    grads = torch.autograd.grad(o, ts, do, retain_graph=True)
    call = lambda: torch.autograd.grad(o, ts, do, retain_graph=True)
    return call, [g.float() for g in grads]


def gaussian_flex(q, k, v, do):
    scale = q.shape[-1] ** -0.5
    ts = [t.detach().requires_grad_() for t in (q, k, v)]
    kn2 = (ts[1].float() ** 2).sum(-1)
    o = flex(ts[0], ts[1], ts[2], score_mod=lambda s, b, h, qi, kv: s - 0.5 * scale * kn2[b, h, kv],
             scale=scale)
    grads = torch.autograd.grad(o, ts, do, retain_graph=True)
    call = lambda: torch.autograd.grad(o, ts, do, retain_graph=True)
    return call, [g.float() for g in grads]


def norms(only, stream):
    """cosine (D 128) and gaussian (D 64) at each size, full attention, N = M."""
    libs = {v: library(v, v) for v in ("cosine", "cosine_lse", "gaussian") if v in only}
    for B, H, N in [(1, 4, 1024), (8, 16, 2048), (2, 16, 8192)] if libs else []:
        label = f"{B}x{N}_h{H}"
        torch.manual_seed(N)
        for v_ in libs:
            D = 64 if v_ == "gaussian" else 128
            q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            flops = 2.5 * 2 * B * H * N * N * (D + D)
            more, extra = (), ()
            if v_.startswith("cosine"):
                ls = math.log(10.0) + 0.1 * torch.randn(H, device="cuda")
                call, ref = cosine_flex(q, k, v, ls, do)
                ins, params = (q, k, v, ls), (1e-12,)
                if v_ == "cosine_lse":  # the forward saves L: the backward's dL is zero
                    lse = torch.empty(B, H, N, device="cuda")
                    more, extra = (lse,), (lse, do, torch.zeros_like(lse))
            else:
                call, ref = gaussian_flex(q, k, v, do)
                ins, params = (q, k, v), (D ** -0.5,)
            tf = bench(call)
            rec(shape=label, sys="flex_" + v_, ms=round(tf, 4), tflops=round(flops / tf / 1e9, 1))
            bwd_in = (lambda o: ins + (o,) + extra) if extra else (lambda o: ins + (o, do))
            attnc_side(label, "attnc_" + v_, libs[v_], v_, ins, q, bwd_in, (q, k, v), ref,
                       (B, H, N, N, D), params, flops, tf, stream, more)
            del q, k, v, do, ref, call
        torch.cuda.empty_cache()


def main():
    only = sys.argv[1].split(",") if len(sys.argv) > 1 else ["sink", "diff", "cosine", "cosine_lse", "gaussian"]
    out = run_folder("sink_diff_bwd", "bench/sink_diff_bwd.py", meta)
    libs = {v: library(v, c) for v, c in (("sink", "gpt_oss_sink"), ("diff", "diff_attn")) if v in only}
    stream = torch.cuda.current_stream().cuda_stream
    for B, H, N in [(1, 4, 1024), (8, 16, 2048), (2, 16, 8192)] if libs else []:
        label = f"{B}x{N}_h{H}"
        torch.manual_seed(N)
        # sink, D 64
        D = 64
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        sink = torch.randn(H, device="cuda")
        flops = 2.5 * 0.5 * 2 * B * H * N * N * (D + D)  # causal: half; the backward 2.5x the forward
        try:
            call, ref = sink_flex(q, k, v, sink, do)
        except Exception as e:  # a captured tensor's gradient in score_mod
            print(f"FAIL {label} flex sink: {e}", flush=True)
            return
        tf = bench(call)
        rec(shape=label, sys="flex_sink", ms=round(tf, 4), tflops=round(flops / tf / 1e9, 1))
        attnc_side(label, "attnc_sink", libs["sink"], "gpt_oss_sink", (q, k, v, sink), q,
                   lambda o: (q, k, v, sink, o, do), (q, k, v, sink), ref, (B, H, N, D), (D ** -0.5,),
                   flops, tf, stream)
        del q, k, v, do, ref, call
        # differential attention, D 64, DV 128
        q1, k1, q2, k2 = (torch.randn(B, H, N, 64, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        v, do = (torch.randn(B, H, N, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        lam = 0.5 + 0.1 * torch.randn(H, device="cuda")
        flops = 2.5 * 0.5 * 2 * B * H * N * N * (64 + 64 + 128 + 128)  # causal: half
        call, ref = diff_flex(q1, k1, q2, k2, v, lam, do)
        tf = bench(call)
        rec(shape=label, sys="flex_diff", ms=round(tf, 4), tflops=round(flops / tf / 1e9, 1))
        ins = (q1, k1, q2, k2, v, lam)  # the backward reads no O: its row terms need O1, O2
        attnc_side(label, "attnc_diff", libs["diff"], "diff_attn", ins, v, lambda o: ins + (do,), ins, ref,
                   (B, H, N, 64, 128), (0.125,), flops, tf, stream)
        del q1, k1, q2, k2, v, do, ins, ref, call
        torch.cuda.empty_cache()
    norms(only, stream)
    with open(os.path.join(out, "sink_diff_bwd.json"), "w") as f:
        json.dump(rows, f, indent=1)
    by = {(r.get("shape"), r["sys"]): r for r in rows}
    lines = [f"{'shape':<14} {'variant':<9} {'attnc':>8} {'Flex':>8} {'x Flex':>7} {'TFLOP/s':>8}"]
    for shape in dict.fromkeys(r["shape"] for r in rows):
        for v in dict.fromkeys(r["sys"][6:] for r in rows if r["sys"].startswith("attnc_")):
            a, f = by.get((shape, "attnc_" + v)), by.get((shape, "flex_" + v))
            if a and f:
                lines.append(f"{shape:<14} {v:<9} {a['ms']:>8.4f} {f['ms']:>8.4f} {f['ms'] / a['ms']:>7.3f} "
                             f"{a['tflops']:>8.1f}")
    lines.append("ms of the backward (attnc: NAME_bwd_launch; Flex: autograd.grad); x Flex: Flex's ms / attnc's")
    for r in rows:
        if "kernels" in r:
            lines.append(f"  {r['shape']} {r['sys']} rel_l2 {r['rel_l2']}: "
                         + ", ".join(f"{k} {v}" for k, v in r["kernels"].items()))
    lines.append(f"{meta['device']}, {meta['date']}, commit {meta['commit']}, target {meta['target']}")
    open(os.path.join(out, "sink_diff_bwd.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
