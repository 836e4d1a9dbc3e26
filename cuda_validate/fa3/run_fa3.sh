#!/usr/bin/env bash
# One device call of our FlashAttention-3-style kernel (fa3_fwd.cu) on a Hopper GPU, plus the
# bulk-copy probe (../microbench/tma.cu):
#   1. tools and the GPU (nvidia-smi, ncu version);
#   2. set 1: every case of `fa3_fwd --set "$SET"` output-checked against a float64 reference, then
#      timed (CUDA events, median of --reps launches); sets 2 and 3: the same timings in new
#      processes (--no-check); nvidia-smi clock/power samples during each;
#   3. ncu (../scripts/ncu_lib.sh, the counters and settings of the other suites plus the wgmma/TMA
#      and per-pipe instruction counters) on `fa3_fwd --profile` (one launch per case, in order);
#   4. the TMA probe (latency, streaming rate by bytes per copy and copies in flight);
#   5. SASS opcode counts of each fa3 kernel (HGMMA, UTMALDG, SYNCS, BAR, LDGSTS, MUFU).
#   0. (when $H/bin/fa3_fwd_pin exists) the SASS of both builds: MUFU.EX2 between the
#      intra-warpgroup-overlap loop's two waits (wgmma.wait_group 1 and 0, WARPGROUP.DEPBAR.LE
#      gsb0 0x1 / 0x0), i.e. exponentials that overlap P V; the build with more of them runs
#      the suite, the other runs the N = 8192 cases (checked) beside it.
# Expects prebuilt binaries (built off the device with nvcc 13.0, see NOTES.md):
#   $H/bin/fa3_fwd   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o fa3_fwd fa3_fwd.cu
#   $H/bin/fa3_fwd_pin (optional) the same with -DFA3_PIN_SOFTMAX=1
#   $H/bin/tma       nvcc -O3 -std=c++17 -arch=sm_90 -o tma ../microbench/tma.cu
#   $H/bin/iosim_device_query   nvcc -O3 -std=c++17 -arch=sm_90 -o iosim_device_query ../device_query.cu
# and $H/ncu_lib.sh (a copy of ../scripts/ncu_lib.sh).
# Writes $OUT/fa3_own.tar.gz (everything) and the small result files beside it.
# Usage: OUT=... [SET=main|fp8|all] [TMA_PROBE=0] bash run_fa3.sh [BUDGET_S (default 540)]
#   SET: fa3_fwd's case set for sets 1-3 and ncu (main: the fp16 cases; fp8: the e4m3 cases;
#   all: both); TMA_PROBE=0 skips step 4.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$H/out}
BUDGET_S=${1:-540}
SET=${SET:-main}
TMA_PROBE=${TMA_PROBE:-1}
START=$(date +%s)
W=/tmp/fa3_own
rm -rf "$W" && mkdir -p "$W" "$OUT"
LOG="$W/run.log"
elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[$(date -u +%H:%M:%S) +$(elapsed)s] $*" | tee -a "$LOG"; }
left() { echo $(( BUDGET_S - $(elapsed) )); }

{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
  ncu --version
  cuobjdump --version | tail -1
} >"$W/tools.txt" 2>&1
"$H/bin/iosim_device_query" >"$W/device_query.json" 2>&1
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"

sample_clocks() {  # $1: output csv; runs until killed
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null
}

# 0. Which build keeps the softmax between the waits.
BIN="$H/bin/fa3_fwd"
ALT=""
ex2_window() {  # $1 binary -> "total kernel:count ..." for the TMA IWO kernels
  cuobjdump --dump-sass "$1" 2>/dev/null | python3 -c '
import re, sys
fn, state, counts = None, 0, {}
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1) if re.search(r"CopyE0ELb[01]ELb1ELb0E", m.group(1)) else None
        state = 0
        if fn: counts[fn] = 0
        continue
    if not fn: continue
    if "DEPBAR.LE gsb0, 0x1" in line and state == 0: state = 1
    elif "DEPBAR.LE gsb0, 0x0" in line and state == 1: state = 2
    elif "MUFU.EX2" in line and state == 1: counts[fn] += 1
