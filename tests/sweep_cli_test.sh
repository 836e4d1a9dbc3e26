#!/usr/bin/env bash
# `iosim sweep` and `iosim report` as a user meets them: exit codes, messages that name the flag,
# byte-identical output whatever --jobs, shards that merge, no partial output files.
# Run by ctest with IOSIM set to the binary.
source "$(dirname "$0")/cli_harness.sh"

S=(sweep --profile h100-sxm5-80gb,a100-sxm4-80gb --algo standard,flash1,flash2 --batch 4
   --heads 16 --seq 512:1024:x2 --head-dim 64,128 --block-kv 32,64,1024)
# The same 72 points at B = 1, H = 1 (much less work: this entry runs under the sanitizers): what
# --jobs and the output's form must not change is checked on these.
S1=(sweep --profile h100-sxm5-80gb,a100-sxm4-80gb --algo standard,flash1,flash2
    --seq 512:1024:x2 --head-dim 64,128 --block-kv 32,64,1024)

# Mistakes: exit 2, the message names the flag, nothing is written.
expect 2 "--seq '512:64:x2'" -- sweep --seq 512:64:x2
expect 2 "--block-kv '32,32' lists 32 twice" -- sweep --seq 128 --block-kv 32,32
expect 2 "--seq '1:8:x1'" -- sweep --seq 1:8:x1
expect 2 "--dropout '0:1': ranges are for integer flags" -- sweep --seq 128 --dropout 0:1
# An integer profile key takes a range as an integer flag does (it said "ranges are for integer
# flags").
expect 0 "h100-sxm5-80gb[sm.count=98]" -- sweep --seq 128 --head-dim 64 --set sm.count=64:132:+34 --format csv
expect 2 "did you mean 'flash2'" -- sweep --seq 128 --algo flash1,flsh2
expect 2 "unknown profile" -- sweep --seq 128 --profile h100-sxm5-80gb,h10
expect 2 "--shard 3/2" -- sweep --seq 128 --shard 3/2
expect 2 "--shard 'x'" -- sweep --seq 128 --shard x
expect 2 "must end in .json or .csv" -- sweep --seq 128 --out "$tmp/s.txt"
expect 2 "does not exist" -- sweep --seq 128 --out "$tmp/nofolder/s.json"
expect 2 "--l2 must be 'on' or 'off'" -- sweep --seq 128 --l2 on,maybe
expect 2 "more than 10000000 points" -- sweep --seq 1:100000 --batch 1:100000
# A --set range makes a profile per value, each loaded before the first point: capped (900,001
# values ran for minutes, past --max-seconds, SIGTERM and --max-memory: the seventh probe).
expect 2 "the --set values make more than 10000 profiles" -- sweep --seq 128 --set sm.count=1:20000:+1
expect 2 "the --set values make more than 10000 profiles" -- sweep --seq 128 --profile h100-sxm5-80gb,a100-sxm4-80gb --set sm.count=1:5001:+1
expect 2 "--dropout 1.5 is out of range" -- sweep --seq 128,256 --dropout 1.5
expect 2 "--jobs -1 is out of range" -- sweep --seq 128 --jobs -1
expect 2 "did you mean 'l2.size_bytes'" -- sweep --seq 128 --set l2.sise_bytes=1e7,2e7
expect 2 "--set l2.size_bytes is given twice" -- sweep --seq 128 --set l2.size_bytes=1e7 --set l2.size_bytes=2e7
[ -z "$(ls "$tmp")" ] && ok || bad "a failed sweep left files: $(ls "$tmp")"

# --set is an axis: one row per value, each with its own profile name and L2 size; a value the
# profile's checks refuse fails the whole sweep before it runs.
"$IOSIM" sweep --seq 4096 --batch 2 --heads 8 --algo standard --set l2.size_bytes=10e6,40e6 \
  --format csv >"$tmp/set.csv" 2>/dev/null || bad "sweep --set failed"
grep -c 'h100-sxm5-80gb\[l2.size_bytes=' "$tmp/set.csv" | grep -qx 2 && ok ||
  bad "sweep --set: want 2 rows with the overridden profile: $(cat "$tmp/set.csv")"
