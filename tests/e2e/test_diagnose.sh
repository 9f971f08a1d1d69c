#!/usr/bin/env bash
# diagnose through the CLI: findings first in text, one valid JSON document
# with every field of the shared finding record (its numbers checked against
# SQL on the same file), --fail-on exit codes, one line for a trace with
# nothing wrong, a bundle giving the findings of its export, one-line errors
# for bad input, and inputs left untouched.
. "$(dirname "$0")/lib.sh"
D=$NSL_DATA_DIR/nsys
NCCL=$D/pytorch_nccl_2gpu_2026.2.sqlite
before=$(fingerprint "$NCCL")

# text: the verdict and the top findings, then the ledger, then the findings in full before the first
# evidence table, and the verdict again as the last line
"$NSL" run diagnose "$NCCL" > "$TMP/text.txt"; rc=$?
check_eq "text: exit code" "$rc" 0
check_eq "text: the verdict first" "$(head -1 "$TMP/text.txt" | cut -c1-9)" "Verdict: "
check_eq "text: the verdict last" "$(tail -1 "$TMP/text.txt")" "$(head -1 "$TMP/text.txt")"
top=$(grep -n '^  1\. ' "$TMP/text.txt" | head -1 | cut -d: -f1)
ledger=$(grep -n "^Where each GPU's time went" "$TMP/text.txt" | head -1 | cut -d: -f1)
first_finding=$(grep -n '^\[\(info\|warning\|error\) ' "$TMP/text.txt" | head -1 | cut -d: -f1)
evidence=$(grep -n '^ *-----' "$TMP/text.txt" | sed -n 2p | cut -d: -f1)
if [ -n "$top" ] && [ -n "$ledger" ] && [ -n "$first_finding" ] && [ -n "$evidence" ] && [ "$top" -lt "$ledger" ] &&
   [ "$ledger" -lt "$first_finding" ] && [ "$first_finding" -lt "$evidence" ] && [ "$top" -le 20 ]; then
  ok "text: verdict and top findings, ledger, findings, evidence"
else bad "text: order ($top, $ledger, $first_finding, $evidence)"; fi
n_said=$(sed -n 's/^\([0-9]*\) finding(s) on .*/\1/p' "$TMP/text.txt")
check_eq "text: each finding printed once" "$(grep -c '^\[\(info\|warning\|error\) ' "$TMP/text.txt")" "$n_said"

# json: one document; every finding carries the record; api.sync per process equals SQL
"$NSL" run diagnose "$NCCL" --format json > "$TMP/d.json"; rc=$?
check_eq "json: exit code" "$rc" 0
sql "$NCCL" "SELECT ((r.globalTid >> 24) & 16777215), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
  JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cudaStreamSynchronize%'
  GROUP BY 1 ORDER BY 1" | tr '|' ' ' > "$TMP/want.txt"
if python3 - "$TMP/d.json" "$TMP/want.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = {int(p): int(t) for p, t in (l.split() for l in open(sys.argv[2]) if l.strip())}
fs = d["findings"]
assert fs, "no findings"
ranks = {"info": 1, "warning": 2, "error": 3}
for f in fs:
    for k in ("id", "severity", "message"):
        assert isinstance(f[k], str), (k, f)
    assert f["severity"] in ranks, f
    if "cost_ns" in f:
        assert isinstance(f["cost_ns"], int) and isinstance(f["step_ns"], int), f
        assert 0 <= f["share"], f
    assert isinstance(f["where"], dict) and isinstance(f["next"], str), f
    if "evidence" in f:
        assert f["evidence"] in d["tables"], f["evidence"]
# ranked by what the job loses: recurring costs, then one-time costs, then the rest
order = [(0 if "lost_ns" in f and not f.get("once") else 1 if "lost_ns" in f else 2, -f.get("lost_ns", -1)) for f in fs]
assert order == sorted(order), order
for f in fs:
    if "lost_ns" in f:
        assert isinstance(f["lost_ns"], int) and 0 <= f["share"] <= 1, f
