#!/usr/bin/env bash
# The REPL driven through a pseudo-terminal (tmux): completion of a column
# name and of a method after a method call, an expression's value, an error
# that keeps the session, Ctrl-C during a long loop returning to the prompt,
# history kept across sessions.
. "$(dirname "$0")/lib.sh"
command -v tmux > /dev/null || { echo "tmux is missing (scripts/install-deps.sh installs it)"; exit 1; }
export NSL_HISTORY="$TMP/history" TMUX_TMPDIR="$TMP"
sample="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
S=nsltest
screen() { tmux capture-pane -t $S -p -S -200; }   # (with the lines scrolled off; lib.sh's wait_for reads it)
WAIT_TENTHS=1200   # a generous 120 s at most for each state
type_line() { tmux send-keys -t $S -l "$1"; tmux send-keys -t $S Enter; }

tmux new-session -d -s $S -x 160 -y 50 "$NSL repl $sample; echo REPL-EXITED; sleep 30"
wait_for "nsl>" && ok "prompt" || bad "no prompt: $(screen)"

type_line "k = trace.kernels"
type_line "#k"
wait_for "^4010$" && ok "expression value printed" || bad "no value for #k: $(screen | tail -5)"

tmux send-keys -t $S -l "x = k.demang"
tmux send-keys -t $S Tab
wait_for "x = k.demangled" || bad "completion not shown: $(screen | tail -3)"
tmux send-keys -t $S Enter
type_line "print(x and 'COMPLETED-' .. #x)"
wait_for "COMPLETED-4010" && ok "tab completion of a column name" || bad "completion: $(screen | tail -5)"

# after a method call: the groups' methods, without running the call first
tmux send-keys -t $S -l 'g = k:group_by("device"):ag'
tmux send-keys -t $S Tab
wait_for ':agg' || bad "completion after a call not shown: $(screen | tail -3)"
tmux send-keys -t $S -l '{"n=count"}'
tmux send-keys -t $S Enter
type_line "print('GROUPS-' .. #g .. '-' .. g.n:sum())"
wait_for "GROUPS-2-4010" && ok "tab completion after a method call" || bad "completion after a call: $(screen | tail -5)"

type_line "error('boom-123')"
wait_for "boom-123" && ok "error shown" || bad "error not shown"
type_line "print('STILL-' .. #k)"
wait_for "STILL-4010" && ok "session kept after an error" || bad "session lost after error: $(screen | tail -5)"

type_line "print('LOOPING') while true do end"
wait_for "^LOOPING" || bad "the loop did not start: $(screen | tail -3)"
tmux send-keys -t $S C-c
wait_for "interrupted" && ok "Ctrl-C interrupts a long loop" || bad "no interruption: $(screen | tail -5)"
type_line "print('AFTER-' .. 2 + 2)"
wait_for "AFTER-4" && ok "prompt back after Ctrl-C" || bad "session lost after Ctrl-C: $(screen | tail -5)"

type_line "for i = 1, 2 do"
type_line "print('LOOP' .. i) end"
wait_for "LOOP2" && ok "multi-line statement" || bad "multi-line: $(screen | tail -5)"
tmux send-keys -t $S C-d
wait_for "REPL-EXITED" && ok "Ctrl-D leaves" || bad "Ctrl-D did not leave"
tmux_end $S

grep -q "while" "$NSL_HISTORY" && ok "history written" || bad "history not written"
tmux new-session -d -s $S -x 160 -y 50 "$NSL repl $sample; echo REPL-EXITED; sleep 30"
wait_for "nsl>"
tmux send-keys -t $S Up
wait_for "print('LOOP' .. i) end" && ok "history recalled in a new session" || bad "history not recalled: $(screen | tail -3)"
tmux_end $S
finish
