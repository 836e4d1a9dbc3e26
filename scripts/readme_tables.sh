#!/usr/bin/env bash
# The README's accuracy tables are `iosim validate PATH --format md`, between the markers
#   <!-- validate: PATH -->  ...  <!-- /validate -->
# --check: exit 1 (naming the table) if a table differs from what iosim prints now (tests/cli_test.sh);
# --write: rewrite them in place (after a model change or new measurements).
# Usage from the repository root: scripts/readme_tables.sh --check|--write [IOSIM]
set -euo pipefail
mode=${1:?--check or --write}
iosim=${2:-build/iosim}
readme=README.md
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
path=""
while IFS= read -r line; do
  if [[ -n "$path" ]]; then
    [[ "$line" == "<!-- /validate -->" ]] || continue  # the old table
    table=$("$iosim" validate "$path" --format md)
    if [[ "$mode" == --check && "$table" != "$current" ]]; then
      echo "README table for $path differs from 'iosim validate $path --format md':" >&2
      diff <(echo "$current") <(echo "$table") >&2 || true
      status=1
    fi
    printf '%s\n%s\n' "$table" "$line" >>"$out"
    path=""
    continue
  fi
  printf '%s\n' "$line" >>"$out"
  if [[ "$line" =~ ^\<!--\ validate:\ (.+)\ --\>$ ]]; then
    path=${BASH_REMATCH[1]}
    current=$(awk -v start="$line" '$0 == start {on = 1; next} on && /^<!-- \/validate -->$/ {exit} on' "$readme")
  fi
done <"$readme"
if [[ -n "$path" ]]; then echo "README: no <!-- /validate --> after the table for $path" >&2; exit 1; fi
if [[ "$mode" == --write ]]; then cp "$out" "$readme"; fi
exit $status
