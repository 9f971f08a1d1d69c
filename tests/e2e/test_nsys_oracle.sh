#!/usr/bin/env bash
# test_nsys_oracle.sh -- NVIDIA's own report and rule scripts as the oracle: on every shared export
# (../shared/data/nsys/*.sqlite), the real nsys (Debian's 2022.4) runs
#   nsys stats -r gpukernsum,cudaapisum,gpumemtimesum,gpumemsizesum,nvtxsum   (2022.4's report names)
#   nsys analyze -r cuda-sync-api,cuda-sync-memcpy,cuda-sync-memset,cuda-async-memcpy,gpu-starv,gpu-low-util
# and their output is compared with nsl's `summary` and `nvtx` tables and with the evidence tables of the
# matching `diagnose` checks (`--format json`: api_sync, memcpy_sync, memset_sync, memcpy_pageable_async,
# gpu_gaps, gpu_low_utilisation), after mapping 2022.4's grouping and definitions (tests/e2e/
# nsys_stats_compare.py and nsys_analyze_compare.py say how).  What 2022.4 does differently, found here:
#   - gpukernsum groups by name, grid and block (nsl, like later nsys, by name): rows merged per name;
#   - cudaapisum groups by string id: an export holding a name under two ids (mpi_cuda_rank0_2022.2:
#     cudaMemcpy and cudaMemcpy_v3020) gets two rows, merged per name; gpumemtimesum says "DtoH";
#   - cuda-sync-memcpy leaves out HtoD copies of 64000 bytes or less and copies within a device, and lists a
#     copy once per runtime row of its correlation id (twice in mpi_cuda_rank0_2022.2);
#   - gpu-low-util coalesces consecutive low chunks and rounds the chunk length up to a whole ns.
# Exports 2022.4's scripts refuse: none (REFUSED below).  Every report and rule runs on every shared export,
# 2021.2 to 2026.2; where the data is missing they print SKIPPED (nvtxsum without NVTX, gpukernsum on
# osrt_sampling_2025.5), and nsl then finds nothing either.
# Skips (passing, with the reason) without a real nsys or with NSL_NO_NONFREE=1.
. "$(dirname "$0")/lib.sh"
real_nsys_or_skip
export NSL_CACHE_DIR=$TMP/cache NSL_NO_CACHE=1   # each export is read three times, once each: no cache to fill
HERE=$NSL_SOURCE_DIR/tests/e2e
REFUSED=""   # "NAME.sqlite:why ..." for each export nsys 2022.4 cannot read (none so far)
REPORTS="gpukernsum cudaapisum gpumemtimesum gpumemsizesum nvtxsum"
RULES="cuda-sync-api cuda-sync-memcpy cuda-sync-memset cuda-async-memcpy gpu-starv gpu-low-util"
cd "$TMP" || exit 1

EXPORTS=("$NSL_DATA_DIR"/nsys/*.sqlite)
# The ASan build (NSL_TEST_SMALL) compares two of them, the oldest schema and the newest NCCL export: the
# comparison's numbers do not depend on the build, and nsys's Python reports are most of this test's time.
[ -n "${NSL_TEST_SMALL:-}" ] &&
  EXPORTS=("$NSL_DATA_DIR"/nsys/cuda_2021.2.sqlite "$NSL_DATA_DIR"/nsys/pytorch_nccl_2gpu_2026.2.sqlite)
for src in "${EXPORTS[@]}"; do
  name=$(basename "$src")
  mkdir -p "$TMP/$name.d"
  d=$TMP/$name.d
  cp "$src" "$d/$name"   # a copy: nsys gets no chance to touch the shared file
  f=$d/$name
  case " $REFUSED " in *" $name:"*) ok "$name: refused by nsys 2022.4 (recorded)"; continue ;; esac

  # ---- nsys stats against summary / nvtx ----
  nsys stats -r "$(echo $REPORTS | tr ' ' ,)" --format csv -o "$d/nsys" "$f" > "$d/stats.out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] || grep -q 'ERROR' "$d/stats.out"; then
    bad "$name: nsys stats refused it (exit $rc): $(grep -m1 ERROR "$d/stats.out")"
    continue
  fi
  "$NSL" run summary "$f" --format csv > "$d/summary.csv" 2> "$d/summary.err"
  "$NSL" run nvtx "$f" --format csv > "$d/nvtx.csv" 2> "$d/nvtx.err"
  nvtx_rc=$?
  for r in $REPORTS; do
    theirs=$d/nsys_$r.csv
    ours=$d/summary.csv
    [ "$r" = nvtxsum ] && ours=$d/nvtx.csv
    if grep -q "$r.py.*SKIPPED" "$d/stats.out"; then
      if [ "$r" = nvtxsum ]; then   # no NVTX for nsys: nsl says the same
        [ "$nvtx_rc" -ne 0 ] && grep -q 'no NVTX ranges' "$d/nvtx.err" && ok "$name: $r: no NVTX in nsys nor nsl" ||
          bad "$name: $r skipped by nsys, nsl: $(head -2 "$d/nvtx.csv")"
        continue
      fi
      theirs=/dev/null
    fi
    if python3 "$HERE/nsys_stats_compare.py" "$r" "$theirs" "$ours" > "$d/$r.cmp"; then ok "$name: $(tail -1 "$d/$r.cmp")"
    else bad "$name: $r: $(head -3 "$d/$r.cmp" | tr '\n' ' ')"; fi
  done

  # ---- nsys analyze against diagnose's evidence ----
  spec=$(for r in $RULES; do printf '%s:rows=-1,' "$r"; done)
  nsys analyze -r "${spec%,}" --format csv -o - "$f" > "$d/analyze.csv" 2> "$d/analyze.err"
  rc=$?
  if [ "$rc" -ne 0 ] || grep -q 'ERROR' "$d/analyze.err" "$d/analyze.csv"; then
    bad "$name: nsys analyze failed (exit $rc): $(grep -h -m1 ERROR "$d/analyze.err" "$d/analyze.csv")"
    continue
  fi
  "$NSL" run diagnose "$f" --format json > "$d/diagnose.json" 2> "$d/diagnose.err" ||
    bad "$name: diagnose: $(cat "$d/diagnose.err")"
  if python3 "$HERE/nsys_analyze_compare.py" "$d/analyze.csv" "$d/diagnose.json" > "$d/analyze.cmp"; then
    ok "$name: nsys analyze = diagnose evidence ($(grep -c 'agree$' "$d/analyze.cmp") rules; $(awk '/agree$/ { n += $(NF - 2) } END { print n + 0 }' "$d/analyze.cmp") rows)"
  else
    bad "$name: nsys analyze vs diagnose: $(grep DIFF "$d/analyze.cmp" | head -3 | tr '\n' ' ')"
  fi
  check_eq "$name: the shared export untouched" "$(sha256sum < "$src")" "$(sha256sum < "$f")"
done
finish
