#!/usr/bin/env python3
"""An independent reliability probe of the iosim CLI (and, when importable, its Python module).

It generates several hundred inputs across every command and flag (bad numbers, odd files,
odd output paths, --set overrides, extreme shapes, signal stops, --max-seconds, stdout to
/dev/full, Python API calls), runs each under a timeout and a memory cap, and classifies what
happened. See README.md in this folder for the classes and how to run it.

    python3 scripts/probe/probe.py --bin build/iosim --jobs 2 --out results.md
    python3 scripts/probe/probe.py --bin build/iosim --only run.num.--batch.hex -v

Only the standard library is used. Everything is written under one temporary folder.
"""
import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import resource
import shlex
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

GIB = 1 << 30
MEM_FLAG = 4 * GIB  # peak RSS above this is "memory"
AS_CAP = 8 * GIB  # address-space cap of every child (a runaway allocation fails, not the host)

CRASH_TEXT = re.compile(
    r"AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|LeakSanitizer|"
    r"terminate called|Segmentation fault|core dumped|Assertion .* failed|Aborted|"
    r"std::terminate|stack smashing|double free|Traceback \(most recent call last\):.*SystemError",
    re.S)

CLASSES = ["crash", "internal", "hang", "destructive", "memory", "stop", "silent",
           "rejected-valid", "misleading", "ok"]


# ----------------------------------------------------------------------------- cases

class Case:
    """One input. argv[0] is the word 'iosim' (replaced by --bin). expect: 'bad' (must exit 2
    with a message naming a needle), 'good' (must exit 0), 'any' (no judgement on 0 vs 2).
    setup: list of (op, name, arg) run in the case's own folder before it runs.
    outputs: names in the case folder the command may legitimately write on success.
    kind: 'normal' | 'signal' | 'devfull' | 'python'."""

    def __init__(self, cid, argv, expect="any", needles=(), setup=(), outputs=(), kind="normal",
                 sig=None, env=None, allow_left=(), note="", timeout=None, stdin=None):
        self.id = cid
        self.argv = list(argv)
        self.expect = expect
        self.needles = [n for n in needles if n is not None and str(n).strip() != ""]
        self.setup = list(setup)
        self.outputs = list(outputs)
        self.kind = kind
        self.sig = sig
        self.env = env or {}
        self.allow_left = list(allow_left)
        self.note = note
        self.timeout = timeout
        self.stdin = stdin


def num_values():
    """(label, text, syntactically_valid_decimal) for integer flags."""
    return [
        ("lead0", "010", True), ("hex", "0x10", False), ("exp309", "1e309", False),
        ("neg0", "-0", True), ("nan", "nan", False), ("inf", "inf", False),
        ("neginf", "-inf", False), ("huge20", "99999999999999999999", False),
        ("int64max", "9223372036854775807", True), ("int64min", "-9223372036854775808", True),
        ("u32p1", "4294967297", True), ("empty", "", False), ("space", " ", False),
        ("lspace", " 8", False), ("tspace", "8 ", False), ("arabic", "\u0661\u0662", False),
        ("fullwidth", "\uff18", False), ("underscore", "1_000", False), ("plus", "+8", True),
        ("frac", "1.5", False), ("exp", "1e3", False), ("neg1", "-1", True), ("zero", "0", True),
        ("trail", "12abc", False), ("newline", "8\n", False), ("octal9", "09", True),
    ]


def float_values():
    return [
        ("lead0", "010", True), ("hex", "0x10", False), ("hexfloat", "0x1p3", False),
        ("exp309", "1e309", False), ("neg0", "-0", True), ("nan", "nan", False),
        ("inf", "inf", True), ("neginf", "-inf", True), ("denorm", "1e-320", True),
        ("empty", "", False), ("space", " ", False), ("arabic", "\u0661", False),
        ("comma", "0,5", False), ("neg1", "-1", True), ("zero", "0", True), ("huge", "1e300", True),
        ("trail", "1.5x", False), ("plus", "+0.5", True), ("dotonly", ".", False),
        ("infinity", "infinity", True), ("nanpay", "nan(0x1)", False),
    ]


# flags of run/explain that take integers: (flag, base argv) -- base gives a fast valid run
RUN_BASE = ["--seq", "256"]
RUN_INT_FLAGS = ["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv",
                 "--block-q", "--block-kv", "--splits", "--page-tokens", "--threads", "--stages",
                 "--backward-block-q", "--backward-block-kv", "--seed"]
RUN_FLOAT_FLAGS = ["--sm-clock-mhz", "--dropout", "--max-seconds"]
# flags where the value 0 is documented as meaningful (default / no limit)
ZERO_OK = {"--seq-kv", "--block-q", "--block-kv", "--splits", "--threads", "--stages", "--seed",
           "--sm-clock-mhz", "--dropout", "--max-seconds", "--max-running", "--shared-prefix-tokens",
           "--weights-bytes", "--time-us", "--max-prompt-tokens", "--max-output-tokens", "--watermark"}
NEG_OK = set()
ALGO_FOR = {"--splits": "flash-decoding", "--page-tokens": "paged",
            "--backward-block-q": "flash3", "--backward-block-kv": "flash3"}

