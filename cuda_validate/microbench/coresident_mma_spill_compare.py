#!/usr/bin/env python3
"""The spill pass of coresident_mma.cu against its blind predictions (issue #46).

Each measured spill row (the ring loop compiled for `launch_bound_ctas` CTAs per SM, run at W)
is set beside the same tile's ring row compiled for W (its own spills, if any, in the table): SM
cycles per K/V step, the spilled bytes per thread ptxas reported, what the spills added, and the
blind prediction interpolated at those bytes (coresident_mma_spill_blind_h100.json, made before
this pass was measured), its error, and the model's added cycles beside the measured ones.

  python3 cuda_validate/microbench/coresident_mma_spill_compare.py OUT/coresident_mma.json \\
      cuda_validate/measurements/predictions/coresident_mma_spill_blind_h100.json
"""
import json
import statistics
import sys


def interpolate(grid, x):
    """Linear in the grid's (bytes, cycles) points; beyond its last, along its last segment."""
    pts = sorted(grid)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1 or (x1, y1) == pts[-1]:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[0][1]


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
    pred = json.load(open(sys.argv[2]))["predictions"]
    grids = {}
    for p in pred:
        key = (p["d"], p["block_q"], p["block_kv"], p["warps"], p["ctas_per_sm"])
        grids.setdefault(key, []).append((p["local_bytes"], p["sm_cycles_per_step"]))
    base = {(r["d"], r["block_q"], r["block_kv"], r["warps"], r["ctas_per_sm"]): r for r in rows
            if r["mode"] == "ring" and "launch_bound_ctas" not in r}
    errs, print_rows = [], []
    for r in rows:
        if "launch_bound_ctas" not in r:
            continue
        key = (r["d"], r["block_q"], r["block_kv"], r["warps"], r["ctas_per_sm"])
        w = r["ctas_per_sm"]
        meas = r["cycles_per_step_median"] / w
        b = base.get(key)
        grid = grids.get(key)
        if b is None or grid is None:
            continue
        b_meas = b["cycles_per_step_median"] / w
        p = interpolate(grid, r["local_bytes"])
        p_base = interpolate(grid, b["local_bytes"])
        e = p / meas - 1
        errs.append(e)
        print_rows.append(
            f"d{key[0]} {key[1]}x{key[2]} w{key[3]} W{w} bound {r['launch_bound_ctas']}: "
            f"{b['local_bytes']:4d} -> {r['local_bytes']:4d} B spilled, regs "
            f"{b['registers_per_thread']} -> {r['registers_per_thread']}; measured {b_meas:6.0f} -> "
            f"{meas:6.0f} ({meas - b_meas:+6.0f}); blind {p_base:6.0f} -> {p:6.0f} "
            f"({p - p_base:+6.0f}), {100 * e:+4.0f}%")
    print("\n".join(print_rows))
    if errs:
        a = [abs(v) for v in errs]
        print(f"{len(errs)} rows: blind |error| median {100 * statistics.median(a):.1f}%, "
              f"worst {100 * max(a):.1f}%")


if __name__ == "__main__":
    main()
