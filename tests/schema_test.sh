#!/usr/bin/env bash
# Every kind of JSON iosim writes is valid against its schema under schemas/: run (dense, decode,
# block-sparse, backward, executed, two-level, fp8, an fp8 K/V cache, a latent K/V cache), a sweep file (with infeasible rows), validate,
# kvcache, layer and tune; the built-in profiles (read as JSON) against the profile's schema, which
# is `iosim profiles --schema`, the built-in models against the model's, `iosim models
# --schema`, and the documented kernel descriptions against the kernel's, `iosim kernels --schema`; measured files (what `iosim validate` reads, checked against
# measurements.schema.json by iosim too) of each kind; and the schemas themselves are valid JSON
# Schema. Run by ctest with IOSIM set.
set -euo pipefail
: "${IOSIM:?}"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Debian's python3 has python3-jsonschema (scripts/install_deps.sh test); a python3 earlier on
# PATH (a virtual environment) may not.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -c 'import jsonschema' 2>/dev/null || {
  echo "FAIL: python3-jsonschema is missing: scripts/install_deps.sh test" >&2
  exit 1
}
check() { "$py" "$REPO/tests/check_schema.py" "$REPO/schemas" "$@"; }
check --meta

i=0
run() { # iosim run ARGS... --format json > run_N.json
  i=$((i + 1))
  "$IOSIM" run "$@" --format json >"$tmp/run_$i.json"
}
run --algo flash2 --seq 1024 --head-dim 64
run --algo flash-decoding --seq 1 --seq-kv 8192 --head-dim 128 --kv-heads 2 --heads 16
run --algo paged --seq 1 --seq-kv 4096 --head-dim 128 --page-tokens 16
run --algo paged --seq 1 --seq-kv 4096 --head-dim 128 --kv-heads 2 --heads 8 --kv-dtype fp8 --dtype bf16
run --algo flash-decoding --seq 1 --seq-kv 2048 --head-dim 576 --latent-dim 512 --heads 16 --dtype bf16 --splits 2
run --algo flash-decoding --seq 2 --seq-kv 4096 --head-dim 128 --kv-heads 2 --heads 8 --pack-gqa on
run --algo block-sparse --pattern strided:4 --seq 1024 --head-dim 64 --block-q 64 --block-kv 64
run --algo flash2 --pass fwdbwd --seq 200 --head-dim 32 --causal --execute --cold-l2
run --algo standard --seq 512 --head-dim 64 --mask --dropout 0.1 --l2 off --sm-clock-mhz 1410
run --algo flash3 --profile h100-sxm5-80gb --seq 512 --head-dim 128 --dtype fp8 --warpgroups pingpong
run --algo flash2 --seq-lens 1,37,300 --seq-kv-lens 900,60,300 --heads 4 --kv-heads 2 --causal --execute
run --kernel "$REPO/docs/kernels/wg1_tma_fwd.yaml" --seq 1024 --head-dim 64
run --kernel '{"name": "tp", "dataflow": {"forward": "query_stationary", "backward": "two_pass"}}' \
  --pass fwdbwd --seq 512 --head-dim 64
check run "$tmp"/run_*.json
# Several kernels side by side (their runs are each run.schema.json's).
"$IOSIM" run --algo flash2,flash3 --kernel "$REPO/docs/kernels/wg1_tma_fwd.yaml" --seq 512 \
  --head-dim 64 --format json >"$tmp/compare.json"
check compare "$tmp/compare.json"
# Each preset's description, as `iosim kernels --show` prints it (JSON is the run's copy of it).
for preset in standard flash1 flash2 flash3 block-sparse flash-decoding paged; do
  "$IOSIM" run --kernel "$preset" --profile h100-sxm5-80gb --seq 64 --head-dim 64 --format json |
    "$py" -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["kernel_description"]))' \
      >"$tmp/kernel_$preset.json"
done
check kernel "$tmp"/kernel_*.json

"$IOSIM" sweep --algo flash2,block-sparse --pattern strided:2 --seq 256,512 --head-dim 64 \
  --block-kv 64,2048 --out "$tmp/sweep.json" 2>/dev/null
