#!/usr/bin/env bash
# straggler_rank.sh SRC DST DEVICE [DELAY_NS ROLE [OFFSET_NS [JITTER_NS [SEED]]]]
# -- a rank's export made from a real export with NCCL kernels: a copy of SRC
# at DST that keeps only GPU DEVICE's activity (DEVICE "all": every GPU),
# optionally with a planted straggler, a shifted clock and jitter.  Used by
# tests/lua/test_straggler.lua, tests/bench/bench_straggler.sh and to make
# samples/ (only SQL through sqlite3; SRC is never touched; the schema and
# names stay the real ones; nothing depends on one file: any export whose
# NCCL kernels are named nccl* works).
#
# Collective k (1-based) of a GPU is its k-th NCCL kernel in start order; n
# of a piece of GPU work (kernel, memcpy, memset) is the number of its GPU's
# collectives that started at or before it (so collective k has n = k), c is
# 1 for a collective.  ROLE says how the GPU's work moves (D = DELAY_NS):
#   slow        computes D longer before every collective: work moves by nD,
#               and the last non-NCCL kernel before each collective ends D
#               later (straggler.compute)
#   idle        its host stops D after every synchronising CUDA call (a
#               call named *Synchronize*: the host waited for the GPU, so
#               the GPU sits idle until the host launches again, as after
#               data loading or Python work): every host row (CUDA API calls,
#               synchronisation records, OS runtime calls, NVTX ranges) of
#               the GPU's processes that starts at or after the end of the
#               m-th such call moves by mD (an NVTX range's end by the count
#               at its end), every piece of GPU work moves with the call that
#               launched it (by its own start without one), and an NVTX range
#               'planted host delay' fills each stop on the synchronising
#               thread (straggler.host_idle)
#   idlewait    a rank that waits for an idle one (a copy of the same GPU,
#               so it synchronises alike): with W(k) = D x the synchronising
#               calls that ended at or before the launch of collective k,
#               collective k starts W(k-1) and ends W(k) later, its other
#               work moves by W(n)
#   wait        a rank that waits for a slow one: its collective
#               starts (n-1)D later (it had waited before) and ends nD later;
#               its other work moves by nD
#   collective  its collectives run D longer (a slow link): the same moves as
#               wait -- collective k starts (k-1)D and ends kD later -- while
#               the other ranks (ROLE lag) do not wait at its end
#               (straggler.collective)
#   queue       its GPU stalls D after every collective although the work
#               after it was launched already (waiting in the queue: a stream
#               waiting on an event, a slow clock): work moves by (n + 1)D, a
#               collective by nD -- so the gap after collective k-1 grows by D
#               and its host rows stay (straggler.launch)
#   lag         a rank beside a collective one: collective k starts
#               max(k-2,0)D and ends (k-1)D later, its other work moves by
#               max(n-1,0)D
#   slow3       an intermittent straggler: computes D longer before every
#               third collective (k = 3, 6, ...): work moves by floor(n/3)D,
#               and the last non-NCCL kernel before such a collective ends D
#               later
#   wait3       a rank that waits for a slow3 one: collective k starts
#               floor((k-1)/3)D and ends floor(k/3)D later, its other work
#               moves by floor(n/3)D
#   link3       an intermittent slow link or node: every third collective
#               (k = 3, 6, ...) runs D longer on it and ends D after the
#               others' (ROLE linklag3), so it arrives D late at the next:
#               collective k starts floor((k-1)/3)D and ends floor(k/3)D
#               later, its other work moves by floor(n/3)D (the ends differ
#               at a third of the collectives only: across exports a slow
#               link at every one would read as a clock offset)
#   linklag3    a rank beside link3 ones: collective k starts
#               floor(max(k-2,0)/3)D and ends floor((k-1)/3)D later, its
#               other work moves by floor(max(n-1,0)/3)D
# With DEVICE "all", ROLE is a comma list of DEV=ROLE (GPUs not named keep
# their times).  OFFSET_NS != 0: every time of the copy (every column start,
# end or timestamp of every table) moves by OFFSET_NS, a clock that runs
# ahead by that much.  JITTER_NS > 0: collective k of the GPU starts
# ((k x 2654435761 + SEED x 97531 + device x 7919) mod 4294967291 x 40503
# mod 1000003) mod JITTER_NS later (its end stays; not when that would reach
# it).  With one DEVICE kept, the host rows of the processes without work on it are
# deleted too, and the copy is vacuumed (small copies for many ranks).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 SRC DST DEVICE|all [DELAY_NS ROLE [OFFSET_NS [JITTER_NS [SEED]]]]" >&2; exit 2; }
src=$1 dst=$2 dev=$3 delay=${4:-0} role=${5:-} offset=${6:-0} jitter=${7:-0} seed=${8:-1}
case "$delay$offset$jitter$seed" in *[!0-9-]*|"") echo "$0: DELAY_NS, OFFSET_NS, JITTER_NS and SEED are integers" >&2; exit 2 ;; esac
[ "$dev" = all ] || case "$dev" in ""|*[!0-9]*) echo "$0: DEVICE is a device id or all" >&2; exit 2 ;; esac
roles_sql=""
check_role() {
  case "$1" in slow|idle|idlewait|wait|collective|lag|queue|slow3|wait3|link3|linklag3) ;;
    *) echo "$0: ROLE is slow, idle, idlewait, wait, collective, lag, queue, slow3, wait3, link3 or linklag3" >&2; exit 2 ;; esac
}
if [ "$delay" != 0 ]; then
  [ -n "$role" ] || { echo "$0: a delay needs a ROLE" >&2; exit 2; }
  if [ "$dev" = all ]; then
    IFS=, read -r -a pairs <<< "$role"
    for p in "${pairs[@]}"; do
      d=${p%%=*} r=${p#*=}
      case "$d" in ""|*[!0-9]*) echo "$0: with DEVICE all, ROLE is DEV=ROLE,..." >&2; exit 2 ;; esac
      check_role "$r"
      roles_sql="$roles_sql INSERT INTO roles VALUES ($d, '$r');"
    done
  else
    check_role "$role"
    roles_sql="INSERT INTO roles VALUES ($dev, '$role');"
  fi
