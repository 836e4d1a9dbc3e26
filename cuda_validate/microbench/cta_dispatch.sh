#!/usr/bin/env bash
# Builds and runs cta_dispatch.cu on the lent GPU; writes OUT/cta_dispatch.jsonl and
# OUT/nvidia_smi.txt (the clocks before and after).
# Usage: cta_dispatch.sh OUT_DIR
set -euo pipefail
out=${1:?usage: cta_dispatch.sh OUT_DIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --Werror all-warnings \
  -Xcompiler=-Wall,-Wextra,-Werror -o "$out/cta_dispatch" "$here/cta_dispatch.cu"
smi() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv >>"$out/nvidia_smi.txt" 2>&1 || true
}
smi
"$out/cta_dispatch" >"$out/cta_dispatch.jsonl"
smi
rm -f "$out/cta_dispatch"
