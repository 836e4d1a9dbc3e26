#!/usr/bin/env python3
"""Numbers in README.md and docs/*.md that nothing checks (issues 17, 28).

readme_tables.sh checks the blocks of iosim's output verbatim and readme_numbers.py the values that
carry a <!-- =NAME --> marker (scripts/doc_values.py) and the <!-- iosim-table --> blocks. Every other number in the
prose and tables must be listed in scripts/readme_unchecked.txt with the reason it cannot be
checked, so that a number iosim prints cannot be quoted by hand and then drift unnoticed.

Not numbers of a result, by rule (see QUANTITY below):
  - fenced code blocks, HTML comments, <!-- iosim/validate/iosim-table/script --> blocks (checked there);
  - `code spans`: commands, flags, paths, keys the reader types (inputs);
  - names: digits glued to letters or joined by '-' to a name (H100, fp16, sxm5-80gb, Llama-2),
    paths (a token with '/' and a letter), commit hashes (7+ hex characters with a letter),
    dates (2026-11-23), versions (0.1.0, or after Debian, Ubuntu, CMake, ...);
  - a number hyphen-joined to a word (2-core, 64-bit, 16-token): the kind of a thing;
  - references: after step, issue, Algorithm, Theorem, section, line, #, ... ; list numerals;
  - shape and condition inputs: after `NAME =`, `<=`, `>=` (B=4, N = 16k, d <= 64).

The allow file has one entry per line, `FILE :: SNIPPET :: CATEGORY: reason`; SNIPPET is text of
exactly one line of FILE, and the entry covers the numbers inside it. An entry whose snippet
matches no line (stale), several lines, or covers no number is an error too. SNIPPET `*` covers
every number of FILE: a page that is a log of past measurements (history) or of design notes.

Usage from the repository root:
  scripts/readme_unchecked.py                 exit 1 naming each unlisted number and bad entry
  scripts/readme_unchecked.py --suggest CAT   print an allow entry for each unlisted number
  scripts/readme_unchecked.py --self-test
"""

import glob
import os
import re
import sys

FILES = ("README.md", *sorted(glob.glob("docs/*.md")))
ALLOW = "scripts/readme_unchecked.txt"
CATEGORIES = ("measured", "hardware", "input", "history", "math", "external", "goal", "tested")

# A number: thousands separators, decimals, an exponent (6e-07), a power (2^64).
NUMBER = re.compile(r"(?<![\w.,^])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]\d)|"
                    r"(?<![\w.,^])\d+(?:\.\d+)?(?:e[-+]?\d+(?![\w]))?(?:\^-?\d+)?")
UNIT = re.compile(r"(?:x|%|k|K|M|B|G|KB|MB|GB|TB|KiB|MiB|GiB|us|µs|ms|s|W|MHz|GHz)(?![A-Za-z0-9])")
REFERENCE = re.compile(r"(?:\b(?:steps?|issues?|Algorithms?|Propositions?|Theorems?|[Ss]ections?|"
                       r"[Tt]ables?|[Ff]igures?|[Ll]ines?|items?|Eq\.|PR|Step|CTA)|#)\s*(?:\d+-)?$")
VERSIONED = re.compile(r"\b(?:Debian|Ubuntu|CMake|GCC|Python|Schema|iosim|clang|CUDA|C\+\+|version)"
                       r"\s+(?:[\d.]+\s*(?:and|or|,)\s*)*$")
INPUT = re.compile(r"(?:\b[A-Za-z][A-Za-z]?(?:_[A-Za-z]+)?\s*(?:=|<=|>=|≤|≥)|\b[A-Za-z]\s*[<>])\s*$")
TOKEN_CHARS = re.compile(r"[\w.\-−+^/%~]")
COMMENT = re.compile(r"<!--.*?-->")
VALUE_MARKER = re.compile(r"<!-- =[A-Za-z0-9_.]+ -->")
CHECKED_BLOCK = re.compile(r"^<!-- (iosim|validate|iosim-table|script):? ")


