#!/bin/sh
# Runs here: compiles every bench/attn variant for head dims 128 and 64 (full
# and causal also 256 and 96; a variant with head dims of its own, MLA's, as it is) into
# GPU interfaces (.c with embedded cubins) in DIR (default .carry/bench),
# with the runtime sources, the anchors script (anchors.py), the C benchmark
# (bench.c, build-bench.sh, device.sh: `OUT=... sh DIR/device.sh` there),
# and times attnc itself (compile-time benchmark: attnc's own time and
# ptxas's, per variant; the total includes ptxas for sm_90 with -v, a second
# PTX when the 128-row kernel spilled, and ptxas for sm_80).
# With BWD=1 (default) also each D 128 and 64 variant's backward (attnc
# --grad, for BWD_TARGET: default TARGET) for anchors.py --bwd.
# DIR/build.json records the commit of this checkout (COMMIT overrides it),
# whether its tracked files had uncommitted changes, and the target, for
# rundir.sh to name the runs made from DIR on the GPU machine. The compile
# times go to a run folder of their own, DIR/results/DATE-COMMIT-compile-time
# (bench/results/README.md).
set -eu
cd "$(dirname "$0")/.."
ATTNC=${ATTNC:-build/bin/attnc}
DIR=${1:-.carry/bench}
TARGET=${TARGET:-sm_80}
rm -rf "$DIR" && mkdir -p "$DIR/gen" "$DIR/attn"
commit=${COMMIT:-$(git rev-parse --short HEAD 2> /dev/null || echo unknown)}
dirty=false
[ -n "$(git status --porcelain --untracked-files=no 2> /dev/null)" ] && dirty=true
printf '{\n "commit": "%s",\n "dirty": %s,\n "target": "%s"\n}\n' "$commit" "$dirty" "$TARGET" > "$DIR/build.json"
cp bench/rundir.sh "$DIR/"
for f in bench/attn/*.attn; do
	n=$(basename "$f" .attn)
	if ! grep -q 'dims D = 128;' "$f"; then
		# a kernel of its own head dims (MLA): as it is
		cp "$f" "$DIR/attn/$n.attn"
		continue
	fi
	case "$n" in
	full | causal)
		for d in 256 96; do
			sed -e "s/dims D = 128;/dims D = $d;/" -e "s/^attention $n /attention ${n}_d$d /" "$f" \
				> "$DIR/attn/${n}_d$d.attn"
		done
		;;
	esac
	cp "$f" "$DIR/attn/${n}_d128.attn"
	sed -e 's/dims D = 128;/dims D = 64;/' -e "s/^attention $n /attention ${n}_d64 /" "$f" > "$DIR/attn/${n}_d64.attn"
	sed -i "s/^attention $n /attention ${n}_d128 /" "$DIR/attn/${n}_d128.attn"
done
cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2> /dev/null | head -n 1)
ct=$(OUT="$DIR/results" DEVICE="the build machine: ${cpu:-unknown CPU}, $(nproc) cores" \
	sh "$DIR/rundir.sh" compile-time "bench/prepare.sh: attnc's own time and ptxas's, per bench kernel")
printf "%-22s %10s %10s %10s\n" variant total_s attnc_s ptxas_s > "$ct/compile-time.txt"
for f in "$DIR"/attn/*.attn; do
	n=$(basename "$f" .attn)
	t0=$(date +%s.%N)
	# attnc's own time: PTX without ptxas's spill feedback (no ptxas given)
	# a variant the target refuses (with its reason) is left out of the run
	if ! "$ATTNC" --target=$TARGET --emit=ptx --ptxas=/nonexistent "$f" -o "$DIR/gen/$n.ptx"; then
		echo "skip $n on $TARGET"
		rm -f "$f"
		continue
	fi
	t1=$(date +%s.%N)
	"$ATTNC" --target=$TARGET "$f" -o "$DIR/gen/$n"
	t2=$(date +%s.%N)
	printf "%-22s %10.3f %10.3f %10.3f\n" "$n" "$(echo "$t2 - $t1" | bc)" "$(echo "$t1 - $t0" | bc)" \
		"$(echo "($t2 - $t1) - ($t1 - $t0)" | bc)" >> "$ct/compile-time.txt"
done
# decode (bench/decode.py): examples/decode.attn with its entry of partial
# states, for split-KV
"$ATTNC" --target=$TARGET --parts examples/decode.attn -o "$DIR/gen/decode"
"$ATTNC" --target=sm_80 --parts examples/decode.attn -o "$DIR/gen/decode80"
# decode over a paged cache (bench/decode.py's paged rows), and as
# paged_decode80 sm_80's kernel alone (the other image on a Hopper device);
# a target that refused gathers would give the sm_80 kernel for both
"$ATTNC" --target=$TARGET --parts examples/paged_decode.attn -o "$DIR/gen/paged_decode" 2> /dev/null ||
	"$ATTNC" --target=sm_80 --parts examples/paged_decode.attn -o "$DIR/gen/paged_decode"
"$ATTNC" --target=sm_80 --parts examples/paged_decode.attn -o "$DIR/gen/paged_decode80"
# the same pages head-major (paged_decode_hnd.attn: vLLM's and FlashInfer's HND)
"$ATTNC" --target=$TARGET --parts examples/paged_decode_hnd.attn -o "$DIR/gen/paged_decode_hnd" 2> /dev/null ||
	"$ATTNC" --target=sm_80 --parts examples/paged_decode_hnd.attn -o "$DIR/gen/paged_decode_hnd"
# packed ragged batches (bench/varlen.py), with the entry of partial states
# for its split-KV rows, and as varlen80 sm_80's kernel alone; with the
# backward (varlen_g, varlen_g80) for its backward rows
"$ATTNC" --target=$TARGET --parts examples/varlen.attn -o "$DIR/gen/varlen"
"$ATTNC" --target=sm_80 --parts examples/varlen.attn -o "$DIR/gen/varlen80"
"$ATTNC" --target=$TARGET --grad examples/varlen.attn -o "$DIR/gen/varlen_g"
"$ATTNC" --target=sm_80 --grad examples/varlen.attn -o "$DIR/gen/varlen_g80"
# neighbourhood attention (bench/neighborhood.py): the 2-D and 3-D examples
# (and as NAME80, sm_80 alone: the other image on a Hopper device)
for n in neighborhood2d neighborhood3d; do
	"$ATTNC" --target=$TARGET "examples/$n.attn" -o "$DIR/gen/$n"
	sed "s/^attention $n /attention ${n}80 /" "examples/$n.attn" > "$DIR/attn/${n}80.attn"
	"$ATTNC" --target=sm_80 "$DIR/attn/${n}80.attn" -o "$DIR/gen/${n}80"
	rm "$DIR/attn/${n}80.attn"
done
# the backward (anchors.py --bwd): each D 128 and 64 variant with its
# logsumexp saved as L (the backward recomputes P from it), compiled with
# --grad for BWD_TARGET (default TARGET) as NAME_g_dD and, where that is
# not sm_80, for sm_80 as NAME_g80_dD too (anchors.py times both)
BWD=${BWD:-1}
BWD_TARGET=${BWD_TARGET:-$TARGET}
tags="g:$BWD_TARGET"
[ "$BWD_TARGET" = sm_80 ] || tags="$tags g80:sm_80"
[ "$BWD" = 1 ] && printf '{%s}\n' "$(for t in $tags; do printf '"%s": "%s", ' "${t%%:*}" "${t#*:}"; done | sed 's/, $//')" > "$DIR/gen/bwd_targets.json"
for f in "$DIR"/attn/*_d128.attn "$DIR"/attn/*_d64.attn; do
	[ "$BWD" = 1 ] && [ -f "$f" ] || continue
	n=$(basename "$f" .attn)
	v=${n%_d*}
	for t in $tags; do
		g="$DIR/attn/${v}_${t%%:*}_${n##*_}.attn"
		sed -e "s/^attention $n /attention $(basename "$g" .attn) /" \
			-e 's/^  out O\[B, H, N, D\] : bf16;/&\n  out L[B, H, N] : f32;/' \
			-e 's/^}$/  L[b, h, i] = logsumexp[j](S[b, h, i, j]);\n}/' "$f" > "$g"
		if ! "$ATTNC" --grad --target="${t#*:}" "$g" -o "$DIR/gen/$(basename "$g" .attn)"; then
			echo "skip the ${t#*:} backward of $n"
		fi
		rm -f "$g"
	done
done
cp bench/anchors.py bench/bwd_kernels.py bench/decode.py bench/decode_prof.py bench/neighborhood.py bench/table.py bench/bench.c bench/build-bench.sh bench/device.sh "$DIR/"
cp -r runtime "$DIR/runtime"
cat "$ct/compile-time.txt"
echo "compile time in $ct"
