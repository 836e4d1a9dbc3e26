#!/usr/bin/env python3
"""Instructions per K/V step of every tile-sweep configuration, from its machine code (issue #46):
a compile-time fact, as registers and spills are, that a description can state blind.

  python3 sass_summary.py SASS_DIR OUT.json    (SASS_DIR: run_sass.sh's sass.tar.gz unpacked:
                                                cuda.sass and triton/*.sass)

A configuration's K/V loop is the outermost backward branch whose body holds tensor instructions
(HGMMA or HMMA); Triton's causal kernels have two (the blocks every row sees, then the masked
ones): both are kept, in address order. Per loop: its instructions (NOPs left out) and their mix:
tensor, sfu (MUFU), fp32 (FFMA, FMUL, FADD, FMNMX, FSEL, FSETP, FCHK), convert (F2F, F2FP, I2F,
F2I), shuffle (SHFL), shared (LDS, STS, LDSM, STSM), global (LDG, STG, LDGSTS, UTMALDG, ...),
sync (BAR, SYNCS, WARPGROUP, DEPBAR, ARRIVES), branch (BRA, EXIT, ...), uniform (U*: issued once
per warp like any other) and int (the rest: address and loop arithmetic, predicates, moves).
"""
import json
import os
import re
import sys

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);")


def klass(op):
    base = op.split(".")[0]
    if base in ("HGMMA", "HMMA", "QGMMA", "IGMMA"):
        return "tensor"
    if base == "MUFU":
        return "sfu"
    if base in ("FFMA", "FMUL", "FADD", "FMNMX", "FSEL", "FSETP", "FCHK", "FSET", "FRND"):
        return "fp32"
    if base in ("F2F", "F2FP", "I2F", "F2I", "I2FP", "F2IP"):
        return "convert"
    if base == "SHFL":
        return "shuffle"
    if base in ("LDS", "STS", "LDSM", "STSM", "LDSMT"):
        return "shared"
    if base in ("LDG", "STG", "LDGSTS", "UTMALDG", "UTMASTG", "UBLKCP", "LDL", "STL", "LD", "ST",
                "LDGDEPBAR", "UTMAPF"):
        return "global"
    if base in ("BAR", "SYNCS", "WARPGROUP", "DEPBAR", "ARRIVES", "WARPSYNC", "MEMBAR", "FENCE",
                "BSSY", "BSYNC", "CCTL", "ERRBAR"):
        return "sync"
    if base in ("BRA", "EXIT", "RET", "CALL", "BRX", "JMP", "YIELD"):
        return "branch"
    if base.startswith("U"):
        return "uniform"
    return "int"


def functions(text):
    """{name: [(address, opcode, operands)]} of a cuobjdump -sass listing."""
    out, name = {}, None
    for line in text.splitlines():
        if "Function :" in line:
            name = line.split("Function :")[1].strip()
            out[name] = []
            continue
        m = LINE.search(line)
        if m and name:
            out[name].append((int(m.group(1), 16), m.group(3), m.group(4)))
    return out


def kv_loops(instrs):
    loops = []
    for addr, op, args in instrs:
        if op.startswith("BRA"):
            t = re.search(r"0x([0-9a-f]+)", args)
            if t and int(t.group(1), 16) < addr:
                lo, hi = int(t.group(1), 16), addr
                body = [(a, o) for a, o, _ in instrs if lo <= a <= hi]
                if any(klass(o) == "tensor" for _, o in body):
                    loops.append((lo, hi, body))
    outer = [x for x in loops
             if not any(y is not x and y[0] <= x[0] and x[1] <= y[1] for y in loops)]
    result = []
    for lo, hi, body in sorted(outer):
        mix = {}
        for _, o in body:
            if o != "NOP":
                mix[klass(o)] = mix.get(klass(o), 0) + 1
        result.append({"start": hex(lo), "instructions": sum(mix.values()), "mix": mix})
    return result


def config_of_cuda(name):
    m = re.search(r"(wg1_tma|wg1_mma)_fwd_kernel<__half, (\d+), (\d+), (\d+), (\d+)(?:, (\d+))?>",
                  name)
    if not m:
        return None
    fam, bq, bkv, d, stages, warps = m.groups()
    return {"family": fam, "d": int(d), "block_q": int(bq), "block_kv": int(bkv),
            "stages": int(stages), "warps": int(warps) if warps else 4}


def demangle(names):
    import subprocess
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                             check=True).stdout.splitlines()
        return dict(zip(names, out))
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = []
    cuda = functions(open(os.path.join(argv[1], "cuda.sass")).read())
    plain = demangle(list(cuda))
    for name, instrs in cuda.items():
        cfg = config_of_cuda(plain[name])
        if cfg:
            rows.append(dict(cfg, causal=None, loops=kv_loops(instrs)))
    tdir = os.path.join(argv[1], "triton")
    for f in sorted(os.listdir(tdir)):
        m = re.match(r"d(\d+)_c(\d)_(\d+)x(\d+)x(\d+)x(\d+)\.sass$", f)
        if not m:
            continue
        d, c, bq, bkv, stages, warps = (int(x) for x in m.groups())
        fn = functions(open(os.path.join(tdir, f)).read())
        instrs = max(fn.values(), key=len)
        rows.append({"family": "triton", "d": d, "block_q": bq, "block_kv": bkv, "stages": stages,
                     "warps": warps, "causal": bool(c), "loops": kv_loops(instrs)})
    rows.sort(key=lambda r: (r["family"], r["d"], str(r["causal"]), r["block_q"], r["block_kv"],
                             r["stages"], r["warps"]))
    with open(argv[2], "w") as f:
        json.dump({"what": "instructions per K/V loop iteration, per warp, from cuobjdump -sass "
                           "(tile_sweep/run_sass.sh, sass_summary.py)", "configurations": rows},
                  f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
