#!/usr/bin/env bash
# The CLI as a user meets it: exit codes, messages that name the problem, the JSON contract,
# and no partial output. Run by ctest with IOSIM set to the binary, as several entries of sections
# (cli_*, CMakeLists.txt) so that `ctest -j` runs them side by side.
source "$(dirname "$0")/cli_harness.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Profiles, run's flags and what they refuse.
section_run() {
  # An unbounded budget runs (it overflowed and stopped at once, exit 3).
  expect 0 "HBM" -- run --seq 128 --head-dim 64 --max-seconds inf
  expect 0 "h100-sxm5-80gb" -- profiles
  # --version, profiles --show/--template, and --set what-ifs (tests/profile_test.cpp has the rest).
  expect 0 "iosim 0.1.0 (git " -- --version
  expect 0 "boost_clock_mhz: {value: 1980" -- profiles --show h100-sxm5-80gb
  expect 2 "did you mean 'h200-sxm-141gb'" -- profiles --show h200
  expect 0 "kernel_overhead_us: {value: 0, source: \"\"}" -- profiles --template
  expect 0 "h100-sxm5-80gb[l2.size_bytes=20000000]" -- run --seq 1024 --set l2.size_bytes=20e6
  expect 2 "did you mean 'l2.size_bytes'" -- run --seq 1024 --set l2.sise_bytes=20e6
  expect 2 "did you mean 'power.limit_w'" -- run --seq 1024 --set power.limit_x=300
  expect 2 "must be KEY=VALUE" -- run --seq 1024 --set l2.size_bytes
  expect 2 "the profile has no clusters section" -- run --profile a100-sxm4-40gb --seq 128 --set clusters.sms_cluster_2=100
  # hwprofiles/README.md's key tables are `profiles --keys SECTION --format md`, the schema's rows.
  expect 0 "| \`count\` | integer | SMs | SMs on the chip |" -- profiles --keys sm --format md
  expect 0 "power.limit_w" -- profiles --keys all
  expect 2 "did you mean 'sm'" -- profiles --keys smm
  expect 2 "--format: only with --keys" -- profiles --format md
  expect 0 '"$id": "https://iosim.invalid/schemas/profile.schema.json"' -- profiles --schema
  if (cd "$REPO" && bash scripts/readme_tables.sh --check "$IOSIM" hwprofiles/README.md); then ok; else
    bad "hwprofiles/README.md's key tables differ from the schema's rows: run scripts/readme_tables.sh --write build/iosim hwprofiles/README.md"
  fi
  # models/README.md's key table is `models --keys --format md`, the model schema's rows.
  expect 0 "Meta Llama 3 8B" -- models
  expect 0 "| \`kv_heads\` | integer | key/value heads" -- models --keys --format md
  expect 0 "num_hidden_layers" -- models --keys
  expect 2 "--format: only with --keys" -- models --format md
  expect 2 "--keys and --schema: give one of them" -- models --keys --schema
  expect 0 '"$id": "https://iosim.invalid/schemas/model.schema.json"' -- models --schema
  if (cd "$REPO" && bash scripts/readme_tables.sh --check "$IOSIM" models/README.md); then ok; else
    bad "models/README.md's key table differs from the schema's rows: run scripts/readme_tables.sh --write build/iosim models/README.md"
  fi
  expect 2 "does not divide l2.size_bytes" -- run --seq 1024 --set l2.size_bytes=1000001
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
  expect 2 "unknown dtype" -- run --seq 128 --dtype fp4
  expect 2 "applies to --algo flash3" -- run --seq 128 --dtype fp8
  expect 2 "no FP8 tensor cores" -- run --profile a100-sxm4-80gb --algo flash3 --seq 128 --dtype fp8
  expect 2 "unknown pass 'back'" -- run --seq 128 --pass back
  expect 2 "--execute is for small problems" -- run --seq 16384 --batch 64 --heads 16 --execute
  expect 2 "cannot read profile file" -- run --profile /nonexistent/x.yaml --seq 128
  expect 2 "--causal needs --seq-kv >= --seq" -- run --seq 256 --seq-kv 128 --causal
}

# Backward passes and block-sparse: the kernels run, gradients check, patterns that cannot be
# read or parsed name the file and line.
section_backward() {
  PAT="$DATA/patterns"
  expect 0 "convert_dq" -- run --algo flash2 --pass fwdbwd --seq 512 --head-dim 64
  expect 0 "softmax_bwd" -- run --algo standard --pass bwd --seq 512 --head-dim 64 --mask --dropout 0.1
  expect 0 "flash1_bwd" -- run --algo flash1 --pass bwd --seq 512 --head-dim 64 --causal
  expect 0 "dQ, dK, dV = " -- run --algo flash2 --pass fwdbwd --seq 200 --head-dim 32 --causal --execute
  expect 0 '"density": 0.4375' -- run --algo block-sparse --pattern "file:$PAT/diag4.txt" --seq 512 --block-q 128 --block-kv 128 --format json
  expect 0 "density s = 0.25" -- run --algo block-sparse --pattern strided:4 --seq 1024 --block-q 64 --block-kv 64 --pass fwdbwd
  expect 2 "--pattern 'band:2'" -- run --algo block-sparse --pattern band:2 --seq 512
  expect 2 "cannot read pattern file '/nonexistent/p.txt'" -- run --algo block-sparse --pattern file:/nonexistent/p.txt --seq 512
  expect 2 "bad_char.txt' line 3: expected 0 or 1" -- run --algo block-sparse --pattern "file:$PAT/bad_char.txt" --seq 512
  expect 2 "the grid is 4 x 4 blocks, the problem has 8 x 8" -- run --algo block-sparse --pattern "file:$PAT/diag4.txt" --seq 512 --block-q 64 --block-kv 64
  expect 2 "--pattern applies to --algo block-sparse" -- run --algo flash2 --pattern local:2 --seq 512
  bs=$("$IOSIM" run --algo block-sparse --pattern local:2 --pass fwdbwd --seq 300 --seq-kv 400 --head-dim 32 --block-q 64 --block-kv 32 --causal --execute --format csv | tail -1)
  IFS=, read -r -a f <<<"$bs"
  if awk -v e="${f[26]}" 'BEGIN { exit !(e != "" && e <= 1e-4) }'; then ok; else bad "block-sparse --execute error '${f[26]}' > 1e-4"; fi
}

