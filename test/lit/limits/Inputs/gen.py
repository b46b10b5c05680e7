# Writes hostile variants of examples/causal.attn to standard output:
#   chain N     S's right-hand side a flat sum of N copies of its term
#   nest N      S's right-hand side inside N parentheses
#   neg N       S's right-hand side behind N unary minus signs
#   calls N     S's right-hand side inside N nested exp(...) calls
#   tree N      S's right-hand side a balanced sum of N copies of its term
#   blocks MB   copies of the whole file, blocks renamed, up to MB megabytes
#   copies N    N copies of the whole file, blocks renamed
#   stmts N     (the file is only read) a block of N statements, each reading
#               the one before through 250 nested exp(...) calls
import sys

src = open(sys.argv[1]).read()
kind, n = sys.argv[2], int(sys.argv[3])
line = "  S[b, h, i, j] = scale * sum[d](Q[b, h, i, d] * K[b, h, j, d]) where j <= i;"
term = "scale * sum[d](Q[b, h, i, d] * K[b, h, j, d])"
assert line in src


def tree(k):
    return term if k == 1 else "(%s + %s)" % (tree(k // 2), tree(k - k // 2))


rhs = {
    "chain": lambda: " + ".join([term] * n),
    "nest": lambda: "(" * n + term + ")" * n,
    "neg": lambda: "-" * n + term,
    "calls": lambda: "exp(" * n + term + ")" * n,
    "tree": lambda: tree(n),
}
if kind == "stmts":
    lines = ["attention chain {", "  dims N;", "  in X[N] : f32;", "  out Y[N] : f32;",
             "  T0[i] = X[i];"]
    for k in range(1, n):
        lines.append("  T%d[i] = %sT%d[i]%s;" % (k, "exp(" * 250, k - 1, ")" * 250))
    lines += ["  Y[i] = T%d[i];" % (n - 1), "}"]
    sys.stdout.write("\n".join(lines) + "\n")
elif kind == "blocks":
    out, size, i = [], 0, 0
    while size < n * 1024 * 1024:
        out.append(src.replace("attention causal", "attention causal%d" % i))
        size += len(out[-1])
        i += 1
    sys.stdout.write("".join(out))
elif kind == "copies":
    sys.stdout.write("".join(src.replace("attention causal", "attention causal%d" % i)
                             for i in range(n)))
else:
    sys.stdout.write(src.replace(line, "  S[b, h, i, j] = %s where j <= i;" % rhs[kind]()))
