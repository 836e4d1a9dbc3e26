#!/usr/bin/env bash
# ctest tile_ranking (issue #46): iosim's ranking of tile configurations within the recorded levels
# (cuda_validate/measurements/ranking_levels.json for the H100, ranking_levels_h200.json for the
# H200): `iosim validate` of each GPU's tile sweep levels subset (two shapes, three families, 171
# configurations; about 5 s each) on that GPU's profile, its "ranking" per family against each
# level. Then the check itself: a level tightened past today's value must fail.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
: "${IOSIM:?set IOSIM to the iosim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {  # check LEVELS: 0 when every family holds its levels
  python3 - "$1" "$tmp/v.json" <<'PY'
import json, sys
levels = json.load(open(sys.argv[1]))["families"]
got = {f["family"]: f for f in json.load(open(sys.argv[2]))["ranking"]["families"]}
bad = []
for fam, lv in levels.items():
    if fam not in got:
        bad.append(f"{fam}: no ranking")
        continue
    for key, level in lv.items():
        stat = key.rsplit("_at_", 1)[0]
        value = got[fam][stat]
        ok = value >= level if key.endswith("_at_least") else value <= level
        print(f"{fam:8} {stat:20} {value:7.3f}  level {level:6.2f}  {'ok' if ok else 'FAIL'}")
        if not ok:
            bad.append(f"{fam} {stat} {value:.3f} past its level {level}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
}
for levels in "$REPO"/cuda_validate/measurements/ranking_levels.json \
  "$REPO"/cuda_validate/measurements/ranking_levels_h200.json; do
  read -r file profile < <(python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
print(d['file'], d['profile'])" "$levels")
  echo "== $file on $profile"
  "$IOSIM" validate "$REPO/$file" --profile "$profile" --format json >"$tmp/v.json" ||
    { echo "FAIL: iosim validate $file"; exit 1; }
  check "$levels" || { echo "FAIL: $levels"; exit 1; }
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["families"]["wg1_tma"]["median_rho_at_least"] = 0.99
json.dump(d, open(sys.argv[2], "w"))' "$levels" "$tmp/tight.json"
  if check "$tmp/tight.json" >/dev/null; then
    echo "FAIL: a level tightened past today's value did not fail ($levels)"
    exit 1
  fi
done
echo "tile_ranking: every family within its levels on both GPUs; a tightened level fails"
