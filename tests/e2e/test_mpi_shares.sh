#!/usr/bin/env bash
# Distributed runs over shares of reports: a bundle read member by member, the
# cluster workflow (profile per rank -> combine -> mpirun straggler), edge
# shares (one report, more processes than reports, nsys-jax archives), and
# failures (an unreadable share, a missing file, a tampered member, a step
# failing on one process, a usage error) named once with the MPI rank.
# Oracles: the one-process run of the same command, byte for byte, and the
# exports' own bytes (sha256) in the combined bundle.  Per-rank exports and
# helpers: tests/e2e/mpi_lib.sh.  Skipped without MPI or mpirun.
. "$(dirname "$0")/mpi_lib.sh"

# ---- a bundle: each process reads its members only ----
"$NSL" bundle "${RANKS[@]:0:6}" -o "$TMP/six.zip" > /dev/null 2>&1 || bad "bundle of six exports"
same_as_one "straggler on a bundle of 6 reports" 4 run straggler "$TMP/six.zip"; form_was "bundle" distributed
same_as_one "summary on a bundle and exports" 3 run summary "$TMP/six.zip" "${RANKS[@]:6}"

# a member whose bytes no longer match the manifest: its reader says so, with its rank
mkdir "$TMP/tz" && (cd "$TMP/tz" && unzip -q "$TMP/six.zip" &&
  printf 'X' | dd of=reports/rank5.sqlite bs=1 seek=500000 conv=notrunc 2> /dev/null &&
  zip -q -X -r "$TMP/tampered.zip" manifest.json $(ls | grep -v '^manifest.json$'))
mpi 4 run straggler "$TMP/tampered.zip" > /dev/null 2> "$TMP/bad.err"
rc=$?
[ $rc -eq 1 ] && [ "$(grep -c '^nsl:' "$TMP/bad.err")" = 1 ] &&
  grep -q "^nsl: MPI rank 3: .*tampered.zip.*reports/rank5.sqlite.*sha256" "$TMP/bad.err" &&
  ok "a tampered bundle member fails the run, named with its reader's MPI rank" ||
  bad "tampered member: exit $rc: $(grep '^nsl' "$TMP/bad.err")"

# ---- the straggler's reduced rows (one per collective with the window before it, not the kernels) ----
# On the ten exports each rank's matched collectives follow each other, so the processes send the reduced
# rows. Rank 0's export with its 16th NCCL kernel renamed to a Broadcast that no other rank ran: that
# collective is matched on no rank, so the windows around it on rank 0 are not the ones its process
# measured; rank 0 reads the kernels instead -- the same output, more bytes moved.
same_as_one "straggler, reduced rows" 2 run straggler "${RANKS[@]}"
reduced=$(moved "$TMP/many.err")
# integer and string columns travel as varints of their differences (src/core/wire.h): the same output in under
# two thirds of the bytes the values take as they are in memory
NSL_WIRE_VARINTS=0 NSL_MPI_STATS=1 mpi 2 run straggler "${RANKS[@]}" > "$TMP/plain.out" 2> "$TMP/plain.err"
cmp -s "$TMP/plain.out" "$TMP/many.out" && ok "straggler, columns as they are in memory: the same output" ||
  bad "straggler: the output changes with the columns' encoding"
moves_less "the reduced rows as varints (x 3/2), against them as they are in memory" \
  "$([ -n "$reduced" ] && echo $((reduced * 3 / 2)))" "$(moved "$TMP/plain.err")"
# what the late rank's host did (rank 5, host idle; its report held by MPI rank 1) is found by its process, which
# sends the attributed gaps: rank 0 reads none of its tables
if grep -q "rank 0 read 0 tables of other processes' reports and asked 1 computations" "$TMP/plain.err"; then
  ok "straggler: the late rank's host attributed by its process, no table of its report read by rank 0"
else bad "straggler: $(grep 'rank 0 read' "$TMP/plain.err")"; fi
# the same rank's report first, held by MPI rank 0 itself: attributed there, the same output as one process
same_as_one "straggler, the late rank's report held by MPI rank 0" 2 run straggler "${RANKS[5]}" "${RANKS[@]:0:5}" \
  "${RANKS[@]:6}"
grep -q "rank 0 read 0 tables of other processes' reports and asked 0 computations" "$TMP/many.err" &&
  ok "straggler: the late rank's host attributed on MPI rank 0, which holds its report" ||
  bad "straggler, late report on rank 0: $(grep 'rank 0 read' "$TMP/many.err")"
