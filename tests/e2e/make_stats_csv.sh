#!/usr/bin/env bash
# make_stats_csv.sh EXPORT PREFIX -- writes the CSV files `nsys stats --format csv -o PREFIX` would write
# for the reports cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_api_sum, nvtx_sum, nvtx_gpu_proj_trace and
# cuda_gpu_trace,
# computed from the SQLite export with SQL through the sqlite3 CLI (the oracle of the CSV tests: nsl is not
# involved).  Definitions, as NVIDIA documents the reports:
#   *_sum: per name (kernels: demangled name; memory operations: "[CUDA memcpy <kind>]" / "[CUDA memset]";
#          CUDA runtime API calls; NVTX push/pop and start/end ranges by text): Time (%) of the report's total,
#          Total Time, Instances (Count, Num Calls), Avg, Med, Min, Max, StdDev (sample), sorted by total.
#   nvtx_gpu_proj_trace: each NVTX range with GPU work: the GPU operations whose launching CUDA API call lies
#          within the range on the same thread; Projected Start = their first start, Projected Duration = last
#          end - first start, NumGPUOps = the launching calls.  Lvl, NumChild, ParentId and RangeStack are
#          left empty (not computed here); RangeId is the NVTX event's row id.
#   cuda_gpu_trace: every kernel, memcpy and memset in start order: Start, Duration, CorrId, grid and block,
#          registers, static and dynamic shared memory and bytes in MB (10^6), Device (the device id), Ctx,
#          Strm, Name (demangled; "[CUDA memcpy <kind>]", "[CUDA memset]").  Throughput, memory kinds and
#          GreenCtx are left empty.
# The export is copied first (indexes are added to the copy).
set -euo pipefail
export_in=$1 prefix=$2
db=$(mktemp "${TMPDIR:-/tmp}/nsl-stats-XXXXXX.sqlite")
trap 'rm -f "$db"' EXIT
cp "$export_in" "$db"
chmod u+w "$db"

has() { [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name = '$1'")" = 1 ]; }

# summary statistics of a view v(name, dur) in nsys stats' columns; $1 the count header, $2 the name header
summary() {
  cat <<EOF
WITH s AS (SELECT name, dur, row_number() OVER (PARTITION BY name ORDER BY dur) AS k,
                  count(*) OVER (PARTITION BY name) AS n FROM v),
     g AS (SELECT name, sum(dur) AS total, count(*) AS n, avg(dur) AS mean, min(dur) AS lo, max(dur) AS hi,
                  sum(dur * 1.0 * dur) AS sq FROM v GROUP BY name),
     m AS (SELECT name, avg(dur) AS med FROM s WHERE k IN ((n + 1) / 2, (n + 2) / 2) GROUP BY name)
SELECT round(g.total * 100.0 / (SELECT sum(total) FROM g), 1) AS "Time (%)", g.total AS "Total Time (ns)",
       g.n AS "$1", round(g.mean, 1) AS "Avg (ns)", round(m.med, 1) AS "Med (ns)", g.lo AS "Min (ns)",
       g.hi AS "Max (ns)",
       round(CASE WHEN g.n > 1 THEN sqrt(max(0, (g.sq - g.n * g.mean * g.mean) / (g.n - 1))) ELSE 0 END, 1)
         AS "StdDev (ns)", g.name AS "$2"
FROM g JOIN m USING (name) ORDER BY g.total DESC, g.name;
EOF
}

gpu_ops_view="CREATE TEMP VIEW ops AS SELECT 0 AS sel"
if has CUPTI_ACTIVITY_KIND_KERNEL; then
  sqlite3 -header -csv "$db" "CREATE TEMP VIEW v AS SELECT s.value AS name, k.\"end\" - k.start AS dur
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName;
                 $(summary Instances Name)" > "${prefix}_cuda_gpu_kern_sum.csv"