check sweep "$tmp/sweep.json"
"$IOSIM" validate "$REPO/cuda_validate/measurements/h100-sxm5-80gb" --format json >"$tmp/validate.json"
check validate "$tmp/validate.json"
# Measured files of each kind (runner, decode, PyTorch, cuDNN, kernel descriptions, rank groups);
# the unit test "measured files: every committed one ..." checks all of them with iosim's checker.
M=$REPO/cuda_validate/measurements/h100-sxm5-80gb
check measurements "$REPO"/tests/data/measurements_*.json "$M"/measurements_*.json \
  "$M"/pytorch_sdpa_2026-11-22.json "$M"/cudnn_gqa_2026-11-24/cudnn_gqa_2026-11-24.json \
  "$M"/kernels_outside_catalog_2026-11-27/outside_two_pass_bwd.json
"$py" - "$REPO/tests/data/measurements_small.json" "$tmp/bad_measurements.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["cases"][0]["check"]["reference"] = 7
json.dump(doc, open(sys.argv[2], "w"))
PY
if check measurements "$tmp/bad_measurements.json" 2>"$tmp/bad_measurements.log"; then
  echo "FAIL: a measured file whose check.reference is 7 passed schemas/measurements.schema.json" >&2
  exit 1
fi
"$IOSIM" kvcache --layers 32 --kv-heads 8 --head-dim 128 --weights-bytes 16e9 --requests 50 \
  --format json >"$tmp/kvcache.json"
check kvcache "$tmp/kvcache.json"
# --model: the model's name, and a sliding window's note (mistral-7b).
"$IOSIM" kvcache --model mistral-7b --requests 50 --format json >"$tmp/kvcache_model.json"
check kvcache "$tmp/kvcache_model.json"
"$IOSIM" layer --model qwen2-7b --phase prefill --seq 256 --tp 2 --format json >"$tmp/layer_1.json"
"$IOSIM" layer --model llama-3-8b --phase decode --batch 4 --seq 2048 --format json >"$tmp/layer_2.json"
"$IOSIM" layer --model llama-3-8b --phase decode --batch 4 --seq 2048 --kv-dtype fp8 --format json >"$tmp/layer_3.json"
# A multi-head latent attention model: its per-head GEMMs' "batch".
"$IOSIM" layer --model deepseek-v3 --phase decode --batch 4 --context 2048 --format json >"$tmp/layer_4.json"
grep -q '"batch": 128' "$tmp/layer_4.json" || { echo "FAIL: deepseek-v3's layer JSON has no GEMM batch of 128" >&2; exit 1; }
check layer "$tmp"/layer_*.json
# tune: a space with infeasible points (flash3's 64-row consumer warpgroups) and one with none
# feasible (every block_kv past shared memory), whose default is ranked outside it.
"$IOSIM" tune --algo flash3 --seq 1024 --head-dim 128 --block-q 64,96,128 --block-kv 64,128 \
  --format json >"$tmp/tune_1.json"
rc=0
"$IOSIM" tune --algo flash2 --seq 512 --head-dim 64 --block-kv 4096 --stages 4 --format json \
  >"$tmp/tune_2.json" 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: tune with no feasible tiling exited $rc, want 2" >&2; exit 1; }
