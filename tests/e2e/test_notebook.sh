#!/usr/bin/env bash
# Notebooks: the shipped analysis notebook renders to one self-contained HTML
# file that headless Chromium (networking off) loads without console errors
# and shows (a screenshot that is not blank); a failing cell is shown and the
# run goes on; --stop-on-error stops; the .ipynb output is nbformat 4 JSON.
. "$(dirname "$0")/lib.sh"
sample="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
nb="$NSL_SOURCE_DIR/notebooks/analysis.md"

"$NSL" notebook "$nb" "$sample" -o "$TMP/analysis.html" 2> "$TMP/nb.err"
check_eq "analysis.md renders (exit code)" "$?" 0
[ -s "$TMP/analysis.html" ] && ok "HTML written" || bad "no HTML"
grep -q '<nav class="toc">' "$TMP/analysis.html" && ok "table of contents" || bad "no table of contents"
grep -q 'CUDA GPU Kernel Summary' "$TMP/analysis.html" && ok "summary tables inside" || bad "summary missing"
first=$(grep -o '<h2[^>]*>[^<]*' "$TMP/analysis.html" | head -1 | sed 's/.*>//')
check_eq "the notebook opens with the verdict" "$first" "Verdict"
"$NSL" run diagnose "$sample" --format json | python3 -c 'import json, sys
print(json.load(sys.stdin)["findings"][0]["id"])' > "$TMP/first_id.txt"
verdict=$(awk '/<h2[^>]*>Verdict/ { on = 1 } on && /<h2[^>]*>Overview/ { exit } on' "$TMP/analysis.html")
echo "$verdict" | grep -q -- "$(cat "$TMP/first_id.txt")" && ok "the verdict leads with diagnose's first finding" ||
  bad "no '$(cat "$TMP/first_id.txt")' in the verdict section"
if grep -q -E '(src|href)="(https?:)?//' "$TMP/analysis.html"; then bad "refers to the network"; else ok "self-contained"; fi
"$NSL" notebook analysis "$sample" -o "$TMP/by-name.html" 2> /dev/null
cmp -s "$TMP/analysis.html" "$TMP/by-name.html" && ok "shipped notebook by name" || bad "by name differs from the file"

# On a bundle: the same notebook renders with the same tables.
"$NSL" bundle "$sample" -o "$TMP/sample.zip" > /dev/null 2>&1 && ok "bundle made" || bad "nsl bundle failed"
"$NSL" notebook "$nb" "$TMP/sample.zip" -o "$TMP/bundle.html" 2> /dev/null
check_eq "analysis.md renders on a bundle (exit code)" "$?" 0
grep -q 'CUDA GPU Kernel Summary' "$TMP/bundle.html" && ok "bundle report has the summary" || bad "bundle report lacks the summary"

# On an nsys-jax archive every section recognises the JAX trace: no cell fails,
# none asks for a CUDA trace, the JAX counterparts' tables are there.
"$NSL" notebook analysis "$NSL_DATA_DIR/nsys-jax/pax_fsdp4_4proc_proc0.zip" -o "$TMP/jax.html" 2> "$TMP/jax.err"
check_eq "analysis.md renders on an nsys-jax archive (exit code)" "$?" 0
grep -q "cell(s) failed" "$TMP/jax.err" && bad "cells failed on the archive: $(cat "$TMP/jax.err")" || ok "no cell failed on the archive"
grep -q -e "-t cuda" -e "cuda-memory-usage" "$TMP/jax.html" && bad "advice for a CUDA trace on an archive" || ok "no CUDA advice"
grep -q "MODULE EXECUTION SUMMARY" "$TMP/jax.html" && ok "jax summary inside" || bad "jax summary missing"
grep -q "Heap-simulator peaks" "$TMP/jax.html" && ok "heap section shows jax_heap" || bad "jax_heap missing"
grep -q "pjit__wrapped_step_fn" "$TMP/jax.html" && ok "step program named" || bad "no step program"

# A failing cell is shown, the next cell still runs.
cat > "$TMP/fail.md" <<'MD'
# Failing cell

```lua
error("planned-failure-42")
```