short = lambda f: re.sub(r".*kernelILi(\d+)ELi2ELNS_4CopyE0ELb(\d)ELb1ELb0E.*", r"d\1_pp\2", f)
print(sum(counts.values()), " ".join(f"{short(f)}:{c}" for f, c in counts.items()))'
}
if [[ -x "$H/bin/fa3_fwd_pin" ]]; then
  a=$(ex2_window "$H/bin/fa3_fwd"); b=$(ex2_window "$H/bin/fa3_fwd_pin")
  log "MUFU.EX2 between the IWO waits: plain build $a; pinned build $b"
  echo "plain: $a" >"$W/ex2_between_waits.txt"; echo "pin: $b" >>"$W/ex2_between_waits.txt"
  if (( ${b%% *} > ${a%% *} )); then BIN="$H/bin/fa3_fwd_pin"; ALT="$H/bin/fa3_fwd"; else ALT="$H/bin/fa3_fwd_pin"; fi
  log "suite build: $(basename "$BIN"); N=8192 comparison build: $(basename "$ALT")"
fi

# 2. A smoke set first (N = 1024, every variant, checked): a hang or a wrong output stops here,
#    leaving the device time for a fix.
timeout 60 "$BIN" --set smoke --reps 3 >"$W/smoke.jsonl" 2>"$W/smoke.err"
rc=$?
log "smoke exit $rc: $(grep -c '"passed": true' "$W/smoke.jsonl") passed, $(grep -c '"passed": false' "$W/smoke.jsonl") failed"
cat "$W/smoke.err" | head -30
if (( rc != 0 && rc != 1 )) && [[ "$SET" == all ]]; then
  # A hang or crash (not a failed check) with the fp8 kernels in: the fp16 suite alone.
  log "smoke exit $rc with SET=all: continuing with SET=main"
  SET=main
  rc=0
fi
if (( rc != 0 && rc != 1 )); then
  timeout 90 "$H/bin/tma" >"$W/tma.json" 2>"$W/tma.err"
  log "tma exit $?"
  cp "$W/tma.json" "$W/smoke.jsonl" "$W/smoke.err" "$OUT/" 2>/dev/null
  tar czf "$OUT/fa3_own.tar.gz" -C /tmp fa3_own
  cut -c1-400 "$W/smoke.jsonl"
  exit 1
fi
# Checked set, then two timing sets.
sample_clocks "$W/clocks_set1.csv" & SMI=$!
timeout 200 "$BIN" --set "$SET" --reps 15 >"$W/set1.jsonl" 2>"$W/set1.err"
log "set 1 (checked) exit $?: $(grep -c '"passed": true' "$W/set1.jsonl") passed, $(grep -c '"passed": false' "$W/set1.jsonl") failed"
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
grep -E 'FAIL|vdesc|error' "$W/set1.err" | head -20 | tee -a "$LOG"
SWAP=$(python3 -c "import json,sys; r=[json.loads(l) for l in open('$W/set1.jsonl') if l.strip()]; print(r[-1]['vdesc_swap'] if r else 0)" 2>/dev/null || echo 0)
PL=$(python3 -c "import json,sys; r=[json.loads(l) for l in open('$W/set1.jsonl') if l.strip()]; r=[x for x in r if x.get('dtype') == 'fp8']; print(r[-1]['p_layout'] if r else 0)" 2>/dev/null || echo 0)
for s in 2 3; do
  sample_clocks "$W/clocks_set$s.csv" & SMI=$!
  timeout 120 "$BIN" --set "$SET" --reps 15 --no-check --vdesc-swap "$SWAP" --p-layout "$PL" \
    >"$W/set$s.jsonl" 2>"$W/set$s.err"
  log "set $s exit $? ($(grep -c '"id"' "$W/set$s.jsonl") cases)"
  kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
done

