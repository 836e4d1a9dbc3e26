#!/usr/bin/env python3
"""Add retime.py's GPU-only times to a committed PyTorch SDPA measurement file (off the device).

measure.py's CUDA-event times hold the host's dispatch wherever it outlasts the kernels (see
retime.py): at N = 1024 the host needs 150-200 us to enqueue cuDNN's forward and 600-750 us for
forward + backward, more than the GPU needs to run them. retime.py timed the same cases with the
GPU kept busy while the host enqueued them. This script writes, per case found in both files:

  time_queued_s          median over retime's sets of the queued total (every role back to back)
  repeats.spread.time_queued_s   (max - min) / median of the sets' queued totals
  time_kernels_s         median over sets of the profiler's sum of kernel durations (a check)
  time_host_enqueue_s    median over sets of the host's time to enqueue the roles
  time_free_running_rerun_s  the committed method's time again, in retime's run (a check that
                         the host, not the day, made the difference)
  roles[i].time_queued_s the queued time of each role

and a file-level "retime" object naming the source and how it was made. `iosim validate` compares
blind time with time_queued_s where a case has it (the kernels' time, which iosim predicts), else
with time_free_running_s. The committed time_free_running_s values are left as they were.

Usage: merge_retime.py MEASURED.json RETIME.json SOURCE_TEXT
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from merge_hold_times import median, set_queued, write_measured  # noqa: E402


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, retime_path, source = sys.argv[1:]
    with open(path) as f:
        measured = json.load(f)
    with open(retime_path) as f:
        retime = json.load(f)
    by_id = {c["id"]: c for c in retime["cases"] if c.get("sets")}
    merged = 0
    for case in measured["cases"]:
        r = by_id.get(case["id"])
        if r is None:
            continue
        sets = r["sets"]
        set_queued(case, [s["queued"]["total_s"] for s in sets])
        kernels = [s["kernels"]["total_s"] for s in sets if "total_s" in s.get("kernels", {})]
        if kernels:
            case["time_kernels_s"] = median(kernels)
        case["time_host_enqueue_s"] = median([s["queued"]["host_enqueue_s"] for s in sets])
        case["time_free_running_rerun_s"] = median([s["as_committed"]["total_s"] for s in sets])
        roles = case.get("roles") or []
        for i, name in enumerate(r.get("roles", [])):
            role = next((x for x in roles if x.get("role") == name), None)
            if role is not None:
                role["time_queued_s"] = median([s["queued"]["roles_s"][i] for s in sets])
        merged += 1
    write_measured(path, measured, {
        "source": source,
        "method": "cuda_validate/pytorch_sdpa/retime.py: CUDA events around the roles after "
                  "torch.cuda._sleep kept the GPU busy for longer than the host took to enqueue "
                  "them (checked per repetition), " + str(retime.get("reps")) + " repetitions "
                  "per set, " + str(retime.get("sets")) + " sets alternating with the committed "
                  "method; merged by cuda_validate/pytorch_sdpa/merge_retime.py",
        "torch": retime.get("torch"),
        "cases": merged,
    }, merged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
