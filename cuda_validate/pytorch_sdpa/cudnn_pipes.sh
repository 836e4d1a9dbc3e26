#!/usr/bin/env bash
# One device call: cuDNN forward attention's per-pipe instruction mix, tensor-active fraction and
# SM clock, for the 8 cases of cudnn_pipes.py (issue #13). Stages, most wanted first, each
# copying its files to $OUT as soon as it ends (a cut-off run still returns what was done):
#   1. tools, `ncu --query-metrics`, the metric list (cudnn_pipes.py select-metrics);
#   2. free run: the 8 cases back to back (no profiler), nvidia-smi sampling every 100 ms;
#   3. ncu --clock-control none, the metric list, -k regex:fprop;
#   4. ncu --clock-control base, the same;
#   5. ncu --clock-control base, sass__inst_executed_per_opcode (SASS opcode mix), if time is left.
# Usage: OUT=... bash cudnn_pipes.sh [BUDGET_S (default 450)]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# W, LOG, BUDGET_S; PY, OUT, elapsed, left, log, save, import_raw
. "$HERE/stage_lib.sh" /tmp/cudnn_pipes pipes.log "${1:-450}"
pack() {
  tar czf "$OUT/pipes_raw.tar.gz" -C /tmp --exclude=ncu_query_metrics.txt cudnn_pipes 2>/dev/null
  if [[ $(stat -c %s "$OUT/pipes_raw.tar.gz" 2>/dev/null || echo 0) -gt 15000000 ]]; then
    tar czf "$OUT/pipes_raw.tar.gz" -C /tmp --exclude=ncu_query_metrics.txt --exclude='*.ncu-rep' cudnn_pipes
  fi
}

# 1. Tools and metrics.
{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,enforced.power.limit,power.max_limit --format=csv
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE
  ncu --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} >"$W/tools.txt" 2>&1
log "$(grep -m1 -E 'H100|H200' "$W/tools.txt" | head -c 200)"
ncu --query-metrics >"$W/ncu_query_metrics.txt" 2>&1
grep -E '^(smsp__inst_executed_pipe_|sm__pipe_|smsp__warps_issue_stalled_|sass__inst_executed)' \
  "$W/ncu_query_metrics.txt" >"$W/ncu_query_metrics_pipes.txt"
METRICS=$($PY select-metrics "$W/ncu_query_metrics.txt")
echo "$METRICS" | tr ',' '\n' >"$W/metrics_selected.txt"
log "metrics: $(wc -l <"$W/metrics_selected.txt") selected"
$PY list >"$W/cases.txt"

# nvidia-smi fields: the newer name of the throttle reasons first.
SMI_FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$SMI_FIELDS --format=csv,noheader,nounits >/dev/null 2>&1 ||
  SMI_FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$SMI_FIELDS --format=csv,noheader,nounits >/dev/null 2>&1 ||
  SMI_FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu
echo "$SMI_FIELDS" >"$W/clocks_fields.txt"
sample_clocks() {  # $1 csv; until killed
  nvidia-smi --query-gpu=$SMI_FIELDS --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null
}
save "$W/tools.txt"

# 2. Free run with clock samples.
sample_clocks "$W/clocks_free.csv" & SMI=$!
timeout 120 $PY free --out "$W/free.json" --rounds 2 --seconds-per-case 1.5 >"$W/free.log" 2>&1
log "free run exit $? ($(grep -c '^\[free\]' "$W/free.log") case rounds)"
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
tail -3 "$W/free.log"
save "$W/free.json" "$W/clocks_free.csv"

# 3.-5. ncu.
ncu_stage() {  # $1 name, $2 clock control, $3 metrics, $4 timeout
  local name=$1 cc=$2 metrics=$3 to=$4
  log "ncu $name: clock-control $cc, timeout ${to}s"
  timeout "$to" ncu --profile-from-start off -k regex:fprop --metrics "$metrics" \
    --cache-control all --clock-control "$cc" --replay-mode kernel -f -o "$W/$name" \
    $PY ncu --out "$W/order_$name.json" >"$W/$name.log" 2>&1
  log "ncu $name exit $? ($(grep -c 'Profiling' "$W/$name.log") kernels, $(grep -m1 -oE '[0-9]+ passes' "$W/$name.log"))"
  if [[ ! -f "$W/$name.ncu-rep" && -n "${FALLBACK:-}" && "$metrics" != "$FALLBACK" ]]; then
    log "ncu $name made no report; again with the fallback list"
    mv "$W/$name.log" "$W/${name}_first_try.log"
    metrics=$FALLBACK
    timeout "$to" ncu --profile-from-start off -k regex:fprop --metrics "$metrics" \
      --cache-control all --clock-control "$cc" --replay-mode kernel -f -o "$W/$name" \
      $PY ncu --out "$W/order_$name.json" >"$W/$name.log" 2>&1
    log "ncu $name (fallback) exit $?"
    METRICS=$FALLBACK
  fi
  if [[ -f "$W/$name.ncu-rep" ]]; then
    ncu --import "$W/$name.ncu-rep" --csv --page raw --print-units base >"$W/$name.csv" 2>>"$W/$name.log"
    save "$W/$name.csv"
  else
    tail -5 "$W/$name.log" | tee -a "$W/pipes.log"
  fi
  cp "$W/order_$name.json" "$W/order.json" 2>/dev/null
  save "$W/order.json"
}
# Fallback if the full list makes no report: the core and the per-pipe instruction counts.
FALLBACK=$(tr '\n' ',' <"$W/metrics_selected.txt" | tr ',' '\n' | grep -vE '^smsp__warps_issue_stalled_|^sm__pipe_' | paste -sd,),sm__pipe_tensor_op_hmma_cycles_active.sum
ncu_stage ncu_none none "$METRICS" $(( $(left) - 150 > 60 ? $(left) - 150 : 60 ))
ncu_stage ncu_base base "$METRICS" $(( $(left) - 60 > 40 ? $(left) - 60 : 40 ))
if grep -q '^sass__inst_executed_per_opcode ' "$W/ncu_query_metrics.txt" && (( $(left) > 40 )); then
  FALLBACK= ncu_stage ncu_opcodes base sass__inst_executed_per_opcode $(( $(left) - 15 ))
  if [[ -f "$W/ncu_opcodes.ncu-rep" ]]; then
    import_raw "$W/ncu_opcodes.ncu-rep" "$W/ncu_opcodes.csv" "$W/ncu_opcodes.log"
    save "$W/ncu_opcodes.csv"
  fi
else
  log "opcode stage skipped (metric missing or $(left)s left)"
fi
if [[ -f "$W/order.json" ]]; then
  $PY summarize --order "$W/order.json" --ncu-none "$W/ncu_none.csv" --ncu-base "$W/ncu_base.csv" \
    --free "$W/free.json" --smi "$W/clocks_free.csv" --out "$W/summary_device.json" 2>&1 | cut -c1-400
fi
log "done"
save "$W/pipes.log"
pack
