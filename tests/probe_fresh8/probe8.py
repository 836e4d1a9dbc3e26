#!/usr/bin/env python3
"""probe8: a focused adversarial probe of iosim's multi-head latent attention surfaces.

Surfaces: model files with the optional MLA keys (`iosim layer --model FILE`), the built-in
deepseek-v3's decode layer, `iosim run/sweep/explain --latent-dim`, `iosim kvcache --latent-dim`,
`iosim validate` of a hand-made latent measurement, and the Python package's layer()/run().

Every case runs under a timeout and is classified:
  ok          the documented answer: exit 2 with a one-line message starting `iosim` for bad
              input; exit 0 with a result that passes the case's consistency check for good input
  crash       killed by a signal, abort/sanitizer text, or an exit code not in {0, 2, 3}
  hang        did not finish within its timeout
  internal    C++ / library internals in the message (std::, yaml-cpp, what():, ...)
  misleading  refused, but the message does not start with `iosim` or names the wrong thing;
              or a result whose numbers fail the case's consistency check
  silent      clearly invalid input accepted (exit 0)
  destructive a file that was not ours changed, or an output left half-written after a failure

Usage: python3 probe8.py IOSIM [--py PYDIR] [--work DIR] [--out results.json] [--jobs 2]
"""
import argparse
import concurrent.futures as cf
import copy
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("iosim")
ap.add_argument("--py", default="")
ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
ap.add_argument("--work", default="/tmp/probe8/work")
ap.add_argument("--out", default="/tmp/probe8/results.json")
ap.add_argument("--jobs", type=int, default=2)
args = ap.parse_args()
BIN = os.path.abspath(args.iosim)
W = args.work
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
T0 = time.time()

INTERNAL_RE = re.compile(
    r"std::|basic_string|terminate called|what\(\):|\bstoi\b|\bstoll\b|\bstod\b|nlohmann|"
    r"\[json\.|yaml-cpp|YAML::|bad_alloc|bad conversion|bad_optional|bad_variant|vector::|"
    r"[Ii]nternal error|Assertion|pybind11|CLI::|Traceback|Segmentation|core dumped|"
    r"Sanitizer|runtime error:|map::at|invalid node|operator\[\] call|key not found|"
    r"bad file|yaml-cpp: error")
CRASH_RE = re.compile(r"AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|"
                      r"Segmentation fault|core dumped|terminate called|Aborted", re.I)


