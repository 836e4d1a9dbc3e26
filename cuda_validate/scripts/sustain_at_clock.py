#!/usr/bin/env python3
"""The power model against sustained runs at the clock they ran at (issue #46).

sustain_summary.py compares the blind predictions (the profile's clock policy) with what a sustained
run did; where the 700 W limit binds on the GPU and not in the model (or the other way), the clock
differs and so does everything else. This re-predicts each case at the SM clock nvidia-smi read
while it ran (`--sm-clock-mhz`), so that the power model's board power and the engine's time are
compared with the measurement at one clock: a power error there is the model's energy per unit of
work, not its solve.

Usage: sustain_at_clock.py --iosim BIN --summary SUMMARY.md --profile P [--out OUT.json]
           [--temps SUMMARY.json] SUITE.txt:PREDICTIONS.json ...
SUMMARY.md is sustain_summary.py's table (its rows in the order of the suites given); each suite's
predict_blind.py file gives the flags or description of its lines, in order. With --temps
(sustain_summary.py's JSON, which has each case's GPU temperature), the energy error is also given
with the profile's static power moved from the 70 C it was fitted at to the case's temperature
(power_model_fit.txt: 3.986 W a degree), and its time error removed (model power x model time over
measured power x measured time): what the model's energy per unit of work misses.
"""
import argparse
import json
import statistics
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from predict_blind import run  # noqa: E402


def table_rows(path):
    rows = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 10 or cells[0] in ("case", "---") or cells[0].startswith("---"):
            continue
        probe_smi = cells[2].split("/")
        rows.append({"id": cells[0], "smi_mhz": float(probe_smi[1]), "smi_w": float(cells[3]),
                     "cap_share": float(cells[4]),
                     "blind_err_sustained": float(cells[8].rstrip("%")) / 100})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iosim", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--out")
    ap.add_argument("--temps")
    ap.add_argument("--w-per-c", type=float, default=3.986)
    ap.add_argument("--fit-temp-c", type=float, default=70.0)
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    measured = table_rows(a.summary)
    preds = []
    for spec in a.suites:
        parts = spec.split(":")
        preds += json.load(open(parts[1]))["cases"]
    if len(preds) != len(measured):
        sys.exit(f"{len(measured)} measured rows, {len(preds)} predictions")
    temps = ({r["id"]: r["smi_temp_c"] for r in json.load(open(a.temps))["rows"]}
             if a.temps else {})
    out = []
    for m, p in zip(measured, preds):
        blind = p["predicted"]
        sustained_s = blind["time_s"] / (1 + m["blind_err_sustained"])
        clock = ["--sm-clock-mhz", f"{m['smi_mhz']:.0f}"]
        flags = (p["flags"] + clock if "flags" in p
                 else ["--kernel", json.dumps(p["kernel"])] + clock)
        r = run(a.iosim, a.profile, None, p["problem"], False, flags)
        family = p["flags"][1] if "flags" in p else p["kernel"]["name"]
        out.append({**m, "family": family, "sustained_time_s": sustained_s,
                    "blind_mhz": blind["sm_clock_mhz"], "blind_w": blind["power"]["predicted_w"],
                    "at_clock_w": r["power"]["predicted_w"], "at_clock_time_s": r["time_s"],
                    "power_error": r["power"]["predicted_w"] / m["smi_w"] - 1,
                    "time_error_at_clock": r["time_s"] / sustained_s - 1})
        row = out[-1]
        row["energy_error"] = (row["at_clock_w"] * row["at_clock_time_s"]
                               / (m["smi_w"] * sustained_s) - 1)
        if m["id"] in temps:
            row["temp_c"] = temps[m["id"]]
            w = row["at_clock_w"] + a.w_per_c * (temps[m["id"]] - a.fit_temp_c)
            row["energy_error_at_temp"] = w * row["at_clock_time_s"] / (m["smi_w"] * sustained_s) - 1
    if a.out:
        json.dump({"profile": a.profile, "rows": out}, open(a.out, "w"), indent=1)
    print("| family | cases | at the cap (GPU) | GPU MHz | blind MHz | power error at GPU clock "
          "median (min, max) | time error at GPU clock median | blind time error median | "
          "energy error | at the GPU's temperature (min, max) |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    fams = list(dict.fromkeys(r["family"] for r in out))
    med = statistics.median
    for f in fams:
        rs = [r for r in out if r["family"] == f]
        pe = [r["power_error"] for r in rs]
        print(f"| {f} | {len(rs)} | {sum(r['cap_share'] >= 0.5 for r in rs)} | "
              f"{med(r['smi_mhz'] for r in rs):.0f} | {med(r['blind_mhz'] for r in rs):.0f} | "
              f"{med(pe):+.1%} ({min(pe):+.1%}, {max(pe):+.1%}) | "
              f"{med(r['time_error_at_clock'] for r in rs):+.1%} | "
              f"{med(r['blind_err_sustained'] for r in rs):+.1%} | "
              f"{med(r['energy_error'] for r in rs):+.1%} | " + (
                  "{:+.1%} ({:+.1%}, {:+.1%}) |".format(
                      med(r["energy_error_at_temp"] for r in rs),
                      min(r["energy_error_at_temp"] for r in rs),
                      max(r["energy_error_at_temp"] for r in rs))
                  if all("energy_error_at_temp" in r for r in rs) else " |"))


if __name__ == "__main__":
    main()
