#!/usr/bin/env bash
# bench_step_windows.sh [RANKS...] -- the ledger's step windows of a job of
# many ranks (nsl.ledger.step_windows: every GPU's steps, clipped one after
# the other), on demand, never a test: per size, RANKS ranks of one GPU each
# and STEPS (default 100) step ranges per rank, the CPU time of the windows.
# What it guards: the windows once scanned every rank's steps for each GPU
# (O(ranks^2 x steps)); t(1024) / t(256) is about 4 when they are linear.
# The step ranges are built in memory, as nsl.iterations.find gives them.
. "$(dirname "$0")/lib.sh"
sizes=${*:-256 1024}
script="$work/bench_step_windows.lua"
cat > "$script" <<'LUA'
local nsl = require("nsl")
return {name = "bench_step_windows", needs_trace = false, run = function(_, _, out)
  local R, S = tonumber(os.getenv("BENCH_RANKS")), tonumber(os.getenv("BENCH_STEPS") or "100")
  local rank = nsl.range(R * S) // S   -- rank r's S steps, one after the other
  local k = nsl.range(R * S) - rank * S + 1
  local ranges = nsl.table{{"report", rank}, {"pid", rank + 100}, {"tid", nsl.rep(7, R * S)}, {"iter", k},
                           {"start", k * 1000}, {"stop", k * 1000 + 900}}
  local keys = nsl.table{{"report", nsl.range(R)}, {"device", nsl.rep(0, R)}}
  local work = nsl.table{{"group", nsl.range(R)}, {"pid", nsl.range(R) + 100}}
  local c0 = os.clock()
  local w = require("nsl.ledger").step_windows({mode = "range", ranges = ranges}, work, keys)
  out:text(string.format("%d ranks x %d steps: %d windows in %.3f s CPU", R, S, #w.group, os.clock() - c0))
end}
LUA
for r in $sizes; do BENCH_RANKS=$r "$nsl" run "$script"; done
