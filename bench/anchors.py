"""attnc's kernels against the anchors, in one process, on the same tensors.

Runs on the GPU machine from the folder bench/prepare.sh filled (generated
kernels in gen/, runtime sources in runtime/). Each attnc kernel is built
into a shared library with the runtime compiled in and called through
ctypes on torch's tensors and stream; torch SDPA (FlashAttention-2 and cuDNN
backends) and FlexAttention run on the very same q, k, v. Timing is
triton.testing.do_bench's median (events), as in ../shared/anchors.
Every attnc result is also checked against the anchor's output.
FLOPs, counted two ways for each attnc row:
- tflops (and the TABLE's vs_own_full): 4*B*H*N^2*D times the fraction of
  (query, key) pairs the mask keeps, the same for every system;
- tflops_tiles (and vs_own_full_tiles, against own full's tflops): the work
  left after tile skipping, 4*B*H*D times the (query, key) pairs of every CTA
  tile the kernel computes. A tile is BM query rows by BN keys (both read from
  the launcher in gen/NAME.c), tiles starting at multiples of BM and BN
  from 0 and clipped to the N x N matrix; it is computed in full when the mask
  keeps at least one pair in it, and skipped otherwise. tile_frac is that
  count over N^2 (1 for full: every tile is computed).

usage: python3 anchors.py [D ...] [--n N ...] [--mla] [--bwd]   (default D 128 64, N 2048 8192)
--bwd: the backward instead (bwd_rows): attnc's NAME_bwd_launch against
SDPA's backward (FlashAttention-2, cuDNN) for full and causal and
FlexAttention's for every variant, FLOPs 2.5 times the forward's.
At a head dim with no variant kernels (256: full and causal only) the other
variants are left out, anchors too; --mla adds causal attention with MLA's
head dims (Q, K 192, V 128: mla_causal) at each N, against whichever of
SDPA's backends and FlexAttention run it.
Writes a run folder under $OUT, DATE-COMMIT-anchors (rundir.sh, from the
build.json bench/prepare.sh left beside this script; bench/results/README.md):
meta.json, anchors.json (every row) and anchors.txt (the TABLE). Each attnc
row also says which kernels it timed: target, device, commit and date.
"""
import ctypes
import json
import math
import os
import re
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from table import table

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("OUT", "/tmp/out")
dev, dt = "cuda", torch.bfloat16
rows = []
# target, device, commit and date of this run's attnc kernels (start_run)
run_meta = {}


def rec(**kw):
    if str(kw.get("sys", "")).startswith("attnc"):
        for k, v in run_meta.items():
            kw.setdefault(k, v)
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def start_run(kind="anchors", script="anchors"):
    """The run's folder (DATE-COMMIT-kind), made by rundir.sh with torch's
    name for the device; fills run_meta from its meta.json."""
    env = dict(os.environ, OUT=OUT)
    env.setdefault("DEVICE", torch.cuda.get_device_name())
    run = subprocess.run(["sh", os.path.join(HERE, "rundir.sh"), kind,
                          "bench/%s.py " % script + " ".join(sys.argv[1:])],
                         env=env, check=True, capture_output=True, text=True).stdout.strip()
    meta = json.load(open(os.path.join(run, "meta.json")))
    for k in ("target", "device", "commit", "date"):
        run_meta[k] = meta.get(k, "unknown")
    return run


SOAK = float(os.environ.get("ANCHORS_SOAK", "1.0"))


def bench(fn):
    """do_bench's median after SOAK seconds of back-to-back calls. On the H100
    every kernel here runs at the board's power cap (nvidia-smi: SW power cap,
    690-700 W), and the SM clock settles within about a second: timed cold,
    a system measured after a light one (or after none) ran at higher clocks
    than one measured after a heavy one, and the order of the systems moved
    their ratios by up to 8% (bench/results/2026-11-24-ebbeb52-anchors/notes.md)."""
    fn()
    torch.cuda.synchronize()
    t = time.time()
    while time.time() - t < SOAK:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


_libs = {}


