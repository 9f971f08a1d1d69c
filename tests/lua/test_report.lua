-- The table printer (nsl.report) and the table API under it: a column may
-- have any name, a method's too; units declared by column names print human
-- in text and stay raw in CSV/JSON (int64 extremes, NULLs); addresses in
-- hex; kernel names shortened and placed last; text cut to a terminal's
-- width; long HTML tables with the rest a click away; diff's value for a
-- name new in the second run; REPL completion after a method call.  Oracles:
-- the values the tables were made from, plain Lua string arithmetic, and
-- SQL (sqlite3) for diff.
local T = ...
local nsl = require("nsl")
local report = require("nsl.report")
local json = require("nsl.util.json")

-- Every method of a table, written in C or Lua, plus "col" and "rows".
local function method_names()
  local names = {}
  for k in pairs(nsl.methods().table) do names[#names + 1] = k end
  table.sort(names)
  return names
end

local function lines_of(s)
  local list = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do list[#list + 1] = line end
  return list
end

return {
  {"JSON strings of Lua values: plain ones as they are, the rest escaped", function()
    -- (the oracle: the escapes written out by hand; plain strings take nsl.json_plain's path, the rest Lua's)
    local cases = {
      {"abc XYZ 0-9 +/= ~{}[]<>", '"abc XYZ 0-9 +/= ~{}[]<>"', true},
      {"", '""', true},
      {'say "hi"', '"say \\"hi\\""', false},
      {"a\\b", '"a\\\\b"', false},
      {"tab\tnl\n", '"tab\\tnl\\n"', false},
      {"bell\7 del\127", '"bell\\u0007 del\\u007f"', false},
      {"esc\27[31m", '"esc\\u001b[31m"', false},
      {"caf\195\169", '"caf\195\169"', false},                -- UTF-8 kept
      {"c1 \194\155", '"c1 \\u009b"', false},                 -- C1 escaped
      {"bad \255 byte", '"bad \239\191\189 byte"', false},     -- not UTF-8: U+FFFD
    }
    for _, c in ipairs(cases) do
      T.eq(nsl.json_plain(c[1]), c[3], "json_plain of " .. string.format("%q", c[1]))
      T.eq(report.json(c[1]), c[2], "JSON of " .. string.format("%q", c[1]))
      T.eq(json.decode(report.json({c[1]}))[1] ~= nil, true, "decodes")
    end
    local big = string.rep("QUJD", 250000)   -- a megabyte of base64
    T.eq(report.json({x = big}), '{"x":"' .. big .. '"}', "a megabyte of base64 as it is")
  end},

  {"columns named like every method: methods still work, t:col reaches the data", function()
    local names = method_names()
    T.ok(#names >= 15, "the table has its methods (" .. #names .. ")")
    local spec = {}
    for k, name in ipairs(names) do spec[k] = {name, {k, 10 * k, 100 * k}} end
    local t = nsl.table(spec)
    for k, name in ipairs(names) do
      T.eq(type(t[name]), "function", "t." .. name .. " is the method")
      T.eq(t:col(name)[1], k, "t:col('" .. name .. "')[1]")
      T.eq(t:col(name)[3], 100 * k, "t:col('" .. name .. "')[3]")
    end
    T.eq(#t:head(2), 2, "head")
    T.eq(t:sort("-rows"):col("rows")[1], t:col("rows"):max(), "sort by a column named rows")
    local rows = {}
    for row in t:rows() do rows[#rows + 1] = row end
    T.eq(#rows, 3, "t:rows() iterates")
    T.eq(rows[2].sort, 10 * (function() for k, n in ipairs(names) do if n == "sort" then return k end end end)(),
         "row.sort is the data")
    T.raises(function() return t:col("no_such") end, "no column 'no_such'", "an unknown column")
    -- every printer and machine format keeps every name
    local csv_header = lines_of(report.csv(t))[1]
    T.eq(csv_header, table.concat(names, ","), "CSV header")
    local doc = assert(json.decode(report.json(t)))
    T.eq(#doc, 3, "JSON rows")
    for k, name in ipairs(names) do T.eq(doc[2][name], 10 * k, "JSON " .. name) end
    local text = report.text(t)
    for _, name in ipairs(names) do T.ok(text:find(name, 1, true), "text shows " .. name) end
  end},

  {"int64 extremes and NULLs: human units in text, raw integers in CSV and JSON", function()
    local max, min1 = math.maxinteger, math.mininteger + 1
    -- math.mininteger is the NULL of an i64 column
    local t = nsl.table{{"wait_ns", {max, min1, math.mininteger, 1500}}, {"Total (ns)", {1500, 2500, 999, 0}},
                        {"count", {max, min1, math.mininteger, 0}}, {"address", {0x7f00deadbeef, 0, 255, max}}}
    local text = report.text(t)
    local ls = lines_of(text)
    T.ok(ls[1]:find("wait (s)", 1, true), "wait_ns in seconds: " .. ls[1])
    T.ok(ls[1]:find("Total (µs)", 1, true), "Total (ns) in µs: " .. ls[1])
    T.ok(ls[3]:find("9,223,372,036.855", 1, true), "INT64_MAX ns as s: " .. ls[3])
    T.ok(ls[4]:find("-9,223,372,036.855", 1, true), "INT64_MIN+1 ns as s: " .. ls[4])
    T.ok(ls[3]:find("9,223,372,036,854,775,807", 1, true), "INT64_MAX count with separators")
    T.ok(ls[3]:find("0x7f00deadbeef", 1, true), "address in hex: " .. ls[3])
    T.ok(ls[6]:find("0x7fffffffffffffff", 1, true), "INT64_MAX address in hex")
    T.ok(ls[5]:find("^%s+0%.999%s"), "999 ns as 0.999 µs: " .. ls[5])   -- the NULL rows print empty
    T.eq(ls[5]:gsub("%s+", " "), " 0.999 0xff", "the NULL row shows only its non-NULL cells")
    local csv = lines_of(report.csv(t))
    T.eq(csv[1], "wait_ns,Total (ns),count,address", "CSV names keep their unit")
    T.eq(csv[2], "9223372036854775807,1500,9223372036854775807," .. string.format("%d", 0x7f00deadbeef), "CSV raw")
    T.eq(csv[3], "-9223372036854775807,2500,-9223372036854775807,0", "CSV raw negative extreme")
    T.eq(csv[4], ",999,,255", "CSV NULLs are empty")
    local doc = assert(json.decode(report.json(t)))
    T.eq(doc[1].wait_ns, max, "JSON INT64_MAX")
    T.eq(doc[2].count, min1, "JSON INT64_MIN + 1")
    T.eq(doc[3].wait_ns, json.null, "JSON NULL")
    T.eq(doc[1]["Total (ns)"], 1500, "JSON keeps the (ns) name")
  end},

  {"nsys stats tables keep their exact columns", function()
    local t = nsl.table{{"Total Time (ns)", {1500000, 2500000}}, {"Name", {"void k<int>(T1)", "x"}}}
    local exact = lines_of(report.text(t, {nsys_stats = true}))
    T.eq(exact[1]:match("^%s*(.-)%s*$"), "Total Time (ns)  Name", "header as made")
    T.ok(exact[3]:find("1,500,000", 1, true) and exact[3]:find("void k<int>(T1)", 1, true), "values as made")
    local human = lines_of(report.text(t))
    T.ok(human[1]:find("Total Time (ms)", 1, true), human[1])
    T.ok(human[3]:find("1.500", 1, true), human[3])
  end},

  {"kernel names: template arguments elided in text, the column placed last; CSV keeps them", function()
    T.eq(report.short_name("void at::native::elementwise_kernel<(int)128, (int)4, F<G<x>>>(int, T3)"),
         "void at::native::elementwise_kernel<…>(int, T3)", "nested templates")
    T.eq(report.short_name("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)"),
         "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<…>)", "template in a parameter")
    T.eq(report.short_name("plain_kernel"), "plain_kernel", "no template")
    T.eq(report.short_name("bool operator<(A, B)"), "bool operator<(A, B)", "unbalanced: unchanged")
    local long = "void f<" .. string.rep("int, ", 40) .. "int>(T1)"
    local t = nsl.table{{"name", {long, "k2"}}, {"count", {3, 4}}, {"total_ns", {5000, 6000}}}
    local ls = lines_of(report.text(t))
    T.ok(ls[1]:match("name$"), "name last: " .. ls[1])
    T.ok(ls[3]:find("void f<…>(T1)", 1, true), "shortened: " .. ls[3])
    T.ok(report.csv(t):find(long, 1, true), "CSV keeps the full name")
    T.eq(assert(json.decode(report.json(t)))[1].name, long, "JSON keeps the full name")
  end},

  {"text fits the given terminal width; without one nothing is cut", function()
    local names, counts = {}, {}
    for i = 1, 30 do
      names[i] = "kernel_" .. i .. "_" .. string.rep("x", 150)
      counts[i] = i * 1000
    end
    local t = nsl.table{{"count", counts}, {"total_ns", counts}, {"kernel", names}}
    for _, width in ipairs{60, 100, 200} do
      for _, line in ipairs(lines_of(report.text(t, {width = width}))) do
        T.ok(utf8.len(line) <= width, string.format("width %d: a line of %d", width, utf8.len(line)))
      end
    end
    local wide = report.text(t)
    T.ok(wide:find(names[30], 1, true), "no width: the whole name")
    -- prose: wrapped at spaces, line breaks kept, a longer word whole
    T.eq(report.wrap("aa bb cc dd\nee " .. string.rep("x", 12), 5), "aa bb\ncc dd\nee\n" .. string.rep("x", 12), "wrap")
  end},

  {"HTML: the first rows, and all of them a click away", function()
    local n = 120
    local v = {}
    for i = 1, n do v[i] = i end
    local t = nsl.table{{"i", v}}
    local h = report.html(t, {limit = 10, title = "T"})
    local _, trs = h:gsub("<tr>", "")
    T.eq(trs, 2 + 10 + n, "header rows + 10 shown + all in the details")
    T.ok(h:find("<details", 1, true) and h:find("all 120 rows", 1, true), "details with the count")
    local small = report.html(t:head(5), {limit = 10})
    T.ok(not small:find("<details", 1, true), "a short table has no details")
    local capped = report.html(t, {limit = 10, full_limit = 50})
    local _, ctrs = capped:gsub("<tr>", "")
    T.eq(ctrs, 2 + 10 + 50, "the details stop at full_limit")
  end},

  {"same_unit: columns of one quantity share one unit (µs beside ms is refused)", function()
    local t = nsl.table{{"wait caused (ns)", {1500, 2500, 900}}, {"wait suffered (ns)", {2500000, 4000000, 3000000}}}
    local apart = report.text(t, {})
    T.ok(apart:find("wait caused (µs)", 1, true) and apart:find("wait suffered (ms)", 1, true), "apart: " .. apart)
    local one = report.text(t, {same_unit = {{"wait caused (ns)", "wait suffered (ns)"}}})
    -- the unit of the median magnitude over both columns (2,500 ns: µs)
    T.ok(one:find("wait caused (µs)", 1, true) and one:find("wait suffered (µs)", 1, true), "shared: " .. one)
    T.ok(one:find(" 1.500 ", 1, true) and one:find(" 2,500.000", 1, true), "values in µs: " .. one)
  end},

  {"diff: a name only in the after run has change % NULL and status new (SQL oracle)", function()
    local src = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"
    local before = T.data(src)
    local after = T.copy(src)
    -- one kernel launch gets a name no kernel of the before run has
    local row = T.sql(before, "SELECT rowid, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1")[1]
    T.sql_exec(after, string.format([[INSERT INTO StringIds(id, value) VALUES (987654321, 'brand_new_kernel');
      UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 987654321, shortName = 987654321 WHERE rowid = %s;]], row[1]))
    local tables = T.run_analysis("diff", {before, after}, {"by=instance"})   -- every instance, not the steady steps
    local k = tables.kernels
    local found
    for i = 1, #k do if k.name[i] == "brand_new_kernel" then found = i end end
    T.ok(found, "the new name is listed")
    T.eq(k:col("change (%)")[found], nil, "change % of a new name is NULL")
    T.eq(k.status[found], "new", "status new")
    T.eq(k:col("total after (ns)")[found], math.tointeger(tonumber(row[2])), "its time (SQL)")
    T.eq(k:col("count before")[found], 0, "no instance before")
    local doc = assert(json.decode(report.json(k)))
    T.eq(doc[found]["change (%)"], json.null, "JSON null, not inf")
    os.remove(after)
  end},

  {"REPL completion after a method call, without running it", function()
    local repl = require("nsl.engine.repl")
    local trace = assert(nsl.open({T.data("nsys/tiny_2026.1.sqlite")}))
    local env = setmetatable({trace = trace, k = trace.kernels}, {__index = _G})
    local function has(list, x)
      for _, v in ipairs(list) do if v == x then return true end end
      return false
    end
    local c, off = repl.complete('k:group_by("device"):', env)
    T.ok(has(c, "agg") and has(c, "keys") and has(c, "ids"), "groups methods: " .. table.concat(c, " "))
    T.eq(off, #'k:group_by("device"):', "offset of the (empty) partial word")
    c = repl.complete('x = k:filter(k.dur:gt(0)):so', env)
    T.ok(has(c, "sort") and not has(c, "agg"), "table methods after filter(...): " .. table.concat(c, " "))
    c = repl.complete('trace.kernels:group_by("name"):agg{"n=count"}:he', env)
    T.ok(has(c, "head"), "after agg{...}: table methods: " .. table.concat(c, " "))
    c = repl.complete('k:nbytes():', env)
    T.eq(#c, 0, "nothing known after a method that returns a number")
    c = repl.complete('k.dur:gt(5):', env)
    T.ok(has(c, "count") and has(c, "gather"), "column methods after a comparison")
    c = repl.complete("k.", env)
    T.ok(has(c, "demangled") and has(c, "sort"), "columns and methods of a table")
  end},

  {"the input files in one line: all up to four, else the first two, the last and how many", function()
    local paths = {}
    for i = 1, 1024 do paths[i] = "run/rank" .. (i - 1) .. ".sqlite" end
    T.eq(report.files({}), "", "no file")
    T.eq(report.files({paths[1]}), "run/rank0.sqlite", "one file")
    T.eq(report.files({table.unpack(paths, 1, 4)}), table.concat({table.unpack(paths, 1, 4)}, ", "), "four: all")
    T.eq(report.files({table.unpack(paths, 1, 5)}), "run/rank0.sqlite, run/rank1.sqlite, …, run/rank4.sqlite (5 files)",
         "five: the first two, the last, the count")
    T.eq(report.files(paths), "run/rank0.sqlite, run/rank1.sqlite, …, run/rank1023.sqlite (1,024 files)",
         "1,024: one short line")
  end},
}
