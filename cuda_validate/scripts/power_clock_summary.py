#!/usr/bin/env python3
"""Joins power_clock's (or traffic_power's) per-point JSON lines with nvidia-smi samples (csv with header, nounits,
taken on the same machine while it ran) and writes one JSON and one CSV row per point.

Usage: power_clock_summary.py RAW.jsonl SMI.csv OUT.json OUT.csv [--skip-ms 1000]
Per point, nvidia-smi samples are those between the launch's host start + skip and its end (the
first second after a change of load is left out: the power controller settles); the kernel's own
clock is clock64 cycles / globaltimer ns per CTA over the whole launch (median over CTAs), and
from CTA 0's 100 ms samples over the last half of the launch.
"""
import csv, json, statistics, sys, time


def parse_raw(path):
    pts = []
    for line in open(path):
        line = line.strip().rstrip(",")
        if line.startswith('{"point"'):
            try:
                pts.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return pts


def parse_smi(path):
    rows = list(csv.reader(open(path)))
    if not rows:
        return []
    hdr = [h.strip().split(" [")[0] for h in rows[0]]
    out = []
    for r in rows[1:]:
        if len(r) != len(hdr) or r[0].startswith("timestamp"):
            continue
        d = {h: v.strip() for h, v in zip(hdr, r)}
        for alias, name in (("clocks.current.sm", "clocks.sm"), ("clocks.current.memory", "clocks.mem")):
            if alias in d:
                d[name] = d[alias]
        ts = d["timestamp"]
        base, _, frac = ts.partition(".")
        try:
            d["epoch_ms"] = time.mktime(time.strptime(base, "%Y/%m/%d %H:%M:%S")) * 1e3 + float("0." + (frac or "0")) * 1e3
        except ValueError:
            continue
        out.append(d)
    return out


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 1) if xs else None


def main():
    a = sys.argv[1:]
    skip = 1000.0
    if "--skip-ms" in a:
        i = a.index("--skip-ms")
        skip = float(a[i + 1])
        del a[i:i + 2]
    raw, smi_path, out_json, out_csv = a
    pts = parse_raw(raw)
    smi = parse_smi(smi_path)
    reason_col = next((c for c in ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
                       if smi and c in smi[0]), None)
    idle = [s for s in smi if pts and s["epoch_ms"] < pts[0]["host_start_epoch_ms"] - 200]
    rows = []
    for p in pts:
        t0, t1 = p["host_start_epoch_ms"] + skip, p["host_end_epoch_ms"]
        w = [s for s in smi if t0 <= s["epoch_ms"] <= t1]
        s = p["cta0_samples_ns_clk"]
        half = [(s[i + 1][1] - s[i][1]) * 1e3 / (s[i + 1][0] - s[i][0])
                for i in range(len(s) // 2, len(s) - 1) if s[i + 1][0] > s[i][0]]
        firsts = [(s[i + 1][1] - s[i][1]) * 1e3 / (s[i + 1][0] - s[i][0])
                  for i in range(0, min(10, len(s) - 1)) if s[i + 1][0] > s[i][0]]
        row = {
            "point": p["point"], "dtype": p["dtype"], "spin": p["spin"],
            "duty_requested": p["duty_requested"], "duty_measured": round(p["duty_measured"], 4),
            "tflops": p["tflops"], "flop_per_clk_per_sm": p["flop_per_clk_per_sm"],
            "kernel_mhz_whole_run": p["sm_clock_mhz_clock64_vs_globaltimer_median"],
            "kernel_mhz_first_second_cta0": med(firsts),
            "kernel_mhz_second_half_cta0": med(half),
            "smi_samples": len(w),
            "smi_sm_mhz_median": med(num(x.get("clocks.sm")) for x in w),
            "smi_sm_mhz_min": min((num(x.get("clocks.sm")) for x in w if num(x.get("clocks.sm")) is not None), default=None),
            "smi_sm_mhz_max": max((num(x.get("clocks.sm")) for x in w if num(x.get("clocks.sm")) is not None), default=None),
            "smi_power_w_median": med(num(x.get("power.draw")) for x in w),
            "smi_power_instant_w_median": med(num(x.get("power.draw.instant")) for x in w),
            "smi_power_w_max": max((num(x.get("power.draw")) for x in w if num(x.get("power.draw")) is not None), default=None),
            "smi_temp_c_max": max((num(x.get("temperature.gpu")) for x in w if num(x.get("temperature.gpu")) is not None), default=None),
            "smi_mem_temp_c_max": max((num(x.get("temperature.memory")) for x in w if num(x.get("temperature.memory")) is not None), default=None),
            "smi_reasons_active": sorted({x.get(reason_col) for x in w}) if reason_col else [],
        }
        for k in ("traffic", "rate_requested_bytes_per_clk_per_sm", "traffic_bytes_per_clk_per_sm",
                  "traffic_gbps", "thread_ffma_per_s", "thread_fadd_per_s", "thread_mufu_per_s"):
            if k in p:  # traffic_power.cu's extra fields
                row[k] = p[k]
        for flag in ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                     "hw_power_brake_slowdown"):
            col = next((c for c in (f"clocks_event_reasons.{flag}", f"clocks_throttle_reasons.{flag}")
                        if smi and c in smi[0]), None)
            if col:
                row[f"frac_{flag}"] = round(sum(x.get(col) == "Active" for x in w) / len(w), 2) if w else None
        rows.append(row)
    baseline = {"smi_samples": len(idle), "smi_sm_mhz_median": med(num(x.get("clocks.sm")) for x in idle),
                "smi_power_w_median": med(num(x.get("power.draw")) for x in idle),
                "smi_temp_c_median": med(num(x.get("temperature.gpu")) for x in idle)}
    print("idle before the first point:", baseline)
    json.dump({"skip_ms": skip, "idle_before_first_point": baseline, "points": rows}, open(out_json, "w"), indent=1)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(out_csv, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=keys)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: (";".join(v) if isinstance(v, list) else v) for k, v in r.items()})
    for r in rows:
        print(f'{r["point"]:18} duty {r["duty_measured"]:.3f} {r["tflops"]:7.1f} TF  kernel {r["kernel_mhz_whole_run"]:6.0f} '
              f'(2nd half {r["kernel_mhz_second_half_cta0"]}) MHz  smi {r["smi_sm_mhz_median"]} MHz '
              f'{r["smi_power_w_median"]} W (inst {r["smi_power_instant_w_median"]}) T<={r["smi_temp_c_max"]} '
              f'reasons {r["smi_reasons_active"]}'
              + (f' traffic {r["traffic"]} {r["traffic_gbps"]} GB/s' if "traffic" in r else ''))


if __name__ == "__main__":
    main()
