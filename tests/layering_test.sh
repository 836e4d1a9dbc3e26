#!/usr/bin/env bash
# The layering of docs/ARCHITECTURE.md, held by the code:
# 1. Includes point down: each top-level source folder includes its own headers and those of the
#    folders below it (its "depends on" and theirs), nothing above it; so do sim/'s subfolders.
#    CMake links sim/ as one library and the tree's root is every target's include path, so
#    nothing else would stop a back-arrow.
# 2. What an algorithm is lives in algorithms/ alone: no code outside it compares an algorithm's
#    name (the rest of the program asks Capabilities, or the Algorithm's hooks). Adding a schedule
#    must not mean finding such compares.
# 3. docs/ARCHITECTURE.md's folder table matches the tree.
# Usage: layering_test.sh [SOURCE_ROOT] (default: this repository).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
status=0

# What each folder may include besides itself: ARCHITECTURE.md's "depends on", closed over the
# folders below (reports/ reaches sim/ through api/, so it may include sim/'s headers itself).
# A path names a folder or one subfolder (kvcache/ uses sim/base/'s errors and run control only).
# Every top-level folder that holds C++ must be here, so a new one is placed before it is used.
below_api="sim algorithms numerics transformer kvcache"
declare -A may_include=(
  [sim]=""
  [algorithms]="sim"
  # The numeric executor replays a schedule's ops: sim/'s errors, run control and the schedule
  # contract only, never the engine's counts; what each compute op means is algorithms/' table.
  [numerics]="sim/base sim/schedule algorithms"
  [transformer]="sim algorithms"
  [kvcache]="sim/base"
  [api]="$below_api"
  [reports]="$below_api api"
  [teach]="$below_api api"
  [cli]="$below_api api reports teach"
  [python]="$below_api api reports teach"
  [bench]="$below_api api"
  # The tests may use every layer but the command's (cli/ is tested through the binary), and
  # cuda_validate/'s host-side block pattern (block_pattern_match_test.cpp holds it to sim/'s).
  [tests]="$below_api api reports teach cuda_validate"
  # Its own build (nvcc), includes spelled relative to its files: nothing of the simulator.
  [cuda_validate]=""
)
# sim/'s subfolders, bottom up: base (errors, run control), schedule (the contract, tensors and
# their per-tensor counts), memory (the L2 and address map), hardware (profiles, occupancy: the
# L2's geometry is checked by its model), engine (counts and times; the power model reads its
# results and runs it at trial clocks).
declare -A sim_may_include=(
  [base]=""
  [schedule]="base"
  [memory]="base schedule"
  [hardware]="base schedule memory"
  [engine]="base schedule memory hardware"
)
# Known back-arrows, "file -> included header" one a line, each with why it stays: none.
known_exceptions=""

cpp_globs=(--include='*.cpp' --include='*.hpp' --include='*.h' --include='*.cc' --include='*.cu'
  --include='*.cuh')
