#!/usr/bin/env bash
# Second device call after cudnn_pipes.sh (issue #13): for cuDNN's forward attention
#   1. sustained clock: d128 then d64 (N = 16384, non-causal) alone, 12 s each, back to back,
#      nvidia-smi every 100 ms;
#   2. ncu --section InstructionStats --section WarpStateStats (clock base) on the 8 cases:
#      the executed-instruction mix per SASS opcode (sass__inst_executed_per_opcode);
#   3. ncu --section SourceCounters (clock base) on the two N = 16384 non-causal cases: executed
#      count and stall samples per SASS instruction (opcodes with modifiers), if time is left.
# Usage: OUT=... bash cudnn_pipes_opcodes.sh [BUDGET_S (default 230)]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# W, LOG, BUDGET_S; PY, OUT, elapsed, left, log, save, import_raw
. "$HERE/stage_lib.sh" /tmp/cudnn_pipes2 pipes2.log "${1:-230}"
D128=cudnn_fwd_b1_h16_n16384_nkv16384_d128
D64=cudnn_fwd_b1_h16_n16384_nkv16384_d64

SMI_FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$SMI_FIELDS --format=csv,noheader,nounits >/dev/null 2>&1 ||
  SMI_FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu
nvidia-smi --query-gpu=$SMI_FIELDS --format=csv,noheader,nounits -lms 100 >"$W/clocks_sustained.csv" 2>/dev/null & SMI=$!
timeout 60 $PY free --out "$W/free_sustained.json" --only "$D128,$D64" --rounds 1 \
  --seconds-per-case 12 >"$W/free_sustained.log" 2>&1
log "sustained run exit $?"
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
cat "$W/free_sustained.log" | tail -2
save "$W/free_sustained.json" "$W/clocks_sustained.csv"

log "ncu InstructionStats + WarpStateStats"
timeout $(( $(left) - 100 > 50 ? $(left) - 100 : 50 )) ncu --profile-from-start off -k regex:fprop \
  --section InstructionStats --section WarpStateStats --cache-control all --clock-control base \
  --replay-mode kernel -f -o "$W/ncu_istats" $PY ncu --out "$W/order_istats.json" >"$W/ncu_istats.log" 2>&1
log "exit $? ($(grep -c Profiling "$W/ncu_istats.log") kernels, $(grep -m1 -oE '[0-9]+ passes' "$W/ncu_istats.log"))"
if [[ -f "$W/ncu_istats.ncu-rep" ]]; then
  import_raw "$W/ncu_istats.ncu-rep" "$W/ncu_istats.csv" "$W/ncu_istats.log"
  ncu --import "$W/ncu_istats.ncu-rep" --csv --page details --print-units base >"$W/ncu_istats_details.csv" 2>>"$W/ncu_istats.log"
  save "$W/ncu_istats.csv" "$W/order_istats.json"
else
  tail -5 "$W/ncu_istats.log" | tee -a "$W/pipes2.log"
fi

if (( $(left) > 40 )); then
  log "ncu SourceCounters on $D64, $D128 (timeout $(( $(left) - 15 ))s)"
  timeout $(( $(left) - 15 )) ncu --profile-from-start off -k regex:fprop --section SourceCounters \
    --cache-control all --clock-control base --replay-mode kernel -f -o "$W/ncu_source" \
    $PY ncu --out "$W/order_source.json" --only "$D64,$D128" >"$W/ncu_source.log" 2>&1
  log "exit $?"
  if [[ -f "$W/ncu_source.ncu-rep" ]]; then
    ncu --import "$W/ncu_source.ncu-rep" --csv --page source --print-source sass \
      >"$W/ncu_source_sass.csv" 2>>"$W/ncu_source.log" ||
      ncu --import "$W/ncu_source.ncu-rep" --csv --page source >"$W/ncu_source_sass.csv" 2>>"$W/ncu_source.log"
    ncu --import "$W/ncu_source.ncu-rep" --csv --page raw --print-units base \
      >"$W/ncu_source_raw.csv" 2>>"$W/ncu_source.log"
    gzip -k "$W/ncu_source_sass.csv"
    save "$W/ncu_source_sass.csv.gz" "$W/order_source.json"
  fi
fi
log "done"
save "$W/pipes2.log"
tar czf "$OUT/pipes2_raw.tar.gz" -C /tmp --exclude='*.ncu-rep' cudnn_pipes2
head -c 600 "$W/ncu_istats.csv" 2>/dev/null; echo; grep -o 'sass__inst_executed_per_opcode[^,]*' "$W/ncu_istats.csv" | head -3
