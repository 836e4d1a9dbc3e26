#!/usr/bin/env python3
"""Merge a run_fa3.sh output directory into one iosim-measurements (version 1) file.

Inputs (the unpacked fa3_own.tar.gz): set1.jsonl (checked + timed), set2.jsonl, set3.jsonl (timed,
separate processes), ncu_fa3.csv and single_pass_fa3.csv (`fa3_fwd --profile`: one launch per
case in the same order as the sets), env.json, device_query.json, clocks_set*.csv.

Each case: schedule "flash3" (iosim's --algo flash3 is the schedule this kernel is meant to be
described by), the tiling it ran with, `variant` (pingpong, intra_warpgroup_overlap, persistent,
copy), the check of set 1, `time_free_running_s` = median over the 3 sets of each set's median,
`time_sets`, `time_spread`, `sm_clock_mhz_clock64` (clock64 / %globaltimer of the CTAs during
the last timed launch, median over sets) and one kernel (role "attention") with ncu's counters,
the DRAM byte counters from the single-pass run (why: ../scripts/ncu_lib.sh).
The helpers that read ncu's CSV and nvidia-smi's samples are ../scripts/merge_ncu.py's.
Usage: fa3_merge.py --dir DIR --out FILE.json
"""
import argparse
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import merge_ncu as mn  # noqa: E402


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def ncu_kernels(path, wanted, units_out):
    rows, units = mn.read_csv_rows(path)
    rows.sort(key=lambda r: mn.to_number(r.get("ID", "0")) or 0)
    out = []
    for r in rows:
        metrics, launch = {}, {}
        for key, val in r.items():
            if key in wanted:
                metrics[key] = mn.to_number(val)
                if key in units:
                    units_out[key] = units[key]
            elif key in mn.LAUNCH_KEYS:
                launch[key] = mn.to_number(val)
        out.append({"name": mn.kernel_name(r), "grid": mn.parse_dims(r.get("Grid Size")),
                    "block": mn.parse_dims(r.get("Block Size")), "metrics": metrics,
                    "launch": launch})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    d = a.dir
    sets = [read_jsonl(os.path.join(d, f"set{s}.jsonl")) for s in (1, 2, 3)]
    env = json.load(open(os.path.join(d, "env.json")))
    device = json.load(open(os.path.join(d, "device_query.json")))
    wanted = set(env["ncu"]["metrics"])
    single_names = env["ncu"]["single_pass_metrics"]
    units = {}
    warnings = []
    full = ncu_kernels(os.path.join(d, "ncu_fa3.csv"), wanted, units)
    single = ncu_kernels(os.path.join(d, "single_pass_fa3.csv"), set(single_names), {})
    ids = [r["id"] for r in sets[0]]
    for s, rows in enumerate(sets[1:], 2):
        if [r["id"] for r in rows] != ids:
            warnings.append(f"set {s} has other cases than set 1; its times are left out")
    if len(full) != len(ids) or len(single) != len(ids):
        warnings.append(f"{len(full)} full and {len(single)} single-pass ncu rows for {len(ids)} "
                        "cases; counters paired by order up to the shorter")
    cases = []
    n_pass = 0
    for i, r in enumerate(sets[0]):
        per_set = [rows[i] for rows in sets if len(rows) > i and rows[i]["id"] == r["id"]]
        meds = [x["median_ms"] * 1e-3 for x in per_set]
        t = statistics.median(meds)
        kernel = None
        if i < len(full):
            k = full[i]
            kernel = {"name": k["name"], "role": "attention", "launcher": r["id"],
                      "grid": k["grid"], "block": k["block"], "smem_dynamic_bytes": r["smem_bytes"],
                      "metrics": dict(k["metrics"]), "launch": k["launch"],
                      "time_free_running_s": t, "time_free_running_cold_l2_s": None}
            if i < len(single) and single[i]["name"] == k["name"] and \
                    single[i]["launch"].get("profiler__replayer_passes") == 1:
                kernel["metrics_multi_pass"] = {n: k["metrics"].get(n) for n in single_names}
                for n in single_names:
                    kernel["metrics"][n] = single[i]["metrics"].get(n)
            else:
                warnings.append(f"{r['id']}: no matching single-pass row; multi-pass DRAM kept")
            if k["grid"] and k["grid"][0] != r["grid"]:
                warnings.append(f"{r['id']}: ncu grid {k['grid']} differs from the run's {r['grid']}")
        check = dict(r["check"])
        passed = bool(check.get("passed"))
        n_pass += passed
        cases.append({
            "id": r["id"], "schedule": "flash3", "pass": "fwd",
            "problem": {"batch": r["b"], "heads": r["h"], "seq": r["n"], "seq_kv": r["n"],
                        "head_dim": r["d"], "dtype": r.get("dtype", "fp16"),
                        "causal": bool(r["causal"])},
            "tiling": {"block_q": r["block_q"], "block_kv": r["block_kv"],
                       "threads": r["threads"], "smem_bytes_per_cta": r["smem_bytes"],
                       "pipeline_stages": r["stages"], "copy": r["copy"], "mma": "wgmma",
                       "grid": r["grid"], "source": "cuda_validate/fa3/fa3_fwd.cu"},
            "variant": {"pingpong": bool(r["pingpong"]), "intra_warpgroup_overlap": bool(r["iwo"]),
                        "persistent": bool(r["persistent"]), "copy": r["copy"],
                        "warpgroups": "pingpong" if r["pingpong"] else "cooperative"},
            "check": check,
            "time_free_running_s": t,
            "time_sets": [{"time_free_running_s": m, "reps": x["reps"], "min_s": x["min_ms"] * 1e-3,
                           "max_s": x["max_ms"] * 1e-3,
                           "sm_clock_mhz_clock64": x["sm_mhz_clock64_per_globaltimer"]}
                          for m, x in zip(meds, per_set)],
            # SM cycles of one launch: each set's median time x its clock64 clock, median over
            # the sets (the clock moves with power and temperature between sets).
            "sm_cycles_free_running": statistics.median(
                m * x["sm_mhz_clock64_per_globaltimer"] * 1e6 for m, x in zip(meds, per_set)),
            "time_spread": {"sets": len(meds), "min_s": min(meds), "max_s": max(meds),
                            "rel_range": (max(meds) - min(meds)) / t, "statistic": "median"},
            "sm_clock_mhz_clock64": statistics.median(
                x["sm_mhz_clock64_per_globaltimer"] for x in per_set),
            "tflops_" + r.get("dtype", "fp16"): 4.0 * r["b"] * r["h"] * r["n"] * r["n"] * r["d"] *
                           (0.5 if r["causal"] else 1.0) / t / 1e12,
            "error": None,
            "kernels": [kernel] if kernel else [],
            "role_times_s": {"attention": {"warm_l2": t, "cold_l2": None}},
        })
    ncu_sm = [c["kernels"][0]["metrics"].get("sm__cycles_elapsed.avg.per_second")
              for c in cases if c["kernels"]]
    ncu_dram = [c["kernels"][0]["metrics"].get("dram__cycles_elapsed.avg.per_second")
                for c in cases if c["kernels"]]
    result = {
        "format": "iosim-measurements", "version": 1,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": "our FlashAttention-3-style forward (cuda_validate/fa3/fa3_fwd.cu, issue #13 "
                  "item 4), run by cuda_validate/fa3/run_fa3.sh, merged by fa3_merge.py",
        "device": device,
        "clocks": {
            "free_running_pass": mn.read_clocks(os.path.join(d, "clocks_set1.csv")),
            "free_running_sets_2_3": [mn.read_clocks(os.path.join(d, f"clocks_set{s}.csv"))
                                      for s in (2, 3)],
            "ncu_pass": None,
            "ncu_sm_cycles_per_second": mn.summarize(ncu_sm),
            "ncu_dram_cycles_per_second": mn.summarize(ncu_dram),
        },
        "tools": env.get("tools", {}),
        "settings": {
            "ncu": env["ncu"],
            "free_running": {
                "timer": "cudaEventRecord before and after each launch (2 warm-up launches "
                         "first), cudaDeviceSynchronize after all",
                "statistic": "median of each set's median; 3 sets in separate processes",
                "reps": sets[0][0]["reps"] if sets[0] else None,
                "warm_l2": "launches back to back (inputs left in L2 by the previous one may hit)",
                "cold_l2": "not measured",
                "clocks": "not locked (GPU boost as found)",
            },
        },
        "metric_units": units,
        "summary": {"cases": len(cases), "checks_passed": n_pass,
                    "checks_failed_or_error": len(cases) - n_pass, "roles_without_counters":
                    sum(1 for c in cases if not c["kernels"]), "warnings": warnings},
        "cases": cases,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"merged {len(cases)} cases ({n_pass} passed) -> {a.out}")
    for w in warnings:
        print("warning:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
