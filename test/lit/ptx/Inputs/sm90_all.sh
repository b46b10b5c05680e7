#!/bin/sh
# Compiles every example of DIR for sm_90a (PTX, no ptxas) but the one that
# sm_90a refuses with a reason (mla_absorbed: its 576-wide heads, which
# sm_80's kernels take); prints
# FAILED and the example for any other that fails.
for f in "$1"/*.attn; do
	case "$f" in
	*mla_absorbed.attn) ;;
	*) attnc --target=sm_90a --emit=ptx --ptxas=/nonexistent "$f" > /dev/null 2>&1 || echo "FAILED $f" ;;
	esac
done
