-- nsl.compile -- time spent compiling and loading code, from NVTX ranges,
-- CUDA API calls and CUPTI overhead records.  Shared by the compile and
-- jax_compile analyses and by nsl.jax (one implementation of nsys-jax's
-- compile frame and its parallel-aware attribution, for nsys-jax archives and
-- plain nsys exports alike).
--
-- XLA.  XLA's ranges are push/pop ranges of NVTX domain "TSL", so their names
-- (nsl.nvtx.names: "domain:text") read "TSL:XlaCompile:#module=M,program_id=N#",
-- "TSL:XlaPass:#name=P,module=M,program_id=N#", "TSL:XlaAutotunerMeasurement:...".
--  * The range tree: in an nsys-jax archive, report_nvtx_pushpop_trace's
--    (ParentId, NumChild, DurChild, DurNonChild); in an export it is rebuilt as
--    that report builds it: a range's parent is the shortest push/pop range
--    enclosing it on its thread (nsl.nvtx_project), NumChild its children,
--    DurChild their summed durations, DurNonChild its duration minus those.
--  * The compile frame (nsys-jax's _splice_parallel_ranges,
--    _add_program_id_and_name, _drop_non_tsl; nsl.jax_compile_tree), per
--    process: every XlaCompile range, the ranges under it on its thread, and
--    the top-level ranges of other threads inside its window, grafted under the
--    deepest enclosing range of the compiling thread; each row takes the program
--    of the nearest XlaCompileBackend range; ranges outside the TSL domain are
--    folded into their parents.  In an export only the ranges inside an
--    XlaCompile window of their process take part (the others can never be in
--    a frame); a range whose parent lies outside every window keeps a parent
--    (a sentinel row no window holds), so it is not mistaken for a top-level one.
--  * The attribution (nsys-jax's generate_compilation_statistics after
--    remove_autotuning_detail; nsl.jax_compile_attribute), per compiling thread:
--    a range of the compiling thread whose children run on worker threads
--    spends its parallel region's wall time in proportion to the workers' own
--    (non-child) time; so a compilation's parts add up to its XlaCompile
--    range's duration.  Autotuner measurements lose their op names, and
--    autotuner measurement/compilation ranges their children.
--
-- Other compilers (M.framework_ranges): ranges whose name matches M.frameworks
-- (torch.compile's Dynamo/AOTAutograd/Inductor/Triton phases, nvFuser) are
-- compile roots; everything nested under a root on its thread is part of that
-- compilation, with its self time (duration minus its children's).
--
-- Loading (M.loading_calls, M.loading_overhead): CUDA API calls that load
-- modules and libraries, look functions up (under lazy loading the load
-- happens there), JIT-link or compile (NVRTC), build CUDA graphs; CUPTI's
-- overhead records of runtime-triggered module loading, lazy function loading
-- and the driver's PTX JIT compiler.
local nsl = require("nsl")
local nvtx = require("nsl.nvtx")
local jax = require("nsl.jax")
local kept = require("nsl.kept")

local M = {}

local MS = 1e-6   -- ns -> ms

M.XLA_COMPILE = "^TSL:XlaCompile:#module="
M.XLA_BACKEND = "^TSL:XlaCompileBackend:#module=.-,program_id=%d+#$"

--- NumChild (i32) and DurChild (sum of the children's durations) of every row
-- of a tree given by parent rows.
function M.child_stats(parent, dur)
  local g = nsl.table{{"row", parent}, {"dur", dur}}:group_by("row"):agg{"n=count", "d=sum(dur)"}
  local t = nsl.table{{"row", nsl.range(#parent)}}:join(g, {"row"}, {"n", "d"})
  return nsl.coalesce(t.n, 0):cast("i32"), nsl.coalesce(t.d, 0)
end

local function append(col, v)
  local kind = col:type()
  local one = nsl.rep(v, 1)
  if one:type() ~= kind then one = one:cast(kind) end
  return nsl.concat(col, one)
end

local SENTINEL_TIME = -(1 << 62)   -- before every window

-- The XLA ranges of one process of an export: push/pop ranges with a stop,
-- `names` their names.  See the header for the window rule and the sentinel.
local function export_part(sub, names)
  local parent = nvtx.parents(sub)
  local num_child, dur_child = M.child_stats(parent, sub.dur)
  local c = sub:filter(names:match(M.XLA_COMPILE))
  local windows = nsl.intervals(c.start, c.stop)
  local inside = windows:coverage(sub.start, sub.stop):eq(sub.dur)
  local s = nsl.table{{"report", sub.report}, {"pid", sub.pid}, {"tid", sub.tid}, {"start", sub.start},
                      {"stop", sub.stop}, {"text", names}, {"parent", parent}, {"num_child", num_child},
                      {"dur_child", dur_child}, {"dur_nonchild", sub.dur - dur_child},
                      {"orig", nsl.range(#sub)}}:filter(inside)
  local n = #s
  local _, local_parent = nsl.table{{"orig", s.parent}}:join(nsl.table{{"orig", s.orig}}, {"orig"})
  local outside = s.parent:ge(0) & local_parent:lt(0)
  local_parent = nsl.where(outside, n, local_parent)
  return nsl.table{
    {"report", append(s.report, s.report[1])}, {"pid", append(s.pid, s.pid[1])}, {"tid", append(s.tid, -1)},
    {"start", append(s.start, SENTINEL_TIME)}, {"stop", append(s.stop, SENTINEL_TIME)},
    {"text", append(s.text, "")}, {"parent", append(local_parent, -1)}, {"num_child", append(s.num_child, 0)},
    {"dur_child", append(s.dur_child, 0)}, {"dur_nonchild", append(s.dur_nonchild, 0)}}
end

-- The XLA ranges of one report of an nsys-jax archive, with its tree.
local function archive_part(sub, names)
  local _, parent = sub:join(nsl.table{{"parent_id", sub.range_id}}, {"parent_id"})
  return nsl.table{{"report", sub.report}, {"pid", sub.pid}, {"tid", sub.tid}, {"start", sub.start},
                   {"stop", sub.stop}, {"text", names}, {"parent", parent}, {"num_child", sub.num_child},
                   {"dur_child", sub.dur_child}, {"dur_nonchild", sub.dur_nonchild}}
end

-- What M.xla_ranges, M.framework_ranges and M.loading_calls found, per trace (weak keys): the ledger and
-- the compile analysis of one diagnose run read the same trace, whose rows never change, so each is made once.
local found = setmetatable({}, {__mode = "k"})
local function once(what, fn)
  return function(trace)
    local t = found[trace]
    if not t then t = {}; found[trace] = t end
    if not t[what] then t[what] = table.pack(fn(trace)) end
    return table.unpack(t[what], 1, t[what].n)
  end
end

--- Whether a distinct string of column col, less the matches of the patterns strip (nsl.nvtx.normalize),
-- contains one of the plain strings in needles; false for no column, true for one of other values (it
-- cannot say).  Each distinct string is tested once: a few thousand calls where the rows are millions.
local function holds_any(col, needles, strip)
  if not col or col:type() ~= "str" then return col ~= nil end
  return col:where(function(s)
    s = nvtx.normalize(s, strip)
    for _, n in ipairs(needles) do if s:find(n, 1, true) then return true end end
    return false
  end):count() > 0
end

-- The longest piece of s without ':'.  A range's name is "domain:text" (or its text), so a piece of a name
-- that holds no ':' lies whole in the domain or in the text: a name that matches a pattern holds the
-- pattern's longest such piece in one of them, which a test of the distinct domains and texts can see.
local function colon_free(s)
  local best = ""
  for piece in s:gmatch("[^:]+") do if #piece > #best then best = piece end end
  return best
end

-- (the tests of the distinct names, defined with the compilers' names below)
local xla_names, framework_names, names_kept

--- Whether the NVTX ranges of trace (it has some) may hold a compiler's names: test(nv) of their distinct
-- strings (which = "xla" or "framework"), kept in the column cache per report (nsl.kept): read back, the
-- ranges' text and domain are not loaded (two columns of 8.1 M rows at 1 GB).  Each report keeps its own
-- answer where the trace has one report, or where none may hold them (then none of its reports does).
local function names_test(trace, which, test)
  local name, nr = names_kept(which), trace:nreports()
  local flags = kept.per_report(trace, "nvtx", name, "bool")
  if flags then
    for _, f in ipairs(flags) do if f[1] then return true end end
    return false
  end
  local nv = trace.nvtx
  nv:load{"text", "domain"}
  local yes = test(nv)
  if (nr == 1 or not yes) and kept.keeps(trace) then
    for r = 0, nr - 1 do trace:keep_derived(r, "nvtx", name, kept.flag(yes)) end
  end
  return yes
end

--- The XLA ranges of every process (report, pid) that compiled: a list of
-- tables report, pid, tid, start, stop, text (the range name), parent (row in
-- the same table, -1 for none), num_child, dur_child, dur_nonchild (ns).
function M.xla_ranges(trace)
  local nv = trace.nvtx
  local archive = nv:coltype("num_child") ~= nil
  local cols = {"report", "pid", "tid", "start", "stop", "kind", "text", "domain"}
  if archive then
    for _, c in ipairs{"range_id", "parent_id", "num_child", "dur_child", "dur_nonchild"} do cols[#cols + 1] = c end
  end
  if #nv == 0 then return {} end
  -- no compile range without "XlaCompile" in a distinct text or domain: nothing is named row by row then
  if not names_test(trace, "xla", xla_names) then return {} end
  nv:load(cols)
  nv:load{"dur"}   -- made for every range at load: only once there are compile ranges to read it of
  local names = nvtx.names(nv)
  local is_compile = names:match(M.XLA_COMPILE)
  if is_compile:count() == 0 then return {} end
  nv = nv:with("name", names)
  -- each compiling process's ranges by one grouping (t:slices), not a filter of every range per process; the
  -- processes in order of their first compile range (group ids are in order of first appearance)
  local process = nv:group_by("report", "pid"):ids()
  local compiling = nsl.table{{"p", process}}:filter(is_compile):group_by("p"):keys().p
  local own = nv:columns()
  local of_process = nv:with("_process", process):slices("_process")
  local parts = {}
  for i = 1, #compiling do
    local sub = of_process(compiling[i]):select(own)
    if archive and sub.num_child:isnull():count() < #sub then
      parts[#parts + 1] = archive_part(sub, sub.name)
    else
      sub = sub:filter(sub.kind:eq("push_pop") & ~sub.stop:isnull() & sub.dur:ge(0))
      parts[#parts + 1] = export_part(sub, sub.name)
    end
  end
  return parts
end
M.xla_ranges = once("xla_ranges", M.xla_ranges)

local function plain_replace(s, what, with)
  if what == "" then return s end
  local out, i = {}, 1
  while true do
    local a, b = s:find(what, i, true)
    if not a then break end
    out[#out + 1] = s:sub(i, a - 1)
    out[#out + 1] = with
    i = b + 1
  end
  out[#out + 1] = s:sub(i)
  return table.concat(out)
end

--- The compile frame of one process (a table of M.xla_ranges): rows kept
-- by nsys-jax, worker threads grafted in, with parent (row in the part),
-- num_child, dur_child, dur_nonchild, row (its own row in the part),
-- ProgramId, ProgramName and Name (the range name without "TSL:", the
-- module and the program id, as nsys-jax shows it).  program_id(r, id,
-- name) -> ProgramId of program `id` named `name` in report r (default:
-- the id as a string).
function M.xla_frame(part, program_id)
  local text = part.text
  local out = nsl.jax_compile_tree{
    start = part.start, stop = part.stop, parent = part.parent, tid = part.tid, num_child = part.num_child,
    dur_child = part.dur_child, dur_nonchild = part.dur_nonchild,
    is_compile = text:match(M.XLA_COMPILE), is_backend = text:match(M.XLA_BACKEND), is_tsl = text:match("^TSL:"),
  }
  local t = part:with("parent", out.parent, "num_child", out.num_child, "dur_child", out.dur_child,
                      "dur_nonchild", out.dur_nonchild, "row", nsl.range(#part))
  -- program of every row: the backend range's text
  t = t:with("prog_text", text:gather(out.program_row))
  local r = part.report[1]
  local pid = jax.per_group(t, {"prog_text"}, function(k, i)
    local s = k.prog_text[i]
    if not s then return nil end
    local name, id = s:match("^TSL:XlaCompileBackend:#module=(.-),program_id=(%d+)#$")
    if program_id then return program_id(r, tonumber(id), name) end
    return id
  end, "str")
  local pname = jax.per_group(t, {"prog_text"}, function(k, i)
    local s = k.prog_text[i]
    return s and s:match("^TSL:XlaCompileBackend:#module=(.-),program_id=%d+#$")
  end, "str")
  t = t:with("ProgramId", pid, "ProgramName", pname):filter(out.keep)
  local name = jax.per_group(t, {"text", "ProgramName"}, function(k, i)
    local s, p = k.text[i], k.ProgramName[i] or ""
    if s:sub(1, 4) == "TSL:" then s = s:sub(5) end
    s = plain_replace(s, ",module=" .. p, "")
    s = plain_replace(s, ":#module=" .. p .. "#", "")
    return s
  end, "str")
  return t:with("Name", name)
end

--- The compile frames of every process that compiled (M.xla_ranges, then
-- M.xla_frame); program_id as for M.xla_frame.
function M.xla_frames(trace, program_id)
  local frames = {}
  for _, part in ipairs(M.xla_ranges(trace)) do
    local f = M.xla_frame(part, program_id)
    if #f > 0 then frames[#frames + 1] = f end
  end
  return frames
end

--- Row positions of the parents of t's rows (t keeps its part-local `row`
-- numbers and `parent` links in the same numbering): -1 for roots and for
-- parents not in t.
local function parent_positions(t)
  local _, p = t:join(nsl.table{{"parent", t.row}}, {"parent"})
  return p
end

--- Is a compile frame's Name (M.xla_frame) an XlaCompile range's?
function M.is_xla_compile(name) return name == "XlaCompile" or name:sub(1, 11) == "XlaCompile:" end
local is_xla_compile = M.is_xla_compile

--- The parallel-aware attribution of compile frames (M.xla_frames): one row
-- per frame row left after the autotuner's detail is removed, with report,
-- pid, tid, Name, ProgramId, ProgramName, non (non-child time, ns) and child
-- (ns).  Each compiling thread -- the thread of the frame's roots, its
-- XlaCompile ranges -- is attributed on its own.
function M.xla_attribution(frames)
  local pieces = {}
  for _, t in ipairs(frames) do
    -- the autotuner's detail: measurement ranges lose the op name, both kinds their children
    local nm = jax.per_group(t, {"Name"}, function(k, i)
      return k.Name[i]:sub(1, 23) == "XlaAutotunerMeasurement" and "XlaAutotunerMeasurement" or k.Name[i]
    end, "str")
    t = t:with("Name", nm, "collapsed", nsl.rep(0, #t):cast("i64"):gt(0))
    for _, which in ipairs{"XlaAutotunerMeasurement", "XlaAutotunerCompilation"} do
      local mask = t.Name:eq(which) & t.num_child:ne(0)
      local under = nsl.tree_under(parent_positions(t), mask)
      t = t:with("collapsed", t.collapsed | mask):filter(~under)
    end
    -- the compiling thread of every row: its root's
    local pp = parent_positions(t)
    local anc = nsl.tree_ancestor(pp, nsl.rep(1, #t):gt(0), pp:lt(0))
    local root = nsl.where(anc:ge(0), anc, nsl.range(#t))
    local main_tid = t.tid:gather(root)
    local threads = nsl.table{{"tid", main_tid}}:group_by("tid"):keys()
    if #t:filter(t.Name:where(is_xla_compile)) == 0 then nsl.fail("compile ranges: no XlaCompile range in a frame") end
    for k = 1, #threads do
      local tid = threads.tid[k]
      local sub = #threads == 1 and t or t:filter(main_tid:eq(tid))
      local non, ch = nsl.jax_compile_attribute{
        start = sub.start, stop = sub.stop, parent = parent_positions(sub), tid = sub.tid,
        dur_child = sub.dur_child, dur_nonchild = sub.dur_nonchild, main_tid = tid, collapsed = sub.collapsed,
      }
      pieces[#pieces + 1] = nsl.table{{"report", sub.report:cast("i64")}, {"pid", sub.pid:cast("i64")},
        {"tid", sub.tid:cast("i64")}, {"main_tid", nsl.rep(tid, #sub)}, {"Name", sub.Name},
        {"ProgramId", sub.ProgramId}, {"ProgramName", sub.ProgramName}, {"non", non}, {"child", ch}}
    end
  end
  return nsl.concat_tables(pieces)
end

--- Parallel-aware compile time per range name over compile frames, as
-- nsys-jax's generate_compilation_statistics: Name, DurNonChildMs,
-- DurChildMs, sorted by DurNonChildMs descending (nil without frames).
function M.xla_statistics(frames)
  local a = M.xla_attribution(frames)
  if not a then return nil end
  local s = a:group_by("Name"):agg{"DurNonChildMs=sum(non)", "DurChildMs=sum(child)"}
  s = s:with("DurNonChildMs", s.DurNonChildMs * MS, "DurChildMs", s.DurChildMs * MS)
  return s:sort("-DurNonChildMs")
end

-- ---------------------------------------------------------------- other compilers

local function set(list)
  local t = {}
  for _, v in ipairs(list) do t[v] = true end
  return t
end

--- The NVTX ranges of compilers other than XLA, by name (after PyTorch's
-- ", seq = N" / ", op_id = N" suffixes are removed).  phase "compile" ranges
-- are compile roots (their time is compile time); phase "run" ranges are
-- compiled code running (guards, compiled regions), shown apart.  Tried in
-- order: exact names, then prefixes, suffixes and plain substrings.
--  * torch.compile: every phase PyTorch times with dynamo_timed is a
--    record_function range "<phase> (dynamo_timed)" (PyTorch 2.0 and later;
--    NVTX ranges under autograd.profiler.emit_nvtx or nsys
--    --pytorch=autograd-nvtx): Dynamo's _compile.compile_inner,
--    OutputGraph.call_user_compiler, AOTAutograd's create_aot_dispatcher_function,
--    Inductor's compile_fx_inner, GraphLowering.run / compile_to_module,
--    Scheduler.__init__ / codegen, PyCodeCache.load_by_key_path,
--    async_compile.wait (Triton kernels compiled in worker processes),
--    CachingAutotuner.benchmark_all_configs (Triton autotuning),
--    cudagraphify (CUDA graph recording), ...; the same phase names without
--    the suffix count too.  At run time: "Torch-Compiled Region: F/G" (a
--    compiled frame running), "CompiledFunction" / "CompiledFunctionBackward"
--    (AOTAutograd's function), "## Call CompiledFxGraph <hash> ##" (Inductor's
--    wrapper), "TorchDynamo Cache Lookup" (guard evaluation).
--  * nvFuser: KernelExecutor::compileFusion / FusionExecutor::compileFusion /
--    FusionKernelRuntime::compileFusionParallel (lowering, code generation and
--    NVRTC below them), executor_utils::NVRTC and executor_utils::Nvrtc::*.
M.frameworks = {
  {framework = "torch.compile", phase = "compile", suffix = " (dynamo_timed)"},
  {framework = "torch.compile", phase = "compile", exact = set{
    "entire_frame_compile", "_compile.compile_inner", "compile_inner", "OutputGraph.call_user_compiler",
    "backend_compile", "create_aot_dispatcher_function", "compile_fx_inner", "compile_fx.<locals>.fw_compiler_base",
    "compile_fx.<locals>.bw_compiler", "GraphLowering.run", "GraphLowering.codegen", "GraphLowering.compile_to_module",
    "Scheduler.__init__", "Scheduler.codegen", "PyCodeCache.load_by_key_path", "async_compile.wait",
    "async_compile.precompile", "CachingAutotuner.benchmark_all_configs", "cudagraphify"}},
  {framework = "torch.compile", phase = "run", prefix = "Torch-Compiled Region"},
  {framework = "torch.compile", phase = "run", prefix = "## Call CompiledFxGraph"},
  {framework = "torch.compile", phase = "run",
   exact = set{"CompiledFunction", "CompiledFunctionBackward", "TorchDynamo Cache Lookup"}},
  {framework = "nvFuser", phase = "compile", contains = "::compileFusion"},
  {framework = "nvFuser", phase = "compile", prefix = "executor_utils::NVRTC"},
  {framework = "nvFuser", phase = "compile", prefix = "executor_utils::Nvrtc"},
}

-- Plain strings one of which every name M.classify_range knows holds (colon_free): one per name, prefix,
-- suffix and substring of M.frameworks.
local function framework_needles()
  local list = {}
  for _, f in ipairs(M.frameworks) do
    for name in pairs(f.exact or {}) do list[#list + 1] = colon_free(name) end
    for _, k in ipairs{"prefix", "suffix", "contains"} do
      if f[k] then list[#list + 1] = colon_free(f[k]) end
    end
  end
  table.sort(list)   -- (one order, whatever the table's)
  return list
end

-- The name names_test keeps its answer under: the needles the test looks for are part of it.
names_kept = function(which)
  if which == "xla" then return kept.name("xla_compile_names.1", M.XLA_COMPILE) end
  return kept.name("framework_names.1", framework_needles(), nvtx.pytorch_suffixes)
end

--- Whether NVTX ranges nv (text and domain loaded) may hold XLA's compile
-- ranges, and another compiler's: a test of their distinct strings (true
-- where a name could be one), which M.xla_ranges and M.framework_ranges
-- pass before they read any range.
xla_names = function(nv)
  local needle = {colon_free(M.XLA_COMPILE:gsub("^%^", ""))}
  return holds_any(nv.text, needle) or holds_any(nv.domain, needle)
end
framework_names = function(nv)
  local needles = framework_needles()
  return holds_any(nv.text, needles, nvtx.pytorch_suffixes) or holds_any(nv.domain, needles, nvtx.pytorch_suffixes)
end

--- Of a distributed run's view of some reports (nsl.distributed: every
-- process over its own): whether their NVTX ranges may hold XLA's compile
-- ranges, and another compiler's (the tests M.xla_ranges and
-- M.framework_ranges pass first).  A test over all reports is the "or" of
-- the tests over each process's.
function M.names_present(view)
  local nv = view.nvtx
  if #nv == 0 then return false, false end
  nv:load{"text", "domain"}
  return xla_names(nv), framework_names(nv)
end

--- On rank 0 of a distributed run: where no process found the names
-- M.names_present tests for, M.xla_ranges and M.framework_ranges of the
-- whole trace answer none at once (as they would after their own test),
-- without reading every report's ranges.
function M.names_absent(trace, xla, framework)
  local t = found[trace]
  if not t then t = {}; found[trace] = t end
  if not xla then t.xla_ranges = table.pack({}) end
  if not framework then t.framework_ranges = table.pack(nil) end
end

--- framework, phase of a range name (nil when it is no compiler's).
function M.classify_range(name)
  for _, f in ipairs(M.frameworks) do
    if (f.exact and f.exact[name])
      or (f.prefix and name:sub(1, #f.prefix) == f.prefix)
      or (f.suffix and #name >= #f.suffix and name:sub(-#f.suffix) == f.suffix)
      or (f.contains and name:find(f.contains, 1, true)) then
      return f.framework, f.phase
    end
  end
  return nil
end

local function is_phase(phase)
  return function(s)
    local _, p = M.classify_range(s)
    return p == phase
  end
end

--- The compilations of other compilers (M.frameworks) in the NVTX push/pop
-- ranges of trace.  Returns two tables (nil when there is none):
--  members: every range of a compilation -- a compile root (a "compile"
--    range not nested in another on its thread) and everything under it --
--    with report, pid, tid, start, stop, dur, self (dur minus its children's),
--    name (suffixes removed), framework (its root's), root (bool);
--  run: the "run" ranges outside compilations: report, pid, tid, start, stop,
--    dur, name, framework.
function M.framework_ranges(trace)
  local nv = trace.nvtx
  -- no compiler's range without one of their names' pieces in a distinct text or domain (suffixes removed
  -- as from the names): nothing is filtered or named row by row then
  if #nv == 0 or not names_test(trace, "framework", framework_names) then return nil end
  nv:load{"report", "pid", "tid", "start", "stop", "kind", "text", "domain"}
  nv:load{"dur"}   -- made for every range at load: only once a compiler's ranges may be there
  local ranges = nv:filter(nv.kind:eq("push_pop") & ~nv.stop:isnull() & nv.dur:ge(0))
  if #ranges == 0 then return nil end
  local _, label = nvtx.names(ranges, {strip = nvtx.pytorch_suffixes})
  local known = label:where(function(s) return M.classify_range(s) ~= nil end)
  if known:count() == 0 then return nil end
  local compile = label:where(is_phase("compile"))
  local parent = nvtx.parents(ranges)
  local under = nsl.tree_under(parent, compile)
  local root = compile & ~under
  local member = root | under
  local anc = nsl.tree_ancestor(parent, member, root)
  local root_row = nsl.where(root, nsl.range(#ranges), anc)
  local _, dur_child = M.child_stats(parent, ranges.dur)
  local t = nsl.table{{"report", ranges.report}, {"pid", ranges.pid}, {"tid", ranges.tid}, {"start", ranges.start},
                      {"stop", ranges.stop}, {"dur", ranges.dur}, {"self", ranges.dur - dur_child}, {"name", label},
                      {"root_row", root_row}, {"root", root}}
  local members = t:filter(member)
  members = members:with("framework", label:gather(members.root_row):map(function(s) return (M.classify_range(s)) end))
  local run = t:filter(known & ~compile & ~under)
  run = run:with("framework", run.name:map(function(s) return (M.classify_range(s)) end))
  local keep = {"report", "pid", "tid", "start", "stop", "dur", "self", "name", "framework", "root"}
  return members:select(keep), run:select{"report", "pid", "tid", "start", "stop", "dur", "name", "framework"}
end
M.framework_ranges = once("framework_ranges", M.framework_ranges)

-- ---------------------------------------------------------------- loading

--- CUDA API calls that load code, by class (first match of a Lua pattern on
-- the name, whose "_vNNNN" suffix nsl already cut): loading modules and
-- libraries; looking functions up (with CUDA_MODULE_LOADING=LAZY, the default
-- since CUDA 12.2, a function's code is loaded there or at its first
-- launch); JIT linking and compiling (cuLink*, nvJitLink*, nvrtc* when
-- traced); building CUDA graphs (capture, instantiation, upload).
M.api_classes = {
  {"module load", "^cuModuleLoad"}, {"library load", "^cuLibraryLoad"}, {"library load", "^cudaLibraryLoad"},
  {"function load", "^cuModuleGetFunction$"}, {"function load", "^cuLibraryGetKernel$"},
  {"function load", "^cuLibraryGetModule$"}, {"function load", "^cuKernelGetFunction$"},
  {"function load", "^cudaGetFuncBySymbol$"}, {"function load", "^cudaGetKernel$"},
  {"JIT link", "^cuLink"}, {"JIT link", "^nvJitLink"}, {"NVRTC", "^nvrtc"},
  {"graph build", "^cudaStreamBeginCapture"}, {"graph build", "^cuStreamBeginCapture"},
  {"graph build", "^cudaStreamEndCapture"}, {"graph build", "^cuStreamEndCapture"},
  {"graph build", "^cudaGraphInstantiate"}, {"graph build", "^cuGraphInstantiate"},
  {"graph build", "^cudaGraphUpload"}, {"graph build", "^cuGraphUpload"},
}

--- The class of an API call name (M.api_classes), or nil.  A version suffix
-- that nsys leaves on (it cuts "_vNNNN" only: "cudaGetFuncBySymbol_v11000")
-- does not count.
function M.api_class(name)
  name = name:gsub("_v%d+$", "")
  for _, c in ipairs(M.api_classes) do
    if name:find(c[2]) then return c[1] end
  end
  return nil
end

-- The API calls of api (a table or the trace's api table, with report,
-- pid, tid, start, stop, dur, name) that load or compile code, with class.
local function loading_calls_of(api)
  local t = api:select{"report", "pid", "tid", "start", "stop", "dur", "name"}
  t = t:filter(t.name:where(function(s) return M.api_class(s) ~= nil end))
  return t:with("class", t.name:map(M.api_class))
end

--- The API calls of trace that load or compile code: report, pid, tid, start,
-- stop, dur, name, class.
function M.loading_calls(trace)
  local api = trace.api
  api:load{"report", "pid", "tid", "start", "stop", "dur", "name"}
  return loading_calls_of(api)
end
M.loading_calls = once("loading_calls", M.loading_calls)

--- Makes M.loading_calls(trace) answer from calls, a table of some of the
-- trace's API calls (in its order) that holds every one that loads or
-- compiles code -- a distributed run's calls, reduced by their processes.
function M.loading_calls_from(trace, calls)
  local t = found[trace]
  if not t then t = {}; found[trace] = t end
  t.loading_calls = table.pack(loading_calls_of(calls))
end

--- CUPTI's overhead kinds that are code loading (nsl's `overhead` table).
M.overhead_kinds = {module_loading = "runtime-triggered module loading", lazy_loading = "lazy function loading",
                    driver_jit = "driver JIT compiler"}

--- The CUPTI overhead records of trace that load or JIT-compile code: report,
-- pid, tid, start, stop, dur, name, kind.
function M.loading_overhead(trace)
  local o = trace.overhead
  o:load{"report", "pid", "tid", "start", "stop", "dur", "name", "kind"}
  local t = o:select{"report", "pid", "tid", "start", "stop", "dur", "name", "kind"}
  local kinds = {}
  for k in pairs(M.overhead_kinds) do kinds[#kinds + 1] = k end
  table.sort(kinds)
  return t:filter(t.kind:isin(kinds))
end

-- ---- the compile analysis's tables ---------------------------------------------------

local is_xla_compile = M.is_xla_compile

-- An item table: what took time, as intervals of a process.
local function items(what, t)
  return nsl.table{{"report", t.report:cast("i64")}, {"pid", t.pid:cast("i64")}, {"what", nsl.rep(what, #t)},
                   {"start", t.start}, {"stop", t.stop}, {"dur", t.stop - t.start}}
end

-- 100 * t[col] / the sum of t[col] over the rows of the same group of
-- `by` (a list of key columns; empty: over all rows); `of`, when given, is a
-- table with those keys and a column `of_col` to divide by instead.
local function percent(t, col, by, of, of_col)
  if #by == 0 then
    local total = of and of[of_col]:sum() or t[col]:sum()
    return t[col] * (total > 0 and 100.0 / total or 0.0)
  end
  local denom
  if of then
    denom = t:join(of, by, {of_col}, "_of_")["_of_" .. of_col]
  else
    local g = t:group_by(table.unpack(by))
    denom = g:agg{"s=sum(" .. col .. ")"}.s:gather(g:ids())
  end
  return t[col] * 100.0 / denom
end

-- A result table: t's report (by name) and pid columns first when per
-- process, then cols.
local function result(pp, t, cols, rnames)
  local out = pp and {{"report", t.report:map(function(r) return rnames[r + 1] or tostring(r) end)},
                      {"pid", t.pid}} or {}
  for _, c in ipairs(cols) do out[#out + 1] = c end
  return nsl.table(out)
end

-- The groups the summary and the detail tables are keyed by.
local function keys(per_process, ...)
  local k = per_process and {"report", "pid"} or {}
  for _, v in ipairs{...} do k[#k + 1] = v end
  return k
end

--- The categories of the compile analysis's summary, in its order, and
-- the row of each process's union of them all.
M.categories = {
  "XLA compilation", "torch.compile", "nvFuser", "CUDA module/library loading (API)", "CUDA JIT (API)",
  "CUDA graph build (API)", "CUDA loading by the driver (CUPTI)", "CUDA driver JIT (CUPTI)",
}
local api_group = {["module load"] = M.categories[4], ["library load"] = M.categories[4],
                   ["function load"] = M.categories[4], ["JIT link"] = M.categories[5], NVRTC = M.categories[5],
                   ["graph build"] = M.categories[6]}
local overhead_group = {module_loading = M.categories[7], lazy_loading = M.categories[7],
                        driver_jit = M.categories[8]}
M.ALL = "all compiling and loading"
local ALL = M.ALL

-- The key of a process (report, pid; pid may be NULL).
local function pkey(r, p) return r .. ":" .. tostring(p) end

--- compile.report(trace, opts) -> the tables of the compile analysis, or
-- nil when the trace holds no compilation or code loading: {tables = a list
-- of {name, table, options of out:table} in the order they print, total_ms
-- (the wall time of all compiling and loading, summed over processes), rows
-- (per process and category, and a row per process of what = M.ALL: r
-- (0-based report), p (pid), what, n, total and wall ns), rnames and rdur
-- (per report, 1-based: name and duration ns)}.  opts.per_process: the
-- detail tables per process (report, pid); opts.limit: rows of each detail
-- table in text output (0: all).
function M.report(trace, opts)
  local limit = opts.limit > 0 and opts.limit or nil
  local pp = opts.per_process
  local list = {}
  local function keep(name, t, topts) list[#list + 1] = {name, t, topts} end
  local all_items = {}

  -- XLA: compile frames, parallel-aware attribution
  local store = jax.hlo_store(trace)
  local frames = M.xla_frames(trace, function(r, id, name)
    local fp = store.fingerprint(r, id, name)
    if fp == "unknown" and id then return tostring(id) end
    return fp
  end)
  local attr = M.xla_attribution(frames)
  local xla_total   -- per (report, pid): the parallel-aware sum
  if attr then
    local xc = {}
    for i, f in ipairs(frames) do xc[i] = f:filter(f.Name:where(is_xla_compile)) end
    local xcomp = nsl.concat_tables(xc)
    all_items[#all_items + 1] = items(M.categories[1], xcomp)
    xla_total = attr:group_by("report", "pid"):agg{"pa=sum(non)"}
  end

  -- other compilers
  local members, run = M.framework_ranges(trace)
  if members then
    local roots = members:filter(members.root)
    all_items[#all_items + 1] = items("", roots):with("what", roots.framework)
  end

  -- CUDA API and CUPTI overhead
  local calls = M.loading_calls(trace)
  if #calls > 0 then
    local t = items("", calls)
    all_items[#all_items + 1] = t:with("what", calls.class:map(api_group))
  end
  local oh = M.loading_overhead(trace)
  if #oh > 0 then
    local t = items("", oh)
    all_items[#all_items + 1] = t:with("what", oh.kind:map(overhead_group))
  end

  local it = nsl.concat_tables(all_items)
  if not it then return nil end

  -- summary: per process and category, then each process's union, then totals
  local rnames, rdur = trace.reports.name:totable(), trace.reports.duration:totable()
  local function result_table(t, cols) return result(pp, t, cols, rnames) end
  local pnames = {}
  local procs = trace.processes
  procs:load{"report", "pid", "name"}
  for i = 1, #procs do
    local r, p = procs.report[i], procs.pid[i]
    if r and p then pnames[pkey(r, p)] = procs.name[i] end
  end
  local g = it:group_by("report", "pid", "what")
  local s = g:agg{"n=count", "total=sum(dur)"}
  s = s:with("wall", nsl.busy_by_group(it.start, it.stop, g:ids(), #g))
  local ga = it:group_by("report", "pid")
  local sa = ga:agg{"n=count"}
  sa = sa:with("wall", nsl.busy_by_group(it.start, it.stop, ga:ids(), #ga))
  local pa = {}
  if xla_total then
    for i = 1, #xla_total do pa[pkey(xla_total.report[i], xla_total.pid[i])] = xla_total.pa[i] end
  end
  local rank = {}
  for i, w in ipairs(M.categories) do rank[w] = i end
  local rows = {}
  for i = 1, #s do
    local r, p, w = s.report[i], s.pid[i], s.what[i]
    local total = s.total[i]
    if w == M.categories[1] and pa[pkey(r, p)] then total = pa[pkey(r, p)] end
    rows[#rows + 1] = {r = r, p = p, what = w, rank = rank[w] or 99, n = s.n[i], total = total, wall = s.wall[i]}
  end
  for i = 1, #sa do
    rows[#rows + 1] = {r = sa.report[i], p = sa.pid[i], what = ALL, rank = 100, wall = sa.wall[i]}
  end
  table.sort(rows, function(a, b)
    if a.r ~= b.r then return a.r < b.r end
    if a.p ~= b.p then return (a.p or -1) < (b.p or -1) end
    return a.rank < b.rank
  end)
  -- totals over processes
  local tot, order = {}, {}
  local dur_sum, seen = 0, {}
  for _, row in ipairs(rows) do
    local t = tot[row.what]
    if not t then
      t = {r = -1, what = row.what, rank = row.rank, n = row.n and 0 or nil, total = row.total and 0 or nil,
           wall = 0, dur = 0}
      tot[row.what] = t
      order[#order + 1] = t
    end
    if t.n then t.n = t.n + (row.n or 0) end
    if t.total then t.total = t.total + (row.total or 0) end
    t.wall = t.wall + row.wall
    t.dur = t.dur + (rdur[row.r + 1] or 0)
    local key = pkey(row.r, row.p)
    if row.what == ALL and not seen[key] then
      seen[key] = true
      dur_sum = dur_sum + (rdur[row.r + 1] or 0)
    end
  end
  table.sort(order, function(a, b) return a.rank < b.rank end)
  local cols = {report = {}, pid = {}, process = {}, what = {}, n = {}, total = {}, wall = {}, pct = {}}
  local function add(i, rep, pid, pname, row, dur)
    cols.report[i], cols.pid[i], cols.process[i], cols.what[i] = rep, pid or false, pname or false, row.what
    cols.n[i] = row.n or false
    cols.total[i] = row.total and row.total * MS or false
    cols.wall[i] = row.wall * MS
    cols.pct[i] = (dur and dur > 0) and row.wall * 100.0 / dur or false
  end
  local k = 0
  for _, row in ipairs(rows) do
    k = k + 1
    add(k, rnames[row.r + 1] or tostring(row.r), row.p, pnames[pkey(row.r, row.p)], row, rdur[row.r + 1])
  end
  if #sa > 1 then
    for _, t in ipairs(order) do
      k = k + 1
      add(k, "all", nil, nil, t, t.what == ALL and dur_sum or t.dur)
    end
  end
  local function column(list, n, kind)
    local vals, code = {}, {}
    for i = 1, n do
      if list[i] == false or list[i] == nil then code[i] = -1
      else vals[#vals + 1] = list[i]; code[i] = #vals - 1 end
    end
    if #vals == 0 then vals[1] = (kind == "str" and "") or (kind == "num" and 0.0) or 0 end
    return nsl.column(vals):gather(nsl.column(code))
  end
  local summary = nsl.table{
    {"report", column(cols.report, k, "str")}, {"pid", column(cols.pid, k, "int")},
    {"process", column(cols.process, k, "str")}, {"What", column(cols.what, k, "str")},
    {"Instances", column(cols.n, k, "int")}, {"Time (ms)", column(cols.total, k, "num")},
    {"Wall (ms)", column(cols.wall, k, "num")}, {"Run (%)", column(cols.pct, k, "num")}}
  keep("summary", summary, {title = "Time spent compiling and loading code, per process" ..
    (#sa > 1 and " and over all" or "") .. " (Time: summed durations, XLA parallel-aware; Wall: their union; " ..
    "Run: Wall in % of the report's duration)", decimals = 3})
  local grand = 0
  for _, row in ipairs(rows) do if row.what == ALL then grand = grand + row.wall end end
  -- XLA detail
  if attr then
    local xla_ms = attr.non:sum() * MS
    local a = attr:with("one", nsl.rep(1, #attr))
    local per = pp and a:group_by("report", "pid"):agg{"xla=sum(non)"} or nil
    local r = a:group_by(table.unpack(keys(pp, "Name"))):agg{"n=sum(one)", "non=sum(non)", "child=sum(child)"}
    r = r:sort(table.unpack(keys(pp, "-non")))
    keep("xla_ranges", result_table(r, {
      {"Range", r.Name}, {"Instances", r.n}, {"Time (ms)", r.non * MS}, {"Child (ms)", r.child * MS},
      {"Compile (%)", percent(r, "non", keys(pp), per, "xla")}}),
      {title = string.format("XLA compile time per range, parallel-aware (%.1f ms in all)", xla_ms), limit = limit, decimals = 3})
    local passes = a:filter(a.Name:match("^XlaPass:#name="))
    if #passes > 0 then
      passes = passes:with("Pass", passes.Name:map(function(s) return s:match("^XlaPass:#name=([^,#]*)") end))
      local pass_ms = passes.non:sum() * MS
      local p = passes:group_by(table.unpack(keys(pp, "Pass"))):agg{"n=sum(one)", "non=sum(non)"}
      p = p:sort(table.unpack(keys(pp, "-non")))
      local of_xla = per or nsl.table{{"xla", nsl.column{xla_ms / MS}}}
      keep("xla_passes", result_table(p, {
        {"Pass", p.Pass}, {"Instances", p.n}, {"Time (ms)", p.non * MS}, {"Passes (%)", percent(p, "non", keys(pp))},
        {"Compile (%)", percent(p, "non", keys(pp), of_xla, "xla")}}),
        {title = string.format("XLA passes, parallel-aware (%.1f ms, %.1f%% of XLA compile time)", pass_ms,
                               pass_ms * 100 / xla_ms), limit = limit, decimals = 3})
    end
    local xc = {}
    for i, f in ipairs(frames) do
      local c = f:filter(f.Name:where(is_xla_compile))
      xc[i] = nsl.table{{"report", c.report:cast("i64")}, {"pid", c.pid:cast("i64")}, {"ProgramName", c.ProgramName},
                        {"ProgramId", c.ProgramId}, {"dur", c.stop - c.start}}
    end
    local progs = nsl.concat_tables(xc):group_by(table.unpack(keys(pp, "ProgramName", "ProgramId")))
      :agg{"n=count", "wall=sum(dur)", "max=max(dur)"}
    progs = progs:sort(table.unpack(keys(pp, "-wall")))
    keep("xla_programs", result_table(progs, {
      {"Program", progs.ProgramName}, {"ProgramId", progs.ProgramId}, {"Compilations", progs.n},
      {"Time (ms)", progs.wall * MS}, {"Max (ms)", progs.max * MS}}),
      {title = "XLA compilations per program (XlaCompile ranges)", limit = limit, decimals = 3})
  end

  -- other compilers' detail
  if members and #members > 0 then
    local m = members:with("one", nsl.rep(1, #members))
    local fw = m:filter(m.root):group_by(table.unpack(keys(pp, "framework"))):agg{"fw=sum(dur)"}
    local d = m:group_by(table.unpack(keys(pp, "framework", "name")))
      :agg{"n=sum(one)", "total=sum(dur)", "self=sum(self)"}
    d = d:join(fw, keys(pp, "framework"), {"fw"})
    d = d:sort(table.unpack(keys(pp, "framework", "-self")))
    keep("compiler_ranges", result_table(d, {
      {"Compiler", d.framework}, {"Range", d.name}, {"Instances", d.n}, {"Time (ms)", d.total * MS},
      {"Self (ms)", d.self * MS}, {"Self (%)", d.self * 100.0 / d.fw}}),
      {title = "Other compilers: every range of a compilation (Self: without its children; Self % of the " ..
               "compiler's compile time)", limit = limit, decimals = 3})
  end
  if run and #run > 0 then
    local r = run:with("one", nsl.rep(1, #run)):group_by(table.unpack(keys(pp, "framework", "name")))
      :agg{"n=sum(one)", "total=sum(dur)", "max=max(dur)"}
    r = r:sort(table.unpack(keys(pp, "-total")))
    keep("compiled_code", result_table(r, {
      {"Compiler", r.framework}, {"Range", r.name}, {"Instances", r.n}, {"Time (ms)", r.total * MS},
      {"Max (ms)", r.max * MS}}),
      {title = "Compiled code running (not compile time)", limit = limit, decimals = 3})
  end

  -- loading detail
  local function per_name(t, class_col, title, name)
    local a = t:with("one", nsl.rep(1, #t)):group_by(table.unpack(keys(pp, class_col, "name")))
      :agg{"n=sum(one)", "total=sum(dur)", "avg=mean(dur)", "max=max(dur)"}
    a = a:sort(table.unpack(keys(pp, "-total")))
    keep(name, result_table(a, {
      {"Class", a[class_col]}, {"Name", a.name}, {"Instances", a.n}, {"Time (ms)", a.total * MS},
      {"Avg (ms)", a.avg * MS}, {"Max (ms)", a.max * MS}}),
      {title = title, limit = limit, decimals = 3})
  end
  if #calls > 0 then
    per_name(calls, "class", "CUDA API calls that load, look up, JIT-compile code or build CUDA graphs",
             "cuda_loading")
  end
  if #oh > 0 then
    per_name(oh, "kind", "CUDA driver overhead: module loading, lazy function loading, JIT (CUPTI)",
             "cupti_loading")
  end  return {tables = list, total_ms = grand * MS, rows = rows, rnames = rnames, rdur = rdur}
end

return M
