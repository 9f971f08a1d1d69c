#!/usr/bin/env bash
# bench_match.sh [REPORTS...] -- rank 0's part of `straggler` under MPI, the
# term of the 1,024-rank model (README) that grows with the ranks (run on
# demand, never a test).  The 1.03 GB tiled export (make_tiled.sh, 425
# tiles; two GPUs, 14,025 NCCL collectives each) is reduced once as a
# process of a distributed run reduces its reports (nsl.straggler.reduce);
# its rows are then replicated as REPORTS reports (default 64 128 256: 1.8,
# 3.6 and 7.2 M rows), each with its own clock offset and a few µs of
# jitter per collective, report 5 arriving 500 µs late, and matched as rank
# 0 matches what it gathers (nsl.straggler.match, then nsl.straggler.ranks,
# and the per-step and per-collective tables straggler prints of them).
# Prints per size: user and system CPU of the matching (/proc/self/stat; on
# a virtual machine the system part is mostly the kernel zeroing fresh
# pages), its time per row, the ranks step, the tables (user + system), and
# the peak RSS of the process.
. "$(dirname "$0")/lib.sh"
sizes=${*:-64 128 256}
tiled_export 425
export NSL_CACHE_DIR=$work/match-cache
mkdir -p "$NSL_CACHE_DIR"
script="$work/bench_match.lua"
cat > "$script" <<'LUA'
local nsl = require("nsl")
return {name = "bench_match", description = "rank 0's matching of replicated reduced collectives",
        run = function(trace, _, out)
  local S = require("nsl.straggler")
  local args = {rank_by = "device", source = "nccl", warmup = -1, programs = "structure"}
  local R = tonumber(os.getenv("BENCH_REPORTS") or "8")
  local red = S.reduce(trace, args)
  local c, rk, n = red.collectives, red.ranks, #red.collectives
  local noise, x = {}, 12345   -- jitter: 0-20 µs per collective, a different stretch of it per report
  for i = 1, 2 * n do x = (x * 1103515245 + 12345) % 2147483648; noise[i] = x % 20000 end
  noise = nsl.column(noise)
  local cs, rs, names = {}, {}, {}
  for r = 0, R - 1 do
    local off, j = (r * 37 % 23 - 11) * 1000000, noise:gather(nsl.range(n) + (r * 7919 % n))
    cs[#cs + 1] = c:with("report", nsl.rep(r, n), "start", c.start + off + j + (r == 5 and 500000 or 0),
                         "stop", c.stop + off + j, "launch", c.launch + off)
    rs[#rs + 1] = rk:with("report", nsl.rep(r, #rk))
    names[r + 1] = "rank" .. r
  end
  local gathered = {collectives = nsl.concat_tables(cs, c:columns()), ranks = nsl.concat_tables(rs, rk:columns())}
  cs, rs, red = nil, nil, nil
  collectgarbage()
  local function cpu()   -- user and system seconds of this process
    local v = {}
    for f in io.open("/proc/self/stat"):read("a"):match("%) (.*)"):gmatch("%S+") do v[#v + 1] = f end
    return tonumber(v[12]) / 100, tonumber(v[13]) / 100
  end
  local rows = #gathered.collectives
  local u0, s0 = cpu()
  local src, res = S.match({api = {1}, reports = {name = names}}, args, gathered)
  local u1, s1 = cpu()
  assert(res and res.reduced, "the reduced rows were not matched as such")
  S.ranks(res, {min_delay = 0, min_share = 0.01, late_share = 0.5})
  local u2, s2 = cpu()
  -- the tables straggler prints of them (per step and rank, per collective and rank: as long as the rows)
  S.step_tables(res, src.labels)
  S.collective_tables(res, src.labels)
  local u3, s3 = cpu()
  local hwm = io.open("/proc/self/status"):read("a"):match("VmHWM:%s*(%d+)")
  out:text(string.format("%d reports (%d ranks), %d rows: match user %.2f s + system %.2f s (%.3f + %.3f µs/row); " ..
                         "ranks %.2f s; tables %.2f s; peak %d MiB", R, #src.labels, rows, u1 - u0, s1 - s0,
                         (u1 - u0) * 1e6 / rows, (s1 - s0) * 1e6 / rows, u2 - u1 + s2 - s1, u3 - u2 + s3 - s2,
                         tonumber(hwm) // 1024))
end}
LUA
"$nsl" run "$script" "$big" > /dev/null   # fills the cache
for r in $sizes; do BENCH_REPORTS=$r "$nsl" run "$script" "$big"; done
