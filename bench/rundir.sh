#!/bin/sh
# rundir.sh KIND WHAT [BUILD_JSON [BASE_JSON]]: creates the folder a run of
# KIND writes into, $OUT/DATE-COMMIT-KIND (DATE-COMMIT-KIND-2 and on if it
# exists), with its meta.json, and prints its path. The layout is
# bench/results's (bench/results/README.md): copy the folder there to keep
# the run. DATE is today (UTC) where the run happens. COMMIT, TARGET and
# whether the tree had uncommitted changes come from BUILD_JSON (default:
# build.json beside this script), which bench/prepare.sh writes on the
# machine that ran attnc, since the machine that runs the kernels may have
# no git checkout; COMMIT and TARGET in the environment override it.
# BASE_JSON, an A/B's other side, gives the commit recorded as "base". The
# device is the first GPU nvidia-smi names, or $DEVICE.
set -eu
kind=$1
what=$2
build=${3:-$(dirname "$0")/build.json}
base_build=${4:-}
OUT=${OUT:-/tmp/out}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
# field NAME [FILE]: the string or bare value of "NAME" in FILE (BUILD_JSON),
# which bench/prepare.sh writes one field per line
field() {
	if [ -f "${2:-$build}" ]; then
		# a quoted string may hold commas (a bundle's target, sm_80,sm_90a)
		sed -n -e "s/^ *\"$1\": *\"\([^\"]*\)\",\{0,1\}$/\1/p" \
			-e "s/^ *\"$1\": *\([^\",]*\),\{0,1\}$/\1/p" "${2:-$build}" | head -n 1
	fi
}
commit=${COMMIT:-$(field commit)}
target=${TARGET:-$(field target)}
dirty=$(field dirty)
base=
[ -z "$base_build" ] || base=$(field commit "$base_build")
date=$(date -u +%Y-%m-%d)
gpu() {
	command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu="$1" --format=csv,noheader 2> /dev/null | head -n 1
}
device=${DEVICE:-$(gpu name || true)}
driver=$(gpu driver_version || true)
dir="$OUT/$date-${commit:-unknown}-$kind"
n=1
while [ -e "$dir" ]; do
	n=$((n + 1))
	dir="$OUT/$date-${commit:-unknown}-$kind-$n"
done
mkdir -p "$dir"
# str S: S as a JSON string
str() {
	printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}
{
	echo "{"
	echo " \"date\": $(str "$date"),"
	echo " \"commit\": $(str "${commit:-unknown}"),"
	[ -n "$dirty" ] && echo " \"dirty\": $dirty,"
	[ -n "$base" ] && echo " \"base\": $(str "$base"),"
	[ -n "$target" ] && echo " \"target\": $(str "$target"),"
	echo " \"device\": $(str "${device:-unknown}"),"
	[ -n "$driver" ] && echo " \"driver\": $(str "$driver"),"
	echo " \"run\": $(str "$kind"),"
	echo " \"what\": $(str "$what")"
	echo "}"
} > "$dir/meta.json"
echo "$dir"
