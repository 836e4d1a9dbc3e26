#!/usr/bin/env bash
# The stepper page of `iosim explain --html` as a reader opens it, in headless Chromium (the
# approach of browser_test.sh): node parses teach/assets/*.js first; then the page of a small
# trace is rendered with #selftest, which clicks forward through every step (checking the step
# shown and the HBM counter against the trace at each), back once, and the Home and right-arrow
# keys; then the static page of --compare. Fails on any console message or script error. Run by
# ctest with IOSIM set to the binary.
#
#   IOSIM=build/iosim bash tests/explain_browser_test.sh [SCREENSHOT.png [STEP]]
#
# Checks scripts/slide_figure.sh too; with a file argument its PNG is kept there (docs/explain.png:
# see docs/tutorial.md), of step STEP (default 9). Without node or Chromium the test fails and says how
# to install them; IOSIM_SKIP_BROWSER_TEST=1 makes it an explicit skip (77).
set -u
IOSIM=${IOSIM:?set IOSIM to the iosim binary}
REPO=$(cd "$(dirname "$0")/.." && pwd)
screenshot=${1:-}
shot_step=${2:-9}

source "$REPO/tests/browser_setup.sh"
browser_setup "the stepper page" "$REPO/teach/assets" 1400,1100

# Two pages: a forward with its numbers, and a backward of another schedule (more kernels).
pages=("flash2 --execute" "flash1 --pass bwd")
for i in 0 1; do
  read -r -a extra <<<"${pages[$i]}"
  "$IOSIM" explain --seq 32 --head-dim 16 --block-q 16 --block-kv 16 --algo "${extra[@]}" \
    --html "$tmp/page$i.html" 2>"$tmp/explain.err" || { bad "iosim explain: $(cat "$tmp/explain.err")"; continue; }
  want=$(grep -o 'wrote .* (\([0-9]*\) steps)' "$tmp/explain.err" | grep -o '[0-9]* steps' | cut -d' ' -f1)
  render "file://$tmp/page$i.html#selftest" "dom$i"
  status=$(body_attr "$tmp/dom$i.html" status)
  selftest=$(body_attr "$tmp/dom$i.html" selftest)
  errors=$(body_attr "$tmp/dom$i.html" errors)
  steps=$(body_attr "$tmp/dom$i.html" steps)
  echo "page $i (${pages[$i]}): status $status, $steps steps (iosim said $want), selftest '$selftest', script errors $errors"
  [ "$status" = ok ] || bad "page $i status '$status'"
  [ "$errors" = 0 ] || bad "page $i: $errors script errors"
  [ "$steps" = "$want" ] || bad "page $i shows $steps steps, the trace has $want"
  [ "$selftest" = "ok $want steps" ] || bad "page $i selftest: '$selftest'"
done

# The static page of --compare (no script): rendered with no console message, a column and three
# bars (one per level) for each algorithm.
if "$IOSIM" explain --seq 32 --head-dim 16 --block-q 16 --block-kv 16 --compare standard,flash1,flash2 \
  --html "$tmp/compare.html" 2>"$tmp/explain.err"; then
  render "file://$tmp/compare.html" dom-compare
  columns=$(grep -o '<th scope="col">' "$tmp/dom-compare.html" | wc -l)
  bars=$(grep -o '<rect class="bar"' "$tmp/dom-compare.html" | wc -l)
  echo "compare page: $columns algorithm columns, $bars bars"
  [ "$columns" = 3 ] && [ "$bars" = 9 ] || bad "the compare page shows $columns columns and $bars bars, want 3 and 9"
else
  bad "iosim explain --compare --html: $(cat "$tmp/explain.err")"
fi

# The tutorial's one-command slide figure (scripts/slide_figure.sh), into SCREENSHOT when given.
shot=${screenshot:-$tmp/figure.png}
if IOSIM=$IOSIM bash "$REPO/scripts/slide_figure.sh" "$shot" "$shot_step" --algo flash2 --seq 32 \
  --head-dim 16 --block-q 16 --block-kv 16 --execute >"$tmp/figure.log" 2>&1 && [ -s "$shot" ]; then
  echo "slide figure: $(cat "$tmp/figure.log")"
else
  bad "scripts/slide_figure.sh: $(cat "$tmp/figure.log")"
fi
if IOSIM=$IOSIM bash "$REPO/scripts/slide_figure.sh" "$tmp/x.png" 99 --algo flash2 --seq 32 \
  --head-dim 16 --block-q 16 --block-kv 16 >"$tmp/figure.log" 2>&1; then
  bad "scripts/slide_figure.sh took step 99 of 30"
elif ! grep -q "the trace has steps 1 to 30" "$tmp/figure.log"; then
  bad "scripts/slide_figure.sh step 99: $(cat "$tmp/figure.log")"
fi

[ "$fail" -eq 0 ] && echo "explain browser test passed ($browser)"
exit "$fail"
