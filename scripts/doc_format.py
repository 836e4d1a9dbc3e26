"""What the documents' values are made of (scripts/doc_values.py): the JSON wrapper, the number
formatters (as iosim writes numbers: reports/writers.cpp human_bytes, human_seconds), helpers that
pick a part of iosim's output, and V, one value.
"""

import json
import math
import os
import re
import sys

__all__ = ["V", "J", "wrap", "g", "f", "B", "T", "pct", "comma", "si", "signed_pct", "median", "policy",
           "summary", "grab", "measured_case", "cudnn_errors", "bad_input_corpus_size", "math"]


class V:
    """One value of the documents: V(RUN, PATH, FORMAT) is FORMAT(the JSON of run RUN at PATH), where
    PATH is keys and [i] (`kernels[0].grid[1]`) and FORMAT is str unless given; V(RUN, FUNCTION) is
    FUNCTION(j, R), j the run's JSON (objects by attribute: j.counters.flops), R("OTHER") another
    run's JSON, R.runner the runner itself. RUN None: no run (FUNCTION reads committed files)."""

    def __init__(self, run, how, fmt=str):
        self.run, self.how, self.fmt = run, how, fmt

    def runs(self, known):
        """The runs this value reads: its own and the names of known runs its function mentions."""
        out = {self.run} - {None}
        if callable(self.how):
            stack = [self.how.__code__]
            while stack:
                code = stack.pop()
                for c in code.co_consts:
                    if isinstance(c, str) and c in known:
                        out.add(c)
                    elif isinstance(c, tuple):
                        out.update(x for x in c if isinstance(x, str) and x in known)
                    elif hasattr(c, "co_consts"):
                        stack.append(c)
        return out

    def compute(self, R):
        j = None if self.run is None else R(self.run)
        if callable(self.how):
            return str(self.how(j, R))
        for key in re.findall(r"[A-Za-z_]\w*|\[\d+\]", self.how):
            j = j[int(key[1:-1])] if key.startswith("[") else getattr(j, key)
        return str(self.fmt(j))


class J:
    """A JSON value with attribute access to object keys (j.counters.flops)."""

    def __init__(self, v):
        self._v = v

    def __getattr__(self, name):
        if isinstance(self._v, dict) and name in self._v:
            return wrap(self._v[name])
        raise AttributeError(f"no key '{name}' (keys: {', '.join(sorted(self._v))})"
                             if isinstance(self._v, dict) else f"not an object: .{name}")

    def __getitem__(self, k):
        return wrap(self._v[k])

    def __len__(self):
        return len(self._v)

    def __iter__(self):
        return (wrap(x) for x in self._v)


def wrap(v):
    return J(v) if isinstance(v, (dict, list)) else v


# Formatters, as iosim writes numbers (reports/writers.cpp human_bytes, human_seconds).
def g(x, digits=3):
    """x to `digits` significant digits, %g style (no trailing zeros)."""
    return f"{x:.{digits}g}"


def f(x, decimals):
    """x with a fixed number of decimals."""
    return f"{x:.{decimals}f}"


def B(x, digits=3):
    """Bytes as iosim prints them: 1.07 GB, 8.3 KB, 0 B."""
    units = ["B", "KB", "MB", "GB", "TB", "PB"]
    u = 0
    while abs(x) >= 1000 and u < len(units) - 1:
        x /= 1000
        u += 1
    return f"{x:.0f} B" if u == 0 else f"{x:.{digits}g} {units[u]}"


def T(s):
    """Seconds as iosim prints them: 367 us, 45.4 ms, 1.2 s."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def pct(x, decimals=1):
    """A fraction as a percentage: 0.143 -> 14.3%."""
    return f"{100 * x:.{decimals}f}%"


def comma(x):
    """A whole number with thousands separators: 27,714."""
    return f"{round(x):,}"


def si(x, digits=2):
    """A count with k or M: 206k, 3.5M."""
    if abs(x) >= 1e6:
        return f"{x / 1e6:.{digits}g}M"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.{digits}g}k"
    return f"{x:.{digits}g}"


def signed_pct(x, decimals=0):
    """A signed fraction as a percentage with a true minus sign: -0.11 -> −11%."""
    return ("−" if x < 0 else "") + f"{100 * abs(x):.{decimals}f}%"


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def policy(j, name):
    """One policy's object of `iosim kvcache --format json`."""
    return next(p for p in j.policies if p.policy == name)


def summary(j, schedule="all"):
    """One schedule's summary of `iosim validate --format json`."""
    return next(s for s in j.summaries if s.schedule == schedule)


def grab(text, pattern):
    """The first group of pattern's first match in a run's text output (iosim explain)."""
    m = re.search(pattern, text)
    if not m:
        raise ValueError(f"no match for {pattern!r} in the run's output")
    return m.group(1)


def measured_case(path, case_id):
    """One case of a committed measurement file, as measured (no iosim run)."""
    with open(path, encoding="utf-8") as fh:
        return wrap(next(c for c in json.load(fh)["cases"] if c["id"] == case_id))


def cudnn_errors(run, measured_path, pass_, clock_mhz):
    """Signed time errors, per case of one pass, of scripts/flash3_cudnn.py's flags-only predictions
    (cuDNN's forward tiling, its primary arrangement, warm L2) at a fixed SM clock against the
    measured free-running times: what the README says blind prediction gave before the power model.
    `run` is the runner (R.runner in a value's function)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import flash3_cudnn
    with open(measured_path, encoding="utf-8") as fh:
        cases = [c for c in json.load(fh)["cases"] if c.get("pass") == pass_ and c.get("error") is None]
    profile = os.path.basename(os.path.dirname(os.path.dirname(measured_path)))
    args = [" ".join(flash3_cudnn.flags(profile, c["problem"], flash3_cudnn.PRIMARY, False, pass_)
                     + ["--sm-clock-mhz", str(clock_mhz)]) for c in cases]
    run.prefetch(args)
    return [run(a).time_s / c["time_free_running_s"] - 1 for a, c in zip(args, cases)]


def bad_input_corpus_size():
    """The inputs of the bad-input corpus that tests/bad_input_test.sh runs: the cases of
    tests/bad_inputs/cases.tsv and the profiles of tests/data/bad_profiles/EXPECTED.tsv."""
    n = 0
    for path in ("tests/bad_inputs/cases.tsv", "tests/data/bad_profiles/EXPECTED.tsv"):
        with open(path, encoding="utf-8") as fh:
            n += sum(1 for line in fh if line.split("\t")[0].strip() and not line.startswith("#"))
    return n
