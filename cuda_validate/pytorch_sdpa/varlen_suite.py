"""Issue #52's ragged batches on a kernel nobody here wrote: PyTorch's FlashAttention-2 varlen
forward (`torch.ops.aten._flash_attention_forward` with cumulative sequence lengths, the kernel
serving stacks call for packed batches). measure.py runs these cases (`--suite varlen`) as it runs
its other suites; this module holds what differs: the cases, the packed inputs, the call and the
per-sequence float64 check.

A case's problem carries `seq_lens` (query tokens per sequence) and `seq_kv_lens` (keys per
sequence); `batch` is their count and `seq` / `seq_kv` their maxima (the kernel's max_seqlen_q /
max_seqlen_k, which size its grid: query blocks of the longest sequence x batch x heads, the
blocks past a shorter sequence's end returning at once). With `causal` each sequence is
bottom-right aligned on its own (FlashAttention-2 since 2.1): a decode row sees all its keys, a
prefill chunk over a cached context is causal within the chunk. Inputs are packed end to end,
(total tokens, H, d), as the kernel takes them.
"""
import contextlib
import itertools
import math

import measure


def varlen_case(name, heads, kv_heads, seq_lens, seq_kv_lens, d, causal, prefix="varlen"):
    problem = {"batch": len(seq_lens), "heads": heads, "seq": max(seq_lens),
               "seq_kv": max(seq_kv_lens), "seq_lens": list(seq_lens),
               "seq_kv_lens": list(seq_kv_lens), "head_dim": d, "dtype": "fp16",
               "causal": causal}
    if kv_heads != heads:
        problem["kv_heads"] = kv_heads
    cid = (f"{prefix}_{name}_h{heads}" + (f"_hkv{kv_heads}" if kv_heads != heads else "")
           + f"_d{d}" + ("_causal" if causal else ""))
    return {"id": cid, "group": f"{prefix}_", "backend": "flash", "pass": "fwd",
            "schedule": "flash2", "problem": problem, "math_reduction": None}


def build_varlen_suite():
    """Eight packed batches, d 64 and 128, causal and not, one with grouped-query heads, two
    that mix decode rows or prefill chunks over a cached context (a serving step). Each fills
    the 132 SMs at least once (FlashAttention-2's varlen forward then runs without splitting K/V).
    The blind predictions are committed before the suite runs; the even-numbered cases (second,
    fourth, ...) are sealed from calibration."""
    c = varlen_case
    return [
        c("mix4", 16, 16, [4096, 1024, 2560, 512], [4096, 1024, 2560, 512], 128, True),
        c("odd4", 16, 16, [3000, 700, 1500, 4500], [3000, 700, 1500, 4500], 128, False),
        c("long_short", 32, 32, [8192, 2048, 100, 6000], [8192, 2048, 100, 6000], 64, True),
        c("two_sizes", 16, 16, [1024] * 6 + [4096] * 2, [1024] * 6 + [4096] * 2, 64, False),
        c("chunks", 32, 32, [2048, 1024], [8192, 3072], 128, True),
        c("serving_step", 32, 8, [1] * 8 + [2048],
          [4096, 8000, 1200, 16000, 3000, 9000, 500, 2000, 6144], 128, True),
        c("many_short", 16, 16, [512, 256, 384, 448, 320, 500, 64, 200] * 4,
          [512, 256, 384, 448, 320, 500, 64, 200] * 4, 128, True),
        c("gqa_long", 8, 2, [16384, 4096], [16384, 4096], 64, True),
    ]


def build_chunked_suite():
    """Chunked prefill (issue #52): a chunk of a prompt's queries over the keys already cached
    for it plus its own, causal within the chunk (bottom-right), as serving stacks run a long
    prompt in pieces through the same varlen forward. One chunk, or a few chunks of different
    requests in one launch; contexts from 4k to 64k keys (the last at the L2's edge: one K/V head
    of 64k keys at d 128 is 32 MB), d 64 and 128, grouped-query heads in half. Each launch fills
    the 132 SMs (query blocks x sequences x heads >= 128). The blind predictions are committed
    before the suite runs; the even-numbered cases (second, fourth, ...) are sealed."""
    def c(name, heads, kv_heads, chunks, contexts, d):
        return varlen_case(name, heads, kv_heads, chunks,
                           [n + ctx for n, ctx in zip(chunks, contexts)], d, True,
                           prefix="chunked")
    return [
        c("c512_ctx8k", 32, 32, [512], [8192], 128),
        c("c1024_ctx16k", 32, 8, [1024], [16384], 128),
        c("c2048_ctx4k", 32, 32, [2048], [4096], 64),
        c("c256_ctx32k", 64, 8, [256], [32768], 128),
        c("c512x4_mixed", 32, 8, [512] * 4, [2048, 6144, 12288, 30000], 128),
        c("c1024_ctx64k", 32, 8, [1024], [65536], 128),
        c("c2048x2_ctx", 16, 16, [2048, 2048], [8192, 24576], 64),
        c("c768_ctx12k", 48, 48, [768], [12288], 64),
    ]


