#!/usr/bin/env python3
"""Candidate forms of the mma.sync SM step against the coresident_mma microbenchmark (issue #46).

Every form is built from the model's own per-CTA-step pipe times (the profile's measured rates, the
work algorithms/tile_costs.hpp emits for one unmasked step, as coresident_mma_predict.cpp builds
it): T tensor (mma.sync, 2719 FLOP/clk/SM), S ldmatrix bytes (128 B/clk/SM), F FP32 (256/clk/SM),
X SFU (16/clk/SM); nothing is fitted to the rows. Prints each form's error (predicted /
measured - 1) per mode: median |error|, worst |error|, and the signed range, over every row
without spills.

  python3 cuda_validate/scripts/coresident_mma_forms.py \
      cuda_validate/measurements/h100-sxm5-80gb/coresident_mma_2026-12-07/coresident_mma.json \
      cuda_validate/measurements/predictions/coresident_mma_blind_h100.json [--rows]
"""
import json
import statistics
import sys

MMA, SMEM, FP32, SFU = 2719.0, 128.0, 256.0, 16.0
FP32_LAT = 4.0  # profile fp32_latency_cycles
SMEM_LAT = 30.0  # profile smem_latency_cycles


def pipes(d, bq, bkv, warps, mode):
    t = s = f = x = 0.0
    if mode != "softmax":
        t = 2 * 2 * bq * bkv * d / MMA
        s = ((bq + warps * bkv) * d * 2 + warps * bkv * d * 2) / SMEM
    if mode != "gemm":
        f = (4 * bq * bkv + bq * d + 2 * bq) / FP32
        x = (bq * bkv + bq) / SFU
    return t, s, f, x


def form_today(p, warps, w):
    t, s, f, x = p
    allp = [t, s, f, x]
    busiest, total = max(allp), sum(allp)

    def ov(wp):
        ps = max(1.0, wp / 4)
        return busiest + (total - busiest) / ps

    return max(w * ov(w * warps), ov(warps)) / w


def form_tried(p, warps, w):
    t, s, f, x = p
    return max(form_today(p, warps, w), max(t, s) + f + x)


def form_pl(p, warps, w):
    """P + L/W: per SM, a round of W CTA steps takes the pipes' round P; a CTA's own chain C
    (one warp per scheduler: ldmatrix and mma of a warp overlap, max(T, S); the softmax after,
    its FP32 and SFU work adding) is exposed beyond it once per round: t = P + max(0, C - P) / W.
    P: the ldmatrix (MIO) pipe apart; the tensor, FP32 and SFU work through the scheduler's
    math dispatch, one after another."""
    t, s, f, x = p
    chain = max(t, s) + f + x
    rnd = max(s, t + f + x)
    return rnd + max(0.0, chain - rnd) / w


def form_pl_sx(p, warps, w):
    """As form_pl, the round the busier of ldmatrix and tensor, the softmax's pipes hidden under
    the other CTAs' (P = max(T, S, F + X))."""
    t, s, f, x = p
    chain = max(t, s) + f + x
    rnd = max(t, s, f + x)
    return rnd + max(0.0, chain - rnd) / w


def form_max_plus_y_over_w(p, warps, w):
    """max(T, S) + (F + X) / W: within a warp ldmatrix and mma overlap, the softmax is exposed
    once per round of W CTAs."""
    t, s, f, x = p
    return max(t, s) + (f + x) / w


def form_d(p, warps, w):
    """max(S + (F + X) / W, T + F + X): the softmax shares the math dispatch with mma.sync (adds to
    the tensor side at every W) and hides under other CTAs' ldmatrix (the MIO pipe)."""
    t, s, f, x = p
    return max(s + (f + x) / w, t + f + x)


def form_dispatch(p, warps, w):
    """The form tried in StageTimer (commit adb1bef, reverted: CALIBRATION.md, "Co-resident
    mma.sync CTAs: the forms"): per CTA step at W CTAs per SM, the
    larger of the math dispatch serving every CTA's mma.sync, FP32 and SFU work one after another,
    W (T + F + X), and the CTA's own chain (its ldmatrix and mma overlapping, max(T, S), then its
    softmax F + X) behind the other CTAs' ldmatrix traffic, (W - 1) S; per SM divided by W."""
    t, s, f, x = p
    return max(w * (t + f + x), (w - 1) * s + max(t, s) + f + x) / w


