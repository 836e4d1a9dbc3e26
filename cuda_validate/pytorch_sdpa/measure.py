#!/usr/bin/env python3
"""Measure PyTorch's scaled_dot_product_attention (kernels nobody here wrote) into the
iosim measured-data format (cuda_validate/FORMAT.md, "iosim-measurements" version 1).

Run on the device machine through run.sh, which calls this script in three modes:

  time      per case: random inputs, a warm-up, the output (and for fwdbwd the gradients)
            checked against a float64 reference, then CUDA-event times of each role with
            a warm L2 (back to back) and a cold L2 (a 2x-L2 buffer written before each
            repetition). Writes runner_time.json, the shape scripts/merge_ncu.py reads.
  ncu       per case: a warm-up outside the profiled region, then inside
            cudaProfilerStart/Stop each role once, preceded by iosim_marker_kernel; writes
            the marker list (runner_ncu_<group>.json) that merge_ncu.py pairs with ncu's CSV.
  finalize  adds what merge_ncu.py does not know about PyTorch to the merged file: the
            tiling parsed from the flash kernels' template arguments, the backend and its
            settings, and the schedule of a split-KV decode.

A case's roles: "sdpa_fwd" (the F.scaled_dot_product_attention call) and, for pass
"fwdbwd", "sdpa_bwd" (out.backward(dO)). Every kernel PyTorch launches inside a role is
profiled and attributed to it (the math backend launches several).

Two suites (--suite): "sdpa" (the default: flash and math backends) and "cudnn" (Hopper
kernels: cuDNN's fused attention, for the FlashAttention-3-style schedule of issue #13).

Backends: "cudnn" = SDPBackend.CUDNN_ATTENTION alone (cuDNN's fused flash attention; on Hopper
its kernels use wgmma and TMA), recorded with schedule "flash3", the iosim schedule meant to model
it (iosim validate skips a schedule it does not have yet); "flash" = SDPBackend.FLASH_ATTENTION alone (FlashAttention-2 as vendored in
PyTorch), modelled by iosim's "flash2" ("flash-decoding" when PyTorch picks its split-KV
kernel); "math" = SDPBackend.MATH alone (unfused: matmul, softmax, matmul), modelled by
"standard". The math backend upcasts fp16 inputs to fp32 unless
torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True); most math cases set it (so the
materialized S and P are fp16, as iosim's standard schedule assumes) and the "_upcast" case
measures PyTorch's default.
"""
import argparse
import json
import math
import os
import re
import sys
import time
import traceback
import warnings

# ---------------------------------------------------------------------------------------------
# The suite. B*H fills the 132 SMs (the flash grid is ceil(N/block_q) x B x H); shapes follow
# cuda_validate/suites/default.txt so PyTorch's kernels stand beside ours on the same problems.
# ---------------------------------------------------------------------------------------------

SCHEDULE_OF_BACKEND = {"flash": "flash2", "math": "standard", "cudnn": "flash3"}
SDPA_KERNEL_TEXT = {"flash": "[SDPBackend.FLASH_ATTENTION]", "math": "[SDPBackend.MATH]",
                    "cudnn": "[SDPBackend.CUDNN_ATTENTION]"}


def bh_for(seq):
    return (1, 16) if seq >= 16384 else (4, 16)


def build_suite(suite="sdpa"):
    if suite == "cudnn":
        return build_cudnn_suite()
    if suite == "cudnn_gqa":
        return build_cudnn_gqa_suite()
    if suite == "edge":
        return build_edge_suite()
    if suite == "varlen":
        import varlen_suite
        return varlen_suite.build_varlen_suite()
    if suite == "chunked":
        import varlen_suite
        return varlen_suite.build_chunked_suite()
    if suite != "sdpa":
        raise ValueError(f"unknown suite {suite!r} (sdpa | cudnn | cudnn_gqa | edge | varlen | "
                         "chunked)")
    cases = []

    def add(group, backend, pass_, batch, heads, seq, seq_kv, d, causal=False, upcast=False):
        cid = (f"{group}b{batch}_h{heads}_n{seq}_nkv{seq_kv}_d{d}"
               + ("_causal" if causal else "") + ("_upcast" if upcast else ""))
        cases.append({
            "id": cid, "group": group, "backend": backend, "pass": pass_,
            "schedule": SCHEDULE_OF_BACKEND[backend],
            "problem": {"batch": batch, "heads": heads, "seq": seq, "seq_kv": seq_kv,
                        "head_dim": d, "dtype": "fp16", "causal": causal},
            "math_reduction": ("fp32" if upcast else "fp16") if backend == "math" else None,
        })

    for d in (64, 128):
        for n in (1024, 2048, 4096, 8192, 16384):
            add("flash_fwd_", "flash", "fwd", *bh_for(n), n, n, d)
        add("flash_fwd_", "flash", "fwd", 4, 16, 4096, 4096, d, causal=True)
    for d in (64, 128):
        for n in (1024, 4096, 16384):
            add("flash_fwdbwd_", "flash", "fwdbwd", *bh_for(n), n, n, d)
    for d in (64, 128):
        for n in (1024, 4096, 16384):
            add("math_fwd_", "math", "fwd", *bh_for(n), n, n, d)
    add("math_fwd_", "math", "fwd", 4, 16, 4096, 4096, 64, upcast=True)
    for d in (64, 128):
        for n in (1024, 4096):
            add("math_fwdbwd_", "math", "fwdbwd", *bh_for(n), n, n, d)
    # Decode: one query row against a long KV cache; B*H = 128 heads.
    for nkv in (4096, 16384, 65536):
        add("decode_flash_", "flash", "fwd", 4, 32, 1, nkv, 128)
    add("decode_flash_", "flash", "fwd", 4, 32, 1, 65536, 64)
    add("decode_math_", "math", "fwd", 4, 32, 1, 65536, 128)
    return cases


