"""iosim from Python: the simulator's C++ library called in-process, no subprocess.

    import iosim
    r = iosim.run(profile="h100-sxm5-80gb", algo="flash2", batch=4, heads=16, seq=4096,
                  head_dim=64)
    r["counters"]["hbm_total_bytes"], r["time_s"]
    rows = iosim.sweep(algo=["flash1", "flash2"], seq=[1024, 4096], head_dim=64)
    iosim.sweep(..., dataframe=True)          # a pandas DataFrame of the CSV columns
    iosim.sweep(..., client=dask_client)      # the points on a dask.distributed cluster
    iosim.run(seq=4096, set=["l2.size_bytes=20e6"])   # what-if hardware
    iosim.kvcache(layers=32, kv_heads=8, head_dim=128, weights_bytes=16e9)  # serving KV cache
    iosim.layer(model="llama-3-8b", phase="decode", batch=8, seq=4096)   # a transformer layer
    iosim.tune(algo="flash2", seq=4096, head_dim=128, block_kv=[64, 128])  # the fastest tiles
    iosim.compare(algo=["flash2", "flash3"], seq=8192, batch=4, heads=16)  # side by side

Keyword arguments are `iosim run`'s flags without dashes (seq_kv for --seq-kv; causal=True for
--causal; set= a "KEY=VALUE" string or a list of them). Results are the dicts that
`iosim run --format json` prints (schemas/run.schema.json). Bad input raises ConfigError (a
ValueError) with the CLI's message; an infeasible tiling raises InfeasibleError from run() and is
a row with "infeasible_reason" in sweep().
"""
import atexit
import itertools
import json
import os

from . import _iosim

# At exit, calls still running on daemon threads are stopped and waited for before Python ends
# those threads (it aborted the process: python/iosim_module.cpp, close_for_exit).
atexit.register(_iosim.close_for_exit)

__version__ = _iosim.__version__
version_text = _iosim.version_text
schema_version = _iosim.schema_version
ConfigError = _iosim.ConfigError
InternalError = _iosim.InternalError
default_tie_band_pct = _iosim.default_tie_band_pct
_MAX_SWEEP_POINTS = _iosim.max_sweep_points


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


def _limited(flags, call):
    """call(flags) under max_seconds= (wall seconds; TimeoutError when spent) and max_memory=
    (a size as --max-memory takes it, "8G", or bytes), the CLI's --max-seconds and --max-memory,
    taken out of `flags`; both are put back to none when the call ends."""
    flags = dict(flags)
    seconds = flags.pop("max_seconds", None)
    memory = flags.pop("max_memory", None)
    if seconds is None and memory is None:
        return call(flags)
    seconds = 0.0 if seconds is None else _number("max_seconds", seconds)
    if isinstance(memory, int) and not isinstance(memory, bool):
        memory = str(memory)
    if memory is not None and not isinstance(memory, str):
        raise TypeError(f"max_memory={memory!r}: give a size such as '8G', or bytes as an int")
    if memory == "":  # as the CLI refuses --max-memory ""
        raise ConfigError("max_memory='': an empty value; give one, or leave the keyword out")
    _iosim.set_limits(seconds, memory or "")
    try:
        return call(flags)
    finally:
        _iosim.set_limits(0.0, "")


def run(**flags):
    """Simulates one attention call; returns `iosim run --format json`'s document as a dict.
    kernel= takes a kernel description: a dict, a YAML file's path or a preset's name.
    max_seconds= and max_memory= are --max-seconds and --max-memory, as in sweep() and tune()."""
    report = json.loads(_limited(flags, lambda f: _iosim.run_json(_kernel_text(f))))
    if not report["feasible"]:
        raise InfeasibleError(report)
    return report


