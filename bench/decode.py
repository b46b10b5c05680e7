"""Decode: attnc's split-KV kernel against torch SDPA's backends, in one process.

Runs on the GPU machine from the folder bench/prepare.sh filled (gen/decode.c:
examples/decode.attn compiled with --parts; runtime sources in runtime/).
The kernel is examples/decode.attn: one query token per sequence, GQA with HKV
K/V heads of G query heads each, D = 128, bf16, keys j < kv_len[b] of M slots.
attnc runs three ways on the same tensors: NAME_launch (one CTA per K/V head
group: the grid of the prefill kernel), and NAME_launch_part with splits
chosen by the launcher (split-KV, the parts merged by the plan's merge rule
in the last CTA of each row), the workspace zero-filled once. SDPA's
FlashAttention-2 and cuDNN backends run on the same q, K, V (enable_gqa).
Bandwidth counts the K and V bytes a decode step must read once,
2 * 2 * sum(kv_len) * HKV * D, over the median time (triton do_bench); the
copy ceiling is a device-to-device copy of 2 GiB (read + write bytes / time).
Every attnc output is checked against SDPA's (rel L2 below 1e-2).

Packed rows (gen/varlen_decode.c: examples/varlen_decode.attn compiled with
--parts, where present): the same sequences in a cache packed without padding,
K[TK, HKV, D] at cumulative offsets; attnc's plain and split launches.

Paged rows (gen/paged_decode.c: examples/paged_decode.attn with --parts, and
gen/paged_decode80.c, sm_80's kernel alone, where present): the
same sequences and kv lengths in a paged cache of P = 16 and 64 slots a page,
Kc[NP, P, HKV, D] (FlashInfer's NHD layout; gen/paged_decode_hnd.c, where
present, the same pages head-major, Kc[NP, HKV, P, D]: vLLM's and
FlashInfer's HND), each sequence's pages a random
permutation of the pool, shared by none; attnc's plain and split launches
read K and V through the page table. The anchor is FlashInfer's
BatchDecodeWithPagedKVCacheWrapper on the same pages where flashinfer is
importable, else SDPA (FlashAttention-2 backend) on the contiguous tensors
the pages were filled from (what the same step costs without paging). The
same K and V bytes count for the bandwidth.

With DECODE_SPLITS=1,2,4,... the bundle's split launch also runs with each
of those split counts (rows attnc_split_sN, the rest of the run as ever): the
data a split heuristic is chosen from. DECODE_SHAPES=1x128k,8x8k,... runs
those shapes alone, DECODE_PAGES=16 the paged rows of that page size alone.
Rows whose name ends in _z launch with ATTN_PART_ZEROED: the counters as the
last launch left them (zero), with no memset before the kernel.

usage: python3 decode.py     writes DATE-COMMIT-decode/{meta,decode}.json and
decode.txt under $OUT (bench/rundir.sh, bench/results/README.md)
"""
import ctypes
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("OUT", "/tmp/out")
D = 128
rows = []
meta = {}


class Part(ctypes.Structure):
    """attn_gpu_part of the generated header (ATTN_GPU_PART_V1)."""
    _fields_ = [("q_begin", ctypes.c_long), ("q_end", ctypes.c_long), ("k_begin", ctypes.c_long),
                ("k_end", ctypes.c_long), ("splits", ctypes.c_int), ("flags", ctypes.c_int),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t),
                ("state", ctypes.c_void_p), ("state_bytes", ctypes.c_size_t)]


def rec(**kw):
    if kw.get("sys", "").startswith("attnc"):
        kw.update(meta)
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def bench(fn):
    """do_bench's median after a second of back-to-back calls (anchors.py's
    soak: the clocks settle under the power cap)."""
    fn()
    torch.cuda.synchronize()
    t = time.time()
    while time.time() - t < 1.0:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def library(name="decode", casc="decode"):
    """gen/NAME.c (the cascade `casc`) built with the runtime into lib/NAME.so."""
    so = os.path.join(HERE, "lib", name + ".so")
    os.makedirs(os.path.dirname(so), exist_ok=True)
    rt = [os.path.join(HERE, "runtime", f) for f in os.listdir(os.path.join(HERE, "runtime"))
          if f.endswith(".c")]
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-D_GNU_SOURCE", "-I" + os.path.join(HERE, "runtime"),
                    os.path.join(HERE, "gen", name + ".c")] + rt + ["-ldl", "-lpthread", "-lm", "-o", so],
                   check=True)
    lib = ctypes.CDLL(so)
    for entry in ("_launch_generic", "_launch_part_generic"):
        if hasattr(lib, casc + entry):  # a block of several kernels has no part entry
            getattr(lib, casc + entry).restype = ctypes.c_int
    lib.attnrt_last_error.restype = ctypes.c_char_p
    return lib


