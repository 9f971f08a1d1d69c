#!/usr/bin/env bash
# Distributed runs: `mpirun -np P nsl run NAME TRACE...` over per-rank exports
# made from the real NCCL export (tests/lua/straggler_rank.sh: GPU 0's
# activity, clocks shifted, jitter, rank 5's host stopping after every
# synchronisation: a straggler).  Oracles: the one-process run of the same
# command (byte for byte: stdout, exit code, --out files), as the design
# makes it the oracle of distributed runs, and SQL through sqlite3 on the
# exports for the numbers the tables sum.  Skipped when nsl was built
# without MPI or mpirun is missing.
#
# OpenMPI refuses root without OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM); --oversubscribe
# lets 4 processes share 2 cores.  Under AddressSanitizer OpenMPI's own
# libraries keep allocations at exit (LeakSanitizer's reports of an MPI run
# all point into OpenMPI's unloaded components, none into nsl): leak
# detection is off for this test only (ASAN_OPTIONS detect_leaks=0); every
# other check stays on.
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?NSL_SOURCE_DIR must name the repository}"
SRC=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
[ "${NSL#/}" = "$NSL" ] && NSL=$PWD/$NSL   # the workflow below runs nsl from another folder

cat > "$TMP/probe.lua" <<'EOF'
return {name = "probe", needs_trace = false,
        run = function(_, _, out) out:text(select(3, require("nsl").mpi.start()) and "mpi" or "serial") end}
EOF
if [ "$("$NSL" run "$TMP/probe.lua")" != mpi ]; then
  echo "skipped: this nsl was built without MPI (cmake -DNSL_MPI=ON needs libopenmpi-dev)"; exit 0
fi
if ! command -v mpirun > /dev/null; then echo "skipped: no mpirun (openmpi-bin)"; exit 0; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# one node: no remote shell is ever started, but OpenMPI wants one named (CI images may have no ssh);
# containers often forbid the cross-process memory copies of shared-memory transfers: plain copies
command -v ssh > /dev/null || export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# mpi NP ARGS... -- nsl ARGS on NP processes (never hangs: a limit of 300 s)
mpi() { local np=$1; shift; timeout 300 mpirun --oversubscribe -np "$np" "$NSL" "$@"; }

# ---- 10 per-rank exports (shares of 5, or of 2 and 3 on 4 processes) ----
R=$TMP/ranks
mkdir -p "$R"
for r in 0 1 2 3 4 5 6 7 8 9; do
  role=idlewait; [ $r = 5 ] && role=idle
  "$NSL_SOURCE_DIR/tests/lua/straggler_rank.sh" "$SRC" "$R/rank$r.sqlite" 0 500000 $role \
    $(( (r * 37 % 23 - 11) * 1000000 )) 10000 $((r + 1)) &
done
wait
RANKS=("$R"/rank0.sqlite "$R"/rank1.sqlite "$R"/rank2.sqlite "$R"/rank3.sqlite "$R"/rank4.sqlite
       "$R"/rank5.sqlite "$R"/rank6.sqlite "$R"/rank7.sqlite "$R"/rank8.sqlite "$R"/rank9.sqlite)

