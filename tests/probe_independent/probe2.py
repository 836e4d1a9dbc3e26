#!/usr/bin/env python3
"""An independent probe of iosim's CLI and Python package (stdlib only).

Written from README.md, docs/*.md, `iosim --help` and each subcommand's `--help` alone (not from
the project's own probe, fuzz or bad-input corpora). Each generated input runs in a fresh temp
folder with a timeout and is classified:

  crash        killed by a signal, or an exit code outside {0, 2, 3}; in Python an exception
               other than ConfigError / InfeasibleError / ValueError / TypeError
  internal     a message with library or runtime text (std::, yaml-cpp, json.exception,
               terminate called, "internal", pybind11's words, a traceback)
  hang         past its timeout, or a stop (SIGINT/SIGTERM) not honoured within STOP_GRACE s
  destructive  a file that was there before changed or went away (the command's named output
               excepted when it succeeded), or a file left behind by a command that failed
  silent       exit 0 (Python: a return) on input that is clearly invalid, or NaN / inf /
               a negative byte count or time in a successful output
  misleading   exit 2 whose message names none of the expected flag / key / value

Usage: python3 tests/probe_independent/probe2.py --bin build/iosim --python-path build/python
       [--jobs 2] [--only REGEX] [--out results.json]
"""
import argparse
import concurrent.futures as cf
import hashlib
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 20.0
STOP_GRACE = 2.0

INTERNAL_RE = re.compile(
    r"internal|terminate called|what\(\)|std::|basic_string|json\.exception|nlohmann|"
    r"yaml-cpp|YAML::|bad_alloc|bad_cast|bad_optional|bad_variant|Traceback|Segmentation|"
    r"\bstoi\b|\bstod\b|\bstoul|\bstoll\b|out_of_range|invalid_argument|CLI11|Assertion|"
    r"incompatible function arguments|Unable to cast|pybind11|core dumped|__cxa|"
    r"parse_error\.\d|type_error\.\d", re.I)


# ----------------------------------------------------------------------------------------------
# cases


class Case:
    """One CLI input. argv items may hold {d} (the case's folder). setup(d) writes its files.
    kind: 'invalid' (must be refused), 'valid' (should run), 'any' (either is fine).
    expect: words of which the refusal's message must name at least one (misleading otherwise).
    outputs: paths (relative to d) the command may write when it succeeds.
    mode: None, 'sigint', 'sigterm', 'closed_stdout', 'devfull', 'fullpipe'."""

    def __init__(self, cid, argv, kind="any", expect=(), setup=None, outputs=(), mode=None,
                 delay=0.5, timeout=TIMEOUT, stdin=None, group=""):
        self.cid = cid
        self.argv = list(argv)
        self.kind = kind
        self.expect = list(expect)
        self.setup = setup
        self.outputs = list(outputs)
        self.mode = mode
        self.delay = delay
        self.timeout = timeout
        self.stdin = stdin
        self.group = group or argv[0] if argv else group


SEEDS = {}  # name -> bytes, filled by load_seeds()


def load_seeds(binary):
    def out(*args):
        return subprocess.run([binary, *args], capture_output=True, timeout=60, check=True).stdout

    SEEDS["profile"] = out("profiles", "--show", "h100-sxm5-80gb")
    SEEDS["profile_a100"] = out("profiles", "--show", "a100-sxm4-40gb")
    SEEDS["kernel"] = open(os.path.join(ROOT, "docs/kernels/wg1_tma_fwd.yaml"), "rb").read()
    SEEDS["kernel_flash2"] = out("kernels", "--show", "flash2")
    SEEDS["model"] = open(os.path.join(ROOT, "models/llama-3-8b.yaml"), "rb").read()
    SEEDS["measured"] = open(os.path.join(ROOT, "tests/data/measurements_small.json"), "rb").read()
    SEEDS["ncu"] = open(os.path.join(ROOT, "tests/data/kernels/ncu_wg1_h100.csv"), "rb").read()
    SEEDS["trace"] = open(os.path.join(ROOT, "tests/data/kvcache/trace.csv"), "rb").read()
    SEEDS["block_table"] = b"5 0 2\n6 1 4\n"
    SEEDS["pattern"] = b"1 0 0 0\n1 1 0 0\n1 0 1 0\n1 0 0 1\n"
    with tempfile.TemporaryDirectory() as d:
        for fmt in ("json", "csv"):
            p = os.path.join(d, "s." + fmt)
            subprocess.run([binary, "sweep", "--seq", "64,128", "--head-dim", "64",
                            "--block-kv", "32,64", "--jobs", "1", "--out", p],
                           capture_output=True, timeout=120, check=True)
            SEEDS["sweep_" + fmt] = open(p, "rb").read()


def writer(files):
    """setup function writing {relpath: bytes|('fifo',)|('dir',)|('symlink', target)|
    ('hardlink', other)}"""
    def setup(d):
        for rel, content in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if isinstance(content, tuple):
                if content[0] == "fifo":
                    os.mkfifo(p)
                elif content[0] == "dir":
                    os.makedirs(p, exist_ok=True)
                elif content[0] == "symlink":
                    os.symlink(content[1], p)
                elif content[0] == "hardlink":
                    os.link(os.path.join(d, content[1]), p)
            else:
                with open(p, "wb") as f:
                    f.write(content)
    return setup


# ---- value catalogues --------------------------------------------------------------------

INT_INVALID = ["-1", "abc", "", "1.5", "nan", "inf", "-inf", "0x10", "12abc", "\u0663",
               "\uff16\uff14", "9223372036854775808", "18446744073709551616",
               "99999999999999999999", "-9223372036854775809", "1e308", "64,128", " ", "--",
               "1 2", "- 1", "1_000"]
INT_ANY = ["0", "1", "2", "3", "7", "2147483647", "2147483648", "4294967296",
           "9223372036854775807", "+1", "010", "1e3", " 64", "64 "]
FLOAT_INVALID = ["nan", "NaN", "inf", "-inf", "-1", "abc", "", "1e309", "1,5", "0x1p3", "\u0663",
                 "1e", "--"]
FLOAT_ANY = ["0", "-0", "1e-300", "5e-324", "1e308", "1", "0.5", "2147483648", " 1"]
TEXT_ODD = ["", " ", "FLASH2", "flash2 ", " flash2", "fl\u0430sh2", "none", "a" * 5000,
            "\u00e9", "x\ty", "-", "--help", "0"]


def flag_cases(prefix, base, flag, typ, valid_vals=(), extra_invalid=(), extra_any=(),
               expect=None):
    """Cases of one flag given odd values, appended to a base command."""
    out = []
    expect = [flag] if expect is None else expect
    if typ == "out":  # an output path: odd names are names; these are not
        for v in ["", "/", ".", "{d}/no/such/dir/x", "{d}/", "/dev/full", "/proc/version"]:
            out.append(Case(f"{prefix}{flag}={v!r}", base + [flag, v], "invalid",
                            expect + ([v] if len(v) > 1 else [])))
        for v in TEXT_ODD[1:] + ["o.html", "./o.html", "a/../o.html"]:
            if v in ("-", "--help"):
                continue
            out.append(Case(f"{prefix}{flag}={v!r}"[:200], base + [flag, v], "any", expect,
                            outputs=[v, os.path.basename(v)]))
        out.append(Case(f"{prefix}{flag}<novalue>", base + [flag], "invalid", expect))
        return out
    if typ == "int":
        inval, anyv = INT_INVALID, INT_ANY
        if flag == "--seed":  # an unsigned 64-bit number: 2^63 is in range
            inval = [v for v in inval if v != "9223372036854775808"]
    elif typ == "float":
        inval, anyv = FLOAT_INVALID, FLOAT_ANY
        if flag == "--max-seconds":  # inf: no limit, as 0
            inval = [v for v in inval if v != "inf"]
    else:
        inval, anyv = TEXT_ODD, []
    for v in list(inval) + list(extra_invalid):
        out.append(Case(f"{prefix}{flag}={v!r}"[:200], base + [flag, v], "invalid",
                        expect + ([v] if v.strip() else []) + [f"'{v}'"]))
    for v in list(anyv) + list(extra_any):
        out.append(Case(f"{prefix}{flag}={v!r}"[:200], base + [flag, v], "any", expect))
    for v in valid_vals:
        out.append(Case(f"{prefix}{flag}={v!r}"[:200], base + [flag, v], "valid", expect))
    # the flag with no value at the end, and given twice
    out.append(Case(f"{prefix}{flag}<novalue>", base + [flag], "invalid", expect))
    if valid_vals:
        out.append(Case(f"{prefix}{flag}x2same", base + [flag, valid_vals[0], flag,
                                                         valid_vals[0]], "any", expect))
        if len(valid_vals) > 1:
            out.append(Case(f"{prefix}{flag}x2diff", base + [flag, valid_vals[0], flag,
                                                             valid_vals[1]], "any", expect,
                            group="repeated"))
    return out


RUN_BASE = ["run", "--seq", "64", "--head-dim", "64", "--format", "json", "--max-seconds", "10"]
SWEEP_BASE = ["sweep", "--seq", "64", "--head-dim", "64", "--jobs", "1", "--max-seconds", "10"]
TUNE_BASE = ["tune", "--seq", "128", "--head-dim", "64", "--jobs", "1", "--max-seconds", "10",
             "--format", "json", "--block-q", "64,128", "--block-kv", "32,64", "--stages", "2",
             "--threads", "128"]
EXPLAIN_BASE = ["explain", "--seq", "16", "--head-dim", "8", "--no-color"]
KV_BASE = ["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--requests", "20",
           "--max-seconds", "10", "--format", "json"]
LAYER_BASE = ["layer", "--model", "llama-3-8b", "--seq", "128", "--format", "json"]
DEMO_BASE = ["demo", "--seq", "128", "--batch", "1", "--heads", "1"]

RUN_INT_FLAGS = {  # flag: valid values
    "--batch": ["1", "2"], "--heads": ["1", "2"], "--kv-heads": ["1"], "--head-dim": ["64", "32"],
    "--seq": ["64", "128"], "--seq-kv": ["64", "128"], "--block-q": ["64", "128"],
    "--block-kv": ["32", "64"], "--threads": ["128", "256"], "--stages": ["2", "3"],
    "--seed": ["1", "2"],
}
RUN_FLOAT_FLAGS = {"--sm-clock-mhz": ["1500", "1000"], "--dropout": ["0.1", "0.5"],
                   "--max-seconds": ["5", "10"]}
RUN_ENUM_FLAGS = {"--profile": ["a100-sxm4-40gb", "h200-sxm-141gb"],
                  "--algo": ["flash1", "flash2"], "--dtype": ["bf16", "fp32"],
                  "--pass": ["bwd", "fwdbwd"], "--l2": ["off", "on"],
                  "--format": ["csv", "table"], "--kernel": ["flash2", "flash1"],
                  "--max-memory": ["8G", "512M"]}


