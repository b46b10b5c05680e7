#!/usr/bin/env python3
"""file_cycles.py BUILD_DIR [SRC_DIR]: prints every loop of calls between source files
of lang/, compiler/ and lowering/ (A calls into B and B, directly or through
others, calls back into A), and exits 1 if there is one.

The call graph is read from the object files the build made: a file depends on
another when it uses a global symbol that the other defines (nm). Generated
sources (the flex scanner and the bison parser) count as lang/ files."""
import os
import subprocess
import sys

LAYERS = ("lang", "compiler", "lowering")


def source_of(obj, build):
    # CMake names objects <build>/<dir>/CMakeFiles/<target>.dir/<src>.o
    rel = os.path.relpath(obj, build)
    parts = rel.split(os.sep)
    if "CMakeFiles" not in parts:
        return None
    i = parts.index("CMakeFiles")
    top = parts[:i]
    src = parts[i + 2:]
    if not top or top[0] not in LAYERS:
        return None
    name = "/".join(top + src)
    return name[:-2] if name.endswith(".o") else name


def main():
    build = sys.argv[1]
    src_root = sys.argv[2] if len(sys.argv) > 2 else None
    files = {}
    for root, _, names in os.walk(build):
        for n in names:
            if n.endswith(".o"):
                src = source_of(os.path.join(root, n), build)
                if src and src_root and not (os.path.exists(os.path.join(src_root, src))
                                             or os.path.exists(os.path.join(build, src))):
                    continue
                if src:
                    files[src] = os.path.join(root, n)
    if not files:
        print("file_cycles: no objects of lang/, compiler/, lowering/ under " + build)
        return 2
    defs, uses = {}, {}
    for src, obj in files.items():
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        uses[src] = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "U":
                uses[src].add(f[1])
            elif len(f) == 3 and f[1] in "TDBRC":
                defs.setdefault(f[2], set()).add(src)
    edges = {s: sorted({d for u in uses[s] for d in defs.get(u, ()) if d != s}) for s in files}
    # Tarjan's strongly connected components, iteratively.
    index, low, onstack, stack, sccs, counter = {}, {}, set(), [], [], [0]
    for start in sorted(files):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                onstack.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in onstack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    for comp in sccs:
        print("call loop: " + " <-> ".join(comp))
        for a in comp:
            for b in edges[a]:
                if b in comp:
                    syms = sorted(u for u in uses[a] if b in defs.get(u, ()))
                    print("  %s -> %s: %s" % (a, b, ", ".join(syms[:6])))
    return 1 if sccs else 0


if __name__ == "__main__":
    sys.exit(main())
