#!/usr/bin/env bash
# Same results from two iosim binaries: every counter, byte and time of `iosim run --format json`
# on diverse points (all algorithms; fwd, bwd, fwdbwd; causal, mask, dropout; L2 on, off and cold;
# several profiles, dtypes, clocks and decode shapes), and a small sweep file byte for byte.
# Only `simulation_wall_s` (iosim's own run time) is ignored. Use it to show that a speed-up of the
# simulator changed nothing:
#   git worktree add /tmp/base main && (cd /tmp/base && bash scripts/build.sh)
#   bash scripts/compare_results.sh /tmp/base/build/iosim build/iosim
# Exit 0 when every output is identical; else the differing points and a diff of the first.
# IOSIM_NEW_FLAGS (e.g. --exact) is appended to the new binary's runs and sweep, to compare a
# mode of the new binary with the base's default.
set -uo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: $0 BASE_IOSIM NEW_IOSIM (two iosim binaries)" >&2
  exit 2
fi
base=$1
new=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One point per line: `iosim run` flags. Sizes are chosen so that the L2 evicts (tensors larger
# than the L2) while each point runs in about a second.
points=(
  "--algo standard --batch 2 --heads 8 --seq 4096 --head-dim 64 --block-kv 32"
  "--algo standard --batch 1 --heads 4 --seq 512 --head-dim 128 --block-kv 64 --profile a100-sxm4-80gb"
  "--algo standard --batch 2 --heads 4 --seq 2048 --head-dim 128 --pass fwdbwd --causal --dropout 0.1 --profile a100-sxm4-40gb"
  "--algo standard --batch 2 --heads 4 --seq 2048 --head-dim 64 --pass bwd --mask --profile h200-sxm-141gb"
  "--algo standard --batch 2 --heads 8 --seq 2048 --head-dim 64 --kv-heads 2 --l2 off"
  "--algo standard --batch 1 --heads 8 --seq 1024 --seq-kv 3072 --head-dim 64 --cold-l2 --dtype fp32"
  "--algo flash1 --batch 4 --heads 16 --seq 4096 --head-dim 64 --block-kv 32 --causal"
  "--algo flash1 --batch 2 --heads 8 --seq 2048 --head-dim 128 --pass fwdbwd --profile a100-sxm4-80gb"
  "--algo flash1 --batch 2 --heads 8 --seq 2048 --head-dim 64 --pass bwd --cold-l2 --mask"
  "--algo flash1 --batch 4 --heads 16 --seq 512 --head-dim 64 --block-kv 16 --l2 off"
  "--algo flash2 --batch 4 --heads 16 --seq 8192 --head-dim 128"
  "--algo flash2 --batch 2 --heads 16 --seq 4096 --head-dim 64 --pass fwdbwd --causal --profile a100-sxm4-40gb"
  "--algo flash2 --batch 2 --heads 8 --seq 4096 --head-dim 128 --pass bwd --dropout 0.1 --cold-l2 --profile h200-sxm-141gb"
  "--algo flash2 --batch 4 --heads 16 --seq 4096 --head-dim 64 --l2 off --sm-clock-mhz 1400 --dtype bf16"
  "--algo flash2 --batch 8 --heads 32 --seq 1 --seq-kv 8192 --head-dim 128 --kv-heads 8"
  "--algo block-sparse --batch 2 --heads 8 --seq 4096 --head-dim 64 --pass fwdbwd --pattern local:4"
  "--algo block-sparse --batch 2 --heads 8 --seq 4096 --head-dim 128 --causal --pattern strided:2 --profile a100-sxm4-80gb"
  "--algo block-sparse --batch 2 --heads 8 --seq 2048 --head-dim 64 --pass bwd --pattern random:0.3:7 --cold-l2"
  "--algo flash3 --batch 4 --heads 16 --seq 4096 --head-dim 128 --profile h100-sxm5-80gb"
  "--algo flash3 --batch 2 --heads 16 --seq 4096 --head-dim 128 --dtype fp8 --causal --profile h200-sxm-141gb"
  "--algo flash3 --batch 2 --heads 16 --seq 2048 --head-dim 64 --warpgroups pingpong --causal --profile h100-sxm5-80gb"
  "--algo flash3 --batch 2 --heads 8 --seq 2048 --head-dim 128 --mask --dropout 0.1 --profile h200-sxm-141gb"
  "--algo flash3 --batch 2 --heads 8 --seq 2048 --head-dim 64 --pass fwdbwd --profile h100-sxm5-80gb"
  "--algo flash3 --batch 2 --heads 8 --seq 2048 --head-dim 128 --kv-heads 2 --pass bwd --causal --profile h100-sxm5-80gb"
  "--algo flash3 --batch 8 --heads 32 --seq 1 --seq-kv 8192 --head-dim 128 --kv-heads 8 --profile h100-sxm5-80gb"
  "--algo flash-decoding --batch 1 --heads 32 --seq 1 --seq-kv 65536 --head-dim 128 --kv-heads 8"
  "--algo flash-decoding --batch 4 --heads 16 --seq 16 --seq-kv 16384 --head-dim 64 --splits 4 --profile a100-sxm4-40gb"
  "--algo paged --batch 4 --heads 32 --seq 1 --seq-kv 32768 --head-dim 128 --kv-heads 8 --page-tokens 16"
  "--algo paged --batch 2 --heads 8 --seq 1 --seq-kv 8192 --head-dim 64 --page-tokens 1 --seed 3 --profile h200-sxm-141gb"
  "--algo paged --batch 2 --heads 8 --seq 4 --seq-kv 8192 --head-dim 128 --page-tokens 48 --l2 off"
)

differ=0
first=""
for i in "${!points[@]}"; do
  read -r -a flags <<<"${points[$i]}"
  for side in base new; do
    bin=$base
    extra=()
    if [ "$side" = new ]; then
      bin=$new
      read -r -a extra <<<"${IOSIM_NEW_FLAGS:-}"
    fi
    # The run time is the one field that changes from run to run.
    "$bin" run "${flags[@]}" "${extra[@]}" --format json 2>&1 | grep -v '"simulation_wall_s"' >"$tmp/$side.$i"
  done
  if ! cmp -s "$tmp/base.$i" "$tmp/new.$i"; then
    differ=$((differ + 1))
    echo "DIFFERS: iosim run ${points[$i]}"
    [ -z "$first" ] && first=$i
  fi
done

sweep=(sweep --profile h100-sxm5-80gb,a100-sxm4-40gb --algo standard,flash1,flash2 --heads 4
       --seq 256:2048:x2 --head-dim 64,128 --block-kv 32,128 --pass fwd,fwdbwd)
"$base" "${sweep[@]}" --out "$tmp/base.json" 2>/dev/null
read -r -a extra <<<"${IOSIM_NEW_FLAGS:-}"
"$new" "${sweep[@]}" "${extra[@]}" --out "$tmp/new.json" 2>/dev/null
if ! cmp -s "$tmp/base.json" "$tmp/new.json"; then
  differ=$((differ + 1))
  echo "DIFFERS: iosim ${sweep[*]}"
fi

if [ -n "$first" ]; then diff "$tmp/base.$first" "$tmp/new.$first" | head -40; fi
total=$((${#points[@]} + 1))
echo "$((total - differ)) of $total outputs identical"
[ "$differ" -eq 0 ]
