#!/usr/bin/env bash
# The C++ is as clang-format writes it (.clang-format): every tracked *.cpp, *.hpp, *.h and *.cc
# outside cuda_validate/, checked without changing a file (ctest `format`). To fix what it names:
#   clang-format -i FILE...
# cuda_validate/ is left out: its inline-PTX operand lists and X-macro tables are laid out by hand
# (a register group a line, columns), which clang-format would reflow; its largest file,
# microbench/wgmma_ops.cuh, is written by gen_wgmma_ops.py, whose output it must stay; and several
# of its sources are built by its scripts alone, not by CMake, so a reformat could go uncompiled.
# Formatting differs between clang-format's major versions; the tree is held to the one CI installs
# (scripts/install_deps.sh test: Debian's clang-format, 14). Another version, or none, skips the
# check (exit 77, ctest's "skipped") with the reason. IOSIM_CLANG_FORMAT names the binary to use.
# Usage: check_format.sh [SOURCE_ROOT] (default: this repository).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
wanted_major=14
tool=${IOSIM_CLANG_FORMAT:-}
if [ -z "$tool" ]; then
  for t in clang-format-$wanted_major clang-format; do
    if command -v "$t" >/dev/null; then
      tool=$t
      break
    fi
  done
fi
if [ -z "$tool" ] || ! command -v "$tool" >/dev/null; then
  echo "check_format.sh: skipped, no clang-format found (scripts/install_deps.sh test installs it)"
  exit 77
fi
major=$("$tool" --version | sed -nE 's/.*clang-format version ([0-9]+).*/\1/p')
if [ "$major" != "$wanted_major" ]; then
  echo "check_format.sh: skipped, $tool is version ${major:-unknown}, the tree is formatted with" \
    "$wanted_major (set IOSIM_CLANG_FORMAT to a clang-format-$wanted_major)"
  exit 77
fi
cd "$root" || exit 2
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cc' ':!cuda_validate/')
else  # a copy without .git: the same files, build directories left out
  mapfile -t files < <(find . -path ./cuda_validate -prune -o -path './build*' -prune -o \
    -path './.*' -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
    -o -name '*.cc' \) -print | sed 's#^\./##' | sort)
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format.sh: no C++ files under $root"
  exit 2
fi
# Both cores' worth at a time: about 2 s of CPU for the whole tree.
out=$(printf '%s\0' "${files[@]}" |
  xargs -0 -n 40 -P "$(nproc)" "$tool" --dry-run --Werror --style=file 2>&1)
if [ -n "$out" ]; then
  echo "$out" | head -60
  echo "check_format.sh: not as clang-format $major writes them (clang-format -i each file):"
  echo "$out" | sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error:.*/  \1/p' | sort -u
  exit 1
fi
echo "ok: ${#files[@]} C++ files as clang-format $major writes them"
