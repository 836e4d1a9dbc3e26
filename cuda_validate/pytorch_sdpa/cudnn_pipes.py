#!/usr/bin/env python3
"""cuDNN forward attention: per-pipe instruction mix, tensor-active fraction and the SM clock
(issue #13: the flash3 model's clock and FP32/SFU/INT overlap questions).

Eight forward cases of measure.py's cudnn suite (d = 64, 128; causal and not; N = 4096, 16384;
B, H from bh_for), built with measure.py's CaseRun (same inputs, same SDPBackend.CUDNN_ATTENTION).

Modes:
  select-metrics QUERY_TXT   the ncu metric list (comma-separated) from `ncu --query-metrics`
                             output: a fixed core plus every smsp__inst_executed_pipe_*,
                             sm__pipe_*_cycles_active and smsp__warps_issue_stalled_* this ncu has
  ncu --out J                per case: two warm-up calls, then one call between
                             cudaProfilerStart/Stop (run under ncu --profile-from-start off
                             -k regex:fprop); J lists the cases in profiling order
  free --out J               all cases back to back, no profiler, for --rounds x
                             --seconds-per-case: CUDA-event time of every call and the host
                             wall-clock window of each case (to align nvidia-smi samples)
  summarize ...              off the device: CSVs + free-run JSON + nvidia-smi CSV -> summary JSON
"""
import argparse
import csv
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SMS = 132
SMSPS = 4 * SMS


def cases():
    sys.path.insert(0, HERE)
    import measure
    want = [(d, causal, n) for d in (64, 128) for causal in (False, True) for n in (4096, 16384)]
    out = []
    for c in measure.build_cudnn_suite():
        p = c["problem"]
        if (c["pass"] == "fwd" and p["dtype"] == "fp16"
                and (p["head_dim"], p["causal"], p["seq"]) in want):
            out.append(c)
    assert len(out) == 8, [c["id"] for c in out]
    return out


def all_ids():
    sys.path.insert(0, HERE)
    import measure
    return [c["id"] for c in measure.build_cudnn_suite()]


# ------------------------------------------------------------------------------ metrics list
CORE = [
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second",
    "sm__cycles_active.avg", "smsp__cycles_active.avg", "smsp__inst_executed.sum",
    "smsp__inst_issued.sum", "smsp__issue_active.sum", "smsp__warps_active.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum",
    "dram__bytes_read.sum", "gpc__cycles_elapsed.max",
]


def select_metrics(query_txt):
    bases = set()
    for line in open(query_txt, errors="replace"):
        m = re.match(r"^([a-z0-9]+__[A-Za-z0-9_]+)\s", line)
        if m:
            bases.add(m.group(1))
    chosen = [m for m in CORE if m.split(".")[0] in bases]
    dyn = []
    for b in sorted(bases):
        if re.fullmatch(r"smsp__inst_executed_pipe_[a-z0-9_]+", b) and "pred" not in b:
            dyn.append(b + ".sum")
        elif (re.fullmatch(r"sm__pipe_[a-z0-9_]+_cycles_active", b)
              and "realtime" not in b):
            dyn.append(b + ".sum")
        elif (re.fullmatch(r"smsp__warps_issue_stalled_[a-z0-9_]+", b)
              and "not_issued" not in b):
            dyn.append(b + ".sum")
    for m in dyn:
        if m not in chosen:
            chosen.append(m)
    return chosen


# ------------------------------------------------------------------------------ device modes
def make_runs(only=""):
    import torch
    ids = all_ids()
    runs = []
    keep = [x for x in only.split(",") if x]
    for c in cases():
        if keep and c["id"] not in keep:
            continue
        import measure
        run = measure.CaseRun(c, ids.index(c["id"]))
        (_, fn), = run.roles()
        with run.context():
            fn()
            fn()
        torch.cuda.synchronize()
        runs.append((c, run, fn))
    return runs


