#!/usr/bin/env python3
"""The edge sets of issue #47 as a Markdown table: per case, the DRAM bytes read and the L2 read hit
rate Nsight Compute measured beside what committed predictions say, and the time. Nothing is
simulated here: the predictions were written (and committed) before the measurements, by
scripts/predict_blind.py (our kernels) or pytorch_sdpa/predict_blind.py (PyTorch's), so the table
is a pure function of committed files and CI checks it cheaply (docs/accuracy.md, a
`<!-- script: ... -->` block of scripts/readme_tables.sh).

  edge_table.py --measured M.json [--measured REPEAT.json ...] --pred LABEL=P.json
                [--pred LABEL=P2.json ...] [--profile P]

With several --measured files (repeats of the same suite), each case's DRAM read, hit rate and
time are their mean, and "spread" is (max - min) / mean of its DRAM read: at the edge the GPU's own
bytes move by up to 16% from one run to the next (which CTAs drift apart is not repeatable).

A prediction file of predict_blind.py holds cases by problem and tiles, with "sealed" on every
other one; one of pytorch_sdpa/predict_blind.py holds cases by id (sealed: every other one by suite
order, as predict_blind.py marks them). The last --pred is the one the summary rows are of.
"""
import argparse
import json
import statistics


def mean_of_repeats(paths):
    runs = [measured_cases(p) for p in paths]
    by_id = [{m["id"]: m for m in run} for run in runs]
    out = []
    for m in runs[0]:
        same = [r[m["id"]] for r in by_id if m["id"] in r]
        reads = [x["dram_read"] for x in same]
        avg = dict(m)
        avg["dram_read"] = sum(reads) / len(reads)
        avg["spread"] = (max(reads) - min(reads)) / avg["dram_read"] if len(reads) > 1 else None
        hits = [x["hit"] for x in same if x["hit"] is not None]
        avg["hit"] = sum(hits) / len(hits) if hits else None
        avg["time"] = sum(x["time"] for x in same) / len(same)
        out.append(avg)
    return out


def measured_cases(path):
    out = []
    for c in json.load(open(path))["cases"]:
        if c.get("error") or not c.get("kernels"):
            continue
        metric = lambda name: sum(k["metrics"].get(name, 0) for k in c["kernels"])
        reads = metric("lts__t_sectors_srcunit_tex_op_read.sum")
        hits = metric("lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum")
        out.append({"id": c["id"], "pass": c.get("pass", "fwd"), "problem": c["problem"],
                    "tiling": c.get("tiling") or {},
                    "dram_read": metric("dram__bytes_read.sum"),
                    "hit": hits / reads if reads else None,
                    "time": c.get("time_queued_s") or c.get("time_free_running_s")})
    return out


def flag(flags, name):
    return int(flags[flags.index(name) + 1]) if flags and name in flags else None


def predictions(path, profile):
    """A function from a measured case to (prediction dict, sealed) or None."""
    doc = json.load(open(path))
    cases = doc["cases"]
    if cases and "predicted" in cases[0]:  # scripts/predict_blind.py
        table = {}
        for c in cases:
            if c["profile"] != profile:
                continue
            p = c["problem"]
            fl = c.get("flags")
            key = (p["pass"], p["batch"], p["heads"], p["seq"], p["head_dim"], p["causal"],
                   flag(fl, "--block-q"), flag(fl, "--block-kv"))
            q = c["predicted"]
            table[key] = ({"dram_read": q["dram_read_bytes"], "hit": q.get("l2_read_hit_rate"),
                           "time": q["time_s"]}, c["sealed"])

        def find(m):
            p, t = m["problem"], m["tiling"]
            bwd = m["pass"] == "bwd"
            return table.get((m["pass"], p["batch"], p["heads"], p["seq"], p["head_dim"],
                              p["causal"], None if bwd else t.get("block_q"),
                              None if bwd else t.get("block_kv")))
        return find
    if doc.get("profile") != profile:
        return lambda m: None
    table = {c["id"]: ({"dram_read": c["hbm_read_bytes"], "hit": c.get("l2_read_hit_rate"),
                        "time": c["time_s"]}, i % 2 == 1)
             for i, c in enumerate(cases) if "error" not in c}
    return lambda m: table.get(m["id"])


def pct(x):
    return f"{100 * x:+.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measured", action="append", required=True)
    ap.add_argument("--pred", action="append", required=True, metavar="LABEL=FILE")
    ap.add_argument("--profile", default="h100-sxm5-80gb")
    a = ap.parse_args()
    preds = [(s.split("=", 1)[0], predictions(s.split("=", 1)[1], a.profile)) for s in a.pred]
    cases = mean_of_repeats(a.measured)
    repeats = len(a.measured) > 1
    head = ["case", "sealed", "DRAM read (ncu)"] + (["spread"] if repeats else []) + [f"{label}: DRAM read" for label, _ in preds]
    head += ["L2 hit (ncu)", f"{preds[-1][0]}: L2 hit", "time", f"{preds[-1][0]}: time"]
    print("| " + " | ".join(head) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in head[2:]) + " |")
    spreads = []
    errors = {False: [], True: []}
    time_errors = {False: [], True: []}
    for m in cases:
        row = [m["id"].replace("_nkv", " nkv").replace("_", " "), ""]
        row.append(f"{m['dram_read'] / 1e9:.3f} GB")
        if repeats:
            row.append(f"{100 * m['spread']:.1f}%" if m["spread"] is not None else "-")
            if m["spread"] is not None:
                spreads.append(m["spread"])
        last = None
        for _, find in preds:
            got = find(m)
            if got is None:
                row.append("-")
                last = None
                continue
            q, sealed = got
            row[1] = "sealed" if sealed else ""
            row.append(f"{q['dram_read'] / 1e9:.3f} GB ({pct(q['dram_read'] / m['dram_read'] - 1)})")
            last = (q, sealed)
        row.append(f"{100 * m['hit']:.1f}%" if m["hit"] is not None else "-")
        if last is not None:
            q, sealed = last
            row.append(f"{100 * q['hit']:.1f}%" if q.get("hit") is not None else "-")
            row.append(f"{1e3 * m['time']:.2f} ms")
            row.append(f"{1e3 * q['time']:.2f} ms ({pct(q['time'] / m['time'] - 1)})")
            errors[sealed].append(abs(q["dram_read"] / m["dram_read"] - 1))
            time_errors[sealed].append(abs(q["time"] / m["time"] - 1))
        else:
            row += ["-", f"{1e3 * m['time']:.2f} ms", "-"]
        print("| " + " | ".join(row) + " |")
    if spreads:
        print(f"\nMeasured over {len(a.measured)} repeats: DRAM read spread median "
              f"{100 * statistics.median(spreads):.1f}%, worst {100 * max(spreads):.1f}%.", end="")
    for sealed, name in ((False, "calibration half"), (True, "sealed half")):
        e, t = errors[sealed], time_errors[sealed]
        if e:
            print(f"\n{preds[-1][0]}, {name} ({len(e)} cases): DRAM read |error| median "
                  f"{100 * statistics.median(e):.1f}%, worst {100 * max(e):.1f}%; time median "
                  f"{100 * statistics.median(t):.1f}%, worst {100 * max(t):.1f}%.", end="")
    print()


if __name__ == "__main__":
    main()
