#!/usr/bin/env bash
# bench_figures.sh [N] -- what the analyses' figures cost (run on demand, never
# a test): on the sample export tiled N times (default 425, ~1 GB; made by
# make_tiled.sh when missing), each analysis that draws runs in one process
# after a first run has loaded its columns, best of 2, as
#   - a plain run (no output carries figures: nothing is drawn),
#   - a notebook cell (one figure format, inline),
#   - a run with --out DIR (PNG and SVG files; the tables' CSV and
#     results.json, which out:finish writes, are left out).
# CPU time (os.clock) per run and the figures' share of the plain run.
. "$(dirname "$0")/lib.sh"
n=${1:-425}
tiled_export "$n"

cat > "$work/bench_figures.lua" <<'LUA'
return {
  name = "bench_figures",
  args = {analyses = {default = "iterations,overlap,gaps,launch,flamegraph"},
          dir = {default = "", help = "the --out folder of the third kind of run"}},
  run = function(trace, args)
    local runner, output = require("nsl.engine.runner"), require("nsl.engine.output")
    for name in args.analyses:gmatch("[^,]+") do
      local a = assert(runner.load_analysis(name))
      local parsed = assert(runner.parse_args(a, {}))
      local function once(o)
        collectgarbage()
        local out = output.new{analysis = name, format = o.format, dir = o.dir, trace = trace}
        local c0 = os.clock()
        a.run(trace, parsed, out)
        return os.clock() - c0
      end
      once{format = "bench"}   -- loads the columns
      local plain, cell, dir = math.huge, math.huge, math.huge
      for _ = 1, 2 do
        plain = math.min(plain, once{format = "bench"})
        cell = math.min(cell, once{format = "notebook"})
        dir = math.min(dir, once{format = "bench", dir = args.dir .. "/" .. name})
      end
      io.write(string.format("%-11s plain %6.3f s CPU; notebook cell %6.3f s (%+5.1f %%); --out PNG+SVG %6.3f s " ..
                             "(%+5.1f %%)\n", name, plain, cell, (cell - plain) * 100 / plain, dir,
                             (dir - plain) * 100 / plain))
      io.stdout:flush()
    end
  end,
}
LUA
echo "file: $big ($(stat -c %s "$big") bytes)"
/usr/bin/time -f "total: %e s wall, %M KiB peak RSS" "$nsl" run "$work/bench_figures.lua" "$big" \
  --arg dir="$work/figures" 2> >(grep -v "use --out DIR" >&2)