# Bad profiles, the JSON contract and the issue's acceptance.
section_contract() {
  # A value past what a flag's field holds names the flag's own range (it named int64's, or CLI11
  # said "Could not convert" for an int field).
  local KV=(kvcache --layers 2 --kv-heads 2 --head-dim 64) big=99999999999999999999
  expect 2 "--seq: $big is out of range: it must be in [1, 16777216]" -- run --seq "$big"
  expect 2 "--threads: 9999999999 is out of range: it must be in [0, 1024]" -- run --seq 128 --threads 9999999999
  expect 2 "--requests: $big is out of range: it must be in [1, 20000000]" -- "${KV[@]}" --requests "$big"
  expect 2 "--max-running: $big is out of range: it must be in [0, 9223372036854775807]" -- "${KV[@]}" --max-running "$big"
  expect 2 "--gemm-cluster-m: 99999999999 is out of range: it must be in [0, 8]" -- layer --model llama-3-8b --seq 128 --gemm-cluster-m 99999999999
  expect 2 "--jobs: 9999999999 is out of range: it must be in [0, " -- sweep --seq 128 --jobs 9999999999
  # A switch takes a boolean word or no value: CLI11 read any integer, --causal=2 on and
  # --causal=-1 off without a word; and a flag given twice is named as such (CLI11: "--seq: At
  # Most 1 required but received 2"; issue #50's sixth probe).
  for v in 2 -1 "$big" maybe; do
    expect 2 "--causal: '$v' is not a switch's value: give the switch alone (on), or true or false" -- run --seq 128 "--causal=$v"
  done
  expect 2 "--execute: '3' is not a switch's value" -- sweep --seq 128 --execute=3
  expect 2 "--series: '-1' is not a switch's value" -- "${KV[@]}" --series=-1
  expect 0 "" -- run --seq 128 --causal=false
  expect 2 "--seq is given 2 times; give it once" -- run --seq 128 --seq 256
  expect 2 "--profile is given 2 times; give it once" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --profile a --profile b
  # ... and that range is the command's own: one past its end is refused by the command's check
  # (api/: problem_flag_range(), layer_flag_range(), kvcache_flag_range()).
  local hi
  for case in "run --seq 128|--batch 1048576" "run --seq 128|--heads 65536" "run|--seq 16777216" \
    "run --seq 128|--seq-kv 16777216" "run --seq 128|--head-dim 1024" "run --seq 128|--block-q 1048576" \
    "run --seq 128|--block-kv 1048576" "run --seq 128|--threads 1024" \
    "run --seq 1 --seq-kv 4096 --algo paged|--page-tokens 1048576" \
    "run --seq 256 --algo flash3 --pass fwdbwd|--backward-block-q 1048576" \
    "run --seq 256 --algo flash3 --pass fwdbwd|--backward-block-kv 1048576" \
    "kvcache --kv-heads 2 --head-dim 64|--layers 1000" "kvcache --layers 2 --head-dim 64|--kv-heads 1024" \
    "kvcache --layers 2 --kv-heads 2|--head-dim 4096" \
    "${KV[*]}|--block-tokens 4096" "${KV[*]}|--requests 20000000" "${KV[*]}|--max-prompt-tokens 10000000" \
    "${KV[*]}|--max-output-tokens 10000000" "${KV[*]}|--samples 64" "${KV[*]}|--prompt-groups 20000000" \
    "${KV[*]}|--series-points 100000" "layer --model llama-3-8b --seq 128|--batch 1048576" \
    "layer --model llama-3-8b --seq 128|--gemm-bm 256" "layer --model llama-3-8b --seq 128|--gemm-bn 256" \
    "layer --model llama-3-8b --seq 128|--gemm-cluster-m 8" "layer --model llama-3-8b --seq 128|--gemm-cluster-n 8"; do
    local args=${case%|*} flag=${case#*|}
    hi=${flag#* }
    flag=${flag% *}
    # (The block sizes' message named no flag, "block sizes 1048577 x 0 are absurd", till
    # issue #50's probe.)
    local want="$flag $((hi + 1))"
    # shellcheck disable=SC2086
    expect 2 "$want" -- $args "$flag" $((hi + 1))
    # shellcheck disable=SC2086
    expect 2 "$hi" -- $args "$flag" $((hi + 1))
  done
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
}

# iosim kvcache: both policies on one stream, every format, the trace, and its bad input.
section_kvcache() {
  # A leading zero is decimal, as in every flag (CLI11 read it as octal: 010 layers were 8).
  if "$IOSIM" kvcache --layers 010 --kv-heads 8 --head-dim 128 --requests 10 --format json | grep -q '"layers": 10'; then ok; else bad "kvcache --layers 010 is not 10 layers"; fi
  KV=(kvcache --layers 32 --kv-heads 8 --head-dim 128 --weights-bytes 16e9 --requests 300)
  expect 0 "KV utilization" -- "${KV[@]}"
  expect 0 "paged (16 tok/block)" -- "${KV[@]}"
  expect 0 '"policy": "contiguous"' -- "${KV[@]}" --format json
  expect 0 '"kv_utilization"' -- "${KV[@]}" --policy paged --format json
  expect 0 "policy,block_tokens,capacity_bytes" -- "${KV[@]}" --format csv
  expect 0 "policy,start_step,steps" -- "${KV[@]}" --format csv --series
  expect 0 "over time" -- "${KV[@]}" --series --samples 3 --shared-prefix-tokens 100 --prompt-groups 4
  expect 0 "5 requests from" -- kvcache --layers 32 --kv-heads 8 --head-dim 128 --trace "$DATA/kvcache/trace.csv"
  # --model: the shape from a built-in model or a model file; a flag beside it replaces the model's.
  expect 0 "1 latent row x 576 head dim (V its first 512) x bf16 = 70272 B" -- kvcache --model deepseek-v3 --dtype bf16 --requests 20
  expect 0 "2 x 16 layers x 8 KV heads x 128 head dim x fp16 = 65536 B" -- kvcache --model "$REPO/models/llama-3-8b.yaml" --layers 16 --requests 20
  expect 0 "Note: mistral-7b's sliding window would bound" -- kvcache --model mistral-7b --requests 20
  expect 0 '"name": "qwen2-7b"' -- kvcache --model qwen2-7b --requests 20 --format json
  expect 2 "unknown model 'llama-9'; built-in models: deepseek-v3" -- kvcache --model llama-9
  expect 2 "--head-dim is required (or --model NAME)" -- kvcache --layers 2 --kv-heads 2
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
}

# Decoding: grouped-query attention, flash-decoding (split + reduce kernels), paged attention.
section_decode() {
  DEC=(run --profile h100-sxm5-80gb --batch 1 --heads 8 --seq 1 --seq-kv 4096 --head-dim 128)
  expect 0 "fd_reduce" -- "${DEC[@]}" --algo flash-decoding
  expect 0 '"name": "fd_split"' -- "${DEC[@]}" --algo flash-decoding --splits 4 --format json
  expect 0 '"splits": 4' -- "${DEC[@]}" --algo flash-decoding --splits 4 --format json
  expect 0 "idle SMs" -- "${DEC[@]}" --algo flash2
  expect 0 "H_kv=2" -- "${DEC[@]}" --algo flash2 --kv-heads 2
  expect 0 "paged_split" -- "${DEC[@]}" --algo paged --kv-heads 2 --page-tokens 32
  expect 0 "block table random:7" -- "${DEC[@]}" --algo paged --seed 7
  expect 0 "max |O - O_ref|" -- run --algo paged --heads 4 --kv-heads 2 --seq 1 --seq-kv 300 --head-dim 32 --page-tokens 7 --block-kv 64 --splits 3 --execute
  expect 0 "block table $DATA/block_tables/two_by_three.txt" -- run --algo paged --batch 2 --heads 2 --seq 1 --seq-kv 40 --head-dim 32 --block-table "$DATA/block_tables/two_by_three.txt"
  expect 2 "--kv-heads 3 must divide --heads 8" -- "${DEC[@]}" --kv-heads 3
  expect 2 "--kv-heads 0 must be at least 1" -- "${DEC[@]}" --kv-heads 0
  expect 2 "--splits -1 must be 0 (the heuristic) or more" -- "${DEC[@]}" --algo flash-decoding --splits -1
  # --splits 0 is the heuristic, as --block-kv 0 is the default tiles: the same run as without it,
  # and no flag at all for schedules without splits (so a sweep can put flash2 beside --splits 0,2,8).
  for algo in flash-decoding flash2; do
    if [ "$("$IOSIM" "${DEC[@]}" --algo $algo --splits 0 --format json | grep -v simulation_wall_s)" = \
         "$("$IOSIM" "${DEC[@]}" --algo $algo --format json | grep -v simulation_wall_s)" ]; then ok; else bad "--splits 0 is not the default for $algo"; fi
  done
  expect 2 "--splits 99 exceeds the 32 K/V blocks" -- "${DEC[@]}" --algo flash-decoding --splits 99
  expect 2 "--splits applies to --algo flash-decoding and paged" -- "${DEC[@]}" --algo flash2 --splits 2
  expect 2 "--page-tokens 0 must be at least 1" -- "${DEC[@]}" --algo paged --page-tokens 0
  expect 2 "--page-tokens and --block-table apply to --algo paged" -- "${DEC[@]}" --algo flash-decoding --page-tokens 16
  expect 2 "cannot read block-table file" -- "${DEC[@]}" --algo paged --block-table /nonexistent/table.txt
  expect 2 "line 2: page 1 is listed twice" -- "${DEC[@]}" --algo paged --block-table "$DATA/block_tables/duplicate.txt"
  expect 2 "the problem needs 1 x 256" -- "${DEC[@]}" --algo paged --block-table "$DATA/block_tables/two_by_three.txt"
}

# iosim validate: an excerpt of the committed measurements, every format, and bad input.
section_validate() {
  VAL=$REPO/cuda_validate/measurements
  # Three cases of the committed H100 decode file, one per schedule (block-sparse, flash-decoding,
  # paged): what is tested here is the command (formats, flags, errors); the accuracy on whole
  # files is tests/validation_test.cpp's (each validate of all 43 cases took ~44 CPU s under ASan).
  H100_DEC=$tmp/measurements_decode_3.json
  python3 - "$VAL/h100-sxm5-80gb/measurements_decode_2026-11-22.json" "$H100_DEC" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
keep = ("block-sparse_b4_h16_n2048_nkv2048_d64_bq128_bkv64_local2",
        "flash-decoding_b4_h32_n1_nkv1024_d128_bq16_bkv64_s2",
        "paged_b4_h32_n1_nkv4096_d128_bq16_bkv64_s1_page16")
doc["cases"] = [c for c in doc["cases"] if c["id"] in keep]
assert len(doc["cases"]) == len(keep)
json.dump(doc, open(sys.argv[2], "w"))
PY
  # --json writes the JSON report beside the table (one run for both).
  MD_JSON=(validate "$H100_DEC" --format md --json "$tmp/dec.json")
  expect_same 0 "| all | 3 |" -- "${MD_JSON[@]}"
  expect_same 0 "DRAM (read + write) median / worst" -- "${MD_JSON[@]}"
  expect_same 0 "dram_predicted,dram_measured,dram_rel_error,dram_read_predicted" -- validate "$H100_DEC" --format csv
  expect_same 0 '"dram_write"' -- validate "$H100_DEC" --format json
  # Blind (the flags alone, free-running clock, CUDA-event time) beside as-run, in every format.
  expect_same 0 "**blind time** median / worst" -- "${MD_JSON[@]}"
  expect_same 0 "blind_sm_clock_mhz,blind_dram_predicted" -- validate "$H100_DEC" --format csv
  expect_same 0 '"blind": {' -- validate "$H100_DEC" --format json
  expect_same 0 "blind time med/worst" -- validate "$H100_DEC"
  expect_same 0 "paged_b4_h32_n1_nkv4096_d128_bq16_bkv64_s1_page16" -- validate "$H100_DEC"
  if diff -q "$tmp/dec.json" <(printf '%s\n' "${expect_outputs["validate $H100_DEC --format json"]}") >/dev/null; then ok; else bad "validate --json wrote other than --format json prints"; fi
  # --json refused before anything is predicted; nothing written when the run fails.
  expect 2 "--json '$tmp/nowhere/v.json': folder '$tmp/nowhere' does not exist" -- validate "$H100_DEC" --json "$tmp/nowhere/v.json"
  expect 2 "writing it would destroy the input" -- validate "$H100_DEC" --json "$H100_DEC"
  expect 2 "no such file or folder" -- validate "$tmp/missing.json" --json "$tmp/failed.json"
  if [ ! -e "$tmp/failed.json" ]; then ok; else bad "validate --json left a file after a failed run"; fi
  expect 2 "no such file or folder" -- validate "$tmp/missing.json"
  echo '{"format": "something-else", "version": 1}' >"$tmp/measurements_other.json"
  expect 2 "not an iosim-measurements file" -- validate "$tmp/measurements_other.json"
  echo '{"format": "iosim-measurements", "version": 7, "cases": []}' >"$tmp/measurements_v7.json"
  expect 2 "version 7 is not supported" -- validate "$tmp/measurements_v7.json"
  echo '{"format": "iosim-measurements", ' >"$tmp/measurements_cut.json"
  expect 2 "measurements_cut.json" -- validate "$tmp/measurements_cut.json"
  mkdir -p "$tmp/empty_dir"
  expect 2 "no measurements*.json" -- validate "$tmp/empty_dir"
  expect 2 "format" -- validate "$H100_DEC" --format xml
}

# iosim explain: tiny problems narrated step by step; anything larger or malformed exits 2.
section_explain() {
  EX=(explain --seq 32 --block-q 16 --block-kv 16)
  expect 0 "[FlashAttention-2, Algorithm 1, line 8]" -- "${EX[@]}"
  expect 0 "= the closed form for these blocks" -- "${EX[@]}" --algo flash1
  expect 0 "max |O - exact| over this tile" -- "${EX[@]}" --algo standard --execute
  expect 0 "[FlashAttention-2, Algorithm 2, line 11]" -- "${EX[@]}" --pass bwd
  expect 0 "step 5/" -- "${EX[@]}" --step 5
  # A sliding window traced and executed: its edge blocks masked, its bytes the closed form.
  expect 0 "= the closed form for these blocks" -- explain --causal --window 24 --seq 64 --head-dim 16 --block-q 32 --block-kv 16 --execute
  expect 0 "Theorem 2" -- explain --compare standard,flash2 --seq 64
  expect 2 "--seq 128 is larger than the 64 allowed" -- explain --seq 128
  expect 2 "--head-dim 64 is larger than the 16 allowed" -- explain --seq 32 --head-dim 64
  expect 2 "--batch x --heads 8 is larger than the 4 allowed" -- explain --seq 32 --batch 4 --heads 2
  expect 2 "--step 0: steps are numbered from 1" -- "${EX[@]}" --step 0
  expect 2 "--step 999: the trace has steps 1 to 30" -- "${EX[@]}" --step 999
  expect 2 "--focus 'cta:x': expected cta:I" -- "${EX[@]}" --focus cta:x
  expect 2 "--focus cta:9: the kernels have CTAs 0 to 1" -- "${EX[@]}" --focus cta:9
  expect 2 "--compare 'flash2': expected two or more algorithms" -- "${EX[@]}" --compare flash2
  expect 0 "flash1 moves" -- "${EX[@]}" --compare standard,flash1,flash2
  expect 2 "did you mean 'flash1'" -- "${EX[@]}" --compare flash2,flsh1
  expect 2 "--step and --until" -- "${EX[@]}" --step 2 --until 3
  expect 2 "does not exist" -- "${EX[@]}" --html /nonexistent/x.html
  out=$("$IOSIM" "${EX[@]}" --focus cta:1 | grep -c '^step .* CTA 0 ')
  if [ "$out" = 0 ]; then ok; else bad "explain --focus cta:1 shows CTA 0's steps"; fi
  if "$IOSIM" "${EX[@]}" | grep -q $'\033'; then bad "explain colors piped output"; else ok; fi
  # The summary's DRAM total counts the lines still dirty in the L2 (they reach DRAM later): with
  # them it is at least the compulsory bytes; and the lower bound shows both of its terms.
  summary=$("$IOSIM" "${EX[@]}" | tail -4)
  compulsory=$(sed -n 's/.*compulsory (each input read once.*: \([0-9,]*\) B/\1/p' <<<"$summary" | tr -d ,)
  dram=$(sed -n 's/.*DRAM \([0-9,]*\) B incl. dirty.*/\1/p' <<<"$summary" | tr -d ,)
  if [ -n "$dram" ] && [ -n "$compulsory" ] && [ "$dram" -ge "$compulsory" ]; then ok; else bad "explain's DRAM total ($dram) is below compulsory ($compulsory)"; fi
  if grep -q "lower bound (two-level): [0-9,]* B = max(compulsory" <<<"$summary"; then ok; else bad "explain's lower bound hides its compulsory term"; fi
  "$IOSIM" "${EX[@]}" --html "$tmp/explain.html" 2>/dev/null
  if [ -s "$tmp/explain.html" ] && grep -q 'id="trace"' "$tmp/explain.html"; then ok; else bad "explain --html wrote no page"; fi
  "$IOSIM" "${EX[@]}" --compare standard,flash1,flash2 --html "$tmp/compare.html" 2>/dev/null
  if [ "$(grep -o 'class="bar"' "$tmp/compare.html" 2>/dev/null | wc -l)" = 9 ]; then ok; else bad "explain --compare --html wrote no page of 9 bars"; fi
}

# Kernel descriptions: the presets list and print, a user's file runs, sweeps and explains; a
# preset's printed description runs as its --algo does (tests/kernel_description_test.cpp holds
# that over random shapes; here once through the CLI and a file).
section_kernels() {
  # docs/kernels.md's key table is `kernels --keys --format md`, the kernel schema's rows (ctest
  # docs holds the page to it, ctest schema the schema to `kernels --schema`).
  expect 0 "| \`tiles.stages\` | 1 to 64 |" -- kernels --keys --format md
  expect 0 "launch.smem_bytes_per_cta" -- kernels --keys
  expect 2 "--format: only with --keys" -- kernels --format md
  expect 2 "--show, --keys and --schema: give one of them" -- kernels --show flash2 --schema
  expect 0 '"$id": "https://iosim.invalid/schemas/kernel.schema.json"' -- kernels --schema
  expect 0 "flash3          query_stationary  kv_stationary_reduce_dq  wgmma_rs" -- kernels
  expect 0 "warp_roles: producer_consumer" -- kernels --show flash3
  "$IOSIM" kernels --show flash2 >"$tmp/flash2.yaml"
  a=$("$IOSIM" run --algo flash2 --seq 1024 --head-dim 64 --pass fwdbwd --format json | grep -v '"simulation_wall_s"\|"algorithm"')
  b=$("$IOSIM" run --kernel "$tmp/flash2.yaml" --seq 1024 --head-dim 64 --pass fwdbwd --format json | grep -v '"simulation_wall_s"\|"algorithm"' | python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("kernel_description"); print(json.dumps(d, indent=2))')
  a=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]), indent=2))' "$a")
  if [ "$a" = "$b" ]; then ok; else bad "kernels --show flash2 run with --kernel differs from --algo flash2"; fi
  expect 0 "block_q=128 block_kv=64 threads=128 stages=3" -- run --kernel "$REPO/docs/kernels/wg1_tma_fwd.yaml" --seq 1024 --head-dim 64 --pass fwd
  expect 0 "tp_bwd" -- run --kernel '{"name": "tp", "dataflow": {"backward": "two_pass"}}' --pass bwd --seq 512 --head-dim 64
  expect 0 "max |O - exact|" -- explain --kernel '{"name": "tp", "dataflow": {"forward": "query_stationary", "backward": "two_pass"}}' --pass fwdbwd --seq 32 --head-dim 16 --block-q 16 --block-kv 16 --execute
  "$IOSIM" sweep --kernel "$REPO/docs/kernels/wg1_tma_fwd.yaml,flash2" --seq 1024,2048 --head-dim 64 --stages 2,3 --out "$tmp/k.csv" 2>/dev/null
  if [ "$(grep -c ',wg1_tma_fwd,' "$tmp/k.csv")" = 4 ] && [ "$(grep -c ',flash2,' "$tmp/k.csv")" = 4 ]; then ok; else bad "sweep --kernel FILE,PRESET: $(cut -c1-80 "$tmp/k.csv" 2>/dev/null | head -3)"; fi
  expect 0 "wg1_tma_fwd b4 h16 n4096 nkv4096 d128" -- validate --ncu "$REPO/tests/data/kernels/ncu_wg1_h100.csv" --kernel "$REPO/tests/data/kernels/wg1_tma_case.yaml" --time-us 1616.6 --batch 4 --heads 16 --seq 4096 --head-dim 128
  # A built-in folder (IOSIM_PROFILE_DIR, IOSIM_MODEL_DIR) that cannot be listed is named with the
  # cause, not in the library's words ("filesystem error: directory iterator cannot open
  # directory"; issue #50's fifth probe). Root reads any folder: as root, run as nobody.
  local open_dir as_user=()
  open_dir=$(mktemp -d)
  chmod 755 "$open_dir"
  mkdir "$open_dir/locked"
  chmod 000 "$open_dir/locked"
  if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
  for args in "IOSIM_PROFILE_DIR profiles" "IOSIM_MODEL_DIR models"; do
    # shellcheck disable=SC2086
    set -- $args
    out=$(env "$1=$open_dir/locked" "${as_user[@]}" "$IOSIM" "$2" 2>&1)
    rc=$?
    if [ "$rc" = 2 ] && [[ "$out" == "iosim: cannot list built-in "*"Permission denied"* ]] && [[ "$out" != *"filesystem error"* ]]; then ok; else
      bad "$1 a folder that cannot be listed: exit $rc: $out"
    fi
  done
  chmod 755 "$open_dir/locked"
  rm -rf "$open_dir"
}

