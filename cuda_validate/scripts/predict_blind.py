#!/usr/bin/env python3
"""Blind predictions of a suite's cases from what a user states, written before the suite is
measured (issue #27: commit the predictions, then measure; issue #29: the sealed set).

Each suite line (cuda_validate/suites/*.txt) with kernel=NAME or pass=bwd becomes the description
its measured case will carry: dataflow, tiles and mechanisms from the line, the launch facts
(threads, registers from ptxas -v, dynamic shared memory) from LAUNCH, a JSON file mapping
"NAME dtype d bq bkv stages" to {"threads", "registers_per_thread", "smem_bytes_per_cta"}. It is
run as `iosim validate` runs a case blind: the profile's own clock policy (the power model), DRAM
bytes with a cold L2, time with the L2 carried over between kernels. Every other case (by suite
order) is marked "sealed": held out of every calibration, its error only ever reported.

With --builtins, the suite's other lines (the built-in schedules: flash2, flash1, standard,
block-sparse, flash-decoding, paged) are predicted too, from the flags a user of that kernel
would give `iosim run`: the problem, --block-q/--block-kv/--threads of the instantiation the line
names (runner/flash_instances.hpp, block_sparse.cu, decode.cu), --splits, --kv-heads,
--page-tokens, --latent-dim, --pattern, --window. Nothing measured, no clock but the profile's own policy. With
--all-sealed every case is sealed (the sealed set of issue #29).

  predict_blind.py --iosim build/iosim --suite cuda_validate/suites/wg1_fwd.txt \\
      --launch cuda_validate/suites/wg1_fwd.launch.json --profiles h100-sxm5-80gb,h200-sxm-141gb \\
      --out cuda_validate/measurements/predictions/wg1_fwd_blind.json
  predict_blind.py --iosim build/iosim --suite cuda_validate/suites/sealed.txt --builtins \
      --all-sealed --launch cuda_validate/suites/wg1_fwd.launch.json \
      --launch cuda_validate/suites/two_pass_bwd.launch.json \
      --out cuda_validate/measurements/predictions/sealed_blind.json
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
        kv["schedule"] = words[0]
        cases.append(kv)
    return cases


STATIC_SMEM_BYTES = {"wg1_tma_fwd": 1024}


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
    tiles = {"block_q": bq, "block_kv": bkv, "stages": stages}
    if bwd:
        # The two-pass kernel's warps hold 16 score columns at a time (kernels/two_pass_bwd.cuh
        # kChunk), as the runner writes in its description (runner/extra_cases.cu).
        tiles["score_chunk"] = 16
    launch_facts = dict(launch[key])
    # The LAUNCH files hold the dynamic shared memory the launch asked for; wg1_tma_fwd also has
    # 1024 B of static shared memory (its mbarriers), which the runner's description adds
    # (scripts/describe_smem_from_launch.py, CALIBRATION.md step 23). The sealed set's first
    # predictions (predictions/sealed_blind.json) were made before these two lines.
    launch_facts["smem_bytes_per_cta"] += STATIC_SMEM_BYTES.get(name, 0)
    desc = {
        "name": name,
        "dataflow": {"backward": "two_pass"} if bwd else {"forward": "query_stationary"},
        "tiles": tiles,
        "mechanisms": {"mma": "wgmma_rs" if wgmma else "mma_sync",
                       "load": "tma" if wgmma else "cp_async",
                       "warp_roles": "uniform", "persistent": False},
        "launch": launch_facts,
    }
    n = int(kv["N"])
    problem = {"batch": int(kv["B"]), "heads": int(kv["H"]), "seq": n,
               "seq_kv": int(kv.get("Nkv", n)), "head_dim": d, "dtype": dtype,
               "causal": kv.get("causal", "0") == "1", "pass": "bwd" if bwd else "fwd"}
    return desc, problem


def described(kv):
    return "kernel" in kv or kv.get("pass") == "bwd"


# Warps of each compiled instantiation (d, block_q, block_kv) of our built-in kernels: the
# --threads a user of that kernel states. Decoding kernels run 4 warps.
WARPS = {
    "flash2": {(64, 64, 64): 4, (64, 128, 64): 4, (64, 128, 128): 8,
               (128, 64, 64): 4, (128, 128, 64): 8, (128, 128, 128): 8},
    "flash1": {(64, 64, 64): 4, (64, 128, 64): 4, (128, 64, 64): 4},
    "block-sparse": {(64, 128, 64): 4, (64, 128, 128): 8, (128, 128, 64): 8},
}


def builtin(kv):
    """The flags and problem of a built-in schedule's line, as a user of that kernel gives them."""
    sched = kv["schedule"]
    n = int(kv["N"])
    d = int(kv["d"])
    problem = {"batch": int(kv["B"]), "heads": int(kv["H"]), "seq": n,
               "seq_kv": int(kv.get("Nkv", n)), "head_dim": d, "dtype": "fp16",
               "causal": kv.get("causal", "0") == "1", "pass": "fwd"}
    flags = ["--algo", sched]
    if sched in WARPS:
        bq, bkv = int(kv["bq"]), int(kv["bkv"])
        warps = WARPS[sched].get((d, bq, bkv))
        if warps is None:
            sys.exit(f"predict_blind.py: {sched} has no instantiation d={d} bq={bq} bkv={bkv}")
        flags += ["--block-q", str(bq), "--block-kv", str(bkv), "--threads", str(32 * warps)]
    elif sched in ("flash-decoding", "paged"):
        # The decode kernel pads a CTA's query rows to one 16-row m-tile; 4 warps.
        flags += ["--block-q", "16", "--block-kv", kv["bkv"], "--threads", "128",
                  "--splits", kv.get("splits", "1")]
        if "Hkv" in kv:
            flags += ["--kv-heads", kv["Hkv"]]
            problem["kv_heads"] = int(kv["Hkv"])
        if "latent" in kv:  # a latent K/V cache (MLA): V is K's first `latent` columns
            flags += ["--latent-dim", kv["latent"]]
            problem["latent_dim"] = int(kv["latent"])
        if sched == "paged":
            flags += ["--page-tokens", kv.get("page", "16")]
            problem["page_tokens"] = int(kv.get("page", "16"))
    elif sched != "standard":
        sys.exit(f"predict_blind.py: unknown schedule '{sched}'")
    if "pattern" in kv:
        flags += ["--pattern", kv["pattern"]]
        problem["pattern"] = kv["pattern"]
    if "window" in kv:  # flash2's causal sliding window (iosim's --window)
        flags += ["--window", kv["window"]]
        problem["window"] = int(kv["window"])
    return flags, problem


