#!/usr/bin/env bash
# Bad input: one clear line on stderr naming the file and the problem, a
# non-zero exit code, never a crash (the suite also runs under ASan/UBSan).
. "$(dirname "$0")/lib.sh"

# expect_error WHAT EXIT_CODE PATTERN [LINES] -- nsl ARGS...
expect_error() {
  local what=$1 code=$2 pattern=$3 lines=$4
  shift 5
  "$NSL" "$@" > "$TMP/out" 2> "$TMP/err"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$what: exit code $rc, expected $code ($(head -3 "$TMP/err"))"; return; fi
  if ! grep -q -- "$pattern" "$TMP/err"; then bad "$what: stderr lacks '$pattern': $(cat "$TMP/err")"; return; fi
  if [ "$lines" != any ] && [ "$(wc -l < "$TMP/err")" -ne "$lines" ]; then
    bad "$what: $(wc -l < "$TMP/err") lines on stderr, expected $lines: $(cat "$TMP/err")"; return
  fi
  if grep -q -E 'AddressSanitizer|runtime error|Segmentation' "$TMP/err"; then bad "$what: crashed"; return; fi
  ok "$what"
}

real="$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite"
expect_error "missing file" 1 "$TMP/nope.sqlite" 1 -- info "$TMP/nope.sqlite"
mkdir "$TMP/dir"
expect_error "a directory" 1 "$TMP/dir" 1 -- info "$TMP/dir"
echo "hello, not a database" > "$TMP/text.sqlite"
expect_error "a text file" 1 "$TMP/text.sqlite" 1 -- info "$TMP/text.sqlite"
: > "$TMP/empty.sqlite"
expect_error "an empty file" 1 "$TMP/empty.sqlite" 1 -- info "$TMP/empty.sqlite"
sqlite3 "$TMP/other.sqlite" "CREATE TABLE customers(id INTEGER, name TEXT); INSERT INTO customers VALUES (1, 'x');"
expect_error "a SQLite file that is not an nsys export" 1 "not an nsys export" 1 -- info "$TMP/other.sqlite"
big="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
head -c $(( $(stat -c %s "$big") / 2 )) "$big" > "$TMP/truncated.sqlite"
expect_error "a truncated export" 1 "$TMP/truncated.sqlite" 1 -- run summary "$TMP/truncated.sqlite"

# An export with no activity at all: a real export with its activity tables dropped (a copy).
cp "$real" "$TMP/noact.sqlite"
for t in $(sqlite3 "$TMP/noact.sqlite" "SELECT name FROM sqlite_master WHERE type='table' AND
           (name LIKE 'CUPTI_ACTIVITY_KIND_%' OR name IN ('NVTX_EVENTS','OSRT_API'))"); do
  sqlite3 "$TMP/noact.sqlite" "DROP TABLE $t"
done
expect_error "an export with no activity (summary)" 1 "no CUDA activity" 1 -- run summary "$TMP/noact.sqlite"
if "$NSL" info "$TMP/noact.sqlite" > /dev/null 2>&1; then ok "info on an export with no activity"
else bad "info on an export with no activity fails"; fi

expect_error "unknown analysis" 2 "no analysis 'nonesuch'" 1 -- run nonesuch "$real"
expect_error "unknown argument" 2 "has no argument 'bogus'" 1 -- run summary "$real" --arg bogus=1
expect_error "argument of the wrong type" 2 "is not a number" 1 -- run summary "$real" --arg limit=many
expect_error "missing script" 1 "$TMP/none.lua" 1 -- run "$TMP/none.lua" "$real"
printf 'return {\n  run = function(trace, args, out)\n    local x = = 1\n  end,\n}\n' > "$TMP/syntax.lua"
expect_error "script with a syntax error" 1 "syntax.lua:3:" 1 -- run "$TMP/syntax.lua" "$real"
printf 'return {\n  run = function(trace, args, out)\n    local k = trace.kernels\n    return k.nonesuch:sum()\n  end,\n}\n' > "$TMP/runtime.lua"
expect_error "script with a runtime error" 1 "runtime.lua:4:" any -- run "$TMP/runtime.lua" "$real"
grep -q "stack traceback" "$TMP/err" && ok "runtime error shows a traceback" || bad "runtime error without traceback"
expect_error "no trace given" 2 "needs a trace" 1 -- run summary
expect_error "unknown option" 2 "unknown option" 2 -- info "$real" --bogus
expect_error "unknown command" 2 "unknown command" 2 -- frobnicate
finish