# three late ranks (2, 5, 8) on three processes of four: each process attributes its own late rank's host, all at
# once; rank 0 reads no table of their reports
T3=$TMP/three
mkdir -p "$T3"
for r in 0 1 2 3 4 5 6 7 8 9; do
  role=idlewait; case $r in 2|5|8) role=idle;; esac
  "$NSL_SOURCE_DIR/tests/lua/straggler_rank.sh" "$SRC" "$T3/rank$r.sqlite" 0 500000 $role \
    $(( (r * 37 % 23 - 11) * 1000000 )) 10000 $((r + 1)) &
done
wait
THREE=()
for r in 0 1 2 3 4 5 6 7 8 9; do THREE+=("$T3/rank$r.sqlite"); done
same_as_one "straggler, three late ranks on three processes" 4 run straggler "${THREE[@]}"
check_eq "straggler: the three late ranks named" "$(grep -c 'is a straggler' "$TMP/many.out")" 3
grep -qE "rank 0 read 0 tables of other processes' reports and asked [23] computations" "$TMP/many.err" &&
  ok "straggler: three late ranks' hosts attributed by their processes" ||
  bad "straggler, three late ranks: $(grep 'rank 0 read' "$TMP/many.err")"
copy_ranks gap
GAP=("${COPIES[@]}")
sqlite3 "${GAP[0]}" "INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds),
  'ncclDevKernel_Broadcast(ncclDevKernelArgsStorage<(unsigned long)4096>)');
  UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = (SELECT max(id) FROM StringIds),
    demangledName = (SELECT max(id) FROM StringIds)
  WHERE rowid = (SELECT k.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                 WHERE s.value LIKE 'nccl%' ORDER BY k.start LIMIT 1 OFFSET 15)"
same_as_one "straggler, a collective only rank 0 ran mid-run (the kernels read)" 2 run straggler "${GAP[@]}"
fallback=$(moved "$TMP/many.err")
moves_less "the reduced rows, against reading the kernels" "$reduced" "$fallback"
same_as_one "diagnose (json), a collective only rank 0 ran mid-run" 2 run diagnose "${GAP[@]}" --format json
same_as_one "straggler by process, reduced rows" 2 run straggler "${RANKS[@]}" --arg rank_by=process
# ranks 5 to 9 without their CUDA calls (the table emptied), so that on 4 processes the last one holds none: it
# cannot tell host from queue time as the whole trace does (the others have calls), so rank 0 reads the kernels
# -- the same output as one process, more bytes
copy_ranks noapi
NOAPI=("${COPIES[@]}")
for r in 5 6 7 8 9; do sqlite3 "${NOAPI[$r]}" "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME"; done
same_as_one "straggler, exports without CUDA calls (the kernels read)" 4 run straggler "${NOAPI[@]}"
noapi=$(moved "$TMP/many.err")
same_as_one "straggler, every export with its CUDA calls" 4 run straggler "${RANKS[@]}"
all_api=$(moved "$TMP/many.err")
moves_less "the reduced rows, against the kernels read without CUDA calls on one process" "$all_api" "$noapi"
# diagnose's processes send the CUDA calls it reads and where their GPUs waited for launches, not every call (one
# process here has none); host.idle on every GPU reads each such GPU's report's host tables from its process
same_as_one "diagnose (json), exports without CUDA calls, host.idle on every GPU" 4 run diagnose "${NOAPI[@]}" \
  --format json --arg host_idle=0.0001
grep -q '"host.idle"' "$TMP/many.out" && ok "diagnose: host.idle found on the ranks with CUDA calls" ||
  bad "diagnose: no host.idle finding"

# ---- summary: the kernel and CUDA call summaries aggregated by the processes together (nsl.stats.reduce_aggregates:
# moments added up, each median found by narrowing its range in rounds of counts), no row moved; one kernel
# 2^54 ns long is too large for exact deviations, so those rows go to rank 0 -- the same output, more bytes ----
same_as_one "summary (json), aggregated by the processes together" 3 run summary "${RANKS[@]}" --format json
# (the two runs compared below send their columns as they are in memory: rows against aggregates, not encodings)
export NSL_WIRE_VARINTS=0
same_as_one "kernel summary, aggregated together" 3 run summary "${RANKS[@]}" --arg only=kernels
together=$(moved "$TMP/many.err")
same_as_one "summary per report (csv), aggregated together" 4 run summary "${RANKS[@]}" --arg per_report=true \
  --format csv
copy_ranks big
BIG=("${COPIES[@]}")
sqlite3 "${BIG[3]}" "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + 18014398509481984
  WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
same_as_one "kernel summary (json), a kernel too long for exact deviations (its rows moved)" 3 run summary \
  "${BIG[@]}" --arg only=kernels --format json
