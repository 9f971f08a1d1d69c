#!/usr/bin/env bash
# bench_tui.sh [EXPORT] -- the nsl tui benchmark (run on demand, never a
# test): on the export tiled 425 times (~1.7 M kernels, ~8.1 M NVTX ranges,
# ~1 GB; or EXPORT), nsl tui runs in tmux (160x45) with NSL_TUI_LOG, which
# records the time to the first screen (before anything is loaded), to the
# first full screen (every lane loaded and drawn), each loading stage with
# its worst slice of main-thread work, and every redraw.  Three loads:
#   cold   NSL_NO_CACHE=1, the export's pages in the OS cache (read through SQLite)
#   fill   the columnar cache on, empty: the load that writes it
#   warm   the columnar cache on, filled: the columns mapped from it
# During each load a key (j, k: select a lane) is sent every 150 ms; the
# time from sending a key (CLOCK_MONOTONIC, before `tmux send-keys`) to the
# end of its redraw (the log's at=) is the key-to-redraw latency while
# loading (worst and median).  After the warm load, keys pan (d, a), page
# (], [) and zoom (+, -) at the whole-trace scale and in a 1 ms window; the
# script prints the median and worst redraw per scale and action (target:
# under 50 ms), beside what the sqlite3 CLI takes to read the columns the
# lanes need (one SELECT per table) and one SQL query per redraw (the busy
# time per stream in the same windows).  Needs tmux, python3, /usr/bin/time.
. "$(dirname "$0")/lib.sh"
if [ $# -ge 1 ]; then big=$1; cat "$big" > /dev/null; else tiled_export 425; fi
command -v tmux > /dev/null || { echo "tmux is missing"; exit 1; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(du -h "$big" | cut -f1) $big"
export TMUX_TMPDIR="$work/tmux"
mkdir -p "$TMUX_TMPDIR"
cache="$work/tui-cache"
rm -rf "$cache"
S=nslbench
tmux kill-server 2> /dev/null || true
tmux new-session -d -s hold "sleep 3600"   # keeps the server up between the loads' sessions

# load MODE ENV...: nsl tui on the export with ENV, keys sent while it loads; leaves the session
# running (log in $work/tui-MODE.log) and prints the load's figures.
load() {
  local mode=$1; shift
  log="$work/tui-$mode.log"
  rm -f "$log"
  tmux kill-session -t $S 2> /dev/null || true
  tmux new-session -d -s $S -x 160 -y 45 "env $* NSL_CACHE_DIR=$cache NSL_TUI_LOG=$log NSL_TUI_INFO=1 $nsl tui $big; sleep 5"
  python3 - "$log" "$S" "$mode" << 'PY'
import os, re, subprocess, sys, time
log, session, mode = sys.argv[1:4]
def text():
    try:
        return open(log).read()
    except OSError:
        return ""
t0 = time.monotonic()
while "first_screen" not in text():
    if time.monotonic() - t0 > 60: sys.exit("no first screen in 60 s")
    time.sleep(0.005)
sent = []
while "full_screen" not in text():
    if time.monotonic() - t0 > 600: sys.exit("not loaded in 10 minutes")
    t = time.monotonic_ns()
    subprocess.run(["tmux", "send-keys", "-t", session, "jk"[len(sent) % 2]], check=True)
    sent.append(t)
    time.sleep(0.15)
time.sleep(1.0)   # the last keys' redraws
log_text = text()
done = [int(m.group(1)) for m in re.finditer(r"^redraw key=\S+ .*? at=(\d+) loading=(\d)", log_text, re.M)]
lat = sorted((d - s) / 1e6 for s, d in zip(sent, done))
first = re.search(r"^first_screen ms=([\d.]+)", log_text, re.M).group(1)
full = re.search(r"^full_screen ms=([\d.]+)", log_text, re.M).group(1)
print(f"{mode}: first screen {float(first):.1f} ms, full screen {float(full):.1f} ms")
for m in re.finditer(r'^loaded stage="([^"]*)" ms=([\d.]+) slices=(\d+) worst_slice_ms=([\d.]+)', log_text, re.M):
    print(f"  stage {m.group(1):<40} {float(m.group(2)):8.1f} ms, {m.group(3):>4} slices, worst slice {float(m.group(4)):6.1f} ms")
if lat:
    print(f"  key-to-redraw while loading: {len(lat)} keys, median {lat[len(lat) // 2]:.1f} ms, worst {lat[-1]:.1f} ms"
          f" (target < 50)")
if len(done) != len(sent):
    print(f"  (keys sent {len(sent)}, redraws logged {len(done)}: latencies paired in order)")
PY
}
load cold NSL_NO_CACHE=1
load fill
load warm
log="$work/tui-warm.log"

press() { # press SCALE KEY... : each key, then wait until its redraw is logged
  local scale=$1; shift
  for k in "$@"; do
    local n; n=$(grep -c '^redraw' "$log" || true)
    tmux send-keys -t $S "$k"
    for _ in $(seq 200); do [ "$(grep -c '^redraw' "$log" || true)" -gt "$n" ] && break; sleep 0.05; done
    echo "$scale $(grep '^redraw' "$log" | tail -1)" >> "$work/tui_redraws.txt"
  done
}
rm -f "$work/tui_redraws.txt"
press whole d d d d d a a a a a ] [ ] [ + - + - + - + -
# a 1 ms window in the middle of the trace, through the Lua prompt
tmux send-keys -t $S "0"; sleep 0.5
tmux send-keys -t $S ":"; sleep 0.3
tmux send-keys -t $S -l "do local a, b = tui.window(); tui.go((a + b) // 2, (a + b) // 2 + 1000000) end"
tmux send-keys -t $S Enter; sleep 1
press 1ms d d d d d a a a a a ] [ ] [ + - + - + - + -
window=$(tmux capture-pane -t $S -p | grep -o 'window=[0-9]*\.\.[0-9]*' | tail -1)
lanes_busy=$(tmux capture-pane -t $S -p | grep -cE '^(GPU|python|  \.)' || true)
tmux send-keys -t $S q
sleep 1
tmux kill-server 2> /dev/null || true

echo
echo "redraw times (ms; the window's columns from nsl.lod, drawn and sent to the terminal):"
awk '{ scale = $1; key = $3; sub("key=", "", key); ms = $4; sub("ms=", "", ms)
       act = (key == "d" || key == "a") ? "pan" : (key == "]" || key == "[") ? "page" : "zoom"
       k = scale " " act; v[k, ++n[k]] = ms + 0 }
     END { for (k in n) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
             for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
             printf "  %-12s median %6.2f  worst %6.2f  (%d redraws; target < 50)\n", k, a[int((m + 1) / 2)], a[m], m } }' \
  "$work/tui_redraws.txt" | sort

