#!/bin/sh
# Runs on a GPU machine with P >= 2 GPUs, from the folder test/gpu/prepare.sh
# filled (gen/causal.c and gen/selfattn.c with --parts, runtime/, ring.c):
# builds the context-parallel test (ring.c) for causal.attn and for selfattn
# (the same without its mask), checks each against one GPU on P ranks (4k,
# 64k, 256k and 512k keys), runs compute-sanitizer memcheck on a small case
# (the API errors NCCL's own probing hits are not reported), and times causal
# attention at N = 64k to 512k and selfattn at 128k to 512k (B = 1, H = 16,
# D = 128) on P GPUs against one, and the K/V rotation alone. NCCL is the one torch ships
# (nvidia-nccl-cu12), else the system's, unless ATTNRT_NCCL names another.
# Logs and scaling.txt go to $OUT. P defaults to the GPU count.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" bin
if [ -z "${ATTNRT_NCCL:-}" ]; then
	d=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) or list(nvidia.nccl.__path__)[0])' 2> /dev/null)
	[ -n "$d" ] && [ -f "$d/lib/libnccl.so.2" ] && export ATTNRT_NCCL="$d/lib/libnccl.so.2"
fi
echo "ATTNRT_NCCL=${ATTNRT_NCCL:-unset}" > "$OUT/ring.txt"
P=${P:-$(nvidia-smi -L 2> /dev/null | wc -l)}
# causal.attn, and selfattn (the same without its mask, prepare.sh)
for k in causal selfattn; do
	gcc -O2 -std=c11 -D_GNU_SOURCE -DNAME=$k -DHAS_L -DHEADER="\"$k.h\"" -Iruntime -Igen ring.c gen/$k.c \
		runtime/*.c -ldl -lpthread -lm -o bin/ring_$k 2>> "$OUT/ring-build.log" || { echo "build ring_$k FAILED"; exit 1; }
done
fails=0
run() {
	log=$1
	shift
	timeout 300 "$@" > "$OUT/$log" 2>&1
	r=$?
	echo "$* rc=$r: $(grep -E 'rel_l2|max_abs|scaling|ERROR SUMMARY|FAIL' "$OUT/$log" | tr '\n' ' ')" >> "$OUT/ring.txt"
	[ $r -ne 0 ] && fails=1
}
for k in causal selfattn; do
	run ring.$k.p1.log ./bin/ring_$k 1 1 2 4096
	run ring.$k.small.log ./bin/ring_$k "$P" 2 3 4096
	run ring.$k.64k.log ./bin/ring_$k "$P" 1 4 65536
	run ring.$k.256k.log ./bin/ring_$k "$P" 1 2 262144
	run ring.$k.512k.log ./bin/ring_$k "$P" 1 1 524288
done
if command -v compute-sanitizer > /dev/null; then
	run ring.memcheck.log compute-sanitizer --tool memcheck --report-api-errors no --target-processes all --error-exitcode 9 ./bin/ring_causal "$P" 1 2 2048
fi
for n in 65536 131072 262144 524288; do
	run "ring.time.$n.log" ./bin/ring_causal "$P" 1 16 "$n" --time 5 --no-check
done
for n in 131072 262144 524288; do
	run "ring.time.selfattn.$n.log" ./bin/ring_selfattn "$P" 1 16 "$n" --time 3 --no-check
done
grep -h scaling "$OUT"/ring.time.*.log > "$OUT/scaling.txt" 2> /dev/null
cat "$OUT/ring.txt"
exit $fails
