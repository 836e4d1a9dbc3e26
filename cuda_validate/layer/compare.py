#!/usr/bin/env python3
"""Blind predictions of the layer suite (predict_blind.py) against what the GPU measured
(run_layer_suite.sh): per GEMM, time (CUDA events over CUDA graphs, median of 3 sets), DRAM
bytes read and written and the bytes the SMs read from L2 (Nsight Compute, L2 flushed before
each kernel, median of 3 calls, summed over a call's kernels: cuBLAS's split-K launches a
reduction beside its GEMM), with cuBLAS's tile
from the kernel name; per layer, the time of Llama-3-8B's layer. Median and worst |error| per set
(calibration, held out, or a sealed suite's) and for all.

Usage: cuda_validate/layer/compare.py PREDICTIONS.json MEASURED_DIR [--json OUT.json]
                                      [--check LEVELS.json] [--time GEMM_TIME.json]
--time: the GEMM times from this file instead of MEASURED_DIR/gemm_time.json (a suite timed in the
sustained regime, measure_layer.py gemm-time --sustain; its SM clock samples are summarized too).
Prints Markdown. --check: exit 1 when an error rises above its level in LEVELS.json
(cuda_validate/measurements/accuracy_levels_layer.json; ctest layer_accuracy): each set's GEMM
time and DRAM-read median and worst, and each layer's time.
"""
import csv
import gzip
import json
import os
import re
import statistics
import sys

TILE = re.compile(r"nvjet_sm90_tst_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_([hv])_bz(_coop[AB])?"
                  r"(_bias)?(_splitK)?_")
UNIT = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-9, "us": 1e-6, "ms": 1e-3,
        "s": 1.0, "sector": 32}


def ncu_calls(measured):
    """{gemm id: [(dram_read, dram_write, duration_s, l2_read, [kernel names]) per call]}."""
    order = json.load(open(os.path.join(measured, "gemm_ncu_order.json")))
    rows = list(csv.reader(gzip.open(os.path.join(measured, "gemm_ncu.csv.gz"), "rt")))
    hdr, units = rows[0], rows[1]

    def col(name):
        i = hdr.index(name)
        return i, UNIT.get(units[i], 1.0)

    name_i = hdr.index("Kernel Name")
    cols = [col("dram__bytes_read.sum"), col("dram__bytes_write.sum"),
            col("gpu__time_duration.sum"), col("lts__t_sectors_srcunit_tex_op_read.sum")]
    kernels = [(r[name_i], [float(r[i].replace(",", "")) * u for i, u in cols]) for r in rows[2:]]
    out, pos = {}, 0

    def spin(k):
        return "spin_kernel" in k[0]

    for gid in order["order"]:
        if pos >= len(kernels) or not spin(kernels[pos]):
            raise SystemExit(f"{gid}: expected the delimiting spin kernel at row {pos}")
        pos += 1
        calls = []
        for _ in range(order["repeats"]):
            names, sums = [], [0.0, 0.0, 0.0, 0.0]
            while pos < len(kernels) and not spin(kernels[pos]):
                names.append(kernels[pos][0])
                sums = [a + b for a, b in zip(sums, kernels[pos][1])]
                pos += 1
            pos += 1  # the spin after the call
            calls.append((*sums, names))
        out[gid] = calls
    return out


def tile_of(names):
    for n in names:
        m = TILE.search(n)
        if m:
            bm, bn, bk, stages, cm, cn, _, coop, _, split = m.groups()
            t = f"{bm}x{bn}x{bk}, {stages} stages, cluster {cm}x{cn}"
            return t + (f", {coop[1:]}" if coop else "") + (", split-K" if split else "")
    return "; ".join(n[:40] for n in names)


def err(pred, meas):
    return pred / meas - 1.0 if meas > 0 else None


def stats(errors):
    e = [abs(x) for x in errors if x is not None]
    return (statistics.median(e), max(e)) if e else (None, None)


def pct(x):
    return "-" if x is None else f"{100 * x:+.1f}%"


