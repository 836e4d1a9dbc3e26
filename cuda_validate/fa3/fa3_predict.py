#!/usr/bin/env python3
"""iosim's `--algo flash3` predictions for our FlashAttention-3-style kernel, and the comparison.

  fa3_predict.py predict --iosim BIN --cases MEASURED.json --out PRED.json [--sm-clock-mhz F]
                         [--profile NAME]
      For every distinct problem of the measured file (batch, heads, N, d, dtype, causal) and
      both warpgroup arrangements (pingpong, cooperative) runs
        iosim run --algo flash3 --batch B --heads H --seq N --head-dim d --block-q 128
                  --block-kv 128 --stages 2 --threads 384 --warpgroups W [--causal]
                  [--dtype fp8] [--profile NAME] --format json
      warm (time) and with --cold-l2 (DRAM bytes, as ncu measures them). Flags only: the tiling
      the kernel ran with; nothing measured goes in unless --sm-clock-mhz is given (then the
      file says so). iosim has no flag for intra-warpgroup overlap, the copy path or a
      non-persistent grid, so those variants share their problem's prediction.
  fa3_predict.py compare --cases MEASURED.json --pred PRED.json [--pred-clock PRED2.json]
      Per case: measured time, predicted time (the case's own arrangement), error; DRAM read
      error; and the mechanism table: the measured gain of each switch against iosim's.
"""
import argparse
import json
import statistics
import subprocess
import sys


def problem_key(p):
    return (p["batch"], p["heads"], p["seq"], p["head_dim"], bool(p["causal"]),
            p.get("dtype", "fp16"))


def run_iosim(binary, key, warpgroups, cold, clock, profile=None):
    b, h, n, d, causal, dtype = key
    cmd = [binary, "run", "--algo", "flash3", "--batch", str(b), "--heads", str(h), "--seq",
           str(n), "--head-dim", str(d), "--block-q", "128", "--block-kv", "128", "--stages", "2",
           "--threads", "384", "--warpgroups", warpgroups, "--format", "json"]
    if causal:
        cmd.append("--causal")
    if cold:
        cmd.append("--cold-l2")
    if dtype != "fp16":
        cmd += ["--dtype", dtype]
    if profile:
        cmd += ["--profile", profile]
    if clock:
        cmd += ["--sm-clock-mhz", str(clock)]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    k = out["kernels"][0]
    return cmd, {
        "time_s": out["time_s"], "bound": out["bound"],
        "hbm_read_bytes": out["counters"]["hbm_read_bytes"],
        "hbm_write_bytes": out["counters"]["hbm_write_bytes"],
        "l2_read_bytes": out["counters"]["l2_read_bytes"],
        "tensor_flops": out["counters"]["tensor_flops"], "sfu_ops": out["counters"]["sfu_ops"],
        "fp32_flops": out["counters"]["fp32_flops"],
        "ctas": k["ctas"], "ctas_per_sm": k["ctas_per_sm"], "waves": k["waves"],
        "smem_bytes_per_cta": k["smem_bytes_per_cta"],
        "registers_per_thread": k["registers_per_thread"],
    }


def predict(a):
    cases = json.load(open(a.cases))["cases"]
    keys = {problem_key(c["problem"]) for c in cases}
    # An fp8 problem's fp16 twin too: iosim's FP8 speed-up is the ratio of the two.
    keys = sorted(keys | {k[:5] + ("fp16",) for k in keys if k[5] != "fp16"})
    preds = []
    for key in keys:
        for wg in ("pingpong", "cooperative"):
            cmd, warm = run_iosim(a.iosim, key, wg, False, a.sm_clock_mhz, a.profile)
            _, cold = run_iosim(a.iosim, key, wg, True, a.sm_clock_mhz, a.profile)
            b, h, n, d, causal, dtype = key
            preds.append({"problem": {"batch": b, "heads": h, "seq": n, "head_dim": d,
                                      "causal": causal, "dtype": dtype},
                          "warpgroups": wg, "command": " ".join(cmd[1:]),
                          "warm": warm, "cold_l2": cold})
            print(f"{key} {wg}: {warm['time_s'] * 1e3:.3f} ms", file=sys.stderr)
    json.dump({"what": "iosim run --algo flash3 predictions for cuda_validate/fa3 cases "
                       "(fa3_predict.py predict)",
               "sm_clock_mhz": a.sm_clock_mhz or "profile boost clock",
               "profile": a.profile or "iosim's default (h100-sxm5-80gb)",
               "flags_only": not a.sm_clock_mhz, "predictions": preds},
              open(a.out, "w"), indent=1)
    return 0


def err(p, m):
    return (p - m) / m


