"""The Python package against the CLI: same documents, same errors, typed."""
import json
import os
import subprocess

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
    (dict(seq=1024, set=["l2.size_bytes=20e6", "sm.count=100"]),
     ["--seq", "1024", "--set", "l2.size_bytes=20e6", "--set", "sm.count=100"]),
])
def test_run_equals_the_cli(flags, args):
    assert without_wall(iosim.run(**flags)) == without_wall(cli_json("run", *args))


def test_run_fields():
    r = iosim.run(algo="flash2", batch=4, heads=16, seq=4096, head_dim=64)
    c = r["counters"]
    assert c["hbm_total_bytes"] == (c["hbm_read_bytes"] + c["hbm_write_bytes"]
                                    + c["hbm_write_dirty_at_end_bytes"])
    assert c["hbm_total_bytes"] >= r["bounds"]["compulsory_bytes"]
    assert r["sm_clock_mhz"] > 0


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


def test_sweep_dataframe():
    pandas = pytest.importorskip("pandas")
    df = iosim.sweep(seq=[256, 512], head_dim=64, dataframe=True)
    assert isinstance(df, pandas.DataFrame)
    assert list(df["seq"]) == [256, 512]
    assert "hbm_total_bytes" in df.columns


def test_validate():
    v = iosim.validate(os.path.join(REPO, "measurements", "h100-sxm5-80gb",
                                    "measurements_decode_2026-11-22.json"))
    assert v["schema_version"] == 1
    assert any(s["schedule"] == "all" and s["cases"] == 43 for s in v["summaries"])
    with pytest.raises(iosim.ConfigError):
        iosim.validate("/nonexistent/measurements.json")
