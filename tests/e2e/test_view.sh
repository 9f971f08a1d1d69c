#!/usr/bin/env bash
# test_view.sh -- `nsl view` and the viewer inside a notebook report, in
# headless Chromium with networking off.  The page's self-test (#selftest=TERM)
# zooms, pans and searches through the same calls as the mouse and keys and
# writes what it drew into the DOM; every count it reports is checked against
# SQL run by Python's sqlite3 on the same export: the events drawn per row in
# the visible window, the level of detail (events and busy time, the union of
# the row's intervals, per row over the whole trace, and per bin drawn when
# zoomed in outside the detail window, from a finer level), the names found, the
# NVTX ranges enclosing a time and a selection (the stack viewer), the
# default detail window, and the window --from/--to ask for (the page then holds only the events that overlap it).
. "$(dirname "$0")/lib.sh"
F=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
OLD=$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite

# ---- the command line ----------------------------------------------------------------
"$NSL" view --help > "$TMP/help.txt"; check_eq "view --help exits 0" "$?" 0
grep -q -- "--from" "$TMP/help.txt" && ok "help names --from" || bad "help lacks --from"
"$NSL" view "$F" 2> "$TMP/err.txt"; check_eq "no -o: usage error" "$?" 2
"$NSL" view "$F" -o "$TMP/x.html" --max-event 5 2> "$TMP/err.txt"; check_eq "misspelled option: usage error" "$?" 2
grep -q "did you mean '--max-events'" "$TMP/err.txt" && ok "misspelled option: suggestion" || bad "no suggestion: $(cat "$TMP/err.txt")"
"$NSL" view "$F" -o "$TMP/x.html" --form 1ms 2> "$TMP/err.txt"; check_eq "unknown option: usage error" "$?" 2
grep -q "did you mean '--from'" "$TMP/err.txt" && ok "unknown option: suggestion" || bad "$(cat "$TMP/err.txt")"
"$NSL" view "$F" -o "$TMP/x.html" --bins 0 2> /dev/null; check_eq "bins=0 refused" "$?" 2
"$NSL" view "$F" -o "$TMP/x.html" --bins 100000000 2> /dev/null; check_eq "bins=10^8 refused" "$?" 2
printf 'not sqlite' > "$TMP/bad.sqlite"
"$NSL" view "$TMP/bad.sqlite" -o "$TMP/x.html" 2> "$TMP/err.txt"; check_eq "bad input: exit 1" "$?" 1
[ "$(wc -l < "$TMP/err.txt")" = 1 ] && grep -q "bad.sqlite" "$TMP/err.txt" && ok "bad input: one line naming the file" ||
  bad "bad input message: $(cat "$TMP/err.txt")"
[ ! -e "$TMP/x.html" ] && ok "nothing written on failure" || bad "a page was written on failure"
"$NSL" view "$F" -o "$TMP/x.html" --from 10s 2> "$TMP/err.txt"; check_eq "--from after the end: exit 2 (as every command's window)" "$?" 2
grep -q "10s" "$TMP/err.txt" && ok "--from after the end: says so" || bad "$(cat "$TMP/err.txt")"
before=$(fingerprint "$F")
"$NSL" view "$F" -o "$TMP/view.html"; check_eq "view writes the page" "$?" 0
check_eq "the input is untouched" "$(fingerprint "$F")" "$before"
"$NSL" view "$F" -o "$TMP/small.html" --max-events 5000 --no-findings; check_eq "max_events=5000" "$?" 0
"$NSL" view "$F" -o "$TMP/window.html" --from 50ms --to 120ms --no-findings; check_eq "--from/--to" "$?" 0
"$NSL" view "$OLD" -o "$TMP/old.html"; check_eq "a 2021 export" "$?" 0
grep -q "Content-Security-Policy" "$TMP/view.html" && ok "the page forbids fetching (CSP)" || bad "no CSP"
if grep -Eq '(src|href)="(https?:)?//' "$TMP/view.html"; then bad "the page links outside"; else ok "no external links"; fi

