#!/usr/bin/env python3
"""Measures the layer suite (issue #32) on a GPU: the GEMMs of cuda_validate/layer/predict_blind.py's
predictions file, and Llama-3-8B's whole layer in PyTorch.

Subcommands (each prints JSON to --out):
  gemm-time  PRED --out F   each GEMM as cuBLAS runs it for torch.mm / torch.addmm (bf16), timed by
                            CUDA events over a CUDA graph of back-to-back calls (no host launch gaps,
                            as a serving engine replays its graphs), 3 sets; each call uses the next of
                            several weight copies so that the weights come from HBM, as in a model
                            whose layers each have their own (copies until they pass 512 MB);
  gemm-time  PRED --out F --sustain S   the same, each GEMM's graph first replayed for S seconds
                            so that the sets run at the clock the GPU holds under that load (the
                            sustained regime; without it the sets follow the GEMM before, some at
                            the boost clock), nvidia-smi's SM clock and power sampled in each set;
  gemm-ncu   PRED --out F   the body ncu profiles: per GEMM, a spin kernel (torch.cuda._sleep, the
                            delimiter), then REPEATS calls, each followed by a spin kernel; the
                            profiler range is opened with cudaProfilerStart (ncu --profile-from-start
                            off), so warm-up is not profiled; writes the call order (--out);
  layer-time --out F        Llama-3-8B's layer (vLLM's fused projections: RMSNorm, QKV projection,
                            SDPA with grouped-query heads, output projection, residual, RMSNorm,
                            gate/up projection, SiLU x up, down projection, residual; no rotary
                            embedding, which iosim does not model), prefill N = 4096 and decode over
                            8192 cached keys, batch 1 and 16: CUDA events over a CUDA graph of 4
                            layers with their own weights, repeated, 3 sets; also each kernel's name
                            and time from torch.profiler for one layer.
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.nn.functional as F

DT = torch.bfloat16
ROTATE_BYTES = 512 << 20  # weight copies cycled per GEMM: more than any L2 (H200: 60 MB)


def gemm_fn(g, dev):
    """A callable i -> runs the GEMM with weight copy i % copies, into a preallocated output."""
    m, n, k = g["m"], g["n"], g["k"]
    copies = max(1, min(64, math.ceil(ROTATE_BYTES / (n * k * 2))))
    x = torch.randn(m, k, device=dev, dtype=DT)
    ws = [torch.randn(n, k, device=dev, dtype=DT) * 0.02 for _ in range(copies)]
    bs = [torch.randn(n, device=dev, dtype=DT) for _ in range(copies)] if g["bias"] else None
    y = torch.empty(m, n, device=dev, dtype=DT)

    def run(i):
        w = ws[i % copies]
        if bs is None:
            torch.mm(x, w.t(), out=y)
        else:
            torch.addmm(bs[i % copies], x, w.t(), out=y)

    return run, copies


def capture_graph(fn, calls):
    """`calls` back-to-back calls fn(0), fn(1), ... captured in one CUDA graph, after 3 warm-up
    calls on a side stream (as graph capture requires)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    return graph


class ClockSampler:
    """nvidia-smi's SM clock and board power every 20 ms, in a thread, for the whole run; window()
    gives the samples between two wall times (a timed set's)."""

    def __init__(self):
        self.samples, self._stop = [], threading.Event()
        self._proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
             "-lms", "20"], stdout=subprocess.PIPE, text=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self._proc.stdout:
            parts = [x.strip() for x in line.split(",")]
            if len(parts) == 2:
                try:
                    self.samples.append((time.time(), float(parts[0]), float(parts[1])))
                except ValueError:
                    pass
            if self._stop.is_set():
                break

    def window(self, t0, t1):
        return [(c, w) for t, c, w in list(self.samples) if t0 <= t <= t1]

    def close(self):
        self._stop.set()
        self._proc.terminate()


def graph_times(fn, calls, sets=3, sustain_s=0.0, sampler=None):
    """Seconds per call of `calls` back-to-back calls captured in one CUDA graph, `sets` times.
    sustain_s > 0: the graph is first replayed for that long, so that the sets run at the clock
    the GPU holds under this load (it holds its boost clock for the first 0.13-0.15 s of load, then
    lowers it to its power limit: clock_probe_2026-11-28/); with a sampler, also the SM clocks
    (MHz) and board powers (W) sampled during the sets."""
    graph = capture_graph(fn, calls)
    graph.replay()  # warm
    torch.cuda.synchronize()
    start_t = time.time()
    while time.time() - start_t < sustain_s:
        graph.replay()
        torch.cuda.synchronize()
    out, clocks, powers = [], [], []
    for _ in range(sets):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.time()
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        t1 = time.time()
        out.append(start.elapsed_time(end) * 1e-3 / calls)
        if sampler is not None:
            for c, w in sampler.window(t0, t1):
                clocks.append(c)
                powers.append(w)
    del graph
    if sampler is None:
        return out
    return out, clocks, powers


