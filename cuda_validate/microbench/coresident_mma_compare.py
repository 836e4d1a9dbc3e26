#!/usr/bin/env python3
"""coresident_mma.sh's rows against the model's blind predictions (issue #46): per (d, block_q,
block_kv, warps, mode), the SM's cycles per CTA step measured / predicted at each W, and the fit
P + L / W of the measured rows without spills (least squares in 1 / W).

  python3 coresident_mma_compare.py OUT/coresident_mma.json \
      cuda_validate/measurements/predictions/coresident_mma_blind_h100.json \
      [cuda_validate/measurements/predictions/coresident_mma_ring_blind_h100.json]

Where the rows hold the ring modes, a second table: per tile and W, ring against full (ring_gemm
against gemm), cycles per step per SM: the ring's added cycles (ring - full) and its share of
full, and, given the ring's blind predictions, today's model (with the copies as the engine times
them) and the candidate form (compute only) against the ring row.
"""
import json
import sys
from collections import defaultdict


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
    pred = {(r["d"], r["block_q"], r["block_kv"], r["warps"], r["mode"], r["ctas_per_sm"]):
            r["sm_cycles_per_step"] for r in json.load(open(sys.argv[2]))["predictions"]}
    by_tile = defaultdict(dict)
    for r in rows:
        by_tile[(r["d"], r["block_q"], r["block_kv"], r["warps"], r["mode"])][r["ctas_per_sm"]] = r
    for key in sorted(by_tile):
        cells, xs, ys = [], [], []
        for w in sorted(by_tile[key]):
            r = by_tile[key][w]
            per_sm = r["cycles_per_step_median"] / w
            p = pred.get(key + (w,))
            spill = "*" if r["local_bytes"] else ""
            cells.append(f"W{w} {per_sm:6.0f}{spill} / {p:6.0f} ({100 * (p / per_sm - 1):+.0f}%)"
                         if p else f"W{w} {per_sm:6.0f}{spill}")
            if not r["local_bytes"]:
                xs.append(1.0 / w)
                ys.append(per_sm)
        fit = ""
        if len(xs) >= 2:
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            sxx = sum((x - mx) ** 2 for x in xs)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
            fit = f"  P {my - slope * mx:.0f} L {slope:.0f}"
        d, bq, bkv, warps, mode = key
        print(f"d{d} {bq}x{bkv} w{warps} {mode:7} " + "  ".join(cells) + fit)
    ring_table(by_tile, sys.argv[3] if len(sys.argv) > 3 else None)


def ring_table(by_tile, ring_blind):
    """ring - full and ring_gemm - gemm per tile and W, and the ring's predictions against it."""
    rp = {}
    if ring_blind:
        rp = {(r["d"], r["block_q"], r["block_kv"], r["warps"], r["mode"], r["ctas_per_sm"]): r
              for r in json.load(open(ring_blind))["predictions"]}
    keys = sorted(k for k in by_tile if k[4] in ("ring", "ring_gemm"))
    if not keys:
        return
    print("\nring against its loop (cycles per step per SM; * spills): base -> ring, added "
          "(share of base); today (with copies) and form (compute only) against the ring row")
    for key in keys:
        base_key = key[:4] + ("full" if key[4] == "ring" else "gemm",)
        cells = []
        for w in sorted(by_tile[key]):
            r = by_tile[key][w]
            ring = r["cycles_per_step_median"] / w
            spill = "*" if r["local_bytes"] else ""
            b = by_tile.get(base_key, {}).get(w)
            cell = f"W{w} "
            if b:
                base = b["cycles_per_step_median"] / w
                bspill = "*" if b["local_bytes"] else ""
                cell += (f"{base:6.0f}{bspill} -> {ring:6.0f}{spill} "
                         f"{ring - base:+5.0f} ({100 * (ring / base - 1):+.0f}%)")
            else:
                cell += f"   -  -> {ring:6.0f}{spill}"
            p = rp.get(key + (w,))
            if p:
                cell += (f" today {100 * (p['sm_cycles_per_step'] / ring - 1):+.0f}%"
                         f" form {100 * (p['form_sm_cycles_per_step'] / ring - 1):+.0f}%")
            cells.append(cell)
        d, bq, bkv, warps, mode = key
        print(f"d{d} {bq}x{bkv} w{warps} {mode:9} " + "  ".join(cells))


if __name__ == "__main__":
    main()