# an analysis writes the same page through out:file (the one mechanism, from nsl run)
cat > "$TMP/page.lua" <<'EOF'
return {name = "page", description = "the viewer's page under --out",
        run = function(trace, args, out)
          out:file("view.html", require("nsl.engine.view").viewer(trace, {findings = false}):page())
        end}
EOF
"$NSL" view "$F" -o "$TMP/nofind.html" --no-findings
"$NSL" run "$TMP/page.lua" "$F" --out "$TMP/page" > /dev/null; check_eq "nsl run writes the page" "$?" 0
cmp -s "$TMP/page/view.html" "$TMP/nofind.html" && ok "nsl run's page equals nsl view's" || bad "nsl run's page differs"

# ---- the notebook: the same viewer in a cell -------------------------------------------------
cat > "$TMP/nb.md" <<'EOF'
# Timeline

```lua
local view = require("nsl.engine.view")
local lo = require("nsl.window").span(trace, {"kernels", "memcpy", "memset", "nvtx"})
show(view.viewer(trace, {from = lo + 100000000, to = lo + 160000000, findings = false}))
```
EOF
"$NSL" notebook "$TMP/nb.md" "$F" -o "$TMP/nb.html"; check_eq "notebook with a viewer" "$?" 0
grep -q 'class="nsl-view"' "$TMP/nb.html" && ok "the report embeds the viewer" || bad "no viewer in the report"

if [ -z "$BROWSER" ]; then bad "chromium is missing (scripts/install-deps.sh installs it)"; finish; exit 1; fi

# selftest PAGE TERM OUT.json: the page's self-test report, and its console
selftest() {
  run_browser --window-size=1400,1000 --virtual-time-budget=20000 --dump-dom "file://$1#selftest=$2" \
    > "$1.dom" 2> "$1.console"
  python3 - "$1.dom" > "$3" <<'PY'
import html, re, sys
m = re.search(r'<pre class="nsl-selftest">(.*?)</pre>', open(sys.argv[1]).read(), re.S)
print(html.unescape(m.group(1)) if m else "{}")
PY
}

