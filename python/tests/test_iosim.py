"""The Python package against the CLI: same documents, same errors, typed."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

import iosim

IOSIM = os.environ.get("IOSIM", "")
REPO = os.environ.get("IOSIM_REPO_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def cli_json(*args):
    out = subprocess.run([IOSIM, *args, "--format", "json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def without_wall(doc):
    doc = dict(doc)
    doc.pop("simulation_wall_s", None)
    return doc


def test_version_and_schema():
    assert iosim.__version__.count(".") == 2
    assert iosim.version_text.startswith(iosim.__version__ + " (git ")
    assert iosim.schema_version == 1
    assert "h100-sxm5-80gb" in iosim.profiles()


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
@pytest.mark.parametrize("flags,args", [
    (dict(algo="flash2", batch=4, heads=16, seq=4096, head_dim=64),
     ["--algo", "flash2", "--batch", "4", "--heads", "16", "--seq", "4096", "--head-dim", "64"]),
    (dict(algo="flash-decoding", seq=1, seq_kv=8192, head_dim=128, heads=32, kv_heads=8,
          profile="a100-sxm4-80gb"),
     ["--algo", "flash-decoding", "--seq", "1", "--seq-kv", "8192", "--head-dim", "128",
      "--heads", "32", "--kv-heads", "8", "--profile", "a100-sxm4-80gb"]),
    (dict(algo="flash2", seq=200, head_dim=32, causal=True, execute=True, l2="off"),
     ["--algo", "flash2", "--seq", "200", "--head-dim", "32", "--causal", "--execute",
      "--l2", "off"]),
    (dict(algo="flash2", seq=200, head_dim=32, causal=True, window=48, execute=True, l2="off"),
     ["--algo", "flash2", "--seq", "200", "--head-dim", "32", "--causal", "--window", "48",
      "--execute", "--l2", "off"]),
    (dict(algo="flash2", seq_lens=[1, 37, 300], seq_kv_lens=[900, 60, 300], heads=4, kv_heads=2,
          causal=True, l2="off"),
     ["--algo", "flash2", "--seq-lens", "1,37,300", "--seq-kv-lens", "900,60,300", "--heads", "4",
      "--kv-heads", "2", "--causal", "--l2", "off"]),
    (dict(seq=1024, set=["l2.size_bytes=20e6", "sm.count=100"]),
     ["--seq", "1024", "--set", "l2.size_bytes=20e6", "--set", "sm.count=100"]),
    (dict(algo="paged", seq=1, seq_kv=4096, head_dim=128, heads=32, kv_heads=8, kv_dtype="fp8",
          dtype="bf16"),
     ["--algo", "paged", "--seq", "1", "--seq-kv", "4096", "--head-dim", "128", "--heads", "32",
      "--kv-heads", "8", "--kv-dtype", "fp8", "--dtype", "bf16"]),
])
def test_run_equals_the_cli(flags, args):
    assert without_wall(iosim.run(**flags)) == without_wall(cli_json("run", *args))


def test_ragged_batch():
    # seq_lens= as run(): the lists in the problem block, decode rows beside a prefill chunk.
    r = iosim.run(seq_lens=[1, 1, 512], seq_kv_lens=[4096, 2000, 8192], causal=True, heads=8,
                  kv_heads=2, l2="off")
    assert r["problem"]["seq_lens"] == [1, 1, 512]
    assert r["problem"]["seq_kv_lens"] == [4096, 2000, 8192]
    assert r["problem"]["batch"] == 3 and r["problem"]["seq"] == 512
    assert r["counters"]["hbm_read_bytes"] + r["counters"]["hbm_write_bytes"] == \
        r["bounds"]["closed_form_bytes"]
    with pytest.raises(iosim.ConfigError, match="a ragged batch is modelled for the forward only"):
        iosim.run(seq_lens=[10, 20], **{"pass": "bwd"})
    with pytest.raises(iosim.ConfigError, match="expected a list of ints"):
        iosim.run(seq_lens=[10, "x"])
    with pytest.raises(iosim.ConfigError, match="sweep\\(\\) does not sweep ragged batches"):
        iosim.sweep(seq_lens=[10, 20])


def test_run_fields():
    r = iosim.run(algo="flash2", batch=4, heads=16, seq=4096, head_dim=64)
    c = r["counters"]
    assert c["hbm_total_bytes"] == (c["hbm_read_bytes"] + c["hbm_write_bytes"]
                                    + c["hbm_write_dirty_at_end_bytes"])
    assert c["hbm_total_bytes"] >= r["bounds"]["compulsory_bytes"]
    assert r["sm_clock_mhz"] > 0
    # Where the time goes: each kernel's rows sum to its time, the largest names the bound.
    for k in r["kernels"]:
        a = k["time_attribution"]
        assert set(a["seconds"]) == {"tensor", "fp32_sfu", "smem", "l2", "hbm", "latency",
                                     "idle", "launch"}
        assert all(v >= 0 for v in a["seconds"].values())
        assert abs(sum(a["seconds"].values()) - k["time_s"]) <= 1e-9 * k["time_s"]
        assert a["largest"] == max(a["seconds"], key=a["seconds"].get)
    assert r["kernels"][0]["time_attribution"]["largest"] == "tensor"
    assert r["bound"] == "compute"


def test_errors_are_typed():
    with pytest.raises(iosim.ConfigError, match="did you mean 'flash2'"):
        iosim.run(algo="flsh2", seq=128)
    with pytest.raises(ValueError, match="unknown flag 'sequence'"):
        iosim.run(sequence=128)
    with pytest.raises(iosim.ConfigError, match="did you mean 'l2.size_bytes'"):
        iosim.run(seq=128, set="l2.sise_bytes=1e7")
    with pytest.raises(iosim.ConfigError, match="wrong type"):
        iosim.run(seq="long")
    with pytest.raises(iosim.InfeasibleError, match="does not fit in shared memory") as e:
        iosim.run(seq=4096, head_dim=128, block_q=1024, block_kv=1024)
    assert e.value.report["tiling"]["block_q"] == 1024
    assert isinstance(e.value, iosim.ConfigError)


def test_bad_arguments_are_config_errors_naming_the_type():
    # Each was accepted or a bare RuntimeError (issues 30, 31): seq=True ran N = 1, causal=None
    # ran without the mask, set=None could not be cast, jobs=-1 ran, seq left out said "--seq 0".
    cases = [
        (dict(seq=True), "seq=True has the wrong type: expected int, got bool"),
        (dict(seq="1024"), "seq='1024' has the wrong type: expected int, got str"),
        (dict(seq=128.0), "seq=128.0 has the wrong type: expected int, got float"),
        (dict(seq=128, causal=None), "causal=None: give a bool"),
        (dict(seq=128, causal=1), "causal=1 has the wrong type: expected bool, got int"),
        (dict(seq=128, set=None), "set=None has the wrong type: expected a str"),
        (dict(seq=128, dropout="0.1"), "expected float or int, got str"),
        (dict(), "seq is required"),
    ]
    for flags, message in cases:
        with pytest.raises(iosim.ConfigError, match=re.escape(message)):
            iosim.run(**flags)
    with pytest.raises(iosim.ConfigError, match=re.escape("jobs=-1: give 0 (all cores)")):
        iosim.sweep(seq=[128], jobs=-1)
    assert iosim.run(seq=128, dropout=0)["problem"]["dropout"] == 0  # an int is a float's value


def test_an_int_past_its_field_names_the_flags_range():
    # It said "has the wrong type: expected int, got int" (issue #50, as the CLI named int64's
    # range).
    cases = [
        (iosim.run, dict(seq=2**70), "seq=1180591620717411303424 is out of range: it must be in "
                                     "[1, 16777216]"),
        (iosim.layer, dict(model="llama-3-8b", seq=128, gemm_cluster_m=2**40),
         "gemm_cluster_m=1099511627776 is out of range: it must be in [0, 8]"),
        (iosim.kvcache, dict(layers=2, kv_heads=2, head_dim=64, samples=2**40),
         "samples=1099511627776 is out of range: it must be in [1, 64]"),
    ]
    for call, flags, message in cases:
        with pytest.raises(iosim.ConfigError, match=re.escape(message)):
            call(**flags)


def test_sweep_rows_in_product_order_with_infeasible_ones():
    rows = iosim.sweep(algo=["flash1", "flash2"], seq=[256, 512], head_dim=64,
                       block_kv=[64, 4096])
    assert len(rows) == 8
    assert [(r["algorithm"], r["problem"]["seq"], r["tiling"]["block_kv"]) for r in rows[:3]] == [
        ("flash1", 256, 64), ("flash1", 256, 4096), ("flash1", 512, 64)]
    assert any(not r["feasible"] for r in rows)
    one = iosim.run(algo="flash2", seq=512, head_dim=64, block_kv=64)
    assert without_wall(rows[6]) == without_wall(one)


def test_sweep_of_what_ifs():
    rows = iosim.sweep(algo="standard", batch=2, heads=8, seq=4096,
                       set=[["l2.size_bytes=10e6"], ["l2.size_bytes=40e6"]])
    assert [r["profile"] for r in rows] == ["h100-sxm5-80gb[l2.size_bytes=10000000]",
                                            "h100-sxm5-80gb[l2.size_bytes=40000000]"]
    assert rows[0]["counters"]["hbm_read_bytes"] > rows[1]["counters"]["hbm_read_bytes"]


def test_sweep_refuses_a_bad_value_or_an_empty_list_up_front():
    # A value out of range was an infeasible row, and an empty list returned [] (issue #50, S2
    # and S5); set=[] is no what-ifs, one point, as in run().
    with pytest.raises(iosim.ConfigError, match=re.escape("--seq -1 is out of range")):
        iosim.sweep(seq=[64, -1])
    with pytest.raises(iosim.ConfigError, match=re.escape("--dropout 1 is out of range")):
        iosim.sweep(seq=64, dropout=[0.5, 1])
    for flags in (dict(seq=[], head_dim=64), dict(seq=64, algo=[])):
        with pytest.raises(iosim.ConfigError, match="an empty list gives no points"):
            iosim.sweep(**flags)
    assert len(iosim.sweep(seq=64, set=[])) == 1


def test_sweep_refuses_more_points_than_the_cli_and_honours_max_seconds_while_reading_them():
    # Two million values were read for a minute before max_seconds=2 was first checked, and no
    # count was refused (the seventh probe): a million points at most (held in memory), and the
    # budget from the start.
    with pytest.raises(iosim.ConfigError, match="sweep\\(\\) takes at most 1,000,000"):
        iosim.sweep(seq=list(range(1, 1002)), batch=list(range(1, 1001)))
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        iosim.sweep(seq=list(range(1, 200001)), jobs=1, max_seconds=0.5)
    assert time.monotonic() - started < 30


def test_an_empty_or_nul_text_is_refused_as_the_cli_refuses_it():
    # '' ran the default where the CLI refuses `--kernel ""`, and a NUL byte cut a path short:
    # validate('f.json\x00junk') read f.json (issue #50, S4 and S6).
    calls = [(iosim.run, dict(seq=64, kernel="")), (iosim.run, dict(seq=64, pattern="")),
             (iosim.run, dict(seq=64, pack_gqa="")), (iosim.run, dict(seq=64, block_table="")),
             (iosim.kvcache, dict(layers=2, kv_heads=2, head_dim=64, trace="")),
             (iosim.layer, dict(model="llama-3-8b", seq=64, kernel="")),
             (iosim.layer, dict(model="llama-3-8b", seq=64, algo=""))]
    for call, flags in calls:
        with pytest.raises(iosim.ConfigError, match="an empty value; give one, or leave the"):
            call(**flags)
    with pytest.raises(iosim.ConfigError, match="NUL byte"):
        iosim.validate(os.path.join(REPO, "tests/data/measurements_small.json") + "\x00junk")
    with pytest.raises(iosim.ConfigError, match="NUL byte"):
        iosim.run(seq=64, profile="a100-sxm4-40gb\x00x")


def test_a_file_of_any_bytes_gives_a_config_error_naming_it(tmp_path):
    # A block table, trace or pattern holding bytes that are not UTF-8 (0xff): the message that
    # quoted them could not be decoded (UnicodeDecodeError, or a ConfigError with no text; issue
    # #50's third probe). Each such byte is now written \xNN.
    for junk in (b"\xff", b"\xfe\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80"):
        table = tmp_path / "bt.txt"
        table.write_bytes(b"0 1 2 3\n4 5 6 " + junk + b"7\n")
        with pytest.raises(iosim.ConfigError, match=r"bt\.txt' line 2: .*\\x[0-9a-f]{2}"):
            iosim.run(algo="paged", batch=2, seq=1, seq_kv=64, block_table=str(table))
        trace = tmp_path / "t.csv"
        trace.write_bytes(b"arrival,prompt_len,output_len\n0," + junk + b",3\n")
        with pytest.raises(iosim.ConfigError, match=r"t\.csv' line 2: prompt_len"):
            iosim.kvcache(layers=2, kv_heads=2, head_dim=64, trace=str(trace))


def test_max_seconds_and_max_memory_are_the_clis_flags_for_one_call():
    # They were "unknown flag"s though the guide says the keywords are the CLI's flags (issue #50
    # M4). The budget is this call's: the next call runs without it.
    assert iosim.run(seq=64, max_seconds=60, max_memory="8G")["feasible"]
    assert len(iosim.sweep(seq=[64, 128], max_seconds=60)) == 2
    with pytest.raises(iosim.ConfigError, match="would take about"):
        iosim.run(seq=128, max_memory="1M")
    with pytest.raises(iosim.ConfigError, match="max_memory"):
        iosim.tune(seq=128, max_memory="lots")
    with pytest.raises(iosim.ConfigError, match="max_memory='': an empty value"):
        iosim.run(seq=128, max_memory="")
    with pytest.raises(iosim.ConfigError, match=re.escape("max_seconds=-1 must be >= 0")):
        iosim.run(seq=128, max_seconds=-1)
    assert iosim.run(seq=128)["feasible"]


def test_max_seconds_is_each_threads_own():
    # One process-wide budget: a call's max_seconds was cleared when a call on another thread
    # ended, and the call ran on for ever; a call without one could be stopped by another's
    # (issue #50's sixth probe).
    import threading
    import time
    out = {}

    def long_call():
        start = time.monotonic()
        try:
            iosim.sweep(seq=[1048576, 1048577], batch=64, heads=64, exact=True, jobs=2,
                        max_seconds=0.5)
            out["long"] = "returned"
        except TimeoutError:
            out["long"] = time.monotonic() - start

    def short_calls(**limits):
        errors = []
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            try:
                iosim.run(seq=64, **limits)
            except Exception as e:  # pylint: disable=broad-except
                errors.append(repr(e))
        out[str(limits)] = errors

    threads = [threading.Thread(target=long_call, daemon=True),
               threading.Thread(target=short_calls, kwargs={"max_seconds": 100}, daemon=True),
               threading.Thread(target=short_calls, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads), out
    assert isinstance(out["long"], float) and out["long"] < 3, out
    assert out["{'max_seconds': 100}"] == [] and out["{}"] == [], out


def test_exit_while_daemon_threads_run_calls():
    # Python ends a daemon thread that takes the GIL back at exit by unwinding it; through a
    # call's C++ frames that was std::terminate: "terminate called without an active exception"
    # and an abort, in about 2 exits of 5 (issue #50's sixth probe).
    script = ("import threading, time, iosim\n"
              "def calls():\n"
              "    while True:\n"
              "        iosim.run(seq=64)\n"
              "for _ in range(4):\n"
              "    threading.Thread(target=calls, daemon=True).start()\n"
              "time.sleep(0.3)\n")
    for _ in range(6):
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr[-500:])


def test_sweep_dataframe_is_checked_before_the_sweep():
    # dataframe="x" ran the sweep, then raised ModuleNotFoundError without pandas (issue #50).
    with pytest.raises(TypeError, match="dataframe='x': give True or False"):
        iosim.sweep(seq=[256], head_dim=64, dataframe="x")
    try:
        import pandas  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        with pytest.raises(iosim.ConfigError, match="dataframe=True needs pandas"):
            iosim.sweep(seq=[256], head_dim=64, dataframe=True)


def test_validate_names_an_argument_of_the_wrong_type():
    # validate(None) looked for a file named 'None'; profile=5 raised pybind11's "validate_json():
    # incompatible function arguments" (issue #50).
    with pytest.raises(TypeError, match="path=None: give a measurements JSON file or folder"):
        iosim.validate(None)
    with pytest.raises(TypeError, match="profile=5: give a profile's name or YAML file"):
        iosim.validate("measurements.json", profile=5)


def test_tune_and_sweep_name_an_argument_of_the_wrong_type():
    # pybind11 said "tune_json(): incompatible function arguments. The following argument types
    # are supported: ...", naming a function of the module and no argument; sweep(set=None) said
    # "'NoneType' object is not iterable" (issue #50).
    for kwargs, match in ((dict(top="x"), "top='x' has the wrong type: expected int"),
                          (dict(tie_band="x"), "tie_band='x' has the wrong type"),
                          (dict(block_q=["x"]), r"block_q=\['x'\] has the wrong type"),
                          (dict(jobs=1.5), "jobs=1.5 has the wrong type")):
        with pytest.raises(TypeError, match=match):
            iosim.tune(seq=256, **kwargs)
    with pytest.raises(iosim.ConfigError, match=r"top=1180591620717411303424 is out of range"):
        iosim.tune(seq=256, top=2**70)
    with pytest.raises(TypeError, match="jobs='x' has the wrong type"):
        iosim.sweep(seq=256, jobs="x")
    with pytest.raises(TypeError, match="set=None has the wrong type"):
        iosim.sweep(seq=256, set=None)


def test_sweep_dataframe():
    pandas = pytest.importorskip("pandas")
    df = iosim.sweep(seq=[256, 512], head_dim=64, dataframe=True)
    assert isinstance(df, pandas.DataFrame)
    assert list(df["seq"]) == [256, 512]
    assert "hbm_total_bytes" in df.columns


def test_validate():
    v = iosim.validate(os.path.join(REPO, "cuda_validate", "measurements", "h100-sxm5-80gb",
                                    "measurements_decode_2026-11-22.json"))
    assert v["schema_version"] == 1
    assert any(s["schedule"] == "all" and s["cases"] == 43 for s in v["summaries"])
    with pytest.raises(iosim.ConfigError):
        iosim.validate("/nonexistent/measurements.json")


def kvcache_args(flags):
    """`iosim kvcache`'s arguments for iosim.kvcache's keywords."""
    args = ["kvcache"]
    for key, value in flags.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


KV_MODEL = dict(layers=32, kv_heads=8, head_dim=128)
KV_TRACE = os.path.join(REPO, "tests", "data", "kvcache", "trace.csv")


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
@pytest.mark.parametrize("flags", [
    dict(KV_MODEL, weights_bytes=16e9, requests=300),
    dict(KV_MODEL, kv_budget_bytes=2e9, policy="paged", block_tokens=32, arrivals="poisson:2",
         samples=2, shared_prefix_tokens=64, prompt_groups=4, dtype="fp8", requests=200),
    dict(KV_MODEL, profile="a100-sxm4-80gb", weights_bytes=70e9, policy="contiguous",
         max_running=16, prompt_len="uniform:10,100", output_len="const:50", seed=7,
         series_points=10, max_output_tokens=512, requests=100),
    dict(layers=2, kv_heads=2, head_dim=64, trace=KV_TRACE, watermark=0.05),
    dict(model="deepseek-v3", dtype="bf16", weights_bytes=16e9, requests=100),
    dict(model="mistral-7b", layers=16, kv_budget_bytes=2e9, requests=100),
])
def test_kvcache_equals_the_cli(flags):
    doc = iosim.kvcache(**flags)
    assert doc == json.loads(subprocess.run([IOSIM, *kvcache_args(flags), "--format", "json"],
                                            check=True, capture_output=True, text=True).stdout)
    assert doc["schema_version"] == iosim.schema_version


def test_kvcache_fp8_cache_holds_twice_the_tokens():
    # --kv-dtype is --dtype by run's name: one byte a cached value against fp16's two.
    fp16 = iosim.kvcache(**KV_MODEL, kv_budget_bytes=4e9, requests=50, policy="paged")
    fp8 = iosim.kvcache(**KV_MODEL, kv_budget_bytes=4e9, requests=50, policy="paged",
                        kv_dtype="fp8")
    assert fp8 == iosim.kvcache(**KV_MODEL, kv_budget_bytes=4e9, requests=50, policy="paged",
                                dtype="fp8")
    assert fp8["model"]["bytes_per_token"] * 2 == fp16["model"]["bytes_per_token"]


def test_run_fp8_kv_cache_halves_the_cache_reads():
    decode = dict(algo="flash-decoding", seq=1, seq_kv=8192, head_dim=128, heads=32, kv_heads=8,
                  splits=4, l2="off")
    fp16, fp8 = iosim.run(**decode), iosim.run(**decode, kv_dtype="fp8")
    assert "kv_dtype" not in fp16["problem"] and fp8["problem"]["kv_dtype"] == "fp8"
    for t in ("K", "V"):
        assert (fp16["counters"]["per_tensor"][t]["hbm_read_bytes"]
                == 2 * fp8["counters"]["per_tensor"][t]["hbm_read_bytes"])
    with pytest.raises(iosim.ConfigError, match="--kv-dtype fp8 .* applies to --algo "
                                                "flash-decoding and paged"):
        iosim.run(algo="flash2", seq=1, seq_kv=8192, head_dim=128, kv_dtype="fp8")


def test_run_latent_cache_reads_k_alone():
    # Multi-head latent attention (DeepSeek-V3's absorbed decode): one latent of 576 columns a
    # token shared by the 16 heads (kv_heads defaults to 1), V its first 512 columns.
    decode = dict(algo="flash-decoding", seq=1, seq_kv=4096, head_dim=576, heads=16, splits=2,
                  dtype="bf16", l2="off")
    r = iosim.run(**decode, latent_dim=512)
    assert r["problem"]["latent_dim"] == 512 and r["problem"]["kv_heads"] == 1
    assert "latent_dim" not in iosim.run(**decode)["problem"]
    per = r["counters"]["per_tensor"]
    assert "V" not in per or per["V"]["hbm_read_bytes"] == 0
    assert per["K"]["hbm_read_bytes"] == 4096 * 576 * 2  # the latent once (one 16-row tile)
    assert per["O"]["hbm_write_bytes"] == 16 * 512 * 2
    assert r["counters"]["hbm_read_bytes"] + r["counters"]["hbm_write_bytes"] == \
        r["bounds"]["closed_form_bytes"]
    assert without_wall(r) == without_wall(cli_json(
        "run", "--algo", "flash-decoding", "--seq", "1", "--seq-kv", "4096", "--head-dim", "576",
        "--heads", "16", "--splits", "2", "--dtype", "bf16", "--l2", "off", "--latent-dim", "512"))
    with pytest.raises(iosim.ConfigError, match="--latent-dim 512 .* applies to --algo "
                                                "flash-decoding and paged"):
        iosim.run(algo="flash2", seq=1, seq_kv=4096, head_dim=576, heads=16, latent_dim=512)
    with pytest.raises(iosim.ConfigError, match="exceeds --head-dim 576"):
        iosim.run(**decode, latent_dim=600)


def test_kvcache_model_is_its_keys_typed():
    # --model llama-3-8b is 32 layers x 8 KV heads x 128 (131,072 B a token in bf16), named in the
    # document; mistral-7b's sliding window is noted, not applied.
    by_model = iosim.kvcache(model="llama-3-8b", dtype="bf16", kv_budget_bytes=4e9, requests=50)
    typed = iosim.kvcache(**KV_MODEL, dtype="bf16", kv_budget_bytes=4e9, requests=50)
    assert by_model["model"].pop("name") == "llama-3-8b"
    assert by_model == typed
    assert typed["model"]["bytes_per_token"] == 131072
    mistral = iosim.kvcache(model="mistral-7b", kv_budget_bytes=4e9, requests=50)
    assert "4096 tokens" in mistral["notes"][0] and "notes" not in typed


def test_kvcache_paged_fits_more():
    doc = iosim.kvcache(**KV_MODEL, kv_budget_bytes=4e9, requests=400)
    by_policy = {p["policy"]: p for p in doc["policies"]}
    assert set(by_policy) == {"contiguous", "paged"}
    assert (by_policy["paged"]["overall"]["running_mean"]
            > by_policy["contiguous"]["overall"]["running_mean"])


@pytest.mark.parametrize("flags,message", [
    (dict(kv_heads=8, head_dim=128), "--layers is required"),
    (dict(KV_MODEL, policy="pagd"), "did you mean 'paged'"),
    (dict(KV_MODEL, kv_budget_bytes=1e9, weights_bytes=1e9), "--kv-budget-bytes replaces"),
    (dict(KV_MODEL, weights_bytes=1e12), "leaves nothing"),
    (dict(KV_MODEL, kv_budget_bytes=1000), "budget 1000 bytes holds no"),
    (dict(KV_MODEL, trace=KV_TRACE, requests=5), "drop --requests"),
    (dict(KV_MODEL, weights_bytes=1.5), "must be a whole number of bytes"),
    (dict(KV_MODEL, dtype="int4"), "valid KV-cache dtypes"),
    (dict(KV_MODEL, prompt_len="zipf:2"), "--prompt-len"),
    (dict(model="llama-9"), "unknown model 'llama-9'; built-in models: deepseek-v3"),
])
def test_kvcache_bad_input_as_the_cli(flags, message):
    with pytest.raises(iosim.ConfigError) as e:
        iosim.kvcache(**flags)
    assert message in str(e.value)
    if IOSIM:
        cli = subprocess.run([IOSIM, *kvcache_args(flags)], capture_output=True, text=True)
        assert cli.returncode == 2
        assert cli.stderr.splitlines()[0] == "iosim: " + str(e.value)


def test_kvcache_python_only_errors():
    with pytest.raises(iosim.ConfigError, match="unknown flag 'kv_head'.*did you mean 'kv_heads'"):
        iosim.kvcache(layers=2, kv_head=2, head_dim=64)
    with pytest.raises(iosim.ConfigError, match="unknown flag 'format'"):
        iosim.kvcache(**KV_MODEL, format="json")
    with pytest.raises(iosim.ConfigError, match="layers=32.0 has the wrong type"):
        iosim.kvcache(layers=32.0, kv_heads=8, head_dim=128)
    with pytest.raises(iosim.ConfigError, match="seed=-1 has the wrong type"):
        iosim.kvcache(**KV_MODEL, seed=-1)


def layer_args(flags):
    """`iosim layer`'s arguments for iosim.layer's keywords."""
    args = ["layer"]
    for key, value in flags.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
@pytest.mark.parametrize("flags", [
    dict(model="llama-3-8b", phase="decode", batch=8, seq=4096),
    dict(model="qwen2-7b", phase="prefill", seq=256, tp=2, l2="off", dtype="fp16"),
    dict(model="mistral-7b", phase="prefill", batch=2, seq=128, context=512, algo="flash1",
         gemm_bm=64, gemm_bn=128, gemm_bk=32, gemm_group_m=4, sm_clock_mhz=1500.0),
])
def test_layer_equals_the_cli(flags):
    doc = iosim.layer(**flags)
    assert doc == json.loads(subprocess.run([IOSIM, *layer_args(flags), "--format", "json"],
                                            check=True, capture_output=True, text=True).stdout)
    assert doc["schema_version"] == iosim.schema_version
    assert doc["request"]["seq"] == flags["seq"]
    assert [op["name"] for op in doc["layer"]][:2] == ["input_norm", "qkv_proj"]


@pytest.mark.parametrize("flags,message", [
    (dict(phase="decode", seq=128), "--model is required"),
    (dict(model="llama-3-8b"), "--seq is required"),
    (dict(model="llama-3-8", seq=128), "did you mean 'llama-3-8b'"),
    (dict(model="llama-3-8b", seq=128, phase="train"), "--phase train: expected prefill or decode"),
    (dict(model="llama-3-8b", seq=128, tp=3), "--tp 3 does not divide"),
    (dict(model="llama-3-8b", seq=0), "--seq must be positive, got 0"),
    (dict(model="llama-3-8b", seq=128, l2="maybe"), "--l2 maybe: expected on or off"),
])
def test_layer_bad_input_as_the_cli(flags, message):
    with pytest.raises(iosim.ConfigError) as e:
        iosim.layer(**flags)
    assert message in str(e.value)
    if IOSIM:
        cli = subprocess.run([IOSIM, *layer_args(flags)], capture_output=True, text=True)
        assert cli.returncode == 2
        assert message in cli.stderr


def test_layer_python_only_errors():
    with pytest.raises(iosim.ConfigError, match="seq='4096' has the wrong type: expected int, "
                                                "got str"):
        iosim.layer(model="llama-3-8b", seq="4096")
    with pytest.raises(iosim.ConfigError, match="batch=2.0 has the wrong type: expected int"):
        iosim.layer(model="llama-3-8b", seq=128, batch=2.0)
    with pytest.raises(iosim.ConfigError, match="phase=1 has the wrong type: expected str"):
        iosim.layer(model="llama-3-8b", seq=128, phase=1)
    with pytest.raises(iosim.ConfigError, match="unknown flag 'sequence'"):
        iosim.layer(model="llama-3-8b", sequence=128)
    with pytest.raises(iosim.ConfigError, match="unknown flag 'tpp'.*did you mean 'tp'"):
        iosim.layer(model="llama-3-8b", seq=128, tpp=2)


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
def test_layer_mixed_step_takes_lists_as_the_cli():
    # A mixed serving step: seq_lens and context_lens as lists of ints (as run's ragged batch) or
    # the CLI's comma text, the same document as `iosim layer --seq-lens ... --context-lens ...`.
    model = dict(model="llama-3-8b", profile="a100-sxm4-80gb")
    doc = iosim.layer(**model, seq_lens=[1, 1, 1, 512], context_lens=(4096, 2000, 8000, 8192))
    assert doc == cli_json("layer", "--model", "llama-3-8b", "--profile", "a100-sxm4-80gb",
                           "--seq-lens", "1,1,1,512", "--context-lens", "4096,2000,8000,8192")
    assert doc == iosim.layer(**model, seq_lens="1,1,1,512", context_lens="4096,2000,8000,8192")
    r = doc["request"]
    assert (r["phase"], r["batch"], r["tokens"]) == ("mixed", 4, 515)
    assert (r["seq_lens"], r["context_lens"]) == ([1, 1, 1, 512], [4096, 2000, 8000, 8192])
    assert doc["layer"][1]["m"] == 515  # qkv_proj: the packed total of the query tokens
    with pytest.raises(iosim.ConfigError, match="seq_lens=\\[1, '2'\\] has the wrong type"):
        iosim.layer(**model, seq_lens=[1, "2"])
    with pytest.raises(iosim.ConfigError, match="--batch with --seq-lens"):
        iosim.layer(**model, seq_lens=[1, 512], batch=2)


KERNEL = {"name": "wg1", "dataflow": {"forward": "query_stationary"},
          "tiles": {"block_q": 128, "block_kv": 64, "stages": 3},
          "mechanisms": {"mma": "wgmma_rs", "load": "tma", "warp_roles": "uniform"}}


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
def test_kernel_dict_equals_the_cli_with_a_file(tmp_path):
    # A description as a dict is the same run as the same description in a YAML file.
    path = tmp_path / "wg1.yaml"
    path.write_text(json.dumps(KERNEL))  # JSON is YAML
    r = iosim.run(kernel=KERNEL, batch=2, heads=8, seq=2048, head_dim=128)
    c = cli_json("run", "--kernel", str(path), "--batch", "2", "--heads", "8", "--seq", "2048",
                 "--head-dim", "128")
    assert without_wall(r) == without_wall(c)
    assert r["algorithm"] == "wg1"
    assert r["kernel_description"]["mechanisms"]["mma"] == "wgmma_rs"
    assert r["kernels"][0]["name"] == "wg1_fwd"


def test_kernel_dict_errors_are_config_errors():
    bad = dict(KERNEL, mechanisms={"mma": "wgmma"})
    with pytest.raises(iosim.ConfigError, match="mechanisms.mma: unknown mma 'wgmma'"):
        iosim.run(kernel=bad, seq=1024)
    with pytest.raises(iosim.ConfigError, match="needs wgmma"):
        iosim.run(kernel=KERNEL, seq=1024, profile="a100-sxm4-80gb")
    rows = iosim.sweep(kernel=[KERNEL, "flash2"], seq=1024, head_dim=64)
    assert [r["algorithm"] for r in rows] == ["wg1", "flash2"]
    # kernel= runs in place of algo=: both given is a mistake (algo was dropped without a word).
    with pytest.raises(iosim.ConfigError, match="give one of them"):
        iosim.run(kernel="flash2", algo="flash1", seq=1024)


# iosim.sweep(client=...) on a dask.distributed cluster (Debian's python3-distributed): two worker
# processes of one thread each, as a cluster's workers are separate processes that import iosim
# (PYTHONPATH, which ctest sets, reaches them). One cluster for the tests below: starting it is
# most of their time.
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed not importable (python3-distributed)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


# Debian's distributed 2022.12 starts its event loop with a call that tornado 6.2 deprecates.
on_dask = pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")


def row_texts(rows):
    return [json.dumps(without_wall(r), sort_keys=True) for r in rows]


@on_dask
def test_sweep_on_dask_equals_the_local_sweep(dask_client):
    flags = dict(algo=["flash1", "flash2"], seq=[128, 256], head_dim=64, block_kv=[32, 64, 4096])
    local = iosim.sweep(**flags)
    seen = []
    rows = iosim.sweep(client=dask_client, progress=lambda done, total: seen.append((done, total)),
                       **flags)
    assert len(rows) == 12 and any(not r["feasible"] for r in rows)
    assert row_texts(rows) == row_texts(local)
    # Default: 4 tasks per worker thread, 8 here; progress counts points, up to all of them.
    assert len(seen) == 8 and seen[-1] == (12, 12)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # Fewer tasks than workers, and a DataFrame as the local one.
    assert row_texts(iosim.sweep(client=dask_client, chunks=1, **flags)) == row_texts(local)
    pandas = pytest.importorskip("pandas")
    df = iosim.sweep(client=dask_client, chunks=3, dataframe=True, **flags)
    pandas.testing.assert_frame_equal(df.drop(columns="simulation_wall_s"),
                                      iosim.sweep(dataframe=True, **flags)
                                      .drop(columns="simulation_wall_s"))


@on_dask
def test_sweep_on_dask_names_the_point_that_fails(dask_client):
    # Point 5 of 5, the second of task 2 of 3, fails on its worker; the error is raised here,
    # naming it, instead of a hang or a worker's traceback.
    with pytest.raises(iosim.ConfigError,
                       match=re.escape("sweep point 5 of 5 (algo='flsh2', seq=128): ")
                       + ".*did you mean 'flash2'"):
        iosim.sweep(client=dask_client, algo=["flash1", "flash2", "standard", "flash1", "flsh2"],
                    seq=128, chunks=3)


def test_sweep_client_errors():
    with pytest.raises(iosim.ConfigError,
                       match=re.escape("client='localhost:8786' has the wrong type: expected a "
                                       "dask.distributed.Client, got str")):
        iosim.sweep(seq=[128], client="localhost:8786")
    with pytest.raises(iosim.ConfigError, match="progress= is for a sweep on a dask cluster"):
        iosim.sweep(seq=[128], progress=print)


def ctrl_c_child(child, timeout_s):
    """Runs `child` (Python source that prints "ready" once its long call is under way) in a
    process, sends it SIGINT 1.5 s later (well inside the call: its --exact takes hours) and
    returns its output lines and when the signal was sent (time.monotonic())."""
    import signal
    import sys
    import textwrap
    import time

    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(child)], stdout=subprocess.PIPE,
                         text=True, env=dict(os.environ))
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("the call ran on after Ctrl-C")
    return out.split("\n"), sent


def test_ctrl_c_stops_a_long_call_and_the_next_call_runs():
    # Python's SIGINT handler only sets a flag read when the call returns: a run of minutes went
    # on 9 s and more after Ctrl-C. Now the call ends with KeyboardInterrupt within about a
    # second, and the process can call again.
    lines, sent = ctrl_c_child("""
        import sys, time
        import iosim
        print("ready", flush=True)
        try:
            iosim.run(seq=1048576, batch=64, heads=64, head_dim=256, exact=True)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.monotonic(), flush=True)
        print("again", iosim.run(seq=128)["feasible"], flush=True)
    """, timeout_s=60)
    assert lines[0].startswith("interrupted"), lines
    assert float(lines[0].split()[1]) - sent < 1.5
    assert lines[1] == "again True"


def test_ctrl_c_is_not_lost_to_a_call_starting_on_another_thread():
    # Each call forgets earlier stops as it starts; process-wide, a call starting on another
    # thread between a Ctrl-C and the main thread's next check cancelled it, and the main call
    # ran on (issue #50's sixth probe). Here another thread starts calls all the while.
    lines, sent = ctrl_c_child("""
        import threading, time
        import iosim
        done = threading.Event()
        def calls():
            while not done.is_set():
                try:
                    iosim.run(seq=64)
                except BaseException:
                    pass
        threading.Thread(target=calls, daemon=True).start()
        print("ready", flush=True)
        try:
            iosim.run(seq=1048576, batch=64, heads=64, head_dim=256, exact=True)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.monotonic(), flush=True)
        done.set()
    """, timeout_s=30)
    assert lines[0].startswith("interrupted"), lines
    assert float(lines[0].split()[1]) - sent < 3


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
def test_tune_equals_the_cli():
    flags = dict(algo="flash2", batch=2, heads=8, seq=2048, head_dim=64, causal=True)
    doc = iosim.tune(block_q=[64, 128], block_kv=[64, 128], stages=2, top=3, **flags)
    cli = cli_json("tune", "--algo", "flash2", "--batch", "2", "--heads", "8", "--seq", "2048",
                   "--head-dim", "64", "--causal", "--block-q", "64,128", "--block-kv", "64,128",
                   "--stages", "2", "--top", "3")
    strip = lambda d: json.dumps(d, sort_keys=True).replace("simulation_wall_s", "")
    assert [p["time_s"] for p in doc["ranked"]] == [p["time_s"] for p in cli["ranked"]]
    assert doc["tie_band"] == cli["tie_band"] == iosim.default_tie_band_pct / 100
    times = [p["time_s"] for p in doc["ranked"]]
    assert times == sorted(times) and len(times) == 3
    assert strip(doc["space"]) == strip(cli["space"])


def test_tune_errors():
    # A single value is a one-point axis.
    one = iosim.tune(algo="flash2", seq=1024, block_q=64, block_kv=64, stages=2, threads=128)
    assert one["points"] == 1 and one["ranked"][0]["block_q"] == 64
    with pytest.raises(iosim.ConfigError, match="tie_band"):
        iosim.tune(algo="flash2", seq=1024, tie_band=500)
    with pytest.raises(iosim.InfeasibleError):
        iosim.tune(algo="flash2", seq=1024, head_dim=128, block_q=[1024], block_kv=[1024])


def test_compare_columns_are_the_single_runs():
    flags = dict(seq=256, batch=2, heads=2, head_dim=64, causal=True)
    tp = {"name": "tp", "dataflow": {"forward": "query_stationary", "backward": "two_pass"}}
    doc = iosim.compare(algo="flash1,flash2", kernel=["flash3", tp], **flags)
    assert doc["schema_version"] == 1
    assert doc["compare"] == {"kernels": ["flash1", "flash2", "flash3", "tp"],
                              "baseline": "flash1"}
    singles = [iosim.run(algo="flash1", **flags), iosim.run(algo="flash2", **flags),
               iosim.run(kernel="flash3", **flags), iosim.run(kernel=tp, **flags)]
    for run, single in zip(doc["runs"], singles):
        assert without_wall(run) == without_wall(single)


@pytest.mark.skipif(not IOSIM, reason="IOSIM (the CLI binary) not set")
def test_compare_equals_the_cli():
    doc = iosim.compare(algo=["flash2", "flash3"], seq=512, heads=4)
    cli = cli_json("run", "--algo", "flash2,flash3", "--seq", "512", "--heads", "4")
    assert doc["compare"] == cli["compare"]
    assert [without_wall(r) for r in doc["runs"]] == [without_wall(r) for r in cli["runs"]]


def test_compare_bad_input():
    with pytest.raises(iosim.ConfigError, match="'flash2' is compared twice"):
        iosim.compare(algo=["flash2", "flash2"], seq=64)
    with pytest.raises(iosim.ConfigError, match="needs two kernels or more"):
        iosim.compare(algo="flash2", seq=64)
    with pytest.raises(iosim.ConfigError, match="--algo flash2: --pattern applies"):
        iosim.compare(algo=["block-sparse", "flash2"], pattern="strided:2", seq=256)
    with pytest.raises(iosim.ConfigError, match="seq is required"):
        iosim.compare(algo=["flash1", "flash2"])
    with pytest.raises(TypeError, match="algo=5 has the wrong type"):
        iosim.compare(algo=5, kernel="flash3", seq=64)
    with pytest.raises(iosim.InfeasibleError) as infeasible:
        iosim.compare(algo=["flash2", "flash1"], block_kv=4096, seq=256)
    assert infeasible.value.report["algorithm"] == "flash2"
