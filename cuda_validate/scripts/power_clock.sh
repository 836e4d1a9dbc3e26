#!/usr/bin/env bash
# One device call: microbench/power_clock over duty points, with nvidia-smi sampled every 100 ms
# (clocks.sm, power.draw, power.draw.instant, temperatures, clock event reasons).
# Layout (copied into .hopper/ of the checkout): $H/bin/power_clock (built off the device:
#   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o bin/power_clock microbench/power_clock.cu),
# $H/power_smi.sh and $H/power_clock_summary.py. Everything is written to $OUT as it goes.
# Usage: OUT=... bash power_clock.sh [SECONDS_PER_POINT (default 6)]
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
SEC=${1:-6}
. "$H/power_smi.sh"  # OUT defaults to $H/out, made here
smi_begin name,driver_version,clocks.sm,clocks.max.sm,power.limit,enforced.power.limit,power.default_limit,temperature.gpu
POINTS="f16/0/idle f16/0/fma f16/0/softmax
        f16/0.25/idle f16/0.5/idle f16/0.75/idle f16/1/idle
        f16/0.25/fma f16/0.5/fma f16/0.75/fma
        f16/0.25/softmax f16/0.5/softmax f16/0.75/softmax
        e4m3/0.5/idle e4m3/1/idle e4m3/0.5/softmax
        f16/1/idle"
timeout 300 "$H/bin/power_clock" --seconds "$SEC" $POINTS >"$OUT/power_clock_raw.jsonl" 2>"$OUT/power_clock.err"
echo "power_clock exit $?" | tee -a "$OUT/power_clock.err"
smi_end power_clock '\b[HQ]GMMA\.[A-Za-z0-9_.]*|MUFU\.EX2|FFMA'
