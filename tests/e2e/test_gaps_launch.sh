#!/usr/bin/env bash
# The gaps and launch analyses through the real CLI: CSV files under --out
# agree with SQL on the same export, findings gate the exit code with
# --fail-on, bad arguments are one-line errors with the documented exit
# codes, and the inputs are left untouched.
. "$(dirname "$0")/lib.sh"

tiny="$TMP/tiny.sqlite"
cuda="$TMP/cuda.sqlite"
cp -p "$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite" "$tiny"
cp -p "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" "$cuda"
before_tiny=$(fingerprint "$tiny")
before_cuda=$(fingerprint "$cuda")

# csv_col FILE COLUMN: the values of a CSV column (header names it), one a line.
csv_col() {
  awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k { print $k }' "$1"
}

# gaps: the two gaps of the tiny export are the distances between its three GPU operations
if "$NSL" run gaps "$tiny" --arg min=0 --out "$TMP/g" > "$TMP/g.txt" 2> "$TMP/g.err"; then ok "gaps runs"
else bad "gaps failed: $(cat "$TMP/g.err")"; fi
want=$(sql "$tiny" "WITH o AS (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
                               SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY),
                    s AS (SELECT start, lag(end) OVER (ORDER BY start) AS prev FROM o)
                    SELECT start - prev FROM s WHERE prev IS NOT NULL ORDER BY 1 DESC")
check_eq "gaps: gap lengths = SQL" "$(csv_col "$TMP/g/gaps_device.csv" 'Gap (ns)')" "$want"
check_eq "gaps: the CUDA API calls" "$(csv_col "$TMP/g/gaps_device.csv" 'CUDA API' | tr '\n' ' ')" \
  "cudaLaunchKernel cudaHostAlloc "
[ -f "$TMP/g/results.json" ] && ok "gaps: results.json written" || bad "gaps: no results.json"
grep -q "cudaHostAlloc" "$TMP/g.txt" && ok "gaps: text output names the call" || bad "gaps: text output lacks the call"

# --fail-on: the 2021 export's device is idle 94% of its span, above warn_idle (50)
"$NSL" run gaps "$cuda" --arg scope=device --fail-on warning > /dev/null 2> "$TMP/f.err"
check_eq "gaps: an idle device is a warning that --fail-on warning turns into exit 3" "$?" "3"
"$NSL" run gaps "$cuda" --arg scope=device --arg warn_idle=99 --fail-on warning > /dev/null 2>&1
check_eq "gaps: below warn_idle the exit code stays 0" "$?" "0"

# launch: per-stream latencies and sync totals in CSV
if "$NSL" run launch "$cuda" --out "$TMP/l" > /dev/null 2> "$TMP/l.err"; then ok "launch runs"
else bad "launch failed: $(cat "$TMP/l.err")"; fi
check_eq "launch: launches = SQL join on correlation id" "$(csv_col "$TMP/l/launch_summary.csv" Launches)" \
  "$(sql "$cuda" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                   ON r.correlationId = k.correlationId")"
check_eq "launch: max latency = SQL" "$(csv_col "$TMP/l/launch_summary.csv" 'Latency max (ns)')" \
  "$(sql "$cuda" "SELECT max(k.start - r.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                   ON r.correlationId = k.correlationId")"
got=$(awk -F, 'NR > 1 && $NF == "cudaMemcpy" { print $3 " " $4 }' "$TMP/l/host_sync.csv")
check_eq "launch: synchronous cudaMemcpy blocked time and calls = SQL" "$got" \
  "$(sql "$cuda" "SELECT sum(r.end - r.start) || ' ' || count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                   JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaMemcpy%' AND s.value NOT LIKE '%Async%'")"
"$NSL" run launch "$tiny" --format json > "$TMP/l.json" 2>&1
check_eq "launch: JSON output" "$?" "0"
grep -q '"launch_by_kernel"' "$TMP/l.json" && ok "launch: JSON holds the tables" || bad "launch: JSON lacks tables"

# usage and input errors
"$NSL" run gaps "$tiny" --arg min=soon > /dev/null 2> "$TMP/e1"
check_eq "gaps: a bad duration exits 2 (a usage error)" "$?" "2"
check_eq "gaps: ... with one line on stderr" "$(wc -l < "$TMP/e1")" "1"
grep -q "^nsl: --arg min: 'soon' is not a duration" "$TMP/e1" && ok "gaps: the line names the argument" \
  || bad "gaps: unexpected message: $(cat "$TMP/e1")"
"$NSL" run launch "$tiny" --arg nope=1 > /dev/null 2> "$TMP/e2"
check_eq "launch: an unknown argument exits 2" "$?" "2"
"$NSL" run launch "$tiny" --arg n=many > /dev/null 2> "$TMP/e3"
check_eq "launch: a non-number n exits 2" "$?" "2"
"$NSL" run gaps --help > "$TMP/help" 2>&1
grep -q "min" "$TMP/help" && grep -q "threads" "$TMP/help" && ok "gaps --help lists the arguments" \
  || bad "gaps --help: $(cat "$TMP/help")"
"$NSL" list > "$TMP/list" 2>&1
grep -q "^ gaps " "$TMP/list" && grep -q "^ launch " "$TMP/list" && ok "nsl list shows gaps and launch" \
  || bad "nsl list: $(cat "$TMP/list")"

check_eq "inputs unchanged (tiny)" "$(fingerprint "$tiny")" "$before_tiny"
check_eq "inputs unchanged (2021)" "$(fingerprint "$cuda")" "$before_cuda"
finish
