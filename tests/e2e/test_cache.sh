#!/usr/bin/env bash
# The columnar cache: the same results without it, cold and warm (numbers
# checked against SQL through sqlite3 on the same file); every kind of damage
# to a cache file met with a correct result and the file written again; two
# processes filling one entry; eviction under NSL_CACHE_MAX; an unusable cache
# folder (one warning, correct results); --no-cache; nsl cache list|clear.
. "$(dirname "$0")/lib.sh"
export NSL_CACHE_DIR="$TMP/cache"
unset NSL_NO_CACHE NSL_CACHE_MAX
exp="$TMP/run.sqlite"
cp "$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$exp"
other="$TMP/other.sqlite"
cp "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" "$other"
bundle=$(readlink -f "$NSL_SOURCE_DIR/samples/nccl_4rank_straggler.zip")
jax="$NSL_DATA_DIR/nsys-jax/pax_fsdp4_4proc_proc0.zip"

# kernels, NVTX and API: count, time sums and bounds, distinct names (string columns)
cat > "$TMP/digest.lua" <<'LUA'
return { run = function(trace)
  local k, n, a = trace.kernels, trace.nvtx, trace.api
  print(#k, k.start:sum(), k.stop:max(), k.demangled:unique():count(), k.grid_x:sum())
  print(#n, n.start:sum(), n.text:unique():count())
  print(#a, a.stop:sum(), a.name:unique():count())
end }
LUA
oracle() {
  sql "$1" "SELECT count(*), sum(start), max(end), count(DISTINCT demangledName), sum(gridX) FROM CUPTI_ACTIVITY_KIND_KERNEL" | tr '|' '\t'
  sql "$1" "SELECT count(*), sum(start), count(DISTINCT coalesce(text, s.value)) FROM NVTX_EVENTS LEFT JOIN StringIds s ON s.id = textId WHERE eventType IN (34, 59, 60)" | tr '|' '\t'
  sql "$1" "SELECT count(*), sum(r.end), count(DISTINCT s.value) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId" | tr '|' '\t'
}
digest() { "$NSL" run "$TMP/digest.lua" "$@" | tr -s ' \t' '\t'; }
# same_three LABEL ARGS...: nsl ARGS --format json without the cache, in the run that fills it (or finds it
# filled) and in a warm run: byte-identical, and not empty
same_three() {
  local label=$1
  shift
  NSL_NO_CACHE=1 "$NSL" "$@" --format json > "$TMP/none.json" 2>&1
  "$NSL" "$@" --format json > "$TMP/cold.json" 2>&1
  "$NSL" "$@" --format json > "$TMP/warm.json" 2>&1
  [ -s "$TMP/none.json" ] && cmp -s "$TMP/cold.json" "$TMP/none.json" && cmp -s "$TMP/warm.json" "$TMP/none.json" &&
    ok "$label: cold, warm and no cache byte-identical" || bad "$label differs with the cache"
}
entry() { # the entry folder of input $1 (a plain export)
  dirname "$(grep -lx "input $(readlink -f "$1")" "$NSL_CACHE_DIR"/columns/*/entry 2>/dev/null | head -1)"; }

# --- the oracle, cold, warm, without the cache ---
want=$(oracle "$exp" | tr -s ' \t' '\t')
cold=$(digest "$exp")
check_eq "cold cache: kernels/NVTX/API digests equal SQL on the export" "$cold" "$want"
e=$(entry "$exp")
[ -n "$e" ] && [ -f "$e/c-kernels-start" ] && ok "the first load wrote an entry with its columns" || bad "no cache entry after a load"
warm=$(digest "$exp")
check_eq "warm cache: the same digests" "$warm" "$want"
check_eq "--no-cache: the same digests" "$(digest "$exp" --no-cache)" "$want"
# nsl.open's option table: {cache = false} reads the export itself and writes no entry, as --no-cache does
cat > "$TMP/open_opts.lua" <<'LUA'
local nsl = require("nsl")
return { args = {file = {default = ""}, cache = {default = "no"}}, run = function(trace, args)
  local t = assert(nsl.open({args.file}, {cache = args.cache == "yes"}))
  local k = t.kernels
  print(#k, k.start:sum(), k.stop:max(), k.demangled:unique():count(), k.grid_x:sum())
  local ok, err = pcall(nsl.open, args.file, {cache = false, color = 1})
  print(ok and "opened" or err)
end }
LUA
fresh="$TMP/open_opts_cache"
got=$(NSL_CACHE_DIR="$fresh" "$NSL" run "$TMP/open_opts.lua" "$other" --arg file="$exp" --arg cache=no)
check_eq "nsl.open{...}, {cache = false}: kernel digest equal to SQL" "$(echo "$got" | head -1 | tr -s ' \t' '\t')" \
  "$(echo "$want" | head -1)"
echo "$got" | tail -1 | grep -q "unknown option 'color'" && ok "nsl.open: an unknown option is an error naming it" ||
  bad "nsl.open took an unknown option: $(echo "$got" | tail -1)"
# (the run's own input, another export, goes through the cache)
in_fresh() { grep -lx "input $(readlink -f "$1")" "$fresh"/columns/*/entry 2>/dev/null; }
[ -z "$(in_fresh "$exp")" ] && [ -n "$(in_fresh "$other")" ] &&
  ok "nsl.open{...}, {cache = false}: no cache entry written for it" ||
  bad "nsl.open{...}, {cache = false} wrote to the cache: $(cat "$fresh"/columns/*/entry)"
NSL_CACHE_DIR="$fresh" "$NSL" run "$TMP/open_opts.lua" "$other" --arg file="$exp" --arg cache=yes --no-cache > /dev/null
e=$(NSL_CACHE_DIR="$fresh" entry "$exp")
[ -n "$e" ] && [ -f "$e/c-kernels-start" ] && ok "nsl.open{...}, {cache = true} under --no-cache: the loads fill an entry" ||
  bad "nsl.open{...}, {cache = true} wrote no cache entry"
for a in summary nvtx gaps; do
  for f in text json; do
    NSL_CACHE_DIR="$TMP/c2" "$NSL" run $a "$exp" --format $f > "$TMP/cold.$a.$f" 2>&1
    NSL_CACHE_DIR="$TMP/c2" "$NSL" run $a "$exp" --format $f > "$TMP/warm.$a.$f" 2>&1
    NSL_NO_CACHE=1 "$NSL" run $a "$exp" --format $f > "$TMP/none.$a.$f" 2>&1
    cmp -s "$TMP/cold.$a.$f" "$TMP/none.$a.$f" && cmp -s "$TMP/warm.$a.$f" "$TMP/none.$a.$f" &&
      ok "$a --format $f: cold, warm and no cache byte-identical" || bad "$a --format $f differs with the cache"
  done
done
# a bundle of four reports (times shifted per report) and an nsys-jax archive
for input in "$bundle" "$jax"; do
  a=summary; [ "$input" = "$jax" ] && a=jax_summary
  same_three "$a on $(basename "$input")" run $a "$input"
done
mkdir -p "$TMP/members"
(cd "$TMP/members" && unzip -q "$bundle" 'reports/*')
bwant=$(for f in $(unzip -Z1 "$bundle" 'reports/*.sqlite'); do sql "$TMP/members/$f" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"; done | paste -sd' ')
cat > "$TMP/per_report.lua" <<'LUA'
return { run = function(trace)
  local k = trace.kernels
  local g = k:group_by("report"):agg{"n=count"}:sort("report")
  local t = {}
  for i = 1, #g do t[#t + 1] = g.n[i] end
  print(table.concat(t, " "))
  local r = trace.reports
  local s = k:filter(k.report:eq(#r - 1)).start
  print(s:min() - r.time_offset[#r])
end }
LUA
bgot=$("$NSL" run "$TMP/per_report.lua" "$bundle" | head -1)
check_eq "bundle from a warm cache: kernels per report equal SQL on its members" "$bgot" "$bwant"
last=$(unzip -Z1 "$bundle" 'reports/*.sqlite' | tail -1)
check_eq "bundle from a warm cache: the last report's first kernel, its clock offset taken off, equals SQL" \
  "$("$NSL" run "$TMP/per_report.lua" "$bundle" | tail -1)" "$(sql "$TMP/members/$last" "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")"

# --- a warm open reads the report's metadata from its entry, and opens no SQLite until a column is missing ---
lz="$TMP/lazy.sqlite"
cp "$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$lz"
cat > "$TMP/held.lua" <<'LUA'
-- how many descriptors of the process hold the export open: after the open, after a load of a column in the
-- entry, after a load of one the entry lacks (only with MORE=1; its sum printed)
return { run = function(trace)
  local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
  local function held()
    local n, p = 0, io.popen("ls -l /proc/" .. pid .. "/fd 2> /dev/null")
    for l in p:lines() do if l:find("lazy.sqlite", 1, true) then n = n + 1 end end
    p:close()
    return n
  end
  local got = {"open " .. held()}
  trace.kernels:load{"start"}
  got[#got + 1] = "cached " .. held()
  if os.getenv("MORE") == "1" then
    if os.getenv("TOUCH") == "1" then os.execute("touch " .. trace.reports.path[1]) end
    trace.memcpy:load{"bytes"}
    got[#got + 1] = "missing " .. held() .. " " .. trace.memcpy.bytes:sum()
  end
  print(table.concat(got, ", "))
end }
LUA
held() { NSL_CACHE_DIR="$TMP/lazy_cache" "$NSL" run "$TMP/held.lua" "$lz" 2>&1; }
cold_held=$(held)
case "$cold_held" in "open 0"*) bad "a cold open holds the export open: $cold_held" ;;
  *) ok "a cold open reads the export through SQLite (it holds it open: $cold_held)" ;; esac
le=$(NSL_CACHE_DIR="$TMP/lazy_cache" entry "$lz")
[ -n "$le" ] && [ -f "$le/info" ] && ok "the entry keeps the report's metadata (info)" || bad "no info file in the entry"
check_eq "a warm open and a load the entry holds: the export is not opened" "$(held)" "open 0, cached 0"
check_eq "a column the entry lacks: the export opened then, the column equal to SQL" "$(MORE=1 held)" \
  "open 0, cached 0, missing 1 $(sql "$lz" "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")"
for f in text json; do   # the report's metadata (nsys and schema versions, host, session start) as the export gives it
  NSL_CACHE_DIR="$TMP/lazy_cache" "$NSL" run info "$lz" --format $f > "$TMP/lazy.warm.$f" 2>&1
  NSL_NO_CACHE=1 "$NSL" run info "$lz" --format $f > "$TMP/lazy.none.$f" 2>&1
  grep -q "2026.2.1.210" "$TMP/lazy.none.$f" && cmp -s "$TMP/lazy.warm.$f" "$TMP/lazy.none.$f" &&
    ok "info ($f) from the entry's metadata = from the export" || bad "info ($f) differs from the entry's metadata"
done
# a damaged info file: the export is opened, with the same report, and the file written again
cp "$le/info" "$TMP/info.pristine"
printf '\xff' | dd of="$le/info" bs=1 seek=300 conv=notrunc status=none
NSL_CACHE_DIR="$TMP/lazy_cache" "$NSL" run info "$lz" --format json > "$TMP/lazy.dmg.json" 2>&1
cmp -s "$TMP/lazy.dmg.json" "$TMP/lazy.none.json" && ok "a damaged info file: the export opened, the same report" ||
  bad "a damaged info file: different output"
cmp -s "$le/info" "$TMP/info.pristine" && ok "a damaged info file: written again" || bad "a damaged info file: not rebuilt"
# the export changed after a warm open, before a column the entry lacks is read: said, not parsed
rm -f "$le"/c-memcpy-bytes
out=$(MORE=1 TOUCH=1 held); rc=$?
[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "lazy.sqlite': the file changed while it was read" &&
  ok "the export changed after a warm open: one error line naming it, exit 1" ||
  bad "a changed export after a warm open: exit $rc: $out"

# --- damage: each met with the right result and the file written again ---
e=$(entry "$exp")
col="$e/c-kernels-start"
cp "$col" "$TMP/pristine"
damage() { # label, then a command that damages $col
  local label=$1; shift
  "$@"
  local got
  got=$(digest "$exp")
  check_eq "$label: correct result" "$got" "$want"
  cmp -s "$col" "$TMP/pristine" && ok "$label: the file was written again" || bad "$label: the file was not rebuilt"
}
damage "truncated column file" truncate -s 300 "$col"
damage "empty column file" truncate -s 0 "$col"
poke() { printf "$2" | dd of="$col" bs=1 seek="$1" conv=notrunc status=none; }
damage "a flipped byte in the header (the values' size)" poke 184 '\xff'
damage "a flipped byte in the values" poke 300 '\xff'
damage "an older format version (0)" poke 8 '\x00'
damage "a file of another input" cp "$(NSL_CACHE_DIR=$TMP/c3 "$NSL" run "$TMP/digest.lua" "$other" >/dev/null; ls -d "$TMP"/c3/columns/*/)c-kernels-start" "$col"
# an entry being written: another process's temporary file beside it, half written
head -c 1000 "$TMP/pristine" > "$e/.c-kernels-stop.nsl-tmp-AAAAAA"
check_eq "a half-written temporary file of another writer: correct result" "$(digest "$exp")" "$want"
# a changed input (same path, new content): the entry is rebuilt for it
sqlite3 "$exp" "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0"
want2=$(oracle "$exp" | tr -s ' \t' '\t')
check_eq "the input changed: results of the new content" "$(digest "$exp")" "$want2"
check_eq "the input changed: still one entry for it" "$(grep -lx "input $(readlink -f "$exp")" "$NSL_CACHE_DIR"/columns/*/entry | wc -l)" 1

# --- two processes filling one entry at once ---
export NSL_CACHE_DIR="$TMP/race"
cp "$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$exp.2"
for i in 1 2 3 4; do digest "$exp.2" > "$TMP/race.$i" & done
wait
for i in 1 2 3 4; do check_eq "concurrent fill $i: correct result" "$(cat "$TMP/race.$i")" "$want"; done
check_eq "concurrent fill: one entry" "$(ls "$NSL_CACHE_DIR/columns" | wc -l)" 1
check_eq "concurrent fill: no temporary file left" "$(ls -A "$NSL_CACHE_DIR"/columns/*/ | grep -c nsl-tmp)" 0
check_eq "after the concurrent fill: warm result" "$(digest "$exp.2")" "$want"

# --- eviction: the least recently used entry goes ---
export NSL_CACHE_DIR="$TMP/evict"
digest "$exp.2" > /dev/null
big=$(du -sk "$NSL_CACHE_DIR/columns" | cut -f1)
export NSL_CACHE_MAX=$(( (big + 8) * 1024 ))
# the first entry was last used a minute ago (set, not waited for): the LRU order counts whole seconds
old_use=$(( $(date +%s) - 60 ))
for e in "$NSL_CACHE_DIR"/columns/*/; do touch -h -d "@$old_use" "$e" "$e/entry"; done
digest "$other" > /dev/null
now=$(du -sk "$NSL_CACHE_DIR/columns" | cut -f1)
[ $((now * 1024)) -le "$NSL_CACHE_MAX" ] && ok "eviction: the folder is within NSL_CACHE_MAX ($now KiB)" || bad "eviction: $now KiB above the bound"
check_eq "eviction: the newest entry stays, the older one went" "$(grep -h '^input' "$NSL_CACHE_DIR"/columns/*/entry | sed 's,.*/,,')" "other.sqlite"
NSL_CACHE_MAX=0 digest "$exp" > /dev/null
unset NSL_CACHE_MAX

# --- an unusable cache folder: correct results, one warning ---
touch "$TMP/afile"
export NSL_CACHE_DIR="$TMP/afile/cache"
got=$("$NSL" run "$TMP/digest.lua" "$exp.2" 2> "$TMP/err" | tr -s ' \t' '\t')
check_eq "unusable cache folder: correct result" "$got" "$want"
check_eq "unusable cache folder: one warning" "$(grep -c 'warning: cannot use the cache' "$TMP/err")" 1
check_eq "unusable cache folder: nothing else on stderr" "$(wc -l < "$TMP/err")" 1
ro="$TMP/ro"
mkdir -p "$ro/columns"
export NSL_CACHE_DIR="$ro"
digest "$exp.2" > /dev/null 2>&1
ent=$(ls -d "$ro"/columns/*/)
chmod 500 "$ent"
if [ -w "$ent" ]; then ok "read-only entry: skipped (running as root)"
else
  rm -f "$ent"/c-api-*
  got=$("$NSL" run "$TMP/digest.lua" "$exp.2" 2> "$TMP/err" | tr -s ' \t' '\t')
  check_eq "read-only entry: correct result" "$got" "$want"
  check_eq "read-only entry: one warning" "$(grep -c 'warning' "$TMP/err")" 1
fi
chmod 700 "$ent"

# --- columns derived from a report's rows: each GPU operation's launching call (nsl.gpu_ops.api_rows), kept in
# the entry so that a later run reads it instead of joining the calls again ---
export NSL_CACHE_DIR="$TMP/derived"
cat > "$TMP/launched.lua" <<'LUA'
local gpu_ops = require("nsl.gpu_ops")
local nsl = require("nsl")
return { run = function(trace)   -- matched kernels, the sum of their calls' starts, kernels without a call
  local rows = gpu_ops.api_rows(trace, "kernels")
  trace.api:load{"start"}
  local m = rows:ge(0)
  print(m:count(), trace.api.start:gather(rows:gather(m:indices())):sum(), rows:lt(0):count())
end }
LUA
cat > "$TMP/keep.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- keeps VALUE for every kernel under the name api_rows keeps its column under
  local v = tonumber(os.getenv("KEEP_VALUE"))
  trace:keep_derived(0, "kernels", "api_row.1", nsl.rep(v, #trace.kernels))
end }
LUA
launched_sql=$(sql "$exp" "SELECT count(r.start), sum(r.start), (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) - count(r.start)
  FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
  AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215" | tr '|' '\t')
launched() { "$NSL" run "$TMP/launched.lua" "$@" | tr -s ' \t' '\t'; }
check_eq "launching calls, cold: SQL's join on process and correlation id" "$(launched "$exp")" "$launched_sql"
e=$(entry "$exp")
check_eq "launching calls: kept in the entry, one file per operation table" \
  "$(grep -l 'derived:api_row.1' "$e"/c-* 2> /dev/null | wc -l)" 3
check_eq "launching calls, warm: SQL's join" "$(launched "$exp")" "$launched_sql"
# trace:derived_many reads several kept columns side by side: each answer tr:derived's, false where none is kept
cat > "$TMP/many.lua" <<'LUA'
return { run = function(trace)
  local asks = {}
  for _, t in ipairs{"kernels", "memcpy", "memset"} do
    asks[#asks + 1] = {0, t, "api_row.1", "i64", #trace[t]}
    asks[#asks + 1] = {0, t, "no_such.1", "i64", #trace[t]}
    asks[#asks + 1] = {0, t, "api_row.1", "i64", #trace[t] + 1}   -- (not that shape)
  end
  local got = trace:derived_many(asks)
  local same, n = #got == #asks, 0
  for i, a in ipairs(asks) do
    local one = trace:derived(a[1], a[2], a[3], a[4], a[5])
    if one then n = n + 1 end
    same = same and (one and got[i] and one:eq(got[i]):count() == #one and #one == #got[i] or (not one and got[i] == false))
  end
  print(same and "same" or "differ", n)
end }
LUA
check_eq "trace:derived_many: tr:derived's answers, the three kept columns found" \
  "$("$NSL" run "$TMP/many.lua" "$exp")" "$(printf 'same\t3')"
# the warm run reads what the entry keeps: a column of -1 kept in its place reads as no kernel launched
KEEP_VALUE=-1 "$NSL" run "$TMP/keep.lua" "$exp" > /dev/null
nk=$(sql "$exp" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
check_eq "a kept column is what a warm run reads" "$(launched "$exp")" "$(printf '0\t0\t%s' "$nk")"
# ... but never a window's (--from/--to: the trace's rows are not the source's), which joins its own rows
check_eq "a windowed run joins its rows, whatever is kept" "$(launched "$exp" --from 0)" "$launched_sql"
# a kept row past the report's calls (a folder someone else wrote): not read, joined again and kept again
KEEP_VALUE=1000000000000 "$NSL" run "$TMP/keep.lua" "$exp" > /dev/null
check_eq "a kept column past the calls: joined again" "$(launched "$exp")" "$launched_sql"
check_eq "... and what it kept again is read" "$(launched "$exp")" "$launched_sql"
for a in iterations nvtx; do
  NSL_NO_CACHE=1 "$NSL" run $a "$exp" --format json > "$TMP/none.json" 2>&1
  "$NSL" run $a "$exp" --format json > "$TMP/warm.json" 2>&1
  cmp -s "$TMP/warm.json" "$TMP/none.json" && ok "$a with kept launching calls: byte-identical to no cache" ||
    bad "$a with kept launching calls differs from no cache"
done
# a bundle of four reports: each keeps its own rows of its own calls; the trace's are theirs moved by the calls before
NSL_NO_CACHE=1 "$NSL" run "$TMP/launched.lua" "$bundle" > "$TMP/none.txt" 2>&1
launched "$bundle" > /dev/null
"$NSL" run "$TMP/launched.lua" "$bundle" > "$TMP/warm.txt" 2>&1
cmp -s "$TMP/warm.txt" "$TMP/none.txt" && [ -s "$TMP/none.txt" ] &&
  ok "bundle of four reports: launching calls kept per report read back as joined" || bad "bundle: $(cat "$TMP/warm.txt")"

# the top-level NVTX ranges the step detection reads (nsl.iterations), kept the same way: on an export with a
# 'train_step' range per four collectives (tests/lua/plant_steps.sh), cold, warm and without the cache alike, and
# SQL's count of them
steps="$TMP/steps.sqlite"
cp "$exp" "$steps" && chmod u+w "$steps" && "$NSL_SOURCE_DIR/tests/lua/plant_steps.sh" "$steps"
nsteps=$(sql "$steps" "SELECT count(*) FROM NVTX_EVENTS WHERE text = 'train_step'")
same_three "iterations with kept top-level ranges" run iterations "$steps"
grep -q "NVTX range 'train_step' detected: $nsteps top-level instances" "$TMP/none.json" &&
  ok "iterations: the planted steps found, as many as SQL counts ($nsteps)" || bad "iterations: $(head -c 300 "$TMP/none.json")"
cat > "$TMP/untop.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- keeps "no range is top-level" where the step detection keeps its column
  trace:keep_derived(0, "nvtx", "nvtx_top.1", nsl.rep(0, #trace.nvtx):eq(1))
end }
LUA
"$NSL" run "$TMP/untop.lua" "$steps" > /dev/null
"$NSL" run iterations "$steps" > "$TMP/out" 2>&1
[ -s "$TMP/out" ] && ! grep -q "train_step" "$TMP/out" &&
  ok "the top-level ranges kept are what a warm run reads" || bad "kept top-level ranges not read: $(head -3 "$TMP/out")"

# the step detection's result per report (nsl.iterations: the NVTX step candidates, the marker kernel), whether
# its ranges are XLA's (nsl.jax.is_jax) and each table's extent (nsl.window.span), kept the same way: iterations
# cold, warm and without the cache alike on the export (a marker kernel), the bundle (none), two exports of
# different clocks (markers on the moved clock), the planted NVTX steps, and those steps as a second report
export NSL_CACHE_DIR="$TMP/detected"
earlier="$TMP/earlier.sqlite"
cp "$NSL_DATA_DIR/nsys/mpi_cuda_rank0_2022.2.sqlite" "$earlier"
for which in export bundle two steps pair; do
  case $which in
    export) inputs=("$exp") ;; bundle) inputs=("$bundle") ;; two) inputs=("$exp" "$earlier") ;; steps) inputs=("$steps") ;;
    pair) inputs=("$exp" "$steps") ;;   # (the steps in the second report: its kept rows moved by the first's ranges)
  esac
  same_three "iterations on the $which with the kept detection" run iterations "${inputs[@]}"
  case $which in   # what each detects: the cases cover the kept marker, no step, a moved clock and NVTX steps
    export|two) want="marker kernels detected: report 0" ;; bundle) want="no iterations found" ;;
    steps|pair) want="NVTX range 'train_step' detected" ;;
  esac
  grep -q "$want" "$TMP/none.json" && ok "iterations on the $which: $want" || bad "iterations on the $which: $(head -c 200 "$TMP/none.json")"
done
e=$(entry "$exp")
# whether the ranges may hold a compiler's names (nsl.compile: XLA's, and nvFuser's on this export), kept too:
# compile and diagnose cold, warm and without the cache alike
fuser="$TMP/nvfuser.sqlite"
cp "$NSL_DATA_DIR/nsys/nvfuser_2024.6.sqlite" "$fuser"
for a in compile diagnose; do same_three "$a on nvFuser's export with the kept compiler names" run $a "$fuser"; done
grep -q '"nvFuser"' "$TMP/none.json" && ok "diagnose on nvFuser's export names its compile ranges" ||
  bad "no nvFuser compile ranges found on $fuser"
check_eq "kept in the entry: the compiler-name tests" \
  "$(grep -l 'derived:\(xla_compile\|framework\)_names.1' "$(entry "$fuser")"/c-* 2> /dev/null | wc -l)" 2
# diagnose's per-GPU tables of a trace of one report (nsl.gpu_tables: spans, long gaps, low chunks, exposed NCCL
# time, launch-bound gaps, copies on kernel streams), kept too: cold, warm and without the cache alike on the
# export; what a warm run reads is what the entry keeps (no NCCL kernel counted: no nccl.exposed finding)
export NSL_CACHE_DIR="$TMP/gpu_tables"
same_three "diagnose on the export with its kept GPU tables" run diagnose "$exp"
grep -q '"nccl.exposed"' "$TMP/none.json" && ok "diagnose on the export: nccl.exposed found" || bad "no nccl.exposed on $exp"
counts=$(grep -aho 'derived:gpu_tables\.1\.[0-9a-f]*\.counts' "$(entry "$exp")"/c-* 2> /dev/null | head -1)
[ -n "$counts" ] && ok "GPU tables kept in the entry" || bad "no GPU tables kept"
cat > "$TMP/no_nccl.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- keeps the counts with no NCCL kernel
  local name = os.getenv("COUNTS")
  local c = trace:derived(0, "kernels", name, "i64", 7):totable()
  c[2] = 0
  trace:keep_derived(0, "kernels", name, nsl.column(c))
end }
LUA
COUNTS=${counts#derived:} "$NSL" run "$TMP/no_nccl.lua" "$exp" > /dev/null
"$NSL" run diagnose "$exp" --format json > "$TMP/warm.json" 2>&1
[ -s "$TMP/warm.json" ] && ! grep -q '"nccl.exposed"' "$TMP/warm.json" &&
  ok "the kept GPU tables are what a warm diagnose reads" || bad "kept GPU tables not read"
# whether no CUDA call is recorded twice under one id (nsl.host_sync.api_calls), kept per report: launch cold,
# warm and without the cache alike on the export and on a 2022 export that records calls twice (kept: none);
# a flag kept in its place is what a warm run reads (the duplicates then stay)
export NSL_CACHE_DIR="$TMP/api_ids"
twice="$TMP/mpi_2022.sqlite"
cp "$NSL_DATA_DIR/nsys/mpi_cuda_rank0_2022.2.sqlite" "$twice"
for f in "$exp" "$twice"; do same_three "launch on $(basename "$f") with the kept id flag" run launch "$f"; done
check_eq "kept in the entry: the id flag of the export" "$(grep -l 'derived:api_ids_distinct.1' "$(entry "$exp")"/c-* 2> /dev/null | wc -l)" 1
check_eq "kept in no entry: the id flag of the export with calls recorded twice" \
  "$(grep -l 'derived:api_ids_distinct.1' "$(entry "$twice")"/c-* 2> /dev/null | wc -l)" 0
cat > "$TMP/calls.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- the calls api_calls keeps; with KEEP, first keeps the flag saying all are distinct
  if os.getenv("KEEP") then trace:keep_derived(0, "api", "api_ids_distinct.1", nsl.rep(1, 1):eq(1)) return end
  print(#require("nsl.host_sync").api_calls(trace), #trace.api)
end }
LUA
read -r kept_n all_n <<< "$("$NSL" run "$TMP/calls.lua" "$twice")"
[ -n "$kept_n" ] && [ "$kept_n" -lt "$all_n" ] && ok "the 2022 export: $kept_n calls of $all_n records" ||
  bad "the 2022 export records no call twice: $kept_n of $all_n"
KEEP=1 "$NSL" run "$TMP/calls.lua" "$twice" > /dev/null
check_eq "the kept id flag is what a warm run reads" "$("$NSL" run "$TMP/calls.lua" "$twice")" "$all_n	$all_n"
# the calls' order by thread (nsl.host_sync.by_thread: the ledger's synchronisation gaps), kept per report: the
# ledger cold, warm and without the cache alike on the export and on the bundle (four reports, each one's rows
# moved by its first); the order equals SQL's, cold and warm; an order kept in its place is what a warm run
# reads, and one with a row past the report's calls is not read: sorted and kept again
export NSL_CACHE_DIR="$TMP/by_thread"
same_three "ledger with the kept order of the calls by thread" run ledger "$exp"
same_three "ledger on the bundle with the kept order of the calls by thread" run ledger "$bundle"
check_eq "kept in the entry: the calls' order by thread" \
  "$(grep -l 'derived:api_by_thread.1' "$(entry "$exp")"/c-* 2> /dev/null | wc -l)" 1
cat > "$TMP/by_thread.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- with KEEP (reverse or past), first keeps that in the order's place
  local n, keep = #trace.api, os.getenv("KEEP")
  if keep then
    local c = keep == "reverse" and (n - 1) - nsl.range(n) or nsl.concat(nsl.range(n - 1), nsl.rep(n, 1))
    trace:keep_derived(0, "api", "api_by_thread.1", c)
    return
  end
  local ord = require("nsl.host_sync").by_thread(trace, trace.api)
  for i = 1, #ord do print(ord[i]) end
end }
LUA
order_sql=$(sql "$exp" "SELECT rowid - 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY (globalTid >> 24) & 16777215, globalTid & 16777215, start, rowid")
[ "$(sql "$exp" "SELECT min(rowid), max(rowid), count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")" = "1|$(sql "$exp" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")|$(sql "$exp" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")" ] ||
  bad "the export's calls are not numbered 1 .. n"
check_eq "the calls' order by thread, warm, equals SQL's" "$(md5sum <<< "$("$NSL" run "$TMP/by_thread.lua" "$exp")")" \
  "$(md5sum <<< "$order_sql")"
KEEP=reverse "$NSL" run "$TMP/by_thread.lua" "$exp" > /dev/null
n_calls=$(sql "$exp" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")
check_eq "a kept order is what a warm run reads" "$("$NSL" run "$TMP/by_thread.lua" "$exp" | head -1)" $((n_calls - 1))
KEEP=past "$NSL" run "$TMP/by_thread.lua" "$exp" > /dev/null
check_eq "a kept order with a row past the calls: sorted again" \
  "$(md5sum <<< "$("$NSL" run "$TMP/by_thread.lua" "$exp")")" "$(md5sum <<< "$order_sql")"
check_eq "... and what it kept again is read" "$(md5sum <<< "$("$NSL" run "$TMP/by_thread.lua" "$exp")")" \
  "$(md5sum <<< "$order_sql")"
export NSL_CACHE_DIR="$TMP/detected"

# (the export has no step candidate: four files, three of them of no rows; a marker kernel: five files; the
# XLA flag; an extent per event table)
for k in nvtx_steps.1.:4 step_markers.1.:5 xla_module.1:1 extent.1:5; do
  check_eq "kept in the entry: ${k%:*}" "$(grep -l "derived:${k%:*}" "$e"/c-* 2> /dev/null | wc -l)" "${k#*:}"
done
cat > "$TMP/keep_det.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- keeps WHAT in the places the detection reads
  local names, what = require("nsl.iterations").kept_names(), os.getenv("WHAT")
  if what == "no_steps" then   -- no NVTX step name on any thread
    trace:keep_derived(0, "nvtx", names.candidates .. ".count", nsl.rep(0, 1))
    for _, c in ipairs{"row", "n"} do trace:keep_derived(0, "nvtx", names.candidates .. "." .. c, nsl.rep(0, 0)) end
    trace:keep_derived(0, "nvtx", names.candidates .. ".med", nsl.rep(0.0, 0))
  elseif what == "jax" then     -- XLA's module ranges there
    trace:keep_derived(0, "nvtx", "xla_module.1", nsl.rep(1, 1):eq(1))
  elseif what == "kernels" then -- the kernels' extent a second later than it is
    local k = trace.kernels
    k:load{"start", "stop"}
    local lo, hi = nsl.extent(k.start)
    local _, st = nsl.extent(k.stop)
    trace:keep_derived(0, "kernels", "extent.1", nsl.column{lo + 1000000000, hi + 1000000000, st + 1000000000})
  elseif what == "bad_marker" then   -- a marker kernel row past the kernels
    trace:keep_derived(0, "kernels", names.markers .. ".row", nsl.rep(#trace.kernels, 1))
  end
end }
LUA
cat > "$TMP/span.lua" <<'LUA'
return { run = function(trace)   -- the kernels' span as nsl.window finds it
  print(require("nsl.window").span(trace, {"kernels"}))
end }
LUA
span_sql=$(sql "$exp" "SELECT min(start), max(max(start), max(end)) FROM CUPTI_ACTIVITY_KIND_KERNEL" | tr '|' '\t')
check_eq "the kernels' span, warm: SQL's" "$("$NSL" run "$TMP/span.lua" "$exp" | tr -s ' \t' '\t')" "$span_sql"
WHAT=kernels "$NSL" run "$TMP/keep_det.lua" "$exp" > /dev/null
lo=${span_sql%%$'\t'*}
check_eq "the kept extent is what a warm run reads" "$("$NSL" run "$TMP/span.lua" "$exp" | cut -f1)" "$((lo + 1000000000))"
WHAT=no_steps "$NSL" run "$TMP/keep_det.lua" "$steps" > /dev/null
"$NSL" run iterations "$steps" > "$TMP/out" 2>&1
[ -s "$TMP/out" ] && ! grep -q "train_step" "$TMP/out" &&
  ok "the kept step candidates are what a warm run reads" || bad "kept candidates not read: $(head -3 "$TMP/out")"
WHAT=jax "$NSL" run "$TMP/keep_det.lua" "$exp" > /dev/null
"$NSL" run iterations "$exp" > "$TMP/out" 2>&1
grep -q "XLA" "$TMP/out" && ok "the kept XLA flag is what a warm run reads" || bad "kept XLA flag not read: $(head -3 "$TMP/out")"
rm -rf "$NSL_CACHE_DIR"
"$NSL" run iterations "$exp" > /dev/null 2>&1
WHAT=bad_marker "$NSL" run "$TMP/keep_det.lua" "$exp" > /dev/null
"$NSL" run iterations "$exp" --format json > "$TMP/warm.json" 2>&1
NSL_NO_CACHE=1 "$NSL" run iterations "$exp" --format json > "$TMP/none.json" 2>&1
cmp -s "$TMP/warm.json" "$TMP/none.json" && ok "a kept marker row past the kernels: detected again" ||
  bad "a kept marker row past the kernels was read"

# the NVTX projection (nsl.nvtx.project: each range's parent, depth, projected span and counts, and each GPU
# operation's innermost range), kept the same way: nvtx's and flamegraph's outputs cold, warm and without the
# cache alike, on an export, on a bundle of four reports (each keeps its own rows) and on two exports of
# different clocks (the later one's times moved by its offset, its projection kept on its own clock)
export NSL_CACHE_DIR="$TMP/projected"
cat > "$TMP/offsets.lua" <<'LUA'
return { run = function(trace) print(trace.reports.time_offset:sum()) end }
LUA
for which in export bundle two; do
  case $which in export) inputs=("$exp") ;; bundle) inputs=("$bundle") ;; two) inputs=("$exp" "$earlier") ;; esac
  for a in "nvtx --arg only=all" flamegraph; do
    same_three "${a%% *} on the $which with the kept projection" run $a "${inputs[@]}"
  done
done
offset=$("$NSL" run "$TMP/offsets.lua" "$exp" "$earlier")
[ "$offset" != 0 ] && ok "the two exports' clocks differ ($offset ns)" || bad "the two exports share a clock"
e=$(entry "$exp")
check_eq "projection: kept in the entry, eight columns of the ranges and one per operation table" \
  "$(grep -l 'derived:nvtx_proj.1.' "$e"/c-* 2> /dev/null | wc -l)" 11
cat > "$TMP/keep_proj.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- keeps VALUE for every range under the projection's column COLUMN
  local v, col = tonumber(os.getenv("KEEP_VALUE")), os.getenv("COLUMN")
  trace:keep_derived(0, "nvtx", "nvtx_proj.1." .. col, nsl.rep(v, #trace.nvtx):cast(col == "ops" and "i32" or "i64"))
end }
LUA
proj_rows() {   # the rows of nvtx_gpu_proj_trace nvtx prints as CSV (its header left out): read from the projection
  rm -rf "$TMP/proj_csv" &&
    "$NSL" run nvtx "$exp" --arg only=trace --out "$TMP/proj_csv" --format csv > /dev/null 2>&1
  tail -n +2 "$TMP/proj_csv/nvtx_gpu_proj_trace.csv" 2> /dev/null | wc -l
}
nproj=$(proj_rows)
# the warm run reads what the entry keeps: no range with operations kept, no range projected
COLUMN=ops KEEP_VALUE=0 "$NSL" run "$TMP/keep_proj.lua" "$exp" > /dev/null
check_eq "the kept projection is what a warm run reads" "$(proj_rows)" 0
# a kept parent past the report's ranges (a folder someone else wrote): not read, projected again and kept again
COLUMN=parent KEEP_VALUE=$(sql "$exp" "SELECT count(*) FROM NVTX_EVENTS") "$NSL" run "$TMP/keep_proj.lua" "$exp" > /dev/null
check_eq "a kept parent past the ranges: projected again" "$(proj_rows)" "$nproj"
[ "$nproj" -gt 0 ] && ok "the export projects $nproj ranges" || bad "no projected range on $exp"

# the two NVTX summaries' groups and the range tree's figures of a trace of one report (nsl.nvtx: kept_sums,
# kept_tree_figures), kept too: every part, and the tree without normalising, cold, warm and without the cache
# alike; what a warm run reads is what the entry keeps; a kept row past the ranges, or a node whose parent
# does not come before it, is not read (made again, and kept again)
export NSL_CACHE_DIR="$TMP/nvtx_sums"
same_three "nvtx with its kept summaries and tree" run nvtx "$exp" --arg only=all
cp "$TMP/none.json" "$TMP/nvtx_all.json"
# (the parts asked all kept, as by default: nothing projected, the ranges read where a group or node is named)
same_three "nvtx's default parts read from what is kept" run nvtx "$exp"
cp "$TMP/none.json" "$TMP/nvtx_default.json"
same_three "nvtx's tree without normalising, kept" run nvtx "$exp" --arg only=tree --arg normalize=false
check_eq "kept in the entry: the summaries (with the projection's) and both trees" \
  "$(grep -ahoE 'derived:nvtx_(sums|tree)\.1\.[0-9a-f]+\.(sum|proj|nodes)' "$(entry "$exp")"/c-* 2> /dev/null |
     sort -u | wc -l)" 4
cat > "$TMP/keep_sums.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- sets value VALUE at row 0 of the kept column SUFFIX of every kept table PREFIX
  local entry, prefix, suffix = os.getenv("ENTRY"), os.getenv("PREFIX"), os.getenv("SUFFIX")
  local ls = io.popen("grep -ahoE 'derived:" .. prefix .. "\\.1\\.[0-9a-f]+\\.[a-z]+' " .. entry .. "/c-* | sort -u")
  for meta in ls:lines() do
    local name = meta:sub(#"derived:" + 1)
    local rows
    for _, n in ipairs{9, 14, 5} do   -- (the meta column: rows, then a type per column)
      rows = rows or trace:derived(0, "nvtx", name, "i64", n)
    end
    rows = rows and rows[1]
    local c = rows and rows > 0 and trace:derived(0, "nvtx", name .. "." .. suffix, "i64", rows)
    if c then
      local v = c:totable()
      v[1] = tonumber(os.getenv("VALUE"))
      trace:keep_derived(0, "nvtx", name .. "." .. suffix, nsl.column(v))
    end
  end
  ls:close()
end }
LUA
keep_sums() { ENTRY=$(entry "$exp") PREFIX=$1 SUFFIX=$2 VALUE=$3 "$NSL" run "$TMP/keep_sums.lua" "$exp" > /dev/null; }
totals() {   # the Total Time column of nvtx_sum as nvtx prints it as CSV (ARGS...: nvtx's)
  rm -rf "$TMP/sum_csv" && "$NSL" run nvtx "$exp" "$@" --out "$TMP/sum_csv" --format csv > /dev/null 2>&1
  awk -F, 'NR > 1 { print $2 }' "$TMP/sum_csv/nvtx_sum.csv"
}
keep_sums nvtx_sums total 4242
totals --arg only=all | grep -qx 4242 && ok "the kept summaries are what a warm run reads" ||
  bad "the kept summaries were not read"
totals | grep -qx 4242 && ok "... and what one that projects nothing reads" ||
  bad "the kept summaries were not read by default"
nranges=$(sql "$exp" "SELECT count(*) FROM NVTX_EVENTS")
keep_sums nvtx_sums first "$nranges"
"$NSL" run nvtx "$exp" --arg only=all --format json > "$TMP/warm.json" 2>&1
cmp -s "$TMP/warm.json" "$TMP/nvtx_all.json" && ok "a kept group's range past the ranges: summarised again" ||
  bad "a kept range past the ranges was read"
keep_sums nvtx_sums first "$nranges"
"$NSL" run nvtx "$exp" --format json > "$TMP/warm.json" 2>&1
cmp -s "$TMP/warm.json" "$TMP/nvtx_default.json" && ok "... also where nothing would be projected" ||
  bad "a kept range past the ranges was read by default"
keep_sums nvtx_tree ops 1
"$NSL" run nvtx "$exp" --format json > "$TMP/warm.json" 2>&1
cmp -s "$TMP/warm.json" "$TMP/nvtx_default.json" && ok "a kept tree of another number of GPU operations: made again" ||
  bad "a kept tree of another number of operations was read"
keep_sums nvtx_tree parent 0
"$NSL" run nvtx "$exp" --arg only=all --format json > "$TMP/warm.json" 2>&1
cmp -s "$TMP/warm.json" "$TMP/nvtx_all.json" && ok "a kept node that is its own parent: the tree made again" ||
  bad "a kept tree with a cycle was read"
keep_sums nvtx_tree inst 4243
"$NSL" run nvtx "$exp" --arg only=tree --format csv | grep -q ',4243,' &&
  ok "the kept tree is what a warm run reads" || bad "the kept tree was not read"

# the ledger (nsl.ledger.kept) and the host tables' rows found for intervals (nsl.host.attribute's keep) of a
# trace of one report, kept: diagnose, ledger, gaps and straggler cold, warm and without the cache alike; what a
# warm run reads is what the entry keeps; a kept ledger whose parts do not sum to its wall time, a host row on
# no kept GPU, rows found for other intervals or a row past its table are not read (made again)
export NSL_CACHE_DIR="$TMP/ledger_kept"
for a in diagnose ledger gaps straggler; do
  same_three "$a with the kept ledger and host rows" run "$a" "$exp"
  cp "$TMP/none.json" "$TMP/kept_$a.json"
done
kept_names() { grep -ahoE "derived:$1" "$(entry "$exp")"/c-* 2> /dev/null | sort -u | wc -l; }
check_eq "kept in the entry: the ledgers of diagnose and ledger (their GPUs, rows and host rows)" \
  "$(kept_names 'ledger\.1\.[0-9a-f]+\.(groups|ledger|host)\b')" 6
[ "$(kept_names 'attribute\.1\.[0-9a-f]+')" -ge 4 ] && ok "kept in the entry: the host rows found for intervals" ||
  bad "no host rows kept: $(kept_names 'attribute\.1\.[0-9a-f]+')"
cat > "$TMP/plant.lua" <<'LUA'
local nsl = require("nsl")
return { run = function(trace)   -- in every kept table named PATTERN, every row: EDITS "col=V" (set) or "col=+D" (add)
  local ls = io.popen("grep -ahoE 'derived:" .. os.getenv("PATTERN") .. "' " .. os.getenv("ENTRY") .. "/c-* | sort -u")
  for meta in ls:lines() do
    local name = meta:sub(#"derived:" + 1)
    local m
    for n = 2, 40 do m = m or trace:derived(0, "kernels", name, "i64", n) end   -- (the meta column: rows, types)
    for col, op, v in os.getenv("EDITS"):gmatch("([%w_]+)=(%+?)(%-?%d+)") do
      local c = m and m[1] > 0 and trace:derived(0, "kernels", name .. "." .. col, "i64", m[1])
      if c and c:isnull():count() == 0 then
        local t = c:totable()
        for i = 1, #t do t[i] = op == "+" and t[i] + tonumber(v) or tonumber(v) end
        trace:keep_derived(0, "kernels", name .. "." .. col, nsl.column(t))
      end
    end
  end
  ls:close()
end }
LUA
plant() { ENTRY=$(entry "$exp") PATTERN=$1 EDITS=$2 "$NSL" run "$TMP/plant.lua" "$exp" > /dev/null; }
same_as() {   # (view: the page without findings)
  if [ "$1" = view ]; then
    "$NSL" view "$exp" --no-findings -o "$TMP/warm.html" > /dev/null 2>&1 && cmp -s "$TMP/warm.html" "$TMP/kept_view.html"
  else
    "$NSL" run "$1" "$exp" --format json > "$TMP/warm.json" 2>&1 && cmp -s "$TMP/warm.json" "$TMP/kept_$1.json"
  fi
}
# remade WHAT PATTERN EDITS ANALYSIS...: after planting EDITS, each analysis prints what it printed without the
# cache (what was kept is not read: it is made again)
remade() {
  local what=$1 pattern=$2 edits=$3 a; shift 3
  plant "$pattern" "$edits"
  for a in "$@"; do same_as "$a" || { bad "$what, yet $a read it"; return; }; done
  ok "$what: made again"
}
rm -rf "$TMP/ledger_csv" && "$NSL" run ledger "$exp" --out "$TMP/ledger_csv" --format csv > /dev/null
compute0=$(awk -F, 'NR == 2 { print $8 }' "$TMP/ledger_csv/ledger.csv")
plant 'ledger\.1\.[0-9a-f]+\.ledger' "compute=+1000000000,idle_unknown=+-1000000000,idle=+-1000000000"
rm -rf "$TMP/ledger_csv" && "$NSL" run ledger "$exp" --out "$TMP/ledger_csv" --format csv > /dev/null
check_eq "the kept ledger is what a warm ledger run reads" "$(awk -F, 'NR == 2 { print $8 }' "$TMP/ledger_csv/ledger.csv")" \
  "$((compute0 + 1000000000))"
"$NSL" run diagnose "$exp" --format json | grep -q "$((compute0 + 1000000000))" &&
  ok "... and what a warm diagnose reads" || bad "diagnose did not read its kept ledger"
remade "a kept ledger whose parts do not sum to its wall time" 'ledger\.1\.[0-9a-f]+\.ledger' "compute=+1" \
  ledger diagnose
remade "a kept host row on no kept GPU" 'ledger\.1\.[0-9a-f]+\.host' "group=99" ledger diagnose
plant 'attribute\.1\.[0-9a-f]+' "nvtx_row=0"   # (every interval in the first range)
! same_as gaps && ! same_as ledger && ok "the kept host rows are what warm gaps and ledger runs read" ||
  bad "the kept host rows were not read"
remade "host rows kept for other intervals" 'attribute\.1\.[0-9a-f]+' "start=+1" gaps straggler diagnose
remade "a kept row past the NVTX ranges" 'attribute\.1\.[0-9a-f]+' \
  "nvtx_row=$(sql "$exp" "SELECT count(*) FROM NVTX_EVENTS")" gaps straggler diagnose
# the straggler matching's windows before the collectives (nsl.straggler's windows_kept), kept with the
# collectives they were measured for: read back (a previous collective moved shows), not read for other
# collectives, a previous collective past them or a rank that is none of theirs
check_eq "kept in the entry: the straggler windows (collectives, windows, host parts, previous collectives)" \
  "$(kept_names 'straggler_windows\.1\.[0-9a-f]+\.(coll|win|hp|prev)\b')" 4
plant 'straggler_windows\.1\.[0-9a-f]+\.prev' "row=0"
! same_as straggler && ! same_as diagnose && ok "the kept windows are what warm straggler and diagnose runs read" ||
  bad "the kept windows were not read"
remade "a kept previous collective past the collectives" 'straggler_windows\.1\.[0-9a-f]+\.prev' "row=1000000" \
  straggler diagnose
plant 'straggler_windows\.1\.[0-9a-f]+\.coll' "start=+1"
remade "windows kept for other collectives" 'straggler_windows\.1\.[0-9a-f]+\.prev' "row=0" straggler diagnose
remade "a kept window of no rank" 'straggler_windows\.1\.[0-9a-f]+\.win' "rank=99" straggler diagnose
# the compute per step and rank of the same matching (nsl.straggler's steps_kept), kept with the arrivals it was
# measured between: read back (a compute moved shows), not for other arrivals, a step that is no whole one, a
# rank that is none of theirs
check_eq "kept in the entry: the straggler steps (arrivals, compute per step)" \
  "$(kept_names 'straggler_steps\.1\.[0-9a-f]+\.(cs|steps)\b')" 2
plant 'straggler_steps\.1\.[0-9a-f]+\.steps' "compute=+1000000"
! same_as straggler && ok "the kept steps are what a warm straggler run reads (its compute per step)" ||
  bad "the kept steps were not read"
remade "kept steps for other arrivals" 'straggler_steps\.1\.[0-9a-f]+\.cs' "arrive=+1" straggler diagnose
remade "a kept step that is no whole step" 'straggler_steps\.1\.[0-9a-f]+\.steps' "step=0" straggler diagnose
remade "a kept step of no rank" 'straggler_steps\.1\.[0-9a-f]+\.steps' "rank=99" straggler diagnose
remade "a kept negative compute" 'straggler_steps\.1\.[0-9a-f]+\.steps' "compute=-5" straggler diagnose
# the viewer's layout of the whole trace (its rows, levels of detail and detail window: view.lua's layout_kept),
# kept under the settings it was made with: the page cold, warm and without the cache byte-identical, with and
# without findings; what a warm page reads is what the entry keeps; rows whose events are not the trace's, GPU
# rows that are not first, a cell past its level, a bin busier than it is wide are not read, and rows without
# the key of some event in the detail window are made again (and kept)
export NSL_CACHE_DIR="$TMP/view_kept"
for f in "--no-findings" ""; do
  for run in none cold warm; do
    [ $run = none ] && nc=1 || nc=
    NSL_NO_CACHE=$nc "$NSL" view "$exp" $f --max-events 500 -o "$TMP/view_$run.html" > /dev/null 2>&1
  done
  [ -s "$TMP/view_none.html" ] && cmp -s "$TMP/view_cold.html" "$TMP/view_none.html" &&
    cmp -s "$TMP/view_warm.html" "$TMP/view_none.html" &&
    ok "view ${f:-with findings} --max-events 500: cold, warm and no cache byte-identical" ||
    bad "view ${f:-with findings} differs with the cache"
done
cp "$TMP/view_none.html" "$TMP/view_500.html"   # (with findings)
NSL_NO_CACHE=1 "$NSL" view "$exp" --no-findings -o "$TMP/kept_view.html" > /dev/null
same_as view && same_as view && ok "view: warm and no cache byte-identical" || bad "view differs with the cache"
check_eq "kept in the entry: the layouts of two pages (rows, levels, window)" \
  "$(kept_names 'view_layout\.1\.[0-9a-f]+\.(rows|lv|at)\b')" 6
# the detail window's end moved back by a microsecond in what is kept: what the page of 500 events shows
plant 'view_layout\.1\.[0-9a-f]+\.at' "to=+-1000"
"$NSL" view "$exp" --max-events 500 -o "$TMP/view_warm.html" > /dev/null 2>&1
! cmp -s "$TMP/view_warm.html" "$TMP/view_500.html" && ok "the kept layout is what a warm page reads" ||
  bad "the kept layout was not read"
remade "kept rows with an event more than the trace's" 'view_layout\.1\.[0-9a-f]+\.rows' "events=+1" view
remade "kept rows all NVTX threads'" 'view_layout\.1\.[0-9a-f]+\.rows' "kind=1" view
remade "a kept cell past its level" 'view_layout\.1\.[0-9a-f]+\.lv' "cell=+100000000" view
remade "a kept bin busier than it is wide" 'view_layout\.1\.[0-9a-f]+\.lv' "busy=+1000" view
remade "kept rows of other GPUs and threads (no row of the window's events)" 'view_layout\.1\.[0-9a-f]+\.rows' \
  "a=+99" view
plant 'view_layout\.1\.[0-9a-f]+\.rows' "a=+99"
same_as view && same_as view && ok "... and kept again, as made" || bad "rows of other GPUs read"

# --- --no-cache, list, clear ---
export NSL_CACHE_DIR="$TMP/flags"
"$NSL" run "$TMP/digest.lua" "$exp.2" --no-cache > /dev/null
check_eq "--no-cache writes nothing" "$(ls "$NSL_CACHE_DIR/columns" 2>/dev/null | wc -l)" 0
NSL_NO_CACHE=1 "$NSL" run "$TMP/digest.lua" "$exp.2" > /dev/null
check_eq "NSL_NO_CACHE=1 writes nothing" "$(ls "$NSL_CACHE_DIR/columns" 2>/dev/null | wc -l)" 0
digest "$exp.2" > /dev/null
digest "$other" > /dev/null
mkdir -p "$NSL_CACHE_DIR/exports" && echo x > "$NSL_CACHE_DIR/exports/some.sqlite"   # not the cache's: no header
list=$("$NSL" cache list)
check_eq "cache list: an entry per input, not the stray file" "$(echo "$list" | grep -c -e 'run.sqlite.2' -e 'other.sqlite' -e 'some.sqlite')" 2
echo "$list" | tail -1 | grep -q "^2 entries" && ok "cache list: a total line" || bad "cache list: no total: $list"
"$NSL" cache clear > "$TMP/clear"
check_eq "cache clear: every file of the cache gone, the stray file without the cache's header kept" \
  "$(find "$NSL_CACHE_DIR" -type f)" "$NSL_CACHE_DIR/exports/some.sqlite"
grep -q "removed 2 cache entries" "$TMP/clear" && ok "cache clear: says what it removed" || bad "cache clear: $(cat "$TMP/clear")"
"$NSL" cache frob > /dev/null 2>&1
check_eq "cache with an unknown subcommand: usage error" "$?" 2
# progress never reaches a stderr that is not a terminal
"$NSL" run "$TMP/digest.lua" "$other" 2> "$TMP/err" > /dev/null
check_eq "no progress on a non-terminal stderr" "$(wc -c < "$TMP/err")" 0
finish
