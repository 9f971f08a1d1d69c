#!/usr/bin/env bash
# bench_out.sh [N] [ANALYSIS...] -- what writing results costs (run on demand,
# never a test): on the export tiled N times (default 425, ~1 GB; shared with
# bench_nvtx.sh), each analysis (default: nvtx summary) run three ways --
# text on stdout, with --out DIR (every table as CSV, results.json), and with
# --format json on stdout -- interleaved, RUNS times each (default 3), best
# wall time of each, and the extra time of --out and --format json as a
# share of the text run.  Target: at most +20 %.  Needs /usr/bin/time
# (Debian package `time`).
. "$(dirname "$0")/lib.sh"
n=${1:-425}
shift || true
analyses=${*:-nvtx summary}
runs=${RUNS:-3}
tiled_export "$n"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
for a in $analyses; do
  text="" out="" json=""
  for _ in $(seq "$runs"); do   # interleaved, so a busy moment hits all three alike
    text=$(min "$text" "$(measure out_text "$nsl" run "$a" "$big" | cut -d' ' -f2)")
    rm -rf "$work/out_dir"
    out=$(min "$out" "$(measure out_dir "$nsl" run "$a" "$big" --out "$work/out_dir" | cut -d' ' -f2)")
    json=$(min "$json" "$(measure out_json "$nsl" run "$a" "$big" --format json | cut -d' ' -f2)")
  done
  size=$(du -sk "$work/out_dir" | cut -f1)
  awk -v a="$a" -v t="$text" -v o="$out" -v j="$json" -v s="$size" -v r="$runs" 'BEGIN {
    printf "%-8s best of %d: text %6.2f s | --out %6.2f s (%+.1f %%, %.1f MiB written) | --format json %6.2f s (%+.1f %%)  target: +20 %%\n",
           a, r, t, o, 100 * (o - t) / t, s / 1024, j, 100 * (j - t) / t }'
done
rm -rf "$work/out_dir"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
