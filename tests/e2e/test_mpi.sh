#!/usr/bin/env bash
# Distributed runs, every analysis's distributed form: `mpirun -np P nsl run
# NAME TRACE...` over per-rank exports (tests/e2e/mpi_lib.sh makes them).
# Oracles: the one-process run of the same command (byte for byte: stdout,
# exit code, --out files), as the design makes it the oracle of distributed
# runs, and SQL through sqlite3 on the exports for the numbers the tables sum;
# declared row filters move fewer bytes and change nothing.  Bundles, the
# cluster workflow, edge shares and failures: test_mpi_shares.sh.  Skipped
# when nsl was built without MPI or mpirun is missing.
. "$(dirname "$0")/mpi_lib.sh"

# ---- every analysis with a distributed form, and one without ----
for np in $NPS; do
  same_as_one "summary" $np run summary "${RANKS[@]}"; form_was summary distributed
  same_as_one "summary per report (csv)" $np run summary "${RANKS[@]}" --arg per_report=true --format csv
  same_as_one "nccl" $np run nccl "${RANKS[@]}" --arg per_report=true; form_was nccl distributed
  same_as_one "info" $np info "${RANKS[@]}"; form_was info distributed
  same_as_one "straggler" $np run straggler "${RANKS[@]}"; form_was straggler distributed
  same_as_one "compare" $np run compare "${RANKS[@]}" --arg runs=1+2+3+4+5,6+7+8+9+10
  form_was compare distributed
  # its processes send sums, a row per device and the per-name statistics made where each name's durations went
  # (nsl.mpi.exchange_rows), never the operations', copies' or NVTX ranges' rows
  gathered=$(grep 'nsl: mpi: gathered (bytes):' "$TMP/many.err")
  if [ -n "$gathered" ] && ! grep -qE '(: |, )(ops|memcpy|nvtx|cmp_dist_rows) [0-9]' <<< "$gathered" &&
     grep -q 'cmp_kernels [0-9]' <<< "$gathered" && grep -q 'cmp_dev [0-9]' <<< "$gathered" &&
     grep -q 'cmp_dist [0-9]' <<< "$gathered"; then
    ok "compare on $np: sums, devices and per-name statistics gathered, no operation or range rows"
  else bad "compare on $np gathered: ${gathered:-no statistics line}"; fi
  read_none "compare on $np: rank 0 reads none of the other processes' tables"
  same_as_one "compare (json): every report a run, the third the base, short names" $np run compare "${RANKS[@]}" \
    --arg runs=report --arg base=3 --arg names=short --format json
  same_as_one "diagnose (json)" $np run diagnose "${RANKS[@]}" --format json; form_was diagnose distributed
  # its processes send per-GPU tables (gt_*), the blocking calls' tables (ct_*) and their GPUs' ledger rows, never
  # the GPU operations', CUDA calls' or memory operations' rows
  gathered=$(grep 'nsl: mpi: gathered (bytes):' "$TMP/many.err")
  if [ -n "$gathered" ] && ! grep -qE '(: |, )(ops|launch_waits|api|memcpy|memset) [0-9]' <<< "$gathered" &&
     grep -q 'gt_dv [0-9]' <<< "$gathered" && grep -q 'diag_ledger [0-9]' <<< "$gathered" &&
     grep -q 'ct_api_sync_top [0-9]' <<< "$gathered" && grep -q 'ct_steps [0-9]' <<< "$gathered"; then
    ok "diagnose on $np: per-GPU, blocking-call and ledger tables gathered, no operation or call rows"
  else bad "diagnose on $np gathered: ${gathered:-no statistics line}"; fi
  same_as_one "ledger" $np run ledger "${RANKS[@]}"; form_was ledger distributed
  same_as_one "overlap" $np run overlap "${RANKS[@]}"; form_was overlap distributed
  same_as_one "gaps" $np run gaps "${RANKS[@]}"; form_was gaps distributed
  same_as_one "gaps, every gap of every stream (csv)" $np run gaps "${RANKS[@]}" --arg scope=stream --arg n=0 \
    --arg per_report=true --format csv
  read_none "gaps on $np: rank 0 reads none of the other processes' tables"
  same_as_one "classes" $np run classes "${RANKS[@]}"; form_was classes distributed
  same_as_one "classes per report, demangled names (json)" $np run classes "${RANKS[@]}" --arg per_report=true \
    --arg names=demangled --format json
  read_none "classes on $np: the class summary aggregated together, no table of another process read"
  # nvtx: each process projects its own ranges; the summaries aggregated together (names that are nearly one per
  # range here: PyTorch's op_id suffixes, medians of at most 64 values taken by rank 0 from the values), the tree's
  # figures per node added up on rank 0
  same_as_one "nvtx" $np run nvtx "${RANKS[@]}"; form_was nvtx distributed
  read_none "nvtx on $np: summaries and tree from the processes, no table of another process read"
  same_as_one "nvtx per report, the tree two levels deep (json)" $np run nvtx "${RANKS[@]}" --arg per_report=true \
    --arg max_depth=1 --arg normalize=false --format json
  # flamegraph: each process sums its stacks' weights per path (the NVTX tree's nodes, CPU self time included),
  # rank 0 adds them up and folds them
  same_as_one "flamegraph" $np run flamegraph "${RANKS[@]}"; form_was flamegraph distributed
  same_as_one "flamegraph by CPU time, raw names (json)" $np run flamegraph "${RANKS[@]}" --arg weight=cpu \
    --arg raw_names=true --format json
  read_none "flamegraph on $np: the processes' sums per path, no table of another process read"
  # launch: each process finds its own launches; the distributions (percentiles included) aggregated together
  # (per stream and per report: each group aggregated where its report is), each process's slowest launches
  same_as_one "launch" $np run launch "${RANKS[@]}"; form_was launch distributed
  same_as_one "launch per report, queues per stream, short names (json)" $np run launch "${RANKS[@]}" \
    --arg per_report=true --arg queue=stream --arg base=true --arg n=3 --format json
  read_none "launch on $np: distributions and slowest launches from the processes, no table of another process read"
  same_as_one "timeline (no distributed form)" $np run timeline "${RANKS[@]}"; form_was timeline gathered
