#!/usr/bin/env bash
# Runs l2_residue.cu under Nsight Compute on the device machine (see that file for why):
#   sizes: --cache-control all (each launch starts with L2 flushed, as in run_suite.sh);
#   writes: --cache-control all (how much of a write-only kernel reaches DRAM while it runs);
#   pairs: --cache-control none (the program flushes, writes, reads itself).
# One pass per kernel (four metrics), so no memory save/restore between replay passes.
# Writes to $OUT: l2_residue_sizes.csv/.jsonl, l2_residue_pairs.csv/.jsonl and the ncu logs.
# Usage from the repository root: OUT=... bash cuda_validate/microbench/l2_residue.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ncu_bench.sh" l2_residue  # OUT (default ./out) made, BIN (default /tmp/l2_residue) built
# METRICS may be overridden (e.g. with run_suite.sh's list, which takes several replay passes).
METRICS=${METRICS:-dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_op_write.sum}
MODES=${MODES:-sizes pairs}
for mode in $MODES; do
  cache=all
  if [[ $mode == pairs ]]; then cache=none; fi
  ncu --metrics "$METRICS" --cache-control "$cache" --clock-control base --replay-mode kernel \
    --csv --page raw --print-units base --log-file "$OUT/l2_residue_$mode.csv" \
    "$BIN" "$mode" >"$OUT/l2_residue_$mode.jsonl" 2>"$OUT/l2_residue_$mode.log"
done
