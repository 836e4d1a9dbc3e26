#!/bin/bash
# Runs probe.cu on the GPU it is on and prints its log (the committed logs are
# cuda_validate/measurements/<gpu>/run_probe_<date>.log). Usage: bash run_probe.sh > LOG 2>&1
set -x
cd "$(dirname "$0")"
date -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem --format=csv
nvcc --version | tail -1
nvcc -O2 -arch=sm_90 -o /tmp/probe probe.cu
/tmp/probe
# The clock Nsight Compute locks the SMs to by default (--clock-control base), and free-running.
ncu --clock-control base --metrics sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum \
  /tmp/probe spin
ncu --clock-control none --metrics sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum \
  /tmp/probe spin
