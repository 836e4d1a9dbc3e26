#!/usr/bin/env bash
# One device call: the layer suite of issue #32 on the GPU at hand. Stages, each copying its files
# to $OUT as soon as it ends (a cut-off run still returns what was done):
#   1. tools (nvidia-smi, ncu, torch);
#   2. each GEMM of the predictions file timed by CUDA events over CUDA graphs, 3 sets, with the
#      kernels' names (measure_layer.py gemm-time);
#   3. Llama-3-8B's layer, prefill N = 4096 and decode over 8192 keys, batch 1 and 16, 3 sets
#      (measure_layer.py layer-time);
#   3b. with SUSTAIN=S, each GEMM again in the sustained regime: S seconds of the same load before
#      the 3 sets, the SM clock sampled during them (measure_layer.py gemm-time --sustain S);
#      stages 3b alone, for an earlier suite's predictions, with ONLY_SUSTAINED=1; LAYER=0 leaves
#      out stage 3 (a suite with no whole layer);
#   4. Nsight Compute over 3 calls of each GEMM, the L2 flushed before each kernel (ncu's default
#      cache control), the clock free (--clock-control none): DRAM and L2 bytes, duration, launch.
# Usage, on the device machine from the repository root:
#   OUT=... bash cuda_validate/layer/run_layer_suite.sh cuda_validate/measurements/predictions/layer_blind_h200.json
#   OUT=... SUSTAIN=0.5 LAYER=0 bash cuda_validate/layer/run_layer_suite.sh PRED
#   OUT=... SUSTAIN=0.5 ONLY_SUSTAINED=1 bash cuda_validate/layer/run_layer_suite.sh PRED
set -uo pipefail
cd "$(dirname "$0")/../.."
pred=$1
here=cuda_validate/layer
w=/tmp/layer_suite
mkdir -p "$w" "$OUT"
t0=$(date +%s)
log() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/suite.log"; }

{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  ncu --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} >"$OUT/tools.txt" 2>&1
log "$(grep -m1 -oE 'H100[^|]*|H200[^|]*' "$OUT/tools.txt" | head -c 80)"

sustained() {
  timeout 300 python3 $here/measure_layer.py gemm-time "$pred" --sustain "$SUSTAIN" \
    --out "$OUT/gemm_time_sustained.json" >"$w/gemm_time_sustained.log" 2>&1
  log "gemm-time --sustain $SUSTAIN exit $? ($(grep -c '^\[gemm\]' "$w/gemm_time_sustained.log") GEMMs)"
  tail -3 "$w/gemm_time_sustained.log" | tee -a "$OUT/suite.log"
}
if [ "${ONLY_SUSTAINED:-0}" = 1 ]; then
  sustained
  exit 0
fi

timeout 240 python3 $here/measure_layer.py gemm-time "$pred" --out "$OUT/gemm_time.json" \
  >"$w/gemm_time.log" 2>&1
log "gemm-time exit $? ($(grep -c '^\[gemm\]' "$w/gemm_time.log") GEMMs)"
tail -3 "$w/gemm_time.log" | tee -a "$OUT/suite.log"

if [ "${LAYER:-1}" != 0 ]; then
  timeout 180 python3 $here/measure_layer.py layer-time --out "$OUT/layer_time.json" \
    >"$w/layer_time.log" 2>&1
  log "layer-time exit $?"
  grep '^\[layer\]' "$w/layer_time.log" | tee -a "$OUT/suite.log"
  tail -3 "$w/layer_time.log" >>"$OUT/suite.log"
fi
[ -n "${SUSTAIN:-}" ] && sustained

metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum
metrics+=,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__m_xbar2l1tex_read_sectors.sum
metrics+=,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size
metrics+=,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic
metrics+=,launch__shared_mem_per_block_static,launch__cluster_dim_x,launch__cluster_dim_y
metrics+=,launch__cluster_dim_z
timeout 300 ncu --profile-from-start off --clock-control none --metrics "$metrics" \
  -o "$w/gemm_ncu" -f python3 $here/measure_layer.py gemm-ncu "$pred" --out "$OUT/gemm_ncu_order.json" \
  >"$w/ncu.log" 2>&1
log "ncu exit $?"
tail -3 "$w/ncu.log" >>"$OUT/suite.log"
ncu --import "$w/gemm_ncu.ncu-rep" --csv --page raw >"$w/gemm_ncu.csv" 2>>"$OUT/suite.log"
gzip -c "$w/gemm_ncu.csv" >"$OUT/gemm_ncu.csv.gz"
log "ncu csv: $(wc -l <"$w/gemm_ncu.csv") lines"
