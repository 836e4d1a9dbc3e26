#!/usr/bin/env bash
# `cmake --install` to a temporary prefix gives an iosim that runs from any folder: profiles,
# models, report assets and Chart.js come from the binary, not from the source tree or the build
# folder.
# Run by ctest with IOSIM_BUILD_DIR and IOSIM_SOURCE_DIR set.
set -euo pipefail
: "${IOSIM_BUILD_DIR:?}" "${IOSIM_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$IOSIM_BUILD_DIR" --prefix "$tmp/prefix" >"$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
bin="$tmp/prefix/bin/iosim"
[ -x "$bin" ] || fail "no $bin after cmake --install"
for f in "$IOSIM_SOURCE_DIR"/hwprofiles/*.yaml; do
  cmp -s "$f" "$tmp/prefix/share/iosim/hwprofiles/$(basename "$f")" ||
    fail "share/iosim/hwprofiles/$(basename "$f") is not installed or differs"
done

for f in "$IOSIM_SOURCE_DIR"/models/*.yaml; do
  cmp -s "$f" "$tmp/prefix/share/iosim/models/$(basename "$f")" ||
    fail "share/iosim/models/$(basename "$f") is not installed or differs"
done

# The binary names no file of the source tree it reads at run time.
for d in hwprofiles models; do
  if grep -q -a -F "$IOSIM_SOURCE_DIR/$d" "$bin"; then
    fail "the installed binary still names $IOSIM_SOURCE_DIR/$d"
  fi
done

# Run from an empty folder far from both trees, with the overrides unset.
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
unset IOSIM_PROFILE_DIR IOSIM_MODEL_DIR IOSIM_CHARTJS
"$bin" --version | grep -Eq '^iosim [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{7,}(-dirty)?|unknown)\)$' ||
  fail "--version: $("$bin" --version)"
"$bin" profiles | grep -q h100-sxm5-80gb || fail "profiles lists no h100-sxm5-80gb"
# The models are embedded as the profiles are.
"$bin" layer --model llama-3-8b --phase decode --seq 256 | grep -q "gate_up_proj" || fail "layer"
"$bin" run --profile a100-sxm4-40gb --algo flash2 --seq 1024 --head-dim 64 | grep -q flash2_fwd ||
  fail "run"
"$bin" sweep --profile h100-sxm5-80gb --algo flash2 --seq 512,1024 --head-dim 64 --out sweep.json
"$bin" report sweep.json --html report.html --md report.md
grep -q "iosim-data" report.html || fail "report.html has no data"
if "$bin" report --help | grep -q "the copy built into iosim"; then
  # Chart.js was embedded (libjs-chart.js was there at configure time): it is in the page.
  grep -q "Chart" report.html || fail "report.html has no Chart.js"
fi
"$bin" explain --algo flash2 --seq 32 --block-q 16 --block-kv 16 --html explain.html >/dev/null ||
  fail "explain --html"
[ -s explain.html ] || fail "explain --html wrote nothing"
echo "install: ok ($("$bin" --version))"
