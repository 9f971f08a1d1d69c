#!/usr/bin/env bash
# An --arg value that a shipped analysis rejects itself (out of range, not a
# duration, not one of the values it takes, a report or label it cannot
# use) is a usage error, as a value outside an argument's declared choices
# is: one line on stderr naming the argument, nothing on stdout, exit 2.
# Failures of the input stay exit 1.
. "$(dirname "$0")/lib.sh"
H=$NSL_DATA_DIR/nsys/pytorch_h100_2gpu_2026.2.sqlite
N=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
T=$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite
export NSL_CACHE_DIR=$TMP/cache

# a declared choice (the runner's check) and the analysis's own checks give the same exit code
usage_error "summary --arg only=memory (a declared choice)" "did you mean" run summary "$T" --arg only=memory
usage_error "gaps --arg min=soon (not a duration)" "--arg min: 'soon' is not a duration" run gaps "$T" --arg min=soon
usage_error "gaps --arg scope=nope" "--arg scope: 'nope' is not device, stream or all" run gaps "$T" --arg scope=nope
usage_error "launch --arg n=many (declared number)" "n" run launch "$T" --arg n=many
usage_error "timeline --arg width=10 (out of range)" "--arg width: 200 to 16384 px" run timeline "$T" --arg width=10
usage_error "timeline --arg from=1h (past the end)" "the window from 1h to the end is empty" run timeline "$T" --arg from=1h
usage_error "export --arg to=yesterday" "--arg to" run export "$T" --arg to=yesterday
usage_error "diagnose --arg chunks=0" "--arg chunks must be a whole number" run diagnose "$T" --arg chunks=0
usage_error "diagnose --arg gap=soon (a threshold)" "--arg gap" run diagnose "$T" --arg gap=soon
usage_error "straggler --arg min_share=2" "min_share must be a number from 0 to 1" run straggler "$N" --arg min_share=2
usage_error "straggler --arg late_share=0" "late_share must be" run straggler "$N" --arg late_share=0
usage_error "straggler --arg min_delay=soon" "--arg min_delay" run straggler "$N" --arg min_delay=soon
usage_error "classes --arg names=nope (a declared choice)" "--arg names: 'nope' is not one of" run classes "$T" --arg names=nope
usage_error "classes without a trace or config" "classes needs a trace" run classes
usage_error "diff --arg before=nope" "diff: no report 'nope'" run diff "$H" "$N" --arg before=nope
usage_error "diff of one run" "diff: needs two runs" run diff "$T"
usage_error "diff --arg before=1 --arg after=1" "the same report" run diff "$H" "$N" --arg before=1 --arg after=1
usage_error "compare --arg labels with a wrong count" "labels: 1 label for 2 runs" run compare "$H" "$N" --arg labels=a
usage_error "compare --arg figures=gif" "expected png, svg, both or none" run compare "$H" "$N" --arg figures=gif

# the input's failures stay exit 1
"$NSL" run iterations "$T" > /dev/null 2>&1
check_eq "a trace without steps (the input's failure): exit 1" "$?" 1
finish
