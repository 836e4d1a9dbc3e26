#!/usr/bin/env bash
# Builds and runs kv_drift.cu on the lent GPU (issue #47: how far a wave's CTAs drift apart in
# their K/V loops). Each shape runs twice: under Nsight Compute (cold L2, base clocks, DRAM read
# bytes in one pass, as scripts/ncu_lib.sh's single-pass run: the stamps are of the counted
# launch) and on its own (boost clocks, the L2 evicted by a 256 MiB write). Writes OUT/kv_drift.tar.gz
# (per run PREFIX.json, PREFIX.bin, and for the ncu runs PREFIX_ncu.csv), OUT/ptxas.txt,
# OUT/nvidia_smi.txt and OUT/log.txt. Usage: kv_drift.sh OUT_DIR
set -uo pipefail
out=${1:?usage: kv_drift.sh OUT_DIR}
mkdir -p "$out/kv_drift"
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
log() { echo "$(date -u +%T) $*" | tee -a "$out/log.txt"; }
"$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --Werror all-warnings \
  -Xcompiler=-Wall,-Wextra,-Werror -Xptxas=-warn-spills,-warn-lmem-usage -Xptxas -v \
  -o "$out/kv_drift_bin" "$here/kv_drift.cu" >"$out/ptxas.txt" 2>&1 || { log "build failed"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$out/nvidia_smi.txt" 2>&1 || true
log "ncu: $(ncu --version 2>/dev/null | tail -1)"
# name batch heads seq causal
shapes=(
  "b1_h8_n32k_causal 1 8 32768 1"
  "b1_h8_n64k_causal 1 8 65536 1"
  "b1_h8_n128k_causal 1 8 131072 1"
  "b1_h4_n256k_causal 1 4 262144 1"
  "b1_h8_n128k_full 1 8 131072 0"
)
for s in "${shapes[@]}"; do
  read -r name b h n c <<<"$s"
  flags=(--batch "$b" --heads "$h" --seq "$n" --out)
  causal=()
  [[ $c == 1 ]] && causal=(--causal)
  d=$out/kv_drift
  timeout 120 ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum --cache-control all \
    --clock-control base --replay-mode kernel -k regex:flash2 --launch-skip 1 --launch-count 1 \
    --csv --page raw --print-units base \
    "$out/kv_drift_bin" "${flags[@]}" "$d/${name}_ncu" "${causal[@]}" >"$d/${name}_ncu.csv" \
    2>"$d/${name}_ncu.err"
  log "$name ncu exit $?: $(tail -1 "$d/${name}_ncu.csv" | cut -c1-200)"
  timeout 60 "$out/kv_drift_bin" "${flags[@]}" "$d/${name}_plain" "${causal[@]}" >>"$out/log.txt" 2>&1
  log "$name plain exit $?"
done
rm -f "$out/kv_drift_bin"
tar czf "$out/kv_drift.tar.gz" -C "$out" kv_drift && rm -rf "$out/kv_drift"
ls -la "$out" | tee -a "$out/log.txt"
