-- The overlap analysis against a brute-force sweep over event boundaries in
-- plain Lua, on GPU operations read by SQL through the sqlite3 program; per
-- iteration on copies with planted NVTX iterations, attributed by SQL.
local T = ...
local nsl = require("nsl")
local L = dofile(T.source_dir .. "/tests/lua/comm_testlib.lua")(T)

local nccl_file = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local h100_file = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")

local function by_device(ops)
  local devs = {}
  for _, o in ipairs(ops) do
    devs[o.device] = devs[o.device] or {list = {}, lo = math.huge, hi = -math.huge}
    local d = devs[o.device]
    d.list[#d.list + 1] = o
    d.lo, d.hi = math.min(d.lo, o.start), math.max(d.hi, o.stop)
  end
  return devs
end

local function check_device_rows(path)
  local tables = L.run("overlap", {path})
  local rows = tables.overlap
  local devs = by_device(L.sql_ops(path))
  local seen, sum = 0, {span = 0, co = 0, no = 0, both = 0, neither = 0}
  for _, r in ipairs(rows) do
    if r.Report ~= "all" then
      local d = assert(devs[r.Device], "device " .. tostring(r.Device))
      local want = L.sweep(d.list, d.lo, d.hi)
      local what = path:match("[^/]+$") .. " device " .. r.Device
      T.eq(r["Span (ns)"], d.hi - d.lo, what .. " span")
      T.eq(r["Compute Only (ns)"], want.compute_only, what .. " compute only")
      T.eq(r["NCCL Only (ns)"], want.nccl_only, what .. " NCCL only")
      T.eq(r["Both (ns)"], want.both, what .. " both")
      T.eq(r["Neither (ns)"], want.neither, what .. " neither")
      T.eq(r["Memory Only (ns)"], want.memory_only, what .. " memory only")
      T.eq(r["Idle (ns)"], want.idle, what .. " idle")
      T.eq(r["Compute Only (ns)"] + r["NCCL Only (ns)"] + r["Both (ns)"] + r["Neither (ns)"], r["Span (ns)"],
           what .. ": the four categories add up to the span")
      T.eq(r["Memory Only (ns)"] + r["Idle (ns)"], r["Neither (ns)"], what .. ": neither = memory only + idle")
      local nccl_total = want.nccl_only + want.both
      T.near(r["NCCL Hidden (%)"], nccl_total > 0 and want.both * 100 / nccl_total or 0, 1e-12, what .. " hidden %")
      T.near(r["Compute Only (%)"] + r["NCCL Only (%)"] + r["Both (%)"] + r["Neither (%)"], 100, 1e-9, what .. " %")
      seen = seen + 1
      sum.span, sum.co, sum.no = sum.span + r["Span (ns)"], sum.co + r["Compute Only (ns)"], sum.no + r["NCCL Only (ns)"]
      sum.both, sum.neither = sum.both + r["Both (ns)"], sum.neither + r["Neither (ns)"]
    end
  end
  local ndev = 0
  for _ in pairs(devs) do ndev = ndev + 1 end
  T.eq(seen, ndev, "one row per device")
  local all = rows[#rows]
  T.eq(all.Report, "all", "last row sums the devices")
  T.eq(all.Device, nil, "the sum row has no device")
  T.eq(all["Span (ns)"], sum.span, "sum of spans")
  T.eq(all["Compute Only (ns)"], sum.co, "sum of compute only")
  T.eq(all["NCCL Only (ns)"], sum.no, "sum of NCCL only")
  T.eq(all["Both (ns)"], sum.both, "sum of both")
  T.eq(all["Neither (ns)"], sum.neither, "sum of neither")
  return rows
end

local function check_iterations(src, n)
  local path = L.plant_steps(src, "train_step", n)
  local tables = L.run("overlap", {path}, {"iteration=train_step"})
  local ops = L.sql_ops(path)
  L.attribute(path, ops, "train_step")
  -- windows and compute kernel time per (iteration, device)
  local cells = {}
  for _, o in ipairs(ops) do
    if o.iter then
      local key = o.iter .. ":" .. o.device
      cells[key] = cells[key] or {lo = math.huge, hi = -math.huge, ksum = 0}
      local c = cells[key]
      c.lo, c.hi = math.min(c.lo, o.start), math.max(c.hi, o.stop)
      if o.kind == "kernel" and not o.nccl then c.ksum = c.ksum + (o.stop - o.start) end
    end
  end
  local devs = by_device(ops)
  local rows = tables.overlap_by_iteration
  local ncells = 0
  for _ in pairs(cells) do ncells = ncells + 1 end
  T.eq(#rows, ncells, "one row per iteration and device")
  T.ok(ncells >= n, "every iteration has GPU work")
  local per_dev = {}
  for _, r in ipairs(rows) do
    local c = assert(cells[r.Iteration .. ":" .. r.Device], "iteration " .. r.Iteration .. " device " .. r.Device)
    local what = string.format("iteration %d device %d", r.Iteration, r.Device)
    local want = L.sweep(devs[r.Device].list, c.lo, c.hi)
    T.eq(r["Window (ns)"], c.hi - c.lo, what .. " window")
    T.eq(r["Compute Only (ns)"], want.compute_only, what .. " compute only")
    T.eq(r["NCCL Only (ns)"], want.nccl_only, what .. " NCCL only")
    T.eq(r["Both (ns)"], want.both, what .. " both")
    T.eq(r["Neither (ns)"], want.neither, what .. " neither")
    T.eq(r["Non-hidden Memory (ns)"], want.memory_only, what .. " non-hidden memory")
    T.eq(r["Bubble (ns)"], want.idle, what .. " bubble")
    T.eq(r["Compute Kernel Time (ns)"], c.ksum, what .. " compute kernel time")
    T.eq(r["GPA Estimate (ns)"], (c.hi - c.lo) - c.ksum, what .. " GPA estimate")
    T.eq(r["Compute Only (ns)"] + r["NCCL Only (ns)"] + r["Both (ns)"] + r["Neither (ns)"], r["Window (ns)"],
         what .. ": categories add up to the window")
    local d = per_dev[r.Device] or {n = 0, w = 0, k = 0, no = 0, mo = 0, idle = 0}
    per_dev[r.Device] = d
    d.n, d.w, d.k = d.n + 1, d.w + (c.hi - c.lo), d.k + c.ksum
    d.no, d.mo, d.idle = d.no + want.nccl_only, d.mo + want.memory_only, d.idle + want.idle
  end
  -- the GPA-style summary: means over the device's iterations
  local tot = {n = 0, w = 0, k = 0, no = 0}
  for _, s in ipairs(tables.iteration_summary) do
    if s.Report ~= "all" then
      local d = per_dev[s.Device]
      local what = "summary device " .. s.Device
      T.eq(s.Iterations, d.n, what .. " iterations")
      T.near(s["Avg Window (ns)"], d.w / d.n, 1e-12, what .. " average window")
      T.near(s["Compute Kernel Time per Iteration (ns)"], d.k / d.n, 1e-12, what .. " kernel time per iteration")
      T.near(s["GPA Estimate per Iteration (ns)"], (d.w - d.k) / d.n, 1e-12, what .. " estimate")
      T.near(s["GPA Estimate (%)"], (d.w - d.k) * 100 / d.w, 1e-12, what .. " estimate %")
      T.near(s["Non-hidden NCCL per Iteration (ns)"], d.no / d.n, 1e-12, what .. " non-hidden NCCL")
      T.near(s["Non-hidden Memory per Iteration (ns)"], d.mo / d.n, 1e-12, what .. " non-hidden memory")
      T.near(s["Bubble per Iteration (ns)"], d.idle / d.n, 1e-12, what .. " bubble")
      tot.n, tot.w, tot.k = tot.n + d.n, tot.w + d.w, tot.k + d.k
    end
  end
  local all = tables.iteration_summary[#tables.iteration_summary]
  T.eq(all.Report, "all", "summary over all devices")
  T.eq(all.Iterations, tot.n, "all: iteration x device pairs")
  T.near(all["GPA Estimate per Iteration (ns)"], (tot.w - tot.k) / tot.n, 1e-12, "all: estimate")
  return tables
end

return {
  {"per device: nccl file against the brute-force sweep", function()
    local rows = check_device_rows(nccl_file)
    T.eq(#rows, 3, "two devices and the sum")
    T.ok(rows[1]["NCCL Only (ns)"] > 0, "device 0 has exposed NCCL time")
  end},

  {"figure: each GPU's bar splits its span as the brute-force sweep of the SQL rows does", function()
    for _, path in ipairs{nccl_file, h100_file} do
      local devs = by_device(L.sql_ops(path))
      local d = assert(T.figures("overlap", {path}).overlap, "overlap figure").values
      local ndev = 0
      for _ in pairs(devs) do ndev = ndev + 1 end
      T.eq(#d.categories, ndev, path .. ": one bar per device")
      for i, label in ipairs(d.categories) do
        local dev = assert(devs[tonumber(label:match("GPU (%d+)$"))], "device of " .. label)
        local want = L.sweep(dev.list, dev.lo, dev.hi)
        local what = path:match("[^/]+$") .. " " .. label
        for j, key in ipairs{"compute_only", "nccl_only", "both", "memory_only", "idle"} do
          T.eq(d.series[j].values[i], want[key], what .. ": " .. d.series[j].label)
        end
        T.eq(d.totals[i], dev.hi - dev.lo, what .. ": the bar is the device's span")
      end
    end
  end},

  {"per device: h100 file (no NCCL) against the brute-force sweep", function()
    local rows = check_device_rows(h100_file)
    for _, r in ipairs(rows) do
      T.eq(r["NCCL Only (ns)"], 0, "no NCCL")
      T.eq(r["Both (ns)"], 0, "no overlap with NCCL")
    end
  end},

  {"two exports at once: one row per (report, device), as each alone", function()
    local both = L.run("overlap", {nccl_file, h100_file}).overlap
    local alone = {}
    for _, path in ipairs{nccl_file, h100_file} do
      for _, r in ipairs(L.run("overlap", {path}).overlap) do
        if r.Report ~= "all" then alone[r.Report .. ":" .. r.Device] = r end
      end
    end
    T.eq(#both, 5, "four devices and the sum")
    for i = 1, 4 do
      local r = both[i]
      local a = assert(alone[r.Report .. ":" .. r.Device])
      for _, c in ipairs{"Span (ns)", "Compute Only (ns)", "NCCL Only (ns)", "Both (ns)", "Neither (ns)", "Idle (ns)"} do
        T.eq(r[c], a[c], r.Report .. " " .. r.Device .. " " .. c)
      end
    end
  end},

  {"per iteration: planted steps on the nccl file", function()
    local tables = check_iterations(nccl_file, 4)
    local est = 0
    for _, r in ipairs(tables.overlap_by_iteration) do est = est + r["NCCL Only (ns)"] end
    T.ok(est > 0, "some NCCL time is not hidden")
    L.cleanup()
  end},

  {"per iteration: planted steps on the h100 file", function()
    check_iterations(h100_file, 3)
    L.cleanup()
  end},

  {"devices in several batches of lanes give the same results", function()
    local lanes = require("nsl.lanes")
    local path = L.plant_steps(nccl_file, "train_step", 3)
    local paths = {path, h100_file}
    local args = {"iteration=train_step"}
    local one = L.run("overlap", paths, args)
    local saved = lanes.limit
    local ok, err = pcall(function()
      local _, hi = lanes.bounds(require("nsl").open(paths).kernels.start, require("nsl").open(paths).kernels.stop)
      lanes.limit = hi + 2   -- about one device per batch
      local many = L.run("overlap", paths, args)
      for name, rows in pairs(one) do
        T.eq(#many[name], #rows, name .. " rows")
        for i, r in ipairs(rows) do
          for k, v in pairs(r) do T.eq(many[name][i][k], v, name .. " row " .. i .. " " .. k) end
        end
      end
    end)
    lanes.limit = saved
    L.cleanup()
    if not ok then error(err, 0) end
  end},

  {"iteration names: exact, or followed by a non-word character", function()
    local steps = require("nsl.steps")
    T.ok(steps.matches("train_step", "train_step"), "exact")
    T.ok(steps.matches("aten::mm, op_id = 12", "aten::mm"), "PyTorch suffix")
    T.ok(not steps.matches("train_stepper", "train_step"), "a longer word")
    T.ok(not steps.matches("aten::mm_out", "aten::mm"), "an identifier continues")
    T.ok(not steps.matches("train", "train_step"), "shorter")
  end},

  {"bad input: unknown iteration, no kernels", function()
    local msg = L.run_fails("overlap", {nccl_file}, {"iteration=no_such_range"})
    T.ok(msg:find("no NVTX range named 'no_such_range'", 1, true), msg)
    local empty = L.tmpdir() .. "/no_gpu.sqlite"
    assert(os.execute("cp " .. T.shell_quote(T.data("nsys/tiny_2026.1.sqlite")) .. " " .. T.shell_quote(empty)))
    T.sql_exec(empty, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_MEMCPY; " ..
                      "DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_MEMSET")
    msg = L.run_fails("overlap", {empty})
    T.ok(msg:find("no GPU kernels or memory operations", 1, true), msg)
    L.cleanup()
  end},

  {"sorting by a constant string key, then another key (regression)", function()
    local t = nsl.table{{"a", {"x", "x", "x"}}, {"b", {3, 1, 2}}}:sort("a", "b")
    T.eq(table.concat(t.b:totable(), ","), "1,2,3", "sorted by b")
  end},
  {"lanes.pairs_in: kernels that end in the 10 us a short kernel starts in on their device, as SQL finds them", function()
    local lanes = require("nsl.lanes")
    local tr = nsl.open{nccl_file}
    local k = tr.kernels
    k:load{"device", "start", "stop"}
    local dev = k.device:cast("i64")
    local short = (k.stop - k.start):lt(10000)
    local s = nsl.table{{"g", dev}, {"t", k.start // 10000}}:filter(short)
    local ends = k.stop // 10000
    local want = T.sql1(nccl_file, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL a WHERE EXISTS (SELECT 1 FROM " ..
      "CUPTI_ACTIVITY_KIND_KERNEL b WHERE b.deviceId = a.deviceId AND b.start / 10000 = a.end / 10000 " ..
      "AND b.end - b.start < 10000)")
    T.ok(want > 100 and want < #k, "some kernels, not all")
    local one = lanes.pairs_in(dev, ends, s.g, s.t)
    T.eq(one:count(), want, "as one integer key")
    -- a pair far from the others makes the span too wide for one integer: the same on the pair; a NULL is
    -- among none
    local g2, t2 = nsl.concat(s.g, nsl.column{0, 1}), nsl.concat(s.t, nsl.column{math.maxinteger - 5, 0})
    local with_null = dev:gather(nsl.concat(nsl.column{-1}, nsl.range(#k - 1) + 1))   -- row 1 NULL
    T.eq(with_null:isnull():count(), 1, "a NULL device")
    local both = lanes.pairs_in(with_null, ends, g2, t2)
    T.eq(both:count(), want - (one[1] and 1 or 0), "on the pair")
    T.eq(both[1], false, "the NULL device's row")
    local hand = lanes.pairs_in(nsl.column{3, 4}, nsl.column{-7, 8}, nsl.column{4, 3}, nsl.column{8, 8})
    T.eq(#hand, 2, "by hand: a row each")
    T.eq(hand[1], false, "by hand: (3, -7) is not among (4, 8), (3, 8)")
    T.eq(hand[2], true, "by hand: (4, 8) is")
    tr:close()
  end},
  {"lanes.bounds over pairs of columns: the earliest start and latest stop of them all, as SQL finds them", function()
    local lanes = require("nsl.lanes")
    local tr = nsl.open{nccl_file}
    local k, m = tr.kernels, tr.memcpy
    k:load{"start", "stop"}
    m:load{"start", "stop"}
    local lo, hi = lanes.bounds(k.start, k.stop, m.start, m.stop)
    T.eq(lo, T.sql1(nccl_file, "SELECT min(s) FROM (SELECT start s FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL " ..
      "SELECT start FROM CUPTI_ACTIVITY_KIND_MEMCPY)"), "earliest start")
    T.eq(hi, T.sql1(nccl_file, "SELECT max(e) FROM (SELECT end e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL " ..
      "SELECT end FROM CUPTI_ACTIVITY_KIND_MEMCPY)"), "latest stop")
    local none = k.start:gather(nsl.rep(-1, 3))   -- three NULLs
    local a, b = lanes.bounds(none, none)
    T.eq(a, nil, "no start")
    T.eq(b, nil, "no stop")
    local c, d = lanes.bounds(none, none, k.start, k.stop)
    T.eq(c, T.sql1(nccl_file, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "NULLs beside values")
    T.eq(d, T.sql1(nccl_file, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "NULLs beside values: stop")
    tr:close()
  end},
  {"overlap.measure: a window reaching before every operation stays in its own group's lane", function()
    -- group 0: a kernel at [0, 10) and a copy at [90, 100); group 1: a kernel at [50, 60), its window from -20
    -- (a device's span beginning at an operation the measure is not given, as streams.serialised's).  Laid on
    -- an axis that began at the first operation, group 1's window reached back into group 0's lane and took its
    -- copy: 10 ns of memory alone where group 1 has none.  By hand: 0 and 10.
    local overlap = require("nsl.overlap")
    local ops = nsl.table{{"start", nsl.column{0, 90, 50}}, {"stop", nsl.column{10, 100, 60}},
                          {"memop", nsl.column{false, true, false}}}
    local m = overlap.measure(ops, nsl.column{false, false, false}, nsl.column{0, 0, 1}, 2,
                              {{gid = nsl.column{1, 0}, lo = nsl.column{-20, 0}, hi = nsl.column{60, 100}}},
                              {"memory_only", "all"})[1]
    T.eq(m.memory_only[1], 0, "group 1: no copy")
    T.eq(m.memory_only[2], 10, "group 0: its copy")
    T.eq(m.all[1], 10, "group 1: its kernel")
    T.eq(m.all[2], 20, "group 0: kernel and copy")
  end},
}
