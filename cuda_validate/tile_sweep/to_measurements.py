#!/usr/bin/env python3
"""The tile sweep's timing files (run_tile_sweep.sh MODE=time, format "iosim-tile-sweep") as one
iosim-measurements file (cuda_validate/FORMAT.md), so that `iosim validate` predicts every
configuration blind and reports its ranking per (family, shape) beside the time errors:

  python3 to_measurements.py --out TILE_SWEEP.json [--shapes A,B] TIME.json...
  iosim validate TILE_SWEEP.json

One case per configuration that ran and passed its output check. Each carries the kernel
description predict.py writes for it (imported from there, so that validate predicts exactly what
the committed blind predictions predicted), `rank_group` "<family> <shape>", and time only: the
median over the timing sets as `time_queued_s` (each set is the mean of back-to-back launches, the
GPU busy while the host enqueues), the sets and their spread ((max - min) / median, the spread
ranking.py uses) under `repeats`. No Nsight Compute counters: validate reports bytes as not
measured.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict import description  # noqa: E402  (the same descriptions as the blind predictions)


def case(run):
    times = run["times_s"]
    median = statistics.median(times)
    c = {
        "id": "{family}_{shape}_{block_q}x{block_kv}_s{stages}_w{warps}".format(**run),
        "schedule": "flash2",
        "pass": "fwd",
        "problem": {"batch": run["batch"], "heads": run["heads"], "seq": run["seq"],
                    "seq_kv": run["seq"], "head_dim": run["d"], "dtype": "fp16",
                    "causal": bool(run["causal"])},
        "rank_group": f"{run['family']} {run['shape']}",
        "kernel": description(run),
        "check": run["check"],
        "time_queued_s": median,
    }
    if len(times) > 1:
        c["repeats"] = {"time_queued_s": times,
                        "spread": {"time_queued_s": (max(times) - min(times)) / median}}
    return c


def convert(paths, shapes=None):
    """(device name, cases, configurations left out) of the timing files at `paths`: files of the
    same configurations (repeats) pool their timing sets; `shapes` keeps those shapes only."""
    device, runs, left_out = None, {}, 0
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        if doc.get("format") != "iosim-tile-sweep" or doc.get("version") != 1:
            raise SystemExit(f"{path}: not an iosim-tile-sweep file, version 1")
        if device is not None and doc["device"] != device:
            raise SystemExit(f"{path}: device '{doc['device']}', the files before: '{device}'")
        device = doc["device"]
        for run in doc["runs"]:
            # Not run (too much shared memory, ...), not timed, or wrong: nothing to rank.
            if "infeasible" in run or not run.get("times_s") or not run["check"]["passed"]:
                left_out += 1
                continue
            if shapes and run["shape"] not in shapes:
                continue
            key = "{family}_{shape}_{block_q}x{block_kv}_s{stages}_w{warps}".format(**run)
            if key in runs:
                runs[key] = dict(runs[key], times_s=runs[key]["times_s"] + run["times_s"])
            else:
                runs[key] = run
    return device, [case(r) for r in runs.values()], left_out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the iosim-measurements file to write")
    ap.add_argument("--shapes", help="comma-separated shape names to keep (default: all)")
    ap.add_argument("times", nargs="+", help="timing files (run_tile_sweep.sh MODE=time)")
    args = ap.parse_args()
    device, cases, left_out = convert(args.times, set(args.shapes.split(",")) if args.shapes
                                      else None)
    if not cases:
        raise SystemExit("no configuration ran and passed its check")
    doc = {
        "format": "iosim-measurements", "version": 1,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": "cuda_validate/tile_sweep/to_measurements.py from "
                  + ", ".join(os.path.relpath(p) for p in args.times),
        "device": {"name": device},
        "cases": cases,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases, {left_out} configurations left out (not run, not timed or "
          f"check failed)", file=sys.stderr)


if __name__ == "__main__":
    main()
