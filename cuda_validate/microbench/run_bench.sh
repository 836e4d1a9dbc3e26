#!/usr/bin/env bash
# Builds and runs one of the microbenchmarks that print JSON lines (cta_dispatch.cu,
# cta_reduction.cu, softmax_phases.cu) on the lent GPU; writes OUT/NAME.jsonl and
# OUT/nvidia_smi.txt (the clocks before and after).
# Usage: run_bench.sh NAME OUT_DIR
set -euo pipefail
name=${1:?usage: run_bench.sh NAME OUT_DIR}
out=${2:?usage: run_bench.sh NAME OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$here/$name.cu" ] || { echo "run_bench.sh: no $here/$name.cu" >&2; exit 2; }
mkdir -p "$out"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --Werror all-warnings \
  -Xcompiler=-Wall,-Wextra,-Werror -o "$out/$name" "$here/$name.cu"
smi() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv >>"$out/nvidia_smi.txt" 2>&1 || true
}
smi
"$out/$name" >"$out/$name.jsonl"
smi
rm -f "$out/$name"