# pipes_2026-11-22.json, mma.sync m16n8k16 (4096 FLOP): one warp, one chain (ilp1), 170.2 FLOP/clk,
# so 24.1 cycles from issue to a dependent mma; 4 warps at ilp4 (one per scheduler) 2617, the
# saturated 2719 FLOP/clk/SM giving a scheduler one mma each 6.0 cycles.
MMA_LATENCY = 4096 / 170.2
MMA_ISSUE = 4096 / (2719 / 4)


def form_dispatch_kslices(p, warps, w, shape):
    """form_dispatch, plus a warp's dependent k-slices: each m-tile's accumulators take one mma per
    k-slice (d / 16 of Q K^T, block_kv / 16 of P V), one mma latency apart, of which the issue of
    the warp's other mma hides MMA_ISSUE. A count the engine does not have (a TileOp field would
    carry it); shown to size the W = 1 chain, not implemented."""
    t, s, f, x = p
    d, bq, bkv = shape
    if t == 0:
        return form_dispatch(p, warps, w)
    mt = bq // warps // 16
    chain = mt * (d // 16 + bkv // 16) * (MMA_LATENCY - MMA_ISSUE)
    return max(w * (t + f + x), (w - 1) * s + max(t, s) + chain + f + x) / w


FORMS = {
    "today": form_today,
    "tried W(max(T,S)+F+X)": form_tried,
    "max(T,S)+(F+X)/W": form_max_plus_y_over_w,
    "max(S+(F+X)/W, T+F+X)": form_d,
    "P+L/W P=max(S,T+F+X)": form_pl,
    "P+L/W P=max(T,S,F+X)": form_pl_sx,
    "max(W(T+F+X),(W-1)S+C)/W": form_dispatch,
    "  + k-slice mma latency": form_dispatch_kslices,
}


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
    blind = {(r["d"], r["block_q"], r["block_kv"], r["warps"], r["mode"], r["ctas_per_sm"]):
             r["sm_cycles_per_step"] for r in json.load(open(sys.argv[2]))["predictions"]}
    show = "--rows" in sys.argv
    errs = {name: {"full": [], "gemm": [], "softmax": []} for name in FORMS}
    for r in rows:
        if r["local_bytes"]:
            continue
        key = (r["d"], r["block_q"], r["block_kv"], r["warps"], r["mode"], r["ctas_per_sm"])
        d, bq, bkv, warps, mode, w = key
        # softmax mode at d 64, block_kv 128: its stand-in S (an FFMA of O's column nt % (d / 8))
        # repeats every d / 8 columns; the compiler may fold the repeats. Not a softmax row.
        if mode == "softmax" and bkv > d:
            continue
        meas = r["cycles_per_step_median"] / w
        p = pipes(d, bq, bkv, warps, mode)
        cells = []
        for name, fn in FORMS.items():
            pred = (fn(p, warps, w, (d, bq, bkv)) if fn is form_dispatch_kslices
                    else fn(p, warps, w))
            if name == "today":
                assert abs(pred - blind[key]) < 1.0, (key, pred, blind[key])
            e = pred / meas - 1
            errs[name][mode].append(e)
            cells.append(f"{100 * e:+4.0f}%")
        if show:
            print(f"d{d} {bq}x{bkv} w{warps} {mode:7} W{w} {meas:6.0f} " + " ".join(cells))
    print(f"{'form':26} " + " ".join(f"{m:>24}" for m in ("full", "gemm", "softmax")))
    for name in FORMS:
        cells = []
        for m in ("full", "gemm", "softmax"):
            e = errs[name][m]
            a = [abs(v) for v in e]
            cells.append(f"{100 * statistics.median(a):4.1f}/{100 * max(a):4.1f} "
                         f"[{100 * min(e):+4.0f},{100 * max(e):+4.0f}]")
        print(f"{name:26} " + " ".join(f"{c:>24}" for c in cells))


if __name__ == "__main__":
    main()