def token_around(line, start, end):
    """The run of name-like characters the number sits in (H100-sxm5, 3-6x, docs/a_2.md)."""
    a, b = start, end
    while a > 0 and TOKEN_CHARS.match(line[a - 1]):
        a -= 1
    while b < len(line) and TOKEN_CHARS.match(line[b]):
        b += 1
    return line[a:b].strip(".-,+"), line[a:start]


def quantity(line, m):
    """False when the number at m is a name, reference or chosen input rather than a value."""
    start, end = m.start(), m.end()
    before, after = line[:start], line[end:]
    token, left = token_around(line, start, end)
    if "/" in token and re.search(r"[A-Za-z]", token.replace("TB/s", "")):
        return False  # a path or a link
    if re.fullmatch(r"[0-9a-f]{7,40}", token) and re.search(r"[a-f]", token):
        return False  # a commit
    if re.search(r"(?:19|20)\d\d-[01]\d(?!\d)", token) or re.fullmatch(r"\d+\.\d+\.\d+", token):
        return False  # a date or a version
    if re.search(r"[A-Za-z_][\w-]*-?$", left.lstrip("(")) and not left.endswith(("~", "−")):
        return False  # part of a name: H100, sxm5-80gb, Llama-2-7B
    if re.search(r"(?:^|\s)-$", before):
        return False  # a name's suffix: FlashAttention-1 and -2 (negative numbers use '−')
    if re.match(r"[A-Za-z_]", after) and not UNIT.match(after):
        return False  # glued to a name: 80gb
    if re.match(r"-[A-Za-z]", after):
        return False  # the kind of a thing: 2-core, 64-bit
    if REFERENCE.search(before) or VERSIONED.search(before) or INPUT.search(before):
        return False
    if re.match(r"\s*(?:[-*+]|\d+\.)?\s*$", before) and re.match(r"\.\s", after):
        return False  # a list numeral
    return True


def scan(text):
    """[(line number, column span, number, line)] of every unchecked-by-marker number."""
    found, in_fence, block, in_comment, in_code = [], False, None, False, False
    for no, raw in enumerate(text.split("\n"), 1):
        if block:  # inside a block that readme_tables.sh or readme_numbers.py checks
            if raw.strip() == f"<!-- /{block} -->":
                block = None
            continue
        if raw.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if m := CHECKED_BLOCK.match(raw):
            block = m.group(1)
            continue
        if not raw.strip():
            in_code = False  # a code span does not outlive its paragraph
            continue
        line = raw
        if in_comment:  # a comment over several lines: blank up to its end
            k = line.find("-->")
            if k < 0:
                continue
            in_comment = False
            line = " " * (k + 3) + line[k + 3:]
        covered = []
        for v in VALUE_MARKER.finditer(line):
            # The value a marker checks is the word before it, with its number if it is a unit,
            # and the numbers listed before that (0, 3 and 6).
            words = list(re.finditer(r"\S+", line[:v.start()]))
            if not words or words[-1].end() != v.start():
                continue
            k = len(words) - 1
            if k > 0 and not re.search(r"\d", words[k].group()):
                k -= 1
            while k > 0 and re.fullmatch(r"\d[\d.,]*|and|or", words[k - 1].group()):
                k -= 1
            covered.append((words[k].start(), v.start()))
        line = COMMENT.sub(lambda c: " " * len(c.group()), line)
        if (k := line.find("<!--")) >= 0:
            in_comment = True
            line = line[:k] + " " * (len(line) - k)
        # Blank code spans (which may continue from the previous line of the paragraph).
        chars = list(line)
        for k, ch in enumerate(line):
            if ch == "`":
                in_code = not in_code
            if in_code or ch == "`":
                chars[k] = " "
        line = "".join(chars)
        for m in NUMBER.finditer(line):
            if not quantity(line, m) or any(a <= m.start() and m.end() <= b for a, b in covered):
                continue
            found.append((no, (m.start(), m.end()), m.group(), raw))
    return found


def parse_allow(text):
    entries, problems = [], []
    for no, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" :: ")]
        if len(parts) != 3 or parts[2].split(":")[0] not in CATEGORIES:
            problems.append(f"{ALLOW}:{no}: expected 'FILE :: SNIPPET :: CATEGORY: reason' with "
                            f"CATEGORY one of {', '.join(CATEGORIES)}")
            continue
        entries.append((no, *parts))
    return entries, problems


