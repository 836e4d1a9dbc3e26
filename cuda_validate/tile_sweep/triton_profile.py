#!/usr/bin/env python3
"""Launches chosen configurations of our Triton forward (triton_fwd.py) once each on one shape, for
Nsight Compute to profile (issue #46: why two warpgroups cost more than the model says), and keeps
each configuration's Triton IR and PTX statistics.

  python3 triton_profile.py SHAPE_NAME OUT_DIR BMxBNxSxW ...   (shape from shapes.txt)

Writes OUT_DIR/launches.json: the configurations in launch order (one launch each after a compile
launch on a tiny problem, so Nsight Compute's n-th attn_fwd launch on the full shape is the n-th
entry), and OUT_DIR/<config>.ttgir with the configuration's TritonGPU IR.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_fwd  # noqa: E402


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    import torch
    shapes = {s["name"]: s for s in triton_fwd.read_shapes(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes.txt"))}
    shape, out = shapes[argv[1]], argv[2]
    os.makedirs(out, exist_ok=True)
    cfgs = [tuple(int(x) for x in c.split("x")) for c in argv[3:]]
    tiny = dict(shape, seq=256, batch=1, heads=1)
    compiled = {}
    for cfg in cfgs:  # compiles, on a problem whose launches are filtered out by grid size
        compiled[cfg] = triton_fwd.launch(tiny, cfg, *triton_fwd.tensors(tiny))
    torch.cuda.synchronize()
    q, k, v, o, l = triton_fwd.tensors(shape, seed=1)
    launches = []
    for cfg in cfgs:
        triton_fwd.launch(shape, cfg, q, k, v, o, l)
        torch.cuda.synchronize()
        c = compiled[cfg]
        name = "x".join(str(x) for x in cfg)
        ttgir = c.asm.get("ttgir", "")
        ptx = c.asm.get("ptx", "")
        with open(os.path.join(out, name + ".ttgir"), "w") as f:
            f.write(ttgir)
        launches.append({"config": name, "registers": c.n_regs, "spills": c.n_spills,
                         "smem_bytes": c.metadata.shared,
                         "ptx_counts": {op: len(re.findall(pat, ptx)) for op, pat in (
                             ("wgmma", r"wgmma\.mma_async"), ("bar_sync", r"bar\.sync|barrier\.sync"),
                             ("st_shared", r"st\.shared"), ("ld_shared", r"ld\.shared"),
                             ("stmatrix", r"stmatrix"), ("ldmatrix", r"ldmatrix"),
                             ("shfl", r"shfl\.sync"), ("ex2", r"ex2\.approx"))},
                         "ttgir_ops": {op: ttgir.count(op) for op in (
                             "convert_layout", "local_alloc", "local_load", "local_store",
                             "warp_group_dot", "async_copy")}})
    with open(os.path.join(out, "launches.json"), "w") as f:
        json.dump({"shape": shape, "launches": launches}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
