#!/usr/bin/env bash
# One device-machine call of issue #13's measurements on a Hopper GPU (H100 or H200):
#   1. tools: nvidia-smi, nvcc, ncu, PyTorch and its cuDNN, the ncu metrics this version offers
#      for the tensor pipe and TMA;
#   2. microbench/wgmma (wgmma throughput and latency) and microbench/tma (bulk-copy latency and
#      streaming rate), with nvidia-smi clock samples; their SASS opcodes (HGMMA/QGMMA, UBLKCP);
#      ncu's wgmma counters on the first two launches of wgmma (a known number of wgmmas, so the
#      cuDNN counts can be read as instructions per warp or per warpgroup);
#   3. pytorch_sdpa/run.sh with SUITE=cudnn REP_SETS=3 (cuDNN's fused attention: checks, CUDA-event
#      times in 3 sets, ncu counters) within what is left of BUDGET_S.
# Layout it expects (the device call copies it into .hopper/ of the checkout):
#   $H/bin/{wgmma,tma,iosim_device_query}   built off the device with nvcc 13.0:
#       nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o bin/wgmma microbench/wgmma.cu
#       nvcc -O3 -std=c++17 -arch=sm_90 -o bin/tma microbench/tma.cu
#       nvcc -O3 -std=c++17 -arch=sm_90 -o bin/iosim_device_query device_query.cu
#   $H/repo/cuda_validate/{pytorch_sdpa,scripts}   this branch's scripts
# Everything lands in $OUT/hopper_<gpu>.tar.gz; the microbench JSON also as plain files in $OUT.
# Usage: OUT=... bash hopper_measure.sh [BUDGET_S (default 570)]
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$H/out}
BUDGET_S=${1:-570}
START=$(date +%s)
W=/tmp/hopper_measure
rm -rf "$W" && mkdir -p "$W" "$OUT"
elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[$(date -u +%H:%M:%S) +$(elapsed)s] $*" | tee -a "$W/hopper_measure.log"; }
export PYTHONUNBUFFERED=1

GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$GPU" in
  *H200*) TAG=h200-sxm-141gb ;;
  *H100*) TAG=h100-sxm5-80gb ;;
  *) TAG=unknown ;;
esac
log "gpu: $GPU -> $TAG"
{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,clocks_throttle_reasons.active --format=csv
  nvcc --version
  ncu --version
  cuobjdump --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} >"$W/tools.txt" 2>&1
tail -4 "$W/tools.txt"

sample_clocks() {  # $1: output csv; runs until killed
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null
}

# 2. Microbenchmarks.
sample_clocks "$W/clocks_wgmma.csv" & SMI=$!
timeout 120 "$H/bin/wgmma" >"$W/wgmma.json" 2>"$W/wgmma.err"
log "wgmma exit $? ($(grep -c '"mode"' "$W/wgmma.json") results, $(grep -c '"passed": false' "$W/wgmma.json") failed checks)"
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
sample_clocks "$W/clocks_tma.csv" & SMI=$!
timeout 90 "$H/bin/tma" >"$W/tma.json" 2>"$W/tma.err"
log "tma exit $?"
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
cp "$W/wgmma.json" "$OUT/wgmma_$TAG.json"; cp "$W/tma.json" "$OUT/tma_$TAG.json"
cuobjdump --dump-sass "$H/bin/wgmma" >"$W/wgmma_sass.txt" 2>&1
grep -oE '\b[HQ]GMMA\.[A-Za-z0-9_.]*' "$W/wgmma_sass.txt" | sort | uniq -c >"$W/wgmma_sass_gmma_opcodes.txt"
grep -oE '\bWARPGROUP\.[A-Za-z0-9_.]*|\bWARPSYNC[A-Za-z0-9_.]*' "$W/wgmma_sass.txt" | sort | uniq -c >>"$W/wgmma_sass_gmma_opcodes.txt"
cuobjdump --dump-sass "$H/bin/tma" >"$W/tma_sass.txt" 2>&1
grep -oE '\b(UBLKCP|UTMA[A-Z]*|SYNCS)[A-Za-z0-9_.]*' "$W/tma_sass.txt" | sort | uniq -c >"$W/tma_sass_opcodes.txt"
log "SASS: $(awk '{s+=$1} END {print s+0}' <(grep GMMA "$W/wgmma_sass_gmma_opcodes.txt")) HGMMA/QGMMA instructions in wgmma"
gzip -9 "$W/wgmma_sass.txt" "$W/tma_sass.txt"

