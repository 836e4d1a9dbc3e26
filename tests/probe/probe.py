#!/usr/bin/env python3
"""The reliability probe of issue #50: thousands of bad inputs against every iosim subcommand,
every file kind it reads and the Python package, each judged on how it ends.

    python3 tests/probe/probe.py --bin build/iosim --python-path build/python   # the whole probe
    python3 tests/probe/probe.py --bin build/iosim --quick                      # the CI subset
    python3 tests/probe/probe.py --bin build/iosim --only 'layer\\.num' -v       # some cases
    python3 tests/probe/probe.py --bin build/iosim --list                       # the case ids

An input is OK when it exits 0, or exits 2 with a message whose first line starts 'iosim'. It is a
FINDING when it
  crash        ends by a signal or with an exit code above 128 (an abort, a segfault)
  internal     prints what looks like the implementation's own text (a C++ exception, 'std::',
               'basic_string', 'json.exception', 'terminate called', 'internal error'), exits
               with a code other than 0 and 2, or fails without an 'iosim' message; in Python,
               raises anything but ConfigError/ValueError/TypeError, or one whose text looks
               internal as above
  hang         is still running at the timeout (20 s by default; every problem is small)
  destructive  fails after changing a file that was there before (every output flag of the case
               points at a file holding a sentinel) or leaves a new file behind
  silent       accepts (exit 0, or a Python call returning) a value no flag or keyword may take:
               'abc' or '1.5' for an integer, wgmma or fp8 on the A100, a list where one value goes
  misleading   refuses a flag's value with a message that names neither the flag nor the value

Inputs are generated from a fixed seed (--seed, default 50), so two runs try the same inputs.
Python 3 standard library only. Everything is written under one temporary folder.
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import random
import re
import resource
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time

INTERNAL_TEXT = re.compile(
    r"basic_string|json\.exception|nlohmann|std::|terminate called|what\(\):|internal error|"
    r"Assertion .* failed|Segmentation fault|Aborted|stoi|stod|stoul|bad_alloc|"
    r"vector::_M|out_of_range|invalid_argument|yaml-cpp|YAML::|bad_any_cast|bad_variant|"
    r"Traceback \(most recent call last\)|incompatible function arguments|NoneType|"
    r"object is not (iterable|subscriptable|callable)|unsupported operand")
SENTINEL = b"sentinel: a file that was here before the command ran\n"
CLASSES = ["crash", "internal", "hang", "destructive", "silent", "misleading"]

# ----------------------------------------------------------------------------- values

INT_BAD = [
    "", " ", "-1", "0", "-0", "1.5", "abc", "0x10", "1e3", "nan", "inf", "-inf", "1e309",
    "99999999999999999999", "9223372036854775807", "9223372036854775808",
    "-9223372036854775809", "4294967296", "2147483648", "18446744073709551616", "+8", "08",
    "8 ", " 8", "\uff18", "\u0668", "1_000", "8\n", "--", "-", "1,2", "8x", "1e-320",
]
FLOAT_BAD = [
    "", "-1", "0", "-0", "nan", "-nan", "inf", "-inf", "1e309", "-1e309", "1e-320", "1e300",
    "0x1p3", "abc", "1.5.5", "0,5", "1e", ".", "+", "99999999999999999999", "1e18",
]
WORD_BAD = ["", " ", "X", "FLASH2", " flash2", "flash2 ", "flash2,", "\u0066lash\u2082", "-1",
            "0", "a" * 5000, "\x01", "--help", "nan", "on,off"]
LIST_BAD = ["", ",", "1,", ",1", "1,,2", "1:0", "1:100:x1", "1:100:+0", "1:100:-1", "1:2:x0",
            "0:0", "1:99999999999:+1", "16777217:9223372036854775807:x2", "1:1e9", "a:b",
            "64,64", "9223372036854775807", "-64,64", "64:32", "1:100000000:+1", "1::2", ":::"]

# ----------------------------------------------------------------------------- commands

# Each subcommand: a base argv that runs fast and succeeds, its integer, float and word flags.
SUBCOMMANDS = {
    "run": dict(base=["run", "--seq", "128"],
                ints=["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv",
                      "--block-q", "--block-kv", "--splits", "--page-tokens", "--threads",
                      "--stages", "--backward-block-q", "--backward-block-kv", "--seed"],
                floats=["--sm-clock-mhz", "--dropout", "--max-seconds"],
                words=["--profile", "--algo", "--kernel", "--dtype", "--pass", "--pattern", "--l2",
                       "--warpgroups", "--pack-gqa", "--format", "--max-memory", "--set",
                       "--block-table"]),
    "sweep": dict(base=["sweep", "--seq", "128", "-j", "1"],
                  ints=["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv",
                        "--block-q", "--block-kv", "--splits", "--page-tokens", "--threads",
                        "--stages", "--seed", "--jobs"],
                  floats=["--sm-clock-mhz", "--dropout", "--max-seconds"],
                  words=["--algo", "--dtype", "--pass", "--l2", "--format", "--shard",
                         "--max-memory", "--set", "--profile", "--kernel"],
                  lists=["--batch", "--heads", "--seq", "--block-q", "--head-dim",
                         "--sm-clock-mhz", "--dropout"]),
    "tune": dict(base=["tune", "--seq", "256", "--block-q", "64,128", "--block-kv", "64",
                       "-j", "1"],
                 ints=["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv",
                       "--splits", "--top", "--jobs", "--seed", "--backward-block-q"],
                 floats=["--tie-band", "--sm-clock-mhz", "--dropout", "--max-seconds"],
                 words=["--algo", "--kernel", "--dtype", "--pass", "--format", "--profile"],
                 lists=["--block-q", "--block-kv", "--stages", "--threads"]),
    "layer": dict(base=["layer", "--model", "llama-3-8b", "--phase", "decode", "--seq", "128"],
                  ints=["--tp", "--gemm-bm", "--gemm-bn", "--gemm-bk", "--gemm-cluster-m",
                        "--gemm-cluster-n", "--gemm-group-m", "--gemm-split-k"],
                  floats=["--sm-clock-mhz"],
                  words=["--model", "--phase", "--profile", "--algo", "--kernel", "--dtype",
                         "--l2", "--launch", "--format"],
                  lists=["--batch", "--seq", "--context"]),
    "kvcache": dict(base=["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64",
                          "--requests", "20"],
                    ints=["--layers", "--kv-heads", "--head-dim", "--block-tokens", "--requests",
                          "--max-prompt-tokens", "--max-output-tokens", "--samples",
                          "--shared-prefix-tokens", "--prompt-groups", "--max-running", "--seed",
                          "--series-points"],
                    floats=["--weights-bytes", "--kv-budget-bytes", "--watermark",
                            "--max-seconds"],
                    words=["--profile", "--dtype", "--policy", "--prompt-len", "--output-len",
                           "--arrivals", "--format", "--trace"]),
    "explain": dict(base=["explain", "--seq", "16", "--no-color"],
                    ints=["--batch", "--heads", "--kv-heads", "--head-dim", "--seq", "--seq-kv",
                          "--block-q", "--block-kv", "--splits", "--page-tokens", "--threads",
                          "--stages", "--step", "--until", "--seed"],
                    floats=["--sm-clock-mhz", "--dropout"],
                    words=["--algo", "--compare", "--focus", "--dtype", "--pass", "--pattern",
                           "--kernel", "--profile", "--max-memory"]),
    "validate": dict(base=["validate", "--ncu", "{fx}/ncu.csv", "--kernel", "{fx}/wg1.yaml",
                           "--time-us", "1616.6", "--batch", "4", "--heads", "16", "--seq",
                           "4096", "--head-dim", "128"],
                     ints=["--batch", "--heads", "--kv-heads", "--head-dim", "--seq",
                           "--seq-kv"],
                     floats=["--time-us"],
                     words=["--profile", "--kernel", "--dtype", "--pass", "--format",
                            "--max-memory"]),
    "report": dict(base=["report", "{fx}/sweep.json"], ints=[], floats=[],
                   words=["--validation", "--validation-profile", "--chartjs"]),
    "profiles": dict(base=["profiles"], ints=[], floats=[], words=["--show"]),
    "kernels": dict(base=["kernels"], ints=[], floats=[], words=["--show"]),
}

# Flags that write files: (subcommand, flag, extra argv making it valid)
OUTPUT_FLAGS = [
    ("run", "--html", []), ("run", "--svg", []), ("sweep", "--out", []),
    ("validate", "--json", []), ("explain", "--html", []), ("layer", "--html", []),
    ("report", "--md", []), ("report", "--html", []),
]


class Case:
    def __init__(self, cid, argv=None, files=None, py=None, outputs=(), timeout=None, setup=None,
                 expect="any", names=()):
        self.id = cid
        self.argv = argv  # CLI: the arguments after 'iosim'; '{fx}' is the fixture folder
        self.files = files or {}  # name in the case's folder -> bytes
        self.py = py  # Python API: an expression using the module iosim and the folder fx
        self.outputs = list(outputs)  # names in the case folder given as outputs (sentinels)
        self.timeout = timeout
        self.setup = setup  # (kind, name): a FIFO, folder, link loop or file made in its folder
        self.expect = expect  # "bad": an input no command may accept (exit 0 is 'silent')
        self.names = list(names)  # a refusal's message must hold one (else 'misleading')


def flag_names(flag, value):
    """What a refusal of `flag value` must name: the flag, or the value it was given."""
    names = [flag]
    if value:
        names.append(f"'{value}'")
    for part in value.split(","):  # a list: any of its values
        if part.strip():
            names.append(f"'{part.strip()}'")
            if len(part.strip()) >= 2:
                names.append(part.strip())
    try:  # a number as iosim prints it back
        x = float(value)
        if x == x and abs(x) < 1e30 and x == int(x):
            names.append(str(int(x)))
    except ValueError:
        pass
    return names


def with_flag(base, flag, value):
    """base with flag set to value (replacing it where base has it)."""
    argv = list(base)
    if flag in argv:
        i = argv.index(flag)
        argv[i + 1] = value
        return argv
    return argv + [flag, value]


def int_syntax(v):
    """True for a decimal integer that some integer flag (int64, uint64) may hold."""
    return bool(re.fullmatch(r"[-+]?\d+", v)) and -2**63 <= int(v) < 2**64


def gen_flags(cases):
    for sub, spec in SUBCOMMANDS.items():
        base = spec["base"]
        for flag in spec["ints"]:
            for i, v in enumerate(INT_BAD):
                cases.append(Case(f"{sub}.num.{flag}.{i}", with_flag(base, flag, v),
                                  names=flag_names(flag, v),
                                  expect="any" if int_syntax(v) or (sub in ("sweep", "tune") and
                                                                    v == "1,2") else "bad"))
        for flag in spec["floats"]:
            for i, v in enumerate(FLOAT_BAD):
                ok = re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d{1,3})?|[-+]?inf", v)
                ok = ok or (sub == "sweep" and v == "0,5")  # a list of two there
                cases.append(Case(f"{sub}.float.{flag}.{i}", with_flag(base, flag, v),
                                  names=flag_names(flag, v),
                                  expect="any" if ok and v not in ("1e309", "-1e309") else "bad"))
        for flag in spec["words"]:
            for i, v in enumerate(WORD_BAD):
                ok = v == "--help" or (sub == "sweep" and v == "on,off")  # a list there
                cases.append(Case(f"{sub}.word.{flag}.{i}", with_flag(base, flag, v),
                                  names=flag_names(flag, v),
                                  expect="any" if ok else "bad"))
        for flag in spec.get("lists", []):
            for i, v in enumerate(LIST_BAD):
                cases.append(Case(f"{sub}.list.{flag}.{i}", with_flag(base, flag, v),
                                  names=flag_names(flag, v)))
        # a flag given twice, with no value, an unknown one, a stray positional
        flags = spec["ints"] + spec["words"]
        for flag in flags[:6]:
            cases.append(Case(f"{sub}.novalue.{flag}", base + [flag]))
            cases.append(Case(f"{sub}.twice.{flag}", base + [flag, "1", flag, "2"]))
        cases.append(Case(f"{sub}.unknown", base + ["--no-such-flag", "1"]))
        cases.append(Case(f"{sub}.positional", base + ["stray"]))


def gen_combos(cases):
    """What a GPU lacks, asked for from each place; values past what the problem allows."""
    a100 = ["--profile", "a100-sxm4-80gb"]
    for sub in ["run", "sweep", "tune", "explain"]:
        base = SUBCOMMANDS[sub]["base"]
        for extra in (["--algo", "flash3"], ["--kernel", "flash3"], ["--dtype", "fp8"],
                      ["--algo", "flash3", "--dtype", "fp8"], ["--warpgroups", "pingpong"],
                      ["--kernel", "{fx}/wg1.yaml"], ["--algo", "flash3", "--pass", "fwdbwd"]):
            # fp8 and wgmma/TMA are Hopper's; pingpong warpgroups are flash3's (refused with
            # flash2 anywhere)
            cases.append(Case(f"{sub}.a100.{'_'.join(extra)}", base + a100 + extra,
                              expect="bad"))
    layer = SUBCOMMANDS["layer"]["base"]
    for extra in (["--gemm-cluster-m", "2"], ["--gemm-cluster-n", "2"], ["--algo", "flash3"],
                  ["--kernel", "flash3"], ["--gemm-bm", "64"], ["--gemm-split-k", "2"],
                  ["--kernel", "{fx}/wg1.yaml"], ["--dtype", "fp8"]):
        bad = extra[0] != "--gemm-bm" and extra[0] != "--gemm-split-k"  # A100 tiles, split-K
        cases.append(Case(f"layer.a100.{'_'.join(extra)}", layer + a100 + extra,
                          expect="bad" if bad else "any"))
    # a list whose values past their range come after points that run (each ~1 s)
    cases.append(Case("layer.list_late.--batch", layer + ["--batch", "1:9223372036854775807:x2"],
                      expect="bad"))
    for flag, vals in (("--gemm-bm", ["8", "16", "63", "64", "128", "256", "264", "512"]),
                       ("--gemm-bn", ["8", "12", "256", "264", "1024"]),
                       ("--gemm-bk", ["16", "32", "48", "512", "1008", "4096"]),
                       ("--gemm-cluster-m", ["1", "2", "3", "8", "9", "16"]),
                       ("--gemm-split-k", ["1", "2", "3", "4096", "1000000"]),
                       ("--gemm-group-m", ["1", "1000000"]), ("--tp", ["1", "2", "3", "64"])):
        for v in vals:
            cases.append(Case(f"layer.range.{flag}.{v}", with_flag(layer, flag, v)))
    for sub in ["run", "explain"]:
        base = SUBCOMMANDS[sub]["base"]
        for extra in (["--heads", "4", "--kv-heads", "3"], ["--kv-heads", "2"],
                      ["--algo", "paged", "--page-tokens", "100000"],
                      ["--algo", "flash-decoding", "--splits", "100000"],
                      ["--block-q", "100000"], ["--head-dim", "100000"],
                      ["--algo", "block-sparse", "--pattern", "random:2:1"],
                      ["--algo", "block-sparse", "--pattern", "local:0"],
                      ["--algo", "block-sparse", "--pattern", "strided:-1"],
                      ["--algo", "block-sparse", "--pattern", "random:0.5:99999999999999999999"],
                      ["--set", "l2.size_bytes=0"], ["--set", "sm.count=1e30"],
                      ["--set", "nope=1"], ["--set", "sm.count"], ["--set", "=1"],
                      ["--dropout", "1"], ["--causal", "--seq-kv", "1"], ["--pass", "bwd",
                                                                           "--algo", "paged"]):
            cases.append(Case(f"{sub}.combo.{'_'.join(extra)}", base + extra))
    kv = SUBCOMMANDS["kvcache"]["base"]
    for extra in (["--arrivals", "poisson:0"], ["--arrivals", "poisson:1e-300"],
                  ["--arrivals", "poisson:1e300"], ["--arrivals", "poisson:"],
                  ["--prompt-len", "const:0"], ["--prompt-len", "uniform:5,1"],
                  ["--prompt-len", "normal:1e300,1e300"], ["--prompt-len", "lognormal:700,1"],
                  ["--output-len", "lognormal:5,-1"], ["--prompt-len", "const:99999999999999"],
                  ["--weights-bytes", "1e30"], ["--kv-budget-bytes", "1"],
                  ["--shared-prefix-tokens", "100000000"], ["--samples", "100000"],
                  ["--block-tokens", "100000000"], ["--watermark", "1"]):
        cases.append(Case(f"kvcache.combo.{'_'.join(extra)}", kv + extra))
    for v in ["h100-sxm5-80gb", "nope", "", "../x", "/etc/passwd"]:
        cases.append(Case(f"profiles.show.{v}", ["profiles", "--show", v]))
        cases.append(Case(f"kernels.show.{v}", ["kernels", "--show", v]))
    cases.append(Case("profiles.template", ["profiles", "--template"]))


def gen_outputs(cases):
    """Every output flag over a file that holds a sentinel, in a command that fails."""
    failing = {"run": ["run", "--seq", "abc"], "sweep": ["sweep", "--seq", "0"],
               "validate": ["validate", "{fx}/nope.json"],
               "explain": ["explain", "--seq", "100000"],
               "layer": ["layer", "--model", "llama-3-8b", "--seq", "0"],
               "report": ["report", "{fx}/nope.json"]}
    late = {"run": ["run", "--seq", "128", "--block-q", "100000"],
            "sweep": ["sweep", "--seq", "128", "--block-q", "100000", "-j", "1"],
            "validate": ["validate", "{fx}/measured_bad.json"],
            "explain": ["explain", "--seq", "16", "--block-q", "100000"],
            "layer": ["layer", "--model", "llama-3-8b", "--seq", "128", "--gemm-bk", "8192"],
            "report": ["report", "{fx}/sweep_bad.json"]}
    for sub, flag, extra in OUTPUT_FLAGS:
        for kind, table in (("early", failing), ("late", late)):
            for ext in (".json", ".html", ".md", ".svg", ".csv"):
                name = "out" + ext
                cases.append(Case(f"{sub}.out.{kind}.{flag}{ext}", table[sub] + extra + [flag, name],
                                  outputs=[name]))
    # every output flag of a command that would succeed, over a path that is not a regular file
    good = {"run": ["run", "--seq", "128"], "sweep": ["sweep", "--seq", "128", "-j", "1"],
            "validate": ["validate", "{fx}/measured.json"], "explain": ["explain", "--seq", "16"],
            "layer": ["layer", "--model", "llama-3-8b", "--phase", "decode", "--seq", "128"],
            "report": ["report", "{fx}/sweep.json"]}
    for sub, flag, extra in OUTPUT_FLAGS:
        for label, setup, path in (
                ("fifo", ("fifo", "p"), "p"), ("dir", ("dir", "d"), "d"), ("devfull", None,
                                                                           "/dev/full"),
                ("devnull", None, "/dev/null"), ("loop", ("loop", "l"), "l"),
                ("nodir", None, "no/such/x.out"), ("empty", None, ""), ("dot", None, "."),
                ("input", None, "{fx}/" + {"validate": "measured.json", "report": "sweep.json"}
                 .get(sub, "profile.yaml")), ("filedir", ("file", "f"), "f/x.out"),
                ("newline", None, "a\nb.out"), ("long", None, "x" * 300)):
            argv = good[sub] + extra + [flag, path]
            if label == "input" and sub not in ("validate", "report"):
                argv += ["--profile", "{fx}/profile.yaml"] if sub != "layer" else [
                    "--profile", "{fx}/profile.yaml"]
            cases.append(Case(f"{sub}.outpath.{flag}.{label}", argv, setup=setup))
    # two outputs that are one file, in a run that would succeed
    for argv in (["run", "--seq", "128", "--html", "o.html", "--svg", "./o.html"],
                 ["report", "{fx}/sweep.json", "--md", "o.md", "--html", "./o.md"]):
        cases.append(Case("same." + argv[0], argv, outputs=["o.html", "o.md"]))


# ----------------------------------------------------------------------------- files

NUMBER = r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])"
FIELD_VALUES = ["0", "-1", "1", "3", "1e9", "99999999999999999999", "1.5", "1e-300"]
FIELD_SAMPLE = 16


def mutations(text, rng, kind):
    """(label, bytes) variants of one valid file's text."""
    data = text.encode()
    out = [("empty", b""), ("space", b" \n"), ("nul", b"\0" * 64),
           ("junk", bytes(rng.randrange(256) for _ in range(300))),
           ("bom", b"\xef\xbb\xbf" + data), ("crlf", data.replace(b"\n", b"\r\n")),
           ("utf16", text.encode("utf-16")), ("badutf8", data[: len(data) // 2] + b"\xff\xfe" +
                                                  data[len(data) // 2:]),
           ("double", data + data), ("nonl", data.rstrip(b"\n"))]
    for pct in (1, 10, 33, 50, 66, 90, 99):
        out.append((f"trunc{pct}", data[: len(data) * pct // 100]))
    lines = text.split("\n")
    for k in range(6):
        if len(lines) > 1:
            j = rng.randrange(len(lines))
            out.append((f"dropline{k}", "\n".join(lines[:j] + lines[j + 1:]).encode()))
            out.append((f"dupline{k}", "\n".join(lines[: j + 1] + lines[j:]).encode()))
    numbers = [m for m in re.finditer(r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.])", text)]
    repl = ["-1", "0", "-0", "1e309", "nan", "inf", "99999999999999999999", "1.5", "1e-320",
            "abc", "", "0x10", "1e30", "4294967296", "-9223372036854775809"]
    if kind == "json":
        repl += ['"5"', "null", "[]", "{}", "true"]
    for k in range(min(40, len(numbers) * len(repl))):
        m = numbers[rng.randrange(len(numbers))] if numbers else None
        if m is None:
            break
        v = repl[k % len(repl)]
        out.append((f"num{k}", (text[: m.start()] + v + text[m.end():]).encode()))
    words = [m for m in re.finditer(r"[A-Za-z_][A-Za-z_0-9]*", text)]
    for k in range(min(12, len(words))):
        m = words[rng.randrange(len(words))]
        v = ["", "x", m.group(0).upper(), m.group(0) + "_", "\"", "'", "{", "[", ":", ",",
             "\t", "#"][k % 12]
        out.append((f"word{k}", (text[: m.start()] + v + text[m.end():]).encode()))
    if kind == "yaml":
        out += [("tab", data.replace(b"  ", b"\t")), ("quote", data.replace(b": ", b": \"", 1)),
                ("anchor", b"a: &x 1\nb: *x\n" + data), ("flow", b"{" + data + b"}"),
                ("list", b"- " + data.replace(b"\n", b"\n  ")), ("docs", data + b"---\n" + data),
                ("deep", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n"), ("tag", b"!!binary x\n")]
    if kind == "json":
        out += [("deep", b"[" * 100000 + b"]" * 100000), ("array", b"[1,2,3]"),
                ("string", b"\"x\""), ("obj", b"{}"), ("trailcomma", data.rstrip()[:-1] + b",}"),
                ("comment", b"// c\n" + data)]
    if kind == "csv":
        out += [("header", b"\n".join(data.split(b"\n")[:3])), ("semicolon",
                                                                 data.replace(b",", b";")),
                ("quote", data.replace(b"\"", b"", 1)), ("ragged", data + b"1,2\n"),
                ("long", data + b",".join([b"1"] * 10000) + b"\n")]
    return out


FILE_KINDS = {
    # kind: (fixture name, syntax, the command reading it, with F for the file)
    "profile": ("profile.yaml", "yaml", ["run", "--seq", "128", "--profile", "F"]),
    "kernel": ("kernel.yaml", "yaml", ["run", "--seq", "128", "--kernel", "F"]),
    "model": ("model.yaml", "yaml", ["layer", "--phase", "decode", "--seq", "128", "--model",
                                     "F"]),
    "measured": ("measured.json", "json", ["validate", "F"]),
    "ncu": ("ncu.csv", "csv", ["validate", "--ncu", "F", "--kernel", "{fx}/wg1.yaml",
                               "--time-us", "1616.6", "--batch", "4", "--heads", "16", "--seq",
                               "4096", "--head-dim", "128"]),
    "sweepjson": ("sweep.json", "json", ["report", "F"]),
    "sweepcsv": ("sweep.csv", "csv", ["report", "F"]),
    "blocktable": ("table.txt", "text", ["run", "--algo", "paged", "--batch", "2", "--heads", "2",
                                        "--seq", "1", "--seq-kv", "40", "--head-dim", "32",
                                        "--block-table", "F"]),
    "trace": ("trace.csv", "csv", ["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim",
                                   "64", "--trace", "F"]),
    "pattern": ("pattern.txt", "text", ["run", "--algo", "block-sparse", "--seq", "512",
                                        "--block-q", "128", "--block-kv", "128", "--pattern",
                                        "file:F"]),
}
# the same files through other commands that read them
FILE_ALSO = {
    "profile": [["kvcache", "--layers", "2", "--kv-heads", "2", "--head-dim", "64",
                 "--requests", "5", "--profile", "F"],
                ["layer", "--model", "llama-3-8b", "--phase", "decode", "--seq", "128",
                 "--profile", "F"],
                ["sweep", "--seq", "128", "-j", "1", "--profile", "F"]],
    "kernel": [["layer", "--model", "llama-3-8b", "--seq", "128", "--phase", "decode",
                "--kernel", "F"], ["tune", "--seq", "256", "--block-q", "64", "--block-kv", "64",
                                   "-j", "1", "--kernel", "F"],
               ["validate", "--ncu", "{fx}/ncu.csv", "--kernel", "F", "--time-us", "1616.6",
                "--batch", "4", "--heads", "16", "--seq", "4096", "--head-dim", "128"]],
    "measured": [["report", "{fx}/sweep.json", "--validation", "F"]],
    "pattern": [["explain", "--algo", "block-sparse", "--seq", "64", "--block-q", "16",
                 "--block-kv", "16", "--head-dim", "16", "--pattern", "file:F"]],
    "ncu": [["validate", "--ncu", "F", "--kernel", "{fx}/wg1.yaml", "--batch", "4", "--heads",
             "16", "--seq", "4096", "--head-dim", "128", "--profile", "a100-sxm4-80gb"]],
    "blocktable": [["explain", "--algo", "paged", "--batch", "2", "--heads", "2", "--seq", "1",
                    "--seq-kv", "40", "--head-dim", "16", "--block-table", "F"]],
}


# the Python call reading each kind of file; F is the file's path
PY_FILE = {
    "profile": "iosim.run(seq=128, profile=F)",
    "kernel": "iosim.run(seq=128, kernel=F)",
    "model": "iosim.layer(model=F, phase='decode', seq=128)",
    "measured": "iosim.validate(F)",
    "trace": "iosim.kvcache(layers=2, kv_heads=2, head_dim=64, trace=F)",
    "blocktable": "iosim.run(algo='paged', batch=2, heads=2, seq=1, seq_kv=40, head_dim=32, "
                  "block_table=F)",
    "pattern": "iosim.run(algo='block-sparse', seq=512, block_q=128, block_kv=128, "
               "pattern='file:' + F)",
}
PY_FILE_LABELS = {"empty", "junk", "nul", "bom", "utf16", "badutf8", "double", "trunc10",
                  "trunc50", "trunc90", "dropline0", "dropline1", "dupline0", "word0", "word1",
                  "word2", "word5", "quote", "anchor", "docs", "deep", "tab", "array", "ragged",
                  "semicolon", "crlf"}


def make_fixtures(fx, binary, repo):
    os.makedirs(fx, exist_ok=True)

    def out_of(argv):
        return subprocess.run([binary] + argv, capture_output=True, check=True).stdout.decode()

    data = os.path.join(repo, "tests", "data")
    texts = {
        "profile.yaml": out_of(["profiles", "--show", "h100-sxm5-80gb"]),
        "kernel.yaml": out_of(["kernels", "--show", "flash2"]),
        "model.yaml": open(os.path.join(repo, "models", "llama-3-8b.yaml")).read(),
        "measured.json": open(os.path.join(data, "measurements_small.json")).read(),
        "ncu.csv": open(os.path.join(data, "kernels", "ncu_wg1_h100.csv")).read(),
        "wg1.yaml": open(os.path.join(data, "kernels", "wg1_tma_case.yaml")).read(),
        "table.txt": open(os.path.join(data, "block_tables", "two_by_three.txt")).read(),
        "trace.csv": open(os.path.join(data, "kvcache", "trace.csv")).read(),
        "pattern.txt": open(os.path.join(data, "patterns", "diag4.txt")).read(),
    }
    for name, text in texts.items():
        with open(os.path.join(fx, name), "w") as f:
            f.write(text)
    subprocess.run([binary, "sweep", "--seq", "128,256", "-j", "1", "--out",
                    os.path.join(fx, "sweep.json")], capture_output=True, check=True)
    subprocess.run([binary, "sweep", "--seq", "128,256", "-j", "1", "--out",
                    os.path.join(fx, "sweep.csv")], capture_output=True, check=True)
    m = texts["measured.json"]
    with open(os.path.join(fx, "measured_bad.json"), "w") as f:
        f.write(m.replace('"batch": ', '"batch": "x", "b": ', 1))
    with open(os.path.join(fx, "sweep_bad.json"), "w") as f:
        f.write(open(os.path.join(fx, "sweep.json")).read()[:500])
    texts["sweep.json"] = open(os.path.join(fx, "sweep.json")).read()
    texts["sweep.csv"] = open(os.path.join(fx, "sweep.csv")).read()
    return texts


def gen_files(cases, texts, rng):
    for kind, (name, syntax, argv) in FILE_KINDS.items():
        for label, data in mutations(texts[name], rng, syntax):
            fname = "in" + os.path.splitext(name)[1]
            use = [a.replace("F", fname) if a in ("F", "file:F") else a for a in argv]
            cases.append(Case(f"file.{kind}.{label}", use, files={fname: data}))
            for k, other in enumerate(FILE_ALSO.get(kind, [])):
                if label in ("empty", "junk", "trunc50", "num0", "num3", "num6", "word1", "crlf",
                             "badutf8"):
                    use = [a.replace("F", fname) if a in ("F", "file:F") else a for a in other]
                    cases.append(Case(f"file.{kind}.via{k}.{label}", use, files={fname: data}))
        # the same file through the Python package (its own path into the readers)
        for label, data in mutations(texts[name], rng, syntax):
            if kind in PY_FILE and label in PY_FILE_LABELS or (kind in PY_FILE and
                                                                 label.startswith("num")):
                cases.append(Case(f"python.file.{kind}.{label}", py=PY_FILE[kind],
                                  files={os.path.splitext(name)[1]: data}))
        # each number of the file in turn (a sample of the longer files) given each of a few
        # values: a field's range checks, wherever the field is
        numbers = list(re.finditer(NUMBER, texts[name]))
        picks = sorted(rng.sample(range(len(numbers)), min(len(numbers), FIELD_SAMPLE)))
        for k in picks:
            m = numbers[k]
            for j, v in enumerate(FIELD_VALUES):
                data = (texts[name][: m.start()] + v + texts[name][m.end():]).encode()
                fname = "in" + os.path.splitext(name)[1]
                use = [a.replace("F", fname) if a in ("F", "file:F") else a for a in argv]
                cases.append(Case(f"field.{kind}.{k}.{j}", use, files={fname: data}))
                if kind == "model":  # a prefill as well as a decode
                    use = [a if a != "decode" else "prefill" for a in use]
                    cases.append(Case(f"field.{kind}.prefill.{k}.{j}", use, files={fname: data}))
        # not a file: missing, a folder, a FIFO-less device, a link loop
        for label, path in (("missing", "nope" + os.path.splitext(name)[1]), ("folder", "."),
                            ("devnull", "/dev/null"), ("devzero", "/dev/zero")):
            use = [(("file:" if a == "file:F" else "") + path) if a in ("F", "file:F") else a
                   for a in argv]
            cases.append(Case(f"file.{kind}.{label}", use))


# ----------------------------------------------------------------------------- python

PY_BAD = ["None", "''", "'x'", "-1", "0", "2**70", "-2**70", "float('nan')", "float('inf')",
          "1.5", "[1]", "[]", "{}", "True", "b'x'", "object()", "'1e309'", "'99999999999999999999'",
          "1e300", "(1, 2)", "'\\x00'", "'a'*100000"]
# values no keyword of any function may take
PY_NEVER = {"'x'", "float('nan')", "b'x'", "object()", "2**70", "-2**70", "'\\x00'",
            "'a'*100000", "'1e309'", "'99999999999999999999'"}
PY_FUNCS = {
    "run": ("seq=128", ["seq", "batch", "heads", "kv_heads", "head_dim", "block_q", "block_kv",
                        "algo", "profile", "dtype", "dropout", "sm_clock_mhz", "set", "kernel",
                        "causal", "pattern", "splits", "threads", "stages", "seed", "pass_",
                        "max_seconds", "max_memory", "block_table"]),
    "sweep": ("seq=[128], jobs=1", ["seq", "batch", "head_dim", "algo", "set", "jobs", "block_q",
                                    "dtype", "kernel", "dropout"]),
    "tune": ("seq=256, block_q=[64], block_kv=[64], jobs=1",
             ["seq", "block_q", "block_kv", "stages", "threads", "tie_band", "top", "jobs",
              "algo", "kernel"]),
    "kvcache": ("layers=2, kv_heads=2, head_dim=64, requests=20",
                ["layers", "kv_heads", "head_dim", "requests", "block_tokens", "weights_bytes",
                 "kv_budget_bytes", "watermark", "arrivals", "prompt_len", "policy", "trace",
                 "samples", "seed", "max_running", "profile", "dtype"]),
    "layer": ("model='llama-3-8b', phase='decode', seq=128",
              ["model", "phase", "seq", "batch", "context", "tp", "gemm_bm", "gemm_bk",
               "gemm_cluster_m", "gemm_split_k", "profile", "algo", "kernel", "dtype", "launch",
               "sm_clock_mhz"]),
}


def gen_python(cases):
    for fn, (base, args) in PY_FUNCS.items():
        for arg in args:
            for i, v in enumerate(PY_BAD):
                key = "**{'pass': %s}" % v if arg == "pass_" else f"{arg}={v}"
                # the base's own keyword replaced
                kept = ", ".join(p for p in base.split(", ") if not p.startswith(arg + "="))
                expr = f"iosim.{fn}({kept}{', ' if kept else ''}{key})"
                cases.append(Case(f"python.{fn}.{arg}.{i}", py=expr,
                                  expect="bad" if v in PY_NEVER else "any"))
        cases.append(Case(f"python.{fn}.unknown", py=f"iosim.{fn}({base}, no_such_flag=1)"))
        cases.append(Case(f"python.{fn}.positional", py=f"iosim.{fn}(1)"))
    for label, expr in (
            ("kernel_dict_bad", "iosim.run(seq=128, kernel={'dataflow': 5})"),
            ("kernel_dict_deep", "iosim.run(seq=128, kernel={'a': [[[[[[]]]]]]})"),
            ("kernel_dict_a100", "iosim.run(seq=128, profile='a100-sxm4-80gb', "
                                 "kernel={'dataflow': {'forward': 'query_stationary'}, "
                                 "'mechanisms': {'mma': 'wgmma_rs', 'load': 'tma'}})"),
            ("flash3_a100", "iosim.run(seq=128, profile='a100-sxm4-80gb', algo='flash3')"),
            ("layer_cluster_a100", "iosim.layer(model='llama-3-8b', phase='decode', seq=128, "
                                   "profile='a100-sxm4-80gb', gemm_cluster_m=2)"),
            ("layer_bk", "iosim.layer(model='llama-3-8b', seq=128, gemm_bk=1024)"),
            ("layer_model_file", "iosim.layer(model=fx + '/sweep.json', seq=128)"),
            ("validate_missing", "iosim.validate(fx + '/nope.json')"),
            ("validate_sweep", "iosim.validate(fx + '/sweep.json')"),
            ("validate_csv", "iosim.validate(fx + '/ncu.csv')"),
            ("validate_bad", "iosim.validate(fx + '/measured_bad.json')"),
            ("validate_none", "iosim.validate(None)"),
            ("validate_profile", "iosim.validate(fx + '/measured.json', profile='nope')"),
            ("validate_profile_int", "iosim.validate(fx + '/measured.json', profile=5)"),
            ("validate_devzero", "iosim.validate('/dev/zero')"),
            ("kv_trace_bad", "iosim.kvcache(layers=2, kv_heads=2, head_dim=64, "
                             "trace=fx + '/ncu.csv')"),
            ("run_table_bad", "iosim.run(algo='paged', seq=1, seq_kv=40, batch=2, heads=2, "
                              "head_dim=32, block_table=fx + '/trace.csv')"),
            ("run_pattern_bad", "iosim.run(algo='block-sparse', seq=512, "
                                "pattern='file:' + fx + '/trace.csv')"),
            ("sweep_progress", "iosim.sweep(seq=[128], progress=print)"),
            ("sweep_empty_list", "iosim.sweep(seq=[])"),
            ("sweep_set_nested", "iosim.sweep(seq=128, set=[[1]])"),
            ("sweep_dataframe_bad", "iosim.sweep(seq=128, jobs=1, dataframe='x')"),
            ("tune_tie_nan", "iosim.tune(seq=256, tie_band=float('nan'))"),
            ("tune_empty_space", "iosim.tune(seq=256, block_q=[], block_kv=[])"),
            ("profiles_arg", "iosim.profiles(1)")):
        # each is nonsense or asks for what the GPU lacks, but an empty list of values
        cases.append(Case(f"python.misc.{label}", py=expr,
                          expect="any" if label in ("sweep_empty_list", "tune_empty_space")
                          else "bad"))


PY_RUNNER = r"""
import json, sys, signal
sys.path.insert(0, sys.argv[1])
fx = sys.argv[2]
import iosim
for line in sys.stdin:
    cid, expr = json.loads(line)
    try:
        eval(expr, {"iosim": iosim, "fx": fx})
        res = ["ok", "", ""]
    except (iosim.ConfigError, ValueError, TypeError) as e:
        res = ["error", type(e).__name__, str(e)[:2000]]
    except BaseException as e:
        res = ["other", type(e).__name__, str(e)[:2000]]
    print(json.dumps([cid] + res), flush=True)
"""


# ----------------------------------------------------------------------------- running

def limit_child():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    os.setsid()


def snapshot(folder):
    out = {}
    for name in os.listdir(folder):
        p = os.path.join(folder, name)
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode):  # a FIFO (never opened: it would block), folder, link
            out[name] = ("mode", stat.S_IFMT(st.st_mode), os.readlink(p) if os.path.islink(p)
                         else None)
            continue
        try:
            with open(p, "rb") as f:
                out[name] = f.read()
        except OSError:
            out[name] = None
    return out


def run_cli(case, binary, root, fx, timeout):
    cdir = os.path.join(root, case.id.replace("/", "_")[:150])
    os.makedirs(cdir)
    for name, data in case.files.items():
        with open(os.path.join(cdir, name), "wb") as f:
            f.write(data)
    if case.setup:
        kind, name = case.setup
        p = os.path.join(cdir, name)
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dir":
            os.mkdir(p)
        elif kind == "loop":
            os.symlink(name, p)
        else:
            with open(p, "wb") as f:
                f.write(SENTINEL)
    for name in case.outputs:
        with open(os.path.join(cdir, name), "wb") as f:
            f.write(SENTINEL)
    before = snapshot(cdir)
    argv = [a.replace("{fx}", fx) for a in case.argv]
    t0 = time.monotonic()
    p = subprocess.Popen([binary] + argv, cwd=cdir, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit_child)
    hung = False
    try:
        out, err = p.communicate(timeout=case.timeout or timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, 9)
        out, err = p.communicate()
    wall = time.monotonic() - t0
    after = snapshot(cdir)
    shutil.rmtree(cdir, ignore_errors=True)
    err = err.decode("utf-8", "replace")
    rc = p.returncode
    found = []
    if hung:
        found.append("hang")
    elif rc < 0 or rc > 128:
        found.append("crash")
    text = err + out.decode("utf-8", "replace")[-4000:] if rc != 0 else err
    stopped = rc == 3 and err.startswith("iosim: stopped")  # --max-seconds ran out
    if not hung and rc not in (0, 2) and not stopped and "crash" not in found:
        found.append("internal")
    elif rc == 2:
        first = next((ln for ln in err.splitlines() if ln.strip()), "")
        if not first.startswith("iosim") or INTERNAL_TEXT.search(err):
            found.append("internal")
    elif INTERNAL_TEXT.search(err) and "crash" not in found:
        found.append("internal")
    if rc == 2 and case.names and not any(n in err for n in case.names):
        found.append("misleading")
    if rc == 0 and case.expect == "bad":
        found.append("silent")
    if rc != 0 and not hung:
        changed = [n for n in after if n not in before or after[n] != before[n]]
        gone = [n for n in before if n not in after]
        if changed or gone:
            found.append("destructive")
    del text
    return dict(id=case.id, argv=argv, rc=rc, wall=round(wall, 2), found=found,
                msg=next((ln for ln in err.splitlines() if ln.strip()), "")[:300])


def run_python_batch(batch, pypath, fx, timeout):
    """Runs the Python cases of batch in one interpreter; a case that kills or hangs it is run
    again alone to find it."""
    exprs = []
    for c in batch:
        expr = c.py
        for ext, data in c.files.items():  # Python cases with a file: F is its path
            path = os.path.join(fx + "_py", re.sub(r"[^\w.+-]", "_", c.id) + ext)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            expr = expr.replace("F", repr(path))
        exprs.append(expr)
    lines = "".join(json.dumps([c.id, e]) + "\n" for c, e in zip(batch, exprs))
    p = subprocess.Popen([sys.executable, "-c", PY_RUNNER, pypath, fx], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit_child,
                         cwd=tempfile.gettempdir())
    hung = False
    try:
        out, err = p.communicate(lines.encode(), timeout=timeout * max(1, len(batch)) / 4 + timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, 9)
        out, err = p.communicate()
    done = {}
    for ln in out.decode("utf-8", "replace").splitlines():
        try:
            cid, kind, typ, msg = json.loads(ln)
            done[cid] = (kind, typ, msg)
        except ValueError:
            pass
    results = []
    missing = [c for c in batch if c.id not in done]
    if missing and len(batch) > 1:
        for c in missing:
            results += run_python_batch([c], pypath, fx, timeout)
    elif missing:
        c = missing[0]
        rc = p.returncode
        found = ["hang"] if hung else ["crash"] if rc < 0 or rc > 128 else ["internal"]
        results.append(dict(id=c.id, argv=c.py, rc=rc, wall=0, found=found,
                            msg=err.decode("utf-8", "replace").strip().splitlines()[-1:] or ""))
    for c in batch:
        if c.id not in done:
            continue
        kind, typ, msg = done[c.id]
        found = []
        if kind == "other" or (kind == "error" and INTERNAL_TEXT.search(msg)):
            found.append("internal")
        if kind == "error" and not msg.strip():
            found.append("internal")
        if kind == "ok" and c.expect == "bad":
            found.append("silent")
        results.append(dict(id=c.id, argv=c.py, rc=0 if kind == "ok" else 2, wall=0, found=found,
                            msg=(f"{typ}: {msg}" if typ else "")[:300]))
    return results


def all_cases(texts, seed):
    rng = random.Random(seed)
    cases = []
    gen_flags(cases)
    gen_combos(cases)
    gen_outputs(cases)
    gen_files(cases, texts, rng)
    gen_python(cases)
    seen = set()
    for c in cases:  # ids are unique
        while c.id in seen:
            c.id += "+"
        seen.add(c.id)
    return cases


# A fixed, small subset for CI: one case of each kind of input that once failed and a sample.
QUICK = [
    r"^layer\.num\.--gemm-bk\.(13|6)$", r"^layer\.range\.--gemm-bk\.4096$",
    r"^layer\.a100\.--gemm-cluster-m_2$", r"^run\.a100\.--algo_flash3$",
    r"^run\.a100\.--kernel_flash3$", r"^run\.num\.--seq\.(13|16)$", r"^kvcache\.num\.--requests\.13$",
    r"^kvcache\.combo\.--arrivals_poisson:1e-300$", r"^file\.ncu\.(trunc50|dropline0|num3)$",
    r"^file\.profile\.(quote|trunc50|num1)$", r"^file\.kernel\.(quote|num2)$",
    r"^file\.model\.(quote|num4|junk)$", r"^file\.measured\.(num15|trunc50)$",
    r"^file\.sweepjson\.(num16|trunc33)$", r"^file\.sweepcsv\.(ragged|trunc66)$",
    r"^file\.blocktable\.num(0|6)$", r"^file\.trace\.(num6|junk)$", r"^file\.pattern\.num0$",
    r"^run\.out\.late\.--html\.html$", r"^report\.out\.late\.--md\.md$", r"^same\.",
    r"^sweep\.list\.--seq\.(11|12)$", r"^tune\.list\.--block-q\.(6|13)$",
    r"^validate\.num\.--seq\.13$", r"^explain\.num\.--step\.13$",
    r"^validate\.num\.--batch\.14$", r"^run\.num\.--block-q\.14$",
    r"^kvcache\.float\.--kv-budget-bytes\.2$", r"^layer\.num\.--gemm-split-k\.2$",
    r"^layer\.list_late\.--batch$", r"^report\.word\.--chartjs\.(1|2)$",
    r"^python\.misc\.sweep_dataframe_bad$", r"^python\.tune\.top\.2$", r"^python\.sweep\.set\.0$", r"^python\.file\.(model\.quote|measured\.trunc50)$",
    r"^layer\.outpath\.--html\.fifo$", r"^validate\.outpath\.--json\.(fifo|input)$", r"^python\.run\.seq\.(5|7)$", r"^python\.layer\.gemm_bk\.5$",
    r"^python\.misc\.(flash3_a100|layer_cluster_a100|validate_bad|kernel_dict_a100|validate_sweep)$",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--python-path", default="", help="a folder holding the built iosim package")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--seed", type=int, default=50)
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true", help="the small subset CI runs")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json", default="", help="write every outcome here")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    root = tempfile.mkdtemp(prefix="iosim-probe50-")
    try:
        fx = os.path.join(root, "fx")
        texts = make_fixtures(fx, binary, a.repo)
        cases = all_cases(texts, a.seed)
        if a.quick:
            pat = re.compile("|".join(QUICK))
            cases = [c for c in cases if pat.search(c.id) and (c.py is None or a.python_path)]
        if a.only:
            cases = [c for c in cases if re.search(a.only, c.id)]
        if a.python_path and not glob.glob(os.path.join(a.python_path, "iosim", "_iosim*")):
            print(f"probe: no built iosim package in {a.python_path}: the Python cases are "
                  "left out", file=sys.stderr)
            a.python_path = ""
        if not a.python_path:
            cases = [c for c in cases if c.py is None]
        if a.list:
            for c in cases:
                print(c.id, shlex.join(c.argv) if c.argv else c.py)
            print(f"{len(cases)} cases", file=sys.stderr)
            return 0
        fx_before = snapshot(fx)
        cli = [c for c in cases if c.py is None]
        py = [c for c in cases if c.py is not None]
        t0 = time.monotonic()
        results = []
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            futs = [ex.submit(run_cli, c, binary, root, fx, a.timeout) for c in cli]
            batches = [py[i:i + 40] for i in range(0, len(py), 40)]
            futs += [ex.submit(run_python_batch, b, os.path.abspath(a.python_path), fx,
                               a.timeout) for b in batches]
            for f in cf.as_completed(futs):
                r = f.result()
                for one in (r if isinstance(r, list) else [r]):
                    results.append(one)
                    if a.v or one["found"]:
                        print(f"{','.join(one['found']) or 'ok':12} rc={one['rc']} "
                              f"{one['id']}: {one['msg']}", flush=True)
        if snapshot(fx) != fx_before:
            results.append(dict(id="fixtures", argv=[], rc=0, wall=0, found=["destructive"],
                                msg="a fixture file changed"))
        results.sort(key=lambda r: r["id"])
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        counts = {k: sum(k in r["found"] for r in results) for k in CLASSES}
        accepted = sum(r["rc"] == 0 for r in results)
        print(f"probe: {len(results)} inputs ({len(cli)} CLI, {len(py)} Python) in "
              f"{time.monotonic() - t0:.0f} s: {accepted} ran, {len(results) - accepted} refused; "
              f"findings: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        return 1 if any(counts.values()) else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
