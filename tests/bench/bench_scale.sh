#!/usr/bin/env bash
# bench_scale.sh [TILES] -- how nsl scales (run on demand, never a test), in
# two parts; each prints one line per measurement (wall s, CPU s, peak MiB)
# and needs only /usr/bin/time and sqlite3 (mpirun for the MPI part).
#
#  big    every shipped analysis that runs on an export (`nsl list`, less the
#         nsys-jax ones) on the sample export tiled TILES times (default 425:
#         1.03 GB; tests/bench/make_tiled.sh, kept under BENCH_DIR), warm: one
#         run fills nsl's cache (a private one under BENCH_DIR), the next is
#         measured.  The ratios are to the sqlite3 CLI grouping the kernel
#         table of the same file (count and total time per name), measured
#         before and after the analyses in the same run (the faster of the
#         two), two ways: by the name's id (shortName), and by the name itself
#         through StringIds (what a user's query reads; issue 29's 2.3 s).
#         Each analysis's line also says how much of its CPU time the kernel
#         took and how many MiB of fresh huge pages were faulted in meanwhile
#         (/proc/vmstat): the zeroing of fresh memory, most of that time here.
#  ranks  straggler, summary, ledger and diagnose (RANK_ANALYSES) in one
#         process over 64, 256 and 1,024 per-rank exports (RANKS="64 256
#         1024"), each ~7,500 rows, made
#         by tests/lua/straggler_rank.sh from the real NCCL export (8
#         distinct ones copied round-robin: GPU 0, clocks shifted, every
#         eighth rank's host idle 500 µs after each synchronisation, the others
#         waiting for it), warm; each size run REPEAT times (default 3) and
#         its median wall and CPU time taken (a run of 64 exports takes a
#         tenth of a second, where one slow run moved a ratio from 3.4 to
#         4.8); then t(256)/t(64) and t(1024)/t(256), in CPU time (steadier
#         than wall time on a shared machine) and wall time.
#         With mpirun on PATH (MPI=0 skips): straggler, summary, ledger,
#         diagnose, nvtx, flamegraph, launch, heap and compare (MPI_ANALYSES;
#         compare's two runs the first and second half of the exports) over 256
#         exports under `mpirun -np 2` and `-np 4`, with rank 0's bytes moved
#         (NSL_MPI_STATS).
# PARTS="big ranks" picks the parts; ANALYSES="gaps nvtx" limits the big part.
. "$(dirname "$0")/lib.sh"
tiles=${1:-425}
parts=${PARTS:-big ranks}
export NSL_CACHE_DIR=$work/scale-cache
mkdir -p "$NSL_CACHE_DIR"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

# row LABEL: measure's line as "LABEL wall cpu MiB"
row() { measure "$@" | awk '{ printf "%-28s %8.2f s wall %8.2f s CPU %7d MiB\n", $1, $2, $3, $4 / 1024 }'; }
# thp_faults: huge pages the kernel has faulted in so far (/proc/vmstat; 0 where it is not there)
thp_faults() { awk '$1 == "thp_fault_alloc" { n = $2 } END { print n + 0 }' /proc/vmstat 2> /dev/null || echo 0; }
# big_row LABEL CMD...: row, then the part of the CPU time spent in the kernel and the MiB of fresh huge pages
# faulted in (the machine's, during the run: the kernel zeroes each; on a virtual machine the host may have to
# back them first, which made most of the kernel time of the analyses at 1 GB here)
big_row() {
  local before l
  before=$(thp_faults)
  l=$(row "$@")
  printf '%s  (kernel %.2f s, fresh huge pages %d MiB)\n' "$l" "$(awk '{ print $3 }' "$work/time.txt")" \
    $(( ($(thp_faults) - before) * 2 ))
}
# median_row LABEL CMD...: row REPEAT times (default 3): the median wall and the median CPU time (each on its
# own), the largest peak
median_row() {
  local i l label walls=() cpus=() peak=0
  for ((i = 0; i < ${REPEAT:-3}; i++)); do
    l=$(row "$@")
    read -r label w _ _ c _ _ m _ <<< "$l"
    walls+=("$w") cpus+=("$c")
    [ "$m" -gt "$peak" ] && peak=$m
  done
  mid() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
  printf '%-28s %8.2f s wall %8.2f s CPU %7d MiB\n' "$label" "$(mid "${walls[@]}")" "$(mid "${cpus[@]}")" "$peak"
}
wall_of() { awk '{ print $2 }' <<< "$1"; }
cpu_of() { awk '{ print $5 }' <<< "$1"; }

