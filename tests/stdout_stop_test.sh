#!/usr/bin/env bash
# A stop that is pending when a write to stdout blocks is still honoured: each command's stdout
# is a FIFO that this script holds open and never reads, so its writes block once the pipe is
# full. The stop comes from --max-seconds running out after the points are done (no signal
# interrupts the blocked write: the sweep copied its output with stdio and waited for ever, issue
# #50's third probe), and from SIGTERM sent at several moments, before the pipe fills among them
# (the race that took the SIGTERM check out of cli_test.sh in 384b261). Every command runs under
# `timeout`, so a stop that is not honoured fails the test instead of hanging CI. Run by ctest
# with IOSIM set to the binary.
source "$(dirname "$0")/cli_harness.sh"

fifo="$tmp/stdout.fifo"
mkfifo "$fifo"
exec 3<>"$fifo"  # a reader that never reads: the pipe fills at 64 KiB and writes block

# Outputs of 90 KB to 3.4 MB: more than the pipe holds.
COMMANDS=(
  "sweep --seq 64:4096:+64 --heads 1,2 --jobs 1"
  "sweep --seq 64:8192:+64 --heads 1,2 --jobs 2 --format csv"
  "kvcache --layers 4 --kv-heads 2 --head-dim 64 --requests 3000 --series --series-points 5000 --format json"
  "kvcache --layers 4 --kv-heads 2 --head-dim 64 --requests 3000 --series --series-points 5000 --format csv"
)

for cmd in "${COMMANDS[@]}"; do
  read -r -a args <<<"$cmd"
  # The budget runs out once the command is done computing and its write is blocked: twice what
  # it takes to /dev/null (the sanitized build is ten times slower), at least a second.
  start=$(date +%s%N)
  timeout -s KILL 120 "$IOSIM" "${args[@]}" >/dev/null 2>&1 || bad "$cmd failed to /dev/null"
  ms=$((($(date +%s%N) - start) / 1000000))
  budget=$(((2 * ms + 999) / 1000))
  [ "$budget" -ge 1 ] || budget=1
  timeout -s KILL $((budget + 10)) "$IOSIM" "${args[@]}" --max-seconds "$budget" \
    >"$fifo" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -eq 3 ] && grep -q "stopped: the time budget --max-seconds" "$tmp/err"; then
    ok
  else
    bad "$cmd --max-seconds $budget with stdout unread: exit $rc (137: still blocked 10 s" \
      "after its budget), want 3: $(head -c 300 "$tmp/err")"
  fi
  # Drain what the FIFO holds, so that the next command starts with an empty pipe.
  timeout 5 dd if="$fifo" of=/dev/null bs=64k iflag=nonblock 2>/dev/null

  # SIGTERM at several moments: while computing, while copying the output, once blocked.
  for delay in 0.05 0.2 0.5 1.0 $((budget)); do
    "$IOSIM" "${args[@]}" >"$fifo" 2>"$tmp/err" &
    pid=$!
    sleep "$delay"
    kill -TERM "$pid" 2>/dev/null
    waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      bad "$cmd: no exit 10 s after SIGTERM sent at ${delay} s with stdout unread"
    else
      wait "$pid"
      rc=$?
      # 3: stopped; 143: the signal came before iosim installed its handler.
      if [ "$rc" -eq 3 ] || [ "$rc" -eq 143 ]; then ok; else
        bad "$cmd: SIGTERM at ${delay} s: exit $rc: $(head -c 300 "$tmp/err")"
      fi
    fi
    timeout 5 dd if="$fifo" of=/dev/null bs=64k iflag=nonblock 2>/dev/null
  done
done

echo "stdout_stop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
