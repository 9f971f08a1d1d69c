-- nsl.plot.flame -- flame graphs: frames from stacks or folded text, drawn
-- as PNG or SVG, and the interactive SVG (click to zoom, search, details on
-- hover).  Use them through nsl.plot.
local nsl = require("nsl")
local F = require("nsl.plot.figure")

local M = {}

local max = math.max
local fmt = string.format
local INK, MUTED, BG, fit_text, figure = F.INK, F.MUTED, F.BG, F.fit_text, F.figure

-- ---- flame graphs -------------------------------------------------------------------------

--- plot.stack_frames(stacks, weights [, root]) -> frames for plot.flamegraph
-- from root-first stacks ("a;b;c", an array or string column) and their
-- weights (samples, ns; array or column): {name = {...}, depth = {...}, x =
-- {...}, width = {...}, total = N}, one frame per distinct stack prefix,
-- children in name order (as flamegraph.pl draws them).  root (default
-- "all"; false: none) is a frame at depth 0 spanning everything.  Stacks
-- with a NULL, negative or non-number weight are counted in skipped.
function M.stack_frames(stacks, weights, root)
  if root == nil then root = "all" end
  local st = nsl.type(stacks) == "column" and stacks:totable() or stacks or {}
  local wt = nsl.type(weights) == "column" and weights:totable() or weights or {}
  local top = {children = {}, value = 0}
  local skipped = 0
  for i = 1, #st do
    local stack, n = st[i], tonumber(wt[i])
    if type(stack) ~= "string" or not n or n < 0 then
      skipped = skipped + 1
    else
      top.value = top.value + n
      local node = top
      for name in (stack .. ";"):gmatch("([^;]*);") do
        local child = node.children[name]
        if not child then
          child = {name = name, children = {}, value = 0}
          node.children[name] = child
        end
        child.value = child.value + n
        node = child
      end
    end
  end
  local fr = {name = {}, depth = {}, x = {}, width = {}, total = top.value, skipped = skipped}
  local function emit(node, depth, x)
    local k = #fr.name + 1
    fr.name[k], fr.depth[k], fr.x[k], fr.width[k] = node.name, depth, x, node.value
  end
  local function walk(node, depth, x)
    local names = {}
    for name in pairs(node.children) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local child = node.children[name]
      emit(child, depth, x)
      walk(child, depth + 1, x)
      x = x + child.value
    end
  end
  if root then
    top.name = root
    emit(top, 0, 0)
    walk(top, 1, 0)
  else
    walk(top, 0, 0)
  end
  return fr
end