fi
mem=()
has CUPTI_ACTIVITY_KIND_MEMCPY && mem+=("SELECT '[CUDA memcpy ' || e.label || ']' AS name, m.\"end\" - m.start AS dur
  FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind")
has CUPTI_ACTIVITY_KIND_MEMSET && mem+=("SELECT '[CUDA memset]' AS name, \"end\" - start AS dur FROM CUPTI_ACTIVITY_KIND_MEMSET")
if [ ${#mem[@]} -gt 0 ]; then
  union=${mem[0]}
  [ ${#mem[@]} -gt 1 ] && union="$union UNION ALL ${mem[1]}"
  sqlite3 -header -csv "$db" "CREATE TEMP VIEW v AS $union;
                 $(summary Count Operation)" > "${prefix}_cuda_gpu_mem_time_sum.csv"
fi
if has CUPTI_ACTIVITY_KIND_RUNTIME; then
  sqlite3 -header -csv "$db" "CREATE TEMP VIEW v AS SELECT s.value AS name, r.\"end\" - r.start AS dur
                 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId;
                 $(summary 'Num Calls' Name)" > "${prefix}_cuda_api_sum.csv"
fi
if has NVTX_EVENTS; then
  # nvtx_sum has a Style column between StdDev and Range: computed per (style, text)
  sqlite3 -header -csv "$db" "CREATE TEMP VIEW r AS SELECT n.rowid AS id, coalesce(n.text, s.value) AS text,
                   CASE n.eventType WHEN 59 THEN 'PushPop' ELSE 'StartEnd' END AS style, n.start, n.\"end\",
                   n.globalTid
                 FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                 WHERE n.eventType IN (59, 60) AND n.\"end\" IS NOT NULL;
                 CREATE TEMP VIEW v AS SELECT style || char(31) || text AS name, \"end\" - start AS dur FROM r;
                 CREATE TEMP VIEW sums AS $(summary Instances Range | sed 's/;$//');
                 SELECT \"Time (%)\", \"Total Time (ns)\", Instances, \"Avg (ns)\", \"Med (ns)\", \"Min (ns)\",
                        \"Max (ns)\", \"StdDev (ns)\", substr(Range, 1, instr(Range, char(31)) - 1) AS Style,
                        substr(Range, instr(Range, char(31)) + 1) AS Range FROM sums;" > "${prefix}_nvtx_sum.csv"
  if has CUPTI_ACTIVITY_KIND_RUNTIME && has CUPTI_ACTIVITY_KIND_KERNEL; then
    ops="SELECT correlationId AS corr, globalPid >> 24 AS pid, start, \"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL"
    has CUPTI_ACTIVITY_KIND_MEMCPY && ops="$ops UNION ALL SELECT correlationId, globalPid >> 24, start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY"
    has CUPTI_ACTIVITY_KIND_MEMSET && ops="$ops UNION ALL SELECT correlationId, globalPid >> 24, start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMSET"
    sqlite3 -header -csv "$db" "CREATE INDEX IF NOT EXISTS nsl_rt ON CUPTI_ACTIVITY_KIND_RUNTIME (globalTid, start);
                   CREATE TEMP TABLE ops AS $ops;
                   CREATE INDEX temp.nsl_ops ON ops (pid, corr);
                   CREATE TEMP TABLE launch AS
                     SELECT rt.globalTid, rt.start, rt.\"end\", rt.correlationId AS corr, min(o.start) AS s, max(o.\"end\") AS e
                     FROM CUPTI_ACTIVITY_KIND_RUNTIME rt JOIN ops o ON o.pid = rt.globalTid >> 24 AND o.corr = rt.correlationId
                     GROUP BY rt.rowid;
                   CREATE INDEX temp.nsl_launch ON launch (globalTid, start);
                   CREATE TEMP VIEW r AS SELECT n.rowid AS id, coalesce(n.text, s.value) AS text,
                     CASE n.eventType WHEN 59 THEN 'PushPop' ELSE 'StartEnd' END AS style, n.start, n.\"end\", n.globalTid
                   FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                   WHERE n.eventType IN (59, 60) AND n.\"end\" IS NOT NULL;
                   SELECT r.text AS \"Name\", min(l.s) AS \"Projected Start (ns)\", max(l.e) - min(l.s) AS \"Projected Duration (ns)\",
                          r.start AS \"Orig Start (ns)\", r.\"end\" - r.start AS \"Orig Duration (ns)\", r.style AS \"Style\",
                          (r.globalTid >> 24) & 16777215 AS \"PID\", r.globalTid & 16777215 AS \"TID\", count(*) AS \"NumGPUOps\",
                          NULL AS \"Lvl\", NULL AS \"NumChild\", r.id AS \"RangeId\", NULL AS \"ParentId\", NULL AS \"RangeStack\"
                   FROM r JOIN launch l ON l.globalTid = r.globalTid AND l.start BETWEEN r.start AND r.\"end\" AND l.\"end\" <= r.\"end\"
                   GROUP BY r.id ORDER BY 2, 3 DESC;" > "${prefix}_nvtx_gpu_proj_trace.csv"
  fi
fi
if has CUPTI_ACTIVITY_KIND_KERNEL; then
  q="SELECT k.start AS s, k.\"end\" - k.start AS d, k.correlationId AS c, k.gridX AS gx, k.gridY AS gy, k.gridZ AS gz,
       k.blockX AS bx, k.blockY AS by_, k.blockZ AS bz, k.registersPerThread AS regs,
       k.staticSharedMemory / 1e6 AS ss, k.dynamicSharedMemory / 1e6 AS ds, NULL AS mb, k.deviceId AS dev,
       k.contextId AS ctx, k.streamId AS strm, n.value AS name
     FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n ON n.id = k.demangledName"
  has CUPTI_ACTIVITY_KIND_MEMCPY && q="$q UNION ALL SELECT m.start, m.\"end\" - m.start, m.correlationId, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, m.bytes / 1e6, m.deviceId, m.contextId, m.streamId,
       '[CUDA memcpy ' || e.label || ']' FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind"
  has CUPTI_ACTIVITY_KIND_MEMSET && q="$q UNION ALL SELECT start, \"end\" - start, correlationId, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, bytes / 1e6, deviceId, contextId, streamId, '[CUDA memset]'
       FROM CUPTI_ACTIVITY_KIND_MEMSET"
  sqlite3 -header -csv "$db" "SELECT s AS \"Start (ns)\", d AS \"Duration (ns)\", c AS CorrId, gx AS GrdX, gy AS GrdY,
      gz AS GrdZ, bx AS BlkX, by_ AS BlkY, bz AS BlkZ, regs AS \"Reg/Trd\", ss AS \"StcSMem (MB)\", ds AS \"DymSMem (MB)\",
      mb AS \"Bytes (MB)\", NULL AS \"Throughput (MBps)\", NULL AS SrcMemKd, NULL AS DstMemKd, dev AS Device, ctx AS Ctx,
      NULL AS GreenCtx, strm AS Strm, name AS Name FROM ($q) ORDER BY s, c" > "${prefix}_cuda_gpu_trace.csv"
fi
