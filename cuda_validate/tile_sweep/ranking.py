#!/usr/bin/env python3
"""Ranking accuracy of iosim on the tile sweep (issue #46): per (family, shape), from timing files
(run_tile_sweep.sh MODE=time) and a predictions file (predict.py):
  rho     Spearman rank correlation of predicted against measured time (median of the sets);
  regret  measured time of iosim's pick (its fastest) over the measured best, minus 1;
  pairs   of the pairs of configurations whose measured times differ by more than the larger of
          their two repeat spreads ((max - min) / median over the sets), the share iosim orders
          the same way;
  time    median and worst |predicted - measured| / measured.
Configurations whose output check failed are left out.

  python3 ranking.py --pred PRED.json [--shapes shapes.txt] [--families] TIME.json...
Several files of the same runs (repeats) pool their timing sets: the median and spread are over
all of them.
"""
import argparse
import json
import statistics
from collections import defaultdict


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va > 0 and vb > 0 else float("nan")


def key(run):
    return "{family} {shape} {block_q}x{block_kv} s{stages} w{warps}".format(**run)


def group_stats(points):
    """points: list of (predicted, measured, spread)."""
    pred = [p for p, _, _ in points]
    meas = [m for _, m, _ in points]
    rho = spearman(pred, meas)
    pick = min(range(len(points)), key=lambda i: pred[i])
    regret = meas[pick] / min(meas) - 1
    right = total = 0
    for i in range(len(points)):
        for j in range(i + 1, len(points)):
            gap = abs(meas[i] - meas[j]) / min(meas[i], meas[j])
            if gap <= max(points[i][2], points[j][2]):
                continue
            total += 1
            right += (pred[i] - pred[j]) * (meas[i] - meas[j]) > 0
    errs = [abs(p - m) / m for p, m, _ in points]
    return {"n": len(points), "rho": rho, "regret": regret,
            "pairs": right / total if total else float("nan"), "pairs_counted": total,
            "time_median": statistics.median(errs), "time_worst": max(errs)}


def load(pred_path, time_paths):
    """Files of the same runs (repeats on other machines or days) pool their timing sets."""
    preds = json.load(open(pred_path))["predictions"]
    runs = {}
    for path in time_paths:
        for run in json.load(open(path))["runs"]:
            if "infeasible" in run or not run["times_s"] or not run["check"]["passed"]:
                continue
            k = key(run)
            if k in runs:
                runs[k]["times_s"] = runs[k]["times_s"] + run["times_s"]
            else:
                runs[k] = dict(run)
    groups = defaultdict(list)
    uses = {}
    for k, run in runs.items():
        p = preds.get(k)
        if p is None or "time_s" not in p:
            continue
        t = run["times_s"]
        med = statistics.median(t)
        spread = (max(t) - min(t)) / med
        groups[(run["family"], run["shape"])].append((p["time_s"], med, spread))
        uses[run["shape"]] = run.get("use")
    return groups, uses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pred", required=True)
    ap.add_argument("--shapes", help="shapes.txt, for which shapes are sealed")
    ap.add_argument("--json", help="write the per-group statistics here")
    ap.add_argument("--families", action="store_true", help="only the per-family table")
    ap.add_argument("times", nargs="+")
    args = ap.parse_args()
    groups, _ = load(args.pred, args.times)
    sealed = set()
    if args.shapes:
        for line in open(args.shapes):
            f = line.split("#")[0].split()
            if len(f) > 6 and f[6] == "sealed":
                sealed.add(f[0])
    stats = {f"{fam} {shape}": dict(group_stats(pts), sealed=shape in sealed)
             for (fam, shape), pts in sorted(groups.items())}
    rows = [] if args.families else list(stats.items())
    if rows:
        print("| family | shape | set | n | rho | regret | pairs right | time median | "
              "time worst |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, s in rows:
        fam, shape = name.split()
        print(f"| {fam} | {shape} | {'sealed' if s['sealed'] else 'open'} | {s['n']} | "
              f"{s['rho']:.2f} | {100 * s['regret']:.1f}% | {100 * s['pairs']:.0f}% "
              f"({s['pairs_counted']}) | {100 * s['time_median']:.1f}% | "
              f"{100 * s['time_worst']:.1f}% |")
    fams = sorted({n.split()[0] for n in stats})
    if rows:
        print()
    print("| family | set | rho median (min) | regret median (worst) | pairs right median | "
          "time median | time worst |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for fam in fams:
        for use in ("open", "sealed"):
            ss = [s for n, s in stats.items() if n.split()[0] == fam and
                  s["sealed"] == (use == "sealed")]
            if not ss:
                continue
            print(f"| {fam} | {use} | {statistics.median(s['rho'] for s in ss):.2f} "
                  f"({min(s['rho'] for s in ss):.2f}) | "
                  f"{100 * statistics.median(s['regret'] for s in ss):.1f}% "
                  f"({100 * max(s['regret'] for s in ss):.1f}%) | "
                  f"{100 * statistics.median(s['pairs'] for s in ss):.0f}% | "
                  f"{100 * statistics.median(s['time_median'] for s in ss):.1f}% | "
                  f"{100 * max(s['time_worst'] for s in ss):.1f}% |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stats, f, indent=1)


if __name__ == "__main__":
    main()
