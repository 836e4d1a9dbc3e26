#!/usr/bin/env python3
"""iosim's flash3 schedule against cuDNN's fused attention forward (cuda_validate/measurements/*/cudnn_*).

  predict MEASURED.json PROFILE OUT.json [IOSIM]   iosim's predictions from flags alone: reads only
                                                   each forward case's problem, never its results
  compare MEASURED.json PREDICTIONS.json           predicted vs measured time and DRAM read
  predict-fwdbwd MEASURED.json PROFILE OUT.json [IOSIM]
                                                   the same for the forward+backward cases
                                                   (--pass fwdbwd, the primary arrangement only)
  compare-fwdbwd MEASURED.json PREDICTIONS.json    their comparison, per case and summarized
  kernels-fwdbwd MEASURED.json PROFILE [IOSIM]     per kernel, as `iosim validate` predicts each
                                                   forward+backward case (cold L2 per kernel, the
                                                   case's ncu clock, cuDNN's forward and backward
                                                   tiles): measured vs predicted time and DRAM read

The flags give cuDNN's tiling as its launch facts show it (NOTES.md): 128 query rows per CTA (two
consumer warpgroups of 64) against 128-key blocks, 384 threads, three K/V stages; everything else
is the schedule's and the profile's (the profile's boost clock). Both warpgroup arrangements are
predicted; "pingpong" is FlashAttention-3's for these head dims, so it is the primary prediction.
Time is predicted with a warm start (the measured time is warm-L2 CUDA-event time); the DRAM read
with --cold-l2, as ncu measured it.
"""
import json
import statistics
import subprocess
import sys

ARRANGEMENTS = ("pingpong", "cooperative")
# The arrangement the comparison is held to. v1 (H100, before any comparison): "pingpong",
# FlashAttention-3's. After the H100 comparison: "cooperative" (see cuda_validate/measurements/../NOTES_flash3.md).
PRIMARY = "cooperative"


def forward_cases(measured):
    for c in measured["cases"]:
        if c.get("pass") == "fwd" and c.get("error") is None:
            yield c


def flags(profile, prob, arrangement, cold, pass_="fwd"):
    """`iosim run`'s arguments for a case's problem (also scripts/readme_numbers.py's)."""
    cmd = ["run", "--profile", profile, "--algo", "flash3", "--pass", pass_,
           "--batch", str(prob["batch"]), "--heads", str(prob["heads"]),
           "--seq", str(prob["seq"]), "--seq-kv", str(prob["seq_kv"]),
           "--head-dim", str(prob["head_dim"]), "--dtype", prob["dtype"],
           "--block-q", "128", "--block-kv", "128", "--stages", "3",
           "--warpgroups", arrangement, "--format", "json"]
    if prob["causal"]:
        cmd.append("--causal")
    if cold:
        cmd.append("--cold-l2")
    return cmd


def run(iosim, profile, prob, arrangement, cold, pass_="fwd"):
    cmd = [iosim, *flags(profile, prob, arrangement, cold, pass_)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout), cmd


def predict(measured_path, profile, out_path, iosim="build/iosim"):
    measured = json.load(open(measured_path))
    rows = []
    for c in forward_cases(measured):
        row = {"id": c["id"], "problem": c["problem"]}
        for a in ARRANGEMENTS:
            warm, cmd = run(iosim, profile, c["problem"], a, False)
            cold, _ = run(iosim, profile, c["problem"], a, True)
            row[a] = {"time_s": warm["time_s"], "bound": warm["bound"],
                      "dram_read_bytes": cold["counters"]["hbm_read_bytes"],
                      "command": " ".join(cmd[1:])}
        rows.append(row)
    json.dump({"profile": profile, "primary": PRIMARY, "rows": rows}, open(out_path, "w"),
              indent=1)
    print(f"{len(rows)} forward cases predicted -> {out_path}")


def measured_dram_read(case):
    return sum(k["metrics"]["dram__bytes_read.sum"] for k in case["kernels"]
               if k.get("metrics") and k["metrics"].get("dram__bytes_read.sum") is not None)


def print_error_row(case, predicted):
    """Prints one table row of a measured case against a prediction; returns the relative errors
    of time (free-running) and DRAM read."""
    t = predicted["time_s"] / case["time_free_running_s"] - 1
    d = predicted["dram_read_bytes"] / measured_dram_read(case) - 1
    pr = case["problem"]
    name = (f"d{pr['head_dim']} N={pr['seq']} B{pr['batch']}H{pr['heads']}"
            f"{' causal' if pr['causal'] else ''}{' bf16' if pr['dtype'] == 'bf16' else ''}")
    print(f"| {name} | {case['time_free_running_s'] * 1e3:.3f} | {predicted['time_s'] * 1e3:.3f} | "
          f"{t:+.1%} | {d:+.1%} | {predicted['bound']} |")
    return t, d

def compare(measured_path, predictions_path):
    measured = {c["id"]: c for c in forward_cases(json.load(open(measured_path)))}
    pred = json.load(open(predictions_path))
    for a in ARRANGEMENTS:
        print(f"\n## {a}{' (primary)' if a == pred['primary'] else ''}\n")
        print("| case | measured ms | predicted ms | time err | DRAM read err | bound |")
        print("| --- | --- | --- | --- | --- | --- |")
        terr, derr = [], []
        for r in pred["rows"]:
            t, d = print_error_row(measured[r["id"]], r[a])
            terr.append(t)
            derr.append(d)
        big = [t for r, t in zip(pred["rows"], terr) if r["problem"]["seq"] > 1024]
        print(f"\ntime: median |err| {statistics.median(map(abs, terr)):.1%}, worst "
              f"{max(map(abs, terr)):.1%}, signed median {statistics.median(terr):+.1%}; "
              f"N > 1k: median |err| {statistics.median(map(abs, big)):.1%}, worst "
              f"{max(map(abs, big)):.1%}")
        print(f"DRAM read: median |err| {statistics.median(map(abs, derr)):.2%}, worst "
              f"{max(map(abs, derr)):.2%}")


