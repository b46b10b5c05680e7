"""bench/decode_prof.py: device time per kernel of a decode launch, beside
bench/decode.py in a folder bench/prepare.sh filled (it imports decode.py).
For 1x32k_g8, 1x128k and 8x8k (PROF_ONLY=a,b to choose): attnc's split launch
(flags 2), stream-K (6) and the split on counters left zero (10: no memset;
PROF_FLAGS=a,b to choose), SDPA's cuDNN and FlashAttention-2 backends on the
same tensors; prints each one's median event time over 30 calls and, from
torch.profiler over 12 more, every kernel's mean device time (a memset
included). Each call follows a 256 MiB zero fill, which empties the L2."""
import ctypes, os, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode as d
from torch.profiler import profile, ProfilerActivity
import collections
res = collections.OrderedDict()
def timed(tag, fn):
    """events around each call (after an L2 flush), then the profiler's
    per-kernel device times of 12 calls"""
    ts = []
    for i in range(30):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1000)
    ts.sort()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for i in range(12):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    ks = {}
    for e in p.key_averages():
        if "zero" in e.key or "fill" in e.key.lower() and "Memset" not in e.key:
            continue
        ks[e.key[:60]] = (e.count, e.device_time_total / max(e.count, 1) if hasattr(e, "device_time_total") else e.cuda_time_total / max(e.count, 1))
    res[tag] = (ts[len(ts) // 2], ks)
    print(tag, "%.1f us" % ts[len(ts) // 2], ks, flush=True)

lib = d.library()
stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
ws_bytes = 1 << 28
ws = torch.zeros(ws_bytes, dtype=torch.uint8, device="cuda")
flush = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
for label, B, HKV, G, M, lens in d.shapes():
    if label not in os.environ.get("PROF_ONLY", "1x32k_g8,1x128k,8x8k").split(","):
        continue
    a = d.step_args(B, HKV, G, M, lens)
    q, K, V, ptrs, dims, params = a["q"], a["K"], a["V"], a["ptrs"], a["dims"], a["params"]
    for flags in [int(x) for x in os.environ.get("PROF_FLAGS", "2,6,10").split(",")]:
        pn = d.Part(0, 0, 0, 0, 0, flags, ws.data_ptr(), ws_bytes, None, 0)
        def run(pn=pn):
            assert lib.decode_launch_part_generic(ptrs, None, dims, params, ctypes.byref(pn), stream()) == 0
        timed("%s attnc f%d" % (label, flags), run)
    qs = q[:, :, None, :]
    for be, name in ((SDPBackend.CUDNN_ATTENTION, "cudnn"), (SDPBackend.FLASH_ATTENTION, "fa2")):
        with sdpa_kernel(be):
            timed("%s %s" % (label, name), lambda: F.scaled_dot_product_attention(qs, K, V, enable_gqa=True))
    torch.cuda.synchronize()
    print(label, "done", flush=True)
