#!/usr/bin/env python3
"""Every iosim command that README.md and docs/*.md show in a ```sh block runs as written (issue 31).

A command is a line of a ```sh (or bash, shell, console) block that starts with `iosim`,
`build/iosim` or `./build/iosim` (a line ending in `\\` goes on on the next). Each runs through
bash, verbatim, its comment included, from a scratch folder of its own page that looks like the
repository root: every top-level entry of the repository linked in, `build/iosim` and `iosim` on
PATH both this binary. So the files the commands read are the repository's, what they write
stays in the scratch folder, and a page's later command reads what an earlier one wrote (a sweep,
then its report).

What a command must do:
  - exit 0, or N when its comment says `exits N` (a command shown failing);
  - when its block is followed (blank lines between allowed) by a ```text block, print every
    line of that block, in that order, spaces between words not counted; a line `...` stands
    for lines left out. The tutorial's exercises quote their answers this way, so that the number
    in an answer is the number the command prints now.

SKIP lists the commands CI does not run here and SLOW those it stops early, each with its reason;
an entry that matches no command is an error (stale), as is a command with `...` or `[optional]`
parts (not runnable as written: write a whole command).

Run by ctest `docs` (tests/docs_test.sh). Usage from the repository root:
  scripts/doc_commands.py [--time] IOSIM [FILE.md ...]     (default: README.md and docs/*.md)
--time prints each command's wall time.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import time

# (page, text of the command, reason): commands not run here.
SKIP = [
    ("docs/user-guide.md", "--shard \"$SLURM_ARRAY_TASK_ID/3\"",
     "a Slurm array task: ctest sweep_cli runs this script once per task, 1 to 3"),
    ("docs/user-guide.md", "iosim report part_1.json part_2.json part_3.json",
     "the report of the Slurm tasks' parts: ctest sweep_cli runs it after them"),
    ("docs/user-guide.md", "iosim report sweep.json --html r.html --md r.md",
     "reads the sweep above, which SLOW stops early (ctest sweep_cli runs report on a sweep of its own)"),
    ("docs/user-guide.md", "iosim report h100.json --html h100.html",
     "reads the screenshot's sweep, which SLOW stops early (ctest browser draws a report of its own)"),
]

# (page, text of the command, seconds, reason): commands run with `--max-seconds SECONDS` added
# (before the comment), which must exit 0 or 3 (stopped at the limit): the flags are parsed and
# checked and the simulations start, but CI does not wait for them to end.
SLOW = [
    ("docs/user-guide.md", "--seq 512:16384:x2 --head-dim 64,128 --block-kv 32,64,128,256",
     1, "288 points up to N = 16384: minutes on 2 cores"),
    ("docs/user-guide.md", "--block-q 64,128 --block-kv 32,64,128,256 --out h100.json",
     1, "the screenshot's 288 points (H100 alone, --block-q swept): about 25 minutes on 2 cores"),
]

FENCE = re.compile(r"^\s*```\s*([A-Za-z]*)")
SHELLS = ("sh", "bash", "shell", "console")
COMMAND = re.compile(r"^(?:\./)?(?:build/)?iosim(?:\s|$)")
EXITS = re.compile(r"#.*\bexits? (\d+)\b")
TIMEOUT_S = 120


def blocks(path):
    """(kind, first line number, lines) of each fenced block of the page, in order."""
    out, kind, start, body = [], None, 0, []
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        m = FENCE.match(line)
        if kind is None and m:
            kind, start, body = m.group(1).lower(), i, []
        elif kind is not None and line.strip() == "```":
            out.append((kind, start, body))
            kind = None
        elif kind is not None:
            body.append((i, line))
    return out


def commands(path):
    """(line number, command, expected lines or None) of each iosim command of the page."""
    out = []
    bl = blocks(path)
    text = open(path, encoding="utf-8").read().split("\n")
    for n, (kind, start, body) in enumerate(bl):
        if kind not in SHELLS:
            continue
        found, joined, first = [], "", 0
        for i, line in body:
            if not joined:
                first = i
            joined += line
            if line.endswith("\\"):
                joined = joined[:-1] + " "
                continue
            if COMMAND.match(joined.strip()):
                found.append((first, joined.strip()))
            joined = ""
        expected = None
        if len(found) == 1 and n + 1 < len(bl) and bl[n + 1][0] == "text":
            end = start + len(body) + 1  # the closing fence's line number
            if all(not t.strip() for t in text[end:bl[n + 1][1] - 1]):
                expected = [line for _, line in bl[n + 1][2]]
        out += [(i, c, expected if len(found) == 1 else None) for i, c in found]
    return out


def words(line):
    return " ".join(line.split())


def missing(expected, output):
    """The first expected line not printed (in order), or None."""
    got = [words(x) for x in output.split("\n")]
    k = 0
    for line in expected:
        want = words(line)
        if not want or want == "...":
            continue
        while k < len(got) and got[k] != want:
            k += 1
        if k == len(got):
            return line
        k += 1
    return None


def scratch(repo, iosim, root):
    """A folder that looks like the repository root, with build/iosim this binary."""
    os.makedirs(os.path.join(root, "build"))
    for name in os.listdir(repo):
        if name not in ("build", ".git"):
            os.symlink(os.path.join(repo, name), os.path.join(root, name))
    os.symlink(iosim, os.path.join(root, "build", "iosim"))
    bin_dir = os.path.join(root, ".bin")
    os.makedirs(bin_dir)
    os.symlink(iosim, os.path.join(bin_dir, "iosim"))
    return bin_dir


def main(argv):
    show_time = "--time" in argv
    argv = [a for a in argv if a != "--time"]
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    iosim = os.path.realpath(argv[1])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = argv[2:] or ["README.md", *sorted(glob.glob("docs/*.md"))]
    problems, used, used_slow, ran, total = [], set(), set(), 0, 0.0
    for path in files:
        with tempfile.TemporaryDirectory() as root:
            bin_dir = scratch(repo, iosim, root)
            env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
            for line_no, cmd, expected in commands(os.path.join(repo, path)):
                where = f"{path}:{line_no}"
                skip = [k for k, (p, snippet, _) in enumerate(SKIP) if p == path and snippet in cmd]
                if skip:
                    used.update(skip)
                    continue
                code = cmd.split("#")[0]
                if "..." in code or re.search(r"\s\[", code):
                    problems.append(f"{where}: not a command as written ('...' or [optional]): {cmd}")
                    continue
                m = EXITS.search(cmd)
                wants = {int(m.group(1)) if m else 0}
                slow = [k for k, (p, snippet, _, _) in enumerate(SLOW) if p == path and snippet in cmd]
                if slow:
                    used_slow.update(slow)
                    code, comment = (cmd.split("#", 1) + [""])[:2]
                    cmd = f"{code.rstrip()} --max-seconds {SLOW[slow[0]][2]}" + (f"  #{comment}" if comment else "")
                    wants.add(3)
                t0 = time.monotonic()
                try:
                    p = subprocess.run(["bash", "-c", cmd], cwd=root, env=env, capture_output=True,
                                       text=True, timeout=TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    problems.append(f"{where}: ran past {TIMEOUT_S} s: {cmd}")
                    continue
                dt = time.monotonic() - t0
                ran, total = ran + 1, total + dt
                if show_time:
                    print(f"{dt:7.2f} s  {where}: {cmd}")
                if p.returncode not in wants:
                    problems.append(f"{where}: exit {p.returncode}, not {' or '.join(map(str, sorted(wants)))}: {cmd}\n"
                                    + p.stderr.strip()[-600:])
                elif expected is not None:
                    line = missing(expected, p.stdout + p.stderr)
                    if line is not None:
                        problems.append(f"{where}: the output of '{cmd}' lacks the line quoted under "
                                        f"it (or has it out of order):\n  {line.strip()}")
    for k, (p, snippet, _) in enumerate(SKIP):
        if k not in used and (p in files):
            problems.append(f"scripts/doc_commands.py: SKIP entry matches no command of {p}: {snippet}")
    for k, (p, snippet, _, _) in enumerate(SLOW):
        if k not in used_slow and (p in files):
            problems.append(f"scripts/doc_commands.py: SLOW entry matches no command of {p}: {snippet}")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"doc_commands.py: {ran} commands run in {total:.1f} s ({len(used_slow)} stopped early), "
          f"{len(used)} skipped, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