# Outputs (issue 30): iosim writes only regular files, refusing a FIFO before it runs (a temporary
# file renamed over it would replace it; a device node likewise, not tried here: as root a
# regression would replace /dev/null); a symbolic link stays a link and its file gets the output;
# a .partial beside --out that is not iosim's sweep journal is left alone; output that does not
# reach stdout is an error, not a success.
section_outputs() {
  local small=$DATA/measurements_small.json
  mkfifo "$tmp/fifo.json"
  expect 2 "--out '$tmp/fifo.json' is a FIFO: iosim writes only regular files" -- sweep --seq 128 --head-dim 64 --out "$tmp/fifo.json"
  expect 2 "--json '$tmp/fifo.json' is a FIFO" -- validate "$small" --json "$tmp/fifo.json"
  expect 2 "--html '$tmp/fifo.json' is a FIFO" -- explain --seq 32 --block-q 16 --block-kv 16 --html "$tmp/fifo.json"
  if [ -p "$tmp/fifo.json" ]; then ok; else bad "an output replaced a FIFO"; fi
  ln -s "$tmp/real.json" "$tmp/link.json"
  "$IOSIM" sweep --seq 128 --head-dim 64 --out "$tmp/link.json" 2>/dev/null
  if [ -L "$tmp/link.json" ] && grep -q '"point"' "$tmp/real.json"; then ok; else bad "sweep --out over a link replaced the link"; fi
  echo "my notes" >"$tmp/s.json.partial"
  expect 2 "'$tmp/s.json.partial' is there and is not a sweep journal of iosim's" -- sweep --seq 128 --head-dim 64 --out "$tmp/s.json"
  if [ "$(cat "$tmp/s.json.partial")" = "my notes" ] && [ ! -e "$tmp/s.json" ]; then ok; else bad "sweep overwrote a .partial it did not write"; fi
  # A file or a link already at the temporary file's name (OUT.tmp-PID: `exec` keeps the shell's
  # pid) is left as it is: the output went through such a link into the user's file, and such a
  # file was renamed over OUT (issue #50's fifth probe).
  echo "my notes" >"$tmp/notes.txt"
  for args in "run --seq 128 --html" "sweep --seq 128 --out" "validate $small --json"; do
    rm -f "$tmp/t.json" "$tmp"/t.json.tmp-* "$tmp/t2.json" "$tmp"/t2.json.tmp-*
    # shellcheck disable=SC2016,SC2086
    (cd "$tmp" && bash -c 'ln -s notes.txt t.json.tmp-$$ && exec "$0" "$@" t.json' "$IOSIM" $args) >/dev/null 2>&1
    # shellcheck disable=SC2016,SC2086
    (cd "$tmp" && bash -c 'echo mine >t2.json.tmp-$$ && exec "$0" "$@" t2.json' "$IOSIM" $args) >/dev/null 2>&1
    if [ "$(cat "$tmp/notes.txt")" = "my notes" ] && [ "$(cat "$tmp"/t2.json.tmp-*)" = "mine" ] &&
       [ -s "$tmp/t.json" ] && [ ! -L "$tmp/t.json" ]; then ok; else
      bad "iosim $args over a file or link at the temporary file's name changed it"
    fi
  done
  # A read-only file of the user's is not replaced (the rename needs only the folder's
  # permission; issue #50's fifth probe). Root may write any file, as the shell's `>`: as root,
  # run as nobody.
  local ro_dir as_user=()
  ro_dir=$(mktemp -d)
  chmod 777 "$ro_dir"
  if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
  for args in "run --seq 128 --html" "sweep --seq 128 --out" "validate $small --json"; do
    echo "read-only notes" >"$ro_dir/ro.json"
    chmod 444 "$ro_dir/ro.json"
    # shellcheck disable=SC2086
    out=$("${as_user[@]}" "$IOSIM" $args "$ro_dir/ro.json" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" = 2 ] && [[ "$out" == *"ro.json' is read-only"* ]] && [ "$(cat "$ro_dir/ro.json")" = "read-only notes" ]; then ok; else
      bad "iosim $args over a read-only file: exit $rc: $out"
    fi
    rm -f "$ro_dir/ro.json"
  done
  rm -rf "$ro_dir"
  # An output that is one of the command's own inputs is refused and the input kept (sweep -o
  # over its profile, explain --html over its pattern replaced them, exit 0).
  cp "$REPO/hwprofiles/h100-sxm5-80gb.yaml" "$tmp/prof.json"
  cp "$tmp/prof.json" "$tmp/prof.orig"
  expect 2 "--out '$tmp/prof.json' is the profile file '$tmp/prof.json' this command read" -- sweep --seq 128 --profile "$tmp/prof.json" --out "$tmp/prof.json"
  if cmp -s "$tmp/prof.json" "$tmp/prof.orig" && [ ! -e "$tmp/prof.json.partial" ]; then ok; else bad "sweep --out replaced its own profile"; fi
  printf '1 1\n1 1\n' >"$tmp/pat.html"
  expect 2 "output '$tmp/pat.html' is the pattern file '$tmp/pat.html' this command read" -- explain --seq 16 --algo block-sparse --block-q 8 --block-kv 8 --pattern "file:$tmp/pat.html" --html "$tmp/pat.html"
  if [ "$(cat "$tmp/pat.html")" = "$(printf '1 1\n1 1')" ]; then ok; else bad "explain --html replaced its own pattern"; fi
  # An empty file name is refused, not taken as "no file" (stdout, or nothing written).
  expect 2 "--out: an empty file name; give a path" -- sweep --seq 128 --head-dim 64 --out ""
  expect 2 "--json: an empty file name; give a path" -- validate "$small" --json ""
  expect 2 "--html: an empty file name; give a path" -- explain --seq 32 --block-q 16 --block-kv 16 --html ""
  # CSV text fields are quoted where they hold a comma or a quote (RFC 4180): every row has the
  # header's columns (a comma in a case id or a kernel's name shifted the rest of its row).
  python3 - "$small" "$tmp/comma.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"][0]["id"] = 'flash2, "quoted" case'
json.dump(d, open(sys.argv[2], "w"))
PY
  local csv_columns='import csv, sys; rows = list(csv.reader(sys.stdin)); sys.exit(0 if len({len(r) for r in rows}) == 1 and len(rows) > 1 else 1)'
  if "$IOSIM" validate "$tmp/comma.json" --format csv | python3 -c "$csv_columns"; then ok; else bad "validate --format csv: a comma in a case id shifted its row"; fi
  if "$IOSIM" run --kernel '{"name": "my,kernel", "dataflow": {"forward": "query_stationary"}}' --seq 128 --format csv | python3 -c "$csv_columns"; then ok; else bad "run --format csv: a comma in a kernel's name shifted its row"; fi
  # A file name that is not UTF-8 is written with U+FFFD in the JSON, not an internal error.
  local latin1
  latin1=$(printf '%s/h\xe9.yaml' "$tmp")
  cp "$REPO/hwprofiles/h100-sxm5-80gb.yaml" "$latin1"
  if "$IOSIM" sweep --profile "$latin1" --seq 128 --head-dim 64 --out "$tmp/latin1.json" 2>"$tmp/latin1.err" &&
     python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/latin1.json"; then ok; else
    bad "sweep with a non-UTF-8 profile path: $(cat "$tmp/latin1.err")"
  fi
  # Started with stdout closed, the sweep's journal took descriptor 1 and the table went into it
  # ("the sweep journal '' was changed while the sweep ran").
  (cd "$tmp" && "$IOSIM" sweep --seq 128,256 >&- 2>"$tmp/closed.err")
  rc=$?
  if [ "$rc" = 2 ] && grep -q "stdout is closed" "$tmp/closed.err"; then ok; else bad "sweep with stdout closed: exit $rc: $(cat "$tmp/closed.err")"; fi
  # Two outputs that are one file are refused before any work, relative names too ("o.html" and
  # "./o.html": the page was written, then the SVG over it).
  (cd "$tmp" && exec "$IOSIM" run --seq 128 --html ./same.html --svg same.html) >/dev/null 2>"$tmp/same.err"
  rc=$?
  if [ "$rc" = 2 ] && grep -q "are the same file" "$tmp/same.err" && [ ! -e "$tmp/same.html" ]; then ok; else
    bad "run --html ./same.html --svg same.html: exit $rc: $(head -c 300 "$tmp/same.err")"
  fi
  # Out of memory while reading a large file: exit 2 with the message and no file, or the report
  # (report under `ulimit -v 40000` aborted: nlohmann/json's destructor allocates, and a second
  # std::bad_alloc there ended in std::terminate; where the first one struck decided which).
  # Not under AddressSanitizer, which reserves more address space than these caps.
  if [ -z "${IOSIM_NO_ULIMIT:-}" ]; then
    "$IOSIM" sweep --seq 128,256,512,1024 --block-kv 32,64,128 --out "$tmp/oom_rows.json" 2>/dev/null
    python3 - "$tmp/oom_rows.json" "$tmp/oom.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["rows"] = d["rows"] * 100  # about 4 MB of JSON, some 50 MB parsed
json.dump(d, open(sys.argv[2], "w"))
PY
    for kb in 20000 30000 40000 50000 60000 80000; do
      rm -f "$tmp/oom.md"
      (ulimit -v "$kb" && exec "$IOSIM" report "$tmp/oom.json" --md "$tmp/oom.md") >/dev/null 2>"$tmp/oom.err"
      rc=$?
      if { [ "$rc" = 2 ] && grep -q "iosim: out of memory" "$tmp/oom.err" && [ ! -e "$tmp/oom.md" ]; } ||
         { [ "$rc" = 0 ] && [ -s "$tmp/oom.md" ]; }; then ok; else
        bad "report of a large file under ulimit -v $kb: exit $rc: $(head -c 300 "$tmp/oom.err")"
      fi
    done
  fi
  if [ -w /dev/full ]; then
    "$IOSIM" run --help >/dev/full 2>/dev/null
    rc=$?
    if [ "$rc" = 2 ]; then ok; else bad "run --help >/dev/full exited $rc"; fi
    for args in "validate $small" "run --seq 128 --head-dim 64 --format json"; do
      # shellcheck disable=SC2086
      "$IOSIM" $args >/dev/full 2>"$tmp/full.err"
      rc=$?
      if [ "$rc" = 2 ] && grep -q "cannot write the output to stdout" "$tmp/full.err"; then ok; else
        bad "iosim $args >/dev/full exited $rc: $(cat "$tmp/full.err")"
      fi
    done
  fi
}