done
same_as_one "straggler --out (tables, figures)" 3 run straggler "${RANKS[@]}" --out @OUT@
same_as_one "summary --out" 3 run summary "${RANKS[@]}" --out @OUT@
same_as_one "launch --out (its figure draws every launch: the kernels read)" 3 run launch "${RANKS[@]}" --out @OUT@
same_as_one "gaps --out (its figure draws every gap: the operations read)" 3 run gaps "${RANKS[@]}" --out @OUT@
same_as_one "ledger --out (tables, figure)" 3 run ledger "${RANKS[@]}" --out @OUT@
same_as_one "compare --out (its figures draw every kernel: the operations read)" 3 run compare "${RANKS[@]}" \
  --arg runs=1+2+3+4+5,6+7+8+9+10 --out @OUT@
same_as_one "straggler finds rank5" 4 run straggler "${RANKS[@]}" --fail-on warning
grep -q "rank5:gpu0 is a straggler" "$TMP/many.out" && ok "the planted straggler is named" ||
  bad "the planted straggler is not named: $(head -3 "$TMP/many.out")"

# ---- the numbers against SQL on the exports ----
NSL_MPI_STATS=0 mpi 4 run summary "${RANKS[@]}" --arg only=kernels --format csv > "$TMP/sum.csv" 2> "$TMP/sum.err"
grep -q "nsl: mpi:" "$TMP/sum.err" && bad "NSL_MPI_STATS=0 printed the statistics" ||
  ok "NSL_MPI_STATS=0 turns the statistics off"
