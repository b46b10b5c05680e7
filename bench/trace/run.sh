#!/bin/sh
# bench/trace/run.sh: on the GPU machine, from a folder bench/trace/prepare.sh
# filled: builds trace against the instrumented interfaces and traces full
# and document1024 at D = 128 and 64, N = 2k and 8k (B * N = 32k, H = 16);
# writes a run folder under $OUT, DATE-COMMIT-trace (rundir.sh;
# bench/results/README.md) with meta.json, tr_NAME_N.txt and trace.txt,
# analyze.py's summary, which it also prints.
set -u
OUT=${OUT:-/tmp/out}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "$0")"
mkdir -p bin
RUN=$(OUT="$OUT" sh ./rundir.sh trace "bench/trace/run.sh: per-CTA phases of full and document1024") || exit 1
CUDA=${CUDA_PATH:-/usr/local/cuda}
CFLAGS="-O2 -std=c11 -D_GNU_SOURCE"
K=$(cd gen && ls *.c | sed 's/\.c$//')
{ for k in $K; do printf '#include "%s.h"\n#undef ATTN_GEN_GPU_H\n' "$k"; done
  printf '#define TRACE_KERNELS(X)'; for k in $K; do printf ' X(%s)' "$k"; done; echo; } > bin/trace_kernels.h
objs=""
for k in $K; do gcc $CFLAGS -Iruntime -c "gen/$k.c" -o "bin/$k.o" || exit 1; objs="$objs bin/$k.o"; done
for f in driver module launch check tmap; do gcc $CFLAGS -Iruntime -c "runtime/$f.c" -o "bin/rt_$f.o" || exit 1; objs="$objs bin/rt_$f.o"; done
gcc $CFLAGS -I"$CUDA/include" -Iruntime -Igen -Ibin trace.c $objs -lcuda -ldl -lpthread -lm -o bin/trace || exit 1
for k in $K; do
	d=${k##*_d}
	for n in 2048 8192; do ./bin/trace "$k" $((32768 / n)) 16 $n "$d" "$RUN/tr_${k}_$n.txt" || exit 1; done
done
python3 analyze.py "$RUN"/tr_*.txt | tee "$RUN/trace.txt"
