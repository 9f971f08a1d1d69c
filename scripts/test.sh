#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build and an ASan+UBSan build,
# each running every test (cmocka units, Lua tests inside nsl, end-to-end
# tests of the CLI on ../shared/data against SQL oracles), then every fuzzing
# harness for a short fixed time (FUZZ_SECONDS, default 20 each), so that each
# change is fuzzed a little; scripts/fuzz.sh SECONDS runs longer campaigns.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
for type in RelWithDebInfo Asan; do
  dir=build-test-$type
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=$type -DNSL_WERROR=ON
  cmake --build "$dir" -j"$jobs"
  echo "== tests, $type build"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 900
done
echo "== fuzzing, ${FUZZ_SECONDS:-20} s per harness"
scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
