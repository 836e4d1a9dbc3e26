#!/usr/bin/env bash
# Builds and runs launch_gap.cu on the lent GPU; writes OUT/launch_gap.json, OUT/ncu.csv (Nsight
# Compute's duration of the empty and the 5 us kernels, one launch each) and OUT/nvidia_smi.txt.
# Usage: launch_gap.sh OUT_DIR
set -euo pipefail
out=${1:?usage: launch_gap.sh OUT_DIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --Werror all-warnings \
  -Xcompiler=-Wall,-Wextra,-Werror -o "$out/launch_gap" "$here/launch_gap.cu"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$out/nvidia_smi.txt" 2>&1 || true
"$out/launch_gap" >"$out/launch_gap.json"
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
# Nsight Compute serializes launches: each variant's own duration, launched once.
"$ncu" --metrics gpu__time_duration.sum --csv "$out/launch_gap" once >"$out/ncu.csv" 2>"$out/ncu.log" || true
rm -f "$out/launch_gap"
