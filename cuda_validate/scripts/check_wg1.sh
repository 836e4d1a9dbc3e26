#!/usr/bin/env bash
# Correctness only (no times, no counters) of the wg1 kernels on the device machine: builds the
# runner, runs suites/wg1_check.txt (ragged and Nkv > N cases), suites/wg1_fwd.txt and
# suites/smoke.txt (the other schedules, unchanged) in time mode with one repetition, and prints
# each case's output check (pass/fail, max and relative errors, L's error, registers and shared
# memory of the wg1 kernels). The runner's JSON (which holds one-repetition times) is deleted.
# Usage from the repository root: bash cuda_validate/scripts/check_wg1.sh [SUITE ...]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-/tmp/build-cuda-wg1}
if [[ ! -x "$BUILD_DIR/iosim_cuda_runner" ]]; then
  cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/tmp/check_wg1_build.log 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_cuda_runner >>/tmp/check_wg1_build.log 2>&1 ||
    { tail -40 /tmp/check_wg1_build.log; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rc=0
for s in "${@:-wg1_check wg1_fwd smoke}"; do
  for suite in $s; do
    json=$(mktemp /tmp/check_wg1_XXXX.json)
    timeout 300 "$BUILD_DIR/iosim_cuda_runner" --suite "$ROOT/cuda_validate/suites/$suite.txt" \
      --mode time --reps 1 --hold-us 0 --out "$json" 2>&1 | grep -v '^\[' | grep -v '^  check:'
    echo "suite $suite: runner exit ${PIPESTATUS[0]}"
    python3 - "$json" "$suite" <<'PY' || rc=1
import json, sys
d = json.load(open(sys.argv[1]))
bad = 0
for c in d["cases"]:
    ch = c.get("check") or {}
    k = (c.get("kernel") or {}).get("launch", {})
    ok = bool(ch.get("passed")) and c.get("error") is None
    bad += not ok
    print(f'{sys.argv[2]} {c["id"]} {"PASS" if ok else "FAIL"} max_abs {ch.get("max_abs_error")} '
          f'(tol {ch.get("tolerance_max_abs")}) rel_l2 {ch.get("rel_l2_error")} '
          f'lse {ch.get("lse_max_abs_error")} nonfinite {ch.get("nonfinite_outputs")} '
          f'regs {k.get("registers_per_thread")} smem {k.get("smem_bytes_per_cta")} '
          f'error {c.get("error")}')
sys.exit(1 if bad else 0)
PY
    rm -f "$json"
  done
done
exit $rc
