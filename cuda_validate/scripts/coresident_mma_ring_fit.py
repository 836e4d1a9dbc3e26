#!/usr/bin/env python3
"""The cp.async ring's cost as a term beside the loop forms (issue #46): the ring rows of the
coresident_mma microbenchmark (measurements/h100-sxm5-80gb/coresident_mma_ring_2026-12-07) against
coresident_mma_forms.py's forms plus a per-CTA-step ring term c0 + K/V bytes / B, searched on a
grid of c0 (cycles) and B (bytes per clock). Rows that spill are left out. Prints the best few
(c0, B) by median + 0.3 x worst |error| over the ring and ring_gemm rows, for the loop form that fits
the loop ("max(W(T+F+X),(W-1)S+C)/W") and for today's engine rule.

  python3 cuda_validate/scripts/coresident_mma_ring_fit.py \\
      cuda_validate/measurements/h100-sxm5-80gb/coresident_mma_ring_2026-12-07/coresident_mma.json
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coresident_mma_forms import form_dispatch, form_today, pipes  # noqa: E402


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
    ring = [r for r in rows if not r["local_bytes"] and r["mode"] in ("ring", "ring_gemm")]

    def errors(fn):
        e = {"ring": [], "ring_gemm": []}
        for r in ring:
            d, bq, bkv, warps, w = r["d"], r["block_q"], r["block_kv"], r["warps"], r["ctas_per_sm"]
            p = pipes(d, bq, bkv, warps, "full" if r["mode"] == "ring" else "gemm")
            copy_bytes = 2 * bkv * d * 2  # a step's K and V tiles, fp16
            e[r["mode"]].append(fn(p, warps, w, copy_bytes) / (r["cycles_per_step_median"] / w) - 1)
        return e

    def text(e):
        return " | ".join(f"{m}: median {100 * statistics.median([abs(v) for v in x]):4.1f}% "
                          f"worst {100 * max(abs(v) for v in x):4.1f}%" for m, x in e.items())

    for name, base in (("loop form", form_dispatch), ("today", form_today)):
        scored = []
        for c0 in range(0, 401, 25):
            for bw in (32, 48, 64, 80, 96, 128, 160, 256, float("inf")):
                # Per SM a step is the form's; each CTA's step adds the ring, so the SM's W-th.
                e = errors(lambda p, wp, w, cb, c0=c0, bw=bw: base(p, wp, w) + (c0 + cb / bw) / w)
                a = [abs(v) for x in e.values() for v in x]
                scored.append((statistics.median(a) + 0.3 * max(a), c0, bw, text(e)))
        scored.sort()
        print(f"{name}, no ring term: {text(errors(lambda p, wp, w, cb: base(p, wp, w)))}")
        for _, c0, bw, t in scored[:3]:
            print(f"{name} + ({c0} + bytes / {bw}) per CTA step: {t}")


if __name__ == "__main__":
    main()
