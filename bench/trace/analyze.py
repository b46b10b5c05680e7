"""bench/trace/analyze.py FILE...: per-CTA phases from trace.c's output.

Medians over the CTAs whose stamps are sane (a CTA's first row of O can be
overwritten where rows are shared; those are dropped). Prints, in us from the
CTA's start: Q's commit, the next group's commit, the table's words and
entries (document masks), the loop's first arrival, the end of the first
tile; then the phases: prologue (start to loop), first tile, steady tile
(with its cycles and the clock they imply), epilogue (loop exit to end), the
gap on the SM (a CTA's start minus the latest end before it on that SM) and
their sum less one steady tile, in steady tiles (the per-CTA overhead).
%globaltimer ticks in 32 ns steps at best; 256 ns were seen on the H100.
"""
import sys

import numpy as np

for fn in sys.argv[1:]:
    hdr = open(fn).readline().strip()
    a = np.loadtxt(fn, dtype=np.float64)
    c, sm, ts, tl, tf, tx, te, it, cyc, qc, kc, b1, b2 = [a[:, i] for i in range(13)]
    ok = (sm < 1024) & (it > 0) & (it < 1e6) & (ts > 0) & (tl >= ts) & (tf >= tl) & (tx >= tf) & (te >= tx)
    ok &= np.abs(te - np.median(te[ok])) < 1e8
    c, sm, ts, tl, tf, tx, te, it, cyc, qc, kc, b1, b2 = [v[ok] for v in (c, sm, ts, tl, tf, tx, te, it, cyc, qc, kc, b1, b2)]
    m = lambda v: np.median(v) / 1e3
    gaps = []
    for s in np.unique(sm):
        idx = np.where(sm == s)[0]
        o = idx[np.argsort(ts[idx])]
        ends = []
        for j in o:
            prev = [e for e in ends if e <= ts[j] + 1]
            if len(ends) >= 2 and prev:
                gaps.append(ts[j] - max(prev))
            ends.append(te[j])
    gap = np.median(gaps) / 1e3 if gaps else 0.0
    steady = (tx - tf) / np.maximum(it - 1, 1)
    pro, first, epi = m(tl - ts), m(tf - tl), m(te - tx)
    over = pro + first - m(steady) + epi + gap
    print(hdr, "| %d of %d CTAs" % (ok.sum(), len(a)))
    print("  stamps (us): Q commit %.2f, next commit %.2f, words %.2f, entries %.2f, loop %.2f, first tile end %.2f" % (
        m(qc - ts), m(kc - ts), m(b1 - ts) if b1.max() > 0 else 0, m(b2 - ts) if b2.max() > 0 else 0, pro, m(tf - ts)))
    print("  phases (us): prologue %.2f first %.2f steady %.3f (%.0f cycles, %.0f MHz) epilogue %.2f gap %.2f; overhead %.2f us = %.2f tiles, %d tiles" % (
        pro, first, m(steady), np.median(cyc / np.maximum(it - 1, 1)), np.median(cyc / (tx - tf)) * 1e3, epi, gap, over, over / m(steady), np.median(it)))