```lua
print("after-the-failure", #trace.kernels)
```
MD
"$NSL" notebook "$TMP/fail.md" "$sample" -o "$TMP/fail.html" 2> "$TMP/fail.err"
check_eq "a failing cell does not fail the run" "$?" 0
grep -q "fail.md:4: planned-failure-42" "$TMP/fail.html" && ok "error shown with its notebook line" || bad "error not shown"
grep -q "<pre class=\"output\">after-the-failure" "$TMP/fail.html" && ok "later cells run" || bad "later cell did not run"
grep -q "1 cell(s) failed" "$TMP/fail.err" && ok "failure reported on stderr" || bad "no stderr note"
"$NSL" notebook "$TMP/fail.md" "$sample" -o "$TMP/stop.html" --stop-on-error 2> /dev/null
check_eq "--stop-on-error exit code" "$?" 1
grep -q "<pre class=\"output\">after-the-failure" "$TMP/stop.html" && bad "--stop-on-error ran the next cell" || ok "--stop-on-error stops"

# show(canvas) displays the figure; so does a last line that draws one (not
# the data the plot function returns beside it); an analysis that lacks its
# data says so in a note and the notebook goes on.
cat > "$TMP/show.md" <<'MD'
# Figures in cells

```lua
local plot = require("nsl.plot")
show(plot.histogram(trace.kernels.dur, {log = true, unit = "ns"}))
```

```lua
require("nsl.plot").cdf({{label = "kernels", values = trace.kernels.dur}}, {log = true, format = "svg"})
```

```lua
run("heap")
run("nvtx")
print("after-the-note")
```
MD
"$NSL" notebook "$TMP/show.md" "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" -o "$TMP/show.html" 2> "$TMP/show.err"
check_eq "figures in cells: exit code" "$?" 0
check_eq "show(plot.histogram(...)) is an inline PNG" "$(grep -c '<img alt="figure" src="data:image/png;base64,' "$TMP/show.html")" 1
check_eq "a last line that draws shows the SVG figure" "$(grep -c '<div class="figure"><svg' "$TMP/show.html")" 1
grep -q 'canvas&lt;\|canvas<\|edges' "$TMP/show.html" && bad "a canvas or its data printed as text" || ok "no canvas printed as text"
check_eq "the trace has no NVTX ranges (SQL)" "$(count_or_zero "$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite" NVTX_EVENTS)" 0
grep -q '<p class="note">nvtx: .*no NVTX ranges' "$TMP/show.html" && ok "missing data: a one-line note" ||
  bad "no note for the missing NVTX ranges"
grep -q "<pre class=\"output\">after-the-note" "$TMP/show.html" && ok "the cell goes on after the note" ||
  bad "the cell stopped at the note"
[ -s "$TMP/show.err" ] && bad "a note counted as a failed cell: $(cat "$TMP/show.err")" || ok "a note is not a failure"

# Jupyter output: nbformat 4 JSON with outputs filled in (checked by Python's json module).
"$NSL" notebook "$TMP/fail.md" "$sample" -o "$TMP/fail.ipynb" 2> /dev/null
if python3 - "$TMP/fail.ipynb" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
assert nb["nbformat"] == 4 and nb["nbformat_minor"] >= 4, "nbformat"
assert isinstance(nb["metadata"], dict)
for c in nb["cells"]:
    assert c["cell_type"] in ("markdown", "code") and isinstance(c["source"], list) and isinstance(c["metadata"], dict)
    if c["cell_type"] == "code":
        assert "outputs" in c and "execution_count" in c
        for o in c["outputs"]:
            assert o["output_type"] in ("stream", "display_data", "execute_result", "error")
codes = [c for c in nb["cells"] if c["cell_type"] == "code"]
assert codes[0]["outputs"][-1]["output_type"] == "error"
assert "after-the-failure" in "".join(codes[1]["outputs"][0]["text"])
PY
then ok ".ipynb is nbformat 4 with outputs"; else bad ".ipynb invalid"; fi

# A real browser: headless Chromium, networking off (run_browser, console_clean: lib.sh).
if [ -z "$BROWSER" ]; then bad "chromium is missing (scripts/install-deps.sh installs it)"; finish; exit 1; fi
run_browser --window-size=1200,1600 --screenshot="$TMP/shot.png" "file://$TMP/analysis.html" \
  > "$TMP/chrome.out" 2> "$TMP/chrome.err"
