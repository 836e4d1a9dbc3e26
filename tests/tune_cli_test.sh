#!/usr/bin/env bash
# `iosim tune` as a user meets it: the ranked list sorted by time, each point's time the time of
# `iosim run` with its tiles, the JSON valid against schemas/tune.schema.json, infeasible points
# with their reasons, the same bytes whatever --jobs, the --html page, bad input exit 2 naming the flag.
# Run by ctest with IOSIM set to the binary (about 10 s on 2 cores).
source "$(dirname "$0")/cli_harness.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

P=(--profile h100-sxm5-80gb --algo flash2 --batch 4 --heads 16 --seq 4096 --head-dim 64)

# Mistakes: exit 2, the message names the flag.
expect 2 "--block-q 'abc': 'abc' is not an integer" -- tune "${P[@]}" --block-q abc
expect 2 "--block-kv '' has an empty value" -- tune "${P[@]}" --block-kv ''
expect 2 "--stages '2,,3' has an empty value" -- tune "${P[@]}" --stages 2,,3
expect 2 "--threads 2000 is out of range" -- tune "${P[@]}" --threads 128,2000
expect 2 "--block-q -64 is out of range" -- tune "${P[@]}" --block-q -64
expect 2 "--block-kv '64,64' lists 64 twice" -- tune "${P[@]}" --block-kv 64,64
expect 2 "did you mean 'flash2'" -- tune --algo flsh2 --seq 128
expect 2 "more than 100000: narrow the lists" -- tune "${P[@]}" --block-q 1:100000
expect 2 "--tie-band 150 is out of range" -- tune "${P[@]}" --tie-band 150
expect 2 "--top -1" -- tune "${P[@]}" --top -1
expect 2 "--format must be table, json or csv" -- tune "${P[@]}" --format xml
expect 2 "--seq is required" -- tune --algo flash2
expect 2 "--kernel flash2 and --algo flash1" -- tune --kernel flash2 --algo flash1 --seq 128
# No tiling feasible: exit 2 as `iosim run` of an infeasible one, the reasons still written.
expect 2 "no tiling of the space is feasible" -- tune --seq 512 --block-kv 4096 --stages 4
expect 2 "does not fit in shared memory" -- tune --seq 512 --block-kv 4096 --stages 4

# The default space of flash2 at d 64: 4 x 4 x 3 x 2 tilings, all of them in the JSON.
"$IOSIM" tune "${P[@]}" --top 0 --format json >"$tmp/tune.json" 2>"$tmp/err" ||
  bad "tune --format json failed: $(cat "$tmp/err")"
"$py" "$REPO/tests/check_schema.py" "$REPO/schemas" tune "$tmp/tune.json" >/dev/null && ok ||
  bad "the tune JSON breaks schemas/tune.schema.json"
checks=$("$py" - "$tmp/tune.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ranked, infeasible = d["ranked"], d["infeasible_points"]
out = []
times = [p["time_s"] for p in ranked]
out.append("sorted" if times == sorted(times) and [p["rank"] for p in ranked] == list(range(1, len(ranked) + 1)) else "unsorted")
out.append("counted" if d["points"] == 96 == len(ranked) + len(infeasible) and d["feasible"] == len(ranked) else "miscounted")
out.append("reasons" if infeasible and all(p["infeasible_reason"] for p in infeasible) else "no-reasons")
best = times[0]
ties = all(p["within_tie_band"] == (p["time_s"] <= best * (1 + d["tie_band"])) for p in ranked)
out.append("ties" if ties and ranked[0]["time_over_best"] == 1 else "bad-ties")
out.append("default" if d["default"]["rank"] is not None and ranked[d["default"]["rank"] - 1]["time_s"] == d["default"]["time_s"] else "bad-default")
for p in (ranked[0], ranked[-1]):
    out.append("point %d %d %d %d %r" % (p["block_q"], p["block_kv"], p["stages"], p["threads"], p["time_s"]))
print("\n".join(out))
PY
)
for want in sorted counted reasons ties default; do
  grep -qx "$want" <<<"$checks" && ok || bad "tune JSON: want '$want' in: $checks"
done
# The best and the slowest point: their time is `iosim run`'s with the same tiles.
while read -r _ bq bkv st th t; do
  run_t=$("$IOSIM" run "${P[@]}" --block-q "$bq" --block-kv "$bkv" --stages "$st" --threads "$th" \
    --format json | "$py" -c 'import json, sys; print(repr(json.load(sys.stdin)["time_s"]))')
  [ "$run_t" = "$t" ] && ok || bad "tune says $t s for $bq x $bkv, $st stages, $th threads; run says $run_t"
done < <(grep '^point ' <<<"$checks")

