# Sourced by the browser tests (browser_test.sh, explain_browser_test.sh, run_browser_test.sh): what they need before
# they render a page. Usage, after setting REPO:
#   source "$REPO/tests/browser_setup.sh"
#   browser_setup "the HTML report" "$REPO/reports/assets" 1400,2600
# checks that node parses every ASSETS/*.js, finds Chromium (sets `browser`), makes `tmp` (removed
# on exit), sets `fail=0` and `bad MESSAGE`, and the headless `flags` at window size SIZE. Without
# node or Chromium it fails and says how to install them; IOSIM_SKIP_BROWSER_TEST=1 makes that an
# explicit skip (77).

# missing TOOL PACKAGE: TOOL is not installed; fail, or skip (77) with IOSIM_SKIP_BROWSER_TEST=1.
missing() {
  if [ "${IOSIM_SKIP_BROWSER_TEST:-0}" = 1 ]; then
    echo "SKIPPED: $1 is not installed (IOSIM_SKIP_BROWSER_TEST=1); $checked was not checked"
    exit 77
  fi
  echo "FAIL: $1 is not installed, so $checked cannot be checked."
  echo "      Install it with scripts/install_deps.sh (Debian package '$2'),"
  echo "      or set IOSIM_SKIP_BROWSER_TEST=1 to skip this test explicitly."
  exit 1
}

bad() { fail=1; echo "FAIL: $*"; }

browser_setup() { # WHAT ASSETS SIZE
  checked=$1
  command -v node >/dev/null 2>&1 || missing node nodejs
  for js in "$2"/*.js; do
    node --check "$js" || { echo "FAIL: node --check: $js does not parse"; exit 1; }
  done
  browser=""
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
  done
  [ -n "$browser" ] || missing chromium chromium
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fail=0
  flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
         --disable-component-update --disable-sync --no-first-run --disable-extensions
         --enable-logging=stderr --v=0 "--window-size=$3")
}
