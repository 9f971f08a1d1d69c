#!/usr/bin/env bash
# nsl run --embed stores results in the bundle they were computed on: an
# `nsl bundle -o` of the same path that replaces the bundle while the
# analysis runs makes --embed refuse in one line (the new bundle left as nsl
# bundle wrote it), while results another --embed adds meanwhile are kept
# (both land); a bundle given through a symbolic link is updated through it
# (the link stays a link).  The moment is a state: the analysis stops at a
# FIFO until the test has done its part.  Oracle: SQL through sqlite3 on the
# exports, and the members of the zip as unzip lists them.
. "$(dirname "$0")/lib.sh"
set -o pipefail
export NSL_NO_CACHE=1
nccl=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
other=$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite
n_nccl=$(sql "$nccl" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
n_other=$(sql "$other" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
[ "$n_nccl" != "$n_other" ] || bad "the two exports must differ in kernels"
cd "$TMP" || exit 1
mkfifo paused go
cat > kcount.lua <<LUA
local nsl = require("nsl")
return { name = "kcount", description = "kernel count, paused before it is stored",
  run = function(trace, args, out)
    local n = #trace.kernels
    if os.getenv("PAUSE") then
      local p = assert(io.open("$TMP/paused", "w")); p:write("paused\n"); p:close()
      local g = assert(io.open("$TMP/go", "r")); g:read("l"); g:close()
    end
    out:table("kernels", nsl.table{{"kernels", {n}}})
  end }
LUA
stored() { unzip -p "$1" analyses/kcount/kernels.csv 2> /dev/null | tail -1; }
# embed_paused WHAT CHANGE: kcount --embed on b.zip, CHANGE done at the pause
embed_paused() {
  PAUSE=1 timeout 120 "$NSL" run kcount.lua b.zip --embed > /dev/null 2> embed.err &
  local pid=$!
  if ! timeout 60 head -n1 paused > /dev/null; then bad "$1: the analysis never paused"; kill $pid; return 1; fi
  eval "$2"
  echo go > go
  wait $pid
}

"$NSL" bundle "$nccl" -o b.zip > /dev/null || bad "nsl bundle"
embed_paused "no change" ":"
check_eq "no change: exit 0" "$?" 0
check_eq "no change: the stored count = SQL" "$(stored b.zip)" "$n_nccl"

rm -f b.zip && "$NSL" bundle "$nccl" -o b.zip > /dev/null
embed_paused "another --embed meanwhile" '"$NSL" run summary b.zip --embed > /dev/null 2>&1 || bad "the other --embed failed"'
check_eq "another --embed meanwhile: exit 0" "$?" 0
check_eq "another --embed meanwhile: both results kept" \
  "$(unzip -Z1 b.zip | grep -c '^analyses/summary/results.json$\|^analyses/kcount/results.json$')" 2
check_eq "another --embed meanwhile: the stored count = SQL" "$(stored b.zip)" "$n_nccl"

rm -f b.zip && "$NSL" bundle "$nccl" -o b.zip > /dev/null
embed_paused "nsl bundle -o replaces it meanwhile" '"$NSL" bundle "$other" -o b.zip > /dev/null || bad "nsl bundle (replace)"'
rc=$?
check_eq "replaced meanwhile: --embed exits 1" "$rc" 1
check_eq "replaced meanwhile: one line" "$(wc -l < embed.err)" 1
grep -q "'b.zip' changed while the analysis ran" embed.err && ok "replaced meanwhile: says why" ||
  bad "replaced meanwhile: $(cat embed.err)"
check_eq "replaced meanwhile: no results grafted onto the new bundle" "$(unzip -Z1 b.zip | grep -c '^analyses/')" 0
unzip -p b.zip reports/cuda_2021.2.sqlite | cmp -s - "$other" && ok "replaced meanwhile: the new bundle as nsl bundle wrote it" ||
  bad "replaced meanwhile: the new bundle's report differs"
"$NSL" run kcount.lua b.zip --embed > /dev/null 2>&1
check_eq "run again: the count stored is the new report's (SQL)" "$(stored b.zip)" "$n_other"

# a link: the file it names gets the results, the link stays
mkdir real && "$NSL" bundle "$nccl" -o real/r.zip > /dev/null && ln -s real/r.zip link.zip
"$NSL" run kcount.lua link.zip --embed > /dev/null 2> link.err
check_eq "through a link: exit 0" "$?" 0
[ -L link.zip ] && [ "$(readlink link.zip)" = real/r.zip ] && ok "through a link: the link stays" || bad "the link was replaced"
check_eq "through a link: the target holds the results (SQL)" "$(stored real/r.zip)" "$n_nccl"
check_eq "through a link: no temporary file left" "$(ls -A . real | grep -c 'nsl-tmp')" 0
finish