def mode_ncu(args):
    import torch
    out = []
    for c, run, fn in make_runs(args.only):
        torch.cuda.synchronize()
        with run.context():
            torch.cuda.profiler.start()
            fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        out.append({"id": c["id"], "problem": c["problem"]})
        print(f"[ncu] {c['id']} profiled", flush=True)
        run.state.clear()
    json.dump({"order": out}, open(args.out, "w"), indent=1)
    return 0


def mode_free(args):
    import torch
    runs = make_runs(args.only)
    recs = {c["id"]: {"id": c["id"], "problem": c["problem"], "rounds": []} for c, _, _ in runs}
    t_all = time.time()
    for rnd in range(args.rounds):
        for c, run, fn in runs:
            times, t0 = [], time.time()
            with run.context():
                while time.time() - t0 < args.seconds_per_case:
                    evs = [torch.cuda.Event(enable_timing=True) for _ in range(args.batch + 1)]
                    evs[0].record()
                    for i in range(args.batch):
                        fn()
                        evs[i + 1].record()
                    torch.cuda.synchronize()
                    times += [evs[i].elapsed_time(evs[i + 1]) * 1e-3 for i in range(args.batch)]
            t1 = time.time()
            s = sorted(times)
            recs[c["id"]]["rounds"].append({
                "round": rnd, "t_start_epoch": t0, "t_end_epoch": t1, "calls": len(times),
                "median_s": s[len(s) // 2], "p10_s": s[len(s) // 10], "p90_s": s[9 * len(s) // 10],
                "mean_s": sum(times) / len(times)})
            print(f"[free] round {rnd} {c['id']}: {len(times)} calls, median "
                  f"{s[len(s) // 2] * 1e3:.3f} ms", flush=True)
    json.dump({"seconds_total": time.time() - t_all, "batch": args.batch,
               "timing": "CUDA events between consecutive calls, enqueued back to back "
                         "(batch calls, then one synchronize)",
               "cases": list(recs.values())}, open(args.out, "w"), indent=1)
    return 0


# ------------------------------------------------------------------------------ summarize
def read_ncu_csv(path):
    lines = [ln for ln in open(path, errors="replace") if not ln.startswith("==")]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        return []
    hdr, units = rows[0], rows[1]
    out = []
    for r in rows[2:]:
        d = {}
        for h, v in zip(hdr, r):
            v2 = v.replace(",", "")
            try:
                d[h] = float(v2)
            except ValueError:
                d[h] = v
        out.append(d)
    return out


def scores(p):
    n, b, h = p["seq"], p["batch"], p["heads"]
    nominal = b * h * n * n
    frac = (0.5 + 64 / n) if p["causal"] else 1.0
    return nominal, nominal * frac


def case_key(p):
    return f"d{p['head_dim']} N={p['seq']} B{p['batch']}H{p['heads']}" + (" causal" if p["causal"] else "")


def parse_smi(path):
    rows = []
    if not path or not os.path.exists(path):
        return rows
    for ln in open(path, errors="replace"):
        f = [x.strip() for x in ln.split(",")]
        if len(f) < 4:
            continue
        try:
            ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append({"t": ts, "sm": float(f[1]), "mem": float(f[2]), "power": float(f[3]),
                         "temp": float(f[4]) if len(f) > 4 and f[4] else None,
                         "reasons": f[5] if len(f) > 5 else None})
        except ValueError:
            continue
    return rows


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None


def summarize_ncu(rows, order, clock_control):
    out = []
    for i, o in enumerate(order):
        if i >= len(rows):
            break
        r = rows[i]
        p = o["problem"]
        nominal, computed = scores(p)
        g = lambda k: r.get(k) if isinstance(r.get(k), float) else None  # noqa: E731
        cyc_act, cyc_el = g("sm__cycles_active.avg"), g("sm__cycles_elapsed.avg")
        d = {"id": o["id"], "case": case_key(p), "problem": p, "clock_control": clock_control,
             "kernel": r.get("Kernel Name"), "scores_nominal": nominal,
             "scores_computed": computed,
             "gpu_time_s": g("gpu__time_duration.sum") and g("gpu__time_duration.sum") * 1e-9,
             "sm_clock_hz": g("sm__cycles_elapsed.avg.per_second"),
             "sm_cycles_elapsed_avg": cyc_el, "sm_cycles_active_avg": cyc_act}
        ten = g("sm__pipe_tensor_op_hmma_cycles_active.sum")
        if ten and cyc_act:
            d["tensor_active_of_active_cycles"] = ten / (SMSPS * cyc_act)
        if ten and cyc_el:
            d["tensor_active_of_elapsed_cycles"] = ten / (SMSPS * cyc_el)
        ia, sca = g("smsp__issue_active.sum"), g("smsp__cycles_active.avg")
        if ia and sca:
            d["issue_active_of_smsp_active_cycles"] = ia / (SMSPS * sca)
        per = {}
        for k, v in r.items():
            m = re.fullmatch(r"smsp__inst_executed_pipe_(\w+)\.sum", k)
            if m and isinstance(v, float):
                per[m.group(1)] = v / computed
        for k in ("smsp__inst_executed.sum", "smsp__inst_issued.sum",
                  "sm__inst_executed_pipe_tensor_op_gmma.sum"):
            if g(k) is not None:
                per[k.split(".")[0].replace("smsp__", "").replace("sm__", "")] = g(k) / computed
        d["warp_inst_per_computed_score"] = per
        # No sm__pipe_xu_cycles_active in this ncu: an estimate at the documented SFU rate of
        # cc 9.0 (16 results/clk/SM = 4 per sub-partition, so 8 cycles per warp instruction).
        xu, sca2 = g("smsp__inst_executed_pipe_xu.sum"), g("smsp__cycles_active.avg")
        if xu and sca2:
            d["xu_busy_est_8clk_per_warp_inst"] = 8 * xu / (SMSPS * sca2)
        pipe_active = {}
        for k, v in r.items():
            m = re.fullmatch(r"sm__pipe_(\w+)_cycles_active\.sum", k)
            if m and isinstance(v, float) and cyc_act:
                pipe_active[m.group(1)] = v / (SMSPS * cyc_act)
        d["pipe_cycles_active_sum_over_4x132xsm_cycles_active"] = pipe_active
        stalls = {}
        iss = g("smsp__inst_issued.sum")
        for k, v in r.items():
            m = re.fullmatch(r"smsp__warps_issue_stalled_(\w+)\.sum", k)
            if m and isinstance(v, float) and iss:
                stalls[m.group(1)] = v / iss
        d["stall_warp_cycles_per_issued_inst"] = dict(sorted(stalls.items(),
                                                             key=lambda kv: -kv[1]))
        out.append(d)
    return out


def opcode_table(source_csv, order_json):
    """ncu --page source --csv (SourceCounters) -> per kernel, per SASS opcode (guard predicate
    dropped, modifiers kept): warp instructions executed and warp-stall samples, per computed
    score and as a share of all samples."""
    order = json.load(open(order_json))["order"]
    kernels, cur = [], None
    for ln in open(source_csv, errors="replace").read().splitlines():
        if ln.startswith('"Kernel Name"'):
            cur = {"name": next(csv.reader([ln]))[1], "rows": []}
            kernels.append(cur)
            continue
        r = next(csv.reader([ln]))
        if cur is None or not r:
            continue
        if r[0] == "Address":
            cur["hdr"] = r
        else:
            cur["rows"].append(r)
    out = []
    for k, o in zip(kernels, order):
        h = k["hdr"]
        ie = h.index("Instructions Executed")
        sm = h.index("Warp Stall Sampling (All Samples)")
        _, computed = scores(o["problem"])
        inst, samp = {}, {}
        for r in k["rows"]:
            src = re.sub(r"^@!?U?P\w+\s+", "", r[1].strip())
            op = src.split()[0] if src else "?"
            inst[op] = inst.get(op, 0) + float(r[ie].replace(",", "") or 0)
            samp[op] = samp.get(op, 0) + float(r[sm].replace(",", "") or 0)
        ti, ts = sum(inst.values()), sum(samp.values())
        ops = sorted(inst, key=lambda x: -inst[x])
        out.append({"id": o["id"], "case": case_key(o["problem"]), "kernel": k["name"],
                    "sass_lines": len(k["rows"]), "warp_inst_per_computed_score": ti / computed,
                    "stall_samples": ts,
                    "opcodes": [{"op": op, "warp_inst_per_computed_score": inst[op] / computed,
                                 "thread_ops_per_computed_score": 32 * inst[op] / computed,
                                 "share_of_stall_samples": samp[op] / ts if ts else None}
                                for op in ops if inst[op] > 0 or samp[op] > 0]})
    return out


def smi_window(smi, r):
    """The nvidia-smi samples inside round r, less its first 0.3 s (the switch between cases)."""
    return [s for s in smi if r["t_start_epoch"] + 0.3 <= s["t"] <= r["t_end_epoch"]]


def implied_clocks(ncu, case_id, median_s):
    """implied_sm_mhz_from_<tag>_cycles: each ncu run's SM cycles of the case over median_s."""
    out = {}
    for tag, lst in ncu.items():
        for n in lst:
            if n["id"] == case_id and n.get("sm_cycles_elapsed_avg"):
                mhz = n["sm_cycles_elapsed_avg"] / median_s / 1e6
                out[f"implied_sm_mhz_from_{tag}_cycles"] = mhz
    return out


def mode_summarize(args):
    order = json.load(open(args.order))["order"]
    res = {"what": "cuDNN forward (SDPBackend.CUDNN_ATTENTION, fp16), 8 cases, ncu per-pipe "
                   "counters; see NOTES_pipes.md", "ncu": {}}
    for tag, path in (("clock_none", args.ncu_none), ("clock_base", args.ncu_base)):
        if path and os.path.exists(path):
            res["ncu"][tag] = summarize_ncu(read_ncu_csv(path), order, tag)
    smi = parse_smi(args.smi)
    if args.free and os.path.exists(args.free):
        free = json.load(open(args.free))
        fr = []
        for c in free["cases"]:
            rounds = []
            for r in c["rounds"]:
                w = smi_window(smi, r)
                rounds.append({"round": r["round"], "median_s": r["median_s"],
                               "calls": r["calls"], "smi_samples": len(w),
                               "smi_sm_mhz_median": med([s["sm"] for s in w]),
                               "smi_sm_mhz_min": min([s["sm"] for s in w], default=None),
                               "smi_sm_mhz_max": max([s["sm"] for s in w], default=None),
                               "smi_mem_mhz_median": med([s["mem"] for s in w]),
                               "smi_power_w_median": med([s["power"] for s in w]),
                               "smi_temp_c_median": med([s["temp"] for s in w if s["temp"]]),
                               "smi_reasons": sorted({s["reasons"] for s in w if s["reasons"]})})
            entry = {"id": c["id"], "case": case_key(c["problem"]), "rounds": rounds,
                     "median_s": med([r["median_s"] for r in rounds])}
            entry.update(implied_clocks(res["ncu"], c["id"], entry["median_s"]))
            fr.append(entry)
        res["free_run"] = {"seconds_total": free.get("seconds_total"), "cases": fr}
    if smi:
        busy = [s for s in smi if s["power"] > 150]
        res["smi_all"] = {"samples": len(smi), "samples_over_150W": len(busy),
                          "sm_mhz_median_over_150W": med([s["sm"] for s in busy]),
                          "sm_mhz_min_over_150W": min([s["sm"] for s in busy], default=None),
                          "sm_mhz_max_over_150W": max([s["sm"] for s in busy], default=None),
                          "power_w_median_over_150W": med([s["power"] for s in busy]),
                          "power_w_max": max(s["power"] for s in smi)}
    if args.source_csv and os.path.exists(args.source_csv):
        res["sass_opcodes"] = opcode_table(args.source_csv, args.source_order)
    if args.sustained_free and os.path.exists(args.sustained_free):
        ssmi = parse_smi(args.sustained_smi)
        sus = []
        for c in json.load(open(args.sustained_free))["cases"]:
            r = c["rounds"][0]
            w = smi_window(ssmi, r)
            tail = [s for s in w if s["t"] >= r["t_start_epoch"] + 3]
            e = {"id": c["id"], "case": case_key(c["problem"]),
                 "seconds": r["t_end_epoch"] - r["t_start_epoch"], "calls": r["calls"],
                 "median_s": r["median_s"], "p10_s": r["p10_s"], "p90_s": r["p90_s"],
                 "smi_samples": len(w), "smi_sm_mhz_median": med([s["sm"] for s in w]),
                 "smi_sm_mhz_median_after_3s": med([s["sm"] for s in tail]),
                 "smi_sm_mhz_min": min([s["sm"] for s in w], default=None),
                 "smi_sm_mhz_max": max([s["sm"] for s in w], default=None),
                 "smi_power_w_median": med([s["power"] for s in w]),
                 "smi_reasons": sorted({s["reasons"] for s in w if s["reasons"]})}
            e.update(implied_clocks(res["ncu"], c["id"], r["median_s"]))
            sus.append(e)
        res["sustained_single_case"] = sus
    json.dump(res, open(args.out, "w"), indent=1)
    # short table to stdout
    for tag, lst in res["ncu"].items():
        print(f"== ncu {tag}")
        for n in lst:
            per = n["warp_inst_per_computed_score"]
            top = {k: round(v, 4) for k, v in per.items() if v > 0.002}
            print(f"{n['case']:28} clk {n['sm_clock_hz'] and n['sm_clock_hz'] / 1e6:7.0f} MHz "
                  f"t {n['gpu_time_s'] and n['gpu_time_s'] * 1e3:7.3f} ms tensor "
                  f"{n.get('tensor_active_of_active_cycles', 0):.3f} issue "
                  f"{n.get('issue_active_of_smsp_active_cycles', 0):.3f} {top}")
    for e in res.get("free_run", {}).get("cases", []):
        print(e["case"], round(e["median_s"] * 1e3, 3), "ms",
              {k: round(v) for k, v in e.items() if k.startswith("implied")},
              [(r["smi_sm_mhz_median"], r["smi_power_w_median"]) for r in e["rounds"]])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("select-metrics")
    p.add_argument("query")
    p = sub.add_parser("list")
    p = sub.add_parser("ncu")
    p.add_argument("--out", required=True)
    p.add_argument("--only", default="", help="comma-separated case ids (default: all 8)")
    p = sub.add_parser("free")
    p.add_argument("--out", required=True)
    p.add_argument("--only", default="", help="comma-separated case ids (default: all 8)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds-per-case", type=float, default=1.5)
    p.add_argument("--batch", type=int, default=20)
    p = sub.add_parser("summarize")
    p.add_argument("--order", required=True)
    p.add_argument("--ncu-none")
    p.add_argument("--ncu-base")
    p.add_argument("--free")
    p.add_argument("--smi")
    p.add_argument("--source-csv", help="ncu --page source --csv of the SourceCounters run")
    p.add_argument("--source-order", help="cudnn_pipes.py ncu --out of that run")
    p.add_argument("--sustained-free", help="free --out of the one-case sustained run")
    p.add_argument("--sustained-smi", help="nvidia-smi samples of that run")
    p.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "select-metrics":
        print(",".join(select_metrics(a.query)))
        return 0
    if a.cmd == "list":
        for c in cases():
            print(c["id"])
        return 0
    return {"ncu": mode_ncu, "free": mode_free, "summarize": mode_summarize}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