def compare(algo=(), kernel=(), **flags):
    """Several kernels on one problem side by side: `iosim run --algo A,B --kernel K --format
    json`'s document as a dict, {"compare": {"kernels": names, "baseline": the first},
    "runs": [one run()'s dict per kernel]} (schemas/compare.schema.json). algo= and kernel= are
    each a name (a str may be a comma list, as on the command line) or a list; kernel= entries
    may be dicts, as run()'s. The algorithms come first, then the descriptions; the first is the
    baseline. Every other keyword is run()'s and applies to every kernel, each run as run() would
    run it: a flag a kernel does not take raises ConfigError naming the kernel, an infeasible
    kernel InfeasibleError with its run's dict."""
    lists = []
    for name, value, kinds in (("algo", algo, (str,)), ("kernel", kernel, (str, dict))):
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if not isinstance(v, kinds):
                raise TypeError(f"{name}={value!r} has the wrong type: expected a "
                                f"{' or '.join(k.__name__ for k in kinds)} or a list of them")
        lists.append([json.dumps(v) if isinstance(v, dict) else v for v in values])
    doc = json.loads(_iosim.compare_json(flags, lists[0], lists[1]))
    for report in doc["runs"]:
        if not report["feasible"]:
            raise InfeasibleError(report)
    return doc


def tune(block_q=(), block_kv=(), stages=(), threads=(), tie_band=None, top=0, jobs=0, **flags):
    """Which tiling of one problem is fastest: `iosim tune --format json`'s document as a dict
    (schemas/tune.schema.json). `flags` are run()'s problem flags; block_q, block_kv, stages and
    threads are the space's lists (left out: the algorithm's default space; 0 in a list: the
    algorithm's choice). tie_band in percent (default: tune's, 5); top: the fastest K ranked
    points kept (0: all). Raises InfeasibleError when no tiling of the space is feasible."""
    if tie_band is None:
        tie_band = default_tie_band_pct
    lists = [_int_list(name, value, bits) for name, value, bits in
             (("block_q", block_q, 64), ("block_kv", block_kv, 64), ("stages", stages, 32),
              ("threads", threads, 32))]
    doc = json.loads(_limited(flags, lambda f: _iosim.tune_json(
        _kernel_text(f), *lists, _number("tie_band", tie_band), _int("top", top, 64),
        _int("jobs", jobs, 32))))
    if not doc["ranked"]:
        raise InfeasibleError({"infeasible_reason": "no tiling of the space is feasible",
                               **doc})
    return doc


# The arguments the library takes as C++ numbers are checked here, naming them: pybind11's
# "tune_json(): incompatible function arguments. The following argument types are supported:
# ..." named a function of the module and no argument (issue #50's probe: 145 calls).
def _int(name, value, bits):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}={value!r} has the wrong type: expected int")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ConfigError(f"{name}={value} is out of range: it must be in "
                          f"[{-(2 ** (bits - 1))}, {2 ** (bits - 1) - 1}]")
    return value


def _int_list(name, value, bits):
    values = _as_list(value)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name}={value!r} has the wrong type: expected an int or a list of "
                            "ints")
        _int(name, v, bits)
    return values


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}={value!r} has the wrong type: expected a number")
    return float(value)


def _as_list(value):
    if isinstance(value, (list, tuple, range)):
        return list(value)
    return [value]


