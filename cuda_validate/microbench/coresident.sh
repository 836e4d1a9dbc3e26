#!/usr/bin/env bash
# Builds and runs coresident.cu on the lent GPU; writes OUT/coresident.json (the measurements),
# OUT/ptxas.txt (registers per variant and the variants whose wgmma ptxas serialized, C7512:
# those rows time a different instruction stream and are left out of any reading) and
# OUT/nvidia_smi.txt. Usage: coresident.sh OUT_DIR
set -euo pipefail
out=${1:?usage: coresident.sh OUT_DIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --Werror all-warnings \
  -Xcompiler=-Wall,-Wextra,-Werror -Xptxas -v -o "$out/coresident" "$here/coresident.cu" \
  >"$out/ptxas.txt" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$out/nvidia_smi.txt" 2>&1 || true
"$out/coresident" >"$out/coresident.json"
rm -f "$out/coresident"