def compare(a):
    doc = json.load(open(a.cases))
    preds = {}
    for p in json.load(open(a.pred))["predictions"]:
        preds[(problem_key(p["problem"]), p["warpgroups"])] = p
    rows = []
    for c in doc["cases"]:
        key = problem_key(c["problem"])
        wg = c["variant"]["warpgroups"]
        p = preds[(key, wg)]
        p16 = preds.get((key[:5] + ("fp16",), wg))
        m_t = c["time_free_running_s"]
        k = c["kernels"][0]["metrics"] if c["kernels"] else {}
        dram = k.get("dram__bytes_read.sum")
        # Clock-free: ncu's cycles (its duration x its locked SM clock, cold L2) against the
        # predicted cycles at the profile's boost clock (1980 MHz; the kernels are compute-bound).
        ncu_cyc = k["gpu__time_duration.sum"] * 1e-9 * k["sm__cycles_elapsed.avg.per_second"]
        pred_cyc = p["warm"]["time_s"] * a.profile_clock_mhz * 1e6
        rows.append({"id": c["id"], "key": key, "variant": c["variant"], "measured_s": m_t,
                     "predicted_s": p["warm"]["time_s"],
                     "time_err": err(p["warm"]["time_s"], m_t),
                     "ncu_cycles": ncu_cyc, "predicted_cycles": pred_cyc,
                     "cycle_err": err(pred_cyc, ncu_cyc),
                     "tensor_active": k["sm__pipe_tensor_op_hmma_cycles_active.sum"] /
                                      (4 * 132 * ncu_cyc),
                     "dram_read_err": err(p["cold_l2"]["hbm_read_bytes"], dram) if dram else None,
                     "bound": p["warm"]["bound"], "clock_mhz": c.get("sm_clock_mhz_clock64")})
        if p16:
            rows[-1]["predicted_s16"] = p16["warm"]["time_s"]
    print("| case | measured ms | SM MHz (clock64) | predicted ms | time err | ncu Mcycles | "
          "predicted Mcycles | cycle err | tensor active (ncu) | DRAM read err |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        dr = f"{r['dram_read_err'] * 100:+.1f}%" if r["dram_read_err"] is not None else "-"
        print(f"| {r['id'].replace('fa3own_', '')} | {r['measured_s'] * 1e3:.3f} | "
              f"{r['clock_mhz']:.0f} | {r['predicted_s'] * 1e3:.3f} | {r['time_err'] * 100:+.1f}% | "
              f"{r['ncu_cycles'] / 1e6:.2f} | {r['predicted_cycles'] / 1e6:.2f} | "
              f"{r['cycle_err'] * 100:+.1f}% | {r['tensor_active'] * 100:.1f}% | {dr} |")
    ce = [abs(r["cycle_err"]) for r in rows]
    print(f"\ncycles (ncu, locked clock) vs predicted cycles: median |err| "
          f"{statistics.median(ce) * 100:.1f}%, worst {max(ce) * 100:.1f}%, signed median "
          f"{statistics.median(r['cycle_err'] for r in rows) * 100:+.1f}%")
    te = [abs(r["time_err"]) for r in rows]
    de = [abs(r["dram_read_err"]) for r in rows if r["dram_read_err"] is not None]
    print(f"\ntime: median |err| {statistics.median(te) * 100:.1f}%, worst {max(te) * 100:.1f}%, "
          f"signed median {statistics.median(r['time_err'] for r in rows) * 100:+.1f}% "
          f"({len(rows)} cases)")
    if de:
        print(f"DRAM read: median |err| {statistics.median(de) * 100:.2f}%, worst "
              f"{max(de) * 100:.2f}%")

    # Mechanisms: measured time ratio of a switch against iosim's, per problem.
    by = {}
    for r in rows:
        v = r["variant"]
        by[(r["key"], v["pingpong"], v["intra_warpgroup_overlap"], v["copy"], v["persistent"])] = r
    print("\nRatios of the first variant's time to the second's: CUDA events (free-running clock) "
          "and ncu cycles (locked clock, one launch); iosim's predicted time.")
    print("\n| problem | mechanism | measured ratio (events) | measured ratio (ncu cycles) | "
          "iosim ratio |")
    print("| --- | --- | --- | --- | --- |")
    mech = [
        ("ping-pong on / off (no IWO)", (True, False, "tma", True), (False, False, "tma", True)),
        ("ping-pong on / off (with IWO)", (True, True, "tma", True), (False, True, "tma", True)),
        ("IWO on / off (no ping-pong)", (False, True, "tma", True), (False, False, "tma", True)),
        ("IWO on / off (ping-pong)", (True, True, "tma", True), (True, False, "tma", True)),
        ("cp.async / TMA (pp+IWO)", (True, True, "cp.async", True), (True, True, "tma", True)),
        ("cp.async / TMA (IWO)", (False, True, "cp.async", True), (False, True, "tma", True)),
        ("grid / persistent (pp+IWO)", (True, True, "tma", False), (True, True, "tma", True)),
    ]
    summary = {m[0]: [] for m in mech}
    for key in sorted({r["key"] for r in rows}):
        for name, on, off in mech:
            x, y = by.get((key,) + on), by.get((key,) + off)
            if not x or not y:
                continue
            mr, pr = x["measured_s"] / y["measured_s"], x["predicted_s"] / y["predicted_s"]
            cr = x["ncu_cycles"] / y["ncu_cycles"]
            summary[name].append((mr, cr, pr, key[3], key[5]))
            b, h, n, d, causal, dtype = key
            print(f"| d{d} {dtype} N={n} B{b}H{h}{' causal' if causal else ''} | {name} | {mr:.3f} | "
                  f"{cr:.3f} | {pr:.3f} |")
    print("\n| mechanism | d | cases | measured ratio, events: median (min - max) | "
          "measured ratio, ncu cycles: median (min - max) | iosim ratio median |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, v in summary.items():
        for d, dt in ((64, "fp16"), (128, "fp16"), (128, "fp8")):
            w = [x for x in v if x[3] == d and x[4] == dt]
            if not w:
                continue
            ms, cs, ps = [x[0] for x in w], [x[1] for x in w], [x[2] for x in w]
            print(f"| {name} | {d}{' fp8' if dt == 'fp8' else ''} | {len(w)} | {statistics.median(ms):.3f} ({min(ms):.3f} - "
                  f"{max(ms):.3f}) | {statistics.median(cs):.3f} ({min(cs):.3f} - {max(cs):.3f}) "
                  f"| {statistics.median(ps):.3f} |")
    speedup(rows, a.fp16_cases)
    return 0


def speedup(rows, fp16_path):
    """FP8 / FP16 time ratio per (problem, variant): measured (events, ncu cycles) and iosim's.
    The fp16 rows come from the same file or from --fp16-cases (another run's file)."""
    fp8 = [r for r in rows if r["key"][5] == "fp8"]
    if not fp8:
        return
    base = {}
    others = [r for r in rows if r["key"][5] == "fp16"]
    if fp16_path:
        doc = json.load(open(fp16_path))
        for c in doc["cases"]:
            k = c["kernels"][0]["metrics"] if c["kernels"] else {}
            cyc = k["gpu__time_duration.sum"] * 1e-9 * k["sm__cycles_elapsed.avg.per_second"]
            others.append({"key": problem_key(c["problem"]), "variant": c["variant"],
                           "measured_s": c["time_free_running_s"], "ncu_cycles": cyc})
    for r in others:
        v = r["variant"]
        base[(r["key"][:5], v["pingpong"], v["intra_warpgroup_overlap"], v["copy"],
              v["persistent"])] = r
    print("\nFP8 speed-up (fp16 time / fp8 time, same problem and variant): measured with CUDA "
          "events and ncu cycles; iosim's prediction (its own fp16 and fp8 predictions).")
    print("\n| problem | variant | fp8 ms | fp16 ms | speed-up (events) | speed-up (ncu cycles) | "
          "iosim speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    sums = []
    for r in fp8:
        v = r["variant"]
        b16 = base.get((r["key"][:5], v["pingpong"], v["intra_warpgroup_overlap"], v["copy"],
                        v["persistent"]))
        if not b16 or "predicted_s16" not in r:
            continue
        me, mc = b16["measured_s"] / r["measured_s"], b16["ncu_cycles"] / r["ncu_cycles"]
        ps = r["predicted_s16"] / r["predicted_s"]
        sums.append((me, mc, ps))
        b, h, n, d, causal, _ = r["key"]
        print(f"| d{d} N={n} B{b}H{h}{' causal' if causal else ''} | pp{int(v['pingpong'])} "
              f"iwo{int(v['intra_warpgroup_overlap'])} | {r['measured_s'] * 1e3:.3f} | "
              f"{b16['measured_s'] * 1e3:.3f} | {me:.3f} | {mc:.3f} | {ps:.3f} |")
    if sums:
        print(f"\nmedian speed-up: events {statistics.median(x[0] for x in sums):.3f}, ncu cycles "
              f"{statistics.median(x[1] for x in sums):.3f}, iosim "
              f"{statistics.median(x[2] for x in sums):.3f} ({len(sums)} pairs)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--iosim", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--sm-clock-mhz", type=float, default=0.0)
    p.add_argument("--profile", default="", help="iosim --profile (default: iosim's)")
    c = sub.add_parser("compare")
    c.add_argument("--cases", required=True)
    c.add_argument("--pred", required=True)
    c.add_argument("--fp16-cases", default="",
                   help="fp16 cases of another run for the FP8 speed-up table (else this file's)")
    c.add_argument("--profile-clock-mhz", type=float, default=1980.0,
                   help="the clock the predictions were made at (the profile's boost clock)")
    a = ap.parse_args()
    return predict(a) if a.cmd == "predict" else compare(a)


if __name__ == "__main__":
    sys.exit(main())
