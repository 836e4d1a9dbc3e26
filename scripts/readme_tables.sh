#!/usr/bin/env bash
# Every block of README.md and docs/*.md that shows iosim's output is that output, between markers:
#   <!-- validate: PATH -->  ...  <!-- /validate -->   = `iosim validate PATH --format md`
#   <!-- iosim: ARGS -->     ...  <!-- /iosim -->      = `iosim ARGS`, in a ```text fence unless
#                                                        ARGS ask for `--format md`
#   <!-- script: ARGS -->    ...  <!-- /script -->     = `python3 ARGS`: a script of the repository
#                                                        whose Markdown is a function of committed
#                                                        files (a table of measured against
#                                                        committed predictions), no simulation
# ARGS are split on spaces (no quoting); pick commands whose output is deterministic (no wall time).
# --check: exit 1 (naming the block) if a block differs from what iosim prints now (ctest docs,
# tests/docs_test.sh);
# --write: rewrite them in place (after a model change or new measurements).
# Then scripts/readme_numbers.py, same mode and files: the tables made from several runs and the
# numbers quoted in prose (<!-- iosim-table --> and <!-- =NAME --> markers, scripts/doc_values.py).
# Without FILEs: README.md, every docs/*.md, hwprofiles/README.md (its key tables are
# `iosim profiles --keys SECTION --format md`, the profile schema's rows) and models/README.md (its
# key table is `iosim models --keys --format md`, the model schema's rows).
# Usage from the repository root: scripts/readme_tables.sh --check|--write [IOSIM] [FILE.md ...]
set -euo pipefail
mode=${1:?--check or --write}
iosim=${2:-build/iosim}
shift $(($# < 2 ? $# : 2))
files=("$@")
[[ ${#files[@]} -gt 0 ]] || files=(README.md docs/*.md hwprofiles/README.md models/README.md)
status=0

# The validate blocks' runs are kept for readme_numbers.py, which reads the same `iosim validate`s'
# JSON (scripts/validated.py): in the folder ctest gives, else in one of this run's own.
if [[ -z "${IOSIM_VALIDATED_DIR:-}" ]]; then
  IOSIM_VALIDATED_DIR=$(mktemp -d)
  export IOSIM_VALIDATED_DIR
  trap 'rm -rf "$IOSIM_VALIDATED_DIR"' EXIT
fi

render() { # kind args -> the block's expected text
  local kind=$1 args=$2 out
  local -a argv
  read -ra argv <<<"$args"
  if [[ "$kind" == validate ]]; then
    python3 "$(dirname "$0")/validated.py" md "$iosim" "${argv[@]}"
  elif [[ "$kind" == script ]]; then
    python3 "${argv[@]}"
  elif [[ " $args " == *" --format md "* ]]; then
    "$iosim" "${argv[@]}"
  else
    out=$("$iosim" "${argv[@]}") || return 1
    printf '```text\n%s\n```\n' "$out"
  fi
}

for readme in "${files[@]}"; do
  out=$(mktemp)
  kind=""
  current=""
  while IFS= read -r line; do
    if [[ -n "$kind" ]]; then
      if [[ "$line" != "<!-- /$kind -->" ]]; then # the old block
        current+="$line"$'\n'
        continue
      fi
      if ! block=$(render "$kind" "$args"); then
        echo "$readme: 'iosim $args' failed" >&2
        status=1
      fi
      if [[ "$mode" == --check && "$block"$'\n' != "$current" ]]; then
        echo "$readme: the block for '$kind: $args' differs from what iosim prints now:" >&2
        diff <(printf '%s' "$current") <(printf '%s\n' "$block") >&2 || true
        status=1
      fi
      printf '%s\n%s\n' "$block" "$line" >>"$out"
      kind=""
      continue
    fi
    printf '%s\n' "$line" >>"$out"
    if [[ "$line" =~ ^\<!--\ (validate|iosim|script):\ (.+)\ --\>$ ]]; then
      kind=${BASH_REMATCH[1]}
      args=${BASH_REMATCH[2]}
      current=""
    fi
  done <"$readme"
  if [[ -n "$kind" ]]; then
    echo "$readme: no <!-- /$kind --> after the block for '$args'" >&2
    rm -f "$out"
    exit 1
  fi
  if [[ "$mode" == --write && $status -eq 0 ]]; then cp "$out" "$readme"; fi
  rm -f "$out"
done
python3 "$(dirname "$0")/readme_numbers.py" "$mode" "$iosim" "${files[@]}" || status=1
exit $status
