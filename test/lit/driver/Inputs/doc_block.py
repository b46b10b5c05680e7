"""doc_block.py FILE.md MARKER: prints the fenced block that follows the line
<!-- MARKER --> in FILE.md, so a test can compare documented output with the
program's own (docs/cli.md and attnc --help)."""
import sys

lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
start = lines.index("<!-- %s -->" % sys.argv[2])
assert lines[start + 1].startswith("```"), "no fenced block after the marker"
end = lines.index("```", start + 2)
sys.stdout.write("\n".join(lines[start + 2:end]) + "\n")
