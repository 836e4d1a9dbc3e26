#!/usr/bin/env bash
# The HTML report as a reader opens it: first node (Debian's `nodejs`) parses the page's scripts
# (reports/assets/*.js), so that a syntax error names its file and line; then headless Chromium
# (Debian's `chromium`) renders the report of a small sweep (two shards, merged) with measurements.
# Fails on any console message or script error, and unless every chart drew data points (its
# datasets hold points and the area inside its axes holds ink, not axes alone); then draws every
# selection of the page's controls (#selftest) and checks again. Run by ctest with IOSIM set to the
# binary.
#
#   IOSIM=build/iosim bash tests/browser_test.sh [SCREENSHOT.png [REPORT.html]]
#
# With a file argument it also saves a screenshot there, of REPORT.html when given, else of the
# test's report (docs/report.png: docs/user-guide.md's "Sweeps and reports" says how it is made). Without node or Chromium
# the test fails and says how to install it; IOSIM_SKIP_BROWSER_TEST=1 makes it an explicit skip
# (77).
set -u
IOSIM=${IOSIM:?set IOSIM to the iosim binary}
REPO=$(cd "$(dirname "$0")/.." && pwd)
screenshot=${1:-}
shot_of=${2:-}

source "$REPO/tests/browser_setup.sh"
browser_setup "the HTML report" "$REPO/reports/assets" 1400,2600

# A sweep small enough to take a second, split in two shards that the report merges.
sweep=(--profile h100-sxm5-80gb,a100-sxm4-80gb --algo standard,flash1,flash2 --batch 1 --heads 4
       --seq 256:1024:x2 --head-dim 64,128 --block-kv 32,64,128,256)
for k in 1 2; do
  "$IOSIM" sweep "${sweep[@]}" --shard "$k/2" --out "$tmp/s$k.json" 2>"$tmp/sweep.err" ||
    { echo "FAIL: iosim sweep: $(cat "$tmp/sweep.err")"; exit 1; }
done
"$IOSIM" report "$tmp/s1.json" "$tmp/s2.json" --validation "$REPO/tests/data/measurements_small.json" \
  --html "$tmp/report.html" --md "$tmp/report.md" ||
  { echo "FAIL: iosim report"; exit 1; }


render "file://$tmp/report.html" page
status=$(body_attr "$tmp/page.html" status)
expected=$(body_attr "$tmp/page.html" charts-expected)
drawn=$(body_attr "$tmp/page.html" charts-drawn)
errors=$(body_attr "$tmp/page.html" errors)
# 3 algorithms by block size, bytes and time vs N, 2 per-tensor, 2 rooflines, 2 validation.
want=11
echo "charts: expected $expected, drawn $drawn, want $want; status $status; script errors $errors"
[ "$status" = ok ] || bad "page status '$status': $(body_attr "$tmp/page.html" error-text)"
[ "$expected" = "$want" ] || bad "the page has $expected charts, want $want"
[ "$drawn" = "$expected" ] || bad "$drawn of $expected charts drew"
[ "$errors" = 0 ] || bad "$errors script errors: $(body_attr "$tmp/page.html" error-text)"
# Each chart must show data, not only axes: its datasets hold points and the area inside its axes
# holds opaque pixels (the page's iosimDrawn plugin counts both per chart, in page order).
points=$(body_attr "$tmp/page.html" chart-points)
ink=$(body_attr "$tmp/page.html" chart-ink)
echo "data points per chart: $points; opaque pixels inside the axes: $ink"
IFS=, read -r -a point_list <<<"$points"
IFS=, read -r -a ink_list <<<"$ink"
[ "${#point_list[@]}" = "$want" ] || bad "data points listed for ${#point_list[@]} charts, want $want"
[ "${#ink_list[@]}" = "$want" ] || bad "plot-area ink listed for ${#ink_list[@]} charts, want $want"
for k in "${!point_list[@]}"; do
  [ "${point_list[$k]}" -gt 0 ] 2>/dev/null || bad "chart $((k + 1)) has no data points"
  [ "${ink_list[$k]:-0}" -gt 0 ] 2>/dev/null || bad "chart $((k + 1)) drew nothing inside its axes"
done
for table in best-blocks validation-summary; do
  grep -q "id=\"$table\"" "$tmp/page.html" || bad "no table '$table'"
done
# The time-vs-tile heatmaps (#31): one per algorithm at the selected profile and d, every shape's
# best tile marked; the bound lines of the bytes-vs-N chart are named on it, and each roofline
# names its fastest points.
shown=$(body_attr "$tmp/page.html" heatmaps-shown)
[ "$shown" = 3 ] || bad "heatmaps shown: '$shown', want 3 (one per algorithm)"
labels=$(body_attr "$tmp/page.html" chart-labels)
echo "chart labels: $labels"
grep -q "compulsory;two-level lower bound" <<<"$labels" || bad "the bytes-vs-N chart does not name its bound lines"
[ "$(grep -o "flash2 N=[0-9]* d=[0-9]* [0-9]* x [0-9]*" <<<"$labels" | wc -l)" -ge 2 ] ||
  bad "the rooflines do not label flash2's fastest points"

