-- nsl.gputrc2graph -- vLLM's gputrc2graph: GPU time per kernel category,
-- non-GPU time, and the scaling to the wall time of the run without
-- profiling, with gputrc2graph's definitions:
--   * every GPU operation of cuda_gpu_trace (kernels, memcpy, memset; names
--     as nsys prints them: demangled kernel names, "[CUDA memcpy ...]",
--     "[CUDA memset]"), in start order over the whole trace (ties: stop, then
--     name), gets an elapsed time: the part of it after the latest end of the
--     operations before it -- so the elapsed times add up to the union of
--     GPU busy time over all devices;
--   * per name: Elapsed Time (sec) = sum of elapsed / 1e9, Instances;
--   * Category: the class of the first regex of the engine/model map that
--     matches the name (re.search), none when no regex matches;
--   * gpu_sec = round(sum of Elapsed Time, 1); total_sec =
--     round(elapsed_nonprofiled_sec, 1), or the report's duration when it is
--     0; when total_sec < gpu_sec it becomes gpu_sec (with a warning); the
--     row "CPU(non-GPU)" (Instances 1) holds total_sec - gpu_sec;
--   * the label of an input is "<model>_<engine>_<file name without
--     .nsys-rep>_<index from 0>".
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")

local M = {}

M.NON_GPU = "CPU(non-GPU)"

--- Parses gputrc2graph's --in_file list: entries "FILE,ENGINE,MODEL,SEC"
-- separated by blanks (or ";").  Returns a list of {path, engine, model,
-- seconds}, or nil and a message.
function M.parse_inputs(text)
  local list = {}
  for entry in text:gmatch("[^%s;]+") do
    local path, engine, model, sec = entry:match("^([^,]+),([^,]+),([^,]+),([^,]+)$")
    local s = tonumber(sec)
    if not path or not s or s < 0 then
      return nil, string.format("in_file entry '%s': expected FILE,ENGINE,MODEL,ELAPSED_NONPROFILED_SEC", entry)
    end
    list[#list + 1] = {path = path, engine = engine, model = model, seconds = s}
  end
  if #list == 0 then return nil, "in_file: no entry (FILE,ENGINE,MODEL,SEC ...)" end
  return list
end

local function round1(x) return math.floor(x * 10 + 0.5) / 10 end

--- The elapsed (non-overlapped) time of every operation of ops (start,
-- stop; sorted by start): the part of it after the latest stop of the rows
-- before it.  An I64 column.
function M.elapsed_of(ops)
  -- the latest end before each operation: a running max of the stops, moved down one row
  local before = ops.stop:cummax():shift(-1)
  local from = nsl.where(before:isnull(), ops.start, nsl.where(before:gt(ops.start), before, ops.start))
  local elapsed = ops.stop - from
  return nsl.where(elapsed:gt(0), elapsed, 0)
end

--- Elapsed (non-overlapped) time per GPU operation of trace, summed per
-- name: a table name, elapsed (ns), total (ns, the durations), instances.
function M.elapsed_by_name(trace)
  local ops = gpu_ops.table(trace, {columns = {"start", "stop"}, names = "demangled"})
  ops = ops:filter(~ops.start:isnull() & ~ops.stop:isnull()):sort("start", "stop", "name")
  local elapsed = M.elapsed_of(ops)
  local t = nsl.table{{"name", ops.name}, {"elapsed", elapsed}, {"dur", ops.stop - ops.start}}
  local g = t:group_by("name"):agg{"elapsed=sum(elapsed)", "total=sum(dur)", "instances=count"}
  return g
end

--- One input: {label, rows (table Model_Engine, Category, Instances, Name,
-- Elapsed Time (sec)), gpu_sec, total_sec, non_gpu_sec, warning}.
-- map: the engine/model map (nsl.classes, a vLLM map); idx: 0-based.
function M.input(trace, inp, map, idx)
  local g = M.elapsed_by_name(trace)
  local names = g.name:totable()
  local cat = {}
  for i, n in ipairs(names) do
    local c = nil
    for _, r in ipairs(map.rules) do
      if r.test(n) then c = r.class break end
    end
    cat[i] = c or false
  end
  local elapsed = g.elapsed:totable()
  local gpu_ns = 0
  for _, v in ipairs(elapsed) do gpu_ns = gpu_ns + v end
  local gpu_sec = round1(gpu_ns / 1e9)
  local total_sec, warning = inp.seconds, nil
  if total_sec == 0 then
    local d = 0
    for _, v in ipairs(trace.reports.duration:totable()) do d = math.max(d, v or 0) end
    total_sec = d / 1e9
  end
  total_sec = round1(total_sec)
  if total_sec < gpu_sec then
    warning = string.format("%s: elapsed %.2f s < GPU %.2f s: the elapsed time is taken as the GPU time",
                            inp.path, total_sec, gpu_sec)
    total_sec = gpu_sec
  end
  local file = inp.path:match("([^/]+)$"):gsub("%.nsys%-rep$", "")
  local label = string.format("%s_%s_%s_%d", inp.model, inp.engine, file, idx)
  local n = #names
  local lab, cats, inst, nm, sec = {}, {}, g.instances:totable(), {}, {}
  for i = 1, n do
    lab[i], nm[i], sec[i] = label, names[i], elapsed[i] / 1e9
    cats[i] = cat[i] or ""
  end
  lab[n + 1], cats[n + 1], inst[n + 1], nm[n + 1], sec[n + 1] = label, M.NON_GPU, 1, M.NON_GPU, total_sec - gpu_sec
  local cat_col = nsl.column(cats)
  cat_col = nsl.where(cat_col:eq(""), cat_col:gather(nsl.rep(-1, #cat_col)), cat_col)   -- no match: NULL
  return {label = label, gpu_sec = gpu_sec, total_sec = total_sec, non_gpu_sec = total_sec - gpu_sec, warning = warning,
          rows = nsl.table{{"Model_Engine", nsl.column(lab)}, {"Category", cat_col}, {"Instances", nsl.column(inst)},
                           {"Name", nsl.column(nm)}, {"Elapsed Time (sec)", nsl.column(sec)}}}
end

--- The pivot of gputrc2graph's HTML table: elapsed seconds per category
-- (rows, sorted) and input (columns), rounded to 0.01, and the row
-- total_elapsed_sec.  Returns {categories, labels, cells[c][l]}.
function M.pivot(results)
  local cats, seen, cells, labels = {}, {}, {}, {}
  for li, r in ipairs(results) do
    labels[li] = r.label
    local c, s = r.rows.Category:totable(), r.rows["Elapsed Time (sec)"]:totable()
    for i = 1, #c do
      local key = c[i]   -- names no regex matched have no category: not in the table (pandas drops them)
      if key then
        if not seen[key] then seen[key] = true; cats[#cats + 1] = key end
        cells[key] = cells[key] or {}
        cells[key][li] = (cells[key][li] or 0) + s[i]
      end
    end
  end
  table.sort(cats)
  return {categories = cats, labels = labels, cells = cells}
end

return M
