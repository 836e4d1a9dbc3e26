#!/usr/bin/env python3
"""Summarizes probe7.py's results.json: counts per input class and per outcome, and the non-OK
cases grouped by a normalized message (a first cut at deduplicating by root cause)."""
import collections
import json
import re
import shlex
import sys

res = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/probe7/results.json"))
BIN = "iosim"


def cmd(r):
    if r.get("py"):
        if r["kind"] == "pysig":
            e, s, d = r["py"]
            return "python3: %s  # %s after %ss" % (e, s, d)
        return "python3 -c 'import iosim; %s'" % r["py"]
    env = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in (r.get("env") or {}).items())
    c = BIN + " " + " ".join(shlex.quote(a) for a in r["argv"])
    return (env + " " + c).strip()


def norm(s):
    s = (s or "").strip().splitlines()
    s = s[0] if s else ""
    s = re.sub(r"/tmp/probe7/\S+", "PATH", s)
    s = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "N", s)
    return s[:160]




def triage(r):
    """The outcome after reading each non-OK case by hand (FINDINGS.md says why)."""
    o, g, a = r["outcome"], r["group"], " ".join(r.get("argv") or [])
    if o == "misleading?":
        return "ok"        # each read: the message names the file, value or reason
    if o == "ok?":
        return "ok"        # report finished within 0.05 s of the signal
    if o == "internal" and "SyntaxError" in r.get("why", ""):
        return "probe-error"   # the probe's own eval() of a 5000-deep literal
    if o == "silent" and "csv_dup_col" not in a:
        return "ok"        # pJ = 0 is documented (>= 0); the truncated kernel and the 1x1
        # pattern are valid; the ncu 'units' edit matched nothing; an infeasible sweep row
    if o == "internal" and "bad file" in (r.get("err") or ""):
        return "misleading"
    if o in ("note", "overwrote"):
        return "note"
    return o


for r in res:
    r["raw"] = r["outcome"]
    r["outcome"] = triage(r)
cls = collections.Counter()
per = collections.defaultdict(collections.Counter)
for r in res:
    g = r["group"].split(":")[0]
    if g == "file":
        g = "file:" + r["group"].split(":")[1]
    if g == "py":
        g = "py:" + r["group"].split(":")[1]
    cls[g] += 1
    per[g][r["outcome"]] += 1
tot = collections.Counter(r["outcome"] for r in res)
print("raw (classifier)", dict(collections.Counter(r["raw"] for r in res)))
print("total", len(res), dict(tot))
print()
print("| input class | inputs | " + " | ".join(sorted(tot)) + " |")
print("| --- | ---: | " + " | ".join("---:" for _ in tot) + " |")
for g in sorted(cls):
    print("| %s | %d | %s |" % (g, cls[g], " | ".join(str(per[g][o]) for o in sorted(tot))))
print()
groups = collections.defaultdict(list)
for r in res:
    if r["outcome"] in ("ok",):
        continue
    key = (r["outcome"] + "/" + r["raw"], r["group"].split(":")[0], norm(r.get("why") if r["outcome"] in (
        "hang", "silent", "overwrote", "destructive", "note") else r.get("err") or r.get("msg")
        or r.get("why")))
    groups[key].append(r)
for key in sorted(groups, key=lambda k: (k[0], -len(groups[k]))):
    rs = groups[key]
    print("## %s  [%s] x%d  %s" % key[:2] + (len(rs), key[2]) if False else
          "## %s [%s] x%d: %s" % (key[0], key[1], len(rs), key[2]))
    for r in rs[:4]:
        print("   ", cmd(r)[:400])
        print("      why:", r.get("why", "")[:300])
        e = (r.get("err") or r.get("msg") or "").strip().replace("\n", " / ")
        if e:
            print("      err:", e[:300])
