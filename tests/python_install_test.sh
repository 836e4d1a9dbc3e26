#!/usr/bin/env bash
# `pip install .` as the README gives it, from a copy of the source tree as a fresh clone has it
# (tracked files and new ones git does not ignore: no build folder), offline (--no-index) with
# Debian's setuptools (--no-build-isolation), into a temporary venv; then the package is imported
# from another folder and run. Run by ctest with IOSIM_SOURCE_DIR and PYTHON (Debian's python3)
# set; CMAKE_ARGS and CMAKE_BUILD_PARALLEL_LEVEL pass through to setup.py.
set -euo pipefail
: "${IOSIM_SOURCE_DIR:?}" "${PYTHON:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$tmp/src"
git -C "$IOSIM_SOURCE_DIR" ls-files -z --cached --others --exclude-standard |
  (cd "$IOSIM_SOURCE_DIR" && while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"  # a tracked file deleted in the work tree is not copied
  done) | tar -C "$IOSIM_SOURCE_DIR" --null -T - -cf - | tar -C "$tmp/src" -xf -
[ -f "$tmp/src/setup.py" ] || fail "the copy of the source tree has no setup.py"

"$PYTHON" -m venv --system-site-packages "$tmp/venv"
unset PYTHONPATH
start=$SECONDS
"$tmp/venv/bin/pip" install --no-build-isolation --no-index -q "$tmp/src" >"$tmp/pip.log" 2>&1 ||
  { tail -n 40 "$tmp/pip.log"; fail "pip install --no-build-isolation --no-index ."; }
echo "pip install: $((SECONDS - start)) s"
rm -rf "$tmp/src"  # the installed package must need nothing from the source tree

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
"$tmp/venv/bin/python" - "$tmp/venv" <<'PY' || fail "the installed package"
import sys

import iosim

venv = sys.argv[1]
assert iosim.__file__.startswith(venv), iosim.__file__
r = iosim.run(profile="a100-sxm4-40gb", algo="flash2", seq=1024, head_dim=64)
assert r["feasible"] and r["counters"]["hbm_total_bytes"] > 0, r
k = iosim.kvcache(layers=2, kv_heads=2, head_dim=64, kv_budget_bytes=1e8, requests=50)
assert [p["policy"] for p in k["policies"]] == ["contiguous", "paged"], k["policies"]
try:
    iosim.run(algo="flsh2", seq=128)
    raise AssertionError("no ConfigError")
except iosim.ConfigError as e:
    assert "did you mean 'flash2'" in str(e), e
print(f"python install: ok (iosim {iosim.version_text} from {iosim.__file__})")
PY
