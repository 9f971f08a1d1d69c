-- flamegraph -- flame graphs from every source of stacks a trace has, as
-- folded stacks (`a;b;c N`, the format flamegraph.pl, speedscope and inferno
-- read) and, wherever figures go (--out, --embed, notebooks), as an
-- interactive SVG and a PNG.
--
-- Sources (`--arg source=auto` takes every one the trace has):
--   nvtx      nested NVTX ranges per thread, weighted by the GPU time projected
--             onto them (the ops whose launching call lies innermost in a range
--             count for that range; `--arg weight=cpu`: range CPU time instead);
--             GPU work launched outside every range is "[outside NVTX]".  On an
--             nsys-jax archive: the ranges nsys projected onto the GPU, each
--             weighted by its GPU span less its children's.
--   sampling  CPU sampling call stacks (samples + frames), one per sample.
--   launch    the CPU call stacks of CUDA API calls (CUDA_CALLCHAINS), ending
--             in the API call, weighted by the GPU time of the work it launched.
--   xla       (JAX traces: nsys-jax archives, bundles with XLA dumps) the Python
--             source lines of the HLO operations, weighted by steady-state GPU
--             time as nsys-jax's notebook attributes it (jax_flamegraph).
-- Weights are ns (GPU/CPU time) or sample counts.
local nsl = require("nsl")
local report = require("nsl.report")

-- Frame names must not contain the folded format's separators.
local function clean(s) return (s:gsub("[;\r\n]", ":")) end

--- The weights (an integer column) summed per path (a string column; NULL
-- paths left out): an nsl table {stack, weight}, every path, in no order.
-- Sums of several traces' rows add up to the sums of all (merged_stacks).
local function sums(paths, weights)
  local t = nsl.table{{"stack", paths}, {"w", weights}}
  t = t:filter(~t.stack:isnull())
  return t:group_by("stack"):agg{"weight=sum(w)"}
end

--- The folded lines of sums: the paths with a positive weight, heaviest first.
local function finish(g)
  g = g:filter(g.weight:gt(0))
  return g:sort("-weight", "stack")
end

--- Folded lines from a string column of paths and an integer column of
-- weights (summed per path); returns an nsl table {stack, weight} by weight.
local function fold(paths, weights)
  return finish(sums(paths, weights))
end

