#!/usr/bin/env bash
# Runs l2_policy.cu under Nsight Compute on the device machine (see that file for what it
# measures): the repeated sweeps and the scans, each launch with a cold L2 (--cache-control all);
# base clocks, one replay pass. PART (default "sweeps scan"; also "layout") picks the parts.
# Writes $OUT/l2_policy_sweeps.csv and l2_policy_scan.csv (ncu raw pages), the launches as
# l2_policy_sweeps.jsonl and l2_policy_scan.jsonl, and l2_policy.log.
# Usage from the repository root: OUT=... bash cuda_validate/microbench/l2_policy.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ncu_bench.sh" l2_policy  # OUT (default ./out) made, BIN (default /tmp/l2_policy) built
METRICS=dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_ltcfabric.sum,gpu__time_duration.sum
for part in ${PART:-sweeps scan}; do
  ncu --metrics "$METRICS" --cache-control all --clock-control base --replay-mode kernel \
    --csv --page raw --print-units base --log-file "$OUT/l2_policy_$part.csv" \
    "$BIN" "$part" >"$OUT/l2_policy_$part.jsonl" 2>>"$OUT/l2_policy.log"
done