# same_as_one WHAT NP ARGS... -- the run on NP processes prints, exits and
# writes (--out) what one process does; the stats line says which form ran
same_as_one() {
  local what=$1 np=$2
  shift 2
  local args=("$@")
  rm -rf "$TMP/one.d" "$TMP/many.d" "$TMP/out"   # both write to one folder name (results.json names its files)
  "$NSL" "${args[@]/#@OUT@/$TMP/out}" > "$TMP/one.out" 2> "$TMP/one.err"
  local rc1=$?
  [ -d "$TMP/out" ] && mv "$TMP/out" "$TMP/one.d"
  NSL_MPI_STATS=1 mpi "$np" "${args[@]/#@OUT@/$TMP/out}" > "$TMP/many.out" 2> "$TMP/many.err"
  local rcp=$?
  [ -d "$TMP/out" ] && mv "$TMP/out" "$TMP/many.d"
  if grep -q -E 'AddressSanitizer|runtime error|Segmentation' "$TMP/many.err"; then
    bad "$what: crashed: $(head -5 "$TMP/many.err")"; return
  fi
  if [ $rcp -ne $rc1 ]; then bad "$what: exit code $rcp on $np processes, $rc1 on one ($(head -3 "$TMP/many.err"))"; return; fi
  if ! cmp -s "$TMP/one.out" "$TMP/many.out"; then
    bad "$what: output differs: $(diff "$TMP/one.out" "$TMP/many.out" | head -4 | cut -c1-160)"; return
  fi
  if [ -d "$TMP/one.d" ] && ! diff -r "$TMP/one.d" "$TMP/many.d" > /dev/null; then
    bad "$what: --out files differ: $(diff -rq "$TMP/one.d" "$TMP/many.d" | head -3)"; return
  fi
  ok "$what: $np processes print$([ -d "$TMP/one.d" ] && echo " and write") what one does (exit $rc1)"
}
# form_was WHAT FORM -- the last distributed run used FORM (distributed or gathered)
form_was() {
  if grep -q "nsl: mpi: .* $2 form" "$TMP/many.err"; then ok "$1: the $2 form ran"
  else bad "$1: not the $2 form: $(grep 'nsl: mpi' "$TMP/many.err")"; fi
}

# ---- every analysis with a distributed form, and one without ----
for np in 2 4; do
  same_as_one "summary" $np run summary "${RANKS[@]}"; form_was summary distributed
  same_as_one "summary per report (csv)" $np run summary "${RANKS[@]}" --arg per_report=true --format csv
  same_as_one "nccl" $np run nccl "${RANKS[@]}" --arg per_report=true; form_was nccl distributed
  same_as_one "info" $np info "${RANKS[@]}"; form_was info distributed
  same_as_one "straggler" $np run straggler "${RANKS[@]}"; form_was straggler distributed
  same_as_one "compare" $np run compare "${RANKS[@]}" --arg runs=1+2+3+4+5,6+7+8+9+10
  form_was compare distributed
  same_as_one "diagnose (json)" $np run diagnose "${RANKS[@]}" --format json; form_was diagnose distributed
  same_as_one "gaps (no distributed form)" $np run gaps "${RANKS[@]}"; form_was gaps gathered
done
same_as_one "straggler --out (tables, figures)" 3 run straggler "${RANKS[@]}" --out @OUT@
same_as_one "summary --out" 3 run summary "${RANKS[@]}" --out @OUT@
same_as_one "launch --out (no distributed form)" 3 run launch "${RANKS[@]}" --out @OUT@
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
# moved FILE -- the bytes moved that the stats line in FILE reports
moved() { grep -o '[0-9]* bytes moved' "$1" | cut -d' ' -f1; }
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
  if [ -n "$on" ] && [ -n "$off" ] && [ "$on" -lt "$off" ]; then
    ok "$what on $np: $on bytes moved, $off without filters"
  else bad "$what on $np: $on bytes moved with filters, $off without"; fi
}
for np in 2 4; do
  filtered "timeline of a window" $np run timeline "${RANKS[@]}" --arg from=100ms --arg to=150ms --out @OUT@
  filtered "export of a window" $np run export "${RANKS[@]}" --arg from=100ms --arg to=150ms
  filtered "export of a window, no API, no NVTX" $np run export "${RANKS[@]}" --arg to=20ms --arg api=false \
    --arg nvtx=false --out @OUT@
done
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
for a in summary gaps; do
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
# a usage error is said once, not by every process
mpi 3 run summary "${RANKS[@]}" --arg nope=1 > /dev/null 2> "$TMP/bad.err"
rc=$?
check_eq "a usage error on 3 processes: exit 2, one line" "$rc $(grep -c '^nsl:' "$TMP/bad.err")" "2 1"

finish
