"""bench/trace/decode_marks.py FILE.ptx: adds %globaltimer marks to
decode_fwd_part's PTX in place (a measurement aid, not part of attnc; run by
ptxas-marks.sh). Mark k of CTA c (ctaid.z * nctaid.x + ctaid.x: grids of one
y) goes to the split workspace at 128 MiB + (c * 16 + k) * 8, written by the
producer's thread 0 or the first consumer thread; marks 1 and 5 keep their
earliest value (atom.min), the rest their latest. The anchors are found by
the PTX's structure (the order of its barriers, waits and the ticket's
atomic), as laid out since 29b15dd; later PTX may need them moved."""
import re, sys
path = sys.argv[1]
src = open(path).read()
a = src.find(".visible .entry decode_fwd_part(")
if a < 0:
    sys.exit(0)
b = src.find(".visible .entry", a + 10)
b = len(src) if b < 0 else b
body = src[a:b]


def mark(k, tid, mode="st"):
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


lines = body.split("\n")
ins = {}  # line index -> text inserted after it


def add(i, text, before=False):
    key = (i - 1) if before else i
    ins[key] = ins.get(key, "") + text


def find(pred, start=0, stop=None):
    for i in range(start, len(lines) if stop is None else stop):
        if pred(lines[i]):
            return i
    raise SystemExit("decode_marks.py: anchor not found after line %d" % start)


start = find(lambda l: l.strip() == "bar.sync 0;")
add(start, mark(0, 0))
dec = find(lambda l: "setmaxnreg.dec" in l, start)
first_kv = find(lambda l: "mbarrier.arrive.expect_tx" in l, dec)
loop_kv = find(lambda l: "mbarrier.arrive.expect_tx" in l, first_kv + 1)  # the ring's copies
add(loop_kv, mark(1, 0, "min") + mark(2, 0))
inc = find(lambda l: "setmaxnreg.inc" in l, loop_kv)
add(inc, mark(3, 128))
qwait = find(lambda l: re.match(r"\s*@!%p\d+ bra.uni \$L\d+;", l) is not None, inc)
add(qwait, mark(4, 128))
# the stage's full barrier: the first wait after Q's on the ring's phase
# register (Q's too); the schedule's slots have their own
phase = lines[qwait - 1].split(",")[-1]
fwait = find(lambda l: "try_wait" in l and l.endswith(phase), qwait + 1) + 1
assert "try_wait" in lines[fwait - 1], lines[fwait - 1]
add(fwait, mark(5, 128, "min") + mark(6, 128))
ticket = find(lambda l: "atom.acq_rel.gpu.global.add.u32" in l, fwait)
end = max(i for i in range(fwait, ticket) if "wgmma.wait_group.sync.aligned 0;" in lines[i])
add(end, mark(7, 128))
add(ticket, mark(8, 128))
merged = max(i for i in range(ticket, len(lines)) if re.match(r"\s*bar.sync 9, ", lines[i]))
add(merged, mark(9, 128))
for i in range(ticket, len(lines)):
    if re.match(r"\s*(@!?%p\d+ )?ret;", lines[i]):
        add(i, mark(10, 128), before=True)
out = []
for i, l in enumerate(lines):
    if i == 0 and -1 in ins:
        out.append(ins[-1].rstrip("\n"))
    out.append(l)
    if i in ins:
        out.append(ins[i].rstrip("\n"))
body = "\n".join(out)
open(path, "w").write(src[:a] + body + src[b:])
sys.stderr.write("trace marks added to decode_fwd_part\n")
