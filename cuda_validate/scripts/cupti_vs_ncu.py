#!/usr/bin/env python3
"""Cross-check the CUPTI Range Profiler counters (iosim_cuda_runner --mode cupti) against
Nsight Compute's (run_suite.sh's measurements.json) on the same cases, role by role.

Both paths start every measured launch from a cold L2: ncu flushes and invalidates caches
before each kernel (--cache-control all); the CUPTI path reads a never-written 3x-L2 buffer
before each replay pass (cupti/l2_flush.cuh). ncu locks the SM clock to base, the CUPTI
path does not, so durations differ by about the clock ratio; byte counters should not.

A role that launches several kernels (a cuBLAS split-K GEMM) is one CUPTI range but several
ncu rows, each after its own flush: such roles are listed but not judged.

Optional inputs give the noise floors the difference is judged against: the same ncu run
repeated, ncu with its clocks not locked (as CUPTI's), the same CUPTI run repeated.

Writes a Markdown report (--md) and a JSON file (--json). A byte counter is outside tolerance
when it differs by more than --tolerance (default 1%) and by more than 64 KiB (2048 sectors):
a kernel whose output stays in L2 writes a few hundred bytes to DRAM, where 1% means nothing.
"""
import argparse
import json
import sys

BYTE_METRICS = [
    ("dram__bytes_read.sum", "DRAM read bytes"),
    ("dram__bytes_write.sum", "DRAM write bytes"),
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2 read sectors (slices)"),
    ("lts__t_sectors_srcunit_tex_op_write.sum", "L2 write sectors"),
    ("l1tex__m_xbar2l1tex_read_sectors.sum", "L2->SM sectors (xbar)"),
]
ABS_FLOOR = {"dram__bytes_read.sum": 65536, "dram__bytes_write.sum": 65536}  # bytes
ABS_FLOOR_SECTORS = 2048  # the same 64 KiB for the sector counters


def outside(name, cupti_value, ncu_value, tolerance):
    diff = abs(cupti_value - ncu_value)
    return diff > tolerance * abs(ncu_value) and diff > ABS_FLOOR.get(name, ABS_FLOOR_SECTORS)


def rel(a, b):
    if a is None or b is None:
        return None
    if b == 0:
        return 0.0 if a == 0 else None
    return (a - b) / b


def load_rows(path, key):
    """The document at path and its (case id, row) pairs, the rows of each case's `key` list."""
    with open(path) as f:
        doc = json.load(f)
    return doc, [(c["id"], row) for c in doc["cases"] for row in c.get(key, [])]


def ncu_values(path):
    """(case, role) -> {"kernels": n, metric: value summed over the role's kernels}."""
    doc, rows = load_rows(path, "kernels")
    out = {}
    for case, k in rows:
        e = out.setdefault((case, k["role"]), {"kernels": 0})
        e["kernels"] += 1
        for name, v in (k.get("metrics") or {}).items():
            if v is None:
                continue
            if name.endswith("per_second"):  # a clock: the first kernel's, not a sum
                e.setdefault(name, v)
            else:
                e[name] = e.get(name, 0) + v
    return doc, out


def cupti_values(path):
    doc, rows = load_rows(path, "roles")
    out = {}
    for case, r in rows:
        e = dict(r.get("cupti_metrics") or {})
        e["kernels"] = 1
        out[(case, r["role"])] = e
    return doc, out


