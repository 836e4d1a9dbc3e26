#!/usr/bin/env bash
# Configures and builds iosim into build/ (Release). CUDA sources in cuda_validate/ are compiled
# too when nvcc is found (on PATH or in /usr/local/cuda); no GPU is needed to build them.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(-DCMAKE_BUILD_TYPE=Release)
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B build "${args[@]}" "$@" >/dev/null
cmake --build build -j"$(nproc)"
