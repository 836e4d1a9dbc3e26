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

# Keep in step with ../run_suite.sh: the same counters for our kernels and PyTorch's.
METRICS_WANTED=(
  dram__bytes_read.sum dram__bytes_write.sum
  lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_write.sum
  lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
  l1tex__m_xbar2l1tex_read_sectors.sum lts__t_requests_srcunit_tex_op_read.sum
  lts__t_sectors_srcunit_ltcfabric.sum
  gpu__time_duration.sum l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
  sm__inst_executed_pipe_tensor.sum
  sm__cycles_elapsed.avg.per_second dram__cycles_elapsed.avg.per_second
)
NCU_CLOCK_CONTROL=${NCU_CLOCK_CONTROL:-base}
NCU_CACHE_CONTROL=all

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

ncu --query-metrics >"$WORK/ncu_query_metrics.txt" 2>&1
METRICS=()
DROPPED=()
for m in "${METRICS_WANTED[@]}"; do
  base=${m%%.*}
  if ! grep -q "^$base " "$WORK/ncu_query_metrics.txt" && grep -q "^dram__bytes " "$WORK/ncu_query_metrics.txt"; then
    DROPPED+=("$m")
  else
    METRICS+=("$m")
  fi
done
METRICS_CSV=$(IFS=,; echo "${METRICS[*]}")
[[ ${#DROPPED[@]} -gt 0 ]] && log "metrics not offered by this ncu (dropped): ${DROPPED[*]}"

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
  log "ncu group $group (timeout ${budget}s, clock-control $NCU_CLOCK_CONTROL)"
  timeout "$budget" ncu --profile-from-start off --metrics "$METRICS_CSV" \
    --cache-control "$NCU_CACHE_CONTROL" --clock-control "$NCU_CLOCK_CONTROL" \
    --replay-mode kernel -f -o "$WORK/ncu_$group" \
    python3 "$HERE/measure.py" ncu --out "$WORK/runner_ncu_$group.json" --only "$only" \
    "${DEV_ARGS[@]}" >"$WORK/ncu_$group.log" 2>&1
  rc=$?
  if [[ $rc -ne 0 && ! -f "$WORK/ncu_$group.ncu-rep" && "$NCU_CLOCK_CONTROL" == base ]] &&
     grep -qi "clock" "$WORK/ncu_$group.log"; then
    log "ncu could not lock clocks (exit $rc); retrying with --clock-control none"
    NCU_CLOCK_CONTROL=none
    timeout $(( $(left_s) - 20 )) ncu --profile-from-start off --metrics "$METRICS_CSV" \
      --cache-control "$NCU_CACHE_CONTROL" --clock-control none --replay-mode kernel \
      -f -o "$WORK/ncu_$group" \
      python3 "$HERE/measure.py" ncu --out "$WORK/runner_ncu_$group.json" --only "$only" \
      "${DEV_ARGS[@]}" >"$WORK/ncu_$group.log" 2>&1
    rc=$?
  fi
  log "ncu group $group exit $rc"
  if [[ -f "$WORK/ncu_$group.ncu-rep" ]]; then
    ncu --import "$WORK/ncu_$group.ncu-rep" --csv --page raw --print-units base \
      --print-kernel-base demangled >"$WORK/ncu_$group.csv" 2>>"$LOG"
  else
    tail -5 "$WORK/ncu_$group.log" | tee -a "$LOG"
  fi
done
kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null

# 4. Merge, finalize, summarize.
python3 - "$WORK/env.json" "$NCU_VERSION" "$NVCC_VERSION" "$DRIVER" "$NCU_CLOCK_CONTROL" \
  "$NCU_CACHE_CONTROL" "$METRICS_CSV" "${DROPPED[*]:-}" <<'EOF'
import json, sys
path, ncu, nvcc, driver, clock, cache, metrics, dropped = sys.argv[1:9]
json.dump({
    "tools": {"ncu": ncu, "nvcc": nvcc, "driver": driver},
    "ncu": {"clock_control": clock, "cache_control": cache, "replay_mode": "kernel",
            "cache_flush": "ncu flushes all caches (L1, L2) before each profiled kernel and "
                           "each replay pass (--cache-control all)",
            "profiled_region": "cudaProfilerStart/Stop (torch.cuda.profiler) around one call of "
                               "each role (--profile-from-start off), after two unprofiled "
                               "warm-up runs; every kernel PyTorch launches in it is profiled",
            "print_units": "base", "metrics": metrics.split(","),
            "metrics_unavailable": dropped.split() if dropped else []},
}, open(path, "w"), indent=1)
EOF
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
