#!/usr/bin/env bash
# ctest accuracy_now: every measured set's errors, as iosim predicts them now, within the recorded
# accuracy levels (scripts/accuracy_levels.py --check-now). Then the check itself: on a copy of the
# levels with one level tightened below today's error, one case count raised and one recorded repeat
# spread lowered below the measured one, it must fail and name all three (from the runs just kept
# in IOSIM_VALIDATED_DIR: nothing is predicted again).
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
: "${IOSIM:?set IOSIM to the iosim binary}"
if [ -z "${IOSIM_VALIDATED_DIR:-}" ]; then
  IOSIM_VALIDATED_DIR=$(mktemp -d)
  own_dir=1
fi
export IOSIM IOSIM_VALIDATED_DIR
fail=0
bad() { fail=1; echo "FAIL: $*"; }

python3 "$REPO/scripts/accuracy_levels.py" --check-now || bad "an error grew past its recorded level"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${own_dir:-}" ] && rm -rf "$IOSIM_VALIDATED_DIR"' EXIT
mkdir -p "$tmp/scripts" "$tmp/cuda_validate/measurements"
cp "$REPO/scripts/accuracy_levels.py" "$REPO/scripts/validated.py" "$tmp/scripts/"
for f in "$REPO"/cuda_validate/measurements/*; do ln -s "$f" "$tmp/cuda_validate/measurements/"; done
levels=$tmp/cuda_validate/measurements/accuracy_levels_cudnn_gqa.json
rm "$levels" && cp "$REPO/cuda_validate/measurements/accuracy_levels_cudnn_gqa.json" "$levels"
heldout=$tmp/cuda_validate/measurements/accuracy_levels_heldout.json
rm "$heldout" && cp "$REPO/cuda_validate/measurements/accuracy_levels_heldout.json" "$heldout"
python3 - "$levels" "$heldout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
entry = d["devices"]["h100-sxm5-80gb"]["schedules"]["all"]
entry["time"]["worst"] = 0.0
entry["cases"] += 1
json.dump(d, open(sys.argv[1], "w"), indent=1)
# A recorded repeat spread below the measured one (the level itself left as it is).
d = json.load(open(sys.argv[2]))
d["devices"]["h100-sxm5-80gb"]["schedules"]["flash1"]["dram"]["worst_spread"] = 0.0001
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
out=$(IOSIM=/bin/false python3 "$tmp/scripts/accuracy_levels.py" --check-now 2>&1)
if [ $? -eq 1 ] && grep -q "h100-sxm5-80gb all time worst would loosen: 0.0 -> " <<<"$out" &&
  grep -q "h100-sxm5-80gb all cases: 13 -> 12" <<<"$out" &&
  grep -q "h100-sxm5-80gb flash1 dram worst: the recorded repeat spread 0.0001 is below" <<<"$out"; then :; else
  bad "--check-now missed a tightened level, a raised case count or an understated spread: $out"
fi
[ "$fail" -eq 0 ] && echo "accuracy_now: passed"
exit "$fail"
