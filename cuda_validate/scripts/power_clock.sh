#!/usr/bin/env bash
# One device call: microbench/power_clock over duty points, with nvidia-smi sampled every 100 ms
# (clocks.sm, power.draw, power.draw.instant, temperatures, clock event reasons).
# Layout (copied into .hopper/ of the checkout): $H/bin/power_clock (built off the device:
#   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o bin/power_clock microbench/power_clock.cu)
# and $H/power_clock_summary.py. Everything is written to $OUT as it goes.
# Usage: OUT=... bash power_clock.sh [SECONDS_PER_POINT (default 6)]
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$H/out}
SEC=${1:-6}
mkdir -p "$OUT"
{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,enforced.power.limit,power.default_limit,temperature.gpu --format=csv
  nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE,CLOCK
} >"$OUT/smi_info.txt" 2>&1
FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,power.draw.instant,temperature.gpu,temperature.memory,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown
if ! nvidia-smi --query-gpu=$FIELDS --format=csv >/dev/null 2>&1; then
  echo "full field list refused; falling back" | tee -a "$OUT/smi_info.txt"
  FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,clocks_throttle_reasons.sw_power_cap,clocks_throttle_reasons.hw_slowdown,clocks_throttle_reasons.sw_thermal_slowdown,clocks_throttle_reasons.hw_thermal_slowdown
fi
nvidia-smi --query-gpu=$FIELDS --format=csv,nounits -lms 100 >"$OUT/smi.csv" 2>/dev/null & SMI=$!
sleep 2  # idle baseline
POINTS="f16/0/idle f16/0/fma f16/0/softmax
        f16/0.25/idle f16/0.5/idle f16/0.75/idle f16/1/idle
        f16/0.25/fma f16/0.5/fma f16/0.75/fma
        f16/0.25/softmax f16/0.5/softmax f16/0.75/softmax
        e4m3/0.5/idle e4m3/1/idle e4m3/0.5/softmax
        f16/1/idle"
timeout 300 "$H/bin/power_clock" --seconds "$SEC" $POINTS >"$OUT/power_clock_raw.jsonl" 2>"$OUT/power_clock.err"
echo "power_clock exit $?" | tee -a "$OUT/power_clock.err"
sleep 1
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
cuobjdump --dump-sass "$H/bin/power_clock" 2>&1 | grep -oE '\b[HQ]GMMA\.[A-Za-z0-9_.]*|MUFU\.EX2|FFMA' | sort | uniq -c >"$OUT/sass_opcodes.txt"
python3 "$H/power_clock_summary.py" "$OUT/power_clock_raw.jsonl" "$OUT/smi.csv" \
  "$OUT/power_clock_summary.json" "$OUT/power_clock_summary.csv" 2>&1 | tee "$OUT/summary.txt"
