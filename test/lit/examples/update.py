#!/usr/bin/env python3
"""Regenerates the golden tests of examples/*.attn from attnc's current output.

Usage: test/lit/examples/update.py BUILD_DIR [NAME...]
Run it only when a change to the cascade IR or the MLIR form is intended,
and review the diff: these files are what the lit suite compares against.
Each test checks the full --emit=cascade text, the structure of
--emit=mlir (one linalg.generic per node, in order, with its iterator
types), and that mlir-opt-19 parses and round-trips what attnc prints.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def literal(text):
    """FileCheck text is literal except for {{ and [[, which open regexes and
    variables; those are matched through a regex instead."""
    return text.replace("{{", "{{[{][{]}}").replace("[[", "{{[[][[]}}")


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    build = sys.argv[1]
    attnc = os.path.join(build, "bin", "attnc")
    names = sys.argv[2:] or sorted(
        f[:-5] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".attn"))
    for name in names:
        src = os.path.join(ROOT, "examples", name + ".attn")
        cascade = run([attnc, "--emit=cascade", src]).splitlines()
        mlir = run([attnc, "--emit=mlir", src]).splitlines()
        out = [
            "# Golden test for examples/%s.attn (regenerate with update.py)." % name,
            "RUN: attnc --emit=cascade %%examples/%s.attn | FileCheck %%s --check-prefix=CASCADE" % name,
            "RUN: %%if mlir %%{ attnc --emit=mlir %%examples/%s.attn | FileCheck %%s --check-prefix=MLIR %%}" % name,
            "RUN: %%if mlir %%{ attnc --emit=mlir %%examples/%s.attn | %%mlir-opt --verify-roundtrip | FileCheck %%s --check-prefix=MLIR %%}" % name,
            "RUN: %%if mlir %%{ attnc --emit=mlir --f64 %%examples/%s.attn | %%mlir-opt --verify-roundtrip | FileCheck %%s --check-prefix=F64 %%}" % name,
            "",
        ]
        first = True
        for line in cascade:
            if not line.strip():
                continue
            tag = "CASCADE" if first else "CASCADE-NEXT"
            out.append("%s: {{^}}%s{{$}}" % (tag, literal(line)))
            first = line.startswith("}")
        out.append("")
        for line in mlir:
            m = re.match(r"\s*func\.func @(\w+)\(", line)
            if m:
                out.append("MLIR-LABEL: func.func @%s(" % m.group(1))
                out.append("F64-LABEL: func.func @%s(" % m.group(1))
                out.append("F64-NOT: f32")
                continue
            if "linalg.generic" in line:
                it = re.search(r'iterator_types = (\[[^\]]*\])', line).group(1)
                tn = re.search(r'attn\.tensor = "([^"]+)"', line).group(1)
                out.append('MLIR: linalg.generic {{.*}}iterator_types = %s{{.*}}attn.tensor = "%s"'
                           % (literal(it), tn))
            if re.match(r"\s*return ", line):
                out.append("MLIR: return")
        with open(os.path.join(HERE, name + ".test"), "w") as f:
            f.write("\n".join(out) + "\n")
        print("wrote", name + ".test")


if __name__ == "__main__":
    main()