rows=$(moved "$TMP/many.err")
unset NSL_WIRE_VARINTS
moves_less "the kernel summary aggregated together, against a quarter of its rows" "$together" "$rows" 4
# the memory operations' summaries too (statistics of the integer durations and sizes in bytes, as nsys takes
# them); a copy 2^54 ns long sends the memory operations' rows instead
export NSL_WIRE_VARINTS=0
same_as_one "memory-operation summaries (json), aggregated together" 3 run summary "${RANKS[@]}" \
  --arg only=mem_time,mem_size --format json
together=$(moved "$TMP/many.err")
same_as_one "memory-operation summaries per report (csv), aggregated together" 4 run summary "${RANKS[@]}" \
  --arg only=mem_time,mem_size --arg per_report=true --format csv
sqlite3 "${BIG[3]}" "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = start + 18014398509481984
  WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)"
same_as_one "memory-operation summaries (json), a copy too long for exact deviations (the rows moved)" 3 \
  run summary "${BIG[@]}" --arg only=mem_time,mem_size --format json
rows=$(moved "$TMP/many.err")
unset NSL_WIRE_VARINTS
moves_less "the memory-operation summaries aggregated together, against a quarter of their rows" "$together" "$rows" 4

# ---- the straggler's step detection, run by every process over its reports (nsl.iterations.reduce_steps) ----
# One 'train_step' NVTX range per 4 collectives on each export's launching thread (tests/lua/plant_steps.sh):
# the step the straggler's costs are per is the training step, found from the processes' steady steps and
# agreed names; rank 0 no longer reads every report's NVTX ranges and kernels for it.
copy_ranks steps
STEPS=("${COPIES[@]}")
for f in "${STEPS[@]}"; do "$NSL_SOURCE_DIR/tests/lua/plant_steps.sh" "$f"; done
for np in $NPS; do
  same_as_one "straggler with training steps" $np run straggler "${STEPS[@]}" --format json
done
grep -q '"step_source": *"iterations"' "$TMP/many.out" && ok "the step is the training step (step_source iterations)" ||
  bad "the training step was not found: $(grep -o '"step_source": *"[a-z]*"' "$TMP/many.out")"
with_steps=$(moved "$TMP/many.err")
# diagnose hands the straggler its own steps, which its processes detect together with the windows its ledger
# splits (the straggler's collective detection does not run under it); they also say whether their reports hold
# compile ranges and measure their spans, so that rank 0 reads no report's NVTX ranges for any of these: under
# half the bytes of a run whose step range is named (--arg iteration), where rank 0 reads every report's ranges
same_as_one "diagnose with training steps (json)" 2 run diagnose "${STEPS[@]}" --format json
grep -q '"ledger_steps"' "$TMP/many.out" && ok "diagnose: the ledger is split by the steps the processes found" ||
  bad "diagnose: no ledger_steps table"
# host.sync_per_step from the processes' sums per step (ct_steps), not from the calls
grep -q '"host.sync_per_step"' "$TMP/many.out" && ok "diagnose: host.sync_per_step from the sums per step" ||
  bad "diagnose: no host.sync_per_step finding"
detected=$(moved "$TMP/many.err")
same_as_one "diagnose with its step range named (json)" 2 run diagnose "${STEPS[@]}" --format json \
  --arg iteration=train_step
# (a named range: the processes find its ranges, and the default detection's steps for the straggler, together)
if grep 'nsl: mpi: gathered (bytes):' "$TMP/many.err" | grep -qE '(: |, )(ops|launch_waits) [0-9]'; then
  bad "diagnose with a named step range: $(grep 'nsl: mpi: gathered' "$TMP/many.err")"
else ok "diagnose with a named step range: no GPU operation rows gathered"; fi
moves_less "diagnose with a named step range: about the bytes of the detected steps" "$(moved "$TMP/many.err")" \
  $((detected * 2))
same_as_one "diagnose with a step range named by a pattern (json)" 2 run diagnose "${STEPS[@]}" --format json \
  --arg 'iteration=train_st.p'
grep -q "matching 'train_st.p' (by pattern)" "$TMP/many.out" && ok "diagnose: the pattern's ranges are the steps" ||
  bad "diagnose: the pattern's ranges are not the steps: $(grep -o '"steps[^,]*' "$TMP/many.out" | head -2)"
for a in diagnose ledger; do
  same_as_one "$a with a step range no report has" 3 run $a "${STEPS[@]}" --arg iteration=nosuch
  check_eq "$a with a step range no report has: the one-process error line" \
    "$(grep '^nsl:' "$TMP/many.err" | grep -v 'nsl: mpi:')" "$(grep '^nsl:' "$TMP/one.err")"
