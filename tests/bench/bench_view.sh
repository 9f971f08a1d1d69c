#!/usr/bin/env bash
# bench_view.sh [N] -- `nsl view` on a large export (run on demand, never a
# test): on the sample export tiled N times (default 425: ~1.7 M kernels,
# ~8 M NVTX ranges, ~1 GB; made by make_tiled.sh when missing; BENCH_DIR
# names where it is), for the whole trace (the default detail window and
# the level of detail over everything) and for a 100 ms window:
#   - nsl view's wall and CPU time and peak memory, beside the sqlite3 CLI
#     reading the same columns (kernels, memcpy, memset, NVTX ranges) as a ratio;
#   - the size of the page;
#   - the time Chromium takes to open it: the page's own measure (from
#     navigation start to the first drawing, data decoded), and the wall time
#     of a headless Chromium run to the DOM, beside the same for an empty page.
. "$(dirname "$0")/lib.sh"
n=${1:-425}
tiled_export "$n"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
browser=$(command -v chromium || command -v chromium-browser)

# chromium_open PAGE -> "page_ms wall_s": the page's data-ready-ms and the run's wall time
chromium_open() {
  local t0 t1
  t0=$(date +%s.%N)
  timeout 300 "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run --proxy-server=http://127.0.0.1:9 \
    --user-data-dir="$out/profile" --window-size=1400,900 --virtual-time-budget=60000 --dump-dom "file://$1" \
    > "$out/dom.html" 2> /dev/null
  t1=$(date +%s.%N)
  local ms
  ms=$(grep -o 'data-ready-ms="[0-9.]*"' "$out/dom.html" | head -1 | grep -o '[0-9.]*' || echo "-")
  echo "$ms $(echo "$t1 - $t0" | bc)"
}

row() { printf '%-34s %10s %10s %10s %12s %14s %12s\n' "$@"; }
echo "nsl view on $(basename "$big") ($(stat -c %s "$big") bytes)"
row "case" "wall_s" "cpu_s" "peak_MiB" "page_bytes" "page_ready_ms" "chromium_s"
measure_view() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" "$nsl" view "$big" -o "$out/$label.html" "$@"
  read -r wall user sys rss < "$out/time.txt"
  read -r ready cwall < <(chromium_open "$out/$label.html")
  row "$label" "$wall" "$(echo "$user + $sys" | bc)" "$((rss / 1024))" "$(stat -c %s "$out/$label.html")" "$ready" "$cwall"
}
measure_view "whole trace (default window)"
measure_view "whole trace, no findings" --no-findings
measure_view "100 ms window" --from 1s --to 1.1s --no-findings
echo '<!DOCTYPE html><html><body>empty</body></html>' > "$out/empty.html"
read -r _ ewall < <(chromium_open "$out/empty.html")
row "(an empty page)" "" "" "" "" "" "$ewall"

# the sqlite3 CLI reading the columns the viewer reads
/usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" sqlite3 -readonly "file:$big?immutable=1" \
  "SELECT deviceId, streamId, start, end, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL;
   SELECT deviceId, streamId, start, end, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY;
   SELECT deviceId, streamId, start, end FROM CUPTI_ACTIVITY_KIND_MEMSET;
   SELECT globalTid, start, end, text, textId FROM NVTX_EVENTS;" > /dev/null
read -r wall user sys rss < "$out/time.txt"
row "sqlite3 CLI, the same columns" "$wall" "$(echo "$user + $sys" | bc)" "$((rss / 1024))" "" "" ""