# stopped_while_blocked WHAT ARGS...: iosim ARGS writing to a FIFO whose reader never reads (its
# pipe shrunk to one page, so that every command's output fills it) must end within 2 s of a
# SIGTERM, with exit 3. std::cout's write(2) that the signal cut short was called again by stdio
# and blocked for ever (issue #50: report, explain and kvcache --series ignored SIGTERM).
stopped_while_blocked() {
  local what=$1
  shift
  local fifo=$tmp/blocked.fifo
  rm -f "$fifo"
  mkfifo "$fifo"
  python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)' "$fifo" &
  local reader=$! i
  for i in $(seq 50); do [ -e "$fifo.ready" ] && break; sleep 0.1; done
  "$IOSIM" "$@" >"$fifo" 2>"$tmp/blocked.err" &
  local pid=$!
  sleep 1.5  # (each command takes a fraction of a second to build its output)
  kill -TERM "$pid" 2>/dev/null
  local start
  start=$(date +%s%N)
  for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  local ms=$((($(date +%s%N) - start) / 1000000))
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    bad "$what blocked on a full stdout ran on 2 s after SIGTERM"
  else
    wait "$pid"
    local rc=$?
    if [ "$rc" = 3 ] && grep -q "stopped by SIGTERM" "$tmp/blocked.err"; then ok; else
      bad "$what blocked on a full stdout, SIGTERM: exit $rc after $ms ms: $(cat "$tmp/blocked.err")"
    fi
  fi
  kill "$reader" 2>/dev/null
  wait "$reader" 2>/dev/null
  rm -f "$fifo" "$fifo.ready"
}

