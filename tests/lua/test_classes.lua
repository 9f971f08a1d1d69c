-- The classes analysis and lua/nsl/classes.lua.  Oracles: the kernel maps'
-- own semantics evaluated by SQLite (the REGEXP operator of the sqlite3
-- program for vLLM-style maps, instr() on lower-cased names for GPU
-- Performance Analyzer maps) over the same rows, sums by SQL, and iteration
-- attribution by brute force in plain Lua on planted NVTX ranges.
local T = ...
local classes = require("nsl.classes")
local L = dofile(T.source_dir .. "/tests/lua/comm_testlib.lua")(T)

local nccl_file = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local h100_file = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")

-- A map file in the format of vLLM's gputrc2graph (engine -> model ->
-- ordered regex -> class), with rules of our own.
local VLLM_MAP = [[
{
  "vllm": {
    "llama": {
      "ncclDevKernel|cross_device_reduce": "nccl_and_custom_ar",
      "gemm|nvjet": "gemm",
      "flash|fmha": "attn",
      "_norm_|Norm": "norm",
      "reduce_kernel": "reduce",
      "CatArrayBatched|prepare_inputs": "prepare_next",
      "elementwise": "elementwise",
      "CUDA mem": "non-gpu-H_D_memops",
      ".*": "misc"
    },
    "ds": {
      "[Ee]lementwise_kernel<\\(int\\)\\d+": "ew_templated",
      "^void at::native::": "aten",
      ".*": "misc"
    }
  },
  "sglang": {
    "llama": {"gemm": "gemm", ".*": "misc"}
  }
}
]]

-- SQL CASE expressions equivalent to the maps above (the spec of each map
-- format, written out by hand), over columns kind and demangled.
local VLLM_LLAMA_SQL = [[CASE
  WHEN demangled REGEXP 'ncclDevKernel|cross_device_reduce' THEN 'nccl_and_custom_ar'
  WHEN demangled REGEXP 'gemm|nvjet' THEN 'gemm'
  WHEN demangled REGEXP 'flash|fmha' THEN 'attn'
  WHEN demangled REGEXP '_norm_|Norm' THEN 'norm'
  WHEN demangled REGEXP 'reduce_kernel' THEN 'reduce'
  WHEN demangled REGEXP 'CatArrayBatched|prepare_inputs' THEN 'prepare_next'
  WHEN demangled REGEXP 'elementwise' THEN 'elementwise'
  WHEN demangled REGEXP 'CUDA mem' THEN 'non-gpu-H_D_memops'
  ELSE 'misc' END]]
local VLLM_DS_SQL = [[CASE
  WHEN demangled REGEXP '[Ee]lementwise_kernel<\(int\)\d+' THEN 'ew_templated'
  WHEN demangled REGEXP '^void at::native::' THEN 'aten'
  WHEN kind = 'memory' THEN 'memory'
  WHEN instr(lower(demangled), 'nccl') > 0 THEN 'nccl'
  ELSE 'misc' END]]

-- A GPU Performance Analyzer config (its JSON layout, our own rules).
local GPA_CONFIG = [[
{
  "inputs": [
    {
      "format": "csv",
      "title": "test",
      "nsys_csv_file_path": {"kernel_sum": "k.csv", "nvtx_proj_trace": null, "mem_time_sum": null},
      "analysis_args": {"num_of_iters": 1, "num_of_gpus": 2, "nvtx_tag_of_iter": "step"}
    }
  ],
  "kernel_to_class_map": {
    "GEMM": "GEMM",
    "nvjet": "gemm",
    "flash_fwd": "fmha",
    "elementwise": "Fusion",
    "layer_norm": "norm"
  }
}
]]
local GPA_SQL = [[CASE
  WHEN kind = 'memory' THEN 'memory'
  WHEN instr(lower(demangled), 'nccl') > 0 THEN 'nccl'
  WHEN instr(lower(demangled), 'gemm') > 0 THEN 'gemm'
  WHEN instr(lower(demangled), 'nvjet') > 0 THEN 'gemm'
  WHEN instr(lower(demangled), 'flash_fwd') > 0 THEN 'fmha'
  WHEN instr(lower(demangled), 'elementwise') > 0 THEN 'fusion'
  WHEN instr(lower(demangled), 'layer_norm') > 0 THEN 'norm'
  ELSE 'others' END]]

local function write_tmp(name, text)
  local path = L.tmpdir() .. "/" .. name
  L.write(path, text)
  return path