def kernels_of(fn):
    """Names and device times (us) of the kernels one call launches (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(0)
        torch.cuda.synchronize()
    out = []
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            t = getattr(e, "device_time", None)
            if t is None:
                t = getattr(e, "cuda_time", 0.0)
            out.append({"name": e.name, "time_us": t})
    return out


def gemm_time(args):
    pred = json.load(open(args.pred))
    dev = torch.device("cuda")
    rows = []
    sampler = ClockSampler() if args.sustain > 0 else None
    for g in pred["gemms"]:
        row = {"id": g["id"], "m": g["m"], "n": g["n"], "k": g["k"], "bias": g["bias"]}
        try:
            fn, copies = gemm_fn(g, dev)
            # ~40 ms of GPU per set by the prediction's time (only the count of calls), 4..400.
            calls = int(min(400, max(4, 0.04 / max(g["predicted"]["time_s"], 1e-6))))
            if sampler is None:
                row.update(copies=copies, calls=calls, time_s=graph_times(fn, calls),
                           kernels=kernels_of(fn))
            else:
                times, clocks, powers = graph_times(fn, calls, sustain_s=args.sustain,
                                                    sampler=sampler)
                row.update(copies=copies, calls=calls, time_s=times, sm_clock_mhz=clocks,
                           power_w=powers)
            del fn
        except Exception as e:  # one shape's failure is recorded, not fatal
            row["error"] = repr(e)
        torch.cuda.empty_cache()
        rows.append(row)
        print(f"[gemm] {row['id']}: {row.get('time_s', row.get('error'))}", flush=True)
    if sampler is not None:
        sampler.close()
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "cuda": torch.version.cuda, "sustain_s": args.sustain,
               "regime": "sustained" if args.sustain > 0 else "after the GEMM before",
               "gemms": rows}, open(args.out, "w"), indent=1)


def gemm_ncu(args):
    pred = json.load(open(args.pred))
    dev = torch.device("cuda")
    cudart = torch.cuda.cudart()
    order = []
    for g in pred["gemms"]:
        fn, _ = gemm_fn(g, dev)
        for i in range(3):
            fn(i)
        torch.cuda.synchronize()
        cudart.cudaProfilerStart()
        torch.cuda._sleep(1000)
        for r in range(args.repeats):
            fn(r + 1)
            torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        cudart.cudaProfilerStop()
        order.append(g["id"])
        del fn
        torch.cuda.empty_cache()
    json.dump({"order": order, "repeats": args.repeats}, open(args.out, "w"), indent=1)


class Llama8B:
    hidden, heads, kv_heads, head_dim, inter = 4096, 32, 8, 128, 14336

    def __init__(self, dev):
        c = self
        qkv = (c.heads + 2 * c.kv_heads) * c.head_dim
        r = lambda *s: torch.randn(*s, device=dev, dtype=DT) * 0.02  # noqa: E731
        self.w_qkv, self.w_o = r(qkv, c.hidden), r(c.hidden, c.heads * c.head_dim)
        self.w_gate_up, self.w_down = r(2 * c.inter, c.hidden), r(c.hidden, c.inter)
        self.norm1 = torch.ones(c.hidden, device=dev, dtype=DT)
        self.norm2 = torch.ones(c.hidden, device=dev, dtype=DT)

    def forward(self, x, k_cache=None, v_cache=None):
        """x [B, T, hidden]; decode (T = 1) attends over the caches [B, H_kv, N_kv, d]."""
        c = self
        b, t, _ = x.shape
        h = F.rms_norm(x, (c.hidden,), c.norm1, 1e-5)
        qkv = F.linear(h, self.w_qkv)
        q, k, v = qkv.split([c.heads * c.head_dim, c.kv_heads * c.head_dim,
                             c.kv_heads * c.head_dim], dim=-1)
        q = q.view(b, t, c.heads, c.head_dim).transpose(1, 2)
        k = k.view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        v = v.view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        if k_cache is not None:
            k, v = k_cache, v_cache  # the new token's K/V write is left out (a few KB)
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        o = o.transpose(1, 2).reshape(b, t, c.heads * c.head_dim)
        x = x + F.linear(o, self.w_o)
        h = F.rms_norm(x, (c.hidden,), c.norm2, 1e-5)
        gate, up = F.linear(h, self.w_gate_up).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, self.w_down)


def layer_time(args):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = [Llama8B(dev) for _ in range(4)]  # 4 x 436 MB of weights: none stays in the L2
    configs = [("prefill", 1, 4096), ("prefill", 16, 4096), ("decode", 1, 8192),
               ("decode", 16, 8192)]
    rows = []
    for phase, batch, seq in configs:
        row = {"id": f"llama-3-8b_{phase}_b{batch}_n{seq}", "phase": phase, "batch": batch,
               "seq": seq}
        try:
            t = seq if phase == "prefill" else 1
            x = torch.randn(batch, t, Llama8B.hidden, device=dev, dtype=DT)
            caches = []
            if phase == "decode":
                caches = [(torch.randn(batch, 8, seq, 128, device=dev, dtype=DT),
                           torch.randn(batch, 8, seq, 128, device=dev, dtype=DT))
                          for _ in range(4)]

            def one(i, x=x, caches=caches):
                layer = layers[i % 4]
                if caches:
                    kc, vc = caches[i % 4]
                    return layer.forward(x, kc, vc)
                return layer.forward(x)

            with torch.no_grad():
                calls = 8 if phase == "prefill" and batch == 16 else 40
                row["layer_time_s"] = graph_times(one, calls)
                row["calls"] = calls
                row["kernels"] = kernels_of(one)
            del x, caches
        except Exception as e:
            row["error"] = repr(e)
        torch.cuda.empty_cache()
        rows.append(row)
        print(f"[layer] {row['id']}: {row.get('layer_time_s', row.get('error'))}", flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "layers": rows}, open(args.out, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("gemm-time", "gemm-ncu"):
        p = sub.add_parser(name)
        p.add_argument("pred")
        p.add_argument("--out", required=True)
        p.add_argument("--repeats", type=int, default=3)
        p.add_argument("--sustain", type=float, default=0.0,
                       help="gemm-time: seconds of the same load before the timed sets, the SM "
                            "clock sampled during them")
    p = sub.add_parser("layer-time")
    p.add_argument("--out", required=True)
    args = ap.parse_args()
    {"gemm-time": gemm_time, "gemm-ncu": gemm_ncu, "layer-time": layer_time}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