render "file://$tmp/report.html#selftest" selftest
selftest=$(body_attr "$tmp/selftest.html" selftest)
echo "selftest: $selftest"
[[ "$selftest" == ok* ]] || bad "selftest: '$selftest' $(body_attr "$tmp/selftest.html" error-text)"

# A decoding sweep: one query row, several K/V lengths, split counts and flash2 beside them.
# The charts are drawn against N_kv (not at the single N = 1), each split count is a series of
# its own, --splits 0 (the heuristic) is run, flash2's --splits points are skipped with a note
# (not "none fits"), and per-tensor bars that differ by orders of magnitude (K/V against the
# partials) are on a log axis.
"$IOSIM" sweep --profile h100-sxm5-80gb --algo flash2,flash-decoding --batch 1 --heads 32 \
  --kv-heads 8 --seq 1 --seq-kv 4096:65536:x4 --head-dim 128 --splits 0,2,8 \
  --out "$tmp/decode.json" 2>"$tmp/sweep.err" || { echo "FAIL: decode sweep: $(cat "$tmp/sweep.err")"; exit 1; }
"$IOSIM" report "$tmp/decode.json" --html "$tmp/decode_report.html" --md "$tmp/decode.md" ||
  { echo "FAIL: iosim report of the decode sweep"; exit 1; }
grep -q "Skipped 6 points: --splits applies to --algo flash-decoding and paged, not 'flash2'" \
  "$tmp/decode.md" || bad "decode report: no note for the skipped flash2 --splits points"
! grep -q "none fits" "$tmp/decode.md" || bad "decode report says 'none fits' for an inapplicable flag"
grep -q "| flash2 | 128 | 1 | 4096 |" "$tmp/decode.md" || bad "decode report: flash2 at --splits 0 missing"
# Its heatmaps have N_kv as a column beside N, one table per algorithm and split count.
grep -q '^| N | N_kv | Br \\ Bc | 64 |$' "$tmp/decode.md" && grep -q '^| 1 | 65536 | 128 | \*\*' "$tmp/decode.md" ||
  bad "decode report: heatmap without an N_kv column: $(grep -A4 '^### h100-sxm5-80gb, flash2' "$tmp/decode.md")"
render "file://$tmp/decode_report.html" decode
[ "$(body_attr "$tmp/decode.html" status)" = ok ] ||
  bad "decode page status: $(body_attr "$tmp/decode.html" error-text)"
info=$(body_attr "$tmp/decode.html" chart-info)
echo "decode charts: $info"
grep -q "Bytes vs N_kv (log-log) | N_kv (K/V length) | logarithmic | [^#]*flash-decoding S=2 HBM;[^#]*flash-decoding S=8 HBM" <<<"$info" ||
  bad "decode report: bytes not against N_kv with a series per split count"
grep -q "HBM bytes per tensor at N_kv=65536 | [^|]* | logarithmic | " <<<"$info" ||
  bad "decode report: per-tensor bars (K/V vs partials) not on a log axis"
# A chart against N_kv has several points per series, not one at N = 1.
grep -q "Simulated time vs N_kv" <<<"$info" || bad "decode report: time not against N_kv"
# A report of the sweep's CSV (#31): its profiles loaded by name, every chart drawn but the
# per-tensor bars, which say that a CSV holds none.
"$IOSIM" sweep "${sweep[@]}" --out "$tmp/s.csv" 2>"$tmp/sweep.err" ||
  { echo "FAIL: iosim sweep --out CSV: $(cat "$tmp/sweep.err")"; exit 1; }
"$IOSIM" report "$tmp/s.csv" --html "$tmp/csv_report.html" --md "$tmp/csv.md" ||
  { echo "FAIL: iosim report of the sweep's CSV"; exit 1; }
render "file://$tmp/csv_report.html" csv
[ "$(body_attr "$tmp/csv.html" status)" = ok ] ||
  bad "CSV report status: $(body_attr "$tmp/csv.html" error-text)"
grep -q "No per-tensor bytes: the sweep file holds none" "$tmp/csv.html" ||
  bad "CSV report: no note on the missing per-tensor bytes"
# The validation summary in HTML has median and worst, as the Markdown.
grep -q "<th>blind time median / worst</th>" "$tmp/page.html" || bad "HTML validation table without median / worst"

if [ -n "$screenshot" ]; then
  timeout 120 "$browser" "${flags[@]}" --user-data-dir="$tmp/profile-shot" --hide-scrollbars \
    --screenshot="$screenshot" "file://$(realpath "${shot_of:-$tmp/report.html}")" >/dev/null 2>&1 ||
    bad "chromium could not take the screenshot"
  [ -s "$screenshot" ] && echo "screenshot: $screenshot"
fi

[ "$fail" -eq 0 ] && echo "browser test passed ($browser)"
exit "$fail"
