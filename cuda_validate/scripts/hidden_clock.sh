#!/usr/bin/env bash
# One device call (issue #46): the SM clock under tensor load below the power cap. The power-model
# fit's points (traffic_power_2026-11-23) ran mma.sync at duty 0.44 with clock64 / globaltimer at
# 1844 MHz while nvidia-smi read 1980 MHz, 540 W and no clock event reason: a clock drop the
# 700 W model cannot give. This call maps it: microbench/traffic_power (built here) over tensor
# duty for each instruction (mma.sync, wgmma fp16, wgmma e4m3), beside L2 traffic, and a pass of
# short launches (does the drop act within 100 ms?). Two passes, each through traffic_power.sh:
#   long/   2 s a point (SECONDS_LONG), the duty sweeps in rising order, repeats at the end
#   short/  0.1 s a point (SECONDS_SHORT), each after an idle point
# $OUT receives hidden_clock.tar.gz (both folders), long_summary.txt and short_summary.txt (the
# device tool returns few files).
# Usage from the repository root: OUT=... bash cuda_validate/scripts/hidden_clock.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
SECONDS_LONG=${SECONDS_LONG:-2}
SECONDS_SHORT=${SECONDS_SHORT:-0.1}
H=/tmp/hidden_clock
rm -rf "$H" && mkdir -p "$H/bin" "$OUT"
cp "$ROOT"/cuda_validate/scripts/{traffic_power.sh,power_smi.sh,power_clock_summary.py} "$H/"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o "$H/bin/traffic_power" \
  "$ROOT/cuda_validate/microbench/traffic_power.cu" >"$OUT/build.log" 2>&1 || {
  echo "build failed"; cat "$OUT/build.log"; exit 1; }
nvidia-smi -L | tee "$OUT/gpu.txt"

IDLE=f16/0/idle/none/0
LONG="$IDLE
  mma/0.1/idle/none/0 mma/0.2/idle/none/0 mma/0.3/idle/none/0 mma/0.4/idle/none/0
  mma/0.5/idle/none/0 mma/0.6/idle/none/0 mma/0.7/idle/none/0 mma/0.8/idle/none/0 mma/1/idle/none/0
  $IDLE
  f16/0.1/idle/none/0 f16/0.2/idle/none/0 f16/0.3/idle/none/0 f16/0.4/idle/none/0 f16/0.5/idle/none/0
  $IDLE
  e4m3/0.1/idle/none/0 e4m3/0.2/idle/none/0 e4m3/0.3/idle/none/0 e4m3/0.4/idle/none/0
  $IDLE
  f16/0/idle/l2/0 f16/0/fma/none/0 mma/0.3/idle/l2/8 mma/0.3/idle/l2/16 f16/0.2/idle/l2/16
  mma/0.3/fma/none/0 mma/0.5/softmax/none/0
  $IDLE
  mma/0.4/idle/none/0 f16/0.3/idle/none/0 e4m3/0.3/idle/none/0 mma/0.2/idle/none/0"
SHORT="$IDLE mma/0.4/idle/none/0 $IDLE mma/0.7/idle/none/0 $IDLE f16/0.3/idle/none/0
  $IDLE e4m3/0.3/idle/none/0 $IDLE mma/1/idle/none/0 $IDLE"
W=$H/work
mkdir -p "$W/long" "$W/short"
(OUT=$W/long POINTS="$LONG" bash "$H/traffic_power.sh" "$SECONDS_LONG") 2>&1 | tail -45
(OUT=$W/short POINTS="$SHORT" bash "$H/traffic_power.sh" "$SECONDS_SHORT") 2>&1 | tail -15
cp "$W/long/summary.txt" "$OUT/long_summary.txt"
cp "$W/short/summary.txt" "$OUT/short_summary.txt"
mv "$OUT/build.log" "$OUT/gpu.txt" "$W/"
tar czf "$OUT/hidden_clock.tar.gz" -C "$H" work