def cli_flag_cases():
    cases = []
    for flag, vals in RUN_INT_FLAGS.items():
        base = [a for a in RUN_BASE]
        if flag in ("--seq", "--head-dim"):
            i = base.index(flag)
            base = base[:i] + base[i + 2:]
            if flag == "--seq":
                # a value that is not required-looking: --seq stays required
                pass
        cases += flag_cases("run", base, flag, "int", vals)
    for flag, vals in RUN_FLOAT_FLAGS.items():
        base = [a for a in RUN_BASE]
        if flag == "--max-seconds":
            base = base[:-2]
        cases += flag_cases("run", base, flag, "float", vals)
    for flag, vals in RUN_ENUM_FLAGS.items():
        base = [a for a in RUN_BASE]
        if flag == "--format":
            base = base[:6] + base[8:]
        extra = ["12", "8Q", "-1G", "1e30G", "0", "nanG", "0.0001K"] if flag == "--max-memory" \
            else []
        cases += flag_cases("run", base, flag, "text", vals, extra_invalid=extra)
    # flags meant for other algorithms
    paged = RUN_BASE + ["--algo", "paged"]
    fd = RUN_BASE + ["--algo", "flash-decoding"]
    cases += flag_cases("run.paged", paged, "--page-tokens", "int", ["16", "32"])
    cases += flag_cases("run.paged", paged, "--splits", "int", ["2", "4"])
    cases += flag_cases("run.fd", fd, "--splits", "int", ["2", "4"])
    f3 = RUN_BASE + ["--algo", "flash3"]
    cases += flag_cases("run.f3", f3, "--warpgroups", "text", ["pingpong", "cooperative"])
    cases += flag_cases("run.f3", f3 + ["--pass", "fwdbwd"], "--backward-block-q", "int",
                        ["64", "128"])
    cases += flag_cases("run.f3", f3 + ["--pass", "fwdbwd"], "--backward-block-kv", "int",
                        ["64", "128"])
    gqa = RUN_BASE + ["--heads", "4", "--kv-heads", "2"]
    cases += flag_cases("run.gqa", gqa, "--pack-gqa", "text", ["on", "off"])
    bs = RUN_BASE + ["--algo", "block-sparse"]
    cases += flag_cases("run.bs", bs, "--pattern", "text", ["local:1", "causal"],
                        extra_invalid=["local:0", "local:-1", "local:", "strided:0",
                                       "random:2:1", "random:-0.5:1", "random:nan:1",
                                       "random:0.5", "random:0.5:-1", "file:", "file:nope.txt",
                                       "nope.txt",
                                       "local:1:2", "LOCAL:1", "local:99999999999999999999",
                                       "strided:abc", "random:0.5:1:3"],
                        extra_any=["random:0:1", "random:1:1", "local:100000",
                                   "strided:1", "random:1e-300:1"])
    cases += flag_cases("run", RUN_BASE, "--set", "text", ["l2.size_bytes=20e6",
                                                           "sm.count=100"],
                        extra_invalid=["l2.size_bytes=0", "l2.size_bytes=-1",
                                       "l2.size_bytes=nan", "l2.size_bytes=inf",
                                       "l2.size_bytes=", "=5", "l2.size_bytes",
                                       "foo.bar=1", "l2=5", "l2.size_bytes=abc",
                                       "sm.count=0", "sm.count=1.5", "sm.count=-3",
                                       "sm.count=2147483648", "hbm.achievable_fraction=2",
                                       "hbm.achievable_fraction=-0.5", "l2.size_bytes=1e308",
                                       "sm.count=99999999999999999999", "l2.line_bytes=3",
                                       "sm.count=1e9", "name=x", "l2.size_bytes==5",
                                       "l2.size_bytes=5,6", "sm.boost_clock_mhz=1e12",
                                       "l2.size_bytes.value=5", "sm.count.source=x"],
                        extra_any=["l2.size_bytes=1", "sm.count=1", "l2.partitions=1",
                                   "l2.partitions=3", "launch.kernel_overhead_us=0",
                                   "description=x", "l2.max_dirty_fraction=0",
                                   "l2.max_dirty_fraction=1", "hbm.latency_ns=0"])
    for fl in ("--html", "--svg"):
        cases += flag_cases("run", RUN_BASE, fl, "out", [], expect=[fl])
    # ---- sweep: list flags
    LIST_BAD = ["", ",", "64,,128", "64:", ":", "64:128:+0", "64:128:x1", "64:128:x0",
                "128:64:x2", "64:128:*2", "64:128:+-1", "64:1e9:+1", "1:100000000:+1",
                "64:128:x2:5", "a,b", "-1", "0x40", "64;128", "64..128", "nan", "64:nan:+1",
                "1:9223372036854775807:x2", "9223372036854775807:9223372036854775807:+1"]
    LIST_ANY = ["64,64", "64", "64:128:+64", "64:256:x2", "128,64", "64:65:+1",
                "64:64:+1", " 64 , 128 "]
    for flag in ("--seq", "--batch", "--heads", "--head-dim", "--block-kv", "--seq-kv",
                 "--stages", "--threads", "--kv-heads", "--splits", "--page-tokens"):
        base = list(SWEEP_BASE)
        if flag in ("--seq", "--head-dim"):
            i = base.index(flag)
            base = base[:i] + base[i + 2:]
        for v in LIST_BAD:
            cases.append(Case(f"sweep{flag}={v!r}", base + [flag, v], "invalid", [flag, v]))
        for v in LIST_ANY:
            cases.append(Case(f"sweep{flag}={v!r}", base + [flag, v], "any", [flag]))
    for flag, bad in (("--sm-clock-mhz", ["nan", "-5", "1500,nan", "1000:2000:+0", "inf"]),
                      ("--dropout", ["1", "-0.1", "0.5,nan", "0:1:+0.5", "1.5"]),
                      ("--algo", ["flash2,bogus", "", "flash2,,flash1"]),
                      ("--dtype", ["fp16,xx", ""]), ("--pass", ["fwd,", "back"]),
                      ("--l2", ["maybe"]), ("--shard", ["0/1", "2/1", "1/0", "a/b", "1/2/3",
                                                        "-1/2", "", "1", "1/-2",
                                                        "1/99999999999999999999"]),
                      ("--format", ["xml", "", "JSON"]), ("-j", ["-1", "abc", ""]),
                      ("--jobs", ["99999999999999999999", "1.5"]),
                      ("--set", ["l2.size_bytes=10e6,nan", "l2.size_bytes=0,1",
                                 "l2.size_bytes=1:0:+1", "foo=1"]),
                      ("--max-seconds", ["-1", "nan"]), ("--max-memory", ["0", "x", "-1G"]),
                      ("--out", ["", "x.txt", "x", "x.JSONL", "/dev/null", "."])):
        for v in bad:
            cases.append(Case(f"sweep{flag}={v!r}", SWEEP_BASE + [flag, v], "invalid",
                              [flag, v] + [f"'{x}'" for x in v.split(",") if x] if v else
                              [flag]))
    cases.append(Case("sweep--resume-no-out", SWEEP_BASE + ["--resume"], "invalid",
                      ["--resume", "--out"]))
    cases.append(Case("sweep-csv-out-json-format", SWEEP_BASE + ["--out", "{d}/x.json",
                                                                 "--format", "csv"], "any",
                      outputs=["x.json"]))
    cases.append(Case("sweep-ok-out", SWEEP_BASE + ["--out", "{d}/x.csv"], "valid",
                      outputs=["x.csv"]))
    # ---- tune
    for flag in ("--block-q", "--block-kv", "--stages", "--threads"):
        for v in LIST_BAD[:14] + ["-64", "0,-1", "99999999999999999999"]:
            cases.append(Case(f"tune{flag}={v!r}", TUNE_BASE + [flag, v], "invalid", [flag, v]))
        for v in ["0", "1", "0,0", "100000", "64:64:+1", "7"]:
            cases.append(Case(f"tune{flag}={v!r}", TUNE_BASE + [flag, v], "any", [flag]))
    cases += flag_cases("tune", TUNE_BASE, "--top", "int", ["1", "3"])
    cases += flag_cases("tune", TUNE_BASE, "--tie-band", "float", ["5", "10"],
                        extra_invalid=["101", "1e308"])
    cases += flag_cases("tune", TUNE_BASE, "--jobs", "int", ["1", "2"])
    cases += flag_cases("tune", [a for a in TUNE_BASE if True], "--seq-kv", "int", ["128"])
    # ---- explain
    for flag, vals, inval in (
            ("--seq", ["16", "64"], ["65", "1000"]), ("--head-dim", ["8", "16"], ["17", "1024"]),
            ("--batch", ["1", "2"], ["5", "1000"]), ("--heads", ["1", "4"], ["5"]),
            ("--step", ["1", "2"], ["99999999"]), ("--until", ["1", "3"], ["99999999"]),
            ("--block-q", ["16"], []), ("--block-kv", ["16"], []),
            ("--seq-kv", ["16", "32"], ["65"])):
        base = list(EXPLAIN_BASE)
        if flag in base:
            i = base.index(flag)
            base = base[:i] + base[i + 2:]
        cases += flag_cases("explain", base, flag, "int", vals, extra_invalid=inval)
    cases += flag_cases("explain", EXPLAIN_BASE, "--focus", "text", ["cta:0"],
                        extra_invalid=["cta:", "cta:-1", "cta:abc", "cta:99999", "ctA:0",
                                       "cta:0:1", "cta:1.5", "cta:99999999999999999999",
                                       "warp:0"])
    cases += flag_cases("explain", EXPLAIN_BASE, "--compare", "text",
                        ["standard,flash1,flash2", "flash1,flash2"],
                        extra_invalid=["flash2", "flash2,bogus", "flash2,", ",", "flash2,,flash1"],
                        extra_any=["flash2,flash2", "flash3,flash2", "paged,flash-decoding"])
    cases += flag_cases("explain", EXPLAIN_BASE, "--html", "out", [])
    cases += flag_cases("explain", EXPLAIN_BASE, "--algo", "text", ["flash1", "standard"])
    # ---- kvcache
    kvi = {"--layers": ["2", "4"], "--kv-heads": ["2", "8"], "--head-dim": ["64", "128"],
           "--block-tokens": ["16", "32"], "--requests": ["20", "10"],
           "--max-prompt-tokens": ["2048", "100"], "--max-output-tokens": ["2048", "100"],
           "--samples": ["1", "2"], "--shared-prefix-tokens": ["0", "16"],
           "--prompt-groups": ["1", "2"], "--max-running": ["0", "4"],
           "--series-points": ["100", "10"], "--seed": ["1", "2"]}
    for flag, vals in kvi.items():
        base = list(KV_BASE)
        if flag in base:
            i = base.index(flag)
            base = base[:i] + base[i + 2:]
        cases += flag_cases("kvcache", base, flag, "int", vals)
    for flag, vals in {"--weights-bytes": ["16e9", "1e9"], "--kv-budget-bytes": ["1e9", "2e9"],
                       "--watermark": ["0.01", "0.1"], "--max-seconds": ["5", "10"]}.items():
        base = list(KV_BASE)
        if flag == "--max-seconds":
            base = KV_BASE[:-4] + KV_BASE[-2:]
        cases += flag_cases("kvcache", base, flag, "float", vals,
                            extra_invalid=["1e300"] if "bytes" in flag else
                            (["1", "1.5"] if flag == "--watermark" else []))
    DIST_BAD = ["const:-5", "const:", "const", "uniform:10,5", "uniform:5", "normal:5,-1",
                "normal:nan,1", "lognormal:5,nan", "lognormal:5,-1", "foo:1", "const:5:6",
                "const:1e30", "uniform:-5,5", "const:abc", "normal:inf,1", "", "const:5,6",
                "lognormal:1000,1", "uniform:,"]
    for flag in ("--prompt-len", "--output-len"):
        for v in DIST_BAD:
            cases.append(Case(f"kvcache{flag}={v!r}", KV_BASE + [flag, v], "invalid", [flag, v]))
        for v in ["const:0", "const:1", "uniform:5,5", "normal:5,0", "lognormal:0,0",
                  "const:100000000"]:
            cases.append(Case(f"kvcache{flag}={v!r}", KV_BASE + [flag, v], "any", [flag]))
    for v in ["poisson:0", "poisson:-1", "poisson:nan", "poisson:inf", "poisson:", "poisson",
              "burst:1", "Burst", "", "poisson:1e-300", "poisson:1e300"]:
        cases.append(Case(f"kvcache--arrivals={v!r}", KV_BASE + ["--arrivals", v],
                          "any" if v in ("poisson:1e-300", "poisson:1e300") else "invalid",
                          ["--arrivals", v]))
    for v in ["contiguous", "paged", "both", "", "Paged", "none"]:
        cases.append(Case(f"kvcache--policy={v!r}", KV_BASE + ["--policy", v],
                          "valid" if v in ("contiguous", "paged", "both") else "invalid",
                          ["--policy", f"'{v}'"]))
    for v in ["fp16", "bf16", "fp32", "fp8", "int8", "", "FP16"]:
        cases.append(Case(f"kvcache--dtype={v!r}", KV_BASE + ["--dtype", v],
                          "valid" if v in ("fp16", "bf16", "fp32", "fp8") else "invalid",
                          ["--dtype", f"'{v}'"]))
    for v in ["a100-sxm4-40gb", "bogus", ""]:
        cases.append(Case(f"kvcache--profile={v!r}", KV_BASE + ["--profile", v],
                          "valid" if v.startswith("a100") else "invalid",
                          ["--profile", f"'{v}'"]))
    # ---- layer
    lint = {"--tp": ["1", "2"], "--gemm-bm": ["128", "64"], "--gemm-bn": ["128", "64"],
            "--gemm-bk": ["64", "32"], "--gemm-cluster-m": ["1", "2"],
            "--gemm-cluster-n": ["1", "2"], "--gemm-group-m": ["8", "1"],
            "--gemm-split-k": ["1", "2"]}
    for flag, vals in lint.items():
        cases += flag_cases("layer", LAYER_BASE, flag, "int", vals,
                            extra_invalid=["3", "17"] if flag in ("--tp", "--gemm-bk") else [])
    for flag in ("--batch", "--seq", "--context"):
        base = list(LAYER_BASE)
        if flag in base:
            i = base.index(flag)
            base = base[:i] + base[i + 2:] + (["--seq", "128"] if flag == "--seq" else [])
            base = base[:-2] if flag == "--seq" else base
        for v in LIST_BAD:
            cases.append(Case(f"layer{flag}={v!r}", base + [flag, v], "invalid", [flag, v]))
        for v in ["1", "128", "64,128", "1:4:x2"]:
            cases.append(Case(f"layer{flag}={v!r}", base + [flag, v], "any", [flag]))
    for flag, vals, bad in (("--phase", ["prefill", "decode"], ["", "Decode", "x"]),
                            ("--dtype", ["bf16", "fp16"], ["fp32", "fp8", "", "x"]),
                            ("--launch", ["graph", "stream"], ["", "x"]),
                            ("--l2", ["on", "off"], ["", "x"]),
                            ("--model", ["mistral-7b", "qwen2-7b"], ["", "llama", "x.yaml"]),
                            ("--algo", ["flash2", "flash1"], ["", "bogus"]),
                            ("--profile", ["a100-sxm4-80gb"], ["", "bogus"]),
                            ("--sm-clock-mhz", ["1500", "0"], ["nan", "-1", "inf", "abc", "10001"])):
        base = list(LAYER_BASE)
        if flag == "--model":
            base = ["layer", "--seq", "128", "--format", "json"]
        for v in vals:
            cases.append(Case(f"layer{flag}={v!r}", base + [flag, v], "valid", [flag]))
        for v in bad:
            cases.append(Case(f"layer{flag}={v!r}", base + [flag, v], "invalid",
                              [flag, v] if v else [flag]))
    # ---- demo
    for flag, vals in (("--batch", ["1", "2"]), ("--heads", ["1", "2"]),
                       ("--head-dim", ["64", "128"]), ("--seq", ["128", "256"])):
        base = list(DEMO_BASE)
        if flag in base:
            i = base.index(flag)
            base = base[:i] + base[i + 2:]
        cases += flag_cases("demo", base, flag, "int", vals)
    cases += flag_cases("demo", DEMO_BASE, "--dtype", "text", ["bf16", "fp16"])
    cases += flag_cases("demo", DEMO_BASE, "--profile", "text", ["a100-sxm4-40gb"])
    # ---- profiles / kernels
    for v in ["h100-sxm5-80gb", "a100-sxm4-40gb"]:
        cases.append(Case(f"profiles--show={v}", ["profiles", "--show", v], "valid"))
    for v in TEXT_ODD + ["../hwprofiles/h100-sxm5-80gb", "hwprofiles/h100-sxm5-80gb.yaml"]:
        cases.append(Case(f"profiles--show={v!r}"[:100], ["profiles", "--show", v], "invalid",
                          ["--show", f"'{v}'"]))
    cases.append(Case("profiles--template--show", ["profiles", "--template", "--show",
                                                   "h100-sxm5-80gb"], "invalid",
                      ["--template", "--show"]))
    cases.append(Case("profiles--template=x", ["profiles", "--template=x"], "invalid",
                      ["--template"]))
    for v in ["flash2", "paged", "standard"]:
        cases.append(Case(f"kernels--show={v}", ["kernels", "--show", v], "valid"))
    for v in TEXT_ODD + ["flash2,flash1", "docs/kernels/wg1_tma_fwd.yaml"]:
        cases.append(Case(f"kernels--show={v!r}"[:100], ["kernels", "--show", v], "invalid",
                          ["--show", f"'{v}'"]))
    # ---- unknown flags / subcommands / positionals everywhere
    bases = {"run": RUN_BASE, "sweep": SWEEP_BASE, "tune": TUNE_BASE, "explain": EXPLAIN_BASE,
             "kvcache": KV_BASE, "layer": LAYER_BASE, "demo": DEMO_BASE,
             "profiles": ["profiles"], "kernels": ["kernels"],
             "validate": ["validate", os.path.join(ROOT, "tests/data/measurements_small.json")],
             "report": ["report", "{d}/s.json"]}
    for name, base in bases.items():
        setup = writer({"s.json": SEEDS["sweep_json"]}) if name == "report" else None
        for extra in (["--bogus"], ["--bogus=1"], ["-Z"], ["stray"], ["--"], ["-"],
                      ["--seq=64=64"], ["--SEQ", "64"], ["--se", "64"], ["\u2014seq", "64"],
                      ["--format"], ["--help", "--bogus"], ["--version"]):
            kind = "invalid"
            if extra in (["--help", "--bogus"], ["--"]):
                kind = "any"
            cases.append(Case(f"{name}+{' '.join(extra)}", base + extra, kind,
                              [extra[0].lstrip("-").split("=")[0][:4]] if extra[0] not in
                              ("--", "-") else [],
                              setup=setup))
    for argv in ([], ["bogus"], ["RUN"], ["run"], ["--version", "run"], ["help"], [""],
                 ["run", "--seq"], ["--bogus"]):
        cases.append(Case(f"top:{argv!r}", argv, "any" if argv in ([], ["--version", "run"])
                          else "invalid"))
    return cases


