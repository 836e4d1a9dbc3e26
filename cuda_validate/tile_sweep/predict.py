#!/usr/bin/env python3
"""iosim's predictions for the tile sweep (issue #46), from launch facts only: for every feasible
configuration of a facts file (run_tile_sweep.sh MODE=facts), a kernel description written from
the kernel's source and its compiled facts, run through `iosim run` at the shape's problem with
the profile's own clock policy. Nothing measured about time goes in.

  python3 predict.py --iosim build/iosim --profile h100-sxm5-80gb --out PRED.json FACTS.json...

The descriptions (what each family is; docs/kernels.md has the fields):
  wg1_tma  one warpgroup issuing wgmma (P from registers), K/V through a TMA ring of `stages`
  wg1_mma  `warps` warps issuing mma.sync, K/V through a cp.async ring of `stages`
  triton   our Triton forward (triton_fwd.py) as Triton 3.6 compiles it for Hopper: the PTX of
           every configuration issues wgmma (recorded per run), K/V through cp.async buffers of
           num_stages (num_stages 1: loads through registers, `plain`), num_warps * 32 threads
All three are query-stationary with K/V in ascending order and uniform warp roles; launch facts
(threads, registers per thread, shared memory = dynamic + static, local bytes per thread: the
spills) are what the GPU reported; --no-spills leaves the spills out, as the first blind set did.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile


def description(run, spills=True, mma_wait_next_step=True):
    """spills=False: the description without launch.local_bytes_per_thread (the blind set's);
    mma_wait_next_step=False: without Triton's late wgmma wait (the blind sets before it)."""
    fam = run["family"]
    if fam == "wg1_tma":
        mma, load = "wgmma_rs", "tma"
        smem = run["smem_dynamic_bytes"] + run["smem_static_bytes"]
        local = run["local_bytes_per_thread"]
    elif fam == "wg1_mma":
        mma, load = "mma_sync", "cp_async"
        smem = run["smem_dynamic_bytes"] + run["smem_static_bytes"]
        local = run["local_bytes_per_thread"]
    elif fam == "triton":
        mma = "wgmma_rs" if run["wgmma"] else "mma_sync"
        load = "cp_async" if run["stages"] > 1 else "plain"
        smem = run["smem_bytes"]
        local = 4 * run["spills"]  # Triton's n_spills: the local bytes the driver reports / 4
    else:
        raise SystemExit(f"unknown family {fam}")
    mechanisms = {"mma": mma, "load": load, "warp_roles": "uniform", "persistent": False}
    if fam == "triton" and mma != "mma_sync" and load != "plain" and mma_wait_next_step:
        # Triton's pipeliner waits for the P V wgmma of step j at step j+1 (its TritonGPU IR,
        # tile_sweep_2026-12-06/profile_triton/*.ttgir: warp_group_dot_wait of the accumulator at
        # the next Q K^T; the next tile's copies issued after the step's products).
        mechanisms["mma_wait"] = "next_step"
    launch = {"threads": run["threads"], "registers_per_thread": run["registers_per_thread"],
              "smem_bytes_per_cta": smem}
    if spills and local:
        launch["local_bytes_per_thread"] = local
    return {
        "name": f"{fam}_{run['block_q']}x{run['block_kv']}_s{run['stages']}_w{run['warps']}",
        "dataflow": {"forward": "query_stationary"},
        "tiles": {"block_q": run["block_q"], "block_kv": run["block_kv"],
                  "stages": run["stages"]},
        "mechanisms": mechanisms,
        "launch": launch,
    }


def key(run):
    return "{family} {shape} {block_q}x{block_kv} s{stages} w{warps}".format(**run)


def predict(args, run, tmp):
    desc = description(run, spills=not args.no_spills)
    path = os.path.join(tmp, key(run).replace(" ", "_") + ".json")
    with open(path, "w") as f:
        json.dump(desc, f)  # a description may be JSON (YAML's superset)
    cmd = [args.iosim, "run", "--profile", args.profile, "--kernel", path,
           "--batch", str(run["batch"]), "--heads", str(run["heads"]), "--seq", str(run["seq"]),
           "--head-dim", str(run["d"]), "--dtype", "fp16", "--format", "json"]
    if run["causal"]:
        cmd.append("--causal")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return key(run), {"error": r.stderr.strip()[:300]}
    rep = json.loads(r.stdout)
    return key(run), {"time_s": rep["time_s"], "feasible": rep.get("feasible", True),
                      "bound": rep.get("bound"), "description": desc}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iosim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-spills", action="store_true")
    ap.add_argument("--what", default="iosim's blind predictions of the tile sweep (issue #46), "
                    "made from launch facts before any configuration was timed")
    ap.add_argument("facts", nargs="+")
    args = ap.parse_args()
    runs = []
    for f in args.facts:
        runs += [r for r in json.load(open(f))["runs"] if "infeasible" not in r]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(args.jobs) as pool:
        preds = dict(pool.map(lambda r: predict(args, r, tmp), runs))
    doc = {"what": args.what,
           "profile": args.profile, "iosim_commit": commit,
           "facts": [os.path.relpath(f) for f in args.facts], "predictions": preds}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    errors = sum(1 for p in preds.values() if "error" in p)
    print(f"{len(preds)} predictions, {errors} refused by iosim", file=sys.stderr)


if __name__ == "__main__":
    main()
