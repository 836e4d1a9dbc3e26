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
ctest --test-dir build --output-on-failure -j"$(nproc)"