def sweep(jobs=0, dataframe=False, client=None, progress=None, chunks=None, **flags):
    """Runs the cartesian product of the flags (each a value or a list of values) on `jobs`
    threads (0: all cores). Returns one dict per point, in product order (the last flag varies
    fastest), infeasible points included with "infeasible_reason"; with dataframe=True a pandas
    DataFrame of the scalar columns (python3-pandas). A list for `set` is several what-ifs at
    once; give a list of lists to sweep them.

    client= a dask.distributed.Client (python3-distributed) runs the points on its cluster
    instead: they are dealt into `chunks` tasks (default: 4 per worker thread; point i goes to
    task i % chunks, as `iosim sweep --shard` deals them), each task one thread on a worker that
    can import iosim, and the result is the local sweep's, row for row and in the same order
    (but for each row's simulation_wall_s). `jobs` is then left out: the workers' threads are
    the parallelism. progress= a callable, progress(points_done, points_total), is called on
    this thread as each task finishes (nothing is printed). A point that fails raises the error
    it raises locally (ConfigError, ...) with "sweep point I of N (FLAGS): " before the
    message (of several, the first task to end is reported); the other tasks are cancelled."""
    # Checked before any point runs (issue #50's probe: dataframe="x" ran the sweep, then raised
    # ModuleNotFoundError where pandas is not installed).
    if not isinstance(dataframe, bool):
        raise TypeError(f"dataframe={dataframe!r}: give True or False")
    if dataframe:
        try:
            import pandas  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        except ImportError:
            raise ConfigError("dataframe=True needs pandas (Debian: apt-get install "
                              "python3-pandas); leave it out for a list of dicts") from None
    # A ragged batch's lists would be taken for axes (each length a point), as on the command line.
    for name in ("seq_lens", "seq_kv_lens"):
        if name in flags:
            raise ConfigError(f"{name}: sweep() does not sweep ragged batches yet; call run() for "
                              "each batch")
    # One budget for the whole sweep, as --max-seconds is (not an axis).
    limits = {k: flags.pop(k) for k in ("max_seconds", "max_memory") if k in flags}
    names = list(flags)
    values = []
    for name in names:
        v = flags[name]
        if name == "set":
            # "set" takes a list itself: a list of strings is one point's overrides.
            if not isinstance(v, (str, list, tuple)):  # set=None: "'NoneType' object is not
                raise TypeError(f'set={v!r} has the wrong type: expected a str "KEY=VALUE" or '
                                'a list of them')  # iterable" (issue #50)
            # set=[] is no what-ifs, one point, as run(set=[]) is; it gave no points (issue #50).
            v = [v] if isinstance(v, str) or all(isinstance(x, str) for x in v) else v
            values.append(list(v))
        else:
            values.append(_as_list(v))
            if not values[-1]:  # the product of an empty axis is no points: a silent [] (#50)
                raise ConfigError(f"{name}={v!r}: an empty list gives no points; give one value "
                                  "or more, or leave it out")
    # Its points and rows are held together as Python objects (~2 KB a point): at most a million,
    # where `iosim sweep --out` streams ten (two million values were read for a minute before any
    # budget was checked: the seventh probe).
    total = 1
    for v in values:
        total *= len(v)
    if total > _MAX_SWEEP_POINTS:
        raise ConfigError(f"the flags' values make {total:,} points; sweep() takes at most "
                          f"{_MAX_SWEEP_POINTS:,} (held in memory together): sweep fewer, or use "
                          "`iosim sweep --out`, which streams up to 10,000,000")
    points = [_kernel_text(dict(zip(names, combo))) for combo in itertools.product(*values)]
    if client is None:
        for name, value in (("progress", progress), ("chunks", chunks)):
            if value is not None:
                raise ConfigError(f"{name}= is for a sweep on a dask cluster: give client= too")
        texts = _limited(limits, lambda _: _iosim.sweep_json_rows(points, _int("jobs", jobs, 32)))
    else:
        if limits:  # each worker is a process of its own: this process's budget is not theirs
            raise ConfigError(f"{', '.join(limits)}= limit a local sweep: leave them out with "
                              "client=")
        texts = _sweep_on_cluster(client, points, jobs, progress, chunks)
    rows = [json.loads(text) for text in texts]
    if not dataframe:
        return rows
    import pandas  # python3-pandas

    return pandas.DataFrame([_flat(r) for r in rows])


def _point_text(points, i):
    flags = ", ".join(f"{k}={v!r}" for k, v in points[i].items())
    return f"sweep point {i + 1} of {len(points)} ({flags})"


def _sweep_chunk(points):
    """A dask task: the rows of `points` on one thread, or, when one fails, (its index in
    `points`, the exception's type name, its message) for the client to raise with the point's
    flags (plain values: nothing to unpickle there)."""
    try:
        return _iosim.sweep_json_rows(points, 1)
    except Exception:  # pylint: disable=broad-except
        pass
    for i, point in enumerate(points):  # which one: each point alone
        try:
            _iosim.sweep_json_rows([point], 1)
        except Exception as e:  # pylint: disable=broad-except
            return (i, type(e).__name__, str(e))
    raise InternalError("a sweep task failed but none of its points fails alone")


