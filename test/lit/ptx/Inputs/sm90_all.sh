#!/bin/sh
# Compiles every example of DIR for sm_90a (PTX, no ptxas); prints FAILED
# and the example for any that fails.
for f in "$1"/*.attn; do
	attnc --target=sm_90a --emit=ptx --ptxas=/nonexistent "$f" > /dev/null 2>&1 || echo "FAILED $f"
done
