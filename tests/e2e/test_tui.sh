#!/usr/bin/env bash
# nsl tui driven through a pseudo-terminal (tmux), every number checked
# against SQL on the same export: the window after load is the trace's
# span and shows its streams with the events that lie in it; zoom, pan,
# page, snap to the next kernel, the name filter, the minimum duration and
# jumping to a time move to the times SQL predicts; the details of a
# selected kernel are its row and its launching CUDA API call; the NVTX
# tree shows the nvtx analysis's times (and SQL's for a top-level range);
# the `:` prompt evaluates Lua; a resize re-lays the screen; Ctrl-C leaves
# with the terminal sane (canonical mode, echo and signals back on).
# Loading in the background, on a .nsys-rep that a stand-in nsys exports:
# the first screen comes while the export runs and shows its progress; `?`,
# `:` and the tree's waiting word answer meanwhile; then the lanes are
# SQL's; q or Ctrl-C during the export leave at once (exit 0, terminal
# sane, no nsys left); a failing export leaves with nsl.open's one line; a
# library warning shows on the status line and on stderr after the screen.
# The status line shows the window with NSL_TUI_INFO=1 (key i), so every
# check reads exact ns.
. "$(dirname "$0")/lib.sh"
command -v tmux > /dev/null || { echo "tmux is missing (scripts/install-deps.sh installs it)"; exit 1; }
export TMUX_TMPDIR="$TMP"
F="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
# a build without ncurses says so, in one line, and fails
if "$NSL" tui "$F" < /dev/null 2>&1 | grep -q "built without ncurses"; then
  out=$("$NSL" tui "$F" 2>&1 < /dev/null); rc=$?
  [ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && ok "built without ncurses: one line, exit 1" || bad "no ncurses: $rc '$out'"
  finish
  exit
fi
S=nsltui
# screen, wait_for, draws, settle: lib.sh's; after keys, wait for a redraw, then for a still screen (settle)
keys() { local n; n=$(draws); for k in "$@"; do tmux send-keys -t $S "$k"; done; settle "$n"; }
typed() { local n; n=$(draws); tmux send-keys -t $S -l "$1"; tmux send-keys -t $S Enter; settle "$n"; }
# ask KEY PROMPT: a key that opens a prompt, then the prompt on the screen (a prompt that never comes fails the
# check here, instead of a silent wait to the deadline).  tmux drops trailing blanks: the empty `:` prompt is '^:$'.
ask() { tmux send-keys -t $S "$1"; wait_for "$2" 400 || bad "no prompt '$2' after key $1: $(screen | tail -3)"; }
# window=FROM..TO cursor=C on the status line
state() { screen | grep -o 'window=[0-9]*\.\.[0-9]* cursor=[0-9]*' | tail -1; }
win_from() { state | sed 's/window=\([0-9]*\)\.\..*/\1/'; }
win_to() { state | sed 's/.*\.\.\([0-9]*\) .*/\1/'; }
cursor() { state | sed 's/.*cursor=//'; }
# SQL: GPU operations (kernels, memcpy, memset) of device 0 stream 7
OPS="SELECT start, end, deviceId AS dev, streamId AS st FROM CUPTI_ACTIVITY_KIND_KERNEL
     UNION ALL SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY
     UNION ALL SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET"
in_window() { sql "$F" "SELECT count(*) FROM ($OPS) WHERE dev = 0 AND st = 7 AND start < $2 AND end > $1"; }
lane_events() { keys Escape; screen | grep -o 'lane GPU0 s7: [0-9]* events in the window' | grep -o '[0-9]* events' | cut -d' ' -f1; }

tmux new-session -d -s $S -x 120 -y 30 \
  "NSL_TUI_INFO=1 $NSL tui $F; echo TUI-EXITED rc=\$?; stty -a | tr ' ;' '\n\n' | grep -E '^-?(icanon|echo|isig)\$' | tr '\n' ' '; echo; sleep 60"
wait_for "lanes; ? for the keys" 1200 && ok "loads and shows the first screen" || { bad "no screen: $(screen)"; finish; exit 1; }

# the window is the span of the events drawn: GPU operations and NVTX ranges that end
span=$(sql "$F" "SELECT min(s), max(e) FROM (SELECT start s, end e FROM ($OPS)
                 UNION ALL SELECT start, end FROM NVTX_EVENTS WHERE end IS NOT NULL)")
check_eq "window start is the first event's start" "$(win_from)" "${span%|*}"
check_eq "window end is just past the last event's stop" "$(win_to)" "$(( ${span#*|} + 1 ))"
# the streams, in (device, stream) order
streams=$(sql "$F" "SELECT DISTINCT 'GPU' || dev || ' s' || st FROM ($OPS) ORDER BY dev, st" | tr '\n' ' ')
got=$(screen | grep -o '^GPU[0-9]* s[0-9]*' | tr '\n' ' ')
check_eq "one lane per GPU stream" "$got" "$streams"
screen | grep -q '^python3 144' && ok "an NVTX lane per thread" || bad "no NVTX thread lane: $(screen | head -20)"
check_eq "events of the selected stream in the window" "$(lane_events)" "$(in_window "$(win_from)" "$(win_to)")"

# zoom in around the cursor (the middle of the window): half the span, the cursor kept on its column
f0=$(win_from); t0=$(win_to); c0=$(cursor)
keys +
exp_from=$(( c0 - (c0 - f0) / 2 )); exp_to=$(( exp_from + (t0 - f0) / 2 ))
check_eq "zoom in: window start" "$(win_from)" "$exp_from"
check_eq "zoom in: window end" "$(win_to)" "$exp_to"
keys + + + +
f=$(win_from); t=$(win_to)
check_eq "zoomed in 5 times: events in the window" "$(lane_events)" "$(in_window "$f" "$t")"
# pan an eighth, page a whole window
fa=$f
keys d
check_eq "pan right by an eighth" "$(win_from)" "$(( f + (t - f) / 8 ))"
f=$(win_from); t=$(win_to)
keys ]
check_eq "page right" "$(win_from)" "$(( f + (t - f) ))"
check_eq "events after paging" "$(lane_events)" "$(in_window "$(win_from)" "$(win_to)")"
keys [ a
check_eq "page and pan back" "$(win_from)" "$fa"

# snap: the next kernel of the stream after the cursor (memcpy and memset passed over)
KERN="FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0 AND streamId = 7"
c=$(cursor)
keys n
next=$(sql "$F" "SELECT min(start) $KERN AND start > $c")
check_eq "snap to the next kernel" "$(cursor)" "$next"
keys n
next2=$(sql "$F" "SELECT min(start) $KERN AND start > $next")
check_eq "snap again" "$(cursor)" "$next2"
keys p
check_eq "snap back" "$(cursor)" "$next"

# the details of a kernel: jump to a known kernel's start and select it
read -r kstart kend kname gx gy gz bx by bz corr pid < <(sql "$F" "SELECT k.start, k.end, s.value, gridX, gridY, gridZ,
    blockX, blockY, blockZ, correlationId, globalPid / 16777216 % 16777216 FROM CUPTI_ACTIVITY_KIND_KERNEL k
    JOIN StringIds s ON s.id = k.shortName WHERE deviceId = 0 AND streamId = 7 AND s.value = 'flash_fwd_kernel'
    ORDER BY start LIMIT 1 OFFSET 3" | tr '|' ' ')
ask g "go to time"
typed "@$kstart"
check_eq "go to a time" "$(cursor)" "$kstart"
pane=$(screen)
echo "$pane" | grep -q "^name=$kname\$" && ok "details: name" || bad "details name: $(echo "$pane" | tail -9)"
echo "$pane" | grep -q "dur=$(( kend - kstart ))(" && ok "details: duration" || bad "details dur: $(echo "$pane" | tail -9)"
echo "$pane" | grep -q "start=$kstart(" && ok "details: start" || bad "details start"
echo "$pane" | grep -qE "grid=$gx,$gy,$gz( |\$)" && ok "details: grid" || bad "details grid: $(echo "$pane" | tail -9)"
echo "$pane" | grep -qE "block=$bx,$by,$bz( |\$)" && ok "details: block" || bad "details block"
echo "$pane" | grep -q "device=0  stream=7" && ok "details: device and stream" || bad "details device/stream"
# nsys stats names a call without its version suffix (cudaLaunchKernel_v7000 -> cudaLaunchKernel), as nsl does
read -r aname atid < <(sql "$F" "SELECT s.value, r.globalTid % 16777216 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
    JOIN StringIds s ON s.id = r.nameId WHERE r.correlationId = $corr AND r.globalTid / 16777216 % 16777216 = $pid" |
    tr '|' ' ')
aname=$(echo "$aname" | sed 's/_v[0-9]*$//')
echo "$pane" | grep -q "api=$aname  api_tid=$atid" && ok "details: launching CUDA API call and thread" ||
  bad "details api: want api=$aname api_tid=$atid: $(echo "$pane" | tail -9)"
prev_end=$(sql "$F" "SELECT end FROM ($OPS) WHERE dev = 0 AND st = 7 AND start < $kstart ORDER BY start DESC LIMIT 1")
next_start=$(sql "$F" "SELECT min(start) FROM ($OPS) WHERE dev = 0 AND st = 7 AND start > $kstart")
echo "$pane" | grep -q "gap_before=$(( kstart - prev_end ))(" && ok "details: gap before" || bad "details gap before"
echo "$pane" | grep -q "gap_after=$(( next_start - kend ))(" && ok "details: gap after" || bad "details gap after"
# the NVTX stack at launch: the ranges of the launching thread that enclose the API call
read -r astart aend < <(sql "$F" "SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = $corr
    AND globalTid / 16777216 % 16777216 = $pid" | tr '|' ' ')
stack=$(sql "$F" "SELECT group_concat(text, ' > ') FROM (SELECT text FROM NVTX_EVENTS WHERE
    globalTid % 16777216 = $atid AND start <= $astart AND end >= $aend ORDER BY start, end DESC)")
echo "$pane" | grep -qF "nvtx=$stack" && ok "details: NVTX stack at launch" || bad "nvtx stack: want '$stack': $(echo "$pane" | grep nvtx=)"

# filter by name (regular expression): the next matching kernel only
ask / "filter (regex"
typed "SendRecv"
c=$(cursor)
keys n
want=$(sql "$F" "SELECT min(k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                 WHERE deviceId = 0 AND streamId = 7 AND s.value GLOB '*SendRecv*' AND k.start > $c")
check_eq "filter: snap to the next matching kernel" "$(cursor)" "$want"
check_eq "filter: events in the window" "$(lane_events)" "$(sql "$F" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
    JOIN StringIds s ON s.id = k.shortName WHERE deviceId = 0 AND streamId = 7 AND s.value GLOB '*SendRecv*'
    AND start < $(win_to) AND end > $(win_from)")"
ask / "filter (regex"
tmux send-keys -t $S BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace
typed ""
# minimum duration
ask m "minimum duration"
typed "200us"
c=$(cursor)
keys n
want=$(sql "$F" "SELECT min(start) $KERN AND end - start >= 200000 AND start > $c")
check_eq "minimum duration: snap to the next long kernel" "$(cursor)" "$want"
ask m "minimum duration"
typed "0"

# the whole trace again, then the Lua prompt
keys 0
check_eq "0: the whole trace" "$(win_from)" "${span%|*}"
ask : '^:$'
typed "#trace.kernels"
screen | grep -q "^$(sql "$F" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")\$" && ok ": prompt evaluates Lua" ||
  bad ": prompt: $(screen | tail -8)"
ask : '^:$'
typed "tui.cursor()"
screen | grep -q "^$(cursor)\$" && ok ": prompt sees the TUI's state" || bad "tui.cursor(): $(screen | tail -8)"
# relative times count from the trace's start, as diagnose, gaps and launch count (SQL: the earliest event
# of the kernel, memcpy, memset, NVTX and CUDA API tables)
ask : '^:$'
typed "tui.origin()"
first_event=$(sql "$F" "SELECT min(s) FROM (SELECT min(start) s FROM ($OPS) UNION ALL SELECT min(start) FROM NVTX_EVENTS
                        UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME)")
screen | grep -q "^$first_event\$" && ok "relative times count from the trace's first event (SQL)" ||
  bad "tui.origin(): want $first_event: $(screen | tail -8)"

# the NVTX tree: the nvtx analysis's numbers, and SQL's for a top-level range
keys T
wait_for "GPU Time (ns)" 1200 && ok "tree view" || bad "no tree: $(screen | head)"
"$NSL" run nvtx "$F" --arg only=tree --format csv > "$TMP/tree.csv"
row=$(screen | grep -E '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  [-+] FlashAttnFunc$' | head -1)
read -r g gs c cs n _ <<< "$row"
csv=$(grep -E ',0,"?FlashAttnFunc"?,"?FlashAttnFunc"?$' "$TMP/tree.csv" | head -1)
check_eq "tree row equals the nvtx analysis" "$g,$gs,$c,$cs,$n" "$(echo "$csv" | cut -d, -f1-5)"
# the tree merges PyTorch's per-call suffixes (", seq = N", ", op_id = N"); FlashAttnFunc ranges are all top-level
FA="(text = 'FlashAttnFunc' OR text GLOB 'FlashAttnFunc, seq = *')"
[ -n "$n" ] && check_eq "tree: instances (SQL)" "$n" "$(sql "$F" "SELECT count(*) FROM NVTX_EVENTS WHERE $FA")" ||
  bad "no FlashAttnFunc row in the tree: $(screen | head -8)"
[ -n "$c" ] && check_eq "tree: CPU time (SQL)" "$c" "$(sql "$F" "SELECT sum(end - start) FROM NVTX_EVENTS WHERE $FA")"
keys Enter
first=$(sql "$F" "SELECT min(start) FROM NVTX_EVENTS WHERE $FA")
check_eq "tree: enter shows the first instance on the timeline" "$(cursor)" "$first"
screen | grep -q "instance 1 of $n of FlashAttnFunc" && ok "tree: instance named" || bad "instance: $(screen | tail -2)"

# findings (diagnose) and back
keys F
wait_for "severity" 1200 && ok "findings view" || bad "no findings view: $(screen | head -5)"
# the second finding of diagnose (as `nsl run diagnose --format json` lists them) leads to its window
"$NSL" run diagnose "$F" --format json > "$TMP/diagnose.json"
read -r fid ffrom < <(python3 -c 'import json, sys
f = json.load(open(sys.argv[1]))["findings"][1]
print(f["id"], f.get("where", {}).get("from", ""))' "$TMP/diagnose.json")
keys Down Enter
if [ -n "$ffrom" ]; then
  check_eq "a finding leads to its place (cursor at its window's start)" "$(cursor)" "$ffrom"
  screen | grep -q "\[timeline\]" && screen | grep -q "$fid" && ok "the finding named on the timeline" ||
    bad "finding: $(screen | tail -2)"
fi
keys F
keys tab
screen | grep -q '\[timeline\]' && ok "tab cycles back to the timeline" || bad "tab: $(screen | head -1)"
keys '?'
screen | grep -q "zoom in / out at the cursor" && ok "? shows the keys" || bad "no help"
keys Escape

# resize: the screen is laid out again for 80x24
n=$(draws)
tmux resize-window -t $S -x 80 -y 24
settle "$n"
keys k k k k k k k k
w=$(screen | wc -L)
[ "$(screen | wc -l)" -le 24 ] && [ "$w" -le 80 ] && screen | grep -q '^GPU0 s7' && screen | grep -q 'nsl tui' &&
  ok "resize to 80x24 redraws" || bad "after resize: $(screen)"
check_eq "events in the window after the resize" "$(lane_events)" "$(in_window "$(win_from)" "$(win_to)")"

# Ctrl-C leaves, the terminal as it was
tmux send-keys -t $S C-c
wait_for "TUI-EXITED rc=0" 400 && ok "Ctrl-C leaves with exit code 0" || bad "Ctrl-C: $(screen | tail -3)"
wait_for "icanon" 200
sane=$(screen | grep -E 'icanon' | tail -1)
case "$sane" in *-icanon*|*-echo*|*-isig*|"") bad "terminal not sane after Ctrl-C: '$sane'" ;; *) ok "terminal sane after Ctrl-C" ;; esac

# without colour: the classes as characters; q leaves (a second session: the first keeps the tmux server up)
S1=$S
S=${S1}2
tmux new-session -d -s $S -x 100 -y 24 \
  "NO_COLOR=1 NSL_TUI_INFO=1 $NSL tui $F; echo TUI-EXITED rc=\$?; stty -a | tr ' ;' '\n\n' | grep -E '^-?(icanon|echo)\$' | tr '\n' ' '; echo; sleep 60"
wait_for "lanes; ? for the keys" 1200 && ok "loads without colour" || bad "no colour: $(screen)"
keys + + + + + +
screen | grep -E '^GPU0 s7' | cut -c27- | grep -qE '[#N<>=S|▌█]' && ok "no colour: events drawn as characters" ||
  bad "no colour: $(screen | grep GPU0)"
keys q
wait_for "TUI-EXITED rc=0" 400 && ok "q leaves" || bad "q: $(screen | tail -3)"
wait_for "icanon" 200
case "$(screen | grep icanon | tail -1)" in *-icanon*|*-echo*|"") bad "terminal not sane after q" ;; *) ok "terminal sane after q" ;; esac
tmux_end

