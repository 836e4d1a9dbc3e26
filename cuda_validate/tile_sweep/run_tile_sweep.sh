#!/usr/bin/env bash
# The tile sweep on the device machine (issue #46): builds iosim_tile_sweep, then runs our CUDA
# forwards (tile_sweep.cu) and the Triton forward (triton_fwd.py) over SHAPES.
#   MODE=facts (default): launch facts and output checks, no timing -> $OUT/cuda_facts.json,
#     $OUT/triton_facts.json. The blind predictions are made from these before timing.
#   MODE=time: SETS (default 3) timing sets -> $OUT/cuda_time.json, $OUT/triton_time.json, with
#     nvidia-smi's clocks and power sampled every 200 ms while they run ($OUT/smi.csv).
# Also $OUT/meta.txt (GPU, driver, clocks, commit) and $OUT/log.txt.
# Usage from the repository root: OUT=... MODE=time bash cuda_validate/tile_sweep/run_tile_sweep.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
MODE=${MODE:-facts}
SETS=${SETS:-3}
SHAPES=${SHAPES:-$ROOT/cuda_validate/tile_sweep/shapes.txt}
BUILD_DIR=${BUILD_DIR:-/tmp/build-tile-sweep}
mkdir -p "$OUT"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/log.txt"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo "commit unknown"
} >"$OUT/meta.txt" 2>&1
if [[ ! -x "$BUILD_DIR/iosim_tile_sweep" ]]; then
  log "building"
  cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_tile_sweep >>"$OUT/build.log" 2>&1 ||
    { log "build failed"; tail -30 "$OUT/build.log"; exit 1; }
  log "built"
fi
sets=0
[[ "$MODE" == time ]] && sets=$SETS
if [[ "$MODE" == time ]]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv -lms 200 >"$OUT/smi.csv" 2>&1 &
  SMI=$!
fi
log "cuda families ($MODE)"
"$BUILD_DIR/iosim_tile_sweep" "$SHAPES" "$OUT/cuda_$MODE.json" --sets "$sets" 2>>"$OUT/log.txt"
log "cuda exit $?"
log "triton family ($MODE)"
python3 "$ROOT/cuda_validate/tile_sweep/triton_fwd.py" "$MODE" "$SHAPES" "$OUT/triton_$MODE.json" \
  --sets "$SETS" 2>>"$OUT/log.txt"
log "triton exit $?"
[[ -n "${SMI:-}" ]] && kill "$SMI" 2>/dev/null
exit 0
