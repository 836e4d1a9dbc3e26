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
# PASSES (default "plain ring spill") picks the passes; BASE_PASSES (default none; e.g. "plain ring")
# runs those passes again under Nsight Compute with its clock control at base (the SMs held at their
# base clock, the L2 on its own clock), into OUT/coresident_mma_base.json, with ncu's reading of
# each kernel's SM and L2 clocks in OUT/ncu_base_*.csv: which of a step's cycles follow the SM
# clock and which a clock of their own (issue #46: the cp.async ring's wait).
PASSES=${PASSES:-plain ring spill}
BASE_PASSES=${BASE_PASSES:-}
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
# One pass over every tile: $1 the pass (plain: full, gemm, softmax; ring: ring, ring_gemm; spill),
# $2 the JSON file its rows are appended to, $3 "base" to run each binary under ncu at base clocks.
run_pass() {
  local arg=$1
  [[ "$arg" == plain ]] && arg=""
  for t in "${tiles[@]}"; do
    IFS=, read -r d bq bkv w <<<"$t"
    [[ -x "$bin/cr_$d-$bq-$bkv-$w" ]] || continue
    if [[ "${3:-}" == base ]]; then
      ncu --clock-control base -k regex:coresident_mma --metrics \
        sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second --csv \
        --log-file "$out/ncu_base_${1}_$d-$bq-$bkv-$w.csv" "$bin/cr_$d-$bq-$bkv-$w" $arg >>"$2"
    else
      "$bin/cr_$d-$bq-$bkv-$w" $arg >>"$2"
    fi
  done
}
# The modes full, gemm, softmax of every tile first; then the K/V ring modes (ring, ring_gemm) as
# their own pass; then the spill pass (the ring loop compiled for more CTAs per SM than run: its
# spills alone at a fixed W), last, so that the passes before are measured as before it existed.
: >"$out/coresident_mma.json"
for p in $PASSES; do run_pass "$p" "$out/coresident_mma.json"; done
if [[ -n "$BASE_PASSES" ]]; then
  : >"$out/coresident_mma_base.json"
  for p in $BASE_PASSES; do run_pass "$p" "$out/coresident_mma_base.json" base; done
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv,noheader >>"$out/nvidia_smi.txt" 2>&1 || true
rm -rf "$bin"
