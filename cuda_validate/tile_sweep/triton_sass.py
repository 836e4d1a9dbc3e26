#!/usr/bin/env python3
"""Every Triton tile-sweep configuration's compiled machine code (issue #46): a compile-time fact
a description can state blind, as registers and spills are. For each (d, causal) of shapes.txt and
each configuration of triton_fwd.configs(), compiles the kernel on a tiny problem (in parallel
processes) and writes OUT_DIR/d<d>_c<causal>_<BMxBNxSxW>.cubin; run_sass.sh disassembles them.

  python3 triton_sass.py SHAPES OUT_DIR
"""
import multiprocessing as mp
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_fwd  # noqa: E402


def compile_one(job):
    d, causal, cfg, out = job
    shape = {"d": d, "causal": causal, "seq": 256, "batch": 1, "heads": 1}
    name = f"d{d}_c{int(causal)}_" + "x".join(str(x) for x in cfg)
    try:
        compiled = triton_fwd.launch(shape, cfg, *triton_fwd.tensors(shape))
    except Exception as e:  # out of resources: no machine code to keep
        return f"{name}: {type(e).__name__}"
    with open(os.path.join(out, name + ".cubin"), "wb") as f:
        f.write(compiled.asm["cubin"])
    return None


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    shapes = triton_fwd.read_shapes(argv[1])
    os.makedirs(argv[2], exist_ok=True)
    jobs = sorted({(s["d"], s["causal"], c, argv[2]) for s in shapes for c in triton_fwd.configs()})
    with mp.get_context("spawn").Pool(min(14, mp.cpu_count())) as pool:
        for err in pool.map(compile_one, jobs, chunksize=1):
            if err:
                print(err, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
