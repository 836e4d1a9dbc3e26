#!/usr/bin/env bash
# A figure for a slide in one command: the stepper page of `iosim explain ARGS --html` at step STEP,
# as a PNG taken by headless Chromium (Debian's `chromium`).
#   bash scripts/slide_figure.sh OUT.png STEP [explain flags...]
#   e.g. bash scripts/slide_figure.sh flash2.png 9 --algo flash2 --seq 32 --block-q 16 --block-kv 16 --execute
# IOSIM names the binary (default build/iosim); SIZE the window (default 1400,1100).
set -euo pipefail
out=${1:?usage: slide_figure.sh OUT.png STEP [explain flags...]}
step=${2:?usage: slide_figure.sh OUT.png STEP [explain flags...]}
shift 2
[[ "$step" =~ ^[1-9][0-9]*$ ]] || { echo "slide_figure.sh: STEP '$step' must be a step number (1, 2, ...)" >&2; exit 2; }
iosim=${IOSIM:-build/iosim}
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
[ -n "$browser" ] || { echo "slide_figure.sh: Chromium is not installed (Debian package 'chromium')" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$iosim" explain "$@" --html "$tmp/page.html" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 2; }
steps=$(grep -o '([0-9]* steps)' "$tmp/err" | tr -dc 0-9)
if [ "$step" -gt "$steps" ]; then
  echo "slide_figure.sh: STEP $step: the trace has steps 1 to $steps" >&2
  exit 2
fi
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --disable-extensions --hide-scrollbars \
  --user-data-dir="$tmp/profile" --window-size="${SIZE:-1400,1100}" --screenshot="$tmp/shot.png" \
  "file://$tmp/page.html#step=$step" >/dev/null 2>&1
[ -s "$tmp/shot.png" ] || { echo "slide_figure.sh: Chromium took no screenshot" >&2; exit 1; }
cp "$tmp/shot.png" "$out"
echo "$out: step $step of $steps"