sync = [p for f in fs if f["id"] == "api.sync" for p in f.get("parts", [f])]
got = {f["where"]["pid"]: f["total_ns"] for f in sync}
assert got == want, (got, want)
PY
then ok "json: valid, every field, ranked by lost_ns, shares within [0, 1], api.sync equals SQL"; else bad "json: document"; fi

# every suggested next command runs (nsl for the binary, in a scratch folder;
# the commands quote paths for the shell: one has a space and a quote)
# (every shared export, the shipped sample bundle, and a bundle combined from two per-rank bundles)
cp "$D/cuda_2021.2.sqlite" "$TMP/run 1's.sqlite"
(cd "$TMP" && cp "$D/pytorch_nccl_2gpu_2026.2.sqlite" rank0.sqlite && cp "$D/pytorch_nccl_2gpu_2026.2.sqlite" rank1.sqlite &&
  "$NSL" bundle rank0.sqlite --rank 0 -o r0.zip > /dev/null && "$NSL" bundle rank1.sqlite --rank 1 -o r1.zip > /dev/null &&
  "$NSL" combine r0.zip r1.zip -o combined.zip > /dev/null) || bad "combined bundle: making it"
# (and straggler's on the multi-rank inputs: the bundles, two exports, one rank of a bundle by --report;
# a command for one report of a bundle names it with --report, never bundle.zip:member)
SAMPLE=$NSL_SOURCE_DIR/samples/nccl_4rank_straggler.zip
while IFS='|' read -r an f sel; do
  set -- ${sel:+--report "$sel"}
  [ "$f" = pair ] && f="$TMP/rank0.sqlite $TMP/rank1.sqlite"
  # shellcheck disable=SC2086  # pair: two paths without spaces
  "$NSL" run "$an" $f "$@" --format json < /dev/null |
    python3 -c 'import json, sys; [print(x["next"]) for x in json.load(sys.stdin)["findings"] if "next" in x]' |
    sort -u > "$TMP/next.txt"
  [ -s "$TMP/next.txt" ] || [ "$f" != "$NCCL" ] || bad "next commands of $(basename "$f")"
  [ -s "$TMP/next.txt" ] || [ "$f" != "$SAMPLE" ] || bad "$an: next commands of the sample bundle"
  ! grep -q '\.zip:' "$TMP/next.txt" || bad "$an: a next command names a bundle member: $(grep '\.zip:' "$TMP/next.txt" | head -1)"
  if [ "$f" = "$SAMPLE" ]; then
    grep -q -- '--report rank[0-3]' "$TMP/next.txt" && ok "$an: next commands name one rank by --report" ||
      bad "$an: no next command names a rank: $(head -1 "$TMP/next.txt")"
  fi
  if [ -n "$sel" ]; then   # the whole-trace commands keep the selection
    ! grep -v -- '--report' "$TMP/next.txt" | grep -q . && ok "$an --report $sel: every next command keeps it" ||
      bad "$an --report $sel: $(grep -v -- '--report' "$TMP/next.txt" | head -1)"
  fi
  while read -r cmd; do
    case "$cmd" in "nsl run "*) ;; *) bad "next: not an nsl command: $cmd"; continue ;; esac
    eval "set -- ${cmd#nsl }"
    (cd "$TMP" && "$NSL" "$@" > /dev/null 2>&1); rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] && ok "next runs: $1 $2 ..." || bad "next fails ($rc): $cmd"
  done < "$TMP/next.txt"
