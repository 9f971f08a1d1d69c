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
if grep -q -E '(src|href)="(https?:)?//' "$TMP/analysis.html"; then bad "refers to the network"; else ok "self-contained"; fi
"$NSL" notebook analysis "$sample" -o "$TMP/by-name.html" 2> /dev/null
cmp -s "$TMP/analysis.html" "$TMP/by-name.html" && ok "shipped notebook by name" || bad "by name differs from the file"

# On a bundle: the same notebook renders with the same tables.
"$NSL" bundle "$sample" -o "$TMP/sample.zip" > /dev/null 2>&1 && ok "bundle made" || bad "nsl bundle failed"
"$NSL" notebook "$nb" "$TMP/sample.zip" -o "$TMP/bundle.html" 2> /dev/null
check_eq "analysis.md renders on a bundle (exit code)" "$?" 0
grep -q 'CUDA GPU Kernel Summary' "$TMP/bundle.html" && ok "bundle report has the summary" || bad "bundle report lacks the summary"

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

# A real browser: headless Chromium, networking off (its own network namespace when possible).
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then bad "chromium is missing (scripts/install-deps.sh installs it)"; finish; exit 1; fi
netoff=""
unshare -n true 2> /dev/null && netoff="unshare -n"
run_browser() {
  timeout 120 $netoff "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --proxy-server=http://127.0.0.1:9 --user-data-dir="$TMP/chrome-profile" --enable-logging=stderr --v=0 "$@"
}
run_browser --window-size=1200,1600 --screenshot="$TMP/shot.png" "file://$TMP/analysis.html" \
  > "$TMP/chrome.out" 2> "$TMP/chrome.err"
[ -f "$TMP/shot.png" ] && ok "screenshot taken" || bad "no screenshot: $(tail -3 "$TMP/chrome.err")"
# A blank 1200x1600 page compresses to a few KB; text and tables make it far larger.
size=$(stat -c %s "$TMP/shot.png" 2> /dev/null || echo 0)
[ "$size" -gt 30000 ] && ok "screenshot is not blank ($size bytes)" || bad "screenshot looks blank ($size bytes)"
# Chromium's own pages (source: chrome://...) log "Slow network" notes on a loaded machine: not the notebook's.
if grep -E "CONSOLE|Uncaught|SyntaxError|Refused" "$TMP/chrome.err" | grep -v -i "deprecat" |
   grep -v "source: chrome://" > "$TMP/console.txt"; then
  bad "console errors: $(head -3 "$TMP/console.txt")"
else ok "no console errors"; fi
run_browser --dump-dom "file://$TMP/analysis.html" > "$TMP/dom.html" 2> /dev/null
grep -q "CUDA GPU Kernel Summary" "$TMP/dom.html" && ok "the browser's DOM has the tables" || bad "DOM lacks the tables"
finish
