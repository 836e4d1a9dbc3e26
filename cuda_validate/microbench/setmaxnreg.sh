#!/bin/bash
# Device run of cuda_validate/microbench/setmaxnreg.cu (issue #13): build, SASS, fitting configs,
# then the over-pool configs one per process (a blocked launch leaves its process), then a check
# that the GPU still runs the fitting one.
# Carry this script, setmaxnreg.cu and check.cuh in one folder; OUT: where the results go.
cd "$(dirname "$0")"
exec > >(tee "$OUT/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv
nvcc --version | tail -1
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -o setmaxnreg setmaxnreg.cu 2>"$OUT/ptxas.txt"; echo "build rc=$?"
cuobjdump --dump-sass setmaxnreg > sass.txt
# per kernel: setmaxnreg instructions, local-memory traffic, highest register index
awk '/Function : /{if(n)printf "%s usetmaxreg=%d stl=%d ldl=%d max_reg=R%d\n",n,u,s,l,m; n=$3;u=0;s=0;l=0;m=0}
     /USETMAXREG/{u++} /STL/{s++} /LDL/{l++}
     {while(match($0,/R[0-9]+/)){r=substr($0,RSTART+1,RLENGTH-1)+0; if(r>m&&r<255)m=r; $0=substr($0,RSTART+RLENGTH)}}
     END{if(n)printf "%s usetmaxreg=%d stl=%d ldl=%d max_reg=R%d\n",n,u,s,l,m}' sass.txt | tee "$OUT/sass_summary.txt"
grep -E "USETMAXREG" sass.txt | sort | uniq -c | tee -a "$OUT/sass_summary.txt"
gzip -c sass.txt > "$OUT/sass.txt.gz"
./setmaxnreg list
timeout -s KILL 120 ./setmaxnreg all-fitting | tee "$OUT/setmaxnreg.jsonl"; echo "fitting rc=${PIPESTATUS[0]}"
for c in p32_c240 p40_c240 p24_c256; do
  s=$(date +%s)
  timeout -s KILL 40 ./setmaxnreg run $c | tee -a "$OUT/setmaxnreg.jsonl"
  echo "$c rc=${PIPESTATUS[0]} seconds=$(( $(date +%s) - s ))"
done
timeout -s KILL 60 ./setmaxnreg run p24_c240 | tee "$OUT/after_blocked.jsonl"; echo "after rc=${PIPESTATUS[0]}"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
date -u
