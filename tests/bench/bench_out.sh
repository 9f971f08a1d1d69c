#!/usr/bin/env bash
# bench_out.sh [N] [ANALYSIS...] -- what writing results costs (run on demand,
# never a test): on the export tiled N times (default 425, ~1 GB; shared with
# bench_nvtx.sh), each analysis (default: nvtx summary) run three ways --
# text on stdout, with --out DIR (every table as CSV, results.json), and with
# --format json on stdout -- best of 3 wall seconds each, and the extra time
# of --out and --format json as a share of the text run.  Target: at most
# +20 %.  Needs /usr/bin/time (Debian package `time`).
. "$(dirname "$0")/lib.sh"
n=${1:-425}
shift || true
analyses=${*:-nvtx summary}
tiled_export "$n"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

best() {   # best LABEL CMD... -> the best wall time of 3 runs
  local b=""
  for _ in 1 2 3; do
    rm -rf "$work/out_dir"
    local w
    w=$(measure "$@" | cut -d' ' -f2)
    if [ -z "$b" ] || [ "$(echo "$w < $b" | bc)" = 1 ]; then b=$w; fi
  done
  echo "$b"
}

for a in $analyses; do
  text=$(best "out_text" "$nsl" run "$a" "$big")
  out=$(best "out_dir" "$nsl" run "$a" "$big" --out "$work/out_dir")
  size=$(du -sk "$work/out_dir" | cut -f1)
  json=$(best "out_json" "$nsl" run "$a" "$big" --format json)
  awk -v a="$a" -v t="$text" -v o="$out" -v j="$json" -v s="$size" 'BEGIN {
    printf "%-8s text %6.2f s | --out %6.2f s (%+.1f %%, %d MiB written) | --format json %6.2f s (%+.1f %%)  target: +20 %%\n",
           a, t, o, 100 * (o - t) / t, s / 1024, j, 100 * (j - t) / t }'
done
rm -rf "$work/out_dir"
