#!/usr/bin/env bash
# What an algorithm is lives in algorithms/ alone: no code outside it compares an algorithm's name
# (the rest of the program asks Capabilities, or the Algorithm's hooks). Adding a schedule must not
# mean finding such compares. kvcache/ is left out: its "paged" is an allocator policy's name.
# Usage: layering_test.sh [SOURCE_ROOT] (default: this repository).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
names='standard|flash1|flash2|flash3|block-sparse|flash-decoding|paged'
dirs=()
for d in api cli numerics reports sim sweep validation bench; do
  [ -d "$root/$d" ] && dirs+=("$root/$d")
done
hits=$(grep -rnE --include='*.cpp' --include='*.hpp' \
  -e "(==|!=)[[:space:]]*\"($names)\"" -e "\"($names)\"[[:space:]]*(==|!=)" \
  -e "(algorithm|algo|schedule)[a-z_.()]*[[:space:]]*(==|!=)[[:space:]]*\"" \
  "${dirs[@]}")
if [ -n "$hits" ]; then
  echo "algorithm names compared outside algorithms/ (ask Capabilities instead):"
  echo "$hits"
  exit 1
fi
echo "ok: no algorithm-name compares outside algorithms/ (${#dirs[@]} folders)"
