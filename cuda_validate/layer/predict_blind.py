#!/usr/bin/env python3
"""Blind predictions for the layer suite (issue #32), written before anything is measured.

The suite: every GEMM of one layer of Llama-3-8B (Mistral-7B has the same shapes), Llama-3-70B and
Qwen2-7B at four token counts (prefill of 512 and 4096 tokens, decode at batch 1 and 16), and each
model's LM head at batch 1 and 16, deduplicated by shape; and Llama-3-8B's whole layer at prefill
N = 4096 and decode over 8192 cached keys, batch 1 and 16. Shapes and predictions come from
`iosim layer --format json` at the profile's own clock policy with iosim's default GEMM tiles
(128 x 128 x 64): nothing measured enters them.

Half of the GEMMs are held out of any calibration: every model's at 16 and 4096 tokens (27 of 54,
`"set": "heldout"`); the rest (`"calibration"`, 1 and 512 tokens) may be read to change the model.

With --tp-suite, the second suite, predicted by the model the first suite calibrated and measured
after it, none of it calibration (`"set": "sealed"`): one tensor-parallel rank's GEMMs of
Llama-3-70B (tp 8), Llama-3-8B (tp 2) and Qwen2-7B (tp 2) at 64 (decode at batch 64), 256, 2048
and 8192 tokens; no whole layer.

With --third-suite, the third suite, predicted by the model both earlier suites calibrated
(CALIBRATION.md, "Tiles that fill the GPU") and measured after it, none of it calibration
(`"set": "sealed"`): one rank of Llama-3-70B, Llama-3-8B and Qwen2-7B at tp 4 and Mistral-7B
whole, at 8 and 32 tokens (decode at batch 8 and 32), 128, 1024 and 3072 tokens (prefill of 1, 1
and 3 sequences); no whole layer.

With --fourth-suite, the fourth suite, predicted by the model the first three calibrated and
measured after it, half held out (`"set": "heldout"` at 24, 384 and 1536 tokens; "calibration" at
96, 192 and 6144): one rank of Llama-3-70B and Mistral-7B at tp 2 and of Llama-3-8B at tp 8, and
Qwen2-7B whole, at 24 and 96 tokens (decode at batch 24 and 96), 192, 384, 1536 and 6144 tokens
(prefill of 1, 1, 2 and 2 sequences); no whole layer. It is measured both as the earlier suites
were (each GEMM timed right after the one before) and sustained (measure_layer.py --sustain).

With --fifth-suite, the fifth suite, predicted by the model of CALIBRATION.md "Clusters that share
X, and where they fit" (which the four earlier suites calibrated) and measured after it, half held
out (`"set": "heldout"` at 48, 320 and 1280 tokens; "calibration" at 160, 640 and 2560): one rank
of Llama-3-70B whole, of Llama-3-8B and Qwen2-7B at tp 2 and of Mistral-7B at tp 4, at 48 and 160
tokens (decode at batch 48 and 160), 320, 640, 1280 and 2560 tokens (prefill of 1, 1, 2 and 2
sequences): token counts no earlier suite has; no whole layer.

Usage (repository root, after a build):
  cuda_validate/layer/predict_blind.py build/iosim h200-sxm-141gb > cuda_validate/measurements/predictions/layer_blind_h200.json
  cuda_validate/layer/predict_blind.py build/iosim h200-sxm-141gb --tp-suite > cuda_validate/measurements/predictions/layer_tp_blind_h200.json
  cuda_validate/layer/predict_blind.py build/iosim h200-sxm-141gb --third-suite > cuda_validate/measurements/predictions/layer_third_blind_h200.json
  cuda_validate/layer/predict_blind.py build/iosim h200-sxm-141gb --fourth-suite > cuda_validate/measurements/predictions/layer_fourth_blind_h200.json
  cuda_validate/layer/predict_blind.py build/iosim h200-sxm-141gb --fifth-suite > cuda_validate/measurements/predictions/layer_fifth_blind_h200.json
"""
import json
import subprocess
import sys

MODELS = [("llama-3-8b", 1), ("llama-3-70b", 1), ("qwen2-7b", 1)]
TP_MODELS = [("llama-3-70b", 8), ("llama-3-8b", 2), ("qwen2-7b", 2)]
# (phase, batch, seq): tokens M = batch x seq for prefill, batch for decode.
POINTS = [("prefill", 1, 512), ("prefill", 1, 4096), ("decode", 1, 8192), ("decode", 16, 8192)]
TP_POINTS = [("decode", 64, 8192), ("prefill", 1, 256), ("prefill", 1, 2048), ("prefill", 4, 2048)]
THIRD_MODELS = [("llama-3-70b", 4), ("llama-3-8b", 4), ("qwen2-7b", 4), ("mistral-7b", 1)]
THIRD_POINTS = [("decode", 8, 8192), ("decode", 32, 8192), ("prefill", 1, 128), ("prefill", 1, 1024),
                ("prefill", 3, 1024)]
