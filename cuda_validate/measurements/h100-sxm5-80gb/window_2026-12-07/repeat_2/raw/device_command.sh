# The whole device command of 2026-12-07 14:32 UTC (run tool, kind "nvidia-h200", came on an H100),
# run from the repository root at f9a180a. It measured window_2026-12-07/repeat_2,
# varlen_2026-12-07/repeat_3 + repeat_4 and chunked_2026-12-07/repeat_3 + repeat_4.
R=/tmp/res; mkdir -p $R/varlen $R/chunked; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi > $R/gpu.txt 2>&1; (git log -1 --oneline; sha256sum cuda_validate/scripts/*.sh cuda_validate/scripts/*.py cuda_validate/pytorch_sdpa/* cuda_validate/suites/window.txt cuda_validate/run_suite.sh) > $R/tree.txt 2>&1
(COMMIT=f9a180a SETS="1 2 3" TOTAL_BUDGET_S=150 SUITE_TIMEOUT_S=190 OUT=$R/window timeout 235 bash cuda_validate/scripts/measure_window.sh) > $R/window.log 2>&1; echo "window done at $(el) s" >> $R/times.txt
(OUT=$R/varlen SUITE=varlen REP_SETS=3 TOTAL_BUDGET_S=100 REP_SETS_BUDGET_S=30 timeout 110 bash cuda_validate/pytorch_sdpa/run.sh) > $R/varlen/varlen_log.txt 2>&1; echo "varlen done at $(el) s" >> $R/times.txt
(OUT=$R/chunked SUITE=chunked REP_SETS=3 TOTAL_BUDGET_S=100 REP_SETS_BUDGET_S=30 timeout 110 bash cuda_validate/pytorch_sdpa/run.sh) > $R/chunked/chunked_log.txt 2>&1; echo "chunked done at $(el) s" >> $R/times.txt
if [ $(el) -lt 320 ]; then mkdir -p $R/varlen2; (OUT=$R/varlen2 SUITE=varlen REP_SETS=3 TOTAL_BUDGET_S=100 REP_SETS_BUDGET_S=30 timeout 110 bash cuda_validate/pytorch_sdpa/run.sh) > $R/varlen2/varlen_log.txt 2>&1; echo "varlen2 done at $(el) s" >> $R/times.txt; fi
if [ $(el) -lt 420 ]; then mkdir -p $R/chunked2; (OUT=$R/chunked2 SUITE=chunked REP_SETS=3 TOTAL_BUDGET_S=100 REP_SETS_BUDGET_S=30 timeout 110 bash cuda_validate/pytorch_sdpa/run.sh) > $R/chunked2/chunked_log.txt 2>&1; echo "chunked2 done at $(el) s" >> $R/times.txt; fi
cp $R/gpu.txt $R/times.txt $OUT/; cp $R/window/window.json $OUT/ ; cp $R/varlen/measurements.json $OUT/varlen.json; cp $R/chunked/measurements.json $OUT/chunked.json; tar czf $OUT/all.tar.gz -C /tmp res; ls -la $OUT; cat $R/times.txt; tail -3 $R/window.log; grep -h 'done in\|exit' $R/*/*_log.txt
