#!/usr/bin/env bash
# The build of scripts/sanitize.sh: iosim, its unit tests and the libFuzzer targets with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-sanitize/ (sanitize.sh says why these
# flags). On its own so that .ci/run can start it early, beside the Release build and tests, at a
# low priority; sanitize.sh runs it again, a no-op once built.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh build test sanitize
flags="-O1 -gline-tables-only -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow"
flags+=" -fno-sanitize-recover=all -fsanitize=fuzzer-no-link"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DIOSIM_BUILD_CUDA=OFF -DIOSIM_BUILD_BENCH=OFF -DIOSIM_BUILD_PYTHON=OFF -DIOSIM_BUILD_FUZZERS=ON \
  -DIOSIM_UNITY_MODEL=ON >/dev/null
targets=(iosim iosim_tests)
for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
cmake --build build-sanitize -j"$(nproc)" --target "${targets[@]}"
