#!/usr/bin/env bash
# plant_steps.sh FILE [PER] -- plants training steps in a per-rank export
# (a copy: tests never touch the shared data): one NVTX range 'train_step'
# per PER (default 4) NCCL kernels of GPU 0, from 1 us before the first of
# them to 1 us before the first of the next PER, on the thread whose CUDA
# call launched that first kernel; the first PER collectives are left out.
# SQL through sqlite3 on the export's own tables (NVTX_EVENTS, eventType 59:
# a push/pop range), as nsys writes a range.  Used by test_straggler.lua,
# test_reduce.lua and test_mpi_shares.sh.
set -euo pipefail
file=$1
per=${2:-4}
sqlite3 "$file" "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)
  SELECT a.s - 1000, b.s - 1000, 59, 'train_step', a.tid FROM
    (SELECT k.start AS s, rt.globalTid AS tid, row_number() OVER (ORDER BY k.start) AS n
     FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds sn ON sn.id = k.shortName
     JOIN CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = k.correlationId
     WHERE sn.value LIKE 'nccl%' AND k.deviceId = 0) a
  JOIN (SELECT k.start AS s, row_number() OVER (ORDER BY k.start) AS n
        FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds sn ON sn.id = k.shortName
        WHERE sn.value LIKE 'nccl%' AND k.deviceId = 0) b ON b.n = a.n + $per
  WHERE a.n % $per = 1 AND a.n > $per"
