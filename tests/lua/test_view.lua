-- The viewer's data (lua/nsl/engine/view.lua) against SQL through the sqlite3
-- program and against Lua's own string.unpack: the packed columns decode to
-- the values, every level of detail per bin (a bin left out inferred from
-- its parent) equals the events SQL finds starting between the bin's edges
-- (nsl.bin_edges) and the union of their intervals clipped to the bin, and the default detail window ends at the right start.
local T = ...
local nsl = require("nsl")
local view = require("nsl.engine.view")

local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")

local GPU = "(SELECT deviceId d, streamId s, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL " ..
            "SELECT deviceId, streamId, start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL " ..
            "SELECT deviceId, streamId, start, end FROM CUPTI_ACTIVITY_KIND_MEMSET)"

return {
  {"nsl.pack writes little-endian values that string.unpack reads back", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local lo = k.start:min()
    local packed = nsl.pack(k.start, "f64", lo)
    T.eq(#packed, 8 * #k, "8 bytes a value")
    for _, i in ipairs{1, 2, #k // 2, #k} do
      T.eq(string.unpack("<d", packed, 8 * (i - 1) + 1), (k.start[i] - lo) + 0.0, "start " .. i)
    end
    local ids = nsl.pack(k.device, "u16")
    T.eq(string.unpack("<I2", ids, 2 * (#k - 1) + 1), k.device[#k], "u16")
    local neg = nsl.pack(nsl.column{-5, 7}, "i32")
    T.eq(string.unpack("<i4", neg, 1), -5, "i32 negative")
    T.raises(function() nsl.pack(nsl.column{-1}, "u32") end, "does not fit", "u32 of a negative value")
    T.raises(function() nsl.pack(nsl.column{1}, "i64") end, "one of", "an unknown type")
  end},

  {"bin_counts counts each time in the bin whose edges (nsl.bin_edges) enclose it", function()
    for _, case in ipairs{{0, 10, 4}, {7, 1000, 13}, {100, 103, 7}, {-50, 5000000017, 2000}, {5, 6, 3}} do
      local lo, hi, nb = case[1], case[2], case[3]
      local edges = nsl.bin_edges(lo, hi, nb):totable()
      local ts = {lo - 1, hi, hi + 7}   -- (outside: left out)
      for t = lo, math.min(hi - 1, lo + 300) do ts[#ts + 1] = t end
      for j = 0, nb do ts[#ts + 1] = math.min(edges[j + 1], hi - 1); ts[#ts + 1] = math.max(lo, edges[j + 1] - 1) end
      local want = {}
      for b = 1, nb do want[b] = 0 end
      for _, t in ipairs(ts) do
        if t >= lo and t < hi then
          local b = 0
          while b + 1 < nb and edges[b + 2] <= t do b = b + 1 end
          want[b + 1] = want[b + 1] + 1
        end
      end
      for _, col in ipairs{nsl.column(ts), nsl.column(ts):cast("i32")} do
        if col:type() == "i64" or (lo > -2^31 and hi < 2^31) then
          local got = nsl.bin_counts(col, lo, hi, nb):totable()
          for b = 1, nb do
            if got[b] ~= want[b] then
              error(string.format("[%d, %d) in %d bins (%s): bin %d holds %d, edges say %d", lo, hi, nb, col:type(),
                                  b - 1, got[b], want[b]))
            end
          end
        end
      end
    end
    local c = nsl.bin_counts(nsl.column{1, 2}:gather(nsl.column{0, -1, 1}), 0, 4, 2):totable()
    T.eq(c[1] .. " " .. c[2], "1 1", "a NULL is left out")
    T.raises(function() nsl.bin_counts(nsl.column{1.5}, 0, 4, 2) end, "integer", "a float column")
    T.raises(function() nsl.bin_counts(nsl.column{1}, 4, 4, 2) end, "empty", "an empty range")
    T.raises(function() nsl.bin_counts(nsl.column{1}, 0, 4, 0) end, "bins", "no bins")
  end},

  {"every level of detail per bin equals SQL between the bin's edges", function()
    local tr = assert(nsl.open(nccl))
    -- a detail window of the first 2000 events: the finer levels leave out the bins wholly inside it
    local v = view.viewer(tr, {findings = false, bins = 64, levels = 3, max_events = 2000})
    T.eq(#v.lod, 3, "three levels")
    -- each level's cells, and a bin left out past level 0: full when its parent is, else empty
    local cells, edges_of = {}, {}
    for k, lv in ipairs(v.lod) do
      T.eq(lv.bins, 64 * 4 ^ (k - 1) // 1, "level " .. k .. " bins")
      cells[k], edges_of[k] = {}, nsl.bin_edges(v.lo, v.hi, lv.bins):totable()
      for i = 1, #lv.cell do cells[k][lv.cell[i]] = {lv.busy[i], lv.starts[i]} end
    end
    local function cell(k, r, b)
      local nb = v.lod[k].bins
      local c = cells[k][r * nb + b]
      if c then return c[1], c[2] end
      if k > 1 then
        local pb, pn = cell(k - 1, r, b // 4)
        local pe, e = edges_of[k - 1], edges_of[k]
        if pn == 0 and pb > 0 and pb == pe[b // 4 + 2] - pe[b // 4 + 1] then
          return e[b + 2] - e[b + 1], 0
        end
      end
      return 0, 0
    end
    local checked, full = 0, 0
    for r, row in ipairs(v.rows) do
      local sql = row.kind == "gpu" and
        string.format("SELECT start, end FROM %s WHERE d = %d AND s = %d", GPU, row.device, row.stream) or
        string.format("SELECT start, end FROM NVTX_EVENTS WHERE end IS NOT NULL AND (globalTid >> 24) & 16777215 = %d" ..
                      " AND globalTid & 16777215 = %d", row.pid, row.tid)
      local iv = {}
      for _, x in ipairs(T.sql(nccl, sql)) do iv[#iv + 1] = {math.tointeger(x[1]), math.tointeger(x[2])} end
      for k, lv in ipairs(v.lod) do
        local edges = edges_of[k]
        for b = 0, lv.bins - 1 do
          local e0, e1 = edges[b + 1], edges[b + 2]
          if k > 1 and e0 >= v.from and e1 <= v.to then
            T.eq(cells[k][(r - 1) * lv.bins + b], nil, "a bin inside the detail window is left out")
            goto next_bin
          end
          local n = 0
          for _, x in ipairs(iv) do if x[1] >= e0 and x[1] < e1 then n = n + 1 end end
          local busy, starts = cell(k, r - 1, b)
          local what = string.format("%s level %d bin %d", row.label, k, b)
          T.eq(starts, n, what .. ": events starting")
          T.eq(busy, T.union_len(iv, e0, e1), what .. ": busy")
          if k > 1 and not cells[k][(r - 1) * lv.bins + b] and busy > 0 then full = full + 1 end
          checked = checked + 1
          ::next_bin::
        end
      end
    end
    T.ok(checked >= 4 * 64 * 15, "four rows of most of 64 + 256 + 1024 bins checked")
    T.ok(full > 0, "some full bins are left out and inferred from their parent")
  end},

  {"the default detail window ends at the start of the event past max_events", function()
    local tr = assert(nsl.open(nccl))
    local all = "(SELECT start s FROM " .. GPU .. " UNION ALL SELECT start FROM NVTX_EVENTS WHERE end IS NOT NULL)"
    local lo = T.sql1(nccl, "SELECT min(s) FROM " .. all)
    for _, n in ipairs{1, 777, 10000} do
      local v = view.viewer(tr, {findings = false, max_events = n})
      T.eq(v.from, lo, "from the first event")
      T.eq(v.to, T.sql1(nccl, string.format("SELECT s FROM %s ORDER BY s LIMIT 1 OFFSET %d", all, n)),
           "max_events " .. n)
    end
    -- from a later start: the window counts from there
    local from = lo + 100000000
    local v = view.viewer(tr, {findings = false, max_events = 2000, from = from})
    T.eq(v.to, T.sql1(nccl, string.format("SELECT s FROM %s WHERE s >= %d ORDER BY s LIMIT 1 OFFSET 2000", all, from)),
         "2000 events from 100 ms on")
  end},

  {"nsys-jax archives: a GPU row per device holds every range the archive projected (its CSV copy)", function()
    local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
    local tr = assert(nsl.open(T.data("nsys-jax/pax_fsdp4_4proc_proc1.zip")))
    local v = view.viewer(tr, {findings = false})
    local gpu = {}
    for _, row in ipairs(v.rows) do if row.kind == "gpu" then gpu[#gpu + 1] = row end end
    local rows = 0
    for _, r in ipairs(J.csv_records(T.data("nsys-jax/mini/proc1/nvtx_gpu_proj_trace.trace.csv.gz"))) do
      if r.Name ~= "" then rows = rows + 1 end
    end
    T.eq(#gpu, 1, "one device")
    T.eq(gpu[1] and gpu[1].label, "GPU 1 XLA", "the device of process 1 (nsys-jax's)")
    T.eq(gpu[1] and gpu[1].events, rows, "every projected range (CSV)")
  end},
}
