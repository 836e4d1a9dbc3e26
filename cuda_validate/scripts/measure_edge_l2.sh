#!/usr/bin/env bash
# Issue #47's first device call on one GPU: the L2 microbenchmark (microbench/l2_policy.sh) while
# the runner builds, then the edge suite (suites/edge_l2.txt: our flash2 forward and two-pass
# backward at N = 8k .. 256k) with one Nsight Compute counter repeat and three CUDA-event timing
# sets (scripts/run_wg1_suite.sh). Its blind predictions were committed before this ran
# (measurements/predictions/edge_l2_blind.json).
# $OUT receives l2_policy.tar.gz and the suite's edge_l2.json, edge_l2_repeat_1.json,
# edge_l2_hold200_sets.tar.gz and edge_l2_raw.tar.gz.
# Usage from the repository root: OUT=... bash cuda_validate/scripts/measure_edge_l2.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OUT=${OUT:-$ROOT/out}
export BUILD_DIR=${BUILD_DIR:-/tmp/build-cuda-edge}
mkdir -p "$OUT"
t0=$(date +%s)
log() { echo "[$(($(date +%s) - t0)) s] $*"; }
log "building the runner in the background"
(cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/tmp/edge_build.log 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_cuda_runner >>/tmp/edge_build.log 2>&1) &
BUILD=$!
MB=/tmp/l2_policy_out
rm -rf "$MB"
OUT=$MB timeout 240 bash "$ROOT/cuda_validate/microbench/l2_policy.sh"
log "l2_policy exit $?"
tar czf "$OUT/l2_policy.tar.gz" -C "$MB" .
wait "$BUILD"
log "build exit $?"
tail -3 /tmp/edge_build.log
SUITE=$ROOT/cuda_validate/suites/edge_l2.txt NAME=edge_l2 REPEATS=1 SETS=${SETS-1 2 3} \
  TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-300} bash "$ROOT/cuda_validate/scripts/run_wg1_suite.sh"
log "edge suite exit $?"
ls -la "$OUT"