# A small space (2 x 3 tilings, block_kv 1024 past shared memory): CSV rows, the same bytes on 1
# and 3 threads, the table's ranking the CSV's.
S=("${P[@]}" --block-q 128,256 --block-kv 64,128,1024 --stages 2 --threads 256)
"$IOSIM" tune "${S[@]}" --top 0 --format csv --jobs 1 >"$tmp/j1.csv" 2>/dev/null || bad "tune --jobs 1 failed"
"$IOSIM" tune "${S[@]}" --top 0 --format csv --jobs 3 >"$tmp/j3.csv" 2>/dev/null || bad "tune --jobs 3 failed"
cmp -s "$tmp/j1.csv" "$tmp/j3.csv" && ok || bad "tune --jobs 1 and --jobs 3 differ"
[ "$(wc -l <"$tmp/j1.csv")" -eq 7 ] && ok || bad "tune CSV: want a header and 6 rows: $(cat "$tmp/j1.csv")"
[ "$(grep -c ',false,.*does not fit in shared memory' "$tmp/j1.csv")" -eq 2 ] && ok ||
  bad "tune CSV: want the 2 tilings of block_kv 1024 infeasible with their reason: $(cat "$tmp/j1.csv")"
# On 128 threads the 256-row tilings' fp32 O and S alone take 256 and 384 registers a thread, past
# the 255 a thread may have: infeasible (they would spill; algorithms/query_stationary.cpp).
"$IOSIM" tune "${P[@]}" --block-q 128,256 --block-kv 64,128 --stages 2 --threads 128 --top 0 \
  --format csv >"$tmp/regs.csv" 2>/dev/null || bad "tune on 128 threads failed"
[ "$(grep -c ',false,.*alone take [0-9]* registers a thread' "$tmp/regs.csv")" -eq 2 ] && ok ||
  bad "tune CSV: want the 2 tilings of block_q 256 on 128 threads refused for registers: $(cat "$tmp/regs.csv")"
"$IOSIM" tune "${S[@]}" --top 3 >"$tmp/tune.txt" 2>"$tmp/err" || bad "tune (table) failed: $(cat "$tmp/err")"
first=$(awk -F, '$1 == 1 { print $3, $4, $5, $6 }' "$tmp/j1.csv")
grep -qE "^ +1\* +${first// / +} " "$tmp/tune.txt" && ok || bad "table rank 1 is not '$first': $(cat "$tmp/tune.txt")"
[ "$(grep -cE '^ +[0-9]+[* ] ' "$tmp/tune.txt")" -eq 3 ] && grep -q "1 more feasible" "$tmp/tune.txt" && ok ||
  bad "table: want --top's 3 rows and 1 more: $(cat "$tmp/tune.txt")"
grep -q "^infeasible: 2 tilings" "$tmp/tune.txt" && grep -q "does not fit in shared memory" "$tmp/tune.txt" &&
  ok || bad "table: the infeasible points and a reason are missing: $(cat "$tmp/tune.txt")"

# --html: the same ranking as a page, a bar per row of --top; checked before any work, and never
# written for a space with no feasible tiling.
"$IOSIM" tune "${S[@]}" --top 3 --html "$tmp/tune.html" >"$tmp/out.txt" 2>"$tmp/err" ||
  bad "tune --html failed: $(cat "$tmp/err")"
cmp -s "$tmp/out.txt" "$tmp/tune.txt" && ok || bad "tune --html changed the table on stdout"
[ "$(grep -c '<rect class="bar' "$tmp/tune.html")" -eq 3 ] && grep -q "$first" <(sed 's/<[^>]*>/ /g' "$tmp/tune.html" | tr -s ' ') &&
  ok || bad "tune --html: want 3 bars and rank 1's tiles in the page"
[ "$(grep -c 'does not fit in shared memory' "$tmp/tune.html")" -eq 2 ] && ok ||
  bad "tune --html: want both infeasible tilings with their reason"
expect 2 "--html" -- tune "${S[@]}" --html "$tmp/no_such_folder/t.html"
cp "$REPO/hwprofiles/h100-sxm5-80gb.yaml" "$tmp/gpu.yaml"
expect 2 "--html" -- tune --profile "$tmp/gpu.yaml" --seq 512 --html "$tmp/gpu.yaml"
cmp -s "$tmp/gpu.yaml" "$REPO/hwprofiles/h100-sxm5-80gb.yaml" && ok || bad "tune --html replaced its profile"
rm -f "$tmp/none.html"
expect 2 "no tiling of the space is feasible" -- tune --seq 512 --block-kv 4096 --stages 4 --html "$tmp/none.html"
[ ! -e "$tmp/none.html" ] && ok || bad "tune --html wrote a page of an empty ranking"

echo "tune_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
