#!/bin/sh
# bench/trace/prepare.sh [DIR]: here, after bench/prepare.sh filled
# .carry/bench: instruments full and document1024 (D = 128 and 64) with
# patch.py, assembles them for sm_90 and writes DIR (default .carry/trace)
# with the copies of their interfaces, the runtime, trace.c and the scripts,
# and .carry/bench's build.json, which names the run (rundir.sh).
# On the GPU machine: OUT=... sh DIR/run.sh.
set -eu
cd "$(dirname "$0")/../.."
DIR=${1:-.carry/trace}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
rm -rf "$DIR" && mkdir -p "$DIR/gen"
for k in full_d128 full_d64 document1024_d128 document1024_d64; do
	o=3
	case $k in document*) o=4 ;; esac
	d=${k##*_d}
	python3 bench/trace/patch.py ".carry/bench/gen/$k.ptx" "$DIR/$k.ptx" "$k" "$d" "$o"
	"$PTXAS" -arch=sm_90 "$DIR/$k.ptx" -o "$DIR/$k.cubin"
	python3 bench/trace/mkgen.py ".carry/bench/gen/$k.c" "$DIR/$k.cubin" "$DIR/gen/$k.c"
	cp ".carry/bench/gen/$k.h" "$DIR/gen/"
	rm "$DIR/$k.ptx" "$DIR/$k.cubin"
done
cp -r runtime "$DIR/runtime"
cp bench/trace/trace.c bench/trace/analyze.py bench/trace/run.sh .carry/bench/build.json bench/rundir.sh "$DIR/"
echo "prepared $DIR"