if [[ " $parts " == *" big "* ]]; then
  tiled_export "$tiles"
  # the peer: the kernel table grouped by name
  group="SELECT shortName, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY shortName"
  named="SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
         JOIN StringIds s ON s.id = k.shortName GROUP BY s.value"
  p1=$(row sqlite3_group_kernels sqlite3 "$big" "$group")
  q1=$(row sqlite3_group_by_name sqlite3 "$big" "$named")
  analyses=${ANALYSES:-$("$nsl" list | awk 'NR > 2 && $1 !~ /^jax_/ { print $1 }')}
  lines=()
  for a in $analyses; do
    # fills the cache; an analysis that does not run on one export (diff: two runs) is said and left out
    if ! "$nsl" run "$a" "$big" -q > /dev/null 2> "$work/fill.err"; then
      echo "left out: $a ($(head -1 "$work/fill.err"))"
      continue
    fi
    lines+=("$(big_row "$a" "$nsl" run "$a" "$big" -q)")
  done
  p2=$(row sqlite3_group_kernels sqlite3 "$big" "$group")
  q2=$(row sqlite3_group_by_name sqlite3 "$big" "$named")
  min() { echo "if ($1 < $2) $1 else $2" | bc -l; }
  peer=$(min "$(wall_of "$p1")" "$(wall_of "$p2")") peer_cpu=$(min "$(cpu_of "$p1")" "$(cpu_of "$p2")")
  npeer=$(min "$(wall_of "$q1")" "$(wall_of "$q2")") npeer_cpu=$(min "$(cpu_of "$q1")" "$(cpu_of "$q2")")
  echo "sample x $tiles ($(du -h "$big" | cut -f1)), warm cache; sqlite3 grouping the kernel table by shortName:" \
       "$peer s wall, $peer_cpu s CPU; by name through StringIds: $npeer s wall, $npeer_cpu s CPU"
  for l in "${lines[@]}"; do   # a busy machine stretches wall times: the CPU ratio is the steadier one
    printf '%s  ratio %.2f x wall, %.2f x CPU (by name: %.2f x wall, %.2f x CPU)\n' "$l" \
      "$(echo "$(wall_of "$l") / $peer" | bc -l)" "$(echo "$(cpu_of "$l") / $peer_cpu" | bc -l)" \
      "$(echo "$(wall_of "$l") / $npeer" | bc -l)" "$(echo "$(cpu_of "$l") / $npeer_cpu" | bc -l)"
  done
fi

if [[ " $parts " == *" ranks "* ]]; then
  read -r -a sizes <<< "${RANKS:-64 256 1024}"
  src=$data/nsys/pytorch_nccl_2gpu_2026.2.sqlite
  mkdir -p "$work/ranks/base"
  for r in 0 1 2 3 4 5 6 7; do
    f=$work/ranks/base/r$r.sqlite
    role=idlewait; [ $r = 5 ] && role=idle
    [ -f "$f" ] || "$root/tests/lua/straggler_rank.sh" "$src" "$f" 0 500000 $role $(( (r * 37 % 23 - 11) * 1000000 ))
  done
  max=0
  for n in "${sizes[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
  files=()
  for ((i = 0; i < max; i++)); do
    f=$work/ranks/rank$(printf %04d $i).sqlite
    [ -f "$f" ] || cp "$work/ranks/base/r$((i % 8)).sqlite" "$f"
    files+=("$f")
  done
  for a in ${RANK_ANALYSES:-straggler summary ledger diagnose}; do
    "$nsl" run "$a" "${files[@]}" -q > /dev/null 2>&1 || true   # fills the cache for every size
    prev_cpu="" prev_wall=""
    for n in "${sizes[@]}"; do
      l=$(median_row "$a.$n" "$nsl" run "$a" "${files[@]:0:$n}" -q)
      w=$(wall_of "$l") c=$(cpu_of "$l")
      if [ -n "$prev_cpu" ]; then
        printf '%s  vs the previous size: CPU %.2f x, wall %.2f x\n' "$l" "$(echo "$c / $prev_cpu" | bc -l)" \
          "$(echo "$w / $prev_wall" | bc -l)"
      else
        echo "$l"
      fi
      prev_cpu=$c prev_wall=$w
    done
  done
  if [ "${MPI:-1}" = 1 ] && command -v mpirun > /dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    n=256
    [ "$max" -lt $n ] && n=$max
    for a in ${MPI_ANALYSES:-straggler summary ledger diagnose nvtx flamegraph launch heap compare}; do
      extra=()   # compare: two runs, each half of the exports (every export a run would make n runs)
      [ "$a" = compare ] && extra=(--arg "runs=$(seq -s+ 1 $((n / 2))),$(seq -s+ $((n / 2 + 1)) "$n")")
      for np in 2 4; do
        /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" env NSL_THREADS=1 NSL_MPI_STATS=1 \
          mpirun --oversubscribe -np $np "$nsl" run "$a" "${files[@]:0:$n}" "${extra[@]}" -q > "$work/mpi.out" \
          2> "$work/mpi.err" || true
        read -r wall user sys _ < "$work/time.txt"
        moved=$(grep -o '[0-9]* bytes moved' "$work/mpi.err" | head -1)
        printf '%-28s %8.2f s wall %8.2f s CPU (all processes)  rank 0: %s\n' "mpirun -np $np $a.$n" "$wall" \
          "$(echo "$user + $sys" | bc)" "${moved:-?}"
      done
    done
  fi
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
