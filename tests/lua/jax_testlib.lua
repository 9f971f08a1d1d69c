-- tests/lua/jax_testlib.lua -- helpers shared by the nsys-jax tests: reading
-- the golden results of NVIDIA's own nsys-jax code (../shared/data/nsys-jax/
-- golden, through zcat/xzcat), comparing frames with them row by row, and
-- making archive variants (members removed, renamed or reordered) with the
-- zip/unzip programs.
return function(T)
  local J = {}

  local function read_cmd(cmd)
    local p = assert(io.popen(cmd, "r"))
    local text = p:read("a")
    assert(p:close(), cmd .. " failed")
    return text
  end

  function J.read(path)
    if path:match("%.gz$") then return read_cmd("zcat " .. T.shell_quote(path)) end
    if path:match("%.xz$") then return read_cmd("xzcat " .. T.shell_quote(path)) end
    local f = assert(io.open(path, "rb"))
    local text = f:read("a")
    f:close()
    return text
  end

  -- RFC 4180 records -> array of arrays of strings.
  function J.parse_csv(text)
    local rows, row, field, i, n, quoted = {}, {}, {}, 1, #text, false
    while i <= n do
      local c = text:sub(i, i)
      if quoted then
        if c == '"' then
          if text:sub(i + 1, i + 1) == '"' then field[#field + 1] = '"'; i = i + 1 else quoted = false end
        else field[#field + 1] = c end
      elseif c == '"' then quoted = true
      elseif c == "," then row[#row + 1] = table.concat(field); field = {}
      elseif c == "\n" then
        row[#row + 1] = table.concat(field); field = {}
        rows[#rows + 1] = row; row = {}
      elseif c ~= "\r" then field[#field + 1] = c end
      i = i + 1
    end
    if #field > 0 or #row > 0 then row[#row + 1] = table.concat(field); rows[#rows + 1] = row end
    return rows
  end

  -- CSV with a header -> array of {column = value}.
  function J.csv_records(path)
    local rows = J.parse_csv(J.read(path))
    local head, out = rows[1], {}
    for r = 2, #rows do
      local rec = {}
      for k, name in ipairs(head) do rec[name] = rows[r][k] end
      out[#out + 1] = rec
    end
    return out
  end

  function J.folded(text)
    local m, n = {}, 0
    for line in text:gmatch("[^\n]+") do
      local k, v = line:match("^(.*) (%S+)$")
      m[k] = (m[k] or 0) + tonumber(v)
      n = n + 1
    end
    return m, n
  end

  function J.compile_rows(d)
    local n = 0
    for _, p in ipairs(d.compile_parts) do n = n + #p end
    return n
  end

  -- A frame's rows by key columns, as strings.
  function J.index(frame, keys, cols)
    local out, colv = {}, {}
    for _, c in ipairs(keys) do colv[c] = frame[c]:totable() end
    for _, c in ipairs(cols) do colv[c] = frame[c]:totable() end
    for i = 1, #frame do
      local k = {}
      for j, c in ipairs(keys) do k[j] = tostring(colv[c][i]) end
      local rec = {}
      for _, c in ipairs(cols) do rec[c] = colv[c][i] end
      out[table.concat(k, "|")] = rec
    end
    return out
  end

  function J.compare_frame(frame, golden_path, keys, cols, tol)
    local mine = J.index(frame, keys, cols)
    local n = 0
    for _, g in ipairs(J.csv_records(golden_path)) do
      local k = {}
      for j, c in ipairs(keys) do k[j] = g[c] end
      local key = table.concat(k, "|")
      local m = mine[key]
      T.ok(m ~= nil, "golden row " .. key .. " present")
      for _, c in ipairs(cols) do
        local want = g[c]
        if want == "True" or want == "False" then T.eq(m[c], want == "True", key .. " " .. c)
        elseif tonumber(want) then T.near(m[c], tonumber(want), tol, key .. " " .. c)
        else T.eq(m[c], want, key .. " " .. c) end
      end
      n = n + 1
    end
    T.eq(n, #frame, "rows of " .. golden_path)
  end

  --- Golden numbers of a golden folder's run log: frame row counts
  -- {module=, thunk=, communication=, compile=} and total compile ms.
  function J.golden_counts(G)
    local log = J.read(G .. "golden_run.log")
    local counts = {}
    for k, v in log:match("frames rows: (%b{})"):gmatch("'(%w+)': (%d+)") do counts[k] = tonumber(v) end
    return counts, tonumber(log:match("total compile DurNonChildMs: ([%d.]+)"))
  end

  --- Checks the steady module table (jax.module_stats) of frames d against
  -- golden folder G's notebook_module_table.csv: executions and active ms per
  -- program, and no other program.  Returns the table.
  function J.check_module_table(jax, d, G, what)
    local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
    local has = #d.communication > 0
    local st = jax.module_stats(jax.steady(module, d.compiled, has), jax.steady(d.communication, d.compiled, has))
    local mine = J.index(st, {"ProgramId"}, {"Execs", "DurSumMs"})
    local rows = 0
    for _, r in ipairs(J.csv_records(G .. "notebook_module_table.csv")) do
      local m = mine[r.ProgramId]
      T.ok(m, what .. ": program " .. r.ProgramId)
      T.eq(m.Execs, tonumber(r.Execs), what .. ": execs")
      T.near(m.DurSumMs, tonumber(r.ActiveMs), 1e-9, what .. ": active ms")
      rows = rows + 1
    end
    T.eq(rows, #st, what .. ": programs")
    return st
  end

  --- Checks frames d (jax.load of a trace, d.compiled set) against golden
  -- folder G: row counts, the module frame row by row, the steady module
  -- table (executions, active ms per program), the communication frame row
  -- by row and the heap peaks; with opts.compile also the parallel-aware
  -- compile time; with opts.corrections (combined runs) the clock corrections.
  function J.check_goldens(jax, d, G, what, opts)
    opts = opts or {}
    local counts, compile_ms = J.golden_counts(G)
    T.eq(#d.module, counts.module, what .. ": module rows")
    T.eq(#d.thunk, counts.thunk, what .. ": thunk rows")
    T.eq(#d.communication, counts.communication, what .. ": communication rows")
    J.compare_frame(d.module, G .. "module_frame_all.csv.gz", {"ProgramId", "ProgramExecution", "Device"},
                    {"Name", "ProjDurMs", "ProjStartMs", "NumThunks"}, 1e-9)
    J.compare_frame(d.communication, G .. "communication_frame_all.csv.gz",
                    {"ProgramId", "ProgramExecution", "Name", "ThunkExecution", "Device"},
                    {"ProjDurMs", "ProjDurHiddenMs", "MessageSize", "Collective", "CollectiveSize",
                     "BusBandwidthGBPerSec"}, 1e-6)
    J.check_module_table(jax, d, G, what)
    if opts.compile then
      T.eq(J.compile_rows(d), counts.compile, what .. ": compile rows")
      T.near(jax.compile_statistics(d.compile_parts).DurNonChildMs:sum(), compile_ms, 1e-9, what .. ": compile ms")
    end
    if opts.corrections then
      local corr = jax.alignment(d.communication)
      for _, g in ipairs(J.csv_records(G .. "alignment_device_corrections_ms.csv")) do
        T.near(corr[tonumber(g.Device)], tonumber(g["0"]), 0.01, what .. ": correction of device " .. g.Device)
      end
    end
    local want = J.read(G .. "heap_peaks.json")
    local fps = {}
    for fp in want:gmatch('"(%x+)": %[') do fps[#fps + 1] = fp end
    local heaps = jax.heap(d.store, fps)
    for _, fp in ipairs(fps) do
      local list = want:match('"' .. fp .. '": (%b[])')
      local k = 0
      for n, peak in list:gmatch('"n_events": (%d+),%s*"peak_bytes": (%d+)') do
        k = k + 1
        T.eq(heaps[fp][k].n_events, tonumber(n), what .. ": heap events " .. fp)
        T.eq(heaps[fp][k].peak_bytes, tonumber(peak), what .. ": heap peak " .. fp)
      end
      T.eq(#heaps[fp], k, what .. ": heap traces " .. fp)
    end
  end

  --- Makes zip archive `out` from the members of zip `src` after running
  -- shell commands `edit` in the extracted folder (remove or rename members);
  -- the members are stored in reverse name order when reverse is set.
  function J.variant(src, out, edit, reverse)
    local dir = os.tmpname()
    os.remove(dir)
    local script = [[
      set -e
      mkdir -p "$1" && cd "$1" && unzip -q "$2"
      ]] .. (edit or "") .. [[

      find . -type f | sed 's|^\./||' | sort ]] .. (reverse and "-r" or "") .. [[ | zip -q -@ "$3"
      cd / && rm -rf "$1"
    ]]
    assert(os.execute(string.format("sh -c %s sh %s %s %s", T.shell_quote(script), T.shell_quote(dir),
                                    T.shell_quote(src), T.shell_quote(out))), "making " .. out)
    return out
  end

  -- temporary folders (comm_testlib's): J.tmpdir() makes one, J.cleanup() removes them
  local L = dofile(T.source_dir .. "/tests/lua/comm_testlib.lua")(T)
  J.tmpdir, J.cleanup = L.tmpdir, L.cleanup

  return J
end
