# Shared by the CLI test scripts (sourced, not run): the binary, the fixtures, a scratch folder,
# pass/fail counters and expect().
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