end

-- Per-class count and total by SQL, classifying with case_sql.
local function sql_classes(path, case_sql)
  local want = {}
  for _, r in ipairs(T.sql(path, "SELECT " .. case_sql .. " AS class, count(*), sum(end - start) FROM (" ..
                                 L.ops_sql(path) .. ") GROUP BY 1")) do
    want[r[1]] = {n = tonumber(r[2]), total = tonumber(r[3])}
  end
  return want
end

-- Compares the classes table with the SQL classification; also the list of
-- names per class against SQL per-name sums.
local function check_against_sql(path, tables, case_sql, name_col)
  local want = sql_classes(path, case_sql)
  local seen, pct = 0, 0
  for _, r in ipairs(tables.classes) do
    local w = want[r.Class]
    if not w then error("class " .. r.Class .. " is not in the SQL classification") end
    T.eq(r.Instances, w.n, r.Class .. " instances")
    T.eq(r["Total Time (ns)"], w.total, r.Class .. " total")
    seen, pct = seen + 1, pct + r["Time (%)"]
  end
  local nwant = 0
  for _ in pairs(want) do nwant = nwant + 1 end
  T.eq(seen, nwant, "number of classes")
  T.near(pct, 100, 1e-9, "percentages add up")
  -- every name, its class and sums
  local per_name = {}
  for _, r in ipairs(T.sql(path, "SELECT " .. name_col .. ", " .. case_sql .. ", count(*), sum(end - start) FROM (" ..
                                 L.ops_sql(path) .. ") GROUP BY 1, 2")) do
    per_name[r[1]] = {class = r[2], n = tonumber(r[3]), total = tonumber(r[4])}
  end
  local rows = 0
  for _, r in ipairs(tables.class_kernels) do
    local w = assert(per_name[r.Name], "name " .. r.Name)
    T.eq(r.Class, w.class, "class of " .. r.Name)
    T.eq(r.Instances, w.n, "instances of " .. r.Name)
    T.eq(r["Total Time (ns)"], w.total, "total of " .. r.Name)
    rows = rows + 1
  end
  local nnames = 0
  for _ in pairs(per_name) do nnames = nnames + 1 end
  T.eq(rows, nnames, "one row per name")
end

