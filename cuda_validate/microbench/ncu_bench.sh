#!/usr/bin/env bash
# Sourced by l2_residue.sh and l2_sweep.sh (HERE set to this folder): `. "$HERE/ncu_bench.sh" NAME`
# makes $OUT (default ./out) and builds $HERE/NAME.cu for sm_90 into $BIN (default /tmp/NAME).
OUT=${OUT:-./out}
BIN=${BIN:-/tmp/$1}
mkdir -p "$OUT"
nvcc -O3 -arch=sm_90 -o "$BIN" "$HERE/$1.cu"
