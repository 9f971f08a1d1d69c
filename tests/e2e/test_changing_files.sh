#!/usr/bin/env bash
# Files that change or are not files: a --columns bundle and cache files cut
# (truncate) or overwritten in place (cp) while nsl runs give the right result
# or one clean line naming the file, never a signal (SIGBUS: exit 135) -- large
# cache files too, which nsl maps under a read lease (a tiled export's NVTX
# times; the test checks at the pause that they are mapped); a FIFO
# or a device given as a trace, a class map or a notebook is refused at once;
# nsys ends when nsl is killed with -9 during an export.  The moments are
# states, not delays: the analysis script itself stops at a FIFO the test
# opens (after it loaded its columns, or before), and the test waits on
# another FIFO the script writes.  Oracle: SQL through sqlite3 on the export.
. "$(dirname "$0")/lib.sh"
set -o pipefail
unset NSL_NO_CACHE NSL_CACHE_MAX NSYS FAKE_NSYS_EXPORT_FAIL FAKE_NSYS_EXPORT_DELAY
export NSL_CACHE_DIR=$TMP/cache
nccl=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
other=$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite
exp=$TMP/run.sqlite
cp "$nccl" "$exp"
want=$(sql "$nccl" "SELECT count(*), sum(start), sum(gridX) FROM CUPTI_ACTIVITY_KIND_KERNEL" | tr '|' ' ')
# the script: loads the kernels' columns (before or after the pause), stops until the test says go
mkfifo "$TMP/paused" "$TMP/go"
cat > "$TMP/pause.lua" <<LUA
return { run = function(trace)
  local k = trace.kernels
  local function pause()
    local p = assert(io.open("$TMP/paused", "w")); p:write("paused\n"); p:close()
    local g = assert(io.open("$TMP/go", "r")); g:read("l"); g:close()
  end
  local second = "grid_x"
  if os.getenv("NVTX") then k, second = trace.nvtx, "stop" end
  if os.getenv("LOAD_FIRST") then k.start:sum(); k[second]:sum() end
  pause()
  print(#k, k.start:sum(), k[second]:sum())
end }
LUA
# run_changing WHAT CHANGE INPUT: runs the script on INPUT, does CHANGE at the pause, releases it
run_changing() {
  local what=$1 change=$2 input=$3
  timeout 120 "$NSL" run "$TMP/pause.lua" "$input" > "$TMP/out" 2> "$TMP/err" &
  local pid=$!
  if ! timeout 60 head -n1 "$TMP/paused" > /dev/null; then bad "$what: the script never paused"; kill "$pid"; return; fi
  [ -z "${AT_PAUSE:-}" ] || eval "$AT_PAUSE"
  eval "$change"
  echo go > "$TMP/go"
  wait "$pid"
  local rc=$?
  if [ $rc -eq 0 ]; then
    check_eq "$what: the right result" "$(tr '\t' ' ' < "$TMP/out")" "$want"
  elif [ $rc -eq 1 ] && [ "$(wc -l < "$TMP/err")" = 1 ] && grep -q "$input\|$(basename "$input")" "$TMP/err" &&
       grep -q "changed while" "$TMP/err"; then
    ok "$what: one line naming the file ($(cat "$TMP/err"))"
  else
    bad "$what: exit $rc (135 is SIGBUS), $(head -c 300 "$TMP/err")"
  fi
}

# --- cache files changed in place ---
"$NSL" run "$TMP/pause.lua" "$exp" > /dev/null 2>&1 < /dev/null &   # fills the cache (paused: release it)
pid=$!
timeout 60 head -n1 "$TMP/paused" > /dev/null && echo go > "$TMP/go"
wait $pid
ent=$(dirname "$(ls "$NSL_CACHE_DIR"/columns/*/c-kernels-start)")
[ -f "$ent/c-kernels-grid_x" ] && ok "the cache holds the kernels' columns" || bad "no cache entry: $(ls -R "$NSL_CACHE_DIR")"
cp -r "$ent" "$TMP/entry.saved"
restore() { cp "${2:-$TMP/entry.saved}"/* "${1:-$ent}/"; }   # restore [ENTRY SAVED]: the small entry by default
export LOAD_FIRST=1
run_changing "cache files truncated after they were read" 'for f in "$ent"/c-*; do truncate -s 300 "$f"; done' "$exp"
restore
run_changing "cache files overwritten in place (cp) after they were read" \
  'for f in "$ent"/c-*; do cp "$other" "$f"; done' "$exp"
restore
unset LOAD_FIRST
run_changing "cache files truncated before they are read" 'for f in "$ent"/c-*; do truncate -s 4096 "$f"; done' "$exp"
restore
run_changing "cache files overwritten in place before they are read" 'for f in "$ent"/c-*; do cp "$other" "$f"; done' "$exp"

# --- large cache files, mapped under a read lease, changed in place: the writer waits until nsl has copied
# the mapping (no SIGBUS past a cut, no value changed under a checked column) ---
restore
unset LOAD_FIRST
big=$TMP/big.sqlite
"$NSL_SOURCE_DIR/tests/bench/make_tiled.sh" "$nccl" 8 "$big" || bad "make_tiled.sh failed"
want_small=$want
want=$(sql "$big" "SELECT count(*), sum(start), sum(end) FROM NVTX_EVENTS" | tr '|' ' ')
export NVTX=1 LOAD_FIRST=1
"$NSL" run "$TMP/pause.lua" "$big" > /dev/null 2>&1 < /dev/null &   # fills the cache (paused: release it)
pid=$!
timeout 60 head -n1 "$TMP/paused" > /dev/null && echo go > "$TMP/go"
wait $pid
bigent=$(dirname "$(ls "$NSL_CACHE_DIR"/columns/*/c-nvtx-start)")
[ "$(stat -c %s "$bigent/c-nvtx-start")" -ge 1048576 ] && ok "the tiled NVTX start column is a large cache file" ||
  bad "c-nvtx-start: $(stat -c %s "$bigent/c-nvtx-start") bytes"
cp -r "$bigent" "$TMP/bigentry.saved"
# at the pause: the two large files are mapped (where this file system grants leases: /proc/locks lists them)
AT_PAUSE='if grep -q LEASE /proc/locks; then
  n=$(cat /proc/"$pid"/task/*/children 2> /dev/null | awk "{ print \$1 }")   # nsl, under timeout (no procps needed)
  [ "$(grep -c "$bigent/c-nvtx-st" "/proc/$n/maps")" = 2 ] && ok "$what: mapped under a lease at the pause" ||
    bad "$what: not mapped: $(grep -c "$bigent" "/proc/$n/maps") mappings of the entry"
else echo "note: no leases on this file system: the large files were read"; fi'
# (a shell's > opens for writing and waits for the lease; coreutils' truncate opens without waiting and fails)
run_changing "large cache files cut to nothing after they were mapped" 'for f in "$bigent"/c-nvtx-st*; do : > "$f"; done' "$big"
restore "$bigent" "$TMP/bigentry.saved"
run_changing "large cache files overwritten in place (cp) after they were mapped" \
  'for f in "$bigent"/c-nvtx-st*; do cp "$other" "$f"; done' "$big"
unset AT_PAUSE NVTX LOAD_FIRST
want=$want_small

# --- a --columns bundle changed in place ---
export NSL_NO_CACHE=1   # the bundle's own columns only
bundle=$TMP/cols.zip
"$NSL" bundle "$exp" --columns -o "$bundle" > /dev/null 2>&1 || bad "nsl bundle --columns failed"
"$NSL" bundle "$other" --columns -o "$TMP/other.zip" > /dev/null 2>&1 || bad "nsl bundle --columns (other) failed"
cp "$bundle" "$TMP/cols.saved"
export LOAD_FIRST=1
run_changing "--columns bundle truncated after its columns were read" 'truncate -s 1000 "$bundle"' "$bundle"
cp "$TMP/cols.saved" "$bundle"
run_changing "--columns bundle overwritten in place (cp) after its columns were read" \
  'cp "$TMP/other.zip" "$bundle"' "$bundle"
cp "$TMP/cols.saved" "$bundle"
unset LOAD_FIRST
run_changing "--columns bundle truncated before its columns are read" 'truncate -s 1000 "$bundle"' "$bundle"
cp "$TMP/cols.saved" "$bundle"
run_changing "--columns bundle overwritten in place before its columns are read" 'cp "$TMP/other.zip" "$bundle"' "$bundle"
unset NSL_NO_CACHE

# --- the disk fills while combine writes (ulimit -f): one line, no leftover, and (in the ASan build) no
# leak: a failed write once left libarchive's zlib stream of the member behind (LSan exit 23) ---
NSL_NO_CACHE=1 "$NSL" bundle "$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite" --rank 0 --columns -o "$TMP/r0.zip" > /dev/null 2>&1 &&
  NSL_NO_CACHE=1 "$NSL" bundle "$exp" --rank 1 --columns -o "$TMP/r1.zip" > /dev/null 2>&1 || bad "nsl bundle --rank 0/1"
for blocks in 20 60 700; do
  (ulimit -f $blocks; NSL_NO_CACHE=1 "$NSL" combine "$TMP/r0.zip" "$TMP/r1.zip" -o "$TMP/comb.zip" --allow-mixed-commands \
    --allow-mixed-nsys > /dev/null 2> "$TMP/err")
  rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l < "$TMP/err")" = 1 ] && grep -q "cannot write '$TMP/comb.zip': .*File too large" "$TMP/err" &&
    ok "combine past ulimit -f $blocks: exit 1, one line, nothing leaked" || bad "combine past ulimit -f $blocks: exit $rc, $(head -c 600 "$TMP/err")"
  check_eq "combine past ulimit -f $blocks: no output, no temporary file" "$(ls -A "$TMP" | grep -c 'comb.zip')" 0
done

# --- not files: a FIFO, /dev/zero ---
mkfifo "$TMP/trace.fifo"
for cmd in "info $TMP/trace.fifo" "run summary $TMP/trace.fifo" "bundle $TMP/trace.fifo -o $TMP/f.zip" \
           "info /dev/zero" "run classes $exp --arg map=/dev/zero" "run classes $exp --arg map=$TMP/trace.fifo" \
           "notebook $TMP/trace.fifo $exp -o $TMP/nb.html" "tui $TMP/trace.fifo"; do
  timeout 20 "$NSL" $cmd > /dev/null 2> "$TMP/err"
  rc=$?
  if [ $rc -eq 1 ] && [ "$(wc -l < "$TMP/err")" = 1 ] && grep -q "it is a FIFO, not a regular file\|it is a character device, not a regular file" "$TMP/err"; then
    ok "nsl $cmd: refused at once, one line ($(cat "$TMP/err"))"
  else
    bad "nsl $cmd: exit $rc (124: it blocked), $(head -c 300 "$TMP/err")"
  fi
done

# --- kill -9 of nsl during an export: nsys ends too ---
FAKE=$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh
printf 'NVIDIA Tegra Profiler Report 2026@2@1@210-1v0.\nkill\n' > "$TMP/kill.nsys-rep"
FAKE_NSYS_LOG=$TMP/nsys.log FAKE_NSYS_EXPORT_HANG=1 FAKE_NSYS_EXPORT=$nccl \
  "$NSL" info "$TMP/kill.nsys-rep" --nsys "$FAKE" > /dev/null 2> "$TMP/kill.err" &
nslpid=$!
# the stand-in nsys logged its whole export call (a plain file: a FIFO closed after its first line killed the
# stand-in with SIGPIPE while it wrote the rest, and nsl then had no child left to check)
for _ in $(seq 600); do
  sed -n '/^export$/,$p' "$TMP/nsys.log" 2> /dev/null | grep -q '^--end--$' && break
  sleep 0.1
done
# the child that exports (nsl may first ask `nsys --version`: a short-lived child of its own, not the export;
# the stand-in's hanging export runs as `sleep`)
export_child() {
  local c cmd
  for c in $(cat /proc/$nslpid/task/*/children 2> /dev/null); do
    cmd=$(tr '\0' ' ' < "/proc/$c/cmdline" 2> /dev/null)
    [ -n "$cmd" ] && ! grep -q -- "--version" <<< "$cmd" && { echo "$c"; return; }
  done
}
child=""
for _ in $(seq 600); do child=$(export_child); [ -n "$child" ] && break; sleep 0.1; done
if [ -z "$child" ]; then
  bad "kill -9: no nsys under nsl: $(kill -0 $nslpid 2> /dev/null && echo "nsl runs" || echo "nsl ended"), $(head -c 300 "$TMP/kill.err")"
else
  [ "$(ps -o pgid= -p "$child" | tr -d ' ')" = "$child" ] && ok "nsys runs in its own process group" ||
    bad "nsys's process group: $(ps -o pid,pgid,cmd -p "$child")"
  kill -9 $nslpid
  wait $nslpid 2> /dev/null
  timeout 20 tail --pid="$child" -f /dev/null && ok "kill -9 of nsl during an export: nsys ended too" ||
    { bad "kill -9 of nsl: nsys still runs"; kill -9 "$child" 2> /dev/null; }
fi
finish
