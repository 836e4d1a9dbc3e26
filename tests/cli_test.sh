#!/usr/bin/env bash
# The CLI as a user meets it: exit codes, messages that name the problem, the JSON contract,
# and no partial output. Run by ctest with IOSIM set to the binary.
set -u
IOSIM=${IOSIM:?set IOSIM to the iosim binary}
DATA=$(cd "$(dirname "$0")" && pwd)/data
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE SUBSTRING -- ARGS...: exit code and a substring of stdout+stderr.
expect() {
  local code=$1 want=$2
  shift 3
  local out rc
  out=$("$IOSIM" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then bad "iosim $* -> exit $rc, want $code; output: ${out:0:300}"; return; fi
  if [[ "$out" != *"$want"* ]]; then bad "iosim $* -> missing '$want' in: ${out:0:300}"; return; fi
  ok
}

expect 0 "h100-sxm5-80gb" -- profiles
expect 0 "a100-sxm4-40gb" -- profiles
expect 0 "flash2_fwd" -- run --profile h100-sxm5-80gb --algo flash2 --seq 1024 --head-dim 64
expect 0 "HBM (2-level)" -- demo --seq 1024 --batch 1 --heads 2
expect 2 "did you mean 'flash2'" -- run --algo flsh2 --seq 128
expect 2 "unknown profile" -- run --profile h10 --seq 128
expect 2 "did you mean 'h100-sxm5-80gb'" -- run --profile h100-sxm5-80g --seq 128
expect 2 "--bogus" -- run --seq 128 --bogus
expect 2 "--seq" -- run --head-dim 64
expect 2 "--seq 0 is out of range" -- run --seq 0
expect 2 "--seq 1000000000 is out of range" -- run --seq 1000000000
expect 2 "--head-dim 100000 is out of range" -- run --seq 128 --head-dim 100000
expect 2 "--dropout" -- run --seq 128 --dropout 1.5
expect 2 "does not fit in shared memory" -- run --seq 4096 --head-dim 128 --block-q 1024 --block-kv 1024
expect 2 "232448" -- run --seq 4096 --head-dim 128 --block-q 1024 --block-kv 1024
expect 2 "--block-q -5 must be positive" -- run --seq 128 --block-q -5
expect 2 "--l2 must be 'on' or 'off'" -- run --seq 128 --l2 maybe
expect 2 "--format must be" -- run --seq 128 --format yaml
expect 2 "unknown dtype" -- run --seq 128 --dtype fp8
expect 2 "--pass bwd is not modelled yet" -- run --seq 128 --pass bwd
expect 2 "--execute is for small problems" -- run --seq 16384 --batch 64 --heads 16 --execute
expect 2 "cannot read profile file" -- run --profile /nonexistent/x.yaml --seq 128
expect 2 "--causal needs --seq-kv >= --seq" -- run --seq 256 --seq-kv 128 --causal

# Every bad profile of the corpus is refused with exit 2 and no crash.
for f in "$DATA"/bad_profiles/*.yaml; do
  [ -e "$f" ] || continue
  out=$("$IOSIM" run --profile "$f" --seq 128 2>&1)
  rc=$?
  if [ "$rc" -eq 2 ] && [[ "$out" == *"$(basename "$f")"* ]]; then ok; else bad "bad profile $f -> exit $rc: ${out:0:200}"; fi
done

# The JSON contract's keys.
json=$("$IOSIM" run --profile h100-sxm5-80gb --algo flash2 --batch 4 --heads 16 --seq 4096 --head-dim 64 --format json)
for key in '"profile"' '"algorithm"' '"problem"' '"tiling"' '"kernels"' '"grid"' '"ctas_per_sm"' \
           '"smem_bytes_per_cta"' '"time_s"' '"counters"' '"hbm_read_bytes"' '"hbm_write_bytes"' \
           '"l2_read_bytes"' '"l2_write_bytes"' '"smem_read_bytes"' '"smem_write_bytes"' '"flops"' \
           '"tensor_flops"' '"bound"' '"bounds"' '"compulsory_bytes"' '"closed_form_bytes"' \
           '"lower_bound_bytes"' '"numerics"' '"executed"' '"max_abs_error"'; do
  if [[ "$json" == *"$key"* ]]; then ok; else bad "JSON lacks $key"; fi
done

# The issue's acceptance: --l2 off HBM bytes equal the closed form; --execute error <= 1e-5.
off=$("$IOSIM" run --profile h100-sxm5-80gb --algo flash2 --batch 4 --heads 16 --seq 4096 --head-dim 64 --l2 off --format csv | tail -1)
IFS=, read -r -a f <<<"$off"
# columns: 15 hbm_read, 16 hbm_write, 24 closed_form (0-based)
if [ $((f[15] + f[16])) -eq "${f[24]}" ]; then ok; else bad "--l2 off bytes ${f[15]}+${f[16]} != closed form ${f[24]}"; fi
exe=$("$IOSIM" run --profile h100-sxm5-80gb --algo flash2 --seq 1000 --head-dim 64 --block-q 128 --block-kv 64 --execute --format csv | tail -1)
IFS=, read -r -a f <<<"$exe"
if awk -v e="${f[26]}" 'BEGIN { exit !(e != "" && e <= 1e-5) }'; then ok; else bad "--execute error '${f[26]}' > 1e-5"; fi

# iosim kvcache: both policies on one stream, every format, the trace, and its bad input.
KV=(kvcache --layers 32 --kv-heads 8 --head-dim 128 --weights-bytes 16e9 --requests 300)
expect 0 "KV utilization" -- "${KV[@]}"
expect 0 "paged (16 tok/block)" -- "${KV[@]}"
expect 0 '"policy": "contiguous"' -- "${KV[@]}" --format json
expect 0 '"kv_utilization"' -- "${KV[@]}" --policy paged --format json
expect 0 "policy,block_tokens,capacity_bytes" -- "${KV[@]}" --format csv
expect 0 "policy,start_step,steps" -- "${KV[@]}" --format csv --series
expect 0 "over time" -- "${KV[@]}" --series --samples 3 --shared-prefix-tokens 100 --prompt-groups 4
expect 0 "5 requests from" -- kvcache --layers 32 --kv-heads 8 --head-dim 128 --trace "$DATA/kvcache/trace.csv"
expect 2 "bad_trace.csv' line 3: prompt_len 'three hundred'" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --trace "$DATA/kvcache/bad_trace.csv"
expect 2 "cannot read trace file" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --trace /nonexistent/t.csv
expect 2 "--trace gives the arrivals and lengths; drop --requests" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --trace "$DATA/kvcache/trace.csv" --requests 5
expect 2 "--kv-budget-bytes replaces" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --kv-budget-bytes 1e9 --weights-bytes 1e9
expect 2 "leaves nothing" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --weights-bytes 1e12
expect 2 "budget 1000 bytes holds no" -- kvcache --layers 32 --kv-heads 8 --head-dim 128 --kv-budget-bytes 1000
expect 2 "did you mean 'paged'" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --policy pagd
expect 2 "--prompt-len 'unifrm:1,5'" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --prompt-len unifrm:1,5
expect 2 "--arrivals 'poisson'" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --arrivals poisson
expect 2 "--layers" -- kvcache --kv-heads 2 --head-dim 64
expect 2 "--samples 0 is out of range" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --samples 0
expect 2 "valid KV-cache dtypes" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --dtype int4
expect 2 "--format must be" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --format yaml
a=$("$IOSIM" "${KV[@]}" --arrivals poisson:0.5 --seed 7 --format json)
b=$("$IOSIM" "${KV[@]}" --arrivals poisson:0.5 --seed 7 --format json)
if [ "$a" == "$b" ]; then ok; else bad "kvcache is not deterministic for one --seed"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
