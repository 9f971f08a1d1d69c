#!/usr/bin/env bash
# test_comm.sh -- the classes, nccl and overlap analyses through the real CLI:
# listing, help, CSV output and --out files checked against SQL, and bad
# input (missing or invalid map, unknown iteration) as one line and exit 1.
source "$(dirname "$0")/lib.sh"

F="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
before=$(fingerprint "$F")

list=$("$NSL" list)
for a in classes nccl overlap; do
  if grep -q "^ $a " <<<"$list"; then ok "nsl list shows $a"; else bad "nsl list lacks $a"; fi
done

help=$("$NSL" run classes --help); rc=$?
check_eq "classes --help exits 0" "$rc" 0
if grep -q "map" <<<"$help" && grep -q "iteration" <<<"$help"; then ok "help lists map and iteration"; else bad "help: $help"; fi

# nccl: the SendRecv total in CSV equals the SQL sum of NCCL kernel durations
csv=$("$NSL" run nccl "$F" --format csv)
got=$(awk -F, '$1 == "SendRecv" { print $4; exit }' <<<"$csv")
want=$(sql "$F" "SELECT sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                 WHERE lower(s.value) LIKE '%nccl%'")
check_eq "nccl CSV total = SQL" "$got" "$want"

# overlap --out: overlap.csv and results.json; device 0's span from SQL
"$NSL" run overlap "$F" --out "$TMP/ov" > /dev/null; rc=$?
check_eq "overlap --out exits 0" "$rc" 0
[ -f "$TMP/ov/overlap.csv" ] && [ -f "$TMP/ov/results.json" ] && ok "overlap wrote its files" || bad "overlap files missing"
got=$(awk -F, 'NR > 1 && $2 == "0" { print $3; exit }' "$TMP/ov/overlap.csv")
want=$(sql "$F" "SELECT max(e) - min(s) FROM (
  SELECT start s, end e FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0 UNION ALL
  SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0 UNION ALL
  SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE deviceId = 0)")
check_eq "device 0 span = SQL" "$got" "$want"

# classes with the built-in map: the nccl class equals the SQL NCCL total
got=$("$NSL" run classes "$F" --format csv | awk -F, '$1 == "nccl" { print $3; exit }')
want=$(sql "$F" "SELECT sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                 WHERE lower(s.value) LIKE '%nccl%'")
check_eq "classes nccl total = SQL" "$got" "$want"

# bad input: one line on stderr, exit 1
expect_fail() { # expect_fail WHAT PATTERN ARGS...
  local what=$1 pattern=$2
  shift 2
  "$NSL" "$@" > /dev/null 2> "$TMP/err"; local rc=$?
  local lines
  lines=$(wc -l < "$TMP/err")
  if [ "$rc" = 1 ] && [ "$lines" = 1 ] && grep -q -- "$pattern" "$TMP/err"; then ok "$what"
  else bad "$what: rc $rc, stderr: $(cat "$TMP/err")"; fi
}
expect_fail "missing map file" "nope.json" run classes "$F" --arg map="$TMP/nope.json"
printf '{"gemm": "g",}' > "$TMP/bad.json"
expect_fail "invalid JSON map" "line 1, column 14" run classes "$F" --arg map="$TMP/bad.json"
printf '{"(?=x)": "g"}' > "$TMP/look.json"
expect_fail "unsupported regex" "lookahead" run classes "$F" --arg map="$TMP/look.json"
expect_fail "unknown iteration" "no NVTX range named 'nope'" run overlap "$F" --arg iteration=nope

check_eq "the input is untouched" "$(fingerprint "$F")" "$before"
finish
