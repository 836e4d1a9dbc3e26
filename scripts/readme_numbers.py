#!/usr/bin/env python3
"""The tables and prose numbers of README.md and docs/*.md that iosim prints, checked or rewritten
(issues 17, 28).

scripts/readme_tables.sh covers blocks that are one command's output verbatim; this covers the
rest, with two kinds of markers (HTML comments: GitHub does not show them):

  VALUE<!-- =NAME -->                VALUE, the text just before the marker on its line, is the
                                     value NAME of scripts/doc_values.py computed now (a run of
                                     iosim and a part of its output; that file says how)
  <!-- iosim-table: NAME -->         a table made by TABLES[NAME] below from its own runs,
  ...                                up to the next <!-- /iosim-table -->
  <!-- /iosim-table -->

A marker inside a `code span` is an example, not a marker.
--check exits 1 naming each value or table that differs from what iosim prints now (run by
ctest `docs`, tests/docs_test.sh, through readme_tables.sh); --write rewrites them in place (a
value is replaced where the text before its marker has the value's shape: digits where it has
digits). Without FILEs: README.md and every docs/*.md.

Usage from the repository root: scripts/readme_numbers.py --check|--write [IOSIM] [FILE.md ...]
"""

import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_format import B, T, comma, f, g, wrap  # noqa: E402
from doc_values import RUNS, VALUES  # noqa: E402
import validated  # noqa: E402

TABLE_RE = re.compile(r"^<!-- iosim-table: ([A-Za-z0-9_]+) -->$")
TABLE_END = "<!-- /iosim-table -->"
VALUE_RE = re.compile(r"<!-- =([A-Za-z0-9_.]+) -->")


class Runner:
    """Runs iosim once per distinct argument list, several at a time."""

    def __init__(self, iosim):
        self.iosim = iosim
        self.results = {}

    def prefetch(self, arg_lists):
        todo = sorted({a for a in arg_lists if a not in self.results})
        with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            for args, out in zip(todo, pool.map(self._run, todo)):
                self.results[args] = out

    def _run(self, args):
        try:
            report = self._validate_json(args)
        except RuntimeError as e:
            return e
        if report is not None:
            return wrap(report)
        p = subprocess.run([self.iosim, *args.split()], capture_output=True, text=True)
        if p.returncode != 0:
            return RuntimeError(f"'iosim {args}' exited {p.returncode}: {p.stderr.strip()}")
        try:
            return wrap(json.loads(p.stdout))
        except json.JSONDecodeError:
            return p.stdout

    def _validate_json(self, args):
        """The JSON report of `iosim validate X --format json`, from scripts/validated.py (one
        run shared with the docs' validate blocks and the accuracy levels), or None for other
        commands."""
        m = re.fullmatch(r"validate (.+) --format json", args)
        return validated.run(self.iosim, m.group(1).split())[1] if m else None

    def __call__(self, args):
        if args not in self.results:
            self.prefetch([args])
        out = self.results[args]
        if isinstance(out, Exception):
            raise out
        return out


class Named:
    """R of a value's function: R("NAME") is the output of RUNS[NAME]; R.runner the runner."""

    def __init__(self, runner):
        self.runner = runner

    def __call__(self, name):
        return self.runner(RUNS[name])


# ---- Tables: each is (the runs it needs, a function of the runner giving the table's lines).

def md_table(header, aligns, rows):
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(aligns) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


DECODE = ("run --profile h100-sxm5-80gb --algo {a} --batch 1 --heads 32 --seq 1 --seq-kv 65536 "
          "--head-dim 128 --kv-heads {h} --format json")


def decode_runs():
    return [DECODE.format(a=a, h=h) for h in (32, 8) for a in ("flash2", "flash-decoding")]


def sms_busy(k):
    """'busy of SMs' of a kernel, with CTAs and CTAs per SM when there are more CTAs than SMs."""
    sms = round(k.ctas / (k.waves * k.ctas_per_sm))
    busy = round((1 - k.idle_sm_fraction) * sms)
    extra = f" ({k.ctas} CTAs, {k.ctas_per_sm} per SM)" if k.ctas > sms else ""
    return f"{busy} of {sms}{extra}"