# check_selftest REPORT.json EXPORT WHAT [DETAIL_FROM DETAIL_TO [DATA_FROM DATA_TO]]: the report against SQL
# (a page of a window, --from/--to: over the rows that overlap DATA_FROM..DATA_TO, as nsl keeps them)
check_selftest() {
  if python3 - "$@" > "$TMP/check.txt" <<'PY'
import json, sqlite3, sys
rep = json.load(open(sys.argv[1]))
db = sqlite3.connect("file:%s?immutable=1" % sys.argv[2], uri=True)
want_detail = sys.argv[4:6]
data = " AND start < %d AND end > %d" % (int(sys.argv[7]), int(sys.argv[6])) if len(sys.argv) > 7 else ""
bad = []
def q(sql, *a): return db.execute(sql, a).fetchall()
tables = [t for (t,) in q("SELECT name FROM sqlite_master WHERE type='table'")]
gpu = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET") if t in tables]
def gpu_rows(dev, stream):
    out = []
    for t in gpu: out += q("SELECT start, end FROM %s WHERE deviceId = ? AND streamId = ?%s" % (t, data), dev, stream)
    return out
def nvtx_rows(pid, tid):
    if "NVTX_EVENTS" not in tables: return []
    return q("SELECT start, end FROM NVTX_EVENTS WHERE end IS NOT NULL AND (globalTid >> 24) & 16777215 = ? "
             "AND globalTid & 16777215 = ?" + data, pid, tid)
def union(iv):
    tot, cs, ce = 0, None, None
    for s, e in sorted(iv):
        if ce is not None and s <= ce: ce = max(ce, e); continue
        if ce is not None: tot += ce - cs
        cs, ce = s, e
    return tot + (ce - cs if ce is not None else 0)
if not rep.get("rows"): bad.append("no self-test report")
t0, t1 = int(rep["window"]["from"]), int(rep["window"]["to"])
d0, d1 = int(rep["detail"]["from"]), int(rep["detail"]["to"])
if not (d0 <= t0 < t1 <= d1): bad.append("the visible window %d..%d is not inside the detail window" % (t0, t1))
if want_detail and (d0, d1) != (int(want_detail[0]), int(want_detail[1])):
    bad.append("detail window %d..%d, SQL says %s..%s" % (d0, d1, want_detail[0], want_detail[1]))
# the visible window is the detail window zoomed in 4x about its middle, then panned by a quarter of itself
w = (d1 - d0) / 4; a = d0 + (d1 - d0) / 2 - w / 2 + w / 4
if abs(t0 - a) > 1 or abs(t1 - (a + w)) > 1: bad.append("zoom/pan went to %d..%d, expected %.0f..%.0f" % (t0, t1, a, a + w))
total_detail = 0
for r in rep["rows"]:
    iv = gpu_rows(r["device"], r["stream"]) if r["kind"] == "gpu" else nvtx_rows(r["pid"], r["tid"])
    drawn = sum(1 for s, e in iv if s < t1 and e > t0)
    total_detail += sum(1 for s, e in iv if s < d1 and e > d0)
    if r["drawn"] != drawn: bad.append("%s: drew %d events, SQL has %d in the window" % (r["label"], r["drawn"], drawn))
    if r["lod_events"] != len(iv): bad.append("%s: level of detail counts %d events, SQL %d" % (r["label"], r["lod_events"], len(iv)))
    if r["lod_busy"] != union(iv): bad.append("%s: busy %d ns, SQL union %d" % (r["label"], r["lod_busy"], union(iv)))
# zoomed in outside the detail window: every bin the page drew for a row, from the level of detail that fits
# the zoom (a finer one than the whole trace's), holds the row's busy ns (the union of its events clipped to
# the bin) and the events starting in it, as SQL says
import bisect
def covered(iv):
    merged = []
    for s, e in sorted(iv):
        if merged and s <= merged[-1][1]: merged[-1][1] = max(merged[-1][1], e)
        else: merged.append([s, e])
    ms, cum = [m[0] for m in merged], [0]
    for s, e in merged: cum.append(cum[-1] + e - s)
    def before(t):   # ns covered before t
        i = bisect.bisect_left(ms, t)
        u = cum[i]
        if i and merged[i - 1][1] > t: u -= merged[i - 1][1] - t
        return u
    return before
out = rep.get("outside")
if out:
    o0, o1 = int(out["from"]), int(out["to"])
    if o0 < d1: bad.append("the zoom outside the detail window starts at %d, before its end %d" % (o0, d1))
    if out["level"] < 1: bad.append("outside the detail window the page drew level %d: a weak test" % out["level"])
    nbins = nonzero = 0
    for r, bins in zip(rep["rows"], out["rows"]):
        iv = gpu_rows(r["device"], r["stream"]) if r["kind"] == "gpu" else nvtx_rows(r["pid"], r["tid"])
        before, starts = covered(iv), sorted(s for s, e in iv)
        for s, e, busy, n in bins:
            s, e = int(s), int(e)
            want_busy = before(e) - before(s)
            want_n = bisect.bisect_left(starts, e) - bisect.bisect_left(starts, s)
            if not (s < o1 and e > o0): bad.append("%s: bin %d..%d drawn outside the view" % (r["label"], s, e))
            if (busy, n) != (want_busy, want_n):
                bad.append("%s: bin %d..%d busy %d ns, %d start; SQL %d ns, %d" % (r["label"], s, e, busy, n, want_busy, want_n))
            nbins += 1
            nonzero += busy > 0
    if nbins == 0 or nonzero == 0: bad.append("no busy bin drawn outside the detail window: a weak test")
if rep["detail"]["events"] != total_detail:
    bad.append("detail window holds %d events, SQL %d" % (rep["detail"]["events"], total_detail))
# the names found: kernels' short names and NVTX texts in the detail window that contain the term
term = rep["term"]
names, hits = set(), 0
if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
    for (n,) in q("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                  "WHERE k.start < ? AND k.end > ? AND s.value LIKE ?", d1, d0, "%" + term + "%"):
        names.add(n); hits += 1
for (n,) in q("SELECT coalesce(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
              "WHERE n.end IS NOT NULL AND n.start < ? AND n.end > ? AND coalesce(n.text, s.value) LIKE ?",
              d1, d0, "%" + term + "%") if "NVTX_EVENTS" in tables else []:
    names.add(n); hits += 1
if sorted(names) != rep["found"]: bad.append("found %d names, SQL %d (%s...)" % (len(rep["found"]), len(names), sorted(names)[:2]))
if rep["found_events"] != hits: bad.append("found %d events, SQL %d" % (rep["found_events"], hits))
if not names: bad.append("the search term '%s' matches nothing: a weak test" % term)
# hovering the middle of the first row names an event of that row under the pointer (within the slack)
hv, row0 = rep["hover"], rep["rows"][0]
if row0["kind"] == "gpu" and hv["text"] is not None:
    t, sl = int(hv["at"]), hv["slack"] + 1
    cands = set()
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        cands |= {n for (n,) in q("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                                  "WHERE deviceId = ? AND streamId = ? AND k.start - ? <= ? AND ? <= k.end + ?",
                                  row0["device"], row0["stream"], sl, t, t, sl)}
    if not any(hv["text"].startswith(c) for c in cands) and not any(k in hv["text"] for k in ("memcpy", "memset")):
        bad.append("hover shows '%s', SQL has %s there" % (hv["text"][:80], sorted(cands)[:3]))
elif row0["kind"] == "gpu" and any(s - hv["slack"] <= int(hv["at"]) <= e + hv["slack"] for s, e in gpu_rows(row0["device"], row0["stream"])):
    bad.append("hover shows nothing where SQL has an event")
# the NVTX stack: ranges enclosing the middle of the view (start <= t < end), and a selection (start <= a, end >= b)
def stack(where, *a):
    if "NVTX_EVENTS" not in tables: return {}
    res = {}
    for pid, tid, n in q("SELECT (n.globalTid >> 24) & 16777215, n.globalTid & 16777215, coalesce(n.text, s.value) "
                         "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId WHERE n.end IS NOT NULL AND "
                         + where + " ORDER BY n.start, n.end DESC", *a):
        res.setdefault((pid, tid), []).append(n)
    return res
for key, want, got in (("stack", stack("n.start <= ? AND n.end > ?", int(rep["stack"]["at"]), int(rep["stack"]["at"])),
                        rep["stack"]["threads"]),
                       ("selection", stack("n.start <= ? AND n.end >= ?", int(rep["selection"]["from"]),
                                           int(rep["selection"]["to"])), rep["selection"]["threads"])):
    got = {(t["pid"], t["tid"]): t["names"] for t in got}
    if got != want: bad.append("NVTX %s: %s, SQL %s" % (key, str(got)[:200], str(want)[:200]))
    if "NVTX_EVENTS" in tables and key == "stack" and not want: bad.append("no NVTX range at the middle: a weak test")
if rep["painted"] < 1000: bad.append("only %d pixels painted" % rep["painted"])
if rep["fetched"]: bad.append("the page fetched %s" % rep["fetched"])
print("%d rows, window %d..%d, %d names%s" % (len(rep["rows"]), t0, t1, len(names),
      "; outside the detail window %d bins of level %d" % (nbins, out["level"]) if out else ""))
for b in bad: print(b)
sys.exit(1 if bad else 0)
PY
  then ok "$3: drawn, level of detail and search equal SQL ($(head -1 "$TMP/check.txt"))"
  else bad "$3: $(head -5 "$TMP/check.txt" | tr '\n' ';')"; fi
}

# the whole trace fits the default detail window: it is the whole trace
span=$(sql "$F" "SELECT min(s), max(e) FROM (SELECT start s, end e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
  SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET
  UNION ALL SELECT start, end FROM NVTX_EVENTS)")
lo=${span%|*} hi=${span#*|}
selftest "$TMP/view.html" nccl "$TMP/view.json"
check_selftest "$TMP/view.json" "$F" "view" "$lo" "$hi"
console_clean "$TMP/view.html.console" "view"
# max_events=5000: the window ends at the 5001st start (every table's events in start order)
to5k=$(sql "$F" "SELECT s FROM (SELECT start s FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
  SELECT start FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start FROM CUPTI_ACTIVITY_KIND_MEMSET
  UNION ALL SELECT start FROM NVTX_EVENTS WHERE end IS NOT NULL) ORDER BY s LIMIT 1 OFFSET 5000")
selftest "$TMP/small.html" elementwise "$TMP/small.json"
check_selftest "$TMP/small.json" "$F" "max_events=5000" "$lo" "$to5k"
# past that window the page names the command that embeds every event there: it does
hint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hint"])' "$TMP/small.json")
if [[ $hint =~ --from\ ([0-9]+)\ --to\ ([0-9]+) ]]; then
  a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
  "$NSL" view "$F" -o "$TMP/hint.html" --from "$a" --to "$b" --no-findings
  selftest "$TMP/hint.html" aten "$TMP/hint.json"
  check_selftest "$TMP/hint.json" "$F" "the hint's window" $((lo + a)) $((lo + b)) $((lo + a)) $((lo + b))
else bad "no hint past the detail window: '$hint'"; fi
past=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("hint_past_end", "missing"))' "$TMP/small.json")
check_eq "no hint wholly past the last event (it would name an empty window)" "$past" ""
# --from 50ms --to 120ms: from the first event
selftest "$TMP/window.html" aten "$TMP/window.json"
check_selftest "$TMP/window.json" "$F" "--from 50ms --to 120ms" $((lo + 50000000)) $((lo + 120000000)) \
  $((lo + 50000000)) $((lo + 120000000))
console_clean "$TMP/window.html.console" "--from/--to"
# a 2021 export (another schema, no NVTX)
span_old=$(sql "$OLD" "SELECT min(s), max(e) FROM (SELECT start s, end e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
  SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET)")
selftest "$TMP/old.html" gpu "$TMP/old.json"   # case-insensitive: build_GPU2, probe_GPU2
check_selftest "$TMP/old.json" "$OLD" "2021 export" "${span_old%|*}" "${span_old#*|}"
# the notebook's viewer: the window the cell asked for
selftest "$TMP/nb.html" nccl "$TMP/nb.json"
check_selftest "$TMP/nb.json" "$F" "notebook viewer" $((lo + 100000000)) $((lo + 160000000))
console_clean "$TMP/nb.html.console" "notebook viewer"

# several reports (a bundle of four ranks): a row per report's stream and thread, labelled with the report;
# per row, the events and busy time over the whole trace (shift-free, so the clock alignment does not matter)
B=$NSL_SOURCE_DIR/samples/nccl_4rank_straggler.zip
"$NSL" view "$B" -o "$TMP/ranks.html" --no-findings; check_eq "view of a 4-rank bundle" "$?" 0
selftest "$TMP/ranks.html" nccl "$TMP/ranks.json"
console_clean "$TMP/ranks.html.console" "4-rank bundle"
if python3 - "$TMP/ranks.json" "$B" "$TMP" <<'PY'
import json, sqlite3, sys, zipfile
rep, tmp = json.load(open(sys.argv[1])), sys.argv[3]
z = zipfile.ZipFile(sys.argv[2])
dbs = {}
for m in z.namelist():
    if m.startswith("reports/") and m.endswith(".sqlite"):
        z.extract(m, tmp)
        dbs[m[8:-7]] = sqlite3.connect("file:%s/%s?immutable=1" % (tmp, m), uri=True)
want = 0
for name, db in dbs.items():
    want += db.execute("SELECT count(*) FROM (SELECT DISTINCT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION "
                       "SELECT DISTINCT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION "
                       "SELECT DISTINCT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET)").fetchone()[0]
    want += db.execute("SELECT count(DISTINCT globalTid) FROM NVTX_EVENTS WHERE end IS NOT NULL").fetchone()[0]
assert len(rep["rows"]) == want, (len(rep["rows"]), want)
def union(iv):
    tot, cs, ce = 0, None, None
    for s, e in sorted(iv):
        if ce is not None and s <= ce: ce = max(ce, e); continue
        if ce is not None: tot += ce - cs
        cs, ce = s, e
    return tot + (ce - cs if ce is not None else 0)
for r in rep["rows"]:
    name = r["label"].split(" ")[0]
    db = dbs[name]
    if r["kind"] == "gpu":
        iv = []
        for t in ("KERNEL", "MEMCPY", "MEMSET"):
            iv += db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_%s WHERE deviceId = ? AND streamId = ?" % t,
                             (r["device"], r["stream"])).fetchall()
    else:
        iv = db.execute("SELECT start, end FROM NVTX_EVENTS WHERE end IS NOT NULL AND globalTid & 16777215 = ? AND "
                        "(globalTid >> 24) & 16777215 = ?", (r["tid"], r["pid"])).fetchall()
    assert r["lod_events"] == len(iv) and r["lod_busy"] == union(iv), (r, len(iv), union(iv))
