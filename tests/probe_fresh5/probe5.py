#!/usr/bin/env python3
"""Issue #50's fifth probe: what the fourth (tests/probe_fresh4/) did not try.

The fourth probe's flag lists were written by hand; this one reads every subcommand's flags from
`iosim --help` and `iosim CMD --help` (so a flag added since, and the `models` subcommand, are
covered) and gives each numeric flag the number spellings the fourth did not: '1,000', leading
and trailing white space, a Unicode minus, '+-5', '5.0' and '1e3' for integers, '1e309', '-0',
denormals, 'infinity', and list/range syntax for the list flags. Beyond flags:

  help     every subcommand's --help and -h, alone, after good and bad flags
  flags    unknown and mistyped flags on every subcommand: an em dash, '--seq=', '-seq', case
  yaml     profile, kernel and model files: anchors and aliases the text check does not see (an
           alias bomb behind an apostrophe), merge keys, escapes (\\0, \\x00, \\u202e), wrong
           types (.inf, 0x10, 1_000, a list, a map), markup and newlines in names
  json     sweep, measured and inline kernel JSON: \\u0000, lone surrogates, 1e400, 2**64, -0,
           nested duplicate keys, comments, NaN literals, trailing commas
  fs       every input flag (and IOSIM_PROFILE_DIR, IOSIM_MODEL_DIR, IOSIM_CHARTJS) given an empty
           file, a folder, a file read through a path with a trailing '/', a name past NAME_MAX,
           /proc files (size 0), and, run as user 'nobody', an unreadable file and a file in an
           unsearchable folder
  out      every output flag: a missing folder, a read-only folder and a read-only file (as
           'nobody'), a path through a file, a name past NAME_MAX, a user's file with the name
           of the temporary file (a symbolic link to a file that is not ours), a user's file at
           OUT.partial

Every input runs with a 20 s limit (SIGTERM, then SIGKILL 5 s later) under `ulimit -v` 4 GiB and
is classified:

  OK           exit 0 on good input, or exit 2 with a first line starting "iosim" on bad input
  CRASH        a signal, an exit code not 0/2 (3 is iosim's internal error or a stop),
               sanitizer or abort text
  INTERNAL     library or runtime text in the message (std::, what(), yaml-cpp, filesystem
               error, ...), or a refusal whose first line does not start "iosim"
  HANG         no exit within the limit
  DESTRUCTIVE  a file that is not the command's output changed, or an output left after failure
  SILENT       an input known to be bad accepted (exit 0)
  MISLEADING   a refusal of one bad flag value that names neither that flag nor its value, or a
               write failure that gives no cause

Usage: python3 tests/probe_fresh5/probe5.py --bin build/iosim [--jobs 2] [--only GROUP]
       [--out results.jsonl]      (run as root for the 'nobody' cases; they are skipped otherwise)
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

TIMEOUT = 20.0
MEM_BYTES = 4 << 30
LIB_TEXT = re.compile(
    r"std::|json\.exception|basic_string|terminate called|what\(\)|yaml-cpp|YAML::|bad_alloc|"
    r"stoi|stod|stoul|stoll|out_of_range|invalid_argument|Assertion|AddressSanitizer|"
    r"runtime error:|nlohmann|CLI::|Segmentation|core dumped|filesystem error|__cxa|__gnu|"
    r"internal error|bad conversion|bad file")
NOBODY = 65534

# Base commands: small and fast; a flag under test replaces its value in them or is appended.
BASE = {
    "run": ["--seq", "128"],
    "sweep": ["--seq", "128", "--jobs", "1"],
    "tune": ["--seq", "128", "--block-q", "64", "--block-kv", "64", "--stages", "2",
             "--threads", "128", "--jobs", "1"],
    "explain": ["--seq", "16", "--head-dim", "8"],
    "layer": ["--model", "llama-3-8b", "--seq", "128"],
    "kvcache": ["--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--requests", "20"],
    "demo": ["--seq", "128", "--batch", "1", "--heads", "1"],
    "validate": ["--ncu", "@W/ncu.csv", "--kernel", "flash2", "--batch", "4", "--heads", "16",
                 "--seq", "256", "--head-dim", "128", "--time-us", "1616.6"],
    "report": ["@W/s.json"],
    "profiles": [],
    "kernels": [],
    "models": [],
}
# Flags whose value any number is fine for, or whose bad spellings cannot be told: skipped.
SKIP_NUM = {"--seed"}  # (any integer >= 0 is a seed)

# Spellings no numeric flag takes.
BAD_NUM = ["1,000", " 5", "5 ", "\t5", "5\n", "\u22125", "+-5", "++5", "5.0.0", "0x1A",
           "0b101", "0o17", "1_000", "five", "5e", ".", "-", "+", "1e3x", "\u0665",
           "５", "5\u00a0", "nan", "-nan", "NaN"]
BAD_INT_ONLY = ["5.0", "1e3", "5.", ".5", "1e309", "inf", "infinity", "-inf"]
EDGE_INT = ["0", "-0", "-1", "1", "2147483648", "4294967296", "9223372036854775807",
            "-9223372036854775808", "18446744073709551615", "99999999999999999999999",
            "+5", "007"]
EDGE_FLOAT = ["0", "-0", "-1", "1e309", "-1e309", "inf", "Infinity", "-inf", "5e-324",
              "1e-320", "1.7976931348623157e308", "+5", "1e-9", "4e9"]
BAD_LIST = ["1,,2", ",1", "1,", "1, 2", "1:8:x1", "1:8:+0", "8:1:+1", "1:8:x-2", "1:8:x0.5",
            "1:8:+-1", "1:8", "1:8:", "::", "1:8:*2", "1:1e9:+1", "1:9223372036854775807:x2",
            "1;2", "[1,2]"]


class Case:
    def __init__(self, group, argv, bad, flag=None, value=None, **kw):
        self.group = group
        self.argv = argv
        self.bad = bad      # True: must be refused; False: must succeed; None: either
        self.flag = flag
        self.value = value
        self.env = kw.get("env")
        self.watch = kw.get("watch", [])       # files whose bytes must not change
        self.outputs = kw.get("outputs", [])   # outputs that must not exist after a failure
        self.nobody = kw.get("nobody", False)  # run as uid 65534
        self.setup = kw.get("setup")           # shell run (as root) before, in the work folder
        self.exec_via = kw.get("exec_via")     # bash -c prefix (the command is exec'ed)
        self.cause = kw.get("cause")           # a refusal must say this (e.g. the errno text)
        self.note = kw.get("note", "")
        self.user_tmp = kw.get("user_tmp")    # a user's file iosim must leave: OUT.tmp-<pid>
        self.id = None


# ---------------------------------------------------------------------------------------------
def help_text(iosim, args):
    r = subprocess.run([iosim] + args, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def subcommands(iosim):
    _, out, _ = help_text(iosim, ["--help"])
    subs, on = [], False
    for line in out.splitlines():
        if line.startswith("Subcommands:"):
            on = True
            continue
        m = re.match(r"^  (\S+)\s", line)
        if on and m:
            subs.append(m.group(1))
    # A subcommand the top-level help does not list (kept in iosim's table): still probed.
    for s in BASE:
        if s not in subs and help_text(iosim, [s, "--help"])[0] == 0:
            subs.append(s)
    return subs


def flags_of(iosim, sub):
    """{flag: type} from `iosim SUB --help` (type: INT, UINT, FLOAT, TEXT, INT[,INT...], '' for a
    switch)."""
    _, out, _ = help_text(iosim, [sub, "--help"])
    flags = {}
    for line in out.splitlines():
        m = re.match(r"^  (?:-\w,)?(--[\w-]+)(?: ([A-Z]+(?:\[,INT\.\.\.\])?)(?::\{[^}]*\})?)?", line)
        if m and m.group(1) != "--help":
            flags[m.group(1)] = m.group(2) or ""
    return flags


def with_flag(base, flag, value):
    b = list(base)
    if flag in b:
        b[b.index(flag) + 1] = value
        return b
    return b + [flag, value]


# ---------------------------------------------------------------------------------------------
def make_files(W, iosim):
    os.makedirs(W, exist_ok=True)
    os.chmod(W, 0o777)

    def put(name, text, mode=None):
        p = os.path.join(W, name)
        with open(p, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
        if mode is not None:
            os.chmod(p, mode)
        return p

    def out_of(args):
        return subprocess.run([iosim] + args, capture_output=True, text=True, timeout=120).stdout
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    base = {}
    base["profile.yaml"] = out_of(["profiles", "--show", "h100-sxm5-80gb"])
    base["kernel.yaml"] = out_of(["kernels", "--show", "flash2"])
    base["model.yaml"] = open(os.path.join(repo, "models", "llama-3-8b.yaml")).read()
    base["meas.json"] = open(os.path.join(repo, "tests", "data", "measurements_small.json")).read()
    base["ncu.csv"] = open(os.path.join(repo, "tests", "data", "kernels", "ncu_wg1_h100.csv")).read()
    base["pattern.txt"] = "1 0\n1 1\n"
    base["table.txt"] = "0 1 2 3\n4 5 6 7\n"
    base["trace.csv"] = "arrival,prompt_len,output_len\n" + "".join(
        f"{i // 4},{32 + i},{16 + i % 7}\n" for i in range(20))
    for name, text in base.items():
        put(name, text, 0o644)
    subprocess.run([iosim, "sweep", "--seq", "128,256", "--out", os.path.join(W, "s.json")],
                   capture_output=True, timeout=120)
    subprocess.run([iosim, "sweep", "--seq", "128,256", "--out", os.path.join(W, "s.csv")],
                   capture_output=True, timeout=120)
    base["s.json"] = open(os.path.join(W, "s.json")).read()
    put("empty", "", 0o644)
    put("secret.yaml", base["profile.yaml"], 0o000)
    os.makedirs(os.path.join(W, "locked"), exist_ok=True)
    put("locked/p.yaml", base["profile.yaml"], 0o644)
    os.chmod(os.path.join(W, "locked"), 0o000)
    os.makedirs(os.path.join(W, "dir.yaml"), exist_ok=True)
    os.makedirs(os.path.join(W, "ro"), exist_ok=True)
    os.chmod(os.path.join(W, "ro"), 0o555)
    put("rofile.html", "user's read-only file\n", 0o444)
    put("user.txt", "a file of the user's\n", 0o666)
    for d in ("pdir_bad", "mdir_bad"):
        os.makedirs(os.path.join(W, d), exist_ok=True)
    put("pdir_bad/h100-sxm5-80gb.yaml", "sm: [\n")
    put("mdir_bad/llama-3-8b.yaml", "layers: {value: x}\n")
    put("chart.js", "/* not chart.js */\n")
    return base, put


def yaml_variants(text):
    """(label, text) broken variants of a YAML input that the fourth probe did not make."""
    v = []
    bomb = ["a0: [it's, &a0 [x,x,x,x,x,x,x,x,x,x]]"]
    for i in range(1, 9):
        bomb.append(f"a{i}: [it's, &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]]")
    v.append(("alias_bomb_apostrophe", text + "\n".join(bomb) + "\n"))
    v.append(("alias_after_apostrophe", text + "zz: [it's, &q 5]\nzy: [it's, *q]\n"))
    v.append(("merge_key", text + "base: {value: 1}\nmerged:\n  <<: {value: 2}\n"))
    v.append(("alias_in_single_quoted_line", text + "zz: ['a', &q 1]\nzy: ['b', *q]\n"))
    v.append(("cr_line_breaks", text.replace("\n", "\r")))
    def named(value):  # the file's top-level name
        return re.sub(r"^name: .*$", lambda m: "name: " + value, text, count=1, flags=re.M)
    v.append(("nul_escape", named(r'"a\0b"')))
    v.append(("x00_escape", named(r'"a\x00b"')))
    v.append(("bidi_name", named(r'"a\u202eb"')))
    v.append(("markup_name", named('"</script><b>x</b>"')))
    v.append(("newline_name", named(r'"a\nb,c"')))
    v.append(("long_name", named("n" * 100000)))
    v.append(("only_comments", "# nothing\n# at all\n"))
    v.append(("only_doc_markers", "---\n...\n"))
    v.append(("top_list", "- a\n- b\n"))
    v.append(("top_scalar", "hello\n"))
    v.append(("null_doc", "~\n"))
    nums = list(re.finditer(r"(?<=value: )\d+(\.\d+)?", text)) or \
        list(re.finditer(r"(?<=: )\d+(\.\d+)?(?=\s|$|,|\})", text))
    for k, repl in enumerate([".inf", "-.inf", ".NaN", "0x10", "0o10", "1_000", "[1]", "{a: 1}",
                              "true", "''", "1e309", "-0", "\"12\"", "12 # c", "1e-400",
                              "9223372036854775808", "1:2"]):
        if nums:
            m = nums[(k * 7) % len(nums)]
            v.append((f"num:{repl}", text[:m.start()] + repl + text[m.end():]))
    return v


def json_variants(text):
    v = []
    v.append(("u0000", text.replace('"fp16"', '"fp\\u000016"', 1)))
    v.append(("lone_surrogate", text.replace('"fp16"', '"fp\\ud800"', 1)))
    v.append(("u0000_key", text.replace('{', '{"a\\u0000": 1, ', 1)))
    v.append(("comment", "// c\n" + text))
    v.append(("trailing_comma", re.sub(r"\}\s*$", ",}", text.rstrip()) + "\n"))
    v.append(("nan_literal", re.sub(r"(\"seq\": )\d+", r"\1NaN", text, count=1)))
    v.append(("num_1e400", re.sub(r"(\"seq\": )\d+", r"\g<1>1e400", text, count=1)))
    v.append(("num_2p64", re.sub(r"(\"seq\": )\d+", r"\g<1>18446744073709551616", text, count=1)))
    v.append(("num_minus0", re.sub(r"(\"seq\": )\d+", r"\g<1>-0", text, count=1)))
    v.append(("num_float", re.sub(r"(\"seq\": )\d+", r"\g<1>128.0", text, count=1)))
    v.append(("dup_nested", re.sub(r"(\"seq\": \d+)", r"\1, \1", text, count=1)))
    v.append(("top_null", "null\n"))
    v.append(("top_string", "\"iosim\"\n"))
    v.append(("deep_10k", "[" * 10000 + "]" * 10000))
    v.append(("ws_only", " \n\t\n"))
    v.append(("bom", "\ufeff" + text))
    return v


# ---------------------------------------------------------------------------------------------
def cases(iosim, W, base):
    out = []
    add = out.append
    subs = subcommands(iosim)
    flags = {s: flags_of(iosim, s) for s in subs}
    b = {s: [a.replace("@W", W) for a in BASE.get(s, [])] for s in subs}
    stoppable = {s for s in subs if "--max-seconds" in flags[s]}

    def budget(sub, argv):
        return argv + (["--max-seconds", "8"] if sub in stoppable and "--max-seconds" not in argv
                       else [])

    # help
    for s in subs:
        for extra in (["--help"], ["-h"], b[s] + ["--help"], ["--help"] + b[s],
                      ["--seq", "abc", "--help"], ["--nosuch", "-h"]):
            add(Case("help", [s] + extra, None if "abc" in extra else False, note="help"))
    for a in (["help"], ["--help", "run"], ["-h", "-h"], ["--version", "--help"]):
        add(Case("help", a, None, note="help"))
    # unknown and mistyped flags
    for s in subs:
        for extra in (["\u2014seq", "5"], ["--seq="], ["-seq", "5"], ["--SEQ", "5"],
                      ["---seq", "5"], ["--seq=5=6"], ["--\u00adseq", "5"], ["--se", "5"],
                      ["--nosuch=1"], ["-Z"], ["--"], ["--", "--seq", "5"]):
            add(Case("flags", [s] + b[s] + extra, None if extra == ["--"] else True,
                     flag=extra[0], value=extra[-1]))
    # numbers
    for s in subs:
        for flag, typ in flags[s].items():
            if flag in SKIP_NUM or typ not in ("INT", "UINT", "FLOAT", "INT[,INT...]") and not (
                    s == "sweep" and typ == "TEXT" and flag_is_numeric_list(flag)):
                continue
            is_list = typ == "INT[,INT...]" or (s == "sweep" and typ == "TEXT")
            is_int = typ in ("INT", "UINT", "INT[,INT...]") or (
                is_list and flag not in ("--sm-clock-mhz", "--dropout"))
            bad = BAD_NUM + (BAD_INT_ONLY if is_int else [])
            if is_list:
                bad = [x for x in bad if x != "1,000"] + BAD_LIST
            for v in bad:
                add(Case("num", budget(s, [s] + with_flag(b[s], flag, v)), True, flag=flag,
                         value=v))
            for v in (EDGE_INT if is_int else EDGE_FLOAT) + (["1,000"] if is_list else []):
                add(Case("num", budget(s, [s] + with_flag(b[s], flag, v)), None, flag=flag,
                         value=v))
            add(Case("num", budget(s, [s] + b[s] + [flag + "="]), True, flag=flag, value=""))
    # YAML files
    readers = {
        "profile.yaml": [["run", "--profile", "@", "--seq", "128"],
                         ["kvcache", "--profile", "@"] + BASE["kvcache"]],
        "kernel.yaml": [["run", "--kernel", "@", "--seq", "128"],
                        ["explain", "--kernel", "@"] + BASE["explain"]],
        "model.yaml": [["layer", "--model", "@", "--seq", "128"]],
    }
    mut = os.path.join(W, "mut")
    os.makedirs(mut, exist_ok=True)
    n = 0
    for name, cmds in readers.items():
        for label, text in yaml_variants(base[name]):
            n += 1
            p = os.path.join(mut, f"{n}_{name}")
            with open(p, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            for c in cmds:
                bad = None if label.startswith(("bidi", "markup", "long_name", "num:-0")) else True
                argv = [a.replace("@", p) if a == "@" else a for a in c]
                add(Case("yaml", budget(c[0], argv), bad, value=label, watch=[p],
                         note=f"{name} {label}"))
                if label in ("markup_name", "newline_name", "bidi_name"):
                    o = os.path.join(mut, f"{n}_out.html")
                    add(Case("yaml", budget(c[0], argv + ["--html", o]) if c[0] in (
                        "run", "explain") else argv, None, value=label, note=f"{name} {label} html"))
    # JSON inputs
    jreaders = {
        "s.json": [["report", "@"]],
        "meas.json": [["validate", "@"], ["report", os.path.join(W, "s.json"), "--validation",
                                          "@"]],
    }
    for name, cmds in jreaders.items():
        for label, text in json_variants(base[name]):
            n += 1
            p = os.path.join(mut, f"{n}_{name}")
            with open(p, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
                f.write(text)
            for c in cmds:
                bad = None if label in ("bom", "num_float", "num_minus0") else True
                argv = [a.replace("@", p) if a == "@" else a for a in c]
                add(Case("json", argv, bad, value=label, watch=[p], note=f"{name} {label}"))
    k = '{"name":"k","dataflow":{"forward":"query_stationary"}}'
    for label, kj in (("inline_u0000", k.replace('"k"', '"k\\u0000"')),
                      ("inline_surrogate", k.replace('"k"', '"\\udc00"')),
                      ("inline_dup", k.replace('{"name":"k",', '{"name":"k","name":"j",')),
                      ("inline_dup_nested", k.replace('"forward":"query_stationary"',
                                                      '"forward":"query_stationary",'
                                                      '"forward":"kv_stationary"')),
                      ("inline_comment", "/*c*/" + k), ("inline_nan", k[:-1] + ',"tiles":NaN}'),
                      ("inline_deep", "[" * 5000 + "]" * 5000),
                      ("inline_markup", k.replace('"k"', '"</script><script>x()</script>"'))):
        add(Case("json", ["run", "--kernel", kj, "--seq", "128"],
                 None if label == "inline_markup" else True, value=label, note=label))
    # input paths
    inputs = [
        ("run", ["--profile"], ["--seq", "128"]),
        ("run", ["--kernel"], ["--seq", "128"]),
        ("run", ["--pattern", "file:"], ["--algo", "block-sparse", "--seq", "256"]),
        ("run", ["--block-table"], ["--algo", "paged", "--seq", "1", "--seq-kv", "64"]),
        ("kvcache", ["--trace"], BASE["kvcache"][:6]),
        ("layer", ["--model"], ["--seq", "128"]),
        ("validate", [""], []),
        ("validate", ["--ncu"], b["validate"][2:]),
        ("report", [""], []),
        ("report", ["--validation"], [os.path.join(W, "s.json")]),
        ("report", ["--chartjs"], [os.path.join(W, "s.json"), "--html", "@O"]),
    ]
    odir = os.path.join(W, "outs")
    os.makedirs(odir, exist_ok=True)
    os.chmod(odir, 0o777)
    paths = {
        "empty": os.path.join(W, "empty"),
        "folder": os.path.join(W, "dir.yaml"),
        "trailing_slash": os.path.join(W, "profile.yaml") + "/",
        "through_file": os.path.join(W, "profile.yaml", "x.yaml"),
        "name_max": os.path.join(W, "n" * 300 + ".yaml"),
        "path_max": os.path.join(W, *(["d" * 200] * 25)),
        "proc_status": "/proc/self/status",
        "proc_mem": "/proc/self/mem",
        "dev_stdin": "/dev/stdin",
        "unreadable": os.path.join(W, "secret.yaml"),
        "in_locked": os.path.join(W, "locked", "p.yaml"),
        "newline_name": os.path.join(W, "a\nb.yaml"),
    }
    k_id = 0
    for sub, flag, rest in inputs:
        for label, p in paths.items():
            k_id += 1
            nob = label in ("unreadable", "in_locked")
            if flag == [""]:
                argv = [sub, p] + rest
            elif flag == ["--pattern", "file:"]:
                argv = [sub, "--pattern", "file:" + p] + rest
            else:
                argv = [sub, flag[0], p] + rest
            o = os.path.join(odir, f"in{k_id}.html")
            argv = [a.replace("@O", o) for a in argv]
            add(Case("fs", argv, True, flag=flag[0] or "(input)", value=label, nobody=nob,
                     outputs=[o], note=f"input {label}"))
    for env, label, val, argv in (
            ("IOSIM_PROFILE_DIR", "file", os.path.join(W, "empty"), ["run", "--seq", "128"]),
            ("IOSIM_PROFILE_DIR", "missing", os.path.join(W, "nope"), ["run", "--seq", "128"]),
            ("IOSIM_PROFILE_DIR", "bad", os.path.join(W, "pdir_bad"), ["run", "--seq", "128"]),
            ("IOSIM_PROFILE_DIR", "locked", os.path.join(W, "locked"), ["profiles"]),
            ("IOSIM_MODEL_DIR", "file", os.path.join(W, "empty"), ["models"]),
            ("IOSIM_MODEL_DIR", "bad", os.path.join(W, "mdir_bad"), ["layer"] + BASE["layer"]),
            ("IOSIM_MODEL_DIR", "locked", os.path.join(W, "locked"), ["models"]),
            ("IOSIM_CHARTJS", "folder", os.path.join(W, "dir.yaml"),
             ["report", os.path.join(W, "s.json"), "--html", os.path.join(odir, "cj1.html")]),
            ("IOSIM_CHARTJS", "empty", os.path.join(W, "empty"),
             ["report", os.path.join(W, "s.json"), "--html", os.path.join(odir, "cj2.html")]),
            ("IOSIM_CHARTJS", "unreadable", os.path.join(W, "secret.yaml"),
             ["report", os.path.join(W, "s.json"), "--html", os.path.join(odir, "cj3.html")])):
        add(Case("fs", argv, None if label == "empty" else True, flag=env, value=label,
                 env={env: val}, nobody=label in ("locked", "unreadable"),
                 note=f"env {env}={label}"))
    # outputs
    outs = [
        ("run", "--html", ["--seq", "128"]),
        ("run", "--svg", ["--seq", "128"]),
        ("sweep", "--out", ["--seq", "128"]),
        ("report", "--md", [os.path.join(W, "s.json")]),
        ("report", "--html", [os.path.join(W, "s.json")]),
        ("explain", "--html", BASE["explain"]),
        ("validate", "--json", [os.path.join(W, "meas.json")]),
        ("tune", "--html", b["tune"]),
        ("layer", "--html", BASE["layer"]),
    ]
    for sub, flag, rest in outs:
        k_id += 1
        tag = f"o{k_id}"
        ext = ".json" if flag in ("--out", "--json") else ".md" if flag == "--md" else ".html"
        o = os.path.join(odir, tag + ext)
        u = os.path.join(W, "user.txt")
        # missing folder, path through a file, a name past NAME_MAX
        for label, p in (("missing_folder", os.path.join(odir, "nodir", "x" + ext)),
                         ("through_file", os.path.join(u, "x" + ext)),
                         ("name_max", os.path.join(odir, "n" * 260 + ext)),
                         ("tmp_name_max", os.path.join(odir, "n" * (255 - len(ext)) + ext)),
                         ("newline_name", os.path.join(odir, "a\nb" + ext))):
            add(Case("out", [sub] + rest + [flag, p], None if label in ("newline_name",
                                                                      "tmp_name_max")
                     else True, flag=flag, value=label, watch=[u], outputs=[p],
                     note=f"out {label}"))
        # as nobody: a read-only folder, a read-only file
        add(Case("out", [sub] + rest + [flag, os.path.join(W, "ro", "x" + ext)], True, flag=flag,
                 value="ro_folder", nobody=True, cause="Permission denied",
                 outputs=[os.path.join(W, "ro", "x" + ext)], note="out read-only folder"))
        rf = os.path.join(odir, tag + "_ro" + ext)
        add(Case("out", [sub] + rest + [flag, rf], True, flag=flag, value="ro_file", nobody=True,
                 watch=[rf], setup=f"printf 'read-only\\n' > {shq(rf)}; chmod 444 {shq(rf)}",
                 note="out over a read-only file of the user's"))
        # a user's file under the temporary file's name (iosim's pid: the command is exec'ed)
        victim = os.path.join(odir, tag + "_victim.txt")
        add(Case("out", [sub] + rest + [flag, o], None, flag=flag, value="tmp_symlink",
                 watch=[victim], setup=f"printf 'precious\\n' > {shq(victim)}",
                 exec_via=f"ln -s {shq(victim)} {shq(o)}.tmp-$$ && ", user_tmp=o + ".tmp-",
                 note="a symbolic link at OUT.tmp-PID to a user's file"))
        vict2 = os.path.join(odir, tag + "_victim2.txt")
        add(Case("out", [sub] + rest + [flag, o + "2"], None, flag=flag, value="tmp_file",
                 user_tmp=o + "2.tmp-", setup=f"printf 'precious\\n' > {shq(vict2)}",
                 exec_via=f"cp {shq(vict2)} {shq(o)}2.tmp-$$ && ",
                 note="a user's file at OUT.tmp-PID"))
    # sweep's journal beside a user's file and links
    jo = os.path.join(odir, "j.json")
    add(Case("out", ["sweep", "--seq", "128", "--out", jo], True, flag="--out", value="partial",
             watch=[jo + ".partial"], setup=f"printf 'mine\\n' > {shq(jo)}.partial",
             note="OUT.partial a user's file"))
    jl = os.path.join(odir, "jl.json")
    uj = os.path.join(odir, "user_journal.txt")
    add(Case("out", ["sweep", "--seq", "128", "--out", jl], None, flag="--out",
             value="partial_link", watch=[uj],
             setup=f"printf 'mine\\n' > {shq(uj)}; ln -sf {shq(uj)} {shq(jl)}.partial",
             note="OUT.partial a link to a user's file"))
    for i, c in enumerate(out):
        c.id = i
    return out


def flag_is_numeric_list(flag):
    return flag in ("--sm-clock-mhz", "--dropout", "--batch", "--heads", "--kv-heads",
                    "--head-dim", "--seq", "--seq-kv", "--block-q", "--block-kv", "--splits",
                    "--page-tokens", "--threads", "--stages", "--backward-block-q",
                    "--backward-block-kv", "--window")


def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------------------------------------
def snapshot(paths):
    snap = {}
    for p in paths:
        if "PID" in p:
            continue
        try:
            with open(p, "rb") as f:
                snap[p] = f.read()
        except OSError:
            snap[p] = None
    return snap


def run_case(c, iosim, W, can_nobody):
    if c.nobody and not can_nobody:
        return {"skipped": True}
    if c.setup:
        subprocess.run(["bash", "-c", c.setup], cwd=W, timeout=30)
    before = snapshot(c.watch)
    env = dict(os.environ)
    if c.env:
        env.update(c.env)
    argv = [iosim] + c.argv
    if c.exec_via:
        argv = ["bash", "-c", c.exec_via + "exec " + " ".join(shq(a) for a in argv)]

    def pre():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (MEM_BYTES, MEM_BYTES))
        if c.nobody:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
    t0 = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         cwd=W, env=env, preexec_fn=pre)
    hang = False
    try:
        so, se = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        hang = True
        os.killpg(p.pid, signal.SIGTERM)
        try:
            so, se = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            so, se = p.communicate()
    after = snapshot(c.watch)
    changed = [q for q in c.watch if before.get(q) != after.get(q)]
    tmp_left, user_tmp_kept = [], None
    if c.user_tmp:
        d, stem = os.path.split(c.user_tmp)
        user_tmp_kept = any(x.startswith(stem) for x in os.listdir(d))
    for q in ([] if c.user_tmp else c.watch + c.outputs):
        d = os.path.dirname(q) or "."
        try:
            tmp_left += [os.path.join(d, x) for x in os.listdir(d)
                         if x.startswith(os.path.basename(q)) and ".tmp-" in x]
        except OSError:
            pass
    left = [q for q in c.outputs if os.path.lexists(q)]
    return {"rc": p.returncode, "stdout": so.decode("utf-8", "replace")[-2000:],
            "stderr": se.decode("utf-8", "replace")[:3000], "wall": time.time() - t0,
            "hang": hang, "changed": changed, "left": left, "tmp_left": tmp_left,
            "user_tmp_kept": user_tmp_kept}


def classify(c, r):
    if r.get("skipped"):
        return "SKIPPED", ""
    rc, err = r["rc"], r["stderr"]
    first = err.strip().splitlines()[0] if err.strip() else ""
    if r["hang"]:
        return "HANG", f"no exit in {TIMEOUT:.0f} s (rc after SIGTERM {rc})"
    stop = rc == 3 and "--max-seconds" in c.argv and re.search(r"stop|budget", err)
    if rc < 0 or rc not in (0, 2) and not stop or re.search(r"Sanitizer|Aborted|core dumped",
                                                              err):
        return "CRASH", f"rc {rc}: {first[:200]}"
    if LIB_TEXT.search(err):
        return "INTERNAL", first[:200]
    if r["changed"]:
        return "DESTRUCTIVE", f"changed: {r['changed']}"
    if r["user_tmp_kept"] is False:
        return "DESTRUCTIVE", f"the user's {c.user_tmp}<pid> is gone"
    if rc != 0 and (r["left"] or r["tmp_left"]):
        return "DESTRUCTIVE", f"left after failure: {r['left'] + r['tmp_left']}"
    if rc == 2 and not first.startswith("iosim"):
        return "INTERNAL", f"first line: {first[:200]}"
    if c.group == "help":
        if rc != 0 and c.bad is False:
            return "MISLEADING", f"--help gave rc {rc}: {first[:200]}"
        return "OK", ""
    if rc == 0 and c.bad is True:
        return "SILENT", "exit 0"
    if rc == 2 and c.bad is False:
        return "MISLEADING", f"good input refused: {first[:200]}"
    if rc == 2 and c.cause and c.cause not in err:
        return "MISLEADING", f"no cause ('{c.cause}'): {first[:200]}"
    if rc == 2 and c.group == "num" and c.flag:
        v = (c.value or "").strip()
        if c.flag not in err and (not v or v not in err):
            return "MISLEADING", f"names neither {c.flag} nor {c.value!r}: {first[:200]}"
    return "OK", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    iosim = os.path.abspath(args.bin)
    W = args.work or tempfile.mkdtemp(prefix="probe5_")
    os.makedirs(W, exist_ok=True)
    os.chmod(W, 0o777)
    can_nobody = os.geteuid() == 0
    base, _ = make_files(W, iosim)
    allc = cases(iosim, W, base)
    if args.only:
        allc = [c for c in allc if c.group in args.only.split(",")]
    t0 = time.time()
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda c: run_case(c, iosim, W, can_nobody), allc))
    counts, findings = {}, []
    lines = []
    for c, r in zip(allc, results):
        cls, why = classify(c, r)
        counts.setdefault(c.group, {}).setdefault(cls, 0)
        counts[c.group][cls] += 1
        if cls not in ("OK", "SKIPPED"):
            findings.append((cls, c, why))
        lines.append(json.dumps({"id": c.id, "group": c.group, "argv": c.argv, "class": cls,
                                 "why": why, "rc": r.get("rc"), "note": c.note,
                                 "nobody": c.nobody, "env": c.env}))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    classes = ["OK", "CRASH", "INTERNAL", "HANG", "DESTRUCTIVE", "SILENT", "MISLEADING",
               "SKIPPED"]
    print(f"{len(allc)} inputs in {time.time() - t0:.0f} s (work folder {W})")
    print("| group | " + " | ".join(classes) + " |")
    print("| --- |" + " ---: |" * len(classes))
    tot = {k: 0 for k in classes}
    for g, cc in counts.items():
        print(f"| {g} | " + " | ".join(str(cc.get(k, 0)) for k in classes) + " |")
        for k in classes:
            tot[k] += cc.get(k, 0)
    print("| all | " + " | ".join(str(tot[k]) for k in classes) + " |")
    for cls, c, why in findings:
        who = "as nobody: " if c.nobody else ""
        env = " ".join(f"{k}={shq(v)}" for k, v in (c.env or {}).items())
        pre = (c.exec_via or "")
        cmd = " ".join(shq(a) if re.search(r"[^-\w./:=,@+]", a) else a for a in c.argv)
        print(f"{cls} #{c.id} [{c.group}] {c.note}: {who}{pre}{env + ' ' if env else ''}iosim "
              f"{cmd}\n    {why}")
    shutil.rmtree(W, ignore_errors=True) if not args.work else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
