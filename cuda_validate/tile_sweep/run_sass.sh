#!/usr/bin/env bash
# The tile sweep's machine code on the device machine (issue #46): builds iosim_tile_sweep and
# disassembles it (our CUDA families), and compiles and disassembles every Triton configuration
# (triton_sass.py). Writes $OUT/sass.tar.gz: cuda.sass and triton/<d>_<causal>_<config>.sass.
# Usage from the repository root: OUT=... bash cuda_validate/tile_sweep/run_sass.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
BUILD_DIR=${BUILD_DIR:-/tmp/build-tile-sweep}
W=/tmp/sass_work
rm -rf "$W"
mkdir -p "$OUT" "$W/triton"
t0=$(date +%s)
log() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/sass_log.txt"; }
python3 "$ROOT/cuda_validate/tile_sweep/triton_sass.py" "$ROOT/cuda_validate/tile_sweep/shapes.txt" \
  "$W/cubin" 2>>"$OUT/sass_log.txt" &
TRITON=$!
if [[ ! -x "$BUILD_DIR/iosim_tile_sweep" ]]; then
  cmake -S "$ROOT/cuda_validate" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >"$W/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target iosim_tile_sweep >>"$W/build.log" 2>&1 ||
    { log "build failed"; tail -30 "$W/build.log"; }
fi
log "built"
cuobjdump -sass "$BUILD_DIR/iosim_tile_sweep" >"$W/cuda.sass" 2>>"$OUT/sass_log.txt"
log "cuda sass exit $? ($(grep -c Function "$W/cuda.sass") functions)"
wait "$TRITON"
log "triton compile exit $? ($(ls "$W/cubin" | wc -l) cubins)"
for f in "$W"/cubin/*.cubin; do
  cuobjdump -sass "$f" >"$W/triton/$(basename "$f" .cubin).sass" 2>>"$OUT/sass_log.txt"
done
log "triton sass done"
tar czf "$OUT/sass.tar.gz" -C "$W" cuda.sass triton
ls -la "$OUT"