# Stops (issue 30): a time budget or a signal stops every command within about a second, also
# inside one long wave (a split of 16M tokens ran 9 s past --max-seconds 1) and in kvcache (which
# never looked); explain refuses a trace past its step limit before it fills memory (1x1 blocks
# took 11 GB and wrote 700 MB).
section_stops() {
  local rc
  SECONDS=0
  timeout -k 5 8 "$IOSIM" run --algo flash-decoding --seq 1 --seq-kv 16777216 --heads 64 --batch 64 --max-seconds 1 >/dev/null 2>"$tmp/stop.err"
  rc=$?
  if [ "$rc" = 3 ] && grep -q "the time budget --max-seconds 1 s ran out" "$tmp/stop.err"; then ok; else
    bad "run --max-seconds 1 in one long wave: exit $rc after ${SECONDS} s: $(cat "$tmp/stop.err")"
  fi
  timeout --foreground --preserve-status -s INT -k 5 2 "$IOSIM" kvcache --layers 32 --kv-heads 8 --head-dim 128 --requests 100000 --max-output-tokens 100000 --output-len const:50000 --block-tokens 1 --kv-budget-bytes 1e10 >/dev/null 2>"$tmp/stop.err"
  rc=$?
  if [ "$rc" = 3 ] && grep -q "stopped by SIGINT" "$tmp/stop.err"; then ok; else bad "kvcache under SIGINT: exit $rc: $(cat "$tmp/stop.err")"; fi
  # kvcache drew 20 million requests, and took them in at a burst, with no check: SIGTERM at 1 s
  # ended it 4 to 17 s later. --max-seconds is run's.
  local start ms
  start=$(date +%s%N)
  timeout --foreground --preserve-status -s TERM -k 10 1 "$IOSIM" kvcache --layers 2 --kv-heads 2 --head-dim 64 --requests 20000000 >/dev/null 2>"$tmp/stop.err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$rc" = 3 ] && [ "$ms" -lt 3000 ] && grep -q "stopped by SIGTERM" "$tmp/stop.err"; then ok; else bad "kvcache --requests 20000000 under SIGTERM at 1 s: exit $rc after $ms ms: $(cat "$tmp/stop.err")"; fi
  start=$(date +%s%N)
  timeout -k 5 10 "$IOSIM" kvcache --layers 2 --kv-heads 2 --head-dim 64 --requests 20000000 --max-seconds 1 >/dev/null 2>"$tmp/stop.err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$rc" = 3 ] && [ "$ms" -lt 3000 ] && grep -q "the time budget --max-seconds 1 s ran out" "$tmp/stop.err"; then ok; else bad "kvcache --requests 20000000 --max-seconds 1: exit $rc after $ms ms: $(cat "$tmp/stop.err")"; fi
  # layer had no --max-seconds; 16K prefill tokens take seconds (issue #50 H1).
  timeout -k 5 10 "$IOSIM" layer --model llama-3-8b --seq 128 --batch 128 --max-seconds 0.3 >/dev/null 2>"$tmp/stop.err"
  rc=$?
  if [ "$rc" = 3 ] && grep -q "the time budget --max-seconds 0.3 s ran out" "$tmp/stop.err"; then ok; else bad "layer --max-seconds 0.3: exit $rc: $(cat "$tmp/stop.err")"; fi
  expect 2 "--max-seconds -1 must be >= 0" -- kvcache --layers 2 --kv-heads 2 --head-dim 64 --max-seconds -1
  # --execute's FP64 reference (seconds at N = 7000) and explain's page of 9,536 steps with their
  # numbers (5 s) ran to the end after SIGINT/SIGTERM (16 s late; exit 0 with the page written).
  start=$(date +%s%N)
  timeout --foreground --preserve-status -s INT -k 10 1 "$IOSIM" run --seq 7000 --head-dim 64 --execute >/dev/null 2>"$tmp/stop.err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$rc" = 3 ] && [ "$ms" -lt 3000 ]; then ok; else bad "run --execute under SIGINT at 1 s: exit $rc after $ms ms: $(cat "$tmp/stop.err")"; fi
  start=$(date +%s%N)
  timeout --foreground --preserve-status -s TERM -k 10 1 "$IOSIM" explain --seq 64 --head-dim 16 --batch 4 --block-q 8 --block-kv 4 --execute --pass fwdbwd --html "$tmp/stopped.html" >/dev/null 2>"$tmp/stop.err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$rc" = 3 ] && [ "$ms" -lt 3000 ] && [ ! -e "$tmp/stopped.html" ]; then ok; else bad "explain --execute under SIGTERM at 1 s: exit $rc after $ms ms: $(cat "$tmp/stop.err")"; fi
  "$IOSIM" sweep --seq 128:4096:128 --out "$tmp/blocked_sweep.json" 2>/dev/null
  stopped_while_blocked "report" report "$tmp/blocked_sweep.json"
  stopped_while_blocked "explain" explain --seq 64 --head-dim 16 --batch 4 --block-q 8 --block-kv 4
  stopped_while_blocked "kvcache --series" kvcache --layers 2 --kv-heads 2 --head-dim 64 --requests 2000 --series
  # run, layer, validate, tune, profiles, kernels and demo wrote through std::cout too (a run's
  # JSON and a layer's are larger than the one-page pipe)
  stopped_while_blocked "run --format json" run --seq 1024 --format json
  stopped_while_blocked "layer --format json" layer --model llama-3-8b --seq 128 --format json
  expect 2 "explain traces at most 10000 steps" -- explain --seq 64 --head-dim 16 --batch 2 --heads 2 --block-q 1 --block-kv 1 --algo flash1 --pass fwdbwd --html "$tmp/big.html"
  if [ ! -e "$tmp/big.html" ]; then ok; else bad "explain past its step limit wrote a page"; fi
  # A memory budget that holds one L2 model (about 2 MB for the H100 profile) at a time: the two
  # threads take turns instead of passing it, and the sweep is the same file as on one thread.
  "$IOSIM" sweep --seq 128,256,512 --algo flash1,flash2 --jobs 2 --max-memory 3M --out "$tmp/budget2.json" 2>/dev/null
  "$IOSIM" sweep --seq 128,256,512 --algo flash1,flash2 --jobs 1 --out "$tmp/budget1.json" 2>/dev/null
  if cmp -s "$tmp/budget1.json" "$tmp/budget2.json"; then ok; else bad "sweep --jobs 2 under --max-memory 3M differs from --jobs 1"; fi
}

