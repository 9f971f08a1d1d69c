-- flamegraph: the folded weights add up to what SQL attributes on the same
-- file; every CPU-sampling export gives a non-empty graph with one count per
-- sample; stacks run root first as the frames' depths say.
local T = ...

local function total(f) return f.weight:sum() end

local gpu_ops_sql = [[SELECT (SELECT coalesce(sum(end - start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL)
  + (SELECT coalesce(sum(end - start), 0) FROM CUPTI_ACTIVITY_KIND_MEMCPY)
  + (SELECT coalesce(sum(end - start), 0) FROM CUPTI_ACTIVITY_KIND_MEMSET)]]

local function has(path, tbl)
  return T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE name = '" .. tbl .. "'") == 1
end

return {
  {"NVTX flame graph: GPU time of every operation is attributed exactly once (= SQL total)", function()
    for _, rel in ipairs{"nsys/pytorch_nccl_2gpu_2026.2.sqlite", "nsys/pytorch_h100_2gpu_2026.2.sqlite",
                         "nsys/nvfuser_2024.6.sqlite", "nsys/mpi_cuda_rank0_2022.2.sqlite"} do
      local f = T.data(rel)
      local tables = T.run_analysis("flamegraph", {f}, {"source=nvtx", "top=1000000"})
      T.eq(total(tables.stacks_nvtx), T.sql1(f, gpu_ops_sql), "total GPU time of " .. rel)
    end
  end},

  {"every CPU-sampling export: one count per sample (= SQL count), non-empty", function()
    local n = 0
    for _, f in ipairs(T.exports()) do
      if has(f, "COMPOSITE_EVENTS") and T.sql1(f, "SELECT count(*) FROM COMPOSITE_EVENTS") > 0 then
        n = n + 1
        local tables = T.run_analysis("flamegraph", {f}, {"source=sampling", "top=1000000"})
        local s = tables.stacks_sampling
        T.ok(s and #s > 0, "non-empty graph for " .. f)
        T.eq(total(s), T.sql1(f, "SELECT count(*) FROM COMPOSITE_EVENTS"), "samples of " .. f)
      end
    end
    T.ok(n >= 3, "three sampling exports at least")
  end},

  {"sampling stacks are root first, as SQL orders the frames", function()
    local f = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")
    local tables = T.run_analysis("flamegraph", {f}, {"source=sampling", "top=1000000"})
    local s = tables.stacks_sampling
    local set = {}
    for i = 1, #s do set[s.stack[i]] = s.weight[i] end
    -- the stack of the samples with the deepest chains, built by SQL
    local rows = T.sql(f, [[SELECT group_concat(name, ';') FROM (SELECT c.id, c.stackDepth,
        coalesce(sy.value, '[' || m.value || ']') AS name FROM SAMPLING_CALLCHAINS c
        LEFT JOIN StringIds sy ON sy.id = c.symbol LEFT JOIN StringIds m ON m.id = c.module
        WHERE c.id IN (SELECT id FROM SAMPLING_CALLCHAINS GROUP BY id ORDER BY max(stackDepth) DESC, id LIMIT 5)
        ORDER BY c.id, c.stackDepth DESC) GROUP BY id]])
    for _, r in ipairs(rows) do
      local path = r[1]:gsub("%[([^%]]*/)([^/%]]+)%]", "[%2]")   -- modules by file name
      T.ok(set[path] ~= nil, "stack present: " .. path:sub(1, 120))
    end
  end},

  {"launch stacks: GPU time of the operations with a launching call (= SQL)", function()
    local f = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")
    local tables = T.run_analysis("flamegraph", {f}, {"source=launch", "top=1000000"})
    local want = 0
    for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
      if has(f, t) then
        want = want + T.sql1(f, string.format([[SELECT coalesce(sum(end - start), 0) FROM %s o WHERE EXISTS
          (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = o.correlationId)]], t))
      end
    end
    T.eq(total(tables.stacks_launch), want, "launched GPU time")
  end},

  {"--out writes the folded file whose weights add up", function()
    local dir = os.tmpname()
    os.remove(dir)
    local nslbin = assert(os.getenv("NSL"))
    local f = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
    local ok = os.execute(string.format("%s run flamegraph %s --arg source=nvtx --out %s > /dev/null",
      T.shell_quote(nslbin), T.shell_quote(f), T.shell_quote(dir)))
    T.ok(ok, "nsl run flamegraph --out")
    local sum, lines = 0, 0
    for line in io.lines(dir .. "/flamegraph-nvtx.folded") do
      local w = line:match(" (%d+)$")
      T.ok(w, "folded line 'stack weight': " .. line:sub(1, 80))
      sum, lines = sum + tonumber(w), lines + 1
    end
    T.eq(sum, T.sql1(f, gpu_ops_sql), "folded file total")
    T.ok(lines > 1, "several stacks")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},
  {"nsys-jax archive, source=xla: the notebook's source flame graph (golden), in ns; SVG and PNG written", function()
    local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
    local D = T.data("nsys-jax")
    local dir = J.tmpdir()
    local ok = os.execute(string.format("%s run flamegraph %s --arg source=xla --out %s > /dev/null",
      T.shell_quote(assert(os.getenv("NSL"))), T.shell_quote(D .. "/pax_fsdp4_4proc_proc0.zip"), T.shell_quote(dir)))
    T.ok(ok, "nsl run flamegraph --arg source=xla --out")
    local want, nwant = J.folded(J.read(D .. "/golden/proc0/source_flamegraph.folded.xz"))
    local got, ngot = J.folded(J.read(dir .. "/flamegraph-xla.folded"))
    T.eq(ngot, nwant, "stacks")
    for k, ms in pairs(want) do
      T.ok(got[k], "stack " .. k:sub(1, 100))
      T.ok(math.abs(got[k] - ms * 1e6) <= 1, "weight of " .. k:sub(1, 100) .. " (ns = golden ms x 1e6, rounded)")
    end
    T.ok(J.read(dir .. "/flamegraph-xla.svg"):find("<svg", 1, true), "interactive SVG")
    T.eq(J.read(dir .. "/flamegraph-xla.png"):sub(1, 8), "\137PNG\r\n\26\n", "PNG")
    -- jax_flamegraph: both graphs as nsys-jax's folded text (ms), SVG and PNG
    ok = os.execute(string.format("%s run jax_flamegraph %s --out %s/j > /dev/null",
      T.shell_quote(assert(os.getenv("NSL"))), T.shell_quote(D .. "/pax_fsdp4_4proc_proc0.zip"), T.shell_quote(dir)))
    T.ok(ok, "nsl run jax_flamegraph --out")
    for _, which in ipairs{"source", "op_name"} do
      local w = J.folded(J.read(D .. "/golden/proc0/" .. which .. "_flamegraph.folded.xz"))
      local g = J.folded(J.read(dir .. "/j/" .. which .. "_flamegraph.folded"))
      for k, ms in pairs(w) do T.near(g[k], ms, 1e-6, which .. " stack " .. k:sub(1, 80)) end
      T.ok(J.read(dir .. "/j/" .. which .. "_flamegraph.svg"):find("<svg", 1, true), which .. " SVG")
      T.eq(J.read(dir .. "/j/" .. which .. "_flamegraph.png"):sub(1, 8), "\137PNG\r\n\26\n", which .. " PNG")
    end
    J.cleanup()
  end},

  {"nsys-jax archive, source=nvtx: the projected ranges' tree (= the trace.parquet CSV copy, in plain Lua)", function()
    local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
    local D = T.data("nsys-jax")
    local tables = T.run_analysis("flamegraph", {D .. "/pax_fsdp4_4proc_proc0.zip"}, {"source=nvtx", "top=1000000"})
    local got = {}
    local f = tables.stacks_nvtx
    for i = 1, #f do got[f.stack[i]] = f.weight[i] end
    -- oracle: the CSV copy of trace.parquet; path = texts of the ParentId chain,
    -- weight = Projected Duration less the children's, at least 0
    local rows = J.csv_records(D .. "/mini/proc0/nvtx_gpu_proj_trace.trace.csv.gz")
    local by, child = {}, {}
    for _, r in ipairs(rows) do
      if r.RangeId ~= "" then by[r.RangeId] = r end
    end
    for _, r in ipairs(rows) do
      if r.RangeId ~= "" and r.ParentId ~= "" then
        child[r.ParentId] = (child[r.ParentId] or 0) + tonumber(r["Projected Duration"])
      end
    end
    local want, total = {}, 0
    for id, r in pairs(by) do
      local names, p = {}, r
      while p do
        table.insert(names, 1, (p.Name:gsub("[;\r\n]", ":")))
        p = p.ParentId ~= "" and by[p.ParentId:match("^(%d+)")] or nil
      end
      local w = math.max(0, tonumber(r["Projected Duration"]) - (child[id] or 0))
      local k = table.concat(names, ";")
      want[k] = (want[k] or 0) + w
      total = total + w
    end
    local n = 0
    for k, w in pairs(want) do
      if w > 0 then
        T.eq(got[k], w, "stack " .. k:sub(1, 100))
        n = n + 1
      end
    end
    T.eq(#f, n, "stacks")
    T.eq(f.weight:sum(), total, "total")
  end},
}
