# tests/bench/lib.sh -- what the benchmarks share (sourced, never run): where
# nsl, the shared data and the scratch folder are, the tiled export they
# measure, and the timing of one command.
#   NSL          the nsl binary (default build/nsl)
#   NSL_DATA_DIR the shared data (default ../shared/data)
#   BENCH_DIR    the scratch folder (default /tmp/nsl-bench); tiled exports stay there between runs
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
nsl=${NSL:-$root/build/nsl}
data=${NSL_DATA_DIR:-$root/../shared/data}
work=${BENCH_DIR:-/tmp/nsl-bench}
mkdir -p "$work"

# tiled_export N: sets big to the sample export tiled N times in time
# (make_tiled.sh, made when missing) and warms the page cache for every contender.
tiled_export() {
  big="$work/tiled_$1.sqlite"
  [ -f "$big" ] || "$here/make_tiled.sh" "$data/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$1" "$big"
  cat "$big" > /dev/null
}

# measure LABEL CMD... -> "LABEL wall_s cpu_s peak_kib" (CPU: user + sys);
# the command's output goes to $work/LABEL.out.  Needs /usr/bin/time.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > "$work/$label.out"
  read -r wall user sys rss < "$work/time.txt"
  echo "$label $wall $(echo "$user + $sys" | bc) $rss"
}
