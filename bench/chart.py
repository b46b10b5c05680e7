"""TFLOP/s per variant and head dim as an SVG bar chart, from a recorded
anchors run: attnc beside cuDNN, FlashAttention-2 and FlexAttention, each
bar a system's figure in that run (so ratios between bars are the run's
ratios). No plotting library: the SVG is written by hand.

usage: python3 bench/chart.py RUN_DIR [OUT.svg]
  RUN_DIR: a bench/results/DATE-COMMIT-anchors folder (anchors.json and
  meta.json); OUT.svg defaults to RUN_DIR/chart.svg. The README shows
  bench/chart.svg, written by `bench/chart.py RUN_DIR bench/chart.svg`
  for each run that is recorded in bench/RESULTS.md.
"""
import json
import os
import sys
from xml.sax.saxutils import escape

SYSTEMS = [("attnc", "attnc", "#1f77b4"), ("sdpa_cudnn", "cuDNN", "#2ca02c"),
           ("sdpa_flash2", "FlashAttention-2", "#ff7f0e"), ("flex", "FlexAttention", "#9467bd")]
VARIANTS = ["full", "causal", "sliding1024", "document1024", "prefixlm1024", "alibi",
            "alibi_causal", "softcap30", "longformer256", "threshold"]


def load(run_dir):
    """The run's rows that carry a figure, and its meta.json."""
    rows = [r for r in json.load(open(os.path.join(run_dir, "anchors.json"))) if "tflops" in r]
    meta = json.load(open(os.path.join(run_dir, "meta.json")))
    return rows, meta


def panels(rows):
    """(D, N) panels, each {variant: {system: tflops}} in VARIANTS order."""
    out = {}
    for r in rows:
        p = out.setdefault((r["D"], r["N"]), {})
        p.setdefault(r["variant"], {})[r["sys"]] = r["tflops"]
    return [(k, out[k]) for k in sorted(out, key=lambda k: (-k[0], k[1]))]


def svg(rows, meta):
    """One row of bar groups per (D, N) panel, a shared TFLOP/s scale."""
    ps = panels(rows)
    top = max(r["tflops"] for r in rows) * 1.1
    bar, gap, group_gap, ph, left = 11, 1, 18, 170, 60
    nv = len(VARIANTS)
    gw = len(SYSTEMS) * (bar + gap) + group_gap
    width = left + nv * gw + 20
    height = 70 + len(ps) * (ph + 60) + 30
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="11">' % (width, height),
         '<rect width="100%" height="100%" fill="white"/>']
    title = "attnc (%s, commit %s) against the anchors on %s, %s: TFLOP/s, bf16, B*N = 32k, H = 16" % (
        meta.get("target", "?"), meta.get("commit", "?"), meta.get("device", "?"), meta.get("date", "?"))
    o.append('<text x="10" y="18" font-size="13">%s</text>' % escape(title))
    for i, (_, name, colour) in enumerate(SYSTEMS):
        x = 10 + i * 150
        o.append('<rect x="%d" y="30" width="10" height="10" fill="%s"/>' % (x, colour))
        o.append('<text x="%d" y="39">%s</text>' % (x + 14, escape(name)))
    for pi, ((D, N), p) in enumerate(ps):
        y0 = 70 + pi * (ph + 60)
        base = y0 + ph
        o.append('<text x="10" y="%d" font-size="12">D = %d, N = %d</text>' % (y0 - 6, D, N))
        for t in range(0, int(top) + 1, 200):
            y = base - ph * t / top
            o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, width - 20, y, y))
            o.append('<text x="%d" y="%.1f" text-anchor="end">%d</text>' % (left - 4, y + 4, t))
        for vi, v in enumerate(VARIANTS):
            gx = left + vi * gw + group_gap / 2
            for si, (key, _, colour) in enumerate(SYSTEMS):
                val = p.get(v, {}).get(key)
                if val is None:
                    continue
                h = ph * val / top
                x = gx + si * (bar + gap)
                o.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s">'
                         '<title>%s %s: %.0f TFLOP/s</title></rect>' % (x, base - h, bar, h, colour,
                                                                        escape(v), key, val))
            label = v if v in p and "attnc" in p[v] else v + " (no attnc)"
            o.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="10">%s</text>' % (
                gx + len(SYSTEMS) * (bar + gap) / 2, base + 14, escape(label)))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    run_dir = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(run_dir, "chart.svg")
    rows, meta = load(run_dir)
    with open(out, "w") as f:
        f.write(svg(rows, meta))
    print("wrote", out)


if __name__ == "__main__":
    main()
