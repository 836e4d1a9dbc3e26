#!/usr/bin/env python3
"""Issue #50's fourth probe: a fresh, independent probe of the iosim CLI and Python package.

Written from README.md, docs/*.md, every subcommand's --help, hwprofiles/, models/, schemas/ and
the Python docstrings only (no earlier probe, no bad-input corpus). It generates inputs from a
fixed seed, runs each under a wall timeout (two at a time), and classifies each outcome:

  OK           exit 0 on good input, or exit 2 with a first line starting "iosim" on bad input
  CRASH        a signal other than the one sent, an exit code not 0/1/2 (3 only after a stop),
               a sanitizer/abort message, a Python interpreter killed by a signal
  INTERNAL     library text in the message (std::, json.exception, yaml-cpp, what():, ...), a
               refusal that does not start "iosim", or a Python exception that is not one of the
               package's documented types (ConfigError/InfeasibleError, ValueError, TypeError,
               TimeoutError)
  HANG         no exit within the timeout, or a stop not honoured within 5 s of SIGTERM/SIGINT
  DESTRUCTIVE  a file that is not the command's output changed, or an output left after failure
  SILENT       an input known to be bad accepted (exit 0 / a result returned)
  MISLEADING   a refusal of one bad flag value that names neither that flag nor its value
  NONDET       the same input twice gave different output

Usage: python3 tests/probe_fresh4/probe4.py --bin build/iosim --python-path build/python
       [--jobs 2] [--limit N] [--out results.jsonl]
"""
import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

SEED = 20261207
TIMEOUT = 45.0
LIB_TEXT = re.compile(
    r"std::|json\.exception|basic_string|terminate called|what\(\)|yaml-cpp|YAML::|bad_alloc|"
    r"stoi|stod|stoul|stoll|out_of_range|invalid_argument|Assertion|AddressSanitizer|"
    r"runtime error:|incompatible function arguments|pybind11|Traceback|nlohmann|"
    r"CLI::|Segmentation|core dumped|boost::|Eigen|fmt::|format_error|"
    r"unhandled|(?<![A-Za-z])nullptr|NoneType|__cxa|__gnu")

# ---------------------------------------------------------------------------------------------
# The base problem: small, fast everywhere.
SMALL = ["--batch", "1", "--heads", "2", "--seq", "256", "--head-dim", "64"]
DECODE = ["--batch", "2", "--heads", "8", "--kv-heads", "2", "--seq", "1", "--seq-kv", "1024",
          "--head-dim", "64"]
TINY_EXPLAIN = ["--seq", "16", "--head-dim", "8"]
LAYER = ["--model", "llama-3-8b", "--seq", "128"]
KVC = ["--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--requests", "50",
       "--kv-budget-bytes", "2e8"]

BAD_INTS = ["-1", "-2147483649", "99999999999999999999", "1.5", "abc", "nan", "inf", "-inf",
            "0x10", "1e3", "", " ", "12abc", "--", "9223372036854775808", "١٢", "+-1", "1,",
            ",", "0b1", "1_000"]
BAD_FLOATS = ["nan", "NaN", "inf", "-inf", "1e999", "-1e999", "abc", "", "0x1p3", "1e", "--1",
              "1.2.3", "-nan", "1e-400"]
FS_WORDS = ["nonexistent.yaml", "DIR", "FIFO", "LOOP", "DEVZERO", "DEVNULL", "EMPTY", "BIN",
            "HUGE", "DANGLING"]


class Case:
    __slots__ = ("id", "kind", "cmd", "bad", "flag", "value", "sig", "sig_at", "stdin_pipe",
                 "mem_mb", "watch", "outputs", "det", "py", "cwd", "note", "expect_rc",
                 "stdout_blocked", "env")

    def __init__(self, kind, cmd=None, bad=True, flag=None, value=None, **kw):
        self.kind = kind
        self.cmd = cmd
        self.bad = bad          # True: must be refused; False: must succeed; None: either
        self.flag = flag
        self.value = value
        self.sig = kw.get("sig")
        self.sig_at = kw.get("sig_at", 0.0)
        self.stdin_pipe = False
        self.mem_mb = kw.get("mem_mb")
        self.watch = kw.get("watch", [])     # files whose bytes must not change
        self.outputs = kw.get("outputs", [])  # outputs that must not exist after a failure
        self.det = kw.get("det", False)
        self.py = kw.get("py")
        self.cwd = kw.get("cwd")
        self.note = kw.get("note", "")
        self.expect_rc = kw.get("expect_rc")
        self.stdout_blocked = kw.get("stdout_blocked", False)
        self.env = kw.get("env")
        self.id = None


# ---------------------------------------------------------------------------------------------
# Files
class Files:
    def __init__(self, root, iosim):
        self.root = root
        self.iosim = iosim
        os.makedirs(root, exist_ok=True)
        p = lambda n: os.path.join(root, n)  # noqa: E731
        self.p = p
        os.makedirs(p("DIR"), exist_ok=True)
        if not os.path.exists(p("FIFO")):
            os.mkfifo(p("FIFO"))
        for a, b in (("LOOP", "LOOP2"), ("LOOP2", "LOOP")):
            if not os.path.lexists(p(a)):
                os.symlink(p(b), p(a))
        if not os.path.lexists(p("DANGLING")):
            os.symlink(p("no_such_target"), p("DANGLING"))
        if not os.path.lexists(p("DEVZERO")):
            os.symlink("/dev/zero", p("DEVZERO"))
        if not os.path.lexists(p("DEVNULL")):
            os.symlink("/dev/null", p("DEVNULL"))
        open(p("EMPTY"), "w").close()
        with open(p("BIN"), "wb") as f:
            f.write(bytes(random.Random(1).randrange(256) for _ in range(4096)))
        with open(p("HUGE"), "wb") as f:  # sparse, 300 MiB: over every input size limit
            f.truncate(300 << 20)
        self.base = {}
        self.base["profile.yaml"] = self.cli_text(["profiles", "--show", "a100-sxm4-40gb"])
        self.base["h100.yaml"] = self.cli_text(["profiles", "--show", "h100-sxm5-80gb"])
        self.base["kernel.yaml"] = self.cli_text(["kernels", "--show", "flash2"])
        self.base["kernel3.yaml"] = self.cli_text(["kernels", "--show", "flash3"])
        here = os.path.dirname(os.path.abspath(__file__))
        repo = os.path.dirname(os.path.dirname(here))
        self.repo = repo
        with open(os.path.join(repo, "models", "llama-3-8b.yaml")) as f:
            self.base["model.yaml"] = f.read()
        meas = os.path.join(repo, "cuda_validate", "measurements", "h100-sxm5-80gb",
                            "heldout_2026-11-23", "heldout_2026-11-23.json")
        with open(meas) as f:
            d = json.load(f)
        d["cases"] = [c for c in d["cases"] if c.get("error") is None][:2]
        self.base["meas.json"] = json.dumps(d, indent=1)
        self.base["ncu.csv"] = NCU_CSV
        self.base["pattern.txt"] = "# 2x2 blocks\n1 0\n1 1\n"
        self.base["table.txt"] = "\n".join(" ".join(str(i * 64 + j) for j in range(64))
                                           for i in range(2)) + "\n"
        self.base["trace.csv"] = "arrival,prompt_len,output_len\n" + "".join(
            f"{i // 4},{32 + i},{16 + (i % 7)}\n" for i in range(40))
        sw = self.cli_text(["sweep", "--profile", "h100-sxm5-80gb", "--algo", "flash2,flash1",
                            "--seq", "256,512", "--head-dim", "64", "--block-kv", "32,64",
                            "--jobs", "1"])
        self.base["sweep.json"] = sw
        self.base["sweep.csv"] = self.cli_text(["sweep", "--algo", "flash2", "--seq", "256,512",
                                                "--block-kv", "32,64", "--format", "csv",
                                                "--jobs", "1"])
        # a journal: a sweep stopped by its budget keeps OUT.partial
        jd = p("journal_src")
        os.makedirs(jd, exist_ok=True)
        out = os.path.join(jd, "s.json")
        subprocess.run([iosim, "sweep", "--algo", "flash2", "--seq", "64:16384:+64",
                        "--block-kv", "32,64", "--jobs", "1", "--max-seconds", "0.6", "--out",
                        out], capture_output=True, timeout=60)
        part = out + ".partial"
        self.base["journal"] = open(part).read() if os.path.exists(part) else ""
        for name, text in self.base.items():
            with open(p(name), "w") as f:
                f.write(text)

    def cli_text(self, args):
        r = subprocess.run([self.iosim] + args, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"setup: iosim {' '.join(args)} failed: {r.stderr}")
        return r.stdout

    def fs(self, word):
        return self.p(word)