--- plot.folded_frames(text [, root]) -> frames from folded stacks ("a;b;c
-- 12" per line, the format of flamegraph.pl and nsys-jax), as
-- plot.stack_frames; lines that do not parse are counted in skipped.
function M.folded_frames(text, root)
  local stacks, weights, bad = {}, {}, 0
  for line in text:gmatch("[^\r\n]+") do
    local stack, n = line:match("^(.-)%s+(%d+%.?%d*)%s*$")
    if stack and tonumber(n) then
      stacks[#stacks + 1], weights[#weights + 1] = stack, tonumber(n)
    elseif line:match("%S") then
      bad = bad + 1
    end
  end
  local fr = M.stack_frames(stacks, weights, root)
  fr.skipped = fr.skipped + bad
  return fr
end

--- Frames as arrays from any input plot.flamegraph takes: folded text; a
-- table with stack and weight (an nsl table or arrays: the folded stacks
-- the flamegraph analysis makes); or frames {name, depth, x, width [,
-- total]} (arrays, columns or an nsl table).
local function frame_arrays(frames)
  if type(frames) == "string" then frames = M.folded_frames(frames) end
  local is_table = nsl.type(frames) == "table"
  if (is_table and frames:coltype("stack")) or (not is_table and frames.stack) then
    frames = M.stack_frames(frames.stack, frames.weight or frames.count)
  end
  local function arr(v) return nsl.type(v) == "column" and v:totable() or v or {} end
  local fr = {name = arr(frames.name), depth = arr(frames.depth), x = arr(frames.x), width = arr(frames.width)}
  local n = #fr.name
  if #fr.depth ~= n or #fr.x ~= n or #fr.width ~= n then
    error(fmt("plot.flamegraph: frames need name, depth, x and width of one length (%d, %d, %d, %d)", n, #fr.depth,
              #fr.x, #fr.width), 3)
  end
  local total, maxd = 0, 0
  for i = 1, n do
    total = max(total, fr.x[i] + fr.width[i])
    maxd = max(maxd, fr.depth[i])
  end
  fr.total = not nsl.type(frames) and frames.total or total
  if not fr.total or fr.total <= 0 then fr.total = total end
  fr.n, fr.max_depth = n, maxd
  return fr
end

-- FNV-1a hash of a name, for a stable colour.
local function name_hash(s)
  local h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff end
  return h
end

--- Light colour-blind-safe hues (black text stays readable on them).
local FLAME_COLORS = {}
for i = 8, 14 do FLAME_COLORS[#FLAME_COLORS + 1] = nsl.palette(i) end
local function frame_color(name)
  return name_hash(name:match("^[^`!:%(]*") or name) % #FLAME_COLORS
end

--- Geometry shared by both flame graph renderers.
local function flame_layout(fr, opts, interactive)
  local fs = opts.font_size or 12
  local rowh = opts.row_height or fs + 5
  local header = (opts.title ~= false and fs + 22 or 8) + (interactive and fs + 6 or 0)
  local height = opts.height or header + (fr.max_depth + 1) * rowh + fs + 20
  local width = opts.width or 1200
  return fs, rowh, header, height, width
end

local function flame_title(fr, opts)
  if opts.title == false then return nil end
  return opts.title or "Flame graph"
end

--- plot.flamegraph(frames, opts) -> canvas, data: a flame graph (PNG or
-- SVG) of frames {name, depth, x, width [, total]} (arrays, columns or an
-- nsl table; x and width in samples or ns, depth 0 at the bottom), of
-- folded stacks (an nsl table or arrays {stack, weight}, or the folded
-- text; see plot.stack_frames).  opts.icicle draws depth 0 at the top;
-- opts.unit ("number", "ns", "bytes") formats values in tooltips; frames
-- narrower than opts.min_width px (0.1) are left out; opts.interactive
-- with format "svg" gives plot.flamegraph_svg.  data: {frames, drawn,
-- labelled, total, max_depth}.
function M.flamegraph(frames, opts)
  opts = opts or {}
  if opts.interactive and opts.format == "svg" then return M.flamegraph_svg(frames, opts) end
  local fr = frame_arrays(frames)
  local fs, rowh, header, height, width = flame_layout(fr, opts, false)
  local f = figure({width = width, height = height, format = opts.format, title = flame_title(fr, opts),
                    font_size = fs}, width, height)
  local left, right = 10, width - 10
  local scale = (right - left) / max(fr.total, 1e-300)
  local minw = opts.min_width or 0.1
  local bottom = height - fs - 14
  local function row_top(d)
    if opts.icicle then return header + d * rowh end
    return bottom - (d + 1) * rowh
  end
  local x0, x1, y0, y1, col = {}, {}, {}, {}, {}
  local keep = {}
  for i = 1, fr.n do
    local w = fr.width[i] * scale
    if w >= minw then
      local k = #x0 + 1
      x0[k] = left + fr.x[i] * scale
      x1[k] = x0[k] + w
      y0[k] = row_top(fr.depth[i])
      y1[k] = y0[k] + rowh - 1
      col[k] = frame_color(fr.name[i])
      keep[k] = i
    end
  end
  f.cv:rects(x0, x1, y0, y1, col, {colors = FLAME_COLORS, stroke = BG, line_width = 0.5})
  local labelled = 0
  for k, i in ipairs(keep) do
    local w = x1[k] - x0[k]
    if w > 3 * fs * 0.6 then
      local s = fit_text(fr.name[i], w - 6, fs - 1)
      if s then
        f.cv:text(x0[k] + 3, y0[k] + (rowh - 1) / 2, s, {fill = INK, font_size = fs - 1, baseline = "middle"})
        labelled = labelled + 1
      end
    end
  end
  f:decorate()
  return f.cv, {frames = fr.n, drawn = #x0, labelled = labelled, total = fr.total, max_depth = fr.max_depth}
end

-- The script of the interactive flame graph: zoom on click, search by
-- regular expression (Ctrl-F or the Search button), hover details.  It
-- reads the layout back from the SVG itself (rect positions, <title>s),
-- so nothing else is embedded; no network access.
local FLAME_JS = [[
(function () {
  var me = document.currentScript;
  var root = (me && me.ownerSVGElement) || document.documentElement;
  var C = __CONFIG__;
  function $(id) { return root.querySelector('#' + C.prefix + id); }
  var details = $('details'), unzoomBtn = $('unzoom'), searchBtn = $('search'), matchedTxt = $('matched');
  var frames = [], zoomed = null, term = null;
  var gs = root.querySelectorAll('g.' + C.prefix + 'f');
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.querySelector('rect'), t = g.querySelector('text'), ti = g.querySelector('title');
    if (!t) {
      t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
      t.setAttribute('font-size', C.fs);
      t.setAttribute('fill', '#1a1a1a');
      t.setAttribute('y', +r.getAttribute('y') + C.rowh / 2 + C.fs * 0.35);
      g.appendChild(t);
    }
    var x = +r.getAttribute('x'), w = +r.getAttribute('width'), y = +r.getAttribute('y');
    var f = { g: g, r: r, t: t, x: x, w: w, info: ti ? ti.textContent : '',
              depth: Math.round(C.icicle ? (y - C.top) / C.rowh : (C.bottom - y) / C.rowh - 1) };
    var cut = f.info.lastIndexOf(' \u2014 ');   // "name — value (share)"
    f.name = cut >= 0 ? f.info.slice(0, cut) : f.info;
    frames.push(f);
    (function (f) {
      g.addEventListener('click', function () { zoom(f); });
      g.addEventListener('mouseover', function () { details.textContent = f.info; });
      g.addEventListener('mouseout', function () { details.textContent = ' '; });
    })(f);
  }
  function label(f, x, w) {
    var n = Math.floor((w - 6) / (C.fs * 0.6));
    var s = '';
    if (n >= 3) s = f.name.length <= n ? f.name : f.name.slice(0, n - 1) + '\u2026';
    f.t.textContent = s;
    f.t.setAttribute('x', x + 3);
  }
  function place(f, x, w, show, dim) {
    f.g.style.display = show ? '' : 'none';
    if (!show) return;
    f.r.setAttribute('x', x);
    f.r.setAttribute('width', Math.max(w, 0));
    f.g.style.opacity = dim ? 0.6 : '';
    label(f, x, w);
  }
  function zoom(z) {
    zoomed = z;
    var k = C.width / z.w, eps = 1e-6;
    frames.forEach(function (f) {
      var a = f.x, b = f.x + f.w;
      if (f.depth < z.depth) place(f, C.left, C.width, a <= z.x + eps && b >= z.x + z.w - eps, true);
      else if (b <= z.x + eps || a >= z.x + z.w - eps) place(f, 0, 0, false, false);
      else place(f, C.left + (a - z.x) * k, f.w * k, true, false);
    });
    unzoomBtn.style.display = '';
  }
  function unzoom() {
    zoomed = null;
    frames.forEach(function (f) { place(f, f.x, f.w, true, false); });
    unzoomBtn.style.display = 'none';
  }
  function search(t) {
    term = t;
    var re = null;
    if (t) { try { re = new RegExp(t); } catch (e) { alert('not a regular expression: ' + t); return; } }
    var spans = [];
    frames.forEach(function (f) {
      var m = re !== null && re.test(f.name);
      f.g.classList.toggle(C.prefix + 'hit', m);
      f.g.classList.toggle(C.prefix + 'miss', re !== null && !m);
      if (m) spans.push([f.x, f.x + f.w]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matchedTxt.textContent = re ? 'Matched: ' + (100 * covered / C.width).toFixed(1) + '%' : ' ';
    searchBtn.textContent = re ? 'Clear search' : 'Search';
  }
  function ask() {
    if (term) { search(null); return; }
    var t = prompt('Search frames (regular expression)', '');
    if (t) search(t);
  }
  unzoomBtn.addEventListener('click', unzoom);
  searchBtn.addEventListener('click', ask);
  document.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) { e.preventDefault(); term = null; ask(); }
    else if (e.key === 'Escape') { if (zoomed) unzoom(); else if (term) search(null); }
  });
  unzoomBtn.style.display = 'none';
})();
]]

--- plot.flamegraph_svg(frames, opts) -> canvas, data: the interactive SVG
-- flame graph, self-contained (inline CSS and JavaScript, no network):
-- click a frame to zoom to it (its ancestors stay, dimmed), "Reset zoom"
-- or Escape to go back; "Search" or Ctrl-F highlights frames whose name
-- matches a regular expression and shows the fraction of the total they
-- cover; hovering shows the frame's name, value and share at the bottom
-- (and a tooltip).  opts as plot.flamegraph, plus opts.id_prefix (default
-- "nslfg-") so several graphs can live in one HTML page.  data as
-- plot.flamegraph.
function M.flamegraph_svg(frames, opts)
  opts = opts or {}
  local fr = frame_arrays(frames)
  local fs, rowh, header, height, width = flame_layout(fr, opts, true)
  local prefix = opts.id_prefix or "nslfg-"
  if not prefix:match("^[%a_][%w_%-]*$") then error("plot.flamegraph_svg: id_prefix must be a CSS identifier", 2) end
  local cv = nsl.canvas("svg", width, height)
  cv:clear(BG)
  local left, right = 10, width - 10
  local scale = (right - left) / max(fr.total, 1e-300)
  local minw = opts.min_width or 0.1
  local bottom = height - fs - 14
  local top = header
  cv:svg_raw(fmt("<style>.%sf{cursor:pointer}.%sf:hover rect{stroke:#000000;stroke-width:1}" ..
                 ".%smiss{opacity:0.35}.%shit rect{stroke:#000000;stroke-width:2}" ..
                 ".%sbtn{cursor:pointer}.%sbtn:hover{text-decoration:underline}</style>",
                 prefix, prefix, prefix, prefix, prefix, prefix))
  local title = flame_title(fr, opts)
  if title then
    cv:text(width / 2, 8, fit_text(title, width - 20, fs + 3) or "", {fill = INK, font_size = fs + 3, bold = true,
                                                                       anchor = "middle", baseline = "top"})
  end
  local by = (title and fs + 16 or 6)
  cv:text(left, by, "Reset zoom", {fill = "#0072b2", font_size = fs, baseline = "top", id = prefix .. "unzoom",
                                   class = prefix .. "btn"})
  cv:text(right, by, "Search", {fill = "#0072b2", font_size = fs, baseline = "top", anchor = "end",
                                id = prefix .. "search", class = prefix .. "btn"})
  cv:text(right - 90, by, " ", {fill = MUTED, font_size = fs, baseline = "top", anchor = "end",
                                id = prefix .. "matched"})
  cv:text(left, height - 8, " ", {fill = INK, font_size = fs, baseline = "bottom", id = prefix .. "details"})
  local unit = opts.unit or "number"
  local drawn, labelled = 0, 0
  local cls = prefix .. "f"
  for i = 1, fr.n do
    local w = fr.width[i] * scale
    if w >= minw then
      local x = left + fr.x[i] * scale
      local y = opts.icicle and top + fr.depth[i] * rowh or bottom - (fr.depth[i] + 1) * rowh
      local share = 100 * fr.width[i] / max(fr.total, 1e-300)
      local wi = math.tointeger(fr.width[i])
      local value = unit ~= "number" and nsl.format_value(fr.width[i], unit, 4)
                    or (wi and require("nsl.report").int(wi) or fmt("%.4g", fr.width[i]))
      cv:group_begin({class = cls, title = fmt("%s \u{2014} %s (%.2f%%)", fr.name[i], value, share)})
      cv:rect(x, y, w, rowh - 1, {fill = FLAME_COLORS[frame_color(fr.name[i]) + 1], stroke = BG, line_width = 0.5})
      if w > 3 * fs * 0.6 then
        local s = fit_text(fr.name[i], w - 6, fs - 1)
        if s then
          cv:text(x + 3, y + (rowh - 1) / 2, s, {fill = INK, font_size = fs - 1, baseline = "middle"})
          labelled = labelled + 1
        end
      end
      cv:group_end()
      drawn = drawn + 1
    end
  end
  local config = fmt("{prefix:'%s',fs:%d,rowh:%d,left:%g,width:%g,top:%g,bottom:%g,icicle:%s}", prefix, fs - 1,
                     rowh, left, right - left, top, bottom, opts.icicle and "true" or "false")
  cv:svg_raw("<script type=\"text/ecmascript\"><![CDATA[" .. FLAME_JS:gsub("__CONFIG__", config) .. "]]></script>")
  return cv, {frames = fr.n, drawn = drawn, labelled = labelled, total = fr.total, max_depth = fr.max_depth}
end

return M