def decode_table(run):
    rows = []
    for h in (32, 8):
        base = run(DECODE.format(a="flash2", h=h))
        for a in ("flash2", "flash-decoding"):
            j = run(DECODE.format(a=a, h=h))
            c = j.counters
            time = T(j.time_s) + ("" if a == "flash2" else f" ({base.time_s / j.time_s:.1f}x)")
            rows.append([a, str(h),
                         ", ".join(f"{k.name} {'x'.join(str(x) for x in k.grid)}" for k in j.kernels),
                         sms_busy(j.kernels[0]), time, B(c.hbm_read_bytes),
                         f"{B(c.hbm_write_bytes)} (+{B(c.hbm_write_dirty_at_end_bytes)})"])
    return md_table(["algorithm", "K/V heads", "kernels (grid)", "SMs busy (first kernel)", "time",
                     "HBM read", "HBM write (+ dirty in L2)"],
                    ["---", "---:", "---", "---", "---:", "---:", "---:"], rows)


TRAIN = ("run --profile a100-sxm4-40gb --algo {a} --pass fwdbwd --batch 64 --heads 16 --seq 1024 "
         "--head-dim 64{mask}{l2} --format json")
TRAIN_ALGOS = (("standard", "GEMM tiles {} x {}"), ("flash1", "{} x {} (from M)"),
               ("flash2", "{} x {}"))


def train_runs():
    return [TRAIN.format(a=a, mask=m, l2=l2) for a, _ in TRAIN_ALGOS for m in ("", " --mask")
            for l2 in ("", " --l2 off")]


def train_table(run):
    rows = []
    for m in ("", " --mask"):
        std = run(TRAIN.format(a="standard", mask=m, l2=" --l2 off"))
        for a, blocks in TRAIN_ALGOS:
            j = run(TRAIN.format(a=a, mask=m, l2=" --l2 off"))
            on = run(TRAIN.format(a=a, mask=m, l2=""))
            hbm, std_hbm = j.counters.hbm_total_bytes, std.counters.hbm_total_bytes
            first = a == "standard"
            rows.append([a, "yes" if m else "no", blocks.format(j.tiling.block_q, j.tiling.block_kv),
                         f(j.counters.flops / 1e9, 1), f(hbm / 1e9, 2),
                         "1.0x" if first else f"{std_hbm / hbm:.1f}x fewer", f(j.time_s * 1e3, 2) + " ms",
                         "1.0x" if first else f"{std.time_s / j.time_s:.1f}x faster",
                         f(on.counters.hbm_total_bytes / 1e9, 2)])
    return md_table(["algorithm", "`--mask`", "blocks Br x Bc", "GFLOPs", "HBM GB", "vs standard",
                     "time", "vs standard", "HBM GB, L2 on"],
                    ["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:"], rows)


SPARSE = ("run --profile a100-sxm4-40gb --algo block-sparse --pass fwdbwd --batch 4 --heads 16 "
          "--seq 16384 --head-dim 64{p}{l2} --format json")
SPARSE_PATTERNS = ("", "strided:2", "strided:4", "strided:8", "local:4")


def sparse_runs():
    return [SPARSE.format(p=f" --pattern {p}" if p else "", l2=l2) for p in SPARSE_PATTERNS
            for l2 in ("", " --l2 off")]


def density_text(s):
    k = 1 / s
    if abs(k - round(k)) < 1e-9:
        return "1" if round(k) == 1 else f"1/{round(k)}"
    return g(s, 2)


def sparse_table(run):
    rows = []
    for p in SPARSE_PATTERNS:
        flag = f" --pattern {p}" if p else ""
        off, on = run(SPARSE.format(p=flag, l2=" --l2 off")), run(SPARSE.format(p=flag, l2=""))
        rows.append([p or "(none)", density_text(off.tiling.density), f(off.counters.flops / 1e9, 0),
                     f(off.counters.hbm_total_bytes / 1e9, 1), f(off.time_s * 1e3, 1) + " ms",
                     f(on.counters.hbm_total_bytes / 1e9, 2), f(on.time_s * 1e3, 1) + " ms"])
    return md_table(["`--pattern`", "s", "GFLOPs", "HBM GB, `--l2 off`", "time, `--l2 off`",
                     "HBM GB, L2 on", "time, L2 on"],
                    ["---", "---:", "---:", "---:", "---:", "---:", "---:"], rows)


BWD_MEASURED = "cuda_validate/measurements/h200-sxm-141gb/pytorch_sdpa_2026-11-22.json"
BWD = ("run --profile h200-sxm-141gb --algo flash2 --pass bwd --batch {b} --heads {h} --seq {n} "
       "--head-dim {d} --cold-l2 --sm-clock-mhz {clk!r} --format json")