def ours(name):
    """The generated launcher of kernel `name`, built once with the runtime."""
    if name not in _libs:
        os.makedirs(os.path.join(HERE, "lib"), exist_ok=True)
        so = os.path.join(HERE, "lib", name + ".so")
        rt = [os.path.join(HERE, "runtime", f) for f in ("driver.c", "module.c", "launch.c", "check.c", "tmap.c")]
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-D_GNU_SOURCE", "-I" + os.path.join(HERE, "runtime"),
                        os.path.join(HERE, "gen", name + ".c")] + rt + ["-ldl", "-lpthread", "-lm", "-o", so],
                       check=True)
        lib = ctypes.CDLL(so)
        fn = getattr(lib, name + "_launch_generic")
        fn.restype = ctypes.c_int
        args = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(ctypes.c_long),
                ctypes.POINTER(ctypes.c_double)]
        # a forward of several passes (one kernel a pass) takes a workspace
        wsb = getattr(lib, name + "_workspace_bytes_generic", None)
        if wsb:
            wsb.restype = ctypes.c_size_t
            wsb.argtypes = [ctypes.POINTER(ctypes.c_long)]
            args += [ctypes.c_void_p, ctypes.c_size_t]
        fn.argtypes = args + [ctypes.c_void_p]
        err = lib.attnrt_last_error
        err.restype = ctypes.c_char_p
        _libs[name] = (fn, err, wsb)
    return _libs[name]