def cumulative(lens, torch):
    return torch.tensor([0] + list(itertools.accumulate(lens)), device="cuda", dtype=torch.int32)


class VarlenCaseRun(measure.CaseRun):
    """measure.CaseRun for a packed batch: its roles call the varlen forward directly."""

    def __init__(self, case, index):  # noqa: super().__init__ builds padded inputs we do not use
        import torch
        self.torch, self.case = torch, case
        p = case["problem"]
        H, d = p["heads"], p["head_dim"]
        HKV = p.get("kv_heads", H)
        self.lens, self.kv_lens = p["seq_lens"], p["seq_kv_lens"]
        g = torch.Generator(device="cuda")
        g.manual_seed(1000 * index + 17)

        def uniform(*shape):  # in [-1, 1), never all zeros
            return torch.rand(shape, device="cuda", dtype=torch.float16, generator=g) * 2 - 1
        self.q = uniform(sum(self.lens), H, d)
        self.k, self.v = uniform(sum(self.kv_lens), HKV, d), uniform(sum(self.kv_lens), HKV, d)
        self.cu_q, self.cu_k = cumulative(self.lens, torch), cumulative(self.kv_lens, torch)
        self.scale = 1.0 / math.sqrt(d)
        self.bwd = False
        self.state = {}
        self.math_setting = None

    def context(self):
        return contextlib.nullcontext()

    def roles(self):
        torch, st, p = self.torch, self.state, self.case["problem"]
        op = torch.ops.aten._flash_attention_forward

        def fwd():
            with torch.no_grad():
                st["out"] = op(self.q, self.k, self.v, self.cu_q, self.cu_k, p["seq"],
                               p["seq_kv"], 0.0, p["causal"], False, scale=self.scale)[0]
        return [("sdpa_fwd", fwd)]

    def check(self):
        """Each sequence's sampled rows against float64, every head; the worst over sequences."""
        torch, p = self.torch, self.case["problem"]
        H, d = p["heads"], p["head_dim"]
        group = H // p.get("kv_heads", H)
        out = self.state["out"]
        got, ref = [], []
        q0 = k0 = 0
        for n, nkv in zip(self.lens, self.kv_lens):
            rows = torch.tensor(measure.sample_rows(n), device="cuda")
            qd = self.q[q0 + rows].double().transpose(0, 1)  # (H, rows, d)
            kd = self.k[k0:k0 + nkv].double().repeat_interleave(group, dim=1).transpose(0, 1)
            vd = self.v[k0:k0 + nkv].double().repeat_interleave(group, dim=1).transpose(0, 1)
            S = (qd @ kd.transpose(1, 2)) * self.scale
            if p["causal"]:  # bottom-right aligned within the sequence
                j = torch.arange(nkv, device="cuda")
                S.masked_fill_((j[None, :] > rows[:, None] + (nkv - n))[None], float("-inf"))
            ref.append((torch.softmax(S, dim=-1) @ vd).transpose(0, 1))
            got.append(out[q0 + rows])
            q0, k0 = q0 + n, k0 + nkv
        max_err, max_ref, rel = measure.errors(torch.cat(got), torch.cat(ref))
        nonfinite = int((~torch.isfinite(out)).sum())
        tol_abs = 1e-3 + 2e-2 * max_ref
        passed = nonfinite == 0 and rel is not None and rel <= 1e-2 and max_err <= tol_abs
        return {"max_abs_error": max_err, "max_abs_reference": max_ref, "rel_l2_error": rel,
                "tolerance_max_abs": tol_abs, "tolerance_rel_l2": 1e-2, "lse_max_abs_error": None,
                "nonfinite_outputs": nonfinite, "passed": bool(passed),
                "reference": "float64 torch on sampled query rows of every sequence, all heads"}
