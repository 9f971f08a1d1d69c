#!/usr/bin/env bash
# The compile analysis through the real CLI: the summary CSV under --out
# agrees with SQL on the same export, --fail-on gates on the warn share,
# every output format runs, a trace without compilation is no error, and the
# input is left untouched.
. "$(dirname "$0")/lib.sh"

nv="$TMP/nvfuser.sqlite"
cp -p "$NSL_DATA_DIR/nsys/nvfuser_2024.6.sqlite" "$nv"
before=$(fingerprint "$nv")

# csv_field FILE WHAT COLUMN: COLUMN of the summary rows whose What is WHAT.
csv_field() {
  awk -F, -v w="$2" -v c="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == c) k = i; if ($i == "What") j = i }; next }
    $j == w { print $k }' "$1"
}

if "$NSL" run compile "$nv" --arg limit=1000 --out "$TMP/c" > "$TMP/c.txt" 2> "$TMP/c.err"; then ok "compile runs"
else bad "compile failed: $(cat "$TMP/c.err")"; fi
want=$(sql "$nv" "SELECT sum(end - start) FROM NVTX_EVENTS WHERE text = 'KernelExecutor::compileFusion'")
got=$(csv_field "$TMP/c/summary.csv" nvFuser 'Time (ms)')
check_eq "compile: nvFuser time = SQL" "$(awk -v g="$got" 'BEGIN { printf "%.0f", g * 1e6 }')" "$want"
want=$(sql "$nv" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                  WHERE s.value GLOB 'cuLibraryLoad*' OR s.value GLOB 'cuModuleLoad*'
                     OR s.value GLOB 'cuLibraryGetKernel*'")
got=$(csv_field "$TMP/c/summary.csv" 'CUDA module/library loading (API)' Instances)
check_eq "compile: loading calls = SQL" "$got" "$want"
[ -f "$TMP/c/results.json" ] && ok "compile: results.json written" || bad "compile: no results.json"
grep -q "executor_utils::Nvrtc::CompileProgram" "$TMP/c.txt" && ok "compile: text names the NVRTC range" \
  || bad "compile: text lacks the NVRTC range"

# every range shows its time: ms with 3 decimals (µs), so no row of a compile table reads 0.0 ms; a
# 0.2 ms range prints its SQL total, not a rounded 0.2
want=$(sql "$nv" "SELECT printf('%.3f', sum(end - start) / 1e6) FROM NVTX_EVENTS WHERE text = 'Fusion copy'")
check_eq "compile: a 0.2 ms range's time, in µs precision (SQL)" \
  "$(grep -m1 ' Fusion copy ' "$TMP/c.txt" | awk '{ print $(NF - 2) }')" "$want"
zero=$(awk '/^Other compilers/ { on = 1; next } on && /^$/ && seen { exit } on && /^ nvFuser/ { seen = 1
            if ($(NF - 2) + 0 == 0 || $(NF - 1) + 0 == 0) print }' "$TMP/c.txt")
[ -z "$zero" ] && ok "compile: no compiler range prints 0 ms (its shortest self time is 800 ns)" ||
  bad "compile: rows printed as 0 ms: $zero"

# --fail-on: the process spends 27% of its run compiling and loading
"$NSL" run compile "$nv" --arg warn=10 --fail-on warning > /dev/null 2>&1
check_eq "compile: above warn, --fail-on warning exits 3" "$?" "3"
"$NSL" run compile "$nv" --arg warn=50 --fail-on warning > /dev/null 2>&1
check_eq "compile: below warn, exit 0" "$?" "0"

for fmt in csv json md tex; do
  if "$NSL" run compile "$nv" --format "$fmt" > "$TMP/f.$fmt" 2> "$TMP/f.err" && [ -s "$TMP/f.$fmt" ]; then
    ok "compile: --format $fmt"
  else bad "compile: --format $fmt failed: $(cat "$TMP/f.err")"; fi
done

"$NSL" run compile "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" > "$TMP/none.txt" 2>&1
check_eq "compile: nothing to report is no error" "$?" "0"
grep -q "No compilation or code loading found" "$TMP/none.txt" && ok "compile: says so" || bad "compile: no note"

check_eq "compile: the input is untouched" "$(fingerprint "$nv")" "$before"
finish
