#!/usr/bin/env bash
# README command 2: install what is missing, build everything, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# IOSIM_SKIP_BROWSER_TEST=1: no Chromium installed, the browser test reported as skipped.
if [ "${IOSIM_SKIP_BROWSER_TEST:-0}" = 1 ]; then
  scripts/install_deps.sh build test python
else
  scripts/install_deps.sh build test python browser
fi
scripts/build.sh
# The entries run as many at a time as there are cores (the unit suites are several entries:
# CMakeLists.txt's unit_*).
if [ "${IOSIM_CI_SANITIZED_ONCE:-0}" = 1 ]; then
  # .ci/run: the entries that scripts/sanitize.sh runs next, and whose sanitized run checks all
  # that this one would, run there only (scripts/sanitized_entries.sh).
  source scripts/sanitized_entries.sh
  entries() { ctest --test-dir build -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' | sort; }
  unsanitized=$(comm -23 <(entries -R "$SANITIZED_ONCE") \
    <(entries -R "$SANITIZED_ENTRIES" -E "$SANITIZED_EXCEPT"))
  if [ -n "$unsanitized" ]; then
    echo "scripts/sanitized_entries.sh: SANITIZED_ONCE names entries scripts/sanitize.sh does" \
      "not run:" $unsanitized >&2
    exit 1
  fi
  # bad_inputs: here only the inputs that ask for memory, under its 4 GiB cap (ulimit -v, which
  # ASan cannot live with); scripts/sanitize.sh runs every input sanitized (tests/bad_input_test.sh).
  IOSIM_BAD_INPUTS_MEMORY_ONLY=1 ctest --test-dir build --output-on-failure -j"$(nproc)" \
    -E "$SANITIZED_ONCE"
else
  ctest --test-dir build --output-on-failure -j"$(nproc)"
fi