# ncu's view of our wgmma kernel: launch 1 = 132 CTAs x 1 warpgroup x 3 wgmma m64n64k16
# (the check), launch 2 = 132 x 4096 (the warm-up).
ncu --query-metrics >"$W/ncu_query_metrics_all.txt" 2>&1
WG_METRICS=""
for m in sm__inst_executed_pipe_tensor_op_gmma.sum sm__pipe_tensor_op_gmma_cycles_active.sum \
         smsp__inst_executed_pipe_tensor_op_gmma.sum sm__inst_executed_pipe_tensor_op_hmma.sum \
         sm__ops_path_tensor_src_fp16_dst_fp32.sum gpu__time_duration.sum sm__cycles_elapsed.avg.per_second; do
  grep -q "^${m%%.*} " "$W/ncu_query_metrics_all.txt" && WG_METRICS+="${WG_METRICS:+,}$m"
done
log "ncu on wgmma with: $WG_METRICS"
timeout 90 ncu --metrics "$WG_METRICS" -c 2 -f -o "$W/wgmma_ncu" "$H/bin/wgmma" >/dev/null 2>"$W/wgmma_ncu.log"
ncu --import "$W/wgmma_ncu.ncu-rep" --csv --page raw --print-units base >"$W/wgmma_ncu.csv" 2>>"$W/wgmma_ncu.log"
rm -f "$W/wgmma_ncu.ncu-rep"
python3 - "$W/wgmma_ncu.csv" <<'EOF' 2>&1 | tee -a "$W/hopper_measure.log"
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if not l.startswith("==")))
if len(rows) > 2:
    hdr = rows[0]
    for r in rows[2:]:
        print("ncu wgmma launch:", {h: v for h, v in zip(hdr, r) if "gmma" in h or "hmma" in h or "ops_path" in h})
EOF

# 3. cuDNN's attention.
left=$(( BUDGET_S - $(elapsed) - 25 ))
log "cudnn suite with ${left}s"
mkdir -p "$W/build"
cp "$H/bin/iosim_device_query" "$W/build/" 2>/dev/null
OUT="$W/sdpa_out" WORK="$W/sdpa" SUITE=cudnn REP_SETS=3 REP_SETS_BUDGET_S=${REP_SETS_BUDGET_S:-80} \
  TOTAL_BUDGET_S=$left BUILD_DIR="$W/build" bash "$H/repo/cuda_validate/pytorch_sdpa/run.sh" \
  >"$W/run_sh.log" 2>&1
log "run.sh exit $?"
cp "$W/sdpa_out/measurements.json" "$OUT/cudnn_measurements_$TAG.json" 2>/dev/null
tar czf "$OUT/hopper_$TAG.tar.gz" --exclude='*.ncu-rep' --exclude=ncu_query_metrics.txt \
  --exclude=ncu_query_metrics_all.txt --exclude=raw_sdpa.tar.gz -C /tmp hopper_measure
log "done"
# The end of the reply: the short tables.
python3 - "$W/wgmma.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("wgmma.json unreadable:", e); sys.exit(0)
for r in d["results"]:
    print(f'{r["mode"][:4]} {r["dtype"]:5} n{r["n"]:<3} {r["a_from"][:4]} wg{r["warpgroups_per_cta"]} '
          f'acc{r["accumulators_per_warpgroup"]} {r["flop_per_clk_per_sm"]:8.1f} flop/clk '
          f'{r["cycles_per_iter"]:8.2f} clk/it {r["sm_clock_mhz_clock64_vs_globaltimer"]:6.0f} MHz '
          f'{r["tflops_event_timed"]:6.1f} TF ok={r["check"]["passed"]}')
EOF
grep -E 'cudnn_|FAIL|ERROR' "$W/sdpa/runner_time.log" 2>/dev/null | grep -v '^\[time\] set' | cut -c1-160 | tail -45
tail -15 "$W/sdpa/run.log" 2>/dev/null
cat "$W/hopper_measure.log" | tail -8
