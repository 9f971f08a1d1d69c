-- diff: a copy of the real NCCL export in which the test slows one kernel
-- name by a known factor is ranked first with the planted change, significant;
-- identical inputs show no significant change; the gate finds the regression.
-- The verdict: flash attention planted 20 % slower by SQL (every later GPU
-- operation on its device shifted by the time added before it) is "slower
-- per step" by the share SQL computes, and exits 3 under --fail-on warning;
-- a trace against itself is "same" and exits 0; a shorter capture with fewer
-- but slower instances is "slower per instance", never faster.
local T = ...

local SRC = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"
local FACTOR = 2

-- flash attention 20 % slower; every later GPU operation on its device starts later by the time added before it
local PLANT = [[
CREATE TEMP TABLE f AS SELECT k.deviceId AS dev, k.start AS s, (k.end - k.start) / 5 AS extra
  FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE shortName IN (SELECT id FROM StringIds WHERE value = 'flash_fwd_kernel');
UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET
  end = end + coalesce((SELECT sum(extra) FROM f WHERE f.dev = deviceId AND f.s <= start), 0),
  start = start + coalesce((SELECT sum(extra) FROM f WHERE f.dev = deviceId AND f.s < start), 0);
UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET
  end = end + coalesce((SELECT sum(extra) FROM f WHERE f.dev = deviceId AND f.s < start), 0),
  start = start + coalesce((SELECT sum(extra) FROM f WHERE f.dev = deviceId AND f.s < start), 0);
UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET
  end = end + coalesce((SELECT sum(extra) FROM f WHERE f.dev = deviceId AND f.s < start), 0),
  start = start + coalesce((SELECT sum(extra) FROM f WHERE f.dev = deviceId AND f.s < start), 0);
]]

-- nsl run diff X Y EXTRA --fail-on warning: the exit code
local function code(x, y, extra)
  local _, _, c = os.execute(string.format("%s run diff %s %s %s --fail-on warning > /dev/null 2>&1",
    T.shell_quote(assert(os.getenv("NSL"))), T.shell_quote(x), T.shell_quote(y), extra))
  return c
end

-- The kernel to slow: the 2nd largest by total time (SQL), so the largest stays unchanged.
local function victim(path)
  local r = T.sql(path, [[SELECT s.value, k.demangledName, sum(end - start), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
    JOIN StringIds s ON s.id = k.demangledName GROUP BY 2 ORDER BY 3 DESC LIMIT 2]])[2]
  return r[1], math.tointeger(r[2]), math.tointeger(r[3]), math.tointeger(r[4])
end