# "dir/file:line:path" for each #include "path" under folder $1 (relative to the root).
includes_of() {
  (cd "$root" && grep -rnE "${cpp_globs[@]}" '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$1") |
    sed -E 's/^([^:]+:[0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1:\2/'
}
# Whether include path $1 lies under one of the space-separated folders $2.
under() {
  local p
  for p in $2; do [[ $1 == "$p"/* ]] && return 0; done
  return 1
}
# Whether "file -> path" ($1, $2) is a known exception.
excepted() { grep -qxF "$1 -> $2" <<<"$known_exceptions"; }

top_folders=$(find "$root" -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build' \
  ! -name 'build-*' -printf '%f\n' | sort)
back=""
for f in $top_folders; do
  if [ -z "${may_include[$f]+set}" ]; then
    has_cpp=$(cd "$root" && find "$f" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
      -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) -print -quit)
    if [ -n "$has_cpp" ]; then
      echo "layering_test.sh: $f/ holds C++ but has no place in may_include (add it, in order)"
      status=1
    fi
    continue
  fi
  while IFS=: read -r file line path; do
    [ -z "$file" ] && continue
    if [[ $path == ../* ]]; then
      # cuda_validate/'s own files include each other so; elsewhere a relative path would hide
      # from this check.
      [ "$f" = cuda_validate ] ||
        back+="$file:$line: \"$path\" (spell includes from the root)"$'\n'
      continue
    fi
    top=${path%%/*}
    # Only paths into the tree's other folders ("doctest/doctest.h" and the like are not ours).
    { [ "$top" = "$path" ] || [ ! -d "$root/$top" ] || [ "$top" = "$f" ]; } && continue
    under "$path" "${may_include[$f]}" || excepted "$file" "$path" ||
      back+="$file:$line: \"$path\" ($f/ may include: ${may_include[$f]:-nothing outside it})"$'\n'
  done < <(includes_of "$f")
done
for d in "$root"/sim/*/; do
  s=$(basename "$d")
  if [ -z "${sim_may_include[$s]+set}" ]; then
    echo "layering_test.sh: sim/$s/ has no place in sim_may_include (add it, in order)"
    status=1
    continue
  fi
  while IFS=: read -r file line path; do
    [[ $path == sim/*/* ]] || continue
    sub=${path#sim/}
    sub=${sub%%/*}
    [ "$sub" = "$s" ] && continue
    under "$sub/" "${sim_may_include[$s]}" || excepted "$file" "$path" ||
      back+="$file:$line: \"$path\" (sim/$s/ may include: ${sim_may_include[$s]:-no other sim/ folder})"$'\n'
  done < <(includes_of "sim/$s")
done
if [ -n "$back" ]; then
  echo "includes against the layering (docs/ARCHITECTURE.md; move what both need down a layer):"
  printf '%s' "$back"
  status=1
fi
# cli/ is the top of the tree (#28): no other build compiles its sources either.
mapfile -t not_cli < <(grep -vx cli <<<"$top_folders")
cli_sources=$(cd "$root" && grep -rnE --include='*.cmake' --include='CMakeLists.txt' \
  'PROJECT_SOURCE_DIR\}/cli/' "${not_cli[@]}")
if [ -n "$cli_sources" ]; then
  echo "cli/'s sources compiled outside cli/ (move what they share into api/):"
  echo "$cli_sources"
  status=1
fi

# Algorithm names compared outside algorithms/. kvcache/ is left out: its "paged" is an allocator
# policy's name; tests/ compares outputs, cuda_validate/ reads measured files.
names='standard|flash1|flash2|flash3|block-sparse|flash-decoding|paged'
dirs=()
for d in api bench cli python reports sim teach transformer; do
  [ -d "$root/$d" ] && dirs+=("$root/$d")
done
hits=$(grep -rnE --include='*.cpp' --include='*.hpp' \
  -e "(==|!=)[[:space:]]*\"($names)\"" -e "\"($names)\"[[:space:]]*(==|!=)" \
  -e "(algorithm|algo|schedule)[a-z_.()]*[[:space:]]*(==|!=)[[:space:]]*\"" \
  "${dirs[@]}")
if [ -n "$hits" ]; then
  echo "algorithm names compared outside algorithms/ (ask Capabilities instead):"
  echo "$hits"
  status=1
fi

# docs/ARCHITECTURE.md's folder table matches the tree: every top-level folder is in it, and every
# folder in it exists.
arch=$root/docs/ARCHITECTURE.md
listed=$(grep -oE '^\| `[A-Za-z0-9_.-]+/`' "$arch" | sed -E 's/^\| `(.*)\/`/\1/' | sort)
missing=$(comm -13 <(echo "$listed") <(echo "$top_folders"))
stale=$(comm -23 <(echo "$listed") <(echo "$top_folders"))
if [ -n "$missing" ] || [ -n "$stale" ]; then
  echo "docs/ARCHITECTURE.md's folder table does not match the tree:"
  [ -n "$missing" ] && echo "  not in the table: $missing"
  [ -n "$stale" ] && echo "  in the table, not in the tree: $stale"
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: includes point down the layers (top-level folders and sim/'s)," \
  "no algorithm-name compares outside algorithms/; ARCHITECTURE.md lists the" \
  "$(echo "$top_folders" | wc -l) folders"
exit "$status"