def wfile(name, text):
    p = os.path.join(W, "in", name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    return p


def sha(p):
    try:
        with open(p, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


class Case:
    def __init__(self, group, argv, expect, check=None, names=None, watch=(), timeout=20,
                 py=None, note=""):
        self.group, self.argv, self.expect, self.check = group, argv, expect, check
        self.names = names          # the refusal should mention one of these (case-insensitive)
        self.watch = list(watch)    # files that must be unchanged after the run
        self.timeout, self.py, self.note = timeout, py, note


CASES = []


def add(*a, **k):
    CASES.append(Case(*a, **k))


# ------------------------------------------------------------------------------------------
# consistency checks on accepted results

def finite_pos(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def layer_check(batch, context, tp=1, heads=128, kv_lora=512, rope=64, dtype_b=2, q_lora=1536,
                nope=128, v_head=128):
    """An MLA decode layer JSON: the absorbed ops present, q_absorb/v_unabsorb batched over the
    rank's heads, the attention reading at least the latent cache once, positive finite times."""
    def chk(out):
        try:
            d = json.loads(out)
        except Exception as e:  # noqa: BLE001
            return "misleading", "json does not parse: %s" % e
        ops = {o["name"]: o for o in d.get("layer", [])}
        hr = heads // tp
        for n in ("q_absorb", "v_unabsorb", "kv_a_proj", "attention", "o_proj"):
            if n not in ops:
                return "misleading", "op %s missing (ops: %s)" % (n, list(ops))
        if (q_lora > 0) != ("q_a_proj" in ops):
            return "misleading", "q_lora_rank %d but ops %s" % (q_lora, list(ops))
        qa, vu = ops["q_absorb"], ops["v_unabsorb"]
        # one head a rank: a plain GEMM, JSON leaves `batch` out (as the table writes M x N x K)
        if qa.get("batch", 1) != hr or vu.get("batch", 1) != hr:
            return "misleading", "q_absorb batch %s v_unabsorb batch %s, heads/tp %d" % (
                qa.get("batch"), vu.get("batch"), hr)
        if (qa["m"], qa["n"], qa["k"]) != (batch, kv_lora, nope):
            return "misleading", "q_absorb m,n,k %s" % ((qa["m"], qa["n"], qa["k"]),)
        if (vu["m"], vu["n"], vu["k"]) != (batch, v_head, kv_lora):
            return "misleading", "v_unabsorb m,n,k %s" % ((vu["m"], vu["n"], vu["k"]),)
        if ops["kv_a_proj"]["n"] != kv_lora + rope:
            return "misleading", "kv_a_proj n %s" % ops["kv_a_proj"]["n"]
        if ops["o_proj"]["k"] != hr * v_head:
            return "misleading", "o_proj k %s != %d" % (ops["o_proj"]["k"], hr * v_head)
        lat = batch * context * (kv_lora + rope) * dtype_b
        qo = batch * hr * (kv_lora + rope + kv_lora) * 2  # Q in, O out (--dtype's 2 bytes)
        at = ops["attention"]
        if at["hbm_read_bytes"] < 0.99 * lat:
            return "misleading", "attention reads %d B < latent cache %d B" % (
                at["hbm_read_bytes"], lat)
        if at["hbm_read_bytes"] > 1.6 * lat + 1.5 * qo + 64e6:
            return "misleading", "attention reads %d B >> latent cache %d B (a V too?)" % (
                at["hbm_read_bytes"], lat)
        for o in d["layer"] + d["step_tail"]:
            if not finite_pos(o["time_s"]):
                return "misleading", "op %s time %r" % (o["name"], o["time_s"])
        if not finite_pos(d["step_total"]["time_s"]):
            return "misleading", "step time %r" % d["step_total"]["time_s"]
        return None
    return chk


def run_check(B, H, Nkv, hd, C, dtype_b=2, kvh_expect=1, seq=1, paged=False):
    """run --latent-dim JSON: kv_heads as expected, K read once-ish from HBM, no V bytes."""
    def chk(out):
        try:
            d = json.loads(out)
        except Exception as e:  # noqa: BLE001
            return "misleading", "json does not parse: %s" % e
        p = d["problem"]
        if p.get("latent_dim") != C:
            return "misleading", "latent_dim %r" % p.get("latent_dim")
        if p.get("kv_heads") != kvh_expect:
            return "misleading", "kv_heads %r, expected %r" % (p.get("kv_heads"), kvh_expect)
        if not d.get("feasible", True):
            return None  # an infeasible result is a row, checked elsewhere
        k = B * Nkv * kvh_expect * hd * dtype_b
        q = B * seq * H * hd * dtype_b
        rd = d["counters"]["hbm_read_bytes"] if "counters" in d and \
            "hbm_read_bytes" in d["counters"] else None
        if rd is None:
            return None
        if rd < 0.99 * k:
            return "misleading", "HBM read %d < K %d" % (rd, k)
        # no V: within K + Q + partials' re-read, well under 2 K for large K
        if k > 8e6 and rd > 1.5 * k + q + 8e6:
            return "misleading", "HBM read %d B for K %d B: a V read too?" % (rd, k)
        if not finite_pos(d["time_s"]):
            return "misleading", "time %r" % d["time_s"]
        return None
    return chk


def csv_kvheads_check(expect):
    def chk(out):
        lines = out.strip().splitlines()
        hdr = lines[0].split(",")
        for ln in lines[1:]:
            row = ln.split(",")
            if len(row) != len(hdr):
                return None  # quoted commas; skip
            r = dict(zip(hdr, row))
            if r.get("kv_heads") != str(expect):
                return "misleading", "csv kv_heads %r, expected %s" % (r.get("kv_heads"), expect)
        return None
    return chk


# ------------------------------------------------------------------------------------------
# 1. model files with MLA keys

DSV3 = open(os.path.join(args.repo, "models", "deepseek-v3.yaml")).read()
MLA = ["q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]
DEF = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
       "qk_rope_head_dim": 64, "v_head_dim": 128}


def model_lines():
    return DSV3.splitlines()


def set_key(text, key, raw_value, keep_map=True):
    out = []
    for ln in text.splitlines():
        if ln.startswith(key + ":"):
            if raw_value is None:
                continue
            if keep_map:
                ln = "%s: {value: %s, source: \"probe\"}" % (key, raw_value)
            else:
                ln = "%s: %s" % (key, raw_value)
        out.append(ln)
    return "\n".join(out) + "\n"


LAYER = ["layer", "--phase", "decode", "--batch", "2", "--context", "128", "--format", "json",
         "--max-seconds", "15"]


def model_case(name, text, expect, check=None, names=None, extra=()):
    p = wfile("models/%s.yaml" % name, text)
    add("model-file", [BIN] + LAYER[:1] + ["--model", p] + LAYER[1:] + list(extra), expect,
        check=check, names=names, note=name)


# bad values of every MLA key
BAD_VALUES = ["-1", "1.5", "512.0", "abc", "true", "null", "''", "[]", "{}", "2147483648",
              "9223372036854775808", "1e3", "0x200", "\"512\"", "99999999999999999999999"]
for key in MLA:
    for v in BAD_VALUES:
        # "512" quoted is a string: the schema says integer
        model_case("bad_%s_%s" % (key, re.sub(r"\W", "_", v)), set_key(DSV3, key, v), "reject",
                   names=[key])
    model_case("bare_%s" % key, set_key(DSV3, key, "512", keep_map=False), "reject", names=[key])
    model_case("nosource_%s" % key,
               "\n".join(ln if not ln.startswith(key + ":") else "%s: {value: %d}" % (key, DEF[key])
                         for ln in DSV3.splitlines()) + "\n", "reject", names=[key, "source"])
    model_case("emptysource_%s" % key,
               "\n".join(ln if not ln.startswith(key + ":")
                         else "%s: {value: %d, source: \"\"}" % (key, DEF[key])
                         for ln in DSV3.splitlines()) + "\n", "reject", names=[key, "source"])
    model_case("extra_in_map_%s" % key,
               "\n".join(ln if not ln.startswith(key + ":")
                         else "%s: {value: %d, source: \"x\", unit: 1}" % (key, DEF[key])
                         for ln in DSV3.splitlines()) + "\n", "reject", names=[key, "unit"])
    model_case("dup_%s" % key, DSV3 + "%s: {value: %d, source: \"dup\"}\n" % (key, DEF[key]),
               "reject", names=[key, "duplicate", "twice", "again"])

# out-of-range limits (0 where the minimum is 1; just over each maximum)
for key, lo, hi in [("q_lora_rank", 0, 1048576), ("kv_lora_rank", 1, 768),
                    ("qk_nope_head_dim", 1, 768), ("qk_rope_head_dim", 0, 256),
                    ("v_head_dim", 1, 1024)]:
    if lo > 0:
        model_case("below_%s" % key, set_key(DSV3, key, str(lo - 1)), "reject", names=[key])
    model_case("above_%s" % key, set_key(DSV3, key, str(hi + 1)), "reject", names=[key])

# every proper non-empty subset of the MLA keys removed: partial group
import itertools  # noqa: E402
for r in range(1, 5):
    for drop in itertools.combinations(MLA, r):
        t = DSV3
        for k in drop:
            t = set_key(t, k, None)
        model_case("partial_minus_" + "_".join(drop), t, "reject", names=list(MLA))
# all five removed: a plain (non-MLA) model of deepseek's shape: accepted as GQA-less MHA
t = DSV3
for k in MLA:
    t = set_key(t, k, None)
model_case("no_mla_keys", t, "accept")

# head_dim inconsistent with nope + rope; kv_heads != attention_heads
for hd in ("191", "193", "128", "64", "576"):
    model_case("head_dim_%s" % hd, set_key(DSV3, "head_dim", hd), "reject", names=["head_dim"])
for kvh in ("1", "64", "2"):
    model_case("kv_heads_%s" % kvh, set_key(DSV3, "kv_heads", kvh), "reject", names=["kv_heads"])
# consistent variants that must run
model_case("q_lora_0", set_key(DSV3, "q_lora_rank", "0"), "accept",
           check=layer_check(2, 128, q_lora=0))
model_case("rope_0", set_key(set_key(DSV3, "qk_rope_head_dim", "0"), "head_dim", "128"), "accept",
           check=layer_check(2, 128, rope=0))
model_case("kv_lora_1", set_key(DSV3, "kv_lora_rank", "1"), "accept",
           check=layer_check(2, 128, kv_lora=1))
model_case("kv_lora_768_rope_256 (finding 4)",
           set_key(set_key(set_key(DSV3, "kv_lora_rank", "768"), "qk_rope_head_dim", "256"),
                   "head_dim", "384"), "accept",
           check=layer_check(2, 128, kv_lora=768, rope=256))
model_case("v_head_1", set_key(DSV3, "v_head_dim", "1"), "accept",
           check=layer_check(2, 128, v_head=1))
model_case("v_head_1024", set_key(DSV3, "v_head_dim", "1024"), "accept",
           check=layer_check(2, 128, v_head=1024))
model_case("nope_1", set_key(set_key(DSV3, "qk_nope_head_dim", "1"), "head_dim", "65"), "accept",
           check=layer_check(2, 128, nope=1))
model_case("q_lora_max", set_key(DSV3, "q_lora_rank", "1048576"), "accept")
model_case("heads_1", set_key(set_key(DSV3, "attention_heads", "1"), "kv_heads", "1"), "accept",
           check=layer_check(2, 128, heads=1))
model_case("heads_7", set_key(set_key(DSV3, "attention_heads", "7"), "kv_heads", "7"), "accept",
           check=layer_check(2, 128, heads=7))
# extra / misspelled keys
model_case("typo_kv_lora_rnk", DSV3.replace("kv_lora_rank:", "kv_lora_rnk:"), "reject",
           names=["kv_lora_rnk", "kv_lora_rank"])
model_case("extra_mla_key", DSV3 + "rope_theta: {value: 10000, source: \"x\"}\n", "reject",
           names=["rope_theta"])
model_case("mla_key_top_null", DSV3 + "", "accept")  # control: unchanged file
model_case("dup_whole_file", DSV3 + DSV3, "reject", names=["duplicate", "twice", "again", "name"])
# YAML aliases / anchors in an MLA value
model_case("anchor_alias",
           DSV3.replace("kv_lora_rank: {value: 512", "kv_lora_rank: {value: &r 512")
           .replace("v_head_dim: {value: 128", "v_head_dim: {value: *r"), "reject",
           names=["anchor", "alias"])
# tab / truncated file
model_case("truncated", DSV3[: DSV3.index("qk_nope_head_dim") + 20], "reject")

# the same model as JSON
doc = {}
for ln in DSV3.splitlines():
    pass
try:
    import yaml  # noqa: F401
    HAVE_YAML = True
except ImportError:
    HAVE_YAML = False


def dsv3_dict():
    d = {}
    for ln in DSV3.splitlines():
        m = re.match(r'^(\w+): \{value: ([^,]+), source: "(.*)"\}$', ln)
        if m:
            v = m.group(2)
            v = {"true": True, "false": False}.get(v, v)
            if isinstance(v, str) and re.fullmatch(r"-?\d+", v):
                v = int(v)
            d[m.group(1)] = {"value": v, "source": m.group(3)}
        else:
            m = re.match(r"^(name|description): (.*)$", ln)
            if m:
                d[m.group(1)] = m.group(2)
    return d


JD = dsv3_dict()
assert len(JD) == 19, sorted(JD)
for ext in ("json", "yaml"):
    p = wfile("models/json_ok.%s" % ext, json.dumps(JD, indent=1))
    add("model-json", [BIN, "layer", "--model", p] + LAYER[1:], "accept",
        check=layer_check(2, 128), note="the model as a JSON document, .%s" % ext)
for key in MLA:
    for v in (None, "512", 512.5, True, -3, [], {}):
        jd = copy.deepcopy(JD)
        jd[key]["value"] = v
        p = wfile("models/json_%s_%s.json" % (key, re.sub(r"\W", "_", repr(v))), json.dumps(jd))
        add("model-json", [BIN, "layer", "--model", p] + LAYER[1:], "reject", names=[key],
            note="%s = %r" % (key, v))
    jd = copy.deepcopy(JD)
    del jd[key]
    p = wfile("models/json_minus_%s.json" % key, json.dumps(jd))
    add("model-json", [BIN, "layer", "--model", p] + LAYER[1:], "reject", names=list(MLA))
# duplicate key in JSON text
txt = json.dumps(JD)[:-1] + ', "kv_lora_rank": {"value": 256, "source": "dup"}}'
p = wfile("models/json_dup.json", txt)
add("model-json", [BIN, "layer", "--model", p] + LAYER[1:], "reject",
    names=["kv_lora_rank", "duplicate", "twice", "again"])

# the layer of an MLA model at other phases, and `iosim models`
add("models", [BIN, "models"], "accept",
    check=lambda o: None if "deepseek-v3" in o else ("misleading", "deepseek-v3 not listed"))
add("models", [BIN, "models", "--format", "json"], "any")
add("models", [BIN, "models", "--keys", "--format", "md"], "accept",
    check=lambda o: None if all(k in o for k in MLA) else ("misleading", "MLA keys not listed"))
add("models", [BIN, "models", "--schema"], "accept",
    check=lambda o: None if all(k in o for k in MLA) else ("misleading", "schema lacks MLA keys"))

# ------------------------------------------------------------------------------------------
# 2. iosim layer on deepseek-v3

DS = [BIN, "layer", "--model", "deepseek-v3", "--max-seconds", "15"]
add("layer-phase", DS + ["--phase", "prefill", "--seq", "128"], "reject", names=["prefill"])
add("layer-phase", DS + ["--seq", "128"], "reject", names=["prefill"])
add("layer-phase", DS + ["--seq-lens", "1,1,64"], "reject", names=["seq-lens", "mixed"])
add("layer-phase", DS + ["--seq-lens", "1,1,1", "--context-lens", "100,200,300"], "any",
    note="a mixed step of decode rows only")
add("layer-phase", DS + ["--phase", "decode"], "reject", names=["context", "seq"])
add("layer-phase", DS + ["--phase", "decode", "--seq", "256", "--format", "json"], "accept",
    check=layer_check(1, 256))
add("layer-phase", DS + ["--phase", "decode", "--seq", "256", "--context", "512"], "any",
    note="both --seq and --context in decode")
add("layer-phase", DS + ["--phase", "mixed", "--context", "64"], "reject", names=["phase"])
for b in ("1", "3", "64", "512"):
    for c in ("1", "63", "64", "65", "4096", "32768"):
        add("layer-shape", DS + ["--phase", "decode", "--batch", b, "--context", c, "--format",
                                 "json"], "accept", check=layer_check(int(b), int(c)))
for b in ("0", "-1", "2147483648", "abc", "1.5", ""):
    add("layer-shape", DS + ["--phase", "decode", "--batch", b, "--context", "64"], "reject",
        names=["--batch", "batch"])
for c in ("0", "-1", "2147483648", "abc", "1.5", ""):
    add("layer-shape", DS + ["--phase", "decode", "--batch", "1", "--context", c], "reject",
        names=["--context", "context"])
# near the limits: refused or fast
for b, c in [("65536", "64"), ("1", "1048576"), ("1", "2147483647"), ("1024", "131072"),
             ("2147483647", "1"), ("100000", "100000"), ("1048576", "1048576")]:
    add("layer-limits", DS + ["--phase", "decode", "--batch", b, "--context", c], "any",
        timeout=25, note="must be refused or finish")
for tp in ("1", "2", "4", "8", "16", "32", "64", "128"):
    add("layer-tp", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--tp", tp,
                          "--format", "json"], "accept",
        check=layer_check(4, 1024, tp=int(tp)))
for tp in ("0", "-2", "3", "256", "96"):
    add("layer-tp", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--tp", tp],
        "reject", names=["--tp"])
for dt, b_ in (("fp16", 2), ("bf16", 2)):
    add("layer-dtype", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--dtype",
                             dt, "--format", "json"], "accept", check=layer_check(4, 1024,
                                                                                 dtype_b=b_))
for dt in ("fp32", "fp8", "int8", ""):
    add("layer-dtype", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--dtype",
                             dt], "reject", names=["--dtype", "dtype"])
