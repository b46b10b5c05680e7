"""Neighbourhood attention (examples/neighborhood2d.attn, neighborhood3d.attn)
against FlexAttention, in one process, on the same tensors.

Runs on the GPU machine from the folder bench/prepare.sh filled (gen/ holds
neighborhood2d.c, neighborhood3d.c and full_d64.c). FlexAttention gets the
same window as a mask_mod and its block mask (create_block_mask, its default
128 x 128 blocks), compiled; attnc's kernels run through their generated
launchers (anchors.py's ours/launcher), their output checked against Flex's.
Columns:
- ms, and the ratio flex_ms / attnc_ms (>= 1: attnc is faster);
- kept: the fraction of (query, key) pairs of the CTA tiles the kernel
  computes (a tile of block_m rows by block_n keys, as NAME_kernel_info
  reports for the image that ran, is computed when the window keeps any
  pair of it), from the mask evaluated on the GPU;
- own_full_ms: the time those tiles take at the TFLOP/s of attnc's own full
  attention (full_d64 on a batch of the same B, H, N and D, timed here), and
  attnc_ms / own_full_ms (issue 21's goal: within 2).
Where gen/NAME80.c exists (the cascade renamed NAME80, compiled for sm_80
alone), that image runs too, a row of its own.
Shapes: a 64 x 64 image with a 7 x 7 window (N 4096, B 8); 128 x 128 with
7 x 7 (N 16384, B 2); a video of 8 x 32 x 32 with 3 x 7 x 7 (N 8192, B 4);
H 16, D 64, bf16.

usage: python3 neighborhood.py    (writes DATE-COMMIT-neighborhood under $OUT)
"""
import ctypes
import json
import os
import re
import sys

import torch

import anchors
from anchors import bench, launcher, rec, rel

dev, dt = "cuda", torch.bfloat16


class KernelInfo(ctypes.Structure):
    _fields_ = [("target", ctypes.c_char_p), ("sm", ctypes.c_int), ("threads", ctypes.c_uint),
                ("smem_bytes", ctypes.c_uint), ("block_m", ctypes.c_uint), ("block_n", ctypes.c_uint)]


def single_target(name):
    """The target of a single target's interface: sm_90a where its only
    image is sm_90a's cubin (`{90, attn_sm90, ...}` first in gen/NAME.c),
    else sm_80 (whose PTX also carries an sm_90 cubin)."""
    src = open(os.path.join(anchors.HERE, "gen", name + ".c")).read()
    m = re.search(r"AttnrtImage attn_images\[\] = \{\s*\{(\d+),", src)
    return b"sm_90a" if m and m.group(1) == "90" else b"sm_80"


def kernel_info(name):
    """What NAME_kernel_info says of the image that runs on this device; a
    single target's interface has none, and then its tile is read from the
    launcher (anchors.kernel_tile) and its image from its cubins
    (single_target)."""
    anchors.ours(name)
    lib = ctypes.CDLL(os.path.join(anchors.HERE, "lib", name + ".so"))
    info = KernelInfo()
    if not hasattr(lib, name + "_kernel_info"):
        info.target, (info.block_m, info.block_n) = single_target(name), anchors.kernel_tile(name)
        return info
    fn = getattr(lib, name + "_kernel_info")
    fn.restype = ctypes.c_int
    if fn(ctypes.byref(info)):
        raise RuntimeError(name + "_kernel_info failed")
    return info


def window(shape, radius):
    """The mask_mod of a neighbourhood window over a grid of `shape` (frames,
    rows, columns or rows, columns) with per-axis radius, NATTEN's clamped
    start, tokens row-major."""
    def axes(i):
        out, rest = [], i
        for n in reversed(shape):
            out.append(rest % n)
            rest = rest // n
        return list(reversed(out))

    def mask(b, h, i, j):
        ok = None
        for a, b_, n, r in zip(axes(i), axes(j), shape, radius):
            s = torch.clamp(a - r, 0, n - 2 * r - 1)
            t = (b_ >= s) & (b_ <= s + 2 * r)
            ok = t if ok is None else ok & t
        return ok
    return mask


def kept_fraction(mask, n, bm, bn):
    """Pairs of the bm x bn tiles where the mask keeps any pair, over n^2."""
    i = torch.arange(n, device=dev)
    kept = 0
    for r0 in range(0, n, bm):
        rows = i[r0:r0 + bm, None]
        m = mask(0, 0, rows, i[None, :])
        tiles = m.reshape(m.shape[0], -1, bn).any(dim=2).any(dim=0)  # n is a multiple of bn here
        kept += int(tiles.sum().item()) * bn * m.shape[0]
    return kept / (n * n)


