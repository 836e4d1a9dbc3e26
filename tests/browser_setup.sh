# Sourced by the browser tests (browser_test.sh, explain_browser_test.sh, run_browser_test.sh): what they need before
# they render a page. Usage, after setting REPO:
#   source "$REPO/tests/browser_setup.sh"
#   browser_setup "the HTML report" "$REPO/reports/assets" 1400,2600
# checks that node parses every ASSETS/*.js, finds Chromium (sets `browser`), makes `tmp` (removed
# on exit), sets `fail=0` and `bad MESSAGE`, and the headless `flags` at window size SIZE. Without
# node or Chromium it fails and says how to install them; IOSIM_SKIP_BROWSER_TEST=1 makes that an
# explicit skip (77). Then `render URL NAME [TIMEOUT_S]` and `body_attr FILE NAME` (below).

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

# render URL NAME [TIMEOUT_S]: the DOM after the page's scripts ran ($tmp/NAME.html) and Chromium's
# log ($tmp/NAME.log), in a profile of its own; a Chromium failure or any console message is `bad`.
render() {
  timeout "${3:-120}" "$browser" "${flags[@]}" --user-data-dir="$tmp/profile-$2" --dump-dom "$1" \
    >"$tmp/$2.html" 2>"$tmp/$2.log"
  local rc=$?
  if [ "$rc" -ne 0 ]; then bad "chromium exited with $rc on $1: $(tail -5 "$tmp/$2.log")"; fi
  # Chromium logs every console message of the page as "CONSOLE"; our pages log none.
  if grep -q ':CONSOLE' "$tmp/$2.log"; then
    bad "console messages on $1:"
    grep ':CONSOLE' "$tmp/$2.log" | head -20
  fi
}

# body_attr FILE NAME: the value of data-NAME on <body> (the first <body> tag of the dump).
body_attr() {
  grep -o -m1 '<body [^>]*>' "$1" | grep -o "data-$2=\"[^\"]*\"" | head -1 | sed 's/^[^"]*"//; s/"$//'
}
