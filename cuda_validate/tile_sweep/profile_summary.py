#!/usr/bin/env python3
"""Summarizes profile_triton.sh's Nsight Compute files: per configuration, time, achieved
occupancy, tensor-pipe activity, instructions, shared-memory wavefronts and the top warp stall
reasons (cycles per issued instruction).  python3 profile_summary.py DIR/SHAPE ..."""
import csv
import json
import os
import sys


def table(path):
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    return rows[0], rows[2:]  # header, (units row), data


def main(dirs):
    for d in dirs:
        hdr, data = table(os.path.join(d, "ncu_raw.csv"))
        launches = json.load(open(os.path.join(d, "launches.json")))["launches"]
        col = {h: i for i, h in enumerate(hdr)}
        stall = [h for h in hdr if h.startswith("smsp__average_warps_issue_stalled_")
                 and h.endswith("_per_issue_active.ratio")]
        print(f"## {os.path.basename(d)}")
        for row, launch in zip(data, launches):
            def v(name):
                return float(row[col[name]].replace(",", "")) if name in col else float("nan")
            t = v("gpu__time_duration.sum")
            stalls = sorted(((v(h), h.split("stalled_")[1].split("_per_issue")[0]) for h in stall),
                            reverse=True)[:5]
            print(f"{launch['config']:>12} regs {launch['registers']:3d} t {t/1e3:8.1f} us "
                  f"occ {v('sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f}% "
                  f"gmma {v('sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active'):5.1f}% "
                  f"inst {v('smsp__inst_executed.sum')/1e6:8.1f}M "
                  f"shld {v('l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum')/1e6:7.1f}M "
                  f"shst {v('l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum')/1e6:7.1f}M "
                  + " ".join(f"{n}={s:.1f}" for s, n in stalls))


if __name__ == "__main__":
    main(sys.argv[1:])