# An Nsight Compute --csv export (ncu --csv --page raw style): header, units row, one kernel.
NCU_CSV = (
    '"ID","Device","Kernel Name","Block Size","Grid Size","dram__bytes_read.sum",'
    '"dram__bytes_write.sum","l1tex__m_xbar2l1tex_read_sectors.sum",'
    '"lts__t_sectors_srcunit_tex_op_write.sum","gpu__time_duration.sum",'
    '"sm__cycles_elapsed.avg.per_second"\n'
    '"","","","","","byte","byte","sector","sector","nsecond","cycle/second"\n'
    '"0","NVIDIA H100 80GB HBM3","wg1_fwd_kernel","(128, 1, 1)","(32, 64, 1)","67108864",'
    '"33554432","8388608","1048576","1616600","1755000000"\n')


def mutations(text, rng, name):
    """(label, bytes) variants of one input file."""
    lines = text.splitlines(True)
    out = []
    out.append(("empty", b""))
    out.append(("half", text[: len(text) // 2].encode()))
    out.append(("one_byte", text[:1].encode()))
    out.append(("bom", b"\xef\xbb\xbf" + text.encode()))
    out.append(("crlf", text.replace("\n", "\r\n").encode()))
    out.append(("utf16", text.encode("utf-16")))
    out.append(("latin1_junk", text.encode() + b"\n\xff\xfe\xc3\x28 junk\n"))
    out.append(("nul", text[:40].encode() + b"\x00" + text[40:].encode()))
    if name.endswith(".json") or name == "journal":
        out.append(("deep_nest", b"[" * 300000 + b"]" * 300000))
        out.append(("deep_obj", b'{"a":' * 100000 + b"1" + b"}" * 100000))
    elif name.endswith(".yaml"):
        out.append(("deep_flow", b"a: " + b"[" * 200000 + b"]" * 200000 + b"\n"))
        out.append(("deep_block", "".join("  " * i + f"k{i}:\n" for i in range(3000)).encode()))
        out.append(("alias_bomb", b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\n"
                    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c]\n"))
        out.append(("tag", ("!!python/object:os.system x\n" + text).encode()))
        out.append(("tab_indent", text.replace("  ", "\t").encode()))
        out.append(("multi_doc", (text + "\n---\n" + text).encode()))
    else:
        out.append(("long_line", b"1" * (2 << 20) + b"\n"))
    for k in range(6):
        if len(lines) > 1:
            i = rng.randrange(len(lines))
            out.append((f"drop{k}", "".join(lines[:i] + lines[i + 1:]).encode()))
            out.append((f"dup{k}", "".join(lines[:i + 1] + lines[i:]).encode()))
    nums = list(re.finditer(r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])", text))
    for k in range(14):
        if not nums:
            break
        m = rng.choice(nums)
        v = rng.choice(["0", "-1", "1e309", "nan", ".nan", "99999999999999999999", "1.5",
                        "-0", "abc", "1e-300", "\"5\"", "true", "[]", "{}", "3.4e38",
                        "18446744073709551616"])
        out.append((f"num{k}:{v}", (text[:m.start()] + v + text[m.end():]).encode()))
    words = list(re.finditer(r"[A-Za-z_]{3,}", text))
    for k in range(5):
        if not words:
            break
        m = rng.choice(words)
        v = rng.choice(["zzz", "", "null", "~", "NaN", "TRUE", m.group(0).upper()])
        out.append((f"word{k}:{v}", (text[:m.start()] + v + text[m.end():]).encode()))
    return out


# ---------------------------------------------------------------------------------------------
def cli_cases(F, rng):
    cases = []
    add = cases.append
    # flags of each subcommand with a base command to put them in
    num_flags = {
        "run": (SMALL, ["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv",
                        "--block-q", "--block-kv", "--splits", "--page-tokens", "--threads",
                        "--stages", "--backward-block-q", "--backward-block-kv", "--window",
                        "--seed"], ["--sm-clock-mhz", "--dropout", "--max-seconds"]),
        "sweep": (SMALL, ["--batch", "--heads", "--head-dim", "--seq", "--block-kv", "--jobs",
                          "--threads", "--stages", "--window", "--seed", "--seq-kv"],
                  ["--sm-clock-mhz", "--dropout", "--max-seconds"]),
        "tune": (SMALL, ["--batch", "--heads", "--head-dim", "--seq", "--block-q", "--block-kv",
                         "--stages", "--threads", "--top", "--jobs", "--window", "--seed"],
                 ["--tie-band", "--sm-clock-mhz", "--dropout", "--max-seconds"]),
        "explain": (TINY_EXPLAIN, ["--batch", "--heads", "--head-dim", "--seq", "--block-q",
                                   "--block-kv", "--step", "--until", "--seed", "--threads"],
                    ["--dropout", "--sm-clock-mhz"]),
        "layer": (LAYER, ["--batch", "--seq", "--context", "--tp", "--gemm-bm", "--gemm-bn",
                          "--gemm-bk", "--gemm-cluster-m", "--gemm-cluster-n", "--gemm-group-m",
                          "--gemm-split-k"], ["--sm-clock-mhz", "--max-seconds"]),
        "kvcache": (KVC, ["--layers", "--kv-heads", "--head-dim", "--block-tokens",
                          "--requests", "--max-prompt-tokens", "--max-output-tokens",
                          "--samples", "--shared-prefix-tokens", "--prompt-groups",
                          "--max-running", "--seed", "--series-points"],
                    ["--weights-bytes", "--kv-budget-bytes", "--watermark", "--max-seconds"]),
        "validate": (["--ncu", F.p("ncu.csv"), "--kernel", "flash2", "--batch", "4", "--heads",
                      "16", "--seq", "4096", "--head-dim", "128", "--time-us", "1616.6"],
                     ["--batch", "--heads", "--head-dim", "--seq", "--seq-kv", "--kv-heads"],
                     ["--time-us"]),
        "demo": ([], ["--batch", "--heads", "--head-dim", "--seq"], []),
    }

    def with_flag(base, flag, value):
        # replace the flag in base, or append it
        b = list(base)
        if flag in b:
            i = b.index(flag)
            b[i + 1] = value
            return b
        return b + [flag, value]

    for sub, (base, ints, floats) in num_flags.items():
        pre = [sub] if sub != "validate" else [sub]
        for flag in ints:
            for v in BAD_INTS + (["18446744073709551616"] if flag == "--seed" else []):
                bad = None if (flag == "--seed" and v == "9223372036854775808") else True
                add(Case("cli", pre + with_flag(base, flag, v), bad=bad, flag=flag, value=v))
            for v in ["0", "1", "2147483647", "4294967297", "65536"]:
                # unknown validity: crash/hang/internal still count
                extra = ["--max-seconds", "8"] if sub in ("run", "sweep", "tune", "layer",
                                                          "kvcache") else []
                if flag == "--max-seconds":
                    extra = []
                add(Case("cli", pre + with_flag(base, flag, v) + extra, bad=None, flag=flag,
                         value=v))
        for flag in floats:
            for v in BAD_FLOATS + ["-1", "-0.5"]:
                bad = True
                if v in ("1e-400",) or (flag == "--max-seconds" and v in ("inf",)):
                    bad = None
                if v in ("-1", "-0.5") and flag in ("--tie-band",):
                    bad = True
                add(Case("cli", pre + with_flag(base, flag, v), bad=bad, flag=flag, value=v))
    # enumerated text flags
    enums = {
        "run": (SMALL, ["--algo", "--dtype", "--pass", "--l2", "--warpgroups", "--pack-gqa",
                        "--format", "--pattern", "--max-memory", "--seq-lens", "--seq-kv-lens",
                        "--set", "--profile", "--kernel"]),
        "sweep": (SMALL, ["--algo", "--dtype", "--pass", "--l2", "--format", "--shard",
                          "--set", "--profile", "--max-memory", "--pattern"]),
        "tune": (SMALL, ["--algo", "--dtype", "--format", "--set", "--profile", "--max-memory"]),
        "explain": (TINY_EXPLAIN, ["--algo", "--compare", "--focus", "--dtype", "--pass",
                                   "--profile"]),
        "layer": (LAYER, ["--model", "--phase", "--profile", "--algo", "--dtype", "--l2",
                          "--launch", "--mlp-activation", "--format", "--seq-lens",
                          "--context-lens"]),
        "kvcache": (KVC, ["--dtype", "--policy", "--prompt-len", "--output-len", "--arrivals",
                          "--format", "--profile"]),
        "profiles": ([], ["--show", "--keys", "--format"]),
        "kernels": ([], ["--show"]),
    }
    bad_text = ["", " ", "zzz", "FLASH2", "flash2 ", "nan", "-1", "a,b", ",", "flash9",
                "\x01", "é", "x" * 5000, "1:2:3:4", "on,off", "--", "fp8,fp16"]
    special = {
        "--pattern": ["local:0", "local:-1", "strided:0", "random:2:1", "random:nan:1",
                      "random:0.5", "file:" + F.p("nonexistent"), "file:" + F.p("DIR"),
                      "file:" + F.p("FIFO"), "file:" + F.p("LOOP"), "file:", "causal:3",
                      "local:99999999999999999999", "file:" + F.p("BIN"),
                      "file:" + F.p("HUGE")],
        "--max-memory": ["0", "-1", "1", "8X", "1e999", "nan", "8GiBB", "99999999999999999999G",
                         "1.5.5G", "G", "0.0000001K"],
        "--seq-lens": ["0", "-1", "1,,2", "1,abc", "256," * 5000, "99999999999999999999",
                       "1.5,2", " ", "nan"],
        "--seq-kv-lens": ["1,2", "0,0", "-1", "a"],
        "--context-lens": ["1,2,3", "-1", "x", "0"],
        "--set": ["l2.size_bytes=nan", "l2.size_bytes=-1", "l2.size_bytes=1e999",
                  "nosuch.key=1", "l2.size_bytes", "=5", "l2.size_bytes=", "sm.count=0",
                  "sm.count=1.5", "sm.count=99999999999999999999", "l2.size_bytes=4e12",
                  "l2.sector_bytes=1", "hbm.bandwidth_bytes_per_s=0", "sm.count=abc",
                  "l2.size_bytes=1e6,2e6", "l2.size_bytes=1:1000000:+1"],
        "--shard": ["0/1", "2/1", "1/0", "-1/2", "a/b", "1", "1/", "/", "3/2",
                    "1/99999999999999999999"],
        "--prompt-len": ["const:-1", "const:0", "uniform:5,1", "normal:nan,1", "lognormal:99,9",
                         "const:99999999999999999999", "uniform:1", "lognormal:5", "zipf:1",
                         "const:", "normal:5,-1"],
        "--output-len": ["const:-1", "const:0", "uniform:10,1", "lognormal:inf,1"],
        "--arrivals": ["poisson:0", "poisson:-1", "poisson:nan", "poisson:inf", "poisson:",
                       "poisson:1e-300", "burst:1"],
        "--focus": ["cta:-1", "cta:99", "cta:", "cta:x", "warp:1", "cta:99999999999999999999"],
        "--profile": [F.p(w) for w in FS_WORDS] + ["h100", "H100-SXM5-80GB", F.p("kernel.yaml"),
                                                  F.p("meas.json")],
        "--kernel": [F.p(w) for w in FS_WORDS] + ["{", "{}", "{\"name\":1}", "[]",
                                                  F.p("profile.yaml"), "flash2,,flash3",
                                                  "flash2,flash2"],
        "--model": [F.p(w) for w in FS_WORDS] + ["llama", F.p("profile.yaml")],
    }
    for sub, (base, flags) in enums.items():
        for flag in flags:
            vals = special.get(flag, bad_text)
            for v in vals:
                bad = True
                if flag == "--set" and v in ("l2.size_bytes=4e12", "l2.sector_bytes=1",
                                             "l2.size_bytes=1e6,2e6"):
                    bad = None
                if flag == "--set" and v == "l2.size_bytes=1:1000000:+1" and sub == "sweep":
                    bad = None
                if flag == "--max-memory" and v in ("1e999",):
                    bad = None
                if sub == "sweep" and v in ("on,off", "fp8,fp16"):
                    bad = None
                if flag == "--profile" and v == F.p("DEVNULL"):
                    bad = True
                extra = ["--max-seconds", "8"] if sub in ("run", "sweep", "tune", "layer",
                                                          "kvcache") else []
                add(Case("cli", [sub] + with_flag(base, flag, v) + extra, bad=bad, flag=flag,
                         value=v))
    # unknown flags, repeated flags, missing values, positional junk, subcommand typos
    for sub, base in (("run", SMALL), ("sweep", SMALL), ("tune", SMALL),
                      ("explain", TINY_EXPLAIN), ("layer", LAYER), ("kvcache", KVC),
                      ("profiles", []), ("kernels", []), ("demo", []), ("report",
                                                                       [F.p("sweep.json")]),
                      ("validate", [F.p("meas.json")])):
        for extra in (["--nosuch"], ["--seq-len", "5"], ["-x"], ["--"], ["junk"],
                      ["--format=json=x"], ["--help", "--nosuch"], ["-"], ["--fromat", "json"]):
            add(Case("cli", [sub] + base + extra,
                     bad=None if extra in (["--"], ["--help", "--nosuch"]) else True,
                     flag=extra[0].split("=")[0], value=extra[0].split("=", 1)[-1]))
        rep = {"run": "--seq", "sweep": "--seq", "tune": "--seq", "explain": "--seq",
               "layer": "--seq", "kvcache": "--layers", "demo": "--seq"}.get(sub)
        if rep:
            v2 = "128" if sub != "kvcache" else "8"
            b2 = base if rep in base else base + [rep, "256"]
            add(Case("cli", [sub] + b2 + [rep, v2], bad=True, flag=rep, value=v2,
                     note="repeated flag"))
            add(Case("cli", [sub] + base + [rep], bad=True, flag=rep, value=rep,
                     note="flag without its value"))
    for c in (["rn"], ["RUN"], [""], ["run", "run"], ["help"], ["--nosuch"]):
        add(Case("cli", c, bad=True))
    for c in (["--version", "x"], ["-h", "x"]):
        add(Case("cli", c, bad=None))
    # combinations an A100 profile cannot run
    for a100 in ("a100-sxm4-40gb", "a100-sxm4-80gb", F.p("profile.yaml")):
        for extra in (["--algo", "flash3"], ["--dtype", "fp8", "--algo", "flash3"],
                      ["--kernel", "flash3"], ["--kernel", F.p("kernel3.yaml")],
                      ["--algo", "flash2", "--dtype", "fp8"],
                      ["--algo", "flash3", "--warpgroups", "pingpong"],
                      ["--algo", "flash2,flash3"],
                      ["--kernel", '{"name":"w","dataflow":{"forward":"query_stationary"},'
                                   '"mechanisms":{"mma":"wgmma_rs","load":"tma"}}'],
                      ["--kernel", '{"name":"w","dataflow":{"forward":"query_stationary"},'
                                   '"mechanisms":{"mma":"mma_sync","load":"tma"}}']):
            for sub in ("run", "sweep", "tune", "explain"):
                base = SMALL if sub != "explain" else TINY_EXPLAIN
                add(Case("cli", [sub, "--profile", a100] + base + extra,
                         bad=None if sub == "sweep" else True, note="hopper-only on A100"))
        add(Case("cli", ["layer", "--profile", a100] + LAYER + ["--algo", "flash3"], bad=True,
                 note="hopper-only on A100"))
        add(Case("cli", ["layer", "--profile", a100] + LAYER + ["--kernel", "flash3"], bad=True,
                 note="hopper-only on A100"))
        add(Case("cli", ["validate", "--profile", a100, "--ncu", F.p("ncu.csv"), "--kernel",
                         "flash3", "--batch", "4", "--heads", "16", "--seq", "4096",
                         "--head-dim", "128"], bad=True, note="hopper-only on A100"))
    # other flag/algorithm mismatches
    for extra in (["--algo", "flash2", "--warpgroups", "pingpong"],
                  ["--algo", "flash2", "--splits", "4"], ["--algo", "flash2", "--page-tokens",
                                                          "8"],
                  ["--algo", "flash1", "--pattern", "local:2"],
                  ["--algo", "standard", "--window", "4"],
                  ["--algo", "flash2", "--block-table", F.p("table.txt")],
                  ["--algo", "flash2", "--backward-block-q", "64"],
                  ["--algo", "flash3", "--dtype", "fp8", "--pass", "bwd"],
                  ["--kv-heads", "3"], ["--kv-heads", "4", "--heads", "2"],
                  ["--algo", "paged", "--page-tokens", "0"],
                  ["--algo", "flash-decoding", "--splits", "-3"],
                  ["--l2", "off", "--cold-l2"], ["--algo", "flash2", "--kv-dtype", "fp8"],
                  ["--execute", "--dtype", "fp8", "--algo", "flash3"],
                  ["--seq-lens", "100,200", "--batch", "3"],
                  ["--seq-lens", "100,200", "--algo", "flash1"],
                  ["--block-q", "7"], ["--block-kv", "3"], ["--threads", "33"],
                  ["--head-dim", "1000"], ["--stages", "1000"]):
        add(Case("cli", ["run"] + SMALL + extra + ["--max-seconds", "8"], bad=None,
                 note="mismatch"))
    # --- input files: mutate each kind and feed it to each command that reads it
    readers = {
        "profile.yaml": [["run", "--profile", "@"] + SMALL, ["layer", "--profile", "@"] + LAYER,
                         ["kvcache", "--profile", "@"] + KVC[:-2]],
        "kernel.yaml": [["run", "--kernel", "@"] + SMALL, ["explain", "--kernel", "@"] +
                        TINY_EXPLAIN, ["tune", "--kernel", "@", "--block-kv", "64"] + SMALL],
        "model.yaml": [["layer", "--model", "@", "--seq", "128"]],
        "meas.json": [["validate", "@"], ["report", F.p("sweep.json"), "--validation", "@"]],
        "ncu.csv": [["validate", "--ncu", "@", "--kernel", "flash2", "--batch", "4", "--heads",
                     "16", "--seq", "4096", "--head-dim", "128", "--time-us", "1616.6"]],
        "sweep.json": [["report", "@"]],
        "sweep.csv": [["report", "@"]],
        "pattern.txt": [["run", "--algo", "block-sparse", "--pattern", "file:@", "--block-q",
                         "128", "--block-kv", "128"] + SMALL],
        "table.txt": [["run", "--algo", "paged", "--block-table", "@"] + DECODE],
        "trace.csv": [["kvcache", "--trace", "@"] + KVC[:6] + KVC[8:]],
    }
    mdir = F.p("mut")
    os.makedirs(mdir, exist_ok=True)
    n = 0
    for name, cmds in readers.items():
        ext = os.path.splitext(name)[1]
        for label, data in mutations(F.base[name], rng, name):
            n += 1
            path = os.path.join(mdir, f"m{n}_{re.sub(r'[^A-Za-z0-9]', '_', label)}{ext}")
            with open(path, "wb") as f:
                f.write(data)
            cmd = rng.choice(cmds)
            argv = [a.replace("@", path) if "@" in a else a for a in cmd]
            bad = True if label in ("empty", "half", "one_byte", "utf16", "nul", "deep_nest",
                                    "deep_obj", "deep_flow", "deep_block", "alias_bomb",
                                    "tag", "long_line", "latin1_junk") else None
            if "--max-seconds" not in argv and argv[0] in ("run", "layer", "kvcache"):
                argv += ["--max-seconds", "10"]
            add(Case("cli", argv, bad=bad, value=label, watch=[path],
                     note=f"file {name} {label}"))
        # the input as a file-system hazard
        for w in FS_WORDS:
            cmd = cmds[0]
            argv = [a.replace("@", F.p(w)) for a in cmd]
            add(Case("cli", argv, bad=True, value=w, note=f"fs {name} {w}"))
    # a NUL byte inside a value of each line-based reader
    nul_cases = (
        ("ncu.csv", b'"67108864"', b'"67108\x00864"', readers["ncu.csv"][0]),
        ("ncu.csv", b'"byte","byte"', b'"by\x00te","byte"', readers["ncu.csv"][0]),
        ("trace.csv", b"0,32,16", b"0,3\x002,16", readers["trace.csv"][0]),
        ("table.txt", b"0 1 2", b"0 1\x00 2", readers["table.txt"][0]),
        ("pattern.txt", b"1 1", b"1\x00 1", readers["pattern.txt"][0]),
        ("sweep.csv", b"flash2", b"fla\x00sh2", readers["sweep.csv"][0]),
        ("profile.yaml", b"a100", b"a1\x0000", readers["profile.yaml"][0]),
        ("kernel.yaml", b"flash2", b"fla\x00sh2", readers["kernel.yaml"][0]),
        ("model.yaml", b"llama", b"lla\x00ma", readers["model.yaml"][0]),
    )
    for name, a, b, cmd in nul_cases:
        n += 1
        path = os.path.join(mdir, f"nul{n}{os.path.splitext(name)[1]}")
        data = F.base[name].encode()
        with open(path, "wb") as f:
            f.write(data.replace(a, b, 1))
        argv = [x.replace("@", path) if "@" in x else x for x in cmd]
        add(Case("cli", argv, bad=True, value="NUL", watch=[path], note=f"NUL in {name}"))
    # resume with a mutated journal
    for label, data in mutations(F.base["journal"], rng, "journal") + [
            ("journal_not_ours", b"hello, this is my own notes file\n")]:
        n += 1
        d = os.path.join(mdir, f"j{n}")
        os.makedirs(d, exist_ok=True)
        out = os.path.join(d, "s.json")
        with open(out + ".partial", "wb") as f:
            f.write(data)
        add(Case("cli", ["sweep", "--algo", "flash2", "--seq", "64:16384:+64", "--block-kv",
                         "32,64", "--jobs", "1", "--max-seconds", "20", "--resume", "--out",
                         out], bad=None, value=label, watch=[] if label != "journal_not_ours"
                 else [out + ".partial"], note=f"journal {label}"))
        # without --resume, a journal not ours must be left alone
        if label in ("journal_not_ours", "empty", "half"):
            d2 = os.path.join(mdir, f"j{n}b")
            os.makedirs(d2, exist_ok=True)
            out2 = os.path.join(d2, "s.json")
            with open(out2 + ".partial", "wb") as f:
                f.write(data)
            # a stopped sweep's journal (even cut short) is iosim's own: replaced by design
            add(Case("cli", ["sweep", "--algo", "flash2", "--seq", "256", "--out", out2],
                     bad=None, value=label,
                     watch=[] if label == "half" else [out2 + ".partial"],
                     note=f"journal without resume {label}"))
    # --- outputs: aliases, links, sentinels, special files
    odir = F.p("out")
    os.makedirs(odir, exist_ok=True)
    k = 0

    def sentinel(text="NOT IOSIM'S FILE: user notes\n"):
        nonlocal k
        k += 1
        path = os.path.join(odir, f"user{k}.txt")
        with open(path, "w") as f:
            f.write(text)
        return path

    outflags = [
        (["run"] + SMALL, ["--html", "--svg"]),
        (["sweep", "--seq", "256,512"], ["--out"]),
        (["tune"] + SMALL + ["--block-kv", "64"], ["--html"]),
        (["explain"] + TINY_EXPLAIN, ["--html"]),
        (["layer"] + LAYER, ["--html"]),
        (["report", F.p("sweep.json")], ["--md", "--html"]),
        (["validate", F.p("meas.json")], ["--json"]),
    ]
    for base, flags in outflags:
        for flag in flags:
            # output over a directory, FIFO, device, loop, dangling link, nonexistent dir
            for w in ("DIR", "FIFO", "LOOP", "DEVZERO", "DANGLING"):
                add(Case("cli", base + [flag, F.p(w)], bad=True if w != "DANGLING" else None,
                         flag=flag, value=w, note=f"output {flag} over {w}"))
            add(Case("cli", base + [flag, os.path.join(odir, "nodir", "x.html")], bad=True,
                     flag=flag, value="nodir", note="output in a missing folder"))
            add(Case("cli", base + [flag, "/dev/full"], bad=True, flag=flag, value="/dev/full",
                     note="output /dev/full"))
            add(Case("cli", base + [flag, ""], bad=True, flag=flag, value="''",
                     note="empty output name"))
            # a failing command must leave a user's file alone
            s = sentinel()
            failing = base + ["--nosuch-flag"] if base[0] != "report" else base[:1] + [
                F.p("EMPTY")]
            add(Case("cli", failing + [flag, s], bad=True, watch=[s], note="fail over user file"))
            s = sentinel()
            failing2 = list(base)
            if base[0] in ("run", "tune"):
                failing2 += ["--head-dim", "256", "--block-q", "256", "--block-kv", "256",
                             "--stages", "4"]
            elif base[0] == "explain":
                failing2 += ["--block-q", "64", "--block-kv", "64", "--seq", "64",
                             "--head-dim", "16", "--heads", "5"]
            elif base[0] == "layer":
                failing2 += ["--tp", "3"]
            elif base[0] == "sweep":
                failing2 += ["--head-dim", "64,-1"]
            elif base[0] == "report":
                failing2 = ["report", F.p("sweep.json"), "--validation", F.p("BIN")]
            elif base[0] == "validate":
                failing2 = ["validate", F.p("BIN")]
            add(Case("cli", failing2 + [flag, s], bad=True, watch=[s],
                     note="late failure over user file"))
            # an output that is the command's own input, under another spelling
            inp = None
            if base[0] == "report":
                inp = F.p("sweep.json")
            elif base[0] == "validate":
                inp = F.p("meas.json")
            if inp:
                alias = os.path.join(F.root, "DIR", "..", os.path.basename(inp))
                cp = os.path.join(odir, f"copy{k}_" + os.path.basename(inp))
                shutil.copy(inp, cp)
                link = cp + ".lnk"
                os.symlink(cp, link)
                hard = cp + ".hard"
                os.link(cp, hard)
                for o in (alias.replace(inp, cp) if False else
                          os.path.join(odir, "..", "out", os.path.basename(cp)), link, hard):
                    add(Case("cli", [base[0], cp] + base[2:] + [flag, o], bad=True, watch=[cp],
                             note=f"output aliases input {flag}"))
    # the command's own inputs as outputs: run --profile p.yaml --html p.yaml etc.
    for inflag, name, cmd in (("--profile", "profile.yaml", ["run"] + SMALL + ["--html"]),
                              ("--kernel", "kernel.yaml", ["run"] + SMALL + ["--svg"]),
                              ("--kernel", "kernel.yaml", ["explain"] + TINY_EXPLAIN +
                               ["--html"]),
                              ("--profile", "profile.yaml", ["sweep", "--seq", "256", "--out"]),
                              ("--model", "model.yaml", ["layer", "--seq", "128", "--html"]),
                              ("--profile", "profile.yaml", ["tune"] + SMALL + ["--html"])):
        for how in ("same", "dotdot", "symlink", "hardlink"):
            k += 1
            d = os.path.join(odir, f"in{k}")
            os.makedirs(os.path.join(d, "sub"), exist_ok=True)
            src = os.path.join(d, name)
            shutil.copy(F.p(name), src)
            if how == "same":
                o = src
            elif how == "dotdot":
                o = os.path.join(d, "sub", "..", name)
            elif how == "symlink":
                o = os.path.join(d, "o.lnk")
                os.symlink(src, o)
            else:
                o = os.path.join(d, "o.hard")
                os.link(src, o)
            if cmd[0] == "sweep" and not o.endswith(".json"):
                o2 = os.path.join(d, "o.json")
                if how == "symlink":
                    os.symlink(src, o2)
                elif how == "hardlink":
                    os.link(src, o2)
                else:
                    o2 = o
                o = o2
            add(Case("cli", [cmd[0], inflag, src] + cmd[1:] + [o], bad=True, watch=[src],
                     note=f"output is own input {inflag} ({how})"))
    # two outputs of one command that alias each other
    for how in ("same", "dot", "symlink", "hardlink", "dotdot"):
        k += 1
        d = os.path.join(odir, f"two{k}")
        os.makedirs(os.path.join(d, "sub"), exist_ok=True)
        a = os.path.join(d, "o.html")
        if how == "same":
            b = a
        elif how == "dot":
            b = os.path.join(d, ".", "o.html")
        elif how == "dotdot":
            b = os.path.join(d, "sub", "..", "o.html")
        elif how == "symlink":
            open(a, "w").close()
            b = os.path.join(d, "l.html")
            os.symlink(a, b)
        else:
            open(a, "w").close()
            b = os.path.join(d, "h.html")
            os.link(a, b)
        add(Case("cli", ["run"] + SMALL + ["--html", a, "--svg", b], bad=True,
                 note=f"two outputs alias ({how})"))
        add(Case("cli", ["report", F.p("sweep.json"), "--html", a, "--md", b], bad=True,
                 note=f"two outputs alias ({how})"))
    # a successful command over an existing user file is the user's choice (no check), but the
    # output must be whole: run it and check the result parses
    # --- environment: profile folder and Chart.js from the environment
    bad_pd = os.path.join(F.root, "bad_profiles")
    os.makedirs(bad_pd, exist_ok=True)
    with open(os.path.join(bad_pd, "h100-sxm5-80gb.yaml"), "w") as f:
        f.write(F.base["h100.yaml"][: len(F.base["h100.yaml"]) // 3])
    os.symlink(F.p("FIFO"), os.path.join(bad_pd, "fifo.yaml")) if not os.path.lexists(
        os.path.join(bad_pd, "fifo.yaml")) else None
    for pd in (F.p("nonexistent"), F.p("DIR"), bad_pd, F.p("EMPTY"), F.p("LOOP"), ""):
        for argv in (["run"] + SMALL, ["profiles"], ["layer"] + LAYER, ["sweep", "--seq", "256"]):
            add(Case("cli", argv, bad=None, env={"IOSIM_PROFILE_DIR": pd},
                     note=f"IOSIM_PROFILE_DIR={pd}"))
    for cj in (F.p("FIFO"), F.p("HUGE"), F.p("DIR"), F.p("nonexistent"), F.p("EMPTY"),
               F.p("BIN"), F.p("LOOP"), F.p("DEVZERO")):
        o = os.path.join(odir, f"cj{abs(hash(cj)) % 10000}.html")
        add(Case("cli", ["report", F.p("sweep.json"), "--html", o], bad=True,
                 env={"IOSIM_CHARTJS": cj}, outputs=[o], note=f"IOSIM_CHARTJS={cj}"))
        add(Case("cli", ["report", F.p("sweep.json"), "--html", o, "--chartjs", cj], bad=True,
                 flag="--chartjs", value=cj, outputs=[o], note="--chartjs"))
    # sweep output names and report inputs
    for o in ("x.txt", "x", "x.JSON", "x.csv.json", ".json", "x.json/"):
        add(Case("cli", ["sweep", "--seq", "256", "--out", os.path.join(odir, o)], bad=None,
                 note=f"sweep --out {o}"))
    for argv in (["report", F.p("sweep.json"), F.p("sweep.json")],
                 ["report", F.p("sweep.json"), F.p("sweep.csv")],
                 ["report", F.p("sweep.csv"), F.p("sweep.csv")],
                 ["report", F.p("meas.json")], ["report", F.p("profile.yaml")],
                 ["report", F.p("journal")], ["report", F.p("sweep.json"), "--validation",
                                              F.p("sweep.json")],
                 ["report", F.p("sweep.json"), "--validation-profile", "nosuch"],
                 ["report", F.p("sweep.json"), "--validation-profile", "a100-sxm4-40gb"],
                 ["validate", F.p("sweep.json")], ["validate"], ["validate", F.p("DIR")],
                 ["validate", F.p("meas.json"), F.p("meas.json")],
                 ["validate", F.p("meas.json"), "--profile", "a100-sxm4-40gb"],
                 ["validate", F.p("meas.json"), "--format", "md", "--ncu", F.p("ncu.csv")]):
        add(Case("cli", argv, bad=None, note="report/validate inputs"))
    # --- determinism
    det = [["run"] + SMALL + ["--format", "json"], ["run"] + DECODE + ["--algo", "paged",
                                                                       "--format", "json"],
           ["sweep", "--algo", "flash2,flash1", "--seq", "256,512", "--jobs", "2"],
           ["sweep", "--algo", "flash2,flash1", "--seq", "256,512", "--format", "csv"],
           ["tune"] + SMALL + ["--format", "json"], ["layer"] + LAYER + ["--format", "json"],
           ["kvcache"] + KVC + ["--format", "json"], ["explain"] + TINY_EXPLAIN,
           ["report", F.p("sweep.json")], ["validate", F.p("meas.json"), "--format", "json"],
           ["run", "--algo", "block-sparse", "--pattern", "random:0.5:7"] + SMALL +
           ["--format", "csv"], ["kvcache"] + KVC + ["--arrivals", "poisson:3", "--format",
                                                     "csv"],
           ["run"] + SMALL + ["--execute", "--format", "json"],
           ["layer", "--model", "mistral-7b", "--phase", "decode", "--seq", "512,1024",
            "--format", "csv"], ["demo", "--seq", "512", "--batch", "1"]]
    for argv in det:
        for rep in range(2):
            add(Case("cli", argv, bad=False, det=True, note="determinism"))
    # --- memory caps
    memc = [["run"] + SMALL, ["run"] + SMALL + ["--execute"],
            ["run", "--seq", "3000", "--head-dim", "16", "--execute"],
            ["sweep", "--seq", "256,512", "--jobs", "2"], ["layer"] + LAYER, ["kvcache"] + KVC,
            ["explain"] + TINY_EXPLAIN, ["report", F.p("sweep.json")],
            ["validate", F.p("meas.json")], ["run", "--profile", F.p("profile.yaml")] + SMALL,
            ["run"] + SMALL + ["--set", "l2.size_bytes=4e9", "--set", "l2.sector_bytes=16"],
            ["tune"] + SMALL, ["explain", "--seq", "64", "--head-dim", "16", "--block-q", "1",
                               "--block-kv", "1", "--html", os.path.join(odir, "mem.html")],
            ["kernels", "--show", "flash3"], ["profiles", "--template"],
            ["run", "--kernel", F.p("deep_kernel.yaml")] + SMALL]
    with open(F.p("deep_kernel.yaml"), "w") as f:
        f.write("name: " + "[" * 400000 + "]" * 400000 + "\n")
    for argv in memc:
        for mb in (64, 96, 128, 192, 256):
            add(Case("cli", argv, bad=None, mem_mb=mb, note=f"ulimit -v {mb} MiB",
                     outputs=[a for a in argv if a.endswith(".html")]))
    # --- signals
    slow = [["run", "--batch", "64", "--heads", "64", "--seq", "1048576", "--head-dim", "256",
             "--exact"],
            ["sweep", "--seq", "64:65536:+64", "--jobs", "2"],
            ["sweep", "--seq", "64:65536:+64", "--jobs", "1", "--out", "@OUT.json"],
            ["kvcache", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--requests",
             "20000000", "--weights-bytes", "16e9"],
            ["run", "--seq", "6000", "--head-dim", "16", "--execute"],
            ["explain", "--seq", "64", "--head-dim", "16", "--block-q", "1", "--block-kv", "1"],
            ["layer", "--model", "llama-3-70b", "--seq", "128:1048576:x2", "--batch",
             "1:64:x2"],
            ["tune", "--seq", "262144", "--batch", "8", "--heads", "32", "--exact"],
            ["validate", F.p("meas.json")] + [F.p("meas.json")] * 30,
            ["report"] + [F.p("sweep.json")] * 1,
            ["demo", "--seq", "1048576", "--batch", "64"]]
    for argv in slow:
        for sig in (signal.SIGINT, signal.SIGTERM):
            for blocked in (False, True):
                for t in (0.05, 0.4, 1.5):
                    k += 1
                    a = [x.replace("@OUT", os.path.join(odir, f"sig{k}")) for x in argv]
                    outs = [x for x in a if x.endswith(".json") and "sig" in x]
                    add(Case("cli", a, bad=None, sig=sig, sig_at=t + rng.random() * 0.3,
                             stdout_blocked=blocked, outputs=outs,
                             note=f"signal {sig.name} at ~{t}s, stdout "
                                  f"{'unread pipe' if blocked else 'read'}"))
    # --max-seconds while stdout is an unread pipe
    for argv in slow[:4] + slow[6:8]:
        add(Case("cli", argv[:] + ["--max-seconds", "1"] if "@OUT" not in " ".join(argv) else
                 [x.replace("@OUT", os.path.join(odir, "ms")) for x in argv] +
                 ["--max-seconds", "1"], bad=None, stdout_blocked=True, expect_rc=3,
                 note="max-seconds with unread stdout"))
    return cases


# ---------------------------------------------------------------------------------------------
# Python API cases: each a (function, kwargs-as-python-source, expectation)
def py_cases(F, rng):
    cases = []
    run_base = "seq=256, head_dim=64, heads=2"
    bad_vals = ["-1", "0.5", "'abc'", "None", "float('nan')", "float('inf')", "10**30",
                "[1, 2]", "{'a': 1}", "True", "b'256'", "object()", "''", "2**63", "-2**63-1",
                "complex(1, 1)", "(256,)", "'256'"]
    for fn, base, keys in (
            ("run", run_base, ["batch", "heads", "seq", "head_dim", "block_q", "block_kv",
                               "dropout", "sm_clock_mhz", "kv_heads", "stages", "threads",
                               "algo", "dtype", "profile", "causal", "set", "kernel",
                               "max_seconds", "max_memory", "seed", "pattern", "l2",
                               "nosuch"]),
            ("tune", run_base + ", block_kv=[64]", ["block_q", "block_kv", "stages", "threads",
                                                    "tie_band", "top", "jobs", "seq",
                                                    "max_seconds"]),
            ("sweep", "seq=[256], head_dim=64", ["seq", "jobs", "dataframe", "set", "algo",
                                                 "chunks", "progress", "block_kv",
                                                 "max_seconds"]),
            ("kvcache", "layers=4, kv_heads=2, head_dim=64, requests=50, kv_budget_bytes=2e8",
             ["layers", "kv_heads", "requests", "kv_budget_bytes", "prompt_len", "arrivals",
              "policy", "watermark", "trace", "seed", "nosuch"]),
            ("layer", "model='llama-3-8b', seq=128", ["model", "seq", "batch", "tp", "phase",
                                                       "seq_lens", "context_lens", "gemm_bk",
                                                       "profile", "nosuch"]),
            ("compare", "algo=['flash2', 'flash1'], seq=256", ["algo", "kernel", "seq",
                                                                "batch", "pattern"])):
        for key in keys:
            for v in bad_vals:
                # keys whose bad value is ambiguous for this literal
                bad = True
                if v == "True" and key in ("causal",):
                    bad = False
                if v in ("[1, 2]", "(256,)") and fn in ("sweep", "tune", "layer") and key in (
                        "seq", "block_q", "block_kv", "stages", "threads", "batch", "algo"):
                    bad = None
                if v == "0.5" and key in ("dropout", "tie_band", "max_seconds", "watermark",
                                          "kv_budget_bytes", "sm_clock_mhz"):
                    bad = None
                if v in ("10**30", "2**63") and key in ("kv_budget_bytes", "sm_clock_mhz",
                                                        "max_seconds", "tie_band"):
                    bad = None
                if v == "'256'" and key in ("seq",):
                    bad = None
                if key == "max_seconds" and v in ("-1",):
                    bad = True
                if v == "True" and key in ("dataframe",):
                    bad = None
                if v == "None" and key in ("max_seconds", "max_memory", "tie_band", "chunks",
                                           "progress"):
                    bad = False
                if v == "2**63" and key == "seed":
                    bad = None
                if v == "float('inf')" and key == "max_seconds":  # no limit, as on the CLI
                    bad = None
                kv = split_kwargs(base)
                kv[key] = v
                args = ", ".join(f"{a}={b}" for a, b in kv.items())
                cases.append(Case("py", py=f"iosim.{fn}({args})", bad=bad, flag=key, value=v))
    # validate
    for arg in ["None", "5", "b'x'", repr(F.p("nonexistent")), repr(F.p("DIR")),
                repr(F.p("FIFO")), repr(F.p("LOOP")), repr(F.p("EMPTY")), repr(F.p("BIN")),
                repr(F.p("HUGE")), repr(F.p("DEVZERO")), "''", repr(F.p("meas.json")) +
                ", profile=5", repr(F.p("meas.json")) + ", profile='nosuch'",
                repr(F.p("meas.json")) + ", profile=" + repr(F.p("DIR")),
                "pathlib.Path(" + repr(F.p("meas.json")) + ")"]:
        ok = "profile" not in arg and "meas.json" in arg
        cases.append(Case("py", py=f"iosim.validate({arg})", bad=False if ok else True,
                          value=arg))
    # files through the API
    for name, fn, kw in (("profile.yaml", "run", "profile=P, " + run_base),
                         ("kernel.yaml", "run", "kernel=P, " + run_base),
                         ("model.yaml", "layer", "model=P, seq=128"),
                         ("meas.json", "validate", "P"),
                         ("trace.csv", "kvcache", "trace=P, layers=4, kv_heads=2, head_dim=64, "
                          "kv_budget_bytes=2e8"),
                         ("table.txt", "run", "algo='paged', block_table=P, seq=1, seq_kv=1024,"
                          " heads=8, kv_heads=2, batch=2")):
        for label, data in mutations(F.base[name], rng, name)[:24]:
            path = os.path.join(F.p("mut"), f"py_{fn}_{re.sub(r'[^A-Za-z0-9]', '_', label)}"
                                f"{os.path.splitext(name)[1]}")
            with open(path, "wb") as f:
                f.write(data)
            bad = True if label in ("empty", "half", "one_byte", "utf16", "nul", "deep_nest",
                                    "deep_obj", "deep_flow", "alias_bomb", "tag",
                                    "latin1_junk") else None
            cases.append(Case("py", py=f"iosim.{fn}({kw.replace('P', repr(path))})", bad=bad,
                              value=label, watch=[path], note=f"py file {name} {label}"))
        for w in FS_WORDS:
            cases.append(Case("py", py=f"iosim.{fn}({kw.replace('P', repr(F.p(w)))})", bad=True,
                              value=w, note=f"py fs {name} {w}"))
    # kernel dicts
    for d in ["{}", "{'name': 'x'}", "{'name': 'x', 'dataflow': {'forward': 'nosuch'}}",
              "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'tiles': "
              "{'block_q': -1}}",
              "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'tiles': "
              "{'block_q': float('nan')}}",
              "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'tiles': "
              "{'stages': 10**30}}",
              "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'mechanisms': "
              "{'mma': 'wgmma_rs', 'load': 'tma'}}",
              "{'name': object()}", "{1: 2}", "{'name': 'x', 'dataflow': None}",
              "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'nosuch': 1}"]:
        for prof in ("'a100-sxm4-40gb'", "'h100-sxm5-80gb'"):
            bad = True
            if "wgmma" in d and "h100" in prof:
                bad = None
            cases.append(Case("py", py=f"iosim.run(kernel={d}, profile={prof}, {run_base})",
                              bad=bad, value=d))
    # Hopper-only on the A100 through Python
    for call in ("iosim.run(algo='flash3', profile='a100-sxm4-80gb', " + run_base + ")",
                 "iosim.run(algo='flash3', dtype='fp8', profile='a100-sxm4-40gb', " + run_base +
                 ")",
                 "iosim.tune(algo='flash3', profile='a100-sxm4-40gb', " + run_base + ")",
                 "iosim.sweep(algo=['flash2', 'flash3'], profile='a100-sxm4-40gb', seq=256)",
                 "iosim.compare(algo=['flash2', 'flash3'], profile='a100-sxm4-40gb', seq=256)",
                 "iosim.layer(model='llama-3-8b', seq=128, algo='flash3', "
                 "profile='a100-sxm4-40gb')",
                 "iosim.run(kernel='flash3', profile='a100-sxm4-40gb', " + run_base + ")"):
        # sweep: an infeasible point is a row with its reason (documented)
        cases.append(Case("py", py=call, bad=None if "sweep" in call else True,
                          note="hopper-only on A100"))
    cases.append(Case("py", py="iosim.tune(seq=256, head_dim=64, max_memory=1)", bad=True,
                      flag="max_memory", value="max_memory=1", note="budget in tune"))
    cases.append(Case("py", py="iosim.tune(seq=256, head_dim=64, max_memory='1K')", bad=True,
                      flag="max_memory", value="max_memory='1K'", note="budget in tune"))
    # determinism through Python
    for call in ("iosim.run(" + run_base + ")", "iosim.sweep(seq=[256, 512], algo=['flash1', "
                 "'flash2'])", "iosim.kvcache(layers=4, kv_heads=2, head_dim=64, requests=50, "
                 "kv_budget_bytes=2e8)", "iosim.layer(model='llama-3-8b', seq=128)",
                 "iosim.tune(" + run_base + ", block_kv=[32, 64])"):
        for _ in range(2):
            cases.append(Case("py", py=call, bad=False, det=True, note="py determinism"))
    # signals to a Python process in a long call; memory caps
    for call in ("iosim.run(batch=64, heads=64, seq=1048576, head_dim=256, exact=True)",
                 "iosim.sweep(seq=list(range(64, 65536, 64)), jobs=1)",
                 "iosim.kvcache(layers=32, kv_heads=8, head_dim=128, requests=20000000, "
                 "weights_bytes=16e9)",
                 "iosim.run(seq=6000, head_dim=16, execute=True)"):
        for sig in (signal.SIGINT, signal.SIGTERM):
            for t in (0.3, 1.2):
                cases.append(Case("py", py=call, bad=None, sig=sig, sig_at=t + rng.random() *
                                  0.3, note=f"py signal {sig.name}"))
        cases.append(Case("py", py=call.replace(")", ", max_seconds=0.5)", 1) if call.count(
            "(") == 1 else call[:-1] + ", max_seconds=0.5)", bad=None, note="py max_seconds"))
    for call in ("iosim.run(" + run_base + ")", "iosim.run(seq=3000, head_dim=16, execute=True)",
                 "iosim.layer(model='llama-3-8b', seq=128)", "iosim.run(" + run_base +
                 ", set=['l2.size_bytes=4e9', 'l2.sector_bytes=16'])"):
        for mb in (128, 192, 256):
            cases.append(Case("py", py=call, bad=None, mem_mb=mb, note=f"py ulimit {mb}"))
    return cases


def split_kwargs(src):
    """'a=1, b=[1, 2]' -> {'a': '1', 'b': '[1, 2]'} (top-level commas only)."""
    out, depth, cur = {}, 0, ""
    for ch in src + ",":
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            if cur.strip():
                a, b = cur.split("=", 1)
                out[a.strip()] = b.strip()
            cur = ""
        else:
            cur += ch
    return out


# ---------------------------------------------------------------------------------------------
def snapshot(paths):
    out = {}
    for p in paths:
        try:
            with open(p, "rb") as f:
                out[p] = f.read()
        except OSError:
            out[p] = None
    return out


def limit_mem(mb):
    def f():
        os.setsid()
        if mb:
            resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return f


PY_RUNNER = r'''
import json, os, sys, signal, pathlib
sys.path.insert(0, os.environ["PROBE_PYPATH"])
import iosim
code = sys.argv[1]
documented = (iosim.ConfigError, ValueError, TypeError, TimeoutError)
try:
    r = eval(code)
    if isinstance(r, list):
        s = json.dumps(r, sort_keys=True)
    else:
        s = json.dumps(r, sort_keys=True, default=str)
    s = __import__("re").sub(r'"simulation_wall_s": [0-9.e+-]+', '', s)
    print(json.dumps({"outcome": "ok", "digest": __import__("hashlib").sha1(s.encode()).hexdigest()}))
except KeyboardInterrupt:
    print(json.dumps({"outcome": "KeyboardInterrupt"}))
except BaseException as e:
    kind = type(e).__name__
    doc = isinstance(e, documented) and not isinstance(e, iosim.InternalError)
    print(json.dumps({"outcome": "raise", "type": kind, "documented": doc,
                      "msg": str(e)[:600]}))
'''


def run_case(c, args, F):
    t0 = time.time()
    watch = snapshot(c.watch)
    env = dict(os.environ)
    env["PROBE_PYPATH"] = args.python_path
    env.pop("IOSIM_PROFILE_DIR", None)
    env.pop("IOSIM_CHARTJS", None)
    if c.env:
        env.update(c.env)
    if c.kind == "cli":
        argv = [args.bin] + c.cmd
    else:
        argv = [sys.executable, "-c", PY_RUNNER, c.py]
    import tempfile as _tf
    fo = _tf.TemporaryFile()
    fe = _tf.TemporaryFile()
    rfd = wfd = None
    stdout_target = fo
    if c.stdout_blocked:
        rfd, wfd = os.pipe()
        stdout_target = wfd
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout_target, stderr=fe,
                         env=env, preexec_fn=limit_mem(c.mem_mb), cwd=c.cwd or F.root)
    if wfd is not None:
        os.close(wfd)
    res = {"id": c.id, "kind": c.kind, "cmd": c.cmd, "py": c.py, "bad": c.bad, "flag": c.flag,
           "value": c.value, "note": c.note, "mem_mb": c.mem_mb}
    sent = None
    stop_late = None
    try:
        if c.sig:
            try:
                p.wait(timeout=c.sig_at)
            except subprocess.TimeoutExpired:
                sent = c.sig
                ts = time.time()
                p.send_signal(c.sig)
                try:
                    p.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    stop_late = time.time() - ts
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        else:
            p.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        res["timeout"] = True
    if rfd is not None:
        os.close(rfd)
    fo.seek(0)
    fe.seek(0)
    out = fo.read()
    err = fe.read()
    fo.close()
    fe.close()
    rc = p.returncode
    res["rc"] = rc
    res["sent"] = sent.name if sent else None
    res["wall"] = round(time.time() - t0, 2)
    full_err = err.decode("utf-8", "replace")
    res["first"] = first_line(full_err)[:400]
    res["libtext"] = (LIB_TEXT.search(full_err).group(0) if LIB_TEXT.search(full_err) else None)
    res["stderr"] = full_err[:800] + (" ... " + full_err[-400:] if len(full_err) > 1200 else
                                      full_err[800:])
    out_s = (out or b"").decode("utf-8", "replace")
    res["stdout_head"] = out_s[:300]
    if c.det:
        norm = re.sub(r'"simulation_wall_s": ?[0-9.e+-]+', "", out_s)
        norm = re.sub(r"simulation_wall_s,?[^\n]*", "", norm) if "simulation_wall_s" in norm \
            else norm
        res["digest"] = hash_csv_wall(norm)
    if c.kind == "py":
        try:
            res["py"] = c.py
            res["pyout"] = json.loads(out_s.strip().splitlines()[-1]) if out_s.strip() else None
        except (ValueError, IndexError):
            res["pyout"] = None
    after = snapshot(c.watch)
    res["changed"] = [pth for pth in c.watch if after[pth] != watch[pth]]
    res["left"] = [o for o in c.outputs if os.path.exists(o)]
    res["stop_late"] = stop_late
    res["cls"], res["why"] = classify(c, res)
    return res


def hash_csv_wall(text):
    import hashlib
    lines = text.splitlines()
    # CSV: drop the simulation_wall_s column if present
    if lines and "simulation_wall_s" in lines[0] and "," in lines[0]:
        cols = lines[0].split(",")
        j = cols.index("simulation_wall_s")
        lines = [",".join(x for i, x in enumerate(ln.split(",")) if i != j) for ln in lines]
    text = "\n".join(lines)
    text = re.sub(r"simulated in [0-9.]+ ?\w+", "", text)
    text = re.sub(r"wall[^\n]*", "", text)
    return hashlib.sha1(text.encode()).hexdigest()


def first_line(s):
    for ln in s.splitlines():
        if ln.strip():
            return ln
    return ""


def names_flag(c, msg):
    if not c.flag:
        return True
    f = c.flag.lstrip("-")
    cands = {c.flag, f, f.replace("-", "_"), f.replace("_", "-")}
    m = msg.lower()
    if any(x.lower() in m for x in cands):
        return True
    v = str(c.value) if c.value is not None else ""
    if not v.strip() or v.lower()[:60] in m:
        return True
    return False


def classify(c, r):
    rc = r["rc"]
    err = r["stderr"]
    fl = r["first"]
    if r.get("timeout"):
        return "HANG", f"no exit within {TIMEOUT:.0f}s"
    if r["stop_late"] is not None:
        return "HANG", f"{r['sent']} not honoured within 5 s"
    if c.kind == "cli":
        if rc is not None and rc < 0:
            if r["sent"] and -rc == signal.Signals[r["sent"]].value:
                pass
            elif c.mem_mb and -rc == signal.SIGKILL:
                return "CRASH", f"killed by signal {-rc} under ulimit"
            else:
                return "CRASH", f"killed by signal {-rc}"
        if re.search(r"AddressSanitizer|runtime error:|terminate called|Aborted|"
                     r"Segmentation fault|core dumped", err):
            return "CRASH", "abort/sanitizer text"
        ok_rcs = {0, 1, 2}
        if r["sent"] or c.expect_rc == 3 or "--max-seconds" in c.cmd:
            ok_rcs |= {3, 130, 143}
        if rc is not None and rc >= 0 and rc not in ok_rcs:
            return "CRASH", f"exit code {rc}"
        if r["changed"]:
            return "DESTRUCTIVE", f"changed {r['changed']}"
        if rc != 0 and r["left"]:
            return "DESTRUCTIVE", f"output left after failure: {r['left']}"
        if rc is not None and rc != 0:
            if rc in (1, 2) and not fl.startswith("iosim"):
                return "INTERNAL", f"refusal does not start 'iosim': {fl[:200]}"
            if r["libtext"]:
                return "INTERNAL", f"library text: {r['libtext']}"
            if rc == 2 and fl.count("'") % 2 == 1 and fl.rstrip().endswith(
                    ("'",) + tuple("0123456789abcdefghijklmnopqrstuvwxyz")) and \
                    len(r["stderr"].strip().splitlines()) == 1 and "NUL" in c.note:
                return "MISLEADING", f"message cut short (no cause given): {fl[:200]}"
            if rc == 2 and c.bad and c.flag and c.value not in (None,) and not names_flag(c, err):
                return "MISLEADING", f"names neither {c.flag} nor {c.value!r}: {fl[:200]}"
            if rc == 1:
                return "CRASH", "exit code 1 (not the documented 2)"
            return "OK", ""
        if rc == 0 and c.bad is True and not r["sent"]:
            return "SILENT", "bad input accepted"
        if rc == 0 and r["libtext"]:
            return "INTERNAL", f"library text on success: {r['libtext']}"
        return "OK", ""
    # python
    if rc is not None and rc < 0:
        if r["sent"] and -rc == signal.Signals[r["sent"]].value:
            return "OK", ""
        return "CRASH", f"python killed by signal {-rc}"
    po = r.get("pyout")
    if r["changed"]:
        return "DESTRUCTIVE", f"changed {r['changed']}"
    if po is None:
        if r["sent"] and rc in (0, 1, 130, 143):
            return "OK", ""
        if c.mem_mb and ("MemoryError" in err or "ImportError" in err or "memory" in err):
            return "OK", "python itself out of memory"
        return "CRASH", f"python exited {rc} with no outcome: {first_line(err)[:200]}"
    if po["outcome"] == "ok":
        if c.bad is True:
            return "SILENT", "bad input returned a result"
        return "OK", ""
    if po["outcome"] == "KeyboardInterrupt":
        return "OK", ""
    msg = po.get("msg", "")
    if not po["documented"]:
        if c.mem_mb and po["type"] == "MemoryError":
            return "OK", ""
        return "INTERNAL", f"{po['type']}: {msg[:200]}"
    if LIB_TEXT.search(msg):
        return "INTERNAL", f"{po['type']} with library text: {msg[:200]}"
    if c.bad is False and not c.det:
        return "OK", ""
    if c.bad and c.flag and not names_flag(c, msg) and po["type"] != "TimeoutError":
        return "MISLEADING", f"{po['type']} names neither {c.flag} nor {c.value!r}: {msg[:200]}"
    return "OK", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/iosim")
    ap.add_argument("--python-path", default="build/python")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    ap.add_argument("--out", default="/tmp/probe4_results.jsonl")
    ap.add_argument("--work", default="")
    ap.add_argument("--count", action="store_true", help="print the number of inputs and exit")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.python_path = os.path.abspath(args.python_path)
    rng = random.Random(SEED)
    random.seed(SEED)
    work = args.work or tempfile.mkdtemp(prefix="probe4_")
    F = Files(work, args.bin)
    cases = cli_cases(F, rng) + py_cases(F, rng)
    for i, c in enumerate(cases):
        c.id = i
    if args.count:
        kinds = {}
        for c in cases:
            key = (c.kind, "signal" if c.sig else "mem" if c.mem_mb else "det" if c.det else
                   "other")
            kinds[key] = kinds.get(key, 0) + 1
        print(len(cases), kinds)
        return 0
    if args.limit:
        rng2 = random.Random(1)
        cases = rng2.sample(cases, min(args.limit, len(cases)))
    t0 = time.time()
    results = []
    lock = threading.Lock()
    done = [0]

    def go(c):
        r = run_case(c, args, F)
        with lock:
            done[0] += 1
            if done[0] % 100 == 0:
                print(f"  {done[0]}/{len(cases)} in {time.time() - t0:.0f}s", file=sys.stderr,
                      flush=True)
        return r
    # slow (signal/mem) cases spread among the fast ones
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(go, cases))
    # determinism: pairs of the same input
    groups = {}
    for r in results:
        if r["cls"] == "OK" and ("determinism" in r["note"]):
            key = json.dumps(r["cmd"]) + str(r["py"])
            dig = r.get("digest") if r["kind"] == "cli" else (r.get("pyout") or {}).get("digest")
            groups.setdefault(key, []).append((r, dig))
    for key, rs in groups.items():
        if len({d for _, d in rs}) > 1:
            for r, _ in rs[1:]:
                r["cls"], r["why"] = "NONDET", "same input, different output"
    wall = time.time() - t0
    with open(args.out, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    counts = {}
    for r in results:
        counts.setdefault(r["cls"], [0, 0])[0 if r["kind"] == "cli" else 1] += 1
    print(f"probe4: {len(results)} inputs ({sum(r['kind'] == 'cli' for r in results)} CLI, "
          f"{sum(r['kind'] == 'py' for r in results)} Python) in {wall:.0f} s; work dir {work}")
    for cls in ("OK", "CRASH", "INTERNAL", "HANG", "DESTRUCTIVE", "SILENT", "MISLEADING",
                "NONDET"):
        a, b = counts.get(cls, [0, 0])
        print(f"  {cls:12s} {a + b:5d}  (CLI {a}, Python {b})")
    for r in results:
        if r["cls"] != "OK":
            what = ("iosim " + " ".join(shq(short(x)) for x in r["cmd"])) if r["kind"] == "cli" \
                else short(r["py"], 400)
            print(f"{r['cls']}: {r['why']}\n    {what}  [{r['note']}]"
                  f"{' mem ' + str(r['mem_mb']) if r['mem_mb'] else ''}")
    return 0


def short(x, n=120):
    return x if len(x) <= n else x[:40] + f"...({len(x)} chars)..." + x[-20:]


def shq(x):
    import shlex
    return shlex.quote(x)


if __name__ == "__main__":
    sys.exit(main())