print(len(rep["rows"]))
PY
then ok "4 ranks: a row per report's stream and thread; events and busy time per row equal SQL"
else bad "4 ranks: rows differ from SQL"; fi

# the findings are diagnose's: the same ids and windows; clicking the first shows its place
"$NSL" run diagnose "$F" --format json > "$TMP/diag.json"
if python3 - "$TMP/view.json" "$TMP/diag.json" <<'PY'
import json, sys
rep, diag = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = [(f.get("id"), str(f.get("where", {}).get("from")) if f.get("where", {}).get("from") is not None else None,
         str(f["where"]["to"]) if f.get("where", {}).get("to") is not None else None) for f in diag["findings"]]
got = [(f["id"], f["from"], f["to"]) for f in rep["findings"]]
assert got == want, (got, want)
assert got, "no findings to check"
went = rep["went"]
assert went and went["shows"], went
print(len(got))
PY
then ok "findings equal diagnose's, and the first one's window is shown when clicked"
else bad "findings differ from diagnose's"; fi

# names are data, never markup: an NVTX text that closes the script element (a derived copy of the export)
cp "$F" "$TMP/markup.sqlite"
chmod u+w "$TMP/markup.sqlite"
sqlite3 "$TMP/markup.sqlite" "UPDATE NVTX_EVENTS SET text = '</script><script>document.title=1</script><b>zq' WHERE rowid =
  (SELECT min(rowid) FROM NVTX_EVENTS WHERE text IS NOT NULL)"
"$NSL" view "$TMP/markup.sqlite" -o "$TMP/markup.html" --no-findings; check_eq "view of the markup copy" "$?" 0
selftest "$TMP/markup.html" zq "$TMP/markup.json"
check_selftest "$TMP/markup.json" "$TMP/markup.sqlite" "a name holding </script>" "$lo" "$hi"
console_clean "$TMP/markup.html.console" "a name holding </script>"

# a screenshot of the page is not blank
run_browser --window-size=1400,900 --screenshot="$TMP/shot.png" "file://$TMP/view.html" > /dev/null 2> "$TMP/shot.err"
size=$(stat -c %s "$TMP/shot.png" 2> /dev/null || echo 0)
[ "$size" -gt 30000 ] && ok "screenshot is not blank ($size bytes)" || bad "screenshot looks blank ($size bytes)"
finish
