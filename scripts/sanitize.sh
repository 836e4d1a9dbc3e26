#!/usr/bin/env bash
# CI's sanitizer and fuzzing pass: builds iosim, its unit tests and the libFuzzer targets with
# clang, AddressSanitizer and UndefinedBehaviorSanitizer (float-cast-overflow included; every
# report is fatal: -fno-sanitize-recover=all) into build-sanitize/, runs the unit suites (doctest),
# the CLI, bad-input, resume and determinism tests there, then each fuzz target for FUZZ_SECONDS
# (default 8; eight targets, as many at a time as there are cores: about half a minute on two) from
# its corpus (tests/fuzz/corpus/<target>/: seeds and the regression inputs of bugs found, small
# files that libFuzzer runs whole before it mutates; the seconds buy random mutations: fewer
# seconds, fewer executions, each target's count printed below; docs/CI_TIMES.md).
# -O1 keeps the build and the tests fast on CI's two cores; -gline-tables-only gives the reports'
# stack traces their files and lines (inlined frames too) at a tenth less compile time than -g.
# -DIOSIM_UNITY_MODEL=ON: the model's libraries as unity builds too (a third less CPU time for
# them), which leaves clang's numbers as they are (CMakeLists.txt, IOSIM_UNITY).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${FUZZ_SECONDS:-8}
# The build (.ci/run starts it early, beside the Release build and tests; then this is a no-op).
scripts/sanitize_build.sh

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
jobs=$(nproc)
# The corpus caps memory with ulimit -v, which AddressSanitizer's shadow memory cannot live with.
# The unit suites (ctest's unit_* entries, by source file); not the accuracy levels (accuracy_now,
# which re-predicts every measured case: a few hundred kernels, 10 CPU minutes and more under the
# sanitizers; the same engine paths run here in every other suite). unit_measured_sets is left
# out: its case re-predicts the FA3-style kernel's FP16 and FP8 files together (120 kernels),
# minutes under the sanitizers against ~10 s in Release; its code paths run here on small inputs
# (the multi-file summary in "two one-case files are summarized together", unit_validation), and
# validate's reading and prediction of whole files in cli_validate's `iosim validate` of three
# cases of the H100 decode file. unit_alike_heads is left out too: its properties hold 5-7 causal
# heads of N = 80k-98k against --exact, and the clock probe's cuts through the power model's solve
# (10 s in Release, three minutes and more here); the ramp periods they extrapolate run here in
# unit_decode's ramp property on smaller heads.
# All entries run $jobs at a time (tests/cli_test.sh as three entries, cli_*).
source scripts/sanitized_entries.sh
IOSIM_NO_ULIMIT=1 IOSIM_SKIP_DOC_CHECKS=1 IOSIM_SANITIZED=1 ctest --test-dir build-sanitize \
  --output-on-failure -j"$jobs" -R "$SANITIZED_ENTRIES" -E "$SANITIZED_EXCEPT"

# fuzz NAME: one target for $fuzz_seconds; its log in $logs/NAME, its status in $logs/NAME.rc.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
fuzz() {
  local name=$1 work rc=0
  local corpus=tests/fuzz/corpus/${name#fuzz_}
  work=$(mktemp -d)
  # New inputs go to $work; the committed corpus is only read. libFuzzer's own -timeout did not
  # end fuzz_profile's yaml-cpp loop once (2 GB, stuck in allocation), so a hard kill bounds it.
  timeout -s KILL $((fuzz_seconds + 60)) build-sanitize/"$name" \
    -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    "$work" "$corpus" >"$logs/$name" 2>&1 || rc=$?
  echo "$rc" >"$logs/$name.rc"
  rm -rf "$work"
}
# $jobs targets at a time, each for the whole $fuzz_seconds on a core of its own.
names=()
for f in tests/fuzz/fuzz_*.cpp; do names+=("$(basename "$f" .cpp)"); done
for name in "${names[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz "$name" &
done
wait
total=0
for name in "${names[@]}"; do
  if [ "$(cat "$logs/$name.rc")" != 0 ]; then
    tail -40 "$logs/$name"
    echo "fuzz target $name failed; the input is above (crash-* in $(pwd))"
    exit 1
  fi
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$logs/$name" | tail -1)
  echo "fuzz $name: ${runs:-?} executions in ${fuzz_seconds} s, no failure"
  total=$((total + ${runs:-0}))
done
echo "fuzzing: $total executions in all"