def fwdbwd_cases(measured):
    for c in measured["cases"]:
        if c.get("pass") == "fwdbwd" and c.get("error") is None:
            yield c


def predict_fwdbwd(measured_path, profile, out_path, iosim="build/iosim"):
    """The forward+backward cases: the flags tile the forward as above (cuDNN's forward tiling);
    the backward keeps flash3's own (FlashAttention-3's backward tiles for the head dim)."""
    measured = json.load(open(measured_path))
    rows = []
    for c in fwdbwd_cases(measured):
        warm, cmd = run(iosim, profile, c["problem"], PRIMARY, False, "fwdbwd")
        cold, _ = run(iosim, profile, c["problem"], PRIMARY, True, "fwdbwd")
        rows.append({"id": c["id"], "problem": c["problem"],
                     PRIMARY: {"time_s": warm["time_s"], "bound": warm["bound"],
                               "dram_read_bytes": cold["counters"]["hbm_read_bytes"],
                               "kernels": [{"name": k["name"], "time_s": k["time_s"]}
                                           for k in warm["kernels"]],
                               "command": " ".join(cmd[1:])}})
    json.dump({"profile": profile, "primary": PRIMARY, "pass": "fwdbwd", "rows": rows},
              open(out_path, "w"), indent=1)
    print(f"{len(rows)} forward+backward cases predicted -> {out_path}")


def compare_fwdbwd(measured_path, predictions_path):
    measured = {c["id"]: c for c in fwdbwd_cases(json.load(open(measured_path)))}
    pred = json.load(open(predictions_path))
    print("| case | measured ms | predicted ms | time err | DRAM read err | bound |")
    print("| --- | --- | --- | --- | --- | --- |")
    terr, derr = [], []
    for r in pred["rows"]:
        t, d = print_error_row(measured[r["id"]], r[pred["primary"]])
        terr.append(t)
        derr.append(d)
    print(f"\ntime: median |err| {statistics.median(map(abs, terr)):.1%}, worst "
          f"{max(map(abs, terr)):.1%}, signed median {statistics.median(terr):+.1%}")
    print(f"DRAM read: median |err| {statistics.median(map(abs, derr)):.2%}, worst "
          f"{max(map(abs, derr)):.2%}")


def kernels_fwdbwd(measured_path, profile, iosim="build/iosim"):
    print("| case | kernel | measured us | predicted us | time err | DRAM read MB meas / pred |")
    print("| --- | --- | --- | --- | --- | --- |")
    for c in fwdbwd_cases(json.load(open(measured_path))):
        ks = c["kernels"]
        total = sum(k["metrics"]["gpu__time_duration.sum"] for k in ks)
        clock = sum(k["metrics"]["gpu__time_duration.sum"] *
                    k["metrics"]["sm__cycles_elapsed.avg.per_second"] for k in ks) / total / 1e6
        prob, t = c["problem"], c["tiling"]
        cmd = [iosim, "run", "--profile", profile, "--algo", "flash3", "--pass", "fwdbwd",
               "--batch", str(prob["batch"]), "--heads", str(prob["heads"]),
               "--seq", str(prob["seq"]), "--seq-kv", str(prob["seq_kv"]),
               "--head-dim", str(prob["head_dim"]), "--dtype", prob["dtype"],
               "--block-q", str(t["block_q"]), "--block-kv", str(t["block_kv"]),
               "--backward-block-q", str(t["bwd"]["block_q"]),
               "--backward-block-kv", str(t["bwd"]["block_kv"]),
               "--cold-l2", "--sm-clock-mhz", f"{clock:.3f}", "--format", "json"]
        if prob["causal"]:
            cmd.append("--causal")
        # K/V buffer pairs from the forward kernel's shared memory, as validate derives them.
        row = prob["head_dim"] * 2
        pair = 2 * t["block_kv"] * row
        kv_bytes = t["smem_bytes_per_cta"] - t["block_q"] * row
        if kv_bytes // pair >= 1 and kv_bytes - kv_bytes // pair * pair < pair / 8:
            cmd += ["--stages", str(kv_bytes // pair)]
        run_ = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        pr = c["problem"]
        name = (f"d{pr['head_dim']} N={pr['seq']} B{pr['batch']}H{pr['heads']}"
                f"{' causal' if pr['causal'] else ''}")
        for k, p in zip(ks, run_["kernels"]):
            m = k["metrics"]
            print(f"| {name} | {p['name']} | {m['gpu__time_duration.sum'] / 1e3:.1f} | "
                  f"{p['time_s'] * 1e6:.1f} | "
                  f"{p['time_s'] * 1e9 / m['gpu__time_duration.sum'] - 1:+.1%} | "
                  f"{m['dram__bytes_read.sum'] / 1e6:.1f} / "
                  f"{p['counters']['hbm_read_bytes'] / 1e6:.1f} |")


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "predict":
        predict(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[1] == "predict-fwdbwd":
        predict_fwdbwd(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare-fwdbwd":
        compare_fwdbwd(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "kernels-fwdbwd":
        kernels_fwdbwd(*sys.argv[2:])
    else:
        sys.exit(__doc__)
