-- diagnose on the planted matrix: jobs of 2 to 32 ranks made of copies of GPU
-- 0 of the real NCCL export (tests/lua/straggler_rank.sh, planting by SQL),
-- clocks apart by up to 3.5 s, 10 µs of jitter, four ranks a host (the
-- export's own Hostname, rewritten by SQL).  Planted: a rank whose host
-- stops after each synchronisation, a rank that computes longer, the ranks of
-- one host whose collectives run longer (a slow link or node), a rank late at
-- every third collective only, two late ranks at once; and healthy jobs with
-- jitter alone.  For each: diagnose's first finding names the planted rank(s)
-- (and the host) and the cause, and its lost_ns is within 10 % of the planted
-- loss -- the delay times the collectives it delays, counted by SQL over the
-- source (the 10 % also covers the warm-up collectives diagnose leaves out);
-- healthy jobs get no straggler finding at warning or above.
-- NSL_TEST_SMALL (the ASan build): fewer ranks, the same causes.
local T = ...

local SMALL = os.getenv("NSL_TEST_SMALL") ~= nil
local SRC = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"
local script = T.source_dir .. "/tests/lua/straggler_rank.sh"
local D = 1000000    -- 1 ms: above the 17 ms of exposed SendRecv every copy keeps over its 33 collectives
local JITTER = 10000

-- ---- the oracles (SQL over the source) ----

-- the collectives of GPU 0 of the source (every copy has these)
local function ncoll()
  return T.sql1(T.data(SRC), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s " ..
    "ON s.id = k.shortName WHERE s.value LIKE 'nccl%' AND k.deviceId = 0")
end

-- the collectives of GPU 0 launched after a synchronising call of the process ended (after the launch of
-- the collective before): where a rank whose host stops after each synchronisation is late
local function after_sync()
  return T.sql1(T.data(SRC), [[
    WITH c AS (SELECT coalesce(rt.start, k.start) AS l, (k.globalPid >> 24) & 16777215 AS pid,
                      row_number() OVER (ORDER BY k.start) AS k
               FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n ON n.id = k.shortName
               LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = k.correlationId
                 AND ((rt.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)
               WHERE n.value LIKE 'nccl%' AND k.deviceId = 0),
         y AS (SELECT rt.end AS y, (rt.globalTid >> 24) & 16777215 AS pid
               FROM CUPTI_ACTIVITY_KIND_RUNTIME rt JOIN StringIds n ON n.id = rt.nameId
               WHERE n.value LIKE '%Synchronize%')
    SELECT count(*) FROM c cur JOIN c prev ON prev.k = cur.k - 1
    WHERE EXISTS (SELECT 1 FROM y WHERE y.pid = cur.pid AND y.y > prev.l AND y.y <= cur.l)]])
end

-- ---- planting ----

local root   -- one folder for the whole file: planted ranks are made once and copied
local planted = {}

local function folder()
  if not root then
    root = os.tmpname()
    os.remove(root)
    assert(os.execute("mkdir -p " .. T.shell_quote(root)))
  end
  return root
end

-- A planted copy of GPU 0: role (or nil: healthy) delayed by delay ns, its clock ahead by offset ns, jitter
-- seed seed; made once per distinct set of arguments.
local function plant(role, delay, offset, seed)
  local key = string.format("%s_%d_%d_%d", role or "none", role and delay or 0, offset, seed)
  if not planted[key] then
    local path = folder() .. "/p_" .. key:gsub("-", "m") .. ".sqlite"
    local cmd = string.format("%s %s %s 0 %d %s %d %d %d", T.shell_quote(script), T.shell_quote(T.data(SRC)),
      T.shell_quote(path), role and delay or 0, T.shell_quote(role or ""), offset, JITTER, seed)
    T.ok(os.execute(cmd), cmd)
    planted[key] = path
  end
  return planted[key]
end

local ncase = 0
-- A job of n ranks: rank r (0-based) is a copy of plant(role_of(r)), where role_of returns role, delay;
-- clocks differ by rank (two offsets and seeds alternate among the ranks of one role, so no two neighbours
-- share a clock or a jitter), host "node<r // 4>" unless hosts says otherwise.  Returns the files.
local function job(n, role_of, hosts)
  ncase = ncase + 1
  local dir = string.format("%s/job%d", folder(), ncase)
  assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
  local files = {}
  for r = 0, n - 1 do
    local role, delay = role_of(r)
    local alt = r % 2
    local offset = alt == 0 and (role and 1500000000 or -700000000) or (role and -2000000000 or 1200000000)
    if r == 0 then offset = 0 end
    local src = plant(role, delay or D, offset, alt + 1)
    local f = string.format("%s/r%d.sqlite", dir, r)
    assert(os.execute("cp " .. T.shell_quote(src) .. " " .. T.shell_quote(f)))
    local host = hosts and hosts(r) or string.format("node%d", r // 4)
    T.sql_exec(f, "UPDATE TARGET_INFO_SYSTEM_ENV SET value = '" .. host .. "' WHERE name = 'Hostname';")
    files[#files + 1] = f
  end
  return files
end

local function diag(files)
  local _, out = T.run_analysis("diagnose", files)
  return out.findings, out
end

-- The rank labels a finding names: its ranks (a merged finding) or its rank.
local function ranks_of(f)
  local set = {}
  for _, r in ipairs(f.ranks or {f.where and f.where.rank}) do set[r:match("^(r%d+)")] = true end
  return set
end

-- Asserts that the first finding is id, names exactly the ranks `want` (e.g. {"r5"}), and loses `loss`
-- within 10 %; returns it.
local function first(fs, id, want, loss, what)
  local f = fs[1]
  T.ok(f, what .. ": a finding")
  T.eq(f.id, id, what .. ": the first finding's cause (" .. tostring(f.message) .. ")")
  local got = ranks_of(f)
  local n = 0
  for _ in pairs(got) do n = n + 1 end
  T.eq(n, #want, what .. ": ranks named: " .. table.concat(f.ranks or {f.where.rank}, ", "))
  for _, r in ipairs(want) do T.ok(got[r], what .. ": names " .. r) end
  T.ok(f.lost_ns and math.abs(f.lost_ns - loss) <= 0.1 * loss,
       string.format("%s: lost %s within 10%% of the planted %d", what, tostring(f.lost_ns), loss))
  T.ok(f.share > 0 and f.share <= 1, what .. ": share of the job's wall time")
  T.ok(f.severity == "warning" or f.severity == "error", what .. ": at warning or above")
  return f
end

-- Asserts that, the planted ranks `want` being late at every collective (the ones the others wait for), a
-- cause found on any other rank is hidden: it costs the job nothing (lost_ns 0), and is said to be hidden.
local function others_hidden(fs, want, what)
  local late, hidden = {}, 0
  for _, r in ipairs(want) do late[r] = true end
  for _, f in ipairs(fs) do
    for _, p in ipairs(f.parts or {f}) do
      local r = p.where and p.where.rank and p.where.rank:match("^(r%d+)")
      if not f.id:find("^straggler") and r and not late[r] then
        T.eq(p.lost_ns, 0, what .. ": " .. f.id .. " on " .. p.where.rank .. " is hidden")
        if p.hidden_ns then hidden = hidden + 1 end
      end
    end
  end
  T.ok(hidden > 0, what .. ": causes on the waiting ranks are said to be hidden")
end

-- Asserts that a cause merged over several ranks, some of them hidden, says what its lost_ns is: the
-- least (or most) over the ranks the others wait for -- here exactly the planted ranks `want`, named in
-- the message with the amount -- and not "the least" of all its parts, which is a hidden rank's 0.
local function merged_words(fs, want, what)
  local duration = require("nsl.report").duration
  local seen = 0
  for _, f in ipairs(fs) do
    local crit = {}
    for _, p in ipairs(f.parts or {}) do if not p.hidden_ns then crit[#crit + 1] = p end end
    if f.parts and #crit > 0 and #crit < #f.parts then
      seen = seen + 1
      T.eq(#crit, #want, what .. ": " .. f.id .. ": the parts not hidden are the planted ranks'")
      for _, p in ipairs(crit) do
        T.ok(p.where.rank:match("^(r%d+)") == want[1], what .. ": " .. f.id .. ": not hidden on " .. p.where.rank)
        T.ok(f.message:find("(" .. p.where.rank, 1, true), what .. ": the message names " .. p.where.rank ..
             ": " .. f.message)
      end
      T.ok(not f.message:find("so the job gains the least", 1, true), what .. ": " .. f.message)
      T.ok(f.message:find("the job gains " .. duration(f.lost_ns) .. ", what it costs the one rank the others " ..
           "wait for", 1, true), what .. ": the message says what lost_ns is: " .. f.message)
    end
  end
  T.ok(seen > 0, what .. ": a cause found on several ranks, hidden on some")
end

local function no_straggler(fs, what)
  for _, f in ipairs(fs) do
    T.ok(not (f.id:find("^straggler") and f.severity ~= "info"),
         what .. ": no straggler warning, got " .. f.id .. " " .. f.severity .. ": " .. f.message)
  end
end

return {
  {"host idle: rank 2 of 4 stops 2 ms after each synchronisation; first, host idle, D x the collectives after one",
   function()
    local d = 2 * D
    local fs = diag(job(4, function(r) if r == 2 then return "idle", d end return "idlewait", d end))
    first(fs, "straggler.host_idle", {"r2"}, d * after_sync(), "host idle")
  end},

  {"slower compute: rank 5 of 8 computes 1 ms longer before every collective; first, compute, D x collectives; " ..
   "causes on the other ranks hidden, and a cause merged over ranks says its loss is the late rank's",
   function()
    local fs = diag(job(8, function(r) return r == 5 and "slow" or "wait" end))
    first(fs, "straggler.compute", {"r5"}, D * ncoll(), "slow compute")
    others_hidden(fs, {"r5"}, "slow compute")
    merged_words(fs, {"r5"}, "slow compute")
  end},

  {"two ranks: rank 1 computes longer; first, compute, D x collectives", function()
    local fs = diag(job(2, function(r) return r == 1 and "slow" or "wait" end))
    first(fs, "straggler.compute", {"r1"}, D * ncoll(), "2 ranks")
  end},

  {"two stragglers: ranks 2 and 6 of 8 compute 1 ms longer; one finding names both, D x collectives", function()
    local fs = diag(job(8, function(r) return (r == 2 or r == 6) and "slow" or "wait" end))
    first(fs, "straggler.compute", {"r2", "r6"}, D * ncoll(), "two stragglers")
  end},

  {"intermittent: rank 3 of 8 computes 3 ms longer before every third collective; first, D x a third of them",
   function()
    local d = 3 * D
    local fs = diag(job(8, function(r) if r == 3 then return "slow3", d end return "wait3", d end))
    first(fs, "straggler.compute", {"r3"}, d * (ncoll() // 3), "intermittent")
  end},

  {"a slow link or node: at every third collective those of the four ranks of host node1 (of 12; 8 in the ASan build) run 3 ms " ..
   "longer and end later; one finding names the host and its ranks, D x the collectives after one", function()
    local d = 3 * D
    local n = SMALL and 8 or 12
    local fs = diag(job(n, function(r) if r >= 4 and r < 8 then return "link3", d end return "linklag3", d end))
    local f = first(fs, "straggler.collective", {"r4", "r5", "r6", "r7"}, d * ((ncoll() - 1) // 3), "slow link")
    T.eq(f.where.host, "node1", "slow link: the host")
    T.ok(f.message:find("^host node1 holds the job back"), "slow link: the message names the host: " .. f.message)
  end},

  {(SMALL and "8" or "32") .. " ranks, rank 13 (of the ASan build's 8: rank 5) idle: first, alone, host idle",
   function()
    local n, late = SMALL and 8 or 32, SMALL and 5 or 13
    local d = 2 * D
    local fs = diag(job(n, function(r) if r == late then return "idle", d end return "idlewait", d end))
    first(fs, "straggler.host_idle", {"r" .. late}, d * after_sync(), n .. " ranks")
  end},

  {"healthy jobs with jitter (2, 8 ranks; 2 in the ASan build): no straggler finding at warning or above", function()
    for _, n in ipairs(SMALL and {2} or {2, 8}) do
      local fs = diag(job(n, function() return nil end))
      no_straggler(fs, n .. " healthy ranks")
    end
    os.execute("rm -rf " .. T.shell_quote(folder()))
  end},
}
