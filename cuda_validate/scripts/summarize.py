#!/usr/bin/env python3
"""Print one line per case of a measured-data file (iosim-measurements v1):
check result, free-running times, and the ncu counters summed over the case's kernels."""
import json
import sys


def total(case, metric):
    vals = [(k.get("metrics") or {}).get(metric) for k in case["kernels"]]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def fmt(v, scale=1.0, digits=2):
    return "-" if v is None else f"{v * scale:.{digits}f}"


def main(path):
    with open(path) as f:
        data = json.load(f)
    print(f"{'case':58} {'chk':4} {'err':>8} {'warm_ms':>8} {'cold_ms':>8} {'ncu_ms':>8} "
          f"{'dramR_MB':>9} {'dramW_MB':>9} {'L2R_MB':>9} {'L2hit%':>6} {'xbarR_MB':>9}")
    for c in data["cases"]:
        chk = c.get("check") or {}
        cold = sum((r.get("cold_l2") or 0) for r in c.get("role_times_s", {}).values()) or None
        l2r = total(c, "lts__t_sectors_srcunit_tex_op_read.sum")
        hit = total(c, "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum")
        xbar = total(c, "l1tex__m_xbar2l1tex_read_sectors.sum")
        print(f"{c['id'][:58]:58} {'ok' if chk.get('passed') else 'FAIL':4} "
              f"{fmt(chk.get('max_abs_error'), 1, 5):>8} {fmt(c.get('time_free_running_s'), 1e3, 3):>8} "
              f"{fmt(cold, 1e3, 3):>8} {fmt(total(c, 'gpu__time_duration.sum'), 1e-6, 3):>8} "
              f"{fmt(total(c, 'dram__bytes_read.sum'), 1e-6, 1):>9} "
              f"{fmt(total(c, 'dram__bytes_write.sum'), 1e-6, 1):>9} "
              f"{fmt(l2r and l2r * 32, 1e-6, 1):>9} {fmt(hit and l2r and hit / l2r, 100, 1):>6} "
              f"{fmt(xbar and xbar * 32, 1e-6, 1):>9}")
    s = data.get("summary", {})
    print(f"{s.get('checks_passed')} passed, {s.get('checks_failed_or_error')} failed/error, "
          f"{s.get('roles_without_counters')} roles without counters")


if __name__ == "__main__":
    main(sys.argv[1])
