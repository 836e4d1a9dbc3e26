#!/usr/bin/env bash
# Diagnostic, not part of the dataset: compares what the SMs request (L1TEX
# sectors of cp.async / loads) with what reaches L2 (lts__t_sectors_srcunit_tex)
# for a few cases, to explain L2 read counts below the bytes the kernels load.
# Usage on the device machine, from the repository root, after a build:
#   OUT=... bash cuda_validate/scripts/diag_l2.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
RUNNER=${RUNNER:-$ROOT/build-cuda/iosim_cuda_runner}
WORK=$(mktemp -d)
CANDIDATES=(
  l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts
  l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass
  l1tex__t_sectors_pipe_lsu_mem_global_op_ld l1tex__m_xbar2l1tex_read_sectors
  lts__t_requests_srcunit_tex_op_read lts__t_sectors_srcunit_tex_op_read lts__t_sectors_op_read
  lts__t_sectors_srcunit_ltcfabric dram__bytes_read
)
ncu --query-metrics >"$WORK/query.txt" 2>&1
head -8 "$WORK/query.txt" >"$OUT/diag_query_head.txt"
grep -E "ldgsts|xbar2l1tex|ltcfabric|lts__t_requests_srcunit_tex|lts__t_sectors_op" "$WORK/query.txt" \
  >>"$OUT/diag_query_head.txt"
METRICS=()
for m in "${CANDIDATES[@]}"; do
  grep -qE "^$m[[:space:]]" "$WORK/query.txt" && METRICS+=("$m.sum")
done
[[ ${#METRICS[@]} -eq 0 ]] && METRICS=(lts__t_sectors_srcunit_tex_op_read.sum dram__bytes_read.sum)
echo "metrics offered: ${METRICS[*]}" | tee -a "$OUT/diag_query_head.txt"
ncu --profile-from-start off --metrics "$(IFS=,; echo "${METRICS[*]}")" --cache-control all \
  --clock-control base -f -o "$WORK/diag" \
  "$RUNNER" --suite "$ROOT/cuda_validate/suites/diag_l2.txt" --out "$WORK/diag_runner.json" \
  --mode ncu >"$WORK/diag_ncu.log" 2>&1
echo "ncu exit $?"; tail -3 "$WORK/diag_ncu.log"
ncu --import "$WORK/diag.ncu-rep" --csv --page raw --print-units base >"$OUT/diag_l2.csv" 2>&1
python3 - "$OUT/diag_l2.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[0]
cols = [i for i, c in enumerate(h) if c.endswith(".sum")]
for r in rows[2:]:
    if len(r) != len(h) or "marker" in r[h.index("Kernel Name")]:
        continue
    print(r[h.index("Kernel Name")][:40], {h[i].replace(".sum", ""): r[i] for i in cols})
PY
