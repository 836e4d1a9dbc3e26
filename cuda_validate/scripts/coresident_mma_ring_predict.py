#!/usr/bin/env python3
"""Writes the blind predictions of coresident_mma.cu's ring modes (issue #46) from the model's rows
(tests/tools/coresident_mma_predict.cpp, run as `predict_mma ring`) and the candidate form of
coresident_mma_forms.py (max(W(T+F+X), (W-1)S + max(T,S) + F+X) / W, compute only: it has no
copies), one object per (tile, mode, W).

  /tmp/predict_mma ring > /tmp/ring_rows.json
  python3 cuda_validate/scripts/coresident_mma_ring_predict.py /tmp/ring_rows.json COMMIT \\
      > cuda_validate/measurements/predictions/coresident_mma_ring_blind_h100.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coresident_mma_forms import form_dispatch, pipes  # noqa: E402

PORT, L2_LAT = 124.0, 290.0  # profile l2_to_sm_bytes_per_clk, l2 hit_latency_cycles


def main():
    rows = json.load(open(sys.argv[1]))
    out = []
    for r in rows:
        d, bq, bkv, warps, w = r["d"], r["block_q"], r["block_kv"], r["warps"], r["ctas_per_sm"]
        base = "full" if r["mode"] == "ring" else "gemm"
        form = form_dispatch(pipes(d, bq, bkv, warps, base), warps, w)
        # The copy's own time on the SM's L2 port plus its latency, per CTA step: what a step
        # would need to be for the ring to show in today's model (it hides the copy under it).
        copy = 2 * bkv * d * 2 / PORT + L2_LAT
        out.append({**r, "form_sm_cycles_per_step": round(form, 1),
                    "copy_port_plus_latency_cycles_per_cta_step": round(copy, 1)})
    json.dump({
        "what": "iosim's blind predictions of coresident_mma.cu's ring and ring_gemm modes on the "
                "H100 (issue #46): SM cycles per CTA step, per SM, of full's (ring) or gemm's "
                "(ring_gemm) step with wg1_mma_fwd's 2-stage cp.async K/V ring over 64 "
                "L2-resident tiles, W CTAs per SM, written before the ring was measured. "
                "sm_cycles_per_step: today's model (main's StageTimer, mma.sync branch) with the "
                "copies as the engine times them: tests/tools/coresident_mma_predict.cpp `ring` "
                "runs StageTimer::time() over the whole grid (132 W CTAs, each step's K + V bytes "
                "a load that hits the L2, through the SM's L2 port and the L2 server, the L2 hit "
                "latency; pipeline_stages 2, so a step's copy is issued when the previous step's "
                "compute starts), steps 64..256 averaged. sm_cycles_per_step_compute: the compute "
                "alone (compute_time(step, W) / W, the rows of coresident_mma_blind_h100.json's "
                "full and gemm modes). form_sm_cycles_per_step: the candidate form of "
                "coresident_mma_forms.py, max(W(T+F+X), (W-1)S + max(T,S) + F+X) / W, compute "
                "only (the form has no copies).",
        "note": "Today's model predicts that the ring costs nothing: sm_cycles_per_step equals "
                "sm_cycles_per_step_compute in every row, because the engine hides a stage's copy "
                "under the previous stage's compute (its port time plus the L2 latency, "
                "copy_port_plus_latency_cycles_per_cta_step, is far below every step), does not "
                "charge the cp.async issue, the wait_group or the per-step __syncthreads, and "
                "counts shared-memory reads only (not the copies' writes). The candidate form "
                "says the same (compute only). So ring - full measured is, per tile and W, what "
                "neither predicts: the mechanism CALIBRATION.md's last entry asks for (the "
                "kernels pay 11-15% a step beyond the loop).",
        "profile": "h100-sxm5-80gb",
        "iosim_commit": sys.argv[2],
        "predictions": out,
    }, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
