"""iosim from Python: the simulator's C++ library called in-process, no subprocess.

    import iosim
    r = iosim.run(profile="h100-sxm5-80gb", algo="flash2", batch=4, heads=16, seq=4096,
                  head_dim=64)
    r["counters"]["hbm_total_bytes"], r["time_s"]
    rows = iosim.sweep(algo=["flash1", "flash2"], seq=[1024, 4096], head_dim=64)
    iosim.sweep(..., dataframe=True)          # a pandas DataFrame of the CSV columns
    iosim.run(seq=4096, set=["l2.size_bytes=20e6"])   # what-if hardware
    iosim.kvcache(layers=32, kv_heads=8, head_dim=128, weights_bytes=16e9)  # serving KV cache

Keyword arguments are `iosim run`'s flags without dashes (seq_kv for --seq-kv; causal=True for
--causal; set= a "KEY=VALUE" string or a list of them). Results are the dicts that
`iosim run --format json` prints (schemas/run.schema.json). Bad input raises ConfigError (a
ValueError) with the CLI's message; an infeasible tiling raises InfeasibleError from run() and is
a row with "infeasible_reason" in sweep().
"""
import itertools
import json

from . import _iosim

__version__ = _iosim.__version__
version_text = _iosim.version_text
schema_version = _iosim.schema_version
ConfigError = _iosim.ConfigError
InternalError = _iosim.InternalError


class InfeasibleError(ConfigError):
    """The configuration cannot run (e.g. a tile that does not fit in shared memory).

    `report` holds the run's dict, with its resolved tiling and "infeasible_reason"."""

    def __init__(self, report):
        super().__init__(report.get("infeasible_reason", "infeasible configuration"))
        self.report = report


def profiles():
    """Names of the built-in hardware profiles."""
    return list(_iosim.profile_names())


def _kernel_text(flags):
    # A kernel description given as a dict goes to the library as inline JSON, which --kernel
    # reads as it reads a file (docs/kernels.md).
    if isinstance(flags.get("kernel"), dict):
        flags = dict(flags, kernel=json.dumps(flags["kernel"]))
    return flags


def run(**flags):
    """Simulates one attention call; returns `iosim run --format json`'s document as a dict.
    kernel= takes a kernel description: a dict, a YAML file's path or a preset's name."""
    report = json.loads(_iosim.run_json(_kernel_text(flags)))
    if not report["feasible"]:
        raise InfeasibleError(report)
    return report


def _as_list(value):
    if isinstance(value, (list, tuple, range)):
        return list(value)
    return [value]


def sweep(jobs=0, dataframe=False, **flags):
    """Runs the cartesian product of the flags (each a value or a list of values) on `jobs`
    threads (0: all cores). Returns one dict per point, in product order (the last flag varies
    fastest), infeasible points included with "infeasible_reason"; with dataframe=True a pandas
    DataFrame of the scalar columns (python3-pandas). A list for `set` is several what-ifs at
    once; give a list of lists to sweep them."""
    names = list(flags)
    values = []
    for name in names:
        v = flags[name]
        if name == "set":
            # "set" takes a list itself: a list of strings is one point's overrides.
            v = [v] if isinstance(v, str) or (v and all(isinstance(x, str) for x in v)) else v
            values.append(list(v))
        else:
            values.append(_as_list(v))
    points = [_kernel_text(dict(zip(names, combo))) for combo in itertools.product(*values)]
    rows = [json.loads(text) for text in _iosim.sweep_json_rows(points, jobs)]
    if not dataframe:
        return rows
    import pandas  # python3-pandas

    return pandas.DataFrame([_flat(r) for r in rows])


def _flat(report):
    """The scalar fields of a run's dict, flattened as the CSV columns are (no kernels)."""
    out = {}
    for key, value in report.items():
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(v, (dict, list)):
                    out[k] = v
        elif not isinstance(value, list):
            out[key] = value
    return out


def kvcache(**flags):
    """Simulates a serving KV cache under a memory budget, contiguous vs paged blocks, on one
    request stream; returns `iosim kvcache --format json`'s document as a dict (schemas/
    kvcache.schema.json). Keyword arguments are `iosim kvcache`'s flags without dashes, e.g.

        iosim.kvcache(layers=32, kv_heads=8, head_dim=128, weights_bytes=16e9, requests=300)
    """
    return json.loads(_iosim.kvcache_json(flags))


def validate(path, profile=""):
    """Re-predicts measured cases (a measurements JSON file or folder); returns
    `iosim validate PATH --format json`'s document as a dict."""
    return json.loads(_iosim.validate_json(str(path), profile))
