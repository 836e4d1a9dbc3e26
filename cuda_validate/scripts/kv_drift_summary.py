#!/usr/bin/env python3
"""Issue #47's K/V drift: the GPU's stamped K/V loops (microbench/kv_drift.cu) against iosim's
engine (tests/tools/kv_drift_tool.cpp, `engine`), summarized by the same tool.

For each trace (PREFIX.json + PREFIX.bin, or PREFIX.dbin.xz: the same words with each CTA's end
and stamps as differences from the time before them, xz-compressed, as committed; --pack DIR
writes them from a folder of .bin) under the folders given:
  stats  -- step times, the first wave's spread, each CTA's lead over lockstep, and the LRU
            miss curve of the K/V reads in time order (the tool's `stats`);
  replay -- the model's L2 (sim/memory's L2System, H100) fed the trace's order: DRAM bytes read;
            for GPU traces also with each CTA's steps made even (`--uniform`), and with every
            CTA at the median step time from its own start (`--lockstep`).
The GPU's own DRAM bytes come from the Nsight Compute CSV next to a `_ncu` trace.

Usage: kv_drift_summary.py --tool build/iosim_kv_drift --dir DIR [--dir DIR ...] --out FILE.json
       [--profile NAME]
       kv_drift_summary.py --pack DIR
Prints a Markdown table; writes every number to FILE.json.
"""
import argparse
import csv
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tempfile

EVERY_KEY = "every"


def ctas_of(words, every):
    """(sm, steps, start, end, stamps) per CTA of a trace's words."""
    i = 0
    while i + 4 <= len(words):
        sm, steps, start, end = words[i:i + 4]
        n = (steps + every - 1) // every
        yield sm, steps, start, end, words[i + 4:i + 4 + n]
        i += 4 + n


def pack(words, every):
    """Stamps and end as differences (mod 2^32) from the time before each: small, regular."""
    out = []
    for sm, steps, start, end, stamps in ctas_of(words, every):
        out += [sm, steps, start]
        prev = start
        for t in stamps:
            out.append((t - prev) & 0xffffffff)
            prev = t
        out.append((end - prev) & 0xffffffff)
    return lzma.compress(struct.pack(f"<{len(out)}I", *out))


def unpack(data, every):
    """The trace's words (the tool's .bin) from pack()'s bytes."""
    raw = lzma.decompress(data)
    d = struct.unpack(f"<{len(raw) // 4}I", raw)
    words, i = [], 0
    while i + 3 <= len(d):
        sm, steps, start = d[i:i + 3]
        n = (steps + every - 1) // every
        t, stamps = start, []
        for x in d[i + 3:i + 3 + n]:
            t = (t + x) & 0xffffffff
            stamps.append(t)
        end = (t + d[i + 3 + n]) & 0xffffffff
        words += [sm, steps, start, end, *stamps]
        i += 4 + n
    return struct.pack(f"<{len(words)}I", *words)


def ncu_dram_read(csv_path):
    """dram__bytes_read.sum of the one profiled kernel, or None."""
    if not os.path.exists(csv_path):
        return None
    rows = [r for r in csv.reader(open(csv_path)) if r]
    header = next((r for r in rows if "dram__bytes_read.sum" in r), None)
    if header is None:
        return None
    i = header.index("dram__bytes_read.sum")
    for r in rows[rows.index(header) + 1:]:
        try:
            return float(r[i].replace(",", ""))
        except (ValueError, IndexError):
            continue
    return None


def tool(cmd, prefix, *extra):
    out = subprocess.run([*cmd, "--trace", prefix, *extra], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def traces(folder):
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json") and not name.endswith("summary.json"):
            prefix = os.path.join(folder, name[:-5])
            if os.path.exists(prefix + ".bin") or os.path.exists(prefix + ".dbin.xz"):
                yield prefix


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool")
    ap.add_argument("--dir", action="append", default=[])
    ap.add_argument("--out")
    ap.add_argument("--pack", help="write PREFIX.dbin.xz beside every PREFIX.bin of this folder")
    ap.add_argument("--profile", default="h100-sxm5-80gb", help="the L2 the replays use")
    a = ap.parse_args()
    if a.pack:
        for prefix in traces(a.pack):
            if os.path.exists(prefix + ".bin"):
                every = json.load(open(prefix + ".json"))[EVERY_KEY]
                words = open(prefix + ".bin", "rb").read()
                packed = pack(struct.unpack(f"<{len(words) // 4}I", words), every)
                assert unpack(packed, every) == words
                open(prefix + ".dbin.xz", "wb").write(packed)
        return
    if not (a.tool and a.dir and a.out):
        ap.error("--tool, --dir and --out are needed (or --pack)")
    stats = [a.tool, "stats"]
    replay = [a.tool, "replay", "--profile", a.profile]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in a.dir:
            for prefix in traces(folder):
                meta = json.load(open(prefix + ".json"))
                local = os.path.join(tmp, os.path.basename(folder) + "_" + os.path.basename(prefix))
                shutil.copy(prefix + ".json", local + ".json")
                if os.path.exists(prefix + ".bin"):
                    shutil.copy(prefix + ".bin", local + ".bin")
                else:
                    with open(local + ".bin", "wb") as dst:
                        dst.write(unpack(open(prefix + ".dbin.xz", "rb").read(), meta[EVERY_KEY]))
                gpu = "engine" not in meta["gpu"]
                row = {"trace": os.path.relpath(prefix), "source": meta["gpu"],
                       "shape": f"b{meta['batch']} h{meta['heads']} n{meta['seq'] // 1024}k "
                                f"{'causal' if meta['causal'] else 'full'}",
                       "event_ms": meta["event_ms"],
                       "stats": tool(stats, local),
                       "replay": tool(replay, local)}
                if gpu:
                    for how in ("uniform", "lockstep"):
                        row["stats_" + how] = tool(stats, local, "--" + how)
                        row["replay_" + how] = tool(replay, local, "--" + how)
                    row["ncu_dram_read_gb"] = None
                    dram = ncu_dram_read(prefix + ".csv")
                    if dram is not None:
                        row["ncu_dram_read_gb"] = dram / 1e9
                rows.append(row)
                print(f"{row['trace']}: done", file=sys.stderr)
    json.dump(rows, open(a.out, "w"), indent=1)
    print("| trace | kernel ms | step ns (cv) | first wave p10-p90 at its median length (steps) "
          "| lead p10 / p90 at 1/2 (steps) | LRU miss at 24 / 28 / 32 MiB | replay DRAM GB "
          "(uniform, lockstep) | ncu DRAM GB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        st = r["stats"]
        w = st["first_wave"][-1]
        lead = st["lead_steps"][1]
        lru = st["lru_miss_by_mib"]
        rep = f"{r['replay']['dram_read_gb']:.3f}"
        if "replay_uniform" in r:
            rep += (f" ({r['replay_uniform']['dram_read_gb']:.3f}, "
                    f"{r['replay_lockstep']['dram_read_gb']:.3f})")
        ncu = r.get("ncu_dram_read_gb")
        print(f"| {r['trace']} | {st['kernel_ms']:.2f} | {st['step_ns_median']:.0f} "
              f"({st['step_ns_cv']:.3f}) | {w['p10']:.1f}-{w['p90']:.1f} of {w['at_steps']} "
              f"| {lead['p10']:.1f} / {lead['p90']:.1f} "
              f"| {lru['24']:.3f} / {lru['28']:.3f} / {lru['32']:.3f} | {rep} "
              f"| {'' if ncu is None else f'{ncu:.3f}'} |")


if __name__ == "__main__":
    main()
