#!/usr/bin/env bash
# bench_mpi_filters.sh [NSL] [N] -- what declared row filters save on the
# gathered path of distributed runs: `mpirun -np P nsl run timeline|export`
# with a time window over N per-rank exports (default 32) derived from the
# real NCCL export (tests/lua/straggler_rank.sh), on P = 2 and 4, with the
# filters (default) and without (NSL_MPI_FILTERS=0).  Per run: wall time,
# the time rank 0 spent in MPI calls and the bytes it moved (NSL_MPI_STATS),
# and the output compared with the one-process run (they must be equal).
# On demand, never under ctest.  TILES=K makes each export K times longer
# (tests/bench/make_tiled.sh); WINDOW="--arg from=100ms --arg to=150ms".
#
# Needs mpirun (openmpi-bin); OpenMPI as root needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nsl=$(readlink -f "${1:-$root/build/nsl}")
n=${2:-32}
src=$root/../shared/data/nsys/pytorch_nccl_2gpu_2026.2.sqlite
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=${BENCH_DIR:-$(mktemp -d -t nsl-bench-filters.XXXXXX)}
mkdir -p "$work"
read -r -a window <<< "${WINDOW:---arg from=100ms --arg to=150ms}"
echo "# nsl: $nsl; work: $work; $(nproc) CPUs; $n reports; window: ${window[*]}"
tiles=${TILES:-1}
if [ "$tiles" -gt 1 ]; then
  [ -f "$work/tiled.sqlite" ] || "$root/tests/bench/make_tiled.sh" "$src" "$tiles" "$work/tiled.sqlite"
  src=$work/tiled.sqlite
fi
files=()
for r in $(seq 0 $((n - 1))); do
  files+=("$work/rank$r.sqlite")
  [ -f "$work/rank$r.sqlite" ] && continue
  if [ "$r" -lt 16 ]; then
    "$root/tests/lua/straggler_rank.sh" "$src" "$work/rank$r.sqlite" 0 500000 idlewait \
      $(( (r * 37 % 23 - 11) * 1000000 )) 10000 $((r + 1))
  else cp "$work/rank$((r % 16)).sqlite" "$work/rank$r.sqlite"; fi
done
now() { date +%s.%N; }
printf '%-9s %3s %-8s %9s  %-40s %s\n' analysis P filters "wall (s)" "rank 0: MPI time, bytes moved" output
for a in timeline export; do
  rm -rf "$work/o"
  "$nsl" run "$a" "${files[@]}" "${window[@]}" --out "$work/o" > "$work/ref.out" 2> /dev/null
  rm -rf "$work/ref.d"; mv "$work/o" "$work/ref.d"
  for np in 2 4; do
    for f in 1 0; do
      rm -rf "$work/o"
      t0=$(now)
      NSL_MPI_FILTERS=$f NSL_MPI_STATS=1 mpirun --oversubscribe -np "$np" "$nsl" run "$a" "${files[@]}" "${window[@]}" \
        --out "$work/o" > "$work/cur.out" 2> "$work/cur.err" || true
      t1=$(now)
      stats=$(grep -o 'rank 0: .* moved' "$work/cur.err" |
              sed 's/rank 0: //; s/ in communication,/ comm,/; s/ bytes moved/ B/')
      same=DIFFERENT
      cmp -s "$work/cur.out" "$work/ref.out" && diff -r -q "$work/o" "$work/ref.d" > /dev/null && same=equal
      printf '%-9s %3s %-8s %9.2f  %-40s %s\n' "$a" "$np" "$([ $f = 1 ] && echo on || echo off)" \
        "$(echo "$t1 - $t0" | bc)" "$stats" "$same"
    done
  done
done