def check(texts, allow_text, unlisted=None):
    """Problems (strings) for {file: text} and the allow file's text; the unlisted numbers'
    (path, line number, span) also go to `unlisted` when given."""
    entries, problems = parse_allow(allow_text)
    allowed = set()  # (file, line, start) of numbers an entry covers
    for no, path, snippet, _ in entries:
        if path not in texts:
            problems.append(f"{ALLOW}:{no}: stale: {path} is not one of the checked files")
            continue
        if snippet == "*":  # the whole file
            allowed.update((path, n[0], n[1][0]) for n in scan_cache(path, texts))
            continue
        lines = texts.get(path, "").split("\n")
        hits = [(i, k) for i, line in enumerate(lines, 1) if (k := line.find(snippet)) >= 0]
        if not hits:
            problems.append(f"{ALLOW}:{no}: stale: '{snippet}' is on no line of {path}")
            continue
        if len(hits) > 1:
            problems.append(f"{ALLOW}:{no}: '{snippet}' is on {len(hits)} lines of {path} "
                            f"({', '.join(str(i) for i, _ in hits)}): make it unique")
            continue
        i, k = hits[0]
        mine = [n for n in scan_cache(path, texts) if n[0] == i and k <= n[1][0] and n[1][1] <= k + len(snippet)]
        if not mine:
            problems.append(f"{ALLOW}:{no}: stale: '{snippet}' ({path}:{i}) covers no unchecked number")
        allowed.update((path, i, n[1][0]) for n in mine)
    for path in texts:
        for no, span, number, _ in scan_cache(path, texts):
            if (path, no, span[0]) not in allowed:
                if unlisted is not None:
                    unlisted.append((path, no, span))
                problems.append(f"{path}:{no}: {number} is unchecked: no marker, no entry in {ALLOW}")
    return problems


_scans = {}


def scan_cache(path, texts):
    key = (path, texts[path] if path in texts else "")
    if key not in _scans:
        _scans[key] = scan(key[1])
    return _scans[key]


def suggest(texts, allow_text, category):
    """An allow entry per unlisted number: the fewest words around it that are on one line only."""
    unlisted = []
    check(texts, allow_text, unlisted)
    for path, no, span in unlisted:
        lines = texts[path].split("\n")
        line = lines[no - 1]
        words = list(re.finditer(r"\S+", line))
        a = b = next(k for k, w in enumerate(words) if w.start() <= span[0] < w.end())
        while sum(line[words[a].start():words[b].end()] in x for x in lines) > 1 and (a, b) != (0, len(words) - 1):
            a, b = max(0, a - 1), min(len(words) - 1, b + 1)
        print(f"{path} :: {line[words[a].start():words[b].end()]} :: {category}: ")


def self_test():
    readme = ("# Title\n\n"
              "It takes 4.2 ms<!-- =r.time_s --> on H100 at `--seq 4096` with B=4,\n"
              "and 17 GB here, and 2.5 GB by hand.\n```text\n99 ms in a checked block\n```\n"
              "<!-- a comment with 98 ms -->\n")
    allow = "README.md :: 17 GB here :: measured: x\nREADME.md :: 99 GB gone :: history: y\n"
    problems = check({"README.md": readme}, allow)
    want = ["README.md:4: 2.5 is unchecked", f"{ALLOW}:2: stale: '99 GB gone'"]
    ok = all(any(p.startswith(w) for p in problems) for w in want) and len(problems) == 2
    print("\n".join(problems))
    print("self-test", "passed" if ok else "FAILED: expected exactly " + "; ".join(want))
    return 0 if ok else 1


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    texts = {p: open(p, encoding="utf-8").read() for p in FILES}
    allow_text = open(ALLOW, encoding="utf-8").read() if os.path.exists(ALLOW) else ""
    if argv[1:2] == ["--suggest"]:
        suggest(texts, allow_text, argv[2] if len(argv) > 2 else "measured")
        return 0
    problems = check(texts, allow_text)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