def bwd_cases():
    """PyTorch's FlashAttention-2 backward main kernels measured on the H200, and our run of each
    (its problem, cold L2, the SM clock Nsight Compute measured), by head dim then N."""
    with open(BWD_MEASURED, encoding="utf-8") as fh:
        data = json.load(fh)
    out = []
    for c in data["cases"]:
        if c["schedule"] != "flash2" or c["pass"] == "fwd":
            continue
        for k in c["kernels"]:
            if k.get("kind") == "flash_bwd_main":
                p, m = c["problem"], k["metrics"]
                args = BWD.format(b=p["batch"], h=p["heads"], n=p["seq"], d=p["head_dim"],
                                  clk=m["sm__cycles_elapsed.avg.per_second"] / 1e6)
                out.append((p, c["tiling"]["bwd"], m, args))
    return sorted(out, key=lambda x: (x[0]["head_dim"], x[0]["seq"] * x[0]["batch"]))


def bwd_runs():
    return [c[3] for c in bwd_cases()]


def bwd_table(run):
    def cell(ours, measured, scale, decimals, unit):
        return (f"{ours / scale:.{decimals}f} / {measured / scale:.{decimals}f} {unit} "
                f"({100 * (ours / measured - 1):+.1f}%)")
    rows = []
    for p, t, m, args in bwd_cases():
        j = run(args)
        k = next(k for k in j.kernels if k.name == "flash2_bwd")
        c = k.counters
        # The atomics' reads of dQaccum happen inside the L2: the SMs receive only the loads.
        loads = c.l2_read_bytes - c.per_tensor.dQaccum.l2_read_bytes
        rows.append([f"B={p['batch']} N={p['seq']} d={p['head_dim']}", f"{t['block_q']} x {t['block_kv']}",
                     cell(c.hbm_read_bytes, m["dram__bytes_read.sum"], 1e6, 1, "MB"),
                     cell(c.hbm_write_bytes, m["dram__bytes_write.sum"], 1e6, 1, "MB"),
                     cell(loads, 32 * m["l1tex__m_xbar2l1tex_read_sectors.sum"], 1e6, 0, "MB"),
                     cell(k.time_s, m["gpu__time_duration.sum"] * 1e-9, 1e-6, 0, "us")])
    return md_table([f"problem (H={bwd_cases()[0][0]['heads']})", "Br x Bc", "DRAM read", "DRAM write",
                     "L2 -> SM bytes", "time"], ["---", "---", "---:", "---:", "---:", "---:"], rows)


# FlashAttention (Dao et al. 2022, arXiv:2205.14135), Section 3.2, Figure 2 (left): forward +
# backward of GPT-2 medium's attention (seq. length 1024, head dim. 64, 16 heads, batch size 64) on
# an A100, as printed in the figure's table. Constants of the paper, not iosim's output.
PAPER_FIG2 = {"standard": {"gflops": "66.6", "hbm": "40.3", "ms": "41.7"},
              "flash": {"gflops": "75.2", "hbm": "4.4", "ms": "7.3"}}


def paper_fig2_table(run):
    """Figure 2 (left) of the paper beside iosim's runs of its shape (the training table's runs):
    a row per implementation, iosim's with the L2 off (the two-level model) and on."""
    def j(a, m, l2):
        return run(TRAIN.format(a=a, mask=" --mask" if m else "", l2=" --l2 off" if l2 == "off" else ""))

    def cells(x):
        return [f(x.counters.flops / 1e9, 1), f(x.counters.hbm_total_bytes / 1e9, 2), f(x.time_s * 1e3, 2)]

    def ratio(a, b):
        return [f"{a.counters.flops / b.counters.flops:.2f}x", f"{a.counters.hbm_total_bytes / b.counters.hbm_total_bytes:.1f}x",
                f"{a.time_s / b.time_s:.1f}x"]

    p_s, p_f = PAPER_FIG2["standard"], PAPER_FIG2["flash"]
    rows = [["paper: standard", p_s["gflops"], p_s["hbm"], p_s["ms"]]]
    for m in (False, True):
        for l2 in ("off", "on"):
            rows.append([f"iosim: standard{' `--mask`' if m else ''}, L2 {l2}", *cells(j("standard", m, l2))])
    rows.append(["paper: FlashAttention", p_f["gflops"], p_f["hbm"], p_f["ms"]])
    for a in ("flash1", "flash2"):
        for l2 in ("off", "on"):
            rows.append([f"iosim: {a}, L2 {l2}", *cells(j(a, False, l2))])
    rows.append(["paper: standard / FlashAttention",
                 *(f"{float(p_s[k]) / float(p_f[k]):.{2 if k == 'gflops' else 1}f}x" for k in ("gflops", "hbm", "ms"))])
    for l2 in ("off", "on"):
        rows.append([f"iosim: standard `--mask` / flash1, L2 {l2}", *ratio(j("standard", True, l2), j("flash1", False, l2))])
    return md_table(["", "GFLOPs", "HBM R/W (GB)", "runtime (ms)"], ["---", "---:", "---:", "---:"], rows)


