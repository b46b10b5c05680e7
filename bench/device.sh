#!/bin/sh
# Runs on the GPU machine, from the folder bench/prepare.sh filled
# (.carry/bench): builds the C benchmark (build-bench.sh) and times full and
# causal attention at D = 128 and 64, N = 2k and 8k, B * N = 32k tokens,
# H = 16 (anchors.py's sizes). Writes under $OUT: build.log, gpu.txt
# (nvidia-smi before the run), bench.txt (a line per configuration, then the
# table), bench.jsonl (a JSON object per configuration) and bench_raw.txt
# (every timed launch, in order). VARIANTS, DS, NS, REPS and WARMUP override
# the defaults; any variant of bench/attn works (e.g. VARIANTS=sliding1024).
# Besides TFLOP/s on the kept pairs, bench prints tflops_tiles, on the work
# left after tile skipping, with each kernel's query rows per CTA tile (BM)
# that build-bench.sh read from gen/NAME.c; BM=64 (say) overrides it for all.
set -u
OUT=${OUT:-/tmp/out}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "$0")" || exit 1
mkdir -p "$OUT"
if ! sh ./build-bench.sh > "$OUT/build.log" 2>&1; then
	cat "$OUT/build.log"
	echo "build FAILED"
	exit 1
fi
grep 'BM taken as' "$OUT/build.log"
if command -v nvidia-smi > /dev/null; then
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
		--format=csv > "$OUT/gpu.txt" 2>&1
fi
./bin/bench --variant "${VARIANTS:-full,causal}" --headdim "${DS:-128,64}" --seqlen "${NS:-2048,8192}" \
	--tokens 32768 --heads 16 --warmup "${WARMUP:-20}" --reps "${REPS:-200}" ${BM:+--bm "$BM"} \
	--json "$OUT/bench.jsonl" --raw "$OUT/bench_raw.txt" > "$OUT/bench.txt" 2>&1
rc=$?
cat "$OUT/bench.txt"
[ $rc -eq 0 ] || echo "bench FAILED (exit $rc)"
exit $rc
