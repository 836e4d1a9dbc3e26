"""Seed input files of every kind and the mutations the probe makes of them (issue #50)."""
import json
import os
import random
import re
import shutil
import subprocess

# Replacements for one number of a file; the first group is clearly not a valid number for any
# numeric field, so a file holding one must be refused.
BAD_NUMBERS = ["nan", ".nan", "NaN", "inf", "-.inf", "1e309", "abc", '"12"', "true", "null",
               "[1]", "{}", "0x10", "12abc"]
ODD_NUMBERS = ["0", "-1", "-0", "1", "3", "1.5", "1e9", "1e-300", "99999999999999999999",
               "-99999999999999999999", "2147483648", "9223372036854775808", "007"]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def make_seeds(base, binary, repo):
    """Writes one good file of each kind into base; returns {kind: path}."""
    def out(args):
        return subprocess.run([binary] + args, capture_output=True, check=True).stdout

    seeds = {}
    seeds["profile"] = os.path.join(base, "prof_h100.yaml")
    write(seeds["profile"], out(["profiles", "--show", "h100-sxm5-80gb"]))
    seeds["profile_a100"] = os.path.join(base, "prof_a100.yaml")
    write(seeds["profile_a100"], out(["profiles", "--show", "a100-sxm4-40gb"]))
    seeds["kernel"] = os.path.join(base, "k_flash2.yaml")
    write(seeds["kernel"], out(["kernels", "--show", "flash2"]))
    seeds["kernel3"] = os.path.join(base, "k_flash3.yaml")
    write(seeds["kernel3"], out(["kernels", "--show", "flash3"]))
    seeds["kernel_wg1"] = os.path.join(base, "k_wg1.yaml")
    shutil.copy(os.path.join(repo, "docs/kernels/wg1_tma_fwd.yaml"), seeds["kernel_wg1"])
    seeds["model"] = os.path.join(base, "model.yaml")
    shutil.copy(os.path.join(repo, "models/llama-3-8b.yaml"), seeds["model"])
    seeds["measured"] = os.path.join(base, "meas.json")
    shutil.copy(os.path.join(repo, "tests/data/measurements_small.json"), seeds["measured"])
    seeds["ncu"] = os.path.join(base, "ncu.csv")
    shutil.copy(os.path.join(repo, "tests/data/kernels/ncu_wg1_h100.csv"), seeds["ncu"])
    seeds["sweep_json"] = os.path.join(base, "sweep.json")
    seeds["sweep_csv"] = os.path.join(base, "sweep.csv")
    for key in ("sweep_json", "sweep_csv"):
        subprocess.run([binary, "sweep", "--algo", "flash1,flash2", "--seq", "128,256",
                        "--heads", "2", "--block-kv", "64,128", "--out", seeds[key]],
                       check=True, capture_output=True)
    seeds["block_table"] = os.path.join(base, "bt.txt")
    write(seeds["block_table"], "0 5 2 3\n4 1 6 7\n")
    seeds["pattern"] = os.path.join(base, "pattern.txt")
    write(seeds["pattern"], "1 0 0 0\n1 1 0 0\n0 1 1 0\n0 0 1 1\n")
    seeds["trace"] = os.path.join(base, "trace.csv")
    rng = random.Random(5)
    rows = ["arrival,prompt_len,output_len,group"]
    for i in range(30):
        rows.append(f"{i // 3},{rng.randint(10, 400)},{rng.randint(5, 200)},{i % 2}")
    write(seeds["trace"], "\n".join(rows) + "\n")
    # A resume journal: a sweep stopped by its budget keeps its finished points.
    seeds["journal_dir"] = os.path.join(base, "journal")
    os.makedirs(seeds["journal_dir"])
    jargs = journal_args()
    full = os.path.join(base, "journal_full.json")
    subprocess.run([binary] + jargs + ["--out", full], check=True, capture_output=True)
    seeds["journal_full"] = full
    jout = os.path.join(seeds["journal_dir"], "j.json")
    p = subprocess.Popen([binary] + jargs + ["--out", jout, "--jobs", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Stopped part way by SIGKILL: the journal holds the points finished so far.
    import time
    time.sleep(0.5)
    p.kill()
    p.wait()
    seeds["journal"] = jout + ".partial"
    if not os.path.exists(seeds["journal"]):
        write(seeds["journal"], "")
    for k, v in seeds.items():
        if os.path.isfile(v):
            os.chmod(v, 0o444)
    return seeds


def journal_args():
    return ["sweep", "--algo", "flash1,flash2", "--seq", "1024:4096:+1024", "--heads", "4,8",
            "--batch", "2", "--block-kv", "64"]


def number_spans(text, kind):
    """Spans of numbers that are a value (not inside a source string or comment)."""
    if kind in ("profile", "profile_a100", "model"):
        pat = r"value:\s*(-?[0-9][0-9.e+-]*)"
    elif kind in ("kernel", "kernel3", "kernel_wg1"):
        pat = r":\s*(-?[0-9][0-9.e+-]*)\s*$"
    elif kind in ("measured", "sweep_json", "journal"):
        pat = r"\":\s*(-?[0-9][0-9.e+-]*)"
    elif kind == "ncu":
        pat = r"\"(-?[0-9][0-9.,]*)\"\s*$"
    else:
        pat = r"(?<![0-9A-Za-z.])(-?[0-9][0-9.e+-]*)"
    return [m.span(1) for m in re.finditer(pat, text, re.M)]


def mutations(kind, data, rng, count):
    """[(name, bytes, expect)] mutations of one seed file."""
    text = data.decode("utf-8", "replace")
    lines = text.splitlines(keepends=True)
    out = [("empty", b"", "bad"), ("junk", bytes(rng.randrange(256) for _ in range(300)), "bad"),
           ("bom", b"\xef\xbb\xbf" + data, "any"), ("crlf", data.replace(b"\n", b"\r\n"), "any"),
           ("nul", data[:len(data) // 2] + b"\0" + data[len(data) // 2:], "any"),
           ("bad_utf8", data[:len(data) // 3] + b"\xff\xfe\xc3" + data[len(data) // 3:], "any"),
           ("long_line", data + b"a" * 2_000_000 + b"\n", "any"),
           ("unicode", text.replace("a", "\u00e4", 3).encode(), "any")]
    for i in range(6):
        cut = rng.randrange(1, max(2, len(data)))
        out.append((f"trunc{cut}", data[:cut], "any"))
    for i in range(3):
        if lines:
            j = rng.randrange(len(lines))
            out.append((f"drop_line{j}", "".join(lines[:j] + lines[j + 1:]).encode(), "any"))
            out.append((f"dup_line{j}", "".join(lines[:j + 1] + lines[j:]).encode(), "any"))
    spans = number_spans(text, kind)
    picks = rng.sample(spans, min(len(spans), 8)) if spans else []
    for n, (a, b) in enumerate(picks):
        key = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\"?\s*:", text[max(0, a - 200):a])
        a_name = key[-1] if key else str(a)
        for v in rng.sample(BAD_NUMBERS, 3):
            if kind == "ncu" and v.startswith('"'):
                continue  # a quoted number is how every ncu value is written
            bad = "bad" if kind not in ("journal", "kernel", "kernel3", "kernel_wg1") else "any"
            out.append((f"{a_name}@{a}={v}", (text[:a] + v + text[b:]).encode(), bad))
        for v in rng.sample(ODD_NUMBERS, 3):
            out.append((f"{a_name}@{a}={v}", (text[:a] + v + text[b:]).encode(), "any"))
    out += [m for m in structural(kind, text) if m[1] != data]
    rng.shuffle(out)
    return out[:count]


def structural(kind, text):
    """Mutations of a file kind's structure: duplicate keys, nesting, YAML features."""
    out = []
    if kind in ("profile", "profile_a100", "model", "kernel", "kernel3", "kernel_wg1"):
        first = next((l for l in text.splitlines() if re.match(r"^[a-z_]+:", l)), "name: x")
        out += [("dup_key", (text + "\n" + first + "\n").encode(), "bad"),
                ("anchor", (text + "\nx: &a [1, *a]\n").encode(), "bad"),
                ("tag", text.replace(": ", ": !!str ", 1).encode(), "any"),
                ("deep", (text + "\nz: " + "[" * 20000 + "]" * 20000 + "\n").encode(), "bad"),
                ("deep_map", (text + "\nz: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n").encode(),
                 "bad"),
                ("unterminated", (text + '\nq: "abc\n').encode(), "bad"),
                ("two_docs", (text + "\n---\n" + text).encode(), "bad"),
                ("tab_indent", text.replace("  ", "\t", 2).encode(), "any"),
                ("list_top", b"- 1\n- 2\n", "bad"), ("scalar_top", b"42\n", "bad"),
                ("unknown_key", (text + "\nzzz_unknown: 1\n").encode(), "bad"),
                ("unicode_key", (text + "\n\u00fcber: 1\n").encode(), "bad")]
    if kind in ("measured", "sweep_json"):
        out += [("deep", b"[" * 100000 + b"]" * 100000, "bad"),
                ("dup_key", text.replace("{", '{"format": 1, ', 1).encode(), "any"),
                ("trailing_comma", text.rstrip().rstrip("}]") .encode() + b",]", "bad"),
                ("array_top", b"[1, 2, 3]", "bad"), ("string_top", b'"x"', "bad"),
                ("nan_token", text.replace(": 0", ": NaN", 1).encode(), "bad"),
                ("huge_number", text.replace(": 1", ": 1" + "0" * 400, 1).encode(), "any")]
    if kind in ("ncu", "sweep_csv", "trace"):
        ls = text.splitlines()
        hdr = next((i for i, l in enumerate(ls) if "," in l and not l.startswith("#")), 0)
        cols = ls[hdr].split(",")
        out += [("drop_last_col_header", "\n".join(ls[:hdr] + [",".join(cols[:-1])] +
                                                    ls[hdr + 1:]).encode(), "bad"),
                ("ragged_extra", "\n".join(ls[:hdr + 1] + [l + ",9" for l in ls[hdr + 1:]])
                 .encode(), "bad"),
                ("ragged_short", "\n".join(ls[:hdr + 1] + [l.rsplit(",", 1)[0] for l in
                                                            ls[hdr + 1:]]).encode(),
                 "any" if kind == "trace" else "bad"),
                ("header_only", "\n".join(ls[:hdr + 1]).encode(), "any"),
                ("quote_open", (text + '\n"abc,1,2\n').encode(), "bad"),
                ("swap_cols", "\n".join(ls[:hdr] + [",".join(reversed(cols))] + ls[hdr + 1:])
                 .encode(), "any")]
    if kind == "ncu":
        out += [("no_value_col", text.replace('"Metric Value"', '"Metric X"').encode(), "bad"),
                ("no_name_col", text.replace('"Metric Name"', '"Metric X"').encode(), "bad"),
                ("unit_odd", text.replace('"Mbyte"', '"Zbyte"').encode(), "bad")]
    if kind in ("block_table", "pattern"):
        out += [("negative", text.replace("1", "-1", 1).encode(), "bad"),
                ("ragged", (text + "0\n").encode(), "bad"),
                ("huge_id", text.replace("0", "99999999999999999999", 1).encode(), "bad"),
                ("float", text.replace("1", "1.5", 1).encode(), "bad"),
                ("word", text.replace("0", "x", 1).encode(), "bad")]
    if kind == "trace":
        out += [("neg_arrival", text.replace("\n0,", "\n-5,", 1).encode(), "bad"),
                ("zero_prompt", re.sub(r"\n(\d+),(\d+),", r"\n\1,0,", text, 1).encode(), "any"),
                ("huge_len", re.sub(r"\n(\d+),(\d+),", r"\n\1,99999999999999999999,", text, 1)
                 .encode(), "bad"),
                ("unsorted", (text + "0,10,10,0\n").encode(), "any"),
                ("group_neg", re.sub(r",(\d)\n", r",-1\n", text, 1).encode(), "bad")]
    return out