[ "$(cut -d, -f17 "$tmp/set.csv" | sort -u | wc -l)" -eq 3 ] && ok ||
  bad "sweep --set: the two L2 sizes give the same HBM read bytes"
expect 2 "does not divide l2.size_bytes" -- sweep --seq 128 --set l2.size_bytes=10e6,10000001

# Deterministic: byte-identical whatever --jobs; infeasible points are rows with their reason.
"$IOSIM" "${S[@]}" --jobs 1 --out "$tmp/j1.json" 2>/dev/null || bad "sweep --jobs 1 failed"
"$IOSIM" "${S1[@]}" --jobs 1 --out "$tmp/s1_j1.json" 2>/dev/null || bad "sweep --jobs 1 failed"
"$IOSIM" "${S1[@]}" --jobs 3 --out "$tmp/s1_j3.json" 2>/dev/null || bad "sweep --jobs 3 failed"
cmp -s "$tmp/s1_j1.json" "$tmp/s1_j3.json" && ok || bad "--jobs 1 and --jobs 3 differ"
"$IOSIM" "${S1[@]}" --jobs 1 --out "$tmp/j1.csv" 2>/dev/null || bad "sweep to CSV failed"
"$IOSIM" "${S1[@]}" --jobs 2 --format csv >"$tmp/j2.csv" 2>/dev/null || bad "sweep CSV to stdout failed"
cmp -s "$tmp/j1.csv" "$tmp/j2.csv" && ok || bad "CSV to a file and to stdout differ"
rows=$(($(wc -l <"$tmp/j1.csv") - 1))
[ "$rows" -eq 72 ] && ok || bad "CSV has $rows rows, want 2*3*2*2*3 = 72"
grep -q '^0,a100\|^0,h100' "$tmp/j1.csv" && ok || bad "CSV rows do not start with the point index"
[ "$(grep -c 'does not fit in shared memory' "$tmp/j1.csv")" -gt 0 ] && ok ||
  bad "infeasible points are missing from the CSV"
[ "$(grep -c '"feasible": false' "$tmp/j1.json")" -gt 0 ] && ok ||
  bad "infeasible points are missing from the JSON"
ls "$tmp" | grep -q tmp- && bad "temporary files left: $(ls "$tmp")" || ok

# Block-sparse patterns are an axis too; a pattern on a dense algorithm is a row with the reason.
bs=$("$IOSIM" sweep --algo block-sparse,flash2 --pattern local:128,strided:2 --seq 512 --format csv 2>/dev/null)
[ "$(grep -c ',block-sparse,.*,true,' <<<"$bs")" -eq 2 ] && ok || bad "block-sparse pattern points: $bs"
grep -q 'invalid input: --pattern applies to --algo block-sparse' <<<"$bs" && ok ||
  bad "a pattern on flash2 is not reported as invalid input"

# Decode flags are axes too: lists of --kv-heads, --splits, --page-tokens and --block-table files;
# left out, they add no axis (the file is what it was before they existed).
dec=$("$IOSIM" sweep --algo paged,flash-decoding --seq 1 --seq-kv 4096 --heads 8 --kv-heads 2,8 \
  --splits 2,4 --page-tokens 16,32 2>/dev/null)
python3 - "$dec" <<'PY' && ok || bad "decode axes: $(head -c 300 <<<"$dec")"
import json, sys
d = json.loads(sys.argv[1])
rows = d["rows"]
assert d["sweep"]["axes"]["--kv-heads"] == ["2", "8"], d["sweep"]["axes"]
assert len(rows) == 2 * 2 * 2 * 2, len(rows)
paged = [r for r in rows if r["algorithm"] == "paged"]
got = sorted((r["problem"]["kv_heads"], r["tiling"]["splits"], r["problem"]["page_tokens"]) for r in paged)
assert got == sorted((h, s, p) for h in (2, 8) for s in (2, 4) for p in (16, 32)), got
# flash-decoding takes no pages: those points are rows with the reason.
assert all("--page-tokens and --block-table apply to --algo paged" in r["infeasible_reason"]
           for r in rows if r["algorithm"] == "flash-decoding")
PY
# The CSV tells those rows apart too: pass, kv_heads, pattern, page_tokens, block_table, splits.
deccsv=$("$IOSIM" sweep --algo paged --seq 1 --seq-kv 4096 --heads 8 --kv-heads 2,8 --splits 2,4 \
  --page-tokens 16,32 --format csv 2>/dev/null)
