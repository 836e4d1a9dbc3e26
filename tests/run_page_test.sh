#!/usr/bin/env bash
# `iosim run --html` and `--svg` (reports/run_page.cpp): for runs of one kernel and of several
# (standard attention, flash-decoding, a backward), with the L2 on and off, the page and the SVG
# carry the run's own numbers: each memory-chart link's bytes (data-read-bytes, data-write-bytes)
# are the JSON's counters, the L2 hit rate and the roofline's point are the JSON's achieved
# figures, the timeline has a row per kernel; the page is self-contained (no http address, no
# external script). Refusals (--html onto an input, a missing folder, a device) are in
# tests/bad_inputs/cases.tsv. Run by ctest with IOSIM set to the binary; about a second.
source "$(dirname "$0")/cli_harness.sh"

check() { # NAME ARGS...: run once with --html, --svg and --format json, compare
  local name=$1
  shift
  if ! "$IOSIM" run "$@" --format json --html "$tmp/$name.html" --svg "$tmp/$name.svg" \
    >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    bad "$name: iosim run $*: $(cat "$tmp/$name.err")"
    return
  fi
  grep -q "iosim run: wrote $tmp/$name.html" "$tmp/$name.err" || bad "$name: no 'wrote' message"
  local out
  if out=$(python3 - "$tmp/$name" 2>&1 <<'PY'
import json, re, sys
import xml.dom.minidom
import html as html_lib
base = sys.argv[1]
j = json.load(open(base + ".json"))
html = open(base + ".html").read()
svg = open(base + ".svg").read()
# The SVG file, and each chart inline in the page, is well-formed XML (an inline <svg> is parsed
# as XML-like foreign content: a stray "<" in its style or text would break it).
try:
    xml.dom.minidom.parseString(svg)
    for chart in re.findall(r"<svg .*?</svg>", html, re.S):
        xml.dom.minidom.parseString(chart)
except Exception as e:
    sys.exit(f"not well-formed XML: {e}")
if len(re.findall(r"<svg ", html)) != 5:
    sys.exit("the page has not five charts")
# Where the bytes go: a bar per tensor with the JSON's HBM reads, writes during the run and lines
# left dirty in L2 at the end (the output had no bar while its lines were all still dirty).
bars = {m[0]: (int(m[1]), int(m[2]), int(m[3])) for m in re.findall(
    r'<g class="tensor" data-tensor="([^"]*)" data-read-bytes="(\d+)" data-write-bytes="(\d+)" '
    r'data-dirty-bytes="(\d+)"', html)}
want_t = {n: (v["hbm_read_bytes"], v["hbm_write_bytes"], v["hbm_write_dirty_at_end_bytes"])
          for n, v in j["counters"]["per_tensor"].items()}
if {html_lib.unescape(n): v for n, v in bars.items()} != want_t:
    sys.exit(f"tensor bars {bars}, the JSON's {want_t}")
if sum(v[2] for v in want_t.values()) != j["counters"]["hbm_write_dirty_at_end_bytes"]:
    sys.exit("the tensors' dirty-at-end bytes do not sum to the run's")
# Where the time goes: the bar's shares are the kernels' time_attribution summed, and they add up
# to the run's time; the title names the run's bound.
bar = dict(re.findall(r'<rect class="share"[^>]*data-row="(\w+)" data-seconds="([^"]+)"', html))
rows = {}
for k in j["kernels"]:
    for row, v in k["time_attribution"]["seconds"].items():
        rows[row] = rows.get(row, 0.0) + v
if {r: v for r, v in rows.items() if v > 0}.keys() != bar.keys() or any(
        abs(float(bar[r]) - rows[r]) > 1e-5 * rows[r] for r in bar):
    sys.exit(f"time bar {bar}, the JSON's {rows}")
if abs(sum(float(v) for v in bar.values()) - j["time_s"]) > 1e-5 * j["time_s"]:
    sys.exit(f"time bar sums to {sum(float(v) for v in bar.values())}, the run took {j['time_s']}")
if f"({j['bound']}-bound)" not in html:
    sys.exit(f"the time bar does not name the run's bound ({j['bound']})")
c, a = j["counters"], j["achieved"]
want = {"hbm": (c["hbm_read_bytes"], c["hbm_write_bytes"]),
        "l2": (c["l2_read_bytes"], c["l2_write_bytes"]),
        "smem": (c["smem_read_bytes"], c["smem_write_bytes"])}
for doc, text in (("page", html), ("svg", svg)):
    links = {m[0]: (int(m[1]), int(m[2])) for m in re.findall(
        r'data-link="(\w+)" data-read-bytes="(\d+)" data-write-bytes="(\d+)"', text)}
    if links != want:
        sys.exit(f"{doc}: links {links}, the JSON's {want}")
    fractions = dict(re.findall(r'data-link="(\w+)"[^>]*data-peak-fraction="([^"]+)"', text))
    for link, key in (("hbm", "hbm_peak_fraction"), ("l2", "l2_peak_fraction"), ("smem", "smem_peak_fraction")):
        if abs(float(fractions[link]) - a[key]) > 1e-5 * max(1, a[key]):
            sys.exit(f"{doc}: {link} at {fractions[link]} of its bandwidth, the JSON's {a[key]}")
    # The run's point on the roofline (per HBM byte): the JSON's tensor TFLOP/s and intensity.
    pts = re.findall(r'data-intensity="([^"]+)" data-tflops="([^"]+)"', text)
    hbm = c["hbm_read_bytes"] + c["hbm_write_bytes"]
    x = c["tensor_flops"] / hbm
    if not pts or abs(float(pts[0][0]) - x) > 1e-5 * x or abs(float(pts[0][1]) - a["tensor_tflops"]) > 1e-5 * a["tensor_tflops"]:
        sys.exit(f"{doc}: first roofline point {pts[:1]}, want ({x}, {a['tensor_tflops']})")
    # In a run of several kernels, then each kernel with tensor-core work at its own rate.
    if len(j["kernels"]) > 1:
        # (a kernel that moved no HBM bytes, its reads all L2 hits, has no intensity: not drawn)
        want_k = [k["achieved_tensor_tflops"] for k in j["kernels"] if k["counters"]["tensor_flops"] > 0
                  and k["counters"]["hbm_read_bytes"] + k["counters"]["hbm_write_bytes"] > 0]
        got_k = [float(p[1]) for p in pts[(2 if j["l2"] == "on" else 1):]]
        if len(got_k) != len(want_k) or any(abs(g - w) > 1e-5 * w for g, w in zip(got_k, want_k)):
            sys.exit(f"{doc}: kernel points at {got_k} TFLOP/s, the JSON's {want_k}")
    if j["l2"] == "on" and f"hit rate {100 * a['l2_read_hit_rate']:.1f}%" not in text:
        sys.exit(f"{doc}: no 'hit rate {100 * a['l2_read_hit_rate']:.1f}%'")
    if "http://" in text.replace("http://www.w3.org/2000/svg", "") or "https://" in text:
        sys.exit(f"{doc}: refers to the network")
rows = re.findall(r'<g class="kernel" data-kernel="([^"]*)" data-time-s="([^"]+)"', html)
names = [k["name"] for k in j["kernels"]]
if [html_lib.unescape(r[0]) for r in rows] != names:
    sys.exit(f"timeline rows {rows}, kernels {names}")
if abs(sum(float(r[1]) for r in rows) - j["time_s"]) > 1e-6 * j["time_s"]:
    sys.exit("timeline: kernel times do not add up to the run's")
if "<script src" in html or "<link" in html:
    sys.exit("page loads a file")
if f"{a['tensor_tflops']:.4g} TFLOP/s" not in html:
    sys.exit(f"page: no '{a['tensor_tflops']:.4g} TFLOP/s'")
print(f"{len(names)} kernel(s), links {want}")
PY
  ); then ok; echo "$name: $out"; else bad "$name: $out"; fi
}