[ -f "$TMP/shot.png" ] && ok "screenshot taken" || bad "no screenshot: $(tail -3 "$TMP/chrome.err")"
# A blank 1200x1600 page compresses to a few KB; text and tables make it far larger.
size=$(stat -c %s "$TMP/shot.png" 2> /dev/null || echo 0)
[ "$size" -gt 30000 ] && ok "screenshot is not blank ($size bytes)" || bad "screenshot looks blank ($size bytes)"
console_clean "$TMP/chrome.err" "the page"
run_browser --dump-dom "file://$TMP/analysis.html" > "$TMP/dom.html" 2> /dev/null
grep -q "CUDA GPU Kernel Summary" "$TMP/dom.html" && ok "the browser's DOM has the tables" || bad "DOM lacks the tables"

# Figures, as the browser draws them: a copy of the page gets a script that,
# once every image has loaded, lists per section (h2) each figure's drawn size
# and distinct colours (PNG: pixels read back from a canvas; SVG: its shapes),
# the one-line notes and the text lines; --dump-dom brings the list back.
figures_in_browser() { # figures_in_browser PAGE.html OUT.json
  sed 's#</body></html>##' "$1" > "$1.check.html"
  cat >> "$1.check.html" <<'JS'
<script>
window.addEventListener('load', function () {
  var out = [], cur = null;
  function colours(img) {
    var c = document.createElement('canvas'), w = img.naturalWidth, h = img.naturalHeight;
    c.width = w; c.height = h;
    var g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    var d = g.getImageData(0, 0, w, h).data, seen = {}, n = 0;
    for (var i = 0; i < d.length; i += 4) {
      var k = d[i] + ',' + d[i + 1] + ',' + d[i + 2];
      if (!seen[k]) { seen[k] = 1; n++; }
    }
    return n;
  }
  var all = document.body.querySelectorAll('h2, div.figure > img, div.figure > svg, p.note, pre.output, pre.error, ' +
                                            'div.table');
  for (var i = 0; i < all.length; i++) {
    var e = all[i], t = e.tagName.toLowerCase();
    if (t === 'h2') { cur = {id: e.id, figures: [], notes: 0, lines: 0, errors: 0, tables: 0}; out.push(cur); continue; }
    if (!cur) continue;
    if (t === 'img') {
      cur.figures.push({kind: 'png', w: e.naturalWidth, h: e.naturalHeight, colours: e.naturalWidth ? colours(e) : 0});
    } else if (t === 'svg') {
      var r = e.getBoundingClientRect();
      cur.figures.push({kind: 'svg', w: Math.round(r.width), h: Math.round(r.height),
                        colours: e.querySelectorAll('rect, path, polyline, line').length});
    } else if (t === 'p') cur.notes++;
    else if (t === 'div') cur.tables++;
    else if (e.className === 'error') cur.errors++;
    else cur.lines += e.textContent.trim().split('\n').length;
  }
  // every resource the page fetched that is not inline data: none expected
  var fetched = performance.getEntriesByType('resource').map(function (r) { return r.name; })
                .filter(function (u) { return u.indexOf('data:') !== 0; });
  out.push({id: '(fetched)', figures: [], notes: 0, lines: 0, errors: 0, tables: 0, fetched: fetched});
  var p = document.createElement('pre');
  p.id = 'nsl-figures';
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
});
</script>
</body></html>
JS
  run_browser --virtual-time-budget=20000 --dump-dom "file://$1.check.html" > "$1.dom" 2> "$1.console"
  python3 - "$1.dom" > "$2" <<'PY'
import html, json, re, sys
m = re.search(r'<pre id="nsl-figures">(.*?)</pre>', open(sys.argv[1]).read(), re.S)
print(html.unescape(m.group(1)) if m else "[]")
PY
}
# check_sections OUT.json WHAT FIGURE_SECTIONS... : every figure drawn anywhere
# is not blank (>= 8 colours or shapes, non-zero size); the page fetched
# nothing (the browser's resource timing); each section named
# with a "+" has at least one such figure; each named with "-" has neither
# figure nor table and says why in a line per analysis (a note or a line of
# text; at most 2); "?" is either; no section failed.
check_sections() {
  local json=$1 what=$2
  shift 2
  if python3 - "$json" "$@" > "$TMP/sections.txt" <<'PY'
import json, sys
sections = {s["id"]: s for s in json.load(open(sys.argv[1]))}
bad = []
fetched = sections.pop("(fetched)", {"fetched": ["(the browser reported nothing)"]})["fetched"]
if fetched: bad.append("the page fetched " + ", ".join(fetched[:3]))
if not sections: bad.append("the browser reported no sections")
for s in sections.values():
    for f in s["figures"]:
        if f["w"] <= 0 or f["h"] <= 0 or f["colours"] < 8:
            bad.append("%s: a blank %s figure (%dx%d, %d colours)" % (s["id"], f["kind"], f["w"], f["h"], f["colours"]))
    if s["errors"]: bad.append("%s: %d failed cell(s)" % (s["id"], s["errors"]))
for spec in sys.argv[2:]:
    want, sid = spec[0], spec[1:]
    s = sections.get(sid)
    if s is None: bad.append("no section " + sid); continue
    has_figure = len(s["figures"]) > 0
    says_why = not s["figures"] and s["tables"] == 0 and 1 <= s["notes"] + s["lines"] <= 2
    if (want == "+" and not has_figure) or (want == "-" and not says_why) or \
       (want == "?" and not (has_figure or says_why)):
        bad.append("%s (%s): %d figures, %d tables, %d notes, %d lines" %
                   (sid, want, len(s["figures"]), s["tables"], s["notes"], s["lines"]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  then ok "$what: figures per section ($*)"; else bad "$what: $(head -5 "$TMP/sections.txt" | tr '\n' ';')"; fi
}

# The NCCL export: a figure in every section that promises one; it has no
# device-memory events (SQL), so that section says so in one line.
check_eq "the sample has no device-memory events (SQL)" \
  "$(count_or_zero "$sample" CUDA_GPU_MEMORY_USAGE_EVENTS)" 0
check_eq "the sample has NCCL kernels on 2 devices (SQL)" "$(sql "$sample" "SELECT count(DISTINCT k.deviceId)
  FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%'")" 2
figures_in_browser "$TMP/analysis.html" "$TMP/figures.json"
console_clean "$TMP/analysis.html.console" "figures page"
check_sections "$TMP/figures.json" "NCCL export" +iterations +nccl-and-overlap +idle-gaps +launch-costs \
  +flame-graph -device-memory +stragglers
n=$(python3 -c 'import json,sys; print([len(s["figures"]) for s in json.load(open(sys.argv[1])) if s["id"] == "iterations"][0])' \
  "$TMP/figures.json" 2> /dev/null)
check_eq "iterations: classes per iteration and a timeline of one steady step" "$n" 2
grep -q '<svg[^>]*>' "$TMP/analysis.html" && grep -q 'nslfg-nvtx-unzoom' "$TMP/analysis.html" &&
  ok "the NVTX flame graph is the interactive SVG" || bad "no interactive NVTX flame graph"

# The nsys-jax archives (four processes): the notebook renders without a
# failed cell; the flame graphs (XLA's attribution) and the straggler
# arrivals are drawn; the other figure sections draw one or (no CUDA
# activity in these archives) say why in one line per analysis.
jax="$NSL_DATA_DIR/nsys-jax"
"$NSL" notebook "$nb" "$jax"/pax_fsdp4_4proc_proc{0,1,2,3}.zip -o "$TMP/jax.html" 2> "$TMP/jax.err"
check_eq "analysis.md on the nsys-jax archives (exit code)" "$?" 0
[ -s "$TMP/jax.err" ] && bad "nsys-jax notebook: $(head -2 "$TMP/jax.err")" || ok "nsys-jax notebook: no failed cell"
if grep -q -E '(src|href)="(https?:)?//' "$TMP/jax.html"; then bad "nsys-jax page refers to the network"
else ok "nsys-jax page is self-contained"; fi
figures_in_browser "$TMP/jax.html" "$TMP/jax-figures.json"
console_clean "$TMP/jax.html.console" "nsys-jax page"
check_sections "$TMP/jax-figures.json" "nsys-jax archives" +flame-graph +stragglers +iterations +nccl-and-overlap \
  +idle-gaps -launch-costs +device-memory
finish