python3 - "$deccsv" <<'PY' && ok || bad "decode axes in CSV: $(head -c 300 <<<"$deccsv")"
import csv, io, sys
rows = list(csv.DictReader(io.StringIO(sys.argv[1])))
assert len(rows) == 8, len(rows)
got = sorted((int(r["kv_heads"]), int(r["splits"]), int(r["page_tokens"])) for r in rows)
assert got == sorted((h, s, p) for h in (2, 8) for s in (2, 4) for p in (16, 32)), got
assert all(r["pass"] == "fwd" and r["block_table"] == "random:1" for r in rows), rows[0]
PY
bscsv=$("$IOSIM" sweep --algo block-sparse --pattern local:2,strided:2 --seq 512 --format csv 2>/dev/null)
python3 - "$bscsv" <<'PY' && ok || bad "patterns in CSV: $bscsv"
import csv, io, sys
rows = list(csv.DictReader(io.StringIO(sys.argv[1])))
assert sorted(r["pattern"] for r in rows) == ["local:2", "strided:2"], rows
PY
"$IOSIM" sweep --seq 128 --out "$tmp/plain.json" 2>/dev/null || bad "plain sweep failed"
grep -q -- '--kv-heads\|--splits\|--page-tokens\|--block-table' "$tmp/plain.json" &&
  bad "a sweep without decode flags records them" || ok
expect 0 '"block_table": "'"$DATA/block_tables/two_by_three.txt" -- sweep --algo paged --batch 2 \
  --heads 2 --seq 1 --seq-kv 40,48 --head-dim 32 --block-table "$DATA/block_tables/two_by_three.txt"
expect 2 "--kv-heads 0 must be at least 1" -- sweep --seq 1 --seq-kv 64 --kv-heads 0,1
expect 2 "--page-tokens '16,16' lists 16 twice" -- sweep --algo paged --seq 1 --page-tokens 16,16
expect 2 "line 2: page 1 is listed twice" -- sweep --algo paged --seq 1 --seq-kv 40 \
  --block-table "$DATA/block_tables/two_by_three.txt,$DATA/block_tables/duplicate.txt"

# Shards as docs/user-guide.md runs them: its Slurm array script (the sweep S), once per array
# task, then its report command, with `iosim` this binary. The parts hold every point once, their
# rows are the whole sweep's and the report merges them like the whole sweep.
guide="$(dirname "$0")/../docs/user-guide.md"
script=$(awk '/^#!\/bin\/bash$/ {on = 1} on && /^```/ {exit} on' "$guide")
merge=$(grep -m1 '^iosim report part_1.json' "$guide")
[[ "$script" == *"--shard \"\$SLURM_ARRAY_TASK_ID/3\""* && -n "$merge" ]] && ok ||
  bad "docs/user-guide.md's Slurm script or its report command not found"
mkdir "$tmp/bin" "$tmp/slurm"
ln -s "$(realpath "$IOSIM")" "$tmp/bin/iosim"
for k in 1 2 3; do
  (cd "$tmp/slurm" && PATH="$tmp/bin:$PATH" SLURM_ARRAY_TASK_ID=$k SLURM_CPUS_PER_TASK=2 \
    bash -c "$script" 2>/dev/null) || bad "the Slurm script's task $k failed"
done
(cd "$tmp/slurm" && PATH="$tmp/bin:$PATH" bash -c "$merge") || bad "report of the shards failed"
"$IOSIM" report "$tmp/j1.json" --md "$tmp/whole.md" || bad "report of the whole sweep failed"
grep -q "72 of 72 points (shards 1/3, 2/3, 3/3)" "$tmp/slurm/r.md" && ok ||
  bad "merged shards do not cover the sweep: $(grep -m1 'points' "$tmp/slurm/r.md")"
diff <(grep '^| ' "$tmp/whole.md") <(grep '^| ' "$tmp/slurm/r.md") >/dev/null && ok ||
  bad "the shards' tables differ from the whole sweep's"
