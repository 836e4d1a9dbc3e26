# Nsight Compute driver shared by ../run_suite.sh (our kernels) and ../pytorch_sdpa/run.sh
# (PyTorch's): the same counters, settings and output files for both, so merge_ncu.py reads
# them alike. Source it, then:
#   ncu_select_metrics DIR        sets METRICS_CSV, DROPPED (metrics this ncu lacks)
#   ncu_run_group DIR GROUP BUDGET_S CMD...
#                                 profiles CMD (a runner in ncu mode; the literal @OUT@ in CMD is
#                                 replaced by the runner's output path) twice:
#                                 1. all metrics -> DIR/ncu_GROUP.csv, DIR/runner_ncu_GROUP.json
#                                 2. DRAM bytes alone -> DIR/single_pass_GROUP.csv,
#                                    DIR/runner_single_pass_GROUP.json
#   ncu_write_env DIR NCU NVCC DRIVER PROFILED_REGION
# Needs: log() from the caller; NCU_CLOCK_CONTROL (default base; set to none by a failed
# clock lock), NCU_CACHE_CONTROL (default all). Optional: NCU_EXTRA_METRICS (space-separated
# metrics added to the list where this ncu offers them, e.g. the wgmma and TMA instruction
# counters of pytorch_sdpa/run.sh's cudnn suite; if the full run with them makes no report, the
# group is profiled again without them).
#
# Why the second run: a kernel needing several replay passes (the full metric list takes 3)
# has its memory saved and restored between passes, and that leaves about 2.4 MB of dirty lines
# in L2 after ncu's cache flush. A kernel that reads more than the L2 holds evicts them and
# dram__bytes_write counts them: measured with a read-only kernel that writes nothing
# (microbench/l2_residue.sh, cuda_validate/measurements/h100-sxm5-80gb/l2_microbench_2026-11-22/): 2.1-2.5 MB
# with 3 passes once it reads 40 MB or more, 0.03-0.3 MB with 1 pass. DRAM bytes alone fit in
# one pass, so merge_ncu.py takes them from the second run.

NCU_METRICS_WANTED=(
  dram__bytes_read.sum dram__bytes_write.sum
  lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_write.sum
  lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
  l1tex__m_xbar2l1tex_read_sectors.sum lts__t_requests_srcunit_tex_op_read.sum
  lts__t_sectors_srcunit_ltcfabric.sum
  gpu__time_duration.sum l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
  sm__inst_executed_pipe_tensor.sum
  sm__cycles_elapsed.avg.per_second dram__cycles_elapsed.avg.per_second
)
NCU_SINGLE_PASS_METRICS=dram__bytes_read.sum,dram__bytes_write.sum
NCU_CLOCK_CONTROL=${NCU_CLOCK_CONTROL:-base}
NCU_CACHE_CONTROL=${NCU_CACHE_CONTROL:-all}

