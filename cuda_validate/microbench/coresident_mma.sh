#!/usr/bin/env bash
# Builds and runs coresident_mma.cu on the lent GPU for every (d, block_q, block_kv, warps) of the
# tile sweep's wg1_mma family (cuda_validate/tile_sweep/sweep_instances.hpp), one binary per tile,
# compiled in parallel; each binary runs twice, the modes full, gemm, softmax of every tile first,
# then ring and ring_gemm (the wg1_mma_fwd K/V cp.async ring; issue #46), then the spill pass (the
# ring loop compiled for more CTAs per SM than run, at W = 1 and 2: rows with
# "launch_bound_ctas"). Writes
# OUT/coresident_mma.json (the measurements, one object per row),
# OUT/ptxas.txt (registers and spills per instantiation) and OUT/nvidia_smi.txt.
# Usage: coresident_mma.sh OUT_DIR; then coresident_mma_compare.py OUT_DIR/coresident_mma.json
# cuda_validate/measurements/predictions/coresident_mma_blind_h100.json (measured against blind).
set -euo pipefail
out=${1:?usage: coresident_mma.sh OUT_DIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
bin=$(mktemp -d)
tiles=()
for d in 64 128; do
  for t in 64,32,4 64,64,4 64,128,4 128,32,4 128,64,4 128,128,4 128,32,8 128,64,8 128,128,8; do
    tiles+=("$d,$t")
  done
done
build() {  # build D,BQ,BKV,WARPS
  IFS=, read -r d bq bkv w <<<"$1"
  "$nvcc" -O3 -std=c++17 -arch=sm_90 --Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror \
    -Xptxas -v -DCR_D="$d" -DCR_BQ="$bq" -DCR_BKV="$bkv" -DCR_WARPS="$w" \
    -o "$bin/cr_$d-$bq-$bkv-$w" "$here/coresident_mma.cu" >"$bin/ptxas_$d-$bq-$bkv-$w.txt" 2>&1 ||
    { echo "build failed: $1" >&2; cat "$bin/ptxas_$d-$bq-$bkv-$w.txt" >&2; return 1; }
}
export -f build
export nvcc here bin
# A tile that fails to build is named on stderr and left out; the others still run.
printf '%s\n' "${tiles[@]}" | xargs -P "$(nproc)" -I{} bash -c 'build {}' || true
cat "$bin"/ptxas_*.txt >"$out/ptxas.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$out/nvidia_smi.txt" 2>&1 || true
: >"$out/coresident_mma.json"
for t in "${tiles[@]}"; do
  IFS=, read -r d bq bkv w <<<"$t"
  [[ -x "$bin/cr_$d-$bq-$bkv-$w" ]] || continue
  "$bin/cr_$d-$bq-$bkv-$w" >>"$out/coresident_mma.json"
done
# The K/V ring modes (ring, ring_gemm) after every tile's first three, as their own pass.
for t in "${tiles[@]}"; do
  IFS=, read -r d bq bkv w <<<"$t"
  [[ -x "$bin/cr_$d-$bq-$bkv-$w" ]] || continue
  "$bin/cr_$d-$bq-$bkv-$w" ring >>"$out/coresident_mma.json"
done
# The spill pass (the ring loop compiled for more CTAs per SM than run: its spills alone at a
# fixed W), last, so that the passes above are measured as before it existed.
for t in "${tiles[@]}"; do
  IFS=, read -r d bq bkv w <<<"$t"
  [[ -x "$bin/cr_$d-$bq-$bkv-$w" ]] || continue
  "$bin/cr_$d-$bq-$bkv-$w" spill >>"$out/coresident_mma.json"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv,noheader >>"$out/nvidia_smi.txt" 2>&1 || true
rm -rf "$bin"
