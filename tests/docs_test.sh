#!/usr/bin/env bash
# ctest docs: every number and block of iosim's output that README.md and docs/*.md quote is what
# iosim prints now (scripts/readme_tables.sh --check, which runs scripts/readme_numbers.py), and the
# checker itself catches a drift and fixes it with --write; every iosim command of their ```sh
# blocks runs as written (scripts/doc_commands.py: the tutorial's exercises' answers too). Run by
# ctest with IOSIM set to the binary; runs a few hundred simulations (validate re-predicts every measured case), so it is a
# test of its own that can run beside the others. IOSIM_SKIP_DOC_CHECKS=1 skips the documents
# (the checker's own test still runs).
source "$(dirname "$0")/cli_harness.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# readme_numbers.py catches a prose number or a generated table that drifted, names it, and
# --write puts back what iosim prints (then --check passes).
cat >"$tmp/numbers.md" <<'MD'
Decode: 9.99 MB<!-- =fd32.hbm_read --> of K/V, 64<!-- =fd32.block_q --> query rows a tile.
The corpus: 3<!-- =bad_input_corpus_size --> inputs. Syntax, not a marker: `1 MB<!-- =nosuch.value -->`.
<!-- iosim-table: decode -->
| stale |
<!-- /iosim-table -->
MD
out=$(cd "$REPO" && python3 scripts/readme_numbers.py --check "$IOSIM" "$tmp/numbers.md" 2>&1)
if [ $? -eq 1 ] && grep -q "numbers.md:1: '.*9.99 MB' should end with" <<<"$out" &&
  grep -q "the table 'decode' differs" <<<"$out" && ! grep -q "query rows" <<<"$out" &&
  grep -q "numbers.md:2: '.*3' should end with" <<<"$out" && ! grep -q "nosuch" <<<"$out"; then ok; else bad "readme_numbers.py --check missed a drift: $out"; fi
if (cd "$REPO" && python3 scripts/readme_numbers.py --write "$IOSIM" "$tmp/numbers.md" &&
  python3 scripts/readme_numbers.py --check "$IOSIM" "$tmp/numbers.md") && ! grep -q "9.99 MB" "$tmp/numbers.md" &&
  grep -q "| flash-decoding | 8 |" "$tmp/numbers.md"; then ok; else bad "readme_numbers.py --write did not fix the drift"; fi
sed -i 's/=fd32.hbm_read /=fd32.no_such_value /' "$tmp/numbers.md"
out=$(cd "$REPO" && python3 scripts/readme_numbers.py --check "$IOSIM" "$tmp/numbers.md" 2>&1)
if grep -q "no value 'fd32.no_such_value' in scripts/doc_values.py" <<<"$out"; then ok; else bad "readme_numbers.py: unknown value not named: $out"; fi

# scripts/validated.py runs `iosim validate ARGS` once and keeps its table and report in
# IOSIM_VALIDATED_DIR: asked again it answers from there (here with no iosim to run at all), and
# the table is what `iosim validate ARGS --format md` prints.
small=$DATA/measurements_small.json
want=$("$IOSIM" validate "$small" --format md)
first=$(IOSIM_VALIDATED_DIR="$tmp/validated" python3 "$REPO/scripts/validated.py" md "$IOSIM" "$small")
again=$(IOSIM_VALIDATED_DIR="$tmp/validated" python3 "$REPO/scripts/validated.py" md /bin/false "$small")
if [ "$first" = "$want" ] && [ "$again" = "$want" ] && [ "$(ls "$tmp/validated" | wc -l)" = 2 ]; then ok; else
  bad "scripts/validated.py did not keep or give back iosim validate's table: $(ls "$tmp/validated")"
fi
if ! python3 "$REPO/scripts/validated.py" md /bin/false "$small" 2>/dev/null; then ok; else
  bad "scripts/validated.py without a kept run did not run iosim"
fi

