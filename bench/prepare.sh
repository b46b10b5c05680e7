#!/bin/sh
# Runs here: compiles every bench/attn variant for head dims 128 and 64 into
# GPU interfaces (.c with embedded cubins) in DIR (default .carry/bench),
# with the runtime sources, the anchors script (anchors.py), the C benchmark
# (bench.c, build-bench.sh, device.sh: `OUT=... sh DIR/device.sh` there),
# and times attnc itself (compile-time benchmark: attnc's own time and
# ptxas's, per variant; the total includes ptxas for sm_90 with -v, a second
# PTX when the 128-row kernel spilled, and ptxas for sm_80).
set -eu
cd "$(dirname "$0")/.."
ATTNC=${ATTNC:-build/bin/attnc}
DIR=${1:-.carry/bench}
rm -rf "$DIR" && mkdir -p "$DIR/gen" "$DIR/attn"
for f in bench/attn/*.attn; do
	n=$(basename "$f" .attn)
	cp "$f" "$DIR/attn/${n}_d128.attn"
	sed -e 's/dims D = 128;/dims D = 64;/' -e "s/^attention $n /attention ${n}_d64 /" "$f" > "$DIR/attn/${n}_d64.attn"
	sed -i "s/^attention $n /attention ${n}_d128 /" "$DIR/attn/${n}_d128.attn"
done
printf "%-22s %10s %10s %10s\n" variant total_s attnc_s ptxas_s > "$DIR/compile_time.txt"
for f in "$DIR"/attn/*.attn; do
	n=$(basename "$f" .attn)
	t0=$(date +%s.%N)
	# attnc's own time: PTX without ptxas's spill feedback (no ptxas given)
	"$ATTNC" --target=sm_80 --emit=ptx --ptxas=/nonexistent "$f" -o "$DIR/gen/$n.ptx"
	t1=$(date +%s.%N)
	"$ATTNC" --target=sm_80 "$f" -o "$DIR/gen/$n"
	t2=$(date +%s.%N)
	printf "%-22s %10.3f %10.3f %10.3f\n" "$n" "$(echo "$t2 - $t1" | bc)" "$(echo "$t1 - $t0" | bc)" \
		"$(echo "($t2 - $t1) - ($t1 - $t0)" | bc)" >> "$DIR/compile_time.txt"
done
cp bench/anchors.py bench/table.py bench/bench.c bench/build-bench.sh bench/device.sh "$DIR/"
cp -r runtime "$DIR/runtime"
cat "$DIR/compile_time.txt"
