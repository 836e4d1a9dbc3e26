#!/usr/bin/env python3
"""Time PyTorch SDPA cases again, to separate the GPU's time from the host's (device machine).

measure.py's time mode records an event, calls the role (F.scaled_dot_product_attention, or
out.backward(dO)) and records a second event, with the GPU idle before the first. The first
event then completes as soon as it is enqueued, and the interval holds the host's time to
dispatch the role (PyTorch, the cuDNN frontend's graph lookup, the launches) wherever that is
longer than the GPU's time to reach the kernels: at N = 1024 cuDNN's forward measured 85 us
this way against 53 us for the kernel alone under Nsight Compute (at the base clock).

This script times each case three ways, in sets that alternate, so the three see the same
clocks and the same power state:

  as_committed  exactly measure.py's warm-L2 timing (events around the roles, GPU idle before);
  queued        the same events and roles, after torch.cuda._sleep() has kept the GPU busy for
                longer than the host takes to enqueue them: the interval is the GPU's alone
                (the host's enqueue time is recorded next to it, to show the sleep covered it);
  kernels       torch.profiler (CUPTI activity records): the sum of the GPU durations of the
                kernels each role launched, gaps between them left out.

Writes --out (JSON): per case the median over --reps of each way per set, per role and in total,
the host's enqueue time, and the kernels the profiler saw. Nothing here checks outputs again;
the committed file's cases were checked against float64 when they were measured.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (the suites, the inputs, the roles: one definition of each)

median = measure.median


def time_as_committed(torch, roles, reps):
    n = len(roles)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    per_role, total = [[] for _ in range(n)], []
    for _ in range(reps):
        measure.enqueue_roles(roles, ev)
        torch.cuda.synchronize()
        measure.append_intervals(ev, per_role, total)
    return [median(x) for x in per_role], median(total)


def time_queued(torch, roles, reps, sleep_cycles):
    n = len(roles)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    per_role, total, host, covered = [[] for _ in range(n)], [], [], 0
    sleep_ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for _ in range(reps):
        sleep_ev[0].record()
        torch.cuda._sleep(sleep_cycles)
        t0 = time.perf_counter()
        measure.enqueue_roles(roles, ev)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        host.append(t1 - t0)
        # The sleep covered the host's enqueue when the first event completed after the host
        # had enqueued everything: the sleep lasted longer than the enqueue took.
        sleep_s = sleep_ev[0].elapsed_time(ev[0]) * 1e-3
        covered += sleep_s > (t1 - t0)
        measure.append_intervals(ev, per_role, total)
    return [median(x) for x in per_role], median(total), median(host), covered


def time_kernels(torch, roles, reps):
    """Sum of each role's kernel durations (CUPTI activity) per repetition, median over reps."""
    from torch.profiler import ProfilerActivity, profile
    n = len(roles)
    per_role = [[] for _ in range(n)]
    names = [dict() for _ in range(n)]
    for _ in range(reps):
        for r, (_, fn) in enumerate(roles):
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            s = 0.0
            for e in prof.events():
                if str(getattr(e, "device_type", "")).endswith("CUDA") and e.name and \
                        not e.name.startswith(("Memcpy", "Memset", "cuda")):
                    dur_us = getattr(e, "device_time", None)
                    if dur_us is None:
                        dur_us = getattr(e, "cuda_time", 0.0)
                    s += dur_us * 1e-6
                    names[r][e.name] = names[r].get(e.name, 0) + 1
            per_role[r].append(s)
    return [median(x) for x in per_role], [{k: v // reps for k, v in d.items()} for d in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default="cudnn", choices=("sdpa", "cudnn", "cudnn_gqa"))
    ap.add_argument("--only", default="", help="comma-separated id prefixes (default: all)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--sleep-ms", type=float, default=3.0,
                    help="how long the GPU sleeps before each queued repetition")
    ap.add_argument("--budget-s", type=float, default=400)
    args = ap.parse_args()
    import torch
    start = time.time()
    dev = measure.Device("")
    prefixes = [p for p in args.only.split(",") if p]
    suite = measure.build_suite(args.suite)
    all_ids = [c["id"] for c in suite]
    cases = [c for c in suite if not prefixes or any(c["id"].startswith(p) for p in prefixes)]
    clock_hz = torch.cuda.get_device_properties(0).clock_rate * 1e3 \
        if hasattr(torch.cuda.get_device_properties(0), "clock_rate") else 1.98e9
    sleep_cycles = int(args.sleep_ms * 1e-3 * max(clock_hz, 1.98e9))
    out = {"what": __doc__, "torch": measure.pytorch_info(), "device": dev.device,
           "reps": args.reps, "sets": args.sets, "sleep_cycles": sleep_cycles, "cases": []}
    for s in range(args.sets):
        for case in cases:
            if time.time() - start > args.budget_s:
                out["stopped"] = f"budget of {args.budget_s} s reached in set {s}"
                break
            index = all_ids.index(case["id"])
            rec = next((c for c in out["cases"] if c["id"] == case["id"]), None)
            if rec is None:
                rec = {"id": case["id"], "pass": case["pass"], "problem": case["problem"],
                       "sets": []}
                out["cases"].append(rec)
            try:
                run = measure.CaseRun(case, index)
                roles = run.roles()
                with run.context():
                    run.run_all()
                    run.run_all()
                    torch.cuda.synchronize()
                    a_roles, a_total = time_as_committed(torch, roles, args.reps)
                    q_roles, q_total, host, covered = time_queued(torch, roles, args.reps,
                                                                  sleep_cycles)
                    entry = {"as_committed": {"total_s": a_total, "roles_s": a_roles},
                             "queued": {"total_s": q_total, "roles_s": q_roles,
                                        "host_enqueue_s": host, "covered_reps": covered}}
                    try:
                        k_roles, k_names = time_kernels(torch, roles, max(3, args.reps // 2))
                        entry["kernels"] = {"total_s": sum(k_roles), "roles_s": k_roles,
                                            "names": k_names}
                    except Exception as e:  # the profiler is a cross-check only
                        entry["kernels"] = {"error": repr(e)}
                rec["roles"] = [r for r, _ in roles]
                rec["sets"].append(entry)
                del run
                torch.cuda.empty_cache()
            except Exception as e:
                rec.setdefault("errors", []).append(repr(e))
            print(f"[{time.time() - start:6.1f}s] set {s} {case['id']}: "
                  f"{json.dumps(rec['sets'][-1]['as_committed']['total_s'] if rec['sets'] else None)}"
                  f" vs queued {rec['sets'][-1]['queued']['total_s'] if rec['sets'] else None}",
                  flush=True)
        else:
            continue
        break
    out["elapsed_s"] = time.time() - start
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
