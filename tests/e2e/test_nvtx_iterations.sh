#!/usr/bin/env bash
# The nvtx and iterations analyses through the real CLI: CSV files under
# --out agree with SQL on the same export, missing data and bad arguments
# are one-line errors with the documented exit codes, inputs stay untouched.
. "$(dirname "$0")/lib.sh"

mpi="$TMP/mpi.sqlite"
cuda="$TMP/cuda.sqlite"
cp -p "$NSL_DATA_DIR/nsys/mpi_cuda_rank0_2022.2.sqlite" "$mpi"
cp -p "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" "$cuda"
before_mpi=$(fingerprint "$mpi")
before_cuda=$(fingerprint "$cuda")

# csv_col FILE COLUMN: the values of a CSV column (header names it), one a line.
csv_col() {
  awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k { print $k }' "$1"
}
name_sql="CASE WHEN d.name IS NULL THEN coalesce(n.text, s.value) ELSE d.name || ':' || coalesce(n.text, s.value) END"
from_sql="FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
          LEFT JOIN (SELECT domainId AS id, min(text) AS name FROM NVTX_EVENTS WHERE eventType = 75 GROUP BY 1) d
          ON d.id = n.domainId"

if "$NSL" run nvtx "$mpi" --arg only=all --out "$TMP/n" > "$TMP/n.txt" 2> "$TMP/n.err"; then ok "nvtx runs"
else bad "nvtx failed: $(cat "$TMP/n.err")"; fi
check_eq "nvtx_sum: ranges and totals = SQL GROUP BY" \
  "$(awk -F, 'NR > 1 { print $NF " " $2 " " $3 }' "$TMP/n/nvtx_sum.csv" | sort)" \
  "$(sql "$mpi" "SELECT nm || ' ' || total || ' ' || k FROM (SELECT $name_sql AS nm, sum(n.end - n.start) AS total,
                 count(*) AS k $from_sql WHERE n.eventType IN (59, 60) GROUP BY nm)" | sort)"
check_eq "nvtx_gpu_proj_trace: one row per range enclosing a call that launched GPU work (SQL)" \
  "$(($(wc -l < "$TMP/n/nvtx_gpu_proj_trace.csv") - 1))" \
  "$(sql "$mpi" "SELECT count(*) FROM NVTX_EVENTS n WHERE n.eventType IN (59, 60) AND EXISTS (
                 SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
                   UNION ALL SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY
                   UNION ALL SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET) o ON o.correlationId = r.correlationId
                 WHERE r.globalTid = n.globalTid AND r.start >= n.start AND r.end <= n.end)")"
check_eq "nvtx_gpu_proj_sum: projected time of saxpy = SQL (first op start to last op end per range)" \
  "$(awk -F, 'NR > 1 && $NF == "saxpy" { print $2 }' "$TMP/n/nvtx_gpu_proj_sum.csv")" \
  "$(sql "$mpi" "SELECT sum(e - s) FROM (SELECT min(o.start) s, max(o.end) e FROM NVTX_EVENTS n
                 JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = n.globalTid AND r.start >= n.start AND r.end <= n.end
                 JOIN (SELECT start, end, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
                       SELECT start, end, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY) o
                   ON o.correlationId = r.correlationId
                 WHERE n.eventType = 59 AND n.text = 'saxpy' GROUP BY n.rowid)")"
[ -f "$TMP/n/nvtx_tree.csv" ] && ok "nvtx: tree written" || bad "nvtx: no nvtx_tree.csv"
grep -q "MPI:MPI_Send" "$TMP/n.txt" && ok "nvtx: domain:text names" || bad "nvtx: no MPI:MPI_Send in the text output"

"$NSL" run nvtx "$cuda" > /dev/null 2> "$TMP/e.err"
check_eq "nvtx without NVTX data: exit 1" "$?" "1"
check_eq "nvtx without NVTX data: one line naming the file" "$(wc -l < "$TMP/e.err" | tr -d ' ')" "1"
grep -q "no NVTX ranges" "$TMP/e.err" && ok "nvtx: says why" || bad "nvtx: unclear error: $(cat "$TMP/e.err")"

# iterations: detected from the saxpy kernel (5 runs: 4 periods), or by the saxpy range (5)
if "$NSL" run iterations "$mpi" --out "$TMP/i" > "$TMP/i.txt" 2> "$TMP/i.err"; then ok "iterations runs"
else bad "iterations failed: $(cat "$TMP/i.err")"; fi
check_eq "iterations: periods between the marker kernel's runs" "$(($(wc -l < "$TMP/i/iterations.csv") - 1))" \
  "$(($(sql "$mpi" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") - 1))"
"$NSL" run iterations "$mpi" --arg range=saxpy --out "$TMP/r" > /dev/null 2> "$TMP/r.err"
check_eq "iterations by range: starts = SQL" "$(csv_col "$TMP/r/iterations.csv" 'Start (ns)' | tr '\n' ' ')" \
  "$(sql "$mpi" "SELECT start FROM NVTX_EVENTS WHERE text = 'saxpy' ORDER BY start" | tr '\n' ' ')"
"$NSL" run iterations "$mpi" --arg warmup=many > /dev/null 2> "$TMP/w.err"
check_eq "iterations: a bad argument is a usage error (exit 2)" "$?" "2"
"$NSL" run iterations "$cuda" > /dev/null 2> "$TMP/c.err"
check_eq "iterations: nothing periodic is exit 1" "$?" "1"
grep -q "range=NAME" "$TMP/c.err" && ok "iterations: suggests --arg range" || bad "iterations: $(cat "$TMP/c.err")"
"$NSL" list | grep -q "^ *iterations " && ok "list names iterations" || bad "list lacks iterations"

check_eq "inputs untouched (mpi)" "$(fingerprint "$mpi")" "$before_mpi"
check_eq "inputs untouched (cuda)" "$(fingerprint "$cuda")" "$before_cuda"
finish