def build_cudnn_suite():
    """cuDNN's fused attention (SDPBackend.CUDNN_ATTENTION alone), fp16: forward at N = 1k..32k
    and forward+backward at N = 1k, 4k, 16k, 32k, each for d = 64 and 128, causal and not; and a
    few bf16 forwards (d = 128, N = 8k, 16k) to show whether bf16 runs as fp16 does. B*H fills
    the 132 SMs as in the sdpa suite (bh_for)."""
    cases = []

    def add(group, pass_, seq, d, causal, dtype="fp16"):
        batch, heads = bh_for(seq)
        cid = (f"{group}b{batch}_h{heads}_n{seq}_nkv{seq}_d{d}" + ("_causal" if causal else "")
               + ("" if dtype == "fp16" else "_" + dtype))
        cases.append({
            "id": cid, "group": group, "backend": "cudnn", "pass": pass_,
            "schedule": SCHEDULE_OF_BACKEND["cudnn"],
            "problem": {"batch": batch, "heads": heads, "seq": seq, "seq_kv": seq,
                        "head_dim": d, "dtype": dtype, "causal": causal},
            "math_reduction": None,
        })

    for d in (64, 128):
        for causal in (False, True):
            for n in (1024, 2048, 4096, 8192, 16384, 32768):
                add("cudnn_fwd_", "fwd", n, d, causal)
    for causal in (False, True):
        for n in (8192, 16384):
            add("cudnn_fwd_", "fwd", n, 128, causal, dtype="bf16")
    for d in (64, 128):
        for causal in (False, True):
            for n in (1024, 4096, 16384, 32768):
                add("cudnn_fwdbwd_", "fwdbwd", n, d, causal)
    return cases


def grouped_case(group, backend, pass_, batch, heads, kv_heads, seq, d, causal):
    """A case of fp16 attention over N = N_kv, with kv_heads K/V heads (grouped-query heads where
    fewer than heads: the id says _hkv and the problem kv_heads only then)."""
    cid = (f"{group}b{batch}_h{heads}" + (f"_hkv{kv_heads}" if kv_heads != heads else "")
           + f"_n{seq}_nkv{seq}_d{d}" + ("_causal" if causal else ""))
    problem = {"batch": batch, "heads": heads, "seq": seq, "seq_kv": seq, "head_dim": d,
               "dtype": "fp16", "causal": causal}
    if kv_heads != heads:
        problem["kv_heads"] = kv_heads
    return {"id": cid, "group": group, "backend": backend, "pass": pass_,
            "schedule": SCHEDULE_OF_BACKEND[backend], "problem": problem, "math_reduction": None}


def build_cudnn_gqa_suite():
    """cuDNN's fused attention with grouped-query heads (F.scaled_dot_product_attention(...,
    enable_gqa=True): K and V have kv_heads heads, each shared by heads / kv_heads query heads),
    fp16, forward and forward+backward, d = 64 and 128, causal and not; 32 query heads so that
    B*H*N/128 fills the 132 SMs. Measured 2026-11-24 for the flash3 GQA forward and backward."""
    cases = []

    def add(group, pass_, batch, heads, kv_heads, seq, d, causal):
        cases.append(grouped_case(group, "cudnn", pass_, batch, heads, kv_heads, seq, d, causal))

    for causal in (False, True):
        add("cudnn_gqa_fwd_", "fwd", 1, 32, 8, 8192, 128, causal)
        add("cudnn_gqa_fwd_", "fwd", 1, 32, 4, 16384, 128, causal)
        add("cudnn_gqa_fwd_", "fwd", 2, 32, 8, 4096, 64, causal)
        add("cudnn_gqa_fwd_", "fwd", 1, 32, 2, 16384, 64, causal)
    for causal in (False, True):
        add("cudnn_gqa_fwdbwd_", "fwdbwd", 1, 32, 8, 8192, 128, causal)
        add("cudnn_gqa_fwdbwd_", "fwdbwd", 2, 32, 4, 4096, 64, causal)
    return cases


def build_edge_suite():
    """Issue #47: the library kernels where a wave's working set meets the L2. PyTorch's flash
    backend (FlashAttention-2) forward at N = 32k .. 128k, the issue's shapes (B 1, H 8, d 128,
    fp16, causal, and full at 128k) and d = 64; cuDNN's fused forward with grouped-query heads at
    N = 32k and 64k. Blind predictions were committed before this suite ran."""
    cases = []

    def add(group, backend, batch, heads, kv_heads, seq, d, causal):
        cases.append(grouped_case(group, backend, "fwd", batch, heads, kv_heads, seq, d, causal))

    for n in (32768, 65536, 131072):
        add("edge_flash_", "flash", 1, 8, 8, n, 128, True)
    add("edge_flash_", "flash", 1, 8, 8, 131072, 128, False)
    add("edge_flash_", "flash", 1, 8, 8, 65536, 128, False)
    add("edge_flash_", "flash", 1, 16, 16, 65536, 64, True)
    add("edge_flash_", "flash", 2, 8, 8, 32768, 64, True)
    add("edge_flash_", "flash", 1, 8, 8, 131072, 64, False)
    for causal in (True, False):
        add("edge_cudnn_", "cudnn", 1, 32, 8, 32768, 128, causal)
        add("edge_cudnn_", "cudnn", 1, 32, 4, 65536, 128, causal)
    return cases


# ncu runs one process per group, in this order; the slowest (most kernels) come last so a
# tight budget loses the fewest cases.
GROUPS = ["flash_fwd_", "decode_flash_", "flash_fwdbwd_", "math_fwd_", "decode_math_",
          "math_fwdbwd_"]
GROUPS_OF_SUITE = {"sdpa": GROUPS, "cudnn": ["cudnn_fwd_", "cudnn_fwdbwd_"],
                   "cudnn_gqa": ["cudnn_gqa_fwd_", "cudnn_gqa_fwdbwd_"],
                   "edge": ["edge_flash_", "edge_cudnn_"], "varlen": ["varlen_"], "chunked": ["chunked_"]}

# ---------------------------------------------------------------------------------------------
# Tiling from kernel names (pure Python: also used off the device, by finalize and tests).
# ---------------------------------------------------------------------------------------------


def template_args(name, template):
    """Top-level template arguments of the first `template<...>` in a demangled name."""
    start = name.find(template + "<")
    if start < 0:
        return None
    i = start + len(template) + 1
    depth, arg, args = 0, "", []
    while i < len(name):
        ch = name[i]
        if ch == "<" or ch == "(":
            depth += 1
        elif ch == ">" or ch == ")":
            if depth == 0:
                args.append(arg.strip())
                return args
            depth -= 1
        if ch == "," and depth == 0:
            args.append(arg.strip())
            arg = ""
        else:
            arg += ch
        i += 1
    return None


def _bool(text):
    # c++filt and ncu print a bool template argument as true/false or as 1/0.
    return text in ("true", "1")


def _int(text):
    try:
        return int(text.rstrip("uUlL"))
    except (TypeError, ValueError):
        return None


