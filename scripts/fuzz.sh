#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [HARNESS...] -- builds the libFuzzer harnesses of
# tests/fuzz (clang, ASan+UBSan, folder build-fuzz) and runs each for SECONDS
# (default 60), as many at once as there are cores (FUZZ_PARALLEL), each on one.  The committed corpus
# (tests/fuzz/corpus/NAME) seeds a working copy under build-fuzz/corpus/NAME,
# which grows across runs; the committed one changes only by hand (a crash
# input is added there as crash-<what>, and ctest replays it from then on).
# Prints executions, coverage (cov: edges, ft: features) and corpus size per
# harness; exits non-zero after the first crash, leak or timeout, whose input
# is left in build-fuzz/artifacts/NAME/.
# Environment: FUZZ_JOBS (build jobs, default 2), FUZZ_RSS_MB (default 2048),
# FUZZ_PARALLEL (harnesses run at once, default nproc), FUZZ_SEED (libFuzzer's
# -seed; default 0, a new one each run; scripts/test.sh gives a fixed one, so
# that the suite's short runs try about the same mutations on every machine:
# a run that ends early on a slow one tries a prefix of them, and a crash
# there is one that a landing had the chance to see).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
# every harness of tests/fuzz (fuzz_NAME.c), the list CMakeLists.txt builds
all=$(for f in tests/fuzz/fuzz_*.c; do n=${f##*/fuzz_}; echo "${n%.c}"; done)
names=${*:-$all}
dir=build-fuzz
mkdir -p "$dir"
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNSL_FUZZ=ON \
  -DNSL_WERROR=ON > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
targets=()
for n in $names; do targets+=("fuzz_$n"); done
cmake --build "$dir" -j"${FUZZ_JOBS:-2}" --target "${targets[@]}" > "$dir/build.log" 2>&1 ||
  { tail -30 "$dir/build.log"; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
printf '%-16s %8s %10s %8s %8s %7s %s\n' harness seconds execs cov ft corpus result
# fuzz_one NAME: runs one harness; its exit code is the harness's
fuzz_one() {
  local n=$1 work="$dir/corpus/$1" art="$dir/artifacts/$1" log="$dir/fuzz_$1.log"
  mkdir -p "$work" "$art"
  "$dir/fuzz_$n" -max_total_time="$secs" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -timeout=25 -max_len=262144 -seed="${FUZZ_SEED:-0}" \
    -print_final_stats=1 -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$n" > "$log" 2>&1
}
# report NAME RC: its row of the table; on a failure, the first error of its log
report() {
  local n=$1 rc=$2 log="$dir/fuzz_$1.log" execs last cov ft corp result=ok
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
  corp=$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*' || echo "?")
  [ "$rc" -eq 0 ] || result="FAILED (exit $rc; see $log and $dir/artifacts/$n)"
  printf '%-16s %8s %10s %8s %8s %7s %s\n' "$n" "$secs" "$execs" "$cov" "$ft" "$corp" "$result"
  if [ "$rc" -eq 0 ]; then return 0; fi
  # what a harness printed of its own (the internal error and its traceback) comes before the crash report
  grep -m1 -A30 '^internal error in analysis\|^the harness raised' "$log" | sed '/deadly signal/q' || true
  grep -m1 -A12 'ERROR:\|==ERROR\|runtime error\|deadly signal' "$log" || tail -20 "$log"
}
par=${FUZZ_PARALLEL:-$(nproc)}
status=0
declare -A running=()   # pid -> harness
# reap_one: waits for any running harness and reports it
reap_one() {
  local pid rc=0
  wait -n -p pid || rc=$?
  report "${running[$pid]}" "$rc"
  [ "$rc" -eq 0 ] || status=1
  unset "running[$pid]"
}
for n in $names; do
  while [ "${#running[@]}" -ge "$par" ]; do reap_one; done
  [ "$status" -eq 0 ] || break   # after the first failure, start no more
  fuzz_one "$n" &
  running[$!]=$n
done
while [ "${#running[@]}" -gt 0 ]; do reap_one; done
exit $status