def combo_cases():
    """Inconsistent combinations and hardware lacking a feature."""
    R = RUN_BASE
    A100 = ["--profile", "a100-sxm4-40gb"]
    inv = [
        ("kvheads-not-dividing", R + ["--heads", "4", "--kv-heads", "3"], ["--kv-heads"]),
        ("kvheads-gt-heads", R + ["--heads", "4", "--kv-heads", "8"], ["--kv-heads"]),
        ("kvheads-zero", R + ["--heads", "4", "--kv-heads", "0"], ["--kv-heads"]),
        ("flash3-on-a100", R + A100 + ["--algo", "flash3"], ["flash3", "a100", "A100", "wgmma",
                                                              "TMA", "tma"]),
        ("kernel-flash3-on-a100", R + A100 + ["--kernel", "flash3"],
         ["flash3", "wgmma", "tma", "TMA"]),
        ("wgmma-file-on-a100", R + A100 + ["--kernel", os.path.join(ROOT,
                                                                   "docs/kernels/wg1_tma_fwd.yaml")],
         ["wgmma", "tma", "TMA"]),
        ("fp8-flash2", R + ["--dtype", "fp8", "--algo", "flash2"], ["fp8", "--dtype"]),
        ("fp8-flash3-bwd", R + ["--dtype", "fp8", "--algo", "flash3", "--pass", "bwd"],
         ["fp8", "--dtype", "bwd"]),
        ("fp8-standard", R + ["--dtype", "fp8", "--algo", "standard"], ["fp8", "--dtype"]),
        ("fp8-flash3-a100", R + A100 + ["--dtype", "fp8", "--algo", "flash3"], ["fp8", "flash3"]),
        ("warpgroups-flash2", R + ["--algo", "flash2", "--warpgroups", "pingpong"],
         ["--warpgroups"]),
        ("splits-flash2", R + ["--algo", "flash2", "--splits", "4"], ["--splits"]),
        ("page-tokens-flash2", R + ["--algo", "flash2", "--page-tokens", "32"],
         ["--page-tokens"]),
        ("pattern-flash2", R + ["--algo", "flash2", "--pattern", "local:1"], ["--pattern"]),
        ("bwd-block-q-flash2", R + ["--algo", "flash2", "--backward-block-q", "64"],
         ["--backward-block-q"]),
        ("bwd-block-q-flash3-fwd", R + ["--algo", "flash3", "--backward-block-q", "64"],
         ["--backward-block-q"]),
        ("pack-gqa-on-mha", R + ["--pack-gqa", "on"], ["--pack-gqa"]),
        ("pack-gqa-bwd", R + ["--heads", "4", "--kv-heads", "2", "--pack-gqa", "on", "--pass",
                              "bwd"], ["--pack-gqa"]),
        ("paged-bwd", R + ["--algo", "paged", "--pass", "bwd"], ["bwd", "--pass", "paged"]),
        ("fd-bwd", R + ["--algo", "flash-decoding", "--pass", "bwd"], ["bwd", "--pass"]),
        ("dropout-1", R + ["--dropout", "1"], ["--dropout"]),
        ("threads-2048", R + ["--threads", "2048"], ["--threads"]),
        ("stages-65", R + ["--stages", "65"], ["--stages", "65 stage"]),
        ("kernel-and-algo", R + ["--kernel", "flash1", "--algo", "flash3"],
         ["--kernel", "--algo"]),
        ("demo-fp8", DEMO_BASE + ["--dtype", "fp8"], ["fp8", "--dtype"]),
        ("demo-fp8-h100", DEMO_BASE + ["--dtype", "fp8", "--profile", "h100-sxm5-80gb"],
         ["fp8", "--dtype"]),
        ("explain-flash3-a100", EXPLAIN_BASE + A100 + ["--algo", "flash3"], ["flash3", "wgmma"]),
        ("tune-flash3-a100", TUNE_BASE + A100 + ["--algo", "flash3"], ["flash3", "wgmma"]),
        ("sweep-flash3-a100", SWEEP_BASE + A100 + ["--algo", "flash3"], ["flash3", "wgmma"]),
        ("layer-flash3-a100", LAYER_BASE + ["--profile", "a100-sxm4-40gb", "--algo", "flash3"],
         ["flash3", "wgmma"]),
        ("layer-tp-3", LAYER_BASE + ["--tp", "3"], ["--tp"]),
        ("layer-decode-seq-context", LAYER_BASE[:-2] + ["--phase", "decode", "--context", "64",
                                                        "--seq", "128", "--format", "json"],
         ["--seq", "--context"]),
        ("layer-prefill-context-lt-seq", LAYER_BASE + ["--context", "64"],
         ["--context", "--seq"]),
        ("layer-decode-no-seq", ["layer", "--model", "llama-3-8b", "--phase", "decode"],
         ["--seq", "--context"]),
        ("layer-gemm-bk-17", LAYER_BASE + ["--gemm-bk", "17"], ["--gemm-bk"]),
        ("layer-cluster-on-a100", LAYER_BASE + ["--profile", "a100-sxm4-40gb",
                                                "--gemm-cluster-m", "2"], ["--gemm-cluster-m"]),
        ("explain-step-until", EXPLAIN_BASE + ["--step", "3", "--until", "2"],
         ["--step", "--until"]),
        ("explain-step-compare", EXPLAIN_BASE + ["--step", "3", "--compare", "flash1,flash2"],
         ["--step", "--compare"]),
        ("explain-focus-compare", EXPLAIN_BASE + ["--focus", "cta:0", "--compare",
                                                  "flash1,flash2"], ["--focus", "--compare"]),
        ("validate-time-us-no-ncu", ["validate", os.path.join(ROOT,
                                                              "tests/data/measurements_small.json"),
                                     "--time-us", "5"], ["--time-us"]),
        ("validate-nothing", ["validate"], ["measured", "--ncu"]),
        ("validate-ncu-no-seq", ["validate", "--ncu", os.path.join(ROOT,
                                                                   "tests/data/kernels/"
                                                                   "ncu_wg1_h100.csv"),
                                 "--kernel", os.path.join(ROOT, "docs/kernels/wg1_tma_fwd.yaml")],
         ["--seq"]),
        ("validate-ncu-and-measured", ["validate", os.path.join(ROOT,
                                                                "tests/data/measurements_small."
                                                                "json"),
                                       "--ncu", os.path.join(ROOT, "tests/data/kernels/"
                                                             "ncu_wg1_h100.csv"),
                                       "--kernel", "flash2", "--seq", "64"], ["--ncu"]),
        ("validate-seq-with-measured", ["validate", os.path.join(
            ROOT, "tests/data/measurements_small.json"), "--seq", "64"], ["--seq"]),
        ("report-chartjs-no-html", ["report", "{d}/s.json", "--chartjs", "{d}/s.json"],
         ["--chartjs"]),
        ("report-valprof-no-val", ["report", "{d}/s.json", "--validation-profile",
                                   "h100-sxm5-80gb"], ["--validation-profile"]),
        ("kvcache-budget-and-weights", KV_BASE + ["--kv-budget-bytes", "1e9",
                                                  "--weights-bytes", "1e9"],
         ["--kv-budget-bytes", "--weights-bytes"]),
        ("kvcache-weights-gt-hbm", KV_BASE + ["--weights-bytes", "1e12"], ["--weights-bytes"]),
        ("kvcache-prefix-gt-max-prompt", KV_BASE + ["--shared-prefix-tokens", "5000",
                                                    "--max-prompt-tokens", "100"],
         ["--shared-prefix-tokens", "--max-prompt-tokens"]),
        ("kvcache-trace-and-prompt-len", KV_BASE + ["--trace", os.path.join(
            ROOT, "tests/data/kvcache/trace.csv"), "--prompt-len", "const:5"],
         ["--trace", "--prompt-len"]),
        ("kvcache-trace-and-requests", KV_BASE + ["--trace", os.path.join(
            ROOT, "tests/data/kvcache/trace.csv")], ["--trace", "--requests"]),
        ("kvcache-contig-block-tokens", KV_BASE + ["--policy", "contiguous", "--block-tokens",
                                                   "64"], ["--block-tokens"]),
        ("kvcache-contig-watermark", KV_BASE + ["--policy", "contiguous", "--watermark", "0.5"],
         ["--watermark"]),
        ("kvcache-block-gt-max", KV_BASE + ["--block-tokens", "100000"], ["--block-tokens"]),
        ("sweep-kvheads-list", SWEEP_BASE + ["--heads", "4", "--kv-heads", "3"], ["--kv-heads"]),
        ("tune-pattern-flash2", TUNE_BASE + ["--pattern", "local:1"], ["--pattern"]),
        ("run-set-same-key-twice", R + ["--set", "sm.count=100", "--set", "sm.count=200"],
         ["sm.count"]),
        ("run-set-and-profile-file-bad", R + ["--set", "sm.count=0", "--profile",
                                              "a100-sxm4-40gb"], ["sm.count"]),
        ("run-seqkv-causal-lt", R + ["--seq-kv", "32", "--causal"], ["--causal", "--seq-kv"]),
        ("run-block-q-huge", R + ["--block-q", "100000"], ["--block-q", "100000"]),
        ("run-sm-clock-1e6", R + ["--sm-clock-mhz", "1e6"], ["--sm-clock-mhz"]),
        ("run-exec-huge", ["run", "--seq", "200000", "--execute", "--max-memory", "1G",
                                     "--max-seconds", "5"], ["memory", "--max-memory",
                                                             "--execute"]),
    ]
    out = []
    setup = writer({"s.json": SEEDS["sweep_json"]})
    for cid, argv, exp in inv:
        out.append(Case("combo:" + cid, argv, "invalid", exp, setup=setup, group="combo"))
    # harmless-looking combos that should run
    for cid, argv in (("causal+mask", R + ["--causal", "--mask"]),
                      ("cold-l2+l2off", R + ["--cold-l2", "--l2", "off"]),
                      ("seqkv-gt-causal", R + ["--seq-kv", "128", "--causal"]),
                      ("gqa", R + ["--heads", "4", "--kv-heads", "2"]),
                      ("execute-bwd", R + ["--execute", "--pass", "bwd"]),
                      ("execute-dropout", R + ["--execute", "--dropout", "0.5"]),
                      ("paged-exec", R + ["--algo", "paged", "--execute"]),
                      ("f3-fp8", R + ["--algo", "flash3", "--dtype", "fp8"]),
                      ("f3-fwdbwd", R + ["--algo", "flash3", "--pass", "fwdbwd"]),
                      ("bs-pattern-causal", R + ["--algo", "block-sparse", "--pattern",
                                                 "causal"]),
                      ("std-bwd", R + ["--algo", "standard", "--pass", "fwdbwd"]),
                      ("f1-bwd-gqa", R + ["--algo", "flash1", "--pass", "bwd", "--heads", "4",
                                          "--kv-heads", "1"]),
                      ("seq1", R[:1] + ["--seq", "1", "--format", "json"]),
                      ("hd1", R[:3] + ["--head-dim", "1", "--format", "json"]),
                      ("hd-odd", R[:3] + ["--head-dim", "33", "--format", "json"]),
                      ("hd-huge", R[:3] + ["--head-dim", "100000", "--format", "json"]),
                      ("layer-decode", ["layer", "--model", "qwen2-7b", "--phase", "decode",
                                        "--context", "256", "--format", "json"]),
                      ("layer-tp2-html", LAYER_BASE + ["--tp", "2"]),
                      ("kv-trace", KV_BASE[:-6] + KV_BASE[-2:] + ["--trace", os.path.join(
                          ROOT, "tests/data/kvcache/trace.csv")])):
        out.append(Case("combo-ok:" + cid, argv, "any", group="combo"))
    return out


# ---- file mutations ------------------------------------------------------------------------