def main():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    flex = torch.compile(flex_attention, dynamic=False)
    print("device", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    run_dir = anchors.start_run("neighborhood")
    H, D = 16, 64
    shapes = [("neighborhood2d", (64, 64), (3, 3), 8), ("neighborhood2d", (128, 128), (3, 3), 2),
              ("neighborhood3d", (8, 32, 32), (1, 3, 3), 4)]
    table = []
    full_tflops = {}
    for name, shape, radius, B in shapes:
        N = 1
        for s in shape:
            N *= s
        q, k, v = (torch.randn(B, H, N, D, device=dev, dtype=dt) for _ in range(3))
        o = torch.empty_like(q)
        scale = D ** -0.5
        mask = window(shape, radius)
        vname = "%s_%s" % (name, "x".join(map(str, shape)))
        kept_pairs = 1
        for r, n in zip(radius, shape):
            kept_pairs *= min(2 * r + 1, n)
        gfl = 4 * B * H * N * kept_pairs * D / 1e9
        bm = create_block_mask(mask, B=None, H=None, Q_LEN=N, KV_LEN=N)
        f = lambda: flex(q, k, v, block_mask=bm, scale=scale)
        ref = f()
        fms = bench(f)
        rec(sys="flex", variant=vname, B=B, H=H, N=N, D=D, ms=fms, tflops=gfl / fms)
        # our own full attention's TFLOP/s on the same sizes
        if N not in full_tflops:
            run = launcher("full_d64", [q, k, v, o], [B, H, N, D], [scale])
            ms = bench(run)
            full_tflops[N] = 4 * B * H * N * N * D / 1e9 / ms
            rec(sys="attnc", variant="full_d64", B=B, H=H, N=N, D=D, ms=ms, tflops=full_tflops[N])
        run = launcher(name, [q, k, v, o], [B, H] + list(shape) + [D], [scale])
        o.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        err = rel(o, ref)
        ms = bench(run)
        info = kernel_info(name)
        kept = kept_fraction(mask, N, info.block_m, info.block_n)
        own = 4 * B * H * N * N * D * kept / 1e9 / full_tflops[N]
        rec(sys="attnc", variant=vname, B=B, H=H, N=N, D=D, ms=ms, tflops=gfl / ms, rel_err=err,
            image=info.target.decode(), block_m=info.block_m, block_n=info.block_n, kept=kept,
            own_full_ms=own, vs_flex=fms / ms, vs_own_tiles=ms / own)
        table.append((vname + "/" + info.target.decode(), B, N, fms, ms, fms / ms, kept, own, ms / own, err))
        # the same cascade compiled for sm_80 alone (gen/NAME80.c, where
        # prepare.sh made it): the other image on the same device
        if os.path.exists(os.path.join(anchors.HERE, "gen", name + "80.c")):
            run = launcher(name + "80", [q, k, v, o], [B, H] + list(shape) + [D], [scale])
            o.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            err = rel(o, ref)
            ms = bench(run)
            info = kernel_info(name + "80")
            kept = kept_fraction(mask, N, info.block_m, info.block_n)
            own = 4 * B * H * N * N * D * kept / 1e9 / full_tflops[N]
            rec(sys="attnc", variant=vname, B=B, H=H, N=N, D=D, ms=ms, tflops=gfl / ms, rel_err=err,
                image=info.target.decode(), block_m=info.block_m, block_n=info.block_n, kept=kept,
                own_full_ms=own, vs_flex=fms / ms, vs_own_tiles=ms / own)
            table.append((vname + "/" + info.target.decode(), B, N, fms, ms, fms / ms, kept, own, ms / own,
                          err))
        del q, k, v, o
        torch.cuda.empty_cache()
    lines = ["%-30s %3s %6s %9s %9s %8s %7s %9s %8s %9s" % ("shape", "B", "N", "flex_ms", "attnc_ms",
                                                        "vs_flex", "kept", "own_ms", "vs_own", "rel_err")]
    for r in table:
        lines.append("%-30s %3d %6d %9.4f %9.4f %8.2f %7.4f %9.4f %8.2f %9.2e" % r)
    m = anchors.run_meta
    lines.append("%s %s %s %s" % (m.get("target"), m.get("device"), m.get("commit"), m.get("date")))
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(run_dir, "neighborhood.txt"), "w") as fh:
        fh.write(text + "\n")
    json.dump(anchors.rows, open(os.path.join(run_dir, "neighborhood.json"), "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
