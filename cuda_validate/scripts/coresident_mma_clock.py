#!/usr/bin/env python3
"""Which of the cp.async ring's cycles follow the SM clock (issue #46): the coresident_mma rows at
the free clock (coresident_mma.json) against the same passes under Nsight Compute's base clock
(coresident_mma_base.json, `BASE_PASSES` of coresident_mma.sh). Per tile and W: the ring's extra
cycles a step (ring - full, ring_gemm - gemm) at each clock and their ratio, base over free, and
the loops without the ring (full, gemm) as the control. The hypotheses
(predictions/coresident_mma_clock_blind.md): ratio 1.00 if the ring's wait is on the SM's clock,
the SM clocks' ratio (base / free) if on the L2's.

  python3 cuda_validate/scripts/coresident_mma_clock.py DIR [--sm-free-mhz F --sm-base-mhz B]
"""
import argparse
import json
import os
import statistics


def rows(path):
    out = {}
    for line in open(path):
        if line.strip().startswith("{"):
            r = json.loads(line)
            if r.get("launch_bound_ctas"):
                continue
            key = (r["d"], r["block_q"], r["block_kv"], r["warps"], r["ctas_per_sm"], r["mode"])
            out[key] = r
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--sm-free-mhz", type=float, default=0.0)
    ap.add_argument("--sm-base-mhz", type=float, default=0.0)
    a = ap.parse_args()
    free = rows(os.path.join(a.dir, "coresident_mma.json"))
    base = rows(os.path.join(a.dir, "coresident_mma_base.json"))
    control = {m: [] for m in ("full", "gemm", "softmax")}
    extra = {"ring": [], "ring_gemm": []}
    print("| d | tile | warps | W | mode | free: loop, +ring | base: loop, +ring | ring extra base/free |")
    print("| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for key, r in sorted(free.items()):
        if key not in base:
            continue
        c_free, c_base = r["cycles_per_step_median"], base[key]["cycles_per_step_median"]
        mode = key[5]
        if mode in control:
            control[mode].append(c_base / c_free)
        if mode in extra:
            loop = "full" if mode == "ring" else "gemm"
            lk = key[:5] + (loop,)
            if lk not in free or lk not in base or r["local_bytes"]:
                continue
            e_free = c_free - free[lk]["cycles_per_step_median"]
            e_base = c_base - base[lk]["cycles_per_step_median"]
            if e_free <= 0:
                continue
            extra[mode].append(e_base / e_free)
            print(f"| {key[0]} | {key[1]}x{key[2]} | {key[3]} | {key[4]} | {mode} | "
                  f"{free[lk]['cycles_per_step_median']:.0f}, +{e_free:.0f} | "
                  f"{base[lk]['cycles_per_step_median']:.0f}, +{e_base:.0f} | {e_base / e_free:.2f} |")
    print()
    for m, xs in control.items():
        if xs:
            print(f"control {m}: cycles base/free median {statistics.median(xs):.3f} "
                  f"(min {min(xs):.3f}, max {max(xs):.3f}, {len(xs)} rows)")
    for m, xs in extra.items():
        if xs:
            q = statistics.quantiles(xs, n=10) if len(xs) > 2 else xs
            print(f"{m}: extra cycles base/free median {statistics.median(xs):.2f} "
                  f"(p10 {q[0]:.2f}, p90 {q[-1]:.2f}, {len(xs)} rows)")
    if a.sm_free_mhz and a.sm_base_mhz:
        print(f"hypotheses: SM clock 1.00; L2 clock {a.sm_base_mhz / a.sm_free_mhz:.2f}")


if __name__ == "__main__":
    main()
