-- straggler.  NCCL: copies of the real 2-GPU NCCL export, one GPU each
-- (tests/lua/straggler_rank.sh, also used by the benchmark and the sample),
-- with a straggler planted by SQL -- a rank whose host stops D after every
-- synchronising call (idle: the GPU waits for the launches), one that
-- computes D longer before every collective (compute), one whose
-- collectives run D longer (collective; in one export, where the clock is
-- shared) -- while the others wait for it, clock offsets of several ms and
-- per-rank jitter: the planted rank, cause and delay (within 5 %) are the
-- oracle, and the collectives it is late at are counted by SQL over the
-- source; unplanted copies name nobody; jitter alone gives a rotating
-- straggler whose last rank and skew equal the planted jitter; 2 to 64 ranks.
-- On the real 2-GPU export the verdict follows the documented rule applied
-- to the kernels' start times read by SQL, and the compute per step equals
-- a brute force over SQL rows.  nsys-jax: on the four real archives,
-- offsets, arrivals and compute per step equal the same definitions
-- computed in plain Lua from nsys-jax's own frames
-- (golden/combined4/*_frame_all.csv.gz), and the offsets agree with
-- nsys-jax's device clock corrections within a bound derived from the same
-- frames (all collectives kept: --arg warmup=0).
local T = ...

local D = 5000000          -- 5 ms more compute before each collective
local OFFSET = 30000000    -- 30 ms clock shift of the second rank
local SRC = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"

-- ---- helpers ----

local function range_of(list)
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(list) do lo, hi = math.min(lo, v), math.max(hi, v) end
  return hi - lo
end

--- Length of the union of intervals {{s, e}, ...}.
local function union_length(iv)
  table.sort(iv, function(a, b) return a[1] < b[1] end)
  local total, cs, ce = 0, nil, nil
  for _, x in ipairs(iv) do
    if not cs or x[1] > ce then
      if cs then total = total + (ce - cs) end
      cs, ce = x[1], x[2]
    elseif x[2] > ce then ce = x[2] end
  end
  if cs then total = total + (ce - cs) end
  return total
end

--- Brute force of the compute per step: arrivals (sorted or not) and compute
-- intervals of one rank -> {[step] = busy} for the whole steps 1 .. n-1 (a
-- piece of work belongs to the step of the number of arrivals before its start).
local function brute_steps(arrivals, work)
  table.sort(arrivals)
  local per = {}
  for _, w in ipairs(work) do
    local k = 0
    while k < #arrivals and arrivals[k + 1] < w[1] do k = k + 1 end
    if k >= 1 and k <= #arrivals - 1 then
      per[k] = per[k] or {}
      table.insert(per[k], w)
    end
  end
  local out = {}
  for k = 1, #arrivals - 1 do out[k] = union_length(per[k] or {}) end
  return out
end

--- Rows of step_compute for one rank label: {[step] = compute}.
local function steps_of(t, label)
  local out, n = {}, 0
  for i = 1, #t do
    if t.rank[i] == label then out[t.step[i]] = t["compute (ns)"][i]; n = n + 1 end
  end
  return out, n
end

local script = T.source_dir .. "/tests/lua/straggler_rank.sh"

--- One planted rank file: straggler_rank.sh SRC path dev delay role offset jitter seed.
local function plant(path, dev, delay, role, offset, jitter, seed)
  local cmd = string.format("%s %s %s %s %d %s %d %d %d", T.shell_quote(script), T.shell_quote(T.data(SRC)),
    T.shell_quote(path), tostring(dev), delay or 0, T.shell_quote(role or ""), offset or 0, jitter or 0, seed or 1)
  T.ok(os.execute(cmd), cmd)
  return path
end

local function rank_files(delay, slow_dev, offset)
  local files = {}
  for _, dev in ipairs{0, 1} do
    local role = delay and (dev == slow_dev and "slow" or "wait") or nil
    files[#files + 1] = plant(os.tmpname(), dev, delay, role, dev == 1 and offset or 0)
  end
  return files
end

--- n rank files, every one a copy of GPU 0 of the export (so only what is
-- planted tells them apart): roles[r] (0-based rank; default `others`),
-- clock offsets of several ms (a different one per rank), jitter J ns with
-- seed r + 1.  Files are named r<k>.sqlite in a temporary folder.
local function copies(n, delay, roles, others, jitter)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
  local files = {}
  for r = 0, n - 1 do
    local role = roles[r] or others
    local offset = ((r * 37) % 23 - 11) * 1000000      -- -11 .. +11 ms
    files[r + 1] = plant(string.format("%s/r%d.sqlite", dir, r), 0, role and delay or 0, role, offset, jitter, r + 1)
  end
  return files, dir
end

local function cleanup(dir) os.execute("rm -rf " .. T.shell_quote(dir)) end

local function finding(out, id)
  local list = {}
  for _, f in ipairs(out.findings) do if f.id == id then list[#list + 1] = f end end
  return list
end

--- Asserts that the findings are exactly one of id per rank label in
-- `labels` (in any order); returns them in the order of labels.
local function named(out, id, labels)
  T.eq(#out.findings, #labels, "one finding per planted rank")
  local by = {}
  for _, f in ipairs(finding(out, id)) do by[f.where.rank] = f end
  local list = {}
  for i, label in ipairs(labels) do
    list[i] = by[label]
    T.ok(list[i], string.format("a %s finding for %s", id, label))
  end
  return list
end

--- Plants n copies with one straggler (copies, 10 µs of jitter), runs
-- straggler on them and asserts one finding, id, naming label: returns the
-- finding, the tables, out, the files and their folder.
local function planted(n, d, roles, others, id, label)
  local files, dir = copies(n, d, roles, others, 10000)
  local tables, out = T.run_analysis("straggler", files)
  return named(out, id, {label})[1], tables, out, files, dir
end

--- Row of the causes table for rank label `label`.
local function cause_row(tables, label)
  local c = tables.causes
  for i = 1, #c do if c.rank[i] == label then return i end end
  error("no rank " .. label)
end

--- The collectives (k, 1-based, in start order) of GPU 0 of the source that
-- follow a host synchronisation: a synchronising call of its process ended
-- at or before the call launching collective k, and after the one launching
-- collective k - 1 (SQL over the source: the oracle of where an idle rank,
-- whose host stops after every such call, is late).
local function after_sync()
  local rows = T.sql(T.data(SRC), [[
    WITH c AS (SELECT k.start AS s, coalesce(rt.start, k.start) AS l, (k.globalPid >> 24) & 16777215 AS pid,
                      row_number() OVER (ORDER BY k.start) AS k
               FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n ON n.id = k.shortName
               LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = k.correlationId
                 AND ((rt.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)
               WHERE n.value LIKE 'nccl%' AND k.deviceId = 0),
         y AS (SELECT rt.end AS y, (rt.globalTid >> 24) & 16777215 AS pid, rt.globalTid & 16777215 AS tid
               FROM CUPTI_ACTIVITY_KIND_RUNTIME rt JOIN StringIds n ON n.id = rt.nameId
               WHERE n.value LIKE '%Synchronize%')
    SELECT cur.k, (SELECT max(tid) FROM y WHERE y.pid = cur.pid) FROM c cur JOIN c prev ON prev.k = cur.k - 1
    WHERE EXISTS (SELECT 1 FROM y WHERE y.pid = cur.pid AND y.y > prev.l AND y.y <= cur.l)]])
  local ks = {}
  for _, r in ipairs(rows) do ks[tonumber(r[1])] = tonumber(r[2]) end
  return ks
end

local function row_of(t, label_pattern)
  for i = 1, #t do if t.rank[i]:find(label_pattern) then return i end end
  error("no rank matching " .. label_pattern)
end

local function within(got, want, share, what)
  T.ok(math.abs(got - want) <= share * math.abs(want),
    string.format("%s: %s not within %.0f%% of %s", what, tostring(got), share * 100, tostring(want)))
end

-- ---- nsys-jax: golden frames ----

local J = T.data("nsys-jax")
local procs = {}
for p = 0, 3 do procs[p + 1] = J .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
local G4 = J .. "/golden/combined4/"

--- Records of a gzip'd CSV without quoted fields (nsys-jax's frames).
local function gz_records(path)
  local p = assert(io.popen("zcat " .. T.shell_quote(path)))
  local head, out = nil, {}
  for line in p:lines() do
    assert(not line:find('"', 1, true), "quoted field in " .. path)
    local f = {}
    for v in (line .. ","):gmatch("([^,]*),") do f[#f + 1] = v end
    if not head then head = f
    else
      local r = {}
      for k, name in ipairs(head) do r[name] = f[k] end
      out[#out + 1] = r
    end
  end
  p:close()
  return out
end

local function ns(ms) return math.floor(ms * 1e6 + 0.5) end

local golden = {}
--- nsys-jax's communication frame as collectives: {key, device, start, stop}
-- (ns); by_name maps a ProgramId to the program of the same name (structure
-- matching; sound here because no device runs two ProgramIds of one name that
-- communicate, checked below).
local function golden_collectives(by_name)
  if not golden.comm then
    golden.comm = gz_records(G4 .. "communication_frame_all.csv.gz")
    local has_comm = {}
    for _, c in ipairs(golden.comm) do has_comm[c.ProgramId] = true end
    golden.names = {}
    local per_dev = {}
    for _, m in ipairs(gz_records(G4 .. "module_frame_all.csv.gz")) do
      if has_comm[m.ProgramId] then
        golden.names[m.ProgramId] = m.Name
        local k = m.Device .. "|" .. m.Name
        per_dev[k] = per_dev[k] or {}
        per_dev[k][m.ProgramId] = true
      end
    end
    for k, ids in pairs(per_dev) do T.eq(next(ids, (next(ids))), nil, "one ProgramId per name on " .. k) end
  end
  local out = {}
  for _, c in ipairs(golden.comm) do
    local prog = by_name and golden.names[c.ProgramId] or c.ProgramId
    local start = tonumber(c.ProjStartMs)
    local stop_ms = start + tonumber(c.ProjDurMs) + tonumber(c.ProjDurHiddenMs)
    out[#out + 1] = {key = table.concat({prog, c.ProgramExecution, c.Name, c.ThunkExecution}, "|"),
                     device = tonumber(c.Device), start = ns(start), stop = ns(stop_ms), stop_ms = stop_ms}
  end
  return out
end

--- Straggler's offsets by definition, from collectives: per device, the
-- median over the instances it shares with `ref` of (its stop - ref's stop).
local function oracle_offsets(colls, devices, ref)
  local ref_stop = {}
  for _, c in ipairs(colls) do if c.device == ref then ref_stop[c.key] = c.stop end end
  local diffs = {}
  for _, d in ipairs(devices) do diffs[d] = {} end
  for _, c in ipairs(colls) do
    if diffs[c.device] and ref_stop[c.key] then table.insert(diffs[c.device], c.stop - ref_stop[c.key]) end
  end
  local off, n = {}, {}
  for _, d in ipairs(devices) do off[d], n[d] = math.floor(T.median(diffs[d]) + 0.5), #diffs[d] end
  return off, n
end

--- nsys-jax's alignment by its definition (ms): skew of every collective's end
-- from the mean end of its instance, median per device.
local function oracle_nsys_jax(colls)
  local sum, cnt = {}, {}
  for _, c in ipairs(colls) do
    sum[c.key] = (sum[c.key] or 0) + c.stop_ms
    cnt[c.key] = (cnt[c.key] or 0) + 1
  end
  local skews = {}
  for _, c in ipairs(colls) do
    skews[c.device] = skews[c.device] or {}
    table.insert(skews[c.device], c.stop_ms - sum[c.key] / cnt[c.key])
  end
  local corr = {}
  for d, l in pairs(skews) do corr[d] = T.median(l) end
  return corr
end

local function offset_of(r, device)
  return r["clock offset (ns)"][row_of(r, ":gpu" .. device .. "$")]
end

local function golden_corrections()
  local p = assert(io.popen("cat " .. T.shell_quote(G4 .. "alignment_device_corrections_ms.csv")))
  local corr = {}
  for line in p:lines() do
    local d, v = line:match("^(%d+),([-%d.e]+)$")
    if d then corr[tonumber(d)] = tonumber(v) end
  end
  p:close()
  return corr
end

return {
  {"clock offsets: the median over the instances shared with the reference alone; a clock sharing none keeps 0", function()
    -- ref (rank 0) ran instances 1-3; rank 1 all four, 100 ns after it; rank 2 instances 1, 2 and 4, 300 and 200
    -- ns after it; rank 3 instance 4 alone, which ref did not run
    local nsl, core = require("nsl"), require("nsl.straggler")
    local rows = {{0, 1, 1000}, {0, 2, 2000}, {0, 3, 3000}, {1, 1, 1100}, {1, 2, 2100}, {1, 3, 3100}, {1, 4, 4100},
                  {2, 1, 1300}, {2, 2, 2200}, {2, 4, 4000}, {3, 4, 4050}}
    local rank, inst, stop = {}, {}, {}
    for i, r in ipairs(rows) do rank[i], inst[i], stop[i] = r[1], r[2], r[3] end
    local coll = nsl.table{{"rank", nsl.column(rank)}, {"instance", nsl.column(inst)}, {"stop", nsl.column(stop)}}
    local off, shared = core.offsets(coll, 4, 0)
    T.eq(table.concat(off, ","), "0,100,250,0", "offsets: ref 0, the medians 100 and (300 + 200) / 2, none shared 0")
    T.eq(table.concat(shared, ","), "3,3,2,0", "instances shared with ref")
    -- ranks 1 and 2 on one clock (one export): one offset, the median over both ranks' shared instances
    off, shared = core.offsets(coll, 4, 0, {0, 1, 1, 3})
    T.eq(table.concat(off, ","), "0,100,100,0", "offsets of a shared clock: median of 100, 100, 100, 300, 200")
    T.eq(table.concat(shared, ","), "3,5,5,0", "instances the shared clock shares with ref")
  end},

  {"planted compute straggler on rank 1 is named, cause compute; delay and clock offset recovered within 5%", function()
    local files = rank_files(D, 1, OFFSET)
    local tables, out = T.run_analysis("straggler", files)
    local r = tables.ranks
    T.eq(#r, 2, "two ranks")
    local slow = row_of(r, ":gpu1$")
    local fast = row_of(r, ":gpu0$")
    T.eq(r.verdict[slow], "STRAGGLER (compute)", "planted rank and cause named")
    T.eq(r.verdict[fast], "", "other rank not named")
    within(r["delay (ns)"][slow], D, 0.05, "recovered delay")
    within(r["clock offset (ns)"][slow] - r["clock offset (ns)"][fast], OFFSET, 0.05, "recovered clock offset")
    T.ok(r["last (%)"][slow] > 90, "the straggler arrives last nearly always")
    local f = named(out, "straggler.compute", {r.rank[slow]})[1]
    T.ok(f.where.rank:find(":gpu1$"), "finding names gpu1")
    T.eq(f.where.device, 1, "finding names its device")
    -- per collective: the skew is the latest arrival after the first, and the last rank is the one arriving then
    local c, a = tables.collectives, tables.arrivals
    local after = {}
    for i = 1, #a do
      after[a.collective[i]] = after[a.collective[i]] or {}
      after[a.collective[i]][a.rank[i]] = a["after first (ns)"][i]
    end
    for i = 1, #c do
      local m = 0
      for _, v in pairs(after[c.collective[i]]) do m = math.max(m, v) end
      T.eq(c["skew (ns)"][i], m, "skew of collective " .. i)
      T.eq(after[c.collective[i]][c["last rank"][i]], m, "last rank of collective " .. i)
    end
    for _, f in ipairs(files) do os.remove(f) end
  end},

  {"planted compute straggler on rank 0 (no clock shift) is named too", function()
    local files = rank_files(D, 0, nil)
    local tables = T.run_analysis("straggler", files)
    local r = tables.ranks
    T.eq(r.verdict[row_of(r, ":gpu0$")], "STRAGGLER (compute)", "planted rank named")
    within(r["delay (ns)"][row_of(r, ":gpu0$")], D, 0.05, "recovered delay")
    T.ok(math.abs(r["clock offset (ns)"][row_of(r, ":gpu1$")]) < 0.05 * OFFSET, "no clock offset planted")
    for _, f in ipairs(files) do os.remove(f) end
  end},

  {"8 ranks, rank 5's host stops 500 µs after every synchronisation: named, host idle, late where SQL says, 500 µs", function()
    local d = 500000
    local f, tables, out, files, dir = planted(8, d, {[5] = "idle"}, "idlewait", "straggler.host_idle", "r5:gpu0")
    T.eq(f.where.report, 5, "its report")
    T.eq(f.where.device, 0, "its device")
    local c = tables.causes
    local i = cause_row(tables, "r5:gpu0")
    within(c["late by med (ns)"][i], d, 0.05, "recovered delay")
    T.eq(c.verdict[i], "STRAGGLER (idle)", "verdict column")
    -- late exactly at the steady collectives that follow a host synchronisation (SQL over the source)
    local ks, nw = after_sync(), out.values.warmup_collectives
    local want, tid = 0, nil
    for k, t in pairs(ks) do if k > nw then want = want + 1; tid = t end end
    T.ok(want >= 10, "enough planted delays to mean something: " .. want)
    T.eq(c["late at"][i], want, "collectives it is late at")
    T.eq(f.where.tid, tid, "the launching thread: the one that synchronised")
    for r = 0, 7 do
      if r ~= 5 then T.eq(c["late at"][cause_row(tables, "r" .. r .. ":gpu0")], 0, "rank " .. r .. " never late") end
    end
    -- the record: integers, a share of the step, the window and the command that shows it
    T.eq(math.type(f.cost_ns), "integer", "cost_ns")
    T.eq(math.type(f.step_ns), "integer", "step_ns")
    T.ok(f.share > 0 and f.share <= 1, "share " .. f.share)
    T.near(f.share, f.cost_ns / f.step_ns, 1e-6, "share = cost / step")
    T.ok(f.where.from < f.where.to, "a window")
    T.eq(f.next, string.format("nsl run gaps %s --arg min=%dus --arg scope=device", files[6],
         math.floor(c["late by med (ns)"][i] / 2000 + 0.5)), "next: its gaps longer than half its delay")
    T.eq(f.evidence, "causes", "evidence")
    -- --arg warmup=0 keeps every collective
    local _, out0 = T.run_analysis("straggler", files, {"warmup=0"})
    T.eq(out0.values.warmup_collectives, 0, "warmup=0 keeps all")
    cleanup(dir)
  end},

  {"the same without CUDA API calls (table dropped): still named, idle, and it says the host is unknown", function()
    local d = 500000
    local files, dir = copies(4, d, {[2] = "idle"}, "idlewait", 10000)
    for _, f in ipairs(files) do T.sql_exec(f, "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME") end
    local tables, out = T.run_analysis("straggler", files)
    local f = named(out, "straggler.host_idle", {"r2:gpu0"})[1]
    T.ok(f.message:find("no CUDA API calls to say what the host was doing", 1, true), f.message)
    within(tables.causes["late by med (ns)"][cause_row(tables, "r2:gpu0")], d, 0.05, "its delay")
    cleanup(dir)
  end},

  {"4 ranks, rank 1 computes 300 µs longer before every collective: named, compute, late at every collective", function()
    local d = 300000
    local f, tables, _, files, dir = planted(4, d, {[1] = "slow"}, "wait", "straggler.compute", "r1:gpu0")
    T.ok(f.next:find("^nsl run diff [^ ]+/r[023]%.sqlite " .. files[2]:gsub("%p", "%%%0") .. "$"),
         "next: diff against a typical rank: " .. f.next)
    local i = cause_row(tables, "r1:gpu0")
    within(tables.causes["late by med (ns)"][i], d, 0.05, "recovered delay")
    within(tables.causes["compute excess (ns)"][i], d, 0.05, "the excess is compute")
    T.eq(tables.causes["late at"][i], #tables.collectives, "late at every steady collective")
    cleanup(dir)
  end},

  {"the step: without training steps, the interval between collectives (said); with planted step ranges, the training step (SQL)", function()
    local d = 300000
    local files, dir = copies(4, d, {[2] = "slow"}, "wait", 10000)
    -- no NVTX range repeats as a step in the copies: the fallback, said
    T.eq(require("nsl.iterations").steps(assert(require("nsl").open(files))), nil, "no training steps")
    local tables, out = T.run_analysis("straggler", files)
    local f = named(out, "straggler.compute", {"r2:gpu0"})[1]
    T.eq(out.values.step_source, "collectives", "the fallback step")
    T.eq(out.values.step_ns, out.values.collective_interval_ns, "the step is the interval between collectives")
    local said = false
    for _, it in ipairs(out.items) do
      if it.text and it.text:find("median interval between steady collectives (no training steps detected)", 1, true) then
        said = true
      end
    end
    T.ok(said, "the text says the step is the interval between collectives")
    -- the oracle: GPU 0's NCCL kernels in the source, every interval D longer on every planted copy
    local st = T.sql(T.data(SRC), [[SELECT k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n
      ON n.id = k.shortName WHERE n.value LIKE 'nccl%' AND k.deviceId = 0 ORDER BY k.start]])
    local iv = {}
    for k = out.values.warmup_collectives + 2, #st do iv[#iv + 1] = tonumber(st[k][1]) - tonumber(st[k - 1][1]) + d end
    within(out.values.step_ns, T.median(iv), 0.02, "the interval between collectives")
    within(f.cost_ns, d, 0.25, "per interval the others lose the planted delay (the median interval, not the mean)")
    -- one 'train_step' range per 4 collectives on each copy's launching thread (SQL): the training step
    for _, path in ipairs(files) do
      local cmd = T.shell_quote(T.source_dir .. "/tests/lua/plant_steps.sh") .. " " .. T.shell_quote(path) .. " 4"
      T.ok(os.execute(cmd), cmd)
    end
    local durs = {}
    for _, path in ipairs(files) do
      for _, r in ipairs(T.sql(path, "SELECT end - start FROM NVTX_EVENTS WHERE text = 'train_step'")) do
        durs[#durs + 1] = tonumber(r[1])
      end
    end
    T.ok(#durs >= 4 * 5, "planted steps: " .. #durs)
    local tables2, out2 = T.run_analysis("straggler", files)
    local f2 = named(out2, "straggler.compute", {"r2:gpu0"})[1]
    T.eq(out2.values.step_source, "iterations", "the training step")
    within(out2.values.step_ns, T.median(durs), 0.01, "the step: the planted ranges' median (SQL)")
    T.eq(out2.values.collective_interval_ns, out.values.collective_interval_ns, "collectives as before")
    -- the share: the planted delay at each collective it is late at over the steady span (SQL: the first
    -- arrivals are a waiting rank's collectives), and the cost per step that share of the planted step
    local i = cause_row(tables2, "r2:gpu0")
    local w = T.sql(files[1], [[SELECT k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n
      ON n.id = k.shortName WHERE n.value LIKE 'nccl%' AND k.deviceId = 0 ORDER BY k.start]])
    local span = tonumber(w[#w][1]) - tonumber(w[out2.values.warmup_collectives + 1][1])
    local share = tables2.causes["late at"][i] * d / span
    within(f2.share, share, 0.05, "share of the training step: the planted delays over the steady span (SQL)")
    within(f2.cost_ns, share * T.median(durs), 0.05, "cost per training step: that share of the planted step")
    T.near(f2.share, f2.cost_ns / f2.step_ns, 1e-6, "share = cost / training step")
    T.ok(f2.cost_ns > 2 * f.cost_ns, "the cost per training step is not the cost per interval")
    T.eq(tables2.causes["late at"][i], tables.causes["late at"][i], "the verdict rules unchanged")
    local c = tables2.causes
    within(c["lost over the run (ns)"][i], c["late at"][i] * d, 0.05, "lost over the run: the planted delay at each")
    T.ok(f2.message:find("over the run", 1, true), "the finding states the loss over the run: " .. f2.message)
    cleanup(dir)
  end},

  {"one export, GPU 1's collectives run 300 µs longer (shared clock): named, cause collective, exactly 300 µs later", function()
    local d = 300000
    local f = plant(os.tmpname(), "all", d, "0=lag,1=collective")
    local tables, out = T.run_analysis("straggler", {f})
    T.eq(named(out, "straggler.collective", {tables.ranks.rank[2]})[1].next,
         "nsl run nccl " .. f .. " --arg per_report=true", "next: its collectives")
    T.ok(tables.ranks.rank[2]:find(":gpu1$"), "GPU 1 named")
    T.eq(tables.ranks["clock offset (ns)"][2], 0, "one export, one clock")
    -- per collective, GPU 1 arrives d later behind GPU 0 than in the source (SQL)
    local src = T.sql(T.data(SRC), [[SELECT k.deviceId, k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds n ON n.id = k.shortName WHERE n.value LIKE 'nccl%' ORDER BY k.deviceId, k.start]])
    local starts = {[0] = {}, [1] = {}}
    for _, row in ipairs(src) do table.insert(starts[tonumber(row[1])], tonumber(row[2])) end
    local nw = out.values.warmup_collectives
    local a = tables.arrivals
    local arr = {}
    for j = 1, #a do
      arr[a.collective[j]] = arr[a.collective[j]] or {}
      arr[a.collective[j]][a.rank[j]:match(":gpu(%d)$")] = a["after first (ns)"][j]
    end
    for idx, v in pairs(arr) do
      local k = idx + nw
      T.eq((v["1"] - v["0"]) - (starts[1][k] - starts[0][k]), k >= 2 and d or 0, "collective " .. k)
    end
    os.remove(f)
  end},

  {"8 ranks, two of them (2 and 6) idle: both named, each 500 µs late", function()
    local d = 500000
    local files, dir = copies(8, d, {[2] = "idle", [6] = "idle"}, "idlewait", 10000)
    local tables, out = T.run_analysis("straggler", files)
    named(out, "straggler.host_idle", {"r2:gpu0", "r6:gpu0"})
    for _, label in ipairs{"r2:gpu0", "r6:gpu0"} do
      within(tables.causes["late by med (ns)"][cause_row(tables, label)], d, 0.05, "delay of " .. label)
    end
    cleanup(dir)
  end},

  {"jitter alone (4 ranks, up to 80 µs): nobody named; rotating, with the planted jitter's last rank and skew", function()
    local J = 80000
    local files, dir = copies(4, 0, {}, nil, J)
    local tables, out = T.run_analysis("straggler", files, {"min_share=0.001"})
    T.eq(#finding(out, "straggler.rotating"), 1, "a rotating finding")
    T.eq(#out.findings, 1, "and nothing else")
    T.eq(out.findings[1].severity, "info", "rotating is info")
    -- the planted jitter of rank r at collective k (straggler_rank.sh's hash; copies of one GPU are otherwise equal)
    local function jit(r, k) return ((k * 2654435761 + (r + 1) * 97531) % 4294967291 * 40503 % 1000003) % J end
    local nw = out.values.warmup_collectives
    local c = tables.collectives
    local lasts = {}
    for i = 1, #c do
      local k = c.collective[i] + nw
      local hi, lo, who = -1, math.huge, nil
      for r = 0, 3 do
        local j = jit(r, k)
        if j > hi then hi, who = j, r end
        lo = math.min(lo, j)
      end
      T.eq(c["skew (ns)"][i], hi - lo, "skew of collective " .. k)
      T.eq(c["last rank"][i], "r" .. who .. ":gpu0", "last rank of collective " .. k)
      lasts[who] = (lasts[who] or 0) + 1
    end
    local n = 0
    for _ in pairs(lasts) do n = n + 1 end
    T.ok(n >= 3, "the last rank changes")
    -- the default threshold (2 % of the step): no finding at all
    local _, quiet = T.run_analysis("straggler", files)
    T.eq(#quiet.findings, 0, "below the default share: no finding")
    cleanup(dir)
  end},

  {"unplanted copies (8 ranks, clocks shifted, jitter) name nobody; offsets recovered", function()
    local files, dir = copies(8, 0, {}, nil, 10000)
    local tables, out = T.run_analysis("straggler", files)
    T.eq(#out.findings, 0, "no finding")
    local r = tables.ranks
    for i = 1, #r do
      T.eq(r.verdict[i], "", "nobody named")
      local k = tonumber(r.rank[i]:match("^r(%d+)"))
      local want = ((k * 37) % 23 - 11) * 1000000 - (-11 * 1000000)   -- vs r0's -11 ms
      T.ok(math.abs(r["clock offset (ns)"][i] - want) <= 10000, "offset of " .. r.rank[i])
    end
    T.ok(out.items[1].text:find("^No straggler"), "the verdict says so: " .. out.items[1].text)
    cleanup(dir)
  end},

  -- 64 ranks; 16 in the ASan build (NSL_TEST_SMALL), where more copies of one rank add nothing to check
  {"64 small ranks (16 in the ASan build), one idle: named alone", function()
    local d = 500000
    local n = os.getenv("NSL_TEST_SMALL") and 16 or 64
    local late = n == 64 and 37 or 13
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
    local idle = plant(string.format("%s/r%02d.sqlite", dir, late), 0, d, "idle", 3000000)
    local waiting = plant(dir .. "/r00.sqlite", 0, d, "idlewait", 0)
    local files = {}
    for r = 0, n - 1 do
      local f = string.format("%s/r%02d.sqlite", dir, r)
      if r ~= 0 and r ~= late then assert(os.execute("cp " .. T.shell_quote(waiting) .. " " .. T.shell_quote(f))) end
      files[#files + 1] = f
    end
    T.eq(files[late + 1], idle, "the idle rank's file")
    local tables, out = T.run_analysis("straggler", files, {"steps=1"})
    T.eq(#tables.ranks, n, n .. " ranks")
    local label = string.format("r%02d:gpu0", late)
    named(out, "straggler.host_idle", {label})
    within(tables.causes["late by med (ns)"][cause_row(tables, label)], d, 0.05, "its delay")
    cleanup(dir)
  end},

  {"the shipped sample (samples/make_straggler_sample.sh): rank 2 named, host idle, 500 µs", function()
    local tables, out = T.run_analysis("straggler", {T.source_dir .. "/samples/nccl_4rank_straggler.zip"})
    named(out, "straggler.host_idle", {"rank2:gpu0"})
    within(tables.causes["late by med (ns)"][cause_row(tables, "rank2:gpu0")], 500000, 0.05, "its delay")
    T.ok(out.findings[1].next:find("^nsl run gaps [^ ]*samples/nccl_4rank_straggler%.zip %-%-report rank2 %-%-arg"),
         "the next command opens the late rank of the bundle: " .. out.findings[1].next)
  end},

  {"one rank: a sentence, no verdict", function()
    local f = plant(os.tmpname(), 0)
    local tables, out = T.run_analysis("straggler", {f}, {"rank_by=report"})
    T.eq(#tables.ranks, 1, "one rank")
    T.eq(#out.findings, 0, "no finding")
    T.ok(out.items[1].text:find("^1 rank"), "says so: " .. out.items[1].text)
    os.remove(f)
  end},

  {"one export holding two GPUs: the verdict follows the rule over SQL start times; compute per step equals SQL", function()
    local f = T.data(SRC)
    local tables, out = T.run_analysis("straggler", {f}, {"warmup=0"})
    local r = tables.ranks
    T.eq(#r, 2, "two GPUs")
    -- the rule by SQL: lateness of a GPU at collective k = its start - the other's (one clock, one stream each)
    local st = {[0] = {}, [1] = {}}
    for _, row in ipairs(T.sql(f, [[SELECT k.deviceId, k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%' ORDER BY k.deviceId, k.start]])) do
      table.insert(st[tonumber(row[1])], tonumber(row[2]))
    end
    local n, thr = #st[0], 20000
    local firsts, skewed, late, sum = {}, 0, {[0] = 0, [1] = 0}, {[0] = 0, [1] = 0}
    for k = 1, n do
      firsts[k] = math.min(st[0][k], st[1][k])
      local d1 = st[1][k] - st[0][k]
      if math.abs(d1) >= thr then skewed = skewed + 1 end
      for g, v in pairs{[0] = -d1, [1] = d1} do
        if v >= thr then late[g] = late[g] + 1; sum[g] = sum[g] + v end
      end
    end
    local span = firsts[n] - firsts[1]
    local c = tables.causes
    for g = 0, 1 do
      local i = cause_row(tables, "pytorch_nccl_2gpu_2026.2:gpu" .. g)
      T.eq(c["late at"][i], late[g], "collectives gpu" .. g .. " is late at")
      T.near(c["of the step (%)"][i], 100 * sum[g] / span, 1e-6, "time lost to gpu" .. g)
      local named = late[g] >= 2 and late[g] >= 0.5 * skewed and sum[g] / span >= 0.02
      T.eq(c.verdict[i] ~= "", named, "verdict of gpu" .. g)
    end
    for i = 1, #r do
      local dev = tonumber(r.rank[i]:match(":gpu(%d+)$"))
      local rows = T.sql(f, string.format([[SELECT k.start, k.end, s.value LIKE 'nccl%%' FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE k.deviceId = %d]], dev))
      local arrivals, work = {}, {}
      for _, row in ipairs(rows) do
        if row[3] == "1" then arrivals[#arrivals + 1] = tonumber(row[1])
        else work[#work + 1] = {tonumber(row[1]), tonumber(row[2])} end
      end
      T.eq(r.collectives[i], #arrivals, "NCCL kernels of gpu" .. dev)
      T.eq(r.matched[i], #arrivals, "all matched on gpu" .. dev)
      -- a rank's clock offset moves its arrivals and compute alike: steps do not depend on it
      local want = brute_steps(arrivals, work)
      local got, nst = steps_of(tables.step_compute, r.rank[i])
      T.eq(nst, #arrivals - 1, "whole steps of gpu" .. dev)
      for k = 1, #arrivals - 1 do T.eq(got[k], want[k], "gpu" .. dev .. " step " .. k) end
    end
  end},

  {"figures under --out: PNG and SVG drawn from exactly the step_compute and arrivals tables", function()
    local nsl = require("nsl")
    local core = require("nsl.straggler")
    local runner = require("nsl.engine.runner")
    local files = rank_files(D, 1, OFFSET)
    local dir = os.tmpname()
    os.remove(dir)
    local a = assert(runner.load_analysis("straggler"))
    local trace = assert(nsl.open(files))
    local out = require("nsl.engine.output").new{analysis = "straggler", format = "json-silent", trace = trace, dir = dir}
    a.run(trace, assert(runner.parse_args(a, {})), out)
    local tables = {}
    for _, it in ipairs(out.items) do if it.kind == "table" then tables[it.name] = it.t end end
    local labels = tables.ranks.rank:totable()
    local figs = core.figures(tables.step_compute, tables.arrivals, labels)
    T.eq(#figs, 2, "two figures")
    for _, f in ipairs(figs) do
      local t = f.name == "straggler_steps" and tables.step_compute or tables.arrivals
      local xcol = f.name == "straggler_steps" and "step" or "collective"
      local ycol = f.name == "straggler_steps" and "compute (ns)" or "after first (ns)"
      T.eq(#f.series, #labels, f.name .. ": one line per rank")
      local points = 0
      for si, ser in ipairs(f.series) do
        T.eq(ser.label, labels[si], f.name .. ": series order")
        local k = 0
        for i = 1, #t do
          if t.rank[i] == ser.label then
            k = k + 1
            T.eq(ser.x[k], t[xcol][i], f.name .. " x")
            T.eq(ser.y[k], t[ycol][i], f.name .. " y")
          end
        end
        T.eq(#ser.x, k, f.name .. ": points of " .. ser.label)
        points = points + k
      end
      T.eq(points, #t, f.name .. ": every row drawn")
      -- the files the analysis wrote are these figures, drawn from these tables
      for _, format in ipairs{"png", "svg"} do
        local cv, d = core.draw(f, format)
        local fh = assert(io.open(dir .. "/" .. f.name .. "." .. format, "rb"))
        local written = fh:read("a")
        fh:close()
        T.ok(written == cv:to_string(), f.name .. "." .. format .. " equals the figure of the tables")
        T.ok(format == "png" and written:sub(1, 8) == "\137PNG\r\n\26\n" or written:find("<svg", 1, true),
             f.name .. "." .. format .. " is a " .. format)
        for si, ser in ipairs(d.series) do
          T.eq(ser.n, #f.series[si].x, "plotted points")
          T.eq(ser.ymax, f.series[si].y:max(), "plotted maximum")
        end
        os.remove(dir .. "/" .. f.name .. "." .. format)
      end
    end
    os.execute("rm -rf " .. T.shell_quote(dir))
    for _, f in ipairs(files) do os.remove(f) end
  end},

  {"an export without NCCL kernels, and every rank_by: a sentence, no tables; process and report ranks", function()
    local tables, out = T.run_analysis("straggler", {T.data("nsys/tiny_2026.1.sqlite")})
    T.eq(next(tables), nil, "no table")
    T.ok(out.items[1].text:find("no NCCL kernels", 1, true), "says why: " .. tostring(out.items[1].text))
    local by_report = T.run_analysis("straggler", {T.data(SRC)}, {"rank_by=report"}).ranks
    T.eq(#by_report, 1, "one report: one rank")
    T.eq(by_report.collectives[1], T.sql1(T.data(SRC), [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%']]), "all NCCL kernels of the report")
    local by_pid = T.run_analysis("straggler", {T.data(SRC)}, {"rank_by=process"}).ranks
    T.eq(#by_pid, T.sql1(T.data(SRC), [[SELECT count(DISTINCT (globalPid >> 24) & 16777215) FROM CUPTI_ACTIVITY_KIND_KERNEL]]),
         "one rank per process with kernels")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"rank_by=node"}) end, "device, process, report")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"min_delay=soon"}) end, "%-%-arg min_delay")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"min_share=2"}) end, "min_share must be")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"late_share=0"}) end, "late_share must be")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"warmup=-2"}) end, "warmup must be")
  end},

  {"CLI: the verdict prints first, --format json carries the record, --fail-on warning exits 3", function()
    local d = 500000
    local files, dir = copies(4, d, {[2] = "idle"}, "idlewait", 10000)
    local nslbin = assert(os.getenv("NSL"), "ctest sets NSL to the nsl binary")
    local q = {}
    for i, f in ipairs(files) do q[i] = T.shell_quote(f) end
    local cmd = T.shell_quote(nslbin) .. " run straggler " .. table.concat(q, " ")
    local p = assert(io.popen(cmd .. " 2>&1"))
    local lines = {}
    for line in p:lines() do lines[#lines + 1] = line end
    p:close()
    T.ok(lines[1]:find("^%[warning straggler%.host_idle%] r2:gpu0 is a straggler: late by [%d.]+ µs %(median%) " ..
                       "at %d+ of the %d+ collectives"),
         "the finding first: " .. lines[1])
    T.ok(lines[2]:find("^  costs [%d.]+ µs per step %([%d.]+%% of the [%d.]+ ms step%); at rank r2:gpu0, device 0"),
         "its cost and where: " .. lines[2])
    T.ok(lines[3]:find("^  next: nsl run gaps .*r2%.sqlite %-%-arg min=%d+us %-%-arg scope=device$"),
         "the next command: " .. lines[3])
    T.ok(lines[5]:find("^1 straggler: r2:gpu0 %(host_idle%)"), "then the verdict sentence: " .. lines[5])
    local jp = assert(io.popen(cmd .. " --format json 2>/dev/null"))
    local doc = assert(require("nsl.util.json").decode(jp:read("a")))
    jp:close()
    local f = doc.findings[1]
    T.eq(f.id, "straggler.host_idle", "json id")
    T.eq(math.type(f.cost_ns), "integer", "json cost_ns is an integer")
    T.eq(math.type(f.step_ns), "integer", "json step_ns is an integer")
    T.eq(f.where.rank, "r2:gpu0", "json where.rank")
    T.eq(math.type(f.where.from), "integer", "json where.from")
    T.eq(f.evidence, "causes", "json evidence")
    T.ok(doc.tables.causes, "the evidence table is in the document")
    local _, _, code = os.execute(cmd .. " --fail-on warning > /dev/null 2>&1")
    T.eq(code, 3, "exit code with a straggler and --fail-on warning")
    local _, _, code0 = os.execute(cmd .. " > /dev/null 2>&1")
    T.eq(code0, 0, "exit code without --fail-on")
    cleanup(dir)
  end},

  {"4 ranks, rank 1 computes 50 µs longer: late at every collective, below min_share, named at info with its cost",
   function()
    local d = 50000
    local files, dir = copies(4, d, {[1] = "slow"}, "wait", 10000)
    local tables, out = T.run_analysis("straggler", files)
    T.eq(#out.findings, 1, "one finding")
    local f = out.findings[1]
    T.eq(f.severity, "info", "info: below the straggler threshold")
    T.eq(f.id, "straggler.compute", "its cause")
    T.eq(f.where.rank, "r1:gpu0", "the planted rank")
    local i = cause_row(tables, "r1:gpu0")
    T.eq(tables.causes["late at"][i], #tables.collectives, "late at every steady collective")
    T.ok(f.share > 0 and f.share < 0.02, "its share of the run is under min_share: " .. f.share)
    -- the cost per step: the planted 50 µs, less the others' jitter, plus its own
    within(f.cost_ns, d, 0.25, "cost per step near the planted delay")
    T.eq(tables.causes.verdict[i], "late every time (compute)", "verdict column")
    for r = 1, #tables.causes do
      if r ~= i then T.eq(tables.causes.verdict[r], "", "no verdict for " .. tables.causes.rank[r]) end
    end
    -- a real straggler (the default 2 %) still warns
    local big = T.run_analysis("straggler", files, {"min_share=0.001"})
    T.eq(big.causes.verdict[i], "STRAGGLER (compute)", "over a lower min_share it is a straggler")
    cleanup(dir)
  end},

  {"4 ranks, rank 1's work after each collective waits 50 µs in the queue: launch (SQL: launched before the gap)",
   function()
    local d = 50000
    local files, dir = copies(4, d, {[1] = "queue"}, "wait", 10000)
    -- SQL over rank 1's copy: after each collective, the first other kernel of its GPU
    -- was launched (its runtime call started) before that collective ended: work in the queue
    local rows = T.sql(files[2], [[
      WITH k AS (SELECT k.start, k."end", k.correlationId AS corr, n.value LIKE 'nccl%' AS c
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n ON n.id = k.shortName),
           c AS (SELECT "end" AS e FROM k WHERE c),
           nx AS (SELECT c.e, (SELECT corr FROM k WHERE NOT k.c AND k.start >= c.e ORDER BY k.start LIMIT 1) AS corr
                  FROM c)
      SELECT count(*), sum(rt.start < nx.e) FROM nx JOIN CUPTI_ACTIVITY_KIND_RUNTIME rt ON rt.correlationId = nx.corr]])
    local windows, queued = tonumber(rows[1][1]), tonumber(rows[1][2])
    T.ok(windows >= 20, "windows after collectives: " .. windows)
    T.eq(queued, windows, "the next kernel was launched before every gap")
    for _, args in ipairs{{}, {"min_share=0.001"}} do   -- below the threshold (info) and over it (warning)
      local tables, out = T.run_analysis("straggler", files, args)
      T.eq(#out.findings, 1, "one finding")
      local f = out.findings[1]
      T.eq(f.id, "straggler.launch", "the queue case is labelled launch at 50 µs")
      T.eq(f.where.rank, "r1:gpu0", "the planted rank")
      T.eq(f.severity, #args == 0 and "info" or "warning", "severity")
      local i = cause_row(tables, "r1:gpu0")
      within(tables.causes["queue excess (ns)"][i], d, 0.05, "the excess is queue")
      T.ok(tables.causes.verdict[i]:find("(queue)", 1, true), "verdict: " .. tables.causes.verdict[i])
    end
    cleanup(dir)
  end},

  {"the planting script refuses bad arguments", function()
    local bad = {"", "a b", T.shell_quote(T.data(SRC)) .. " /tmp/x 0 5 fast", T.shell_quote(T.data(SRC)) .. " /tmp/x zero",
                 T.shell_quote(T.data(SRC)) .. " /tmp/x 0 5"}
    bad[#bad + 1] = T.shell_quote(T.data(SRC)) .. " never.sqlite all 5 idle"
    bad[#bad + 1] = T.shell_quote(T.data(SRC)) .. " never.sqlite all 5 0=fast"
    for _, a in ipairs(bad) do
      local ok = os.execute(T.shell_quote(script) .. " " .. a .. " 2>/dev/null")
      T.ok(not ok, "refused: " .. a)
    end
  end},

  -- ---- nsys-jax ----

  {"nsys-jax, four archives: offsets equal the definition over nsys-jax's own frame (structure matching)", function()
    local tables = T.run_analysis("straggler", procs, {"warmup=0"})
    local r = tables.ranks
    T.eq(#r, 4, "four devices")
    local colls = golden_collectives(true)
    local want, n = oracle_offsets(colls, {0, 1, 2, 3}, 0)
    for d = 0, 3 do
      T.eq(offset_of(r, d), want[d], "offset of device " .. d)
      T.eq(n[d], 120, "instances shared with device 0")
      T.eq(r.collectives[row_of(r, ":gpu" .. d .. "$")], 120, "communication thunks of device " .. d)
      T.eq(r.matched[row_of(r, ":gpu" .. d .. "$")], 120, "all matched on device " .. d)
    end
    -- arrivals: after the first rank's, on clocks aligned by those offsets
    local inst = {}
    for _, c in ipairs(colls) do
      local e = inst[c.key] or {key = c.key, arr = {}}
      inst[c.key] = e
      e.arr[c.device] = c.start - want[c.device]
    end
    local list = {}
    for _, e in pairs(inst) do
      e.first = math.huge
      for _, a in pairs(e.arr) do e.first = math.min(e.first, a) end
      list[#list + 1] = e
    end
    table.sort(list, function(a, b) return a.first < b.first end)
    local a = tables.arrivals
    T.eq(#a, #colls, "one arrival per collective and rank")
    for i = 1, #a do
      local e = list[a.collective[i]]
      local d = tonumber(a.rank[i]:match(":gpu(%d+)$"))
      T.eq(a["after first (ns)"][i], e.arr[d] - e.first, "arrival of device " .. d .. " at collective " .. a.collective[i])
    end
    local c = tables.collectives
    T.eq(#c, 120, "collective instances")
    -- delay: the median over instances of (arrival - the median arrival of the other devices)
    local lates = {}
    for _, e in ipairs(list) do
      for d, x in pairs(e.arr) do
        local others = {}
        for d2, y in pairs(e.arr) do if d2 ~= d then others[#others + 1] = y end end
        lates[d] = lates[d] or {}
        table.insert(lates[d], x - T.median(others))
      end
    end
    for d = 0, 3 do
      T.eq(r["delay (ns)"][row_of(r, ":gpu" .. d .. "$")], T.median(lates[d]), "delay of device " .. d)
    end
  end},

  {"nsys-jax: offsets agree with nsys-jax's clock corrections (devices 0-2 within a bound from the frame; device 3 explained)", function()
    local golden_corr = golden_corrections()
    -- nsys-jax's own grouping: by fingerprint
    local colls = golden_collectives(false)
    local corr = oracle_nsys_jax(colls)
    for d = 0, 3 do T.near(corr[d], golden_corr[d], 1e-9, "nsys-jax's definition reproduces its correction " .. d) end
    -- device 3's step function has another fingerprint: nsys-jax matches its collectives with themselves only
    -- (skew 0 in 115 of its 120), hence its correction 0; straggler with the same matching (programs=fingerprint)
    -- aligns device 3 on the 5 collectives it shares with the others
    T.eq(golden_corr[3], 0.0, "device 3's golden correction")
    local tables = T.run_analysis("straggler", procs, {"programs=fingerprint", "warmup=0"})
    local r = tables.ranks
    local want, n = oracle_offsets(colls, {0, 1, 2, 3}, 0)
    T.eq(n[3], 5, "device 3 shares 5 collectives with device 0 under fingerprint matching")
    for d = 0, 3 do T.eq(offset_of(r, d), want[d], "fingerprint matching: offset of device " .. d) end
    -- devices 0-2: straggler's estimate of off_r - off_s is median(u_r) - median(u_s) with u = end - device 0's
    -- end; nsys-jax's is median(k_r) - median(k_s) with k = end - the instance's mean end.  Over the instances
    -- that devices 0, 1 and 2 alone ran (S: 115 of each device's 120), u_r - u_s = k_r - k_s = the end
    -- difference x_i.  A median of n values of which fewer than n/2 lie outside [L, H] lies in [L, H]; so with
    -- L, H the extremes over S, both estimates lie within [min_S u_r - max_S u_s, max_S u_r - min_S u_s] (and
    -- likewise for k), intervals that share every x_i: they differ by at most the sum of the four ranges over S.
    local members, ends = {}, {}
    for _, c in ipairs(colls) do
      members[c.key] = (members[c.key] or 0) + (c.device <= 2 and 1 or 100)
      ends[c.key] = ends[c.key] or {}
      ends[c.key][c.device] = c.stop_ms
    end
    local u, k, outside = {}, {}, {}
    for d = 0, 2 do u[d], k[d], outside[d] = {}, {}, 0 end
    for key, e in pairs(ends) do
      if members[key] == 3 then
        local mean = (e[0] + e[1] + e[2]) / 3
        for d = 0, 2 do
          table.insert(u[d], e[d] - e[0])
          table.insert(k[d], e[d] - mean)
        end
      else
        for d = 0, 2 do if e[d] then outside[d] = outside[d] + 1 end end
      end
    end
    local worst = 0
    for rr = 0, 2 do
      T.ok(outside[rr] < (#u[rr] + outside[rr]) / 2, "fewer than half of device " .. rr .. "'s collectives outside S")
      for s = rr + 1, 2 do
        local bound = range_of(u[rr]) + range_of(u[s]) + range_of(k[rr]) + range_of(k[s])
        T.ok(bound < 1, "the bound is tight enough to mean something: " .. bound .. " ms")
        local mine = (offset_of(r, rr) - offset_of(r, s)) / 1e6
        local theirs = golden_corr[rr] - golden_corr[s]
        T.ok(math.abs(mine - theirs) <= bound, string.format("devices %d-%d: %.6f vs nsys-jax %.6f ms (bound %.3f)",
          rr, s, mine, theirs, bound))
        worst = math.max(worst, math.abs(mine - theirs))
      end
    end
    T.ok(worst < 0.001, "observed difference " .. worst .. " ms (0.2 µs when written)")
  end},

  {"nsys-jax: compute per step equals the definition over nsys-jax's thunk frame", function()
    local tables = T.run_analysis("straggler", procs, {"warmup=0"})
    local arrivals, work = {}, {}
    for _, t in ipairs(gz_records(G4 .. "thunk_frame_all.csv.gz")) do
      local d = tonumber(t.Device)
      local s = tonumber(t.ProjStartMs)
      if t.Communication == "True" then
        arrivals[d] = arrivals[d] or {}
        table.insert(arrivals[d], ns(s))
      else
        work[d] = work[d] or {}
        table.insert(work[d], {ns(s), ns(s + tonumber(t.ProjDurMs) + tonumber(t.ProjDurHiddenMs))})
      end
    end
    for d = 0, 3 do
      local want = brute_steps(arrivals[d], work[d])
      local got, n = steps_of(tables.step_compute, tables.ranks.rank[row_of(tables.ranks, ":gpu" .. d .. "$")])
      T.eq(n, #arrivals[d] - 1, "whole steps of device " .. d)
      for k = 1, #arrivals[d] - 1 do T.eq(got[k], want[k], "device " .. d .. " step " .. k) end
    end
  end},

  {"nsys-jax: one process alone (proc0) reports its device; two of four align on what they share", function()
    local tables, out = T.run_analysis("straggler", {procs[1]})
    local r = tables.ranks
    T.eq(#r, 1, "one rank present")
    T.eq(r.rank[1], "pax_fsdp4_4proc_proc0:gpu0", "the device present")
    T.eq(r.collectives[1], 120, "its communication thunks")
    T.eq(r.matched[1], 0, "nothing to match with")
    T.eq(r["clock offset (ns)"][1], 0, "no offset")
    T.eq(r.steps[1], 119, "steps between its collectives")
    T.eq(#out.findings, 0, "no finding")
    T.eq(tables.collectives, nil, "no per-collective table")
    local two = T.run_analysis("straggler", {procs[1], procs[3]}, {"warmup=0"})
    local r2 = two.ranks
    T.eq(#r2, 2, "two ranks present")
    local want = oracle_offsets(golden_collectives(true), {0, 2}, 0)
    T.eq(offset_of(r2, 2), want[2], "device 2 against device 0")
  end},

  {"nsys-jax: warm-up left out is nsys-jax's own (its steady communication frame)", function()
    local tables, out = T.run_analysis("straggler", procs)
    golden_collectives(true)   -- loads golden.names (ProgramId -> program name)
    local seen = {}
    for _, c in ipairs(gz_records(G4 .. "communication_frame_steady_aligned.csv.gz")) do
      local key = table.concat({golden.names[c.ProgramId], c.ProgramExecution, c.Name, c.ThunkExecution}, "|")
      seen[key] = (seen[key] or 0) + 1
    end
    local steady = 0
    for _, n in pairs(seen) do if n >= 2 then steady = steady + 1 end end
    T.eq(#tables.collectives, steady, "steady instances on two devices or more")
    T.eq(out.values.warmup_collectives, 120 - steady, "the rest is warm-up")
  end},

  {"nsys-jax: bad rank_by, source and programs are one-line failures", function()
    T.raises(function() T.run_analysis("straggler", {procs[1]}, {"rank_by=report"}) end, "ranks are the devices")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"source=jax"}) end, "needs an nsys%-jax trace")
    T.raises(function() T.run_analysis("straggler", {T.data(SRC)}, {"source=x"}) end, "auto, nccl, jax")
    T.raises(function() T.run_analysis("straggler", {procs[1]}, {"programs=x"}) end, "structure, fingerprint")
  end},
}
