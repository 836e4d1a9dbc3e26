#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on a built-in default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh build   # no browser, no test-only packages
scripts/build.sh -DIOSIM_BUILD_CUDA=OFF
./build/iosim demo "$@"