if [[ -n "$ALT" ]]; then
  timeout 60 "$ALT" --set "$SET" --only _n8192_ --reps 15 --vdesc-swap "$SWAP" >"$W/alt_n8192.jsonl" 2>"$W/alt_n8192.err"
  log "other build, N=8192 cases: exit $? ($(grep -c '"passed": true' "$W/alt_n8192.jsonl") passed)"
  timeout 60 "$BIN" --set "$SET" --only _n8192_ --reps 15 --no-check --vdesc-swap "$SWAP" --p-layout "$PL" >"$W/suite_build_n8192_again.jsonl" 2>&1
  log "suite build, N=8192 cases again right after: exit $?"
fi
# 4 (before ncu, which may run long). TMA probe.
if [[ "$TMA_PROBE" != 0 ]]; then
  sample_clocks "$W/clocks_tma.csv" & SMI=$!
  timeout 90 "$H/bin/tma" >"$W/tma.json" 2>"$W/tma.err"
  log "tma exit $?"
  kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
fi

# 5. SASS opcodes per kernel.
cuobjdump --dump-sass "$BIN" >"$W/fa3_sass.txt" 2>&1
python3 - "$W/fa3_sass.txt" >"$W/fa3_sass_opcodes.txt" <<'EOF'
import re, sys, collections
fn, counts = None, collections.OrderedDict()
for line in open(sys.argv[1]):
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1); counts[fn] = collections.Counter(); continue
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
    if fn and m:
        op = m.group(2)
        key = op if re.match(r"(HGMMA|UTMA|SYNCS|BAR|LDGSTS|WARPGROUP|USETMAXREG|MUFU|UBLKCP)", op) else op.split(".")[0]
        counts[fn][key] += 1
for fn, c in counts.items():
    if "fa3_fwd_kernel" not in fn and "fa3_fwd_fp8_kernel" not in fn: continue
    print(fn, "total", sum(c.values()))
    for op, n in sorted(c.items(), key=lambda x: -x[1]):
        if re.match(r"(HGMMA|UTMA|SYNCS|BAR|LDGSTS|WARPGROUP|USETMAXREG|MUFU|UBLKCP|FFMA|FMUL|FADD|FMNMX|SHFL|F2FP|LDS|STG|LDG)", op):
            print(f"  {n:6d} {op}")
EOF
gzip -9 "$W/fa3_sass.txt"
log "sass: $(grep -c -E 'fa3_fwd_(fp8_)?kernel' "$W/fa3_sass_opcodes.txt") kernels"

# 3. ncu.
export NCU_EXTRA_METRICS="sm__inst_executed_pipe_tensor_op_gmma.sum
  sm__pipe_tensor_op_hmma_cycles_active.sum sm__inst_executed_pipe_tma.sum
  l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum smsp__inst_executed.sum
  sm__cycles_active.avg smsp__inst_executed_pipe_xu.sum smsp__inst_executed_pipe_fma.sum
  smsp__inst_executed_pipe_alu.sum smsp__inst_executed_pipe_lsu.sum"
# shellcheck source=../scripts/ncu_lib.sh
source "$H/ncu_lib.sh"
ncu_select_metrics "$W"
nl=$(( $(left) - 25 ))
if (( nl > 30 )); then
  ncu_run_group "$W" fa3 "$nl" "$BIN" --set "$SET" --profile --vdesc-swap "$SWAP" --p-layout "$PL"
  ncu_write_env "$W" "$(ncu --version | tail -1)" "13.0 (off the device)" \
    "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)" \
    "fa3_fwd --profile: cudaProfilerStart/Stop around one launch per case, in suite order"
else
  log "no time left for ncu"
fi

rm -f "$W"/*.ncu-rep "$W/ncu_query_metrics.txt"
for f in set1.jsonl set2.jsonl set3.jsonl tma.json device_query.json alt_n8192.jsonl; do cp "$W/$f" "$OUT/" 2>/dev/null; done
tar czf "$OUT/fa3_own.tar.gz" -C /tmp fa3_own
log "done"
cut -c1-230 "$W/set1.jsonl" | sed 's/"block_q".*"median_ms"/.. "median_ms"/' | head -80