done
# the ledger's processes build the rows of their own GPUs, steps included, with the waits inside collectives
# from rank 0's matching of one row per collective: rank 0 receives ledger rows, not events -- against the
# same ledger with its step range named, which rank 0 builds over every report's events (as without a form)
for np in $NPS; do
  same_as_one "ledger with training steps" $np run ledger "${STEPS[@]}"; form_was ledger distributed
  if [ "$np" = 2 ]; then reduced=$(moved "$TMP/many.err"); fi
done
[ "$(awk '$4 ~ /^[0-9]+$/ && $4 > 0' "$TMP/many.out" | wc -l)" -gt 10 ] &&
  ok "ledger: rows per training step from the processes" || bad "ledger: no step rows: $(head -5 "$TMP/many.out")"
# (column 9: comm_wait, which only rank 0's matching of every rank's collectives can give)
[ "$(awk '$4 == "0" && $9 ~ /^[0-9,]+$/ && $9 != "0"' "$TMP/many.out" | wc -l)" -ge 9 ] &&
  ok "ledger: the waits inside collectives reach the processes (comm_wait of the waiting ranks)" ||
  bad "ledger: no comm_wait: $(head -8 "$TMP/many.out")"
same_as_one "ledger with its step range named" 2 run ledger "${STEPS[@]}" --arg iteration=train_step
grep 'nsl: mpi: gathered (bytes):' "$TMP/many.err" | grep -qE '(: |, )ledger [0-9]' &&
  ok "ledger with a named step range: the processes built the rows" ||
  bad "ledger with a named step range: $(grep 'nsl: mpi: gathered' "$TMP/many.err")"
# against a run that reads the events: timeline without a window (no distributed form), whose processes send the
# GPU operations and NVTX ranges
same_as_one "timeline over the same exports (read by rank 0)" 2 run timeline "${STEPS[@]}"
form_was timeline gathered
events=$(moved "$TMP/many.err")
moves_less "ledger: rows built by the processes, against nvtx's events" "$reduced" "$events" 100
# nvtx's own form on them: a report without NVTX ranges (or without any event) in a share, a share without any
same_as_one "nvtx, reports without ranges" 3 run nvtx "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" "${STEPS[@]:0:3}" \
  "$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite"
form_was nvtx distributed
same_as_one "nvtx, one share without ranges" 2 run nvtx "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" "${STEPS[@]:0:1}" \
  --arg only=sum,tree
# the projection trace: the processes' projected ranges, a row each (every row here: CSV), their range and parent
# numbered as in the whole trace
same_as_one "nvtx's projection trace (csv)" 3 run nvtx "${STEPS[@]}" "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" \
  --arg only=trace --format csv
form_was nvtx distributed
[ "$(grep -c '^[^#]' "$TMP/many.out")" -gt 1000 ] && ok "nvtx's projection trace: every projected range" ||
  bad "nvtx's projection trace: $(grep -c '^[^#]' "$TMP/many.out") lines"
same_as_one "nvtx, no report with ranges (the one-process error)" 2 run nvtx "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" \
  "$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite"
# flamegraph's sources over reports that have some and not others: CPU samples, CUDA call stacks (a report
# without them counts its launches as "[no call stack]"), NVTX ranges (a report without them: all its GPU time
# outside every range); nsys-jax archives are left to rank 0
D=$NSL_DATA_DIR/nsys
same_as_one "flamegraph, every source in some reports (--out)" 3 run flamegraph "$D/cuda_sampling_2021.sqlite" \
  "$D/osrt_sampling_2025.5.sqlite" "$D/nvfuser_2024.6.sqlite" "$D/cuda_2021.2.sqlite" --out @OUT@
form_was flamegraph distributed
same_as_one "flamegraph, call stacks in one report of two (json)" 2 run flamegraph "$D/pytorch_h100_2gpu_2026.2.sqlite" \
  "$D/mpi_cuda_rank0_2022.2.sqlite" --format json
same_as_one "flamegraph, NVTX by CPU time, shares without ranges" 4 run flamegraph "$D/cuda_2021.2.sqlite" \
  "$D/tiny_2026.1.sqlite" "${STEPS[@]:0:3}" --arg source=nvtx --arg weight=cpu
same_as_one "flamegraph of nsys-jax archives (read by rank 0)" 2 run flamegraph \
  "$NSL_DATA_DIR"/nsys-jax/pax_fsdp4_4proc_proc0.zip "$NSL_DATA_DIR"/nsys-jax/pax_fsdp4_4proc_proc1.zip
