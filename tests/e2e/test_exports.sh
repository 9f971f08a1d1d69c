#!/usr/bin/env bash
# Every export of ../shared/data/nsys: `nsl info` succeeds; every table's row
# count, and the kernels' per-name count and total duration, equal SQL on the
# same file; the input is byte-for-byte unchanged and nothing appears beside it.
. "$(dirname "$0")/lib.sh"

for src in "$NSL_DATA_DIR"/nsys/*.sqlite; do
  name=$(basename "$src")
  mkdir -p "$TMP/in"
  f="$TMP/in/$name"
  cp -p "$src" "$f"
  before=$(fingerprint "$f")
  listing_before=$(ls -a "$TMP/in")

  if "$NSL" info "$f" --format csv > "$TMP/info.csv" 2> "$TMP/info.err"; then ok "$name: nsl info"
  else bad "$name: nsl info failed: $(cat "$TMP/info.err")"; continue; fi
  # The "tables" section of info: table,rows
  got() { awk -F, -v t="$1" 'f && $1 == t { print $2 } /^table,rows$/ { f = 1 }' "$TMP/info.csv"; }

  check_eq "$name: kernels rows" "$(got kernels)" "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_KERNEL)"
  check_eq "$name: memcpy rows" "$(got memcpy)" "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_MEMCPY)"
  check_eq "$name: memset rows" "$(got memset)" "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_MEMSET)"
  check_eq "$name: sync rows" "$(got sync)" "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)"
  check_eq "$name: osrt rows" "$(got osrt)" "$(count_or_zero "$f" OSRT_API)"
  check_eq "$name: memory rows" "$(got memory)" "$(count_or_zero "$f" CUDA_GPU_MEMORY_USAGE_EVENTS)"
  check_eq "$name: samples rows" "$(got samples)" "$(count_or_zero "$f" COMPOSITE_EVENTS)"
  check_eq "$name: frames rows" "$(got frames)" "$(count_or_zero "$f" SAMPLING_CALLCHAINS)"
  check_eq "$name: callchains rows" "$(got callchains)" "$(count_or_zero "$f" CUDA_CALLCHAINS)"
  check_eq "$name: overhead rows" "$(got overhead)" "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_OVERHEAD)"
  if has_table "$f" PROCESSES; then
    check_eq "$name: processes rows" "$(got processes)" "$(count_or_zero "$f" PROCESSES)"
  else   # before PROCESSES existed: one process per pid of ThreadNames
    check_eq "$name: processes rows (from ThreadNames)" "$(got processes)" \
      "$(sql "$f" "SELECT count(DISTINCT (globalTid >> 24) & 16777215) FROM ThreadNames")"
  fi
  check_eq "$name: threads rows" "$(got threads)" "$(count_or_zero "$f" ThreadNames)"
  api=$(( $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_RUNTIME) + $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_DRIVER) ))
  check_eq "$name: api rows" "$(got api)" "$api"
  check_eq "$name: nvtx rows" "$(got nvtx)" "$(count_or_zero "$f" NVTX_EVENTS 'WHERE eventType IN (34, 59, 60)')"

  # Kernels: per demangled name, count and total duration (the summary's Instances and Total Time).
  if has_table "$f" CUPTI_ACTIVITY_KIND_KERNEL; then
    "$NSL" run summary "$f" --arg only=kernels --format csv > "$TMP/k.csv" 2> "$TMP/k.err" \
      || bad "$name: summary failed: $(cat "$TMP/k.err")"
    # nsl's CSV: Time (%),Total Time (ns),Instances,...,Name  -> "name<TAB>count<TAB>total", sorted
    awk -F, 'NR > 1 { n = $0; for (i = 0; i < 8; i++) sub(/^[^,]*,/, "", n); gsub(/^"|"$/, "", n); gsub(/""/, "\"", n);
                      print n "\t" $3 "\t" $2 }' "$TMP/k.csv" | LC_ALL=C sort > "$TMP/k.nsl"
    sqlite3 -readonly -separator "$(printf '\t')" "file:$f?immutable=1" \
      "SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
       JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value" | LC_ALL=C sort > "$TMP/k.sql"
    if cmp -s "$TMP/k.nsl" "$TMP/k.sql"; then ok "$name: per-kernel count and total = SQL"
    else bad "$name: per-kernel count and total differ from SQL: $(diff "$TMP/k.sql" "$TMP/k.nsl" | head -5)"; fi
  fi

  check_eq "$name: input unchanged" "$(fingerprint "$f")" "$before"
  check_eq "$name: nothing written beside the input" "$(ls -a "$TMP/in")" "$listing_before"
  rm -rf "$TMP/in"
done
finish
