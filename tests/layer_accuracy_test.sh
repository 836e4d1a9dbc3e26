#!/usr/bin/env bash
# The layer suite's accuracy (issue #32): re-predicts the H200 layer suite with this build
# (cuda_validate/layer/predict_blind.py: 54 GEMMs and 4 Llama-3-8B layers, ~45 s on two cores)
# and fails when an error rises above its level in
# cuda_validate/measurements/accuracy_levels_layer.json (cuda_validate/layer/compare.py --check).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 cuda_validate/layer/predict_blind.py "$IOSIM" h200-sxm-141gb >"$tmp/pred.json"
python3 cuda_validate/layer/compare.py "$tmp/pred.json" \
  cuda_validate/measurements/h200-sxm-141gb/layer_2026-11-28 \
  --check cuda_validate/measurements/accuracy_levels_layer.json >"$tmp/compare.md"
head -8 "$tmp/compare.md"
