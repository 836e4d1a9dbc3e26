#!/usr/bin/env bash
# Sourced by cudnn_pipes.sh and cudnn_pipes_opcodes.sh, with HERE (this folder) set, as
# `. "$HERE/stage_lib.sh" W LOG BUDGET_S`: sets W (a work folder, emptied here), LOG (the log's
# name in $W), BUDGET_S (seconds), PY (cudnn_pipes.py), OUT (default $HERE/out, made), the
# budget clock (elapsed, left) and
#   log MSG...     a time-stamped line to the terminal and $W/$LOG;
#   save FILE...   copies the files and the log to $OUT (a cut-off run returns what was done);
#   import_raw REPORT CSV LOGFILE   ncu's raw page of REPORT as CSV, one column per metric
#                  instance where this ncu offers that.
W=$1
LOG=$2
BUDGET_S=$3
PY="python3 $HERE/cudnn_pipes.py"
OUT=${OUT:-$HERE/out}
START=$(date +%s)
rm -rf "$W" && mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET_S - $(elapsed) )); }
log() { echo "[$(date -u +%H:%M:%S) +$(elapsed)s] $*" | tee -a "$W/$LOG"; }
save() { cp "$@" "$OUT/" 2>/dev/null; cp "$W/$LOG" "$OUT/" 2>/dev/null; }
import_raw() {
  ncu --import "$1" --csv --page raw --print-units base --print-metric-instances values >"$2" 2>>"$3" ||
    ncu --import "$1" --csv --page raw --print-units base >"$2" 2>>"$3"
}
