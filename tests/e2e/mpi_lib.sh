# Sourced by the distributed-run tests (test_mpi.sh, test_mpi_shares.sh): the
# MPI probe and OpenMPI settings, 10 per-rank exports made from the real NCCL
# export (tests/lua/straggler_rank.sh: GPU 0's activity, clocks shifted,
# jitter, rank 5's host stopping after every synchronisation: a straggler),
# and the helpers that compare a run on several processes with the one-process
# run.  Two tests rather than one so that neither comes near ctest's timeout
# on a loaded machine (one test of both halves took 80-106 s in the ASan
# build on an idle 2-core machine and over 300 s at load average 10).
#
# OpenMPI refuses root without OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM); --oversubscribe
# lets 4 processes share 2 cores.  Under AddressSanitizer OpenMPI's own
# libraries keep allocations at exit (LeakSanitizer's reports of an MPI run
# all point into OpenMPI's unloaded components, none into nsl): leak
# detection is off for these tests only (ASAN_OPTIONS detect_leaks=0); every
# other check stays on.
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?NSL_SOURCE_DIR must name the repository}"
SRC=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
[ "${NSL#/}" = "$NSL" ] && NSL=$PWD/$NSL   # the cluster workflow runs nsl from another folder

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
# MPI_Init has hwloc read the machine's topology in every process where it is oversubscribed, PCI names
# included, parsed into a buffer that grows by realloc: under AddressSanitizer each realloc is a copy, and a
# 4-process run on two cores spent 19 of its 20 s there (1.7 s without PCI discovery); nothing here needs it
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--pci}
# processes that wait in MPI give the core back (four share two cores): no busy polling
export OMPI_MCA_mpi_yield_when_idle=1
# The checks of every analysis's distributed form run on 2 and 4 processes; in the ASan build
# (NSL_TEST_SMALL=1, set by CMakeLists.txt) on 2 only, where more processes add start-ups, not
# coverage: the 3- and 4-process runs below (--out, the straggler, bundles, failures) stay.
NPS="2 4"
[ -n "${NSL_TEST_SMALL:-}" ] && NPS="2"
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

# copy_ranks NAME -- copies of the 10 exports in $TMP/NAME (to change by SQL), listed in COPIES as RANKS lists them
copy_ranks() {
  mkdir -p "$TMP/$1" && cp "${RANKS[@]}" "$TMP/$1/"
  COPIES=()
  local f
  for f in "${RANKS[@]}"; do COPIES+=("$TMP/$1/$(basename "$f")"); done
}

# moved FILE -- the bytes moved that the stats line (NSL_MPI_STATS) in FILE reports
moved() { grep -o '[0-9]* bytes moved' "$1" | cut -d' ' -f1; }

# moves_less WHAT FEW MANY [TIMES] -- the run that moved FEW bytes (moved) moved less than 1/TIMES (default 1)
# of MANY, another run's; a run without a stats line (empty) fails
moves_less() {
  local what=$1 few=$2 many=$3 times=${4:-1}
  if [ -n "$few" ] && [ -n "$many" ] && [ $((few * times)) -lt "$many" ]; then
    ok "$what: $few bytes moved, against $many"
  else bad "$what: $few bytes moved, against $many (expected under 1/$times of it)"; fi
}

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
# read_none WHAT -- in the last distributed run rank 0 read no table of another process's reports
read_none() {
  if grep -q "rank 0 read 0 tables of other processes' reports" "$TMP/many.err"; then ok "$1"
  else bad "$1: $(grep 'rank 0 read' "$TMP/many.err")"; fi
}
# form_was WHAT FORM -- the last distributed run used FORM (distributed or gathered)
form_was() {
  if grep -q "nsl: mpi: .* $2 form" "$TMP/many.err"; then ok "$1: the $2 form ran"
  else bad "$1: not the $2 form: $(grep 'nsl: mpi' "$TMP/many.err")"; fi
}