[ -s "$tmp/slurm/r.html" ] && ok || bad "the report of the shards wrote no HTML"
python3 - "$tmp/j1.json" "$tmp"/slurm/part_{1,2,3}.json <<'PY' && ok || bad "the shards' rows are not the whole sweep's"
import json, sys
def rows(path):
    return [json.dumps({k: v for k, v in r.items() if k != "simulation_wall_s"}, sort_keys=True)
            for r in json.load(open(path))["rows"]]
whole, parts = rows(sys.argv[1]), [r for p in sys.argv[2:] for r in rows(p)]
assert len(parts) == len(whole) and sorted(parts) == sorted(whole), (len(parts), len(whole))
PY
"$IOSIM" report "$tmp/slurm/part_1.json" --md "$tmp/part.md" || bad "report of one shard failed"
grep -q "incomplete" "$tmp/part.md" && ok || bad "a missing shard is not reported"

# Report: both files, and nothing written when it fails.
expect 0 "" -- report "$tmp/j1.json" --html "$tmp/r.html" --md "$tmp/r.md" \
  --validation "$DATA/measurements_small.json"
[ -s "$tmp/r.html" ] && [ -s "$tmp/r.md" ] && ok || bad "report did not write both files"
grep -q "Predicted vs measured" "$tmp/r.md" && ok || bad "report lacks the validation section"
expect 0 "| profile | algorithm | d | N |" -- report "$tmp/j1.json"
expect 2 "cannot read sweep file" -- report "$tmp/none.json" --html "$tmp/n.html"
expect 2 "not an iosim sweep file" -- report "$DATA/measurements_small.json" --md "$tmp/n.md"
expect 2 "Chart.js not found" -- report "$tmp/j1.json" --html "$tmp/n.html" --md "$tmp/n2.md" \
  --chartjs /nonexistent/chart.js
[ ! -e "$tmp/n.html" ] && [ ! -e "$tmp/n.md" ] && [ ! -e "$tmp/n2.md" ] && ok ||
  bad "a failed report left files"

# On a power-limited profile each point runs at its own clock; the report groups points by the
# clock the sweep asked for, so block sizes compete per shape (grouped by the clock each ran at,
# every row was "1 / 1" and the best-block table answered nothing).
"$IOSIM" sweep --seq 512,1024 --block-kv 64,128 --head-dim 64 --batch 4 --heads 16 --out "$tmp/pw.json" 2>/dev/null
"$IOSIM" report "$tmp/pw.json" --md "$tmp/pw.md" 2>/dev/null
if [ "$(grep -c '| 2 / 2 |$' "$tmp/pw.md")" = 2 ] && ! grep -q "SM MHz" "$tmp/pw.md"; then ok; else
  bad "report of a power-limited sweep does not group its block sizes: $(grep '^| h100' "$tmp/pw.md" | head -3)"
fi

# The heatmap of the same sweep: one best tile per shape (N), whatever clock each point ran at.
[ "$(grep -c '\*\* best |' "$tmp/pw.md")" = 2 ] && ok ||
  bad "heatmap of a power-limited sweep: want 2 best tiles, got: $(grep -A6 '^### h100' "$tmp/pw.md")"

# report reads the CSV that sweep writes (#31): the same tables as the sweep's JSON gives.
"$IOSIM" sweep --seq 512,1024 --block-q 64,128 --block-kv 64,128 --head-dim 64 --batch 4 --heads 16 \
  --out "$tmp/pq.json" 2>/dev/null
"$IOSIM" sweep --seq 512,1024 --block-q 64,128 --block-kv 64,128 --head-dim 64 --batch 4 --heads 16 \
  --format csv >"$tmp/pq.csv" 2>/dev/null
if "$IOSIM" report "$tmp/pq.csv" --md "$tmp/pqc.md" 2>"$tmp/pq.err" &&
   "$IOSIM" report "$tmp/pq.json" --md "$tmp/pqj.md" &&
   diff <(sed -n '/^## Best block/,$p' "$tmp/pqc.md") <(sed -n '/^## Best block/,$p' "$tmp/pqj.md") >/dev/null &&
   grep -q "a sweep's CSV records no sweep axes" "$tmp/pqc.md"; then ok; else
  bad "report of the sweep's CSV differs from its JSON's: $(cat "$tmp/pq.err") $(diff "$tmp/pqc.md" "$tmp/pqj.md" | head -5)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