want=0; nccl_want=0
for f in "${RANKS[@]}"; do
  want=$((want + $(sql "$f" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")))
  nccl_want=$((nccl_want + $(sql "$f" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
                                        ON s.id = k.shortName WHERE s.value LIKE 'nccl%'")))
done
got=$(awk -F, 'NR > 1 { n += $3 } END { print n }' "$TMP/sum.csv")
check_eq "summary on 4 processes: kernel instances = SQL count over the 10 exports" "$got" "$want"
mpi 2 run nccl "${RANKS[@]}" --format csv > "$TMP/nccl.csv"
got=$(awk -F, '/^Collective,/ { t = 1; next } t && NF == 0 { t = 0 } t && $0 !~ /^$/ { n += $5 } END { print n }' \
      "$TMP/nccl.csv")
check_eq "nccl on 2 processes: NCCL kernel instances = SQL count" "$got" "$nccl_want"
mpi 4 info "${RANKS[@]}" --format csv > "$TMP/info.csv"
got=$(grep -E '^kernels,' "$TMP/info.csv" | cut -d, -f2)
check_eq "info on 4 processes: kernel rows = SQL count" "$got" "$want"

# ---- declared row filters (gather = ...): rank 0 receives only the rows the analysis keeps ----
# filtered WHAT NP ARGS... -- the run is the one-process run byte for byte with filters on and with
# NSL_MPI_FILTERS=0, in the gathered form, and moves fewer bytes with filters on
filtered() {
  local what=$1 np=$2
  shift 2
  same_as_one "$what, filters on" "$np" "$@"; form_was "$what" gathered
  cp "$TMP/many.err" "$TMP/on.err"
  NSL_MPI_FILTERS=0 same_as_one "$what, filters off (NSL_MPI_FILTERS=0)" "$np" "$@"
  local on off
  on=$(moved "$TMP/on.err"); off=$(moved "$TMP/many.err")
  moves_less "$what on $np, with filters against without" "$on" "$off"
}
for np in $NPS; do
  filtered "timeline of a window" $np run timeline "${RANKS[@]}" --arg from=100ms --arg to=150ms --out @OUT@
  filtered "export of a window" $np run export "${RANKS[@]}" --arg from=100ms --arg to=150ms
  filtered "export of a window, no API, no NVTX" $np run export "${RANKS[@]}" --arg to=20ms --arg api=false \
    --arg nvtx=false --out @OUT@
done
# exports with allocation calls: their summary from the rows kept, as SQL counts them
HEAPS=("$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" "$NSL_DATA_DIR/nsys/mpi_cuda_rank0_2022.2.sqlite"
       "$NSL_DATA_DIR/nsys/nvfuser_2024.6.sqlite")
same_as_one "heap of exports with allocation calls (no memory events)" 3 run heap "${HEAPS[@]}" --format csv
form_was heap distributed
want=0
for f in "${HEAPS[@]}"; do
  want=$((want + $(sql "$f" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                             WHERE s.value LIKE 'cudaMalloc%' OR s.value LIKE 'cudaFree%'")))
done
got=$(awk -F, '/^# Memory allocation API calls/ {h = 1; next} h && NF > 3 && $NF ~ /^cuda(Malloc|Free)/ {n += $3} END {print n + 0}' \
      "$TMP/many.out")
check_eq "heap on 3 processes: allocation calls counted = SQL count" "$got" "$want"
# a window the filters cannot be made for fails as the one-process run does, with its line
same_as_one "export of a window after the end" 2 run export "${RANKS[@]}" --arg from=1s
check_eq "export of a window after the end: the one-process error line" \
  "$(grep '^nsl:' "$TMP/many.err" | grep -v 'nsl: mpi:')" "$(grep '^nsl:' "$TMP/one.err")"
# the whole trace declares no filter: the same bytes either way
same_as_one "export of the whole trace" 2 run export "${RANKS[@]}"
cp "$TMP/many.err" "$TMP/on.err"
NSL_MPI_FILTERS=0 same_as_one "export of the whole trace, filters off" 2 run export "${RANKS[@]}"
check_eq "export of the whole trace: no filter, no span asked, as many bytes moved" "$(moved "$TMP/on.err")" \
  "$(moved "$TMP/many.err")"
# each kind of condition (a regex ignoring case, a set, a comparison) against SQL on the exports
cat > "$TMP/filters.lua" <<'EOF'
return {name = "filters", description = "NCCL kernels on some streams, large copies",
  gather = {where = function()
    return {kernels = {{"name", "imatch", "nccl"}, {"stream", "in", {7, 9}}}, memcpy = {{"bytes", ">=", 1048576}}}
  end},
  run = function(trace, _, out)
    local k, m = trace.kernels, trace.memcpy
    k = k:filter(k.name:regex("nccl", "i") & k.stream:isin{7, 9})
    m = m:filter(m.bytes:ge(1048576))
    out:text(string.format("%d %d %d %d", #k, k.dur:sum() or 0, #m, m.bytes:sum() or 0))
  end}
EOF
want_k=0; want_kd=0; want_m=0; want_mb=0
for f in "${RANKS[@]}"; do
  read -r a b <<< "$(sql "$f" "SELECT count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
                              ON s.id = k.shortName WHERE s.value LIKE '%nccl%' AND k.streamId IN (7, 9)" | tr '|' ' ')"
  want_k=$((want_k + a)); want_kd=$((want_kd + ${b:-0}))
  read -r a b <<< "$(sql "$f" "SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE bytes >= 1048576" |
                     tr '|' ' ')"
  want_m=$((want_m + a)); want_mb=$((want_mb + ${b:-0}))
done
filtered "an own script's regex, set and comparison filters" 4 run "$TMP/filters.lua" "${RANKS[@]}"
check_eq "filtered tables on 4 processes = SQL (NCCL kernels, their time, large copies, their bytes)" \
  "$(cat "$TMP/one.out")" "$want_k $want_kd $want_m $want_mb"

finish
