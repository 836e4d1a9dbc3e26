#!/usr/bin/env python3
"""Cycles a kernel at two Nsight Compute clock controls (issue #46): two measurements.json of the
same suite, one counter pass with NCU_CLOCK_CONTROL=base and one with none. Per case: the
kernels' gpu__time_duration and SM clock (sm__cycles_elapsed.avg.per_second) in each, and the
cycles' ratio free / base; per schedule the median. A ratio of 1 means the kernel's time is all
SM work; above 1, a part of it runs on a clock of its own (HBM, the L2).

  python3 cuda_validate/scripts/free_clock_cycles.py BASE.json FREE.json
"""
import json
import statistics
import sys


def kernels(case):
    ks = [k for k in case.get("kernels") or [] if k.get("metrics")]
    t = sum(k["metrics"].get("gpu__time_duration.sum", 0) for k in ks)
    clocks = [k["metrics"].get("sm__cycles_elapsed.avg.per_second") for k in ks]
    clocks = [c for c in clocks if c]
    return t * 1e-9, (statistics.median(clocks) if clocks else 0.0)


def main():
    base = {c["id"]: c for c in json.load(open(sys.argv[1]))["cases"]}
    free = {c["id"]: c for c in json.load(open(sys.argv[2]))["cases"]}
    by = {}
    print("| case | base: us @ MHz | free: us @ MHz | cycles free / base |")
    print("| --- | ---: | ---: | ---: |")
    for cid, c in base.items():
        if cid not in free:
            continue
        tb, fb = kernels(c)
        tf, ff = kernels(free[cid])
        if not (tb and fb and tf and ff):
            continue
        r = tf * ff / (tb * fb)
        key = c["schedule"] + (" " + c["pass"] if c.get("pass", "fwd") != "fwd" else "")
        by.setdefault(key, []).append(r)
        print(f"| {cid} | {tb * 1e6:.1f} @ {fb / 1e6:.0f} | {tf * 1e6:.1f} @ {ff / 1e6:.0f} | {r:.3f} |")
    print()
    for k, xs in sorted(by.items()):
        print(f"{k}: cycles free / base median {statistics.median(xs):.3f} "
              f"(min {min(xs):.3f}, max {max(xs):.3f}, {len(xs)} cases)")


if __name__ == "__main__":
    main()