# ---- loading in the background: a .nsys-rep that the stand-in nsys exports behind the first screen ----
# (tests/e2e/fake_nsys.sh copies $FAKE_NSYS_EXPORT; with FAKE_NSYS_EXPORT_GATE it writes half, then waits
# until the test opens the gate: the export runs for exactly as long as the checks made during it need).
# The stand-in is started through a wrapper that notes its pid, to see it run and end.
FAKE=$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh
export NSL_CACHE_DIR=$TMP/cache FAKE_NSYS_LOG=$TMP/nsys.log FAKE_NSYS_EXPORT=$F
unset NSYS FAKE_NSYS_EXPORT_FAIL FAKE_NSYS_EXPORT_HANG FAKE_NSYS_EXPORT_GATE NSL_NSYS_TIMEOUT
printf '#!/usr/bin/env bash\necho $$ > "%s/nsys.pid"\nexec "%s" "$@"\n' "$TMP" "$FAKE" > "$TMP/nsys"
chmod +x "$TMP/nsys"
make_report() { printf 'NVIDIA Tegra Profiler Report 2026@2@1@210-1v0.\n%s\n' "$2" > "$1"; }
nsys_running() { [ -s "$TMP/nsys.pid" ] && kill -0 "$(cat "$TMP/nsys.pid")" 2> /dev/null; }
# nsys_started: until the wrapper has noted its pid (the TUI's first screen may come before that: the export's
# progress shows from the moment nsys is spawned), at most 40 s; then whether it runs
nsys_started() {
  for _ in $(seq 400); do [ -s "$TMP/nsys.pid" ] && break; sleep 0.1; done
  nsys_running
}
sane_after() { # sane_after WHAT: the stty line printed after the TUI left shows canonical mode, echo and signals
  wait_for "icanon" 200
  case "$(screen | grep icanon | tail -1)" in *-icanon*|*-echo*|*-isig*|"") bad "$1: terminal not sane" ;;
    *) ok "$1: terminal sane" ;; esac
}
tui_session() { # tui_session ENV... -- ARGS...: nsl tui in a new session (stderr to $TMP/tui.err)
  local env=() ; while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  rm -f "$TMP/nsys.pid" "$TMP/tui.err"
  # a new session under a new name, then the old one goes: killing the server's last session first
  # lets the server exit while the next new-session talks to it (the new session then never starts)
  local old=$S
  SESSIONS=$(( ${SESSIONS:-0} + 1 )); S=nsltui-s$SESSIONS
  tmux new-session -d -s $S -x 120 -y 30 "env ${env[*]} $NSL tui $* --nsys $TMP/nsys 2> $TMP/tui.err; echo TUI-EXITED \
rc=\$?; stty -a | tr ' ;' '\n\n' | grep -E '^-?(icanon|echo|isig)\$' | tr '\n' ' '; echo; sleep 60" ||
    bad "tmux did not start a session for: $*"
  tmux_end "$old"
}
S=nsltui3
make_report "$TMP/run.nsys-rep" "tui"
tui_session FAKE_NSYS_EXPORT_GATE=$TMP/tui.gate NSL_TUI_INFO=1 -- "$TMP/run.nsys-rep"
if wait_for "exporting run.nsys-rep with nsys: [0-9.]* [KMG]*i*B, [0-9.]* s; step 1 of 8" 400 && nsys_started; then
  ok "background: the first screen comes while nsys exports, with the export's progress"