def main():
    args = sys.argv[1:]
    out_json = levels = time_file = None
    for flag in ("--json", "--check", "--time"):
        if flag in args:
            i = args.index(flag)
            if flag == "--json":
                out_json = args[i + 1]
            elif flag == "--time":
                time_file = args[i + 1]
            else:
                levels = json.load(open(args[i + 1]))
            del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    pred = json.load(open(args[0]))
    measured = args[1]
    times = {g["id"]: g for g in json.load(open(
        time_file or os.path.join(measured, "gemm_time.json")))["gemms"]}
    ncu = ncu_calls(measured)
    rows = []
    for g in pred["gemms"]:
        t = times[g["id"]]
        calls = ncu[g["id"]]
        meas_t = statistics.median(t["time_s"])
        dr = statistics.median(c[0] for c in calls)
        dw = statistics.median(c[1] for c in calls)
        l2r = statistics.median(c[3] for c in calls)
        p = g["predicted"]
        rows.append({"id": g["id"], "set": g["set"], "m": g["m"], "n": g["n"], "k": g["k"],
                     "cublas_tile": tile_of(calls[0][4]),
                     "time_s": [p["time_s"], meas_t], "time_err": err(p["time_s"], meas_t),
                     "dram_read": [p["hbm_read_bytes"], dr],
                     "dram_read_err": err(p["hbm_read_bytes"], dr),
                     "dram_write": [p["hbm_write_bytes"], dw],
                     "l2_read": [p["l2_read_bytes"], l2r],
                     "l2_read_err": err(p["l2_read_bytes"], l2r),
                     "spread_time": (max(t["time_s"]) - min(t["time_s"])) / meas_t,
                     "sm_clock_mhz": [p.get("sm_clock_mhz"),
                                      statistics.median(t["sm_clock_mhz"])
                                      if t.get("sm_clock_mhz") else None]})
    layers = []
    lmeas = ({x["id"]: x for x in json.load(open(os.path.join(measured, "layer_time.json")))["layers"]}
             if pred["layers"] else {})
    for lay in pred["layers"]:
        m = lmeas[lay["id"]]
        mt = statistics.median(m["layer_time_s"])
        layers.append({"id": lay["id"], "time_s": [lay["predicted"]["layer_time_s"], mt],
                       "time_err": err(lay["predicted"]["layer_time_s"], mt)})
    print(f"Layer suite on {pred['profile']}: blind predictions of {pred['iosim_commit'][:7]} "
          f"against {measured}" + (f" (times: {time_file})" if time_file else "") + "\n")
    print("| set | GEMMs | time median / worst | DRAM read median / worst | L2 read median / worst |")
    print("| --- | ---: | ---: | ---: | ---: |")
    summary = {}
    for name, sel in (("calibration", "calibration"), ("held out", "heldout"),
                      ("sealed", "sealed"), ("all", None)):
        rs = [r for r in rows if sel is None or r["set"] == sel]
        if not rs:
            continue
        tm, tw = stats(r["time_err"] for r in rs)
        dm, dw = stats(r["dram_read_err"] for r in rs)
        lm, lw = stats(r["l2_read_err"] for r in rs)
        summary[name] = {"gemms": len(rs), "time_median": tm, "time_worst": tw,
                         "dram_read_median": dm, "dram_read_worst": dw,
                         "l2_read_median": lm, "l2_read_worst": lw}
        print(f"| {name} | {len(rs)} | {100 * tm:.1f}% / {100 * tw:.1f}% | "
              f"{100 * dm:.1f}% / {100 * dw:.1f}% | {100 * lm:.1f}% / {100 * lw:.1f}% |")
    print("\n| GEMM | set | M x N x K | cuBLAS tile (name) | time iosim / GPU | error | DRAM read "
          "iosim / GPU | error | L2 read iosim / GPU | error |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['id']} | {r['set']} | {r['m']}x{r['n']}x{r['k']} | {r['cublas_tile']} | "
              f"{r['time_s'][0] * 1e6:.1f} / {r['time_s'][1] * 1e6:.1f} us | {pct(r['time_err'])} | "
              f"{r['dram_read'][0] / 1e6:.1f} / {r['dram_read'][1] / 1e6:.1f} MB | "
              f"{pct(r['dram_read_err'])} | "
              f"{r['l2_read'][0] / 1e6:.1f} / {r['l2_read'][1] / 1e6:.1f} MB | "
              f"{pct(r['l2_read_err'])} |")
    print("\n| Llama-3-8B layer | iosim | GPU (PyTorch, CUDA graph) | error |")
    print("| --- | ---: | ---: | ---: |")
    for lay in layers:
        print(f"| {lay['id']} | {lay['time_s'][0] * 1e6:.1f} us | {lay['time_s'][1] * 1e6:.1f} us | "
              f"{pct(lay['time_err'])} |")
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"summary": summary, "gemms": rows, "layers": layers}, f, indent=1)
            f.write("\n")
    if levels is not None:
        return check(levels, summary, layers)
    return 0


def check(levels, summary, layers):
    """1 when an error rose above its recorded level (the errors now, rounded up to 0.5%)."""
    failed = []
    for name, stats_now in summary.items():
        for key, level in levels["gemms"].get(name, {}).items():
            if stats_now[key] is not None and stats_now[key] > level + 1e-9:
                failed.append(f"GEMMs {name} {key}: {100 * stats_now[key]:.2f}% > level "
                              f"{100 * level:.1f}%")
    for lay in layers:
        level = levels["layers"].get(lay["id"])
        if level is not None and abs(lay["time_err"]) > level + 1e-9:
            failed.append(f"layer {lay['id']} time: {100 * abs(lay['time_err']):.2f}% > level "
                          f"{100 * level:.1f}%")
    for f in failed:
        print("FAIL:", f, file=sys.stderr)
    if not failed:
        print("layer accuracy: every level holds", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