def compare(a, b, judged_keys, tolerance):
    """Worst |a - b| / b per byte metric over judged keys, and the keys outside tolerance."""
    worst, failures = {}, []
    for name, _ in BYTE_METRICS:
        diffs = []
        for key in judged_keys:
            va, vb = a.get(key, {}).get(name), b.get(key, {}).get(name)
            if va is None or vb is None:
                continue
            d = rel(va, vb)
            if d is not None:
                diffs.append(abs(d))
            if outside(name, va, vb, tolerance):
                failures.append(f"{key[0]} {key[1]} {name}: {va:.6g} vs {vb:.6g}" +
                                ("" if d is None else f" ({d * 100:+.2f}%)"))
        worst[name] = max(diffs) if diffs else None
    return worst, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ncu", required=True,
                    help="measurements.json from run_suite.sh (base clocks)")
    ap.add_argument("--ncu-repeat", help="the same run again (ncu's own run-to-run spread)")
    ap.add_argument("--ncu-unlocked", help="run_suite.sh with NCU_CLOCK_CONTROL=none")
    ap.add_argument("--cupti", required=True, help="iosim_cuda_runner --mode cupti output")
    ap.add_argument("--cupti-repeat", help="the same CUPTI run again")
    ap.add_argument("--cupti-variant", action="append", default=[], metavar="NAME=FILE",
                    help="another CUPTI run (e.g. another L2 flush), compared with ncu too")
    ap.add_argument("--md", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--tolerance", type=float, default=0.01)
    args = ap.parse_args()
    ncu_doc, ncu = ncu_values(args.ncu)
    cupti_doc, cupti = cupti_values(args.cupti)
    extra = {}
    for label, path, reader in (("ncu_repeat", args.ncu_repeat, ncu_values),
                                ("ncu_unlocked", args.ncu_unlocked, ncu_values),
                                ("cupti_repeat", args.cupti_repeat, cupti_values)):
        if path:
            extra[label] = reader(path)[1]

    variants = []
    for spec in args.cupti_variant:
        name, _, path = spec.partition("=")
        variants.append((name, cupti_values(path)[1]))

    keys = list(cupti.keys())
    judged = [k for k in keys if ncu.get(k, {}).get("kernels") == 1]
    pairs = [("CUPTI vs ncu, SM clock locked to base by ncu", cupti, ncu)]
    if "ncu_unlocked" in extra:
        pairs.append(("CUPTI vs ncu, neither locking clocks", cupti, extra["ncu_unlocked"]))
    for name, values in variants:
        pairs.append((f"CUPTI ({name}) vs ncu, SM clock locked to base by ncu", values, ncu))
        if "ncu_unlocked" in extra:
            pairs.append((f"CUPTI ({name}) vs ncu, neither locking clocks", values,
                          extra["ncu_unlocked"]))
    if "cupti_repeat" in extra:
        pairs.append(("CUPTI vs CUPTI (repeat)", extra["cupti_repeat"], cupti))
    if "ncu_repeat" in extra:
        pairs.append(("ncu vs ncu (repeat, base clocks)", extra["ncu_repeat"], ncu))
    if "ncu_unlocked" in extra:
        pairs.append(("ncu clocks not locked vs base", extra["ncu_unlocked"], ncu))
    results = [(label, *compare(a, b, judged, args.tolerance)) for label, a, b in pairs]

    dev = cupti_doc.get("device", {}).get("name", "?")
    setup = cupti_doc.get("cupti") or {}
    lines = [f"# CUPTI Range Profiler vs Nsight Compute ({dev})", "",
             f"Cases: {len(cupti_doc['cases'])}; roles: {len(keys)}, judged (one kernel per "
             f"role): {len(judged)}. Tolerance on byte counters: {args.tolerance * 100:.1f}% "
             "(and 64 KiB: a kernel whose output stays dirty in L2 writes a few hundred bytes to "
             "DRAM, where a percentage means nothing).", "",
             f"CUPTI: chip `{setup.get('chip')}`, {setup.get('passes_needed')} passes per range, "
             f"{setup.get('range')}; flush: {setup.get('cache_flush')}; clocks: "
             f"{setup.get('clocks')}. Metrics CUPTI did not offer: "
             f"{setup.get('metrics_unavailable') or 'none'}.", "",
             "CUPTI range holding only an empty kernel (what the range itself adds): " +
             "; ".join(f"DRAM write {b_.get('dram__bytes_write.sum', 0) / 1e6:.3f} MB, read "
                       f"{b_.get('dram__bytes_read.sum', 0) / 1e6:.3f} MB"
                       for b_ in setup.get("baseline_empty_kernel") or []) + ".", "",
             f"ncu: {ncu_doc.get('tools', {}).get('ncu')}, clock control "
             f"`{ncu_doc.get('settings', {}).get('ncu', {}).get('clock_control')}`, cache control "
             f"`{ncu_doc.get('settings', {}).get('ncu', {}).get('cache_control')}`.", "",
             "## Worst relative difference per counter over the judged roles", "",
             "| comparison | " + " | ".join(label for _, label in BYTE_METRICS) + " |",
             "| --- | " + " | ".join("---:" for _ in BYTE_METRICS) + " |"]
    for label, worst, failures in results:
        cells = []
        for name, _ in BYTE_METRICS:
            w = worst[name]
            n_out = sum(1 for x in failures if f" {name}:" in x)
            cells.append("-" if w is None else
                         f"{w * 100:.2f}%" + (f" ({n_out} out)" if n_out else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "## Per role: CUPTI / ncu (base clocks), difference", "",
              "| case | role | DRAM read | DRAM write | L2 read sectors | L2 write sectors | "
              "xbar sectors | smem wavefronts | tensor inst | time CUPTI / ncu (SM clock) |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]

    def cell(a, b, name):
        va, vb = a.get(name), b.get(name)
        if va is None or vb is None:
            return "-"
        d = rel(va, vb)
        return f"{va:.4g} / {vb:.4g} ({'-' if d is None else f'{d * 100:+.2f}%'})"

    rows = []
    for key in keys:
        a, b = cupti[key], ncu.get(key, {})
        ta, tb = a.get("gpu__time_duration.sum"), b.get("gpu__time_duration.sum")
        ca = a.get("sm__cycles_elapsed.avg.per_second") or 0
        cb = b.get("sm__cycles_elapsed.avg.per_second") or 0
        tcell = "-" if ta is None or tb is None else \
            f"{ta / 1e3:.1f} / {tb / 1e3:.1f} us ({ca / 1e9:.2f} / {cb / 1e9:.2f} GHz)"
        note = "" if key in judged else f" ({b.get('kernels', 0)} ncu kernels: not judged)"
        lines.append(f"| {key[0]} | {key[1]}{note} | "
                     + " | ".join(cell(a, b, n) for n, _ in BYTE_METRICS) + " | "
                     + cell(a, b, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") + " | "
                     + cell(a, b, "sm__inst_executed_pipe_tensor.sum") + f" | {tcell} |")
        rows.append({"case": key[0], "role": key[1], "judged": key in judged,
                     "cupti": a, "ncu": b,
                     **{label: extra[label].get(key) for label in extra},
                     **{f"cupti_{name}": values.get(key) for name, values in variants}})
    if "ncu_unlocked" in extra:
        u = extra["ncu_unlocked"]
        lines += ["", "## Per role: CUPTI / ncu with clocks not locked, difference", "",
                  "| case | role | DRAM write | L2 read sectors | SM clock CUPTI / ncu |",
                  "| --- | --- | ---: | ---: | --- |"]
        for key in keys:
            a, b = cupti[key], u.get(key, {})
            lines.append(f"| {key[0]} | {key[1]} | {cell(a, b, 'dram__bytes_write.sum')} | "
                         f"{cell(a, b, 'lts__t_sectors_srcunit_tex_op_read.sum')} | "
                         f"{(a.get('sm__cycles_elapsed.avg.per_second') or 0) / 1e9:.2f} / "
                         f"{(b.get('sm__cycles_elapsed.avg.per_second') or 0) / 1e9:.2f} GHz |")
    for label, _, failures in results:
        if failures:
            lines += ["", f"### Outside tolerance: {label}", ""] + [f"- {f}" for f in failures]
    with open(args.md, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(args.json, "w") as f:
        json.dump({"device": cupti_doc.get("device"), "cupti": setup,
                   "ncu_tools": ncu_doc.get("tools"),
                   "ncu_settings": ncu_doc.get("settings", {}).get("ncu"),
                   "tolerance": args.tolerance,
                   "comparisons": [{"label": label, "worst_abs_rel_diff": worst,
                                    "outside_tolerance": failures}
                                   for label, worst, failures in results],
                   "rows": rows}, f, indent=1, default=str)
        f.write("\n")
    print("\n".join(lines[:20]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
