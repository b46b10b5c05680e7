#!/bin/sh
# Runs a command and prints its exit status, so lit tests can check it exactly.
"$@"
echo "exit=$?"