done < <(for f in "$D"/*.sqlite "$TMP/run 1's.sqlite" "$SAMPLE" "$TMP/combined.zip"; do echo "diagnose|$f|"; done
         printf '%s\n' "straggler|$SAMPLE|" "straggler|$TMP/combined.zip|" "straggler|pair|" "diagnose|$SAMPLE|rank1,rank2")

# --fail-on: 3 when a finding is at least that severe, else 0
"$NSL" run diagnose "$D/cuda_2021.2.sqlite" --fail-on error > /dev/null; check_eq "--fail-on error, error findings" "$?" 3
"$NSL" run diagnose "$D/osrt_sampling_2025.5.sqlite" --fail-on info > "$TMP/clean.txt"
check_eq "--fail-on info, no findings" "$?" 0
check_eq "clean trace: one line" "$(wc -l < "$TMP/clean.txt")" 1
grep -q '^No problems found' "$TMP/clean.txt" && ok "clean trace: says so" || bad "clean trace: says so"

# honest silence: no GPU events, or CSV summaries only: nothing checked, said so, and --fail-on fails
cp "$D/tiny_2026.1.sqlite" "$TMP/nogpu.sqlite"
sqlite3 "$TMP/nogpu.sqlite" "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY;" 2>/dev/null
sqlite3 "$TMP/nogpu.sqlite" "DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;" 2>/dev/null
check_eq "no GPU events: the copy has none" "$(sqlite3 "$TMP/nogpu.sqlite" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")" 0
"$NSL" run diagnose "$TMP/nogpu.sqlite" --fail-on warning > "$TMP/nogpu.txt" 2>&1; rc=$?
check_eq "no GPU events: --fail-on fails" "$rc" 3
grep -q '^No problems found' "$TMP/nogpu.txt" && bad "no GPU events: an all-clear" || ok "no GPU events: no all-clear"
grep -q 'Nothing checked.*-t cuda' "$TMP/nogpu.txt" && ok "no GPU events: says why" || bad "no GPU events: says why"
(cd "$TMP" && bash "$NSL_SOURCE_DIR/tests/e2e/make_stats_csv.sh" "$NCCL" st > /dev/null 2>&1) || bad "csv: making them"
"$NSL" run diagnose "$TMP"/st_cuda_gpu_kern_sum.csv "$TMP"/st_cuda_api_sum.csv --fail-on info > "$TMP/csv.txt" 2>&1; rc=$?
check_eq "CSV summaries: --fail-on fails" "$rc" 3
grep -q '^No problems found' "$TMP/csv.txt" && bad "CSV summaries: an all-clear" || ok "CSV summaries: no all-clear"
grep -q 'Nothing checked.*summaries' "$TMP/csv.txt" && ok "CSV summaries: says why" || bad "CSV summaries: says why"

# a bundle of the export gives the export's findings
(cd "$TMP" && cp "$NCCL" train.sqlite && "$NSL" bundle train.sqlite --rank 0 -o b.zip > /dev/null) || bad "bundle: making it"
"$NSL" run diagnose "$TMP/b.zip" --format json > "$TMP/b.json"
if python3 - "$TMP/d.json" "$TMP/b.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["findings"] for p in sys.argv[1:3])
key = lambda f: (f["id"], f.get("cost_ns"), f.get("total_ns"), json.dumps(f["where"].get("pid")), f["where"].get("device"))
assert sorted(map(key, a)) == sorted(map(key, b)), (len(a), len(b))
PY
then ok "bundle: same findings as its export"; else bad "bundle: same findings as its export"; fi

# bad input: one line, non-zero
"$NSL" run diagnose "$TMP/missing.sqlite" > /dev/null 2> "$TMP/err.txt"; rc=$?
[ "$rc" -ne 0 ] && [ "$(wc -l < "$TMP/err.txt")" = 1 ] && ok "missing file: one-line error" || bad "missing file ($rc)"
"$NSL" run diagnose "$NCCL" --arg gap=soon > /dev/null 2> "$TMP/err.txt"; rc=$?
[ "$rc" -ne 0 ] && [ "$(wc -l < "$TMP/err.txt")" = 1 ] && grep -q "gap" "$TMP/err.txt" && ok "bad --arg: one-line error" || bad "bad --arg ($rc)"
"$NSL" run diagnose "$NCCL" --arg iteration=no_such_range > /dev/null 2> "$TMP/err.txt"; rc=$?
[ "$rc" -ne 0 ] && [ "$(wc -l < "$TMP/err.txt")" = 1 ] && ok "missing step range: one-line error" || bad "missing step range ($rc)"

check_eq "input untouched" "$(fingerprint "$NCCL")" "$before"
finish