add("layer-dtype", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--kv-dtype",
                         "fp8", "--format", "json"], "accept",
    check=layer_check(4, 1024, dtype_b=1))
for alg in ("paged", "flash-decoding"):
    add("layer-algo", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--algo",
                            alg, "--format", "json"], "accept", check=layer_check(4, 1024))
for alg in ("flash2", "flash3", "flash1", "standard", "block-sparse", "nope"):
    add("layer-algo", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--algo",
                            alg], "reject", names=["--algo", alg])
for l2 in ("off", "on"):
    add("layer-l2", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--l2", l2,
                          "--format", "json"], "accept", check=layer_check(4, 1024))
for fmt in ("table", "json", "csv"):
    add("layer-format", DS + ["--phase", "decode", "--batch", "4", "--context", "1024",
                              "--format", fmt], "accept")
for fmt in ("md", "JSON", "xml", ""):
    add("layer-format", DS + ["--phase", "decode", "--batch", "4", "--context", "1024",
                              "--format", fmt], "reject", names=["--format"])
add("layer-format", DS + ["--phase", "decode", "--batch", "4", "--context", "1024", "--out",
                          os.path.join(W, "out.txt")], "reject", names=["--out"])
# sweeps
add("layer-sweep", DS + ["--phase", "decode", "--batch", "1:64:x4", "--context", "1024,4096",
                         "--format", "json"], "accept")