--- nsys-jax archives hold the NVTX ranges already projected onto the GPU
-- (trace.gpu_ranges: range_id, parent_id per report) and no GPU operations:
-- the tree of those ranges, each weighted by its projected GPU span less its
-- children's.
local function projected_stacks(trace)
  local g = trace.gpu_ranges
  g:load{"report", "range_id", "parent_id", "text", "dur"}
  local _, parent = g:join(nsl.table{{"report", g.report}, {"parent_id", g.range_id}}, {"report", "parent_id"})
  parent = nsl.where(parent:isnull(), -1, parent:cast("i64"))
  local tp = nsl.tree_paths(parent, g.text)
  local kids = nsl.table{{"row", parent}, {"dur", g.dur}}:group_by("row"):agg{"dur=sum(dur)"}
  local child = nsl.table{{"row", nsl.range(#g)}}:join(kids, {"row"}, {"dur"}).dur
  local self = g.dur - nsl.where(child:isnull(), 0, child)
  self = nsl.where(self:lt(0), 0, self)
  local names, parents = g.text:gather(tp.node_row):totable(), tp.node_parent:totable()
  local paths = {}
  for id = 0, tp.n - 1 do   -- nodes are made parents first
    local p = parents[id + 1]
    local name = clean(names[id + 1])
    paths[id + 1] = p < 0 and name or (paths[p + 1] .. ";" .. name)
  end
  return fold(nsl.column(paths):gather(tp.node), self), "ns of GPU time projected"
end

local nvtx_units = {cpu = "ns of CPU time in NVTX ranges", gpu = "ns of GPU time"}

--- The NVTX stacks' weights per path of trace's ranges (sums, unfolded)
-- and the GPU time launched outside every range.
local function nvtx_sums(trace, args)
  local nvtx = require("nsl.nvtx")
  -- release: the calls and the ranges' text are unloaded once read (a later source loads what it needs again)
  local P = nvtx.project(trace, {strip = args.raw_names and nil or nvtx.pytorch_suffixes, release = true})
  local R = P.ranges
  local label = (R:coltype("label") and R.label or R.name):map(clean)
  P.ranges = R:with("label", label)
  local T = nvtx.tree(P, {sep = ";"})
  local n = T.nodes
  return sums(n.path, args.weight == "cpu" and n.cpu_self or n.gpu_self), T.outside.gpu_time
end

--- The folded NVTX stacks from their sums and the GPU time outside every range.
local function nvtx_finish(g, outside, args)
  local f = finish(g)
  if args.weight ~= "cpu" and outside > 0 then
    f = nsl.table{{"stack", nsl.concat(f.stack, nsl.column{"[outside NVTX]"})},
                  {"weight", nsl.concat(f.weight, nsl.column{outside})}}:sort("-weight", "stack")
  end
  return f, nvtx_units[args.weight]
end

local function nvtx_stacks(trace, args)
  if require("nsl.jax").is_archive(trace) then return projected_stacks(trace) end
  if #trace.nvtx == 0 then return nil end
  local g, outside = nvtx_sums(trace, args)
  return nvtx_finish(g, outside, args)
end

--- Root-first paths of the call stacks in a frames-shaped table (report,
-- stack, depth, symbol, module): a table {report, stack, path}.
local function stack_paths(fr)
  fr:load{"report", "stack", "depth", "symbol", "module"}
  local sym = fr.symbol:map(function(s) return clean(s) end)
  local mod = fr.module:map(function(s) return "[" .. clean(s:match("[^/]+$") or s) .. "]" end)
  local name = nsl.where(~fr.symbol:isnull(), sym, mod)   -- the symbol, else the module
  local s = nsl.table{{"report", fr.report}, {"stack", fr.stack}, {"depth", fr.depth}, {"name", name}}
    :sort("report", "stack", "-depth")   -- the outermost frame (deepest) first
  local g = s:group_by("report", "stack")
  local keys = g:keys()
  return keys:with("path", nsl.group_concat(g:ids(), #g, s.name, ";"))
end

-- The samples counted per call stack (sums, unfolded).
local function sampling_sums(trace)
  local smp = trace.samples
  smp:load{"report", "stack"}
  local paths = stack_paths(trace.frames)
  local j = smp:join(paths, {"report", "stack"}, {"path"})
  -- samples without frames still count, as "[no stack]"
  local p = nsl.where(j.path:isnull(), "[no stack]", j.path)
  return sums(p, nsl.rep(1, #p))
end

local function sampling_stacks(trace)
  if #trace.samples == 0 then return nil end
  return finish(sampling_sums(trace)), "samples"
end

-- The GPU time launched per CUDA call stack and call (sums, unfolded).
local function launch_sums(trace)
  local cc = trace.callchains
  local nvtx = require("nsl.nvtx")
  local ops = nvtx.gpu_ops(trace)
  local launched = ops:filter(ops.api:ge(0))
  local api = trace.api
  api:load{"report", "name", "callchain"}
  local chain = api.callchain:gather(launched.api)
  local apiname = api.name:gather(launched.api):map(clean)
  local paths = stack_paths(cc)
  local t = nsl.table{{"report", launched.report:cast("i32")}, {"stack", chain}, {"api", apiname}, {"dur", launched.stop - launched.start}}
  local j = t:join(paths, {"report", "stack"}, {"path"})
  -- path;api, or [no call stack];api
  local full = nsl.table{{"path", j.path}, {"api", j.api}, {"dur", j.dur}}
  local g = full:group_by("path", "api")
  local keys = g:keys()
  local names = {}
  for i = 1, #keys do names[i] = (keys.path[i] or "[no call stack]") .. ";" .. keys.api[i] end
  local per = g:agg{"w=sum(dur)"}
  return sums(#names > 0 and nsl.column(names) or nsl.column{""}:gather(nsl.range(0)), per.w)
end

local function launch_stacks(trace)
  if #trace.callchains == 0 then return nil end
  return finish(launch_sums(trace)), "ns of GPU time launched"
end

local function xla_stacks(trace)
  local jax = require("nsl.jax")
  if not jax.is_jax(trace) then return nil end
  local f = jax.attribution_stacks(jax.steady_attribution(trace), "source")
  if not f or #f == 0 then return nil end
  return f, "ns of steady-state GPU time"
end

local sources = {nvtx = nvtx_stacks, sampling = sampling_stacks, launch = launch_stacks, xla = xla_stacks}
local order = {"nvtx", "sampling", "launch", "xla"}

--- The folded text of an nsl table {stack, weight}.
local function folded_text(f)
  local lines = {}
  local st, w = f.stack, f.weight
  for i = 1, #f do lines[i] = st[i] .. " " .. string.format("%d", w[i]) end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

-- ---- a distributed run (nsl.distributed) ----
-- Each process makes the weights per path of its own reports' stacks
-- (sums, not yet folded: a path's weight is a sum over reports, and the
-- NVTX nodes' CPU self time is linear in their ranges too), and the GPU time
-- its operations spent outside every NVTX range; rank 0 adds them up per
-- path and folds them.  No range, sample or operation moves.  JAX traces
-- (nsys-jax archives, XLA module ranges: the xla source and the projected
-- ranges) are left to rank 0, which reads the trace as one process does.

local mine_of = setmetatable({}, {__mode = "k"})   -- a process's view -> its sums per source

local function wanted(args) return args.source == "auto" and order or {args.source} end

local function no_sums() return nsl.table{{"stack", nsl.column{""}:gather(nsl.range(0))}, {"weight", nsl.rep(0, 0)}} end

local function step(trace, args)
  local mine = {counts = {nvtx = #trace.nvtx, sampling = #trace.samples, launch = #trace.callchains}, outside = 0}
  for _, name in ipairs(wanted(args)) do
    if (name == "nvtx" or name == "xla") and mine.jax == nil then mine.jax = require("nsl.jax").is_jax(trace) end
  end
  if not mine.jax then
    for _, name in ipairs(wanted(args)) do
      if name == "nvtx" and mine.counts.nvtx > 0 then mine.nvtx, mine.outside = nvtx_sums(trace, args)
      elseif name == "sampling" and mine.counts.sampling > 0 then mine.sampling = sampling_sums(trace)
      elseif name == "launch" and mine.counts.launch > 0 then mine.launch = launch_sums(trace) end
    end
  end
  mine_of[trace] = mine
  return {}
end

local function collective(trace, args)
  local mine = mine_of[trace]
  local mpi = nsl.mpi
  if not mpi.agree(mine ~= nil and not mine.jax) then return {} end
  local c = mine.counts
  local total = mpi.allreduce(nsl.column{c.nvtx, c.sampling, c.launch}:cast("i64"), "sum"):totable()
  -- a source that another process's reports have but none of this one's: its operations count too (all outside
  -- NVTX ranges, or launched without a call stack), as a report's do in one process
  local ok, err = pcall(function()
    for _, name in ipairs(wanted(args)) do
      if name == "nvtx" and not mine.nvtx and total[1] > 0 then mine.nvtx, mine.outside = nvtx_sums(trace, args)
      elseif name == "launch" and not mine.launch and total[3] > 0 then mine.launch = launch_sums(trace) end
    end
  end)
  if not mpi.all_ok(ok, err) then return {} end
  local parts = {fg_counts = nsl.table{{"nvtx", nsl.rep(c.nvtx, 1)}, {"sampling", nsl.rep(c.sampling, 1)},
                                       {"launch", nsl.rep(c.launch, 1)}, {"outside", nsl.rep(mine.outside, 1)}}}
  for _, name in ipairs(wanted(args)) do
    -- (none, or an empty one whose path column has no type: a typed empty table, as the others' are)
    if name ~= "xla" then parts["fg_" .. name] = mine[name] and #mine[name] > 0 and mine[name] or no_sums() end
  end
  return parts
end

--- The folded stacks of source `name` from a distributed run's parts (nil
-- where no report has the source's events), and their unit.
local function merged_stacks(parts, name, args)
  if name == "xla" or parts.fg_counts[name]:sum() == 0 then return nil end
  local g = parts["fg_" .. name]:group_by("stack"):agg{"weight=sum(weight)"}
  if name == "nvtx" then return nvtx_finish(g, parts.fg_counts.outside:sum(), args) end
  return finish(g), name == "sampling" and "samples" or "ns of GPU time launched"
end

return {
  name = "flamegraph",
  description = "Flame graphs (folded stacks, SVG, PNG) from NVTX ranges, CPU samples, CUDA launch stacks, XLA source lines",
  args = {
    source = {default = "auto", choices = {"auto", "nvtx", "sampling", "launch", "xla"}, help = "nvtx, sampling, launch, xla, or auto (every one the trace has)"},
    weight = {default = "gpu", choices = {"gpu", "cpu"}, help = "nvtx stacks weighted by gpu (projected GPU time) or cpu (range time)"},
    top = {default = 15, help = "stacks listed per source in the table"},
    raw_names = {default = false, help = "keep per-call NVTX name suffixes (PyTorch's ', seq = N', ', op_id = N')"},
  },
  example = "nsl run flamegraph trace.sqlite --out flame/ && flamegraph.pl flame/flamegraph-nvtx.folded",
  -- parts: a distributed run's sums per source (the collective part above)
  run = function(trace, args, out, parts)
    local want = wanted(args)
    local made = 0
    local plot_ok, plot = pcall(require, "nsl.plot")
    local merged = parts and parts.fg_counts and #parts.fg_counts > 0
    for _, name in ipairs(want) do
      local f, unit
      if merged then f, unit = merged_stacks(parts, name, args) else f, unit = sources[name](trace, args) end
      if f and #f > 0 then
        made = made + 1
        local total = f.weight:sum()
        out:value("total." .. name, total)
        out:file("flamegraph-" .. name .. ".folded", folded_text(f))
        local shown = f:head(args.top)
        out:table("stacks_" .. name, nsl.table{{"weight", shown.weight}, {"share (%)", shown.weight * 100.0 / total},
          {"stack", shown.stack}},
          {title = string.format("Flame graph '%s': %d stacks, %s %s in all (heaviest first)", name, #f,
                                 report.int(total), unit)})
        if plot_ok and type(plot) == "table" and plot.flamegraph then   -- interactive SVG, PNG
          local title = "nsl flame graph: " .. name .. " (" .. unit .. ")"
          out:figure("flamegraph-" .. name, function(format)
            return plot.flamegraph(f, {title = title, format = format, interactive = format == "svg",
                                       id_prefix = "nslfg-" .. name .. "-"})   -- several in one page
          end, {formats = {"svg", "png"}, title = title})
        end
      elseif args.source ~= "auto" then
        out:text(string.format("No '%s' stacks in this trace.", name))
      end
    end
    if made == 0 then
      out:text("No stacks: the trace has no NVTX ranges, CPU samples, CUDA call stacks or XLA metadata.")
    end
  end,
  distributed = {step = step, collective = collective},
}
