#!/usr/bin/env bash
# --report NAME|N: one report of a bundle, on every command that opens
# traces.  The selected trace is the report alone: its row counts equal SQL
# on that report's export, summary equals summary on the export opened on
# its own, several reports keep trace order and are renumbered from 0, an
# unknown report is a usage error naming the reports and the closest one.
. "$(dirname "$0")/lib.sh"
B=$NSL_SOURCE_DIR/samples/nccl_4rank_straggler.zip
python3 - "$B" "$TMP" <<'PY' || bad "extracting the sample's exports"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for r in (1, 3):
        open(f"{sys.argv[2]}/rank{r}.sqlite", "wb").write(z.read(f"reports/rank{r}.sqlite"))
PY
R1=$TMP/rank1.sqlite
R3=$TMP/rank3.sqlite
before=$(fingerprint "$B")

# row counts of the selected report: SQL on its export
want=""
for t in CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_RUNTIME NVTX_EVENTS; do
  want="$want $(count_or_zero "$R1" "$t")"
done
lua='print(trace:nreports(), #trace.kernels, #trace.memcpy, #trace.api, #trace.nvtx)'
got=$(echo "$lua" | "$NSL" repl "$B" --report rank1 2>&1 | tr -s ' \t' ' ')
check_eq "repl --report rank1: reports and rows as SQL counts them on rank1's export" "$got" "$(echo "1$want" | tr -s ' ')"
got=$(echo "$lua" | "$NSL" repl "$B" --report 1 2>&1 | tr -s ' \t' ' ')
check_eq "repl --report 1 (0-based index): the same" "$got" "$(echo "1$want" | tr -s ' ')"

# two reports: trace order, renumbered 0 and 1, each with its export's kernels
k1=$(count_or_zero "$R1" CUPTI_ACTIVITY_KIND_KERNEL)
k3=$(count_or_zero "$R3" CUPTI_ACTIVITY_KIND_KERNEL)
lua='local t = trace.kernels:group_by("report"):agg{"n=count"}:sort("report"); print(trace.reports.name[1], trace.reports.name[2], t.report[1], t.n[1], t.report[2], t.n[2])'
got=$(echo "$lua" | "$NSL" repl "$B" --report 3,rank1 2>&1 | tr -s ' \t' ' ')
check_eq "--report 3,rank1: rank1 then rank3, reports 0 and 1, kernels as SQL" "$got" "rank1 rank3 0 $k1 1 $k3"
got=$(echo 'print(trace:nreports())' | "$NSL" repl "$B" --report rank3 --report rank3 2>&1)
check_eq "a report named twice counts once" "$got" 1

# summary on the selected report = summary on its export alone; its instances sum to SQL's kernel count
"$NSL" run summary "$B" --report rank1 --format csv > "$TMP/sel.csv"; rc=$?
check_eq "summary --report rank1: exit code" "$rc" 0
"$NSL" run summary "$R1" --format csv > "$TMP/alone.csv"
cmp -s "$TMP/sel.csv" "$TMP/alone.csv" && ok "summary --report rank1 = summary of rank1's export" ||
  bad "summary --report rank1 differs: $(diff "$TMP/sel.csv" "$TMP/alone.csv" | head -3)"
"$NSL" run summary "$B" --report rank1 --arg only=kernels --format json |
  python3 -c 'import json, sys; d = json.load(sys.stdin); print(sum(r["Instances"] for t in d["tables"].values() for r in t))' \
  > "$TMP/n.txt"
check_eq "summary --report rank1: instances sum to SQL's kernel count" "$(cat "$TMP/n.txt")" "$k1"

# refusals: one line naming the bundle, the reports and the closest name, exit 2
"$NSL" run summary "$B" --report rnak1 > "$TMP/out.txt" 2> "$TMP/err.txt"; rc=$?
check_eq "unknown report: exit 2" "$rc" 2
check_eq "unknown report: one line" "$(wc -l < "$TMP/err.txt")" 1
grep -q "$B: --report: no report 'rnak1': the reports are rank0, rank1, rank2, rank3 (by name, or 0 to 3); did you mean 'rank1'?" \
  "$TMP/err.txt" && ok "unknown report: names the file, the reports and the closest" || bad "unknown report: $(cat "$TMP/err.txt")"
[ -s "$TMP/out.txt" ] && bad "unknown report: something on stdout" || ok "unknown report: nothing on stdout"
"$NSL" info "$B" --report 4 2> "$TMP/err.txt" > /dev/null; check_eq "info --report 4 (out of range): exit 2" "$?" 2
"$NSL" view "$B" --report nope -o "$TMP/v.html" 2> /dev/null; check_eq "view, unknown report: exit 2" "$?" 2
[ -e "$TMP/v.html" ] && bad "view, unknown report: a page was written" || ok "view, unknown report: nothing written"
"$NSL" notebook analysis "$B" --report nope -o "$TMP/n.html" 2> /dev/null
check_eq "notebook, unknown report: exit 2" "$?" 2
echo 'print(1)' | "$NSL" repl "$B" --report nope > /dev/null 2>&1; check_eq "repl, unknown report: exit 2" "$?" 2
"$NSL" run summary "$B" --report rank1 --embed > /dev/null 2>&1; check_eq "--embed with --report: exit 2" "$?" 2
check_eq "the bundle is untouched" "$(fingerprint "$B")" "$before"

# view --report: the page holds the one rank's kernels only
"$NSL" view "$B" --report rank2 --no-findings -o "$TMP/v2.html" > /dev/null; rc=$?
check_eq "view --report rank2: exit code" "$rc" 0
"$NSL" --help-synopsis | grep -c -- '--report NAME|N' > "$TMP/n.txt"
check_eq "--report on run, info, repl, tui, view and notebook" "$(cat "$TMP/n.txt")" 6
finish
