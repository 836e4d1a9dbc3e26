"""The CLI inputs of issue #50's third probe: flags, files, outputs, signals, memory caps."""
import random
import re
import signal
import subprocess

from probe3_files import journal_args, mutations

# A small valid invocation of each subcommand, to which one fuzzed flag is added.
BASE = {
    "run": ["--seq", "128", "--heads", "2"],
    "sweep": ["--seq", "128", "--heads", "2", "--jobs", "1"],
    "tune": ["--seq", "128", "--block-q", "64", "--block-kv", "64", "--stages", "2",
             "--threads", "128", "--jobs", "1"],
    "layer": ["--model", "llama-3-8b", "--seq", "128"],
    "kvcache": ["--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--requests", "50"],
    "explain": ["--seq", "16"],
    "validate": ["@measured"],
    "report": ["@sweep_json"],
    "profiles": [],
    "kernels": [],
    "demo": ["--seq", "128", "--batch", "1", "--heads", "1"],
}

INT_BAD = ["abc", "1.5", "nan", "", "0x10", "12abc", "99999999999999999999",
           "-99999999999999999999", "\uff11\uff12", "--", "1e400", "5 6"]
INT_ODD = ["-1", "0", "1e3", "2147483648", "9223372036854775807", " 7", "+5", "3", "65536",
           "1000000"]
FLOAT_BAD = ["abc", "nan", "", "1e400", "1,5", "-nan", "0x1p3q", "--"]
FLOAT_ODD = ["inf", "-inf", "-1", "1e-320", "0", "1e30", "-0"]
TEXT_BAD = ["", "nope", "\u00fcber", "flash2,", ",", "a" * 5000]
LIST_BAD = ["1,,2", "1:10:x1", "1:10:+0", ":", "1:", "abc,2", "1:99999999999:+1",
            "1:9223372036854775807:x2", "0:-5:+1"]
LIST_ODD = ["10:1:+1", "1,1", "64:256:+64", "1:4:x2", "-1,2"]
PATH_FLAGS = {"profile", "kernel", "model", "trace", "block-table", "ncu", "validation",
              "chartjs", "validation-profile"}
OUT_FLAGS = {"html", "svg", "out", "md", "json"}


def parse_help(binary, sub):
    text = subprocess.run([binary, sub, "--help"], capture_output=True, text=True).stdout
    flags = []
    for m in re.finditer(r"^\s+(?:-\w,)?--([a-z0-9-]+)(?:\s+(TEXT|INT|UINT|FLOAT)(\S*))?", text,
                         re.M):
        name, typ, rest = m.group(1), m.group(2) or "FLAG", m.group(3) or ""
        if name == "help":
            continue
        if "[,INT" in rest:
            typ = "LIST"
        flags.append((name, typ))
    return flags


def resolve(args, seeds):
    return [seeds[a[1:]] if a.startswith("@") else a for a in args]


def with_flag(base, flag, value):
    args = list(base)
    if "--" + flag in args:
        i = args.index("--" + flag)
        del args[i:i + 2]
    return args + ["--" + flag, value] if value is not None else args + ["--" + flag]