return {
  {"a kernel slowed by a known factor ranks first with the planted change", function()
    local before = T.data(SRC)
    local after = T.copy(SRC)
    local name, id, total = victim(before)
    T.sql_exec(after, string.format("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (end - start) * %d WHERE demangledName = %d;",
      FACTOR, id))
    local tables = T.run_analysis("diff", {before, after}, {"by=instance"})
    local k = tables.kernels
    T.eq(k.name[1], name, "the slowed kernel is first")
    T.eq(k["change (ns)"][1], total * (FACTOR - 1), "planted change (SQL total x (factor - 1))")
    T.eq(k.significant[1], "yes", "significant")
    T.ok(k["p (Mann-Whitney)"][1] < 1e-6, "tiny p")
    for i = 2, #k do T.eq(k["change (ns)"][i], 0, "others unchanged: " .. k.name[i]) end
    local c = tables.classes
    T.eq(c["change (ns)"]:sum(), total * (FACTOR - 1), "class totals carry the change")
    os.remove(after)
  end},

  {"identical inputs: no significant change anywhere", function()
    local a = T.data(SRC)
    local b = T.copy(SRC)
    local tables = T.run_analysis("diff", {a, b})
    for _, name in ipairs{"kernels", "classes", "nvtx"} do
      local t = tables[name]
      T.eq(t.significant:eq("yes"):count(), 0, "nothing significant in " .. name)
      T.eq(t["change (ns)"]:sum(), 0, "no change in " .. name)
    end
    os.remove(b)
  end},

  {"the regression gate: --fail-on warning exits 3 on the slowed kernel, 0 on identical runs", function()
    local before = T.data(SRC)
    local after = T.copy(SRC)
    local _, id = victim(before)
    T.sql_exec(after, string.format("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (end - start) * %d WHERE demangledName = %d;",
      FACTOR, id))
    local nslbin = assert(os.getenv("NSL"))
    local function code(x, y)
      local _, _, c = os.execute(string.format("%s run diff %s %s --arg by=instance --arg fail_above=1 --fail-on warning > /dev/null 2>&1",
        T.shell_quote(nslbin), T.shell_quote(x), T.shell_quote(y)))
      return c
    end
    T.eq(code(before, after), 3, "regression found")
    T.eq(code(before, before), 0, "no regression")
    os.remove(after)
  end},

  {"Mann-Whitney U, z and p of hand-computed examples", function()
    local nsl = require("nsl")
    local stats = require("nsl.stats")
    -- 1..10 against 11..20: U = 100, z = 50 / sqrt(175) = 3.7796, p = 1.571e-4
    local vals, side, key = {}, {}, {}
    for i = 1, 20 do vals[i], side[i], key[i] = i, i > 10 and 1 or 0, "g" end
    local r = stats.mann_whitney(nsl.table{{"key", key}, {"dur", vals}, {"side", side}}).g
    T.eq(r.n1, 10, "n1"); T.eq(r.n2, 10, "n2")
    T.near(r.u, 100, 1e-12, "U")
    T.near(r.z, 50 / math.sqrt(175), 1e-12, "z")
    T.near(r.p, 1.5705e-4, 1e-3, "p")
    -- with ties: {1,2,2,3} vs {2,3,3,4}: sorted 1 2 2 2 3 3 3 4, ranks 1 | 3 3 3 | 6 6 6 | 8;
    -- after: 3 + 6 + 6 + 8 = 23, U = 23 - 10 = 13, mu = 8; ties of 3 and 3:
    -- var = 16/12 * (9 - (24 + 24) / 56) = 10.857, z = 5 / 3.2950 = 1.5174, p = 0.1292
    local v2 = {1, 2, 2, 3, 2, 3, 3, 4}
    local s2, k2 = {0, 0, 0, 0, 1, 1, 1, 1}, {"h", "h", "h", "h", "h", "h", "h", "h"}
    local q = stats.mann_whitney(nsl.table{{"key", k2}, {"dur", v2}, {"side", s2}}).h
    T.near(q.u, 13, 1e-12, "U with ties")
    T.near(q.z, 5 / math.sqrt(16 / 12 * (9 - 48 / 56)), 1e-12, "z with ties")
    T.near(q.p, 0.1292, 2e-3, "p with ties")
    T.near(stats.erfc(0), 1, 1e-7, "erfc(0)")
    T.near(stats.erfc(1), 0.157299207, 1e-6, "erfc(1)")
  end},

  {"verdict per step: flash attention 20 % slower, shifted like a real run, is slower by SQL's share; exit 3", function()
    local before = T.data(SRC)
    local after = T.copy(SRC)
    T.sql_exec(after, PLANT)
    local tables, out = T.run_analysis("diff", {before, after}, {"threshold=5%"})
    local v = tables.verdict
    T.eq(v.verdict[1], "slower", "verdict")
    T.eq(v.basis[1], "step", "judged per step")
    -- oracle: the time added on the marker kernel's device between its first and last run, over that span (SQL)
    local expected = T.sql1(before, [[WITH m AS (SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 1 AND
      shortName IN (SELECT id FROM StringIds WHERE value LIKE 'ncclDevKernel_SendRecv%')),
      b AS (SELECT min(start) lo, max(start) hi FROM m)
      SELECT (SELECT sum((end - start) / 5) FROM CUPTI_ACTIVITY_KIND_KERNEL, b WHERE deviceId = 1 AND start >= lo AND
        start < hi AND shortName IN (SELECT id FROM StringIds WHERE value = 'flash_fwd_kernel')) * 100.0 / (hi - lo) FROM b]])
    T.ok(math.abs(v["change (%)"][1] - expected) < 0.15 * expected,
      string.format("step time change %.2f %% ~ planted %.2f %% (SQL)", v["change (%)"][1], expected))
    local f = out.findings[1]
    T.eq(f and f.id, "diff.regression", "a regression finding")
    T.eq(f and f.severity, "warning", "a warning")
    T.ok(tables.kernels.name[1]:find("flash_fwd_kernel", 1, true), "the top change is flash attention")
    T.eq(code(before, after, "--arg threshold=5%"), 3, "--fail-on warning exits 3")
    T.eq(code(before, after, "--arg threshold=50%"), 0, "below a 50 % threshold: same, exit 0")
    os.remove(after)
  end},

  {"verdict on a trace against itself: same, exit 0", function()
    local a = T.data(SRC)
    local v = T.run_analysis("diff", {a, a}).verdict
    T.eq(v.verdict[1], "same", "verdict")
    T.eq(v["change (%)"][1], 0.0, "no change")
    T.eq(code(a, a, ""), 0, "--fail-on warning exits 0")
  end},

  {"verdict per instance: a shorter capture with fewer, slower instances is slower, not faster", function()
    local before = T.data(SRC)
    local after = T.copy(SRC)
    T.sql_exec(after, [[UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = end + (end - start) / 5
        WHERE shortName IN (SELECT id FROM StringIds WHERE value = 'flash_fwd_kernel');
      DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL
        WHERE shortName IN (SELECT id FROM StringIds WHERE value = 'flash_fwd_kernel') ORDER BY start DESC LIMIT 16);]])
    local tables = T.run_analysis("diff", {before, after}, {"by=instance"})
    local v, k = tables.verdict, tables.kernels
    T.eq(v.verdict[1], "slower", "verdict")
    T.eq(v.basis[1], "instance", "judged per instance")
    T.ok(k.name[1]:find("flash_fwd_kernel", 1, true), "flash attention first")
    T.ok(k["change (ns)"][1] < 0, "its total over the window fell")
    -- oracle: the medians of its durations in both files (SQL)
    local q = "SELECT end - start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName IN " ..
              "(SELECT id FROM StringIds WHERE value = 'flash_fwd_kernel')"
    local function med(path)
      local d = {}
      for _, r in ipairs(T.sql(path, q)) do d[#d + 1] = tonumber(r[1]) end
      return T.median(d)
    end
    local m1, m2 = med(before), med(after)
    T.near(k["median before (ns)"][1], m1, 0.5, "median before (SQL)")
    T.near(k["median after (ns)"][1], m2, 0.5, "median after (SQL)")
    T.near(k["impact (ns)"][1], (m2 - m1) * 68, 68, "impact: median change x 68 instances before")
    T.eq(code(before, after, "--arg by=instance --arg threshold=5%"), 3, "--fail-on warning exits 3")
    os.remove(after)
  end},
}
