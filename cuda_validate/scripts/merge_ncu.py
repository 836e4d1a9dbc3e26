#!/usr/bin/env python3
"""Merge the runner's free-running results and Nsight Compute's counters into
one measured-data file ("format": "iosim-measurements", "version": 1; see
cuda_validate/FORMAT.md).

Inputs (all written by run_suite.sh under one directory):
  runner_time.json            time-mode runner output: checks and CUDA-event times
  runner_ncu_<group>.json     ncu-mode runner output: the ordered marker list
  ncu_<group>.csv             `ncu --import ... --csv --page raw --print-units base`
  clocks_<pass>.csv           nvidia-smi samples taken during each pass
  env.json                    tool versions and ncu settings (written by run_suite.sh)

  runner_single_pass_<group>.json, single_pass_<group>.csv
                              the same group profiled again for the DRAM counters alone
                              (one replay pass; why: scripts/ncu_lib.sh); their values
                              replace the full run's, which stay under metrics_multi_pass

Pairing: see pair_group().
"""
import argparse
import csv
import datetime
import glob
import json
import os
import re
import statistics
import sys

MARKER = "iosim_marker_kernel"
COUNTER_UNITS = ("dram", "lts", "gpu", "l1tex", "sm")
LAUNCH_KEYS = (
    "launch__registers_per_thread", "launch__shared_mem_per_block_allocated",
    "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static",
    "launch__grid_size", "launch__block_size", "launch__cluster_size",
    "launch__waves_per_multiprocessor", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks", "profiler__replayer_passes",
    # Thread-block clusters and register allocation granularity (Hopper kernels such as cuDNN's
    # may launch clusters); absent from files merged before 2026-11-23.
    "launch__cluster_dim_x", "launch__cluster_dim_y", "launch__cluster_dim_z",
    "launch__cluster_max_active", "launch__registers_per_thread_allocated",
    "launch__occupancy_limit_barriers", "launch__barrier_count",
)


def read_csv_rows(path):
    """Rows of an ncu raw-page CSV as dicts, plus the units row (if any)."""
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("==")]  # ncu's own messages
    rows = list(csv.reader(lines))
    if not rows:
        return [], {}
    header = rows[0]
    body = rows[1:]
    units = {}
    if body and body[0] and (body[0][0] == "" or not body[0][0].strip().isdigit()):
        units = {h: u for h, u in zip(header, body[0]) if u}
        body = body[1:]
    return [dict(zip(header, r)) for r in body if len(r) == len(header)], units


def to_number(text):
    t = text.replace(",", "").strip()
    if t in ("", "n/a", "N/A"):
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


def parse_dims(text):
    nums = re.findall(r"\d+", text or "")
    return [int(n) for n in nums[:3]] if len(nums) >= 3 else None


def kernel_name(row):
    for key in ("Kernel Name", "Function Name", "Demangled Name"):
        if key in row:
            return row[key]
    return ""


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values),
            "samples": len(values)}


def read_clocks(path):
    """nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,... samples."""
    if not os.path.exists(path):
        return None
    sm, mem, power, temp = [], [], [], []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 5:
                continue
            sm.append(to_number(parts[1]))
            mem.append(to_number(parts[2]))
            power.append(to_number(parts[3]))
            temp.append(to_number(parts[4]))
    # Idle samples (between launches) pull the SM clock down; report busy ones too.
    busy = [s for s, p in zip(sm, power) if s is not None and p is not None and p > 150]
    return {"sm_clock_mhz": summarize(sm), "sm_clock_mhz_when_power_above_150w": summarize(busy),
            "memory_clock_mhz": summarize(mem), "power_w": summarize(power),
            "temperature_c": summarize(temp), "source": os.path.basename(path)}