def shapes():
    # (label, B, HKV, G, M, lengths): the four shapes, a ragged batch
    # of 16 sequences with lengths uniform in 1..64k and the balanced batch of
    # the same total length
    g = torch.Generator().manual_seed(7)
    ragged = torch.randint(1, 65537, (16,), generator=g).tolist()
    mean = sum(ragged) // 16
    return [("1x128k", 1, 8, 4, 131072, [131072]),
            ("8x8k", 8, 8, 4, 8192, [8192] * 8),
            ("32x4k", 32, 8, 4, 4096, [4096] * 32),
            ("1x32k_g8", 1, 8, 8, 32768, [32768]),
            ("ragged16", 16, 8, 4, 65536, ragged),
            ("balanced16", 16, 8, 4, mean, [mean] * 16)]


def step_args(B, HKV, G, M, lens):
    """One decode step's tensors (random q, K and V; kv_len; empty o and lse)
    and the launch's pointer, dimension and parameter arrays, for scripts
    that run the kernel alone (decode_prof.py, trace/decode_trace.py)."""
    H = HKV * G
    a = dict(q=torch.randn(B, H, D, device="cuda", dtype=torch.bfloat16),
             K=torch.randn(B, HKV, M, D, device="cuda", dtype=torch.bfloat16),
             V=torch.randn(B, HKV, M, D, device="cuda", dtype=torch.bfloat16),
             kv=torch.tensor(lens, dtype=torch.int32, device="cuda"),
             o=torch.empty(B, H, D, device="cuda", dtype=torch.bfloat16),
             lse=torch.empty(B, H, device="cuda", dtype=torch.float32))
    a["ptrs"] = (ctypes.c_void_p * 8)(*[a[k].data_ptr() for k in ("q", "K", "V", "kv", "o", "lse")])
    a["dims"] = (ctypes.c_long * 5)(B, HKV, G, M, D)
    a["params"] = (ctypes.c_double * 1)(D ** -0.5)
    return a


