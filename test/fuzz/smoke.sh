#!/bin/sh
# test/fuzz/smoke.sh FUZZER OUT [ARGS...]: a libFuzzer run that is the same
# every time it is run: OUT, where libFuzzer saves the inputs it finds, is
# emptied first (the checked-in seeds, later in ARGS, are never written),
# and ARGS fix the seed and the number of runs (-seed=N -runs=N), not a time.
set -eu
fuzzer=$1
out=$2
shift 2
rm -rf "$out"
mkdir -p "$out"
exec "$fuzzer" "$out" "$@"
