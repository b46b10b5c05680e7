"""bench/trace/decode_trace.py: runs the marked decode_fwd_part (gen/decode.c
generated with --ptxas=ptxas-marks.sh, in a folder laid out as bench/decode.py's,
which it imports) on 1x128k, 8x8k and 1x32k_g8 and prints each mark's spread
over the CTAs, in microseconds from the earliest CTA start."""
import ctypes, os, sys, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode as d
lib = d.library()
stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
ws_bytes = 1 << 28
ws = torch.zeros(ws_bytes, dtype=torch.uint8, device="cuda")
flush = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
names = ["start", "prod first K/V", "prod last K/V", "cons start", "Q in", "first tile in", "last tile in",
         "stream end", "ticket", "merged", "epilogue end"]
for label, B, HKV, G, M, lens in d.shapes():
    if label not in ("1x32k_g8", "1x128k", "8x8k"):
        continue
    a = d.step_args(B, HKV, G, M, lens)
    ptrs, dims, params = a["ptrs"], a["dims"], a["params"]
    pn = d.Part(0, 0, 0, 0, 0, 2, ws.data_ptr(), ws_bytes, None, 0)
    tr = ws[128 << 20:(128 << 20) + 8 * 16 * 4096].view(torch.int64)
    for rep in range(6):
        flush.zero_()
        tr.fill_(-1)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ev[0].record()
        assert lib.decode_launch_part_generic(ptrs, None, dims, params, ctypes.byref(pn), stream()) == 0
        ev[1].record()
        torch.cuda.synchronize()
    t = tr.view(-1, 16).cpu()
    n = int((t != -1).any(1).sum())
    t = t.double()
    t0 = t[:, 0][t[:, 0] != -1].min()
    print("%s: %d CTAs, events %.1f us" % (label, n, ev[0].elapsed_time(ev[1]) * 1000))
    for k, nm in enumerate(names):
        col = t[:, k]
        ok = col != -1
        if ok.sum() == 0:
            print("  %-16s -" % nm)
            continue
        v = ((col[ok] - t0) / 1000.0).sort().values
        print("  %-16s n=%3d  min %7.2f  p50 %7.2f  max %7.2f" % (nm, int(ok.sum()), v[0], v[len(v) // 2], v[-1]))