def flag_cases(binary, seeds, rng, per_flag):
    cases = []
    for sub, base in BASE.items():
        for flag, typ in parse_help(binary, sub):
            values = []
            sweep_list = sub == "sweep" and typ == "TEXT" and flag not in PATH_FLAGS | OUT_FLAGS
            if typ in ("INT", "UINT") or (sweep_list and flag in (
                    "batch", "heads", "kv-heads", "head-dim", "seq", "seq-kv", "block-q",
                    "block-kv", "splits", "page-tokens", "threads", "stages",
                    "backward-block-q", "backward-block-kv")):
                values = [(v, "bad") for v in INT_BAD] + [(v, "any") for v in INT_ODD]
                if sweep_list or typ == "LIST":
                    values += [(v, "bad") for v in LIST_BAD] + [(v, "any") for v in LIST_ODD]
            elif typ == "LIST":
                values = [(v, "bad") for v in INT_BAD + LIST_BAD] + [(v, "any") for v in
                                                                   INT_ODD + LIST_ODD]
            elif typ == "FLOAT" or flag in ("sm-clock-mhz", "dropout"):
                values = [(v, "bad") for v in FLOAT_BAD] + [(v, "any") for v in FLOAT_ODD]
            elif typ == "FLAG":
                values = [(None, "any"), ("=abc", "bad"), ("=1", "any")]
            elif flag in PATH_FLAGS:
                values = [("", "bad"), ("/nonexistent/f.yaml", "bad"), ("/dev/zero", "bad"),
                          ("/", "bad"), ("/etc/passwd", "bad"), ("@fifo", "bad"),
                          ("@loop", "bad"), ("@dir", "bad"), ("@sparse", "bad")]
            elif flag in OUT_FLAGS:
                values = [("", "bad"), ("/", "bad"), ("/nonexistent/d/o.x", "bad"),
                          ("@dir", "bad"), ("@fifo", "bad"), ("/dev/full", "bad")]
            else:
                values = [(v, "bad") for v in TEXT_BAD] + [("FLASH2", "any"), ("1", "any")]
            rng.shuffle(values)
            for value, expect in values[:per_flag]:
                if typ == "FLAG" and value and value.startswith("="):
                    argv = resolve(base, seeds) + ["--" + flag + value]
                else:
                    argv = with_flag(resolve(base, seeds), flag, value)
                argv = [sub] + argv
                files = {}
                for i, a in enumerate(argv):
                    if a in ("@fifo", "@loop", "@dir", "@sparse"):
                        files["x_" + a[1:]] = a[1:]
                        argv[i] = "x_" + a[1:]
                names = ["--" + flag, flag.replace("-", "_"), flag]
                if value and value.strip():
                    names.append(value.strip()[:40])
                for fn in files:
                    names.append(fn)
                cases.append({"kind": "cli", "group": f"flag:{sub}", "argv": argv,
                              "expect": expect, "names": names, "files": files,
                              "max_seconds_given": flag == "max-seconds"})
    return cases


# Which commands read each file kind: (args before, flag or None for a positional, args after).
READERS = {
    "profile": [("run", "--profile", ["--seq", "128"]), ("layer", "--profile",
                ["--model", "llama-3-8b", "--seq", "64"]),
                ("kvcache", "--profile", BASE["kvcache"]), ("explain", "--profile", ["--seq", "16"])],
    "profile_a100": [("sweep", "--profile", ["--seq", "128", "--jobs", "1"])],
    "kernel": [("run", "--kernel", ["--seq", "128"]), ("tune", "--kernel", BASE["tune"][:-2])],
    "kernel3": [("run", "--kernel", ["--seq", "128"]), ("explain", "--kernel", ["--seq", "16"])],
    "kernel_wg1": [("validate", "--kernel", ["--ncu", "@ncu", "--time-us", "1616.6", "--batch",
                                             "1", "--heads", "2", "--seq", "512",
                                             "--head-dim", "128"])],
    "model": [("layer", "--model", ["--seq", "64"]),
              ("layer", "--model", ["--phase", "decode", "--context", "256", "--batch", "2"])],
    "measured": [("validate", None, []), ("report", "--validation", ["@sweep_json"])],
    "ncu": [("validate", "--ncu", ["--kernel", "@kernel_wg1", "--time-us", "1616.6", "--batch",
                                   "1", "--heads", "2", "--seq", "512", "--head-dim", "128"])],
    "sweep_json": [("report", None, [])],
    "sweep_csv": [("report", None, [])],
    "block_table": [("run", "--block-table", ["--algo", "paged", "--batch", "2", "--seq", "1",
                                              "--seq-kv", "64", "--page-tokens", "16"])],
    "pattern": [("run", "--pattern", ["--algo", "block-sparse", "--seq", "256",
                                      "--block-q", "64", "--block-kv", "64"])],
    "trace": [("kvcache", "--trace", ["--layers", "4", "--kv-heads", "2", "--head-dim", "64"])],
}


def file_cases(seeds, rng, per_kind):
    cases = []
    for kind, readers in READERS.items():
        with open(seeds[kind], "rb") as f:
            data = f.read()
        ext = seeds[kind].rsplit(".", 1)[-1]
        for name, blob, expect in mutations(kind, data, rng, per_kind):
            sub, flag, rest = readers[rng.randrange(len(readers))]
            fname = f"m_{kind}.{ext}"
            value = f"file:{fname}" if kind == "pattern" else fname
            argv = [sub] + resolve(rest, seeds) + ([flag, value] if flag else [value])
            cases.append({"kind": "cli", "group": f"file:{kind}", "argv": argv, "expect": expect,
                          "names": [fname], "files": {fname: blob},
                          "inputs": [seeds[k] for k in ("measured", "ncu", "sweep_json")],
                          "mutation": name})
    cases += journal_cases(seeds, rng)
    return cases


def journal_cases(seeds, rng):
    with open(seeds["journal"], "rb") as f:
        data = f.read()
    with open(seeds["journal_full"], "rb") as f:
        full = f.read()

    def same_as_full(rc, stdout, stderr, workdir):
        if rc != 0:
            return "ok", ""
        with open(f"{workdir}/j.json", "rb") as f:
            got = f.read()
        strip = re.compile(rb'"simulation_wall_s":\s*[0-9.e+-]+')
        if strip.sub(b"", got) != strip.sub(b"", full):
            return "silent", "resumed sweep accepted a broken journal and differs from a full one"
        return "ok", ""

    cases = []
    for name, blob, expect in mutations("journal", data, rng, 45):
        cases.append({"kind": "cli", "group": "file:journal",
                      "argv": journal_args() + ["--out", "j.json", "--resume", "--jobs", "2"],
                      "expect": "any", "names": ["j.json"], "files": {"j.json.partial": blob},
                      "check": same_as_full, "mutation": name})
    return cases


# Commands with output flags: (argv without the outputs, output flags, whether it fails late).
WRITERS = [
    (["run", "--seq", "128"], ["--html", "--svg"]),
    (["report", "@sweep_json"], ["--md", "--html"]),
    (["explain", "--seq", "16"], ["--html"]),
    (["validate", "@measured"], ["--json"]),
    (["sweep", "--seq", "128,256", "--jobs", "1"], ["--out"]),
    (["layer", "--model", "llama-3-8b", "--seq", "64"], ["--html"]),
]


def output_cases(seeds, rng):
    cases = []
    for argv, outs in WRITERS:
        argv = resolve(argv, seeds)
        ext = {"--md": "md", "--html": "html", "--svg": "svg", "--json": "json", "--out": "json"}
        for o in outs:
            e = ext[o]
            variants = [
                ("over_existing_late_fail", [o, f"o.{e}", "--max-memory", "1K"], "bad", {}),
                ("dir", [o, "d"], "bad", {"d": "dir"}),
                ("fifo", [o, "f"], "bad", {"f": "fifo"}),
                ("loop", [o, "l"], "bad", {"l": "loop"}),
                ("missing_dir", [o, "nodir/o." + e], "bad", {}),
                ("trailing_slash", [o, f"o.{e}/"], "bad", {}),
                ("devfull", [o, "/dev/full"], "bad", {}),
                ("own_input", [o, argv[1] if "@" not in argv[1] else "x"], "any", {}),
                ("dangling_link", [o, "dl." + e], "any", {"dl." + e: ("link", "nowhere/x")}),
            ]
            if argv[0] in ("report", "validate"):
                variants[0] = ("over_existing_late_fail", [o, f"o.{e}", "--profile"
                               if argv[0] == "validate" else "--validation-profile", "nope"],
                               "bad", {})
            for name, extra, expect, files in variants:
                if argv[0] in ("layer", "report") and "--max-memory" in extra:
                    extra = [o, f"o.{e}", "--sm-clock-mhz" if argv[0] == "layer" else
                             "--validation", "-5" if argv[0] == "layer" else "nowhere.json"]
                cases.append({"kind": "cli", "group": f"out:{argv[0]}", "argv": argv + extra,
                              "expect": expect, "files": files,
                              "names": [extra[1], o, "nowhere/x"] + extra[2:],
                              "outputs": [f"o.{e}"] + [k for k, v in files.items()
                                                        if v not in ("dir", "fifo", "loop")],
                              "mutation": name, "inputs": list(seeds.values())[:12]})
        if len(outs) == 2:
            a, b = outs
            for name, pa, pb, files in [
                    ("same_spelling2", "o.x", "./o.x", {}),
                    ("same_abs", "o.x", "@ABS/o.x", {}),
                    ("same_dotdot", "o.x", "sub/../o.x", {"sub": "dir"}),
                    ("symlink", "o.x", "ln.x", {"ln.x": ("link", "o.x")}),
                    ("hardlink", "o.x", "hl.x", {"hl.x": ("hardlink", "o.x")}),
                    ("dup_slash", "o.x", ".//o.x", {})]:
                cases.append({"kind": "cli", "group": f"out:{argv[0]}",
                              "argv": argv + [a, pa, b, pb], "expect": "bad",
                              "names": ["o.x", pb, "same"], "files": files,
                              "outputs": ["o.x"], "mutation": name})
    return cases


# Commands that write a lot to stdout, for a reader that never reads.
LOUD = [
    ["sweep", "--seq", "64:4096:+64", "--heads", "1,2", "--jobs", "1"],
    ["sweep", "--seq", "64:2048:+64", "--format", "csv", "--jobs", "2"],
    ["report", "@sweep_json"],
    ["explain", "--seq", "64", "--block-q", "16", "--block-kv", "16"],
    ["explain", "--compare", "standard,flash1,flash2", "--seq", "64"],
    ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--series",
     "--series-points", "100000", "--requests", "20000"],
    ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--requests", "20000000"],
    ["profiles", "--keys", "all"],
    ["run", "--seq", "4096", "--format", "json", "--batch", "4", "--heads", "8"],
    ["layer", "--model", "llama-3-8b", "--seq", "128:4096:+128", "--format", "csv"],
    ["tune", "--seq", "2048", "--jobs", "1", "--top", "0"],
    ["validate", "@measured", "--format", "json"],
    ["sweep", "--seq", "64:2048:+64", "--out", "s.json", "--jobs", "1"],
]


def signal_cases(seeds, rng, count):
    cases = []
    for i in range(count):
        argv = resolve(LOUD[i % len(LOUD)], seeds)
        signum = rng.choice([signal.SIGINT, signal.SIGTERM])
        # Early signals (before the pipe fills) too: the stop must hold once the write blocks.
        delay = rng.choice([0.0, 0.02, 0.05, 0.1, 0.3, 0.6, 1.0, 1.5, rng.uniform(0, 2)])
        cases.append({"kind": "cli", "group": "signal", "argv": argv, "expect": "any",
                      "names": [], "signal": (signum, delay)})
    return cases


def budget_cases(seeds):
    """Each command with --max-seconds whose stdout nobody reads: the budget runs out while its
    write is blocked, and no signal comes to interrupt it; it must still stop."""
    cases = []
    for argv in LOUD:
        if argv[0] not in ("run", "sweep", "tune", "kvcache", "layer") or "--out" in argv:
            continue
        for budget in (1, 2, 3):
            cases.append({"kind": "cli", "group": "blocked", "expect": "any", "names": [],
                          "argv": resolve(argv, seeds) + ["--max-seconds", str(budget)],
                          "signal": (0, float(budget)), "max_seconds_given": True})
    return cases


CAPPED = [
    ["report", "@sweep_json", "--md", "r.md", "--html", "r.html"],
    ["report", "@sweep_json"],
    ["run", "--seq", "1024", "--batch", "2", "--heads", "4"],
    ["run", "--seq", "256", "--execute"],
    ["sweep", "--seq", "128,256", "--jobs", "2"],
    ["layer", "--model", "llama-3-8b", "--seq", "128"],
    ["explain", "--seq", "32", "--html", "e.html"],
    ["validate", "@measured"],
    ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64"],
    ["tune", "--seq", "512", "--jobs", "1"],
    ["profiles", "--show", "h100-sxm5-80gb"],
    ["kernels", "--show", "flash3"],
    ["demo", "--seq", "256"],
    ["validate", "--ncu", "@ncu", "--kernel", "@kernel_wg1", "--time-us", "1616.6", "--batch",
     "1", "--heads", "2", "--seq", "512", "--head-dim", "128"],
]


def capped_cases(seeds):
    cases = []
    for argv in CAPPED:
        for mib in (24, 32, 40, 48, 56, 64, 72):
            cases.append({"kind": "cli", "group": "ulimit", "argv": resolve(argv, seeds),
                          "expect": "any", "names": [], "as_mib": mib})
    return cases


# What the A100 lacks, and values the hardware cannot take, asked for from every direction.
def semantic_cases(seeds):
    a100 = ["--profile", "a100-sxm4-40gb"]
    lm = ["layer", "--model", "llama-3-8b", "--seq", "128"]
    bad = [
        ["run", "--algo", "flash3", "--seq", "128"] + a100,
        ["run", "--kernel", "flash3", "--seq", "128"] + a100,
        ["run", "--kernel", seeds["kernel3"], "--seq", "128"] + a100,
        ["run", "--kernel", seeds["kernel_wg1"], "--seq", "128"] + a100,
        ["sweep", "--algo", "flash2,flash3", "--seq", "128", "--profile", "a100-sxm4-40gb"],
        ["tune", "--algo", "flash3", "--seq", "128", "--jobs", "1"] + a100,
        ["explain", "--algo", "flash3", "--seq", "16"] + a100,
        ["run", "--dtype", "fp8", "--algo", "flash3", "--seq", "128"] + a100,
        ["run", "--dtype", "fp8", "--algo", "flash2", "--seq", "128"],
        ["run", "--warpgroups", "pingpong", "--algo", "flash2", "--seq", "128"],
        lm + ["--gemm-cluster-m", "2"] + a100, lm + ["--gemm-cluster-n", "4"] + a100,
        lm + ["--gemm-cluster-m", "1048576"], lm + ["--gemm-bm", "3"], lm + ["--gemm-bn", "7"],
        lm + ["--gemm-bk", "1024"], lm + ["--gemm-bk", "4096"], lm + ["--gemm-bk", "24"],
        lm + ["--gemm-split-k", "100000"], lm + ["--gemm-group-m", "0"],
        lm + ["--tp", "3"], lm + ["--tp", "0"], lm + ["--kernel", "flash3"] + a100,
        lm + ["--algo", "flash3"] + a100, lm + ["--dtype", "fp8"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--arrivals",
         "poisson:1e-300"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--arrivals",
         "poisson:0"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--arrivals",
         "poisson:1e300"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--prompt-len",
         "normal:5,-1"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--prompt-len",
         "lognormal:1000,1"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--prompt-len",
         "uniform:10,5"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--watermark", "1.5"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--kv-budget-bytes",
         "1e300"],
        ["kvcache", "--layers", "4", "--kv-heads", "2", "--head-dim", "64", "--weights-bytes",
         "1e15"],
        ["run", "--seq", "128", "--block-q", "3"], ["run", "--seq", "128", "--threads", "33"],
        ["run", "--seq", "128", "--kv-heads", "3", "--heads", "4"],
        ["run", "--seq", "128", "--set", "l2.size_bytes=-1"],
        ["run", "--seq", "128", "--set", "sm.count=nan"],
        ["run", "--seq", "128", "--set", "sm.count=1e30"],
        ["run", "--seq", "128", "--set", "nosuch.key=1"],
        ["run", "--seq", "128", "--set", "sm.count"],
        ["run", "--seq", "128", "--dropout", "1"], ["run", "--seq", "128", "--pattern", "local:0"],
        ["run", "--seq", "128", "--algo", "block-sparse", "--pattern", "random:2:1"],
        ["run", "--seq", "128", "--algo", "block-sparse", "--pattern", "strided:-1"],
        ["run", "--seq", "128", "--algo", "paged", "--page-tokens", "0"],
        ["explain", "--seq", "65"], ["explain", "--seq", "16", "--head-dim", "32"],
        ["explain", "--seq", "16", "--step", "0"], ["explain", "--seq", "16", "--focus", "cta:-1"],
        ["explain", "--seq", "16", "--focus", "x"], ["explain", "--compare", "flash2", "--seq", "16"],
        ["profiles", "--show", "nope"], ["profiles", "--keys", "nope"],
        ["kernels", "--show", "nope"], ["demo", "--seq", "0"],
        ["sweep", "--seq", "128", "--shard", "0/1"], ["sweep", "--seq", "128", "--shard", "2/1"],
        ["sweep", "--seq", "128", "--shard", "1/0"], ["sweep", "--seq", "128", "--resume"],
        ["sweep", "--seq", "128", "--out", "x.txt"], ["tune", "--seq", "128", "--tie-band", "-5"],
        ["validate", "--ncu", seeds["ncu"], "--seq", "512"],
        ["validate", "--time-us", "5", seeds["measured"]],
        ["report", seeds["sweep_json"], "--chartjs", seeds["sweep_csv"]],
        ["run", "--seq", "128", "--max-memory", "8Q"], ["run", "--seq", "128", "--max-memory", "-1G"],
    ]
    # The message must name one of the flags or values given (past the subcommand's name).
    return [{"kind": "cli", "group": "semantic", "argv": a, "expect": "bad",
             "names": [t for t in a[1:] if t not in ("--seq", "128", "--model", "llama-3-8b")]}
            for a in bad]
