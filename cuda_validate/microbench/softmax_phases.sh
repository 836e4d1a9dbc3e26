#!/usr/bin/env bash
# Builds and runs softmax_phases.cu on the lent GPU; writes OUT/softmax_phases.jsonl and
# OUT/nvidia_smi.txt (the clocks before and after).
# Usage: softmax_phases.sh OUT_DIR
set -euo pipefail
out=${1:?usage: softmax_phases.sh OUT_DIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --Werror all-warnings \
  -Xcompiler=-Wall,-Wextra,-Werror -o "$out/softmax_phases" "$here/softmax_phases.cu"
smi() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv >>"$out/nvidia_smi.txt" 2>&1 || true
}
smi
"$out/softmax_phases" >"$out/softmax_phases.jsonl"
smi
rm -f "$out/softmax_phases"