else bad "background: no progress while exporting: $(screen | tail -2)"; fi
screen | grep -q "opening run.nsys-rep" && ok "background: the timeline says what it opens" ||
  bad "background: opening: $(screen | head -5)"
tmux send-keys -t $S '?'
wait_for "zoom in / out at the cursor" 200 && nsys_running && ok "background: ? answers during the export" ||
  bad "background: ? while exporting: $(screen | head -3)"
tmux send-keys -t $S Escape
ask : '^:$'
tmux send-keys -t $S -l "6 * 7"
tmux send-keys -t $S Enter
wait_for "^42\$" 200 && nsys_running && ok "background: the : prompt answers during the export" ||
  bad "background: : while exporting: $(screen | tail -8)"
tmux send-keys -t $S T
wait_for "waiting for the NVTX ranges" 200 && ok "background: the tree waits for the NVTX ranges" ||
  bad "background: tree while loading: $(screen | head -5)"
nsys_running || bad "background: nsys ended before the gate was opened"
: > "$TMP/tui.gate"   # the export may finish now
# then the lanes, as SQL says, and the tree asked for meanwhile
wait_for "GPU Time (ns)" 2400 && ok "background: the tree asked for while loading comes when loaded" ||
  bad "background: no tree after loading: $(screen | head -5)"
