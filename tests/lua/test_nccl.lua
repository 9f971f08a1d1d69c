-- lua/nsl/nccl.lua and the nccl analysis.  Oracles: NCCL's own kernel naming
-- (src/device/generate.py and the older releases' names, as listed below),
-- the NCCL kernels SQL finds in every shared export, and sums by SQL; a copy
-- of the NCCL export whose kernels are renamed by SQL to older and other
-- collectives' names tests the per-collective tables end to end.
local T = ...
local nccl = require("nsl.nccl")
local L = dofile(T.source_dir .. "/tests/lua/comm_testlib.lua")(T)

local nccl_file = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local h100_file = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")

-- name -> collective, algorithm, protocol, op, dtype, form
local NAMES = {
  {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "AllReduce", "RING", "LL", "Sum", "f32", "kernel"},
  {"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "AllGather", "RING", "LL", nil, nil, "kernel"},
  {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", "SendRecv", nil, nil, nil, nil, "dev"},
  {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllReduce", "RING", "LL", "Sum", "f32", "dev"},
  {"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", "AllReduce", "TREE", "LL", "Sum", "bf16", "dev"},
  {"ncclDevKernel_AllReduce_MinMax_u32_NVLS_SIMPLE", "AllReduce", "NVLS", "SIMPLE", "MinMax", "u32", "dev"},
  {"ncclDevKernel_AllReduce_Sum_f16_NVLS_TREE_SIMPLE", "AllReduce", "NVLS_TREE", "SIMPLE", "Sum", "f16", "dev"},
  {"ncclDevKernel_AllReduce_Sum_f32_COLLNET_DIRECT_SIMPLE", "AllReduce", "COLLNET_DIRECT", "SIMPLE", "Sum", "f32", "dev"},
  {"ncclDevKernel_ReduceScatter_PreMulSum_f8e4m3_PAT_SIMPLE", "ReduceScatter", "PAT", "SIMPLE", "PreMulSum", "f8e4m3", "dev"},
  {"ncclDevKernel_Reduce_Sum_u64_RING_LL", "Reduce", "RING", "LL", "Sum", "u64", "dev"},
  {"ncclDevKernel_AllGather_RING_LL", "AllGather", "RING", "LL", nil, nil, "dev"},
  {"ncclDevKernel_Broadcast_RING_LL", "Broadcast", "RING", "LL", nil, nil, "dev"},
  {"ncclDevKernel_Generic", "Generic", nil, nil, nil, nil, "dev"},
  {"ncclDevKernel_Generic_4", "Generic", nil, nil, nil, nil, "dev"},
  {"ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32", "AllReduce", "AGxLL_R", nil, "Sum", "f32", "symmetric"},
  {"ncclSymkDevKernel_ReduceScatter_RailA2A_LsaLD_avg_bf16", "ReduceScatter", "RailA2A_LsaLD", nil, "Avg", "bf16", "symmetric"},
  {"ncclSymkDevKernel_AllGather_LLMC_profile", "AllGather", "LLMC", nil, nil, nil, "symmetric"},
  {"ncclKernel_ReduceScatter_COLLNET_DIRECT_SIMPLE_Sum___nv_bfloat16(ncclDevComm *, unsigned long, ncclWork *)",
   "ReduceScatter", "COLLNET_DIRECT", "SIMPLE", "Sum", "bf16", "kernel"},
  {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm *, unsigned long, ncclWork *)", "SendRecv", "RING", "SIMPLE", nil, nil, "kernel"},
  {"void ncclKernel_AllReduce_TREE_LL128_Prod_double(ncclWorkElem)", "AllReduce", "TREE", "LL128", "Prod", "f64", "kernel"},
  {"ncclKernel_Broadcast_RING_LL_Sum_int8_t", "Broadcast", "RING", "LL", nil, nil, "kernel"},
  {"ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)", "AllReduce", "RING", "LL", "Sum", "f32", "legacy"},
  {"ncclAllReduceTreeLL128Kernel_sum_bf16", "AllReduce", "TREE", "LL128", "Sum", "bf16", "legacy"},
  {"ncclReduceScatterRingKernel_max_f16", "ReduceScatter", "RING", "SIMPLE", "Max", "f16", "legacy"},
  {"ncclBroadcastRingLLKernel_copy_i8", "Broadcast", "RING", "LL", nil, nil, "legacy"},
  {"ncclSendRecvKernel_copy_i8", "SendRecv", nil, nil, nil, nil, "legacy"},
  {"ncclDevKernel_AllToAll_RING_SIMPLE", "AllToAll", "RING", "SIMPLE", nil, nil, "dev"},
  {"ncclKernel_Send_RING_SIMPLE_Sum_int8_t", "Send", "RING", "SIMPLE", nil, nil, "kernel"},
  {"ncclKernel_Recv_RING_SIMPLE_Sum_int8_t", "Recv", "RING", "SIMPLE", nil, nil, "kernel"},
  {"my_nccl_helper_kernel", "Other", nil, nil, nil, nil, "other"},
}

-- A copy of the NCCL export whose NCCL kernels are renamed (shortName and
-- demangledName) by SQL: device 0 alternately to an older AllReduce and
-- AllGather, device 1 to a current ReduceScatter; one kernel keeps its name.
local function renamed_copy()
  local d = L.tmpdir()
  local dst = d .. "/renamed.sqlite"
  assert(os.execute("cp " .. T.shell_quote(nccl_file) .. " " .. T.shell_quote(dst)))
  T.sql_exec(dst, [[
    CREATE TEMP TABLE names (n INTEGER, short TEXT, demangled TEXT);
    INSERT INTO names VALUES
      (0, 'ncclKernel_AllReduce_RING_LL_Sum_float', 'ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)'),
      (1, 'ncclKernel_AllGather_RING_LL_Sum_int8_t', 'ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)'),
      (2, 'ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL', 'ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)');
    CREATE TEMP TABLE base AS SELECT max(id) AS b FROM StringIds;
    INSERT INTO StringIds (id, value) SELECT b + 1 + 2 * n, short FROM names, base;
    INSERT INTO StringIds (id, value) SELECT b + 2 + 2 * n, demangled FROM names, base;
    CREATE TEMP TABLE pick AS
      SELECT k.rowid AS r, CASE WHEN k.deviceId = 0 THEN k.rowid % 2 ELSE 2 END AS n
      FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
      WHERE s.value LIKE 'nccl%' AND k.rowid <> (SELECT max(k2.rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL k2
                                                JOIN StringIds s2 ON s2.id = k2.shortName WHERE s2.value LIKE 'nccl%');
    UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET
      shortName = (SELECT id FROM StringIds WHERE value = (SELECT short FROM names WHERE n = (SELECT n FROM pick WHERE r = CUPTI_ACTIVITY_KIND_KERNEL.rowid))),
      demangledName = (SELECT id FROM StringIds WHERE value = (SELECT demangled FROM names WHERE n = (SELECT n FROM pick WHERE r = CUPTI_ACTIVITY_KIND_KERNEL.rowid)))
      WHERE rowid IN (SELECT r FROM pick);]])
  return dst
end

local COLLECTIVE_SQL = [[CASE
  WHEN s.value LIKE 'ncclKernel_AllReduce%' THEN 'AllReduce'
  WHEN s.value LIKE 'ncclKernel_AllGather%' THEN 'AllGather'
  WHEN s.value LIKE 'ncclDevKernel_ReduceScatter%' THEN 'ReduceScatter'
  WHEN s.value LIKE 'ncclDevKernel_SendRecv%' THEN 'SendRecv' END]]

-- Sample standard deviation and median of a list of numbers.
local function stats(list)
  table.sort(list)
  local n, sum = #list, 0
  for _, v in ipairs(list) do sum = sum + v end
  local mean, ss = sum / n, 0
  for _, v in ipairs(list) do ss = ss + (v - mean) ^ 2 end
  local med = n % 2 == 1 and list[(n + 1) // 2] or (list[n // 2] + list[n // 2 + 1]) / 2
  return {n = n, sum = sum, mean = mean, std = n > 1 and math.sqrt(ss / (n - 1)) or 0, med = med,
          min = list[1], max = list[n]}
end

return {
  {"names of every NCCL release form", function()
    for _, c in ipairs(NAMES) do
      local r = assert(nccl.parse(c[1]), c[1])
      T.eq(r.collective, c[2], c[1] .. " collective")
      T.eq(r.algorithm, c[3], c[1] .. " algorithm")
      T.eq(r.protocol, c[4], c[1] .. " protocol")
      T.eq(r.op, c[5], c[1] .. " op")
      T.eq(r.dtype, c[6], c[1] .. " dtype")
      T.eq(r.form, c[7], c[1] .. " form")
    end
    T.eq(nccl.parse("elementwise_kernel"), nil, "not NCCL")
    T.eq(nccl.parse(nil), nil, "nil")
    T.ok(nccl.is_nccl("NCCLfoo") and not nccl.is_nccl("ncl"), "case-insensitive 'nccl'")
  end},

  {"every NCCL kernel name in the shared exports parses", function()
    local count = 0
    for _, path in ipairs(T.exports()) do
      if L.has_table(path, "CUPTI_ACTIVITY_KIND_KERNEL") then
        for _, r in ipairs(T.sql(path, [[SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
            JOIN StringIds s ON s.id IN (k.shortName, k.demangledName) WHERE lower(s.value) LIKE '%nccl%']])) do
          local p = nccl.parse(r[1])
          T.ok(p and p.collective == "SendRecv" and p.form == "dev", r[1])
          count = count + 1
        end
      end
    end
    T.eq(count, 2, "the short and the demangled name of ncclDevKernel_SendRecv")
  end},

  {"analysis on the NCCL export against SQL", function()
    local tables = L.run("nccl", {nccl_file})
    local durs = {}
    for _, r in ipairs(T.sql(nccl_file, [[SELECT k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE lower(s.value) LIKE '%nccl%']])) do
      durs[#durs + 1] = tonumber(r[1])
    end
    local st = stats(durs)
    local all = T.sql1(nccl_file, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    local c = tables.nccl_collectives
    T.eq(#c, 1, "one collective")
    T.eq(c[1].Collective, "SendRecv", "SendRecv")
    T.eq(c[1].Instances, st.n, "instances")
    T.eq(c[1]["Total Time (ns)"], st.sum, "total")
    T.near(c[1]["Avg (ns)"], st.mean, 1e-12, "mean")
    T.near(c[1]["Med (ns)"], st.med, 1e-12, "median")
    T.eq(c[1]["Min (ns)"], st.min, "min")
    T.eq(c[1]["Max (ns)"], st.max, "max")
    T.near(c[1]["StdDev (ns)"], st.std, 1e-9, "std")
    T.near(c[1]["NCCL Time (%)"], 100, 1e-12, "all NCCL time")
    T.near(c[1]["GPU Time (%)"], st.sum * 100 / all, 1e-12, "share of kernel time")
    -- per device and stream
    local dev = {}
    for _, r in ipairs(T.sql(nccl_file, [[SELECT k.deviceId, count(*), sum(k.end - k.start),
        sum(CASE WHEN lower(s.value) LIKE '%nccl%' THEN 1 ELSE 0 END),
        sum(CASE WHEN lower(s.value) LIKE '%nccl%' THEN k.end - k.start ELSE 0 END)
        FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName GROUP BY 1]])) do
      dev[tonumber(r[1])] = {n = tonumber(r[2]), t = tonumber(r[3]), nn = tonumber(r[4]), nt = tonumber(r[5])}
    end
    -- busy time by brute force: merge the sorted intervals
    local function busy(device)
      local list = T.sql(nccl_file, [[SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
        ON s.id = k.shortName WHERE lower(s.value) LIKE '%nccl%' AND k.deviceId = ]] .. device .. " ORDER BY 1")
      local total, cs, ce = 0, nil, nil
      for _, r in ipairs(list) do
        local s, e = tonumber(r[1]), tonumber(r[2])
        if ce and s <= ce then ce = math.max(ce, e)
        else
          if ce then total = total + (ce - cs) end
          cs, ce = s, e
        end
      end
      return total + (ce and ce - cs or 0)
    end
    T.eq(#tables.nccl_devices, 2, "two devices")
    for _, r in ipairs(tables.nccl_devices) do
      local w = dev[r.Device]
      T.eq(r.Kernels, w.n, "kernels on " .. r.Device)
      T.eq(r["Kernel Time (ns)"], w.t, "kernel time on " .. r.Device)
      T.eq(r["NCCL Kernels"], w.nn, "NCCL kernels on " .. r.Device)
      T.eq(r["NCCL Time (ns)"], w.nt, "NCCL time on " .. r.Device)
      T.near(r["GPU Time (%)"], w.nt * 100 / w.t, 1e-12, "share on " .. r.Device)
      T.eq(r["NCCL Busy (ns)"], busy(r.Device), "busy time on " .. r.Device)
    end
    local streams = T.sql(nccl_file, [[SELECT k.deviceId, k.streamId, count(*), sum(k.end - k.start)
      FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE lower(s.value) LIKE '%nccl%'
      GROUP BY 1, 2 ORDER BY 1, 2]])
    T.eq(#tables.nccl_streams, #streams, "stream rows")
    for i, r in ipairs(tables.nccl_streams) do
      T.eq(r.Device, tonumber(streams[i][1]), "device")
      T.eq(r.Stream, tonumber(streams[i][2]), "stream")
      T.eq(r.Instances, tonumber(streams[i][3]), "stream instances")
      T.eq(r["Total Time (ns)"], tonumber(streams[i][4]), "stream total")
      T.near(r["GPU Time (%)"], tonumber(streams[i][4]) * 100 / dev[r.Device].t, 1e-12, "stream share")
    end
    T.eq(#tables.nccl_kernels, 1, "one kernel name")
    T.eq(tables.nccl_kernels[1].Name, "ncclDevKernel_SendRecv", "its short name")
  end},

  {"renamed copy: several collectives and name forms, per report", function()
    local path = renamed_copy()
    local want = {}
    for _, r in ipairs(T.sql(path, "SELECT " .. COLLECTIVE_SQL .. [[, count(*), sum(k.end - k.start)
        FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
        WHERE lower(s.value) LIKE '%nccl%' GROUP BY 1]])) do
      want[r[1]] = {n = tonumber(r[2]), t = tonumber(r[3])}
    end
    T.ok(want.AllReduce and want.AllGather and want.ReduceScatter and want.SendRecv, "four collectives planted")
    local nccl_total, all = 0, T.sql1(path, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    for _, w in pairs(want) do nccl_total = nccl_total + w.t end
    local tables = L.run("nccl", {path})
    T.eq(#tables.nccl_collectives, 4, "four rows")
    local prev = math.huge
    for _, r in ipairs(tables.nccl_collectives) do
      local w = want[r.Collective]
      T.eq(r.Instances, w.n, r.Collective .. " instances")
      T.eq(r["Total Time (ns)"], w.t, r.Collective .. " total")
      T.near(r["NCCL Time (%)"], w.t * 100 / nccl_total, 1e-12, r.Collective .. " share of NCCL")
      T.near(r["GPU Time (%)"], w.t * 100 / all, 1e-12, r.Collective .. " share of GPU")
      T.ok(r["Total Time (ns)"] <= prev, "sorted by total")
      prev = r["Total Time (ns)"]
    end
    local kinds = {}
    for _, r in ipairs(tables.nccl_kernels) do kinds[r.Name] = r end
    local ar = kinds.ncclKernel_AllReduce_RING_LL_Sum_float
    T.ok(ar and ar.Algorithm == "RING" and ar.Protocol == "LL" and ar.Op == "Sum" and ar.Type == "f32", "old AllReduce")
    local rs = kinds.ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL
    T.ok(rs and rs.Op == "Sum" and rs.Type == "bf16", "current ReduceScatter")
    T.eq(kinds.ncclKernel_AllGather_RING_LL_Sum_int8_t.Op, nil, "AllGather has no reduction")
    -- per report: the renamed copy and the original side by side
    tables = L.run("nccl", {path, nccl_file}, {"per_report=true"})
    local per = {}
    for _, r in ipairs(tables.nccl_collectives) do
      per[r.Report] = (per[r.Report] or 0) + r["NCCL Time (%)"]
    end
    T.near(per.renamed, 100, 1e-9, "shares within the renamed report")
    T.near(per["pytorch_nccl_2gpu_2026.2"], 100, 1e-9, "shares within the original")
    T.eq(#tables.nccl_devices, 4, "two devices per report")
    L.cleanup()
  end},

  {"no NCCL kernels: a note and an info finding, no failure", function()
    local tables, out = L.run("nccl", {h100_file})
    T.eq(next(tables), nil, "no tables")
    T.eq(#out.findings, 1, "one finding")
    T.eq(out.findings[1].severity, "info", "info")
  end},
}