def parse_flash_kernel(name):
    """What a PyTorch flash kernel's demangled name says about its tiling, or None.

    PyTorch vendors FlashAttention-2 (aten/src/ATen/native/transformers/cuda/flash_attn/); its
    kernels are templated on a traits class whose first arguments are the tile shape:
      Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, Is_Q_in_regs,
                              Share_Q_K_smem, elem_type, ...>
      Flash_bwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, AtomLayoutMSdP,
                              AtomLayoutNdKV, AtomLayoutMdQ, Is_V_in_regs, No_double_buffer,
                              elem_type, ...>
    kBlockM rows of Q per CTA = iosim's block_q, kBlockN rows of K/V per step = block_kv,
    kNWarps * 32 = threads per CTA. The split-KV combine kernel carries
    <Kernel_traits, kBlockM, Log_max_splits, Is_even_K> instead.
    """
    if not name:
        return None
    for kind in ("fwd", "bwd"):
        args = template_args(name, f"Flash_{kind}_kernel_traits")
        if args is None or len(args) < 4:
            continue
        ints = [_int(a) for a in args[:4]]
        if None in ints:
            continue
        d, bm, bn, warps = ints
        out = {"traits": f"Flash_{kind}_kernel_traits", "template_args": args,
               "head_dim": d, "block_q": bm, "block_kv": bn, "warps": warps,
               "threads": 32 * warps}
        if kind == "fwd" and len(args) >= 6:
            out["is_q_in_regs"] = _bool(args[4])
            out["share_q_k_smem"] = _bool(args[5])
        if kind == "bwd" and len(args) >= 9:
            out["atom_layout_m_sdp"] = _int(args[4])
            out["atom_layout_n_dkv"] = _int(args[5])
            out["atom_layout_m_dq"] = _int(args[6])
            out["is_v_in_regs"] = _bool(args[7])
            out["no_double_buffer"] = _bool(args[8])
        return out
    return None


def kernel_kind(name):
    """A short label of what a PyTorch attention kernel is, from its name."""
    n = name or ""
    if "cudnn" in n.lower() or "sdpa" in n.lower():
        low = n.lower()
        if "bprop" in low or "bwd" in low or "backward" in low:
            return "cudnn_bwd"
        if "fprop" in low or "fwd" in low or "forward" in low:
            return "cudnn_fwd"
        return "cudnn_other"
    if "splitkv_combine" in n:
        return "flash_fwd_splitkv_combine"
    if "flash_fwd_splitkv_kernel" in n:
        return "flash_fwd_splitkv"
    if "flash_fwd_kernel" in n:
        return "flash_fwd"
    if "flash_bwd_dot_do_o" in n:
        return "flash_bwd_dot_do_o"
    if "flash_bwd_convert_dq" in n or "convert_dQ" in n:
        return "flash_bwd_convert_dq"
    if "flash_bwd" in n:
        return "flash_bwd_main"
    if "softmax" in n.lower():
        return "softmax"
    if "gemm" in n.lower() or "nvjet" in n or "cutlass" in n.lower() or "sm90_xmma" in n:
        return "gemm"
    if "elementwise" in n.lower() or "vectorized" in n.lower() or "reduce" in n.lower():
        return "elementwise"
    return "other"