KV_BASE = ["kvcache", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--requests", "50"]
KV_INT_FLAGS = ["--layers", "--kv-heads", "--head-dim", "--block-tokens", "--requests",
                "--max-prompt-tokens", "--max-output-tokens", "--samples",
                "--shared-prefix-tokens", "--prompt-groups", "--max-running", "--seed",
                "--series-points"]
KV_FLOAT_FLAGS = ["--weights-bytes", "--kv-budget-bytes", "--watermark"]

PROFILE_KEYS = {
    "sm": ["count", "boost_clock_mhz", "base_clock_mhz", "smem_per_sm_bytes",
           "smem_per_cta_max_bytes", "smem_reserved_per_cta_bytes", "registers_per_sm",
           "max_registers_per_thread", "max_threads_per_sm", "max_ctas_per_sm",
           "smem_bandwidth_bytes_per_clk", "l2_to_sm_bytes_per_clk", "smem_latency_cycles",
           "setmaxnreg_min_registers", "setmaxnreg_max_registers", "setmaxnreg_step_registers",
           "setmaxnreg_cycles"],
    "compute": ["tensor_fp16_tflops", "tensor_bf16_tflops", "tensor_tf32_tflops",
                "tensor_fp8_tflops", "fp32_tflops", "sfu_ops_per_clk_per_sm",
                "mma_sync_flops_per_clk_per_sm", "int32_ops_per_clk_per_sm",
                "fp32_latency_cycles", "wgmma_latency_cycles"],
    "l2": ["size_bytes", "line_bytes", "sector_bytes", "bandwidth_gbps", "hit_latency_cycles",
           "partitions", "max_dirty_fraction"],
    "hbm": ["capacity_bytes", "bandwidth_gbps", "achievable_fraction", "latency_ns"],
    "launch": ["kernel_overhead_us"],
}


def value_expect(flag, text, valid_syntax, label):
    """What a numeric flag value should give: 'bad' or 'any'."""
    if not valid_syntax:
        return "bad"
    if label in ("neg1", "int64min", "neginf") and flag not in NEG_OK:
        return "bad"
    if label in ("zero", "neg0") and flag not in ZERO_OK:
        return "bad"
    return "any"


def gen_numbers(cases):
    for flag in RUN_INT_FLAGS:
        for label, text, ok in num_values():
            for cmd in ("run",):
                base = ["iosim", cmd] + (RUN_BASE if flag != "--seq" else [])
                if flag in ALGO_FOR:
                    base += ["--algo", ALGO_FOR[flag]]
                if flag == "--backward-block-q" or flag == "--backward-block-kv":
                    base += ["--pass", "fwdbwd"]
                if flag == "--page-tokens" and label in ("int64max", "u32p1"):
                    pass
                exp = value_expect(flag, text, ok, label)
                if flag == "--seed" and label in ("neg0",):
                    exp = "any"
                cases.append(Case(f"{cmd}.num.{flag}.{label}", base + [flag, text], exp,
                                  needles=[flag, text.strip()]))
    for flag in RUN_FLOAT_FLAGS:
        for label, text, ok in float_values():
            exp = value_expect(flag, text, ok, label)
            if flag == "--dropout" and label in ("inf", "infinity", "huge", "lead0", "neg1", "neginf"):
                exp = "bad"
            if flag == "--sm-clock-mhz" and label in ("inf", "infinity", "huge", "denorm", "neg1",
                                                       "neginf", "lead0"):
                exp = "bad" if label != "lead0" else "any"
            if flag == "--max-seconds" and label in ("neg1", "neginf", "denorm"):
                exp = "bad" if label != "denorm" else "any"
            cases.append(Case(f"run.num.{flag}.{label}", ["iosim", "run"] + RUN_BASE + [flag, text],
                              exp, needles=[flag, text.strip()]))
    # explain: a subset of flags and values
    ex_vals = [v for v in num_values() if v[0] in ("lead0", "hex", "nan", "empty", "arabic", "neg1",
                                                  "zero", "int64max", "huge20", "frac")]
    for flag in ["--batch", "--heads", "--head-dim", "--seq", "--seq-kv", "--block-q",
                 "--block-kv", "--step", "--until", "--threads", "--stages", "--kv-heads"]:
        for label, text, ok in ex_vals:
            base = ["iosim", "explain", "--no-color"] + (["--seq", "32"] if flag != "--seq" else [])
            exp = value_expect(flag, text, ok, label)
            if flag in ("--step", "--until") and label in ("zero", "neg0"):
                exp = "bad"
            if label == "int64max" and flag in ("--batch", "--heads", "--head-dim", "--seq",
                                                "--seq-kv", "--kv-heads"):
                exp = "bad"  # explain's documented size limits
            cases.append(Case(f"explain.num.{flag}.{label}", base + [flag, text], exp,
                              needles=[flag, text.strip()]))
    # demo
    for flag in ["--batch", "--heads", "--head-dim", "--seq"]:
        for label, text, ok in ex_vals:
            base = ["iosim", "demo"] + (["--seq", "512"] if flag != "--seq" else [])
            exp = value_expect(flag, text, ok, label)
            cases.append(Case(f"demo.num.{flag}.{label}", base + [flag, text], exp,
                              needles=[flag, text.strip()]))
    # kvcache
    kv_vals = [v for v in num_values() if v[0] in ("lead0", "hex", "exp309", "nan", "empty",
                                                  "space", "arabic", "neg1", "zero", "int64max",
                                                  "huge20", "frac", "u32p1")]
    for flag in KV_INT_FLAGS:
        for label, text, ok in kv_vals:
            args = list(KV_BASE)
            if flag in args:
                i = args.index(flag)
                del args[i:i + 2]
            exp = value_expect(flag, text, ok, label)
            to = None
            cases.append(Case(f"kvcache.num.{flag}.{label}", ["iosim"] + args + [flag, text], exp,
                              needles=[flag, text.strip()], timeout=to))
    for flag in KV_FLOAT_FLAGS:
        for label, text, ok in float_values():
            args = ["iosim"] + list(KV_BASE)
            exp = value_expect(flag, text, ok, label)
            if label in ("inf", "infinity", "neginf", "neg1", "denorm"):
                exp = "bad"
            if flag == "--watermark" and label in ("huge", "lead0"):
                exp = "bad"
            if flag == "--watermark" and label == "denorm":
                exp = "any"
            if flag == "--kv-budget-bytes" and label in ("zero", "neg0"):
                exp = "bad"
            cases.append(Case(f"kvcache.num.{flag}.{label}", args + [flag, text], exp,
                              needles=[flag, text.strip()]))
    # validate --ncu numeric flags and --time-us
    for label, text, ok in float_values():
        exp = value_expect("--time-us", text, ok, label)
        if label in ("inf", "infinity", "neginf", "neg1", "zero", "neg0", "denorm", "huge"):
            exp = "bad"
        cases.append(Case(f"validate.num.--time-us.{label}",
                          ["iosim", "validate", "--ncu", "{FX}/ncu.csv", "--kernel", "{FX}/wg1.yaml",
                           "--seq", "4096", "--batch", "4", "--heads", "16", "--head-dim", "128",
                           "--time-us", text], exp, needles=["--time-us", text.strip()]))
    # sweep: lists and ranges
    sweep_vals = [
        ("hex", "0x10", "bad"), ("lead0", "0128", "any"), ("nan", "nan", "bad"), ("empty", "", "bad"),
        ("comma", ",", "bad"), ("dblcomma", "128,,256", "bad"), ("trailcomma", "128,", "bad"),
        ("rev", "512:64:x2", "bad"), ("x1", "64:512:x1", "bad"), ("x0", "64:512:x0", "bad"),
        ("plus0", "64:512:+0", "bad"), ("plusneg", "64:512:+-64", "bad"), ("xneg", "64:512:x-2", "bad"),
        ("xfrac", "64:512:x1.5", "any"), ("x1e-9", "64:512:x1.000000001", "bad"),
        ("fourparts", "1:2:3:4", "bad"), ("colon", ":", "bad"), ("nostep", "64:512", "any"),
        ("hugecount", "1:100000000:+1", "bad"), ("exp", "1e3", "bad"), ("neg", "-64", "bad"),
        ("dup", "128,128", "any"), ("huge", "18446744073709551616", "bad"),
        ("unicode", "\u0661\u0662\u0668", "bad"), ("space", "128, 256", "any"),
        ("int64max", "9223372036854775807", "any"), ("rangeovf", "1:9223372036854775807:x2", "any"),
        ("plusovf", "9223372036854775800:9223372036854775807:+100", "any"),
        ("stepword", "64:512:*2", "bad"), ("zero", "0", "bad"),
    ]
    for label, text, exp in sweep_vals:
        cases.append(Case(f"sweep.list.--seq.{label}", ["iosim", "sweep", "--seq", text], exp,
                          needles=["--seq", text.strip()], timeout=30))
    for flag in ["--batch", "--head-dim", "--dropout", "--sm-clock-mhz", "--block-q", "--splits",
                 "--page-tokens", "--kv-heads", "--threads"]:
        for label, text, exp in [("hex", "0x10", "bad"), ("nan", "nan", "bad"), ("neg", "-1", "bad"),
                                 ("empty", "", "bad"), ("rev", "8:1:x2", "bad"),
                                 ("inf", "inf", "bad"), ("range", "1:4:+1", "any")]:
            base = ["iosim", "sweep", "--seq", "128"]
            if flag in ALGO_FOR:
                base += ["--algo", ALGO_FOR[flag]]
            if flag == "--dropout" and label == "range":
                text = "0:0.5:+0.25"
            cases.append(Case(f"sweep.list.{flag}.{label}", base + [flag, text], exp,
                              needles=[flag, text.strip()]))
    for label, text, exp in [("zero", "0", "any"), ("neg", "-1", "bad"), ("huge", "100000", "any"),
                             ("hex", "0x2", "bad"), ("empty", "", "bad")]:
        cases.append(Case(f"sweep.--jobs.{label}", ["iosim", "sweep", "--seq", "128,256", "-j", text],
                          exp, needles=["--jobs", "-j", text]))
    for label, text, exp in [("zero", "0/1", "bad"), ("over", "2/1", "bad"), ("div0", "1/0", "bad"),
                             ("word", "a/b", "bad"), ("three", "1/2/3", "bad"), ("noslash", "1", "bad"),
                             ("big", "1/1000000000", "any"), ("neg", "-1/2", "bad"),
                             ("empty", "", "bad"), ("hex", "0x1/2", "bad"), ("space", " 1/2", "bad")]:
        cases.append(Case(f"sweep.--shard.{label}", ["iosim", "sweep", "--seq", "128,256",
                                                     "--shard", text], exp,
                          needles=["--shard", text.strip()]))


def gen_enums(cases):
    bad_words = [("empty", ""), ("upper", "FLASH2"), ("tspace", "flash2 "), ("nl", "flash2\n"),
                 ("unicode", "fl\u0430sh2"), ("long", "x" * 100000), ("dash", "-"),
                 ("nul_like", "flash2\\0")]
    for flag, good in [("--algo", "flash2"), ("--dtype", "fp16"), ("--pass", "fwd"), ("--l2", "on"),
                       ("--warpgroups", "pingpong"), ("--pack-gqa", "on"), ("--format", "json")]:
        for label, w in bad_words:
            w2 = w.replace("flash2", good)
            base = ["iosim", "run", "--seq", "256"]
            if flag == "--warpgroups":
                base += ["--algo", "flash3"]
            cases.append(Case(f"run.enum.{flag}.{label}", base + [flag, w2], "bad",
                              needles=[flag, w2.strip()[:40]]))
    for flag in ["--algo", "--dtype", "--pass", "--format"]:
        for label, w in bad_words[:5]:
            cases.append(Case(f"sweep.enum.{flag}.{label}", ["iosim", "sweep", "--seq", "128", flag, w],
                              "bad", needles=[flag, w.strip()]))
    combos = [
        ("fp8_flash2", ["--dtype", "fp8", "--algo", "flash2"], "bad"),
        ("fp8_bwd", ["--dtype", "fp8", "--algo", "flash3", "--pass", "bwd"], "bad"),
        ("warpgroups_flash2", ["--warpgroups", "pingpong"], "bad"),
        ("pattern_flash2", ["--pattern", "local:2"], "bad"),
        ("splits_flash2", ["--splits", "4"], "bad"),
        ("pagetok_flash2", ["--page-tokens", "32"], "bad"),
        ("bwdbq_flash2", ["--backward-block-q", "64"], "bad"),
        ("kernel_and_algo", ["--kernel", "flash2", "--algo", "flash1"], "bad"),
        ("kvheads_nodiv", ["--heads", "6", "--kv-heads", "4"], "bad"),
        ("kvheads_more", ["--heads", "4", "--kv-heads", "8"], "bad"),
        ("decoding_bwd", ["--algo", "flash-decoding", "--pass", "bwd"], "bad"),
        ("paged_bwd", ["--algo", "paged", "--pass", "fwdbwd"], "bad"),
        ("dropout_one", ["--dropout", "1"], "bad"),
        ("dropout_0.999999", ["--dropout", "0.999999"], "any"),
        ("causal_seqkv_small", ["--causal", "--seq-kv", "16"], "any"),
        ("blocktable_flash2", ["--block-table", "{FX}/bt.txt"], "bad"),
        ("pack_gqa_nogqa", ["--pack-gqa", "on"], "any"),
        ("fp32_flash3", ["--dtype", "fp32", "--algo", "flash3"], "any"),
        ("l2off_coldl2", ["--l2", "off", "--cold-l2"], "any"),
        ("repeat_seq", ["--seq", "512"], "any"),
        ("format_md", ["--format", "md"], "bad"),
        ("unknown_flag", ["--sequence", "12"], "bad"),
        ("positional", ["extra"], "bad"),
        ("eq_empty", ["--batch="], "bad"),
        ("double_dash", ["--", "--batch", "2"], "bad"),
    ]
    for label, extra, exp in combos:
        needles = [x.split("=")[0] for x in extra if x.startswith("--")] + [x for x in extra if not x.startswith("-")]
        cases.append(Case(f"run.combo.{label}", ["iosim", "run", "--seq", "256"] + extra, exp,
                          needles=needles))
    # patterns
    pats = [("local0", "local:0", "bad"), ("localneg", "local:-1", "bad"), ("localhuge", "local:1e9", "bad"),
            ("localbig", "local:99999999999", "any"), ("strided0", "strided:0", "bad"),
            ("random2", "random:2:1", "bad"), ("randomnan", "random:nan:1", "bad"),
            ("randomneg", "random:-0.1:1", "bad"), ("random_noseed", "random:0.5", "bad"),
            ("random_extra", "random:0.5:1:2", "bad"), ("random0", "random:0:1", "any"),
            ("causal1", "causal:1", "bad"), ("file_empty", "file:", "bad"),
            ("file_missing", "file:/nonexistent/p.txt", "bad"), ("file_devzero", "file:/dev/zero", "bad"),
            ("unknown", "diagonal", "bad"), ("empty", "", "bad"), ("local_space", "local: 2", "bad"),
            ("local_hex", "local:0x2", "bad"), ("colon", ":", "bad"), ("randomseedneg", "random:0.5:-1", "bad"),
            ("randominf", "random:inf:1", "bad"), ("random1", "random:1:1", "any")]
    for label, p, exp in pats:
        cases.append(Case(f"run.pattern.{label}", ["iosim", "run", "--algo", "block-sparse", "--seq",
                                                   "1024", "--pattern", p], exp,
                          needles=["--pattern", p.split(":")[-1] or p]))
    # kvcache distributions and arrivals
    dists = [("const0", "const:0", "any"), ("constneg", "const:-1", "bad"), ("constempty", "const:", "bad"),
             ("constbig", "const:1000000000000000000", "any"), ("uniform_rev", "uniform:10,5", "bad"),
             ("normal_negstd", "normal:5,-1", "bad"), ("lognormal_huge", "lognormal:5,1e308", "any"),
             ("lognormal_mu1000", "lognormal:1000,1", "any"), ("normal_nan", "normal:nan,1", "bad"),
             ("uniform_int64", "uniform:1,9223372036854775807", "any"), ("const_frac", "const:1.5", "bad"),
             ("unknown", "zipf:1", "bad"), ("empty", "", "bad"), ("noargs", "normal:", "bad"),
             ("onearg", "uniform:5", "bad"), ("three", "normal:1,2,3", "bad"),
             ("inf", "const:inf", "bad"), ("hex", "const:0x10", "bad"), ("normal_inf", "normal:inf,1", "bad"),
             ("lognormal_neg_sigma", "lognormal:5,-1", "bad"), ("space", "const: 5", "any")]
    for which in ("--prompt-len", "--output-len"):
        for label, d, exp in dists:
            if which == "--output-len" and label == "const0":
                exp = "any"
            cases.append(Case(f"kvcache.dist.{which}.{label}", ["iosim"] + KV_BASE + [which, d], exp,
                              needles=[which, d.split(":")[-1] or d]))
    arr = [("p0", "poisson:0", "bad"), ("pneg", "poisson:-1", "bad"), ("pnan", "poisson:nan", "bad"),
           ("pinf", "poisson:inf", "bad"), ("ptiny", "poisson:1e-300", "any"), ("phuge", "poisson:1e300", "any"),
           ("pempty", "poisson:", "bad"), ("burst1", "burst:1", "bad"), ("unknown", "uniform", "bad"),
           ("empty", "", "bad"), ("p_hex", "poisson:0x1", "bad"), ("psmall", "poisson:1e-9", "any")]
    for label, a, exp in arr:
        cases.append(Case(f"kvcache.arrivals.{label}", ["iosim"] + KV_BASE + ["--arrivals", a], exp,
                          needles=["--arrivals", a.split(":")[-1] or a]))
    for label, extra, exp in [
            ("policy_bad", ["--policy", "Paged"], "bad"), ("policy_empty", ["--policy", ""], "bad"),
            ("dtype_int8", ["--dtype", "int8"], "bad"), ("format_md", ["--format", "md"], "bad"),
            ("budget_and_weights", ["--kv-budget-bytes", "1e9", "--weights-bytes", "1e9"], "bad"),
            ("budget_and_profile", ["--kv-budget-bytes", "1e9", "--profile", "a100-sxm4-40gb"], "bad"),
            ("weights_all", ["--weights-bytes", "1e11"], "bad"),
            ("budget_tiny", ["--kv-budget-bytes", "1"], "any"),
            ("prefix_gt_max", ["--shared-prefix-tokens", "5000", "--max-prompt-tokens", "100"], "any"),
            ("watermark_1", ["--watermark", "1"], "bad"),
            ("groups_gt_requests", ["--prompt-groups", "1000000"], "any"),
            ("series_points0", ["--series-points", "0", "--series"], "any"),
            ("trace_and_requests", ["--trace", "{FX}/trace.csv"], "bad"),
            ("profile_missing", ["--profile", "h100"], "bad"),
            ("samples_huge", ["--samples", "1000000"], "any"),
            ("block_tokens_huge", ["--block-tokens", "1000000000000"], "any"),
    ]:
        needles = extra
        cases.append(Case(f"kvcache.combo.{label}", ["iosim"] + KV_BASE + extra, exp, needles=needles))
    # explain specific
    for label, extra, exp in [
            ("focus_neg", ["--focus", "cta:-1"], "bad"), ("focus_huge", ["--focus", "cta:99999999999999999999"], "bad"),
            ("focus_empty", ["--focus", "cta:"], "bad"), ("focus_word", ["--focus", "warp:1"], "bad"),
            ("focus_outside", ["--focus", "cta:1000"], "bad"), ("focus_hex", ["--focus", "cta:0x1"], "bad"),
            ("compare_one", ["--compare", "flash2"], "bad"), ("compare_three", ["--compare", "flash1,flash2,standard"], "bad"),
            ("compare_same", ["--compare", "flash2,flash2"], "any"), ("compare_empty", ["--compare", ","], "bad"),
            ("compare_bad", ["--compare", "flash2,flash9"], "bad"), ("step_huge", ["--step", "1000000"], "bad"),
            ("until_lt_step", ["--step", "5", "--until", "2"], "bad"),
            ("seq65", ["--seq", "65"], "bad"), ("d17", ["--head-dim", "17"], "bad"),
            ("bh5", ["--batch", "5"], "bad"), ("bh_heads", ["--heads", "2", "--batch", "3"], "bad"),
            ("execute_bwd", ["--execute", "--pass", "fwdbwd"], "any"),
            ("compare_execute", ["--compare", "standard,flash1", "--execute"], "any"),
            ("flash3_fp8", ["--algo", "flash3", "--dtype", "fp8"], "any"),
            ("paged", ["--algo", "paged", "--seq", "1", "--seq-kv", "64"], "any"),
            ("blocksparse_file", ["--algo", "block-sparse", "--pattern", "file:{FX}/pattern.txt"], "any"),
    ]:
        needles = extra + ["pattern file"]
        cases.append(Case(f"explain.combo.{label}", ["iosim", "explain", "--no-color", "--seq", "32"] + extra,
                          exp, needles=needles))
    # profiles / kernels / top level
    for label, argv, exp in [
            ("profiles_show_missing", ["profiles", "--show", "h100"], "bad"),
            ("profiles_show_empty", ["profiles", "--show", ""], "bad"),
            ("profiles_show_path", ["profiles", "--show", "{FX}/profile.yaml"], "any"),
            ("profiles_show_traversal", ["profiles", "--show", "../../etc/passwd"], "bad"),
            ("profiles_show_and_template", ["profiles", "--show", "h100-sxm5-80gb", "--template"], "any"),
            ("kernels_show_missing", ["kernels", "--show", "flash9"], "bad"),
            ("kernels_show_empty", ["kernels", "--show", ""], "bad"),
            ("kernels_show_traversal", ["kernels", "--show", "../flash2"], "bad"),
            ("no_args", [], "bad"), ("unknown_cmd", ["frobnicate"], "bad"), ("version_extra", ["--version", "x"], "any"),
            ("run_no_seq", ["run"], "bad"), ("report_no_args", ["report"], "bad"),
            ("validate_no_args", ["validate"], "bad"), ("kvcache_no_args", ["kvcache"], "bad"),
            ("validate_ncu_no_kernel", ["validate", "--ncu", "{FX}/ncu.csv", "--seq", "4096"], "bad"),
            ("validate_ncu_and_positional", ["validate", "--ncu", "{FX}/ncu.csv", "--kernel", "{FX}/wg1.yaml",
                                             "--seq", "4096", "{FX}/meas.json"], "bad"),
            ("validate_ncu_no_seq", ["validate", "--ncu", "{FX}/ncu.csv", "--kernel", "{FX}/wg1.yaml"], "bad"),
            ("validate_format_bad", ["validate", "{FX}/meas.json", "--format", "xml"], "bad"),
            ("validate_profile_bad", ["validate", "{FX}/meas.json", "--profile", "nope"], "bad"),
            ("validate_seq_without_ncu", ["validate", "{FX}/meas.json", "--seq", "4096"], "bad"),
            ("validate_same_file_twice", ["validate", "{FX}/meas.json", "{FX}/meas.json"], "any"),
            ("sweep_no_seq", ["sweep"], "bad"), ("sweep_resume_no_out", ["sweep", "--seq", "128", "--resume"], "bad"),
            ("sweep_format_csv_with_json_out", ["sweep", "--seq", "128", "--format", "csv", "-o", "x.json"], "any"),
            ("sweep_out_ext_txt", ["sweep", "--seq", "128", "-o", "x.txt"], "bad"),
            ("sweep_out_noext", ["sweep", "--seq", "128", "-o", "x"], "bad"),
            ("sweep_set_list", ["sweep", "--seq", "128", "--set", "l2.size_bytes=10e6,20e6"], "good"),
            ("sweep_set_range_huge", ["sweep", "--seq", "128", "--set", "l2.size_bytes=1e6:1e12:+1"], "bad"),
            ("sweep_set_range_x1", ["sweep", "--seq", "128", "--set", "l2.size_bytes=1e6:1e7:x1"], "bad"),
            ("sweep_set_same_key_twice", ["sweep", "--seq", "128", "--set", "l2.size_bytes=10e6",
                                          "--set", "l2.size_bytes=20e6"], "bad"),
            ("sweep_points_limit", ["sweep", "--seq", "1:10000", "--batch", "1:1001"], "bad"),
            ("sweep_product_overflow", ["sweep", "--seq", "1:100000", "--batch", "1:100000",
                                        "--heads", "1:100000", "--head-dim", "1:100000"], "bad"),
            ("report_html_md_same", ["report", "{FX}/sweep.json", "--md", "o.md", "--html", "o.md"], "bad"),
            ("report_validation_profile_bad", ["report", "{FX}/sweep.json", "--validation", "{FX}/meas.json",
                                               "--validation-profile", "nope"], "bad"),
            ("report_vprofile_without_validation", ["report", "{FX}/sweep.json", "--validation-profile",
                                                    "h100-sxm5-80gb"], "bad"),
            ("report_same_sweep_twice", ["report", "{FX}/sweep.json", "{FX}/sweep.json"], "any"),
            ("report_two_profiles", ["report", "{FX}/sweep.json", "{FX}/sweep_a100.json"], "any"),
            ("report_sweep_is_measurements", ["report", "{FX}/meas.json"], "bad"),
            ("report_sweep_is_profile", ["report", "{FX}/profile.yaml"], "bad"),
            ("report_csv_sweep", ["report", "{FX}/sweep.csv"], "any"),
            ("validate_sweep_as_meas", ["validate", "{FX}/sweep.json"], "bad"),
    ]:
        needles = [x for x in argv[1:] if not x.startswith("{")]
        cases.append(Case(f"misc.{label}", ["iosim"] + argv, exp, needles=needles,
                          outputs=["x.json", "x.txt", "x", "o.md"], timeout=40))


# file fixtures: name -> how to make it (in the shared fixture dir)
def make_fixtures(fx, binary):
    os.makedirs(fx, exist_ok=True)

    def sh(args, out):
        r = subprocess.run([binary] + args, capture_output=True, timeout=60, cwd=fx)
        with open(os.path.join(fx, out), "wb") as f:
            f.write(r.stdout)

    sh(["profiles", "--show", "h100-sxm5-80gb"], "profile.yaml")
    sh(["kernels", "--show", "flash2"], "kernel.yaml")
    subprocess.run([binary, "sweep", "--seq", "128,256", "--algo", "flash1,flash2", "-o",
                    os.path.join(fx, "sweep.json")], capture_output=True, timeout=60)
    subprocess.run([binary, "sweep", "--seq", "128,256", "--profile", "a100-sxm4-40gb", "-o",
                    os.path.join(fx, "sweep_a100.json")], capture_output=True, timeout=60)
    subprocess.run([binary, "sweep", "--seq", "128,256", "-o", os.path.join(fx, "sweep.csv")],
                   capture_output=True, timeout=60)
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    copies = {"meas.json": "tests/data/measurements_small.json",
              "trace.csv": "tests/data/kvcache/trace.csv",
              "pattern.txt": "tests/data/patterns/diag4.txt",
              "bt.txt": "tests/data/block_tables/two_by_three.txt",
              "ncu.csv": "tests/data/kernels/ncu_wg1_h100.csv",
              "wg1.yaml": "tests/data/kernels/wg1_tma_case.yaml"}
    for dst, src in copies.items():
        with open(os.path.join(repo, src), "rb") as f, open(os.path.join(fx, dst), "wb") as g:
            g.write(f.read())
    with open(os.path.join(fx, "chart.js"), "w") as f:
        f.write("/* tiny stand-in */ window.Chart = function(){};\n")


# file variants, written into the case folder: (label, setup ops, expect, path-in-case)
def file_variants(base_name, base_path):
    """Odd versions of the file kind whose valid instance is base_path (absolute)."""
    with open(base_path, "rb") as f:
        good = f.read()
    ext = os.path.splitext(base_name)[1]
    n = "in" + ext
    v = [
        ("missing", [], "bad", "does_not_exist" + ext),
        ("directory", [("mkdir", n, None)], "bad", n),
        ("fifo", [("mkfifo", n, None)], "bad", n),
        ("devzero", [], "bad", "/dev/zero"),
        ("devnull", [], "bad", "/dev/null"),
        ("devurandom", [], "bad", "/dev/urandom"),
        ("procself", [], "bad", "/proc/self/mem"),
        ("symloop", [("symlink", n, n)], "bad", n),
        ("symloop2", [("symlink", "a" + ext, "b" + ext), ("symlink", "b" + ext, "a" + ext)], "bad", "a" + ext),
        ("dangling", [("symlink", "nowhere" + ext, n)], "bad", n),
        ("symlink_ok", [("write", "real" + ext, good), ("symlink", "real" + ext, n)], "good", n),
        ("empty", [("write", n, b"")], "bad", n),
        ("huge_sparse", [("sparse", n, 300 << 20)], "bad", n),
        ("sparse_2m", [("sparse", n, 2 << 20)], "bad", n),
        ("junk", [("write", n, bytes((i * 131 + 7) % 256 for i in range(4096)))], "bad", n),
        ("badutf8", [("write", n, good[: len(good) // 3] + b"\xff\xfe\xc3\x28" + good[len(good) // 3:])], "any", n),
        ("nul", [("write", n, good[: len(good) - 3] + b"\x00" + good[len(good) - 3:])], "bad", n),
        ("nul_only", [("write", n, b"\x00" * 1000)], "bad", n),
        ("trunc10", [("write", n, good[: max(1, len(good) // 10)])], "bad", n),
        ("trunc50", [("write", n, good[: len(good) // 2])], "bad", n),
        ("trunc99", [("write", n, good[: len(good) - 3])], "any", n),
        ("bom", [("write", n, b"\xef\xbb\xbf" + good)], "any", n),
        ("crlf", [("write", n, good.replace(b"\n", b"\r\n"))], "any", n),
        ("cr_only", [("write", n, good.replace(b"\n", b"\r"))], "any", n),
        ("utf16", [("write", n, good.decode("utf-8", "replace").encode("utf-16"))], "bad", n),
        ("longline", [("write", n, b"1" * (20 << 20))], "bad", n),
        ("newline_in_name", [("write", "a\nb" + ext, good)], "good", "a\nb" + ext),
        ("dash_name", [("write", "-" + ext, good)], "any", "-" + ext),
        ("doubled", [("write", n, good + b"\n" + good)], "any", n),
        ("gzip", [("gzip", n, good)], "bad", n),
    ]
    if ext in (".json",):
        v += [("deep_array", [("write", n, b"[" * 200000 + b"]" * 200000)], "bad", n),
              ("deep_object", [("write", n, b'{"a":' * 100000 + b"1" + b"}" * 100000)], "bad", n),
              ("json_number_huge", [("write", n, re.sub(rb"(\d+)\.(\d+)", rb"1e999", good, count=5))], "bad", n),
              ("json_negative", [("write", n, re.sub(rb": (\d+)", rb": -\1", good, count=40))], "bad", n),
              ("json_top_array", [("write", n, b"[]")], "bad", n),
              ("json_top_null", [("write", n, b"null")], "bad", n),
              ("json_strings", [("write", n, re.sub(rb": (\d+)", rb': "\1"', good, count=40))], "bad", n),
              ("json_dupkey", [("write", n, good.replace(b"{", b'{"format": "x", ', 1))], "bad", n)]
    if ext in (".yaml",):
        v += [("deep_flow", [("write", n, b"a: " + b"[" * 100000 + b"]" * 100000)], "bad", n),
              ("deep_block", [("write", n, "".join("  " * i + f"k{i}:\n" for i in range(3000)).encode())], "bad", n),
              ("anchor", [("write", n, b"x: &a [1]\ny: *a\n" + good)], "bad", n),
              ("tabs", [("write", n, good.replace(b"  ", b"\t"))], "bad", n),
              ("yaml_multi_doc", [("write", n, good + b"\n---\n" + good)], "bad", n),
              ("yaml_tag", [("write", n, b"!!python/object:os.system x\n" + good)], "bad", n),
              ("num_inf", [("write", n, re.sub(rb"value: [0-9.e+]+", b"value: .inf", good, count=3))], "bad", n),
              ("num_nan", [("write", n, re.sub(rb"value: [0-9.e+]+", b"value: .nan", good, count=3))], "bad", n),
              ("num_1e309", [("write", n, re.sub(rb"value: [0-9.e+]+", b"value: 1e309", good, count=3))], "bad", n),
              ("num_hex", [("write", n, re.sub(rb"value: [0-9]+\b", b"value: 0x10", good, count=3))], "bad", n),
              ("num_neg", [("write", n, re.sub(rb"value: [0-9.e+]+", b"value: -5", good, count=3))], "bad", n)]
    data_lines = [ln for ln in good.splitlines() if ln.strip() and not ln.startswith(b"#")]
    head = b"\n".join(ln for ln in good.splitlines() if ln.startswith(b"#"))

    def on_data(fn):
        body = b"\n".join(data_lines) + b"\n"
        return (head + b"\n" if head else b"") + fn(body)

    if ext in (".csv", ".txt"):
        v += [("hugenum", [("write", n, on_data(lambda b: re.sub(rb"\b\d+\b", b"99999999999999999999999", b)))], "bad", n),
              ("negnum", [("write", n, on_data(lambda b: re.sub(rb"\b(\d+)\b", rb"-\1", b)))], "bad", n),
              ("many_lines", [("write", n, good + b"\n".join([good.splitlines()[-1]] * 200000))], "any", n),
              ("only_comment", [("write", n, b"# nothing\n")], "bad", n),
              ("nanfield", [("write", n, on_data(lambda b: re.sub(rb"\b\d+\b", b"nan", b, count=4)))], "bad", n),
              ("hex", [("write", n, on_data(lambda b: re.sub(rb"\b(\d+)\b", rb"0x\1", b, count=6)))], "bad", n),
              ("spaces_only", [("write", n, b"   \n\t\n")], "bad", n)]
    keep = []
    for label, setup, exp, path in v:
        if setup and setup[-1][0] == "write" and setup[-1][2] == good and label not in (
                "symlink_ok", "newline_in_name", "dash_name"):
            continue  # the mutation changed nothing in this kind of file
        keep.append((label, setup, exp, path))
    return keep


def gen_files(cases, fx):
    surfaces = [
        # (surface id, fixture name, argv builder taking the path)
        ("run.--profile", "profile.yaml", lambda p: ["run", "--seq", "256", "--profile", p], "--profile"),
        ("kvcache.--profile", "profile.yaml", lambda p: KV_BASE + ["--profile", p], "--profile"),
        ("run.--kernel", "kernel.yaml", lambda p: ["run", "--seq", "256", "--kernel", p], "--kernel"),
        ("run.--pattern", "pattern.txt",
         lambda p: ["run", "--algo", "block-sparse", "--seq", "512", "--block-q", "128", "--block-kv", "128",
                    "--pattern", "file:" + p], "--pattern"),
        ("run.--block-table", "bt.txt",
         lambda p: ["run", "--algo", "paged", "--seq", "1", "--seq-kv", "48", "--batch", "2",
                    "--block-table", p], "--block-table"),
        ("kvcache.--trace", "trace.csv",
         lambda p: ["kvcache", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--trace", p], "--trace"),
        ("validate.measured", "meas.json", lambda p: ["validate", p], "validate"),
        ("validate.--ncu", "ncu.csv",
         lambda p: ["validate", "--ncu", p, "--kernel", "{FX}/wg1.yaml", "--seq", "4096", "--batch", "4",
                    "--heads", "16", "--head-dim", "128", "--time-us", "500"], "--ncu"),
        ("report.sweeps", "sweep.json", lambda p: ["report", p], "report"),
        ("report.--validation", "meas.json", lambda p: ["report", "{FX}/sweep.json", "--validation", p],
         "--validation"),
        ("report.--chartjs", "chart.js", lambda p: ["report", "{FX}/sweep.json", "--html", "out.html",
                                                    "--chartjs", p], "--chartjs"),
    ]
    for sid, fname, build, flag in surfaces:
        for label, setup, exp, path in file_variants(fname, os.path.join(fx, fname)):
            if sid == "report.--chartjs" and label in ("badutf8", "nul", "trunc50", "trunc10", "trunc99", "bom",
                                                       "crlf", "cr_only", "doubled", "junk", "utf16", "longline"):
                exp = "any"  # Chart.js is inlined as given: content is not checked
            if sid == "run.--pattern" and label in ("trunc50", "trunc10"):
                exp = "any"  # a shorter grid may still be a grid; judged by hand
            argv = ["iosim"] + build(path)
            cases.append(Case(f"file.{sid}.{label}", argv, exp, needles=[flag, os.path.basename(path)],
                              setup=setup, outputs=["out.html"], timeout=30))
    # IOSIM_CHARTJS
    for label, val, exp in [("missing", "/nonexistent.js", "bad"), ("dir", "/tmp", "bad"),
                            ("devzero", "/dev/zero", "bad"), ("empty", "", "any")]:
        cases.append(Case(f"file.env.IOSIM_CHARTJS.{label}", ["iosim", "report", "{FX}/sweep.json", "--html",
                                                              "out.html"], exp, needles=["IOSIM_CHARTJS", val],
                          env={"IOSIM_CHARTJS": val}, outputs=["out.html"]))
    # semantic mutations of the measured data and sweep file
    with open(os.path.join(fx, "meas.json")) as f:
        meas = json.load(f)
    with open(os.path.join(fx, "sweep.json")) as f:
        sw = json.load(f)

    def mutate(doc, fn):
        d = json.loads(json.dumps(doc))
        fn(d)
        return json.dumps(d).encode()

    def first_case(d):
        for k in ("cases", "results", "measurements"):
            if isinstance(d.get(k), list) and d[k]:
                return d[k][0]
        return None

    def set_all_numbers(obj, val, limit=[0]):
        if isinstance(obj, dict):
            for k in obj:
                if isinstance(obj[k], (int, float)) and not isinstance(obj[k], bool):
                    obj[k] = val
                else:
                    set_all_numbers(obj[k], val)
        elif isinstance(obj, list):
            for i in range(len(obj)):
                if isinstance(obj[i], (int, float)) and not isinstance(obj[i], bool):
                    obj[i] = val
                else:
                    set_all_numbers(obj[i], val)

    meas_muts = [
        ("version99", lambda d: d.__setitem__("version", 99)),
        ("format_wrong", lambda d: d.__setitem__("format", "iosim-sweep")),
        ("no_format", lambda d: d.pop("format", None)),
        ("all_numbers_neg", lambda d: set_all_numbers(d, -1)),
        ("all_numbers_zero", lambda d: set_all_numbers(d, 0)),
        ("all_numbers_huge", lambda d: set_all_numbers(d, 1e300)),
        ("all_numbers_big_int", lambda d: set_all_numbers(d, 2 ** 70)),
        ("all_numbers_frac", lambda d: set_all_numbers(d, 0.5)),
        ("all_numbers_str", lambda d: set_all_numbers(d, "12")),
        ("all_numbers_null", lambda d: set_all_numbers(d, None)),
        ("device_missing", lambda d: d.pop("device", None)),
        ("device_name_weird", lambda d: d["device"].__setitem__("name", "../../../etc/passwd")),
    ]
    for k in list(meas.keys()):
        if isinstance(meas[k], list):
            meas_muts.append((f"{k}_empty", lambda d, k=k: d.__setitem__(k, [])))
            meas_muts.append((f"{k}_x20", lambda d, k=k: d.__setitem__(k, d[k] * 20)))
            meas_muts.append((f"{k}_item_null", lambda d, k=k: d.__setitem__(k, [None])))
    for label, fn in meas_muts:
        try:
            data = mutate(meas, fn)
        except Exception:
            continue
        exp = "any" if label.endswith("_x20") or label == "device_name_weird" else "bad"
        for sid, build in [("validate", lambda p: ["validate", p]),
                           ("report", lambda p: ["report", "{FX}/sweep.json", "--validation", p])]:
            cases.append(Case(f"sem.meas.{sid}.{label}", ["iosim"] + build("m.json"), exp,
                              needles=["m.json"], setup=[("write", "m.json", data)], timeout=40))
    sweep_muts = [
        ("format_wrong", lambda d: d.__setitem__("format", "iosim-measurements")),
        ("rows_empty", lambda d: d.__setitem__("rows", [])),
        ("rows_null", lambda d: d.__setitem__("rows", None)),
        ("rows_x5000", lambda d: d.__setitem__("rows", d["rows"] * 5000)),
        ("all_numbers_neg", lambda d: set_all_numbers(d, -1)),
        ("all_numbers_nanstr", lambda d: set_all_numbers(d, "nan")),
        ("all_numbers_huge", lambda d: set_all_numbers(d, 1e308)),
        ("all_numbers_zero", lambda d: set_all_numbers(d, 0)),
        ("profiles_empty", lambda d: d.__setitem__("profiles", {})),
        ("row_unknown_profile", lambda d: d["rows"][0].__setitem__("profile", "nope")),
        ("row_missing_keys", lambda d: d.__setitem__("rows", [{"a": 1}])),
        ("html_in_algo", lambda d: [r.__setitem__("algorithm", "<script>alert(1)</script>") for r in d["rows"]]),
        ("md_in_algo", lambda d: [r.__setitem__("algorithm", "a|b\n# c") for r in d["rows"]]),
        ("extra_top", lambda d: d.__setitem__("zzz", [1] * 10)),
    ]
    for label, fn in sweep_muts:
        try:
            data = mutate(sw, fn)
        except Exception:
            continue
        exp = "any" if label in ("rows_x5000", "html_in_algo", "md_in_algo", "extra_top", "all_numbers_zero") else "bad"
        cases.append(Case(f"sem.sweep.report.{label}", ["iosim", "report", "s.json", "--md", "o.md", "--html", "o.html"],
                          exp, needles=["s.json"], setup=[("write", "s.json", data)],
                          outputs=["o.md", "o.html"], timeout=40))
    # traces
    traces = [
        ("neg_arrival", b"arrival,prompt_len,output_len\n-5,100,10\n", "bad"),
        ("huge_arrival", b"arrival,prompt_len,output_len\n1e18,100,10\n", "any"),
        ("arrival_1e15", b"arrival,prompt_len,output_len\n0,100,10\n1000000000000000,100,10\n", "any"),
        ("nan_arrival", b"arrival,prompt_len,output_len\nnan,100,10\n", "bad"),
        ("inf_arrival", b"arrival,prompt_len,output_len\ninf,100,10\n", "bad"),
        ("zero_prompt", b"arrival,prompt_len,output_len\n0,0,10\n", "any"),
        ("zero_output", b"arrival,prompt_len,output_len\n0,10,0\n", "any"),
        ("huge_prompt", b"arrival,prompt_len,output_len\n0,999999999999999,10\n", "any"),
        ("huge_group", b"arrival,prompt_len,output_len,group\n0,10,10,999999999999\n", "any"),
        ("neg_group", b"arrival,prompt_len,output_len,group\n0,10,10,-1\n", "bad"),
        ("header_only", b"arrival,prompt_len,output_len\n", "bad"),
        ("no_header", b"0,100,10\n", "any"),
        ("extra_col", b"arrival,prompt_len,output_len,group,x\n0,1,1,0,5\n", "bad"),
        ("short_row", b"arrival,prompt_len,output_len\n0,100\n", "bad"),
        ("unsorted", b"arrival,prompt_len,output_len\n5,100,10\n0,100,10\n", "any"),
        ("quoted", b'arrival,prompt_len,output_len\n"0","100","10"\n', "any"),
        ("frac_len", b"arrival,prompt_len,output_len\n0,1.5,10\n", "bad"),
        ("exp_len", b"arrival,prompt_len,output_len\n0,1e3,10\n", "any"),
        ("tab_sep", b"arrival\tprompt_len\toutput_len\n0\t100\t10\n", "bad"),
        ("semicolon", b"arrival;prompt_len;output_len\n0;100;10\n", "bad"),
        ("reordered_header", b"prompt_len,arrival,output_len\n100,0,10\n", "any"),
        ("million_rows", b"arrival,prompt_len,output_len\n" + b"0,1,1\n" * 1000000, "any"),
    ]
    for label, data, exp in traces:
        cases.append(Case(f"sem.trace.{label}", ["iosim", "kvcache", "--layers", "32", "--kv-heads", "8",
                                                 "--head-dim", "128", "--trace", "t.csv"], exp,
                          needles=["t.csv", "--trace"], setup=[("write", "t.csv", data)], timeout=30))
    bts = [
        ("huge_id", b"0 1 999999999999999999\n3 4 5\n", "any"), ("neg_id", b"0 -1 2\n3 4 5\n", "bad"),
        ("one_row", b"0 1 2\n", "bad"), ("many_rows", b"0 1 2\n3 4 5\n6 7 8\n", "any"),
        ("too_short", b"0\n1\n", "bad"), ("wide", (" ".join(str(i) for i in range(100000)) + "\n" +
                                                   " ".join(str(i) for i in range(100000, 200000)) + "\n").encode(), "any"),
        ("hex_id", b"0x0 1 2\n3 4 5\n", "bad"), ("float_id", b"0 1.0 2\n3 4 5\n", "bad"),
        ("empty_line_mid", b"0 1 2\n\n3 4 5\n", "any"), ("int64max", b"0 1 9223372036854775807\n3 4 5\n", "any"),
    ]
    for label, data, exp in bts:
        cases.append(Case(f"sem.blocktable.{label}", ["iosim", "run", "--algo", "paged", "--seq", "1", "--seq-kv", "48",
                                                      "--batch", "2", "--block-table", "b.txt"], exp,
                          needles=["b.txt", "--block-table"], setup=[("write", "b.txt", data)], timeout=30))
    pats = [
        ("wrong_size", b"1 0\n0 1\n", "bad"), ("all_zero", b"0 0 0 0\n" * 4, "any"),
        ("twos", b"2 0 0 0\n" * 4, "bad"), ("huge_grid", (("1 " * 3000) + "\n").encode() * 3000, "bad"),
        ("neg", b"-1 0 0 0\n" * 4, "bad"), ("no_spaces", b"1000\n0100\n0010\n0001\n", "any"),
    ]
    for label, data, exp in pats:
        cases.append(Case(f"sem.pattern.{label}", ["iosim", "run", "--algo", "block-sparse", "--seq", "512",
                                                   "--block-q", "128", "--block-kv", "128", "--pattern", "file:p.txt"],
                          exp, needles=["p.txt", "--pattern"], setup=[("write", "p.txt", data)], timeout=30))
    # kernel description mutations (inline and file)
    for label, text, exp in [
            ("inline_empty", "{}", "bad"), ("inline_bad_json", "{name: }", "bad"),
            ("inline_deep", "{" + '"a":{' * 20000 + "}" * 20001, "bad"),
            ("inline_unknown", '{"name":"x","zzz":1}', "bad"), ("inline_brace_only", "{", "bad"),
            ("preset_upper", "FLASH2", "bad"), ("preset_empty", "", "bad"),
            ("preset_dotted", "flash2.v2", "bad"), ("preset_ws", " flash2", "bad")]:
        cases.append(Case(f"sem.kernel.{label}", ["iosim", "run", "--seq", "256", "--kernel", text], exp,
                          needles=["--kernel", "kernel"], timeout=30))


def gen_outputs(cases):
    outs = [
        # (surface, argv with OUT placeholder, extension)
        ("sweep.-o", ["sweep", "--seq", "128,256", "-o", "{OUT}"], ".json"),
        ("report.--md", ["report", "{FX}/sweep.json", "--md", "{OUT}"], ".md"),
        ("report.--html", ["report", "{FX}/sweep.json", "--html", "{OUT}"], ".html"),
        ("explain.--html", ["explain", "--seq", "16", "--no-color", "--html", "{OUT}"], ".html"),
        ("validate.--json", ["validate", "{FX}/meas.json", "--json", "{OUT}"], ".json"),
    ]
    for sid, argv, ext in outs:
        o = "out" + ext
        variants = [
            ("fifo", [("mkfifo", o, None)], "bad", o),
            ("directory", [("mkdir", o, None)], "bad", o),
            ("devfull", [], "bad", "/dev/full"),
            ("devnull", [], "bad", "/dev/null"),
            ("empty_name", [], "bad", ""),
            ("missing_parent", [], "bad", "nodir/" + o),
            ("parent_is_file", [("write", "pf", b"x")], "bad", "pf/" + o),
            ("existing_not_ours", [("write", o, b"SENTINEL precious data\n")], "any", o),
            ("newline_name", [], "any", "a\nb" + ext),
            ("symlink_to_file", [("write", "target" + ext, b"SENTINEL\n"), ("symlink", "target" + ext, o)], "any", o),
            ("symlink_to_devfull", [("symlink", "/dev/full", o)], "bad", o),
            ("symlink_to_fifo", [("mkfifo", "f", None), ("symlink", "f", o)], "bad", o),
            ("symlink_dangling", [("symlink", "nowhere" + ext, o)], "any", o),
            ("symlink_loop", [("symlink", o, o)], "bad", o),
            ("symlink_to_dir", [("mkdir", "d", None), ("symlink", "d", o)], "bad", o),
            ("trailing_slash", [], "bad", o + "/"),
            ("dot", [], "bad", "."),
            ("dash", [], "any", "-"),
            ("long_name", [], "bad", "x" * 300 + ext),
            ("upper_ext", [], "any", "OUT" + ext.upper()),
        ]
        if sid == "sweep.-o":
            variants += [
                ("partial_not_ours", [("write", o + ".partial", b"SENTINEL not a journal\n")], "bad", o),
                ("partial_is_fifo", [("mkfifo", o + ".partial", None)], "bad", o),
                ("partial_is_dir", [("mkdir", o + ".partial", None)], "bad", o),
                ("partial_symlink_loop", [("symlink", o + ".partial", o + ".partial")], "bad", o),
                ("resume_partial_not_ours", [("write", o + ".partial", b"SENTINEL\n")], "bad", o),
                ("resume_no_partial", [], "any", o),
                ("csv_ext", [], "good", "out.csv"),
            ]
        for label, setup, exp, path in variants:
            a = ["iosim"] + [x.replace("{OUT}", path) for x in argv]
            if label.startswith("resume"):
                a.append("--resume")
            outputs = [path, os.path.basename(path)] if label not in (
                "existing_not_ours",) else [path]
            if label in ("symlink_to_file", "symlink_dangling"):
                outputs += ["target" + ext, "nowhere" + ext]
            if sid == "sweep.-o" and label.startswith("resume"):
                pass
            cases.append(Case(f"out.{sid}.{label}", a, exp, needles=[os.path.basename(path.rstrip('/')) or path,
                                                                   sid.split(".")[1]],
                              setup=setup,
                              outputs=outputs, timeout=40))
    # report writing over its own input
    cases.append(Case("out.report.md_is_input", ["iosim", "report", "s.json", "--md", "s.json"], "bad",
                      needles=["s.json"], setup=[("copy", "s.json", "{FX}/sweep.json")]))
    cases.append(Case("out.report.md_is_input_via_link", ["iosim", "report", "s.json", "--md", "l.md"], "bad",
                      needles=["l.md", "s.json"], setup=[("copy", "s.json", "{FX}/sweep.json"),
                                                        ("symlink", "s.json", "l.md")]))
    cases.append(Case("out.report.html_is_validation", ["iosim", "report", "{FX}/sweep.json", "--validation",
                                                        "m.json", "--html", "m.json"], "bad",
                      needles=["m.json"], setup=[("copy", "m.json", "{FX}/meas.json")]))
    cases.append(Case("out.validate.json_is_input", ["iosim", "validate", "m.json", "--json", "m.json"], "bad",
                      needles=["m.json"], setup=[("copy", "m.json", "{FX}/meas.json")]))
    cases.append(Case("out.sweep.out_is_profile", ["iosim", "sweep", "--seq", "128", "--profile", "p.json",
                                                   "-o", "p.json"], "bad",
                      needles=["p.json"], setup=[("copy", "p.json", "{FX}/profile.yaml")]))
    cases.append(Case("out.sweep.out_is_blocktable", ["iosim", "sweep", "--seq", "1", "--seq-kv", "48", "--batch", "2",
                                                      "--algo", "paged", "--block-table", "b.json", "-o", "b.json"],
                      "bad", needles=["b.json"], setup=[("copy", "b.json", "{FX}/bt.txt")]))
    cases.append(Case("out.explain.html_is_pattern", ["iosim", "explain", "--no-color", "--seq", "16", "--algo",
                                                      "block-sparse", "--block-q", "4", "--block-kv", "4",
                                                      "--pattern", "file:p.html", "--html", "p.html"],
                      "bad", needles=["p.html"], setup=[("write", "p.html", b"1 0 0 0\n1 1 0 0\n1 0 1 0\n1 0 0 1\n")]))
    # failing run with an output: nothing written, existing file untouched
    for sid, argv in [("sweep", ["sweep", "--seq", "128", "--batch", "0", "-o", "o.json"]),
                      ("report", ["report", "missing.json", "--md", "o.json"]),
                      ("explain", ["explain", "--seq", "1000", "--html", "o.json"]),
                      ("validate", ["validate", "missing.json", "--json", "o.json"])]:
        cases.append(Case(f"out.fail_keeps_existing.{sid}", ["iosim"] + argv, "bad", needles=[],
                          setup=[("write", "o.json", b"SENTINEL\n")]))
    # report: one output fails -> neither written
    cases.append(Case("out.report.html_fails_md_absent", ["iosim", "report", "{FX}/sweep.json", "--md", "o.md",
                                                          "--html", "nodir/o.html"], "bad", needles=["o.html"]))
    cases.append(Case("out.report.html_devfull_md_absent", ["iosim", "report", "{FX}/sweep.json", "--md", "o.md",
                                                            "--html", "h.html"], "bad", needles=["h.html"],
                      setup=[("symlink", "/dev/full", "h.html")]))


def gen_set(cases):
    vals = [("zero", "0", "bad"), ("neg", "-1", "bad"), ("huge", "1e300", "bad"), ("nan", "nan", "bad"),
            ("word", "abc", "bad"), ("inf", "inf", "bad"), ("empty", "", "bad"), ("tiny", "1e-300", "bad")]
    for sec, keys in PROFILE_KEYS.items():
        for k in keys:
            for label, v, exp in vals:
                if k in ("smem_reserved_per_cta_bytes",) and label == "zero":
                    exp = "any"
                if label == "zero" and k.startswith("setmaxnreg"):
                    exp = "any"
                if label == "tiny" and k in ("max_dirty_fraction", "achievable_fraction", "kernel_overhead_us",
                                             "latency_ns", "hit_latency_cycles", "smem_latency_cycles",
                                             "fp32_latency_cycles", "wgmma_latency_cycles", "setmaxnreg_cycles"):
                    exp = "any"
                if label == "zero" and k in ("max_dirty_fraction", "kernel_overhead_us", "latency_ns",
                                             "hit_latency_cycles", "smem_latency_cycles", "fp32_latency_cycles",
                                             "wgmma_latency_cycles", "setmaxnreg_cycles", "tensor_fp8_tflops",
                                             "tensor_tf32_tflops"):
                    exp = "any"
                kv = f"{sec}.{k}={v}"
                cases.append(Case(f"set.{sec}.{k}.{label}", ["iosim", "run", "--seq", "1024", "--set", kv], exp,
                                  needles=[f"{sec}.{k}", "--set"], timeout=30))
    for label, s, exp in [
            ("no_eq", "l2.size_bytes", "bad"), ("no_key", "=5", "bad"), ("unknown", "l2.sizebytes=1e6", "bad"),
            ("section", "l2=5", "bad"), ("two_eq", "l2.size_bytes=1=2", "bad"), ("upper", "L2.SIZE_BYTES=20e6", "bad"),
            ("name", "name=foo", "bad"), ("description", "description=x", "bad"), ("source", "l2.size_bytes.source=x", "bad"),
            ("space_key", " l2.size_bytes=20e6", "bad"), ("space_val", "l2.size_bytes= 20e6", "any"),
            ("frac_int", "sm.count=1.5", "bad"), ("hex", "l2.size_bytes=0x1000000", "bad"),
            ("list_in_run", "l2.size_bytes=10e6,20e6", "bad"), ("empty", "", "bad"),
            ("sm_count_1", "sm.count=1", "any"), ("sm_count_huge", "sm.count=1000000", "any"),
            ("l2_size_1e12", "l2.size_bytes=1e12", "any"), ("smem_huge", "sm.smem_per_cta_max_bytes=1e12", "any"),
            ("hbm_bw_tiny", "hbm.bandwidth_gbps=1e-6", "any"), ("clock_1", "sm.boost_clock_mhz=1", "any"),
            ("yaml_inject", "l2.size_bytes={value: 1, source: x}", "bad"), ("yaml_inject2", "l2.size_bytes=1\nsm.count: 5", "bad"),
            ("dup_same", "l2.size_bytes=20e6", "any"),
    ]:
        argv = ["iosim", "run", "--seq", "1024", "--set", s]
        if label == "dup_same":
            argv += ["--set", "l2.size_bytes=30e6"]
        cases.append(Case(f"set.form.{label}", argv, exp, needles=["--set", s.split("=")[0].strip() or s],
                          timeout=30))
    # --set on other commands
    for label, argv, exp in [
            ("explain", ["explain", "--seq", "16", "--no-color", "--set", "sm.count=0"], "bad"),
            ("sweep_nan", ["sweep", "--seq", "128", "--set", "l2.size_bytes=nan"], "bad"),
            ("sweep_range_rev", ["sweep", "--seq", "128", "--set", "l2.size_bytes=2e7:1e7:x2"], "bad"),
            ("sweep_list_empty", ["sweep", "--seq", "128", "--set", "l2.size_bytes=,"], "bad"),
            ("sweep_two_keys", ["sweep", "--seq", "128", "--set", "l2.size_bytes=1e7,2e7", "--set", "sm.count=66,132"], "good"),
    ]:
        cases.append(Case(f"set.cmd.{label}", ["iosim"] + argv, exp, needles=["--set", "l2.size_bytes", "sm.count"]))


def gen_shapes(cases):
    shapes = [
        ("doc_largest", ["--batch", "124", "--heads", "64", "--seq", "1048576", "--head-dim", "256"], "any"),
        ("doc_long", ["--seq", "16777216"], "any"),
        ("over_2_64", ["--batch", "1000", "--heads", "1000", "--seq", "1048576", "--head-dim", "256"], "bad"),
        ("seq_2_31", ["--seq", "2147483648"], "any"),
        ("seq_2_40", ["--seq", "1099511627776"], "any"),
        ("seq_int64max", ["--seq", "9223372036854775807"], "bad"),
        ("batch_int64max", ["--seq", "128", "--batch", "9223372036854775807"], "bad"),
        ("heads_2_31", ["--seq", "128", "--heads", "2147483648"], "any"),
        ("d1", ["--seq", "1024", "--head-dim", "1"], "any"), ("d3", ["--seq", "1024", "--head-dim", "3"], "any"),
        ("d7", ["--seq", "1024", "--head-dim", "7"], "any"), ("d1000", ["--seq", "1024", "--head-dim", "1000"], "any"),
        ("d100000", ["--seq", "1024", "--head-dim", "100000"], "bad"),
        ("d_int64max", ["--seq", "1024", "--head-dim", "9223372036854775807"], "bad"),
        ("seq1_seqkv_2_30", ["--seq", "1", "--seq-kv", "1073741824"], "any"),
        ("seqkv_2_40", ["--seq", "1", "--seq-kv", "1099511627776"], "any"),
        ("block1", ["--seq", "65536", "--block-q", "1", "--block-kv", "1"], "any"),
        ("block1_exact", ["--seq", "4096", "--block-q", "1", "--block-kv", "1", "--exact"], "any"),
        ("block_2_20", ["--seq", "1024", "--block-q", "1048576"], "any"),
        ("block_2_20p1", ["--seq", "1024", "--block-q", "1048577"], "bad"),
        ("threads_1", ["--seq", "1024", "--threads", "1"], "any"), ("threads_1025", ["--seq", "1024", "--threads", "1025"], "bad"),
        ("threads_33", ["--seq", "1024", "--threads", "33"], "any"),
        ("stages_1000", ["--seq", "1024", "--stages", "1000"], "any"),
        ("stages_2_31", ["--seq", "1024", "--stages", "2147483648"], "bad"),
        ("threads_2_32", ["--seq", "1024", "--threads", "4294967296"], "bad"),
        ("decode_splits_huge", ["--algo", "flash-decoding", "--seq", "1", "--seq-kv", "1048576", "--splits", "1000000000"], "any"),
        ("decode_splits_seqkv", ["--algo", "flash-decoding", "--seq", "1", "--seq-kv", "16777216", "--splits", "16777216"], "any"),
        ("paged_page1_long", ["--algo", "paged", "--seq", "1", "--seq-kv", "16777216", "--page-tokens", "1"], "any"),
        ("paged_page1_batch", ["--algo", "paged", "--seq", "1", "--seq-kv", "1048576", "--page-tokens", "1", "--batch", "1024"], "any"),
        ("paged_page_huge", ["--algo", "paged", "--seq", "1", "--seq-kv", "1024", "--page-tokens", "1000000000000"], "any"),
        ("paged_seq_long", ["--algo", "paged", "--seq", "4096", "--seq-kv", "4096"], "any"),
        ("execute_30000", ["--seq", "30000", "--head-dim", "4", "--execute"], "bad"),
        ("execute_bwd_big", ["--seq", "12000", "--head-dim", "64", "--execute", "--pass", "bwd"], "any"),
        ("execute_huge_batch", ["--seq", "256", "--batch", "100000", "--heads", "100", "--execute"], "any"),
        ("execute_d_huge", ["--seq", "64", "--head-dim", "1000000", "--execute"], "any"),
        ("sparse_local1", ["--algo", "block-sparse", "--seq", "16777216", "--pattern", "local:1"], "any"),
        ("sparse_random_big", ["--algo", "block-sparse", "--seq", "4194304", "--pattern", "random:0.5:1"], "any"),
        ("sparse_causal_big", ["--algo", "block-sparse", "--seq", "8388608", "--pattern", "causal", "--block-q", "16", "--block-kv", "16"], "any"),
        ("flash1_long", ["--algo", "flash1", "--seq", "1048576", "--batch", "8", "--heads", "32"], "any"),
        ("standard_long", ["--algo", "standard", "--seq", "1048576", "--batch", "8", "--heads", "32"], "any"),
        ("flash3_fwdbwd_long", ["--algo", "flash3", "--pass", "fwdbwd", "--seq", "1048576", "--batch", "8", "--heads", "32", "--head-dim", "128"], "any"),
        ("flash3_bwd_block1", ["--algo", "flash3", "--pass", "fwdbwd", "--seq", "4096", "--backward-block-q", "1", "--backward-block-kv", "1"], "any"),
        ("gqa_extreme", ["--seq", "4096", "--heads", "65536", "--kv-heads", "1"], "any"),
        ("gqa_pack_long", ["--seq", "65536", "--heads", "64", "--kv-heads", "1", "--pack-gqa", "on"], "any"),
        ("causal_seqkv_lt_seq", ["--seq", "65536", "--seq-kv", "1", "--causal"], "any"),
        ("mask_dropout_long", ["--seq", "1048576", "--mask", "--dropout", "0.5", "--batch", "16", "--heads", "16"], "any"),
        ("fp32_d256_long", ["--dtype", "fp32", "--seq", "1048576", "--head-dim", "256", "--batch", "16"], "any"),
        ("cold_l2_many", ["--seq", "1048576", "--cold-l2", "--pass", "fwdbwd", "--batch", "32", "--heads", "32"], "any"),
    ]
    for label, extra, exp in shapes:
        cases.append(Case(f"shape.run.{label}", ["iosim", "run"] + extra, exp,
                          needles=extra + ["too large", "infeasible"], timeout=20))
    for label, extra, exp in [
            ("requests_1e8", ["--requests", "100000000"], "any"),
            ("requests_1e9_poisson_tiny", ["--requests", "1000000000", "--arrivals", "poisson:1e-9"], "any"),
            ("samples_1e6", ["--samples", "1000000", "--requests", "10"], "any"),
            ("layers_huge", ["--layers", "1000000000000"], "any"),
            ("head_dim_huge", ["--head-dim", "4611686018427387904"], "any"),
            ("block_tokens_1", ["--block-tokens", "1", "--requests", "20000"], "any"),
            ("max_tokens_huge", ["--max-prompt-tokens", "1000000000000000", "--max-output-tokens", "1000000000000000",
                                 "--prompt-len", "const:1000000000000", "--output-len", "const:1000000000000"], "any"),
            ("series_points_huge", ["--series-points", "1000000000", "--series", "--format", "csv"], "any"),
            ("prompt_groups_huge", ["--prompt-groups", "1000000000000"], "any"),
            ("prefix_huge", ["--shared-prefix-tokens", "1000000000000000"], "any"),
            ("budget_1e18", ["--kv-budget-bytes", "1e18", "--requests", "100000"], "any"),
            ("watermark_tiny", ["--watermark", "1e-300"], "any"),
            ("output_long_budget_small", ["--kv-budget-bytes", "100000000", "--output-len", "const:2048",
                                          "--requests", "100000", "--block-tokens", "1"], "any"),
    ]:
        args = list(KV_BASE)
        for i in range(0, len(extra), 2):
            if extra[i] in args:
                j = args.index(extra[i])
                del args[j:j + 2]
        cases.append(Case(f"shape.kvcache.{label}", ["iosim"] + args + extra, exp,
                          needles=extra, timeout=20))
    for label, extra, exp in [
            ("sweep_1e6", ["--seq", "1:1000", "--batch", "1:1000", "--max-seconds", "3", "-o", "s.json"], "any"),
            ("sweep_1e7", ["--seq", "1:10000", "--batch", "1:1000", "--max-seconds", "2", "-o", "s.json"], "any"),
            ("sweep_long_shapes", ["--seq", "1048576,16777216", "--batch", "124", "--heads", "64", "--head-dim", "256"], "any"),
            ("sweep_execute_many", ["--seq", "1:400", "--execute", "--max-seconds", "3", "-o", "s.json"], "any"),
    ]:
        cases.append(Case(f"shape.sweep.{label}", ["iosim", "sweep"] + extra, exp, needles=[],
                          outputs=["s.json", "s.json.partial"], allow_left=["s.json.partial"], timeout=25))


LONG = {
    "run": ["iosim", "run", "--algo", "flash2", "--batch", "64", "--heads", "64", "--seq", "1048576",
            "--head-dim", "256", "--exact"],
    "run_execute": ["iosim", "run", "--seq", "7000", "--head-dim", "64", "--execute"],
    "run_decode": ["iosim", "run", "--algo", "flash-decoding", "--seq", "1", "--seq-kv", "16777216",
                   "--splits", "1", "--exact", "--batch", "64", "--heads", "64"],
    "sweep_out": ["iosim", "sweep", "--seq", "1:3000", "--batch", "1,2", "-o", "s.json"],
    "sweep_stdout": ["iosim", "sweep", "--seq", "1:3000", "--batch", "1,2"],
    "sweep_exact": ["iosim", "sweep", "--seq", "1048576", "--batch", "64", "--heads", "64", "--head-dim", "256",
                    "--exact", "-o", "s.json"],
    "kvcache": ["iosim", "kvcache", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--requests", "300000"],
    "validate": ["iosim", "validate", "{REPO}/cuda_validate/measurements/h100-sxm5-80gb", "--json", "v.json"],
    "explain": ["iosim", "explain", "--seq", "64", "--head-dim", "16", "--batch", "4", "--block-q", "8",
                "--block-kv", "4", "--no-color", "--execute", "--pass", "fwdbwd", "--html", "e.html"],
    "demo_big": ["iosim", "demo", "--seq", "4194304", "--batch", "1", "--heads", "1"],
}


def gen_signals(cases):
    for name, argv in LONG.items():
        for sig in (signal.SIGINT, signal.SIGTERM):
            cases.append(Case(f"stop.{name}.{sig.name}", argv, "any", kind="signal", sig=sig,
                              outputs=["s.json", "v.json", "e.html"], allow_left=["s.json.partial"], timeout=30))
    for name in ("run", "sweep_out", "run_decode", "run_execute"):
        for label, v, exp in [("half", "0.5", "any"), ("one", "1", "any"), ("tiny", "1e-9", "any"),
                              ("denorm", "1e-320", "any")]:
            a = LONG[name] + ["--max-seconds", v]
            cases.append(Case(f"maxsec.{name}.{label}", a, exp, kind="budget", needles=["--max-seconds"],
                              outputs=["s.json"], allow_left=["s.json.partial"], timeout=30,
                              note=f"budget {v}"))
    # resume after a stop: must give the same output as an uninterrupted sweep (checked by hand)
    cases.append(Case("stop.sweep_resume_roundtrip", ["iosim", "sweep", "--seq", "1:1200", "--batch", "1,2",
                                                      "-o", "s.json", "--resume"],
                      "any", kind="resume", outputs=["s.json", "s.json.partial"], timeout=120))


def gen_devfull(cases):
    cmds = [
        ("run", ["run", "--seq", "1024"]), ("run_json", ["run", "--seq", "1024", "--format", "json"]),
        ("run_csv", ["run", "--seq", "1024", "--format", "csv"]), ("demo", ["demo", "--seq", "1024"]),
        ("profiles", ["profiles"]), ("profiles_show", ["profiles", "--show", "h100-sxm5-80gb"]),
        ("profiles_template", ["profiles", "--template"]), ("kernels", ["kernels"]),
        ("kernels_show", ["kernels", "--show", "flash3"]), ("validate", ["validate", "{FX}/meas.json"]),
        ("validate_json", ["validate", "{FX}/meas.json", "--format", "json"]),
        ("kvcache", KV_BASE), ("kvcache_series", KV_BASE + ["--series", "--format", "csv"]),
        ("sweep", ["sweep", "--seq", "128,256"]), ("sweep_csv", ["sweep", "--seq", "128,256", "--format", "csv"]),
        ("report", ["report", "{FX}/sweep.json"]), ("explain", ["explain", "--seq", "16", "--no-color"]),
        ("help", ["--help"]), ("run_help", ["run", "--help"]), ("version", ["--version"]),
    ]
    for label, argv in cmds:
        cases.append(Case(f"devfull.{label}", ["iosim"] + argv, "bad", kind="devfull", needles=["stdout"],
                          outputs=["s.json"]))
    # stdout closed entirely
    for label, argv in cmds[:4] + cmds[13:14]:
        cases.append(Case(f"stdoutclosed.{label}", ["iosim"] + argv, "bad", kind="closed", needles=["stdout"]))


def gen_python(cases):
    calls = [
        ("run_seq_str", "iosim.run(seq='abc')", "bad"), ("run_seq_float", "iosim.run(seq=1.5)", "bad"),
        ("run_seq_neg", "iosim.run(seq=-1)", "bad"), ("run_seq_bool", "iosim.run(seq=True)", "any"),
        ("run_seq_none", "iosim.run(seq=None)", "bad"), ("run_seq_2_70", "iosim.run(seq=2**70)", "bad"),
        ("run_no_seq", "iosim.run()", "bad"), ("run_unknown_kw", "iosim.run(seq=128, sequence=5)", "bad"),
        ("run_set_int", "iosim.run(seq=128, set=123)", "bad"), ("run_set_bad", "iosim.run(seq=128, set=['x'])", "bad"),
        ("run_set_nan", "iosim.run(seq=128, set='l2.size_bytes=nan')", "bad"),
        ("run_kernel_empty_dict", "iosim.run(seq=128, kernel={})", "bad"),
        ("run_kernel_deep", "d={}\nx=d\nfor i in range(900): x['a']={}; x=x['a']\niosim.run(seq=128, kernel=d)", "bad"),
        ("run_dropout_nan", "iosim.run(seq=128, dropout=float('nan'))", "bad"),
        ("run_dropout_inf", "iosim.run(seq=128, dropout=float('inf'))", "bad"),
        ("run_maxsec_nan", "iosim.run(seq=128, max_seconds=float('nan'))", "bad"),
        ("run_sm_clock_nan", "iosim.run(seq=128, sm_clock_mhz=float('nan'))", "bad"),
        ("run_profile_missing", "iosim.run(seq=128, profile='/nonexistent.yaml')", "bad"),
        ("run_profile_fifo", "import os; os.mkfifo('f.yaml'); iosim.run(seq=128, profile='f.yaml')", "bad"),
        ("run_profile_devzero", "iosim.run(seq=128, profile='/dev/zero')", "bad"),
        ("run_causal_str", "iosim.run(seq=128, causal='yes')", "bad"),
        ("run_seq_list", "iosim.run(seq=[1,2])", "bad"), ("run_batch_0", "iosim.run(seq=128, batch=0)", "bad"),
        ("run_format_csv", "iosim.run(seq=128, format='csv')", "any"),
        ("run_execute_huge", "iosim.run(seq=30000, head_dim=4, execute=True)", "bad"),
        ("run_long", "iosim.run(seq=1048576, batch=124, heads=64, head_dim=256)", "any"),
        ("run_seq_nul", "iosim.run(seq=128, algo='flash2\\x00x')", "bad"),
        ("run_algo_bytes", "iosim.run(seq=128, algo=b'flash2')", "bad"),
        ("sweep_jobs_neg", "iosim.sweep(seq=[128], jobs=-1)", "bad"),
        ("sweep_jobs_huge", "iosim.sweep(seq=[128,256], jobs=100000)", "any"),
        ("sweep_empty_list", "print(iosim.sweep(seq=[]))", "any"),
        ("sweep_bad_point", "iosim.sweep(seq=[128, -1])", "bad"),
        ("sweep_set_lists", "iosim.sweep(seq=128, set=[['l2.size_bytes=1e7'], ['l2.size_bytes=nan']])", "bad"),
        ("sweep_infeasible", "r=iosim.sweep(seq=128, block_q=1048576); print(r[0].get('infeasible_reason'))", "any"),
        ("kvcache_no_layers", "iosim.kvcache(kv_heads=8, head_dim=128)", "bad"),
        ("kvcache_layers_str", "iosim.kvcache(layers='x', kv_heads=8, head_dim=128)", "bad"),
        ("kvcache_neg", "iosim.kvcache(layers=-1, kv_heads=8, head_dim=128)", "bad"),
        ("kvcache_budget_nan", "iosim.kvcache(layers=1, kv_heads=8, head_dim=128, kv_budget_bytes=float('nan'))", "bad"),
        ("kvcache_trace_missing", "iosim.kvcache(layers=1, kv_heads=8, head_dim=128, trace='/nonexistent.csv')", "bad"),
        ("kvcache_unknown", "iosim.kvcache(layers=1, kv_heads=8, head_dim=128, foo=1)", "bad"),
        ("kvcache_requests_huge", "iosim.kvcache(layers=1, kv_heads=8, head_dim=128, requests=10**12)", "any"),
        ("validate_missing", "iosim.validate('/nonexistent.json')", "bad"),
        ("validate_devzero", "iosim.validate('/dev/zero')", "bad"),
        ("validate_fifo", "import os; os.mkfifo('f.json'); iosim.validate('f.json')", "bad"),
        ("validate_dir_empty", "import os; os.mkdir('d'); iosim.validate('d')", "bad"),
        ("validate_profile_bad", "iosim.validate('{FX}/meas.json', profile='nope')", "bad"),
        ("validate_none", "iosim.validate(None)", "bad"),
        ("run_in_thread_sigint", "import threading,signal,os\nt=threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)); t.start()\n"
                                 "iosim.run(seq=1048576, batch=64, heads=64, head_dim=256, exact=True)", "stop"),
    ]
    for label, code, exp in calls:
        cases.append(Case(f"python.{label}", ["python3", "-c", code], "any" if exp == "stop" else exp,
                          kind="python", timeout=10 if exp == "stop" else 30,
                          note="stop" if exp == "stop" else ""))


# ----------------------------------------------------------------------------- running

def snapshot(root):
    out = {}
    for dp, dns, fns in os.walk(root, followlinks=False):
        for n in dns + fns:
            p = os.path.join(dp, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            rel = os.path.relpath(p, root)
            h = None
            if stat.S_ISREG(st.st_mode) and st.st_size <= (1 << 20) and st.st_blocks > 0:
                with open(p, "rb") as f:
                    h = hashlib.sha1(f.read()).hexdigest()
            tgt = os.readlink(p) if stat.S_ISLNK(st.st_mode) else None
            out[rel] = (stat.S_IFMT(st.st_mode), st.st_size, h, tgt, st.st_ino)
    return out


def do_setup(case, cdir, fx):
    for op, name, arg in case.setup:
        p = os.path.join(cdir, name) if name else None
        if op == "mkdir":
            os.makedirs(p, exist_ok=True)
        elif op == "mkfifo":
            os.mkfifo(p)
        elif op == "symlink":
            os.symlink(name, os.path.join(cdir, arg))
        elif op == "write":
            with open(p, "wb") as f:
                f.write(arg)
        elif op == "copy":
            with open(arg.replace("{FX}", fx), "rb") as f, open(p, "wb") as g:
                g.write(f.read())
        elif op == "sparse":
            with open(p, "wb") as f:
                f.truncate(arg)
                f.seek(0)
                f.write(b"name: x\n")
        elif op == "gzip":
            import gzip
            with open(p, "wb") as f:
                f.write(gzip.compress(arg))


def limit_child():
    resource.setrlimit(resource.RLIMIT_AS, (AS_CAP, AS_CAP))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def shell_repro(case, binary, fx, repo):
    parts = []
    for op, name, arg in case.setup:
        q = shlex.quote
        if op == "mkdir":
            parts.append(f"mkdir {q(name)}")
        elif op == "mkfifo":
            parts.append(f"mkfifo {q(name)}")
        elif op == "symlink":
            parts.append(f"ln -s {q(name)} {q(arg)}")
        elif op == "write":
            if len(arg) <= 120:
                parts.append(f"printf %s {q(arg.decode('latin-1'))} > {q(name)}")
            else:
                parts.append(f"<{len(arg)}-byte file {name}: see probe.py case {case.id}>")
        elif op == "copy":
            parts.append(f"cp {q(arg)} {q(name)}")
        elif op == "sparse":
            parts.append(f"truncate -s {arg} {q(name)}")
        elif op == "gzip":
            parts.append(f"<gzip of the fixture> > {q(name)}")
    argv = [a.replace("{FX}", "$FX").replace("{REPO}", repo) for a in case.argv]
    if case.kind == "python":
        cmd = "PYTHONPATH=<iosim python module> python3 -c " + shlex.quote("import iosim\n" + argv[2].replace("$FX", "$FX"))
    else:
        cmd = " ".join(["iosim"] + [shlex.quote(a) if "$FX" not in a else '"' + a + '"' for a in argv[1:]])
        if case.env:
            cmd = " ".join(f"{k}={shlex.quote(v)}" for k, v in case.env.items()) + " " + cmd
        if case.kind == "devfull":
            cmd += " >/dev/full"
        elif case.kind == "closed":
            cmd += " >&-"
        elif case.kind == "signal":
            cmd = f"{cmd} & sleep 1; kill -{case.sig.name[3:]} $!; wait $!"
    return "; ".join(parts + [cmd])


def run_case(case, binary, tmproot, fx, repo, pypath, default_timeout):
    cdir = os.path.join(tmproot, "cases", re.sub(r"[^A-Za-z0-9_.+-]", "_", case.id))
    os.makedirs(cdir)
    do_setup(case, cdir, fx)
    before = snapshot(cdir)
    timeout = case.timeout or default_timeout
    env = dict(os.environ)
    env.pop("IOSIM_CHARTJS", None)
    env.update(case.env)
    if case.kind == "python":
        code = "import iosim\n" + case.argv[2].replace("{FX}", fx)
        argv = [sys.executable, "-c", code]
        env["PYTHONPATH"] = pypath
    else:
        argv = [binary] + [a.replace("{FX}", fx).replace("{REPO}", repo) for a in case.argv[1:]]
    argv = ["prlimit", f"--as={AS_CAP}", "--core=0", "--"] + argv
    out_path = os.path.join(tmproot, "logs", os.path.basename(cdir) + ".out")
    err_path = os.path.join(tmproot, "logs", os.path.basename(cdir) + ".err")
    if case.kind == "resume":
        # stop a sweep with SIGINT first, then resume it and compare with an uninterrupted one
        p = subprocess.Popen(argv[:-1], cwd=cdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        p.wait(30)
        ref = subprocess.run(argv[:-2] + ["ref.json"], cwd=cdir, capture_output=True, timeout=120)
        before = snapshot(cdir)
    # posix_spawn (vfork-like): a fork would copy this process's pages into the child's peak RSS
    wr = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fa = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, err_path, wr, 0o644)]
    if case.kind == "devfull":
        fa.append((os.POSIX_SPAWN_OPEN, 1, "/dev/full", os.O_WRONLY, 0))
    elif case.kind == "closed":
        fa.append((os.POSIX_SPAWN_CLOSE, 1))
    else:
        fa.append((os.POSIX_SPAWN_OPEN, 1, out_path, wr, 0o644))
        open(out_path, "wb").close()
    rss_path = os.path.join(tmproot, "logs", os.path.basename(cdir) + ".rss")
    timed = case.kind in ("signal", "budget", "resume")
    if not timed and case.kind != "closed" and os.path.exists("/usr/bin/time"):
        # GNU time forks iosim from its own small process and reports its true peak RSS (a child spawned
        # from this large process inherits this process's high-water mark in its ru_maxrss)
        argv = ["/usr/bin/time", "-f", "%M", "-o", rss_path] + argv
    t0 = time.monotonic()
    pid0 = os.posix_spawn("/bin/sh", ["sh", "-c", 'cd "$0" && exec "$@"', cdir] + argv, env, file_actions=fa,
                          setsid=True)

    class proc:
        pid = pid0
    sig_at = None
    status = None
    rusage = None
    timed_out = False
    while True:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        now = time.monotonic()
        if pid == proc.pid:
            status, rusage = st, ru
            break
        if case.kind == "signal" and sig_at is None and now - t0 >= 1.0:
            os.kill(proc.pid, case.sig)
            sig_at = now
        if now - t0 > timeout:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            pid, st, ru = os.wait4(proc.pid, 0)
            status, rusage = st, ru
            break
        time.sleep(0.005)
    t_end = time.monotonic()
    if os.WIFSIGNALED(status):
        rc = -os.WTERMSIG(status)
    else:
        rc = os.WEXITSTATUS(status)
    with open(err_path, "rb") as f:
        err = f.read().decode("utf-8", "replace")
    out = b""
    if case.kind not in ("devfull", "closed"):
        with open(out_path, "rb") as f:
            out = f.read(200000)
    after = snapshot(cdir)
    maxrss = rusage.ru_maxrss * 1024
    try:
        with open(rss_path) as f:
            nums = [ln.strip() for ln in f if ln.strip().isdigit()]
        maxrss = int(nums[-1]) * 1024 if nums else 0
        if timed_out or rc > 128:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
    except OSError:
        maxrss = maxrss if timed else 0
    res = dict(id=case.id, rc=rc, wall=t_end - t0, maxrss=maxrss, err=err,
               out_head=out[:300].decode("utf-8", "replace"), timed_out=timed_out,
               stop_delay=(t_end - sig_at) if sig_at else None, signalled=sig_at is not None)
    if case.kind == "resume":
        try:
            with open(os.path.join(cdir, "s.json"), "rb") as f, open(os.path.join(cdir, "ref.json"), "rb") as g:
                res["resume_same"] = f.read() == g.read()
        except OSError as e:
            res["resume_same"] = f"missing: {e}"
    res["classes"], res["detail"] = classify(case, res, before, after)
    res["repro"] = shell_repro(case, binary, fx, repo)
    # keep the disk small: remove the case folder (FIFOs and all) unless something was odd
    if res["classes"] == ["ok"]:
        subprocess.run(["rm", "-rf", cdir])
        for p in (out_path, err_path):
            try:
                os.remove(p)
            except OSError:
                pass
    return res


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def classify(case, r, before, after):
    cls, detail = [], []
    rc, err = r["rc"], r["err"]
    text = err + r["out_head"]
    stopped = "stopped" in err
    if r["timed_out"]:
        cls.append("hang")
        detail.append(f"no exit after {r['wall']:.1f} s (killed)")
    elif rc < 0 or rc > 128 or CRASH_TEXT.search(err):
        if case.kind == "python" and rc == 1 and "Traceback" in err and not CRASH_TEXT.search(err):
            pass
        elif (case.kind == "python" and case.note == "stop" and rc == 130
              and "KeyboardInterrupt" in err):
            pass  # Ctrl-C as Python reports it: an uncaught KeyboardInterrupt exits 130
        else:
            cls.append("crash")
            detail.append(f"rc={rc}")
    if "internal error" in text.lower() or (case.kind != "python" and rc == 3 and not stopped and not r["timed_out"]):
        cls.append("internal")
    if case.kind == "python":
        if "InternalError" in err or re.search(r"\n(RuntimeError|SystemError|MemoryError|OverflowError|KeyError|"
                                                r"IndexError|AttributeError|json\.decoder\.JSONDecodeError)", err):
            cls.append("internal")
    if r["maxrss"] > MEM_FLAG or "out of memory" in err or "MemoryError" in err or "bad_alloc" in err:
        cls.append("memory")
        detail.append(f"peak RSS {r['maxrss'] / GIB:.2f} GiB" + ("; out of memory under the 8 GiB cap" if "out of memory" in err else ""))
    # files
    changed = []
    for name, meta in after.items():
        old = before.get(name)
        if old is None:
            changed.append(("new", name, meta))
        elif old != meta:
            changed.append(("changed", name, meta))
    for name in before:
        if name not in after:
            changed.append(("removed", name, before[name]))
    for how, name, meta in changed:
        base = os.path.basename(name)
        allowed_out = name in case.outputs or base in case.outputs
        left_ok = any(name == a or name.startswith(a) for a in case.allow_left)
        if name == "ref.json" or case.kind in ("resume", "python"):
            continue
        if rc != 0:
            if left_ok and how in ("new", "changed"):
                continue
            cls.append("destructive")
            detail.append(f"{how} after a failed run (rc={rc}): {name!r}")
        else:
            if allowed_out:
                old = before.get(name)
                if old is not None and old[0] != stat.S_IFREG and old[0] != stat.S_IFLNK:
                    cls.append("destructive")
                    detail.append(f"non-regular output path {name!r} replaced")
                elif old is not None and old[0] == stat.S_IFLNK and (meta[0] != stat.S_IFLNK):
                    cls.append("destructive")
                    detail.append(f"symbolic link {name!r} replaced by a file")
                continue
            if left_ok:
                continue
            cls.append("destructive")
            detail.append(f"{how} though not an output: {name!r}")
    if case.kind == "resume" and r.get("resume_same") is not True:
        cls.append("destructive")
        detail.append(f"resumed sweep differs from an uninterrupted one: {r.get('resume_same')}")
    # stops
    if case.kind == "signal":
        if r["signalled"] and not r["timed_out"]:
            if r["stop_delay"] > 1.0:
                cls.append("stop")
                detail.append(f"exited {r['stop_delay']:.2f} s after {case.sig.name}")
            if rc not in (3,) and not (rc == 0 and r["stop_delay"] < 0.05):
                cls.append("stop")
                detail.append(f"exit {rc} after {case.sig.name}, not 3")
            if rc == 3 and r["out_head"]:
                cls.append("stop")
                detail.append("printed on stdout though stopped")
        elif r["timed_out"]:
            cls.append("stop")
        else:
            detail.append("finished before the signal (no stop tested)")
    if case.kind == "python" and case.note == "stop" and r["timed_out"]:
        cls.append("stop")
        detail.append("SIGINT 1 s after the start did not end the call")
    if case.kind == "budget":
        budget = float(case.note.split()[1])
        if rc == 3 and r["wall"] > budget + 1.0:
            cls.append("stop")
            detail.append(f"--max-seconds {budget}: exited after {r['wall']:.2f} s")
    # expectations
    bad_cls = {"crash", "internal", "hang", "memory"}
    if case.expect == "bad" and rc == 0 and not (set(cls) & bad_cls):
        cls.append("silent")
        detail.append("exit 0" + (f"; stdout: {first_line(r['out_head'])!r}" if r["out_head"] else ""))
    if case.expect == "good" and rc != 0 and not (set(cls) & bad_cls):
        cls.append("rejected-valid")
    if case.kind == "python" and case.expect == "bad" and rc == 0:
        pass  # counted as silent above
    if case.kind not in ("python",) and rc == 2 and case.needles and not stopped:
        low = err.lower()
        forms = set()
        for n in case.needles:
            n = str(n).strip().lower()
            forms.add(n)
            m = re.fullmatch(r"[+-]?0*(\d+)", n)
            if m:
                forms.add(m.group(1))
        if not any(f in low for f in forms if f):
            cls.append("misleading")
            detail.append("message names none of: " + ", ".join(repr(n) for n in case.needles[:3]))
    if case.kind == "python" and rc == 1 and case.expect in ("bad", "any"):
        # ConfigError (a ValueError) or TypeError are fine
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if not re.search(r"^(iosim\.)?(_iosim\.)?(ConfigError|InfeasibleError|ValueError|TypeError)\b", err, re.M):
            if "internal" not in cls:
                cls.append("internal")
                detail.append(f"raised {last[:120]!r}")
    if not cls:
        cls = ["ok"]
    return sorted(set(cls), key=CLASSES.index), detail


# ----------------------------------------------------------------------------- main

def all_cases(fx):
    cases = []
    gen_numbers(cases)
    gen_enums(cases)
    gen_files(cases, fx)
    gen_outputs(cases)
    gen_set(cases)
    gen_shapes(cases)
    gen_signals(cases)
    gen_devfull(cases)
    gen_python(cases)
    seen = set()
    for c in cases:
        assert c.id not in seen, c.id
        seen.add(c.id)
    return cases


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the iosim binary to probe")
    ap.add_argument("--python-path", default="", help="a folder holding the built iosim Python package "
                                                      "(PYTHONPATH); without it the python.* cases are skipped")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--only", default="", help="regular expression: run only the matching case ids")
    ap.add_argument("--skip", default="", help="regular expression: skip matching case ids")
    ap.add_argument("--list", action="store_true", help="print the case ids and exit")
    ap.add_argument("--out", default="", help="write the Markdown results here")
    ap.add_argument("--json", default="", help="write every outcome as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    tmproot = tempfile.mkdtemp(prefix="iosim-probe-")
    fx = os.path.join(tmproot, "fx")
    os.makedirs(os.path.join(tmproot, "cases"))
    os.makedirs(os.path.join(tmproot, "logs"))
    make_fixtures(fx, binary)
    fx_before = snapshot(fx)
    cases = all_cases(fx)
    if not a.python_path:
        cases = [c for c in cases if c.kind != "python"]
    if a.only:
        cases = [c for c in cases if re.search(a.only, c.id)]
    if a.skip:
        cases = [c for c in cases if not re.search(a.skip, c.id)]
    if a.list:
        for c in cases:
            print(c.id)
        return 0
    pypath = os.path.abspath(a.python_path) if a.python_path else ""
    t0 = time.time()
    results = []
    lock = threading.Lock()
    # signal and budget cases measure time: they run alone, after the rest
    timed = [c for c in cases if c.kind in ("signal", "budget", "resume")]
    rest = [c for c in cases if c not in timed]
    done = [0]

    def go(c):
        try:
            r = run_case(c, binary, tmproot, fx, repo, pypath, a.timeout)
        except Exception as e:  # a bug of the probe itself: report, don't stop
            r = dict(id=c.id, rc=None, classes=["probe-error"], detail=[repr(e)], err="", out_head="",
                     repro=c.id, wall=0, maxrss=0)
        with lock:
            done[0] += 1
            if a.verbose or r["classes"] != ["ok"]:
                print(f"[{done[0]}/{len(cases)}] {c.id}: {','.join(r['classes'])} rc={r['rc']} "
                      f"{r['wall']:.2f}s {first_line(r['err'])[:150]}", flush=True)
        return r

    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results += list(ex.map(go, rest))
    for c in timed:
        results.append(go(c))
    fx_after = snapshot(fx)
    fx_changes = sorted(k for k in set(fx_before) | set(fx_after) if fx_before.get(k) != fx_after.get(k))
    elapsed = time.time() - t0
    by_id = {c.id: c for c in cases}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    md = render(results, by_id, binary, elapsed, fx_changes, a)
    if a.out:
        with open(a.out, "w") as f:
            f.write(md)
    else:
        print(md)
    if not a.keep:
        subprocess.run(["rm", "-rf", tmproot])
    else:
        print("kept", tmproot, file=sys.stderr)
    return 0


def render(results, by_id, binary, elapsed, fx_changes, a):
    from collections import Counter
    counts = Counter()
    for r in results:
        for c in r["classes"]:
            counts[c] += 1
    n_ok = sum(1 for r in results if r["classes"] == ["ok"])
    try:
        ver = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        ver = "?"
    lines = [f"# iosim reliability probe: results", "",
             f"Binary: `{ver}`. {len(results)} inputs in {elapsed:.0f} s "
             f"(`--jobs {a.jobs}`, timeout {a.timeout:g} s, address space capped at {AS_CAP // GIB} GiB, "
             f"peak RSS flagged above {MEM_FLAG // GIB} GiB).", "",
             "| class | inputs |", "|---|---|"]
    for c in CLASSES + ["probe-error"]:
        if c == "ok":
            lines.append(f"| ok (no finding) | {n_ok} |")
        elif counts.get(c):
            lines.append(f"| {c} | {counts[c]} |")
    lines.append("")
    lines.append("An input can be in several classes. Reproducers: `$FX` is the fixture folder the probe "
                 "makes (profile.yaml = `iosim profiles --show h100-sxm5-80gb`, kernel.yaml = `iosim kernels "
                 "--show flash2`, sweep.json = `iosim sweep --seq 128,256 --algo flash1,flash2 -o sweep.json`, "
                 "meas.json, trace.csv, pattern.txt, bt.txt, ncu.csv, wg1.yaml copied from tests/data); each "
                 "command runs in an empty folder. `python3 scripts/probe/probe.py --bin BIN --only 'ID' -v "
                 "--keep` reruns one case exactly.")
    if fx_changes:
        lines += ["", f"**Fixture files changed during the run**: {fx_changes}"]
    lines.append("")
    order = ["crash", "internal", "hang", "destructive", "memory", "stop", "silent", "rejected-valid",
             "misleading", "probe-error"]
    for c in order:
        rs = [r for r in results if c in r["classes"]]
        if not rs:
            continue
        lines += [f"## {c} ({len(rs)})", ""]
        for r in rs:
            case = by_id.get(r["id"])
            obs = first_line(r["err"]) or first_line(r["out_head"]) or "(nothing printed)"
            lines.append(f"- `{r['id']}` (exit {r['rc']}, {r['wall']:.2f} s, peak {r['maxrss'] / (1 << 20):.0f} MiB"
                         + (f"; {'; '.join(r['detail'])}" if r.get("detail") else "") + ")")
            lines.append(f"  - repro: `{r['repro']}`".replace("\n", "\\n"))
            lines.append(f"  - printed: `{obs}`".replace("\n", "\\n"))
        lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