def run(iosim, profile, desc, problem, cold, flags=None):
    what = flags if flags is not None else ["--kernel", json.dumps(desc)]
    args = [iosim, "run", "--profile", profile, *what,
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
    ap.add_argument("--launch", action="append", default=[], help="launch facts of the described kernels (needed when the "
                    "suite has kernel=... or pass=bwd lines; may be given more than once)")
    ap.add_argument("--builtins", action="store_true",
                    help="predict the built-in schedules' lines too (otherwise skipped)")
    ap.add_argument("--all-sealed", action="store_true", help="every case sealed")
    ap.add_argument("--profiles", default="h100-sxm5-80gb,h200-sxm-141gb")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    launch = {}
    for path in a.launch:
        launch.update(json.load(open(path)))
    version = subprocess.run([a.iosim, "--version"], capture_output=True, text=True).stdout.strip()
    rows = []
    cases = [kv for kv in parse_suite(a.suite) if a.builtins or described(kv)]
    for index, kv in enumerate(cases):
        if described(kv):
            desc, problem = description(kv, launch)
            flags, what = None, {"kernel": desc}
        else:
            desc = None
            flags, problem = builtin(kv)
            what = {"flags": flags}
        for profile in a.profiles.split(","):
            cold = run(a.iosim, profile, desc, problem, True, flags)
            # As validate's blind: time with the L2 carried over between kernels (one kernel: the
            # cold run's), bytes with a cold L2 per kernel (what Nsight Compute counts).
            warm = (run(a.iosim, profile, desc, problem, False, flags)
                    if len(cold["kernels"]) > 1 else cold)
            c = cold["counters"]
            # Every other case of the suite is sealed (all with --all-sealed): no calibration may
            # read its error.
            rows.append({"profile": profile, "sealed": a.all_sealed or index % 2 == 1, **what,
                         "problem": problem,
                         "predicted": {"time_s": warm["time_s"],
                                       "sm_clock_mhz": warm["sm_clock_mhz"],
                                       "dram_read_bytes": c["hbm_read_bytes"],
                                       "dram_write_bytes": c["hbm_write_bytes"],
                                       "l2_read_bytes": c["l2_read_bytes"],
                                       "l2_read_hit_rate": cold["achieved"].get(
                                           "l2_read_hit_rate"),
                                       # The power model's board power and whether the limit
                                       # binds (sustain mode compares them, sustain_summary.py).
                                       "power": warm.get("power")}})
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
