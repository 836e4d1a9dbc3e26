#!/usr/bin/env python3
"""Errors of committed blind predictions (predict_blind.py's file) against a measured set, as they
stood when the predictions were made: no iosim run, only the two committed files (issue #29: the
sealed set's first blind figures). Cases pair by suite order, as both files keep it; a case whose
problem differs between them stops the script.

Per schedule (the kernel's name for described kernels) and for all: median and worst |error| of
time (against time_queued_s where the case has it, else time_free_running_s, as iosim validate's
blind), DRAM read + write, DRAM read and DRAM write (against the summed kernels' counters).

With --by-seal the rows are the calibration half and the sealed half (the predictions' "sealed"
marks) instead of the schedules.

  prediction_errors.py PREDICTIONS MEASURED PROFILE [--format md|json] [--by-seal]
"""
import argparse
import json
import statistics
import sys

METRICS = ("time", "dram", "dram_read", "dram_write")


def measured_of(case):
    read = sum(k["metrics"]["dram__bytes_read.sum"] for k in case["kernels"])
    write = sum(k["metrics"]["dram__bytes_write.sum"] for k in case["kernels"])
    t = case.get("time_queued_s")
    if not isinstance(t, (int, float)):
        t = case["time_free_running_s"]
    return {"time": t, "dram": read + write, "dram_read": read, "dram_write": write}


def predicted_of(row):
    p = row["predicted"]
    return {"time": p["time_s"], "dram": p["dram_read_bytes"] + p["dram_write_bytes"],
            "dram_read": p["dram_read_bytes"], "dram_write": p["dram_write_bytes"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("predictions")
    ap.add_argument("measured")
    ap.add_argument("profile")
    ap.add_argument("--format", choices=("md", "json"), default="md")
    ap.add_argument("--by-seal", action="store_true", help="rows: calibration half, sealed half")
    a = ap.parse_args()
    rows = [r for r in json.load(open(a.predictions))["cases"] if r["profile"] == a.profile]
    cases = json.load(open(a.measured))["cases"]
    if len(rows) != len(cases):
        sys.exit(f"prediction_errors.py: {len(rows)} predictions for {a.profile}, {len(cases)} cases")
    groups = {}
    for row, case in zip(rows, cases):
        p, m = row["problem"], case["problem"]
        for key in ("batch", "heads", "seq", "seq_kv", "head_dim"):
            if p[key] != m[key]:
                sys.exit(f"prediction_errors.py: case {case['id']}: {key} {p[key]} != {m[key]}")
        if p.get("window", 0) != m.get("window", 0):
            sys.exit(f"prediction_errors.py: case {case['id']}: window differs")
        if not case.get("check", {}).get("passed", False):
            continue
        name = row["kernel"]["name"] if "kernel" in row else case["schedule"]
        if a.by_seal:
            name = "sealed" if row["sealed"] else "calibration"
        pred, meas = predicted_of(row), measured_of(case)
        err = {k: abs(pred[k] / meas[k] - 1) for k in METRICS if meas[k] > 0}
        for g in (name, "all"):
            groups.setdefault(g, []).append(err)
    out = {}
    for g, errs in groups.items():
        out[g] = {"cases": len(errs)}
        for k in METRICS:
            xs = [e[k] for e in errs if k in e]
            out[g][k] = {"median": statistics.median(xs), "worst": max(xs)} if xs else None
    if a.format == "json":
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    print(f"| {'half' if a.by_seal else 'schedule'} | cases | blind time median / worst | DRAM median / worst | "
          "DRAM read median / worst | DRAM write median / worst |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for g in sorted(out, key=lambda x: (x == "all", x)):  # calibration before sealed
        cells = [f"{100 * out[g][k]['median']:.1f}% / {100 * out[g][k]['worst']:.1f}%"
                 if out[g][k] else "-" for k in METRICS]
        print(f"| {g} | {out[g]['cases']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
