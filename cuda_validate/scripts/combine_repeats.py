#!/usr/bin/env python3
"""Combines repeated measurements of one suite (run_suite.sh run several times, each in its own
processes) into one iosim-measurements file: per case the median over the repeats of the
free-running time and of every counter of every kernel, with the spread of each kept beside it.

  combine_repeats.py --commit SHA --out FILE r1/measurements.json r2/... r3/...

A repeat without counters for a kernel (its ncu group ran out of time) adds its times only.
The output records the commit of the kernels and scripts that measured (--commit), the inputs,
and per case "repeats": {"time_free_running_s": [...], "spread": {...}}, where a spread is
(max - min) / median over the repeats that have the value. Only cases whose output check passed
in every repeat are kept; the others are listed in "dropped".
"""
import argparse
import copy
import json
import statistics
import sys

SPREAD_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
                  "l1tex__m_xbar2l1tex_read_sectors.sum", "lts__t_sectors_srcunit_tex_op_write.sum")


def spread(values):
    values = [v for v in values if isinstance(v, (int, float))]
    if len(values) < 2:
        return None
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else None


def combine_kernel(kernels):
    """kernels: the same (case, role) kernel from each repeat; median of each numeric metric."""
    out = copy.deepcopy(kernels[0])
    with_metrics = [k for k in kernels if k.get("metrics")]
    if with_metrics:
        out = copy.deepcopy(with_metrics[0])
        for key in out["metrics"]:
            vals = [k["metrics"].get(key) for k in with_metrics]
            vals = [v for v in vals if isinstance(v, (int, float))]
            if vals:
                out["metrics"][key] = statistics.median(vals)
    for key in ("time_free_running_s", "time_free_running_cold_l2_s"):
        vals = [k.get(key) for k in kernels if isinstance(k.get(key), (int, float))]
        if vals:
            out[key] = statistics.median(vals)
    out["repeats_with_counters"] = len(with_metrics)
    out["spread"] = {m: spread([k["metrics"].get(m) for k in with_metrics]) for m in SPREAD_METRICS}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commit", required=True, help="commit of the kernels and scripts measured")
    ap.add_argument("--out", required=True)
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    runs = [json.load(open(p)) for p in args.inputs]
    base = copy.deepcopy(runs[0])
    base["source_commit"] = args.commit
    base["combined_from"] = {"files": args.inputs, "repeats": len(runs),
                             "statistic": "median over repeats in separate processes"}
    base["clocks_per_repeat"] = [r.get("clocks") for r in runs]
    by_id = [{c["id"]: c for c in r["cases"]} for r in runs]
    cases, dropped = [], []
    for c0 in runs[0]["cases"]:
        same = [b.get(c0["id"]) for b in by_id]
        if any(c is None or not c.get("check", {}).get("passed") for c in same):
            dropped.append(c0["id"])
            continue
        c = copy.deepcopy(c0)
        times = [x.get("time_free_running_s") for x in same]
        times = [t for t in times if isinstance(t, (int, float))]
        c["time_free_running_s"] = statistics.median(times) if times else None
        kernels = []
        for i, k in enumerate(c0.get("kernels", [])):
            kernels.append(combine_kernel([x["kernels"][i] for x in same if i < len(x["kernels"])]))
        c["kernels"] = kernels
        c["repeats"] = {
            "time_free_running_s": times,
            "spread": {"time_free_running_s": spread(times),
                       "dram_read": spread([sum(k["metrics"]["dram__bytes_read.sum"]
                                                for k in x["kernels"]) for x in same
                                            if all(k.get("metrics") for k in x["kernels"])]),
                       "dram_write": spread([sum(k["metrics"]["dram__bytes_write.sum"]
                                                 for k in x["kernels"]) for x in same
                                             if all(k.get("metrics") for k in x["kernels"])])},
        }
        cases.append(c)
    base["cases"] = cases
    base["dropped"] = dropped
    base["summary"] = dict(base.get("summary", {}), cases=len(cases),
                           roles_without_counters=sum(1 for c in cases for k in c["kernels"]
                                                      if not k.get("metrics")))
    with open(args.out, "w") as f:
        json.dump(base, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases from {len(runs)} repeats ({len(dropped)} dropped) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
