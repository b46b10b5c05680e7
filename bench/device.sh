#!/bin/sh
# Runs on the GPU machine, from the folder bench/prepare.sh filled
# (.carry/bench): builds the C benchmark (build-bench.sh) and times full and
# causal attention at D = 128 and 64, N = 2k and 8k, B * N = 32k tokens,
# H = 16 (anchors.py's sizes). Writes a run folder under $OUT,
# DATE-COMMIT-cbench (rundir.sh; bench/results/README.md): meta.json,
# build.log, gpu.txt (nvidia-smi before the run), cbench.txt (a line per
# configuration, then the table), cbench.jsonl (a JSON object per
# configuration) and cbench_raw.txt (every timed launch, in order).
# VARIANTS, DS, NS, REPS and WARMUP override the defaults; any variant of
# bench/attn works (e.g. VARIANTS=sliding1024).
# Besides TFLOP/s on the kept pairs, bench prints tflops_tiles, on the work
# left after tile skipping, with each kernel's query rows per CTA tile (BM)
# that build-bench.sh read from gen/NAME.c; BM=64 (say) overrides it for all.
set -u
OUT=${OUT:-/tmp/out}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "$0")" || exit 1
RUN=$(OUT="$OUT" sh ./rundir.sh cbench "bench/device.sh: the C benchmark (bench.c), variants ${VARIANTS:-full,causal}, D ${DS:-128,64}, N ${NS:-2048,8192}") || exit 1
if ! sh ./build-bench.sh > "$RUN/build.log" 2>&1; then
	cat "$RUN/build.log"
	echo "build FAILED"
	exit 1
fi
grep 'BM taken as' "$RUN/build.log"
if command -v nvidia-smi > /dev/null; then
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
		--format=csv > "$RUN/gpu.txt" 2>&1
fi
./bin/bench --variant "${VARIANTS:-full,causal}" --headdim "${DS:-128,64}" --seqlen "${NS:-2048,8192}" \
	--tokens 32768 --heads 16 --warmup "${WARMUP:-20}" --reps "${REPS:-200}" ${BM:+--bm "$BM"} \
	--json "$RUN/cbench.jsonl" --raw "$RUN/cbench_raw.txt" > "$RUN/cbench.txt" 2>&1
rc=$?
cat "$RUN/cbench.txt"
[ $rc -eq 0 ] || echo "bench FAILED (exit $rc)"
echo "results in $RUN"
exit $rc
