#!/usr/bin/env python3
"""Issue #50, sixth fresh robustness probe of iosim: the CLI's subcommands, the Python package,
every input file kind broken, output paths abused and signals, each result classified.

    python3 tests/probe_fresh6/probe6.py --bin build/iosim --python-path build/python [--quick]

Written without reading the earlier probes or corpora. Classes: crash (a signal, an abort, a
sanitizer's report), internal (a message that names no input: library text, or an exit code
other than 0/2, 3 only for a stop), hang (past the timeout), destructive (a user's file changed
or removed, a partial output left), silent (nonsense accepted with exit 0), misleading (a refusal
whose first line does not start `iosim`). Prints a table and writes the findings as JSON
(--json). Exits 1 when any finding is left."""
import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 20
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
LEAKS = re.compile(r"json\.exception|std::|basic_string|terminate called|what\(\)|stoi|stod|stoul|"
                   r"bad_alloc|vector::|map::at|nlohmann|YAML::|yaml-cpp|bad conversion|"
                   r"incompatible function|Unable to cast|Traceback|Segmentation|core dumped|"
                   r"AddressSanitizer|runtime error:|Assertion|unordered_map|out_of_range|"
                   r"invalid_argument|bad_optional|bad_variant|filesystem error|"
                   r"Could not convert|ValidationError", re.I)

FINDINGS = []   # dicts: class, where, input, detail
COUNT = {"cli": 0, "python": 0, "files": 0, "outputs": 0, "signals": 0, "whatif": 0,
         "budget": 0, "pythreads": 0}


def finding(cls, where, inp, detail):
    FINDINGS.append({"class": cls, "where": where, "input": inp, "detail": detail[:400]})


def classify_cli(args, rc, out, err, elapsed, expect, stopped=False):
    """None when fine, else (class, detail)."""
    if rc is None:
        return ("hang", f"past {TIMEOUT}s")
    if rc < 0 or rc in (134, 136, 139):
        return ("crash", f"rc={rc} {err[-300:]}")
    if re.search(r"AddressSanitizer|runtime error:|terminate called|Assertion .* failed", err):
        return ("crash", err[-300:])
    if rc == 3 and ("--max-seconds" in args or stopped):
        return None
    if rc not in (0, 2):
        return ("internal", f"rc={rc}: {err[-300:]}")
    if rc == 2:
        first = next((line for line in err.splitlines() if line.strip()), "")
        if LEAKS.search(err):
            return ("internal", f"library text: {err[:300]}")
        if not first.startswith("iosim"):
            return ("misleading", f"first line: {first[:200]!r}")
        if "required but received" in first:  # a flag given twice, said as if a value were missing
            return ("misleading", first[:200])
        if expect == "ok":
            return ("refused-valid", err[:300])
        return None
    if expect == "bad":
        return ("silent", f"exit 0 (stdout {len(out)} bytes; stderr {err[:150]!r})")
    return None


class Cli:
    def __init__(self, binary, tmp):
        self.bin = binary
        self.tmp = tmp

    def call(self, args, stdin=None, timeout=TIMEOUT, cwd=None):
        t = time.time()
        try:
            p = subprocess.run([self.bin] + args, input=stdin, capture_output=True,
                               timeout=timeout, cwd=cwd or self.tmp)
            return p.returncode, p.stdout.decode("utf-8", "replace"), \
                p.stderr.decode("utf-8", "replace"), time.time() - t
        except subprocess.TimeoutExpired:
            return None, "", "", time.time() - t

    def check(self, where, args, expect="any", stdin=None, cwd=None):
        rc, out, err, el = self.call(args, stdin=stdin, cwd=cwd)
        COUNT["cli" if where.startswith("cli") else where.split(":")[0]] += 1
        c = classify_cli(args, rc, out, err, el, expect)
        if c:
            finding(c[0], where, " ".join(args)[:300], c[1])
        return rc, out, err


# ---------------------------------------------------------------------------- flags
INT_BAD = ["-1", "abc", "1.5", "", "nan", "inf", "99999999999999999999", "6 4", "--1", "\u0666\u0664",
           "-9223372036854775808", "1e999", "0x", "64abc", "\t", "-0.5"]
INT_ODD = ["0x40", "+64", " 64", "64 ", "1e3", "0b1", "0", "2147483648", "4294967297",
           "9223372036854775807", "007"]
FLT_BAD = ["nan", "inf", "-inf", "abc", "", "1e400", "-1", "1,5", "nan(0x1)", "0x1p3q", "--0"]
FLT_ODD = ["1e-400", "0x1p3", "0", "1e308", "-0", "1e-300", ".5", "5."]
RUN_BASE = ["--seq", "128", "--max-seconds", "5"]
RUN_INT = ["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv", "--block-q",
           "--block-kv", "--splits", "--page-tokens", "--threads", "--stages", "--backward-block-q",
           "--backward-block-kv", "--window", "--seed"]
RUN_FLT = ["--sm-clock-mhz", "--dropout", "--max-seconds"]
RUN_TXT = {
    "--algo": ["flashX", "", "flash2,", ",", "flash2,flash2", "FLASH2", "flash2 ", "standard,,flash1",
               "a" * 5000],
    "--dtype": ["fp64", "", "FP16", "int8", "fp16,bf16"],
    "--kv-dtype": ["fp16x", "", "int4", "fp8,fp8"],
    "--pass": ["back", "", "fwd,bwd", "FWD"],
    "--pattern": ["local:", "local:-1", "local:0", "strided:0", "random:2:1", "random:nan:1",
                  "random:0.5", "random:0.5:abc", "file:", "file:/nonexistent", "file:/dev/zero",
                  "file:/etc", "causal:1", "zzz", "local:99999999999999999999", "random:-0.1:1",
                  "strided:1e3"],
    "--l2": ["maybe", "", "ON", "off,on"],
    "--warpgroups": ["none", "", "pingpong,pingpong"],
    "--pack-gqa": ["maybe", "", "1"],
    "--seq-lens": ["", ",", "1,,2", "-1", "0", "0,0", "abc", "1;2", "1 2", "99999999999999999999",
                   ",".join(["1"] * 60000), "1e3", "1.5,2"],
    "--seq-kv-lens": ["", "1", "1,2,3,4", "abc", "-5,5"],
    "--block-table": ["/nonexistent", "/etc", "/dev/null", "", "/dev/zero"],
    "--profile": ["", "nope", "/etc", "/dev/null", "/dev/zero", "h100", "H100-SXM5-80GB",
                  "h100-sxm5-80gb.yaml", "/proc/self/status"],
    "--kernel": ["", "nope", "/etc", "/dev/zero", "{", "{}", "[]", "null", "dataflow: 5",
                 '{"name": "x"}', "flash2,flash3", "/dev/null"],
    "--set": ["", "=", "l2.size_bytes", "l2.size_bytes=", "l2.size_bytes=abc", "nope=1",
              "l2.size_bytes=-1", "l2.size_bytes=nan", "l2.size_bytes=1e400", "sm.count=0",
              "sm.count=1.5", "sm.count=99999999999999999999", "l2.size_bytes=1=2",
              "sm.count=1e300", "hbm.bandwidth_gbps=inf", "name=x", "sm=1"],
    "--format": ["xml", "", "JSON", "json,csv"],
    "--max-memory": ["", "abc", "-1", "0", "1Q", "8GG", "99999999999999999999G", "1e400",
                     "nan", "8 G", "0.5G", "1K"],
}


def without(args, flag):
    """`args` less `flag` and its value: the flag under test is given once."""
    out, i = [], 0
    while i < len(args):
        if args[i] == flag:
            i += 2
            continue
        out.append(args[i])
        i += 1
    return out