add("layer-sweep", DS + ["--phase", "decode", "--batch", "1:64:x4", "--context", "1024,4096",
                         "--format", "csv"], "accept")
# --html: good, into a missing dir, and a failing run must leave an existing file alone
keep = wfile("keep.html", "<p>not iosim's</p>\n")
add("layer-html", DS + ["--phase", "prefill", "--seq", "64", "--html", keep], "reject",
    watch=[keep], names=["prefill"])
add("layer-html", DS + ["--phase", "decode", "--context", "64", "--tp", "3", "--html", keep],
    "reject", watch=[keep], names=["--tp"])
add("layer-html", DS + ["--phase", "decode", "--context", "64", "--html",
                        os.path.join(W, "nodir", "x.html")], "reject", names=["nodir", "html"])
add("layer-html", DS + ["--phase", "decode", "--context", "64", "--html",
                        os.path.join(W, "ok.html")], "accept")
# GEMM flags over the MLA ops (q_absorb's K is qk_nope_head_dim = 128: two 64-column chunks)
for extra, exp in [(["--gemm-split-k", "2"], "accept"), (["--gemm-split-k", "3"], "accept"),
                   (["--gemm-split-k", "7"], "accept"), (["--gemm-bk", "256"], "accept"),
                   (["--gemm-bm", "64", "--gemm-bn", "64"], "accept"),
                   (["--gemm-cluster-n", "4"], "accept"), (["--gemm-group-m", "1000000"], "any"),
                   (["--gemm-bn", "1024"], "reject"), (["--gemm-split-k", "4096"], "reject"),
                   (["--launch", "stream", "--mlp-activation", "eager"], "accept"),
                   (["--profile", "a100-sxm4-80gb"], "accept"),
                   (["--profile", "h200-sxm-141gb"], "accept"),
                   (["--kernel", "flash-decoding"], "accept"), (["--kernel", "flash2"], "reject"),
                   (["--kernel", "paged", "--algo", "paged"], "reject")]:
    add("layer-gemm", DS + ["--phase", "decode", "--batch", "4", "--context", "1024"] + extra,
        exp, note=("finding 6" if extra[:1] == ["--gemm-split-k"] and extra[1] in ("3", "7")
                   else ""), names=[e for e in extra if e.startswith("--")] + ["split-K", "dtype"])