FIG2_BLOCKS = ("run --profile a100-sxm4-40gb --algo flash1 --batch 64 --heads 16 --seq 1024 --head-dim 64 "
               "--block-kv {bc}{l2} --format json")
FIG2_BC = (64, 128, 256, 512)


def fig2_blocks_runs():
    return [FIG2_BLOCKS.format(bc=bc, l2=l2) for bc in FIG2_BC for l2 in ("", " --l2 off")]


def fig2_blocks_table(run):
    """Figure 2 (middle): flash1's forward against its K/V block size Bc."""
    rows = []
    for bc in FIG2_BC:
        off, on = run(FIG2_BLOCKS.format(bc=bc, l2=" --l2 off")), run(FIG2_BLOCKS.format(bc=bc, l2=""))
        o = off.counters.per_tensor.O
        passes = o.hbm_write_bytes / (64 * 16 * 1024 * 64 * 2)
        rows.append([str(bc), f"{off.tiling.block_q} x {off.tiling.block_kv}", f"{passes:.0f}",
                     f(off.counters.hbm_total_bytes / 1e9, 2), f(off.time_s * 1e3, 2) + " ms",
                     off.bound, f(on.counters.hbm_total_bytes / 1e9, 2), f(on.time_s * 1e3, 2) + " ms"])
    return md_table(["`--block-kv` (Bc)", "Br x Bc", "O written (times)", "HBM GB, `--l2 off`",
                     "time, `--l2 off`", "bound", "HBM GB, L2 on", "time, L2 on"],
                    ["---:", "---", "---:", "---:", "---:", "---", "---:", "---:"], rows)


THM2 = ("run --profile a100-sxm4-40gb --algo {a} --batch 64 --heads 16 --seq 1024 --head-dim 64 --l2 off "
        "--set sm.smem_per_cta_max_bytes={m} --format json")
THM2_M = (20864, 41728, 83456, 166912)


def theorem2_runs():
    return [THM2.format(a=a, m=m) for a in ("standard", "flash1") for m in THM2_M]


