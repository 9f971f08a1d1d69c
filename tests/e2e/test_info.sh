#!/usr/bin/env bash
# nsl info as a user reads it: the session start in UTC as a date (the
# export's TARGET_INFO_SESSION_START_TIME through date(1)), the table counts
# before the (often hundreds of) processes, and no Devices column that the
# trace leaves empty everywhere (SQL: the export has no GPU table).
. "$(dirname "$0")/lib.sh"
F="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
"$NSL" info "$F" > "$TMP/info.txt" 2> "$TMP/info.err" || bad "info exits 0: $(cat "$TMP/info.err")"
ns=$(sql "$F" "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
want="$(date -u -d "@$((ns / 1000000000))" +%Y-%m-%dT%H:%M:%S).$(printf '%09d' $((ns % 1000000000)))Z"
grep -q -- "$want" "$TMP/info.txt" && ok "start (UTC) is the session start as a date: $want" ||
  bad "no '$want' in: $(head -5 "$TMP/info.txt")"
t=$(grep -n '^Tables' "$TMP/info.txt" | cut -d: -f1); p=$(grep -n '^Processes' "$TMP/info.txt" | cut -d: -f1)
[ -n "$t" ] && [ -n "$p" ] && [ "$t" -lt "$p" ] && ok "the table counts come before the processes" ||
  bad "order: Tables at ${t:-none}, Processes at ${p:-none}"
has_table "$F" TARGET_INFO_GPU || has_table "$F" TARGET_INFO_CUDA_DEVICE && bad "the export has a GPU table: pick another"
head=$(awk '/^Devices$/ { on = 1; next } on && /^ *report/ { print; exit }' "$TMP/info.txt")
check_eq "Devices: only the columns the trace fills" "$(echo $head)" "report device"
check_eq "Devices: one row per device (SQL)" "$(awk '/^Devices$/ { on = 1; next } on && /^$/ && n++ >= 1 { exit } on && /^ +0 +[0-9]+ *$/' "$TMP/info.txt" | wc -l)" \
  "$(sql "$F" "SELECT count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL")"
# each report's first start, last stop and span over the timed tables (kernels, copies, memsets, CUDA calls,
# NVTX, OS runtime, synchronisation) = SQL over the same tables; cold and warm (then read from the cache), one
# export and two together (each report its own span)
span_sql() {
  local f=$1 q="" t
  for t in CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET CUPTI_ACTIVITY_KIND_RUNTIME \
           NVTX_EVENTS OSRT_API CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; do
    has_table "$f" "$t" && q="$q${q:+ UNION ALL }SELECT start s, end e FROM $t"
  done
  sql "$f" "SELECT min(s), max(e) - min(s) FROM ($q)" | tr '|' ' '
}
spans_of() {   # first_ns and span_ns of every report, one line each
  "$NSL" info "$@" --format json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["tables"]["reports"]: print(r["first_ns"], r["span_ns"])'
}
G="$NSL_DATA_DIR/nsys/pytorch_h100_2gpu_2026.2.sqlite"
read -r f0 s0 <<< "$(span_sql "$F")"
read -r g0 h0 <<< "$(span_sql "$G")"
export NSL_CACHE_DIR="$TMP/cache"
for run in cold warm; do
  check_eq "$run: the report's first start and span = SQL" "$(spans_of "$F")" "$f0 $s0"
  check_eq "$run: two reports' spans = SQL, each" "$(spans_of "$F" "$G" | awk '{ print $2 }' | tr '\n' ' ')" "$s0 $h0 "
done
finish
