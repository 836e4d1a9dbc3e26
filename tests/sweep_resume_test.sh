#!/usr/bin/env bash
# Interrupted sweeps: SIGINT, SIGTERM, SIGKILL and --max-seconds leave no output file (only
# OUT.partial with the finished points), and --resume finishes them byte-identical to a sweep
# that was never interrupted. Run by ctest with IOSIM set to the binary.
source "$(dirname "$0")/cli_harness.sh"

# 256 points on one thread, each appended to OUT.partial when done. The sweep must outlast the
# poll below by a wide margin, or it can finish before the signal lands: 64 to 4096 tokens took
# 0.1 s on an idle machine once the engine got faster, and CI's run lost that race (exit 0).
# These take about 1 s (2-core development machine), the first point finishing after ~2% of it.
# Under the sanitizers (scripts/sanitize.sh sets IOSIM_SANITIZED) iosim is about 10x slower, and
# the small sweep already takes about 1 s: the large one made this test 3 minutes there.
if [ -n "${IOSIM_SANITIZED:-}" ]; then
  SWEEP=(sweep --seq 64:4096:+64 --batch 1,2,3,4 --head-dim 32 --jobs 1)
else
  SWEEP=(sweep --seq 512:32768:+512 --batch 1,2,3,4 --head-dim 32 --l2 off --jobs 1)
fi
"$IOSIM" "${SWEEP[@]}" --out "$tmp/ref.json" 2>/dev/null || bad "reference sweep failed"
"$IOSIM" "${SWEEP[@]}" --out "$tmp/ref.csv" 2>/dev/null || bad "reference CSV sweep failed"

# wait_for_rows FILE: until the journal FILE holds a finished record: a second record's header
# ("<point> <bytes> <checksum>") is written only after the first record's row and its newline. (A
# JSON row is ~4.5 KB over many lines and reaches the file in pieces: counting three lines once
# let SIGKILL land inside the first row, and --resume then rightly had nothing to resume.)
wait_for_rows() {
  for _ in $(seq 1 3000); do
    [ -f "$1" ] && [ "$(grep -cE '^[0-9]+ [0-9]+ [0-9a-f]+$' "$1")" -ge 2 ] && return 0
    sleep 0.01
  done
  return 1
}

# interrupt SIGNAL EXT: stops a sweep once it has finished points, then resumes it.
interrupt() {
  local sig=$1 ext=$2 out="$tmp/int_$1.$2"
  rm -f "$out" "$out.partial"
  "$IOSIM" "${SWEEP[@]}" --out "$out" 2>"$tmp/err" &
  local pid=$!
  if ! wait_for_rows "$out.partial"; then
    kill -KILL "$pid" 2>/dev/null
    bad "$sig: no finished points in $out.partial"
    return
  fi
  kill "-$sig" "$pid"
  wait "$pid" 2>/dev/null
  local rc=$?
  if [ "$sig" = KILL ]; then
    [ "$rc" -eq 137 ] && ok || bad "SIGKILL: exit $rc"
  else
    [ "$rc" -eq 3 ] && ok || bad "$sig: exit $rc, want 3: $(cat "$tmp/err")"
    grep -q -- "--resume" "$tmp/err" && ok || bad "$sig: message does not mention --resume: $(cat "$tmp/err")"
  fi
  # Whatever the point of interruption: no output file, and no temporary file beside it.
  [ ! -e "$out" ] && ok || bad "$sig: $out exists after the interruption"
  [ -z "$(ls "$tmp" | grep 'tmp-')" ] && ok || bad "$sig: temporary files left: $(ls "$tmp")"
  "$IOSIM" "${SWEEP[@]}" --out "$out" --resume 2>"$tmp/err" || bad "$sig: --resume failed: $(cat "$tmp/err")"
  grep -q "resumed" "$tmp/err" && ok || bad "$sig: --resume redid every point: $(cat "$tmp/err")"
  cmp -s "$out" "$tmp/ref.$ext" && ok || bad "$sig: resumed $out differs from the uninterrupted sweep"
  [ ! -e "$out.partial" ] && ok || bad "$sig: $out.partial left after a finished sweep"
}
interrupt INT json
interrupt TERM json
interrupt KILL json
interrupt INT csv

# --max-seconds: exit 3, no output; then --resume (without a budget) completes it identically.
out=$tmp/budget.json
"$IOSIM" "${SWEEP[@]}" --out "$out" --max-seconds 0.05 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 3 ]; then
  ok
  grep -q "the time budget --max-seconds 0.05 s ran out" "$tmp/err" && ok || bad "budget message: $(cat "$tmp/err")"
  [ ! -e "$out" ] && ok || bad "--max-seconds left $out"
  "$IOSIM" "${SWEEP[@]}" --out "$out" --resume 2>/dev/null || bad "--resume after --max-seconds failed"
  cmp -s "$out" "$tmp/ref.json" && ok || bad "resumed after --max-seconds: differs"
else
  bad "--max-seconds 0.05: exit $rc, want 3"
fi

# A kept row changed after it was written (a damaged disk, an editor) is not resumed: the old
# journal copied it into the final file and exited 0 with invalid JSON. Its checksum differs, so
# it and the rows after it run again, and the result is the uninterrupted sweep's.
out=$tmp/damaged.json
"$IOSIM" "${SWEEP[@]}" --out "$out" 2>/dev/null &
pid=$!
wait_for_rows "$out.partial"
kill -INT "$pid"
wait "$pid" 2>/dev/null
if [ -e "$out.partial" ] && [ "$(wc -l <"$out.partial")" -gt 2 ]; then
  # One digit of the first kept row's first number, changed.
  python3 - "$out.partial" <<'PY'
import re, sys
data = bytearray(open(sys.argv[1], "rb").read())
first_row = data.index(b"\n", data.index(b"\n") + 1) + 1
digit = re.compile(rb": ([0-9])").search(bytes(data), first_row).start(1)
data[digit] = ord("7") if data[digit] != ord("7") else ord("8")
open(sys.argv[1], "wb").write(bytes(data))
PY
  "$IOSIM" "${SWEEP[@]}" --out "$out" --resume 2>"$tmp/err" || bad "--resume over a damaged row failed: $(cat "$tmp/err")"
  grep -q "was changed after it was written" "$tmp/err" && ok || bad "--resume said nothing of the damaged row: $(cat "$tmp/err")"
  cmp -s "$out" "$tmp/ref.json" && ok || bad "resumed over a damaged row: differs from the uninterrupted sweep"
else
  bad "an interrupted sweep kept no rows to damage"
fi

# run --max-seconds stops a long single run with exit 3 and prints nothing on stdout.
start=$(date +%s)
"$IOSIM" run --seq 262144 --batch 16 --heads 16 --head-dim 128 --max-seconds 1 >"$tmp/run_out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] && ok || bad "run --max-seconds 1: exit $rc: $(cat "$tmp/err")"
[ $(($(date +%s) - start)) -lt 20 ] && ok || bad "run --max-seconds 1 took $(($(date +%s) - start)) s"
[ ! -s "$tmp/run_out" ] && ok || bad "run --max-seconds printed output"

# A journal of another sweep is refused, not merged.
"$IOSIM" "${SWEEP[@]}" --out "$tmp/other.json" --max-seconds 0.05 2>/dev/null
if [ -e "$tmp/other.json.partial" ]; then
  expect 2 "belongs to another sweep" -- sweep --seq 64:4096:+64 --batch 1,2 --head-dim 32 --out "$tmp/other.json" --resume
  [ -e "$tmp/other.json.partial" ] && ok || bad "a refused --resume removed the journal"
fi

echo "sweep_resume: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
