#!/usr/bin/env bash
# Which clock the L2 runs at, and what the bulk copy engine (TMA) draws from it (issue #32: the
# fourth layer suite's 96-1536-token GEMMs are 20-40% slower in iosim, whose L2 bandwidth scales
# with the SM clock, than on the H200). One device call, from the repository root; OUT: results.
#   1. tma.cu (fixed loop, never run before): bulk-copy latency and throughput from L2 and DRAM,
#      plain (tma.json) and under Nsight Compute with the SM, L2 (lts) and DRAM clocks of every
#      kernel, the clock free and at base (tma_ncu_{none,base}.csv);
#   2. six GEMMs of the fourth layer suite through cuBLAS (measure_layer.py gemm-ncu) under Nsight
#      Compute, the clock free: each kernel's SM, L2 and DRAM clocks beside its time and L2 sectors
#      (gemm_clocks.csv).
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
w=/tmp/clock_domains
mkdir -p "$w"
nvcc -O3 -std=c++17 -arch=sm_90 -o "$w/tma" cuda_validate/microbench/tma.cu 2>"$OUT/tma_build.txt"
echo "tma build rc=$?"
timeout 120 "$w/tma" >"$OUT/tma.json" 2>"$OUT/tma.err"
echo "tma rc=$?"
clocks=sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second
clocks+=,dram__cycles_elapsed.avg.per_second,gpc__cycles_elapsed.avg.per_second
metrics=$clocks,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum
metrics+=,lts__t_sectors_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,dram__bytes_read.sum
metrics+=,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y
for cc in none base; do
  timeout 200 ncu --clock-control $cc --metrics "$metrics" --csv "$w/tma" \
    >"$OUT/tma_ncu_$cc.csv" 2>"$OUT/tma_ncu_$cc.err"
  echo "tma ncu $cc rc=$?"
done
python3 - cuda_validate/measurements/predictions/layer_fourth_blind_h200.json "$w/pred.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keep = {"qwen2-7b_o_proj_m192", "mistral-7b_tp2_qkv_proj_m192", "llama-3-8b_tp8_o_proj_m24",
        "qwen2-7b_gate_up_proj_m6144", "llama-3-70b_tp2_qkv_proj_m6144",
        "llama-3-70b_tp2_lm_head_m24"}
d["gemms"] = [g for g in d["gemms"] if g["id"] in keep]
json.dump(d, open(sys.argv[2], "w"))
PY
timeout 200 ncu --profile-from-start off --clock-control none --metrics "$metrics" --csv \
  python3 cuda_validate/layer/measure_layer.py gemm-ncu "$w/pred.json" --out "$OUT/gemm_order.json" \
  >"$OUT/gemm_clocks.csv" 2>"$OUT/gemm_clocks.err"
echo "gemm ncu rc=$?"