# `iosim layer` (issue #32): a layer's ops beside attention, and the step; bad models, phases and
# tensor-parallel degrees are refused with exit 2 and a message naming them.
section_layer() {
  # A100 where the check is not Hopper's: without Hopper's tile choice (its engine-timed GEMM
  # candidates) a run costs a seventh, under the sanitizers too.
  local a100=(--profile a100-sxm4-80gb)
  expect_same 0 "gate_up_proj    gemm                 8x28672x4096" -- layer --model llama-3-8b --phase decode --batch 8 --seq 4096
  expect_same 0 "attention       attention          flash-decoding" -- layer --model llama-3-8b --phase decode --batch 8 --seq 4096
  expect_same 0 "step: 32 layers x" -- layer --model llama-3-8b --phase decode --batch 8 --seq 4096
  expect 0 '"name": "qkv_proj"' -- layer --model qwen2-7b --phase prefill --seq 256 --tp 2 "${a100[@]}" --format json
  expect 0 "layer,o_proj,gemm," -- layer --model mistral-7b --phase decode --seq 1024 "${a100[@]}" --format csv
  expect 2 "unknown model 'llama-3-8'" -- layer --model llama-3-8 --seq 128
  expect 2 "did you mean 'llama-3-8b'" -- layer --model llama-3-8 --seq 128
  expect 2 "--tp 3 does not divide the model's attention heads (32)" -- layer --model llama-3-8b --seq 128 --tp 3
  # --model's help names the built-in models as `iosim models` finds them (it named four by hand):
  # a model folder with one more lists it too.
  local model_dir
  model_dir=$(mktemp -d)
  cp "$REPO"/models/*.yaml "$model_dir/"
  sed 's/^name: .*/name: my-model/' "$REPO/models/llama-3-8b.yaml" >"$model_dir/my-model.yaml"
  out=$(IOSIM_MODEL_DIR=$model_dir "$IOSIM" layer --help 2>&1)
  if [[ "$out" == *"llama-3-8b, mistral-7b, my-model, qwen2-7b)"* ]]; then ok; else bad "layer --help with a model added: $(grep -A1 -- --model <<<"$out")"; fi
  rm -rf "$model_dir"
  expect 2 "--phase train: expected prefill or decode" -- layer --model llama-3-8b --seq 128 --phase train
  expect 2 "cannot read model configuration" -- layer --model /nonexistent/m.yaml --seq 128
  # Sweeps: a list of --seq, --batch or --context is one point each, the last axis fastest; one
  # table block, JSON line or set of CSV rows per point, CSV with a column per swept axis. On the
  # A100 profile: the sweep's mechanics are the same.
  local sweep=(layer --model llama-3-8b --phase decode --batch 1,4 --seq 256,512,1024 "${a100[@]}")
  "$IOSIM" "${sweep[@]}" --format json >"$tmp/layer.jsonl" 2>"$tmp/layer.err" || bad "layer sweep --format json failed: $(cat "$tmp/layer.err")"
  python3 - "$tmp/layer.jsonl" <<'PY' && ok || bad "layer sweep: not the 6 points of --batch 1,4 x --seq 256,512,1024 in order"
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1])]
got = [(d["request"]["batch"], d["request"]["seq"]) for d in docs]
sys.exit(got != [(b, s) for b in (1, 4) for s in (256, 512, 1024)])
PY
  "$IOSIM" "${sweep[@]}" --format csv >"$tmp/layer.csv" 2>/dev/null
  python3 - "$tmp/layer.csv" <<'PY' && ok || bad "layer sweep --format csv: no batch and seq columns, or not 6 points"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
