-- lua/nsl/util/json.lua against SQLite's JSON parser (json_tree, json_valid, run
-- by the sqlite3 program) and RFC 8259 cases by hand.
local T = ...
local json = require("nsl.util.json")

-- Runs a query on an in-memory database through the sqlite3 program.
local function sqlite(query)
  local p = assert(io.popen("sqlite3 -separator '\31' -newline '\30' :memory: " .. T.shell_quote(query)))
  local text = p:read("a")
  p:close()
  local rows = {}
  for line in text:gmatch("([^\30]*)\30") do
    local row = {}
    for field in (line .. "\31"):gmatch("([^\31]*)\31") do row[#row + 1] = field end
    rows[#rows + 1] = row
  end
  return rows
end

local function sql_string(s) return "'" .. s:gsub("'", "''") .. "'" end

-- The depth-first walk of a decoded value as json_tree lists it: key, type, atom.
local function walk(v, key, out)
  local ty, atom
  if v == json.null then ty, atom = "null", ""
  elseif v == true then ty, atom = "true", "1"
  elseif v == false then ty, atom = "false", "0"
  elseif math.type(v) == "integer" then ty, atom = "integer", tostring(v)
  elseif type(v) == "number" then ty, atom = "real", v
  elseif type(v) == "string" then ty, atom = "text", v
  elseif json.is_object(v) then ty, atom = "object", ""
  else ty, atom = "array", "" end
  out[#out + 1] = {key, ty, atom}
  if ty == "object" then
    for _, k in ipairs(json.keys(v)) do walk(v[k], k, out) end
  elseif ty == "array" then
    for i = 1, #v do walk(v[i], tostring(i - 1), out) end
  end
  return out
end

local documents = {
  '{"a": [1, 2.5, "x\\u00e9"], "b c": {"d": null, "e": true, "f": false}}',
  '[]', '{}', '"plain"', '0', '-12', '3.25e-3', '1E+2', 'true', 'null',
  '{"z": 1, "a": 2, "m": {"y": [], "b": {}}}',
  '{"vllm": {"llama": {"gemm|nvjet": "gemm", "flash|fmha": "attn", ".*": "misc"}}}',
  '["\\"quoted\\"", "back\\\\slash", "tab\\there", "\\/", "\\ud83d\\ude00", "\\u0041\\u00DF"]',
  ' \t\n\r[ 1 , [ 2 , [ 3 ] ] ]\n ',
  '{"nested": [{"a": [{"b": [null]}]}]}',
}

return {
  {"decoding agrees with SQLite's json_tree", function()
    for _, doc in ipairs(documents) do
      local v, err = json.decode(doc)
      T.ok(v ~= nil, "decodes " .. doc .. (err and (": " .. err) or ""))
      local got = walk(v, "", {})
      local want = sqlite("SELECT key, type, atom FROM json_tree(" .. sql_string(doc) .. ")")
      T.eq(#got, #want, "nodes of " .. doc)
      for i, w in ipairs(want) do
        local g = got[i]
        T.eq(g[2], w[2], doc .. " node " .. i .. " type")
        if i > 1 then T.eq(tostring(g[1]), w[1], doc .. " node " .. i .. " key") end
        if w[2] == "real" then T.near(g[3], tonumber(w[3]), 1e-15, doc .. " node " .. i .. " value")
        else T.eq(g[3], w[3], doc .. " node " .. i .. " value") end
      end
    end
  end},

  {"invalid texts: refused as SQLite's json_valid refuses them, with a position", function()
    local bad = {'', ' ', '[1,]', '{"a":1,}', '01', '1.', '.5', '-', '1e', '+1', '"\\x"', '[1] 2', "{'a':1}",
                 '"a\nb"', 'nul', 'True', '{"a" 1}', '{1: 2}', '[1 2]', '"\\u12"', '"unterminated', '[',
                 '{"a":', '\0'}
    for _, text in ipairs(bad) do
      local v, err = json.decode(text)
      T.eq(v, nil, "refuses " .. string.format("%q", text))
      T.ok(err and err:find("^line %d+, column %d+: "), "message with a position for " .. string.format("%q", text))
      if not text:find("%z") then
        T.eq(sqlite("SELECT json_valid(" .. sql_string(text) .. ")")[1][1], "0", "SQLite refuses " .. text)
      end
    end
    local _, err = json.decode('{\n  "a": 1,\n  "b" 2\n}')
    T.eq(err, "line 3, column 7: ':' expected after an object key", "line and column")
  end},

  {"RFC details: duplicates, numbers, null, surrogates, BOM, depth", function()
    local v = assert(json.decode('{"b": 1, "a": 2, "b": 3}'))
    T.eq(table.concat(json.keys(v), ","), "b,a", "a repeated key keeps its first place")
    T.eq(v.b, 3, "and its last value (as Python's json)")
    v = assert(json.decode('[12345678901234567890, 9007199254740993, -0, 1e400, 0.1]'))
    T.eq(math.type(v[1]), "float", "beyond int64: a float")
    T.eq(v[2], 9007199254740993, "int64 integers stay exact")
    T.eq(math.type(v[3]), "integer", "-0 is an integer")
    T.eq(v[4], math.huge, "overflow to infinity")
    T.eq(v[5], 0.1, "0.1")
    v = assert(json.decode('{"x": null}'))
    T.eq(v.x, json.null, "null is json.null")
    T.eq(tostring(json.null), "null", "json.null prints as null")
    T.eq(json.decode('"\\ud83d\\ude00"'), "\240\159\152\128", "surrogate pair to UTF-8")
    T.eq(json.decode('"\\ud83d"'), "\239\191\189", "lone surrogate becomes U+FFFD")
    T.eq(json.decode('\239\187\191[1]')[1], 1, "a UTF-8 byte-order mark is skipped")
    T.ok(json.decode(string.rep("[", 500) .. string.rep("]", 500)), "500 levels")
    local _, err = json.decode(string.rep("[", 501) .. string.rep("]", 501))
    T.ok(err:find("nested deeper than 500 levels", 1, true), err)
    T.ok(json.is_object(json.decode("{}")) and json.is_array(json.decode("[]")), "empty object vs array")
    T.eq(select(2, json.decode(42)), "JSON text must be a string", "not a string")
  end},

  {"read_file names the file", function()
    local v, err = json.read_file("/nonexistent/map.json")
    T.eq(v, nil, "missing file")
    T.ok(err:find("cannot open '/nonexistent/map.json'", 1, true), err)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write('{"a": [1, 2}')
    f:close()
    v, err = json.read_file(path)
    os.remove(path)
    T.eq(v, nil, "bad file")
    T.ok(err:find(path .. ": not valid JSON: line 1, column 12", 1, true), err)
  end},

  {"read_file reads regular files of bounded size only (maps, configs): no /dev/zero, no FIFO", function()
    local nsl = require("nsl")
    local dir = assert(nsl.mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/nsl-test-json-"))
    local v, err = json.read_file("/dev/zero")
    T.eq(v, nil, "/dev/zero")
    T.eq(err, "cannot open '/dev/zero': it is a character device, not a regular file", "/dev/zero refused")
    assert(os.execute("mkfifo " .. T.shell_quote(dir .. "/fifo.json")))
    v, err = json.read_file(dir .. "/fifo.json")   -- opening it would block for a writer
    T.eq(err, "cannot open '" .. dir .. "/fifo.json': it is a FIFO, not a regular file", "FIFO refused")
    local f = assert(io.open(dir .. "/big.json", "wb"))
    f:write('["', string.rep("x", 100), '"]')
    f:close()
    v, err = json.read_file(dir .. "/big.json", 100)
    T.eq(v, nil, "over the limit")
    T.eq(err, "cannot read '" .. dir .. "/big.json': 104 bytes, above the limit of 100", "limit named")
    T.eq(json.read_file(dir .. "/big.json", 104)[1], string.rep("x", 100), "at the limit: read")
    nsl.rmtree(dir)
  end},
}
