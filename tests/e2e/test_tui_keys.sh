#!/usr/bin/env bash
# nsl tui: every key the help (`?`) lists, pressed in every view, on a plain
# export, a multi-rank bundle (two ranks) and an nsys-jax archive; after each
# key the screen must show no error line (a key that fails shows "error: ..."
# in the bottom pane; a crash ends the TUI) and the TUI must still answer.
# The prompts (g / m :) get a value and Enter.  Then `q` leaves with exit 0.
# Every wait is for a screen state (the redraw counter of NSL_TUI_INFO=1, a
# prompt, a view's title), with a generous deadline, never a fixed delay.
. "$(dirname "$0")/lib.sh"
command -v tmux > /dev/null || { echo "tmux is missing (scripts/install-deps.sh installs it)"; exit 1; }
if "$NSL" tui "$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite" < /dev/null 2>&1 | grep -q "built without ncurses"; then
  echo "built without ncurses: nothing to press"; finish; exit
fi
export TMUX_TMPDIR="$TMP"
S=nsltuikeys
# screen, wait_for, draws, redrawn: lib.sh's (each key ends with a redraw: redrawn waits for it, 60 s at most)
ERRORS='error: |attempt to |stack traceback|\.lua:[0-9]+:|TUI-EXITED'
check_screen() { # check_screen WHAT: no error line on the screen
  if screen | grep -E -q "$ERRORS"; then
    bad "$WHAT $1: $(screen | grep -E "$ERRORS" | head -2)"
    return 1
  fi
  return 0
}
press() { # press VIEW KEY...: each key, a redraw, no error
  local view=$1 n k
  shift
  for k in "$@"; do
    n=$(draws)
    local t0=${EPOCHREALTIME/[.,]/}
    tmux send-keys -t $S "$k"
    redrawn "$n" || { bad "$WHAT $view: no redraw after key '$k': $(screen | tail -2)"; return 1; }
    # a key that takes long is named in the log (to find what makes the walk slow)
    local us=$(( ${EPOCHREALTIME/[.,]/} - t0 ))
    [ $us -lt 2000000 ] || echo "note   $WHAT $view: key '$k' took $(( us / 1000 )) ms"
    check_screen "$view: key '$k'" || return 1
  done
  return 0
}
prompt() { # prompt KEY PROMPT TEXT: a key that opens a prompt, a value, Enter
  local n
  tmux send-keys -t $S "$1"
  wait_for "$2" 300 || { bad "$WHAT: key '$1' shows no prompt '$2'"; return 1; }
  n=$(draws)
  tmux send-keys -t $S -l "$3"
  tmux send-keys -t $S Enter
  redrawn "$n" || { bad "$WHAT: no redraw after '$1' with '$3'"; return 1; }
  check_screen "key '$1' with '$3'"
}

walk() { # walk WHAT FILE...: every key of the help on every view
  WHAT=$1
  shift
  tmux_end $S
  tmux new-session -d -s $S -x 100 -y 34 "NSL_TUI_INFO=1 $NSL tui $*; echo TUI-EXITED rc=\$?; sleep 600"
  wait_for "lanes; ? for the keys" 1200 || { bad "$WHAT: no first screen: $(screen | tail -3)"; return; }
  local fails=$FAIL
  # the help, then any key back
  press help "?" x
  # the timeline
  press timeline Right Left a d h l "[" "]" + = w - s 0 Home Down Up j k NPage PPage n p Enter e t N \
    b "'" B "{" Right Right "}" z c c i i Escape
  prompt g "go to time" "1ms"
  prompt / "filter (regex" "e"
  press timeline n p
  prompt / "filter (regex" ""
  prompt m "minimum duration" "10us"
  prompt m "minimum duration" "0"
  prompt : "^:$" "#trace.kernels"   # (capture-pane drops the prompt's trailing space)
  press timeline Enter n
  # the tree: move, expand, collapse, the kernels under each of the first ranges, their instances
  press tree T
  wait_for "NVTX range\|no NVTX" 1200 || bad "$WHAT: the tree never shows"
  local i
  for i in 1 2 3 4 5 6; do press tree Right k Enter Down || break; done
  press tree Up Left Left
  # the findings (diagnose's checks run once)
  press findings F
  wait_for "finding" 1800 || bad "$WHAT: the findings never show"
  press findings Down Up Enter
  press views Tab Tab Tab
  [ "$FAIL" -eq "$fails" ] && ok "$WHAT: every key of the help, no error"
  tmux send-keys -t $S q
  wait_for "TUI-EXITED" 300 && check_eq "$WHAT: q leaves with exit 0" "$(screen | grep -o 'TUI-EXITED rc=[0-9]*')" \
    "TUI-EXITED rc=0" || bad "$WHAT: q does not leave: $(screen | tail -3)"
  tmux_end $S
}

D="$NSL_DATA_DIR/nsys"
walk "plain export" "$D/pytorch_nccl_2gpu_2026.2.sqlite"
cp "$D/pytorch_nccl_2gpu_2026.2.sqlite" "$TMP/rank0.sqlite"
cp "$D/pytorch_h100_2gpu_2026.2.sqlite" "$TMP/rank1.sqlite"
if "$NSL" bundle "$TMP/rank0.sqlite" "$TMP/rank1.sqlite" -o "$TMP/ranks.zip" > /dev/null 2>&1; then
  walk "two-rank bundle" "$TMP/ranks.zip"
else bad "making the two-rank bundle: $("$NSL" bundle "$TMP/rank0.sqlite" "$TMP/rank1.sqlite" -o "$TMP/x.zip" 2>&1)"; fi
walk "nsys-jax archive" "$NSL_DATA_DIR/nsys-jax/pax_fsdp4_4proc_proc0.zip"
finish
