#!/usr/bin/env python3
"""The anchors TABLE (TFLOP/s and ratios against the anchors of the same
run) from anchors.py's rows, headed by what the attnc rows say they timed
(target, device, commit, date). anchors.py prints it at the end of a run and
writes it to the run's anchors.txt; `python3 table.py FILE...` prints it
again from a run's anchors.json or from the JSON lines a run printed (each
row as it was measured), for a log whose run stopped before its table.
No torch needed."""
import json
import sys

VARIANTS = ("full", "causal", "sliding1024", "document1024", "prefixlm1024", "alibi", "softcap30", "alibi_causal",
            "longformer256", "threshold", "cosine", "gaussian", "t5", "mla_causal")


def table(rows, Ds, Ns, out=sys.stdout):
    label = next((r for r in rows if r.get("sys") == "attnc" and "commit" in r), None)
    if label:
        print("\nattnc %s on %s, %s, %s" % (label.get("target"), label.get("commit"), label.get("date"),
                                          label.get("device")), file=out)
    print("\nTABLE  D     N  variant        attnc  fa2  cudnn  flex  | attnc/fa2 attnc/cudnn attnc/flex  rel_err  vs_own_full"
          "  vs_own_full_tiles", file=out)
    by = {}
    for r in rows:
        if "tflops" in r:
            by[(r["D"], r["N"], r["variant"], r["sys"])] = r
    for D in Ds:
        for N in Ns:
            own_full = by.get((D, N, "full", "attnc"), {}).get("tflops")
            for vname in VARIANTS:
                a = by.get((D, N, vname, "attnc"))
                if not a:
                    continue
                t = lambda s: by.get((D, N, vname, s), {}).get("tflops")
                fa2, cud, fx = t("sdpa_flash2"), t("sdpa_cudnn"), t("flex")
                ratio = lambda x: ("%.2f" % (a["tflops"] / x)) if x else "-"
                num = lambda x: ("%.0f" % x) if x else "-"
                tiles = ("%.2f" % (a["tflops_tiles"] / own_full)) if own_full and "tflops_tiles" in a else "-"
                print("TABLE %4d %5d  %-13s %5.0f %4s %6s %5s  | %9s %11s %10s  %.1e  %.2f  %17s" % (
                    D, N, vname, a["tflops"], num(fa2), num(cud), num(fx), ratio(fa2), ratio(cud), ratio(fx),
                    a.get("rel_err") or 0, a["tflops"] / own_full if own_full else 0, tiles), file=out)


def main():
    rows = []
    for path in sys.argv[1:]:
        if path.endswith(".json"):
            rows += json.load(open(path))
            continue
        for line in open(path):
            if line.startswith("{"):
                rows.append(json.loads(line))
    Ds = sorted({r["D"] for r in rows if "D" in r}, reverse=True)
    Ns = sorted({r["N"] for r in rows if "N" in r})
    table(rows, Ds, Ns)


if __name__ == "__main__":
    main()