fi

K=CUPTI_ACTIVITY_KIND_KERNEL
tmp="$dst.tmp-$$"
cp "$src" "$tmp"
chmod u+w "$tmp"
trap 'rm -f "$tmp"' EXIT
# the schema, read once: "TABLE COLUMN" per line (one sqlite3 run instead of one per question)
schema=$(sqlite3 -separator ' ' "$tmp" "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
                                       WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite%'")
declare -A tables=() columns=()
while read -r t c; do tables[$t]=1; columns["$t $c"]=1; done <<< "$schema"
has_table() { [ -n "${tables[$1]:-}" ]; }
has_col() { [ -n "${columns["$1 $2"]:-}" ]; }
has_table $K || { echo "$0: $src has no kernels" >&2; exit 1; }
case ",$role" in *[,=]idle*)
  [ "$(sqlite3 "$tmp" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds n ON n.id = r.nameId
                        WHERE n.value LIKE '%Synchronize%'" 2>/dev/null || echo 0)" != 0 ] ||
    { echo "$0: $src has no synchronising CUDA call to plant a host delay after" >&2; exit 1; } ;;
esac

sql="PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
if [ "$dev" != all ]; then
  # processes with work on the device: their host rows stay
  sql="$sql CREATE TEMP TABLE keep_pid AS SELECT DISTINCT (globalPid >> 24) & 16777215 AS pid FROM $K WHERE deviceId = $dev;"
  for t in $K CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; do
    has_table $t && has_col $t deviceId && sql="$sql DELETE FROM $t WHERE deviceId <> $dev;"
  done
  for t in CUPTI_ACTIVITY_KIND_RUNTIME NVTX_EVENTS OSRT_API; do
    has_table $t && sql="$sql DELETE FROM $t WHERE globalTid IS NOT NULL
      AND ((globalTid >> 24) & 16777215) NOT IN (SELECT pid FROM keep_pid);"
  done