screen | grep -qE '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  [-+] FlashAttnFunc$' && ok "background: the tree's rows" ||
  bad "background: tree rows: $(screen | head -5)"
tmux send-keys -t $S tab tab
wait_for "lanes; ? for the keys" 1200 || true
check_eq "background: window start after loading" "$(win_from)" "${span%|*}"
check_eq "background: window end after loading" "$(win_to)" "$(( ${span#*|} + 1 ))"
check_eq "background: one lane per GPU stream" "$(screen | grep -o '^GPU[0-9]* s[0-9]*' | tr '\n' ' ')" "$streams"
check_eq "background: events of the selected stream" "$(lane_events)" "$(in_window "$(win_from)" "$(win_to)")"
keys q
wait_for "TUI-EXITED rc=0" 400 && ok "background: q leaves after loading" || bad "background: q: $(screen | tail -3)"

# q during the export: leaves at once with exit code 0, the terminal sane, no nsys left running
make_report "$TMP/hang.nsys-rep" "hang"
tui_session FAKE_NSYS_EXPORT_HANG=1 -- "$TMP/hang.nsys-rep"
wait_for "exporting hang.nsys-rep with nsys" 400 && nsys_started || bad "background: the hanging export did not start"
tmux send-keys -t $S q
wait_for "TUI-EXITED rc=0" 200 && ok "background: q during the export leaves with exit code 0" ||
  bad "background: q during the export: $(screen | tail -3)"