# the peer: one SQL query per redraw through the sqlite3 CLI, busy time per stream in the window
lo=$(sqlite3 -readonly "file:$big?immutable=1" "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
hi=$(sqlite3 -readonly "file:$big?immutable=1" "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")
mid=$(( lo + (hi - lo) / 2 ))
q() { echo "SELECT deviceId, streamId, count(*), sum(min(end, $2) - max(start, $1)) FROM CUPTI_ACTIVITY_KIND_KERNEL
            WHERE start < $2 AND end > $1 GROUP BY 1, 2;"; }
echo
echo "sqlite3 CLI reading the columns the lanes need (one SELECT per table, output to /dev/null):"
s=$(date +%s%N)
sqlite3 -readonly "file:$big?immutable=1" "SELECT globalPid, deviceId, streamId, start, end, correlationId, shortName
  FROM CUPTI_ACTIVITY_KIND_KERNEL; SELECT globalPid, deviceId, streamId, start, end, correlationId, copyKind
  FROM CUPTI_ACTIVITY_KIND_MEMCPY; SELECT globalPid, deviceId, streamId, start, end, correlationId
  FROM CUPTI_ACTIVITY_KIND_MEMSET; SELECT globalTid, start, end, text, textId, domainId FROM NVTX_EVENTS;" > /dev/null
echo "  $(( ($(date +%s%N) - s) / 1000000 )) ms (compare: the cold full screen above)"
echo
echo "sqlite3 CLI, one query per redraw (busy time per stream of the window):"
for w in whole 1ms; do
  if [ $w = whole ]; then f=$lo; t=$hi; else f=$mid; t=$(( mid + 1000000 )); fi
  best=
  for i in 1 2 3; do
    s=$(date +%s%N)
    sqlite3 -readonly "file:$big?immutable=1" "$(q $f $t)" > /dev/null
    e=$(( ($(date +%s%N) - s) / 1000000 ))
    [ -z "$best" ] || [ "$e" -lt "$best" ] && best=$e
  done
  echo "  $w window: $best ms (best of 3)"
done
echo "(last TUI $window, $lanes_busy lanes on the screen)"
