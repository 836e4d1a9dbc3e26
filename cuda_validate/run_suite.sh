#!/usr/bin/env bash
# Builds cuda_validate and measures a suite on the device machine in one call:
#   1. build (cmake + nvcc, sm_90) unless SKIP_BUILD=1 and a build is present;
#   2. free-running pass: correctness checks + CUDA-event times (nvidia-smi samples clocks);
#   3. counter pass: the runner again, under Nsight Compute, one ncu process per
#      schedule group (a timeout in one group loses only that group's report);
#   4. merge into measurements.json (format: cuda_validate/FORMAT.md) and print a table.
# Intermediate files go to $WORK; $OUT receives three files: measurements.json,
# summary.txt and raw.tar.gz (ncu CSVs and logs, runner outputs and logs, clock
# samples, nvidia-smi -q), because the device tool returns only a few files.
#
# Environment: OUT (default ./out), WORK (default /tmp/iosim_work),
# SUITE (default suites/default.txt), BUILD_DIR (default build-cuda), REPS (default 10),
# HOLD_US (default 200: the runner's --hold-us, GPU kept busy before each timed repetition),
# SKIP_BUILD (0/1), SMOKE (1: run suites/smoke.txt in time mode first),
# TOTAL_BUDGET_S (default 540: the ncu groups shrink their timeouts to fit).
# Usage from the repository root: bash cuda_validate/run_suite.sh
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out}
SUITE=${SUITE:-$ROOT/cuda_validate/suites/default.txt}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-cuda}
REPS=${REPS:-10}
HOLD_US=${HOLD_US:-200}
TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-540}
WORK=${WORK:-/tmp/iosim_work}
START_S=$(date +%s)
mkdir -p "$OUT"
rm -rf "$WORK" && mkdir -p "$WORK"
FINAL_OUT=$OUT
OUT=$WORK  # everything below writes to the work directory
LOG="$OUT/run_suite.log"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
left_s() { echo $(( TOTAL_BUDGET_S - ($(date +%s) - START_S) )); }

# Counters, ncu settings and the single-pass DRAM run: scripts/ncu_lib.sh (shared with
# pytorch_sdpa/run.sh). Also the sectors the SMs receive from L2
# (l1tex__m_xbar2l1tex_read_sectors): on Hopper, identical reads from several SMs in flight
# together can be merged before the L2 slices count them, so the lts__ read count can be below
# what the kernels load (scripts/diag_l2.sh, README).
source "$ROOT/cuda_validate/scripts/ncu_lib.sh"

# 1. Build.
if [[ "${SKIP_BUILD:-0}" == 1 && -x "$BUILD_DIR/iosim_cuda_runner" ]]; then
  log "using the prebuilt $BUILD_DIR/iosim_cuda_runner"
else
  log "building in $BUILD_DIR"
  cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >>"$LOG" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" >>"$LOG" 2>&1 || { log "build failed"; tail -40 "$LOG"; exit 1; }
fi
RUNNER="$BUILD_DIR/iosim_cuda_runner"

# Environment and tool versions.
nvidia-smi -q >"$OUT/nvidia_smi_q.txt" 2>&1
NCU_VERSION=$(ncu --version 2>/dev/null | tail -1)
NVCC_VERSION=$(nvcc --version 2>/dev/null | tail -1)
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
log "ncu: $NCU_VERSION; nvcc: $NVCC_VERSION; driver: $DRIVER"

ncu_select_metrics "$OUT"

sample_clocks() {  # $1: output csv; runs until killed
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null
}

if [[ "${SMOKE:-0}" == 1 ]]; then
  "$RUNNER" --suite "$ROOT/cuda_validate/suites/smoke.txt" --out "$OUT/smoke.json" --mode time \
    --reps 3 >"$OUT/smoke.log" 2>&1
  log "smoke suite exit $? ($(grep -c FAIL "$OUT/smoke.log") FAIL lines)"
fi

# 2. Free-running pass.
log "free-running pass: $SUITE"
sample_clocks "$OUT/clocks_time_pass.csv" & SMI_PID=$!
"$RUNNER" --suite "$SUITE" --out "$OUT/runner_time.json" --mode time --reps "$REPS" \
  --hold-us "$HOLD_US" >"$OUT/runner_time.log" 2>&1
log "free-running pass exit $? ($(grep -c FAIL "$OUT/runner_time.log") FAIL lines)"
kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null

# 3. Counter pass, one ncu process per group.
sample_clocks "$OUT/clocks_ncu_pass.csv" & SMI_PID=$!
for group in flash2_ flash1_ standard_ block-sparse_ flash-decoding_ paged_; do
  grep -q "^${group%_}" "$SUITE" || continue
  budget=$(( $(left_s) - 25 ))
  if (( budget < 20 )); then log "no time left for ncu group $group"; continue; fi
  ncu_run_group "$OUT" "$group" "$budget" \
    "$RUNNER" --suite "$SUITE" --out @OUT@ --mode ncu --only "$group"
done
kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null

# 4. Merge and summarize.
ncu_write_env "$OUT" "$NCU_VERSION" "$NVCC_VERSION" "$DRIVER" \
  "cudaProfilerStart/Stop around one launch per role (--profile-from-start off), after one unprofiled warm-up run"
python3 "$ROOT/cuda_validate/scripts/merge_ncu.py" --dir "$OUT" --out "$OUT/measurements.json" \
  2>&1 | tee -a "$LOG"
python3 "$ROOT/cuda_validate/scripts/summarize.py" "$OUT/measurements.json" | tee "$OUT/summary.txt"
log "done in $(( $(date +%s) - START_S ))s"
cp "$OUT/measurements.json" "$OUT/summary.txt" "$FINAL_OUT/" 2>/dev/null
tar czf "$FINAL_OUT/raw.tar.gz" -C "$OUT" --exclude='*.ncu-rep' --exclude=ncu_query_metrics.txt \
  --exclude=measurements.json .
