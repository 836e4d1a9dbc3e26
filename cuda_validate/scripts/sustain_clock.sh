#!/usr/bin/env bash
# The SM clock and board power of the suites' kernels, alone and kept running (issue #46): the
# runner's sustain mode (runner/main.cu) over SUITES, nvidia-smi sampling clocks, power,
# temperatures and the clock event reasons every 100 ms meanwhile, then sustain_summary.py
# against iosim's blind predictions (PREDICTIONS, the same suites' predict_blind.py files, in
# order). One device call, from the repository root:
#   OUT=$OUT SUITES="cuda_validate/suites/heldout.txt cuda_validate/suites/wg1_fwd.txt" \
#     PREDICTIONS="P1.json P2.json" SECONDS_PER_CASE=2.5 bash cuda_validate/scripts/sustain_clock.sh
# $OUT receives sustain_<suite>.json, smi.csv, smi_info.txt, sustain_summary.{json,md}, logs.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-cuda}
SECONDS_PER_CASE=${SECONDS_PER_CASE:-2.5}
mkdir -p "$OUT"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/sustain.log"; }

log "building iosim_cuda_runner in $BUILD_DIR"
cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >>"$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_cuda_runner >>"$OUT/build.log" 2>&1 ||
  { log "build failed"; tail -40 "$OUT/build.log"; exit 1; }

{
  nvidia-smi
  nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE,CLOCK
} >"$OUT/smi_info.txt" 2>&1
FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,power.draw.instant,temperature.gpu,temperature.memory,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown
nvidia-smi --query-gpu=$FIELDS --format=csv,nounits -lms 100 >"$OUT/smi.csv" 2>/dev/null &
SMI=$!
sleep 2  # idle baseline

inputs=()
read -r -a preds <<<"${PREDICTIONS:-}"
i=0
for suite in $SUITES; do
  name=$(basename "$suite" .txt)
  log "sustain mode: $suite (${SECONDS_PER_CASE} s a case)"
  "$BUILD_DIR/iosim_cuda_runner" --suite "$ROOT/$suite" --out "$OUT/sustain_$name.json" \
    --mode sustain --seconds "$SECONDS_PER_CASE" --reps 10 >"$OUT/runner_$name.log" 2>&1
  log "exit $? ($(grep -c FAIL "$OUT/runner_$name.log") FAIL lines)"
  p=${preds[$i]:-}
  inputs+=("$OUT/sustain_$name.json${p:+:$ROOT/$p}")
  i=$((i + 1))
done
sleep 1
kill "$SMI" 2>/dev/null
wait "$SMI" 2>/dev/null
python3 "$ROOT/cuda_validate/scripts/sustain_summary.py" --smi "$OUT/smi.csv" \
  --out "$OUT/sustain_summary.json" --md "$OUT/sustain_summary.md" "${inputs[@]}" \
  >"$OUT/summary.log" 2>&1
tail -n 90 "$OUT/summary.log"
