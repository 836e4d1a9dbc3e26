#!/usr/bin/env bash
# Measures PyTorch's scaled_dot_product_attention on the device machine in one call:
#   1. device properties (iosim_device_query when built, else PyTorch's);
#   2. time pass: measure.py time (checks against float64 + CUDA-event times; nvidia-smi
#      samples the clocks);
#   3. counter pass: measure.py ncu under Nsight Compute, one ncu process per case group
#      (a timeout in one group loses only that group), with the metrics and settings of
#      ../run_suite.sh (--cache-control all --clock-control base --replay-mode kernel);
#   4. merge (../scripts/merge_ncu.py) and finalize (measure.py finalize: tiling parsed
#      from the kernel names) into measurements.json (format: ../FORMAT.md).
# $OUT receives measurements.json, summary.txt and raw.tar.gz (ncu CSVs and logs, the
# measure.py outputs and logs, clock samples).
#
# Environment: OUT (default ./out), WORK (default /tmp/iosim_sdpa), REPS (default 10),
# ONLY (id prefix), BUILD_DIR (for iosim_device_query; default build-cuda),
# TOTAL_BUDGET_S (default 420: ncu groups shrink their timeouts to fit).
# Usage from the repository root: bash cuda_validate/pytorch_sdpa/run.sh
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/cuda_validate/pytorch_sdpa
OUT=${OUT:-$ROOT/out}
WORK=${WORK:-/tmp/iosim_sdpa}
REPS=${REPS:-10}
ONLY=${ONLY:-}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-cuda}
TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-420}
START_S=$(date +%s)
mkdir -p "$OUT"
rm -rf "$WORK" && mkdir -p "$WORK"
LOG="$WORK/run.log"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
left_s() { echo $(( TOTAL_BUDGET_S - ($(date +%s) - START_S) )); }
export PYTHONUNBUFFERED=1

# Counters, ncu settings and the single-pass DRAM run: ../scripts/ncu_lib.sh (shared with
# ../run_suite.sh: the same counters for our kernels and PyTorch's).
source "$ROOT/cuda_validate/scripts/ncu_lib.sh"

# 1. Device and tools.
if [[ -x "$BUILD_DIR/iosim_device_query" ]] && "$BUILD_DIR/iosim_device_query" >"$WORK/device_query.json" 2>>"$LOG"; then
  log "device: $(grep -m1 '"name"' "$WORK/device_query.json")"
else
  rm -f "$WORK/device_query.json"
  log "iosim_device_query not available; device properties from PyTorch"
fi
nvidia-smi -q >"$WORK/nvidia_smi_q.txt" 2>&1
NCU_VERSION=$(ncu --version 2>/dev/null | tail -1)
NVCC_VERSION=$(nvcc --version 2>/dev/null | tail -1)
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
log "ncu: $NCU_VERSION; driver: $DRIVER; $(python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1)"

ncu_select_metrics "$WORK"

sample_clocks() {  # $1: output csv; runs until killed
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null
}
DEV_ARGS=(--device-json "$WORK/device_query.json")

# 2. Time pass.
log "time pass"
sample_clocks "$WORK/clocks_time_pass.csv" & SMI_PID=$!
python3 "$HERE/measure.py" time --out "$WORK/runner_time.json" --reps "$REPS" --only "$ONLY" \
  "${DEV_ARGS[@]}" >"$WORK/runner_time.log" 2>&1
log "time pass exit $? ($(grep -c -E 'FAIL|ERROR' "$WORK/runner_time.log") FAIL/ERROR lines)"
kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null

# 3. Counter pass, one ncu process per group.
sample_clocks "$WORK/clocks_ncu_pass.csv" & SMI_PID=$!
for group in $(python3 "$HERE/measure.py" list --groups); do
  if [[ -n "$ONLY" && "$group" != "$ONLY"* && "$ONLY" != "$group"* ]]; then continue; fi
  only=$group
  [[ -n "$ONLY" && "$ONLY" == "$group"* ]] && only=$ONLY
  budget=$(( $(left_s) - 20 ))
  if (( budget < 20 )); then log "no time left for ncu group $group"; continue; fi
  ncu_run_group "$WORK" "$group" "$budget" \
    python3 "$HERE/measure.py" ncu --out @OUT@ --only "$only" "${DEV_ARGS[@]}"
done
kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null

# 4. Merge, finalize, summarize.
ncu_write_env "$WORK" "$NCU_VERSION" "$NVCC_VERSION" "$DRIVER" \
  "cudaProfilerStart/Stop (torch.cuda.profiler) around one call of each role (--profile-from-start off), after two unprofiled warm-up runs; every kernel PyTorch launches in it is profiled"
python3 "$ROOT/cuda_validate/scripts/merge_ncu.py" --dir "$WORK" --out "$WORK/merged.json" 2>&1 | tee -a "$LOG"
python3 "$HERE/measure.py" finalize --merged "$WORK/merged.json" --time "$WORK/runner_time.json" \
  --out "$WORK/measurements.json" 2>&1 | tee -a "$LOG"
python3 "$ROOT/cuda_validate/scripts/summarize.py" "$WORK/measurements.json" >"$WORK/summary.txt" 2>&1
python3 - "$WORK/measurements.json" >>"$WORK/summary.txt" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("\nkernels per case (name, 100 chars):")
for c in d["cases"]:
    t = c.get("tiling") or {}
    print(c["id"], c["schedule"], c["pass"], "error:", (c.get("error") or "-")[:150],
          "tiling:", {k: t.get(k) for k in ("block_q", "block_kv", "threads", "num_splits") if k in t})
    for k in c.get("kernels", []):
        print("   ", k.get("role"), (k.get("name") or "?")[:100])
EOF
cat "$WORK/summary.txt"
log "done in $(( $(date +%s) - START_S ))s"
cp "$WORK/measurements.json" "$WORK/summary.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/raw_sdpa.tar.gz" -C "$WORK" --exclude='*.ncu-rep' --exclude=ncu_query_metrics.txt \
  --exclude=measurements.json --exclude=merged.json .
