#!/usr/bin/env bash
# The bad-input corpus: every case of tests/bad_inputs/cases.tsv, and every profile of
# tests/data/bad_profiles/EXPECTED.tsv, runs iosim on one bad input. Each must exit 2 within 60 s
# with its message on stderr, never say "internal error", and write no file. Run by ctest with
# IOSIM set to the binary. Memory is capped at 4 GiB (except under AddressSanitizer, which
# reserves more address space than that), so an input that fills memory fails fast.
# IOSIM_BAD_INPUTS_MEMORY_ONLY=1 runs only the inputs that ask for memory (MEMORY_CASES below):
# CI's Release pass (scripts/test.sh with IOSIM_CI_SANITIZED_ONCE=1), whose sanitized pass
# (scripts/sanitize.sh) runs every input, these too, under ASan and UBSan but without the cap.
set -u
IOSIM=${IOSIM:?set IOSIM to the iosim binary}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$HERE/data
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
out=$gen/out  # every output path of the corpus points here; it must stay empty
mkdir -p "$out" "$gen/empty_folder" "$gen/folder.json"
mkfifo "$gen/fifo"                   # nothing ever writes to it
ln -s loop.yaml "$gen/loop.yaml"     # a link to itself
ln -s loop_b.json "$gen/loop_a.json" # a loop of two links
ln -s loop_a.json "$gen/loop_b.json"

