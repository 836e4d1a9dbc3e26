#!/usr/bin/env bash
# The CUPTI-vs-ncu cross-check on the device machine, in one call:
#   1. ../run_suite.sh on suites/cupti_xcheck.txt (checks, free-running times, ncu counters),
#      three times: base clocks, clocks not locked, base clocks again;
#   2. iosim_cuda_runner --mode cupti on the same suite (CUPTI Range Profiler counters), twice
#      with the default L2 flush (read + discard), once with the read-only one;
#   3. ../scripts/cupti_vs_ncu.py: the table (cupti_vs_ncu.md / .json).
# $OUT receives cupti_vs_ncu.md and xcheck.tar.gz (everything else).
# Environment: OUT (default ./out-xcheck), BUILD_DIR (default build-cuda; SKIP_BUILD=1 uses it
# as built), TOTAL_BUDGET_S for each run_suite.sh (default 100).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out-xcheck}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-cuda}
WORK=/tmp/iosim_xcheck
SUITE=$ROOT/cuda_validate/suites/cupti_xcheck.txt
rm -rf "$WORK" && mkdir -p "$OUT" "$WORK"
# The runner finds libcupti where this toolkit keeps it (a build carried from another
# machine may have a different RUNPATH).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}

# A carried build must start here (it exits 2 with its usage line on a bad flag).
probe=$("$BUILD_DIR/iosim_cuda_runner" --bad-flag 2>&1)
if [[ "$probe" != *usage* ]]; then
  echo "carried runner does not start here; building: $probe" | tee "$WORK/build.log"
  BUILD_DIR=/tmp/iosim_build_cuda
  cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >>"$WORK/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" >>"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; }
fi

# ncu twice with its default base-clock lock (its own run-to-run spread), once with the
# clocks not locked (the regime the CUPTI path runs in); CUPTI twice.
run_ncu() {  # $1: name, $2: clock control
  OUT=$WORK/$1 SUITE=$SUITE REPS=3 SKIP_BUILD=1 BUILD_DIR=$BUILD_DIR NCU_CLOCK_CONTROL=$2 \
    TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-100} WORK=/tmp/iosim_xcheck_$1 \
    bash "$ROOT/cuda_validate/run_suite.sh" >"$WORK/run_suite_$1.out" 2>&1
  echo "run_suite.sh ($1, clock control $2) exit $?: $(tail -2 "$WORK/run_suite_$1.out" | head -1)"
}
run_cupti() {  # $1: name, $2: L2 flush variant (../cupti/l2_flush.cuh)
  timeout 120 "$BUILD_DIR/iosim_cuda_runner" --suite "$SUITE" --out "$WORK/$1.json" \
    --mode cupti --cupti-flush "$2" >"$WORK/$1.log" 2>&1
  echo "runner --mode cupti ($1) exit $?: $(tail -1 "$WORK/$1.log")"
}
run_ncu ncu base
run_cupti runner_cupti discard
run_ncu ncu_unlocked none
run_cupti runner_cupti_repeat discard
run_cupti runner_cupti_normal normal
run_ncu ncu_repeat base

if [[ -f "$WORK/runner_cupti.json" && -f "$WORK/ncu/measurements.json" ]]; then
  opt=()
  [[ -f "$WORK/ncu_repeat/measurements.json" ]] && opt+=(--ncu-repeat "$WORK/ncu_repeat/measurements.json")
  [[ -f "$WORK/ncu_unlocked/measurements.json" ]] && opt+=(--ncu-unlocked "$WORK/ncu_unlocked/measurements.json")
  [[ -f "$WORK/runner_cupti_repeat.json" ]] && opt+=(--cupti-repeat "$WORK/runner_cupti_repeat.json")
  [[ -f "$WORK/runner_cupti_normal.json" ]] &&
    opt+=(--cupti-variant "read-only flush, no discard=$WORK/runner_cupti_normal.json")
  python3 "$ROOT/cuda_validate/scripts/cupti_vs_ncu.py" --ncu "$WORK/ncu/measurements.json" \
    --cupti "$WORK/runner_cupti.json" "${opt[@]}" --md "$WORK/cupti_vs_ncu.md" \
    --json "$WORK/cupti_vs_ncu.json"
  cp "$WORK/cupti_vs_ncu.md" "$OUT/"
fi
tar czf "$OUT/xcheck.tar.gz" -C "$WORK" .
