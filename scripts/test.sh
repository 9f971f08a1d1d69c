#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build and an ASan+UBSan build,
# each running every test (cmocka units, Lua tests inside nsl, end-to-end
# tests of the CLI on ../shared/data against SQL oracles), then every fuzzing
# harness for a short fixed time (FUZZ_SECONDS, default 10 each, two at once
# on two cores, from a fixed seed: FUZZ_SEED, default 1), so that each change
# is fuzzed a little and alike on every machine; scripts/fuzz.sh
# SECONDS runs longer campaigns.  The warnings-as-errors build is the Release
# build scripts/setup.sh makes (-O3: gcc warns about some code, e.g.
# -Wmaybe-uninitialized, only when it optimises that hard), so a fresh setup
# prints no warning and the tests run the binary a user gets.
#
# Every step runs even when an earlier one failed, so one failure never hides
# another; the script fails when any step did, and ends with one line per
# step and its time.  Tests that keep several cores busy declare it to ctest
# (PROCESSORS, RESOURCE_LOCK in CMakeLists.txt), so -j(nproc) never runs more
# than the machine has.  The ASan build runs the same checks on smaller inputs
# where size adds nothing (CMakeLists.txt gives its tests NSL_TEST_SMALL=1).
# No test waits for a fixed time: each waits for a state with a generous
# deadline, and ctest's --timeout (300 s) only bounds a hang.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
status=0
summary=()
# step NAME COMMAND...: runs it, notes its time and result
step() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  local took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then summary+=("passed  ${took} s  $name")
  else summary+=("FAILED  ${took} s  $name (exit $rc)"); status=1; fi
}
build() { # build DIR TYPE
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE="$2" -DNSL_WERROR=ON > /dev/null && cmake --build "$1" -j"$jobs"
}
tests() { # tests DIR
  echo "== tests, $1"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$1" --output-on-failure -j"$jobs" --timeout 300
}
step "build, Release as scripts/setup.sh (-O3), warnings as errors" build build-test-Release Release
step "tests, Release build" tests build-test-Release
step "build, ASan+UBSan" build build-test-Asan Asan
step "tests, ASan+UBSan build" tests build-test-Asan
echo "== fuzzing, ${FUZZ_SECONDS:-10} s per harness"
step "fuzzing, ${FUZZ_SECONDS:-10} s per harness" env FUZZ_SEED="${FUZZ_SEED:-1}" scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
