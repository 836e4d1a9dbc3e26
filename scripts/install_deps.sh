#!/usr/bin/env bash
# Installs the Debian packages iosim needs, if any is missing. Needs root (or sudo).
#   scripts/install_deps.sh [GROUP...]   groups: build, test, python, browser, sanitize (default: all)
# build:   compiling iosim (doctest-dev: the test suites are configured with it) and Chart.js,
#          embedded into `iosim report --html` pages;
# test:    the rest of the test suite: Google Benchmark, jsonschema (the JSON Schema check),
#          pybind11 and pytest (the Python package and its tests), dask.distributed (the test of
#          iosim.sweep(client=...) on a local cluster), clang-format (scripts/check_format.sh);
# python:  `pip install .` into a venv (venv, setuptools, wheel) and the notebook docs/iosim_tour.ipynb
#          run by nbconvert (ipykernel, matplotlib, pandas); without their recommends (pandoc,
#          scipy, ...), which neither needs;
# browser: chromium renders the HTML report and nodejs parses its scripts, for
#          tests/browser_test.sh alone (skip it with IOSIM_SKIP_BROWSER_TEST=1 scripts/test.sh);
# sanitize: clang and its runtimes, for the ASan+UBSan and libFuzzer build of scripts/sanitize.sh.
set -euo pipefail
declare -A group_packages=(
  [build]="cmake g++ make git libcli11-dev libyaml-cpp-dev libfmt-dev doctest-dev nlohmann-json3-dev libeigen3-dev libjs-chart.js"
  [test]="libbenchmark-dev python3-jsonschema pybind11-dev python3-dev python3-pytest python3-distributed clang-format"
  [python]="python3-venv python3-setuptools python3-wheel python3-nbconvert python3-ipykernel python3-matplotlib python3-pandas"
  [sanitize]="clang libclang-rt-14-dev"
  [browser]="chromium nodejs"
)
declare -A no_recommends=([python]=1)
# Ubuntu packages Chromium as chromium-browser (a snap launcher); tests/browser_test.sh finds both.
if grep -qs '^ID=ubuntu' /etc/os-release; then
  group_packages[browser]="chromium-browser nodejs"
fi
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(build test python browser sanitize)
missing=() missing_lean=()  # the latter installed without their recommends
for g in "${groups[@]}"; do
  if [ -z "${group_packages[$g]+set}" ]; then
    echo "install_deps.sh: unknown group '$g' (build, test, python, browser, sanitize)" >&2
    exit 2
  fi
  read -r -a ps <<<"${group_packages[$g]}"
  for p in "${ps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    if [ -n "${no_recommends[$g]+set}" ]; then missing_lean+=("$p"); else missing+=("$p"); fi
  done
done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_lean[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]} ${missing_lean[*]}"
$sudo apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ${#missing_lean[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing_lean[@]}" >/dev/null
fi
