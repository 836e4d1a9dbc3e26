#!/usr/bin/env bash
# Issue #52 item 3 on one GPU in one device call: suites/window.txt (flash2_fwd_kernel's causal
# forward with a token-exact sliding window), one Nsight Compute counter repeat (cold L2, base
# clocks, DRAM bytes from a single pass: scripts/ncu_lib.sh) and CUDA-event timing sets at
# --hold-us 200 (scripts/run_wg1_suite.sh). The blind predictions were committed before it ran
# (measurements/predictions/window_blind.json). $OUT receives window.json (the measured set),
# window_raw.tar.gz, window_hold200_sets.tar.gz, gpu.txt and the logs.
# Usage from the repository root: OUT=... [SETS="1 2 3"] bash cuda_validate/scripts/measure_window.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FINAL=${OUT:-$ROOT/out}
export BUILD_DIR=${BUILD_DIR:-/tmp/build-cuda-window}
mkdir -p "$FINAL"
t0=$(date +%s)
log() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$FINAL/measure_window.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv >"$FINAL/gpu.txt" 2>&1
log "GPU: $(tail -1 "$FINAL/gpu.txt")"
log "building the runner"
cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >"$FINAL/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_cuda_runner >>"$FINAL/build.log" 2>&1 ||
  { log "build failed"; tail -30 "$FINAL/build.log"; exit 1; }
log "built"
S=/tmp/suite_window
rm -rf "$S"
OUT=$S SUITE=$ROOT/cuda_validate/suites/window.txt NAME=window REPEATS=1 SETS=${SETS-1 2 3} \
  TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-150} timeout "${SUITE_TIMEOUT_S:-200}" \
  bash "$ROOT/cuda_validate/scripts/run_wg1_suite.sh" >"$FINAL/suite_window.log" 2>&1
log "suite exit $?"
tail -6 "$FINAL/suite_window.log"
grep -h "FAIL\|error" /tmp/window_work/hold200/hold200_set1.log 2>/dev/null | head -5
cp "$S"/window.json "$S"/window_raw.tar.gz "$S"/window_hold200_sets.tar.gz "$FINAL/" 2>/dev/null
cp /tmp/window_work/r1/summary.txt "$FINAL/summary.txt" 2>/dev/null
ls -la "$FINAL"
