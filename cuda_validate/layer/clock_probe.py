#!/usr/bin/env python3
"""The SM clock and board power while a GEMM repeats back to back (issue #32's open question: the
layer suites' 128-512-token GEMMs ran faster than iosim's power-model clock allows).

For each GEMM: a CUDA graph of back-to-back calls (weights rotated as measure_layer.py does) of
about 2 ms, replayed `--replays` times in a row; nvidia-smi samples clocks.sm and power.draw every
20 ms meanwhile; CUDA events time the first replay and each later tenth of them. Prints one JSON
object: per GEMM, the per-call times through the run and the samples inside it.

Usage: cuda_validate/layer/clock_probe.py OUT.json [--replays N]
"""
import json
import os
import subprocess
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_layer import capture_graph, gemm_fn  # noqa: E402

# Llama-3-8B's GEMMs at 512 tokens (the first suite's calibration half: iosim's clock 1.4-1.5 GHz,
# 20-36% slow) and the LM head at one token (memory-bound, for contrast).
GEMMS = [("o_proj_m512", 512, 4096, 4096), ("qkv_proj_m512", 512, 6144, 4096),
         ("gate_up_proj_m512", 512, 28672, 4096), ("down_proj_m512", 512, 4096, 14336),
         ("o_proj_m4096", 4096, 4096, 4096), ("lm_head_m1", 1, 128256, 4096)]


def sampler(samples, stop):
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                          "--format=csv,noheader,nounits", "-lms", "20"],
                         stdout=subprocess.PIPE, text=True)
    while not stop.is_set():
        line = p.stdout.readline()
        if not line:
            break
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 3:
            samples.append((time.time(), float(parts[1]), float(parts[2])))
    p.terminate()


def main():
    args = sys.argv[1:]
    replays = 200
    if "--replays" in args:
        i = args.index("--replays")
        replays = int(args[i + 1])
        del args[i:i + 2]
    out_path = args[0]
    dev = torch.device("cuda")
    result = {"gpu": torch.cuda.get_device_name(0), "replays": replays, "gemms": []}
    for name, m, n, k in GEMMS:
        fn, copies = gemm_fn({"m": m, "n": n, "k": k, "bias": False}, dev)
        # Calls per graph: about 2 ms of GEMMs by a first estimate at 600 TFLOP/s / 4 TB/s.
        est = max(2 * m * n * k / 600e12, 2 * (m * k + n * k + m * n) / 4.0e12)
        calls = max(8, min(2000, int(2e-3 / est)))
        graph = capture_graph(fn, calls)
        torch.cuda.synchronize()
        time.sleep(1.0)  # idle first: the clock back up
        samples, stop = [], threading.Event()
        th = threading.Thread(target=sampler, args=(samples, stop))
        th.start()
        time.sleep(0.3)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(replays + 1)]
        t0 = time.time()
        events[0].record()
        for r in range(replays):
            graph.replay()
            events[r + 1].record()
        events[-1].synchronize()
        t1 = time.time()
        time.sleep(0.1)
        stop.set()
        th.join()
        per_call = [events[r].elapsed_time(events[r + 1]) * 1e-3 / calls for r in range(replays)]
        inside = [(round(t - t0, 4), c, w) for t, c, w in samples if t0 <= t <= t1]
        result["gemms"].append({"name": name, "m": m, "n": n, "k": k, "calls_per_replay": calls,
                                "copies": copies, "run_s": t1 - t0, "per_call_s": per_call,
                                "samples_t_clock_mhz_power_w": inside})
        first, last = per_call[0], sorted(per_call[-replays // 10:])[replays // 20]
        clocks = [c for _, c, _ in inside]
        print(f"[clock] {name}: {calls} calls/replay, first {first * 1e6:.1f} us, last tenth "
              f"{last * 1e6:.1f} us, clock {min(clocks or [0]):.0f}-{max(clocks or [0]):.0f} MHz, "
              f"{len(inside)} samples over {t1 - t0:.2f} s", flush=True)
        del graph
    json.dump(result, open(out_path, "w"))


if __name__ == "__main__":
    main()