sane_after "background: q during the export"
for _ in $(seq 600); do nsys_running || break; sleep 0.1; done
nsys_running && bad "background: nsys still runs after q" || ok "background: no nsys left after q"
# Ctrl-C during the export: the same
tui_session FAKE_NSYS_EXPORT_HANG=1 -- "$TMP/hang.nsys-rep"
wait_for "exporting hang.nsys-rep with nsys" 400 && nsys_started || bad "background: the hanging export did not start"
tmux send-keys -t $S C-c
wait_for "TUI-EXITED rc=0" 200 && ok "background: Ctrl-C during the export leaves with exit code 0" ||
  bad "background: Ctrl-C during the export: $(screen | tail -3)"
sane_after "background: Ctrl-C during the export"
for _ in $(seq 600); do nsys_running || break; sleep 0.1; done
nsys_running && bad "background: nsys still runs after Ctrl-C" || ok "background: no nsys left after Ctrl-C"

# a failing export: the screen goes, one line (nsl.open's message, as nsl info gives it), exit 1
make_report "$TMP/bad.nsys-rep" "bad"
want_err=$(FAKE_NSYS_EXPORT_FAIL=1 "$NSL" info "$TMP/bad.nsys-rep" --nsys "$TMP/nsys" 2>&1 > /dev/null)
tui_session FAKE_NSYS_EXPORT_FAIL=1 -- "$TMP/bad.nsys-rep"
wait_for "TUI-EXITED rc=1" 400 && ok "background: a failing export exits 1" || bad "background: failing export: $(screen | tail -3)"
# (the export's temporary file is named after the process)
check_eq "background: a failing export gives nsl.open's one line" "$(sed 's/export-[0-9]*\./export-N./' "$TMP/tui.err")" \
  "$(echo "$want_err" | sed 's/export-[0-9]*\./export-N./')"
