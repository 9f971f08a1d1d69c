#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [HARNESS...] -- builds the libFuzzer harnesses of
# tests/fuzz (clang, ASan+UBSan, folder build-fuzz) and runs each for SECONDS
# (default 60), one after the other, on one core.  The committed corpus
# (tests/fuzz/corpus/NAME) seeds a working copy under build-fuzz/corpus/NAME,
# which grows across runs; the committed one changes only by hand (a crash
# input is added there as crash-<what>, and ctest replays it from then on).
# Prints executions, coverage (cov: edges, ft: features) and corpus size per
# harness; exits non-zero after the first crash, leak or timeout, whose input
# is left in build-fuzz/artifacts/NAME/.
# Environment: FUZZ_JOBS (build jobs, default 2), FUZZ_RSS_MB (default 2048).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
all="nsys_sqlite bundle parquet hlo xz manifest classmap nsys_csv colcache analyses_sqlite analyses_csv"
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
printf '%-12s %8s %10s %8s %8s %7s %s\n' harness seconds execs cov ft corpus result
status=0
for n in $names; do
  work="$dir/corpus/$n"
  art="$dir/artifacts/$n"
  mkdir -p "$work" "$art"
  log="$dir/fuzz_$n.log"
  rc=0
  "$dir/fuzz_$n" -max_total_time="$secs" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -timeout=25 -max_len=262144 \
    -print_final_stats=1 -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$n" > "$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
  corp=$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*' || echo "?")
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc; see $log and $art)"
    status=1
  fi
  printf '%-12s %8s %10s %8s %8s %7s %s\n' "$n" "$secs" "$execs" "$cov" "$ft" "$corp" "$result"
  [ "$status" -eq 0 ] || { grep -m1 -A12 'ERROR:\|==ERROR\|runtime error\|deadly signal' "$log" || tail -20 "$log"; break; }
done
exit $status
