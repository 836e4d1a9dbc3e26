#!/usr/bin/env python3
"""Sets each case's kernel description `launch.smem_bytes_per_cta` to the main kernel's static plus
dynamic shared memory, as Nsight Compute's launch record reports them.

The runner wrote the dynamic bytes only (its launch argument); the kernels also hold static shared
memory (wg1's and the two-pass backward's mbarriers and row statistics: 1024 bytes, as `ptxas -v`
prints it), and a CTA's footprint is their sum (CUDA's occupancy calculator adds both, plus the
1 KB the system reserves per CTA, which iosim's profile holds apart). Where the dynamic bytes alone
let one more CTA fit than the sum does, a description of the dynamic bytes states a wrong
occupancy. Usage: describe_smem_from_launch.py FILE.json... (rewritten in place; prints what
changed)."""
import json
import sys

for path in sys.argv[1:]:
    with open(path) as f:
        text = f.read()
    doc = json.loads(text)
    changed = 0
    for case in doc["cases"]:
        kernel = case.get("kernel")
        if not kernel:
            continue
        main = max(case["kernels"], key=lambda k: k["metrics"]["gpu__time_duration.sum"])
        launch = main["launch"]
        total = int(launch["launch__shared_mem_per_block_dynamic"]) + int(
            launch["launch__shared_mem_per_block_static"])
        old = kernel["launch"].get("smem_bytes_per_cta")
        if old != total:
            kernel["launch"]["smem_bytes_per_cta"] = total
            changed += 1
    with open(path, "w") as f:
        f.write(json.dumps(doc, indent=1) + ("\n" if text.endswith("\n") else ""))
    print(f"{path}: {changed} of {len(doc['cases'])} descriptions now hold static + dynamic bytes")