echo "$want_err" | grep -q "nsys export failed" || bad "background: the failure names the export: '$want_err'"
sane_after "background: a failing export"

# a library warning while the TUI runs (a cache folder that cannot be made): on the status line, not
# written over the screen, and on stderr once the screen is gone
: > "$TMP/afile"
tui_session NSL_CACHE_DIR="$TMP/afile/cache" -- "$F"
wait_for "lanes; ? for the keys" 1200
screen | tail -1 | grep -q "warning: cannot use the cache" && ok "warnings: on the status line" ||
  bad "warnings: not on the status line: $(screen | tail -2)"
screen | grep -q "nsl: warning" && bad "warnings: written over the screen: $(screen | grep 'nsl: warning')" ||
  ok "warnings: not written over the screen"
tmux send-keys -t $S q
wait_for "TUI-EXITED rc=0" 400 || bad "warnings: q: $(screen | tail -3)"
grep -q "^nsl: warning: cannot use the cache: .*afile" "$TMP/tui.err" && ok "warnings: on stderr after the screen" ||
  bad "warnings: stderr: '$(cat "$TMP/tui.err")'"
tmux_end

# not a terminal, no trace, bad input: one line, non-zero
out=$("$NSL" tui "$F" < /dev/null 2>&1 > /dev/null); rc=$?
[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && ok "no terminal: one line, exit $rc" || bad "no terminal: rc=$rc '$out'"
"$NSL" tui > /dev/null 2>&1; check_eq "no trace: usage error" "$?" 2
out=$(script -qec "$NSL tui $TMP/missing.sqlite" /dev/null 2>&1 < /dev/null); rc=$?
check_eq "a missing file: exit 1" "$rc" 1
# before the screen (no escape sequences), in nsl.open's words (as nsl info gives them)
check_eq "a missing file: nsl.open's one line, before the screen" "$(echo "$out" | tr -d '\r')" \
  "$("$NSL" info "$TMP/missing.sqlite" 2>&1)"
finish
