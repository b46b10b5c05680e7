#!/bin/sh
# Runs on the GPU machine: an A/B of the C benchmark between two folders
# that bench/prepare.sh filled (say .carry/bench_a from the commit before a
# change and .carry/bench from after it). Builds bin/bench in each, then
# runs A, B, A, B on the same sizes, so that clock and temperature drift
# falls on both; prints one line per kernel and size with the two
# tflops_tiles figures of each side and B's median over A's.
#   sh ab.sh DIR_A DIR_B    (VARIANTS, DS, NS, REPS as in device.sh)
# Writes a run folder under $OUT named by B's commit, DATE-COMMIT-ab
# (rundir.sh, with the build.json of DIR_B; bench/results/README.md):
# meta.json (A's commit as its "base"), ab.txt (the table) and
# ab_{A,B}{1,2}.txt (raw lines).
set -u
A=$1
B=$2
OUT=${OUT:-/tmp/out}
OUT=$(OUT="$OUT" sh "$(dirname "$0")/rundir.sh" ab \
	"bench/ab.sh: A = $A, B = $B; variants ${VARIANTS:-full,causal}, D ${DS:-128,64}, N ${NS:-2048,8192}" \
	"$B/build.json" "$A/build.json") || exit 1
for d in "$A" "$B"; do
	(cd "$d" && sh ./build-bench.sh > build.log 2>&1) || { cat "$d/build.log"; echo "ab.sh: build in $d FAILED"; exit 1; }
done
run() {
	"$1/bin/bench" --variant "${VARIANTS:-full,causal}" --headdim "${DS:-128,64}" --seqlen "${NS:-2048,8192}" \
		--tokens 32768 --heads 16 --warmup 20 --reps "${REPS:-100}" > "$2" 2>&1
}
run "$A" "$OUT/ab_A1.txt" && run "$B" "$OUT/ab_B1.txt" && run "$A" "$OUT/ab_A2.txt" && run "$B" "$OUT/ab_B2.txt" ||
	{ echo "ab.sh: a bench run FAILED"; tail -3 "$OUT"/ab_*.txt; exit 1; }
# kernel N -> tflops_tiles, per file; then the table
awk '
FNR == 1 { f++ }
$1 ~ /_d[0-9]+$/ && /tflops_tiles/ { for (i = 1; i <= NF; i++) { if ($i ~ /^N=/) n = substr($i, 3); if ($i == "tflops_tiles") v = $(i + 1) }
	k = $1 " " n; if (!(k in seen)) { seen[k] = 1; order[++m] = k } val[f, k] = v }
END {
	printf "%-24s %6s %15s %15s %7s\n", "kernel", "N", "A (2 runs)", "B (2 runs)", "B/A"
	for (i = 1; i <= m; i++) { k = order[i]; split(k, p, " ")
		a = (val[1, k] + val[3, k]) / 2; b = (val[2, k] + val[4, k]) / 2
		printf "%-24s %6s %7.1f/%-7.1f %7.1f/%-7.1f %7.3f\n", p[1], p[2], val[1, k], val[3, k], val[2, k], val[4, k], (a > 0 ? b / a : 0) }
}' "$OUT/ab_A1.txt" "$OUT/ab_B1.txt" "$OUT/ab_A2.txt" "$OUT/ab_B2.txt" | tee "$OUT/ab.txt"
echo "results in $OUT"
