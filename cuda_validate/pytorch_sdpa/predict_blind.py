#!/usr/bin/env python3
"""Blind predictions: what iosim says for each case of a measure.py suite from the command-line
flags alone (no measured input: no clock, no tiling, no registers), before the measurements
are compared with anything. Written for issue #13's cudnn suite: today's flash2 schedule stands
in for cuDNN's Hopper kernels, so these numbers are the "before" of the flash3 schedule.

  predict_blind.py --iosim build/iosim --profile h100-sxm5-80gb --suite cudnn \\
      --out cuda_validate/measurements/h100-sxm5-80gb/cudnn_2026-11-23/blind_predictions_flash2.json

Each case runs
  iosim run --algo flash2 --profile P --batch B --heads H --seq N --head-dim d [--causal]
            [--pass fwdbwd] --format json
and keeps time_s, the bound, the HBM and L2 counters, per-kernel times and the tiling iosim
chose; the file records the iosim commit and the exact command lines.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import measure  # noqa: E402  (the suite definitions; no torch needed)


def git_commit(repo):
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--", "sim",
                                "algorithms", "cli", "hwprofiles", "reports"],
                               capture_output=True, text=True, check=True).stdout.strip()
        # The last commit that changed what iosim computes (the model, schedules, profiles, CLI).
        model = subprocess.run(["git", "-C", repo, "log", "-1", "--format=%H", "--", "sim",
                                "algorithms", "cli", "hwprofiles", "reports", "CMakeLists.txt"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head, bool(dirty), model
    except (OSError, subprocess.CalledProcessError):
        return None, None, None


def command_for(iosim, algo, profile, case):
    p = case["problem"]
    cmd = [iosim, "run", "--algo", algo, "--profile", profile, "--batch", str(p["batch"]),
           "--heads", str(p["heads"]), "--seq", str(p["seq"]), "--head-dim", str(p["head_dim"])]
    if "seq_lens" in p:  # a packed batch (varlen_suite.py): its lengths, not B and N
        cmd = cmd[:6] + ["--heads", str(p["heads"]), "--head-dim", str(p["head_dim"]),
                         "--seq-lens", ",".join(map(str, p["seq_lens"])),
                         "--seq-kv-lens", ",".join(map(str, p["seq_kv_lens"]))]
    elif p["seq_kv"] != p["seq"]:
        cmd += ["--seq-kv", str(p["seq_kv"])]
    if "kv_heads" in p:
        cmd += ["--kv-heads", str(p["kv_heads"])]
    if p["causal"]:
        cmd.append("--causal")
    if case["pass"] != "fwd":
        cmd += ["--pass", case["pass"]]
    if p.get("dtype", "fp16") != "fp16":
        cmd += ["--dtype", p["dtype"]]
    cmd += ["--format", "json"]
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iosim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--suite", default="cudnn", choices=("sdpa", "cudnn", "edge", "varlen", "chunked"))
    ap.add_argument("--algo", default="flash2",
                    help="the algorithm, or 'auto': each case's own schedule (flash -> flash2, "
                         "cudnn -> flash3)")
    ap.add_argument("--kernel-flash", default="",
                    help="a kernel description file the flash backend's cases run as (--kernel) "
                         "instead of --algo")
    ap.add_argument("--cold-l2", action="store_true",
                    help="bytes with a cold L2, as Nsight Compute counts them (--cold-l2)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    repo = os.path.abspath(os.path.join(HERE, "..", ".."))
    commit, dirty, model_commit = git_commit(repo)
    cases = []
    for case in measure.build_suite(args.suite):
        algo = case["schedule"] if args.algo == "auto" else args.algo
        cmd = command_for(args.iosim, algo, args.profile, case)
        if args.kernel_flash and case["backend"] == "flash":
            at = cmd.index("--algo")
            cmd[at:at + 2] = ["--kernel", args.kernel_flash]
        if args.cold_l2:
            cmd.append("--cold-l2")
        res = subprocess.run(cmd, capture_output=True, text=True)
        shown = " ".join(["iosim"] + cmd[1:])
        if res.returncode != 0:
            cases.append({"id": case["id"], "command": shown, "error": res.stderr.strip()[:500]})
            print(f"{case['id']}: ERROR {res.stderr.strip()[:200]}", file=sys.stderr)
            continue
        r = json.loads(res.stdout)
        c = r.get("counters", {})
        kernels = [{k: kr.get(k) for k in ("name", "time_s", "bound", "grid", "ctas_per_sm",
                                           "waves", "threads_per_cta", "smem_bytes_per_cta",
                                           "registers_per_thread", "occupancy_limiter")
                    if k in kr} for kr in r.get("kernels", [])]
        kc = [kr.get("counters", {}) for kr in r.get("kernels", [])]
        for k, cnt in zip(kernels, kc):
            k["hbm_read_bytes"] = cnt.get("hbm_read_bytes")
        cases.append({
            "id": case["id"], "pass": case["pass"], "problem": case["problem"],
            "command": shown, "algorithm": r.get("algorithm"), "time_s": r.get("time_s"),
            "bound": r.get("bound"), "sm_clock_mhz": r.get("sm_clock_mhz"),
            "hbm_read_bytes": c.get("hbm_read_bytes"), "hbm_write_bytes": c.get("hbm_write_bytes"),
            "l2_read_bytes": c.get("l2_read_bytes"), "l2_write_bytes": c.get("l2_write_bytes"),
            "l2_read_hit_rate": r.get("achieved", {}).get("l2_read_hit_rate"),
            "flops": c.get("flops"), "tiling": r.get("tiling"), "kernels": kernels,
        })
        print(f"{case['id']}: {r.get('time_s', 0) * 1e3:.3f} ms, "
              f"HBM read {c.get('hbm_read_bytes', 0) / 1e6:.1f} MB", file=sys.stderr)
    doc = {
        "what": f"blind iosim predictions ({args.algo}) of the {args.suite} suite, from flags alone",
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "iosim_commit": commit, "iosim_tree_dirty_in_model_folders": dirty,
        "iosim_model_commit": model_commit,
        "iosim_model_commit_is": "the last commit that changed sim/, algorithms/, cli/, "
                                 "hwprofiles/, reports/ or CMakeLists.txt: the model these "
                                 "numbers come from",
        "profile": args.profile, "algorithm": args.algo,
        "kernel_flash": args.kernel_flash or None,
        "inputs": "command-line flags only: no measured clock, tiling or registers; iosim's "
                  "defaults otherwise (the profile's clock, flash2's default tiles, L2 model on, "
                  "no --cold-l2)",
        "script": "cuda_validate/pytorch_sdpa/predict_blind.py",
        "cases": cases,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
