#!/usr/bin/env bash
# Determinism: the same command gives the same bytes, run after run, whatever --jobs, and the
# shards of a sweep together hold exactly the rows of the whole sweep. Run by ctest.
source "$(dirname "$0")/cli_harness.sh"

# run: identical JSON but for simulation_wall_s (how long the simulation took on this machine).
RUN=(run --algo flash2 --seq 4096 --batch 2 --heads 8 --head-dim 64 --causal --format json)
"$IOSIM" "${RUN[@]}" | grep -v simulation_wall_s >"$tmp/run1"
"$IOSIM" "${RUN[@]}" | grep -v simulation_wall_s >"$tmp/run2"
[ -s "$tmp/run1" ] && cmp -s "$tmp/run1" "$tmp/run2" && ok || bad "run JSON differs between runs"

# sweep: byte-identical JSON and CSV on 1, 3 and all threads.
SWEEP=(sweep --seq 256:4096:x2 --algo flash1,flash2,standard --batch 1,3 --block-q 0,64)
for jobs in 1 3 0; do
  "$IOSIM" "${SWEEP[@]}" --jobs "$jobs" --out "$tmp/s$jobs.json" 2>/dev/null || bad "sweep --jobs $jobs failed"
  "$IOSIM" "${SWEEP[@]}" --jobs "$jobs" --out "$tmp/s$jobs.csv" 2>/dev/null || bad "sweep --jobs $jobs csv failed"
done
for ext in json csv; do
  cmp -s "$tmp/s1.$ext" "$tmp/s3.$ext" && ok || bad "sweep $ext differs between --jobs 1 and 3"
  cmp -s "$tmp/s1.$ext" "$tmp/s0.$ext" && ok || bad "sweep $ext differs between --jobs 1 and all cores"
done
"$IOSIM" "${SWEEP[@]}" --jobs 2 2>/dev/null >"$tmp/stdout.json"
cmp -s "$tmp/s1.json" "$tmp/stdout.json" && ok || bad "sweep on stdout differs from --out"

# Shards: 3 shards' rows, merged in point order, are the whole sweep's rows.
for k in 1 2 3; do
  "$IOSIM" "${SWEEP[@]}" --shard "$k/3" --jobs 2 --out "$tmp/shard$k.csv" 2>/dev/null || bad "shard $k/3 failed"
done
tail -n +2 -q "$tmp"/shard?.csv | sort -t, -k1,1n >"$tmp/merged"
tail -n +2 "$tmp/s1.csv" >"$tmp/whole"
[ -s "$tmp/whole" ] && cmp -s "$tmp/merged" "$tmp/whole" && ok || bad "shards 1-3/3 do not add up to the whole sweep"

echo "determinism: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