fi
# GPU work of every device, in start order: n = collectives of its GPU started at or before it
gpu_tables="$K"
for t in CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET; do has_table $t && gpu_tables="$gpu_tables $t"; done
sql="$sql
  CREATE TEMP TABLE roles(dev INTEGER PRIMARY KEY, role TEXT); $roles_sql
  CREATE TEMP TABLE coll AS SELECT k.rowid AS rid, k.deviceId AS dev, k.start AS s, k.correlationId AS corr,
      (k.globalPid >> 24) & 16777215 AS pid, row_number() OVER (PARTITION BY k.deviceId ORDER BY k.start) AS k
    FROM $K k JOIN StringIds n ON n.id = k.shortName WHERE n.value LIKE 'nccl%';
  CREATE INDEX temp.coll_ds ON coll(dev, s);
  CREATE TEMP TABLE kk(rid INTEGER PRIMARY KEY, dev INTEGER, s INTEGER, c INTEGER, n INTEGER, lastc INTEGER DEFAULT 0,
                       m INTEGER DEFAULT 0, w INTEGER DEFAULT 0, wp INTEGER DEFAULT 0);
  INSERT INTO kk(rid, dev, s, c, n) SELECT rid, dev, s, c,
      sum(c) OVER (PARTITION BY dev ORDER BY s RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    FROM (SELECT k.rowid AS rid, k.deviceId AS dev, k.start AS s, (n.value LIKE 'nccl%') AS c
          FROM $K k JOIN StringIds n ON n.id = k.shortName WHERE k.deviceId IN (SELECT dev FROM roles));
  CREATE INDEX temp.kk_comp ON kk(dev, c, s);
  UPDATE kk SET lastc = 1 WHERE c = 0 AND rid IN (
    SELECT (SELECT p.rid FROM kk p WHERE p.dev = q.dev AND p.c = 0 AND p.s < q.s ORDER BY p.s DESC LIMIT 1)
    FROM kk q WHERE q.c = 1);"
# the moves of a role, in units of D: start and end of a piece of work with n and c
f_start="CASE r.role WHEN 'slow' THEN x.n WHEN 'slow3' THEN x.n / 3 WHEN 'wait3' THEN (x.n - x.c) / 3
  WHEN 'link3' THEN (x.n - x.c) / 3 WHEN 'linklag3' THEN max(x.n - 1 - x.c, 0) / 3 WHEN 'queue' THEN x.n + 1 - x.c WHEN 'idle' THEN x.m WHEN 'idlewait' THEN (CASE x.c WHEN 1 THEN x.wp ELSE x.w END)
  WHEN 'wait' THEN x.n - x.c WHEN 'collective' THEN x.n - x.c ELSE max(x.n - x.c - 1, 0) END"
f_end="CASE r.role WHEN 'slow' THEN x.n + x.lastc WHEN 'slow3' THEN x.n / 3 + x.lastc * ((x.n + 1) % 3 = 0)
  WHEN 'wait3' THEN x.n / 3 WHEN 'link3' THEN x.n / 3 WHEN 'linklag3' THEN max(x.n - 1, 0) / 3 WHEN 'queue' THEN x.n + 1 - x.c WHEN 'idle' THEN x.m WHEN 'idlewait' THEN x.w
  WHEN 'lag' THEN max(x.n - 1, 0) ELSE x.n END"
if [ -n "$roles_sql" ]; then
  # idle GPUs: the host of their processes stops D after every synchronising call
  sql="$sql
    CREATE TEMP TABLE syncs AS SELECT ((rt.globalTid >> 24) & 16777215) AS pid, rt.end AS y, rt.globalTid AS tid
      FROM CUPTI_ACTIVITY_KIND_RUNTIME rt JOIN StringIds n ON n.id = rt.nameId
      WHERE n.value LIKE '%Synchronize%' AND ((rt.globalTid >> 24) & 16777215) IN
        (SELECT pid FROM coll WHERE dev IN (SELECT dev FROM roles WHERE role IN ('idle', 'idlewait')));
    CREATE INDEX temp.syncs_py ON syncs(pid, y);
    CREATE TEMP TABLE host_pid AS SELECT DISTINCT pid FROM coll WHERE dev IN (SELECT dev FROM roles WHERE role = 'idle');"
  for t in CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_SYNCHRONIZATION OSRT_API NVTX_EVENTS; do
    has_table $t || continue
    pidcol=globalTid; has_col $t globalTid || pidcol=globalPid
    has_col $t $pidcol || continue
    endshift="h.m"
    [ $t = NVTX_EVENTS ] && endshift="(SELECT count(*) FROM syncs WHERE pid = h.pid AND y <= h.e)"
    sql="$sql
      CREATE TEMP TABLE h_$t AS SELECT x.rowid AS rid, x.end AS e, ((x.$pidcol >> 24) & 16777215) AS pid,
          (SELECT count(*) FROM syncs WHERE pid = ((x.$pidcol >> 24) & 16777215) AND y <= x.start) AS m
        FROM $t x WHERE ((x.$pidcol >> 24) & 16777215) IN (SELECT pid FROM host_pid);"
  done
  # cumulative host delay before every collective launch: W(k) = D x syncs ended at or before launch k
  sql="$sql
    CREATE TEMP TABLE wk AS SELECT c.rid, c.dev, c.k,
        (SELECT count(*) FROM syncs WHERE syncs.pid = c.pid AND syncs.y <= coalesce(rt.start, c.s)) AS w
      FROM coll c LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = c.corr
        AND ((rt.globalTid >> 24) & 16777215) = c.pid
      WHERE c.dev IN (SELECT dev FROM roles WHERE role IN ('idle', 'idlewait'));
    CREATE INDEX temp.wk_dk ON wk(dev, k);
    UPDATE kk SET w = coalesce((SELECT w FROM wk WHERE wk.dev = kk.dev AND wk.k = kk.n), 0),
                  wp = coalesce((SELECT w FROM wk WHERE wk.dev = kk.dev AND wk.k = kk.n - 1), 0);"
  # GPU work of idle GPUs moves with the call that launched it (its own start without one)
  sql="$sql
    CREATE TEMP TABLE launched AS SELECT k.rowid AS rid,
        (SELECT count(*) FROM syncs WHERE syncs.pid = ((k.globalPid >> 24) & 16777215)
           AND syncs.y <= coalesce(rt.start, k.start)) AS m
      FROM $K k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = k.correlationId
        AND ((rt.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)
      WHERE k.deviceId IN (SELECT dev FROM roles WHERE role = 'idle');
    UPDATE kk SET m = (SELECT m FROM launched WHERE launched.rid = kk.rid) WHERE dev IN (SELECT dev FROM roles WHERE role = 'idle');"
  sql="$sql
    UPDATE $K SET start = start + $delay * ($f_start), end = end + $delay * ($f_end)
      FROM kk x JOIN roles r ON r.dev = x.dev WHERE x.rid = $K.rowid;"
  for t in $gpu_tables; do
    [ $t = $K ] && continue
    sql="$sql
      CREATE TEMP TABLE m_$t AS SELECT m.rowid AS rid, m.deviceId AS dev, 0 AS c, 0 AS lastc,
          (SELECT count(*) FROM coll WHERE coll.dev = m.deviceId AND coll.s <= m.start) AS n,
          (SELECT count(*) FROM syncs WHERE syncs.pid = ((m.globalPid >> 24) & 16777215)
             AND syncs.y <= coalesce((SELECT rt.start FROM CUPTI_ACTIVITY_KIND_RUNTIME rt
               WHERE rt.correlationId = m.correlationId
                 AND ((rt.globalTid >> 24) & 16777215) = ((m.globalPid >> 24) & 16777215)), m.start)) AS m,
          0 AS w, 0 AS wp
        FROM $t m WHERE m.deviceId IN (SELECT dev FROM roles);
      UPDATE m_$t SET w = coalesce((SELECT w FROM wk WHERE wk.dev = m_$t.dev AND wk.k = m_$t.n), 0);
      UPDATE $t SET start = start + $delay * ($f_start), end = end + $delay * ($f_end)
        FROM m_$t x JOIN roles r ON r.dev = x.dev WHERE x.rid = $t.rowid;"
  done
  # last, the host rows (the GPU moves above read the original launch times)
  for t in CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_SYNCHRONIZATION OSRT_API NVTX_EVENTS; do
    has_table $t || continue
    has_col $t globalTid || has_col $t globalPid || continue
    endshift="h.m"
    [ $t = NVTX_EVENTS ] && endshift="(SELECT count(*) FROM syncs WHERE pid = h.pid AND y <= h.e)"
    sql="$sql
      UPDATE $t SET start = start + $delay * h.m,
                    end = CASE WHEN end IS NULL THEN NULL ELSE end + $delay * $endshift END
        FROM h_$t h WHERE h.rid = $t.rowid;"
  done
  if has_table NVTX_EVENTS; then
    sql="$sql
      INSERT INTO StringIds(id, value) SELECT (SELECT max(id) + 1 FROM StringIds), 'planted host delay'
        WHERE EXISTS (SELECT 1 FROM syncs WHERE pid IN (SELECT pid FROM host_pid));
      INSERT INTO NVTX_EVENTS(start, end, eventType, textId, globalTid)
        SELECT y + $delay * (rank - 1), y + $delay * rank, 59, (SELECT max(id) FROM StringIds), tid
        FROM (SELECT y, tid, row_number() OVER (PARTITION BY pid ORDER BY y) AS rank FROM syncs
              WHERE pid IN (SELECT pid FROM host_pid));"
  fi
fi
if [ "$jitter" != 0 ]; then
  sql="$sql
    UPDATE $K SET start = start + j.j FROM (
      SELECT rid, ((k * 2654435761 + $seed * 97531 + dev * 7919) % 4294967291 * 40503 % 1000003) % $jitter AS j
      FROM coll) j
    WHERE j.rid = $K.rowid AND start + j.j < end;"
fi
if [ "$offset" != 0 ]; then
  for t in "${!tables[@]}"; do
    for c in start end timestamp; do
      if has_col "$t" $c; then sql="$sql UPDATE $t SET $c = $c + $offset WHERE $c IS NOT NULL;"; fi
    done
  done
fi
sql="$sql COMMIT;"
[ "$dev" = all ] || sql="$sql VACUUM;"
sqlite3 "$tmp" "$sql" > /dev/null
mv "$tmp" "$dst"
trap - EXIT
