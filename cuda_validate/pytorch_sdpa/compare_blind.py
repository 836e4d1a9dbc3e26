#!/usr/bin/env python3
"""Measured cuDNN cases vs iosim's blind predictions (predict_blind.py): a Markdown table per case
and the median and worst relative errors, for NOTES.md.

  compare_blind.py --measured measurements.json --predicted blind_predictions_flash2.json

Measured time: the case's time_free_running_s (CUDA events around the PyTorch calls, all roles
back to back, warm L2, median over the repetition sets). Measured DRAM read: the sum over the
case's kernels of dram__bytes_read.sum (ncu, cold L2, single-pass run). Error = predicted /
measured - 1. Effective TFLOP/s counts 4*B*H*N^2*d for a forward (half of it when causal) and
2.5 times that for a backward, the FlashAttention papers' convention. "of wgmma peak" divides
those FLOPs by the ncu cycles (sum over kernels of gpu__time_duration x sm__cycles_elapsed per
second, clocks locked to base) x 132 SMs x 4096 FLOP per SM clock (fp16/bf16 wgmma's measured
rate, microbench/wgmma.cu).
"""
import argparse
import json
import statistics
import sys


def flops(problem, pass_):
    p = problem
    f = 4.0 * p["batch"] * p["heads"] * p["seq"] * p["seq_kv"] * p["head_dim"]
    if p["causal"]:
        f *= 0.5
    return f * (3.5 if pass_ == "fwdbwd" else 1.0)


def rows(measured, predicted):
    pred = {c["id"]: c for c in predicted["cases"]}
    out = []
    for c in measured["cases"]:
        p = pred.get(c["id"])
        kernels = c.get("kernels") or []
        dram = sum((k.get("metrics") or {}).get("dram__bytes_read.sum") or 0 for k in kernels)
        ncu_t = sum(((k.get("metrics") or {}).get("gpu__time_duration.sum") or 0) * 1e-9
                    for k in kernels)
        ncu_cycles = sum(((k.get("metrics") or {}).get("gpu__time_duration.sum") or 0) * 1e-9 *
                         ((k.get("metrics") or {}).get("sm__cycles_elapsed.avg.per_second") or 0)
                         for k in kernels)
        sms = (measured.get("device") or {}).get("multiprocessor_count") or 132
        t = c.get("time_free_running_s")
        spread = (c.get("time_spread") or {}).get("rel_range")
        r = {"id": c["id"], "pass": c["pass"], "problem": c["problem"], "time_s": t,
             "time_rel_range": spread, "ncu_time_s": ncu_t, "dram_read_bytes": dram,
             "tflops": flops(c["problem"], c["pass"]) / t / 1e12 if t else None,
             "ncu_cycles": ncu_cycles,
             "of_wgmma_peak": (flops(c["problem"], c["pass"]) / (ncu_cycles * sms * 4096)
                               if ncu_cycles else None),
             "check_passed": (c.get("check") or {}).get("passed")}
        if p and p.get("time_s"):
            r["pred_time_s"] = p["time_s"]
            r["pred_dram_read_bytes"] = p["hbm_read_bytes"]
            r["time_err"] = p["time_s"] / t - 1 if t else None
            r["dram_err"] = p["hbm_read_bytes"] / dram - 1 if dram else None
            r["pred_bound"] = p.get("bound")
        out.append(r)
    return out


def stats(values):
    v = [abs(x) for x in values if x is not None]
    if not v:
        return None
    return {"cases": len(v), "median_abs": statistics.median(v), "worst_abs": max(v)}


def signed_median(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measured", required=True)
    ap.add_argument("--predicted", required=True)
    ap.add_argument("--json", help="also write the rows and statistics here")
    args = ap.parse_args()
    measured = json.load(open(args.measured))
    predicted = json.load(open(args.predicted))
    rs = rows(measured, predicted)
    print("| case | pass | measured ms (sets' range) | TFLOP/s | of wgmma peak (ncu cycles) "
          "| blind flash2 ms | time err | measured DRAM read MB | blind MB | DRAM err |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rs:
        p = r["problem"]
        name = (f"d{p['head_dim']} N={p['seq']} B{p['batch']}H{p['heads']}"
                + (" causal" if p["causal"] else "") + (f" {p['dtype']}" if p["dtype"] != "fp16"
                                                        else ""))
        spread = f" ({100 * r['time_rel_range']:.0f}%)" if r["time_rel_range"] is not None else ""
        print(f"| {name} | {r['pass']} | {r['time_s'] * 1e3:.3f}{spread} | {r['tflops']:.0f} | "
              f"{100 * r['of_wgmma_peak']:.0f}% | "
              f"{r.get('pred_time_s', float('nan')) * 1e3:.3f} | "
              f"{100 * r.get('time_err', float('nan')):+.0f}% | {r['dram_read_bytes'] / 1e6:.1f} | "
              f"{r.get('pred_dram_read_bytes', float('nan')) / 1e6:.1f} | "
              f"{100 * r.get('dram_err', float('nan')):+.1f}% |")
    summary = {}
    for label, sel in (("all", lambda r: True), ("fwd", lambda r: r["pass"] == "fwd"),
                       ("fwdbwd", lambda r: r["pass"] == "fwdbwd")):
        sub = [r for r in rs if sel(r)]
        summary[label] = {"time": stats([r.get("time_err") for r in sub]),
                          "time_signed_median": signed_median([r.get("time_err") for r in sub]),
                          "dram_read": stats([r.get("dram_err") for r in sub]),
                          "dram_read_signed_median":
                              signed_median([r.get("dram_err") for r in sub])}
    print()
    print("| cases | time: median abs err | worst | signed median | DRAM read: median abs err "
          "| worst | signed median |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, s in summary.items():
        t, d = s["time"], s["dram_read"]
        if not t or not d:
            continue
        print(f"| {label} ({t['cases']}) | {100 * t['median_abs']:.0f}% | {100 * t['worst_abs']:.0f}% "
              f"| {100 * s['time_signed_median']:+.0f}% | {100 * d['median_abs']:.1f}% | "
              f"{100 * d['worst_abs']:.1f}% | {100 * s['dram_read_signed_median']:+.1f}% |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rs, "summary": summary}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
