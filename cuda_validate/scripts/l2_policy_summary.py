#!/usr/bin/env python3
"""Tables of microbench/l2_policy.cu's measurements (issue #47) from its committed files: the hit
rate of repeated sweeps per reader set and mapping, and what a hot set lost to a stream.

  l2_policy_summary.py DIR [--sweeps] [--scan] [--layout] [--json OUT]

DIR holds l2_policy_sweeps.jsonl / .csv(.gz) and l2_policy_scan.jsonl / .csv(.gz) (Nsight Compute's
raw pages, one row per launch in launch order). Hit rate of sweeps 2..R = 1 - (DRAM read - W) /
((R - 1) W); a scan's loss = (DRAM read - X - S) / X. --json writes both as one JSON file
(l2_policy_summary.json beside the data), which tests/l2_policy_test.cpp holds iosim's L2 against.
"""
import argparse
import csv
import gzip
import io
import json
import os


def launches(folder, part):
    rows = [json.loads(line) for line in open(os.path.join(folder, f"l2_policy_{part}.jsonl"))]
    path = os.path.join(folder, f"l2_policy_{part}.csv")
    text = gzip.open(path + ".gz", "rt").read() if os.path.exists(path + ".gz") else open(path).read()
    lines = [line for line in io.StringIO(text) if line.startswith('"')]
    metrics = [r for r in csv.DictReader(lines) if r["ID"].isdigit()]
    if len(metrics) != len(rows):
        raise SystemExit(f"{path}: {len(metrics)} profiled launches for {len(rows)} launches")
    for launch, m in zip(rows, metrics):
        launch["dram_read"] = float(m["dram__bytes_read.sum"].replace(",", ""))
    return rows


def hit(r):
    """(footprint / L2, hit rate of sweeps 2..R, clamped to [0, 1]) of one launch."""
    w = r["footprint_bytes"]
    h = 1 - (r["dram_read"] - w) / ((r["reps"] - 1) * w)
    return round(w / r["l2_bytes"], 2), min(1.0, max(0.0, h))


def sweep_hits(folder):
    """{(set, mapping): {footprint / L2: hit rate of sweeps 2..R}} in launch order."""
    out = {}
    for r in launches(folder, "sweeps"):
        f, h = hit(r)
        out.setdefault((r["set"], r["mapping"]), {})[f] = h
    return out


def scan_losses(folder):
    """[(stream / L2, share of the hot set lost)]"""
    return [(round(r["stream_bytes"] / r["l2_bytes"], 2),
             min(1.0, max(0.0, (r["dram_read"] - r["hot_bytes"] - r["stream_bytes"]) / r["hot_bytes"])))
            for r in launches(folder, "scan")]


def sweeps(folder):
    rows = launches(folder, "sweeps")
    kinds = []
    for r in rows:
        k = (r["set"], r["mapping"])
        if k not in kinds:
            kinds.append(k)
    fractions = sorted({round(r["footprint_bytes"] / r["l2_bytes"], 2) for r in rows})
    print("| readers | mapping | " + " | ".join(f"{f:g}" for f in fractions) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in fractions) + " |")
    hits = sweep_hits(folder)
    for k in kinds:
        print(f"| {k[0]} | {k[1]} | " +
              " | ".join(f"{100 * hits[k][f]:.0f}%" if f in hits[k] else "-" for f in fractions)
              + " |")


def scan(folder):
    rows = launches(folder, "scan")
    print("| stream S / L2 | " + " | ".join(f"{r['stream_bytes'] / r['l2_bytes']:.2f}" for r in rows) + " |")
    print("| --- | " + " | ".join("---:" for _ in rows) + " |")
    lost = [(r["dram_read"] - r["hot_bytes"] - r["stream_bytes"]) / r["hot_bytes"] for r in rows]
    print("| hot set lost | " + " | ".join(f"{100 * min(1, max(0, x)):.0f}%" for x in lost) + " |")


def layout_hits(folder):
    """{layout: {footprint / L2: hit rate of sweeps 2..R}} of the layout part."""
    out = {}
    for r in launches(folder, "layout"):
        f, h = hit(r)
        out.setdefault(r["layout"], {})[f] = h
    return out


def layout(folder):
    """The shared sweeps' hit rate per layout of the footprint's pages (l2_policy_layout.*)."""
    hits = layout_hits(folder)
    fractions = sorted({f for v in hits.values() for f in v})
    print("| layout | " + " | ".join(f"{f:g}" for f in fractions) + " |")
    print("| --- | " + " | ".join("---:" for _ in fractions) + " |")
    for name, hit in hits.items():
        print(f"| {name} | " + " | ".join(f"{100 * hit[f]:.0f}%" if f in hit else "-"
                                          for f in fractions) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--sweeps", action="store_true")
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--layout", action="store_true", help="only the layout part's table")
    ap.add_argument("--json", default="", help="write the hit rates and losses to this file")
    a = ap.parse_args()
    if a.json:
        doc = {"what": "microbench/l2_policy.cu on " + a.folder + " (l2_policy_summary.py)",
               "sweeps": [{"set": k[0], "mapping": k[1],
                           "hits": [[f, round(h, 4)] for f, h in v.items()]}
                          for k, v in sweep_hits(a.folder).items()],
               "scan": [[s, round(x, 4)] for s, x in scan_losses(a.folder)]}
        if os.path.exists(os.path.join(a.folder, "l2_policy_layout.jsonl")):
            doc["layout"] = [{"layout": k, "hits": [[f, round(h, 4)] for f, h in v.items()]}
                             for k, v in layout_hits(a.folder).items()]
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        return
    if a.layout:
        layout(a.folder)
        return
    if a.sweeps or not a.scan:
        sweeps(a.folder)
    if a.scan:
        if a.sweeps:
            print()
        scan(a.folder)


if __name__ == "__main__":
    main()
