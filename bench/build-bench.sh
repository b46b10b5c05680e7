#!/bin/sh
# Builds bin/bench, the C benchmark, in the folder bench/prepare.sh filled
# (.carry/bench): bench.c, the generated GPU interfaces gen/NAME.c (kernels
# embedded) and the runtime sources, compiled with gcc as test/gpu/device.sh
# builds its harness, and linked with the CUDA driver (-lcuda; the toolkit's
# stub library when no libcuda.so is on the linker's path). No cudart.
#   sh build-bench.sh [NAME ...]    (default: every gen/NAME.c that defines
#   NAME_launch_generic; gen/decode80.c, the cascade decode compiled for
#   sm_80 alone, keeps its name and is for bench/decode.py)
# Env: CC (gcc), CUDA_PATH (/usr/local/cuda), for cuda.h and the stubs.
set -eu
cd "$(dirname "$0")"
CC=${CC:-gcc}
CUDA=${CUDA_PATH:-/usr/local/cuda}
CFLAGS="-O2 -std=c11 -D_GNU_SOURCE"
if [ $# -eq 0 ]; then
	for f in gen/*.c; do
		[ -f "$f" ] || { echo "build-bench.sh: no gen/*.c (run bench/prepare.sh first)" >&2; exit 1; }
		n=$(basename "$f" .c)
		grep -q "^int ${n}_launch_generic(" "$f" && set -- "$@" "$n"
	done
fi
mkdir -p bin
# The kernels bench.c links: each generated header (they share one include
# guard, hence the #undef), and the X-macro list bench.c expands, X(NAME, BM, BN):
# the kernel's CTA tile, BM query rows by BN keys, for bench's count of the
# work left after tile skipping, read from its launcher in gen/NAME.c
# (`long gx = (qext + BM - 1) / BM;` and `/* CTA tile: BM query rows x BN
# keys */`); 128 and 64, said here, where they are absent.
# launcher_num NAME SED-SCRIPT WHAT DEFAULT: the first number SED-SCRIPT prints.
launcher_num() {
	v=$(sed -n "$2" "gen/$1.c" | head -n 1)
	if [ -z "$v" ]; then
		echo "build-bench.sh: no $3 in gen/$1.c: taken as $4" >&2
		v=$4
	fi
	echo "$v"
}
kernel_bm() {
	launcher_num "$1" 's/.*(qext + \([0-9][0-9]*\) - 1) \/ \1;.*/\1/p' "'(qext + BM - 1) / BM' grid" 128
}
kernel_bn() {
	launcher_num "$1" 's/.*CTA tile: [0-9]* query rows x \([0-9][0-9]*\) keys.*/\1/p' "'CTA tile' comment" 64
}
{
	echo "/* Written by build-bench.sh: the kernels linked into bench. */"
	for n; do
		printf '#include "%s.h"\n#undef ATTN_GEN_GPU_H\n' "$n"
	done
	printf '#define BENCH_KERNELS(X)'
	for n; do printf ' X(%s, %s, %s)' "$n" "$(kernel_bm "$n")" "$(kernel_bn "$n")"; done
	echo
} > bin/bench_kernels.h
# The generated files are mostly embedded cubins: compile them in parallel.
pids=""
for n; do
	$CC $CFLAGS -Iruntime -c "gen/$n.c" -o "bin/$n.o" &
	pids="$pids $!"
done
for p in $pids; do wait "$p"; done
objs=""
for n; do objs="$objs bin/$n.o"; done
# every runtime source, as test/gpu/device.sh takes them (the launchers
# call the runtime's streams and memsets; NCCL is loaded only when used)
for src in runtime/*.c; do
	f=$(basename "$src" .c)
	$CC $CFLAGS -Iruntime -c "$src" -o "bin/rt_$f.o"
	objs="$objs bin/rt_$f.o"
done
$CC $CFLAGS -Wall -Wextra -I"$CUDA/include" -Iruntime -Igen -Ibin -c bench.c -o bin/bench.o
link() {
	$CC bin/bench.o $objs "$@" -lcuda -ldl -lpthread -lm -o bin/bench
}
if ! link 2> bin/link.err; then
	echo "build-bench.sh: no libcuda.so on the linker's path; linking with the CUDA stubs"
	link -L"$CUDA/lib64/stubs" || link -L"$CUDA/targets/x86_64-linux/lib/stubs"
fi
echo "built bin/bench with $# kernels: $*"