def gen_cli_flags(rnd):
    cases = []
    for sub in ("run", "explain", "tune", "sweep"):
        base = RUN_BASE if sub != "explain" else ["--seq", "16"]
        for flag in RUN_INT:
            for v in INT_BAD:
                if sub == "sweep" and v in ("6 4",):
                    continue
                cases.append((f"cli:{sub}:{flag}", [sub] + without(base, flag) + [flag, v], "bad"))
            for v in INT_ODD:
                cases.append((f"cli:{sub}:{flag}", [sub] + without(base, flag) + [flag, v], "any"))
        for flag in RUN_FLT:
            for v in FLT_BAD:
                cases.append((f"cli:{sub}:{flag}", [sub] + without(base, flag) + [flag, v],
                              "any" if (sub == "sweep" and v == "1,5")
                              or (flag == "--max-seconds" and v == "inf") else "bad"))  # no budget
            for v in FLT_ODD:
                cases.append((f"cli:{sub}:{flag}", [sub] + without(base, flag) + [flag, v], "any"))
        for flag, vals in RUN_TXT.items():
            if sub == "tune" and flag in ("--format",):
                pass
            for v in vals:
                exp = "bad"
                # a list is a sweep's axis; several kernels run side by side; sizes take units
                if (sub == "sweep" and "," in v and "" not in v.split(",")) or \
                        (flag == "--kernel" and v == "flash2,flash3" and sub in ("run", "sweep")) \
                        or (flag == "--max-memory" and v == "0.5G") or (flag, v) == ("--set", "name=x"):
                    exp = "any"
                cases.append((f"cli:{sub}:{flag}", [sub] + base + [flag, v], exp if sub != "sweep"
                              or flag not in ("--format",) else "bad"))
    # a few dozen random combinations of the odd values
    for _ in range(120):
        sub = rnd.choice(["run", "tune", "sweep", "explain"])
        args = [sub, "--seq", rnd.choice(["16", "64", "128"]), "--max-seconds", "5"]
        for _ in range(rnd.randint(1, 4)):
            flag = rnd.choice(RUN_INT + RUN_FLT)
            args += [flag, rnd.choice(INT_ODD + FLT_ODD + ["1", "2", "8", "16", "64"])]
        cases.append((f"cli:{sub}:combo", args, "any"))
    # list and range syntax
    lists = ["1:10:+0", "1:10:x1", "1:10:x0", "1:10:x-2", "1:10:+-1", "10:1:x2", "10:1:+1", "1::",
             ":", ",,", "1,,2", "1,2,", "1:99999999999999999999:+1", "1:1000000000:+1", "64:32:+1",
             "1:10:x1.5", "1:10:*2", "1:10", "1:10:+", "a:b:+1", "1:10:+1:5", "0:0:+1",
             "-5:5:+1", "9223372036854775800:9223372036854775807:+1", "1:9223372036854775807:x2"]
    for lst in lists:
        for flag in ("--seq", "--batch", "--head-dim", "--block-kv", "--dropout", "--sm-clock-mhz"):
            cases.append((f"cli:sweep:list{flag}", ["sweep", "--seq", "128", flag, lst,
                                                    "--max-seconds", "5", "-j", "1"], "any"))
        for flag in ("--block-q", "--block-kv", "--stages", "--threads"):
            cases.append((f"cli:tune:list{flag}", ["tune", "--seq", "128", flag, lst,
                                                   "--max-seconds", "5", "-j", "1"], "any"))
        for flag in ("--batch", "--seq", "--context"):
            cases.append((f"cli:layer:list{flag}", ["layer", "--model", "llama-3-8b", "--seq", "128",
                                                    flag, lst, "--max-seconds", "5"], "any"))
    for v in ["0", "1/0", "0/1", "2/1", "1/1/1", "a/b", "", "-1/2", "1/-2", "1/99999999999999999999",
              "3/2", "1", "/", "1/", "/1"]:
        cases.append(("cli:sweep:--shard", ["sweep", "--seq", "128,256", "--shard", v], "bad"
                      if v not in ("1", ) else "any"))
    for v in INT_BAD + ["0", "-1", "100000"]:
        cases.append(("cli:sweep:--jobs", ["sweep", "--seq", "128", "-j", v], "any"))
        cases.append(("cli:tune:--top", ["tune", "--seq", "128", "--top", v, "--max-seconds", "5"],
                      "bad" if v in INT_BAD else "any"))
    for v in FLT_BAD:
        cases.append(("cli:tune:--tie-band", ["tune", "--seq", "128", "--tie-band", v], "bad"))
    # explain's own flags
    for flag, vals in {"--step": INT_BAD + ["0", "100000"], "--until": INT_BAD + ["0"],
                       "--focus": ["", "cta:", "cta:-1", "cta:99999", "cta:abc", "x:1", "cta:1.5",
                                   "cta:99999999999999999999"],
                       "--compare": ["", ",", "flash2", "flash2,zzz", "flash2,,flash1",
                                     "flash2,flash2", ",".join(["flash2"] * 50)]}.items():
        for v in vals:
            cases.append((f"cli:explain:{flag}", ["explain", "--seq", "16", flag, v],
                          "any" if v in ("0", "100000", "cta:99999", "flash2,flash2",
                                         ",".join(["flash2"] * 50)) else "bad"))
    for n in ["65", "128", "-1", "0", "99999999999999999999"]:
        cases.append(("cli:explain:--seq", ["explain", "--seq", n], "bad"))
    for d in ["17", "32", "0"]:
        cases.append(("cli:explain:--head-dim", ["explain", "--seq", "16", "--head-dim", d], "bad"))
    # kvcache
    kv = ["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--requests", "50",
          "--max-seconds", "5"]
    for flag in ["--layers", "--kv-heads", "--head-dim", "--block-tokens", "--requests",
                 "--max-prompt-tokens", "--max-output-tokens", "--samples", "--shared-prefix-tokens",
                 "--prompt-groups", "--max-running", "--series-points", "--seed"]:
        for v in INT_BAD:
            cases.append((f"cli:kvcache:{flag}", kv + [flag, v], "bad"))
        for v in ["0", "99999999999", "2147483648"]:
            cases.append((f"cli:kvcache:{flag}", kv + [flag, v], "any"))
    for flag in ["--weights-bytes", "--kv-budget-bytes", "--watermark", "--max-seconds"]:
        for v in FLT_BAD:
            cases.append((f"cli:kvcache:{flag}", kv + [flag, v], "bad"))
        for v in ["0", "1e30", "1", "0.9999", "1e-300"]:
            cases.append((f"cli:kvcache:{flag}", kv + [flag, v], "any"))
    dists = ["const:", "const:-1", "const:0", "const:abc", "uniform:5", "uniform:5,1", "uniform:-1,5",
             "normal:5", "normal:5,-1", "normal:nan,1", "lognormal:5", "lognormal:1e300,1",
             "lognormal:5,nan", "zipf:1", "", ":", "const:1e400", "uniform:1,99999999999999999999",
             "const:5,6", "lognormal:,", "normal:1e308,1e308", "lognormal:700,1"]
    for flag in ["--prompt-len", "--output-len"]:
        for v in dists:
            cases.append((f"cli:kvcache:{flag}", kv + [flag, v], "any" if v in
                          ("const:0", "lognormal:1e300,1", "normal:1e308,1e308", "lognormal:700,1")
                          else "bad"))
    for v in ["poisson:", "poisson:-1", "poisson:0", "poisson:nan", "poisson:1e300", "burst:1",
              "uniform", "", "poisson:inf", "poisson:abc"]:
        cases.append(("cli:kvcache:--arrivals", kv + ["--arrivals", v], "any" if v in
                      ("poisson:1e300",) else "bad"))
    for v in ["none", "", "PAGED", "paged,contiguous"]:
        cases.append(("cli:kvcache:--policy", kv + ["--policy", v], "bad"))
    for v in ["fp64", "", "int8"]:
        cases.append(("cli:kvcache:--dtype", kv + ["--dtype", v], "bad"))
        cases.append(("cli:kvcache:--kv-dtype", kv + ["--kv-dtype", v], "bad"))
    cases.append(("cli:kvcache:--dtype+--kv-dtype", kv + ["--dtype", "fp16", "--kv-dtype", "fp8"],
                  "bad"))
    # layer
    ly = ["layer", "--model", "llama-3-8b", "--seq", "128", "--max-seconds", "5"]
    for flag in ["--tp", "--gemm-bm", "--gemm-bn", "--gemm-bk", "--gemm-cluster-m",
                 "--gemm-cluster-n", "--gemm-group-m", "--gemm-split-k"]:
        for v in INT_BAD + ["0", "3", "7", "4096", "2147483648"]:
            cases.append((f"cli:layer:{flag}", ly + [flag, v], "bad" if v in INT_BAD else "any"))
    for flag, vals in {"--model": ["", "nope", "/etc", "/dev/null", "/dev/zero", "LLAMA-3-8B"],
                       "--phase": ["", "both", "Decode", "prefill,decode"],
                       "--launch": ["", "streams", "graph,eager"],
                       "--mlp-activation": ["", "gelu", "fused,eager"],
                       "--dtype": ["fp8", "fp32", ""], "--kv-dtype": ["fp16", "", "fp8"],
                       "--l2": ["", "x"], "--sm-clock-mhz": FLT_BAD,
                       "--seq-lens": ["", "1,,1", "0", "-1", "abc"],
                       "--context-lens": ["", "1", "0,0", "abc"],
                       "--algo": ["", "zzz", "flash2,flash3"], "--kernel": ["", "{", "/etc"],
                       "--profile": ["", "zzz", "/etc"]}.items():
        for v in vals:
            args = [a for a in ly if not (flag == "--model" and a == "llama-3-8b")]
            if flag == "--model":
                args = ["layer", "--model", v, "--seq", "128"]
            cases.append((f"cli:layer:{flag}", args + ([] if flag == "--model" else [flag, v]),
                          "any" if (flag, v) in (("--kv-dtype", "fp8"), ) else "bad"))
    # validate, report, kernels, models, profiles, demo
    for flag, vals in {"--show": ["", "nope", "flash2,flash3", "FLASH2", "../etc/passwd"]}.items():
        for v in vals:
            cases.append(("cli:kernels:--show", ["kernels", flag, v], "bad"))
            cases.append(("cli:profiles:--show", ["profiles", flag, v], "bad"))
    for v in ["", "zzz", "sm,l2", "SM"]:
        cases.append(("cli:profiles:--keys", ["profiles", "--keys", v], "bad"))
    for v in ["", "xml"]:
        cases.append(("cli:models:--format", ["models", "--keys", "--format", v], "bad"))
    cases.append(("cli:models:--format", ["models", "--format", "md"], "any"))
    cases.append(("cli:profiles", ["profiles", "--template", "--schema"], "any"))
    for flag in ["--batch", "--heads", "--head-dim", "--seq"]:
        for v in INT_BAD:
            cases.append((f"cli:demo:{flag}", ["demo", "--max-seconds", "5", "--seq", "256", flag, v],
                          "bad"))
    for extra in [["--bogus"], ["extra_positional"], ["--seq"], ["--seq", "128", "--seq", "256"],
                  ["--format", "json", "--format", "csv"], ["--help", "--bogus"], ["-"], ["--"],
                  ["--seq=128=5"], ["--seq", "128", "--causal=maybe"], ["--causal", "--causal"],
                  ["--seq", "128", "--profile"]]:
        for sub in ("run", "sweep", "tune", "explain", "validate", "report", "kvcache", "layer",
                    "kernels", "models", "profiles", "demo"):
            cases.append((f"cli:{sub}:argv", [sub] + extra, "any"))
    cases.append(("cli:none", [], "any"))
    cases.append(("cli:unknown", ["zzz"], "bad"))
    cases.append(("cli:unknown", ["rnu", "--seq", "128"], "bad"))
    # the A100 asked for what it lacks
    for algo in ["flash3", "flash2"]:
        for more in [["--dtype", "fp8"], ["--kv-dtype", "fp8"], ["--warpgroups", "pingpong"],
                     ["--pass", "fwdbwd"], ["--cold-l2", "--exact"]]:
            cases.append(("cli:run:a100", ["run", "--profile", "a100-sxm4-80gb", "--algo", algo,
                                           "--seq", "128", "--max-seconds", "5"] + more, "any"))
    return cases


