"""Each kernel of attnc's backward launches, timed one by one: torch.profiler
(CUPTI sees the generated launchers' driver-API launches) around five calls of
NAME_bwd_launch and of NAME_bwd_launch_atomic, B = 32768 / N, H = 16, bf16,
after attnc's own forward saved O and L. Prints ms per launch of each kernel
and the largest relative difference between the two launches' gradients.
For the variants whose inputs are Q, K and V and whose one param is the
scale (full, causal, sliding1024, prefixlm1024).

usage (there, after bench/prepare.sh here):
    python3 .carry/bench/bwd_kernels.py NAME_g_dD:N [...]   (e.g. full_g_d128:8192)
"""
import ctypes
import sys

import torch
from torch.profiler import ProfilerActivity, profile

args = sys.argv[1:]
sys.argv = sys.argv[:1]
import anchors  # noqa: E402  (its argument parsing must see none of ours)


def kernels(name, N):
    """The per-kernel table of both launches of kernel file `name` at N."""
    D = int(name.rsplit("_d", 1)[1])
    B, H = max(1, 32768 // N), 16
    fwd, launches, wsb, err, order = anchors.ours_bwd(name)
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    dims = (ctypes.c_long * 4)(B, H, N, D)
    p = (ctypes.c_double * 1)(D ** -0.5)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    o, lse = torch.empty_like(q), torch.empty(B, H, N, device="cuda")
    if fwd((ctypes.c_void_p * 8)(*[t.data_ptr() for t in (q, k, v, o, lse)]), None, dims, p, stream):
        raise RuntimeError(err().decode())
    t = {"Q": q, "K": k, "V": v, "O": o, "L": lse, "dO": do, "dL": torch.zeros_like(lse),
         "dQ": torch.empty_like(o), "dK": torch.empty_like(o), "dV": torch.empty_like(o)}
    bp = (ctypes.c_void_p * 32)(*[t[x].data_ptr() for x in order])
    nb = wsb(dims)
    ws = torch.empty(max(1, nb), device="cuda", dtype=torch.uint8)
    grads = {}
    for mode, launch in zip(("NAME_bwd_launch", "NAME_bwd_launch_atomic"), launches):
        run = lambda: launch(bp, None, dims, p, ctypes.c_void_p(ws.data_ptr()), nb, stream)
        for _ in range(3):
            if run():
                raise RuntimeError(err().decode())
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                run()
            torch.cuda.synchronize()
        total = 0.0
        print("== %s N=%d %s" % (name, N, mode))
        for e in prof.key_averages():
            if e.device_time_total > 0:
                ms = e.device_time_total / 1e3 / 5
                total += ms
                print("  %-40s %8.3f ms" % (e.key[:40], ms))
        print("  %-40s %8.3f ms" % ("total", total))
        grads[mode] = [t[x].float().clone() for x in ("dQ", "dK", "dV")]
    a, b = grads.values()
    print("  largest relative difference of the launches' gradients %.2e"
          % max(((x - y).norm() / y.norm()).item() for x, y in zip(a, b)))


for arg in args or ["full_g_d128:8192"]:
    n, N = arg.split(":")
    kernels(n, int(N))
