#!/usr/bin/env bash
# `iosim run` with several kernels side by side (api/compare.hpp, reports/compare_writers.*,
# reports/compare_page.*): a golden table; each column's JSON and CSV row is the kernel's own
# `iosim run` (a built-in, a description file, one inline); the --html page has every chart of
# every column; mistakes exit 2 naming the kernel and write no file. Run by ctest (compare_cli)
# with IOSIM set; a few seconds. Remake the golden table after a model change with
#   build/iosim run --algo flash1,flash2 --kernel flash3 --seq 256 --batch 2 --heads 4 \
#     >tests/data/compare/flash1_flash2_flash3.txt
source "$(dirname "$0")/cli_harness.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

# The golden table: rows are quantities, columns kernels, then the ratios to the first.
golden="$DATA/compare/flash1_flash2_flash3.txt"
if "$IOSIM" run --algo flash1,flash2 --kernel flash3 --seq 256 --batch 2 --heads 4 >"$tmp/table.txt" &&
  diff "$golden" "$tmp/table.txt" >"$tmp/table.diff"; then
  ok
else
  bad "the comparison's table differs from $golden: $(head -20 "$tmp/table.diff")"
fi

# Each column is the kernel's own run: JSON documents (but for the wall time) and CSV rows, for a
# built-in, a description file and an inline description, in the order given.
kernel_file="$REPO/docs/kernels/wg1_tma_fwd.yaml"
inline='{"name": "tp", "dataflow": {"forward": "query_stationary", "backward": "two_pass"}}'
shared=(--seq 384 --batch 2 --heads 3 --head-dim 64 --causal)
"$IOSIM" run --algo flash2 --kernel "$kernel_file" --kernel "$inline" "${shared[@]}" \
  --format json >"$tmp/compare.json" || bad "the comparison's JSON failed"
"$IOSIM" run --algo flash2 --kernel "$kernel_file" --kernel "$inline" "${shared[@]}" \
  --format csv >"$tmp/compare.csv" || bad "the comparison's CSV failed"
"$IOSIM" run --algo flash2 "${shared[@]}" --format json >"$tmp/one_1.json"
"$IOSIM" run --kernel "$kernel_file" "${shared[@]}" --format json >"$tmp/one_2.json"
"$IOSIM" run --kernel "$inline" "${shared[@]}" --format json >"$tmp/one_3.json"
{
  "$IOSIM" run --algo flash2 "${shared[@]}" --format csv | tail -1
  "$IOSIM" run --kernel "$kernel_file" "${shared[@]}" --format csv | tail -1
  "$IOSIM" run --kernel "$inline" "${shared[@]}" --format csv | tail -1
} >"$tmp/one.csv"
if out=$("$py" - "$tmp" <<'PY' 2>&1
import json, sys
t = sys.argv[1]
doc = json.load(open(f"{t}/compare.json"))
assert doc["schema_version"] == 1
names = doc["compare"]["kernels"]
assert names == ["flash2", "wg1_tma_fwd", "tp"], names
assert doc["compare"]["baseline"] == "flash2"
for i, run in enumerate(doc["runs"]):
    one = json.load(open(f"{t}/one_{i + 1}.json"))
    for d in (run, one):
        d.pop("simulation_wall_s")
    assert run == one, f"column {i + 1} ({names[i]}) is not its own run"
rows = open(f"{t}/compare.csv").read().splitlines()
assert len(rows) == 4, rows
single = open(f"{t}/one.csv").read().splitlines()
assert rows[1:] == single, "the CSV rows are not the single runs' rows"
PY
); then ok; else bad "compare JSON/CSV: $out"; fi

# The page: a column per kernel in every section, each column's four charts; ids unique.
"$IOSIM" run --algo flash1,flash2,flash3 --seq 512 --html "$tmp/compare.html" >/dev/null \
  2>"$tmp/html.err" || bad "the comparison's --html failed: $(cat "$tmp/html.err")"
grep -q "iosim run: wrote $tmp/compare.html" "$tmp/html.err" && ok || bad "no 'wrote' message"
if out=$("$py" - "$tmp/compare.html" <<'PY' 2>&1
import re, sys, xml.dom.minidom
html = open(sys.argv[1]).read()
charts = re.findall(r"<svg .*?</svg>", html, re.S)
assert len(charts) == 12, f"{len(charts)} charts, want 4 for each of 3 kernels"
for c in charts:
    xml.dom.minidom.parseString(c)
ids = re.findall(r' id="([^"]+)"', html)
assert len(ids) == len(set(ids)), f"repeated ids: {ids}"
assert 'id="compare"' in html and "flash3 / flash1" in html
refs = re.findall(r'url\(#([^)]+)\)', html)
assert refs and set(refs) <= set(ids), f"references to no id: {set(refs) - set(ids)}"
assert html.count('data-kernel="flash2"') >= 5, "flash2 is not a column of every section"
assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
PY
); then ok; else bad "compare page: $out"; fi

# Mistakes: exit 2, the kernel named, and no page written.
page="$tmp/never.html"
expect 2 "'flash2' is compared twice" -- run --algo flash2,flash2 --seq 64 --html "$page"
expect 2 "--kernel flash2: 'flash2' is compared twice" -- run --algo flash2 --kernel flash2 --seq 64
expect 2 "--algo flash2: --pattern applies to --algo block-sparse" -- \
  run --algo block-sparse,flash2 --pattern strided:2 --seq 256 --html "$page"
expect 2 "every flag but the kernel is shared" -- \
  run --algo flash3,flash2 --warpgroups pingpong --seq 256
expect 2 "--kernel $tmp/missing.yaml: cannot read kernel description" -- \
  run --algo flash2 --kernel "$tmp/missing.yaml" --seq 64 --html "$page"
expect 2 "an empty name in the list" -- run --algo flash2, --seq 64
expect 2 "--algo nope: unknown algorithm 'nope'" -- run --algo flash2,nope --seq 64
expect 2 "infeasible configuration: flash2:" -- \
  run --algo flash2,flash1 --block-kv 4096 --seq 256 --html "$page"
expect 2 "the SVG draws one run" -- run --algo flash1,flash2 --seq 64 --svg "$tmp/never.svg"
expect 2 "--algo flash3: flash3" -- run --algo flash2,flash3 --seq 64 --profile a100-sxm4-40gb
[ ! -e "$page" ] && [ ! -e "$tmp/never.svg" ] && ok || bad "a refused comparison wrote a file"
# Repeated flags are a list too, in the order given: the first is the baseline.
expect 0 "flash1 / flash2" -- run --algo flash2 --algo flash1 --seq 64
expect 0 "flash2 / wg1_tma_fwd" -- run --kernel "$kernel_file" --algo flash2 --seq 64
# One kernel is one run, as before.
expect 0 "iosim: flash2 on" -- run --algo flash2 --seq 64

echo "compare_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
