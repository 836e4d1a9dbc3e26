#!/usr/bin/env bash
# Installs the Debian packages iosim builds with, if any is missing. Needs root (or sudo).
set -euo pipefail
# libjs-chart.js: Chart.js, inlined into `iosim report --html` pages; chromium: renders them in
# tests/browser_test.sh; nodejs: parses their scripts (reports/assets/*.js) there.
# clang, libclang-rt-14-dev: the sanitizer and libFuzzer build of scripts/sanitize.sh (CI).
packages=(cmake g++ make libcli11-dev libyaml-cpp-dev libfmt-dev doctest-dev nlohmann-json3-dev
          libeigen3-dev libbenchmark-dev libjs-chart.js chromium nodejs clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
