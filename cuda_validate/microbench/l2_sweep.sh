#!/usr/bin/env bash
# Runs l2_sweep.cu under Nsight Compute on the device machine (see that file for why): cold L2
# per launch (--cache-control all), base clocks, three metrics (one replay pass).
# Writes $OUT/l2_sweep.csv (ncu raw page), l2_sweep.jsonl (the launches), l2_sweep.log.
# Usage from the repository root: OUT=... bash cuda_validate/microbench/l2_sweep.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ncu_bench.sh" l2_sweep  # OUT (default ./out) made, BIN (default /tmp/l2_sweep) built
ncu --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum \
  --cache-control all --clock-control base --replay-mode kernel \
  --csv --page raw --print-units base --log-file "$OUT/l2_sweep.csv" \
  "$BIN" >"$OUT/l2_sweep.jsonl" 2>"$OUT/l2_sweep.log"
