#!/usr/bin/env python3
"""The tile sweep's compiler-generated family (issue #46): our own attention forward written in
Triton, run with every (BLOCK_M, BLOCK_N, num_stages, num_warps) of its space on each shape of
shapes.txt, as tile_sweep.cu runs our CUDA forwards.

The kernel: query-stationary (FlashAttention-2's loop order), one program per (query block, batch,
head), grid (ceil(N / BLOCK_M), B, H), blockIdx.x fastest; Q loaded once, K and V blocks streamed
in ascending order (Triton pipelines the loads of the loop over num_stages shared-memory buffers),
S = Q K^T and the online softmax (exp2) in registers, O (fp16) and L = log-sum-exp (fp32) written
once. Causal (top-left aligned, N = Nkv): the blocks every row of the query block sees are looped
over unmasked, the blocks crossing the diagonal masked; blocks above it are skipped.

  python3 triton_fwd.py facts SHAPES OUT.json   compile every configuration (in parallel
      processes), check each against PyTorch's FP32 attention on sampled rows of the first head,
      and record its launch facts (registers, spills, shared memory, whether it issues wgmma);
      out-of-resources configurations are recorded with Triton's reason. No timing.
  python3 triton_fwd.py time SHAPES OUT.json [--sets 3]   the same, then --sets timing sets: a set
      times every configuration of a shape once in its own shuffled order, each as a CUDA graph of
      R launches (R so that the graph runs about 20 ms), the mean per launch.
"""
import json
import math
import multiprocessing as mp
import random
import sys

BLOCK_MS = (64, 128)
BLOCK_NS = (32, 64, 128)
STAGES = (1, 2, 3, 4)
WARPS = (4, 8)


def configs():
    return [(bm, bn, s, w) for bm in BLOCK_MS for bn in BLOCK_NS for s in STAGES for w in WARPS]


def read_shapes(path):
    shapes = []
    for line in open(path):
        f = line.split("#")[0].split()
        if not f:
            continue
        shapes.append({"name": f[0], "d": int(f[1]), "seq": int(f[2]), "batch": int(f[3]),
                       "heads": int(f[4]), "causal": f[5] == "1",
                       "use": f[6] if len(f) > 6 else "open"})
    return shapes