# ---------------------------------------------------------------------------- files
SPECIALS = ["0", "-1", "1", "3", "1e9", "99999999999999999999", "1.5", "1e-300", "nan", ".nan",
            "inf", ".inf", "-.inf", "1e400", "null", "~", "true", "[1, 2]", "{a: 1}", '"7"', "0x10",
            "!!binary aGVsbG8=", "*nope", "&a 5", "", "9223372036854775808", "-9223372036854775809",
            "1_000", "0o17", "+5", "1e-400"]
JSPECIALS = [0, -1, 1, 3, 1e9, 99999999999999999999, 1.5, 1e-300, None, True, "x", [], {}, "nan",
             -1e308, 9223372036854775808, 18446744073709551616, "", [1, 2], {"a": 1}]


def mutate_text(text, rnd):
    lines = text.split("\n")
    kind = rnd.randrange(22)
    if kind == 0:
        return text[:rnd.randrange(len(text) + 1)], "truncated"
    if kind == 1:
        return "", "empty"
    if kind == 2 and lines:
        i = rnd.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1:]), f"drop line {i}"
    if kind == 3 and lines:
        i = rnd.randrange(len(lines))
        return "\n".join(lines[:i + 1] + lines[i:]), f"repeat line {i}"
    if kind in (4, 5, 6, 7, 8):
        nums = list(re.finditer(r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])", text))
        if nums:
            m = rnd.choice(nums)
            s = rnd.choice(SPECIALS)
            return text[:m.start()] + s + text[m.end():], f"number {m.group()}->{s!r} @{m.start()}"
    if kind == 9:
        words = list(re.finditer(r"[A-Za-z_]{3,}", text))
        if words:
            m = rnd.choice(words)
            return text[:m.start()] + "zzq" + text[m.end():], f"word {m.group()}->zzq"
    if kind == 10:
        return "\ufeff" + text, "BOM"
    if kind == 11:
        i = rnd.randrange(len(text) + 1)
        return text[:i] + "\x00" + text[i:], f"NUL @{i}"
    if kind == 12:
        return text.replace("\n", "\r\n"), "CRLF"
    if kind == 13:
        return text.replace("  ", "\t"), "tabs"
    if kind == 14:
        return text.encode("utf-16").decode("latin-1"), "utf-16"
    if kind == 15:
        return "[" * 100000 + "]" * 100000, "deep [ nesting"
    if kind == 16:
        return "{a: " * 20000 + "1" + "}" * 20000, "deep { nesting"
    if kind == 17:
        return text + "\n" + "x" * 2_000_000 + "\n", "2 MB line"
    if kind == 18:
        return "a: &a [1]\n" + "".join(f"b{i}: &b{i} [*{'a' if i == 0 else 'b' + str(i - 1)}, "
                                       f"*{'a' if i == 0 else 'b' + str(i - 1)}]\n"
                                       for i in range(40)), "alias bomb"
    if kind == 19:
        return text + "\n---\n" + text, "two documents"
    if kind == 20:
        i = rnd.randrange(len(text) + 1)
        return text[:i] + "\xff\xfe\x80" + text[i:], f"bad utf-8 @{i}"
    if kind == 21:
        return text + "\n" + text, "whole text twice"
    return text[: len(text) // 2], "half"


def mutate_json(text, rnd):
    try:
        doc = json.loads(text)
    except ValueError:
        return mutate_text(text, rnd)
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node[:6]):
                walk(v, path + [i])
    walk(doc, [])
    path = rnd.choice(paths[1:] or [[]])
    what = rnd.randrange(3)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if not path:
        return json.dumps(rnd.choice(JSPECIALS)), "root replaced"
    key = path[-1]
    if what == 0 and isinstance(parent, dict):
        del parent[key]
        desc = f"del {path}"
    elif what == 1 and isinstance(parent, dict):
        parent[key + "_zz" if isinstance(key, str) else key] = 1
        desc = f"extra key at {path}"
    else:
        v = rnd.choice(JSPECIALS)
        parent[key] = v
        desc = f"{path} = {v!r}"
    try:
        out = json.dumps(doc, allow_nan=True)
    except ValueError:
        out = text
    if rnd.random() < 0.1:
        out = out.replace('"nan"', "NaN")
    return out, desc


def digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        return f"missing:{e.errno}"