# Launch facts of a kernel that the cudnn suite summarizes per case (kernels[].launch has them
# all): what a schedule needs to use the same tiling.
CUDNN_LAUNCH_FACTS = (
    "launch__registers_per_thread", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic", "launch__cluster_dim_x", "launch__cluster_dim_y",
    "launch__cluster_dim_z", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__waves_per_multiprocessor")


def cudnn_summary(case):
    """Per kernel of a cudnn case: name, kind, launch shape, cluster, registers, shared memory,
    and the wgmma/TMA instruction counters where ncu measured them; plus the numbers in the
    kernel name (cuDNN's names carry tile shapes as AxBxC; recorded raw, not interpreted)."""
    out = []
    for k in case.get("kernels") or []:
        name = k.get("name") or ""
        launch = k.get("launch") or {}
        metrics = k.get("metrics") or {}
        out.append({
            "role": k.get("role"), "kind": kernel_kind(name), "name": name,
            "grid": k.get("grid"), "block": k.get("block"),
            "cluster": [launch.get(f"launch__cluster_dim_{a}") for a in "xyz"],
            "launch": {f: launch.get(f) for f in CUDNN_LAUNCH_FACTS},
            "instruction_counters": {m: v for m, v in metrics.items()
                                     if any(t in m for t in ("gmma", "hmma", "tma", "inst_executed",
                                                             "cycles_active"))},
            "shapes_in_name": re.findall(r"\d+x\d+(?:x\d+)?", name),
        })
    return out


def tiling_for_case(case):
    """The tiling object of a merged case, from its kernels' names and launch facts."""
    kernels = case.get("kernels") or []
    fwd = bwd = None
    combine = split = None
    for k in kernels:
        kind = kernel_kind(k.get("name"))
        parsed = parse_flash_kernel(k.get("name"))
        if kind in ("flash_fwd", "flash_fwd_splitkv") and fwd is None and parsed:
            fwd, fwd_kernel = parsed, k
            if kind == "flash_fwd_splitkv":
                split = k
        elif kind == "flash_bwd_main" and bwd is None and parsed:
            bwd, bwd_kernel = parsed, k
        elif kind == "flash_fwd_splitkv_combine":
            combine = k
    if fwd is None:
        return None

    def smem(k):
        launch = k.get("launch") or {}
        return launch.get("launch__shared_mem_per_block_dynamic")

    t = {
        "block_q": fwd["block_q"], "block_kv": fwd["block_kv"], "threads": fwd["threads"],
        "smem_bytes_per_cta": smem(fwd_kernel),
        # FlashAttention-2's forward keeps one shared-memory buffer each for K_j and V_j but
        # loads V_j while S = Q K_j^T is computed and K_{j+1} while O += P V_j is: one tile in
        # flight while the other is used, the overlap of our 2-stage kernels.
        "pipeline_stages": 2,
        "copy": "cp.async (CuTe SM80 copy atoms)",
        "mma": "mma.sync m16n8k16 (CuTe SM80 MMA atoms)",
        "source": "parsed from the kernel name: " + fwd["traits"] + "<" +
                  ", ".join(fwd["template_args"][:4]) + ", ...> = <head_dim, block_q, "
                  "block_kv, warps>",
        "kernel_template_args": fwd["template_args"],
    }
    if split is not None:
        grid = split.get("grid") or [None, None, None]
        # flash_fwd_splitkv_kernel's grid is (m blocks, num_splits, B*H) when it splits.
        t["num_splits"] = grid[1] if combine is not None else 1
    if bwd is not None:
        t["bwd"] = {key: bwd[key] for key in bwd if key not in ("traits",)}
        t["bwd"]["smem_bytes_per_cta"] = smem(bwd_kernel)
    return t


# ---------------------------------------------------------------------------------------------
# finalize (no torch needed)
# ---------------------------------------------------------------------------------------------


def cudnn_tiling(case):
    """iosim's tiling fields for a cuDNN case's forward kernel, or None.

    Derived, not read: the forward kernel's name carries `AxBxC` = (query rows per consumer
    warpgroup) x (keys per K/V block) x (head dim), e.g. `64x128x128`; its 384 threads are three
    warpgroups, one producer (TMA) and two consumers, so a CTA tile holds 2 x 64 query rows. The
    TMA load bytes agree (each 128 query rows read K and V once: NOTES.md beside the data).

    A forward+backward case also gets "bwd", the backward's main kernel (`..._flash_bprop_...`):
    its name's `AxBxC` = (query rows per block) x (keys per consumer warpgroup) x (head dim),
    e.g. `64x64x128`, with two consumer warpgroups beside the producer in its 384 threads, so
    that a CTA tile holds 2 x 64 keys against 64 query rows. The counters agree: its TMA load bytes
    are K and V once plus Q and dO once per 128 keys, and its wgmmas average one m64n64k16
    (64 keys x 64 query rows) at d = 64 (NOTES.md beside the data)."""
    out = None
    for k in case.get("cudnn", {}).get("kernels", []):
        if k.get("kind") not in ("cudnn_fwd", "cudnn_bwd"):
            continue
        shape = next((g for g in k.get("shapes_in_name", []) if g.count("x") == 2), None)
        threads = (k.get("block") or [0])[0]
        if not shape or threads % 128 or threads < 256:
            return None
        first, second, _ = (int(v) for v in shape.split("x"))
        consumers = threads // 128 - 1
        smem = k.get("launch", {}).get("launch__shared_mem_per_block_dynamic", 0)
        if k["kind"] == "cudnn_fwd":
            out = {"block_q": first * consumers, "block_kv": second, "threads": threads,
                   "smem_bytes_per_cta": smem,
                   "source": f"derived from the kernel name's {shape} and its {threads} threads "
                             f"({consumers} consumer warpgroups of {first} query rows "
                             "beside one producer): measure.py cudnn_tiling"}
        elif out is not None:
            out["bwd"] = {"block_q": first, "block_kv": second * consumers, "threads": threads,
                          "smem_bytes_per_cta": smem,
                          "source": f"derived from the backward kernel name's {shape} and its "
                                    f"{threads} threads ({consumers} consumer warpgroups of "
                                    f"{second} keys beside one producer, {first} query rows per "
                                    "block): measure.py cudnn_tiling"}
    return out


def retile(args):
    """Adds cudnn_tiling() to every cuDNN case of an already measured file, in place."""
    with open(args.file) as f:
        doc = json.load(f)
    n = 0
    for c in doc["cases"]:
        if "cudnn" in c:
            c["tiling"] = cudnn_tiling(c)
            n += c["tiling"] is not None
    with open(args.file, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{args.file}: tiling derived for {n} of {len(doc['cases'])} cases")


def finalize(args):
    with open(args.merged) as f:
        merged = json.load(f)
    with open(args.time) as f:
        timed = json.load(f)
    extra = {c["id"]: c for c in timed["cases"]}
    for c in merged["cases"]:
        t = extra.get(c["id"], {})
        c["sdpa"] = t.get("sdpa")
        names = [k.get("name") for k in c.get("kernels", []) if k.get("name")]
        kinds = [kernel_kind(n) for n in names]
        for k in c.get("kernels", []):
            k["kind"] = kernel_kind(k.get("name"))
        for key in ("time_sets", "time_spread", "time_set_errors"):
            if key in t:
                c[key] = t[key]
        if c["sdpa"] and c["sdpa"].get("backend") == "cudnn":
            c["cudnn"] = {"kernels": cudnn_summary(c),
                          "schedule_note": "schedule flash3 = iosim's FlashAttention-3-style "
                                           "schedule (issue #13)"}
            c["tiling"] = cudnn_tiling(c)
        elif c["sdpa"] and c["sdpa"].get("backend") == "flash":
            c["tiling"] = tiling_for_case(c)
            if c["tiling"] is None and names:
                c["tiling_note"] = ("no Flash_fwd_kernel_traits<...> in the kernel names; "
                                    "names recorded in kernels[].name")
            if "flash_fwd_splitkv_combine" in kinds:
                # Split-KV + combine is Flash-Decoding (iosim: flash-decoding), not flash2.
                c["schedule"] = "flash-decoding"
        else:
            c["tiling"] = None
    s = merged.setdefault("settings", {})
    fr = s.setdefault("free_running", {})
    fr["timer"] = ("torch.cuda.Event(enable_timing=True).record() around each role, after "
                   "torch.cuda._sleep kept the GPU busy while the host enqueued the roles "
                   "(since 2026-11-24; before, the host's dispatch was inside short cases' "
                   "intervals: retime.py), torch.cuda.synchronize() after each repetition")
    fr["cold_l2"] = ("time_free_running_cold_l2_s: a 2x-L2 torch buffer is filled "
                     "(Tensor.fill_) before each repetition, outside the timed events")
    fr["warm_l2"] = ("time_free_running_s: repetitions back to back; inputs left in L2 by the "
                     "previous repetition may hit")
    s["pytorch"] = timed.get("pytorch", {})
    backends = sorted({(c.get("sdpa") or {}).get("backend") or "?" for c in merged["cases"]})
    merged["source"] = {
        "what": "PyTorch scaled_dot_product_attention, backends: " + ", ".join(backends),
        "script": "cuda_validate/pytorch_sdpa/measure.py (driver: run.sh)",
        "roles": {"sdpa_fwd": "kernels launched by F.scaled_dot_product_attention",
                  "sdpa_bwd": "kernels launched by out.backward(dO) (pass fwdbwd)"},
    }
    merged.setdefault("tools", {})["torch"] = timed.get("pytorch", {}).get("torch_version")
    with open(args.out, "w") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    n_tiled = sum(1 for c in merged["cases"] if c.get("tiling"))
    print(f"finalized {len(merged['cases'])} cases ({n_tiled} with a parsed tiling) -> {args.out}")
    return 0


# ---------------------------------------------------------------------------------------------
# Device side (time and ncu modes)
# ---------------------------------------------------------------------------------------------


def sample_rows(seq):
    """Query rows compared with the reference: both ends and evenly spaced rows between."""
    rows = set()
    for r in range(min(4, seq)):
        rows.add(r)
        rows.add(seq - 1 - r)
    for k in range(24):
        rows.add((seq * k + 7) // 24 % seq)
    return sorted(rows)


def errors(got, ref):
    """max |got - ref|, max |ref|, ||got - ref|| / ||ref|| (float64); the errors are None
    when got holds a NaN or inf (JSON has no inf, and such a case fails its check)."""
    import torch
    g = got.double()
    diff = (g - ref).abs()
    max_ref = float(ref.abs().max())
    if not bool(torch.isfinite(diff).all()):
        return None, max_ref, None
    den = float(torch.linalg.vector_norm(ref))
    return float(diff.max()), max_ref, float(torch.linalg.vector_norm(g - ref)) / (den or 1.0)


class Device:
    def __init__(self, device_json):
        import torch
        self.torch = torch
        torch.cuda.init()
        props = torch.cuda.get_device_properties(0)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
        self.flush = torch.empty(2 * self.l2_bytes, dtype=torch.uint8, device="cuda")
        self.flush_value = 0
        self.device = None
        if device_json and os.path.exists(device_json):
            try:
                with open(device_json) as f:
                    self.device = json.load(f)
            except (OSError, ValueError):
                self.device = None
        if self.device is None:
            self.device = {
                "name": props.name, "compute_capability": f"{props.major}.{props.minor}",
                "multiprocessor_count": props.multi_processor_count,
                "total_global_mem_bytes": props.total_memory,
                "l2_cache_size_bytes": self.l2_bytes,
                "source": "torch.cuda.get_device_properties (iosim_device_query not run)",
            }
        self.marker = self._make_marker()

    def _make_marker(self):
        """An empty kernel named iosim_marker_kernel (the name merge_ncu.py pairs on)."""
        try:
            import cupy as cp
            import numpy as np
            k = cp.RawKernel(r'extern "C" __global__ void iosim_marker_kernel(int c, int r) {}',
                             "iosim_marker_kernel")

            def launch(c, r):
                k((1,), (32,), (np.int32(c), np.int32(r)))
            launch(0, 0)
            cp.cuda.Device().synchronize()
            return launch
        except Exception as e:  # cupy missing or NVRTC failure: Triton names kernels too
            print(f"cupy marker unavailable ({e}); using Triton", file=sys.stderr)
            import triton
            import triton.language as tl  # noqa: F401

            @triton.jit
            def iosim_marker_kernel(x_ptr, c, r):
                pass
            buf = self.torch.zeros(1, device="cuda")

            def launch(c, r):
                iosim_marker_kernel[(1,)](buf, c, r)
            launch(0, 0)
            self.torch.cuda.synchronize()
            return launch

    def flush_l2(self):
        self.flush_value ^= 0x5A
        self.flush.fill_(self.flush_value)


def pytorch_info():
    import torch
    info = {"torch_version": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": (torch.backends.cudnn.version()
                      if torch.backends.cudnn.is_available() else None),
            "flash_sdp_enabled": torch.backends.cuda.flash_sdp_enabled(),
            "math_sdp_enabled": torch.backends.cuda.math_sdp_enabled()}
    fn = getattr(torch.backends.cuda, "cudnn_sdp_enabled", None)
    info["cudnn_sdp_enabled"] = fn() if fn else None
    fn = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed", None)
    info["fp16_bf16_reduction_math_sdp_default"] = fn() if fn else None
    return info


def set_math_reduction(fp16):
    """allow_fp16_bf16_reduction_math_sdp(fp16); returns a description of what was set."""
    import torch
    fn = getattr(torch.backends.cuda, "allow_fp16_bf16_reduction_math_sdp", None)
    if fn is not None:
        fn(bool(fp16))
        return f"torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp({bool(fp16)})"
    setter = getattr(torch._C, "_set_math_sdp_allow_fp16_bf16_reduction", None)
    if setter is not None:
        setter(bool(fp16))
        return f"torch._C._set_math_sdp_allow_fp16_bf16_reduction({bool(fp16)})"
    return "not available in this PyTorch (math backend used its default)"


class CaseRun:
    """Inputs and the role functions of one case."""

    def __init__(self, case, index):
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.torch, self.F = torch, F
        self.case = case
        p = case["problem"]
        B, H, N, NKV, d = p["batch"], p["heads"], p["seq"], p["seq_kv"], p["head_dim"]
        HKV = p.get("kv_heads", H)  # grouped-query heads: K and V have HKV heads
        self.gqa = HKV != H
        g = torch.Generator(device="cuda")
        g.manual_seed(1000 * index + 17)

        dtype = torch.bfloat16 if p.get("dtype") == "bf16" else torch.float16

        def uniform(*shape):  # in [-1, 1), never all zeros
            return torch.rand(shape, device="cuda", dtype=dtype, generator=g) * 2 - 1
        self.q, self.k, self.v = uniform(B, H, N, d), uniform(B, HKV, NKV, d), uniform(B, HKV, NKV, d)
        self.bwd = case["pass"] == "fwdbwd"
        if self.bwd:
            for x in (self.q, self.k, self.v):
                x.requires_grad_(True)
            self.dO = uniform(B, H, N, d)
        self.scale = 1.0 / math.sqrt(d)
        self.backend = {"flash": SDPBackend.FLASH_ATTENTION,
                        "math": SDPBackend.MATH,
                        "cudnn": SDPBackend.CUDNN_ATTENTION}[case["backend"]]
        self.sdpa_kernel = sdpa_kernel
        self.state = {}
        self.math_setting = None
        if case["backend"] == "math":
            self.math_setting = set_math_reduction(case["math_reduction"] == "fp16")

    def context(self):
        return self.sdpa_kernel([self.backend])

    def roles(self):
        F, torch, st, c = self.F, self.torch, self.state, self.case
        causal = c["problem"]["causal"]
        gqa = {"enable_gqa": True} if self.gqa else {}
        if not self.bwd:
            def fwd():
                with torch.no_grad():
                    st["out"] = F.scaled_dot_product_attention(self.q, self.k, self.v,
                                                               is_causal=causal, **gqa)
            return [("sdpa_fwd", fwd)]

        def fwd_g():
            for x in (self.q, self.k, self.v):
                x.grad = None  # no accumulation kernel: autograd stores the new gradient
            st["out"] = F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=causal,
                                                       **gqa)

        def bwd():
            st["out"].backward(self.dO)
        return [("sdpa_fwd", fwd_g), ("sdpa_bwd", bwd)]

    def run_all(self):
        for _, fn in self.roles():
            fn()

    # --- correctness -------------------------------------------------------------------------
    def check(self):
        torch = self.torch
        p = self.case["problem"]
        B, H, N, NKV, d = p["batch"], p["heads"], p["seq"], p["seq_kv"], p["head_dim"]
        causal = p["causal"]
        out = self.state["out"].detach()
        BH = B * H
        rows = sample_rows(N)
        idx = torch.tensor(rows, device="cuda")
        HKV = p.get("kv_heads", H)
        qf = self.q.detach().reshape(BH, N, d)
        # Grouped-query heads: query head h reads K/V head h // (H / HKV) (PyTorch's enable_gqa).
        kf = self.k.detach().repeat_interleave(H // HKV, dim=1).reshape(BH, NKV, d)
        vf = self.v.detach().repeat_interleave(H // HKV, dim=1).reshape(BH, NKV, d)
        of = out.reshape(BH, N, d)
        dof = self.dO.reshape(BH, N, d) if self.bwd else None
        ref_o = torch.empty(BH, len(rows), d, dtype=torch.float64, device="cuda")
        ref_dq = torch.empty_like(ref_o) if self.bwd else None
        # Heads per chunk: K and V in float64 for a chunk stay near 1 GiB.
        chunk = max(1, (1 << 30) // (NKV * d * 8 * 2))
        # Bottom-right aligned causal mask; PyTorch's is_causal is top-left, the same when N == NKV.
        if causal:
            j = torch.arange(NKV, device="cuda")
            masked = j[None, :] > (idx[:, None] + (NKV - N))
        for s in range(0, BH, chunk):
            e = min(BH, s + chunk)
            kd, vd = kf[s:e].double(), vf[s:e].double()
            qd = qf[s:e, idx].double()
            S = (qd @ kd.transpose(1, 2)) * self.scale
            if causal:
                S.masked_fill_(masked[None], float("-inf"))
            P = torch.softmax(S, dim=-1)
            O = P @ vd
            ref_o[s:e] = O
            if self.bwd:
                dOd = dof[s:e, idx].double()
                dP = dOd @ vd.transpose(1, 2)
                D = (dOd * O).sum(-1, keepdim=True)
                ref_dq[s:e] = ((P * (dP - D)) @ kd) * self.scale
            del kd, vd, qd, S, P, O
        res = {}
        got_o = of[:, idx]
        max_err, max_ref, rel = errors(got_o, ref_o)
        nonfinite = int((~torch.isfinite(out)).sum())
        tol_abs = 1e-3 + 2e-2 * max_ref
        passed = nonfinite == 0 and rel is not None and rel <= 1e-2 and max_err <= tol_abs
        res.update({"max_abs_error": max_err, "max_abs_reference": max_ref, "rel_l2_error": rel,
                    "tolerance_max_abs": tol_abs, "tolerance_rel_l2": 1e-2,
                    "lse_max_abs_error": None, "nonfinite_outputs": nonfinite,
                    "rows_checked_per_head": len(rows),
                    "reference": "float64 torch on sampled query rows, all (b, h)"})
        if self.bwd:
            grads = {}
            g_ok = True
            dq = self.q.grad.reshape(BH, N, d)
            e_dq = errors(dq[:, idx], ref_dq)
            grads["dq"] = self._grad_entry(e_dq, "sampled rows, all (b, h)")
            # dK and dV need every query row: full float64 backward of two heads.
            for name, e in self._dkdv_check(qf, kf, vf, dof, causal, N, NKV, d,
                                            H // HKV).items():
                grads[name] = e
            n_nonfinite = sum(int((~torch.isfinite(x.grad)).sum())
                              for x in (self.q, self.k, self.v))
            for g_ in grads.values():
                g_ok = g_ok and g_["passed"]
            res["gradients"] = grads
            res["nonfinite_gradients"] = n_nonfinite
            passed = passed and g_ok and n_nonfinite == 0
        res["passed"] = bool(passed)
        return res

    @staticmethod
    def _grad_entry(e, where):
        # Looser than the output's: gradients pass through fp16 P, dP and dS (the math backend
        # stores them in fp16); a wrong tile is still off by O(|ref|).
        max_err, max_ref, rel = e
        tol_abs = 1e-3 + 1e-1 * max_ref
        ok = rel is not None and rel <= 5e-2 and max_err <= tol_abs
        return {"max_abs_error": max_err, "max_abs_reference": max_ref, "rel_l2_error": rel,
                "tolerance_max_abs": tol_abs, "tolerance_rel_l2": 5e-2, "checked": where,
                "passed": bool(ok)}

    def _dkdv_check(self, qf, kf, vf, dof, causal, N, NKV, d, group=1):
        """dK and dV of the first and last flat K/V heads, each the sum over its `group` query
        heads (grouped-query heads: qf, kf, vf, dof are per query head, K/V repeated)."""
        torch = self.torch
        BH = qf.shape[0]
        BHKV = BH // group
        heads = sorted({0, BHKV - 1})
        rows_chunk = max(1, (1 << 25) // NKV)
        ref_dk, ref_dv, got_dk, got_dv = [], [], [], []
        dk_all = self.k.grad.reshape(BHKV, NKV, d)
        dv_all = self.v.grad.reshape(BHKV, NKV, d)
        j = torch.arange(NKV, device="cuda")
        for h in heads:
            dK = torch.zeros(NKV, d, dtype=torch.float64, device="cuda")
            dV = torch.zeros_like(dK)
            for qh in range(h * group, (h + 1) * group):
                Qd, Kd = qf[qh].double(), kf[qh].double()
                Vd, dOd = vf[qh].double(), dof[qh].double()
                for r0 in range(0, N, rows_chunk):
                    r1 = min(N, r0 + rows_chunk)
                    S = (Qd[r0:r1] @ Kd.T) * self.scale
                    if causal:
                        i = torch.arange(r0, r1, device="cuda")
                        S.masked_fill_(j[None, :] > (i[:, None] + (NKV - N)), float("-inf"))
                    P = torch.softmax(S, dim=-1)
                    O = P @ Vd
                    dOc = dOd[r0:r1]
                    dV += P.T @ dOc
                    dP = dOc @ Vd.T
                    D = (dOc * O).sum(-1, keepdim=True)
                    dK += ((P * (dP - D)).T @ Qd[r0:r1]) * self.scale
            ref_dk.append(dK)
            ref_dv.append(dV)
            got_dk.append(dk_all[h])
            got_dv.append(dv_all[h])
        where = f"all rows of flat heads {heads}"
        return {"dk": self._grad_entry(errors(torch.stack(got_dk), torch.stack(ref_dk)), where),
                "dv": self._grad_entry(errors(torch.stack(got_dv), torch.stack(ref_dv)), where)}


def causal_alignment(problem):
    if not problem["causal"]:
        return None
    if "seq_lens" in problem:
        return "bottom-right within each sequence (FlashAttention-2's varlen kernel), as iosim's"
    return "top-left (PyTorch's is_causal); equal to iosim's bottom-right here because N == Nkv"


def make_run(case, index):
    """The case's CaseRun; a packed (varlen) batch's is varlen_suite.VarlenCaseRun."""
    if "seq_lens" in case["problem"]:
        import varlen_suite
        return varlen_suite.VarlenCaseRun(case, index)
    return CaseRun(case, index)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


# How long the GPU sleeps before each timed repetition: longer than the host takes to enqueue a
# role (150-370 us for cuDNN's forward, 600-1300 us for forward + backward, retime.py), so the
# first event completes when the GPU, not the host, reaches the role.
HOST_COVER_S = 3e-3


def enqueue_roles(roles, ev):
    """Enqueues the roles back to back, event ev[r] recorded before role r and ev[n] after the
    last (n roles, n + 1 events)."""
    for r, (_, fn) in enumerate(roles):
        ev[r].record()
        fn()
    ev[len(roles)].record()


def append_intervals(ev, per_role, total):
    """Once enqueue_roles's events completed: appends each role's interval to per_role[r] and
    the interval over all of them to total (seconds)."""
    n = len(per_role)
    for r in range(n):
        per_role[r].append(ev[r].elapsed_time(ev[r + 1]) * 1e-3)
    total.append(ev[0].elapsed_time(ev[n]) * 1e-3)


def cleared(run):
    """Drops a case's saved state; returns None (run = cleared(run) drops the run too)."""
    if run is not None:
        run.state.clear()
    return None


def free_device_memory(torch):
    """Waits for the device, then gives PyTorch's cached blocks back."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def time_case(run, dev, reps):
    """Per-role medians (warm and cold L2) and the median of all roles back to back."""
    torch = dev.torch
    roles = run.roles()
    n = len(roles)
    warm = [[] for _ in range(n)]
    cold = [[] for _ in range(n)]
    total = []
    sleep_cycles = int(HOST_COVER_S * 1.98e9)  # at the boost clock; slower clocks sleep longer
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    for _ in range(reps):
        torch.cuda._sleep(sleep_cycles)
        enqueue_roles(roles, ev)
        torch.cuda.synchronize()
        append_intervals(ev, warm, total)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        for r, (_, fn) in enumerate(roles):
            dev.flush_l2()
            torch.cuda._sleep(sleep_cycles)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            cold[r].append(a.elapsed_time(b) * 1e-3)
    return ([median(w) for w in warm], [median(c) for c in cold], median(total))


def extra_rep_sets(args, cases, all_ids, out_cases, dev):
    """Sets 2..rep_sets of the time mode: every case that ran is timed again (new inputs of the
    same seed, a warm-up), after all cases of the previous set, so the sets lie minutes apart.
    Each case keeps its sets under "time_sets"; its times become the median over the sets."""
    import torch
    by_id = {r["id"]: r for r in out_cases}
    for r in out_cases:
        if r.get("error") is None and r.get("roles"):
            r["time_sets"] = [{"time_free_running_s": r.get("time_free_running_s"),
                               "roles": {x["role"]: {"warm_l2": x["time_free_running_s"],
                                                     "cold_l2": x["time_free_running_cold_l2_s"]}
                                         for x in r["roles"]}}]
    t_start = time.time()
    for set_no in range(1, max(1, args.rep_sets)):
        for case in cases:
            rec = by_id[case["id"]]
            if "time_sets" not in rec:
                continue
            if args.time_budget_s and time.time() - t_start > args.time_budget_s:
                print(f"[time] set {set_no + 1}: time budget spent; stopping", file=sys.stderr)
                break
            run = None
            try:
                run = make_run(case, all_ids.index(case["id"]))
                with run.context():
                    run.run_all()
                    run.run_all()
                    torch.cuda.synchronize()
                    warm, cold, total = time_case(run, dev, args.reps)
                rec["time_sets"].append({
                    "time_free_running_s": total,
                    "roles": {role: {"warm_l2": warm[i], "cold_l2": cold[i]}
                              for i, (role, _) in enumerate(run.roles())}})
                print(f"[time] set {set_no + 1} {case['id']}: t {total * 1e3:.3f} ms",
                      file=sys.stderr, flush=True)
            except Exception as e:
                rec.setdefault("time_set_errors", []).append(
                    f"set {set_no + 1}: {type(e).__name__}: {str(e)[:300]}")
                traceback.print_exc(file=sys.stderr)
            finally:
                run = cleared(run)
                free_device_memory(torch)
    for rec in out_cases:
        sets = rec.get("time_sets")
        if not sets:
            continue
        totals = [x["time_free_running_s"] for x in sets if x["time_free_running_s"] is not None]
        if totals:
            m = median(totals)
            rec["time_free_running_s"] = m
            rec["time_spread"] = {"sets": len(totals), "min_s": min(totals), "max_s": max(totals),
                                  "rel_range": (max(totals) - min(totals)) / m if m else None,
                                  "statistic": "median over the sets of each set's median of "
                                               f"{args.reps} repetitions"}
        for x in rec["roles"]:
            for key, field in (("warm_l2", "time_free_running_s"),
                               ("cold_l2", "time_free_running_cold_l2_s")):
                v = [st["roles"][x["role"]][key] for st in sets if x["role"] in st["roles"]]
                if v:
                    x[field] = median(v)


def run_cases(args):
    import torch
    suite = build_suite(args.suite)
    cases = [c for c in suite if not args.only or c["id"].startswith(args.only)]
    all_ids = [c["id"] for c in suite]
    dev = Device(args.device_json)
    info = pytorch_info()  # before any case changes the math backend's settings
    out_cases, markers = [], []
    n_failed = 0
    for case in cases:
        index = all_ids.index(case["id"])
        t0 = time.time()
        rec = {k: case[k] for k in ("id", "schedule", "pass", "problem")}
        rec["index"] = index
        rec["tiling"] = None
        rec["sdpa"] = {"backend": case["backend"],
                       "sdpa_kernel": SDPA_KERNEL_TEXT[case["backend"]],
                       "math_reduction": case["math_reduction"], "scale": "default (1/sqrt(d))",
                       "layout": ("packed (total tokens, H, d), cumulative sequence lengths: "
                                  "aten._flash_attention_forward (varlen)"
                                  if "seq_lens" in case["problem"] else "(B, H, N, d) contiguous"),
                       "dropout_p": 0.0,
                       "is_causal": case["problem"]["causal"],
                       "causal_alignment": causal_alignment(case["problem"])}
        run = None
        try:
            run = make_run(case, index)
            rec["sdpa"]["math_setting"] = run.math_setting
            roles = run.roles()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with run.context():
                    run.run_all()  # warm-up: module load, cuBLAS heuristics, workspaces
                    run.run_all()
                    torch.cuda.synchronize()
                    if args.mode == "ncu":
                        torch.cuda.profiler.start()
                        for r, (role, fn) in enumerate(roles):
                            # Listed before the marker launches: if the role then fails, the
                            # marker row in ncu's CSV still has its entry and pairing holds.
                            markers.append({"marker": len(markers), "case_index": index,
                                            "case_id": case["id"], "role": role,
                                            "kernel": "F.scaled_dot_product_attention" +
                                                      (" + out.backward(dO)"
                                                       if role == "sdpa_bwd" else "")})
                            dev.marker(index, r)
                            fn()
                            torch.cuda.synchronize()
                        torch.cuda.profiler.stop()
                        rec["roles"] = [{"role": r_, "kernel": "sdpa"} for r_, _ in roles]
                    else:
                        run.run_all()
                        torch.cuda.synchronize()
                        rec["check"] = run.check()
                        warm, cold, total = time_case(run, dev, args.reps)
                        rec["roles"] = [{"role": role, "kernel":
                                         "F.scaled_dot_product_attention" +
                                         (" + out.backward(dO)" if role == "sdpa_bwd" else ""),
                                         "grid": None, "block": None, "smem_bytes": None,
                                         "time_free_running_s": warm[r],
                                         "time_free_running_cold_l2_s": cold[r]}
                                        for r, (role, _) in enumerate(roles)]
                        rec["time_free_running_s"] = total
                        rec["reps"] = args.reps
            rec["sdpa"]["warnings"] = sorted({str(w.message)[:400] for w in caught})
            rec["error"] = None
            ok = args.mode == "ncu" or rec["check"]["passed"]
            status = "ok" if ok else "FAIL"
            if not ok:
                n_failed += 1
        except Exception as e:  # a refused shape is recorded and the suite goes on
            if args.mode == "ncu":
                try:
                    torch.cuda.profiler.stop()
                except Exception:
                    pass
            rec["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
            rec.setdefault("roles", [])
            rec.setdefault("check", {"passed": False})
            status = "ERROR " + rec["error"][:200]
            n_failed += 1
            traceback.print_exc(file=sys.stderr)
        finally:
            run = cleared(run)
            free_device_memory(torch)
        extra = ""
        if args.mode == "time" and rec.get("check", {}).get("max_abs_error") is not None:
            ck = rec["check"]
            extra = (f" err {ck['max_abs_error']:.2e} rel {ck['rel_l2_error']:.2e}"
                     f" t {rec.get('time_free_running_s', 0) * 1e3:.3f} ms")
            for name, g_ in (ck.get("gradients") or {}).items():
                extra += f" {name} rel {g_['rel_l2_error']}"
        print(f"[{args.mode}] {case['id']}: {status}{extra} ({time.time() - t0:.1f} s)",
              file=sys.stderr, flush=True)
        out_cases.append(rec)
    if args.mode == "time":
        extra_rep_sets(args, cases, all_ids, out_cases, dev)
    top = {"runner": {"mode": args.mode, "suite": "cuda_validate/pytorch_sdpa/measure.py",
                      "suite_name": args.suite, "reps": args.reps,
                      "rep_sets": args.rep_sets if args.mode == "time" else None,
                      "l2_flush_bytes": int(dev.flush.numel())},
           "device": dev.device, "pytorch": info, "cases": out_cases}
    if args.mode == "ncu":
        top["markers"] = markers
    with open(args.out, "w") as f:
        json.dump(top, f, indent=1)
        f.write("\n")
    print(f"{len(out_cases)} cases, {n_failed} failed or errored; wrote {args.out}",
          file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for mode in ("time", "ncu"):
        p = sub.add_parser(mode)
        p.add_argument("--out", required=True)
        p.add_argument("--only", default="", help="run the cases whose id starts with this")
        p.add_argument("--reps", type=int, default=10)
        p.add_argument("--device-json", default="", help="iosim_device_query output")
        p.add_argument("--suite", default="sdpa", choices=("sdpa", "cudnn", "cudnn_gqa", "edge", "varlen",
                                                             "chunked"))
        p.add_argument("--rep-sets", type=int, default=1,
                       help="time mode: after all cases, time every case again this many times "
                            "in all (fresh inputs and warm-up each time): the sets' spread")
        p.add_argument("--time-budget-s", type=float, default=0,
                       help="time mode: stop the extra repetition sets after this long (0: no limit)")
    p = sub.add_parser("finalize")
    p.add_argument("--merged", required=True, help="merge_ncu.py output")
    p.add_argument("--time", required=True, help="runner_time.json of the time mode")
    p.add_argument("--out", required=True)
    p = sub.add_parser("retile", help="add the derived tiling to a measured file's cuDNN cases")
    p.add_argument("file")
    p = sub.add_parser("list")
    p.add_argument("--groups", action="store_true")
    p.add_argument("--json", action="store_true", help="the cases as JSON (id, pass, problem)")
    p.add_argument("--suite", default="sdpa", choices=("sdpa", "cudnn", "cudnn_gqa", "edge", "varlen",
                                                             "chunked"))
    args = ap.parse_args()
    if args.cmd == "finalize":
        return finalize(args)
    if args.cmd == "retile":
        return retile(args)
    if args.cmd == "list":
        if args.json:
            print(json.dumps([{k: c[k] for k in ("id", "group", "backend", "schedule", "pass",
                                                  "problem")} for c in build_suite(args.suite)],
                             indent=1))
            return 0
        for x in (GROUPS_OF_SUITE[args.suite] if args.groups
                  else [c["id"] for c in build_suite(args.suite)]):
            print(x)
        return 0
    args.mode = args.cmd
    return run_cases(args)


if __name__ == "__main__":
    sys.exit(main())
