#!/usr/bin/env python3
"""Writes the CI accuracy floors (measurements/accuracy_levels*.json) from what
`iosim validate` measures now, per device folder under measurements/.

A level is the current error rounded up to the next 0.5% (so that floating-point noise in a
future build does not fail CI). The script never loosens a recorded level unless told to with
--loosen "why" (the reason is stored in the file and must also go in CALIBRATION.md); it
tightens freely. Usage, from the repository root after a build:
  scripts/accuracy_levels.py [--loosen "why"]
"""
import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VALIDATION = os.path.join(ROOT, "measurements")
IOSIM = os.path.join(ROOT, "build", "iosim")
METRICS = ("dram", "dram_read", "dram_write", "l2_read", "l2_write", "time")
FILES = {
    # levels file -> which measurement files of a device folder it covers
    "accuracy_levels.json": lambda d: d,  # measurements*.json of the folder
    "accuracy_levels_pytorch.json": lambda d: os.path.join(d, "pytorch_sdpa_2026-11-22.json"),
    "accuracy_levels_cudnn.json":
        lambda d: os.path.join(d, "cudnn_2026-11-23", "cudnn_sdpa_2026-11-23.json"),
}


def round_up(x):
    return math.ceil(x * 200 - 1e-9) / 200


def summaries(path):
    out = subprocess.run([IOSIM, "validate", path, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["summaries"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loosen", default="", help="allow a level to rise, for this reason")
    args = ap.parse_args()
    devices = sorted(d for d in os.listdir(VALIDATION) if os.path.isdir(os.path.join(VALIDATION, d)))
    failed = False
    for name, target in FILES.items():
        path = os.path.join(VALIDATION, name)
        old = json.load(open(path)) if os.path.exists(path) else {}
        new = {"comment": old.get("comment", ""), "devices": {}}
        for dev in devices:
            measured = target(os.path.join(VALIDATION, dev))
            if not os.path.exists(measured):
                continue
            levels = {}
            for s in summaries(measured):
                entry = {"cases": s["cases"]}
                for m in METRICS:
                    med, worst = s[m]["median_abs_error"], s[m]["worst_abs_error"]
                    entry[m] = {"median": None if med is None else round_up(med),
                                "worst": None if worst is None else round_up(worst)}
                    before = old.get("devices", {}).get(dev, {}).get("schedules", {}).get(
                        s["schedule"], {}).get(m)
                    for k in ("median", "worst"):
                        if before and before.get(k) is not None and entry[m][k] is not None and \
                                entry[m][k] > before[k] + 1e-12:
                            if args.loosen:
                                print(f"{name} {dev} {s['schedule']} {m} {k}: "
                                      f"{before[k]} -> {entry[m][k]} ({args.loosen})")
                            else:
                                print(f"{name} {dev} {s['schedule']} {m} {k} would loosen: "
                                      f"{before[k]} -> {entry[m][k]}; rerun with --loosen \"why\"",
                                      file=sys.stderr)
                                failed = True
                levels[s["schedule"]] = entry
            new["devices"][dev] = {"schedules": levels}
        if args.loosen:
            new["last_loosened_because"] = args.loosen
        elif "last_loosened_because" in old:
            new["last_loosened_because"] = old["last_loosened_because"]
        if not failed:
            with open(path, "w") as f:
                json.dump(new, f, indent=1)
                f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
