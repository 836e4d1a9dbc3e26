#!/usr/bin/env bash
# The page of one run (`iosim run --html`, reports/run_page.cpp) as a reader opens it, in headless
# Chromium (the approach of browser_test.sh): node parses reports/assets/*.js first; then the pages
# of a run of one kernel with the L2 on, of a two-level forward and backward (four kernels) and of
# three kernels side by side (`iosim run --algo A,B,C --html`, a column of charts each) are
# rendered, then the page of a tune (tests/run_page_test.sh checks the numbers of these and other runs without a browser).
# Fails on any console message or script error, and unless each of the five charts (time shares, HBM bytes by tensor,
# memory chart, roofline, timeline) drew. Run by ctest with IOSIM set to the binary.
#
#   IOSIM=build/iosim bash tests/run_browser_test.sh [SCREENSHOT.png]
#
# With a file argument it also saves a screenshot of the first page there (docs/run_page.png: see
# the README). Without node or Chromium the test fails and says how to install them;
# IOSIM_SKIP_BROWSER_TEST=1 makes it an explicit skip (77).
set -u
IOSIM=${IOSIM:?set IOSIM to the iosim binary}
REPO=$(cd "$(dirname "$0")/.." && pwd)
screenshot=${1:-}

source "$REPO/tests/browser_setup.sh"
browser_setup "the run page" "$REPO/reports/assets" 1140,1440

# The third: three kernels side by side (reports/compare_page.cpp), four charts each.
# The fourth: `iosim tune --html` (reports/tune_page.cpp), one chart of bars.
pages=("run --algo flash2 --batch 4 --heads 16 --seq 4096 --head-dim 64"
       "run --algo flash2 --pass fwdbwd --seq 512 --head-dim 64 --l2 off"
       "run --algo flash1,flash2,flash3 --seq 1024 --head-dim 64"
       "tune --batch 4 --heads 16 --seq 1024 --head-dim 64 --block-q 64,128 --stages 2,3")
charts=(5 5 12 1)
for i in "${!pages[@]}"; do
  read -r -a args <<<"${pages[$i]}"
  "$IOSIM" "${args[@]}" --html "$tmp/page$i.html" >/dev/null 2>"$tmp/run.err" ||
    { bad "iosim ${pages[$i]}: $(cat "$tmp/run.err")"; continue; }
  render "file://$tmp/page$i.html" "dom$i" 60
  status=$(body_attr "$tmp/dom$i.html" status)
  expected=$(body_attr "$tmp/dom$i.html" charts-expected)
  drawn=$(body_attr "$tmp/dom$i.html" charts-drawn)
  errors=$(body_attr "$tmp/dom$i.html" errors)
  echo "page $i (${pages[$i]}): status $status, charts $drawn of $expected, script errors $errors"
  [ "$status" = ok ] || bad "page $i status '$status': $(body_attr "$tmp/dom$i.html" error-text)"
  [ "$expected" = "${charts[$i]}" ] && [ "$drawn" = "${charts[$i]}" ] ||
    bad "page $i drew $drawn of $expected charts, want ${charts[$i]}"
  [ "$errors" = 0 ] || bad "page $i: $errors script errors"
done

if [ -n "$screenshot" ]; then
  timeout 60 "$browser" "${flags[@]}" --user-data-dir="$tmp/profile-shot" --hide-scrollbars \
    --screenshot="$screenshot" "file://$tmp/page0.html" >/dev/null 2>&1 ||
    bad "chromium could not take the screenshot"
  [ -s "$screenshot" ] && echo "screenshot: $screenshot"
fi

[ "$fail" -eq 0 ] && echo "run browser test passed ($browser)"
exit "$fail"
