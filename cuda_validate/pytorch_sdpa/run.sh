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
# TOTAL_BUDGET_S (default 420: ncu groups shrink their timeouts to fit),
# SUITE (sdpa, the default: flash and math backends; cudnn: cuDNN's fused attention, which also
# asks ncu for the wgmma/TMA instruction counters in CUDNN_EXTRA_METRICS where it has them),
# REP_SETS (default 1; the cudnn suite's runs use 3: the time pass times every case again after
# all cases, REP_SETS times in all, and reports the median and spread over the sets),
# REP_SETS_BUDGET_S (default 120: the extra sets stop after this long).
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
SUITE=${SUITE:-sdpa}
REP_SETS=${REP_SETS:-1}
REP_SETS_BUDGET_S=${REP_SETS_BUDGET_S:-120}
# Counters of Hopper's wgmma (HGMMA/QGMMA: tensor pipe, gmma), mma.sync (hmma) and TMA traffic;
# kept only where `ncu --query-metrics` lists them.
CUDNN_EXTRA_METRICS=${CUDNN_EXTRA_METRICS:-"sm__inst_executed_pipe_tensor_op_gmma.sum
  sm__inst_executed_pipe_tensor_op_hmma.sum sm__pipe_tensor_op_gmma_cycles_active.sum
  sm__pipe_tensor_op_hmma_cycles_active.sum sm__inst_executed_pipe_tma.sum
  l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum smsp__inst_executed.sum
  sm__cycles_active.avg"}
if [[ $SUITE == cudnn* ]]; then export NCU_EXTRA_METRICS=$CUDNN_EXTRA_METRICS; fi
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
# What this ncu offers for Hopper's tensor pipe and copy engine (the names drift by version).
grep -iE 'gmma|hmma|tma|bulk|tensor' "$WORK/ncu_query_metrics.txt" >"$WORK/ncu_metrics_tensor_tma.txt" 2>/dev/null
python3 -c 'import torch; from torch.nn.attention import SDPBackend; print("cudnn", torch.backends.cudnn.version(), "cudnn_sdp_enabled", torch.backends.cuda.cudnn_sdp_enabled(), SDPBackend.CUDNN_ATTENTION)' >>"$LOG" 2>&1

sample_clocks() {  # $1: output csv; runs until killed
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null
}
DEV_ARGS=(--device-json "$WORK/device_query.json")

# 2. Time pass.
log "time pass"
sample_clocks "$WORK/clocks_time_pass.csv" & SMI_PID=$!
python3 "$HERE/measure.py" time --out "$WORK/runner_time.json" --reps "$REPS" --only "$ONLY" \
  --suite "$SUITE" --rep-sets "$REP_SETS" --time-budget-s "$REP_SETS_BUDGET_S" \
  "${DEV_ARGS[@]}" >"$WORK/runner_time.log" 2>&1
log "time pass exit $? ($(grep -c -E 'FAIL|ERROR' "$WORK/runner_time.log") FAIL/ERROR lines)"
kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null

# 3. Counter pass, one ncu process per group.
sample_clocks "$WORK/clocks_ncu_pass.csv" & SMI_PID=$!
for group in $(python3 "$HERE/measure.py" list --groups --suite "$SUITE"); do
  if [[ -n "$ONLY" && "$group" != "$ONLY"* && "$ONLY" != "$group"* ]]; then continue; fi
  only=$group
  [[ -n "$ONLY" && "$ONLY" == "$group"* ]] && only=$ONLY
  budget=$(( $(left_s) - 20 ))
  if (( budget < 20 )); then log "no time left for ncu group $group"; continue; fi
  ncu_run_group "$WORK" "$group" "$budget" \
    python3 "$HERE/measure.py" ncu --out @OUT@ --only "$only" --suite "$SUITE" "${DEV_ARGS[@]}"
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
  --exclude=measurements.json .
