"""bench/trace/decode_marks.py FILE.ptx: adds %globaltimer marks to
decode_fwd_part's PTX in place (a measurement aid, not part of attnc; run by
ptxas-marks.sh). Mark k of CTA c (ctaid.z * nctaid.x + ctaid.x: grids of one
y) goes to the split workspace at 128 MiB + (c * 16 + k) * 8, written by the
producer's thread 0 or the first consumer thread; marks 1 and 5 keep their
earliest value (atom.min), the rest their latest. The anchors (labels,
predicate and register names) are those of 58e01c4's PTX; later PTX may
need them moved."""
import re, sys
path = sys.argv[1]
src = open(path).read()
a = src.find(".visible .entry decode_fwd_part(")
if a < 0:
    sys.exit(0)
b = src.find(".visible .entry", a + 10)
b = len(src) if b < 0 else b
body = src[a:b]
n = [0]

def mark(k, tid, mode="st"):
    n[0] += 1
    op = ("atom.global.min.u64 %%tq3, [%%tq1+%d], %%tq0;" % (k * 8)) if mode == "min" else ("st.global.u64 [%%tq1+%d], %%tq0;" % (k * 8))
    return ("\t{\n\t.reg .u64 %%tq<4>;\n\t.reg .u32 %%tu<4>;\n\t.reg .pred %%tp;\n"
            "\tmov.u32 %%tu0, %%tid.x;\n\tsetp.eq.u32 %%tp, %%tu0, %d;\n"
            "\tmov.u64 %%tq0, %%globaltimer;\n"
            "\tmov.u32 %%tu1, %%ctaid.z;\n\tmov.u32 %%tu2, %%nctaid.x;\n\tmov.u32 %%tu3, %%ctaid.x;\n"
            "\tmad.lo.u32 %%tu1, %%tu1, %%tu2, %%tu3;\n"
            "\tld.param.u64 %%tq1, [decode_fwd_part_pws];\n"
            "\tmul.wide.u32 %%tq2, %%tu1, 128;\n\tadd.s64 %%tq1, %%tq1, %%tq2;\n"
            "\tadd.s64 %%tq1, %%tq1, 134217728;\n"
            "\t@%%tp %s\n\t}\n") % (tid, op)

def after(pat, text, first=True):
    global body
    i = body.find(pat)
    assert i >= 0, pat
    j = body.find("\n", i) + 1
    body = body[:j] + text + body[j:]

after("\tbar.sync 0;\n", mark(0, 0))
after("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r55], 32768;", mark(1, 0, "min") + mark(2, 0))
after("setmaxnreg.inc.sync.aligned.u32 240;", mark(3, 128))
after("@!%p33 bra.uni $L16;", mark(4, 128))
after("@!%p49 bra.uni $L19;", mark(5, 128, "min") + mark(6, 128))
after("\n$L25:", mark(7, 128))
after("atom.acq_rel.gpu.global.add.u32", mark(8, 128))
after("\n$L26:", mark(9, 128))
i = body.find("\n$L27:")
while True:
    j = body.find("\tret;", i)
    if j < 0:
        break
    body = body[:j] + mark(10, 128) + body[j:]
    i = body.find("\tret;", j + len(mark(10, 128))) + 5

open(path, "w").write(src[:a] + body + src[b:])
sys.stderr.write("trace marks added to decode_fwd_part\n")