# heap: each process replays its own devices' memory events (planted by SQL in copies of the export whose real
# schema has the table, empty: sizes, frees, ties in time), sends a row per device and the allocations live at the
# peak and never freed; the allocation calls' summary aggregated together
for k in 1 2 3; do
  cp "$D/mpi_cuda_rank0_2022.2.sqlite" "$TMP/heap$k.sqlite"
  sqlite3 "$TMP/heap$k.sqlite" "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 300)
    INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind,
                                              memoryOperationType, name, correlationId)
    SELECT (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL) + (i / 2) * 1000 * $k,
           (SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1), i % 2,
           (SELECT contextId FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1), 140737488355328 + ((i * $k) % 40) * 1048576, 0,
           ((i * 37 * $k) % 64 + 1) * 4096, 2, CASE WHEN i % 3 = 0 THEN 1 ELSE 0 END, NULL, 100000 + i FROM seq"
done
HEAPS=("$TMP/heap1.sqlite" "$D/cuda_2021.2.sqlite" "$TMP/heap2.sqlite" "$TMP/heap3.sqlite")
same_as_one "heap with memory events" 3 run heap "${HEAPS[@]}"; form_was heap distributed
read_none "heap: devices replayed by their processes, no table of another process read"
[ "$(grep -c 'device [01]: peak' "$TMP/many.out")" = 6 ] && ok "heap: a peak for each of the 6 devices" ||
  bad "heap: $(grep -c 'device [01]: peak' "$TMP/many.out") device peaks"
