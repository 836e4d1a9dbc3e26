#!/usr/bin/env bash
# Measures suites/wg1_fwd.txt (issue #27 item 5: wg1_tma_fwd and wg1_mma_fwd) on the device
# machine the way the held-out suite was measured (measurements/*/heldout_2026-11-23: NOTES.md,
# retime_2026-11-24/NOTES.md):
#   1. build the runner once (cmake, Release; run_suite.sh's build);
#   2. REPEATS (default "1 2 3") repeats of run_suite.sh with SUITE=suites/wg1_fwd.txt, each its
#      own processes: output checks + CUDA-event times (the runner's default --hold-us 200) and
#      ncu counters, merged into measurements.json (FORMAT.md) -> $OUT/repeat_N.json;
#   3. SETS (default "1 2 3") timing sets `--mode time --reps 10 --hold-us 200`, with nvidia-smi
#      clock samples -> $OUT/hold200_sets.tar.gz (hold200_setN.json, smi.csv);
#   4. when repeat_1..3.json are all in $OUT: combine_repeats.py (median over repeats, cases
#      whose check failed in any repeat dropped) and merge_hold_times.py (time_queued_s) ->
#      $OUT/wg1_fwd.json.
# $OUT receives at most 6 files (the device tool returns 8): wg1_fwd.json, repeat_1..3.json,
# hold200_sets.tar.gz and raw.tar.gz (run_suite logs, each repeat's raw.tar.gz of ncu CSVs,
# the commit and nvidia-smi's name/clock/power line). If one call cannot hold it all (10 minutes
# a command), split it: REPEATS="1 2" SETS="" first, then carry what came back in a folder and
# run REPEATS="3" SETS="1 2 3" PRIOR=that/folder (its repeat_*.json and hold200_sets.tar.gz are
# copied into $OUT first). COMMIT (default: git rev-parse HEAD, "unknown" without .git) names
# the source commit in wg1_fwd.json.
# Usage from the repository root: OUT=... bash cuda_validate/scripts/run_wg1_suite.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
BUILD_DIR=${BUILD_DIR:-/tmp/build-cuda-wg1}
SUITE=${SUITE:-$ROOT/cuda_validate/suites/wg1_fwd.txt}
NAME=${NAME:-$(basename "$SUITE" .txt)}
REPEATS=${REPEATS-1 2 3}
SETS=${SETS-1 2 3}
W=/tmp/${NAME}_work
mkdir -p "$OUT" "$W"
if [[ -n "${PRIOR:-}" ]]; then
  cp "$PRIOR"/${NAME}_repeat_*.json "$PRIOR"/${NAME}_hold200_sets.tar.gz "$OUT/" 2>/dev/null
fi
[[ "${KEEP:-0}" == 1 ]] || rm -rf "$W"/*
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/run_wg1_suite.log"; }

if [[ ! -x "$BUILD_DIR/iosim_cuda_runner" ]]; then
  log "building in $BUILD_DIR"
  cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >"$W/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_cuda_runner >>"$W/build.log" 2>&1 ||
    { log "build failed"; tail -40 "$W/build.log"; exit 1; }
fi
if [[ -n "${COMMIT:-}" ]]; then echo "$COMMIT" >"$W/commit.txt"
else git -C "$ROOT" rev-parse HEAD >"$W/commit.txt" 2>/dev/null || echo unknown >"$W/commit.txt"; fi
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv >"$W/meta.txt" 2>&1

for r in $REPEATS; do
  log "repeat $r: run_suite.sh"
  OUT="$W/r$r" WORK="$W/work_r$r" SUITE="$SUITE" BUILD_DIR="$BUILD_DIR" SKIP_BUILD=1 \
    TOTAL_BUDGET_S=${TOTAL_BUDGET_S:-540} bash "$ROOT/cuda_validate/run_suite.sh" \
    >"$W/run_suite_$r.log" 2>&1
  log "repeat $r exit $?"
  cp "$W/r$r/measurements.json" "$OUT/${NAME}_repeat_$r.json" 2>/dev/null
done

H=$W/hold200
mkdir -p "$H"
[[ -f "$OUT/${NAME}_hold200_sets.tar.gz" ]] && tar xzf "$OUT/${NAME}_hold200_sets.tar.gz" -C "$H"
if [[ -n "$SETS" ]]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 100 >"$H/smi_$(date +%s).csv" 2>/dev/null & SMI=$!
  for s in $SETS; do
    "$BUILD_DIR/iosim_cuda_runner" --suite "$SUITE" --mode time --reps 10 --hold-us 200 \
      --out "$H/hold200_set$s.json" >"$H/hold200_set$s.log" 2>&1
    log "timing set $s (--hold-us 200) exit $? ($(grep -c FAIL "$H/hold200_set$s.log") FAIL lines)"
  done
  kill "$SMI" 2>/dev/null; wait "$SMI" 2>/dev/null
  tar czf "$OUT/${NAME}_hold200_sets.tar.gz" -C "$H" .
fi

if [[ -f "$OUT/${NAME}_repeat_1.json" && -f "$OUT/${NAME}_repeat_2.json" && -f "$OUT/${NAME}_repeat_3.json" ]]; then
  python3 "$ROOT/cuda_validate/scripts/combine_repeats.py" --commit "$(cat "$W/commit.txt")" \
    --out "$OUT/$NAME.json" "$OUT/${NAME}_repeat_1.json" "$OUT/${NAME}_repeat_2.json" "$OUT/${NAME}_repeat_3.json" |
    tee -a "$W/run_wg1_suite.log"
elif [[ "${REPEATS}" == "1" && -f "$OUT/${NAME}_repeat_1.json" ]]; then
  # One counter repeat (device time is short): its file is the set, with the timing sets below.
  cp "$OUT/${NAME}_repeat_1.json" "$OUT/$NAME.json"
fi
if [[ -f "$OUT/$NAME.json" ]] && ls "$H"/hold200_set*.json >/dev/null 2>&1; then
  python3 "$ROOT/cuda_validate/scripts/merge_hold_times.py" "$OUT/$NAME.json" "$H" |
    tee -a "$W/run_wg1_suite.log"
fi
log "done"
(cd "$W" && tar czf "$OUT/${NAME}_raw.tar.gz" --exclude='*.ncu-rep' run_wg1_suite.log meta.txt commit.txt \
  $(ls run_suite_*.log 2>/dev/null) $(ls r*/raw.tar.gz r*/summary.txt 2>/dev/null))
