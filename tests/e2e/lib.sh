# tests/e2e/lib.sh -- shared helpers of the end-to-end tests (sourced).
# ctest sets NSL (the binary), NSL_DATA_DIR, NSL_SOURCE_DIR, NSL_BUILD_DIR.
set -u
: "${NSL:?NSL must name the nsl binary}"
: "${NSL_DATA_DIR:?NSL_DATA_DIR must name ../shared/data}"
PASS=0
FAIL=0
TMP=$(mktemp -d)
# on the way out, a test's own tmux server (TMUX_TMPDIR=$TMP: the terminal tests) goes with its folder: a test
# stopped part way (a signal, a failed check's exit) leaves no TUI running
cleanup() {
  [ "${TMUX_TMPDIR:-}" = "$TMP" ] && command -v tmux > /dev/null && tmux kill-server 2> /dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# each result line ends with the seconds since the previous one, so a slow check shows in ctest's log
LAST_CHECK=${EPOCHREALTIME/[.,]/}
since_last() { # sets SINCE to "(+S.SS s)"
  local now=${EPOCHREALTIME/[.,]/} d
  d=$(( now - LAST_CHECK )); LAST_CHECK=$now
  printf -v SINCE '(+%d.%02d s)' $(( d / 1000000 )) $(( d % 1000000 / 10000 ))
}
ok() { PASS=$((PASS + 1)); since_last; echo "ok     $* $SINCE"; }
bad() { FAIL=$((FAIL + 1)); since_last; echo "FAIL   $* $SINCE"; }
check_eq() { # check_eq WHAT GOT EXPECTED
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$3', got '$2'"; fi
}
# The oracle: SQL through the sqlite3 program on an immutable, read-only open.
sql() { sqlite3 -readonly "file:$1?immutable=1" "$2"; }
has_table() { [ "$(sql "$1" "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='$2'")" = 1 ]; }
count_or_zero() { # count_or_zero FILE TABLE [WHERE]
  if has_table "$1" "$2"; then sql "$1" "SELECT count(*) FROM $2 ${3:-}"; else echo 0; fi
}
# Fingerprint of a file: content hash, size and mtime.
fingerprint() { echo "$(sha256sum < "$1" | cut -d' ' -f1) $(stat -c '%s %Y' "$1")"; }
# A real browser: headless Chromium (BROWSER, empty when missing), networking
# off (its own network namespace when possible, and a proxy that answers nothing).
BROWSER=$(command -v chromium || command -v chromium-browser || true)
NETOFF=""
unshare -n true 2> /dev/null && NETOFF="unshare -n"
run_browser() {
  timeout 120 $NETOFF "$BROWSER" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --proxy-server=http://127.0.0.1:9 --user-data-dir="$TMP/chrome-profile" --enable-logging=stderr --v=0 "$@"
}
console_clean() { # console_clean FILE WHAT (messages of Chromium's own chrome:// pages left out)
  if grep -E "CONSOLE|Uncaught|SyntaxError|Refused" "$1" | grep -v -i "deprecat" |
     grep -v 'source: chrome://' > "$TMP/console.txt"; then
    bad "$2: console errors: $(head -3 "$TMP/console.txt")"
  else ok "$2: no console errors"; fi
}
# tmux_end [SESSION]: ends that session (without one: the whole server), and when no session is left, waits
# until the server has exited (a client then finds "no server running", or no socket at all: "error connecting";
# tmux leaves its socket file behind).
# A new-session sent while the server is exiting talks to it and never starts, which made checks fail on a
# busy machine.
tmux_end() {
  if [ $# -gt 0 ]; then tmux kill-session -t "$1" 2> /dev/null; else tmux kill-server 2> /dev/null; fi
  tmux has-session 2> /dev/null && return 0
  for _ in $(seq 600); do tmux list-sessions 2>&1 | grep -q "no server running\|error connecting" && return 0; sleep 0.05; done
}
# The screen of a TUI test's tmux session S, and waits for its states (the TUI runs with NSL_TUI_INFO=1: draws=N
# on its status line counts the redraws).  A deadline only bounds a failure: generous enough for an ASan build
# on a busy machine.
screen() { tmux capture-pane -t $S -p; }
wait_for() { # wait_for PATTERN [TENTHS]: until the screen shows it, at most TENTHS tenths of a second (default
  # WAIT_TENTHS, else 600: 60 s); at once when the session is gone (what it ran has ended: the state never comes)
  for _ in $(seq "${2:-${WAIT_TENTHS:-600}}"); do
    screen | grep -q -- "$1" && return 0
    tmux has-session -t "$S" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
draws() { screen | grep -o 'draws=[0-9]*' | tail -1 | cut -d= -f2; }
redrawn() { # redrawn BEFORE [TRIES [PERIOD]]: until a redraw after BEFORE (draws); TRIES polls PERIOD s apart
  # (3000 x 0.02: 60 s); fails when none comes
  for _ in $(seq "${2:-3000}"); do [ "$(draws)" != "$1" ] && return 0; sleep "${3:-0.02}"; done
  return 1
}
settle() { # settle BEFORE: until a redraw after BEFORE, then until the screen stays the same for 0.3 s
  # (a key that changes nothing draws nothing: the wait for the redraw is short, 200 x 0.05 s, and the still
  # screen decides)
  redrawn "$1" 200 0.05
  local a b
  for _ in $(seq 50); do a=$(screen); sleep 0.3; b=$(screen); [ "$a" = "$b" ] && break; done
}
# usage_error WHAT PATTERN nsl-args...: nsl refuses as a usage error: exit 2, one line on stderr matching
# PATTERN (grep), nothing on stdout
usage_error() {
  local what=$1 pat=$2
  shift 2
  "$NSL" "$@" > "$TMP/usage.out" 2> "$TMP/usage.err"
  local rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l < "$TMP/usage.err")" = 1 ] && grep -q -- "$pat" "$TMP/usage.err" &&
     [ ! -s "$TMP/usage.out" ]; then ok "$what: one line, exit 2"
  else bad "$what: exit $rc, stdout $(wc -c < "$TMP/usage.out") bytes, stderr: $(head -2 "$TMP/usage.err")"; fi
}
finish() {
  echo "$PASS passed, $FAIL failed"
  [ "$FAIL" -eq 0 ]
}
# real_nsys_or_skip: sets NSYS_REAL to a real Nsight Systems (the nsys in PATH, answering --version as NVIDIA's
# does), or ends the test as passed, saying why: NSL_NO_NONFREE=1, or none installed (scripts/install-deps.sh
# installs Debian's nsight-systems).
real_nsys_or_skip() {
  if [ "${NSL_NO_NONFREE:-0}" = 1 ]; then echo "skipped: NSL_NO_NONFREE=1 (the tests of a real nsys)"; exit 0; fi
  NSYS_REAL=$(command -v nsys || true)
  NSYS_VERSION=$([ -n "$NSYS_REAL" ] && "$NSYS_REAL" --version 2> /dev/null | sed -n 's/^NVIDIA Nsight Systems version //p')
  if [ -z "$NSYS_VERSION" ]; then
    echo "skipped: no real nsys in PATH (scripts/install-deps.sh installs Debian's nsight-systems)"
    exit 0
  fi
}