check tune "$tmp"/tune_*.json
# The profile's schema is `iosim profiles --schema`, written from the profile schema's rows
# (sim/hardware/profile_schema.hpp); every built-in profile, read as JSON, passes it, and one whose
# sm.count is 0, with a misspelt key, fails it.
# rows_schema KIND COMMAND FOLDER: schemas/KIND.schema.json is what `iosim COMMAND --schema` writes
# from the rows, and every YAML file of FOLDER, read as JSON (as $tmp/KIND_NAME.json), passes it.
rows_schema() {
  local kind=$1 command=$2 folder=$3
  "$IOSIM" "$command" --schema >"$tmp/$kind.schema.json"
  if ! cmp -s "$tmp/$kind.schema.json" "$REPO/schemas/$kind.schema.json"; then
    { diff "$REPO/schemas/$kind.schema.json" "$tmp/$kind.schema.json" || true; } | head -20 >&2
    echo "FAIL: schemas/$kind.schema.json differs from the rows: build/iosim $command --schema > schemas/$kind.schema.json" >&2
    exit 1
  fi
  for f in "$REPO/$folder"/*.yaml; do
    "$py" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' \
      "$f" "$tmp/${kind}_$(basename "$f" .yaml).json"
  done
  check "$kind" "$tmp/${kind}"_*.json
}
rows_schema profile profiles hwprofiles
"$py" - "$tmp/profile_h100-sxm5-80gb.json" "$tmp/bad_profile.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["sm"]["count"]["value"] = 0
doc["l2"]["sector_byte"] = doc["l2"].pop("sector_bytes")
json.dump(doc, open(sys.argv[2], "w"))
PY
if check profile "$tmp/bad_profile.json" 2>"$tmp/bad_profile.log"; then
  echo "FAIL: a profile with sm.count 0 and l2.sector_byte passed schemas/profile.schema.json" >&2
  exit 1
fi

# The model's schema is `iosim models --schema`, written from the model schema's rows
# (transformer/model_schema.hpp); every built-in model, read as JSON, passes it, and one whose
# kv_heads is 0, with a misspelt key and an mlp not in the list, fails it.
rows_schema model models models
"$py" - "$tmp/model_llama-3-8b.json" "$tmp/bad_model.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["kv_heads"]["value"] = 0
doc["mlp"]["value"] = "swiglu"
doc["vocab_szie"] = doc.pop("vocab_size")
json.dump(doc, open(sys.argv[2], "w"))
PY
if check model "$tmp/bad_model.json" 2>"$tmp/bad_model.log"; then
  echo "FAIL: a model with kv_heads 0, mlp swiglu and vocab_szie passed schemas/model.schema.json" >&2
  exit 1
fi
grep -q "kv_heads" "$tmp/bad_model.log" && grep -q "swiglu" "$tmp/bad_model.log" || {
  cat "$tmp/bad_model.log" >&2
  echo "FAIL: the bad model's errors do not name kv_heads and mlp" >&2
  exit 1
}

# The kernel description's schema is `iosim kernels --schema`, written from the kernel schema's
# rows (algorithms/kernel_schema.hpp); the documented descriptions, read as JSON, pass it, and one
# whose stages is 0, with a misspelt key and an mma not in the list, fails it.
rows_schema kernel kernels docs/kernels
"$py" - "$tmp/kernel_wg1_tma_fwd.json" "$tmp/bad_kernel.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["tiles"]["stages"] = 0
doc["mechanisms"]["mma"] = "wgmma"
doc["launch"] = {"thread": 128}
json.dump(doc, open(sys.argv[2], "w"))
PY
if check kernel "$tmp/bad_kernel.json" 2>"$tmp/bad_kernel.log"; then
  echo "FAIL: a kernel description with stages 0, mma wgmma and launch.thread passed schemas/kernel.schema.json" >&2
  exit 1
fi
grep -q "stages" "$tmp/bad_kernel.log" && grep -q "wgmma" "$tmp/bad_kernel.log" || {
  cat "$tmp/bad_kernel.log" >&2
  echo "FAIL: the bad kernel description's errors do not name stages and mma" >&2
  exit 1
}

# A document that breaks its schema fails the check (the check is not vacuous).
"$py" - "$tmp/run_1.json" "$tmp/bad.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["schema_version"] = 2
del doc["counters"]["hbm_total_bytes"]
json.dump(doc, open(sys.argv[2], "w"))
PY
if check run "$tmp/bad.json" 2>"$tmp/bad.log"; then
  echo "FAIL: a run document without counters.hbm_total_bytes and schema_version 2 passed" >&2
  exit 1
fi
grep -q "hbm_total_bytes" "$tmp/bad.log" && grep -q "schema_version" "$tmp/bad.log" || {
  cat "$tmp/bad.log" >&2
  exit 1
}
echo "schema: ok"