# a built-in non-MLA model still refuses nothing new
add("layer-other", [BIN, "layer", "--model", "llama-3-8b", "--phase", "decode", "--context", "64",
                    "--format", "json"], "accept")
add("layer-other", [BIN, "layer", "--model", "llama-3-8b", "--phase", "decode", "--context", "64",
                    "--gemm-split-k", "7"], "accept", note="finding 6's contrast")

# ------------------------------------------------------------------------------------------
# 3. iosim run --latent-dim

R = [BIN, "run", "--max-seconds", "15", "--max-memory", "4G"]


def rcase(group, extra, expect, **kw):
    add(group, R + extra, expect, **kw)


for alg in ("flash-decoding", "paged"):
    for C, hd in [(512, 576), (64, 64), (1, 64), (63, 64), (64, 128), (576, 576), (256, 320)]:
        for H in (1, 16, 128):
            rcase("run-latent", ["--algo", alg, "--latent-dim", str(C), "--head-dim", str(hd),
                                 "--heads", str(H), "--batch", "2", "--seq", "1", "--seq-kv",
                                 "2048", "--format", "json"], "accept",
                  check=run_check(2, H, 2048, hd, C))
    # head_dim 1024: the default 64-row tile does not fit shared memory, a 32-row one does
    rcase("run-latent", ["--algo", alg, "--latent-dim", "512", "--head-dim", "1024", "--heads",
                         "16", "--seq", "1", "--seq-kv", "2048"], "accept",
          note="finding 4: d=1024 default tiles")
    rcase("run-latent", ["--algo", alg, "--latent-dim", "512", "--head-dim", "1024", "--heads",
                         "16", "--seq", "1", "--seq-kv", "2048", "--block-q", "32", "--format",
                         "json"], "accept", check=run_check(1, 16, 2048, 1024, 512))
    for C, hd in [(577, 576), (65, 64), (0, 576), (-1, 576), (2147483648, 576)]:
        rcase("run-latent", ["--algo", alg, "--latent-dim", str(C), "--head-dim", str(hd),
                             "--heads", "16", "--seq", "1", "--seq-kv", "256"], "reject",
              names=["--latent-dim"])
    for v in ("abc", "1.5", "", "512,576"):
        rcase("run-latent", ["--algo", alg, "--latent-dim", v, "--head-dim", "576", "--heads",
                             "16", "--seq", "1", "--seq-kv", "256"], "reject",
              names=["--latent-dim"])
    # --kv-heads given vs left out
    for kvh, expect_kvh in [(1, 1), (2, 2), (16, 16), (4, 4)]:
        rcase("run-kvheads", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576",
                              "--heads", "16", "--kv-heads", str(kvh), "--seq", "1", "--seq-kv",
                              "1024", "--format", "json"], "accept",
              check=run_check(1, 16, 1024, 576, 512, kvh_expect=expect_kvh))
    for kvh in (3, 32, 0, -1):
        rcase("run-kvheads", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576",
                              "--heads", "16", "--kv-heads", str(kvh), "--seq", "1", "--seq-kv",
                              "1024"], "reject", names=["--kv-heads"])
    rcase("run-csv", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576", "--heads", "16",
                      "--seq", "1", "--seq-kv", "1024", "--format", "csv"], "accept",
          check=csv_kvheads_check(1))
    rcase("run-csv", ["--algo", alg + "," + ("paged" if alg != "paged" else "flash-decoding"), "--latent-dim", "512", "--head-dim",
                      "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024", "--format",
                      "csv"], "accept", check=csv_kvheads_check(1))
    # speculative --seq > 1
    for s in (2, 4, 7, 64, 200):
        rcase("run-spec", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576", "--heads",
                           "16", "--seq", str(s), "--seq-kv", "2048", "--format", "json"],
              "accept", check=run_check(1, 16, 2048, 576, 512, seq=s))
    rcase("run-spec", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576", "--heads", "16",
                       "--seq", "4", "--seq-kv", "2048", "--causal", "--format", "json"], "any")
    rcase("run-spec", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576", "--heads", "16",
                       "--seq", "4096", "--seq-kv", "2048"], "any", note="seq > seq_kv")
    # passes
    for ps in ("bwd", "fwdbwd"):
        rcase("run-pass", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576", "--heads",
                           "16", "--seq", "1", "--seq-kv", "1024", "--pass", ps], "reject",
              names=["--pass", "--latent-dim", ps])
    # execute (small)
    for C, hd, H, kvh, s in [(32, 48, 4, None, 1), (16, 16, 8, None, 3), (1, 16, 2, 2, 1),
                             (48, 64, 8, 2, 2)]:
        ex = ["--algo", alg, "--latent-dim", str(C), "--head-dim", str(hd), "--heads", str(H),
              "--seq", str(s), "--seq-kv", "300", "--batch", "2", "--execute", "--format", "json"]
        if kvh:
            ex += ["--kv-heads", str(kvh)]

        def exchk(out):
            d = json.loads(out)
            e = d.get("numerics", {}).get("max_abs_error")
            if e is None or not (e < 0.05):
                return "misleading", "execute max_abs_error %r" % e
            return None
        rcase("run-execute", ex, "accept", check=exchk)
    # other flags beside a latent
    for extra in (["--kv-dtype", "fp8"], ["--l2", "off"], ["--cold-l2"], ["--splits", "1"],
                  ["--splits", "64"], ["--block-q", "16"], ["--block-kv", "16"],
                  ["--stages", "1"], ["--stages", "4"], ["--threads", "128"],
                  ["--dtype", "bf16"], ["--profile", "a100-sxm4-80gb"], ["--exact"]):
        rcase("run-latent-flags", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576",
                                   "--heads", "16", "--seq", "1", "--seq-kv", "1024"] + extra,
              "any", note="beside " + " ".join(extra))
    for extra in (["--dtype", "fp32"], ["--dtype", "fp8"], ["--window", "128"], ["--mask"],
                  ["--dropout", "0.1"], ["--seq-lens", "1,1,1"], ["--pack-gqa", "off"],
                  ["--pattern", "local:2"], ["--splits", "0"]):
        rcase("run-latent-flags", ["--algo", alg, "--latent-dim", "512", "--head-dim", "576",
                                   "--heads", "16", "--seq", "1", "--seq-kv", "1024"] + extra,
              "any", note="beside " + " ".join(extra))
