-- diagnose for the whole job on every shared export and the nsys-jax
-- archives: shares, lost_ns and ranking.  (Planted stragglers are
-- tests/lua/test_diagnose_matrix.lua's.)
local T = ...

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
}