def paged_pool(lens, M, P, HKV, K, V):
    """K and V (B, HKV, M, D) moved into a paged cache of P slots a page: each
    sequence gets ceil(kv_len / P) pages of a random permutation of the pool
    (no page shared), its table padded with page 0 past them. Returns the
    caches (NP, P, HKV, D), the table (B, MAXP) and FlashInfer's indptr,
    indices and last page lengths."""
    g = torch.Generator().manual_seed(11)
    need = [(n + P - 1) // P for n in lens]
    NP = max(sum(need), 1)
    MAXP = (M + P - 1) // P
    perm = torch.randperm(NP, generator=g).to(torch.int32)
    B = len(lens)
    block = torch.zeros(B, MAXP, dtype=torch.int32)
    indptr, at = [0], 0
    for b in range(B):
        block[b, :need[b]] = perm[at:at + need[b]]
        at += need[b]
        indptr.append(at)
    Kc = torch.zeros(NP, P, HKV, D, device="cuda", dtype=K.dtype)
    Vc = torch.zeros_like(Kc)
    for b in range(B):
        n = lens[b]
        pages = block[b, :need[b]].long().cuda()
        j = torch.arange(n, device="cuda")
        Kc[pages[j // P], j % P] = K[b, :, :n].transpose(0, 1)
        Vc[pages[j // P], j % P] = V[b, :, :n].transpose(0, 1)
    last = torch.tensor([(n - 1) % P + 1 if n else 0 for n in lens], dtype=torch.int32)
    return Kc, Vc, block.cuda(), torch.tensor(indptr, dtype=torch.int32).cuda(), perm[:at].cuda(), last.cuda()


def flashinfer_decode(q, Kc, Vc, indptr, indices, last, HKV, P):
    """FlashInfer's paged decode on the same pages (a function that runs it),
    None without flashinfer, or the error text where its planning fails."""
    try:
        import flashinfer
    except ImportError:
        return None
    try:
        ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
        H = q.shape[1]
        if not hasattr(w, "plan"):  # before 0.2: begin_forward / forward
            w.begin_forward(indptr, indices, last, H, HKV, D, P, data_type=q.dtype)
            return lambda: w.forward(q, (Kc, Vc))
        try:
            w.plan(indptr, indices, last, H, HKV, D, P, q_data_type=q.dtype, kv_data_type=Kc.dtype)
        except TypeError:
            w.plan(indptr, indices, last, H, HKV, D, P, data_type=q.dtype)
        return lambda: w.run(q, (Kc, Vc))
    except Exception as e:
        return str(e)[:200]


def paged_rows(plibs, label, B, HKV, G, M, lens, q, K, V, ref, ws, ws_bytes, nbytes, stream):
    """The paged rows of one shape: attnc plain and split, and the anchor."""
    H = HKV * G
    for P in [int(x) for x in os.environ.get("DECODE_PAGES", "16,64").split(",")]:
        Kn, Vn, block, indptr, indices, last = paged_pool(lens, M, P, HKV, K, V)
        # each page's slots head-major (paged_decode_hnd): the same pages
        pools = {"nhd": (Kn, Vn)}
        if any(lay == "hnd" for _, _, _, lay in plibs):
            pools["hnd"] = (Kn.transpose(1, 2).contiguous(), Vn.transpose(1, 2).contiguous())
        Kc, Vc = Kn, Vn
        NP, MAXP = Kc.shape[0], block.shape[1]
        kv = torch.tensor(lens, dtype=torch.int32, device="cuda")
        o = torch.empty(B, H, D, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(B, H, device="cuda", dtype=torch.float32)
        dims = (ctypes.c_long * 7)(B, HKV, G, NP, P, MAXP, D)
        params = (ctypes.c_double * 1)(D ** -0.5)
        part = Part(0, 0, 0, 0, 0, 2, ws.data_ptr(), ws_bytes, None, 0)
        shape = "%s_p%d" % (label, P)
        skpart = Part(0, 0, 0, 0, 0, 2 | 4, ws.data_ptr(), ws_bytes, None, 0)
        # ATTN_PART_ZEROED: counters the last launch left zero, no memset
        zpart = Part(0, 0, 0, 0, 0, 2 | 8, ws.data_ptr(), ws_bytes, None, 0)
        for tag, lib, casc, lay in plibs:
            ptrs = (ctypes.c_void_p * 8)(*[t.data_ptr() for t in (q, *pools[lay], block, kv, o, lse)])
            for split in (0, 1, 2, 3):
                def run(lib=lib, split=split, ptrs=ptrs, casc=casc):
                    pt = ctypes.byref((part, part, skpart, zpart)[split])
                    rc = (getattr(lib, casc + "_launch_part_generic")(ptrs, None, dims, params, pt, stream())
                          if split else getattr(lib, casc + "_launch_generic")(ptrs, None, dims, params, stream()))
                    if rc:
                        raise RuntimeError(lib.attnrt_last_error().decode())
                o.fill_(float("nan"))
                try:
                    run()
                except RuntimeError as e:
                    if split != 2:
                        raise
                    rec(kind="paged", sys=tag + "_streamk", shape=shape, error=str(e)[:200])
                    continue
                torch.cuda.synchronize()
                err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
                t = bench(run)
                rec(kind="paged", sys=tag + ("", "_split", "_streamk", "_split_z")[split], shape=shape, page=P, B=B, HKV=HKV,
                    G=G, M=M, kv_tokens=sum(lens), ms=t, tbps=nbytes / t / 1e9, rel_l2=err, ok=bool(err < 1e-2))
        fi = flashinfer_decode(q, Kc, Vc, indptr, indices, last, HKV, P)
        if isinstance(fi, str):
            rec(kind="paged", sys="flashinfer", shape=shape, error=fi)
        elif fi is not None:
            try:
                out = fi()
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                t = bench(fi)
                rec(kind="paged", sys="flashinfer", shape=shape, page=P, B=B, HKV=HKV, G=G, M=M,
                    kv_tokens=sum(lens), ms=t, tbps=nbytes / t / 1e9, rel_l2=err)
            except Exception as e:
                rec(kind="paged", sys="flashinfer", shape=shape, error=str(e)[:200])
        elif len(set(lens)) == 1:
            qs = q[:, :, None, :]
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                t = bench(lambda: F.scaled_dot_product_attention(qs, K, V, enable_gqa=True))
            rec(kind="paged", sys="sdpa_gathered", shape=shape, page=P, B=B, HKV=HKV, G=G, M=M,
                kv_tokens=sum(lens), ms=t, tbps=nbytes / t / 1e9)
        del Kc, Vc, Kn, Vn, pools, block, o, lse
        torch.cuda.empty_cache()


def packed_rows(vlib, label, B, HKV, G, lens, q, K, V, ref, ws, ws_bytes, nbytes, stream):
    """The same sequences in a cache packed without padding (gen/varlen_decode.c:
    examples/varlen_decode.attn, K[TK, HKV, D] with cumulative offsets): attnc's
    plain and split launches on the same q, K and V values."""
    Kp = torch.cat([K[b, :, :lens[b]].transpose(0, 1) for b in range(B)]).contiguous()
    Vp = torch.cat([V[b, :, :lens[b]].transpose(0, 1) for b in range(B)]).contiguous()
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    o = torch.empty_like(ref)
    lse = torch.empty(B, HKV * G, device="cuda", dtype=torch.float32)
    ptrs = (ctypes.c_void_p * 8)(*[t.data_ptr() for t in (q, Kp, Vp, cu, o, lse)])
    dims = (ctypes.c_long * 6)(B, Kp.shape[0], HKV, G, max(lens), D)
    params = (ctypes.c_double * 1)(D ** -0.5)
    pn = Part(0, 0, 0, 0, 0, 2, ws.data_ptr(), ws_bytes, None, 0)
    pk = Part(0, 0, 0, 0, 0, 2 | 4, ws.data_ptr(), ws_bytes, None, 0)
    runs = [("attnc_packed", lambda: vlib.varlen_decode_launch_generic(ptrs, None, dims, params, stream())),
            ("attnc_packed_split", lambda: vlib.varlen_decode_launch_part_generic(
                ptrs, None, dims, params, ctypes.byref(pn), stream())),
            ("attnc_packed_streamk", lambda: vlib.varlen_decode_launch_part_generic(
                ptrs, None, dims, params, ctypes.byref(pk), stream()))]
    for name, fn in runs:
        o.fill_(float("nan"))
        if fn():
            rec(kind="decode", sys=name, shape=label, error=vlib.attnrt_last_error().decode()[:200])
            continue
        torch.cuda.synchronize()
        err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        t = bench(fn)
        rec(kind="decode", sys=name, shape=label, B=B, HKV=HKV, G=G, kv_tokens=sum(lens),
            ms=t, tbps=nbytes / t / 1e9, rel_l2=err, ok=bool(err < 1e-2))
    del Kp, Vp, o, lse


def rel(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def checked_launch(lib, call, out, ref, flops):
    """One call of an attnc launch whose output `out` the caller poisoned
    (NaN), checked against ref (rel L2 below 1e-2, no NaN), then timed: the
    row's fields (ms, TFLOP/s for `flops` a call, rel_l2, nan, ok), or its
    error where the launch failed."""
    rc = call()
    torch.cuda.synchronize()
    if rc:
        return dict(error=lib.attnrt_last_error().decode())
    err = rel(out, ref) if ref is not None else None
    nan = int(torch.isnan(out).sum().item())
    ms = bench(call)
    return dict(ms=ms, tflops=flops / ms / 1e9, rel_l2=err, nan=nan,
                ok=bool(err is not None and err < 1e-2 and nan == 0))


def run_folder(kind, what, into):
    """The run's folder under $OUT (rundir.sh: DATE-COMMIT-KIND with its
    meta.json), its target, device, commit and date copied into `into`."""
    env = dict(os.environ, OUT=OUT)
    env.setdefault("DEVICE", torch.cuda.get_device_name())
    run = subprocess.run(["sh", os.path.join(HERE, "rundir.sh"), kind, what],
                         env=env, check=True, capture_output=True, text=True).stdout.strip()
    m = json.load(open(os.path.join(run, "meta.json")))
    for k in ("target", "device", "commit", "date"):
        into[k] = m.get(k, "unknown")
    return run


def main():
    run = run_folder("decode", "bench/decode.py", meta)
    libs = [("attnc", library())]
    # the same cascade compiled for sm_80 alone (gen/decode80.c), where present:
    # which of the bundle's images decodes faster
    if os.path.exists(os.path.join(HERE, "gen", "decode80.c")):
        libs.append(("attnc_sm80", library("decode80")))
    # the paged cache (gen/paged_decode.c), where prepared
    plibs = []
    if os.path.exists(os.path.join(HERE, "gen", "paged_decode.c")):
        plibs.append(("attnc_paged", library("paged_decode", "paged_decode"), "paged_decode", "nhd"))
    if os.path.exists(os.path.join(HERE, "gen", "paged_decode80.c")):
        plibs.append(("attnc_paged_sm80", library("paged_decode80", "paged_decode"), "paged_decode", "nhd"))
    if os.path.exists(os.path.join(HERE, "gen", "paged_decode_hnd.c")):
        plibs.append(("attnc_paged_hnd", library("paged_decode_hnd", "paged_decode_hnd"), "paged_decode_hnd",
                      "hnd"))
    # the cache packed without padding (gen/varlen_decode.c), where prepared
    vlib = None
    if os.path.exists(os.path.join(HERE, "gen", "varlen_decode.c")):
        vlib = library("varlen_decode", "varlen_decode")
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    big = torch.empty(1 << 30, dtype=torch.int16, device="cuda")
    dst = torch.empty_like(big)
    ms = bench(lambda: dst.copy_(big))
    copy_tbps = 2 * big.numel() * 2 / ms / 1e9
    rec(kind="copy", sys="torch", bytes=big.numel() * 2, ms=ms, tbps=copy_tbps)
    del big, dst
    ws_bytes = 1 << 28
    ws = torch.zeros(ws_bytes, dtype=torch.uint8, device="cuda")
    only = [x for x in os.environ.get("DECODE_SHAPES", "").split(",") if x]
    for label, B, HKV, G, M, lens in shapes():
        if only and label not in only:
            continue
        H = HKV * G
        q = torch.randn(B, H, D, device="cuda", dtype=torch.bfloat16)
        K = torch.randn(B, HKV, M, D, device="cuda", dtype=torch.bfloat16)
        V = torch.randn(B, HKV, M, D, device="cuda", dtype=torch.bfloat16)
        kv = torch.tensor(lens, dtype=torch.int32, device="cuda")
        o = torch.empty(B, H, D, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(B, H, device="cuda", dtype=torch.float32)
        nbytes = 2 * 2 * sum(lens) * HKV * D
        ptrs = (ctypes.c_void_p * 8)(*[t.data_ptr() for t in (q, K, V, kv, o, lse)])
        dims = (ctypes.c_long * 5)(B, HKV, G, M, D)
        params = (ctypes.c_double * 1)(D ** -0.5)

        def plain_of(lib):
            def run():
                if lib.decode_launch_generic(ptrs, None, dims, params, stream()):
                    raise RuntimeError(lib.attnrt_last_error().decode())
            return run

        def split_of(lib, n=0, flags=2):
            pn = Part(0, 0, 0, 0, n, flags, ws.data_ptr(), ws_bytes, None, 0)

            def run():
                if lib.decode_launch_part_generic(ptrs, None, dims, params, ctypes.byref(pn), stream()):
                    raise RuntimeError(lib.attnrt_last_error().decode())
            return run
        # the reference: SDPA on the valid keys of each sequence
        ref = torch.empty_like(o)
        for b in range(B):
            qb = q[b:b + 1, :, None, :]
            kb, vb = K[b:b + 1, :, :lens[b]], V[b:b + 1, :, :lens[b]]
            ref[b] = F.scaled_dot_product_attention(qb, kb, vb, enable_gqa=True)[0, :, 0]
        runs = []
        for tag, lib in libs:
            # _z: ATTN_PART_ZEROED, the counters as the last launch left them (no memset)
            runs += [(tag, plain_of(lib)), (tag + "_split", split_of(lib)),
                     (tag + "_streamk", split_of(lib, 0, 2 | 4)),
                     (tag + "_split_z", split_of(lib, 0, 2 | 8)),
                     (tag + "_streamk_z", split_of(lib, 0, 2 | 4 | 8))]
        sweep = [int(x) for x in os.environ.get("DECODE_SPLITS", "").split(",") if x]
        runs += [("attnc_split_s%d" % n, split_of(libs[0][1], n)) for n in sweep if n <= (M + 255) // 256]
        for name, fn in runs:
            o.fill_(float("nan"))
            try:
                fn()
            except RuntimeError as e:
                if not name.startswith("attnc_split_s") and "_streamk" not in name:
                    raise
                rec(kind="decode", sys=name, shape=label, error=str(e)[:200])
                continue
            torch.cuda.synchronize()
            err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
            t = bench(fn)
            rec(kind="decode", sys=name, shape=label, B=B, HKV=HKV, G=G, M=M, kv_tokens=sum(lens),
                ms=t, tbps=nbytes / t / 1e9, rel_l2=err, ok=bool(err < 1e-2))
        if len(set(lens)) == 1:
            qs = q[:, :, None, :]
            for be, name in ((SDPBackend.FLASH_ATTENTION, "sdpa_flash2"), (SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn")):
                try:
                    with sdpa_kernel(be):
                        fn = lambda: F.scaled_dot_product_attention(qs, K, V, enable_gqa=True)
                        t = bench(fn)
                    rec(kind="decode", sys=name, shape=label, B=B, HKV=HKV, G=G, M=M, kv_tokens=sum(lens),
                        ms=t, tbps=nbytes / t / 1e9)
                except Exception as e:
                    rec(kind="decode", sys=name, shape=label, error=str(e)[:200])
        if plibs:
            paged_rows(plibs, label, B, HKV, G, M, lens, q, K, V, ref, ws, ws_bytes, nbytes, stream)
        if vlib:
            packed_rows(vlib, label, B, HKV, G, lens, q, K, V, ref, ws, ws_bytes, nbytes, stream)
        del q, K, V, o, lse, ref
        torch.cuda.empty_cache()
    json.dump(rows, open(os.path.join(run, "decode.json"), "w"), indent=1)
    by = {(r.get("shape"), r["sys"]): r for r in rows if r.get("kind") == "decode" and "tbps" in r}
    lines = ["%-11s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %7s %6s" % (
        "shape", "attnc", "split", "streamk", "split_z", "sk_z", "split80", "fa2", "cudnn", "split/fa2",
        "split/cud", "z/cud", "ok")]
    for label, *_ in shapes():
        g = lambda s: by.get((label, s), {}).get("tbps")
        s, f2, cu = g("attnc_split"), g("sdpa_flash2"), g("sdpa_cudnn")
        fmt = lambda x: "%8.2f" % x if x else "%8s" % "-"
        oks = [r.get("ok") for (sh, n), r in by.items() if sh == label and n.startswith("attnc")]
        z = g("attnc_split_z")
        lines.append("%-11s %s %s %s %s %s %s %s %s %9s %9s %7s %6s" % (
            label, fmt(g("attnc")), fmt(s), fmt(g("attnc_streamk")), fmt(z), fmt(g("attnc_streamk_z")),
            fmt(g("attnc_sm80_split")), fmt(f2), fmt(cu),
            "%.2f" % (s / f2) if s and f2 else "-", "%.2f" % (s / cu) if s and cu else "-",
            "%.2f" % (z / cu) if z and cu else "-", all(oks) if oks else "-"))
    lines.append("TB/s of K+V read; _z: ATTN_PART_ZEROED (no memset of the counters); copy ceiling "
                 "%.2f TB/s; %s %s %s %s" % (
        copy_tbps, meta.get("target"), meta.get("device"), meta.get("commit"), meta.get("date")))
    sweep = sorted({int(r["sys"][len("attnc_split_s"):]) for r in rows
                    if r.get("kind") == "decode" and r["sys"].startswith("attnc_split_s") and "tbps" in r})
    if sweep:
        lines.append("")
        lines.append("%-11s %s" % ("splits", " ".join("%6d" % n for n in sweep)))
        for label, *_ in shapes():
            t = [by.get((label, "attnc_split_s%d" % n), {}).get("tbps") for n in sweep]
            lines.append("%-11s %s" % (label, " ".join("%6.2f" % x if x else "%6s" % "-" for x in t)))
    if plibs:
        pg = {(r.get("shape"), r["sys"]): r for r in rows if r.get("kind") == "paged" and "tbps" in r}
        lines.append("")
        lines.append("%-15s %8s %8s %8s %8s %8s %8s %8s %8s %9s %8s %8s %8s %8s %10s %6s" % (
            "paged shape", "attnc", "split", "split_z", "sk", "hnd", "hnd_spl", "split80", "anchor",
            "anchor_is", "/contig", "z/ctg_z", "sk/ctg_sk", "hnd/ctg", "split/anch", "ok"))
        for label, *_ in shapes():
            for P in (16, 64):
                sh = "%s_p%d" % (label, P)
                g = lambda s: pg.get((sh, s), {}).get("tbps")
                an = "flashinfer" if g("flashinfer") else "sdpa_gathered"
                s, a, c = g("attnc_paged_split"), g(an), by.get((label, "attnc_split"), {}).get("tbps")
                hs = g("attnc_paged_hnd_split")
                z, cz = g("attnc_paged_split_z"), by.get((label, "attnc_split_z"), {}).get("tbps")
                sk, csk = g("attnc_paged_streamk"), by.get((label, "attnc_streamk"), {}).get("tbps")
                ok = [pg.get((sh, t), {}).get("ok") for t in ("attnc_paged_split", "attnc_paged_hnd_split")]
                fmt = lambda x: "%8.2f" % x if x else "%8s" % "-"
                lines.append("%-15s %s %s %s %s %s %s %s %s %9s %8s %8s %8s %8s %10s %6s" % (
                    sh, fmt(g("attnc_paged")), fmt(s), fmt(z), fmt(sk), fmt(g("attnc_paged_hnd")), fmt(hs),
                    fmt(g("attnc_paged_sm80_split")), fmt(a), an if a else "-",
                    "%.2f" % (s / c) if s and c else "-", "%.2f" % (z / cz) if z and cz else "-",
                    "%.2f" % (sk / csk) if sk and csk else "-",
                    "%.2f" % (hs / c) if hs and c else "-",
                    "%.2f" % (s / a) if s and a else "-", all(x is not False for x in ok)))
        lines.append("paged: TB/s of the same K+V bytes (copy ceiling %.2f TB/s); hnd: each page head-major "
                     "(paged_decode_hnd); /contig, hnd/ctg: split over the contiguous split; z/ctg_z, "
                     "sk/ctg_sk: the same with ATTN_PART_ZEROED, with stream-K; anchor: "
                     "FlashInfer's paged decode, else SDPA FA2 on the contiguous tensors" % copy_tbps)
    if vlib:
        lines.append("")
        lines.append("%-15s %8s %8s %8s %8s %8s %8s %9s %9s %6s" % (
            "packed", "plain", "split", "streamk", "contig", "ctg_sk", "cudnn", "sp/contig", "sk/ctg_sk", "ok"))
        for label, *_ in shapes():
            g = lambda s: by.get((label, s), {}).get("tbps")
            p, c, cu = g("attnc_packed_split"), g("attnc_split"), g("sdpa_cudnn")
            k, ck = g("attnc_packed_streamk"), g("attnc_streamk")
            fmt = lambda x: "%8.2f" % x if x else "%8s" % "-"
            lines.append("%-15s %s %s %s %s %s %s %9s %9s %6s" % (
                label, fmt(g("attnc_packed")), fmt(p), fmt(k), fmt(c), fmt(ck), fmt(cu),
                "%.2f" % (p / c) if p and c else "-", "%.2f" % (k / ck) if k and ck else "-",
                all(by.get((label, n), {}).get("ok", True) for n in ("attnc_packed", "attnc_packed_split",
                                                                      "attnc_packed_streamk"))))
        lines.append("packed: TB/s of the same K+V bytes, the cache packed without padding "
                     "(varlen_decode); contig, ctg_sk: decode.attn's split and stream-K over the padded cache")
    open(os.path.join(run, "decode.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
