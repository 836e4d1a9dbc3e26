# Shared by the CLI test scripts (sourced, not run): the binary, the fixtures, a scratch folder,
# pass/fail counters, expect() and expect_same().
set -u
IOSIM=${IOSIM:?set IOSIM to the iosim binary}
DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/data
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE SUBSTRING -- ARGS...: exit code and a substring of stdout+stderr.
expect() {
  local code=$1 want=$2
  shift 3
  local out rc
  out=$("$IOSIM" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then bad "iosim $* -> exit $rc, want $code; output: ${out:0:300}"; return; fi
  if [[ "$out" != *"$want"* ]]; then bad "iosim $* -> missing '$want' in: ${out:0:300}"; return; fi
  ok
}

# expect_same CODE SUBSTRING -- ARGS...: expect, for a command whose output depends on its ARGS
# alone (no file written, no wall time): several substrings of one output are checked on one run
# of it, not one run each (`iosim validate` re-predicts every case of the file).
declare -A expect_outputs=() expect_codes=()
expect_same() {
  local code=$1 want=$2
  shift 3
  local key="$*"
  if [ -z "${expect_codes[$key]+set}" ]; then
    local out rc
    out=$("$IOSIM" "$@" 2>&1)
    rc=$?
    expect_outputs[$key]=$out
    expect_codes[$key]=$rc
  fi
  local out=${expect_outputs[$key]} rc=${expect_codes[$key]}
  if [ "$rc" -ne "$code" ]; then bad "iosim $* -> exit $rc, want $code; output: ${out:0:300}"; return; fi
  if [[ "$out" != *"$want"* ]]; then bad "iosim $* -> missing '$want' in: ${out:0:300}"; return; fi
  ok
}