# scripts/doc_commands.py runs a page's ```sh commands and catches one that fails, exits other than
# its comment says, is not a command as written, or lacks a line of the ```text block quoted under it.
cat >"$tmp/commands.md" <<'MD'
```sh
iosim run --seq 64 --head-dim 16 --l2 off
```

```text
...
problem  B=1 H=1 N=64 N_kv=64 d=16 fp16 pass=fwd
no such line
```

```sh
iosim run --seq 0          # exits 2: refused
iosim run --seq 0
iosim run ... --l2 off
```
MD
out=$(cd "$REPO" && python3 scripts/doc_commands.py "$IOSIM" "$tmp/commands.md" 2>&1)
if [ $? -eq 1 ] && grep -q "commands.md:2: the output of .* lacks the line quoted under it" <<<"$out" &&
  grep -q "^  no such line" <<<"$out" && ! grep -q "commands.md:12" <<<"$out" &&
  grep -q "commands.md:13: exit 2, not 0" <<<"$out" && grep -q "commands.md:14: not a command as written" <<<"$out" &&
  grep -q "3 commands run" <<<"$out"; then ok; else bad "doc_commands.py missed a failing command: $out"; fi

# scripts/doc_shapes.py catches a sweep whose smallest point is latency-bound at ~1% of peak (one
# head of one short sequence) and a path that names nothing, and passes a sweep that fills the GPU,
# a link that exists and a file the page's own command writes.
cat >"$tmp/shapes.md" <<'MD'
```sh
iosim sweep --algo flash2 --heads 2 --seq 128:512:x2 --block-kv 32,64
iosim sweep --algo flash2,flash1 --batch 4 --heads 16 --seq 1024,512 --out s.json
```
See `docs/kernels/wg1_tma_fwd.yaml`, `docs/kernels/no_such.yaml`, [a link](shapes.md),
[none](no_such_page.md) and `s.json`.
MD
out=$(cd "$REPO" && python3 scripts/doc_shapes.py "$IOSIM" "$tmp/shapes.md" 2>&1)
if [ $? -eq 1 ] && grep -q "shapes.md:2: the sweep's smallest point is latency-bound" <<<"$out" &&
  ! grep -q "shapes.md:3" <<<"$out" && grep -q "docs/kernels/no_such.yaml" <<<"$out" &&
  grep -q "'no_such_page.md' does not exist" <<<"$out" && ! grep -q "wg1_tma_fwd\|'shapes.md'\|s.json" <<<"$out" &&
  grep -q "3 sweep shapes run" <<<"$out"; then ok; else bad "doc_shapes.py missed or invented a problem: $out"; fi

# The documents: README.md and every docs/*.md (the tutorial's commands, the accuracy tables, the
# prose numbers), against what iosim prints now.
if [ "${IOSIM_SKIP_DOC_CHECKS:-0}" = 1 ]; then
  :
elif (cd "$REPO" && bash scripts/readme_tables.sh --check "$IOSIM"); then ok; else
  bad "README.md or docs/*.md is stale: run scripts/readme_tables.sh --write build/iosim"
fi
# ... and every iosim command of their ```sh blocks runs as written (the exercises' answers too).
if [ "${IOSIM_SKIP_DOC_CHECKS:-0}" = 1 ]; then
  :
elif (cd "$REPO" && python3 scripts/doc_commands.py "$IOSIM"); then ok; else
  bad "a command of README.md or docs/*.md fails (scripts/doc_commands.py names it)"
fi

# ... every sweep they show asks about a shape that keeps the GPU busy, and every path they name
# exists.
if [ "${IOSIM_SKIP_DOC_CHECKS:-0}" = 1 ]; then
  :
elif (cd "$REPO" && python3 scripts/doc_shapes.py "$IOSIM"); then ok; else
  bad "a sweep of README.md or docs/*.md is latency-bound or a path they name does not exist (scripts/doc_shapes.py names it)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
