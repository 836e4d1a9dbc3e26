#!/usr/bin/env bash
# nvidia-smi around one power microbenchmark run, for power_clock.sh and traffic_power.sh (which
# source it from $H, beside them, with H set). OUT defaults to $H/out; it is made on sourcing.
# smi_begin INFO_FIELDS: $OUT/smi_info.txt (nvidia-smi, the INFO_FIELDS query, and -q of
#   PERFORMANCE, POWER, TEMPERATURE, CLOCK), then nvidia-smi sampling clocks, power, temperatures
#   and clock event reasons every 100 ms into $OUT/smi.csv (the older throttle-reason names if the
#   driver refuses the full list), then 2 s of idle baseline.
# smi_end NAME OPCODES: 1 s more, stops the sampling, counts the SASS opcodes of $H/bin/NAME that
#   match OPCODES (grep -E) into $OUT/sass_opcodes.txt and joins $OUT/NAME_raw.jsonl with the
#   samples through power_clock_summary.py (NAME_summary.json / .csv, summary.txt).

OUT=${OUT:-$H/out}
mkdir -p "$OUT"

smi_begin() {
  {
    nvidia-smi
    nvidia-smi --query-gpu="$1" --format=csv
    nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE,CLOCK
  } >"$OUT/smi_info.txt" 2>&1
  FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,power.draw.instant,temperature.gpu,temperature.memory,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown
  if ! nvidia-smi --query-gpu=$FIELDS --format=csv >/dev/null 2>&1; then
    echo "full field list refused; falling back" | tee -a "$OUT/smi_info.txt"
    FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,clocks_throttle_reasons.sw_power_cap,clocks_throttle_reasons.hw_slowdown,clocks_throttle_reasons.sw_thermal_slowdown,clocks_throttle_reasons.hw_thermal_slowdown
  fi
  nvidia-smi --query-gpu=$FIELDS --format=csv,nounits -lms 100 >"$OUT/smi.csv" 2>/dev/null & SMI=$!
  sleep 2  # idle baseline
}

smi_end() {
  sleep 1
  kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
  cuobjdump --dump-sass "$H/bin/$1" 2>&1 | grep -oE "$2" | sort | uniq -c >"$OUT/sass_opcodes.txt"
  python3 "$H/power_clock_summary.py" "$OUT/$1_raw.jsonl" "$OUT/smi.csv" \
    "$OUT/$1_summary.json" "$OUT/$1_summary.csv" 2>&1 | tee "$OUT/summary.txt"
}
