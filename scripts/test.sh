#!/usr/bin/env bash
# README command 2: install what is missing, build everything, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure
