#!/usr/bin/env python3
"""Two checks of what README.md and docs/*.md show, beside doc_commands.py's (issue #51):

1. A sweep's example asks about a shape that keeps the GPU busy. A sweep over one head of one short
   sequence is latency-bound at ~1% of every peak, and its "best tile" says nothing about the
   kernels. For every `iosim sweep` a page shows (those doc_commands.py skips or stops early
   too), its smallest point is run: each of `--seq`, `--seq-kv`, `--batch`, `--heads` at the
   smallest value its list or range names, the first value of the other problem flags, each
   profile and each algorithm or kernel it lists, the kernels' own tiles. Each such run must not
   be latency-bound with both the tensor cores and HBM under MIN_PEAK of their peaks.
2. Every repository path a page names exists: inline code spans whose first folder is one of the
   repository's (`cuda_validate/...`, `docs/kernels/...`), and relative link targets. A path
   that the page's own commands write (`--out`, `--html`, `--md`, `--svg`, `>`) is not one of
   them: those are outputs.

Run by ctest `docs` (tests/docs_test.sh). Usage from the repository root:
  scripts/doc_shapes.py IOSIM [FILE.md ...]     (default: README.md and docs/*.md)
"""

import glob
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_commands import blocks, commands  # noqa: E402

MIN_PEAK = 0.05
SMALLEST = ("--seq", "--seq-kv", "--batch", "--heads")
FIRST = ("--dtype", "--pass", "--kv-heads", "--head-dim", "--pattern", "--page-tokens", "--l2",
         "--dropout")
EACH = ("--profile", "--algo", "--kernel")
SWITCHES = ("--causal", "--mask", "--cold-l2")
OUTPUT_FLAGS = ("--out", "--html", "--md", "--svg", "--csv")


def smallest(value):
    """The smallest number a list or range of integers names ("512:16384:x2,64" -> 64)."""
    return min(int(float(part.split(":")[0])) for part in value.split(","))


def smallest_points(argv):
    """`iosim run` argument lists, one per profile x kernel, at the sweep's smallest shape."""
    flags, each = [], {}
    i = 0
    while i < len(argv):
        a, value = argv[i], None
        if "=" in a and a.startswith("--"):
            a, value = a.split("=", 1)
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            value = argv[i + 1]
            i += 1
        i += 1
        if a in SWITCHES:
            flags.append(a)
            if value is not None:  # a switch takes no value: what followed was not its
                i -= 1
        elif value is None:
            continue
        elif a in SMALLEST:
            flags += [a, str(smallest(value))]
        elif a in FIRST:
            flags += [a, value.split(",")[0]]
        elif a in EACH:
            each.setdefault(a, []).extend(value.split(","))
    profiles = each.get("--profile", [None])
    kernels = [("--algo", x) for x in each.get("--algo", [])] + \
              [("--kernel", x) for x in each.get("--kernel", [])] or [(None, None)]
    out = []
    for p in profiles:
        for flag, k in kernels:
            out.append((["--profile", p] if p else []) + ([flag, k] if flag else []) + flags)
    return out


def check_shapes(iosim, repo, path, problems):
    ran = 0
    for line_no, cmd, _ in commands(os.path.join(repo, path)):
        words = shlex.split(cmd.split("#")[0])
        if len(words) < 2 or words[1] != "sweep":
            continue
        for argv in smallest_points(words[2:]):
            run = [iosim, "run", *argv, "--format", "json"]
            p = subprocess.run(run, cwd=repo, capture_output=True, text=True, timeout=120)
            ran += 1
            if p.returncode != 0:
                problems.append(f"{path}:{line_no}: the sweep's smallest point does not run "
                                f"({' '.join(run[1:])}): {p.stderr.strip()[-300:]}")
                continue
            doc = json.loads(p.stdout)
            a = doc.get("achieved", {})
            peak = max(a.get("tensor_peak_fraction", 0.0), a.get("hbm_peak_fraction", 0.0))
            bound = doc.get("bound")
            if bound == "latency" and peak < MIN_PEAK:
                problems.append(
                    f"{path}:{line_no}: the sweep's smallest point is latency-bound at "
                    f"{100 * peak:.1f}% of peak (tensor cores or HBM; at least "
                    f"{100 * MIN_PEAK:.0f}% wanted): {' '.join(run[1:-2])}. Sweep a shape that fills "
                    "the GPU (--batch, --heads, --seq)")
    return ran


# `path` in backticks, or ](path) of a link; the first folder must be one of the repository's.
CODE = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def outputs(path):
    """The files the page's own commands write."""
    out = set()
    for kind, _, body in blocks(path):
        text = " ".join(line for _, line in body)
        for flag in OUTPUT_FLAGS:
            out.update(re.findall(re.escape(flag) + r"[ =](\S+)", text))
        out.update(re.findall(r">\s*(\S+)", text))
    return {o.strip("\"'") for o in out}


def check_files(repo, path, problems):
    top = {n for n in os.listdir(repo) if os.path.isdir(os.path.join(repo, n)) and n != "build"
           and not n.startswith(".")}
    written = outputs(os.path.join(repo, path))
    here = os.path.dirname(os.path.join(repo, path))
    checked = 0
    for line_no, line in enumerate(open(os.path.join(repo, path), encoding="utf-8"), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target) or target in written:
                continue
            checked += 1
            if not os.path.exists(os.path.normpath(os.path.join(here, target))):
                problems.append(f"{path}:{line_no}: the link target '{target}' does not exist")
        for m in CODE.finditer(line):
            name = m.group(1).rstrip(".,:;")
            first = name.split("/")[0]
            if "/" not in name or first not in top or name in written or "<" in name \
                    or "{" in name or "$" in name:
                continue
            checked += 1
            if not glob.glob(os.path.join(repo, name)):
                problems.append(f"{path}:{line_no}: `{name}` names no file or folder of the "
                                "repository")
    return checked


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    iosim = os.path.realpath(argv[1])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = argv[2:] or ["README.md", *sorted(glob.glob("docs/*.md", root_dir=repo))]
    problems, ran, checked = [], 0, 0
    for path in files:
        ran += check_shapes(iosim, repo, path, problems)
        checked += check_files(repo, path, problems)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"doc_shapes.py: {ran} sweep shapes run, {checked} paths checked, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