def launcher(name, tensors, dims, params):
    fn, err, wsb = ours(name)
    ptrs = (ctypes.c_void_p * 64)(*[t.data_ptr() for t in tensors])
    d = (ctypes.c_long * len(dims))(*dims)
    p = (ctypes.c_double * max(1, len(params)))(*params)
    ws = []
    if wsb:
        n = wsb(d)
        buf = torch.empty(max(1, n), dtype=torch.uint8, device="cuda")
        ws = [ctypes.c_void_p(buf.data_ptr()), ctypes.c_size_t(n)]

    def run():
        rc = fn(ptrs, None, d, p, *ws, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc:
            raise RuntimeError(err().decode())
    run.keep = ws and buf
    return run


_tiles = {}


def kernel_tile(name):
    """(BM, BN) of kernel `name`: query rows per CTA tile from its launcher's
    grid, `long gx = (qext + BM - 1) / BM;`, and keys per tile from its
    `/* CTA tile: BM query rows x BN keys */` in gen/NAME.c (128 and 64, said
    so, where absent)."""
    if name not in _tiles:
        path = os.path.join(HERE, "gen", name + ".c")
        try:
            with open(path) as f:
                src = f.read()
        except OSError:
            src = ""
        m = re.search(r"\(qext \+ (\d+) - 1\) / \1\b", src)
        k = re.search(r"CTA tile: \d+ query rows x (\d+) keys", src)
        _tiles[name] = (int(m.group(1)) if m else 128, int(k.group(1)) if k else 64)
        if not m or not k:
            print("warning: no grid line or CTA tile comment in %s: tile taken as %s" % (path, _tiles[name]),
                  flush=True)
    return _tiles[name]


# Longformer's window on either side and its global tokens (bench/attn/longformer256.attn)
LONGFORMER = (256, 16)


def longformer_mask(b, h, i, j):
    """FlexAttention's mask_mod of bench/attn/longformer256.attn."""
    w, g = LONGFORMER
    return ((i - j).abs() <= w) | (j < g) | (i < g)


def longformer_frac(n):
    """The fraction of (query, key) pairs longformer_mask keeps at N = n: a
    global row keeps every key; another keeps its window and the global keys
    outside it."""
    w, g = LONGFORMER
    kept = min(g, n) * n
    for i in range(min(g, n), n):
        lo, hi = max(0, i - w), min(n - 1, i + w)
        kept += hi - lo + 1 + min(g, lo)
    return kept / (n * n)


def tile_any(vname, r0, r1, c0, c1, w=1024):
    """Whether variant vname's mask keeps any (i, j), r0 <= i <= r1 and
    c0 <= j <= c1, with the masks of the variants below (doc = i // w)."""
    if vname in ("causal", "alibi_causal"):  # j <= i
        return c0 <= r1
    if vname == "sliding1024":  # 0 <= i - j < w; i - j takes every value in [r0 - c1, r1 - c0]
        return c0 <= r1 and r0 - c1 < w
    if vname == "prefixlm1024":  # j < w or j <= i
        return c0 < w or c0 <= r1
    if vname == "document1024":  # i // w == j // w: the two ranges of ids overlap
        return r0 // w <= c1 // w and c0 // w <= r1 // w
    if vname == "longformer256":  # |i - j| <= 256, or j < 16, or i < 16 (longformer_mask)
        return (c0 <= r1 + LONGFORMER[0] and r0 <= c1 + LONGFORMER[0]) or c0 < LONGFORMER[1] or r0 < LONGFORMER[1]
    if vname in ("full", "alibi", "softcap30"):
        return True
    raise ValueError("no tile test for variant " + vname)


def tile_pairs(vname, n, bm, bn, w=1024):
    """The (query, key) pairs of the tiles computed at N = n: every tile of bm
    rows by bn keys (clipped to n x n) in which the mask keeps a pair."""
    pairs = 0
    for r0 in range(0, n, bm):
        r1 = min(r0 + bm, n) - 1
        for c0 in range(0, n, bn):
            c1 = min(c0 + bn, n) - 1
            if tile_any(vname, r0, r1, c0, c1, w):
                pairs += (r1 - r0 + 1) * (c1 - c0 + 1)
    return pairs


def tile_fields(name, vname, n, fl, ms, w=1024):
    """The tile-skipping fields of an attnc row: bm, tile_frac, tflops_tiles."""
    bm, bn = kernel_tile(name)
    frac = tile_pairs(vname, n, bm, bn, w) / (n * n)
    return dict(bm=bm, bn=bn, tile_frac=frac, tflops_tiles=fl(frac) / ms)


def rel(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


def sdpa_rows(q, k, v, causal, vname, B, H, N, D, gfl):
    """SDPA's FlashAttention-2 and cuDNN backends on q, k, v, a row each
    (gfl GFLOPs a call); the output of the last that ran, as the reference
    (None where neither did)."""
    ref = None
    for be, sname in ((SDPBackend.FLASH_ATTENTION, "sdpa_flash2"), (SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn")):
        try:
            with sdpa_kernel(be):
                f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                ref = f()
                ms = bench(f)
            rec(sys=sname, variant=vname, B=B, H=H, N=N, D=D, ms=ms, tflops=gfl / ms)
        except Exception as e:
            rec(sys=sname, variant=vname, N=N, D=D, error=str(e)[:200])
    return ref


def ours_row(name, vname, tensors, dims, params, out, ref, B, H, N, D, gfl, fields=lambda ms: {}):
    """attnc's kernel name on the same tensors: out poisoned, one launch
    checked against ref, then timed; its row, with fields(ms) added."""
    run = launcher(name, tensors, dims, params)
    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    err = rel(out, ref) if ref is not None else None
    ms = bench(run)
    rec(sys="attnc", variant=vname, B=B, H=H, N=N, D=D, ms=ms, tflops=gfl / ms, rel_err=err, **fields(ms))


def mla_rows(N):
    """Causal attention with Q, K of head dim 192 and V of 128 (MLA after
    the latent is expanded): SDPA's backends and FlexAttention where they
    take it, and attnc's mla_causal, on the same tensors. FLOPs: 2 B H N^2
    (192 + 128) halved for the mask. Rows carry D = 192."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    H, B, DQK, DV = 16, max(1, 32768 // N), 192, 128
    q, k = (torch.randn(B, H, N, DQK, device=dev, dtype=dt) for _ in range(2))
    v = torch.randn(B, H, N, DV, device=dev, dtype=dt)
    o = torch.empty(B, H, N, DV, device=dev, dtype=dt)
    gfl = 2 * B * H * N * N * (DQK + DV) * 0.5 / 1e9
    ref = sdpa_rows(q, k, v, True, "mla_causal", B, H, N, DQK, gfl)
    try:
        flex = torch.compile(flex_attention, dynamic=False)
        bm = create_block_mask(lambda b, h, i, j: i >= j, B=None, H=None, Q_LEN=N, KV_LEN=N)
        f = lambda: flex(q, k, v, block_mask=bm)
        r = f()
        ms = bench(f)
        ref = r if ref is None else ref
        rec(sys="flex", variant="mla_causal", B=B, H=H, N=N, D=DQK, ms=ms, tflops=gfl / ms)
    except Exception as e:
        rec(sys="flex", variant="mla_causal", N=N, D=DQK, error=str(e)[:200])
    try:
        ours_row("mla_causal", "mla_causal", [q, k, v, o], [B, H, N, DQK, DV], [DQK ** -0.5], o, ref, B, H, N,
                 DQK, gfl)
    except Exception as e:
        rec(sys="attnc", variant="mla_causal", N=N, D=DQK, error=str(e)[:200])
    del q, k, v, o
    torch.cuda.empty_cache()


_bwd_libs = {}


def ours_bwd(name):
    """The generated NAME_bwd_launch_generic of kernel file `name` (attnc --grad)
    and its atomic form, its workspace query, and the order of its
    tensors (the pointer fields of NAME_bwd_gpu_args in gen/name.h)."""
    if name not in _bwd_libs:
        os.makedirs(os.path.join(HERE, "lib"), exist_ok=True)
        so = os.path.join(HERE, "lib", name + ".so")
        rt = [os.path.join(HERE, "runtime", f) for f in ("driver.c", "module.c", "launch.c", "check.c", "tmap.c",
                                                         "stream.c")]
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-D_GNU_SOURCE", "-I" + os.path.join(HERE, "runtime"),
                        os.path.join(HERE, "gen", name + ".c")] + rt + ["-ldl", "-lpthread", "-lm", "-o", so],
                       check=True)
        lib = ctypes.CDLL(so)
        fwd = getattr(lib, name + "_launch_generic")
        bwd = getattr(lib, name + "_bwd_launch_generic")
        atomic = getattr(lib, name + "_bwd_launch_atomic_generic")
        wsb = getattr(lib, name + "_bwd_workspace_bytes_generic")
        for f in (fwd, bwd, atomic):
            f.restype = ctypes.c_int
        fwd.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(ctypes.c_long),
                        ctypes.POINTER(ctypes.c_double), ctypes.c_void_p]
        for f in (bwd, atomic):
            f.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(ctypes.c_long),
                          ctypes.POINTER(ctypes.c_double), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        wsb.restype = ctypes.c_size_t
        wsb.argtypes = [ctypes.POINTER(ctypes.c_long)]
        err = lib.attnrt_last_error
        err.restype = ctypes.c_char_p
        src = open(os.path.join(HERE, "gen", name + ".h")).read()
        body = re.search(r"typedef struct %s_bwd_gpu_args \{(.*?)\}" % name, src, re.S).group(1)
        order = re.findall(r"^\t(?:const )?void \*(\w+);", body, re.M)
        _bwd_libs[name] = (fwd, (bwd, atomic), wsb, err, order)
    return _bwd_libs[name]


def bwd_rows(D, N, flex):
    """The backward of full and causal against SDPA's FlashAttention-2 and
    cuDNN backends, and of the masked and modified variants against
    FlexAttention's, on the same q, k, v and dO; attnc's NAME_g_dD (the
    variant with its logsumexp saved, attnc --grad) after its own forward.
    Each anchor times torch.autograd.grad of its output (its backward
    kernels alone: the forward is not timed); attnc times NAME_bwd_launch
    (row pass, dQ, dK and dV) and, as attnc_atomic, NAME_bwd_launch_atomic
    (row pass, dK and dV with dQ's sums added in any order: sm_80's
    red.global, sm_90a's TMA reductions; dQ's conversion); where
    prepare.sh also built sm_80's as NAME_g80_dD, the same as attnc_sm80. FLOPs: 2.5 times the forward's
    (4 B H N^2 D times the mask's fraction). Gradients checked against the
    anchor's: rel_err is the largest of dQ's, dK's and dV's."""
    from torch.nn.attention.flex_attention import create_block_mask
    H, B = 16, max(1, 32768 // N)
    scale = D ** -0.5
    q, k, v = (torch.randn(B, H, N, D, device=dev, dtype=dt, requires_grad=True) for _ in range(3))
    do = torch.randn(B, H, N, D, device=dev, dtype=dt)
    slopes = torch.exp2(-8.0 * torch.arange(1, H + 1, device=dev, dtype=torch.float32) / H)
    W = 1024
    doc = (torch.arange(N, device=dev, dtype=torch.int32) // W).repeat(B, 1).contiguous()
    fl = lambda fr: 2.5 * 4 * B * H * N * N * D * fr / 1e9
    win = min(1.0, (W * N - W * (W - 1) / 2) / (N * N)) if N > W else 0.5
    cases = [
        ("full", None, None, 1.0, {}, [scale]),
        ("causal", None, lambda b, h, i, j: i >= j, 0.5, {}, [scale]),
        ("sliding1024", None, lambda b, h, i, j: (i >= j) & (i - j < W), win, {}, [scale]),
        ("document1024", None, lambda b, h, i, j: (i // W) == (j // W), min(1.0, W / N), {"doc": doc}, [scale]),
        ("prefixlm1024", None, lambda b, h, i, j: (j < W) | (i >= j), 0.5 + 0.5 * min(1.0, W / N) ** 2, {},
         [scale]),
        ("alibi", lambda s, b, h, i, j: s + slopes[h] * (j - i), None, 1.0, {"slope": slopes}, [scale]),
        ("softcap30", lambda s, b, h, i, j: 30.0 * torch.tanh(s / 30.0), None, 1.0, {}, [scale, 30.0]),
        ("alibi_causal", lambda s, b, h, i, j: s + slopes[h] * (j - i), lambda b, h, i, j: i >= j, 0.5,
         {"slope": slopes}, [scale]),
    ]
    for vname, smod, mmod, fr, extra, params in cases:
        ref = None
        anchors = []
        if vname in ("full", "causal"):
            for be, sname in ((SDPBackend.FLASH_ATTENTION, "sdpa_flash2"), (SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn")):
                anchors.append((sname, lambda be=be: _sdpa(q, k, v, vname == "causal", be)))
        anchors.append(("flex", lambda: _flex(flex, q, k, v, smod, mmod, N)))
        for sname, make in anchors:
            try:
                o = make()
                f = lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
                g = f()
                ref = g if ref is None else ref
                ms = bench(f)
                rec(sys=sname, variant=vname, phase="bwd", B=B, H=H, N=N, D=D, ms=ms, tflops=fl(fr) / ms)
            except Exception as e:
                rec(sys=sname, variant=vname, phase="bwd", N=N, D=D, error=str(e)[:200])
        for tag, sysname in (("g", "attnc"), ("g80", "attnc_sm80")):
            ours_bwd_rows("%s_%s_d%d" % (vname, tag, D), sysname, vname, q, k, v, do, extra, params, ref,
                          B, H, N, D, fl(fr))
    del q, k, v, do
    torch.cuda.empty_cache()


def bwd_target(tag):
    """The target prepare.sh compiled the backward kernels NAME_TAG_dD for."""
    path = os.path.join(HERE, "gen", "bwd_targets.json")
    return json.load(open(path)).get(tag, "unknown") if os.path.exists(path) else None


def ours_bwd_rows(name, sysname, vname, q, k, v, do, extra, params, ref, B, H, N, D, flops):
    """attnc's NAME_bwd_launch of kernel file `name` (where prepare.sh built
    it) timed as sysname, and its NAME_bwd_launch_atomic as sysname_atomic
    where that launch differs (a kernel adds dQ's sums: NAME_bwd_post)."""
    if not os.path.exists(os.path.join(HERE, "gen", name + ".c")):
        return
    target = bwd_target(name.rsplit("_", 2)[-2])
    meta = {"target": target} if target else {}
    try:
        fwd, bwd, wsb, err, order = ours_bwd(name)
        dims = (ctypes.c_long * 4)(B, H, N, D)
        p = (ctypes.c_double * len(params))(*params)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        o = torch.empty(B, H, N, D, device=dev, dtype=dt)
        lse = torch.empty(B, H, N, device=dev, dtype=torch.float32)
        fin = [q.detach(), k.detach(), v.detach()] + [extra[x] for x in ("slope", "doc") if x in extra]
        fp = (ctypes.c_void_p * 16)(*[t.data_ptr() for t in fin + [o, lse]])
        if fwd(fp, None, dims, p, stream):
            raise RuntimeError(err().decode())
        t = {"Q": q.detach(), "K": k.detach(), "V": v.detach(), "O": o, "L": lse, "dO": do,
             "dL": torch.zeros_like(lse), "dQ": torch.empty_like(o), "dK": torch.empty_like(o),
             "dV": torch.empty_like(o)}
        t.update(extra)
        bp = (ctypes.c_void_p * 32)(*[t[x].data_ptr() for x in order])
        nb = wsb(dims)
        ws = torch.empty(max(1, nb), device=dev, dtype=torch.uint8)

        atomic = "%s_bwd_post" % name in open(os.path.join(HERE, "gen", name + ".h")).read()
        for sname, launch in zip((sysname, sysname + "_atomic"), bwd if atomic else bwd[:1]):
            def run():
                if launch(bp, None, dims, p, ctypes.c_void_p(ws.data_ptr()), nb, stream):
                    raise RuntimeError(err().decode())
            for x in ("dQ", "dK", "dV"):
                t[x].fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            e = max(rel(t[x], r) for x, r in zip(("dQ", "dK", "dV"), ref)) if ref is not None else None
            ms = bench(run)
            rec(sys=sname, variant=vname, phase="bwd", B=B, H=H, N=N, D=D, ms=ms, tflops=flops / ms,
                rel_err=e, **meta)
    except Exception as e:
        rec(sys=sysname, variant=vname, phase="bwd", N=N, D=D, error=str(e)[:200], **meta)


def _sdpa(q, k, v, causal, be):
    with sdpa_kernel(be):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _flex(flex, q, k, v, smod, mmod, N):
    from torch.nn.attention.flex_attention import create_block_mask
    bm = create_block_mask(mmod, B=None, H=None, Q_LEN=N, KV_LEN=N) if mmod else None
    return flex(q, k, v, score_mod=smod, block_mask=bm)


def sizes_and_flex():
    """The sequence lengths (--n N ..., default 2k and 8k) and FlexAttention
    compiled once, with dynamo's caches wide enough that every variant and
    size compiles instead of falling back; prints the device."""
    Ns = [2048, 8192]
    if "--n" in sys.argv:
        Ns = [int(sys.argv[i + 1]) for i, x in enumerate(sys.argv) if x == "--n"]
    from torch.nn.attention.flex_attention import flex_attention
    import torch._dynamo
    for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
              "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 4096)
    flex = torch.compile(flex_attention, dynamic=False)
    print("device", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    return Ns, flex


def main():
    Ds = [int(x) for i, x in enumerate(sys.argv[1:], 1) if x.isdigit() and sys.argv[i - 1] != "--n"] or [128, 64]
    if "--bwd" in sys.argv:
        return main_bwd(Ds)
    from torch.nn.attention.flex_attention import create_block_mask
    Ns, flex = sizes_and_flex()
    run_dir = start_run()
    print("run", run_dir, flush=True)
    for D in Ds:
        for N in Ns:
            H, B = 16, max(1, 32768 // N)
            scale = D ** -0.5
            q, k, v = (torch.randn(B, H, N, D, device=dev, dtype=dt) for _ in range(3))
            o = torch.empty_like(q)
            slopes = torch.exp2(-8.0 * torch.arange(1, H + 1, device=dev, dtype=torch.float32) / H)
            doc = (torch.arange(N, device=dev, dtype=torch.int32) // 1024).repeat(B, 1).contiguous()
            fl = lambda fr: 4 * B * H * N * N * D * fr / 1e9
            # SDPA anchors, and our full and causal kernels checked against them
            for causal in (False, True):
                vname = "causal" if causal else "full"
                fr = 0.5 if causal else 1.0
                ref = sdpa_rows(q, k, v, causal, vname, B, H, N, D, fl(fr))
                name = "%s_d%d" % (vname, D)
                ours_row(name, vname, [q, k, v, o], [B, H, N, D], [scale], o, ref, B, H, N, D, fl(fr),
                         lambda ms: tile_fields(name, vname, N, fl, ms))
            # Flex anchors for the masked and modified variants
            W = 1024
            win = min(1.0, (W * N - W * (W - 1) / 2) / (N * N)) if N > W else 0.5
            variants = [
                ("sliding1024", None, lambda b, h, i, j: (i >= j) & (i - j < W), win, [q, k, v, o], [scale]),
                ("document1024", None, lambda b, h, i, j: (i // W) == (j // W), min(1.0, W / N),
                 [q, k, v, doc, o], [scale]),
                ("prefixlm1024", None, lambda b, h, i, j: (j < W) | (i >= j), 0.5 + 0.5 * min(1.0, W / N) ** 2,
                 [q, k, v, o], [scale]),
                ("alibi", lambda s, b, h, i, j: s + slopes[h] * (j - i), None, 1.0, [q, k, v, slopes, o], [scale]),
                ("softcap30", lambda s, b, h, i, j: 30.0 * torch.tanh(s / 30.0), None, 1.0, [q, k, v, o],
                 [scale, 30.0]),
                ("alibi_causal", lambda s, b, h, i, j: s + slopes[h] * (j - i), lambda b, h, i, j: i >= j, 0.5,
                 [q, k, v, slopes, o], [scale]),
                ("longformer256", None, longformer_mask, longformer_frac(N), [q, k, v, o],
                 [scale, LONGFORMER[0], LONGFORMER[1]]),
            ]
            only = [x for x in os.environ.get("ANCHORS_VARIANTS", "").split(",") if x]
            for vname, smod, mmod, fr, tens, params in variants:
                if D not in (64, 128) or (only and vname not in only):
                    continue  # at other head dims prepare.sh builds full and causal only
                ref = None
                try:
                    bm = create_block_mask(mmod, B=None, H=None, Q_LEN=N, KV_LEN=N) if mmod else None
                    f = lambda: flex(q, k, v, score_mod=smod, block_mask=bm)
                    ref = f()
                    ms = bench(f)
                    rec(sys="flex", variant=vname, B=B, H=H, N=N, D=D, ms=ms, tflops=fl(fr) / ms)
                except Exception as e:
                    rec(sys="flex", variant=vname, N=N, D=D, error=str(e)[:200])
                try:
                    name = "%s_d%d" % (vname, D)
                    ours_row(name, vname, tens, [B, H, N, D], params, o, ref, B, H, N, D, fl(fr),
                             lambda ms: tile_fields(name, vname, N, fl, ms, W))
                except Exception as e:
                    rec(sys="attnc", variant=vname, N=N, D=D, error=str(e)[:200])
            if D in (64, 128) and (not only or "threshold" in only):
                threshold_row(q, k, v, o, B, H, N, D, scale, fl)
            if D in (64, 128):
                scored_rows(q, k, v, o, B, H, N, D, scale, fl, flex, only)
            del q, k, v, o
            torch.cuda.empty_cache()
    if "--mla" in sys.argv:
        for N in Ns:
            mla_rows(N)
        Ds = Ds + [192]
    json.dump(rows, open(os.path.join(run_dir, "anchors.json"), "w"), indent=1)
    with open(os.path.join(run_dir, "anchors.txt"), "w") as f:
        table(rows, Ds, Ns, f)
    table(rows, Ds, Ns)

def t5_bucket(i, j):
    """T5's bidirectional bucket of j - i (32 buckets, max distance 128), in
    torch ops on index tensors, as bench/attn/t5.attn computes it."""
    r = j - i
    n = r.abs()
    large = 8 + (torch.log(n.clamp(min=1).float() / 8) / math.log(128 / 8) * 8).to(torch.int32)
    return torch.where(r > 0, 16, 0) + torch.where(n < 8, n, torch.clamp(large, max=15))


def scored_rows(q, k, v, o, B, H, N, D, scale, fl, flex, only):
    """Scores that are not a scaled Q.K alone (bench/attn/cosine.attn,
    gaussian.attn, t5.attn), each against FlexAttention on the same tensors.
    Flex's score_mod sees q.k only, so its rows do what a Flex user does:
    cosine normalises Q and K with F.normalize first and scales by the
    head's temperature; gaussian adds -scale/2 (|q|^2 + |k|^2) from norms
    computed by torch; those torch ops are inside Flex's time, as attnc's
    row passes are inside its own. t5 looks the bias up in score_mod.
    FLOPs are full attention's (4 B H N^2 D)."""
    ls = torch.rand(H, device=dev, dtype=torch.float32) * 2.0 + 1.0
    tau = torch.exp(torch.clamp(ls, max=math.log(100.0)))
    bb = torch.randn(H, 32, device=dev, dtype=torch.float32)

    def cosine():
        qn, kn = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return flex(qn, kn, v, score_mod=lambda s, b, h, i, j: s * tau[h], scale=1.0)

    def gaussian():
        qq = torch.linalg.vector_norm(q, dim=-1, dtype=torch.float32) ** 2
        kk = torch.linalg.vector_norm(k, dim=-1, dtype=torch.float32) ** 2
        return flex(q, k, v, score_mod=lambda s, b, h, i, j: s - 0.5 * scale * (qq[b, h, i] + kk[b, h, j]),
                    scale=scale)

    def t5():
        return flex(q, k, v, score_mod=lambda s, b, h, i, j: s + bb[h, t5_bucket(i, j)], scale=scale)

    for vname, f, tens, params in (("cosine", cosine, [q, k, v, ls, o], [1e-12]),
                                   ("gaussian", gaussian, [q, k, v, o], [scale]),
                                   ("t5", t5, [q, k, v, bb, o], [scale])):
        if only and vname not in only:
            continue
        ref = None
        try:
            ref = f()
            ms = bench(f)
            rec(sys="flex", variant=vname, B=B, H=H, N=N, D=D, ms=ms, tflops=fl(1.0) / ms)
        except Exception as e:
            rec(sys="flex", variant=vname, N=N, D=D, error=str(e)[:200])
        try:
            ours_row("%s_d%d" % (vname, D), vname, tens, [B, H, N, D], params, o, ref, B, H, N, D, fl(1.0))
        except Exception as e:
            rec(sys="attnc", variant=vname, N=N, D=D, error=str(e)[:200])


def threshold_row(q, k, v, o, B, H, N, D, scale, fl, eps=0.002):
    """bench/attn/threshold.attn: keys whose softmax probability is below eps
    dropped, a plan of two passes that runs as two kernels (pass 1: each
    row's max and sum; pass 2: the filtered sum). No anchor runs it in one
    kernel: FlexAttention's score_mod sees the raw score, not the normalised
    probability. TFLOP/s count full attention's work (4 B H N^2 D), so the
    row compares with own full (vs_own_full); checked against torch on the
    first two heads of the first sequence."""
    name = "threshold_d%d" % D
    try:
        run = launcher(name, [q, k, v, o], [B, H, N, D], [scale, eps])
        run()
        torch.cuda.synchronize()
        qs, ks, vs = (x[0, :2].float() for x in (q, k, v))
        pr = torch.softmax(qs @ ks.transpose(-1, -2) * scale, dim=-1)
        ref = (pr * (pr >= eps)) @ vs
        err = rel(o[0, :2], ref)
        ms = bench(run)
        rec(sys="attnc", variant="threshold", B=B, H=H, N=N, D=D, ms=ms, tflops=fl(1.0) / ms, rel_err=err)
    except Exception as e:
        rec(sys="attnc", variant="threshold", N=N, D=D, error=str(e)[:200])


def main_bwd(Ds):
    """anchors.py --bwd: the backward rows (bwd_rows) at each D and N, into a
    run folder of kind anchors-bwd: anchors.json and the table."""
    Ns, flex = sizes_and_flex()
    run_dir = start_run("anchors-bwd", "anchors")
    print("run", run_dir, flush=True)
    for D in Ds:
        for N in Ns:
            bwd_rows(D, N, flex)
    json.dump(rows, open(os.path.join(run_dir, "anchors.json"), "w"), indent=1)
    with open(os.path.join(run_dir, "anchors.txt"), "w") as f:
        for r in rows:
            f.write("%-8s %-14s D=%-4s N=%-6s %s\n" % (r["sys"], r["variant"], r["D"], r["N"],
                    "ms %.3f tflops %.1f rel_err %s" % (r["ms"], r["tflops"], r.get("rel_err"))
                    if "ms" in r else "error " + r["error"]))
    print(open(os.path.join(run_dir, "anchors.txt")).read())


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("total s %.0f" % (time.time() - t0))