same_as_one "heap with memory events (json)" 2 run heap "${HEAPS[@]}" --format json
# with figures (every event's live bytes) rank 0 reads the events, and of the CUDA calls the allocation calls alone
same_as_one "heap --out (read by rank 0, filtered)" 2 run heap "${HEAPS[@]}" --out @OUT@
on=$(moved "$TMP/many.err")
NSL_MPI_FILTERS=0 same_as_one "heap --out, filters off" 2 run heap "${HEAPS[@]}" --out @OUT@
moves_less "heap --out: the allocation calls alone against every call" "$on" "$(moved "$TMP/many.err")"
# launch over every shared export (kernels without a launching call, reports without kernels or CUDA calls), and
# shares without either
same_as_one "launch over every shared export, per report" 3 run launch "$D"/*.sqlite --arg per_report=true
form_was launch distributed
# over every shared export most names are one export's: a name with more than 64 values all in one process has
# its median and percentiles taken there (no rounds), the others' found together
same_as_one "summary over every shared export (json)" 3 run summary "$D"/*.sqlite --format json
same_as_one "launch over every shared export" 2 run launch "$D"/*.sqlite "${RANKS[@]:0:2}"
same_as_one "launch, shares without kernels or CUDA calls" 4 run launch "$D/tiny_2026.1.sqlite" "$D/cuda_2021.2.sqlite" \
  "${STEPS[@]:0:2}" --arg n=0
# overlap: each process measures its own devices and their iterations' windows (a row per device, and per device
# and iteration), also where only some reports have the range, and --out's figure; a range none has: the
# one-process error
same_as_one "overlap per iteration (json)" 3 run overlap "${STEPS[@]}" --arg iteration=train_step --format json
form_was overlap distributed
grep -q '"overlap_by_iteration"' "$TMP/many.out" && ok "overlap: the iterations measured by the processes" ||
  bad "overlap: no overlap_by_iteration table"
moves_less "overlap per iteration: rows per device and iteration, against nvtx's events" "$(moved "$TMP/many.err")" \
  "$events" 100
same_as_one "overlap, the range in some reports only" 4 run overlap "${STEPS[@]:0:5}" "${RANKS[@]:5}" \
  --arg iteration=train_step --out @OUT@
same_as_one "overlap, a range no report has" 2 run overlap "${RANKS[@]}" --arg iteration=nope
cp "$SRC" "$TMP/noops.sqlite"
sqlite3 "$TMP/noops.sqlite" "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY;
  DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;"
same_as_one "overlap, the range only in a report without GPU work" 2 run overlap "$TMP/noops.sqlite" \
  "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" --arg iteration=record_param_comms
# classes per iteration is left to rank 0 (the operations read), as is a map that does not load (its error)
same_as_one "classes per iteration (read by rank 0)" 3 run classes "${STEPS[@]}" --arg iteration=train_step
same_as_one "classes, a map that does not load" 2 run classes "${RANKS[@]}" --arg map="$TMP/absent.json"
# marker-kernel steps, per report (three exports of three nsys versions, each with its own marker kernel)
MARKERS=("$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$NSL_DATA_DIR/nsys/pytorch_h100_2gpu_2026.2.sqlite"
         "$NSL_DATA_DIR/nsys/mpi_cuda_rank0_2022.2.sqlite")
same_as_one "diagnose with marker-kernel steps (json)" 2 run diagnose "${MARKERS[@]}" --format json
grep -q '"ledger_steps"' "$TMP/many.out" && ok "diagnose: the ledger is split by the marker kernels' steps" ||
  bad "diagnose: no ledger_steps table (marker kernels)"
same_as_one "ledger with marker-kernel steps" 2 run ledger "${MARKERS[@]}"; form_was ledger distributed
# iterations: the processes find the steps together and measure their own (one row per iteration, and per
# iteration and kernel class); rank 0 reads no operation, but for a figure's window
for np in $NPS; do
  same_as_one "iterations with training steps" $np run iterations "${STEPS[@]}"; form_was iterations distributed
  if [ "$np" = 2 ]; then measured=$(moved "$TMP/many.err"); fi
done
moves_less "iterations: the processes' rows, against nvtx's events" "$measured" "$events" 100
same_as_one "iterations, its step range named (json)" 2 run iterations "${STEPS[@]}" --arg range=train_step \
  --format json
same_as_one "iterations with marker-kernel steps (json)" 2 run iterations "${MARKERS[@]}" --format json
form_was iterations distributed
same_as_one "iterations --out (tables, figures)" 3 run iterations "${STEPS[@]}" --out @OUT@
same_as_one "straggler without training steps" 2 run straggler "${RANKS[@]}"
if [ -n "$with_steps" ] && [ "$with_steps" -lt 2000000 ]; then
  ok "the step detection moved no ranges to rank 0 ($with_steps bytes in all)"
else bad "the step detection moved $with_steps bytes"; fi

# ---- the cluster workflow: srun nsl profile -o run_%q{SLURM_PROCID}.zip per rank
# (srun sets SLURM_PROCID in each task; tests/e2e/fake_nsys.sh plays nsys and
# hands out a rank's export) -> nsl combine -> mpirun nsl run straggler ----
W=$TMP/cluster
mkdir -p "$W"
for r in 0 1 2 3 4 5; do
  (cd "$W" && SLURM_PROCID=$r FAKE_NSYS_EXPORT=${RANKS[$r]} "$NSL" profile --nsys "$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh" \
     --condition 'SLURM_PROCID < 8' -o 'run_%q{SLURM_PROCID}.zip' -- true > /dev/null 2>&1) ||
    bad "profile of rank $r failed"
done
ls "$W"/run_?.zip > /dev/null 2>&1 && [ "$(ls "$W" | grep -c '^run_[0-5]\.zip$')" = 6 ] &&
  ok "profile -o run_%q{SLURM_PROCID}.zip wrote one bundle per rank" || bad "per-rank bundles: $(ls "$W")"
"$NSL" combine "$W"/run_*.zip -o "$W/job.zip" > "$TMP/comb.out" 2>&1 && ok "combine of the per-rank bundles" ||
  bad "combine: $(head -3 "$TMP/comb.out")"
for r in 0 5; do   # each rank's export is in the combined bundle, byte for byte
  got=$(unzip -Z1 "$W/job.zip" | grep '^reports/' | while read -r m; do unzip -p "$W/job.zip" "$m" | sha256sum; done |
        grep -c "$(sha256sum < "${RANKS[$r]}" | cut -d' ' -f1)")
  check_eq "rank $r's export is in the combined bundle" "$got" 1
done
same_as_one "straggler on the combined bundle" 4 run straggler "$W/job.zip"; form_was "combined bundle" distributed
grep -q "is a straggler" "$TMP/many.out" && ok "the planted straggler is found in the combined bundle" ||
  bad "no straggler found in the combined bundle: $(head -3 "$TMP/many.out")"

# ---- edge shares ----
same_as_one "one report on 3 processes" 3 run summary "${RANKS[0]}"
same_as_one "more processes than reports (empty shares)" 4 run straggler "${RANKS[@]:0:2}"
same_as_one "nsys-jax archives (read by rank 0)" 2 run straggler "$NSL_DATA_DIR"/nsys-jax/pax_fsdp4_4proc_proc0.zip \
  "$NSL_DATA_DIR"/nsys-jax/pax_fsdp4_4proc_proc1.zip

# ---- a process that cannot read its share fails the run, naming file and rank ----
head -c 200000 "${RANKS[7]}" > "$TMP/cut.sqlite"
BADSET=("${RANKS[@]:0:7}" "$TMP/cut.sqlite")
for a in summary nvtx timeline; do   # (two distributed forms, one gathered)
  mpi 4 run $a "${BADSET[@]}" > "$TMP/bad.out" 2> "$TMP/bad.err"
  rc=$?
  lines=$(grep -c '^nsl:' "$TMP/bad.err")
  if [ $rc -ne 1 ]; then bad "$a, rank 3's share unreadable: exit $rc, expected 1"
  elif [ "$lines" -ne 1 ]; then bad "$a, rank 3's share unreadable: $lines nsl lines: $(grep '^nsl:' "$TMP/bad.err")"
  elif ! grep -q "^nsl: MPI rank 3: .*cut.sqlite" "$TMP/bad.err"; then
    bad "$a, rank 3's share unreadable: $(grep '^nsl:' "$TMP/bad.err")"
  elif [ -s "$TMP/bad.out" ]; then bad "$a, rank 3's share unreadable: printed $(head -2 "$TMP/bad.out")"
  else ok "$a: an unreadable share fails the run with one line naming the file and MPI rank 3, exit 1"; fi
done
# a missing file: the same, not a hang
mpi 2 run straggler "${RANKS[0]}" "$TMP/absent.sqlite" > /dev/null 2> "$TMP/bad.err"
rc=$?
[ $rc -eq 1 ] && grep -q "^nsl: MPI rank 1: .*absent.sqlite" "$TMP/bad.err" &&
  ok "a missing file on rank 1 fails the run (exit 1)" || bad "missing file: exit $rc: $(cat "$TMP/bad.err" | head -3)"
# a step that fails on one process only: the others do not wait for it
cat > "$TMP/failing_step.lua" <<'EOF'
local nsl = require("nsl")
return {name = "failing_step", run = function(_, _, out) out:text("one process") end,
  distributed = {
    step = function(trace)
      for _, p in ipairs(trace.reports.path:totable()) do
        if p:match("rank3%.sqlite$") then nsl.fail(p .. ": this report cannot be used") end
      end
      return {n = nsl.table{{"reports", {#trace.reports}}}}
    end,
    combine = function(_, parts, _, out) out:text("combined " .. parts.n.reports:sum()) end}}
EOF
mpi 4 run "$TMP/failing_step.lua" "${RANKS[@]}" > "$TMP/bad.out" 2> "$TMP/bad.err"
rc=$?
[ $rc -eq 1 ] && [ "$(grep -c '^nsl:' "$TMP/bad.err")" = 1 ] &&
  grep -q "^nsl: MPI rank 1: .*rank3.sqlite: this report cannot be used" "$TMP/bad.err" &&
  ok "a step failing on MPI rank 1 only fails the run with one line naming the rank" ||
  bad "failing step: exit $rc: $(grep '^nsl' "$TMP/bad.err")"
mpi 4 run "$TMP/failing_step.lua" "${RANKS[@]:4}" > "$TMP/good.out" 2> /dev/null
check_eq "an own script's distributed form: the steps' tables reach combine" "$(cat "$TMP/good.out")" "combined 6"
# a computation rank 0 asks of the process holding a report (nsl.distributed.call): its answer, the report's own;
# on one process there is no such process (nil); a computation that fails there fails the run with one line
# naming the MPI rank, not a hang
cat > "$TMP/remote.lua" <<'EOF'
local nsl = require("nsl")
local distributed = require("nsl.distributed")
distributed.remote["test.kernels"] = function(trace, t)
  return nsl.table{{"kernels", nsl.rep(#trace.kernels, 1)}, {"reports", nsl.rep(#trace.reports, 1)},
                   {"asked", nsl.rep(t.x:sum(), 1)}}
end
distributed.remote["test.fails"] = function() nsl.fail("this computation cannot be made") end
return {name = "remote", args = {report = {default = 0}, fail = {default = false}},
  run = function(trace, args, out)
    local t = nsl.table{{"x", nsl.column{20, 22}}}
    local got = distributed.call(trace, {args.report, 1}, args.fail and "test.fails" or "test.kernels", {t, t})
    got = got and got[1]
    out:text(got and string.format("kernels %d, reports %d, asked %d", got.kernels[1], got.reports[1], got.asked[1])
             or "one process")
  end}
EOF
check_eq "a computation on a report, on one process" "$("$NSL" run "$TMP/remote.lua" "${RANKS[@]:0:4}" 2>&1)" \
  "one process"
for rep in 3 0; do   # (report 3 on MPI rank 1 of 2, beside report 1 on rank 0; report 0 on rank 0 itself)
  check_eq "a computation on report $rep asked of the process holding it: the report's own answer (SQL's count)" \
    "$(mpi 2 run "$TMP/remote.lua" "${RANKS[@]:0:4}" --arg report=$rep 2> /dev/null)" \
    "kernels $(sqlite3 "${RANKS[$rep]}" 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL'), reports 1, asked 42"
done
mpi 2 run "$TMP/remote.lua" "${RANKS[@]:0:4}" --arg report=3 --arg fail=true > "$TMP/bad.out" 2> "$TMP/bad.err"
rc=$?
[ $rc -eq 1 ] && [ "$(grep -c '^nsl:' "$TMP/bad.err")" = 1 ] &&
  grep -q "^nsl: .*MPI rank 1: test.fails: this computation cannot be made" "$TMP/bad.err" &&
  ok "a computation failing in the process holding the report fails the run with one line naming it, exit 1" ||
  bad "failing computation: exit $rc: $(head -3 "$TMP/bad.err")"
# rows sent to the processes that own them (nsl.mpi.exchange_rows): every row arrives once, at the process its
# destination names, the senders in rank order; a string's owner (nsl.mpi.owners) is the same on every process,
# whatever its dictionary holds; a process with nothing to send still takes part
cat > "$TMP/exchange.lua" <<'EOF'
local nsl = require("nsl")
local function rows_of(me) return me == 1 and 0 or 1000 + 37 * me end   -- (MPI rank 1 sends nothing)
return {name = "exchange", description = "rows exchanged between the processes", args = {},
  distributed = {
    step = function() return {} end,
    collective = function()
      local P, me = nsl.mpi.start()
      local n = rows_of(me)
      local to = {}
      for k = 0, n - 1 do to[k + 1] = (k * 7 + me) % P end
      local t = nsl.table{{"src", nsl.rep(me, n)}, {"i", nsl.range(n)}, {"to", n > 0 and nsl.column(to) or nsl.rep(0, 0)}}
      local got = assert(nsl.mpi.exchange_rows(t, t.to))
      local ok = #got == 0 or got.to:eq(me):count() == #got
      if #got >= 2 then   -- the senders in rank order
        ok = ok and (got.src:gather(nsl.range(#got - 1) + 1) - got.src:gather(nsl.range(#got - 1))):min() >= 0
      end
      -- (names in another order on every other process: their dictionaries number them differently)
      local names = {"alpha", "beta", "gamma", "delta", "ncclKernel_AllReduce", "sm90_xmma_gemm"}
      if me % 2 == 1 then
        for k = 1, #names // 2 do names[k], names[#names + 1 - k] = names[#names + 1 - k], names[k] end
      end
      local keys = nsl.column(names)
      return {x = nsl.table{{"got", nsl.rep(#got, 1)}, {"ok", nsl.rep(ok and 1 or 0, 1)},
                            {"sum", nsl.rep(#got > 0 and got.i:sum() or 0, 1)}},
              owners = nsl.table{{"name", keys}, {"owner", nsl.mpi.owners(keys)}}:sort("name")}
    end},
  run = function(trace, args, out, parts)
    if not parts then return out:text("one process") end
    local x, o = parts.x, parts.owners
    local want, want_sum = 0, 0
    for me = 0, #x - 1 do
      local n = rows_of(me)
      want, want_sum = want + n, want_sum + n * (n - 1) // 2
    end
    local same, per = true, #o // #x   -- every process's owners, one block per process: all alike
    for k = 1, #x - 1 do
      for j = 1, per do same = same and o.owner[k * per + j] == o.owner[j] and o.name[k * per + j] == o.name[j] end
    end
    out:text(string.format("rows %d of %d, sum %s, in place %s, owners agree %s", x.got:sum(), want,
                           tostring(x.sum:sum() == want_sum), tostring(x.ok:min() == 1), tostring(same)))
  end}
EOF
check_eq "an exchange on one process: no distributed form runs" "$("$NSL" run "$TMP/exchange.lua" "${RANKS[0]}" 2>&1)" \
  "one process"
for np in 3 4; do
  want=$(( np == 3 ? 2074 : 3185 ))
  check_eq "rows exchanged between $np processes: each row once, where its destination says" \
    "$(mpi $np run "$TMP/exchange.lua" "${RANKS[@]:0:4}" 2> "$TMP/x.err")" \
    "rows $want of $want, sum true, in place true, owners agree true"
done

# a usage error is said once, not by every process
mpi 3 run summary "${RANKS[@]}" --arg nope=1 > /dev/null 2> "$TMP/bad.err"
rc=$?
check_eq "a usage error on 3 processes: exit 2, one line" "$rc $(grep -c '^nsl:' "$TMP/bad.err")" "2 1"

finish