ncu_select_metrics() {  # $1: work dir
  ncu --query-metrics >"$1/ncu_query_metrics.txt" 2>&1
  local m base kept=() extra_kept=()
  DROPPED=()
  for m in ${NCU_EXTRA_METRICS:-}; do
    base=${m%%.*}
    if grep -q "^$base " "$1/ncu_query_metrics.txt"; then extra_kept+=("$m"); else DROPPED+=("$m"); fi
  done
  METRICS_CSV_BASE=""
  for m in "${NCU_METRICS_WANTED[@]}"; do
    base=${m%%.*}
    # Keep only the metrics this ncu knows (one unknown name fails the whole run).
    if ! grep -q "^$base " "$1/ncu_query_metrics.txt" && grep -q "^dram__bytes " "$1/ncu_query_metrics.txt"; then
      DROPPED+=("$m")
    else
      kept+=("$m")
    fi
  done
  METRICS_CSV_BASE=$(IFS=,; echo "${kept[*]}")
  kept+=("${extra_kept[@]}")
  METRICS_CSV=$(IFS=,; echo "${kept[*]}")
  if [[ ${#extra_kept[@]} -gt 0 ]]; then log "extra metrics: ${extra_kept[*]}"; fi
  if [[ ${#DROPPED[@]} -gt 0 ]]; then log "metrics not offered by this ncu (dropped): ${DROPPED[*]}"; fi
  return 0
}

# One ncu process: $1 dir, $2 report name, $3 metrics, $4 timeout, $5.. command (@OUT@ replaced).
_ncu_profile() {
  local dir=$1 name=$2 metrics=$3 budget=$4
  shift 4
  local cmd=() a
  for a in "$@"; do cmd+=("${a//@OUT@/$dir/runner_$name.json}"); done
  timeout "$budget" ncu --profile-from-start off --metrics "$metrics" \
    --cache-control "$NCU_CACHE_CONTROL" --clock-control "$NCU_CLOCK_CONTROL" \
    --replay-mode kernel -f -o "$dir/$name" "${cmd[@]}" >"$dir/$name.log" 2>&1
}

_ncu_export() {  # $1 dir, $2 report name -> $1/$2.csv
  if [[ -f "$1/$2.ncu-rep" ]]; then
    ncu --import "$1/$2.ncu-rep" --csv --page raw --print-units base \
      --print-kernel-base demangled >"$1/$2.csv" 2>>"$LOG"
  else
    tail -5 "$1/$2.log" | tee -a "$LOG"
  fi
}

ncu_run_group() {  # $1 dir, $2 group, $3 timeout (s), $4.. command
  local dir=$1 group=$2 budget=$3 rc start
  shift 3
  start=$(date +%s)
  log "ncu group $group (timeout ${budget}s, clock-control $NCU_CLOCK_CONTROL)"
  _ncu_profile "$dir" "ncu_$group" "$METRICS_CSV" "$budget" "$@"
  rc=$?
  if [[ $rc -ne 0 && ! -f "$dir/ncu_$group.ncu-rep" && "$NCU_CLOCK_CONTROL" == base ]] &&
     grep -qi "clock" "$dir/ncu_$group.log"; then
    log "ncu could not lock clocks (exit $rc); retrying with --clock-control none"
    NCU_CLOCK_CONTROL=none
    _ncu_profile "$dir" "ncu_$group" "$METRICS_CSV" "$budget" "$@"
    rc=$?
  fi
  if [[ $rc -ne 0 && ! -f "$dir/ncu_$group.ncu-rep" && "$METRICS_CSV" != "$METRICS_CSV_BASE" ]]; then
    log "ncu made no report with the extra metrics (exit $rc); dropping them"
    mv "$dir/ncu_$group.log" "$dir/ncu_${group}_with_extra_metrics.log"
    METRICS_CSV=$METRICS_CSV_BASE
    _ncu_profile "$dir" "ncu_$group" "$METRICS_CSV" "$(( budget - ($(date +%s) - start) ))" "$@"
    rc=$?
  fi
  log "ncu group $group exit $rc"
  _ncu_export "$dir" "ncu_$group"
  budget=$(( budget - ($(date +%s) - start) ))
  if (( budget < 10 )); then
    log "no time left for the single-pass DRAM run of $group"
    return 0
  fi
  _ncu_profile "$dir" "single_pass_$group" "$NCU_SINGLE_PASS_METRICS" "$budget" "$@"
  log "single-pass DRAM run of $group exit $?"
  _ncu_export "$dir" "single_pass_$group"
}

ncu_write_env() {  # $1 dir, $2 ncu version, $3 nvcc version, $4 driver, $5 profiled region
  python3 - "$1/env.json" "$2" "$3" "$4" "$NCU_CLOCK_CONTROL" "$NCU_CACHE_CONTROL" \
    "$METRICS_CSV" "${DROPPED[*]:-}" "$NCU_SINGLE_PASS_METRICS" "$5" <<'EOF'
import json, sys
path, ncu, nvcc, driver, clock, cache, metrics, dropped, single, region = sys.argv[1:11]
json.dump({
    "tools": {"ncu": ncu, "nvcc": nvcc, "driver": driver},
    "ncu": {"clock_control": clock, "cache_control": cache, "replay_mode": "kernel",
            "cache_flush": "ncu flushes all caches (L1, L2) before each profiled kernel and "
                           "each replay pass (--cache-control all)",
            "profiled_region": region,
            "print_units": "base", "metrics": metrics.split(","),
            "metrics_unavailable": dropped.split() if dropped else [],
            "single_pass_metrics": single.split(","),
            "single_pass_why": "the full metric list takes several replay passes, and the "
                               "memory save/restore between them leaves ~2.4 MB of dirty lines "
                               "in L2 that a kernel reading more than the L2 writes back "
                               "(cuda_validate/scripts/ncu_lib.sh); these metrics are taken "
                               "from a second ncu run that collects only them, in one pass"},
}, open(path, "w"), indent=1)
EOF
}