# Inputs made at run time: too big, binary, or derived from a valid file by one edit.
yes '# a comment line repeated until the profile is ten megabytes long' | head -c 10485760 >"$gen/big.yaml"
for i in $(seq 0 255); do printf "\\$(printf %03o "$i")"; done >"$gen/garbage.yaml"
M=$DATA/measurements_small.json
edit() { sed "$1" "$M" >"$gen/$2"; }
edit '0,/"launch__registers_per_thread": [0-9]*/s//"launch__registers_per_thread": -5/' neg_registers.json
edit '0,/"launch__registers_per_thread": [0-9]*/s//"launch__registers_per_thread": 0/' zero_registers.json
edit '0,/"gpu__time_duration.sum": [0-9][0-9.e+]*/s//"gpu__time_duration.sum": -5/' neg_duration.json
edit '0,/"batch": [0-9]*/s//"batch": 1e30/' batch_huge.json
edit '0,/"dram__bytes_read.sum": [0-9][0-9.e+]*/s//"dram__bytes_read.sum": "nan"/' nan_bytes.json
edit '0,/"dram__bytes_read.sum": [0-9][0-9.e+]*/s//"dram__bytes_read.sum": 1e308/' huge_bytes.json
edit '0,/"sm__cycles_elapsed.avg.per_second": [0-9][0-9.e+]*/s//"sm__cycles_elapsed.avg.per_second": 0/' zero_clock.json
edit '0,/"gpu__time_duration.sum": [0-9][0-9.e+]*/s//"gpu__time_duration.sum": 0/' zero_duration.json
edit '0,/"time_free_running_s": [0-9][0-9.e+-]*/s//"time_free_running_s": 0/' zero_time.json
edit '0,/"batch": [0-9]*/s//"batch": 0.5/' batch_half.json
edit '0,/"batch": [0-9]*/s//"batch": "4"/' batch_string.json
edit '0,/"metrics": {/s//"measures": {/' no_metrics.json
# A value of the wrong type anywhere in a case names the file, the case and the key (issue #50:
# nlohmann::json's "type must be number, but is string" named none).
edit '0,/"causal": false/s//"causal": false, "kv_heads": "8"/' kv_heads_string.json
edit '0,/"causal": false/s//"causal": false, "dropout": "0.1"/' dropout_string.json
edit '0,/"causal": false/s//"causal": "false"/' causal_string.json
edit '0,/"block_q": 128/s//"block_q": "128"/' block_q_string.json
edit '0,/"dram__bytes_write.sum": [0-9][0-9.e+]*/s//"dram__bytes_write.sum": "512"/' metric_string.json
edit '0,/"metrics": {/s//"spread": {"dram__bytes_read.sum": "0.01"}, "metrics": {/' spread_string.json
edit '0,/"role": "attention"/s//"role": 1/' role_number.json
edit '0,/"id": "[^"]*"/s//"id": 5/' id_number.json
edit '0,/"passed": true/s//"passed": "true"/' passed_string.json
edit '0,/"kernels": \[/s//"kernels": {}, "old_kernels": [/' kernels_object.json
edit '0,/"id": "[^"]*"/s//&, "rank_group": ""/' rank_group_empty.json
edit '0,/"id": "[^"]*"/s//&, "rank_group": 7/' rank_group_number.json
edit 's/"cases": \[/"kases": [/' no_cases.json
# A key the reader does not use, of the wrong type, is refused by schemas/measurements.schema.json
# with its path (issue #50 S1: it was accepted).
edit '0,/"reference": "[^"]*"/s//"reference": 7/' reference_number.json
edit '0,/"ecc_enabled": true/s//"ecc_enabled": "yes"/' ecc_string.json
edit '0,/"print_units": "base"/s//"print_units": null/' print_units_null.json
edit '0,/"launcher": "[^"]*"/s//"launcher": ["flash2"]/' launcher_array.json
# An unknown dtype or pass names the file, the case and the key, not a flag (issue #50 M1).
edit '0,/"dtype": "fp16"/s//"dtype": "fp64"/' dtype_fp64.json
edit '0,/"pass": "fwd"/s//"pass": "sideways"/' pass_sideways.json
edit 's/"version": 1,/"version": 2,/' version2.json
edit 's/"iosim-measurements"/"nsight-report"/' wrong_format.json
head -c 3000 "$M" >"$gen/truncated.json"
: >"$gen/empty.json"
echo '{"format": 1e309}' >"$gen/overflow.json"
echo '[1, 2, 3]' >"$gen/array.json"
echo '42' >"$gen/number.json"
echo '{"format": "iosim-measurements", "version": 1, "cases": 7}' >"$gen/cases_number.json"
echo '{"format": "iosim-measurements", "version": 1, "cases": []}' >"$gen/cases_empty.json"
echo '{"format": "iosim-measurements", "version": 1, "version": 2, "cases": []}' >"$gen/key_twice.json"
"$IOSIM" sweep --seq 128,256 --out "$gen/ok.json" 2>/dev/null
"$IOSIM" sweep --seq 128,256 --out "$gen/ok.csv" 2>/dev/null
C=$gen/ok.csv
sed '1s/,clock_given$//' "$C" >"$gen/csv_old.csv"
sed 's/^\([0-9]*\),h100-sxm5-80gb,/\1,my-gpu,/' "$C" >"$gen/csv_profile.csv"
sed '2s/,[^,]*$//' "$C" >"$gen/csv_fields.csv"
sed '2s/^\([0-9]*,[^,]*,[^,]*,[^,]*,[^,]*,\)[0-9]*,/\1inf,/' "$C" >"$gen/csv_number.csv"
{ cat "$C"; echo '9,"unclosed'; } >"$gen/csv_quote.csv"
"$IOSIM" sweep --seq 128 --shard 2/2 --out "$gen/sweep_rows_empty.json" 2>/dev/null  # "rows": []
S=$gen/ok.json
sed '0,/"rows": \[/s//"rows": [], "rows": [/' "$S" >"$gen/sweep_key_twice.json"
sed '0,/"hbm_read_bytes": [0-9.e+]*/s//"hbm_read_bytes": -5/' "$S" >"$gen/sweep_negative.json"
sed '0,/"hbm_read_bytes": [0-9.e+]*/s//"hbm_read_bytes": 1e300/' "$S" >"$gen/sweep_huge.json"
sed 's/"h100-sxm5-80gb": {/"another-gpu": {/' "$S" >"$gen/sweep_no_profile.json"
sed '0,/"point": 0/s//"point": "zero"/' "$S" >"$gen/sweep_point_string.json"
sed 's/"format": "iosim-sweep"/"format": "other"/' "$S" >"$gen/sweep_format.json"
sed 's/"rows": \[/"rows": 5, "unused": [/' "$S" >"$gen/sweep_rows_number.json"
head -c 2000 "$S" >"$gen/sweep_truncated.json"
# A problem iosim could never have run is refused as a bad count is (issue #50 S7).
sed '0,/"seq": 128/s//"seq": -64/' "$S" >"$gen/sweep_seq_negative.json"
sed '0,/"dtype": "fp16"/s//"dtype": "fp64"/' "$S" >"$gen/sweep_dtype.json"
sed '2s/,fp16,/,nan,/' "$C" >"$gen/csv_dtype_nan.csv"
sed '2s/,on,true,/,nan,true,/' "$C" >"$gen/csv_l2_nan.csv"
sed '2s/,latency,/,nan,/' "$C" >"$gen/csv_bound_nan.csv"
printf '1 2 3\n4 5 99999999999\n' >"$gen/table_big_id.txt"
printf '1 1\n1 1\n' >"$gen/pattern_2x2.txt"
# A NUL byte in any input file (issue #50's fourth probe: it cut the readers' quotes short).
printf '1 0\n1\0 1\n' >"$gen/pattern_nul.txt"
printf '0 1\0 2\n' >"$gen/table_nul.txt"
printf 'arrival,prompt_len,output_len\n0,3\0002,16\n' >"$gen/trace_nul.csv"
N=$DATA/kernels/ncu_wg1_h100.csv  # Nsight Compute's details page: 15 fields a row, from line 3
sed '3s/,"Metric Value"$//; 4,$s/,"[^"]*"$//' "$N" >"$gen/ncu_no_value.csv"
sed '5s/$/,"7"/' "$N" >"$gen/ncu_ragged_long.csv"
sed '5s/,"[^"]*"$//' "$N" >"$gen/ncu_ragged_short.csv"
sed '3s/Kernel Name/Kernel\x00Name/' "$N" >"$gen/ncu_nul_header.csv"
echo "my notes" >"$gen/a.md"           # an output two flags name: b.md links to it,
ln -s a.md "$gen/b.md"                  # hard_a.md is it under another name
ln "$gen/a.md" "$gen/hard_a.md"
ln -s "$out/o.html" "$gen/page_link.html"  # a link to an output not there yet
# Kernel and model YAML read keys as profiles do: a complex key made yaml-cpp's "bad conversion"
# and a duplicate key silently won (issue #50, I1 and S1).
printf '? [a]\n: 1\n' >"$gen/complex_key.yaml"
# No YAML tag is read: !!str 132 ran as 132 SMs, !!binary as its text (issue #50 S10).
sed 's/count: {value: 132/count: {value: !!str 132/' "$HERE/../hwprofiles/h100-sxm5-80gb.yaml" >"$gen/profile_tag.yaml"
printf 'name: !!binary aGVsbG8=\ndataflow:\n  forward: query_stationary\n' >"$gen/kernel_tag.yaml"
printf 'name: e\ndataflow:\n  forward: split_kv\ntiles:\n  splits: 2\n' >"$gen/kernel_splits.yaml"  # issue #50 M2
printf 'name: a\ndataflow:\n  forward: query_stationary\ndataflow:\n  forward: kv_stationary\n' >"$gen/kernel_dup.yaml"
{ cat "$HERE/../models/llama-3-8b.yaml"; echo 'layers: {value: 1, source: "dup"}'; } >"$gen/model_dup.yaml"
# An anchor or alias the text check missed: after an apostrophe in a plain scalar (`[it's, *a]`
# was taken for a quoted string), and nine such lines made 10^9 nodes (no exit; issue #50's
# fifth probe). The parser's own events refuse them.
printf "name: a\ndataflow:\n  forward: query_stationary\nx: [it's, &q 5]\ny: [it's, *q]\n" >"$gen/kernel_alias_quote.yaml"
{ cat "$HERE/../hwprofiles/h100-sxm5-80gb.yaml"; printf "x: [it's, &q 5]\n"; } >"$gen/profile_alias_quote.yaml"
{ cat "$HERE/../models/llama-3-8b.yaml"; printf "x: [it's, &q 5]\n"; } >"$gen/model_alias_quote.yaml"
# A multi-head latent attention model's keys go all together: DeepSeek-V3's without v_head_dim,
# and with a head_dim that is not its query/key head.
grep -v '^v_head_dim:' "$HERE/../models/deepseek-v3.yaml" >"$gen/mla_partial.yaml"
sed 's/^head_dim: {value: 192/head_dim: {value: 128/' "$HERE/../models/deepseek-v3.yaml" >"$gen/mla_head_dim.yaml"
# A control character from an escape ("\0", "\u0000") went on into names and reports, where the
# raw byte is refused (issue #50's fifth probe).
printf 'name: "a\\0b"\ndataflow:\n  forward: query_stationary\n' >"$gen/kernel_nul_escape.yaml"
sed '0,/"dtype": "fp16"/s//"dtype": "fp\\u000016"/' "$S" >"$gen/sweep_u0000.json"
edit '0,/"dtype": "fp16"/s//"dtype": "fp\\u000116"/' measured_u0001.json
cp "$HERE/../hwprofiles/h100-sxm5-80gb.yaml" "$gen/profile.yaml"  # an input --html must not replace