def pair_group(d, prefix, group, wanted, metric_units, warnings):
    """Counters of one ncu run of one group: {(case_id, role): [kernel, ...]}.

    The runner launches iosim_marker_kernel before each role of each case, in the order of its
    marker list, and ncu profiles every launch; so the k-th marker row of the CSV is the k-th
    marker of the runner file, and the rows after it, up to the next marker, are that role's
    kernels (cuBLAS may launch more than one)."""
    runner_file = os.path.join(d, f"runner_{prefix}{group}.json")
    csv_file = os.path.join(d, f"{prefix}{group}.csv")
    with open(runner_file) as f:
        markers = json.load(f).get("markers", [])
    if not os.path.exists(csv_file):
        warnings.append(f"group {group} ({prefix}): no ncu CSV; its cases have no counters there")
        return {}
    rows, units = read_csv_rows(csv_file)
    rows.sort(key=lambda r: to_number(r.get("ID", "0")) or 0)
    n_marker_rows = sum(1 for r in rows if MARKER in kernel_name(r))
    if n_marker_rows != len(markers):
        warnings.append(f"group {group} ({prefix}): {n_marker_rows} marker kernels in the CSV, "
                        f"{len(markers)} in the runner's list; pairing stops at the shorter")
    counters = {}
    k = -1
    current = None
    for r in rows:
        if MARKER in kernel_name(r):
            k += 1
            current = markers[k] if k < len(markers) else None
            continue
        if current is None:
            warnings.append(f"group {group} ({prefix}): kernel '{kernel_name(r)[:60]}' has no marker")
            continue
        metrics, launch = {}, {}
        for key, val in r.items():
            if key in wanted or (not wanted and key.split("__")[0] in COUNTER_UNITS):
                metrics[key] = to_number(val)
                if key in units:
                    metric_units[key] = units[key]
            elif key in LAUNCH_KEYS:
                launch[key] = to_number(val)
        counters.setdefault((current["case_id"], current["role"]), []).append({
            "name": kernel_name(r),
            "grid": parse_dims(r.get("Grid Size")),
            "block": parse_dims(r.get("Block Size")),
            "metrics": metrics,
            "launch": launch,
        })
    return counters