for alg in ("flash2", "flash3", "flash1", "standard", "block-sparse"):
    rcase("run-latent-algo", ["--algo", alg, "--latent-dim", "64", "--head-dim", "128", "--heads",
                              "4", "--seq", "1", "--seq-kv", "256"], "reject",
          names=["--latent-dim", alg])
rcase("run-latent-algo", ["--algo", "flash-decoding,flash2", "--latent-dim", "64", "--head-dim",
                          "128", "--heads", "4", "--seq", "1", "--seq-kv", "256"], "reject",
      names=["--latent-dim", "flash2"])
# kernel presets with a latent
for kern in ("flash-decoding", "paged", "flash2", "flashinfer-decode"):
    rcase("run-latent-kernel", ["--kernel", kern, "--latent-dim", "512", "--head-dim", "576",
                                "--heads", "16", "--seq", "1", "--seq-kv", "1024"], "any")
# huge latent problems: refused or fast
for b, nkv in [(1024, 131072), (65536, 65536), (1, 2147483647), (2147483647, 1)]:
    rcase("run-latent-huge", ["--algo", "flash-decoding", "--latent-dim", "512", "--head-dim",
                              "576", "--heads", "128", "--batch", str(b), "--seq", "1",
                              "--seq-kv", str(nkv)], "any", timeout=25)

# sweep / explain / kvcache with a latent
S = [BIN, "sweep", "--max-seconds", "15"]
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "64,128,512", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024", "--format",
                         "csv"], "accept", check=csv_kvheads_check(1))
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "64:576:x2", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024", "--format",
                         "json"], "accept")
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "512,600", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024"], "any",
    note="one point wider than head_dim: a row or a refusal")
add("sweep-latent", S + ["--algo", "flash-decoding,flash2", "--latent-dim", "512", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024"], "any")
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "0,512", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024"], "reject",
    names=["--latent-dim"])
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "abc", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "1024"], "reject",
    names=["--latent-dim"])
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "1:100000:+1", "--head-dim",
                         "576", "--heads", "16", "--seq", "1", "--seq-kv", "64"], "any",
    timeout=25, note="a 100,000-point latent sweep: refused or bounded")
add("sweep-latent", S + ["--algo", "flash-decoding", "--latent-dim", "512", "--head-dim",
                         "576", "--heads", "16", "--kv-heads", "1,2,16", "--seq", "1",
                         "--seq-kv", "1024", "--format", "csv"], "accept")
E = [BIN, "explain"]
for extra in (["--algo", "flash-decoding"], ["--algo", "paged"], ["--algo", "flash2"],
              ["--algo", "flash-decoding", "--pass", "bwd"]):
    add("explain-latent", E + extra + ["--latent-dim", "8", "--head-dim", "16", "--heads", "4",
                                       "--seq", "1", "--seq-kv", "64"],
        "accept" if extra[1] in ("flash-decoding", "paged") and len(extra) == 2 else "reject",
        names=["--latent-dim", "--pass", "flash2"])
add("explain-latent", E + ["--algo", "flash-decoding", "--latent-dim", "17", "--head-dim", "16",
                           "--heads", "4", "--seq", "1", "--seq-kv", "64"], "reject",
    names=["--latent-dim"])
for extra in (["--algo", "flash-decoding", "--seq", "1", "--latent-dim", "16"],
              ["--algo", "flash-decoding", "--seq", "1", "--latent-dim", "1", "--kv-heads", "2"],
              ["--algo", "flash-decoding", "--seq", "3", "--latent-dim", "8"],
              ["--algo", "paged", "--seq", "1", "--latent-dim", "8", "--page-tokens", "16"]):
    add("explain-latent", E + ["--head-dim", "16", "--heads", "4", "--seq-kv", "64"] + extra,
        "accept")
add("explain-latent", E + ["--algo", "flash-decoding", "--latent-dim", "512", "--head-dim", "576",
                           "--heads", "16", "--seq", "1", "--seq-kv", "64"], "reject",
    names=["--head-dim", "16"], note="explain's tiny-problem limit")
K = [BIN, "kvcache", "--layers", "61", "--kv-heads", "1", "--head-dim", "576", "--dtype", "bf16",
     "--requests", "200"]
add("kvcache-latent", K + ["--latent-dim", "512"], "accept")
add("kvcache-latent", K + ["--latent-dim", "577"], "reject", names=["--latent-dim"])
add("kvcache-latent", K + ["--latent-dim", "0"], "reject", names=["--latent-dim"],
    note="finding 2")
add("kvcache-latent", K + ["--latent-dim", "-1"], "reject", names=["--latent-dim"],
    note="finding 2")
add("kvcache-latent", K + ["--latent-dim", "-512"], "reject", names=["--latent-dim"],
    note="finding 2")