def make_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def attn_fwd(Q, K, V, O, L, seq, scale_log2,
                 D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 CAUSAL: tl.constexpr):
        qb = tl.program_id(0)
        head = (tl.program_id(1) * tl.num_programs(2) + tl.program_id(2)).to(tl.int64)
        base = head * seq * D
        offs_m = qb * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, D)
        q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < seq,
                    other=0.0)
        m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, D], tl.float32)
        q0 = qb * BLOCK_M
        if CAUSAL:
            # Blocks [j, j + BLOCK_N) with j + BLOCK_N - 1 <= q0 are seen whole by every row.
            full_end = ((q0 + 1) // BLOCK_N) * BLOCK_N
            end = tl.minimum(q0 + BLOCK_M, seq)
        else:
            full_end = (seq // BLOCK_N) * BLOCK_N
            end = seq
        for start in range(0, full_end, BLOCK_N):
            kv = start + offs_n
            k = tl.load(K + base + kv[:, None] * D + offs_d[None, :])
            v = tl.load(V + base + kv[:, None] * D + offs_d[None, :])
            s = tl.dot(q, tl.trans(k)) * scale_log2
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m_i = m_new
        for start in range(full_end, end, BLOCK_N):
            kv = start + offs_n
            k = tl.load(K + base + kv[:, None] * D + offs_d[None, :], mask=kv[:, None] < seq,
                        other=0.0)
            v = tl.load(V + base + kv[:, None] * D + offs_d[None, :], mask=kv[:, None] < seq,
                        other=0.0)
            s = tl.dot(q, tl.trans(k)) * scale_log2
            visible = kv[None, :] < seq
            if CAUSAL:
                visible = visible & (kv[None, :] <= offs_m[:, None])
            s = tl.where(visible, s, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m_i = m_new
        acc = acc / l_i[:, None]
        rows = offs_m < seq
        tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.float16),
                 mask=rows[:, None])
        tl.store(L + head * seq + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453,
                 mask=rows)

    return attn_fwd


_KERNEL = None


def kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = make_kernel()
    return _KERNEL


def launch(shape, cfg, q, k, v, o, l):
    bm, bn, stages, warps = cfg
    grid = (math.ceil(shape["seq"] / bm), shape["batch"], shape["heads"])
    scale_log2 = 1.4426950408889634 / math.sqrt(shape["d"])
    return kernel()[grid](q, k, v, o, l, shape["seq"], scale_log2, D=shape["d"], BLOCK_M=bm,
                          BLOCK_N=bn, CAUSAL=shape["causal"], num_stages=stages,
                          num_warps=warps)


def tensors(shape, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    dims = (shape["batch"], shape["heads"], shape["seq"], shape["d"])
    q, k, v = (torch.rand(dims, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
               for _ in range(3))
    o = torch.empty_like(q)
    l = torch.empty(dims[:3], device="cuda", dtype=torch.float32)
    return q, k, v, o, l


def compile_one(job):
    """Worker: compiles (d, causal, config) on a small problem, so that the main process finds it
    in Triton's cache. Returns the error text of a configuration that cannot run, else None."""
    d, causal, cfg = job
    shape = {"d": d, "causal": causal, "seq": 256, "batch": 1, "heads": 1}
    try:
        launch(shape, cfg, *tensors(shape))
        return None
    except Exception as e:  # out of resources, compiler failure: recorded, not fatal
        return f"{type(e).__name__}: {e}"


def facts_of(compiled):
    md = compiled.metadata
    ptx = compiled.asm.get("ptx", "")
    return {"registers_per_thread": compiled.n_regs, "spills": compiled.n_spills,
            "smem_bytes": md.shared, "threads": md.num_warps * 32,
            "wgmma": "wgmma.mma_async" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
            "cp_async": "cp.async.cg" in ptx or "cp.async.ca" in ptx}


def run(shapes, sets):
    import torch
    jobs = sorted({(s["d"], s["causal"], c) for s in shapes for c in configs()})
    with mp.get_context("spawn").Pool(min(14, mp.cpu_count())) as pool:
        errors = dict(zip(jobs, pool.map(compile_one, jobs, chunksize=1)))
    runs = []
    for shape in shapes:
        q, k, v, o, l = tensors(shape, seed=1)
        rows = [0, 1, shape["seq"] // 3, shape["seq"] // 2, shape["seq"] - 2, shape["seq"] - 1]
        qr, kr, vr = (x[0, 0].float() for x in (q, k, v))
        s = (qr[rows] @ kr.T) / math.sqrt(shape["d"])
        if shape["causal"]:
            cols = torch.arange(shape["seq"], device="cuda")
            s = s.masked_fill(cols[None, :] > torch.tensor(rows, device="cuda")[:, None],
                              float("-inf"))
        ref = torch.softmax(s, -1) @ vr
        entries = []
        for cfg in configs():
            e = {"shape": shape["name"], "use": shape["use"], "d": shape["d"],
                 "seq": shape["seq"], "batch": shape["batch"], "heads": shape["heads"],
                 "causal": shape["causal"], "family": "triton", "block_q": cfg[0],
                 "block_kv": cfg[1], "stages": cfg[2], "warps": cfg[3], "times_s": []}
            err = errors[(shape["d"], shape["causal"], cfg)]
            if err:
                e["infeasible"] = err.splitlines()[0][:300]
                runs.append(e)
                continue
            o.fill_(float("nan"))
            compiled = launch(shape, cfg, q, k, v, o, l)
            torch.cuda.synchronize()
            e.update(facts_of(compiled))
            got = o[0, 0, rows].float()
            max_err = float((got - ref).abs().max()) if torch.isfinite(got).all() else float("inf")
            e["check"] = {"max_abs_error": max_err, "passed": max_err < 1e-2}
            entries.append((cfg, e))
            runs.append(e)
        for set_no in range(1, sets + 1):
            order = list(entries)
            random.Random(set_no * 7919 + shape["seq"]).shuffle(order)
            for cfg, e in order:
                launch(shape, cfg, q, k, v, o, l)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(True)
                start.record()
                launch(shape, cfg, q, k, v, o, l)
                end.record()
                end.synchronize()
                reps = max(5, min(1000, int(20.0 / max(start.elapsed_time(end), 1e-3))))
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for _ in range(reps):
                        launch(shape, cfg, q, k, v, o, l)
                graph.replay()
                torch.cuda.synchronize()
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                e["times_s"].append(start.elapsed_time(end) * 1e-3 / reps)
                del graph
        print(f"shape {shape['name']}: {len(entries)} configurations run", file=sys.stderr)
    return runs


def main(argv):
    if len(argv) < 4 or argv[1] not in ("facts", "time"):
        print(__doc__, file=sys.stderr)
        return 2
    sets = 0
    if argv[1] == "time":
        sets = int(argv[argv.index("--sets") + 1]) if "--sets" in argv else 3
    import torch
    import triton
    shapes = read_shapes(argv[2])
    runs = run(shapes, sets)
    doc = {"format": "iosim-tile-sweep", "version": 1,
           "device": torch.cuda.get_device_name(), "triton": triton.__version__,
           "torch": torch.__version__, "sets": sets, "runs": runs}
    with open(argv[3], "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