def replace_single_pass(counters, single, names, warnings):
    """Puts the single-pass run's values of `names` into the full run's kernels (same case, role,
    launch order and kernel name); the full run's values stay under "metrics_multi_pass"."""
    replaced = 0
    for key, kernels in counters.items():
        others = single.get(key, [])
        if len(others) != len(kernels):
            warnings.append(f"{key[0]} {key[1]}: {len(others)} kernels in the single-pass run, "
                            f"{len(kernels)} in the full run; multi-pass DRAM counters kept")
            continue
        for k, o in zip(kernels, others):
            if o["name"] != k["name"] or o["launch"].get("profiler__replayer_passes") != 1:
                warnings.append(f"{key[0]} {key[1]}: single-pass kernel '{o['name'][:50]}' "
                                f"({o['launch'].get('profiler__replayer_passes')} passes) does "
                                "not match; multi-pass DRAM counters kept")
                continue
            k["metrics_multi_pass"] = {n: k["metrics"].get(n) for n in names}
            for n in names:
                k["metrics"][n] = o["metrics"].get(n)
            replaced += 1
    return replaced


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="run_suite.sh output directory")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    d = args.dir

    with open(os.path.join(d, "runner_time.json")) as f:
        timed = json.load(f)
    env = {}
    if os.path.exists(os.path.join(d, "env.json")):
        with open(os.path.join(d, "env.json")) as f:
            env = json.load(f)

    # The CSV's raw page also carries every device attribute; keep the requested
    # metrics and a few launch facts (occupancy limits, registers, replay passes).
    wanted = set(env.get("ncu", {}).get("metrics", []))
    # Counters per (case_id, role): list of kernels in launch order.
    metric_units = {}
    warnings = []
    counters = {}
    single = env.get("ncu", {}).get("single_pass_metrics", [])
    replaced = 0
    for runner_file in sorted(glob.glob(os.path.join(d, "runner_ncu_*.json"))):
        group = os.path.basename(runner_file)[len("runner_ncu_"):-len(".json")]
        full = pair_group(d, "ncu_", group, wanted, metric_units, warnings)
        counters.update(full)
        if single and os.path.exists(os.path.join(d, f"runner_single_pass_{group}.json")):
            replaced += replace_single_pass(
                full, pair_group(d, "single_pass_", group, set(single), {}, warnings), single,
                warnings)
        elif single:
            warnings.append(f"group {group}: no single-pass run; multi-pass DRAM counters kept")
    ncu_clock = {"sm": [], "dram": []}
    for kernels in counters.values():
        for k in kernels:
            ncu_clock["sm"].append(k["metrics"].get("sm__cycles_elapsed.avg.per_second"))
            ncu_clock["dram"].append(k["metrics"].get("dram__cycles_elapsed.avg.per_second"))

    cases = []
    n_pass = n_fail = n_missing = 0
    for c in timed["cases"]:
        out = {k: c.get(k) for k in ("id", "schedule", "pass", "problem", "tiling", "check")}
        if c.get("kernel") is not None:  # iosim's kernel description (wg1, two-pass backward)
            out["kernel"] = c["kernel"]
        out["time_free_running_s"] = c.get("time_free_running_s")
        out["error"] = c.get("error")
        kernels = []
        for role in c.get("roles", []):
            measured = counters.get((c["id"], role["role"]), [])
            if not measured:
                n_missing += 1
            single = len(measured) == 1
            for m in measured or [None]:
                kernels.append({
                    "name": m["name"] if m else None,
                    "role": role["role"],
                    "launcher": role["kernel"],
                    "grid": (m and m["grid"]) or role.get("grid"),
                    "block": (m and m["block"]) or role.get("block"),
                    "smem_dynamic_bytes": role.get("smem_bytes"),
                    "metrics": m["metrics"] if m else None,
                    "launch": m["launch"] if m else None,
                    **({"metrics_multi_pass": m["metrics_multi_pass"]}
                       if m and "metrics_multi_pass" in m else {}),
                    # A role timed with events covers all its launches; with several
                    # (cuBLAS split-K) the time sits on the role, see role_times_s.
                    "time_free_running_s": role.get("time_free_running_s") if single else None,
                    "time_free_running_cold_l2_s":
                        role.get("time_free_running_cold_l2_s") if single else None,
                })
        out["kernels"] = kernels
        out["role_times_s"] = {r["role"]: {"warm_l2": r.get("time_free_running_s"),
                                           "cold_l2": r.get("time_free_running_cold_l2_s")}
                               for r in c.get("roles", [])}
        passed = bool(c.get("check") and c["check"].get("passed")) and c.get("error") is None
        n_pass += passed
        n_fail += not passed
        cases.append(out)

    device = dict(timed["device"])
    result = {
        "format": "iosim-measurements",
        "version": 1,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": device,
        "clocks": {
            "free_running_pass": read_clocks(os.path.join(d, "clocks_time_pass.csv")),
            "ncu_pass": read_clocks(os.path.join(d, "clocks_ncu_pass.csv")),
            "ncu_sm_cycles_per_second": summarize(ncu_clock["sm"]),
            "ncu_dram_cycles_per_second": summarize(ncu_clock["dram"]),
        },
        "tools": env.get("tools", {}),
        "settings": {
            "ncu": env.get("ncu", {}),
            "free_running": {
                "timer": "cudaEventRecord around each launch, cudaEventSynchronize after",
                "statistic": "median",
                "reps": timed["runner"]["reps"],
                "warm_l2": "time_free_running_s: repetitions back to back; inputs left in L2 "
                           "by the previous repetition may hit (all of Q, K, V fit in L2 for "
                           "small cases)",
                "cold_l2": "time_free_running_cold_l2_s: cudaMemsetAsync over l2_flush_bytes "
                           "before each repetition, outside the timed events",
                "l2_flush_bytes": timed["runner"]["l2_flush_bytes"],
                "clocks": "not locked (GPU boost as found)",
            },
        },
        "metric_units": metric_units,
        "summary": {"cases": len(cases), "checks_passed": n_pass, "checks_failed_or_error": n_fail,
                    "roles_without_counters": n_missing,
                    "kernels_with_single_pass_dram": replaced, "warnings": warnings},
        "cases": cases,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"merged {len(cases)} cases ({n_pass} passed, {n_fail} failed/error, "
          f"{n_missing} roles without counters) -> {args.out}")
    for w in warnings:
        print("warning:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
