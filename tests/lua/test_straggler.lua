-- straggler: on copies of the real 2-GPU NCCL export, split per GPU into two
-- rank files, a straggler is planted (one rank computes D longer before every
-- collective; the other waits for it, so both timelines shift) and one rank's
-- clock is shifted by a known offset.  The planted rank is named, D and the
-- offset are recovered within 5 %, and unplanted copies report no straggler.
local T = ...

local D = 5000000          -- 5 ms more compute before each collective
local OFFSET = 30000000    -- 30 ms clock shift of the second rank
local K = "CUPTI_ACTIVITY_KIND_KERNEL"

-- SQL that keeps only device `dev` of the copy and, when `delay` is given,
-- replays the planted straggler: `slow` is true on the straggler's file.
local function split_sql(dev, delay, slow, offset)
  local q = {"BEGIN;"}
  for _, t in ipairs{K, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"} do
    q[#q + 1] = string.format("DELETE FROM %s WHERE deviceId <> %d;", t, dev)
  end
  if delay then
    q[#q + 1] = string.format([[
      CREATE TEMP TABLE coll AS SELECT k.rowid AS rid, k.start AS s FROM %s k JOIN StringIds n ON n.id = k.shortName
        WHERE n.value LIKE 'nccl%%';
      CREATE TEMP TABLE lastc AS SELECT (SELECT k2.rowid FROM %s k2 JOIN StringIds n2 ON n2.id = k2.shortName
        WHERE n2.value NOT LIKE 'nccl%%' AND k2.start < c.s ORDER BY k2.start DESC LIMIT 1) AS rid FROM coll c;]], K, K)
    if slow then
      -- compute before collective k ends D later; collective k and all after it move by D x k
      q[#q + 1] = string.format([[
        UPDATE %s SET start = start + %d * (SELECT count(*) FROM coll WHERE coll.s <= %s.start),
                      end = end + %d * (SELECT count(*) FROM coll WHERE coll.s <= %s.start)
                            + CASE WHEN rowid IN (SELECT rid FROM lastc) THEN %d ELSE 0 END;]], K, delay, K, delay, K, delay)
    else
      -- the other rank: its collective k starts D x (k-1) later (it waited before) and ends D x k later
      q[#q + 1] = string.format([[
        UPDATE %s SET start = start + %d * ((SELECT count(*) FROM coll WHERE coll.s <= %s.start)
                                           - CASE WHEN rowid IN (SELECT rid FROM coll) THEN 1 ELSE 0 END),
                      end = end + %d * (SELECT count(*) FROM coll WHERE coll.s <= %s.start);]], K, delay, K, delay, K)
    end
  end
  if offset then
    for _, t in ipairs{K, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
                       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"} do
      q[#q + 1] = string.format("UPDATE %s SET start = start + %d, end = end + %d;", t, offset, offset)
    end
  end
  q[#q + 1] = "COMMIT;"
  return table.concat(q, "\n")
end

local function rank_files(delay, slow_dev, offset)
  local files = {}
  for _, dev in ipairs{0, 1} do
    local path = T.copy("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
    T.sql_exec(path, split_sql(dev, delay, dev == slow_dev, dev == 1 and offset or nil))
    files[#files + 1] = path
  end
  return files
end

local function row_of(t, label_pattern)
  for i = 1, #t do if t.rank[i]:find(label_pattern) then return i end end
  error("no rank matching " .. label_pattern)
end

local function within(got, want, share, what)
  T.ok(math.abs(got - want) <= share * math.abs(want),
    string.format("%s: %s not within %.0f%% of %s", what, tostring(got), share * 100, tostring(want)))
end

return {
  {"planted straggler on rank 1 is named; delay and clock offset recovered within 5%", function()
    local files = rank_files(D, 1, OFFSET)
    local tables, out = T.run_analysis("straggler", files)
    local r = tables.ranks
    T.eq(#r, 2, "two ranks")
    local slow = row_of(r, ":gpu1$")
    local fast = row_of(r, ":gpu0$")
    T.eq(r.verdict[slow], "STRAGGLER", "planted rank named")
    T.eq(r.verdict[fast], "", "other rank not named")
    within(r["delay (ns)"][slow], D, 0.05, "recovered delay")
    within(r["clock offset (ns)"][slow] - r["clock offset (ns)"][fast], OFFSET, 0.05, "recovered clock offset")
    T.ok(r["last (%)"][slow] > 90, "the straggler arrives last nearly always")
    local nf = 0
    for _, f in ipairs(out.findings) do if f.check == "straggler" then nf = nf + 1; T.ok(f.rank:find(":gpu1$"), "finding names gpu1") end end
    T.eq(nf, 1, "one straggler finding")
    for _, f in ipairs(files) do os.remove(f) end
  end},

  {"planted straggler on rank 0 (no clock shift) is named too", function()
    local files = rank_files(D, 0, nil)
    local tables = T.run_analysis("straggler", files)
    local r = tables.ranks
    T.eq(r.verdict[row_of(r, ":gpu0$")], "STRAGGLER", "planted rank named")
    within(r["delay (ns)"][row_of(r, ":gpu0$")], D, 0.05, "recovered delay")
    T.ok(math.abs(r["clock offset (ns)"][row_of(r, ":gpu1$")]) < 0.05 * OFFSET, "no clock offset planted")
    for _, f in ipairs(files) do os.remove(f) end
  end},

  {"unplanted copies (with a clock shift) report no straggler, and the offset is recovered", function()
    local files = rank_files(nil, nil, OFFSET)
    local tables, out = T.run_analysis("straggler", files)
    local r = tables.ranks
    T.eq(r.verdict[1] .. r.verdict[2], "", "no straggler")
    within(r["clock offset (ns)"][row_of(r, ":gpu1$")] - r["clock offset (ns)"][row_of(r, ":gpu0$")], OFFSET, 0.05, "offset")
    T.eq(#out.findings, 0, "no finding")
    for _, f in ipairs(files) do os.remove(f) end
  end},

  {"one export holding two GPUs: ranks are its devices, no straggler; collective counts equal SQL", function()
    local f = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
    local tables, out = T.run_analysis("straggler", {f})
    local r = tables.ranks
    T.eq(#r, 2, "two GPUs")
    T.eq(#out.findings, 0, "no straggler")
    for i = 1, #r do
      local dev = tonumber(r.rank[i]:match(":gpu(%d+)$"))
      T.eq(r.collectives[i], T.sql1(f, string.format([[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%%' AND k.deviceId = %d]], dev)), "NCCL kernels of gpu" .. dev)
    end
  end},

  {"--fail-on warning gates on the finding (exit code 3)", function()
    local files = rank_files(D, 1, OFFSET)
    local nslbin = assert(os.getenv("NSL"), "ctest sets NSL to the nsl binary")
    local cmd = string.format("%s run straggler %s %s --fail-on warning > /dev/null 2>&1", T.shell_quote(nslbin),
      T.shell_quote(files[1]), T.shell_quote(files[2]))
    local _, _, code = os.execute(cmd)
    T.eq(code, 3, "exit code with a straggler and --fail-on warning")
    for _, f in ipairs(files) do os.remove(f) end
  end},
}
