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
status=0
if [ -n "$hits" ]; then
  echo "algorithm names compared outside algorithms/ (ask Capabilities instead):"
  echo "$hits"
  status=1
fi

# cli/ is the top of the tree (#28): nothing outside it includes its headers or compiles its
# sources; the Python package reads the flag tables from api/ as the command does.
above=()
for d in algorithms api bench kvcache python reports sim teach tests; do
  [ -d "$root/$d" ] && above+=("$root/$d")
done
back=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cmake' \
  -e '#include "cli/' -e 'PROJECT_SOURCE_DIR\}/cli/' "${above[@]}")
if [ -n "$back" ]; then
  echo "cli/ used outside cli/ (move what they share into api/):"
  echo "$back"
  status=1
fi

# docs/ARCHITECTURE.md's folder table matches the tree: every top-level folder is in it, and every
# folder in it exists.
arch=$root/docs/ARCHITECTURE.md
listed=$(grep -oE '^\| `[A-Za-z0-9_.-]+/`' "$arch" | sed -E 's/^\| `(.*)\/`/\1/' | sort)
present=$(find "$root" -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build' \
            ! -name 'build-*' -printf '%f\n' | sort)
missing=$(comm -13 <(echo "$listed") <(echo "$present"))
stale=$(comm -23 <(echo "$listed") <(echo "$present"))
if [ -n "$missing" ] || [ -n "$stale" ]; then
  echo "docs/ARCHITECTURE.md's folder table does not match the tree:"
  [ -n "$missing" ] && echo "  not in the table: $missing"
  [ -n "$stale" ] && echo "  in the table, not in the tree: $stale"
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: no algorithm-name compares outside algorithms/, nothing outside cli/ uses it; ARCHITECTURE.md lists the $(echo "$present" | wc -l) folders"
exit "$status"
