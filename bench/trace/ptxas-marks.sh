#!/bin/sh
# bench/trace/ptxas-marks.sh: a ptxas for `attnc --ptxas=` that adds
# decode_marks.py's %globaltimer marks to decode_fwd_part's sm_90a PTX
# before assembling it (XDG_CACHE_HOME pointing at an empty folder, so that
# attnc's cubin cache does not answer). Then decode_trace.py, beside the
# generated gen/decode.c, prints each mark's spread over the CTAs.
in=""
for x; do case $x in *.ptx) in=$x ;; esac; done
if [ -n "$in" ] && grep -q "decode_fwd_part(" "$in" && grep -q "^.target sm_90a" "$in"; then
	python3 "$(dirname "$0")/decode_marks.py" "$in" || exit 1
fi
exec "${PTXAS:-/usr/local/cuda/bin/ptxas}" "$@"
