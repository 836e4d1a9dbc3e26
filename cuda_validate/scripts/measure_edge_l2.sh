#!/usr/bin/env bash
# Issue #47's measurements on one GPU in one device call:
#   1. the L2 microbenchmark (microbench/l2_policy.sh; PART picks its parts, default both) while
#      the runner builds;
#   2. the edge suites of our kernels (SUITES, default "edge_l2 edge_l2_bwd": flash2's forward at
#      N = 8k .. 256k, the two-pass backward at N ~ 28k), each with one Nsight Compute counter
#      repeat and three CUDA-event timing sets (scripts/run_wg1_suite.sh);
#   3. with SDPA=1, PyTorch's edge suite (pytorch_sdpa/run.sh SUITE=edge: its flash backend and
#      cuDNN's fused attention with grouped-query heads at N = 32k .. 128k).
# Every suite's blind predictions were committed before it ran (measurements/predictions/).
# $OUT receives one tarball per part: l2_policy.tar.gz, <suite>.tar.gz, sdpa_edge.tar.gz.
# Usage from the repository root: OUT=... bash cuda_validate/scripts/measure_edge_l2.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FINAL=${OUT:-$ROOT/out}
export BUILD_DIR=${BUILD_DIR:-/tmp/build-cuda-edge}
mkdir -p "$FINAL"
t0=$(date +%s)
log() { echo "[$(($(date +%s) - t0)) s] $*"; }
log "building the runner in the background"
(cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/tmp/edge_build.log 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_cuda_runner iosim_device_query \
    >>/tmp/edge_build.log 2>&1) &
BUILD=$!
if [[ "${PART-sweeps scan}" != "" ]]; then
  MB=/tmp/l2_policy_out
  rm -rf "$MB"
  OUT=$MB timeout 240 bash "$ROOT/cuda_validate/microbench/l2_policy.sh"
  log "l2_policy exit $?"
  tar czf "$FINAL/l2_policy.tar.gz" -C "$MB" .
fi
wait "$BUILD"
log "build exit $?"
tail -2 /tmp/edge_build.log
for suite in ${SUITES-edge_l2 edge_l2_bwd}; do
  S=/tmp/suite_$suite
  rm -rf "$S"
  OUT=$S SUITE=$ROOT/cuda_validate/suites/$suite.txt NAME=$suite REPEATS=1 SETS=${SETS-1 2 3} \
    TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-240} timeout 300 bash "$ROOT/cuda_validate/scripts/run_wg1_suite.sh" \
    >/tmp/suite_$suite.log 2>&1
  log "suite $suite exit $?: $(grep -c . "$S/$suite.json" 2>/dev/null) lines"
  tail -4 /tmp/suite_$suite.log
  tar czf "$FINAL/$suite.tar.gz" -C "$S" .
done
if [[ "${SDPA:-0}" == 1 ]]; then
  P=/tmp/sdpa_edge
  rm -rf "$P"
  OUT=$P SUITE=edge BUILD_DIR=$BUILD_DIR TOTAL_BUDGET_S=${SDPA_BUDGET_S:-200} \
    timeout 280 bash "$ROOT/cuda_validate/pytorch_sdpa/run.sh" >/tmp/sdpa_edge.log 2>&1
  log "sdpa edge exit $?"
  tail -15 /tmp/sdpa_edge.log
  tar czf "$FINAL/sdpa_edge.tar.gz" -C "$P" . -C /tmp sdpa_edge.log
fi
ls -la "$FINAL"