add("kvcache-latent", [BIN, "kvcache", "--layers", "61", "--kv-heads", "4", "--head-dim", "576",
                       "--requests", "200", "--latent-dim", "512"], "any",
    note="kv-heads 4 with a latent")

# validate: a hand-made latent measurement
VJ = json.load(open(os.path.join(args.repo, "cuda_validate", "measurements",
                                 sorted(os.listdir(os.path.join(args.repo, "cuda_validate",
                                                                "measurements")))[0],
                                 "varlen_2026-12-07", "varlen.json"))) \
    if False else None
vsrc = None
for root, dirs, files in os.walk(os.path.join(args.repo, "cuda_validate", "measurements")):
    if root.endswith("varlen_2026-12-07") and "varlen.json" in files:
        vsrc = os.path.join(root, "varlen.json")
        break
VJ = json.load(open(vsrc))


def mla_meas(mut=None):
    d = copy.deepcopy(VJ)
    c = copy.deepcopy(d["cases"][0])
    c["id"] = "mla_probe"
    c["schedule"] = "flash-decoding"
    c["problem"] = {"batch": 2, "heads": 16, "seq": 1, "seq_kv": 1024, "head_dim": 576,
                    "latent": 512, "dtype": "bf16", "causal": False}
    c["tiling"] = {"block_q": 64, "block_kv": 64, "threads": 256, "pipeline_stages": 2,
                   "source": "probe"}
    for k in c["kernels"]:
        k["grid"] = [1, 1, 1]
    c["kernels"] = c["kernels"][:1]
    if mut:
        mut(c)
    d["cases"] = [c]
    d["summary"]["cases"] = 1
    return d


VALS = [
    ("ok", None, "any"),
    ("latent_wider", lambda c: c["problem"].__setitem__("latent", 600), "reject"),
    ("latent_zero", lambda c: c["problem"].__setitem__("latent", 0), "reject"),
    ("latent_str", lambda c: c["problem"].__setitem__("latent", "512"), "reject"),
    ("latent_float", lambda c: c["problem"].__setitem__("latent", 512.5), "reject"),
    ("latent_null", lambda c: c["problem"].__setitem__("latent", None), "any"),
    ("latent_flash2", lambda c: c.__setitem__("schedule", "flash2"), "reject"),
    ("latent_kvh2", lambda c: c["problem"].__setitem__("kv_heads", 2), "any"),
    ("latent_kvh3", lambda c: c["problem"].__setitem__("kv_heads", 3), "reject"),
    ("latent_bwd", lambda c: c.__setitem__("pass", "bwd"), "any"),  # a skipped row
    # finding 1: `latent_dim` (run's JSON name) for `latent` is ignored without a word
    ("latent_name", lambda c: (c["problem"].pop("latent"),
                               c["problem"].__setitem__("latent_dim", 512)), "reject"),
    ("latent_name_d128", lambda c: (c["problem"].pop("latent"),
                                    c["problem"].__setitem__("head_dim", 128),
                                    c["problem"].__setitem__("latent_dim", 64)), "reject"),
]
for name, mut, exp in VALS:
    p = wfile("validate/%s/m.json" % name, json.dumps(mla_meas(mut), indent=1))
    add("validate-latent", [BIN, "validate", p, "--profile", "h100-sxm5-80gb", "--max-seconds",
                            "15"], exp, names=["latent", "schedule", "pass", "kv_heads"],
        note=name)
    add("validate-latent", [BIN, "validate", p, "--profile", "h100-sxm5-80gb", "--format", "json",
                            "--max-seconds", "15"], exp, names=["latent", "schedule", "pass",
                                                                 "kv_heads"], note=name + " json")
jout = wfile("validate_keep.json", "{\"mine\": true}\n")
p = os.path.join(W, "in", "validate", "latent_wider", "m.json")
add("validate-latent", [BIN, "validate", p, "--json", jout], "reject", watch=[jout],
    names=["latent"])

# ------------------------------------------------------------------------------------------
# 4. Python

if args.py:
    PYPRE = "import sys, json, math; sys.path.insert(0, %r); import iosim\n" % args.py
    good_model = os.path.join(W, "in", "models", "json_ok.json")
    bad_model = os.path.join(W, "in", "models", "partial_minus_q_lora_rank.yaml")
    PY = [
        ("layer_ds", "d = iosim.layer(model='deepseek-v3', phase='decode', batch=4, context=1024)\n"
         "print(json.dumps(d))", "accept", layer_check(4, 1024)),
        ("layer_file", "d = iosim.layer(model=%r, phase='decode', batch=2, context=128)\n"
         "print(json.dumps(d))" % good_model, "accept", layer_check(2, 128)),
        ("layer_bad_file", "iosim.layer(model=%r, phase='decode', context=128)" % bad_model,
         "reject", None),
        ("layer_prefill", "iosim.layer(model='deepseek-v3', phase='prefill', seq=128)",
         "reject", None),
        ("layer_mixed", "iosim.layer(model='deepseek-v3', seq_lens=[1, 64])", "reject", None),
        ("layer_tp3", "iosim.layer(model='deepseek-v3', phase='decode', context=64, tp=3)",
         "reject", None),
        ("layer_batch_list", "d = iosim.layer(model='deepseek-v3', phase='decode', "
         "batch=[1, 4], context=128)\nprint(type(d).__name__)", "any", None),
        ("run_latent", "d = iosim.run(algo='flash-decoding', latent_dim=512, head_dim=576, "
         "heads=16, seq=1, seq_kv=1024)\nprint(json.dumps(d))", "accept",
         run_check(1, 16, 1024, 576, 512, dtype_b=2)),
        ("run_latent_wide", "iosim.run(algo='flash-decoding', latent_dim=600, head_dim=576, "
         "heads=16, seq=1, seq_kv=1024)", "reject", None),
        ("run_latent_str", "iosim.run(algo='flash-decoding', latent_dim='x', head_dim=576, "
         "heads=16, seq=1, seq_kv=1024)", "reject", None),
        ("run_latent_none", "d = iosim.run(algo='flash-decoding', latent_dim=None, head_dim=576, "
         "heads=16, seq=1, seq_kv=1024)\nprint('ok')", "any", None),
        ("run_latent_bool", "iosim.run(algo='flash-decoding', latent_dim=True, head_dim=576, "
         "heads=16, seq=1, seq_kv=1024)", "reject", None),
        ("run_latent_flash2", "iosim.run(algo='flash2', latent_dim=64, head_dim=128, heads=4, "
         "seq=1, seq_kv=256)", "reject", None),
        ("sweep_latent", "d = iosim.sweep(algo='flash-decoding', latent_dim=[64, 512], "
         "head_dim=576, heads=16, seq=1, seq_kv=1024)\nprint(len(d))", "accept", None),
        ("kvcache_latent", "d = iosim.kvcache(layers=61, kv_heads=1, head_dim=576, "
         "latent_dim=512, requests=100)\nprint('ok')", "accept", None),
    ]
    # the 16-dtype run check uses fp16 default (2 bytes) -- same as bf16
    for name, code, exp, chk in PY:
        wrapped = PYPRE + ("try:\n" + "".join("    " + ln + "\n" for ln in code.splitlines()) +
                           "except iosim.ConfigError as e:\n    print('CONFIGERROR', e, "
                           "file=sys.stderr); sys.exit(2)\n"
                           "except iosim.InfeasibleError as e:\n    print('INFEASIBLE', e, "
                           "file=sys.stderr); sys.exit(2)\n")
        add("python", [sys.executable, "-c", wrapped], exp, check=chk, note=name, py=True)