def theorem2_table(run):
    """Theorem 2's two orders, B*H heads x 2 bytes an element, beside the two-level bytes, as the
    SRAM per CTA (M) shrinks from the A100's."""
    n, d, heads = 1024, 64, 64 * 16
    std_term = (n * d + n * n) * heads * 2
    rows = []
    for m in THM2_M:
        f1 = run(THM2.format(a="flash1", m=m))
        fa_term = n * n * d * d / (m / 2) * heads * 2
        try:
            std = run(THM2.format(a="standard", m=m))
            std_cells = [f(std.counters.hbm_total_bytes / 1e9, 2),
                         f"{std.counters.hbm_total_bytes / std_term:.1f}"]
        except RuntimeError:
            std_cells = ["does not fit", "-"]
        rows.append([comma(m), comma(m // 2), f"{f1.tiling.block_q} x {f1.tiling.block_kv}",
                     f(fa_term / 1e9, 3), f(f1.counters.hbm_total_bytes / 1e9, 2),
                     f"{f1.counters.hbm_total_bytes / fa_term:.1f}", f(std_term / 1e9, 2), *std_cells])
    return md_table(["M, bytes (`--set sm.smem_per_cta_max_bytes`)", "M, elements", "flash1 Br x Bc",
                     "N^2 d^2 / M, GB", "flash1 HBM GB", "ratio", "Nd + N^2, GB", "standard HBM GB",
                     "ratio"], ["---:", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:"], rows)


GOALS = "cuda_validate/measurements/accuracy_goals.json"


def goals_table(run):
    """The accuracy goals (scripts/accuracy_levels.py holds the levels to the "held" ones)."""
    with open(GOALS, encoding="utf-8") as fh:
        doc = json.load(fh)
    rows = []
    for kind in ("held", "stated"):
        for g in doc[kind].values():
            rows.append([g["label"], *(f"{100 * g[s]:g}%" if s in g else "-" for s in ("median", "worst")),
                         "CI (`accuracy_gate`)" if kind == "held" else "stated, not enforced"])
    return md_table(["error of", "median", "worst", "held by"], ["---", "---:", "---:", "---"], rows)


TABLES = {
    "accuracy_goals": (lambda: [], goals_table),
    "decode": (decode_runs, decode_table),
    "training": (train_runs, train_table),
    "block_sparse": (sparse_runs, sparse_table),
    "flash2_bwd_h200": (bwd_runs, bwd_table),
    "paper_fig2": (train_runs, paper_fig2_table),
    "paper_fig2_blocks": (fig2_blocks_runs, fig2_blocks_table),
    "paper_theorem2": (theorem2_runs, theorem2_table),
}


# ---- The files.

UNITS = ("B", "KB", "MB", "GB", "TB", "PB", "us", "ms", "s", "k", "M")


def value_pattern(expected):
    """A regex for text of the expected value's shape: any number where it has a number, any unit
    of bytes, time or count where it has one."""
    unit = "(?:" + "|".join(sorted(UNITS, key=len, reverse=True)) + ")"
    rx = ""
    for part in re.split(r"([0-9][0-9.,]*|[A-Za-z]+)", expected):
        if re.fullmatch(r"[0-9][0-9.,]*", part):
            rx += r"[-+]?[0-9][0-9.,]*(?:e[-+]?[0-9]+)?"
        elif part in UNITS:
            rx += unit
        else:
            rx += re.escape(part)
    # A number may not be cut in two: the match starts where no digit precedes it.
    return re.compile(r"(?<![0-9.,])" + rx + r"$")


def process(path, mode, run):
    lines = open(path, encoding="utf-8").read().split("\n")
    problems = []
    # First every run the file needs, so that they all run at once.
    wanted = set()
    for line in lines:
        if m := TABLE_RE.match(line):
            if m.group(1) in TABLES:
                wanted.update(TABLES[m.group(1)][0]())
        for m in VALUE_RE.finditer(line):
            if m.group(1) in VALUES:
                wanted.update(RUNS[r] for r in VALUES[m.group(1)].runs(RUNS))
    run.prefetch(sorted(wanted))
    R = Named(run)

    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if m := TABLE_RE.match(line):
            name = m.group(1)
            end = next((k for k in range(i + 1, len(lines)) if lines[k] == TABLE_END), None)
            if end is None:
                problems.append(f"{path}:{i + 1}: no {TABLE_END} after the table '{name}'")
                out += lines[i:]
                break
            old = lines[i + 1:end]
            try:
                new = TABLES[name][1](run)
            except KeyError:
                problems.append(f"{path}:{i + 1}: no table named '{name}' (known: {', '.join(TABLES)})")
                new = old
            except Exception as e:  # an iosim run failed: say which
                problems.append(f"{path}:{i + 1}: table '{name}': {e}")
                new = old
            if new != old and mode == "--check":
                problems.append(f"{path}:{i + 1}: the table '{name}' differs from what iosim prints now:\n"
                                + "\n".join(f"  - {x}" for x in old if x not in new)
                                + "\n" + "\n".join(f"  + {x}" for x in new if x not in old))
            out += [line, *new, TABLE_END]
            i = end + 1
            continue
        # Values on this line, left to right; each checks the text between it and the previous marker.
        pos, new_line = 0, ""
        for m in VALUE_RE.finditer(line):
            if line[:m.start()].count("`") % 2:
                continue  # inside a `code span`: an example of the syntax, not a marker
            before = line[pos:m.start()]
            name = m.group(1)
            where = f"{path}:{i + 1}"
            try:
                if name not in VALUES:
                    raise KeyError(f"no value '{name}' in scripts/doc_values.py")
                expected = VALUES[name].compute(R)
            except Exception as e:
                problems.append(f"{where}: value '{name}': {type(e).__name__}: {e}")
                new_line += line[pos:m.end()]
                pos = m.end()
                continue
            if not before.endswith(expected):
                shown = before[-max(len(expected) + 10, 20):]
                if mode == "--check":
                    problems.append(f"{where}: '...{shown}' should end with '{expected}' ({name})")
                else:
                    found = value_pattern(expected).search(before)
                    if found:
                        before = before[:found.start()] + expected
                    else:
                        problems.append(f"{where}: cannot find where to write '{expected}' in '...{shown}'")
            new_line += before + m.group(0)
            pos = m.end()
        out.append(new_line + line[pos:])
        i += 1
    if mode == "--write" and not problems:
        text = "\n".join(out)
        if text != "\n".join(lines):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
    return problems


def default_files():
    """README.md and every page of docs/."""
    return ["README.md", *sorted(glob.glob("docs/*.md"))]


def main(argv):
    if len(argv) < 2 or argv[1] not in ("--check", "--write"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    iosim = argv[2] if len(argv) > 2 else "build/iosim"
    files = argv[3:] or default_files()
    run = Runner(iosim)
    problems = []
    for path in files:
        problems += process(path, argv[1], run)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