def file_cases(cli, tmp, rnd, n_each):
    """(name, text, mutator, commands-using-{F})."""
    def out_of(args):
        p = subprocess.run([cli.bin] + args, capture_output=True)
        return p.stdout.decode()
    profile = out_of(["profiles", "--show", "h100-sxm5-80gb"])
    kernel = out_of(["kernels", "--show", "flash3"])
    kernel2 = open(os.path.join(REPO, "tests/data/kernels/wg1_tma_case.yaml")).read()
    model = open(os.path.join(REPO, "models/llama-3-8b.yaml")).read()
    measured = open(os.path.join(REPO, "tests/data/measurements_small.json")).read()
    ncu = open(os.path.join(REPO, "tests/data/kernels/ncu_wg1_h100.csv")).read()
    trace = open(os.path.join(REPO, "tests/data/kvcache/trace.csv")).read()
    sweep_j = out_of(["sweep", "--seq", "128,256", "--algo", "flash1,flash2", "--block-kv", "32,64"])
    sweep_c = out_of(["sweep", "--seq", "128,256", "--algo", "flash1,flash2", "--format", "csv"])
    pattern = "# 4x4\n1 0 0 0\n1 1 0 0\n1 0 1 0\n1 0 0 1\n"
    table = "0 1 2 3 4 5 6 7\n8 9 10 11 12 13 14 15\n"
    kinds = [
        ("profile", profile, mutate_text,
         [["run", "--seq", "128", "--profile", "{F}", "--max-seconds", "5"]]),
        ("kernel", kernel, mutate_text,
         [["run", "--seq", "128", "--kernel", "{F}", "--max-seconds", "5"]]),
        ("kernel-wg1", kernel2, mutate_text,
         [["tune", "--seq", "128", "--kernel", "{F}", "--max-seconds", "5", "--block-kv", "64,128"]]),
        ("model", model, mutate_text,
         [["layer", "--model", "{F}", "--seq", "64", "--max-seconds", "5"]]),
        ("measured", measured, mutate_json,
         [["validate", "{F}", "--max-seconds", "5"]]),
        ("measured-txt", measured, mutate_text, [["validate", "{F}", "--max-seconds", "5"]]),
        ("ncu", ncu, mutate_text,
         [["validate", "--ncu", "{F}", "--kernel", os.path.join(REPO, "tests/data/kernels/wg1_tma_case.yaml"),
           "--time-us", "1616.6", "--batch", "4", "--heads", "16", "--seq", "4096", "--head-dim", "128",
           "--max-seconds", "5"]]),
        ("sweep-json", sweep_j, mutate_json, [["report", "{F}"]]),
        ("sweep-json-txt", sweep_j, mutate_text, [["report", "{F}"]]),
        ("sweep-csv", sweep_c, mutate_text, [["report", "{F}.csv"]]),
        ("pattern", pattern, mutate_text,
         [["run", "--algo", "block-sparse", "--seq", "256", "--block-q", "64", "--block-kv", "64",
           "--pattern", "file:{F}", "--max-seconds", "5"]]),
        ("block-table", table, mutate_text,
         [["run", "--algo", "paged", "--seq", "1", "--seq-kv", "64", "--batch", "2", "--page-tokens",
           "16", "--block-table", "{F}", "--max-seconds", "5"]]),
        ("trace", trace, mutate_text,
         [["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--trace", "{F}",
           "--max-seconds", "5"]]),
    ]
    cases = []
    for name, base, mut, cmds in kinds:
        for i in range(n_each):
            text, desc = mut(base, rnd)
            for cmd in cmds:
                cases.append((name, text, desc, cmd))
    return cases


