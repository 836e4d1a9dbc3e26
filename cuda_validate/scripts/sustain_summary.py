#!/usr/bin/env python3
"""The SM clock and board power of each case the runner's sustain mode ran (runner/main.cu), joined
with nvidia-smi's samples of the same call and, where given, iosim's blind predictions of the
suite (predict_blind.py, whose "power" field is the power model's board power and whether the
limit binds).

Usage: sustain_summary.py --smi SMI.csv --out OUT.json [--md OUT.md]
           RUNNER.json[:PREDICTIONS.json] ...
Per case:
- single: the median time of the --reps single runs and the median clock the probe before each
  read (the clock a run starts at after ~100 us of one busy thread);
- sustained: from 1 s after the case's first batch (the power controller settles) to its last,
  the median time per run, the median probe clock after each batch, and nvidia-smi's medians
  (power.draw, clocks.sm, temperature) with the share of samples in which the SW power cap or a
  slowdown held the clock;
- predicted: the blind prediction of the same suite line (same index), its clock, board power and
  whether the 700 W limit binds in the model, and its time error against the sustained time.
"""
import argparse
import json
import statistics
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from power_clock_summary import num, parse_smi  # noqa: E402


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def reason_share(samples, col):
    vals = [s.get(col, "").strip() for s in samples if s.get(col) is not None]
    vals = [v for v in vals if v not in ("", "[N/A]", "N/A")]
    if not vals:
        return None
    return sum(1 for v in vals if v.lower() in ("active", "1", "yes")) / len(vals)


def summarize(case, pred, smi, skip_ms):
    s = case.get("sustain")
    if not s or not s["batches"]:
        return None
    batches = s["batches"]
    t0 = batches[0][0] + skip_ms
    steady = [b for b in batches if b[0] >= t0] or batches[len(batches) // 2:]
    w = [x for x in smi if steady[0][0] <= x["epoch_ms"] <= steady[-1][1]]
    row = {
        "id": case["id"],
        "schedule": case["schedule"],
        "kernel": (case["kernel"].get("name") if isinstance(case.get("kernel"), dict)
                   else case.get("kernel")),
        "single_time_s": med(s["single_s"]),
        "single_probe_mhz": med(s["single_probe_mhz"]),
        "sustained_time_s": med([b[2] for b in steady]),
        "sustained_probe_mhz": med([b[3] for b in steady]),
        "sustained_batches": len(steady),
        "smi_samples": len(w),
        "smi_power_w": med([num(x.get("power.draw")) for x in w]),
        "smi_sm_mhz": med([num(x.get("clocks.sm")) for x in w]),
        "smi_temp_c": med([num(x.get("temperature.gpu")) for x in w]),
        "power_cap_share": reason_share(w, "clocks_event_reasons.sw_power_cap"),
        "hw_slowdown_share": reason_share(w, "clocks_event_reasons.hw_slowdown"),
        "thermal_share": reason_share(w, "clocks_event_reasons.sw_thermal_slowdown"),
    }
    if pred is not None:
        p = pred["predicted"]
        power = p.get("power") or {}
        row.update({
            "predicted_time_s": p["time_s"],
            "predicted_mhz": p["sm_clock_mhz"],
            "predicted_w": power.get("predicted_w"),
            "predicted_binding": power.get("binding"),
            "time_error_vs_sustained": p["time_s"] / row["sustained_time_s"] - 1.0,
            "time_error_vs_single": p["time_s"] / row["single_time_s"] - 1.0,
        })
    return row


def fmt(v, f="{:.0f}"):
    return "" if v is None else f.format(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smi", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--md")
    ap.add_argument("--skip-ms", type=float, default=1000.0)
    ap.add_argument("inputs", nargs="+", help="RUNNER.json[:PREDICTIONS.json]")
    a = ap.parse_args()
    smi = parse_smi(a.smi)
    rows = []
    for spec in a.inputs:
        runner_path, _, pred_path = spec.partition(":")
        runner = json.load(open(runner_path))
        preds = json.load(open(pred_path))["cases"] if pred_path else []
        for case in runner["cases"]:
            # The runner's index is the case's line in the suite, as predict_blind.py's order.
            pred = preds[case["index"]] if case["index"] < len(preds) else None
            r = summarize(case, pred, smi, a.skip_ms)
            if r:
                rows.append(r)
    json.dump({"rows": rows}, open(a.out, "w"), indent=1)
    lines = ["| case | single MHz | sustained MHz (probe / smi) | smi W | cap | predicted MHz | "
             "predicted W | binds | time err sustained | time err single |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for r in rows:
        lines.append("| {} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["id"], fmt(r["single_probe_mhz"]), fmt(r["sustained_probe_mhz"]),
            fmt(r["smi_sm_mhz"]), fmt(r["smi_power_w"]), fmt(r["power_cap_share"], "{:.2f}"),
            fmt(r.get("predicted_mhz")), fmt(r.get("predicted_w")),
            {True: "yes", False: "no", None: ""}[r.get("predicted_binding")],
            fmt(r.get("time_error_vs_sustained"), "{:+.1%}"),
            fmt(r.get("time_error_vs_single"), "{:+.1%}")))
    text = "\n".join(lines) + "\n"
    if a.md:
        open(a.md, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