return {
  {"built-in map: classes of the kernels in the real exports", function()
    local tables = L.run("classes", {nccl_file, h100_file})
    local class_of = {}
    for _, r in ipairs(tables.class_kernels) do class_of[r.Name] = r.Class end
    local expect = {
      flash_fwd_kernel = "attention", ["nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"] = "gemm",
      ncclDevKernel_SendRecv = "nccl", elementwise_kernel = "elementwise", vectorized_elementwise_kernel = "elementwise",
      vectorized_layer_norm_kernel = "normalization", reduce_kernel = "reduction",
      CatArrayBatchedCopy_vectorized = "memory", ["[CUDA memcpy Device-to-Device]"] = "memory",
      ["[CUDA memcpy Host-to-Device]"] = "memory", ["[CUDA memset]"] = "memory",
      ["sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"] = "gemm",
      softmax_warp_forward = "softmax", vectorized_gather_kernel = "memory",
    }
    for name, class in pairs(expect) do T.eq(class_of[name], class, name) end
    -- totals over both exports: SQL sums per short name, summed per class
    local want = {}
    for _, path in ipairs{nccl_file, h100_file} do
      for _, r in ipairs(T.sql(path, "SELECT name, count(*), sum(end - start) FROM (" .. L.ops_sql(path) .. ") GROUP BY 1")) do
        local c = assert(class_of[r[1]], r[1])
        want[c] = want[c] or {n = 0, total = 0}
        want[c].n, want[c].total = want[c].n + tonumber(r[2]), want[c].total + tonumber(r[3])
      end
    end
    for _, r in ipairs(tables.classes) do
      T.eq(r.Instances, want[r.Class].n, r.Class .. " instances")
      T.eq(r["Total Time (ns)"], want[r.Class].total, r.Class .. " total")
    end
  end},

  {"vLLM gputrc2graph map: ordered regexes on demangled names, memory operations included", function()
    local path = write_tmp("vllm_engine_model.json", VLLM_MAP)
    local tables = L.run("classes", {nccl_file}, {"map=" .. path, "model=vllm/llama"})
    check_against_sql(nccl_file, tables, VLLM_LLAMA_SQL, "demangled")
    -- the map's own NCCL rule wins over the automatic class
    local names = {}
    for _, r in ipairs(tables.class_kernels) do names[r.Class] = true end
    T.ok(names.nccl_and_custom_ar and not names.nccl, "NCCL kernels in the map's class")
    T.ok(names["non-gpu-H_D_memops"] and not names.memory, "memory operations in the map's class")
    L.cleanup()
  end},

  {"vLLM map without NCCL and memory rules: the catch-all leaves them to the automatic classes", function()
    local path = write_tmp("engine.json", VLLM_MAP)
    local tables = L.run("classes", {nccl_file}, {"map=" .. path, "model=ds"})
    check_against_sql(nccl_file, tables, VLLM_DS_SQL, "demangled")
    L.cleanup()
  end},

  {"GPU Performance Analyzer config: lower-cased substrings, nccl first, others", function()
    local path = write_tmp("config.json", GPA_CONFIG)
    local tables, out = L.run("classes", {nccl_file, h100_file}, {"map=" .. path})
    -- SQL per export, summed
    local want = {}
    for _, p in ipairs{nccl_file, h100_file} do
      for c, w in pairs(sql_classes(p, GPA_SQL)) do
        want[c] = want[c] or {n = 0, total = 0}
        want[c].n, want[c].total = want[c].n + w.n, want[c].total + w.total
      end
    end
    for _, r in ipairs(tables.classes) do
      T.eq(r.Instances, want[r.Class].n, r.Class .. " instances")
      T.eq(r["Total Time (ns)"], want[r.Class].total, r.Class .. " total")
    end
    T.eq(#out.findings, 0, "a conflict-free map gives no warning")
    L.cleanup()
  end},

  {"GPU Performance Analyzer map whose keys contain one another: a warning; 'other' is refused", function()
    local path = write_tmp("conflict.json", '{"kernel_to_class_map": {"gemm": "gemm", "sgemm": "single"}}')
    local _, out = L.run("classes", {h100_file}, {"map=" .. path})
    T.eq(#out.findings, 1, "one warning")
    T.ok(out.findings[1].message:find("'gemm' and 'sgemm' contain one another", 1, true), out.findings[1].message)
    local bad = write_tmp("other.json", '{"kernel_to_class_map": {"gemm": "Other"}}')
    local msg = L.run_fails("classes", {h100_file}, {"map=" .. bad})
    T.ok(msg:find("'other' is reserved", 1, true), msg)
    L.cleanup()
  end},

  {"per iteration: planted steps, attribution by brute force, SQL classes", function()
    local file = L.plant_steps(nccl_file, "train_step", 4)
    local path = write_tmp("m.json", VLLM_MAP)
    local tables = L.run("classes", {file}, {"map=" .. path, "model=vllm/llama", "iteration=train_step"})
    local class_of = {}
    for _, r in ipairs(T.sql(file, "SELECT DISTINCT demangled, " .. VLLM_LLAMA_SQL .. " FROM (" .. L.ops_sql(file) .. ")")) do
      class_of[r[1]] = r[2]
    end
    local ops = L.sql_ops(file)
    L.attribute(file, ops, "train_step")
    local cell, devs, slots, within = {}, {}, 0, {}
    for _, o in ipairs(ops) do
      if o.iter then
        local c = class_of[o.demangled]
        cell[o.iter] = cell[o.iter] or {}
        cell[o.iter][c] = (cell[o.iter][c] or 0) + (o.stop - o.start)
        devs[o.iter] = devs[o.iter] or {}
        if not devs[o.iter][o.device] then slots = slots + 1 end
        devs[o.iter][o.device] = devs[o.iter][o.device] or {lo = math.huge, hi = -math.huge}
        local d = devs[o.iter][o.device]
        d.lo, d.hi = math.min(d.lo, o.start), math.max(d.hi, o.stop)
        within[c] = within[c] or {t = 0, n = 0}
        within[c].t, within[c].n = within[c].t + (o.stop - o.start), within[c].n + 1
      end
    end
    local rows = tables.classes_by_iteration
    T.eq(#rows, 4, "four iterations")
    for _, r in ipairs(rows) do
      local nd, win = 0, 0
      for _, d in pairs(devs[r.Iteration]) do nd, win = nd + 1, win + (d.hi - d.lo) end
      T.eq(r.Devices, nd, "devices in iteration " .. r.Iteration)
      T.near(r["GPU Window (ns)"], win / nd, 1e-12, "window of iteration " .. r.Iteration)
      local total = 0
      for c, t in pairs(cell[r.Iteration]) do
        T.near(r[c .. " (ns)"], t / nd, 1e-12, c .. " in iteration " .. r.Iteration)
        total = total + t / nd
      end
      T.near(r["Total (ns)"], total, 1e-12, "total of iteration " .. r.Iteration)
    end
    for _, r in ipairs(tables.classes) do
      local w = within[r.Class] or {t = 0, n = 0}
      T.near(r["Per Iteration (ns)"], w.t / slots, 1e-12, r.Class .. " per iteration and device")
      T.near(r["Instances per Iteration"], w.n / slots, 1e-12, r.Class .. " instances per iteration and device")
    end
    L.cleanup()
  end},

  {"map files: formats and their errors", function()
    local dir = L.tmpdir()
    local function map_of(text, key)
      local p = dir .. "/x.json"
      L.write(p, text)
      return classes.load(p, key)
    end
    -- a bare map, one level, the older layer_anno nesting
    local m = assert(map_of('{"gemm": "g", ".*": "rest"}'))
    T.eq(m:classify("sgemm_kernel"), "g", "bare map")
    T.eq(m:classify("foo"), "rest", "bare map catch-all")
    T.eq(m:classify("ncclDevKernel_SendRecv"), "nccl", "catch-all leaves NCCL to its class")
    T.eq(m:classify("[CUDA memset]"), "memory", "catch-all leaves memory operations to their class")
    m = assert(map_of('{"llama": {"attn": "a"}}'))
    T.eq(m:classify("my_attn_kernel"), "a", "one level")
    T.eq(m:classify("other_kernel"), "other", "no rule matches")
    m = assert(map_of('{"vllm": {"llama": {"layer_anno": {"Stage": {".*": "layer"}, "Substage": {"gemm": "gemm"}}}}}'))
    T.eq(m:classify("xgemm"), "gemm", "layer_anno/Substage")
    -- order: the first matching rule wins
    m = assert(map_of('{"kernel": "first", "gemm_kernel": "second"}'))
    T.eq(m:classify("gemm_kernel"), "first", "first rule wins")
    -- errors
    local _, err = map_of(VLLM_MAP)
    T.ok(err:find("holds 3 maps (vllm/llama, vllm/ds, sglang/llama)", 1, true), err)
    _, err = map_of(VLLM_MAP, "llama")
    T.ok(err:find("more than one map 'llama'", 1, true), err)
    _, err = map_of(VLLM_MAP, "mixtral")
    T.ok(err:find("no map 'mixtral'", 1, true), err)
    _, err = map_of('{"a": "(?=x)"}')
    T.ok(err == nil, "a class name is not a pattern")
    _, err = map_of('{"(?=x)": "a"}')
    T.ok(err:find("lookahead", 1, true) and err:find("x.json", 1, true), err)
    _, err = map_of('{"a": 1}')
    T.ok(err:find("no kernel map found", 1, true), err)
    _, err = map_of('[1, 2]')
    T.ok(err:find("must be a JSON object", 1, true), err)
    _, err = map_of('{"a": "b",}')
    T.ok(err:find("not valid JSON: line 1, column 11", 1, true), err)
    _, err = map_of('{"kernel_to_class_map": {"a": 1}}')
    T.ok(err:find("kernel_to_class_map must map", 1, true), err)
    _, err = classes.load(dir .. "/missing.json")
    T.ok(err:find("cannot open", 1, true) and err:find("missing.json", 1, true), err)
    local msg = L.run_fails("classes", {nccl_file}, {"map=" .. dir .. "/missing.json"})
    T.ok(msg:find("missing.json", 1, true), msg)
    msg = L.run_fails("classes", {nccl_file}, {"names=mangled"})
    T.ok(msg:find("is not one of auto, demangled, short", 1, true), msg)
    L.cleanup()
  end},

  {"names: short or demangled, per report", function()
    local tables = L.run("classes", {nccl_file, h100_file}, {"names=demangled", "per_report=true"})
    local reports = {}
    for _, r in ipairs(tables.classes) do
      reports[r.report] = (reports[r.report] or 0) + r["Time (%)"]
    end
    T.near(reports[0], 100, 1e-9, "percentages within report 0")
    T.near(reports[1], 100, 1e-9, "percentages within report 1")
    local long = false
    for _, r in ipairs(tables.class_kernels) do
      if r.Name:find("^void at::native::") then long = true end
    end
    T.ok(long, "demangled names listed")
  end},
}
