-- diagnose for the whole job: planted stragglers (tests/lua/straggler_rank.sh
-- copies of GPU 0 of the real NCCL export, clocks apart by up to 22 ms, 10 µs
-- of jitter) come first, named, with lost_ns within 10% of the planted loss
-- (the delay times the collectives it delays, counted by SQL over the
-- source); healthy ranks get no straggler warning.
local T = ...

local ncclf = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"

local function diag(paths, args)
  local _, out = T.run_analysis("diagnose", paths, args)
  return out.findings, out
end

return {
  {"every shared export and the nsys-jax archives together: shares within [0, 1], lost_ns within the job's wall " ..
   "time (the longest GPU's span by SQL on exports), ranked by lost_ns with one-time costs apart", function()
    local function check(paths, wall, what)
      local fs, out = diag(paths)
      local function group(f) return f.lost_ns and (f.once and 1 or 0) or 2 end
      for i, f in ipairs(fs) do
        if f.share then T.ok(f.share >= 0 and f.share <= 1, what .. ": share of " .. f.id) end
        if f.lost_ns then
          T.eq(math.type(f.lost_ns), "integer", what .. ": lost_ns of " .. f.id)
          T.ok(f.lost_ns >= 0 and (not wall or f.lost_ns <= wall), what .. ": lost_ns of " .. f.id .. " within the wall")
        end
        if i > 1 then
          local a = fs[i - 1]
          T.ok(group(a) < group(f) or (group(a) == group(f) and (a.lost_ns or -1) >= (f.lost_ns or -1)),
               what .. ": ranked: " .. a.id .. " before " .. f.id)
        end
      end
      return fs, out
    end
    for _, path in ipairs(T.exports()) do
      local parts = {}
      for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                         "CUPTI_ACTIVITY_KIND_RUNTIME"} do
        if T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE name = '" .. t .. "'") == 1 then
          parts[#parts + 1] = "SELECT start, end FROM " .. t
        end
      end
      local wall = T.sql1(path, "SELECT max(end) - min(start) FROM (" .. table.concat(parts, " UNION ALL ") .. ")")
      check({path}, wall, path)
    end
    local zips = {}
    for k = 0, 3 do zips[#zips + 1] = T.data(string.format("nsys-jax/pax_fsdp4_4proc_proc%d.zip", k)) end
    local fs = check(zips, nil, "four nsys-jax archives")
    T.ok(#fs > 0, "findings on the archives")
  end},

  {"straggler first: planted late ranks lead the findings, lost_ns within 10% of the delay times the collectives",
   function()
    local script = T.source_dir .. "/tests/lua/straggler_rank.sh"
    -- the collectives of GPU 0 of the source, by SQL: every copy has these
    local ncoll = T.sql1(T.data(ncclf), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s " ..
      "ON s.id = k.shortName WHERE s.value LIKE 'nccl%' AND k.deviceId = 0")
    local function case(n, late, role, others, D)
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
      local files = {}
      for r = 0, n - 1 do
        local ro = r == late and role or others
        local offset = ((r * 37) % 23 - 11) * 1000000   -- clocks apart by up to 22 ms
        local path = string.format("%s/r%d.sqlite", dir, r)
        local cmd = string.format("%s %s %s 0 %d %s %d 10000 %d", T.shell_quote(script), T.shell_quote(T.data(ncclf)),
          T.shell_quote(path), D, role and T.shell_quote(ro) or "''", offset, r + 1)
        T.ok(os.execute(cmd), cmd)
        files[#files + 1] = path
      end
      local fs = diag(files)
      os.execute("rm -rf " .. T.shell_quote(dir))
      return fs
    end
    -- every copy keeps GPU 0's own 17 ms of exposed SendRecv (10 ms of it its wait for the real GPU 1): a
    -- planted delay leads when it costs more than that (1 ms at each of the 33 collectives)
    -- an idle rank's host stops after each synchronising call: it is late at the collectives launched after
    -- one (SQL over the source: a sync of the process ended after the launch of collective k - 1 and at or
    -- before that of k), as tests/lua/test_straggler.lua's oracle
    local after_sync = T.sql1(T.data(ncclf), [[
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
    for _, c in ipairs{{n = 8, late = 5, role = "slow", others = "wait", D = 1000000, at = ncoll, every = true},
                       {n = 4, late = 2, role = "idle", others = "idlewait", D = 2000000, at = after_sync}} do
      local fs = case(c.n, c.late, c.role, c.others, c.D)
      local what = string.format("%d ranks, r%d %s by %d ns", c.n, c.late, c.role, c.D)
      T.ok(fs[1] and fs[1].id:find("^straggler") ~= nil, what .. ": the straggler comes first, not " ..
           tostring(fs[1] and fs[1].id))
      T.ok(fs[1].where.rank:find("^r" .. c.late .. ":") ~= nil, what .. ": names the planted rank: " .. fs[1].where.rank)
      local want = c.D * c.at
      T.ok(math.abs(fs[1].lost_ns - want) <= 0.1 * want, string.format("%s: lost %d within 10%% of %d", what,
           fs[1].lost_ns, want))
      T.ok(fs[1].share > 0 and fs[1].share <= 1, what .. ": share of the job's wall time")
      -- late at every collective, the planted rank is the one the others wait for: a cause on any other rank
      -- is hidden, it costs the job nothing (an idle rank is late after syncs only: jitter decides the rest)
      local hidden = c.every and 0 or 1
      for _, f in ipairs(fs) do
        for _, p in ipairs(f.parts or {f}) do
          if c.every and not f.id:find("^straggler") and p.where and p.where.rank
             and not p.where.rank:find("^r" .. c.late .. "[:]")
             and p.where.rank ~= "r" .. c.late then
            T.eq(p.lost_ns, 0, what .. ": " .. f.id .. " on " .. p.where.rank .. " is hidden")
            if p.hidden_ns then hidden = hidden + 1 end
          end
        end
      end
      T.ok(hidden > 0, what .. ": causes on the waiting ranks are said to be hidden")
    end
    -- healthy ranks with jitter: no straggler at warning or above
    local fs = case(4, -1, nil, nil, 0)
    for _, f in ipairs(fs) do
      T.ok(not (f.id:find("^straggler") and f.severity ~= "info"), "healthy ranks: no straggler warning")
    end
  end},

}
