#!/usr/bin/env bash
# One device call: microbench/traffic_power over HBM / L2 traffic points, alone and beside tensor
# work, with nvidia-smi sampled every 100 ms (as power_clock.sh).
# Layout (copied into .hopper/ of the checkout): $H/bin/traffic_power (built off the device:
#   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o bin/traffic_power microbench/traffic_power.cu),
# $H/power_smi.sh and $H/power_clock_summary.py. Everything is written to $OUT as it goes.
# Usage: OUT=... bash traffic_power.sh [SECONDS_PER_POINT (default 5)]
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
SEC=${1:-5}
. "$H/power_smi.sh"  # OUT defaults to $H/out, made here
smi_begin name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,enforced.power.limit,power.default_limit,temperature.gpu
# dtype/duty/spin/traffic/rate (bytes per SM clock per SM; 0 = as fast as the copies complete);
# POINTS in the environment replaces the list
POINTS=${POINTS:-"f16/0/idle/none/0 f16/0/fma/none/0 f16/0/softmax/none/0
        f16/0/idle/hbm/3 f16/0/idle/hbm/6 f16/0/idle/hbm/9 f16/0/idle/hbm/0
        f16/0/idle/l2/8 f16/0/idle/l2/16 f16/0/idle/l2/24 f16/0/idle/l2/0
        f16/0.25/idle/none/0 f16/0.25/idle/l2/24 f16/0.25/idle/hbm/0 f16/0.25/softmax/l2/24
        f16/0.5/idle/none/0 f16/0.5/idle/l2/16 f16/0.5/idle/hbm/0
        f16/0.75/idle/none/0 f16/0.75/idle/l2/24 f16/0.75/softmax/none/0 f16/0.75/softmax/l2/24
        f16/1/idle/none/0 f16/1/idle/l2/30
        e4m3/0.5/idle/none/0 e4m3/0.5/idle/l2/16
        f16/0/idle/none/0"}
timeout 400 "$H/bin/traffic_power" --seconds "$SEC" $POINTS >"$OUT/traffic_power_raw.jsonl" 2>"$OUT/traffic_power.err"
echo "traffic_power exit $?" | tee -a "$OUT/traffic_power.err"
smi_end traffic_power '\b[HQ]GMMA\.[A-Za-z0-9_.]*|HMMA\.[A-Za-z0-9_.]*|LDSM[A-Za-z0-9_.]*|MUFU\.EX2|FFMA|UBLKCP[A-Za-z0-9_.]*'
