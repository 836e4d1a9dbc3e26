#!/usr/bin/env bash
# Measures the two sets of issue #27 on one GPU in one device call (10 minutes a command): the
# wg1 forwards (suites/wg1_fwd.txt) and the two-pass backward (suites/two_pass_bwd.txt), each
# with one Nsight Compute counter repeat and three CUDA-event timing sets at --hold-us 200
# (scripts/run_wg1_suite.sh). Their blind predictions were committed before this ran
# (measurements/predictions/). Usage from the repository root: OUT=... bash this script.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OUT=${OUT:-$ROOT/out} COMMIT=${COMMIT:-$(git -C "$ROOT" rev-parse HEAD 2>/dev/null)}
export BUILD_DIR=${BUILD_DIR:-/tmp/build-cuda-new-sets} REPEATS=${REPEATS:-1} SETS=${SETS:-1 2 3}
export TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-240}
for suite in wg1_fwd two_pass_bwd; do
  SUITE=$ROOT/cuda_validate/suites/$suite.txt NAME=$suite bash "$ROOT/cuda_validate/scripts/run_wg1_suite.sh"
done
ls -la "$OUT"
