-- lua/nsl/gpa.lua and lua/nsl/gputrc2graph.lua on hand-made rows whose
-- results are worked out by hand from the tools' definitions (GPU
-- Performance Analyzer: per-kernel floor of instances / (iterations x GPUs),
-- NCCL apart and named by the second "_"-part; gputrc2graph: elapsed =
-- the part of an operation after the latest end before it, in start order).
-- The real exports are checked against SQL in tests/e2e/test_inputs.sh.
local T = ...
local nsl = require("nsl")
local classes = require("nsl.classes")
local gpa = require("nsl.gpa")
local g2g = require("nsl.gputrc2graph")

local map = classes.from_rules({{"gemm", "gemm"}, {"Softmax", "softmax"}}, {kind = "substring"})

return {
  {"GPA: classes, per-iteration floors, NCCL, memory and the NVTX estimate", function()
    local rows = {
      kernels = {name = {"sm90_xmma_GEMM_bf16", "softmax_fwd", "ncclKernel_AllGather_RING_LL_Sum_int8_t",
                         "ncclDevKernel_ReduceScatter_Sum", "other_kernel", "gemv2T"},
                 total = {1000, 300, 800, 200, 50, 7}, count = {7, 5, 4, 3, 9, 1}},
      mems = {name = {"[CUDA memcpy Host-to-Device]"}, total = {40}, count = {6}},
      nvtx = {name = {"step", "step", "other", "step"}, dur = {600, 700, 5, 800}},
    }
    local r = gpa.analyze(rows, map, {num_of_iters = 2, num_of_gpus = 2, nvtx_tag_of_iter = "step"})
    T.eq(r.classes[1].name, "others", "others first")
    T.eq(r.classes[2].name, "gemm", "then the map's classes in order")
    T.eq(r.classes[3].name, "softmax", "class names lower-cased")
    local by = {}
    for _, e in ipairs(r.classes) do by[e.name] = e end
    T.eq(by.gemm.total, 1000, "gemm total (gemv2T has no 'gemm')")
    T.near(by.gemm.time_per_iter, 250, 1e-12, "1000 / (2 x 2)")
    T.eq(by.gemm.inst_per_iter, 1, "floor(7 / 4)")
    T.eq(by.others.total, 57, "other_kernel + gemv2T")
    T.eq(by.others.inst_per_iter, 2, "floor(9/4) + floor(1/4)")
    T.eq(r.total, 1357, "kernel total without NCCL")
    T.eq(r.nccl_total, 1000, "NCCL total")
    T.eq(r.nccl[1].name, "AllGather", "collective: the second _-part")
    T.eq(r.nccl[2].name, "ReduceScatter", "collective of a 2.19+ name")
    T.eq(r.nccl_inst_per_iter, 1, "floor(4/4) + floor(3/4)")
    T.eq(r.mem[1].inst_per_iter, 1, "floor(6/4)")
    T.eq(r.nvtx_count, 3, "ranges named by the tag")
    T.eq(r.nvtx_total, 2100, "their projected durations")
    T.near(r.estimate_per_range, 700 - 1357 / 4, 1e-9, "average range - kernel time per iteration")
    T.near(r.estimate_total, 2100 - 1357, 1e-9, "total range - kernel total")
    T.ok(r.warning and r.warning:find("3 NVTX ranges 'step', but num_of_iters is 2", 1, true), "count warning")
  end},

  {"gputrc2graph: non-overlapped time over all devices, in start order", function()
    -- three kernels and a memcpy: [0,10) A, [5,8) B (hidden), [6,20) A, [30,35) memcpy
    local ops = nsl.table{{"start", nsl.column{0, 5, 6, 30}}, {"stop", nsl.column{10, 8, 20, 35}},
                          {"name", nsl.column{"A", "B", "A", "[CUDA memcpy Host-to-Device]"}}}
    local before = ops.stop:cummax():shift(-1)
    T.eq(before[1], nil, "nothing before the first")
    T.eq(before[3], 10, "the latest end before the third")
    local e = g2g.elapsed_of(ops)
    T.eq(e:totable()[1], 10, "A: all of it")
    T.eq(e:totable()[2], 0, "B: inside A")
    T.eq(e:totable()[3], 10, "A again: after 10")
    T.eq(e:totable()[4], 5, "the memcpy")
    local list = g2g.parse_inputs("a.nsys-rep,vllm,llama,100 b.sqlite,sglang,ds,0")
    T.eq(#list, 2, "two inputs")
    T.eq(list[2].engine, "sglang", "engine")
    T.eq(list[2].seconds, 0, "seconds")
    local bad, msg = g2g.parse_inputs("a.nsys-rep,vllm,llama")
    T.eq(bad, nil, "three fields refused")
    T.ok(msg:find("FILE,ENGINE,MODEL,ELAPSED_NONPROFILED_SEC", 1, true), msg)
  end},
}
