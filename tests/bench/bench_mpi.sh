#!/usr/bin/env bash
# bench_mpi.sh [NSL] [N...] -- strong and weak scaling of distributed runs
# (`mpirun -np P nsl run straggler|summary`) over per-rank exports derived
# from the real NCCL export (tests/lua/straggler_rank.sh: GPU 0's activity,
# clocks shifted, jitter, one straggler), on demand, never under ctest.
#
# Strong scaling: N reports (default 64 and 256) on P = 1, 2, 4 processes.
# Weak scaling: 16 reports per process.  Every run is one process per MPI
# rank with NSL_THREADS=1 (so P is the parallelism), plus a one-process run
# with the default threads.  Per run: wall time, the time rank 0 spent in MPI
# calls (waiting for the others included) and the bytes it moved
# (NSL_MPI_STATS), and each distributed output compared with the
# one-process output (they must be equal).  The per-rank exports are 16
# distinct ones (seeds 1..16) copied round-robin: a rank's export is about
# 1.5 MB, 7,500 rows (kernels, memcpy, CUDA API, OS runtime, NVTX), TILES
# times that with TILES=N.  ANALYSES="summary" picks analyses; WEAK=0 skips
# weak scaling; NSL_WIRE_VARINTS=0 sends the columns as they are in memory
# (src/core/wire.h), for the bytes the varints save.
#
# Needs mpirun (openmpi-bin); OpenMPI as root needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nsl=$(readlink -f "${1:-$root/build/nsl}")
shift || true
sizes=("${@:-64 256}")
read -r -a sizes <<< "${sizes[*]}"
src=$root/../shared/data/nsys/pytorch_nccl_2gpu_2026.2.sqlite
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=${BENCH_DIR:-$(mktemp -d -t nsl-bench-mpi.XXXXXX)}
mkdir -p "$work/base"
echo "# nsl: $nsl; work: $work; $(nproc) CPUs"

# TILES=N (default 1): the per-rank exports are made from the real export
# tiled N times in time (tests/bench/make_tiled.sh), N times larger each
tiles=${TILES:-1}
if [ "$tiles" -gt 1 ]; then
  [ -f "$work/tiled.sqlite" ] || "$root/tests/bench/make_tiled.sh" "$src" "$tiles" "$work/tiled.sqlite"
  src=$work/tiled.sqlite
fi
# 16 distinct per-rank exports, rank 5 the straggler
for r in $(seq 0 15); do
  [ -f "$work/base/r$r.sqlite" ] && continue
  role=idlewait; [ $r = 5 ] && role=idle
  "$root/tests/lua/straggler_rank.sh" "$src" "$work/base/r$r.sqlite" 0 500000 $role \
    $(( (r * 37 % 23 - 11) * 1000000 )) 10000 $((r + 1)) &
  [ $((r % 2)) = 1 ] && wait
done
wait
# set N: N exports named rank0..rank(N-1), copies of the 16
make_set() {
  local n=$1 d=$work/set$1
  [ -d "$d" ] && return
  mkdir -p "$d"
  for i in $(seq 0 $((n - 1))); do cp "$work/base/r$((i % 16)).sqlite" "$d/rank$i.sqlite"; done
}
now() { date +%s.%N; }
# run LABEL NP ANALYSIS N -- one timed run; prints a row
run() {
  local label=$1 np=$2 a=$3 n=$4 d=$work/set$4 t0 t1 stats
  local files=()
  for i in $(seq 0 $((n - 1))); do files+=("$d/rank$i.sqlite"); done
  t0=$(now)
  if [ "$np" = 0 ]; then   # one process, default threads
    "$nsl" run "$a" "${files[@]}" > "$work/out.$a.$n.ref" 2> /dev/null || true
    stats="-"
  elif [ "$np" = 1 ]; then
    NSL_THREADS=1 "$nsl" run "$a" "${files[@]}" > "$work/out.cur" 2> /dev/null || true
    stats="-"
  else
    NSL_THREADS=1 NSL_MPI_STATS=1 mpirun --oversubscribe -np "$np" \
      "$nsl" run "$a" "${files[@]}" > "$work/out.cur" 2> "$work/err.cur" || true
    stats=$(grep -o 'rank 0: .* moved' "$work/err.cur" | sed 's/rank 0: //; s/ in communication,/ comm,/; s/ bytes moved/ B/')
  fi
  t1=$(now)
  local same=ref
  [ "$np" != 0 ] && { cmp -s "$work/out.cur" "$work/out.$a.$n.ref" && same=equal || same=DIFFERENT; }
  printf '%-7s %-10s %5d %3s %9.2f  %-36s %s\n' "$label" "$a" "$n" "$np" "$(echo "$t1 - $t0" | bc)" "$stats" "$same"
}
printf '%-7s %-10s %5s %3s %9s  %-36s %s\n' scaling analysis N P "wall (s)" "rank 0: MPI time, bytes moved" output
for a in ${ANALYSES:-straggler summary}; do
  for n in "${sizes[@]}"; do
    make_set "$n"
    run strong 0 "$a" "$n"   # reference: one process, default threads (P column 0)
    for np in 1 2 4; do run strong "$np" "$a" "$n"; done
  done
  [ "${WEAK:-1}" = 1 ] || continue
  for np in 1 2 4; do
    n=$((16 * np))
    make_set "$n"
    [ -f "$work/out.$a.$n.ref" ] || run weak 0 "$a" "$n"
    run weak "$np" "$a" "$n"
  done
done