def run_file_case(cli, tmp, idx, case):
    name, text, desc, cmd = case
    d = os.path.join(tmp, f"f{idx}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "input")
    args = [a.replace("{F}", path) for a in cmd]
    real = next((a[5:] if a.startswith("file:") else a for a in args if path in a))
    with open(real, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    before = digest(real)
    rc, out, err, el = cli.call(args, cwd=d)
    COUNT["files"] += 1
    c = classify_cli(args, rc, out, err, el, "any")
    if c:
        finding(c[0], f"files:{name}", f"{desc} | {' '.join(cmd)}", c[1])
    if digest(real) != before:
        finding("destructive", f"files:{name}", desc, "the input file changed")
    left = [x for x in os.listdir(d) if x not in ("input", "input.csv")]
    if left:
        finding("destructive", f"files:{name}", desc, f"left {left}")
    shutil.rmtree(d, ignore_errors=True)
    return rc


# ---------------------------------------------------------------------------- outputs
def output_cases(cli, tmp):
    """Outputs: same file twice under two spellings, links, read-only files, missing folders."""
    d = os.path.join(tmp, "out")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sweep = os.path.join(d, "s.json")
    subprocess.run([cli.bin, "sweep", "--seq", "128,256", "-o", sweep], capture_output=True)
    meas = os.path.join(d, "m.json")
    shutil.copy(os.path.join(REPO, "tests/data/measurements_small.json"), meas)
    kern = os.path.join(d, "k.yaml")
    with open(kern, "w") as f:
        f.write(subprocess.run([cli.bin, "kernels", "--show", "flash2"], capture_output=True,
                               text=True).stdout)
    prof = os.path.join(d, "p.yaml")
    with open(prof, "w") as f:
        f.write(subprocess.run([cli.bin, "profiles", "--show", "h100-sxm5-80gb"], capture_output=True,
                               text=True).stdout)
    table = os.path.join(d, "t.txt")
    with open(table, "w") as f:
        f.write("0 1 2 3\n4 5 6 7\n")
    model = os.path.join(d, "model.yaml")
    shutil.copy(os.path.join(REPO, "models/llama-3-8b.yaml"), model)
    trace = os.path.join(d, "trace.csv")
    shutil.copy(os.path.join(REPO, "tests/data/kvcache/trace.csv"), trace)
    inputs = [sweep, meas, kern, prof, table, model, trace]
    ro = os.path.join(d, "ro.html")
    with open(ro, "w") as f:
        f.write("keep me\n")
    os.chmod(ro, 0o444)
    roddir = os.path.join(d, "rodir")
    os.makedirs(roddir)
    os.chmod(roddir, 0o555)
    os.symlink(sweep, os.path.join(d, "link_to_sweep.json"))
    os.symlink(meas, os.path.join(d, "link_to_meas.json"))
    os.symlink(kern, os.path.join(d, "link_to_kern.html"))
    os.symlink("nowhere/x.html", os.path.join(d, "dangling.html"))
    os.symlink(os.path.join(d, "loop2"), os.path.join(d, "loop1"))
    os.symlink(os.path.join(d, "loop1"), os.path.join(d, "loop2"))
    os.makedirs(os.path.join(d, "sub"))
    # each: (args, expect) run with cwd=d
    same = [
        (["run", "--seq", "128", "--html", "a.html", "--svg", "./a.html"], "bad"),
        (["run", "--seq", "128", "--html", "a.html", "--svg", "sub/../a.html"], "bad"),
        (["run", "--seq", "128", "--html", "a.html", "--svg", os.path.join(d, "a.html")], "bad"),
        (["run", "--seq", "128", "--html", "b.html", "--svg", "b.html"], "bad"),
        (["run", "--seq", "128", "--html", "link_to_kern.html", "--kernel", "k.yaml"], "bad"),
        (["run", "--seq", "128", "--html", "p.yaml", "--profile", "p.yaml"], "bad"),
        (["run", "--seq", "128", "--svg", "./p.yaml", "--profile", "p.yaml"], "bad"),
        (["run", "--algo", "paged", "--seq", "1", "--seq-kv", "32", "--batch", "1", "--page-tokens",
          "16", "--block-table", "t.txt", "--html", "t.txt"], "bad"),
        (["report", "s.json", "--md", "s.json"], "bad"),
        (["report", "s.json", "--md", "./s.json"], "bad"),
        (["report", "s.json", "--md", "link_to_sweep.json"], "bad"),
        (["report", "link_to_sweep.json", "--html", "s.json"], "bad"),
        (["report", "s.json", "--md", "x.md", "--html", "x.md"], "bad"),
        (["report", "s.json", "--md", "y.md", "--html", "./y.md"], "bad"),
        (["report", "s.json", "--validation", "m.json", "--md", "m.json"], "bad"),
        (["report", "s.json", "--validation", "m.json", "--html", "link_to_meas.json"], "bad"),
        (["validate", "m.json", "--json", "m.json"], "bad"),
        (["validate", "m.json", "--json", "./m.json"], "bad"),
        (["validate", "m.json", "--json", "link_to_meas.json"], "bad"),
        (["validate", "m.json", "--json", "p.yaml", "--profile", "p.yaml"], "bad"),
        (["sweep", "--seq", "128", "-o", "s.json", "--profile", "s.json"], "bad"),
        (["sweep", "--seq", "128", "-o", "k.json", "--kernel", "k.yaml"], "any"),
        (["sweep", "--seq", "128", "-o", "./k.yaml.json", "--kernel", "k.yaml"], "any"),
        (["sweep", "--seq", "128", "-o", "p.yaml", "--profile", "p.yaml"], "bad"),
        (["tune", "--seq", "128", "--html", "k.yaml", "--kernel", "k.yaml"], "bad"),
        (["tune", "--seq", "128", "--html", "./p.yaml", "--profile", "./p.yaml"], "bad"),
        (["explain", "--seq", "16", "--html", "p.yaml", "--profile", "p.yaml"], "bad"),
        (["explain", "--seq", "16", "--html", "k.yaml", "--kernel", "./k.yaml"], "bad"),
        (["layer", "--model", "model.yaml", "--seq", "64", "--html", "model.yaml"], "bad"),
        (["layer", "--model", "llama-3-8b", "--seq", "64", "--html", "p.yaml", "--profile",
          "p.yaml"], "bad"),
        (["layer", "--model", "llama-3-8b", "--seq", "64", "--html", "k.yaml", "--kernel",
          "k.yaml"], "bad"),
        (["run", "--seq", "128", "--html", "ro.html"], "bad"),
        (["report", "s.json", "--html", "ro.html"], "bad"),
        (["run", "--seq", "128", "--html", "rodir/x.html"], "bad"),
        (["run", "--seq", "128", "--html", "missing/x.html"], "bad"),
        (["sweep", "--seq", "128", "-o", "missing/x.json"], "bad"),
        (["validate", "m.json", "--json", "missing/x.json"], "bad"),
        (["report", "s.json", "--md", "missing/x.md"], "bad"),
        (["tune", "--seq", "128", "--html", "missing/x.html"], "bad"),
        (["layer", "--model", "llama-3-8b", "--seq", "64", "--html", "missing/x.html"], "bad"),
        (["explain", "--seq", "16", "--html", "missing/x.html"], "bad"),
        (["run", "--seq", "128", "--html", "dangling.html"], "bad"),
        (["run", "--seq", "128", "--html", "loop1"], "bad"),
        (["sweep", "--seq", "128", "-o", "loop1"], "bad"),
        (["run", "--seq", "128", "--html", "sub"], "bad"),
        (["run", "--seq", "128", "--html", ""], "bad"),
        (["run", "--seq", "128", "--svg", "/dev/full"], "bad"),
        (["sweep", "--seq", "128", "-o", "/dev/null"], "any"),
        (["sweep", "--seq", "128", "-o", "x.txt"], "bad"),
        (["sweep", "--seq", "128", "-o", "x.JSON"], "any"),
        (["sweep", "--seq", "128", "-o", ".json"], "any"),
        (["sweep", "--seq", "128", "-o", "sub/"], "bad"),
        (["validate", "m.json", "--json", "m.json", "--format", "json"], "bad"),
        (["report", "s.json", "s.json"], "any"),
        (["report", "s.json", "./s.json"], "any"),
        (["report", "s.json", "link_to_sweep.json"], "any"),
        (["sweep", "--seq", "128", "-o", "t.txt.json", "--block-table", "t.txt"], "any"),
        (["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--trace", "trace.csv",
          "--format", "csv"], "any"),
        (["run", "--seq", "128", "--html", "a.html", "--html", "b.html"], "any"),
        (["run", "--seq", "128", "--html", "/proc/self/fd/1"], "any"),
        (["run", "--seq", "128", "--html", "/dev/stdout"], "any"),
        (["sweep", "--seq", "128", "-o", "/dev/stdout"], "any"),
        (["validate", "m.json", "--json", "/dev/stdout"], "any"),
        (["run", "--seq", "128", "--html", "a" * 300 + ".html"], "bad"),
        (["run", "--seq", "128", "--html", "sub/" + "a/" * 2000 + "x.html"], "bad"),
    ]
    results = []
    root = os.geteuid() == 0
    for args, expect in same:
        if root and ("ro.html" in args or "rodir/x.html" in args):
            expect = "any"  # root may write any file, as with the shell's `>`
        digests = {p: digest(p) for p in inputs + ([] if root else [ro])}
        listing = set(os.listdir(d))
        rc, out, err, el = cli.call(args, cwd=d)
        COUNT["outputs"] += 1
        c = classify_cli(args, rc, out, err, el, expect)
        if c:
            finding(c[0], "outputs", " ".join(args), c[1])
        for p, h in digests.items():
            if digest(p) != h:
                finding("destructive", "outputs", " ".join(args), f"{os.path.basename(p)} changed")
                # restore for the next case
        new = set(os.listdir(d)) - listing
        junk = [x for x in new if "tmp" in x or x.startswith(".") or x.endswith(".partial")]
        if junk or (rc != 0 and new):
            finding("destructive", "outputs", " ".join(args), f"left {sorted(new)}")
        for x in new:
            p = os.path.join(d, x)
            if os.path.isfile(p) and not os.path.islink(p):
                os.remove(p)
        # restore inputs
        subprocess.run([cli.bin, "sweep", "--seq", "128,256", "-o", sweep], capture_output=True)
        shutil.copy(os.path.join(REPO, "tests/data/measurements_small.json"), meas)
        results.append(rc)
    # Python: two spellings of the same output? (no output flags in Python but for validate path)
    os.chmod(roddir, 0o755)
    os.chmod(ro, 0o644)
    return results


# ---------------------------------------------------------------------------- signals
def signal_cases(cli, tmp):
    d = os.path.join(tmp, "sig")
    os.makedirs(d, exist_ok=True)
    long_cmds = [
        ["sweep", "--seq", "1024:65536:x2", "--batch", "1:64:x2", "--head-dim", "64,128", "-j", "1",
         "-o", "out.json"],
        ["sweep", "--seq", "1024:65536:x2", "--batch", "1:64:x2", "-j", "1"],
        ["sweep", "--seq", "1024:65536:x2", "--batch", "1:64:x2", "-j", "1", "--format", "csv"],
        ["run", "--seq", "65536", "--batch", "64", "--heads", "32", "--exact"],
        ["run", "--seq", "3000", "--execute", "--head-dim", "64"],
        ["tune", "--seq", "32768", "--batch", "16", "--heads", "16", "--block-kv", "32,64,128",
         "--block-q", "64,128", "-j", "1", "--html", "t.html"],
        ["kvcache", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--requests",
         "20000000", "--weights-bytes", "16e9"],
        ["layer", "--model", "llama-3-70b", "--seq", "1024:131072:x2", "--batch", "1:64:x2"],
        ["validate", os.path.join(REPO, "cuda_validate/measurements/h100-sxm5-80gb"), "--json",
         "v.json"],
        ["report", os.path.join(REPO, "tests/data/measurements_small.json")],
        ["explain", "--seq", "64", "--head-dim", "16", "--batch", "2", "--heads", "2"],
        ["demo", "--seq", "65536", "--batch", "64"],
    ]
    for args in long_cmds:
        for sig in (signal.SIGINT, signal.SIGTERM):
            for delay in (0.05, 0.4, 1.5):
                for stdout_mode in ("file", "pipe_unread"):
                    for f in os.listdir(d):
                        p = os.path.join(d, f)
                        if os.path.isfile(p):
                            os.remove(p)
                    COUNT["signals"] += 1
                    if stdout_mode == "file":
                        so = open(os.path.join(d, "stdout.txt"), "wb")
                    else:
                        so = subprocess.PIPE
                    p = subprocess.Popen([cli.bin] + args, stdout=so, stderr=subprocess.PIPE,
                                         cwd=d, start_new_session=True)
                    time.sleep(delay)
                    t0 = time.time()
                    p.send_signal(sig)
                    try:
                        # an unread pipe: nothing reads stdout, on purpose
                        p.wait(timeout=TIMEOUT)
                        rc = p.returncode
                    except subprocess.TimeoutExpired:
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
                        rc = None
                    waited = time.time() - t0
                    err = p.stderr.read().decode("utf-8", "replace")
                    p.stderr.close()
                    if p.stdout:
                        p.stdout.close()
                    if stdout_mode == "file":
                        so.close()
                    where = f"signals:{args[0]}"
                    inp = f"{signal.Signals(sig).name}@{delay}s {stdout_mode}: {' '.join(args)[:120]}"
                    if rc is None:
                        finding("hang", where, inp, f"still running {TIMEOUT}s after the signal")
                        continue
                    if waited > 3:
                        finding("hang", where, inp, f"stopped {waited:.1f}s after the signal")
                    if rc < 0 or rc in (134, 139):
                        finding("crash", where, inp, f"rc={rc} {err[-200:]}")
                    elif rc not in (0, 2, 3):
                        finding("internal", where, inp, f"rc={rc} {err[-200:]}")
                    elif rc == 3 and LEAKS.search(err):
                        finding("internal", where, inp, err[:200])
                    left = [x for x in os.listdir(d) if x not in ("stdout.txt", "out.json.partial")]
                    if rc != 0 and left:
                        finding("destructive", where, inp, f"rc={rc}, left {left}")


# ---------------------------------------------------------------------------- what-ifs
def profile_keys(cli):
    """(key, integer?, extreme values within and just past its bounds) from `profiles --keys`."""
    out = subprocess.run([cli.bin, "profiles", "--keys", "all"], capture_output=True,
                         text=True).stdout
    keys = []
    for line in out.splitlines():
        m = re.match(r"^(\w+\.\w+)\s+(integer|number)\s+.*?\s{2,}(.*)$", line)
        if not m:
            continue
        key, kind, bounds = m.groups()
        nums = re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", bounds)
        vals = {"1", "0", "1e-6", "4096", "1e6", "2147483647", "4294967296", "1e12", "1e-300"}
        for n in nums:
            v = float(n)
            vals.update({repr(v), repr(v * 2), repr(v / 2)})
            if kind == "integer":
                vals.update({str(int(v)), str(int(v) + 1), str(max(int(v) - 1, 0))})
        if kind == "integer":
            vals = {v for v in vals if re.fullmatch(r"-?\d+", v)} | {"9223372036854775807"}
        keys.append((key, kind, sorted(vals)))
    return keys


def sane_report(text):
    """A problem with a run's JSON that exited 0: not a finite, positive time, or a negative
    counter."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        return f"stdout is not JSON: {e}"
    runs = doc.get("runs", [doc]) if isinstance(doc, dict) else []
    for r in runs:
        if not r.get("feasible", True):
            continue
        t = r.get("time_s")
        if not isinstance(t, (int, float)) or not t > 0 or t != t or t == float("inf"):
            return f"time_s={t!r}"
        for k, v in (r.get("counters") or {}).items():
            if isinstance(v, (int, float)) and (v < 0 or v != v):
                return f"counters.{k}={v}"
            if v is None:
                return f"counters.{k}=null"
        for k, v in (r.get("achieved") or {}).items():
            if v is None or (isinstance(v, float) and (v != v or v < 0)):
                return f"achieved.{k}={v}"
        p = r.get("power") or {}
        for k, v in p.items():
            if v is None or (isinstance(v, float) and (v != v or v < 0)):
                return f"power.{k}={v}"
    return None


def shape(algo_args, seq):
    """An algorithm's flags with the problem's sizes it leaves out."""
    base = ["--heads", "4"]
    if "--batch" not in algo_args:
        base += ["--batch", "2"]
    if "--seq" not in algo_args:
        base += ["--seq", seq]
    return algo_args + base


def whatif_cases(cli, rnd):
    keys = profile_keys(cli)
    algos = [["--algo", "flash2"], ["--algo", "flash3", "--head-dim", "128"],
             ["--algo", "flash-decoding", "--seq", "1", "--seq-kv", "4096"],
             ["--algo", "paged", "--seq", "1", "--seq-kv", "2048", "--batch", "4"],
             ["--algo", "standard", "--pass", "bwd"], ["--algo", "flash2", "--pass", "fwdbwd",
                                                      "--causal"],
             ["--algo", "block-sparse", "--pattern", "local:2"]]
    cases = []
    for key, kind, vals in keys:
        for v in vals:
            a = rnd.choice(algos)
            cases.append(["run"] + shape(a, "2048") + ["--set", f"{key}={v}", "--format", "json",
                                                       "--max-seconds", "5"])
    for _ in range(300):
        a = rnd.choice(algos)
        sets = []
        for key, kind, vals in rnd.sample(keys, rnd.randint(2, 5)):
            sets += ["--set", f"{key}={rnd.choice(vals)}"]
        cases.append(["run"] + shape(a, rnd.choice(["256", "2048", "8192"])) + sets
                     + ["--format", "json", "--max-seconds", "5"])
    return cases


def run_whatif(cli, args):
    rc, out, err, el = cli.call(args)
    COUNT["whatif"] = COUNT.get("whatif", 0) + 1
    c = classify_cli(args, rc, out, err, el, "any")
    if c:
        finding(c[0], "whatif", " ".join(args), c[1])
    elif rc == 0:
        bad = sane_report(out)
        if bad:
            finding("silent", "whatif", " ".join(args), f"exit 0 with {bad}")
    if rc is not None and el > 9:
        finding("hang", "whatif", " ".join(args), f"--max-seconds 5 ran {el:.1f}s")


# ---------------------------------------------------------------------------- budgets
def budget_cases():
    """Large but accepted work under --max-seconds 2 (or --max-memory): each must end (exit 0,
    2 or 3) within a few seconds of its limit, and not be killed by the memory it takes."""
    lim = ["--max-seconds", "2"]
    big = [
        ["run", "--seq", "1048576", "--batch", "64", "--heads", "64", "--exact"],
        ["run", "--seq", "1048576", "--algo", "block-sparse", "--pattern", "random:0.5:1"],
        ["run", "--seq", "1048576", "--algo", "block-sparse", "--pattern", "strided:3"],
        ["run", "--seq", "262144", "--algo", "standard"],
        ["run", "--seq", "262144", "--algo", "standard", "--pass", "bwd"],
        ["run", "--seq", "1", "--seq-kv", "16777216", "--algo", "paged", "--page-tokens", "1",
         "--batch", "64"],
        ["run", "--seq", "1", "--seq-kv", "16777216", "--algo", "flash-decoding", "--splits",
         "65536"],
        ["run", "--seq", "1048576", "--window", "1", "--causal"],
        ["run", "--seq", "4096", "--execute", "--batch", "8", "--heads", "8"],
        ["run", "--seq", "65536", "--execute"],
        ["run", "--seq", "1", "--seq-lens", ",".join(["65536"] * 2000)],
        ["run", "--seq", "1", "--seq-lens", ",".join(["1"] * 60000)],
        ["run", "--seq", "1", "--seq-lens", ",".join(["1"] * 30000), "--algo", "paged"],
        ["run", "--seq", "65536", "--algo", "flash1,flash2,flash3,standard", "--batch", "16"],
        ["run", "--seq", "1048576", "--html", "x.html", "--exact"],
        ["tune", "--seq", "65536", "--block-q", "16:4096:+16", "--block-kv", "16:4096:+16",
         "-j", "1"],
        ["tune", "--seq", "65536", "--stages", "1:100000:+1", "-j", "1"],
        ["sweep", "--seq", "1:1000000:+1", "-j", "1", "-o", "s.json"],
        ["sweep", "--seq", "1:100000:+1", "--batch", "1:100000:+1", "-j", "1"],
        ["layer", "--model", "llama-3-70b", "--seq", "1048576", "--batch", "1024"],
        ["layer", "--model", "llama-3-8b", "--seq", "1:100000:+1"],
        ["layer", "--model", "llama-3-8b", "--phase", "decode", "--seq", "1048576",
         "--batch", "4096"],
        ["layer", "--model", "llama-3-8b", "--seq-lens", ",".join(["1"] * 15000),
         "--context-lens", ",".join(["100000"] * 15000)],
        ["kvcache", "--layers", "1", "--kv-heads", "1", "--head-dim", "16", "--requests",
         "2147483647", "--kv-budget-bytes", "1e15"],
        ["kvcache", "--layers", "1", "--kv-heads", "1", "--head-dim", "16", "--requests",
         "1000000", "--block-tokens", "1", "--max-prompt-tokens", "2147483647",
         "--prompt-len", "const:2000000000", "--kv-budget-bytes", "1e18"],
        ["kvcache", "--layers", "1", "--kv-heads", "1", "--head-dim", "16", "--samples",
         "2147483647", "--requests", "10"],
        ["kvcache", "--layers", "1", "--kv-heads", "1", "--head-dim", "16", "--series-points",
         "2147483647", "--requests", "100000", "--format", "json"],
        ["kvcache", "--layers", "1", "--kv-heads", "1", "--head-dim", "16", "--prompt-groups",
         "2147483647", "--shared-prefix-tokens", "2000"],
        ["explain", "--seq", "64", "--head-dim", "16", "--batch", "4", "--block-q", "16",
         "--block-kv", "16", "--html", "e.html"],
        ["explain", "--seq", "64", "--head-dim", "16", "--compare", ",".join(
            ["flash1", "flash2", "standard", "flash3"] * 10)],
        ["demo", "--seq", "1048576", "--batch", "64", "--heads", "64"],
    ]
    cases = [c + lim for c in big]
    cases += [c + ["--max-memory", "64M", "--max-seconds", "5"] for c in big
              if c[0] in ("run", "tune", "sweep", "explain")]
    return cases


def run_budget(cli, args, tmp):
    d = tempfile.mkdtemp(dir=tmp)
    t = time.time()
    try:
        p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M", cli.bin] + args,
                           capture_output=True, timeout=TIMEOUT, cwd=d)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, err = None, ""
    el = time.time() - t
    COUNT["budget"] = COUNT.get("budget", 0) + 1
    m = re.search(r"MAXRSS (\d+)", err)
    err = re.sub(r"(Command exited with non-zero status \d+\n)?MAXRSS \d+\n?", "", err)
    c = classify_cli(args, rc, "", err, el, "any")
    if c:
        finding(c[0], "budget", " ".join(args)[:300], c[1])
    limit = float(args[args.index("--max-seconds") + 1]) if "--max-seconds" in args else 0
    if rc is not None and limit and el > limit + 6:
        finding("hang", "budget", " ".join(args)[:300], f"--max-seconds {limit:g} ran {el:.1f}s "
                f"(rc {rc})")
    if m and int(m.group(1)) > 4_000_000:
        finding("crash" if rc and rc < 0 else "internal", "budget", " ".join(args)[:300],
                f"peak RSS {int(m.group(1)) / 1e6:.1f} GB")
    if "--max-memory" in args and m and int(m.group(1)) > 400_000:
        finding("silent", "budget", " ".join(args)[:300],
                f"--max-memory 64M, peak RSS {int(m.group(1)) / 1e3:.0f} MB (rc {rc})")
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------- python
PY_BAD = ["None", "float('nan')", "float('inf')", "-float('inf')", "2**70", "-2**70", "-1", "0",
          "'abc'", "''", "[]", "{}", "object()", "b'64'", "True", "1.5", "[1, 2]", "(1,)",
          "{'a': 1}", "'64'", "1e308", "-0.0", "complex(1, 1)", "'\\x00'", "range(3)", "set()",
          "2**63", "2**64", "[[1]]", "[None]"]

PY_WORKER = r'''
import json, math, os, sys, traceback
sys.path.insert(0, sys.argv[1])
import iosim
ok = (iosim.ConfigError, ValueError, TypeError)
for line in sys.stdin:
    code = line.rstrip("\n")
    try:
        r = eval(code, {"iosim": iosim, "math": math, "os": os})
        res = {"r": "ok", "t": type(r).__name__}
    except iosim.InternalError as e:
        res = {"r": "internal", "e": "InternalError", "m": str(e)[:300]}
    except KeyboardInterrupt as e:
        res = {"r": "exc", "e": "KeyboardInterrupt", "m": str(e)[:300]}
    except ok as e:
        res = {"r": "refused", "e": type(e).__name__, "m": str(e)[:300]}
    except BaseException as e:
        res = {"r": "exc", "e": type(e).__name__, "m": str(e)[:300]}
    print(json.dumps(res), flush=True)
'''


# Values no keyword takes (the others, 0, None, True, 1.5, lists, are some keyword's valid value).
PY_NONSENSE = {"float('nan')", "-float('inf')", "-2**70", "'abc'", "''", "{}", "object()", "b'64'",
               "complex(1, 1)", "'\\x00'", "set()", "[[1]]", "[None]", "{'a': 1}"}


def gen_python(rnd, tmp):
    calls = []
    run_kw = ["seq", "batch", "heads", "kv_heads", "head_dim", "seq_kv", "block_q", "block_kv",
              "splits", "page_tokens", "threads", "stages", "window", "seed", "dropout",
              "sm_clock_mhz", "algo", "dtype", "kv_dtype", "pass_", "pattern", "l2", "profile",
              "kernel", "set", "causal", "mask", "execute", "exact", "cold_l2", "seq_lens",
              "max_seconds", "max_memory", "warpgroups", "pack_gqa", "block_table", "format",
              "html", "svg", "out", "jobs"]
    for kw in run_kw:
        for v in PY_BAD:
            base = "seq=128, max_seconds=5" if kw not in ("seq", "max_seconds") else \
                ("max_seconds=5" if kw == "seq" else "seq=128")
            calls.append((f"py:run:{kw}", f"iosim.run({base}, {kw}={v})",
                          "bad" if v in PY_NONSENSE else "any"))
    for fn, base, kws in [
        ("kvcache", "layers=2, kv_heads=2, head_dim=64, requests=50",
         ["layers", "kv_heads", "head_dim", "requests", "weights_bytes", "kv_budget_bytes", "policy",
          "block_tokens", "prompt_len", "output_len", "arrivals", "trace", "watermark", "samples",
          "max_seconds", "dtype", "seed", "series", "format"]),
        ("layer", "model='llama-3-8b', seq=64",
         ["model", "seq", "batch", "phase", "tp", "context", "seq_lens", "context_lens", "algo",
          "kernel", "dtype", "gemm_bm", "gemm_split_k", "launch", "mlp_activation", "profile",
          "sm_clock_mhz", "l2", "max_seconds", "html"]),
        ("tune", "seq=128, block_kv=[64, 128], max_seconds=5",
         ["block_q", "block_kv", "stages", "threads", "tie_band", "top", "jobs", "seq", "algo",
          "max_memory", "html"]),
        ("compare", "algo=['flash1', 'flash2'], seq=128",
         ["algo", "kernel", "seq", "batch", "max_seconds", "profile", "set"]),
        ("sweep", "seq=[128, 256], max_seconds=5",
         ["seq", "algo", "jobs", "dataframe", "client", "progress", "chunks", "set", "head_dim",
          "max_memory", "block_kv", "kernel"]),
    ]:
        for kw in kws:
            for v in PY_BAD:
                b = ", ".join(x for x in re.split(r", (?=\w+=)", base) if not x.startswith(kw + "="))
                calls.append((f"py:{fn}:{kw}", f"iosim.{fn}({b}, {kw}={v})",
                              "bad" if v in PY_NONSENSE else "any"))
    for v in PY_BAD + ["'/nonexistent'", "'/etc'", "'/dev/null'", "'/dev/zero'",
                       f"'{tmp}'", "os.devnull", "__import__('pathlib').Path('/nonexistent')"]:
        calls.append(("py:validate:path", f"iosim.validate({v})", "bad"))
        calls.append(("py:validate:profile",
                      f"iosim.validate('{REPO}/tests/data/measurements_small.json', profile={v})",
                      "any" if v == "''" else "bad"))  # '': the measurements' own profile
    for fn, base in [("run", "seq=128"), ("kvcache", "layers=2, kv_heads=2, head_dim=64"),
                     ("layer", "model='llama-3-8b', seq=64"), ("tune", "seq=128"),
                     ("compare", "algo=['flash1','flash2'], seq=128"), ("sweep", "seq=128")]:
        for kw in ["zzz", "Seq", "seq_", "_", "pass", "help", "version", "format", "kernel_", "out",
                   "json", "html", "svg", "resume", "shard", "o", "j", "max-seconds"]:
            calls.append((f"py:{fn}:unknown-kw", f"iosim.{fn}({base}, **{{{kw!r}: 1}})", "bad"))
        calls.append((f"py:{fn}:positional", f"iosim.{fn}(128)", "bad"))
    # kernel dicts
    for kd in ["{}", "{'dataflow': None}", "{'name': 'x', 'dataflow': {'forward': 'zzz'}}",
               "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'mechanisms': 5}",
               "{'name': float('nan')}", "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, "
               "'tiles': {'block_q': -1}}", "{1: 2}", "{'a': object()}",
               "{'name': 'x', 'dataflow': {'forward': 'query_stationary'}, 'tiles': {'block_q': "
               "float('inf')}}", "{'name': 'x' * 100000}"]:
        calls.append(("py:run:kernel-dict", f"iosim.run(seq=128, kernel={kd})", "bad"))
        calls.append(("py:compare:kernel-dict",
                      f"iosim.compare(algo='flash2', kernel=[{kd}], seq=128)", "bad"))
    # many random combinations
    for _ in range(150):
        kws = rnd.sample(["batch", "heads", "head_dim", "block_q", "block_kv", "seq_kv", "window",
                          "splits", "stages", "threads"], rnd.randint(1, 3))
        parts = ", ".join(f"{k}={rnd.choice(PY_BAD + ['16', '64', '128'])}" for k in kws)
        calls.append(("py:run:combo", f"iosim.run(seq=128, max_seconds=5, {parts})", "any"))
    return calls


def classify_py(res, expect):
    if res is None:
        return ("hang", "no answer")
    if res.get("crash"):
        return ("crash", res["crash"])
    r = res["r"]
    if r == "internal":
        return ("internal", f"InternalError: {res['m']}")
    if r == "exc":
        if res["e"] in ("InfeasibleError",):
            return None
        return ("internal", f"{res['e']}: {res['m']}")
    if r == "refused":
        if LEAKS.search(res["m"]):
            return ("internal", f"{res['e']}: {res['m']}")
        return None
    if expect == "bad":
        return ("silent", f"returned a {res['t']}")
    return None


def run_python(pypath, calls, tmp):
    def start():
        return subprocess.Popen([PYTHON, "-c", PY_WORKER, pypath], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
                                bufsize=1)
    import selectors
    w = start()
    for where, code, expect in calls:
        COUNT["python"] += 1
        try:
            w.stdin.write(code + "\n")
            w.stdin.flush()
        except BrokenPipeError:
            pass
        sel = selectors.DefaultSelector()
        sel.register(w.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout=TIMEOUT)
        sel.close()
        res = None
        if ready:
            line = w.stdout.readline()
            if line:
                res = json.loads(line)
            else:
                w.wait()
                err = w.stderr.read()
                res = {"crash": f"worker died rc={w.returncode}: {err[-300:]}"}
        c = classify_py(res, expect)
        if c:
            finding(c[0], where, code[:300], c[1])
        if res is None or res.get("crash"):
            try:
                w.kill()
            except OSError:
                pass
            w.wait()
            w = start()
    w.stdin.close()
    w.wait()


# ---------------------------------------------------------------------------- python threads
THREAD_SCRIPTS = {
    # A call's max_seconds while other threads' calls start and end.
    "budget-per-thread": r"""
import sys, threading, time, iosim
out = {}
def long_call():
    t = time.monotonic()
    try:
        iosim.run(seq=1048576, batch=64, heads=64, exact=True, max_seconds=0.5)
        out["long"] = "returned"
    except TimeoutError:
        out["long"] = time.monotonic() - t
def short(**kw):
    errs, end = [], time.monotonic() + 2
    while time.monotonic() < end:
        try:
            iosim.run(seq=64, **kw)
        except Exception as e:
            errs.append(type(e).__name__)
    out[str(kw)] = errs
ts = [threading.Thread(target=long_call, daemon=True),
      threading.Thread(target=short, kwargs={"max_seconds": 100}, daemon=True),
      threading.Thread(target=short, daemon=True)]
[t.start() for t in ts]; [t.join(12) for t in ts]
bad = [k for k, v in out.items() if v]
if any(t.is_alive() for t in ts) or not isinstance(out.get("long"), float) or out["long"] > 3 \
        or out.get("{}") or out.get("{'max_seconds': 100}"):
    print("FINDING", out, [t.is_alive() for t in ts]); sys.exit(5)
""",
    # The same for max_memory.
    "memory-per-thread": r"""
import sys, threading, time, iosim
out = {}
def limited():
    res = []
    for _ in range(40):
        try:
            iosim.run(seq=4096, execute=True, max_memory="1M"); res.append("ran")
        except iosim.ConfigError:
            res.append("refused")
    out["limited"] = res
def other():
    end = time.monotonic() + 2
    while time.monotonic() < end:
        iosim.run(seq=64, max_seconds=100)
ts = [threading.Thread(target=limited), threading.Thread(target=other)]
[t.start() for t in ts]; [t.join(30) for t in ts]
if "ran" in out.get("limited", ["ran"]):
    print("FINDING", out["limited"].count("ran"), "of 40 ran past max_memory=1M"); sys.exit(5)
""",
    # Exit while daemon threads are inside calls.
    "exit-daemon": r"""
import threading, time, iosim
def calls():
    while True:
        iosim.run(seq=64)
for _ in range(4):
    threading.Thread(target=calls, daemon=True).start()
time.sleep(0.3)
""",
    # Ctrl-C on the main thread's call while another thread makes calls.
    "sigint-with-thread": r"""
import os, signal, sys, threading, time, iosim
stop = False
def short():
    while not stop:
        try:
            iosim.run(seq=64)
        except BaseException:
            pass
threading.Thread(target=short, daemon=True).start()
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t = time.monotonic()
try:
    iosim.run(seq=1048576, batch=64, heads=64, exact=True)
    r = "returned"
except KeyboardInterrupt:
    r = "interrupted"
stop = True
if r != "interrupted" or time.monotonic() - t > 4:
    print("FINDING", r, time.monotonic() - t); sys.exit(5)
""",
}


def python_thread_cases(pypath, repeat):
    env = dict(os.environ, PYTHONPATH=pypath)
    for name, script in THREAD_SCRIPTS.items():
        for i in range(repeat):
            COUNT["pythreads"] = COUNT.get("pythreads", 0) + 1
            try:
                p = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True,
                                   timeout=TIMEOUT, env=env)
            except subprocess.TimeoutExpired:
                finding("hang", f"pythreads:{name}", f"run {i}", f"past {TIMEOUT}s")
                continue
            tail = (p.stdout + p.stderr)[-300:]
            if p.returncode < 0 or "terminate called" in p.stderr:
                finding("crash", f"pythreads:{name}", f"run {i}", f"rc={p.returncode}: {tail}")
            elif p.returncode == 5:
                cls = "hang" if name == "budget-per-thread" else "silent"
                finding(cls, f"pythreads:{name}", f"run {i}", tail)
            elif p.returncode != 0:
                finding("internal", f"pythreads:{name}", f"run {i}", f"rc={p.returncode}: {tail}")


def switch_cases():
    cases = []
    for sub, base, switches in [
            ("run", ["--seq", "128"], ["--causal", "--mask", "--cold-l2", "--execute", "--exact"]),
            ("sweep", ["--seq", "128"], ["--causal", "--exact", "--resume"]),
            ("tune", ["--seq", "128", "--max-seconds", "5"], ["--causal", "--mask"]),
            ("explain", ["--seq", "16"], ["--causal", "--no-color"]),
            ("kvcache", ["--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--requests", "20"],
             ["--series"]),
            ("models", [], ["--keys", "--schema"]), ("profiles", [], ["--template"])]:
        for sw in switches:
            for v in ["2", "-1", "99999999999999999999", "maybe", "1.5", "tru"]:
                cases.append((f"cli:{sub}:{sw}=", [sub] + base + [f"{sw}={v}"], "bad"))
    for sub, args in [("run", ["--seq", "128", "--seq", "256"]),
                      ("layer", ["--model", "llama-3-8b", "--model", "mistral-7b", "--seq", "64"]),
                      ("kvcache", ["--layers", "2", "--layers", "3", "--kv-heads", "2", "--head-dim",
                                   "64"])]:
        cases.append((f"cli:{sub}:twice", [sub] + args, "bad"))
    return cases


# ---------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build/iosim"))
    ap.add_argument("--python-path", default=os.path.join(REPO, "build/python"))
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--files", type=int, default=60, help="mutations per file kind")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default="")
    ap.add_argument("--only", default="", help="comma list of: cli,files,outputs,signals,python")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    binary = os.path.abspath(a.bin)
    tmp = tempfile.mkdtemp(prefix="iosim_probe6_")
    cli = Cli(binary, tmp)
    only = set(a.only.split(",")) if a.only else {"cli", "files", "outputs", "signals",
                                                            "python", "whatif", "budget",
                                                            "pythreads"}
    t0 = time.time()
    if "cli" in only:
        cases = gen_cli_flags(rnd) + switch_cases()
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            list(ex.map(lambda c: cli.check(c[0], c[1], c[2]), cases))
        print(f"cli: {len(cases)} cases, {time.time() - t0:.0f}s", file=sys.stderr)
    if "files" in only:
        cases = file_cases(cli, tmp, rnd, a.files)
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            list(ex.map(lambda ic: run_file_case(cli, tmp, ic[0], ic[1]), enumerate(cases)))
        print(f"files: {len(cases)} cases, {time.time() - t0:.0f}s", file=sys.stderr)
    if "outputs" in only:
        output_cases(cli, tmp)
        print(f"outputs done, {time.time() - t0:.0f}s", file=sys.stderr)
    if "python" in only:
        calls = gen_python(rnd, tmp)
        run_python(os.path.abspath(a.python_path), calls, tmp)
        print(f"python: {len(calls)} calls, {time.time() - t0:.0f}s", file=sys.stderr)
    if "whatif" in only:
        cases = whatif_cases(cli, rnd)
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            list(ex.map(lambda c: run_whatif(cli, c), cases))
        print(f"whatif: {len(cases)} cases, {time.time() - t0:.0f}s", file=sys.stderr)
    if "budget" in only:
        cases = budget_cases()
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            list(ex.map(lambda c: run_budget(cli, c, tmp), cases))
        print(f"budget: {len(cases)} cases, {time.time() - t0:.0f}s", file=sys.stderr)
    if "pythreads" in only:
        python_thread_cases(os.path.abspath(a.python_path), 3)
        print(f"pythreads done, {time.time() - t0:.0f}s", file=sys.stderr)
    if "signals" in only:
        signal_cases(cli, tmp)
        print(f"signals done, {time.time() - t0:.0f}s", file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    by = {}
    for f in FINDINGS:
        by.setdefault(f["class"], []).append(f)
    print(f"inputs: {sum(COUNT.values())} ({COUNT}), {time.time() - t0:.0f}s")
    for cls in ("crash", "internal", "hang", "destructive", "silent", "misleading", "refused-valid"):
        print(f"{cls:14s} {len(by.get(cls, []))}")
    for f in FINDINGS:
        print(f"[{f['class']}] {f['where']}: {f['input'][:200]}\n    {f['detail'][:300]}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"count": COUNT, "findings": FINDINGS}, fh, indent=1)
    real = [f for f in FINDINGS if f["class"] != "refused-valid"]
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