FOURTH_MODELS = [("llama-3-70b", 2), ("mistral-7b", 2), ("llama-3-8b", 8), ("qwen2-7b", 1)]
FOURTH_POINTS = [("decode", 24, 8192), ("decode", 96, 8192), ("prefill", 1, 192),
                 ("prefill", 1, 384), ("prefill", 2, 768), ("prefill", 2, 3072)]
FOURTH_HELD_OUT = (24, 384, 1536)
FIFTH_MODELS = [("llama-3-70b", 1), ("llama-3-8b", 2), ("qwen2-7b", 2), ("mistral-7b", 4)]
FIFTH_POINTS = [("decode", 48, 8192), ("decode", 160, 8192), ("prefill", 1, 320),
                ("prefill", 1, 640), ("prefill", 2, 640), ("prefill", 2, 1280)]
FIFTH_HELD_OUT = (48, 320, 1280)
LAYERS = [("prefill", 1, 4096), ("prefill", 16, 4096), ("decode", 1, 8192), ("decode", 16, 8192)]


_layer_runs = {}


def layer_json(iosim, profile, model, phase, batch, seq, tp=1):
    cmd = [iosim, "layer", "--model", model, "--phase", phase, "--batch", str(batch), "--seq",
           str(seq), "--tp", str(tp), "--profile", profile, "--format", "json"]
    # The GEMM suite and the whole layers ask for some steps twice (llama-3-8b's): run each once.
    key = tuple(cmd)
    if key not in _layer_runs:
        _layer_runs[key] = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(_layer_runs[key]), cmd


def op_prediction(op):
    keys = ["time_s", "hbm_read_bytes", "hbm_write_bytes", "l2_read_bytes", "l2_write_bytes",
            "flops", "sm_clock_mhz", "bound", "detail"]
    return {k: op[k] for k in keys if k in op}


def held_out(m):
    return m in (16, 4096)


def main():
    suites = ("--tp-suite", "--third-suite", "--fourth-suite", "--fifth-suite")
    args = [a for a in sys.argv[1:] if a not in suites]
    third = "--third-suite" in sys.argv[1:]
    fourth = "--fourth-suite" in sys.argv[1:]
    fifth = "--fifth-suite" in sys.argv[1:]
    tp_suite = "--tp-suite" in sys.argv[1:] or third  # sealed, no whole layer
    if len(args) != 2 or len(args) < len(sys.argv) - 2:
        sys.exit(__doc__)
    iosim, profile = args
    models, points = ((FIFTH_MODELS, FIFTH_POINTS) if fifth else
                      (FOURTH_MODELS, FOURTH_POINTS) if fourth else
                      (THIRD_MODELS, THIRD_POINTS) if third else
                      (TP_MODELS, TP_POINTS) if tp_suite else (MODELS, POINTS))
    version = subprocess.run([iosim, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    gemms, seen = [], set()
    for model, tp in models:
        for phase, batch, seq in points:
            doc, _ = layer_json(iosim, profile, model, phase, batch, seq, tp)
            bias = {}
            for op in doc["layer"] + doc["step_tail"]:
                if op["kind"] != "gemm":
                    continue
                key = (op["m"], op["n"], op["k"], op["name"] == "qkv_proj" and model == "qwen2-7b")
                if key in seen:
                    continue
                seen.add(key)
                gemms.append({
                    "id": f"{model}{f'_tp{tp}' if tp > 1 else ''}_{op['name']}_m{op['m']}",
                    "model": model, "op": op["name"], "m": op["m"], "n": op["n"], "k": op["k"],
                    "bias": key[3], "dtype": "bf16",
                    "set": "sealed" if tp_suite else
                    ("heldout" if op["m"] in FOURTH_HELD_OUT else "calibration") if fourth else
                    ("heldout" if op["m"] in FIFTH_HELD_OUT else "calibration") if fifth else
                    "heldout" if held_out(op["m"]) else "calibration",
                    "predicted": op_prediction(op)})
    layers = []
    for phase, batch, seq in ([] if tp_suite or fourth or fifth else LAYERS):
        doc, cmd = layer_json(iosim, profile, "llama-3-8b", phase, batch, seq)
        layers.append({
            "id": f"llama-3-8b_{phase}_b{batch}_n{seq}", "model": "llama-3-8b", "phase": phase,
            "batch": batch, "seq": seq, "command": " ".join(cmd[1:]),
            "predicted": {"layer_time_s": doc["layer_total"]["time_s"],
                          "layer_hbm_read_bytes": doc["layer_total"]["hbm_read_bytes"],
                          "ops": {op["name"]: op_prediction(op) for op in doc["layer"]}}})
    json.dump({"profile": profile, "iosim_version": version, "iosim_commit": commit,
               "made_by": "cuda_validate/layer/predict_blind.py", "gemms": gemms,
               "layers": layers}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