def _sweep_on_cluster(client, points, jobs, progress, chunks):
    """sweep()'s rows (as text) from the tasks of a dask.distributed client, in point order."""
    try:  # dask is imported only for a sweep that asks for it
        import distributed  # python3-distributed
    except ImportError:
        distributed = None
    if distributed is None or not isinstance(client, distributed.Client):
        raise ConfigError(f"client={client!r} has the wrong type: expected a "
                          f"dask.distributed.Client, got {type(client).__name__}"
                          + ("" if distributed else " (and dask.distributed is not installed)"))
    if jobs != 0:
        raise ConfigError(f"jobs={jobs!r} is for a local sweep: with client= the workers' threads "
                          "run the points (leave jobs out)")
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress={progress!r} has the wrong type: expected a callable "
                          "progress(points_done, points_total)")
    if chunks is None:
        chunks = 4 * max(1, sum(client.nthreads().values()))
    elif isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise ConfigError(f"chunks={chunks!r}: give a positive number of tasks")
    if not points:
        return []
    chunks = min(chunks, len(points))
    # Task k holds the points i with i % chunks == k (as `iosim sweep --shard` deals them), so
    # that the costly points, adjacent in product order, spread over the tasks.
    futures = client.map(_sweep_chunk, [points[k::chunks] for k in range(chunks)], pure=False)
    index = {f.key: k for k, f in enumerate(futures)}
    texts = [None] * len(points)
    done = 0
    try:
        for future in distributed.as_completed(futures):
            k = index[future.key]
            try:
                result = future.result()
            except Exception as e:  # the task itself failed: a lost worker, no iosim there
                raise RuntimeError(f"sweep task {k + 1} of {chunks} (its first point: "
                                   f"{_point_text(points, k)}) failed: "
                                   f"{type(e).__name__}: {e}") from e
            if isinstance(result, tuple):
                i, kind, message = result
                error = {"ConfigError": ConfigError, "InternalError": InternalError}.get(kind)
                text = f"{_point_text(points, k + i * chunks)}: {message}"
                raise error(text) if error else RuntimeError(f"{text} ({kind})")
            texts[k::chunks] = result
            done += len(result)
            if progress is not None:
                progress(done, len(points))
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
    return texts


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
        iosim.kvcache(model="llama-3-8b", weights_bytes=16e9)  # the shape from a model
    """
    return json.loads(_iosim.kvcache_json(flags))


def layer(**flags):
    """Simulates one transformer layer of a model and the whole forward step; returns
    `iosim layer --format json`'s document as a dict (schemas/layer.schema.json). Keyword
    arguments are `iosim layer`'s flags without dashes, e.g.

        iosim.layer(model="llama-3-8b", phase="prefill", batch=1, seq=2048, tp=2)

    A mixed serving step (decode rows beside prefill chunks) takes lists, as run's ragged batch:

        iosim.layer(model="llama-3-8b", seq_lens=[1, 1, 512], context_lens=[4096, 2000, 8192])
    """
    return json.loads(_iosim.layer_json(flags))


def validate(path, profile=""):
    """Re-predicts measured cases (a measurements JSON file or folder); returns
    `iosim validate PATH --format json`'s document as a dict."""
    # Checked here, naming the argument: validate(None) looked for a file named 'None', and
    # profile=5 raised pybind11's "validate_json(): incompatible function arguments" (issue #50).
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path={path!r}: give a measurements JSON file or folder (a str or "
                        "os.PathLike)")
    if not isinstance(profile, str):
        raise TypeError(f"profile={profile!r}: give a profile's name or YAML file as a str")
    return json.loads(_iosim.validate_json(os.fspath(path), profile))