# ------------------------------------------------------------------------------------------
# run

def classify(c, rc, out, err, dt, pre):
    txt = out + err
    changed = [w for w in c.watch if sha(w) != pre.get(w)]
    if changed:
        return "destructive", "changed: %s" % changed
    if rc is None:
        return "hang", "timeout %ds" % c.timeout
    if rc < 0 or CRASH_RE.search(txt) or rc not in (0, 2, 3):
        return "crash", "rc %s: %s" % (rc, err.strip()[-300:])
    if INTERNAL_RE.search(err):
        return "internal", err.strip()[:300]
    if rc == 3:
        return "ok", "budget (exit 3)"
    if rc == 0:
        if c.expect == "reject":
            return "silent", "accepted: " + out.strip()[:200].replace("\n", " | ")
        if c.check:
            try:
                r = c.check(out)
            except Exception as e:  # noqa: BLE001
                r = ("misleading", "check raised %r on output %r" % (e, out[:200]))
            if r:
                return r
        return "ok", ""
    # rc == 2
    msg = err.strip()
    if c.expect == "accept":
        return "misleading", "refused valid input: " + msg[:300]
    first = msg.splitlines()[0] if msg else ""
    if c.py:
        # the package raises iosim.ConfigError / InfeasibleError: the type says it is iosim's
        if not (first.startswith("CONFIGERROR ") or first.startswith("INFEASIBLE ")):
            return "misleading", "python message: " + msg[:300]
    elif not first.startswith("iosim"):
        return "misleading", "does not start with iosim: " + msg[:300]
    if c.group == "validate-latent" and "/in/validate/" in " ".join(c.argv) and not (
            "m.json" in msg or "mla_probe" in msg):
        return "misleading", "names neither the file nor the case (flags the user did not " \
            "give): " + msg[:300]
    if c.names and not any(n.lower() in msg.lower() for n in c.names):
        return "misleading?", "names none of %s: %s" % (c.names, msg[:300])
    return "ok", msg[:200]


def run_case(i):
    c = CASES[i]
    pre = {w: sha(w) for w in c.watch}
    t = time.time()
    try:
        p = subprocess.run(["nice", "-n", "10"] + c.argv, capture_output=True, text=True,
                           timeout=c.timeout, errors="replace", cwd=W)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, (e.stdout or b"").decode(errors="replace") if isinstance(
            e.stdout, bytes) else (e.stdout or ""), ""
    dt = time.time() - t
    outcome, why = classify(c, rc, out, err, dt, pre)
    return {"id": i, "group": c.group, "argv": c.argv if not c.py else ["python", c.note],
            "note": c.note, "expect": c.expect, "rc": rc, "outcome": outcome, "why": why,
            "wall_s": round(dt, 2), "stderr": err[-600:]}


res = []
with cf.ThreadPoolExecutor(args.jobs) as ex:
    for r in ex.map(run_case, range(len(CASES))):
        res.append(r)

os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
with open(args.out, "w") as f:
    json.dump(res, f, indent=1)

# summary
groups = {}
outs = ["ok", "crash", "hang", "internal", "misleading", "misleading?", "silent", "destructive"]
for r in res:
    g = groups.setdefault(r["group"], {o: 0 for o in outs})
    g[r["outcome"]] = g.get(r["outcome"], 0) + 1
print("| group | cases | " + " | ".join(outs) + " |")
print("| --- | ---: | " + " | ".join("---:" for _ in outs) + " |")
tot = {o: 0 for o in outs}
for g, d in groups.items():
    print("| %s | %d | %s |" % (g, sum(d.values()), " | ".join(str(d[o] or "") for o in outs)))
    for o in outs:
        tot[o] += d[o]
print("| **all** | %d | %s |" % (len(res), " | ".join(str(tot[o]) for o in outs)))
print("\nslowest: %s" % sorted(((r["wall_s"], r["group"], r["note"]) for r in res),
                               reverse=True)[:5])
print("wall %.1f s\n" % (time.time() - T0))
for r in res:
    if r["outcome"] != "ok":
        argv = r["argv"]
        cmd = " ".join(a if re.fullmatch(r"[\w./:,=+-]+", a) else repr(a) for a in argv)
        print("[%s] %s %s\n    %s\n    -> %s\n" % (r["outcome"], r["group"], r["note"], cmd,
                                                 r["why"][:400]))
