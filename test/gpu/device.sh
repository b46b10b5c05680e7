#!/bin/sh
# Runs on the GPU machine, from the folder prepare.sh filled: builds one
# harness per example (gcc, the runtime compiled in, no cudart), runs every
# case with fresh seeds, runs compute-sanitizer memcheck, racecheck and synccheck on a
# small case per example (SANITIZE=0: none), and prints a table last. A case
# that runs past CASE_TIMEOUT seconds (120) fails. Logs go to $OUT.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" bin
RT=$(ls runtime/*.c)
fails=0
# the harnesses build in parallel, one per CPU (each compiles its generated
# C with the runtime); a failed build leaves bin/NAME.failed
jobs=0 ncpu=$(nproc 2> /dev/null || echo 4)
for f in gen/*_cpu.c; do
	file=$(basename "$f" _cpu.c)
	casc=$(awk -v f="$file" '$1==f{print $2; exit}' cases.txt)
	[ -n "$casc" ] || continue
	# kernels with an entry of partial states (attnc --parts) are checked through it too
	parts=""
	grep -q "int ${casc}_launch_part_generic" "gen/$file.h" && parts="-DPARTS -DHEADER=\"$file.h\""
	# a forward of several passes: its kernels in order, with a workspace
	grep -q "size_t ${casc}_workspace_bytes_generic(" "gen/$file.h" && parts="$parts -DWORKSPACE"
	src=harness.c names="-DNAME=$casc"
	# a backward's folder (GRAD=1 prepare.sh): grad_harness.c, NAME_bwd
	[ -f mode.txt ] && src=grad_harness.c names="-DNAME=${casc}_bwd -DFWD=$casc" parts=""
	gcc -O2 -std=c11 -fopenmp -D_GNU_SOURCE $names $parts -Iruntime -Igen $src "gen/$file.c" \
		"$f" $RT -ldl -lpthread -lm -o "bin/$file" 2> "bin/$file.buildlog" || : > "bin/$file.failed" &
	jobs=$((jobs + 1))
	[ $jobs -lt "$ncpu" ] || { wait; jobs=0; }
done
wait
for l in bin/*.buildlog; do cat "$l" >> "$OUT/build.log"; rm -f "$l"; done
for m in bin/*.failed; do
	[ -e "$m" ] || continue
	echo "build $(basename "$m" .failed) FAILED"
	fails=1
	rm -f "$m"
done
printf "%-16s %-34s %-10s %-10s %s\n" example shape output rel_l2 result > "$OUT/table.txt"
seed=1
while read -r file casc sizes ints; do
	[ -x "bin/$file" ] || continue
	seed=$((seed + 1))
	# a kernel that never finishes (a barrier's wait) fails its case, not the run
	timeout "${CASE_TIMEOUT:-120}" ./bin/"$file" "$sizes" $seed $ints > "$OUT/run.$file.$seed.log" 2>&1
	rc=$?
	[ $rc -ne 0 ] && fails=1
	awk -v f="$file" -v s="$sizes" '$3=="numel"{printf "%-16s %-34s %-10s %-10s %s\n", f, s, $2, $6, $NF}' "$OUT/run.$file.$seed.log" >> "$OUT/table.txt"
	grep -q PASS "$OUT/run.$file.$seed.log" || echo "$file $sizes: $(tail -3 "$OUT/run.$file.$seed.log" | tr '\n' ' ')" >> "$OUT/failures.txt"
done < cases.txt
if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer > /dev/null; then
	for b in bin/*; do
		file=$(basename "$b")
		sizes=$(awk -v f="$file" '$1==f{print $3; exit}' cases.txt)
		ints=$(awk -v f="$file" '$1==f{for (i = 4; i <= NF; i++) printf "%s ", $i; exit}' cases.txt)
		for tool in memcheck racecheck synccheck; do
			timeout 600 compute-sanitizer --tool $tool --error-exitcode 9 "$b" "$sizes" 7 $ints > "$OUT/san.$tool.$file.log" 2>&1
			r=$?
			echo "$file $tool rc=$r $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.$tool.$file.log" | head -1)" >> "$OUT/sanitizer.txt"
			[ $r -ne 0 ] && fails=1
		done
	done
fi
cat "$OUT/table.txt"
[ -f "$OUT/sanitizer.txt" ] && cat "$OUT/sanitizer.txt"
[ -f "$OUT/failures.txt" ] && { echo "FAILURES:"; cat "$OUT/failures.txt"; }
exit $fails
