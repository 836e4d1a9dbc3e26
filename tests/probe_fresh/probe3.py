#!/usr/bin/env python3
"""Issue #50's third independent probe of iosim: >= 2,000 generated inputs to the CLI and the
Python package, each classified as ok, crash, internal error, hang, destructive, silent
acceptance or misleading message (probe3_run.py says how). Written from the docs and --help
alone, without reading the project's test corpus.

    python3 tests/probe_fresh/probe3.py --bin build/iosim --python-path build/python \
        [--jobs 2] [--seed 3] [--json results.json] [--only GROUP]
"""
import argparse
import collections
import concurrent.futures
import json
import os
import random
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe3_cases import (budget_cases, capped_cases, file_cases, flag_cases,  # noqa: E402
                          output_cases, semantic_cases, signal_cases)
from probe3_files import make_seeds, mutations  # noqa: E402
from probe3_run import run_case  # noqa: E402

PY_PREAMBLE = """
import iosim, sys
try:
    r = {call}
    print("OK", str(r)[:100].replace(chr(10), " "))
except BaseException as e:
    print("ERR", type(e).__name__, str(e).replace(chr(10), " ")[:400])
"""

PY_BAD_VALUES = ["None", "True", "'abc'", "-1", "1.5", "float('nan')", "2**70", "[]", "{}",
                 "object()", "''", "b'12'", "'12'", "float('inf')"]
PY_KW = {
    "run": ["seq", "batch", "heads", "kv_heads", "head_dim", "seq_kv", "block_q", "block_kv",
            "splits", "page_tokens", "threads", "stages", "dropout", "sm_clock_mhz", "seed",
            "profile", "algo", "kernel", "dtype", "pattern", "l2", "set", "causal", "execute",
            "block_table", "warpgroups", "pack_gqa", "max_seconds", "max_memory", "sqe"],
    "sweep": ["seq", "batch", "algo", "block_kv", "jobs", "dataframe", "set", "head_dim"],
    "tune": ["seq", "block_q", "block_kv", "stages", "threads", "tie_band", "top", "jobs"],
    "compare": ["algo", "kernel", "seq"],
    "kvcache": ["layers", "kv_heads", "head_dim", "requests", "arrivals", "prompt_len", "trace",
                "watermark", "block_tokens", "policy", "weights_bytes", "seed"],
    "layer": ["model", "seq", "batch", "phase", "tp", "gemm_bk", "gemm_bm", "context", "dtype"],
}
PY_GOOD = {"run": {"seq": "128"}, "sweep": {"seq": "128", "jobs": "1"},
           "tune": {"seq": "128", "block_q": "[64]", "block_kv": "[64]", "stages": "[2]",
                    "threads": "[128]", "jobs": "1"},
           "compare": {"algo": "['flash1','flash2']", "seq": "128"},
           "kvcache": {"layers": "4", "kv_heads": "2", "head_dim": "64", "requests": "50"},
           "layer": {"model": "'llama-3-8b'", "seq": "64"}}
# Keywords for which a bad-typed value may still be fine (None: the default; any number).
PY_LENIENT = {"None": {"batch", "heads", "kv_heads", "head_dim", "seq_kv", "block_q", "block_kv",
                       "splits", "page_tokens", "threads", "stages", "dropout", "sm_clock_mhz",
                       "seed", "profile", "algo", "kernel", "dtype", "pattern", "l2", "set",
                       "causal", "execute", "block_table", "warpgroups", "pack_gqa",
                       "max_seconds", "max_memory", "jobs", "dataframe", "tie_band", "top",
                       "requests", "arrivals", "prompt_len", "trace", "watermark",
                       "block_tokens", "policy", "weights_bytes", "phase", "tp", "gemm_bk",
                       "gemm_bm", "context", "dtype", "batch"}}


def py_call(fn, kwargs):
    return f"iosim.{fn}(" + ", ".join(f"**{{'{k}': {v}}}" for k, v in kwargs.items()) + ")"