def mutations(seed, yaml_like=True):
    """(name, bytes, kind) variants of a seed file."""
    text = seed.decode("utf-8")
    lines = seed.split(b"\n")
    n = len(seed)
    out = [("empty", b"", "invalid"), ("ws", b"   \n\n\t\n", "invalid"),
           ("comment", b"# nothing\n", "invalid"),
           ("bom", b"\xef\xbb\xbf" + seed, "any"),
           ("crlf", seed.replace(b"\n", b"\r\n"), "any"),
           ("cr", seed.replace(b"\n", b"\r"), "any"),
           ("trunc25", seed[:n // 4], "invalid"), ("trunc50", seed[:n // 2], "invalid"),
           ("trunc90", seed[:n * 9 // 10], "invalid"), ("trunc-1", seed[:-1], "any"),
           ("nul", seed[:n // 2] + b"\x00" + seed[n // 2:], "invalid" if yaml_like else "any"),
           ("latin1", seed + "# caf\xe9\n".encode("latin-1"), "any"),
           ("invalid-utf8", seed[:n // 3] + b"\xff\xfe\xc3" + seed[n // 3:],
            "invalid" if yaml_like else "any"),
           ("utf16", text.encode("utf-16"), "invalid"),
           ("binary", bytes(range(256)) * 8, "invalid"),
           ("dup-first-line", b"\n".join(lines + [l for l in lines if l.strip() and
                                                  not l.startswith(b"#") and
                                                  not l.startswith(b" ") and
                                                  not l.startswith(b"\"")][:1]) + b"\n",
            "invalid" if yaml_like else "any"),
           ("longline", seed + b"# " + b"x" * 2_000_000 + b"\n", "any"),
           ("huge-3MiB", seed + (b"#" + b"y" * 1023 + b"\n") * 3072, "any"),
           ("drop-line-mid", b"\n".join(lines[:len(lines) // 2] + lines[len(lines) // 2 + 1:]),
            "any"),
           ("repeat-line-mid", b"\n".join(lines[:len(lines) // 2] + [lines[len(lines) // 2]] * 2
                                          + lines[len(lines) // 2 + 1:]), "any")]
    if yaml_like:
        out += [("unknown-top-key", seed + b"\nbogus_key: 1\n", "invalid"),
                ("deep-nest", seed + b"\nbogus: " + b"[" * 20000 + b"]" * 20000 + b"\n",
                 "invalid"),
                ("deep-map", seed + b"\nx:\n" + b"".join(b" " * i + b"a:\n"
                                                         for i in range(1, 3000)), "invalid"),
                ("multi-doc", seed + b"\n---\n" + seed, "invalid"),
                ("doc-end", seed + b"\n...\n", "any"),
                ("anchor", b"a: &x [1,2]\nb: *x\n" + seed, "invalid"),
                ("tag", re.sub(rb"(?m)^name:", b"name: !!binary", seed, count=1), "invalid"),
                ("pytag", b"x: !!python/object/apply:os.system ['true']\n" + seed, "invalid"),
                ("tabs", seed.replace(b"  ", b"\t"), "invalid"),
                ("as-list", b"- " + seed.replace(b"\n", b"\n  "), "invalid"),
                ("scalar", b"42\n", "invalid"), ("null", b"~\n", "invalid"),
                ("flow-garbage", b"{a: [b, {c: d}, ]]]\n", "invalid"),
                ("comma-top", b",\n" + seed, "invalid"),
                ("merge-key", seed + b"\n<<: {x: 1}\n", "invalid"),
                ("question-key", seed + b"\n? [a, b]\n: 1\n", "invalid")]
    else:  # JSON or CSV or plain
        out += [("trailing-garbage", seed + b"\n}}}garbage", "invalid"),
                ("ragged", seed + b"\n1,2\n", "invalid"),
                ("hugefield", seed + b"\n" + b"9" * 5_000_000 + b"\n", "invalid")]
    # numeric replacements
    nums = [m for m in re.finditer(rb"(?<![\w.\-])(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\w.])",
                                   seed)
            if b"#" not in seed[seed.rfind(b"\n", 0, m.start()) + 1:m.start()]
            and re.search(rb"(: |\[|, |^|,)$", seed[seed.rfind(b"\n", 0, m.start()) + 1:m.start()])
            and b"source" not in seed[seed.rfind(b"\n", 0, m.start()) + 1:m.start()]]
    picks = nums[:: max(1, len(nums) // 12)][:12] if nums else []
    for k, m in enumerate(picks):
        # (JSON and CSV inputs carry numbers iosim does not read: their -1, NaN and "abc"
        # are 'any'; the fields it reads are mutated one by one in file_cases)
        bad = "invalid" if yaml_like else "any"
        for rep, kind in ((b"0", "any"), (b"-1", bad), (b"1e308", "any"),
                          (b"99999999999999999999", "any"), (b"1.5", "any"),
                          (b".nan" if yaml_like else b"NaN", bad),
                          (b"\"abc\"", bad), (b"1e-300", "any")):
            mutated = seed[:m.start()] + rep + seed[m.end():]
            out.append((f"num{k}@{m.start()}={rep.decode()}", mutated, kind))
    # word replacement
    words = [m for m in re.finditer(rb"(?<=: )([a-z][a-z_0-9]+)(?=\s*$)", seed, re.M)
             if not re.match(rb"\s*(name|description):", seed[seed.rfind(b"\n", 0, m.start()) + 1:])]
    for k, m in enumerate(words[:6]):
        out.append((f"word{k}={m.group(1).decode()}->bogus",
                    seed[:m.start()] + b"bogus_value" + seed[m.end():],
                    "invalid" if yaml_like else "any"))
        out.append((f"word{k}={m.group(1).decode()}->[]",
                    seed[:m.start()] + b"[]" + seed[m.end():], "invalid" if yaml_like else "any"))
    return out


def file_cases():
    cases = []
    R = RUN_BASE
    W1 = os.path.join(ROOT, "docs/kernels/wg1_tma_fwd.yaml")
    targets = [  # (seed name, file name, argv builder, yaml_like, expect words)
        ("profile", "p.yaml", lambda f: R + ["--profile", f], True, ["p.yaml"]),
        ("kernel", "k.yaml", lambda f: R + ["--kernel", f], True, ["k.yaml"]),
        ("kernel_flash2", "k2.yaml", lambda f: R + ["--kernel", f, "--pass", "fwdbwd"], True,
         ["k2.yaml"]),
        ("model", "m.yaml", lambda f: ["layer", "--model", f, "--seq", "128", "--format", "json"],
         True, ["m.yaml"]),
        ("measured", "meas.json", lambda f: ["validate", f, "--format", "json"], False,
         ["meas.json"]),
        ("ncu", "ncu.csv", lambda f: ["validate", "--ncu", f, "--kernel", W1, "--time-us",
                                      "1616.6", "--batch", "4", "--heads", "16", "--seq", "4096",
                                      "--head-dim", "128", "--format", "json"], False,
         ["ncu.csv"]),
        ("sweep_json", "s.json", lambda f: ["report", f], False, ["s.json"]),
        ("sweep_csv", "s.csv", lambda f: ["report", f], False, ["s.csv"]),
        ("trace", "t.csv", lambda f: KV_BASE[:-6] + KV_BASE[-2:] + ["--trace", f], False,
         ["t.csv"]),
        ("block_table", "bt.txt", lambda f: R[:1] + ["--format", "json", "--algo", "paged",
                                                  "--batch", "2", "--head-dim", "64",
                                                  "--seq-kv", "48", "--seq", "1",
                                                  "--page-tokens", "16", "--block-table", f],
         False, ["bt.txt"]),
        ("pattern", "pat.txt", lambda f: R[:1] + ["--seq", "256", "--head-dim", "64",
                                                   "--algo", "block-sparse", "--block-q", "64",
                                                   "--block-kv", "64", "--format", "json",
                                                   "--pattern", "file:" + f], False, ["pat.txt"]),
    ]
    for seed, fname, build, yaml_like, exp in targets:
        for mname, content, kind in mutations(SEEDS[seed], yaml_like):
            cases.append(Case(f"file:{seed}:{mname}", build("{d}/" + fname), kind, exp,
                              setup=writer({fname: content}), group="file:" + seed))
        # the pristine seed should work
        cases.append(Case(f"file:{seed}:pristine", build("{d}/" + fname), "valid", exp,
                          setup=writer({fname: SEEDS[seed]}), group="file:" + seed))
        # special paths
        specials = [("dir", {fname: ("dir",)}, "invalid"),
                    ("fifo", {fname: ("fifo",)}, "invalid"),
                    ("missing", {}, "invalid"),
                    ("dangling", {fname: ("symlink", "nowhere")}, "invalid"),
                    ("loop", {fname: ("symlink", fname)}, "invalid"),
                    ("link-ok", {"real": SEEDS[seed], fname: ("symlink", "real")}, "valid")]
        for sname, files, kind in specials:
            cases.append(Case(f"file:{seed}:{sname}", build("{d}/" + fname), kind, exp,
                              setup=writer(files), group="file:" + seed))
        for dev in ("/dev/null", "/dev/zero", "/dev/urandom", "/proc/self/status", "/",
                    "/dev/stdin"):
            cases.append(Case(f"file:{seed}:{dev}", build(dev), "invalid", [dev],
                              group="file:" + seed))
        odd = "sp ace \u00e9\u4e2d.x"
        cases.append(Case(f"file:{seed}:oddname", build("{d}/" + odd), "valid", [],
                          setup=writer({odd: SEEDS[seed]}), group="file:" + seed))
        cases.append(Case(f"file:{seed}:longname", build("{d}/" + "a" * 300), "invalid", [],
                          group="file:" + seed))
        cases.append(Case(f"file:{seed}:longpath", build("{d}/" + "/".join(["b" * 200] * 30)),
                          "invalid", [], group="file:" + seed))
    # profile through other commands
    for mname, content, kind in mutations(SEEDS["profile"])[::4]:
        for cmd in (SWEEP_BASE, TUNE_BASE, EXPLAIN_BASE, DEMO_BASE, KV_BASE, LAYER_BASE):
            cases.append(Case(f"file:profile-{cmd[0]}:{mname}", cmd + ["--profile", "{d}/p.yaml"],
                              kind, ["p.yaml"], setup=writer({"p.yaml": content}),
                              group="file:profile-other"))
    for mname, content, kind in mutations(SEEDS["kernel"])[::4]:
        for cmd in (SWEEP_BASE, EXPLAIN_BASE, LAYER_BASE):
            k = "wgmma" if cmd is not EXPLAIN_BASE else ""
            cases.append(Case(f"file:kernel-{cmd[0]}:{mname}", cmd + ["--kernel", "{d}/k.yaml"],
                              kind, ["k.yaml"], setup=writer({"k.yaml": content}),
                              group="file:kernel-other"))
    # report --validation with measured mutations
    for mname, content, kind in mutations(SEEDS["measured"], False)[::3]:
        cases.append(Case(f"file:report-validation:{mname}", ["report", "{d}/s.json",
                                                              "--validation", "{d}/meas.json"],
                          kind, ["meas.json"], setup=writer({"s.json": SEEDS["sweep_json"],
                                                             "meas.json": content}),
                          group="file:report-validation"))
    # structured JSON mutations of the measured file and the sweep file
    meas = json.loads(SEEDS["measured"])
    c0 = meas["cases"][0]
    jm = []
    def m_(name, f):
        d = json.loads(SEEDS["measured"])
        f(d)
        jm.append((name, json.dumps(d).encode()))
    m_("no-cases", lambda d: d.pop("cases"))
    m_("cases-empty", lambda d: d.__setitem__("cases", []))
    m_("cases-obj", lambda d: d.__setitem__("cases", {}))
    m_("format-wrong", lambda d: d.__setitem__("format", "x"))
    m_("version-2", lambda d: d.__setitem__("version", 2))
    m_("version-str", lambda d: d.__setitem__("version", "1"))
    m_("no-device", lambda d: d.pop("device"))
    m_("device-name-int", lambda d: d["device"].__setitem__("name", 5))
    m_("device-unknown", lambda d: d["device"].__setitem__("name", "NVIDIA Z9000"))
    for key in ("batch", "heads", "seq", "seq_kv", "head_dim"):
        for v in (0, -1, "8", 1.5, None, 2 ** 63, 1e308, True, [], 99999999):
            m_(f"problem.{key}={v!r}", lambda d, key=key, v=v:
               d["cases"][0]["problem"].__setitem__(key, v))
    for key in ("dtype", "causal"):
        for v in ("fp64", 5, "false", None):
            m_(f"problem.{key}={v!r}", lambda d, key=key, v=v:
               d["cases"][0]["problem"].__setitem__(key, v))
    for key in ("block_q", "block_kv", "threads", "pipeline_stages", "smem_bytes_per_cta"):
        for v in (0, -1, "x", 10 ** 12):
            m_(f"tiling.{key}={v!r}", lambda d, key=key, v=v:
               d["cases"][0]["tiling"].__setitem__(key, v))
    m_("schedule-bogus", lambda d: d["cases"][0].__setitem__("schedule", "bogus"))
    m_("pass-bogus", lambda d: d["cases"][0].__setitem__("pass", "sideways"))
    m_("time-neg", lambda d: d["cases"][0].__setitem__("time_free_running_s", -1))
    m_("time-str", lambda d: d["cases"][0].__setitem__("time_free_running_s", "1"))
    m_("metrics-neg", lambda d: d["cases"][0]["kernels"][0]["metrics"].__setitem__(
        "dram__bytes_read.sum", -5))
    m_("metrics-str", lambda d: d["cases"][0]["kernels"][0]["metrics"].__setitem__(
        "dram__bytes_read.sum", "5"))
    m_("metrics-empty", lambda d: d["cases"][0]["kernels"][0].__setitem__("metrics", {}))
    m_("kernels-empty", lambda d: d["cases"][0].__setitem__("kernels", []))
    m_("dup-ids", lambda d: d["cases"].append(d["cases"][0]))
    m_("id-int", lambda d: d["cases"][0].__setitem__("id", 7))
    for name, content in jm:
        kind = "invalid"
        if any(s in name for s in ("99999999", "1e308", "2 ** 63", "=1.5", "dup-ids",
                                   "device-unknown", "smem", "metrics-empty",
                                   "kernels-empty", "seq_kv=0", "block_q=0", "block_kv=0",
                                   "threads=0", "stages=0")):
            kind = "any"
        cases.append(Case(f"json:measured:{name}", ["validate", "{d}/meas.json", "--format",
                                                    "json"], kind,
                          ["meas.json", "flash2_b4_h16_n512_nkv512_d64_bq128_bkv64"],
                          setup=writer({"meas.json": content}), group="json:measured"))
    sw = json.loads(SEEDS["sweep_json"])
    sm = []
    def s_(name, f):
        d = json.loads(SEEDS["sweep_json"])
        f(d)
        sm.append((name, json.dumps(d).encode()))
    if isinstance(sw, dict):
        keys = list(sw.keys())
        for k in keys:
            s_(f"drop-{k}", lambda d, k=k: d.pop(k))
        rows_key = next((k for k in keys if isinstance(sw[k], list) and sw[k]
                         and isinstance(sw[k][0], dict)), None)
        if rows_key:
            row0 = sw[rows_key][0]
            for rk in list(row0.keys())[:40]:
                s_(f"row-drop-{rk}", lambda d, rk=rk: d[rows_key][0].pop(rk))
                v = row0[rk]
                bad = "x" if not isinstance(v, str) else 5
                s_(f"row-{rk}-type", lambda d, rk=rk, bad=bad: d[rows_key][0].__setitem__(rk,
                                                                                            bad))
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    s_(f"row-{rk}-neg", lambda d, rk=rk: d[rows_key][0].__setitem__(rk, -1))
            for pk, pv in (("seq", -64), ("batch", 0), ("head_dim", 10 ** 15), ("heads", -1),
                           ("dtype", "fp64"), ("pass", "sideways")):
                s_(f"problem-{pk}={pv}", lambda d, pk=pk, pv=pv:
                   d[rows_key][0]["problem"].__setitem__(pk, pv))
            s_("algorithm=bogus", lambda d: d[rows_key][0].__setitem__("algorithm", "bogus"))
            s_("rows-empty", lambda d: d.__setitem__(rows_key, []))
            s_("rows-dup", lambda d: d[rows_key].append(d[rows_key][0]))
    for name, content in sm:
        cases.append(Case(f"json:sweep:{name}", ["report", "{d}/s.json", "--md", "{d}/o.md"],
                          "invalid" if name.startswith(("problem-", "algorithm=")) else "any",
                          ["s.json"], setup=writer({"s.json": content}),
                          outputs=["o.md"], group="json:sweep"))
    # CSV column drops
    csv_lines = SEEDS["sweep_csv"].decode().splitlines()
    header = csv_lines[0].split(",")
    for i, col in enumerate(header[:60]):
        rows = [",".join(c for j, c in enumerate(l.split(",")) if j != i) for l in csv_lines]
        cases.append(Case(f"csv:sweep:drop-{col}", ["report", "{d}/s.csv"], "any", ["s.csv"],
                          setup=writer({"s.csv": ("\n".join(rows) + "\n").encode()}),
                          group="csv:sweep"))
        rows = [l if k == 0 else ",".join(("nan" if j == i else c) for j, c in
                                          enumerate(l.split(",")))
                for k, l in enumerate(csv_lines)]
        cases.append(Case(f"csv:sweep:nan-{col}", ["report", "{d}/s.csv"], "any", ["s.csv"],
                          setup=writer({"s.csv": ("\n".join(rows) + "\n").encode()}),
                          group="csv:sweep"))
    # NCU CSV: drop a metric row, negative values, units
    ncu_lines = SEEDS["ncu"].decode().splitlines()
    for i in range(3, min(len(ncu_lines), 30)):
        rows = ncu_lines[:i] + ncu_lines[i + 1:]
        cases.append(Case(f"csv:ncu:drop-row{i}", ["validate", "--ncu", "{d}/n.csv", "--kernel",
                                                   W1, "--time-us", "1616.6", "--batch", "4",
                                                   "--heads", "16", "--seq", "4096",
                                                   "--head-dim", "128"], "any", ["n.csv"],
                          setup=writer({"n.csv": ("\n".join(rows) + "\n").encode()}),
                          group="csv:ncu"))
    for rep in ('"-201.78176"', '"nan"', '"1e400"', '"abc"', '""', '"201,781,760,000,000,000,000"'):
        t = SEEDS["ncu"].decode().replace('"201.78176"', rep, 1)
        cases.append(Case(f"csv:ncu:value={rep}", ["validate", "--ncu", "{d}/n.csv", "--kernel",
                                                   W1, "--time-us", "1616.6", "--batch", "4",
                                                   "--heads", "16", "--seq", "4096",
                                                   "--head-dim", "128"],
                          "invalid" if rep in ('"-201.78176"', '"nan"', '"abc"', '"1e400"')
                          else "any", ["n.csv"], setup=writer({"n.csv": t.encode()}),
                          group="csv:ncu"))
    for rep in ('"Mbyte"', '"Pbyte"', '"furlong"', '""', '"byte"'):
        t = SEEDS["ncu"].decode().replace('"Mbyte"', rep, 1)
        cases.append(Case(f"csv:ncu:unit={rep}", ["validate", "--ncu", "{d}/n.csv", "--kernel",
                                                   W1, "--time-us", "1616.6", "--batch", "4",
                                                   "--heads", "16", "--seq", "4096",
                                                   "--head-dim", "128"],
                          "invalid" if rep in ('"furlong"', '""') else "any", ["n.csv"],
                          setup=writer({"n.csv": t.encode()}), group="csv:ncu"))
    # block tables / patterns / traces: content variants
    for name, content, kind in (
            ("neg", b"5 0 -2\n6 1 4\n", "invalid"), ("dup", b"5 0 2\n6 1 2\n", "invalid"),
            ("huge", b"5 0 99999999999999999999\n6 1 4\n", "invalid"),
            ("float", b"5 0 2.5\n6 1 4\n", "invalid"), ("one-row", b"5 0 2\n", "invalid"),
            ("three-rows", b"5 0 2\n6 1 4\n7 8 9\n", "any"), ("short", b"5 0\n6 1\n", "invalid"),
            ("big-id", b"5 0 2000000000\n6 1 4\n", "any")):
        cases.append(Case(f"bt:{name}", R[:1] + ["--algo", "paged", "--batch", "2", "--seq-kv", "48",
                                             "--seq", "1", "--page-tokens", "16",
                                             "--block-table", "{d}/bt.txt"], kind, ["bt.txt"],
                          setup=writer({"bt.txt": content}), group="bt"))
    for name, content, kind in (
            ("all-zero", b"0 0 0 0\n" * 4, "any"), ("2s", b"2 0 0 0\n" * 4, "invalid"),
            ("3x4", b"1 0 0 0\n" * 3, "invalid"), ("5x4", b"1 0 0 0\n" * 5, "invalid"),
            ("neg", b"-1 0 0 0\n" + b"1 0 0 0\n" * 3, "invalid"),
            ("commas", b"1,0,0,0\n" * 4, "any"), ("xs", b"x . . .\n" * 4, "any")):
        cases.append(Case(f"pat:{name}", R[:1] + ["--seq", "256", "--head-dim", "64", "--algo",
                                                  "block-sparse", "--block-q", "64",
                                                  "--block-kv", "64", "--format", "json",
                                                  "--pattern", "file:{d}/pat.txt"], kind,
                          ["pat.txt"], setup=writer({"pat.txt": content}), group="pat"))
    hdr = b"arrival,prompt_len,output_len,group\n"
    for name, content, kind in (
            ("neg-arrival", hdr + b"-1,5,5,0\n", "invalid"), ("nan", hdr + b"nan,5,5,0\n",
                                                               "invalid"),
            ("zero-lens", hdr + b"0,0,0,0\n", "any"), ("huge", hdr + b"0,99999999999999,5,0\n",
                                                       "any"),
            ("unsorted", hdr + b"5,5,5,0\n1,5,5,0\n", "any"), ("missing-col", hdr + b"0,5\n",
                                                                "invalid"),
            ("extra-col", hdr + b"0,5,5,0,9\n", "invalid"), ("neg-group", hdr + b"0,5,5,-1\n",
                                                             "invalid"),
            ("header-only", hdr, "any"), ("no-header", b"0,5,5,0\n", "any"),
            ("inf", hdr + b"inf,5,5,0\n", "invalid"), ("float-len", hdr + b"0,5.5,5,0\n",
                                                       "invalid")):
        cases.append(Case(f"trace:{name}", KV_BASE[:-6] + KV_BASE[-2:] + ["--trace",
                                                                          "{d}/t.csv"],
                          kind, ["t.csv"], setup=writer({"t.csv": content}), group="trace"))
    return cases


def profile_keys():
    """(section, key) of every {value: ...} number of the built-in H100 profile."""
    keys, sec = [], None
    for line in SEEDS["profile"].decode().splitlines():
        m = re.match(r"^(\w+):\s*(#.*)?$", line)
        if m:
            sec = m.group(1)
            continue
        m = re.match(r"^  (\w+): \{value: ", line)
        if m and sec:
            keys.append((sec, m.group(1)))
    return keys


def profile_with(sec, key, value):
    out, cur = [], None
    for line in SEEDS["profile"].decode().splitlines():
        m = re.match(r"^(\w+):\s*(#.*)?$", line)
        if m:
            cur = m.group(1)
        if cur == sec and re.match(rf"^  {key}: \{{value: ", line):
            line = re.sub(r"value: [^,]+,", f"value: {value},", line, count=1)
        out.append(line)
    return ("\n".join(out) + "\n").encode()


def profile_edge_cases():
    """Every profile number at the edge of what its checks let through (0, 1, 2, 0.5, 1e-9),
    through every algorithm (--set) and through layer, kvcache, demo and explain (a file)."""
    cases = []
    algos = ["standard", "flash1", "flash2", "flash3", "block-sparse", "flash-decoding", "paged"]
    for sec, key in profile_keys():
        for v in ("0", "1", "2", "0.5", "1e-9"):
            for a in algos:
                extra = ["--pass", "fwdbwd"] if a in ("flash1", "flash2", "standard") else []
                cases.append(Case(f"edge:run:{a}:{sec}.{key}={v}",
                                  ["run", "--seq", "128", "--algo", a, "--format", "json",
                                   "--max-seconds", "10", "--set", f"{sec}.{key}={v}"] + extra,
                                  "any", [f"{sec}.{key}"], group="edge"))
        for v in ("0", "1"):
            setup = writer({"p.yaml": profile_with(sec, key, v)})
            for cmd in (["layer", "--model", "llama-3-8b", "--seq", "128"],
                        ["layer", "--model", "llama-3-8b", "--phase", "decode", "--context",
                         "128"],
                        ["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64",
                         "--requests", "20"],
                        ["demo", "--seq", "256", "--batch", "1", "--heads", "2"],
                        ["explain", "--seq", "16", "--head-dim", "8", "--algo", "flash1"]):
                cases.append(Case(f"edge:{cmd[0]}{'-decode' if 'decode' in cmd else ''}:"
                                  f"{sec}.{key}={v}", cmd + ["--profile", "{d}/p.yaml"], "any",
                                  [key], setup=setup, group="edge"))
    return cases


def kernel_edge_cases():
    """Kernel descriptions (inline JSON) with each tile and launch number at small and odd
    values, over every forward dataflow and, where one exists, a backward."""
    cases = []
    flows = [("query_stationary", "kv_stationary_atomic_dq", "mma_sync", "cp_async", "uniform"),
             ("query_stationary", "two_pass", "wgmma_rs", "tma", "producer_consumer"),
             ("kv_stationary", "kv_stationary_dq_in_hbm", "mma_sync", "cp_async", "uniform"),
             ("split_kv", None, "mma_sync", "cp_async", "uniform"),
             ("paged", None, "mma_sync", "plain", "uniform"),
             ("unfused", "unfused", "wgmma_ss", "tma", "uniform")]
    fields = [("tiles", "block_q"), ("tiles", "block_kv"), ("tiles", "stages"),
              ("tiles", "splits"), ("tiles", "score_chunk"), ("tiles", "backward_block_q"),
              ("tiles", "backward_block_kv"), ("launch", "threads"),
              ("launch", "registers_per_thread"), ("launch", "smem_bytes_per_cta"),
              ("launch", "local_bytes_per_thread")]
    for fwd, bwd, mma, load, roles in flows:
        for sec, key in fields:
            for v in (0, 1, 2, 3, 33, 1000000):
                desc = {"name": "e", "dataflow": {"forward": fwd},
                        "mechanisms": {"mma": mma, "load": load, "warp_roles": roles},
                        sec: {key: v}}
                if bwd:
                    desc["dataflow"]["backward"] = bwd
                argv = ["run", "--seq", "128", "--format", "json", "--max-seconds", "10",
                        "--kernel", json.dumps(desc)]
                if bwd:
                    argv += ["--pass", "fwdbwd"]
                cases.append(Case(f"kedge:{fwd}/{bwd}:{sec}.{key}={v}", argv, "any",
                                  [f"{sec}.{key}", "wgmma", "warpgroup"], group="kedge"))
    return cases


def output_cases():
    cases = []
    R = RUN_BASE
    RUN_FAIL_LATE = R + ["--block-q", "100000"]  # infeasible: fails after parsing
    specs = [  # (name, argv prefix ok, argv prefix failing, flag, inputs)
        ("run--html", R, R + ["--seq", "-1"], "--html"),
        ("run--svg", R, R + ["--seq", "-1"], "--svg"),
        ("run--html-late", R, RUN_FAIL_LATE, "--html"),
        ("sweep--out", SWEEP_BASE, SWEEP_BASE + ["--algo", "bogus"], "--out"),
        ("explain--html", EXPLAIN_BASE, EXPLAIN_BASE + ["--seq", "65"], "--html"),
        ("explain--html-step", EXPLAIN_BASE, EXPLAIN_BASE + ["--step", "99999"], "--html"),
        ("layer--html", LAYER_BASE, LAYER_BASE + ["--tp", "3"], "--html"),
        ("report--md", ["report", "{d}/s.json"], ["report", "{d}/s.json", "{d}/nope.json"],
         "--md"),
        ("report--html", ["report", "{d}/s.json"], ["report", "{d}/s.json", "{d}/nope.json"],
         "--html"),
        ("validate--json", ["validate", "{d}/meas.json"], ["validate", "{d}/meas.json",
                                                            "--profile", "bogus"], "--json"),
    ]
    base_files = {"s.json": SEEDS["sweep_json"], "meas.json": SEEDS["measured"]}
    for name, ok, bad, flag in specs:
        ext = ".json" if flag in ("--out", "--json") else (".md" if flag == "--md" else ".html")
        ext = ".svg" if flag == "--svg" else ext
        o = "o" + ext
        # success over an unrelated existing file: allowed (the named output)
        cases.append(Case(f"out:{name}:over-existing-ok", ok + [flag, "{d}/" + o], "valid",
                          setup=writer({**base_files, o: b"precious\n"}), outputs=[o],
                          group="out"))
        # failure with an existing output: must not touch it
        cases.append(Case(f"out:{name}:fail-keeps-existing", bad + [flag, "{d}/" + o],
                          "invalid", setup=writer({**base_files, o: b"precious\n"}),
                          group="out"))
        cases.append(Case(f"out:{name}:fail-no-leftover", bad + [flag, "{d}/" + o], "invalid",
                          setup=writer(base_files), group="out"))
        for sname, files, path, kind in (
                ("nodir", {}, "{d}/no/such/dir/" + o, "invalid"),
                ("isdir", {o: ("dir",)}, "{d}/" + o, "invalid"),
                ("fifo", {o: ("fifo",)}, "{d}/" + o, "invalid"),
                ("devnull", {}, "/dev/null", "any"),
                ("devfull", {}, "/dev/full", "invalid"),
                ("proc", {}, "/proc/version", "invalid"),
                ("trailing-slash", {}, "{d}/" + o + "/", "invalid"),
                ("empty", {}, "", "invalid"),
                ("dotdir", {}, "{d}/.", "invalid"),
                ("link-to-file", {"real" + ext: b"old\n", o: ("symlink", "real" + ext)},
                 "{d}/" + o, "valid"),
                ("dangling-link", {o: ("symlink", "nowhere/x")}, "{d}/" + o, "invalid"),
                ("link-loop", {o: ("symlink", o)}, "{d}/" + o, "invalid"),
                ("input-sweep", {}, "{d}/s.json", "invalid" if name.startswith("report")
                 else "any"),
                ("input-meas", {}, "{d}/meas.json", "invalid" if name.startswith("validate")
                 else "any"),
                ("oddname", {}, "{d}/sp ace \u00e9" + ext, "valid")):
            outputs = [o, "real" + ext, "sp ace \u00e9" + ext]
            if sname.startswith("input") and kind == "any":
                outputs.append(path.split("/")[-1])
            cases.append(Case(f"out:{name}:{sname}", ok + [flag, path], kind,
                              setup=writer({**base_files, **files}), outputs=outputs,
                              group="out"))
    # same output twice
    twice = [
        ("run-html-svg", R + ["--html", "{d}/o.html", "--svg", "{d}/./o.html"]),
        ("run-html-svg-abs-rel", R + ["--html", "{d}/o.html", "--svg", "{d}/../{b}/o.html"]),
        ("run-html-svg-link", R + ["--html", "{d}/o.html", "--svg", "{d}/l.html"]),
        ("run-html-svg-hardlink", R + ["--html", "{d}/o.html", "--svg", "{d}/h.html"]),
        ("report-md-html", ["report", "{d}/s.json", "--md", "{d}/o.x", "--html", "{d}//o.x"]),
        ("report-md-input", ["report", "{d}/s.json", "--md", "{d}/./s.json"]),
        ("report-html-input-link", ["report", "{d}/s.json", "--html", "{d}/ls.json"]),
        ("report-md-validation", ["report", "{d}/s.json", "--validation", "{d}/meas.json",
                                  "--md", "{d}/meas.json"]),
        ("validate-json-input", ["validate", "{d}/meas.json", "--json", "{d}/./meas.json"]),
        ("validate-json-input-link", ["validate", "{d}/meas.json", "--json", "{d}/lm.json"]),
        ("sweep-out-profile", SWEEP_BASE + ["--profile", "{d}/p.json", "--out", "{d}/p.json"]),
        ("sweep-out-kernel", SWEEP_BASE + ["--kernel", "{d}/k.yaml", "--out", "{d}/k.yaml"]),
        ("run-html-profile", R + ["--profile", "{d}/p.yaml", "--html", "{d}/p.yaml"]),
        ("run-svg-kernel", R + ["--kernel", "{d}/k2.yaml", "--svg", "{d}/k2.yaml"]),
        ("run-html-bt", R[:1] + ["--algo", "paged", "--batch", "2", "--seq-kv", "48", "--seq", "1",
                             "--block-table", "{d}/bt.txt", "--html", "{d}/bt.txt"]),
        ("explain-html-pattern", EXPLAIN_BASE + ["--algo", "block-sparse", "--pattern",
                                                 "file:{d}/pat.txt", "--html", "{d}/pat.txt"]),
        ("explain-html-profile-link", EXPLAIN_BASE + ["--profile", "{d}/p.yaml", "--html",
                                                      "{d}/lp.yaml"]),
        ("layer-html-model", ["layer", "--model", "{d}/m.yaml", "--seq", "128", "--html",
                              "{d}/m.yaml"]),
        ("layer-html-profile", LAYER_BASE + ["--profile", "{d}/p.yaml", "--html",
                                             "{d}/p.yaml"]),
        ("report-html-chartjs", ["report", "{d}/s.json", "--chartjs", "{d}/c.js", "--html",
                                 "{d}/c.js"]),
        ("validate-ncu-json-kernel", ["validate", "--ncu", "{d}/n.csv", "--kernel", "{d}/k.yaml",
                                      "--time-us", "1616.6", "--batch", "4", "--heads", "16",
                                      "--seq", "4096", "--head-dim", "128", "--json",
                                      "{d}/n.csv"]),
        ("sweep-out-partial-foreign", SWEEP_BASE + ["--out", "{d}/w.json"]),
        ("sweep-out-bt", ["sweep", "--jobs", "1", "--algo", "paged", "--batch", "2", "--seq-kv", "48",
                                       "--seq", "1", "--block-table", "{d}/bt.txt", "--out",
                                       "{d}/bt.txt"]),
        ("kvcache-trace-stdout", KV_BASE[:-6] + KV_BASE[-2:] + ["--trace", "{d}/t.csv"]),
    ]
    files = {"s.json": SEEDS["sweep_json"], "meas.json": SEEDS["measured"],
             "l.html": ("symlink", "o.html"), "o.html": b"x\n", "h.html": ("hardlink", "o.html"),
             "ls.json": ("symlink", "s.json"), "lm.json": ("symlink", "meas.json"),
             "p.json": SEEDS["profile"], "p.yaml": SEEDS["profile"], "k.yaml": SEEDS["kernel"],
             "k2.yaml": SEEDS["kernel_flash2"], "bt.txt": SEEDS["block_table"],
             "pat.txt": b"1\n", "lp.yaml": ("symlink", "p.yaml"),
             "m.yaml": SEEDS["model"], "c.js": b"/* chart */\n", "n.csv": SEEDS["ncu"],
             "w.json.partial": b"my own notes, not a journal\n", "t.csv": SEEDS["trace"]}
    for cid, argv in twice:
        kind = "any" if cid in ("kvcache-trace-stdout",) else "invalid"
        cases.append(Case(f"out-same:{cid}", argv, kind, setup=writer(files), group="out-same"))
    return cases


def mode_cases():
    """Signals, closed stdout, /dev/full, full pipe."""
    cases = []
    long_cmds = [
        ("run", ["run", "--seq", "32768", "--batch", "16", "--heads", "32", "--head-dim", "128",
                 "--exact", "--html", "{d}/o.html"], ["o.html"]),
        ("run-exec", ["run", "--seq", "4096", "--head-dim", "64", "--execute"], []),
        ("sweep", ["sweep", "--seq", "1024:65536:x2", "--batch", "1,2,4,8", "--heads",
                   "16,32", "--exact", "--jobs", "1", "--out", "{d}/s.json"], ["s.json"]),
        ("tune", ["tune", "--seq", "32768", "--batch", "8", "--heads", "32", "--exact",
                  "--jobs", "1"], []),
        ("kvcache", ["kvcache", "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
                     "--requests", "2000000", "--weights-bytes", "16e9"], []),
        ("layer", ["layer", "--model", "llama-3-70b", "--seq", "512:65536:x2", "--batch",
                   "1:64:x2", "--html", "{d}/o.html"], ["o.html"]),
        ("validate", ["validate", os.path.join(ROOT, "cuda_validate/measurements")], []),
        ("explain", ["explain", "--seq", "64", "--head-dim", "16", "--batch", "2", "--heads",
                     "2", "--block-q", "1", "--block-kv", "1", "--algo", "flash1", "--html",
                     "{d}/o.html"], ["o.html"]),
        ("demo", ["demo", "--seq", "65536", "--batch", "16", "--heads", "32"], []),
        ("report", ["report", "{d}/s.json", "--html", "{d}/o.html"], ["o.html"]),
    ]
    for name, argv, outs in long_cmds:
        setup = writer({"s.json": SEEDS["sweep_json"]})
        for sig in ("sigint", "sigterm"):
            for delay in (0.2, 0.6, 1.0):
                cases.append(Case(f"sig:{name}:{sig}@{delay}", argv, "any", setup=setup,
                                  mode=sig, delay=delay, outputs=[] if True else outs,
                                  group="signal"))
        cases.append(Case(f"fullpipe:{name}", argv, "any", setup=setup, mode="fullpipe",
                          outputs=outs, group="fullpipe"))
    cases.append(Case("fullpipe:sweep-fast-rows", ["sweep", "--seq", "1:2000:+1", "--head-dim",
                                                   "16", "--l2", "off", "--jobs", "1"], "any",
                      mode="fullpipe", group="fullpipe"))
    cases.append(Case("fullpipe:explain-big", ["explain", "--seq", "64", "--head-dim", "16",
                                               "--batch", "2", "--heads", "2", "--block-q", "16",
                                               "--block-kv", "16"], "any", mode="fullpipe",
                      group="fullpipe"))
    quick = [("run", RUN_BASE), ("sweep", SWEEP_BASE), ("tune", TUNE_BASE),
             ("explain", EXPLAIN_BASE), ("kvcache", KV_BASE), ("layer", LAYER_BASE),
             ("demo", DEMO_BASE), ("profiles", ["profiles"]), ("kernels", ["kernels"]),
             ("kernels-show", ["kernels", "--show", "flash2"]),
             ("profiles-template", ["profiles", "--template"]),
             ("validate", ["validate", os.path.join(ROOT, "tests/data/measurements_small.json")]),
             ("report", ["report", "{d}/s.json"]), ("help", ["--help"]),
             ("run-help", ["run", "--help"]), ("version", ["--version"])]
    for name, argv in quick:
        setup = writer({"s.json": SEEDS["sweep_json"]})
        cases.append(Case(f"closed-stdout:{name}", argv, "invalid", setup=setup,
                          mode="closed_stdout", group="stdout"))
        cases.append(Case(f"devfull:{name}", argv, "invalid", setup=setup, mode="devfull",
                          group="stdout"))
        cases.append(Case(f"closed-stderr:{name}", argv + ["--bogus"],
                          "any" if name in ("help", "run-help", "version") else "invalid",
                          setup=setup,
                          mode="closed_stderr", group="stdout"))
    return cases


# ----------------------------------------------------------------------------------------------
# execution


def snapshot(d):
    snap = {}
    for root, dirs, files in os.walk(d, followlinks=False):
        for name in dirs + files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, d)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                snap[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                h = hashlib.sha1()
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                snap[rel] = ("file", h.hexdigest(), st.st_ino)
            elif stat.S_ISDIR(st.st_mode):
                snap[rel] = ("dir",)
            elif stat.S_ISFIFO(st.st_mode):
                snap[rel] = ("fifo",)
            else:
                snap[rel] = ("other",)
    return snap


def nonsense(stdout):
    """Problems in a successful output: NaN, inf, negative byte counts or times."""
    probs = []
    text = stdout.decode("utf-8", "replace")
    s = text.strip()
    if s.startswith("{") or s.startswith("["):
        try:
            doc = json.loads(s)
        except ValueError as e:
            try:  # JSON Lines (layer over a list of points)
                doc = [json.loads(line) for line in s.splitlines() if line.strip()]
            except ValueError:
                return [f"stdout is not valid JSON: {e}"]

        def walk(x, path):
            if isinstance(x, dict):
                for k, v in x.items():
                    walk(v, path + "." + str(k))
            elif isinstance(x, list):
                for i, v in enumerate(x[:2000]):
                    walk(v, path + f"[{i}]")
            elif isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
                probs.append(f"{path} = {x}")
            elif isinstance(x, (int, float)) and not isinstance(x, bool) and x < 0:
                leaf = path.rsplit(".", 1)[-1].lower()
                if re.search(r"bytes|_s$|time|flops|ctas|tokens|requests|count|cycles", leaf) \
                        and not re.search(r"error|delta|diff|vs|ratio|pct|rel|signed|offset",
                                          leaf):
                    probs.append(f"{path} = {x}")
        walk(doc, "")
    else:
        for m in re.finditer(r"(?<![\w.])(-?nan|-?inf(inity)?)(?![\w])", text, re.I):
            if ":=" in text[max(0, m.start() - 5):m.start()]:
                continue  # the online softmax's m := -inf
            line = text[text.rfind("\n", 0, m.start()) + 1: text.find("\n", m.end())]
            probs.append(f"'{m.group(0)}' in: {line.strip()[:160]}")
            break
    return probs[:5]


def run_case(case, binary, workdir):
    d = tempfile.mkdtemp(prefix="c", dir=workdir)
    if case.setup:
        try:
            case.setup(d)
        except OSError as e:
            shutil.rmtree(d, ignore_errors=True)
            return {"id": case.cid, "classes": [], "note": f"setup failed: {e}", "rc": None}
    b = os.path.basename(d)
    argv = [binary] + [a.replace("{d}", d).replace("{b}", b) for a in case.argv]
    before = snapshot(d)
    t0 = time.monotonic()
    rc, out, err, timed_out, late = None, b"", b"", False, None
    stdout_target = subprocess.PIPE
    stderr_target = subprocess.PIPE
    preexec = None
    errf = None
    if case.mode == "closed_stdout":
        preexec = lambda: os.close(1)  # noqa: E731
        stdout_target = None
    elif case.mode == "closed_stderr":
        preexec = lambda: os.close(2)  # noqa: E731
        stderr_target = None
    elif case.mode == "devfull":
        stdout_target = open("/dev/full", "wb")
    try:
        if case.mode in ("sigint", "sigterm", "fullpipe"):
            errf = tempfile.TemporaryFile()
            outp = subprocess.PIPE if case.mode == "fullpipe" else tempfile.TemporaryFile()
            p = subprocess.Popen(argv, cwd=d, stdout=outp, stderr=errf,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            if case.mode == "fullpipe":
                try:
                    rc = p.wait(timeout=8)
                except subprocess.TimeoutExpired:
                    # blocked on the pipe (or still working): a stop must still be honoured
                    p.send_signal(signal.SIGTERM)
                    ts = time.monotonic()
                    try:
                        rc = p.wait(timeout=STOP_GRACE)
                        late = time.monotonic() - ts
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, signal.SIGKILL)
                        rc = p.wait()
                        late = float("inf")
                p.stdout.close()
            else:
                time.sleep(case.delay)
                if p.poll() is None:
                    p.send_signal(signal.SIGINT if case.mode == "sigint" else signal.SIGTERM)
                    ts = time.monotonic()
                    try:
                        rc = p.wait(timeout=STOP_GRACE)
                        late = time.monotonic() - ts
                    except subprocess.TimeoutExpired:
                        try:
                            rc = p.wait(timeout=case.timeout)
                            late = time.monotonic() - ts
                        except subprocess.TimeoutExpired:
                            os.killpg(p.pid, signal.SIGKILL)
                            rc = p.wait()
                            late = float("inf")
                else:
                    rc = p.wait()
                    late = -1.0  # finished before the signal
                outp.seek(0)
                out = outp.read()
                outp.close()
            errf.seek(0)
            err = errf.read()
        else:
            p = subprocess.Popen(argv, cwd=d, stdout=stdout_target, stderr=stderr_target,
                                 stdin=subprocess.DEVNULL, preexec_fn=preexec,
                                 start_new_session=True)
            try:
                out, err = p.communicate(timeout=case.timeout)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
                rc = p.returncode
                timed_out = True
    finally:
        if errf:
            errf.close()
        if case.mode == "devfull":
            stdout_target.close()
    wall = time.monotonic() - t0
    out = out or b""
    err = err or b""
    after = snapshot(d)
    classes = []
    notes = []
    msg = err.decode("utf-8", "replace")
    if rc is not None and rc != 0:
        msg += "\n" + out.decode("utf-8", "replace")[-4000:]
    if timed_out:
        classes.append("hang")
        notes.append(f"timeout after {case.timeout}s")
    elif late is not None and late > STOP_GRACE:
        classes.append("hang")
        notes.append(f"stop honoured {late:.1f}s after the signal")
    if late is not None and 0 <= late <= STOP_GRACE and rc == 2:
        classes.append("misleading")
        notes.append("stopped by a signal but exit 2 (an error), not 3")
    if rc is not None and rc < 0 and not timed_out and late != float("inf"):
        classes.append("crash")
        notes.append(f"killed by signal {-rc}")
    elif rc is not None and rc not in (0, 2, 3) and not timed_out:
        classes.append("crash")
        notes.append(f"exit code {rc}")
    m = INTERNAL_RE.search(msg)
    if m and "--help" not in case.argv:
        classes.append("internal")
        notes.append(f"library/runtime text: {m.group(0)!r}")
    # destructive
    changed = []
    for rel, sig in before.items():
        if rel not in after:
            changed.append(f"{rel} disappeared")
        elif after[rel] != sig:
            if rc == 0 and (rel in case.outputs or os.path.basename(rel) in case.outputs):
                continue
            if rc == 0 and sig[0] == "file" and after[rel][0] == "file" and \
                    rel in case.outputs:
                continue
            changed.append(f"{rel} changed ({sig[0]} -> {after[rel][0]})")
    if rc not in (0, None) and not timed_out:
        for rel in after:
            if rel not in before:
                if rc == 3 and rel.endswith(".partial"):
                    continue
                changed.append(f"{rel} left behind after exit {rc}")
    if changed:
        classes.append("destructive")
        notes += changed[:5]
    if rc == 0 and case.kind == "invalid" and case.mode not in ("sigint", "sigterm",
                                                                 "fullpipe"):
        classes.append("silent")
        notes.append("exit 0 on invalid input")
    if rc == 0 and case.mode is None:
        probs = nonsense(out)
        if probs:
            classes.append("silent")
            notes.append("nonsense in output: " + "; ".join(probs))
    if rc == 2 and case.kind == "invalid" and case.expect:
        low = msg.lower()
        if not any(e.lower() in low for e in case.expect if e):
            classes.append("misleading")
            notes.append(f"message names none of {case.expect[:4]!r}")
    if rc == 2 and case.kind == "valid":
        notes.append("refused a valid input")
    shutil.rmtree(d, ignore_errors=True)
    return {"id": case.cid, "group": case.group, "argv": [a.replace(d, "$D")
                                                          for a in argv[1:]],
            "kind": case.kind, "mode": case.mode, "rc": rc, "wall_s": round(wall, 3),
            "classes": sorted(set(classes)), "notes": notes,
            "stderr": msg.replace(d, "$D").strip()[:600]}


# ----------------------------------------------------------------------------------------------
# Python API

PY_PRELUDE = textwrap.dedent("""
    import json, math, os, sys
    sys.path.insert(0, sys.argv[1])
    import iosim
    def _bad(x, path=""):
        out = []
        if isinstance(x, dict):
            for k, v in x.items(): out += _bad(v, path + "." + str(k))
        elif isinstance(x, list):
            for i, v in enumerate(x[:500]): out += _bad(v, path + "[%d]" % i)
        elif isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            out.append("%s = %r" % (path, x))
        return out
    try:
        r = eval(sys.argv[2])
        print(json.dumps({"status": "ok", "bad": _bad(r)[:5]}))
    except iosim.InternalError as e:
        print(json.dumps({"status": "InternalError", "msg": str(e)[:600]}))
    except iosim.ConfigError as e:
        print(json.dumps({"status": type(e).__name__, "msg": str(e)[:600]}))
    except (ValueError, TypeError) as e:
        print(json.dumps({"status": type(e).__name__, "msg": str(e)[:600]}))
    except BaseException as e:
        print(json.dumps({"status": "other:" + type(e).__name__, "msg": str(e)[:600]}))
""")

BADVALS = ["None", "-1", "0", "2**63", "2**64", "float('nan')", "float('inf')", "'64'", "True",
           "[]", "{}", "b'64'", "1.5", "object()", "-2**63-1", "''", "'\\u0663'"]


def py_cases():
    cases = []  # (id, expr, kind, expect words)
    run_int = ["seq", "batch", "heads", "kv_heads", "head_dim", "seq_kv", "block_q", "block_kv",
               "splits", "page_tokens", "threads", "stages", "seed"]
    run_float = ["sm_clock_mhz", "dropout", "max_seconds"]
    run_str = ["profile", "algo", "dtype", "l2", "kernel", "pattern", "warpgroups", "pack_gqa",
               "max_memory", "set", "block_table"]
    base = "seq=64, head_dim=64"
    for k in run_int + run_float + run_str:
        b = base
        if k in ("seq", "head_dim"):
            b = "head_dim=64" if k == "seq" else "seq=64"
        for v in BADVALS:
            kind = "invalid"
            if v == "None" and k not in ("seq",):
                kind = "any"  # None: no value
            if v in ("0",) and k in ("seq_kv", "block_q", "block_kv", "threads", "stages",
                                     "sm_clock_mhz", "dropout", "max_seconds", "seed",
                                     "splits"):
                kind = "any"
            if v in ("1.5",) and k in run_float:
                kind = "any" if k != "dropout" else "invalid"
            if v == "float('inf')" and k == "max_seconds":
                kind = "any"
            if v == "[]" and k == "set":
                kind = "any"
            if v == "2**63" and k == "seed":  # an unsigned 64-bit seed
                kind = "any"
            cases.append((f"py:run:{k}={v}", f"iosim.run({b}, {k}={v})", kind, [k]))
    for k, v in (("causal", "1"), ("causal", "'yes'"), ("causal", "None"), ("mask", "2"),
                 ("execute", "'true'"), ("cold_l2", "0"), ("exact", "[]")):
        cases.append((f"py:run:{k}={v}", f"iosim.run({base}, {k}={v})",
                      "any" if v == "None" else "invalid", [k]))
    for expr, kind, exp in (
            ("iosim.run()", "invalid", ["seq"]), ("iosim.run(seq=64, bogus=1)", "invalid",
                                                  ["bogus"]),
            ("iosim.run(seq=64, format='table')", "any", ["format"]),
            ("iosim.run(seq=64, html='o.html')", "any", ["html"]),
            ("iosim.run(seq=64, svg='o.svg')", "any", ["svg"]),
            ("iosim.run(64)", "invalid", []),
            ("iosim.run(seq=64, **{'pass': 'bwd'})", "valid", []),
            ("iosim.run(seq=64, **{'pass': 'back'})", "invalid", ["pass"]),
            ("iosim.run(seq=64, **{'seq-kv': 64})", "any", ["seq-kv"]),
            ("iosim.run(seq=64, **{'': 1})", "invalid", []),
            ("iosim.run(seq=64, **{'--seq': 1})", "invalid", []),
            ("iosim.run(seq=64, heads=4, kv_heads=3)", "invalid", ["kv"]),
            ("iosim.run(seq=64, profile='a100-sxm4-40gb', algo='flash3')", "invalid",
             ["flash3", "wgmma"]),
            ("iosim.run(seq=64, dtype='fp8')", "invalid", ["fp8"]),
            ("iosim.run(seq=64, kernel={})", "invalid", ["kernel"]),
            ("iosim.run(seq=64, kernel={'name': 'x'})", "invalid", ["kernel", "dataflow"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'bogus': 1})", "invalid", ["bogus"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'tiles': {'block_q': float('nan')}})", "invalid",
             ["block_q"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'tiles': {'block_q': 2**70}})", "invalid", ["block_q"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'tiles': {'block_q': -64}})", "invalid", ["block_q"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'tiles': {'block_q': True}})", "invalid", ["block_q"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'tiles': {'stages': 65}})", "invalid", ["stages"]),
            ("iosim.run(seq=64, kernel={'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}, 'mechanisms': {'mma': 'wgmma_rs'}}, "
             "profile='a100-sxm4-40gb')", "invalid", ["wgmma"]),
            ("iosim.run(seq=64, kernel={1: 2})", "invalid", ["kernel"]),
            ("iosim.run(seq=64, kernel=[])", "invalid", ["kernel"]),
            ("iosim.run(seq=64, kernel={'name': {'a': 1}, 'dataflow': {'forward': "
             "'query_stationary'}})", "invalid", ["name"]),
            ("iosim.run(seq=64, kernel={'name': 'x'*100000, 'dataflow': {'forward': "
             "'query_stationary'}})", "any", []),
            ("iosim.run(seq=64, kernel='{\"name\": \"x\", \"dataflow\": {\"forward\": "
             "\"query_stationary\"}}')", "any", []),
            ("iosim.run(seq=64, kernel='not a file')", "invalid", ["kernel", "not a file"]),
            ("iosim.run(seq=64, set=['l2.size_bytes=0'])", "invalid", ["l2.size_bytes"]),
            ("iosim.run(seq=64, set=[5])", "invalid", ["set"]),
            ("iosim.run(seq=64, set=[None])", "invalid", ["set"]),
            ("iosim.run(seq=64, set=('l2.size_bytes=20e6',))", "any", ["set"]),
            ("iosim.run(seq=64, set='l2.size_bytes=20e6,30e6')", "invalid", ["set"]),
            ("iosim.run(seq=64, profile=os.path.join('/dev', 'zero'))", "invalid", ["zero"]),
            ("iosim.run(seq=64, profile='/')", "invalid", ["/"]),
            ("iosim.run(seq=64, profile='a\\x00b')", "invalid", ["profile"]),
            ("iosim.run(seq=64, block_table='/nonexistent', algo='paged')", "invalid",
             ["nonexistent"]),
            ("iosim.run(seq=64, max_memory='1')", "any", ["memory"]),
            ("iosim.run(seq=64, max_seconds=-1)", "invalid", ["max_seconds", "max-seconds"]),
            ("iosim.run(seq=2**24, batch=2**20, heads=2**10, head_dim=256, max_seconds=2)",
             "any", []),
            ("iosim.run(seq=1, kv_heads=1, heads=1, algo='paged', seq_kv=2**24, "
             "max_seconds=3)", "any", []),
            ("iosim.profiles()", "valid", []), ("iosim.profiles(1)", "invalid", []),
    ):
        cases.append((f"py:misc:{expr}"[:160], expr, kind, exp))
    # tune
    for k, vals in (("block_q", ["[]", "[0]", "[-1]", "['a']", "range(0)", "[2**63-1]",
                                 "[2**63]", "None", "[None]", "64.0", "{64}", "(64, 64)",
                                 "'64'", "[True]"]),
                    ("stages", ["[65]", "[0, 0]", "[-2]", "[2**31]"]),
                    ("threads", ["[0]", "[100000]", "[-32]"]),
                    ("tie_band", ["float('nan')", "float('inf')", "-1", "1e308", "'5'",
                                  "None", "101", "0"]),
                    ("top", ["-1", "2**63", "1.5", "None", "True"]),
                    ("jobs", ["-1", "2**31", "None", "100000", "'2'"])):
        for v in vals:
            kind = "invalid"
            if v in ("[0]", "[0, 0]", "range(0)", "None", "(64, 64)", "0", "[]", "[2**63-1]",
                     "100000", "101", "[100000]"):
                kind = "any"
            if k == "top" and v == "None":
                kind = "invalid"
            cases.append((f"py:tune:{k}={v}", f"iosim.tune(seq=128, head_dim=64, "
                          f"block_kv=[32, 64], stages=[2], threads=[128], jobs=1, "
                          f"**{{'{k}': {v}}})" if k not in ("stages", "threads", "jobs")
                          else f"iosim.tune(seq=128, head_dim=64, block_q=[64], "
                          f"block_kv=[64], **{{'{k}': {v}}})", kind, [k]))
    cases.append(("py:tune:bogus", "iosim.tune(seq=128, bogus=1)", "invalid", ["bogus"]))
    cases.append(("py:tune:noseq", "iosim.tune(head_dim=64)", "invalid", ["seq"]))
    cases.append(("py:tune:set-bad", "iosim.tune(seq=128, block_q=[64], block_kv=[64], "
                  "set='l2.size_bytes=-1')", "invalid", ["l2.size_bytes"]))
    # sweep
    for expr, kind, exp in (
            ("iosim.sweep(seq=[], head_dim=64)", "invalid", ["seq"]),
            ("iosim.sweep(seq=64, set=[])", "valid", []),
            ("iosim.sweep(seq=64, set=())", "valid", []),
            ("iosim.sweep(seq=64, set=[[]])", "valid", []),
            ("iosim.sweep(seq=64, head_dim=[])", "invalid", ["head_dim"]),
            ("iosim.sweep(seq=64, algo=[])", "invalid", ["algo"]),
            ("iosim.sweep(seq=[64, 128])", "valid", []),
            ("iosim.sweep(seq=range(64, 65))", "valid", []),
            ("iosim.sweep(seq={64})", "any", ["seq"]),
            ("iosim.sweep(seq=iter([64]))", "invalid", ["seq"]),
            ("iosim.sweep(seq=(x for x in [64]))", "invalid", ["seq"]),
            ("iosim.sweep(seq=64, jobs=-1)", "invalid", ["jobs"]),
            ("iosim.sweep(seq=64, jobs=2**40)", "invalid", ["jobs"]),
            ("iosim.sweep(seq=64, jobs=None)", "invalid", ["jobs"]),
            ("iosim.sweep(seq=64, dataframe='x')", "invalid", ["dataframe"]),
            ("iosim.sweep(seq=64, progress=print)", "invalid", ["progress"]),
            ("iosim.sweep(seq=64, chunks=0)", "invalid", ["chunks"]),
            ("iosim.sweep(seq=64, client='x')", "invalid", ["client"]),
            ("iosim.sweep(seq=64, client=5, jobs=2)", "invalid", ["client"]),
            ("iosim.sweep(seq=64, bogus=[1, 2])", "invalid", ["bogus"]),
            ("iosim.sweep(seq=64, out='x.json')", "invalid", ["out"]),
            ("iosim.sweep(seq=64, shard='1/2')", "any", ["shard"]),
            ("iosim.sweep(seq=64, resume=True)", "invalid", ["resume"]),
            ("iosim.sweep(seq=64, format='csv')", "any", ["format"]),
            ("iosim.sweep(seq=[64, -1])", "invalid", ["seq"]),
            ("iosim.sweep(seq=[64, None])", "invalid", ["seq"]),
            ("iosim.sweep(seq=['64:128:x2'])", "invalid", ["seq"]),
            ("iosim.sweep(seq='64:128:x2')", "any", ["seq"]),
            ("iosim.sweep(seq=[[64]])", "invalid", ["seq"]),
            ("iosim.sweep(seq=64, kernel=[{'name': 'x', 'dataflow': {'forward': "
             "'query_stationary'}}, 'flash2'])", "valid", []),
            ("iosim.sweep(seq=64, kernel=[{'name': 'x'}])", "invalid", ["dataflow"]),
            ("iosim.sweep(seq=64, set=[['l2.size_bytes=20e6'], ['l2.size_bytes=x']])",
             "invalid", ["l2.size_bytes"]),
            ("iosim.sweep(seq=64, set=[5])", "invalid", ["set"]),
            ("iosim.sweep(seq=64, set=None)", "invalid", ["set"]),
            ("iosim.sweep(seq=64, set=['a=1', ['b=2']])", "invalid", ["set"]),
            ("iosim.sweep(seq=list(range(1, 3000)), algo='flash1', max_seconds=1)", "any", []),
            ("iosim.sweep(seq=64, block_q=[64, 100000])", "any", []),
    ):
        cases.append((f"py:sweep:{expr}"[:160], expr, kind, exp))
    for k in ("seq", "batch", "heads", "head_dim", "dropout", "sm_clock_mhz", "algo", "profile"):
        for v in ("[float('nan')]", "[-1]", "[2**64]", "['x']", "[True]", "[b'x']"):
            kind = "invalid"
            if k in ("algo", "profile") and v == "['x']":
                kind = "invalid"
            cases.append((f"py:sweep:{k}={v}", f"iosim.sweep(seq=64, **{{'{k}': {v}}})",
                          kind, [k]))
    # kvcache
    kvb = "layers=2, kv_heads=2, head_dim=64, requests=20"
    for k in ("layers", "kv_heads", "head_dim", "requests", "block_tokens", "samples",
              "max_running", "series_points", "prompt_groups", "weights_bytes",
              "kv_budget_bytes", "watermark", "max_seconds", "prompt_len", "arrivals",
              "policy", "dtype", "trace", "seed", "series", "format"):
        for v in ("None", "-1", "0", "2**63", "float('nan')", "float('inf')", "'x'", "True",
                  "[]", "1e308", "''"):
            kind = "invalid"
            if v == "None" and k not in ("layers", "kv_heads", "head_dim"):
                kind = "any"
            if v == "0" and k in ("max_running", "seed", "max_seconds", "watermark",
                                  "weights_bytes"):
                kind = "any"
            if v == "True" and k == "series":
                kind = "any"
            if v == "2**63" and k == "seed":
                kind = "any"
            if v == "float('inf')" and k == "max_seconds":
                kind = "any"
            b = ", ".join(p for p in kvb.split(", ") if not p.startswith(k + "="))
            cases.append((f"py:kvcache:{k}={v}", f"iosim.kvcache({b}, {k}={v})", kind, [k]))
    cases.append(("py:kvcache:bogus", f"iosim.kvcache({kvb}, bogus=1)", "invalid", ["bogus"]))
    cases.append(("py:kvcache:none", "iosim.kvcache()", "invalid", ["layers"]))
    # layer
    lb = "model='llama-3-8b', seq=128"
    for k in ("model", "phase", "batch", "seq", "context", "tp", "profile", "algo", "dtype",
              "sm_clock_mhz", "l2", "launch", "gemm_bm", "gemm_bk", "gemm_split_k", "kernel",
              "format", "html"):
        for v in ("None", "-1", "0", "2**63", "float('nan')", "'x'", "True", "[]", "[64, -1]",
                  "{}", "''"):
            kind = "invalid"
            if v == "None" and k not in ("model",):
                kind = "any"
            if v == "0" and k in ("context", "gemm_bm", "gemm_bk", "gemm_split_k",
                                  "sm_clock_mhz"):
                kind = "any"  # 0: the default, as the messages say
            b = ", ".join(p for p in lb.split(", ") if not p.startswith(k + "="))
            cases.append((f"py:layer:{k}={v}", f"iosim.layer({b}, {k}={v})", kind, [k]))
    cases.append(("py:layer:bogus", f"iosim.layer({lb}, bogus=1)", "invalid", ["bogus"]))
    # validate
    small = os.path.join(ROOT, "tests/data/measurements_small.json")
    for expr, kind, exp in (
            ("iosim.validate(None)", "invalid", ["path"]),
            ("iosim.validate(5)", "invalid", ["path"]),
            ("iosim.validate(b'x')", "invalid", ["path"]),
            ("iosim.validate('')", "invalid", ["path", "measure", "''"]),
            ("iosim.validate('/nonexistent')", "invalid", ["nonexistent"]),
            ("iosim.validate('/dev/zero')", "invalid", ["zero"]),
            ("iosim.validate('/')", "invalid", ["/"]),
            (f"iosim.validate({small!r}, profile=5)", "invalid", ["profile"]),
            (f"iosim.validate({small!r}, profile='bogus')", "invalid", ["bogus"]),
            (f"iosim.validate({small!r}, profile='')", "valid", []),
            (f"iosim.validate({small!r} + '\\x00junk')", "invalid", ["path", "NUL"]),
            (f"__import__('pathlib').Path({small!r}) and iosim.validate("
             f"__import__('pathlib').Path({small!r}))", "valid", []),
            (f"iosim.validate({small!r}, bogus=1)", "invalid", ["bogus"]),
            (f"iosim.validate({small!r}, None)", "invalid", ["profile"]),
            ("iosim.validate()", "invalid", []),
    ):
        cases.append((f"py:validate:{expr}"[:160], expr, kind, exp))
    return cases


PY_INTERNAL_RE = re.compile(r"incompatible function arguments|Unable to cast|pybind11|std::|"
                            r"basic_string|json\.exception|yaml-cpp|terminate called|"
                            r"NoneType|object is not|__\w+__|Traceback", re.I)


def run_py_case(pc, pypath, workdir):
    cid, expr, kind, exp = pc
    d = tempfile.mkdtemp(prefix="p", dir=workdir)
    before = snapshot(d)
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-c", PY_PRELUDE, pypath, expr], cwd=d,
                           capture_output=True, timeout=TIMEOUT, start_new_session=True)
        rc, out, err, timed_out = p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired as e:
        rc, out, err, timed_out = None, e.stdout or b"", e.stderr or b"", True
    wall = time.monotonic() - t0
    after = snapshot(d)
    shutil.rmtree(d, ignore_errors=True)
    classes, notes = [], []
    status, msg = None, ""
    try:
        res = json.loads(out.decode().strip().splitlines()[-1])
        status, msg = res["status"], res.get("msg", "")
    except (ValueError, IndexError):
        res = {}
    if timed_out:
        classes.append("hang")
    elif rc != 0 or status is None:
        classes.append("crash")
        notes.append(f"process exit {rc}: {err.decode('utf-8', 'replace')[-300:]}")
    elif status == "InternalError":
        classes.append("internal")
    elif status.startswith("other:"):
        classes.append("crash")
        notes.append(f"raised {status[6:]}")
    if msg and PY_INTERNAL_RE.search(msg):
        classes.append("internal")
        notes.append(f"library text: {PY_INTERNAL_RE.search(msg).group(0)!r}")
    if status == "ok" and kind == "invalid":
        classes.append("silent")
        notes.append("returned on invalid input")
    if status == "ok" and res.get("bad"):
        classes.append("silent")
        notes.append("nonsense: " + "; ".join(res["bad"]))
    exp = list(exp) + ["--" + e.replace("_", "-") for e in exp if re.fullmatch(r"[a-z_]+", e)]
    if status not in (None, "ok") and kind == "invalid" and exp and not status.startswith(
            "other") and not any(e.lower() in msg.lower() for e in exp):
        classes.append("misleading")
        notes.append(f"message names none of {exp!r}")
    if status not in (None, "ok") and kind == "valid":
        notes.append("refused a valid call")
    new = [r for r in after if r not in before]
    if new and status != "ok":
        classes.append("destructive")
        notes.append(f"left files {new[:3]}")
    return {"id": cid, "group": "python", "argv": [expr], "kind": kind, "mode": "python",
            "rc": rc, "wall_s": round(wall, 3), "classes": sorted(set(classes)),
            "notes": notes, "stderr": f"{status}: {msg}"[:600]}


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/iosim"))
    ap.add_argument("--python-path", default=os.path.join(ROOT, "build/python"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="probe2_results.json")
    ap.add_argument("--no-python", action="store_true")
    ap.add_argument("--no-cli", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    load_seeds(binary)
    cli = (cli_flag_cases() + combo_cases() + file_cases() + output_cases() + mode_cases()
           + profile_edge_cases() + kernel_edge_cases())
    py = py_cases()
    if args.only:
        rx = re.compile(args.only)
        cli = [c for c in cli if rx.search(c.cid)]
        py = [c for c in py if rx.search(c[0])]
    if args.no_cli:
        cli = []
    if args.no_python:
        py = []
    print(f"{len(cli)} CLI inputs, {len(py)} Python inputs", flush=True)
    workdir = tempfile.mkdtemp(prefix="iosim_probe2_")
    results = []
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(run_case, c, binary, workdir) for c in cli]
        futs += [ex.submit(run_py_case, c, os.path.abspath(args.python_path), workdir)
                 for c in py]
        for i, f in enumerate(cf.as_completed(futs)):
            try:
                r = f.result()
            except Exception as e:  # a bug of the probe itself
                r = {"id": "?", "classes": ["probe-error"], "notes": [repr(e)]}
            results.append(r)
            if r["classes"]:
                print(f"[{','.join(r['classes'])}] {r['id']}: {'; '.join(r.get('notes', []))}"
                      f" | {r.get('stderr', '')[:160]!r}", flush=True)
            if (i + 1) % 200 == 0:
                print(f"... {i + 1}/{len(futs)} in {time.monotonic() - t0:.0f}s", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    counts = {}
    for r in results:
        for c in r["classes"]:
            counts[c] = counts.get(c, 0) + 1
    summary = {"cli_inputs": len(cli), "python_inputs": len(py), "counts": counts,
               "wall_s": round(time.monotonic() - t0, 1)}
    with open(args.out, "w") as f:
        json.dump({"summary": summary, "results": sorted(results, key=lambda r: r["id"])}, f,
                  indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
