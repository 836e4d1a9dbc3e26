#!/usr/bin/env python3
"""Energy coefficients of iosim's power model (hwprofiles/*.yaml, `power:`) from our microbenchmarks
alone: power_clock (tensor duty with idle spins) and traffic_power (HBM / L2 bulk-copy streams, FFMA
and exp2 spins, alone and beside tensor work), one GPU at a time. No attention kernel is used.

Model (board power, one clock f for the whole GPU, voltage assumed to follow
V(f) / V(f_boost) = 1 - beta (1 - f / f_boost), switching energy per operation as V^2, so
s(f) = (V(f) / V(f_boost))^2):
  P = static + k_T (T - T_op)
      + s(f) [ clock_w f / f_boost + e_fp16 R_fp16 + e_fp8 R_fp8 + e_fp32 R_fp32 + e_sfu R_sfu
               + e_l2 R_l2 ]
      + e_hbm R_hbm
(+ e_mma R_mma inside the bracket where mma.sync points were measured: fp16 mma.sync FLOP, operands
as FlashAttention-2 feeds them, B through ldmatrix.)
R: rates per second (tensor FLOP by input type, FP32 FLOP (FFMA = 2, FADD = 1), MUFU operations,
bytes between the SMs and the L2 (all of them, hits or not), bytes between the L2 and HBM). The HBM
term is the energy beyond the L2's (the HBM stream passes through the L2, so it pays e_l2 too) and
is not scaled with the SM voltage (HBM and its interface have their own supply).
f is the kernel's own clock (clock64 cycles / %globaltimer, median over CTAs): the clock the SMs
do the work at, which is what iosim times with. nvidia-smi's clock reads higher under bursty tensor
load (both GPUs when uncapped; on the H200 also at the cap, by up to 150 MHz).
T is the point's maximum GPU temperature; T_op, the temperature at which static is quoted, is the
median over the points held at the cap (those the model solves the clock for): the model has no
temperature of its own, so the leakage slope k_T is folded in at T_op.
beta is chosen on a grid over [0, 1]; the rest is linear least squares.
With --voltage-clock smi the voltage follows nvidia-smi's clock (the DVFS state) and the work
still happens at the kernel's own clock: s(f_smi) [clock_w f / f_boost + e R ...]. Under tensor
load below the power cap the kernels' clock runs below nvidia-smi's (mma.sync at duty 0.44: 1844
against 1980 MHz) with no clock event reason: a slowdown at the DVFS state's voltage, which the
default form (voltage from the kernel's clock) reads as a lower voltage (CALIBRATION.md, "The SM
clock below nvidia-smi's under tensor load").
Usage: power_model_fit.py [--voltage-clock kernel|smi] SUMMARY.json... (power_clock_summary.json / traffic_power_summary.json
of one GPU; power_clock's FFMA and exp2 points are left out: it did not count their instructions)
"""
import json, statistics, sys

F_BOOST = 1980.0


def rows(path):
    out = []
    pts = json.load(open(path))["points"]
    counted = any("thread_ffma_per_s" in p for p in pts)
    for p in pts:
        if not counted and p["spin"] != "idle":
            continue  # power_clock did not count its FFMA / exp2 spins
        r_t = p["tflops"] * 1e12
        tb = p.get("traffic_gbps", 0.0) * 1e9
        out.append(dict(
            name=p["point"], f=p["kernel_mhz_whole_run"], f_smi=p["smi_sm_mhz_median"],
            P=p["smi_power_w_median"], T=p["smi_temp_c_max"],
            capped=(p.get("frac_sw_power_cap") or 0) > 0.5,
            fp16=r_t if p["dtype"] == "f16" else 0.0, fp8=r_t if p["dtype"] == "e4m3" else 0.0,
            mma=r_t if p["dtype"] == "mma_f16" else 0.0,
            fp32=(2 * p.get("thread_ffma_per_s", 0.0) + p.get("thread_fadd_per_s", 0.0)),
            sfu=p.get("thread_mufu_per_s", 0.0), l2=tb, hbm=tb if p.get("traffic") == "hbm" else 0.0))
    return out


VOLTAGE_CLOCK = "f"  # the clock the voltage follows: "f" (the kernel's) or "f_smi" (nvidia-smi's)


def features(r, beta, t_op):
    s = (1 - beta * (1 - r[VOLTAGE_CLOCK] / F_BOOST)) ** 2
    v = [1.0, r["T"] - t_op, s * r["f"] / F_BOOST, s * r["fp16"] * 1e-12, s * r["fp8"] * 1e-12,
         s * r["fp32"] * 1e-12, s * r["sfu"] * 1e-12, s * r["l2"] * 1e-12, r["hbm"] * 1e-12]
    if HAS_MMA:
        v.append(s * r["mma"] * 1e-12)
    return v


NAMES = ["static_w", "w_per_c", "clock_w", "tensor_fp16_pj_per_flop", "tensor_fp8_pj_per_flop",
         "fp32_pj_per_flop", "sfu_pj_per_op", "l2_pj_per_byte", "hbm_pj_per_byte",
         "tensor_mma_sync_pj_per_flop"]
HAS_MMA = False  # set when a file has mma.sync points


def lstsq(A, b):
    n = len(A[0])
    M = [[sum(a[i] * a[j] for a in A) for j in range(n)] for i in range(n)]
    v = [sum(a[i] * y for a, y in zip(A, b)) for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(M[k][i]))
        M[i], M[p], v[i], v[p] = M[p], M[i], v[p], v[i]
        for k in range(i + 1, n):
            c = M[k][i] / M[i][i]
            for j in range(i, n):
                M[k][j] -= c * M[i][j]
            v[k] -= c * v[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (v[i] - sum(M[i][j] * x[j] for j in range(i + 1, n))) / M[i][i]
    return x


def main():
    global HAS_MMA, VOLTAGE_CLOCK
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "--voltage-clock" and args[1] in ("kernel", "smi"):
        VOLTAGE_CLOCK = "f_smi" if args[1] == "smi" else "f"
        args = args[2:]
    R = [r for path in args for r in rows(path)]
    HAS_MMA = any(r["mma"] > 0 for r in R)
    t_op = statistics.median(r["T"] for r in R if r["capped"])
    best = None
    for k in range(101):
        beta = k / 100
        A = [features(r, beta, t_op) for r in R]
        x = lstsq(A, [r["P"] for r in R])
        sse = sum((sum(a * c for a, c in zip(fa, x)) - r["P"]) ** 2 for fa, r in zip(A, R))
        if best is None or sse < best[0]:
            best = (sse, beta, x)
    sse, beta, x = best
    print(f"voltage follows the {'nvidia-smi' if VOLTAGE_CLOCK == 'f_smi' else 'kernel'} clock; "
          f"points {len(R)} (capped {sum(r['capped'] for r in R)}), T_op {t_op} C, "
          f"voltage_clock_slope (beta) {beta}, rms {(sse / len(R)) ** 0.5:.1f} W")
    for n, v in zip(NAMES, x):
        print(f"  {n:26} {v:.4g}")
    print("point                   kernel MHz  smi MHz   T  measured W  model W")
    for r in R:
        m = sum(a * c for a, c in zip(features(r, beta, t_op), x))
        print(f"  {r['name']:24} {r['f']:7.0f} {r['f_smi']:8.0f} {r['T']:4.0f} {r['P']:10.1f} "
              f"{m:8.1f}")


if __name__ == "__main__":
    main()
