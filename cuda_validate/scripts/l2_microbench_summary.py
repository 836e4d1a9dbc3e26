#!/usr/bin/env python3
"""Tables (Markdown) from the L2 microbenchmarks' ncu output:
  l2_residue.sh -> l2_residue_{sizes,pairs}.{csv,jsonl}: DRAM/L2 bytes per launch;
  l2_sweep.sh   -> l2_sweep.{csv,jsonl}: hit rate of repeated sweeps by footprint.
Usage: l2_microbench_summary.py residue DIR | sweep DIR
"""
import csv
import json
import sys


def rows(csv_path, jsonl_path):
    lines = [r for r in csv.reader(open(csv_path)) if r and not r[0].startswith("==")]
    header, data = lines[0], [r for r in lines[1:] if r[0].isdigit()]
    launches = [json.loads(l) for l in open(jsonl_path) if l.startswith("{")]
    if len(launches) != len(data):
        sys.exit(f"{csv_path}: {len(data)} profiled kernels, {len(launches)} launches")
    ix = {k: i for i, k in enumerate(header)}

    def value(r, k):
        return float(r[ix[k]].replace(",", "")) if k in ix else None

    return [(l, lambda k, r=r: value(r, k), r[ix["profiler__replayer_passes"]]) for l, r in
            zip(launches, data)]


def residue(d):
    for mode in ("sizes", "pairs"):
        try:
            launches = rows(f"{d}/l2_residue_{mode}.csv", f"{d}/l2_residue_{mode}.jsonl")
        except FileNotFoundError:
            continue
        print(f"\n| {mode} | kernel | MiB | passes | DRAM read MB | DRAM write MB | SM->L2 write MB |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for l, v, passes in launches:
            print(f"| {l['mode']} | {l['kernel']} | {l['bytes'] / 2**20:.0f} | {passes} | "
                  f"{v('dram__bytes_read.sum') / 1e6:.2f} | {v('dram__bytes_write.sum') / 1e6:.3f} | "
                  f"{v('lts__t_sectors_srcunit_tex_op_write.sum') * 32 / 1e6:.3f} |")


def sweep(d):
    print("\n| mapping | footprint / L2 | DRAM read MB | hit rate of sweeps 2-5 |")
    print("| --- | ---: | ---: | ---: |")
    for l, v, _ in rows(f"{d}/l2_sweep.csv", f"{d}/l2_sweep.jsonl"):
        w, reps, rd = l["footprint_bytes"], l["reps"], v("dram__bytes_read.sum")
        hit = 1 - (rd - w) / ((reps - 1) * w)
        print(f"| {l['mapping']} | {w / l['l2_bytes']:.2f} | {rd / 1e6:.1f} | {100 * hit:.1f}% |")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("residue", "sweep"):
        sys.exit(__doc__)
    {"residue": residue, "sweep": sweep}[sys.argv[1]](sys.argv[2])