def python_cases(seeds, rng):
    cases = []
    for fn, kws in PY_KW.items():
        for kw in kws:
            for v in PY_BAD_VALUES:
                args = dict(PY_GOOD[fn])
                args[kw] = v
                lenient = (kw in PY_LENIENT.get(v, set()) or
                           v == "True" and kw in ("causal", "execute", "dataframe") or
                           v == "[]" and kw in ("set", "block_q", "block_kv", "stages",
                                                "threads", "kernel") or
                           v == "2**70" and kw in ("max_seconds", "weights_bytes", "tie_band",
                                                   "sm_clock_mhz", "seed"))
                expect = "any" if lenient or v in ("-1", "1.5", "float('inf')", "'12'") else "bad"
                cases.append({"kind": "python", "group": f"py:{fn}",
                              "argv": PY_PREAMBLE.format(call=py_call(fn, args)),
                              "expect": expect, "names": [kw, kw.replace("_", "-")]})
    # The same broken files as the CLI gets, through the package.
    readers = {"profile": ("run", "profile", {"seq": "128"}),
               "kernel": ("run", "kernel", {"seq": "128"}),
               "model": ("layer", "model", {"seq": "64"}),
               "trace": ("kvcache", "trace", {"layers": "4", "kv_heads": "2", "head_dim": "64"}),
               "block_table": ("run", "block_table", {"algo": "'paged'", "batch": "2", "seq": "1",
                                                      "seq_kv": "64"}),
               "measured": ("validate", None, {})}
    for kind, (fn, kw, args) in readers.items():
        with open(seeds[kind], "rb") as f:
            data = f.read()
        ext = seeds[kind].rsplit(".", 1)[-1]
        for name, blob, expect in mutations(kind, data, rng, 22):
            fname = f"p_{kind}.{ext}"
            a = dict(args)
            if kw:
                a[kw] = repr(fname)
                call = py_call(fn, a)
            else:
                call = f"iosim.validate({fname!r})"
            cases.append({"kind": "python", "group": f"pyfile:{kind}",
                          "argv": PY_PREAMBLE.format(call=call), "expect": expect,
                          "names": [fname], "files": {fname: blob}, "mutation": name})
    # Kernel descriptions as dicts, and what the A100 lacks.
    for desc in ["{}", "{'name': 1}", "{'dataflow': {'forward': 'nope'}}",
                 "{'mechanisms': {'mma': 'wgmma_rs', 'load': 'tma'}, 'dataflow': "
                 "{'forward': 'query_stationary'}, 'tiles': {'block_q': -1}}",
                 "{'tiles': {'block_q': float('nan')}}", "{'x' * 1000: 1}", "{'a': [[[[]]]]}"]:
        cases.append({"kind": "python", "group": "py:kernel_dict",
                      "argv": PY_PREAMBLE.format(call=f"iosim.run(seq=128, kernel={desc})"),
                      "expect": "bad", "names": ["kernel", "name", "dataflow", "block_q",
                                                 "tiles", "key", "mechanisms"]})
    for call in ["iosim.run(seq=128, algo='flash3', profile='a100-sxm4-40gb')",
                 "iosim.run(seq=128, kernel='flash3', profile='a100-sxm4-40gb')",
                 "iosim.layer(model='llama-3-8b', seq=64, gemm_bk=1024)",
                 "iosim.layer(model='llama-3-8b', seq=64, gemm_bm=3)",
                 "iosim.kvcache(layers=4, kv_heads=2, head_dim=64, arrivals='poisson:1e-300')",
                 "iosim.validate('/nonexistent')", "iosim.validate('/dev/zero')",
                 "iosim.sweep(seq='1:99999999999:+1')", "iosim.run(seq=128, set='sm.count=0')",
                 "iosim.run(seq=128, set=['sm.count=1', 'sm.count=2'])",
                 "iosim.run(seq=128, max_seconds=-1)", "iosim.run(seq=128, max_memory='1K')"]:
        cases.append({"kind": "python", "group": "py:semantic",
                      "argv": PY_PREAMBLE.format(call=call), "expect": "bad", "names": []})
    return cases


def prepare(case, workdir):
    for name, what in case.get("files", {}).items():
        path = os.path.join(workdir, name)
        if isinstance(what, bytes):
            with open(path, "wb") as f:
                f.write(what)
        elif what == "dir":
            os.mkdir(path)
        elif what == "fifo":
            os.mkfifo(path)
        elif what == "loop":
            os.symlink(name, path)
        elif what == "sparse":
            with open(path, "wb") as f:
                f.truncate(3 << 30)
        elif what[0] == "link":
            os.symlink(what[1], path)
        elif what[0] == "hardlink":
            with open(os.path.join(workdir, what[1]), "w") as f:
                f.write("SENTINEL\n")
            os.link(os.path.join(workdir, what[1]), path)
    for out in case.get("outputs", []):
        path = os.path.join(workdir, out)
        if not os.path.lexists(path):
            with open(path, "w") as f:
                f.write(f"SENTINEL {case['id']}\n")
    case["argv"] = (case["argv"] if case["kind"] == "python" else
                    [a.replace("@ABS", workdir) for a in case["argv"]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/iosim")
    ap.add_argument("--python-path", default="build/python")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--only", default="", help="run only the cases whose group starts with one of these (comma list)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    base = tempfile.mkdtemp(prefix="probe3_")
    rng = random.Random(args.seed)
    seeds = make_seeds(base, binary, repo)
    cases = (flag_cases(binary, seeds, rng, 9) + file_cases(seeds, rng, 34) +
             output_cases(seeds, rng) + signal_cases(seeds, rng, 80) + capped_cases(seeds) +
             semantic_cases(seeds) + python_cases(seeds, rng) + budget_cases(seeds))
    only = tuple(args.only.split(","))
    cases = [c for c in cases if c.get("group", "").startswith(only)]
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.python_path), IOSIM=binary)
    env.pop("IOSIM_CHARTJS", None)
    for i, c in enumerate(cases):
        c["id"] = i
    print(f"{len(cases)} inputs; work folder {base}", flush=True)

    def one(case):
        workdir = os.path.join(base, f"c{case['id']}")
        os.mkdir(workdir)
        prepare(case, workdir)
        result = run_case(case, binary, args.python, env, workdir)
        result["mutation"] = case.get("mutation", "")
        if result["class"] == "ok":
            shutil.rmtree(workdir, ignore_errors=True)
        return result

    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(one, cases):
            results.append(r)
            if r["class"] != "ok":
                argv = r["argv"] if r["kind"] != "python" else r["argv"].split("r = ")[1].split(
                    "\n")[0]
                print(f"[{r['class']}] #{r['id']} {r['group']} {r.get('mutation', '')} :: "
                      f"{argv if isinstance(argv, str) else ' '.join(map(str, argv))[:300]}\n"
                      f"    {r['detail'][:300]}", flush=True)
    counts = collections.Counter(r["class"] for r in results)
    kinds = collections.Counter(r["kind"] for r in results)
    print("\nclasses:", dict(counts), "inputs:", len(results), dict(kinds))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if set(counts) <= {"ok"} else 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