check flash2 --algo flash2 --seq 2048 --head-dim 64 --heads 8
check flash2_l2off --algo flash2 --seq 1024 --head-dim 64 --l2 off
check standard --algo standard --seq 1024 --head-dim 64 --heads 4
check decoding --algo flash-decoding --seq 1 --seq-kv 8192 --head-dim 128 --heads 16 --kv-heads 2
check fwdbwd --algo flash2 --pass fwdbwd --seq 512 --head-dim 64 --heads 4 --causal
# A name that needs escaping, from a kernel description.
check escaped --kernel '{"name": "t<p&q", "dataflow": {"forward": "query_stationary"}}' --seq 512 --head-dim 64

# The table says whose lower bound it prints beside the L2-on HBM figure.
expect 0 "lower bound (two-level count, --l2 off)" -- run --seq 1024
expect 0 "L2 hit rate of reads" -- run --seq 1024
# So does the page: its ratio set L2-on DRAM bytes against the two-level bound as "HBM / bound
# 0.91x" (issue #51); it names both sides, and the L2-off page keeps the plain ratio.
grep -q "HBM after the L2 / bound [0-9.]*x (may be below 1" "$tmp/fwdbwd.html" && ok ||
  bad "the page's lower-bound row does not say its HBM bytes are after the L2"
grep -q "<td>lower bound (two-level count, --l2 off)</td><td>[^<]*</td><td>-</td><td>HBM / bound" \
  "$tmp/flash2_l2off.html" && ok || bad "the L2-off page's lower-bound row lost its ratio"
# CSV: the achieved columns are the JSON's.
hdr=$("$IOSIM" run --seq 1024 --format csv | head -1)
for col in tensor_tflops tensor_peak_fraction hbm_gbps hbm_peak_fraction smem_peak_fraction l2_read_hit_rate; do
  if [[ ",$hdr," == *",$col,"* ]]; then ok; else bad "CSV header has no $col"; fi
done

echo "run_page: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
