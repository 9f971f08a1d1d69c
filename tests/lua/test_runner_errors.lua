-- Failures as the user sees them: a problem of the input (nsl.fail, a
-- source's error) is one line; a broken precondition of a C kernel or a Lua
-- error inside an analysis is a bug, reported with the analysis, the input,
-- whose bug it is and a traceback -- told apart by the error's kind, never by
-- its text.
local T = ...
local nsl = require("nsl")
local runner = require("nsl.engine.runner")

local tiny = T.data("nsys/tiny_2026.1.sqlite")

local function caught(fn)
  local ok, e = xpcall(fn, nsl.error_handler)
  assert(not ok, "did not fail")
  return e
end

local function kernel_refusal()
  local a = nsl.column{1, 2, 3}
  return nsl.overlap_sum(a, a, nsl.column{0}, a:gt(1))   -- groups shorter than the rest
end

return {
  {"a value the analysis rejects is a usage error (exit 2); other failures exit 1", function()
    local ok, e = pcall(nsl.fail, "--arg width: 200 to 16384 px", "usage")
    T.ok(not ok and nsl.is_error(e) and e.usage and not e.internal, "marked usage")
    T.eq(runner.exit_code(caught(function() nsl.fail("--arg x: bad", "usage") end)), 2, "usage: exit 2")
    T.eq(runner.exit_code(caught(function() nsl.fail("x.sqlite: no kernels") end)), 1, "input: exit 1")
    T.eq(runner.exit_code(caught(function() error("oops") end)), 1, "a bug: exit 1")
    ok, e = pcall(nsl.fail, "x", "nonsense")
    T.ok(not ok and not nsl.is_error(e), "an unknown kind is the caller's mistake")
  end},
  {"a kernel's refusal of its arguments is marked internal; nsl.fail and source errors are not", function()
    local ok, e = pcall(kernel_refusal)
    T.ok(not ok and nsl.is_error(e), "an nsl error")
    T.eq(e.internal, true, "marked internal")
    ok, e = pcall(nsl.fail, "x.sqlite: no kernels")
    T.ok(not ok and nsl.is_error(e) and not e.internal, "nsl.fail is the user's")
    -- a garbage Parquet member: the source's error is about the input
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute(string.format("mkdir -p %s && cd %s && mkdir -p nvtx_gpu_proj_trace && printf 'PAR1junk' > " ..
      "nvtx_gpu_proj_trace/trace.parquet && zip -q -r bad.zip nvtx_gpu_proj_trace", T.shell_quote(dir), T.shell_quote(dir))))
    local tr = assert(nsl.open(dir .. "/bad.zip"))
    ok, e = pcall(function() return #tr.gpu_ranges end)
    T.ok(not ok and nsl.is_error(e) and not e.internal, "a source's error is the input's")
    T.ok(tostring(e):find("trace.parquet", 1, true), "names the member")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},

  {"the runner: the user's error stays one line; a bug names analysis, input, whose bug, with a traceback", function()
    local shipped = {name = "jax_summary", shipped = true}
    local own = {name = "mine"}
    local user = caught(function() nsl.fail("x.zip: no XLA module ranges") end)
    T.eq(runner.failure(shipped, user, {"/data/x.zip"}), "x.zip: no XLA module ranges", "the user's error as it is")
    T.eq(runner.failure(shipped, user, {tiny}), tiny .. ": x.zip: no XLA module ranges",
         "led by the input where it names none")
    T.eq(runner.failure(shipped, caught(function() nsl.fail("--arg n: a number", "usage") end), {tiny}),
         "--arg n: a number", "a usage error as it is")
    for _, fn in ipairs{kernel_refusal, function() local t = nil; return t.x end} do
      local bug = caught(fn)
      local msg = runner.failure(shipped, bug, {tiny})
      T.ok(msg:find("internal error in analysis 'jax_summary' on " .. tiny, 1, true), "names analysis and input")
      T.ok(msg:find("bug in nsl", 1, true), "says it is a bug in nsl")
      T.ok(msg:find("stack traceback", 1, true), "carries the traceback")
      msg = runner.failure(own, bug, {tiny})
      T.ok(msg:find("error in script 'mine' on " .. tiny, 1, true) and not msg:find("bug in nsl", 1, true),
           "an own script's bug is the script's")
    end
    T.ok(runner.failure(shipped, caught(kernel_refusal), {tiny}):find("overlap_sum", 1, true), "the kernel's message")
  end},

  {"shipped analyses are marked shipped, scripts by path are not", function()
    T.eq(assert(runner.load_analysis("jax_summary")).shipped, true, "by name")
    local path = os.tmpname() .. ".lua"
    local f = assert(io.open(path, "w"))
    f:write("return {name = 'own', run = function() end}\n")
    f:close()
    T.ok(not assert(runner.load_analysis(path)).shipped, "by path")
    os.remove(path)
  end},
  {"a bug inside a nested run (diagnose's checks) is reported with its own message, not a table's address", function()
    local e = caught(function()
      local inner = caught(function() local x = nil; return x.field end)
      error(inner, 0)   -- what diagnose.run does with a check's bug
    end)
    T.ok(e.bug:find("attempt to index", 1, true), "the inner message: " .. tostring(e.bug))
    local msg = runner.failure({name = "diagnose", shipped = true}, e, {tiny})
    T.ok(not msg:find("table: 0x", 1, true), "no table address: " .. msg)
  end},

  {"every enumerated --arg of every analysis: a wrong value exits 2 naming the choices and the closest one", function()
    local nslbin = assert(os.getenv("NSL"))
    local tried = 0
    for _, entry in ipairs(runner.shipped()) do
      local a = assert(runner.load_analysis(entry.name))
      for k, spec in pairs(a.args) do
        if spec.choices then
          local good = spec.choices[#spec.choices]
          T.ok(runner.parse_args(a, {k .. "=" .. good}), entry.name .. " " .. k .. "=" .. good .. " is taken")
          -- a typo of a choice: refused, the choice suggested; the same exit code everywhere
          local typo = good:sub(1, -2)
          local cmd = string.format("%s run %s %s --arg %s=%s 2>&1; echo rc=$?", T.shell_quote(nslbin), entry.name,
                                    T.shell_quote(tiny), k, typo)
          local p = assert(io.popen(cmd))
          local text = p:read("a")
          p:close()
          T.ok(text:find("rc=2\n$"), entry.name .. " --arg " .. k .. "=" .. typo .. ": exit 2: " .. text)
          T.ok(text:find(table.concat(spec.choices, ", "), 1, true), entry.name .. " " .. k .. ": names the choices")
          T.ok(text:find("did you mean '" .. good .. "'", 1, true), entry.name .. " " .. k .. ": the closest: " .. text)
          tried = tried + 1
        end
      end
    end
    T.ok(tried >= 14, "enumerated arguments tried: " .. tried)
    -- the cases users met: summary --arg only=memory, nvtx --arg only=foo; a duplicate
    local s = assert(runner.load_analysis("summary"))
    T.eq(select(2, runner.parse_args(s, {"only=memory"})),
      "--arg only: 'memory' is not one of all, kernels, mem_time, mem_size, api (did you mean 'mem_time'?)", "only=memory")
    T.ok(runner.parse_args(s, {"only=kernels,api"}), "a comma list of choices")
    T.ok(not runner.parse_args(assert(runner.load_analysis("nvtx")), {"only=sum,foo"}), "nvtx only=sum,foo")
    T.ok(select(2, runner.parse_args(s, {"only=api", "only=kernels"})):find("given twice", 1, true), "a duplicate")
  end},

  {"the REPL: :run of an unknown name lists the shipped ones, a misspelled command is named", function()
    local repl = require("nsl.engine.repl")
    local text = repl.command(":run nope", {})
    T.ok(text:find("no analysis 'nope'", 1, true) and text:find(" summary ", 1, true), ":run nope: " .. text)
    T.ok(repl.command(":run sumary", {}):find("did you mean 'summary'", 1, true), ":run sumary")
    T.ok(repl.command(":rnu", {}):find("did you mean :run", 1, true), ":rnu")
  end},
}