points = sorted({(int(r["batch"]), int(r["seq"])) for r in rows})
sys.exit(points != [(b, s) for b in (1, 4) for s in (256, 512, 1024)] or
         len(rows) != 6 * len([r for r in rows if r["batch"] == "1" and r["seq"] == "256"]))
PY
  expect_same 0 "== point 6 of 6: --batch 4, --seq 1024" -- "${sweep[@]}"
  expect_same 0 "llama-3-8b on a100-sxm4-80gb: decode layer, batch 4, 4 tokens, attention over 1024 keys" -- "${sweep[@]}"
  # One value is no axis: the output is the single run's.
  if cmp -s <("$IOSIM" layer --model llama-3-8b --seq 256,512 --context 512 "${a100[@]}" --format csv 2>&1 | sed -n 2p | cut -d, -f2-) \
            <("$IOSIM" layer --model llama-3-8b --seq 256 --context 512 "${a100[@]}" --format csv 2>&1 | sed -n 2p); then ok; else bad "layer --seq 256,512's first CSV row is not --seq 256's"; fi
  # --html: one bar per point, a dot per op of each point, written whole or not at all.
  expect 0 "iosim layer: wrote $tmp/layer.html" -- layer --model llama-3-8b --seq 512,1024,2048 "${a100[@]}" --html "$tmp/layer.html"
  bars=$(grep -c '<g class="bar"' "$tmp/layer.html")
  if [ "$bars" -eq 3 ]; then ok; else bad "layer --html over 3 points drew $bars bars"; fi
  if grep -q 'data-point="seq 2048"' "$tmp/layer.html" && grep -q '<g class="dot" data-op="attention" data-point="3"' "$tmp/layer.html"; then ok; else bad "layer --html: no bar or roofline dot of the third point"; fi
  if ! grep -q "<script src\|<link" "$tmp/layer.html"; then ok; else bad "layer --html is not self-contained"; fi
  expect 2 "folder '/nonexistent' does not exist" -- layer --model llama-3-8b --seq 128 --html /nonexistent/l.html
  expect 2 "--html '/dev/null' is a device" -- layer --model llama-3-8b --seq 128 --html /dev/null
  cp "$tmp/layer.html" "$tmp/keep.html"
  expect 2 "--seq must be positive, got 0" -- layer --model llama-3-8b --seq 128,0 --html "$tmp/keep.html"
  if cmp -s "$tmp/layer.html" "$tmp/keep.html"; then ok; else bad "a failed layer sweep replaced its --html file"; fi
  # Bad lists are refused, naming the flag.
  expect 2 "--seq '512,512' lists 512 twice" -- layer --model llama-3-8b --seq 512,512
  expect 2 "--batch '1,two': 'two' is not an integer" -- layer --model llama-3-8b --seq 128 --batch 1,two
  expect 2 "--context '512,' has an empty value" -- layer --model llama-3-8b --seq 128 --context 512,
  expect 2 "--seq '0x10': '0x10' is not an integer" -- layer --model llama-3-8b --seq 0x10
  # Every value of a list is checked before its first point runs (issue #50: this list ran 21
  # points, past 20 s, before refusing 2097152).
  out=$(timeout 5 "$IOSIM" layer --model llama-3-8b --phase decode --seq 128 --batch 1:9223372036854775807:x2 2>&1)
  if [ $? -eq 2 ] && [[ "$out" == *"--batch 2097152 is out of range"* ]]; then ok; else
    bad "layer --batch 1:9223372036854775807:x2 was not refused at once: ${out:0:300}"
  fi
}

# The documents' numbers and blocks (README.md, docs/*.md) are ctest docs: tests/docs_test.sh.

# `cli_test.sh SECTION...` runs those sections (the section_* functions above), `cli_test.sh
# --except SECTION...` every other one (so that a new section is never left out of ctest),
# `cli_test.sh` all of them.
mapfile -t all < <(declare -F | sed -n 's/^declare -f section_//p')
for s in "$@"; do
  if [ "$s" != --except ] && ! declare -F "section_$s" >/dev/null; then
    echo "cli_test.sh: no section '$s' (there are: ${all[*]})"
    exit 2
  fi
done
sections=("$@")
if [ $# -eq 0 ] || [ "$1" = --except ]; then
  sections=()
  for s in "${all[@]}"; do [[ " ${*:2} " == *" $s "* ]] || sections+=("$s"); done
fi
for s in "${sections[@]}"; do "section_$s"; done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
