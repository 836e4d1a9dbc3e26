#!/usr/bin/env python3
"""Blind predictions of a suite's cases from their kernel descriptions alone, written before the
suite is measured (issue #27: commit the predictions, then measure).

Each suite line (cuda_validate/suites/*.txt) with kernel=NAME or pass=bwd becomes the description
its measured case will carry: dataflow, tiles and mechanisms from the line, the launch facts
(threads, registers from ptxas -v, dynamic shared memory) from LAUNCH, a JSON file mapping
"NAME dtype d bq bkv stages" to {"threads", "registers_per_thread", "smem_bytes_per_cta"}. It is
run as `iosim validate` runs a case blind: the profile's own clock policy (the power model), DRAM
bytes with a cold L2, time with the L2 carried over between kernels. Every other case (by suite
order) is marked "sealed": held out of every calibration, its error only ever reported.

  predict_blind.py --iosim build/iosim --suite cuda_validate/suites/wg1_fwd.txt \\
      --launch cuda_validate/suites/wg1_fwd.launch.json --profiles h100-sxm5-80gb,h200-sxm-141gb \\
      --out cuda_validate/measurements/predictions/wg1_fwd_blind.json
"""
import argparse
import datetime
import json
import subprocess
import sys


def parse_suite(path):
    cases = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        kv = dict(w.split("=", 1) for w in words[1:])
        if "kernel" not in kv and kv.get("pass") != "bwd":
            continue
        cases.append(kv)
    return cases


def description(kv, launch):
    bwd = kv.get("pass") == "bwd"
    name = "two_pass_bwd" if bwd else kv["kernel"]
    dtype = kv.get("dtype", "fp16")
    d, bq, bkv = int(kv["d"]), int(kv["bq"]), int(kv["bkv"])
    stages = int(kv.get("stages", 2))
    key = f"{name} {dtype} {d} {bq} {bkv} {stages}"
    if key not in launch:
        sys.exit(f"predict_blind.py: no launch facts for '{key}' in the LAUNCH file")
    wgmma = name == "wg1_tma_fwd"
    desc = {
        "name": name,
        "dataflow": {"backward": "two_pass"} if bwd else {"forward": "query_stationary"},
        "tiles": {"block_q": bq, "block_kv": bkv, "stages": stages},
        "mechanisms": {"mma": "wgmma_rs" if wgmma else "mma_sync",
                       "load": "tma" if wgmma else "cp_async",
                       "warp_roles": "uniform", "persistent": False},
        "launch": launch[key],
    }
    n = int(kv["N"])
    problem = {"batch": int(kv["B"]), "heads": int(kv["H"]), "seq": n,
               "seq_kv": int(kv.get("Nkv", n)), "head_dim": d, "dtype": dtype,
               "causal": kv.get("causal", "0") == "1", "pass": "bwd" if bwd else "fwd"}
    return desc, problem


def run(iosim, profile, desc, problem, cold):
    args = [iosim, "run", "--profile", profile, "--kernel", json.dumps(desc),
            "--batch", str(problem["batch"]), "--heads", str(problem["heads"]),
            "--seq", str(problem["seq"]), "--seq-kv", str(problem["seq_kv"]),
            "--head-dim", str(problem["head_dim"]), "--dtype", problem["dtype"],
            "--pass", problem["pass"], "--format", "json"]
    if problem["causal"]:
        args.append("--causal")
    if cold:
        args.append("--cold-l2")
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"iosim failed ({out.returncode}): {' '.join(args)}\n{out.stderr}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iosim", required=True)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--launch", required=True)
    ap.add_argument("--profiles", default="h100-sxm5-80gb,h200-sxm-141gb")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    launch = json.load(open(a.launch))
    version = subprocess.run([a.iosim, "--version"], capture_output=True, text=True).stdout.strip()
    rows = []
    for index, kv in enumerate(parse_suite(a.suite)):
        desc, problem = description(kv, launch)
        for profile in a.profiles.split(","):
            cold = run(a.iosim, profile, desc, problem, True)
            # As validate's blind: time with the L2 carried over between kernels (one kernel: the
            # cold run's), bytes with a cold L2 per kernel (what Nsight Compute counts).
            warm = run(a.iosim, profile, desc, problem, False) if len(cold["kernels"]) > 1 else cold
            c = cold["counters"]
            # Every other case of the suite is sealed: no calibration may read its error.
            rows.append({"profile": profile, "sealed": index % 2 == 1, "kernel": desc,
                         "problem": problem,
                         "predicted": {"time_s": warm["time_s"],
                                       "sm_clock_mhz": warm["sm_clock_mhz"],
                                       "dram_read_bytes": c["hbm_read_bytes"],
                                       "dram_write_bytes": c["hbm_write_bytes"],
                                       "l2_read_bytes": c["l2_read_bytes"]}})
    doc = {"format": "iosim-blind-predictions", "iosim": version,
           "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime(
               "%Y-%m-%dT%H:%M:%SZ"),
           "suite": a.suite, "cases": rows}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{len(rows)} predictions -> {a.out}")


if __name__ == "__main__":
    main()