# The inputs whose refusal, were it lost, would allocate without bound: a device or a 10 MB file
# read whole, a YAML alias bomb, a size, count or budget past its limit, --execute's arrays.
MEMORY_CASES='dev_zero|10mb|huge|too_long|too_large|too_big|too_many|memory|budget|alias|overflow|execute'
memory_only=${IOSIM_BAD_INPUTS_MEMORY_ONLY:-0}
pass=0
fail=0
skipped=0
# run_case NAME WANT ARGS...: exit 2, WANT in stderr, no "internal error", nothing in $out.
run_case() {
  local name=$1 want=$2
  shift 2
  if [ "$memory_only" = 1 ] && ! [[ "$name" =~ $MEMORY_CASES ]]; then
    skipped=$((skipped + 1))
    return
  fi
  local rc
  (
    [ -z "${IOSIM_NO_ULIMIT:-}" ] && ulimit -v 4194304
    exec timeout 60 "$IOSIM" "$@"
  ) >"$gen/stdout" 2>"$gen/stderr"
  rc=$?
  local err
  err=$(head -c 2000 "$gen/stderr")
  if [ "$rc" -ne 2 ]; then
    fail=$((fail + 1))
    echo "FAIL $name: exit $rc, want 2: iosim $*"
    echo "  stderr: ${err:0:400}"
  elif [[ "$err" != *"$want"* ]]; then
    fail=$((fail + 1))
    echo "FAIL $name: stderr lacks '$want': iosim $*"
    echo "  stderr: ${err:0:400}"
  elif [[ "$err" == *"internal error"* ]]; then
    fail=$((fail + 1))
    echo "FAIL $name: internal error: ${err:0:400}"
  elif [[ "$err" =~ json\.exception|std::|basic_string|terminate\ called|what\(\) ]]; then
    # A library's or the C++ runtime's own text is not a message (issue #50: every JSON syntax
    # error said "[json.exception.parse_error.101] parse error at line 1, column 1: ...").
    fail=$((fail + 1))
    echo "FAIL $name: the implementation's text: ${err:0:400}"
  elif [ -n "$(ls -A "$out")" ]; then
    fail=$((fail + 1))
    echo "FAIL $name: left files behind: $(ls -A "$out")"
    rm -rf "${out:?}"/* "$out"/.[!.]* 2>/dev/null
  else
    pass=$((pass + 1))
  fi
}

while IFS=$'\t' read -r name want cmd; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  want=${want//@G/$gen}
  want=${want//@O/$out}
  cmd=${cmd//@D/$DATA}
  cmd=${cmd//@G/$gen}
  cmd=${cmd//@O/$out}
  eval "args=($cmd)"
  run_case "$name" "$want" "${args[@]}"
done <"$HERE/bad_inputs/cases.tsv"

while IFS=$'\t' read -r file want; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  run_case "profile $file" "$want" run --profile "$DATA/bad_profiles/$file" --seq 128
done <"$DATA/bad_profiles/EXPECTED.tsv"

echo "bad-input corpus: $pass passed, $fail failed$([ "$memory_only" = 1 ] &&
  echo ", $skipped not asking for memory left to the sanitized pass")"
if [ "$memory_only" = 1 ] && [ $((pass + fail)) -eq 0 ]; then
  echo "FAIL: IOSIM_BAD_INPUTS_MEMORY_ONLY=1 and no input's name matches MEMORY_CASES"
  exit 1
fi
# docs/limits.md states the corpus size through a marker that ctest docs checks
# (scripts/readme_numbers.py, bad_input_corpus_size(): the same two files as here).
[ "$fail" -eq 0 ]
