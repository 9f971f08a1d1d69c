#!/usr/bin/env bash
# --from/--to (a window of the trace) and --device N on the commands that
# open traces: what summary, nvtx, gaps and diagnose print over a window
# equals SQL over the rows that overlap it (start < end of the window and
# end > its start, times counted from the trace's first event, rows kept
# whole); step windows (step:N) start and end where the iterations' marker
# kernel says, by SQL; --device keeps that GPU's rows and the host's; bad
# windows and devices are one line naming the span, steps or devices, exit 2.
. "$(dirname "$0")/lib.sh"
F=$TMP/h100.sqlite
cp -p "$NSL_DATA_DIR/nsys/pytorch_h100_2gpu_2026.2.sqlite" "$F"
before=$(fingerprint "$F")
export NSL_CACHE_DIR=$TMP/cache

# the trace's first event: the earliest kernel, memory operation, NVTX range or CUDA API call
T0=$(sql "$F" "SELECT min(s) FROM (SELECT min(start) s FROM CUPTI_ACTIVITY_KIND_KERNEL
               UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY
               UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMSET
               UNION ALL SELECT min(start) FROM NVTX_EVENTS
               UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME)")
A=$((T0 + 150000000))
B=$((T0 + 750000000))
W="start < $B AND end > $A"
json_sum() { # json_sum FILE COLUMN: the column summed over every table of a --format json output
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(sum(r[sys.argv[2]] for t in d["tables"].values() for r in t))' "$1" "$2"
}

# summary: instances and total time of the kernels overlapping the window, whole
"$NSL" run summary "$F" --from 150ms --to 750ms --arg only=kernels --format json > "$TMP/s.json" 2> "$TMP/s.err"
check_eq "summary --from 150ms --to 750ms: exit 0" "$?" 0
check_eq "summary over the window: instances = SQL's overlapping kernels" "$(json_sum "$TMP/s.json" Instances)" \
  "$(sql "$F" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE $W")"
check_eq "summary over the window: total time = SQL's whole durations" "$(json_sum "$TMP/s.json" 'Total Time (ns)')" \
  "$(sql "$F" "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE $W")"
all=$(sql "$F" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
[ "$(json_sum "$TMP/s.json" Instances)" -lt "$all" ] && ok "the window drops kernels ($all in all)" ||
  bad "the window kept every kernel"

# nvtx: the ranges overlapping the window
"$NSL" run nvtx "$F" --from 150ms --to 750ms --out "$TMP/n" > /dev/null 2> "$TMP/n.err"
check_eq "nvtx over the window: exit 0" "$?" 0
got=$(awk -F, 'NR > 1 { n += $3; t += $2 } END { printf "%.0f %.0f\n", n, t }' "$TMP/n/nvtx_sum.csv")
check_eq "nvtx over the window: instances and total time = SQL's overlapping ranges" "$got" \
  "$(sql "$F" "SELECT count(*) || ' ' || sum(end - start) FROM NVTX_EVENTS WHERE eventType = 59 AND $W")"

# gaps: per device, the GPU operations overlapping the window, their span, union and largest gap
"$NSL" run gaps "$F" --from 150ms --to 750ms --arg min=5us --arg n=0 --out "$TMP/g" > /dev/null 2> "$TMP/g.err"
check_eq "gaps over the window: exit 0" "$?" 0
got=$(awk -F, 'NR > 1 { print $2, $3, $4, $5, $10 }' "$TMP/g/gaps_device_summary.csv")
want=$(sql "$F" "WITH o AS (SELECT deviceId d, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE $W
                            UNION ALL SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE $W
                            UNION ALL SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE $W),
                 p AS (SELECT d, start, end, max(end) OVER (PARTITION BY d ORDER BY start, end
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM o)
                 SELECT d || ' ' || count(*) || ' ' || (max(end) - min(start)) || ' ' ||
                        (max(end) - min(start) - sum(CASE WHEN start > reach THEN start - reach ELSE 0 END)) || ' ' ||
                        max(CASE WHEN start > reach THEN start - reach ELSE 0 END)
                 FROM p GROUP BY d ORDER BY d")
check_eq "gaps over the window: device, ops, span, busy, largest gap = SQL's union" "$got" "$want"

# diagnose: its api.sync evidence is the sync calls overlapping the window; next commands repeat the window
"$NSL" run diagnose "$F" --from 150ms --to 750ms --format json > "$TMP/d.json" 2> "$TMP/d.err"
check_eq "diagnose over the window: exit 0" "$?" 0
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
for r in sorted(d["tables"]["api_sync"], key=lambda r: r["start (ns)"]): print(r["start (ns)"], r["blocked (ns)"])' "$TMP/d.json")
check_eq "diagnose over the window: api.sync's calls = SQL's overlapping sync calls" "$got" \
  "$(sql "$F" "SELECT r.start || ' ' || (r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
               WHERE (s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cudaStreamSynchronize%') AND r.$W
               ORDER BY r.start")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
nexts = [f["next"] for f in d["findings"] if f.get("next")]
sys.exit(0 if nexts and all(n.endswith(" --from 150000000ns --to 750000000ns") for n in nexts) else 1)' "$TMP/d.json" &&
  ok "diagnose over the window: every next command repeats the window (from the report's first event)" ||
  bad "diagnose: next commands lose the window: $(grep -o '"next": *"[^"]*"' "$TMP/d.json" | head -2)"

# steps: step:3 starts at the marker kernel's 3rd period, step:10 ends at its 11th (iterations' detection, by SQL)
how=$("$NSL" run iterations "$F" 2> /dev/null | head -1)
name=$(echo "$how" | sed -n "s/.*kernel '\([^']*\)' on device \([0-9]*\).*/\1/p")
dev=$(echo "$how" | sed -n "s/.*kernel '\([^']*\)' on device \([0-9]*\).*/\2/p")
lag=$(echo "$how" | sed -n 's/.*(every \([0-9]*\)-th run).*/\1/p')
lag=${lag:-1}
[ -n "$name" ] && ok "iterations finds a marker kernel ($name, device $dev, every $lag)" || bad "no marker kernel: $how"
occ() { sql "$F" "SELECT k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                  WHERE s.value = '$name' AND k.deviceId = $dev ORDER BY k.start LIMIT 1 OFFSET $1"; }
S3=$(occ $((2 * lag)))
E10=$(occ $((10 * lag)))
"$NSL" run summary "$F" --from step:3 --to step:10 --arg only=kernels --format json > "$TMP/st.json" 2> "$TMP/st.err"
check_eq "summary --from step:3 --to step:10: exit 0" "$?" 0
check_eq "steps 3 to 10: the kernels overlapping SQL's step boundaries" "$(json_sum "$TMP/st.json" Instances)" \
  "$(sql "$F" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < $E10 AND end > $S3")"
"$NSL" run summary "$F" --from "$((S3 - T0))ns" --to "$((E10 - T0))ns" --arg only=kernels --format json > "$TMP/sn.json"
cmp -s "$TMP/st.json" "$TMP/sn.json" && ok "step:3..step:10 = the same window given in ns from the start" ||
  bad "step window differs from its times: $(diff "$TMP/st.json" "$TMP/sn.json" | head -3)"

# --device: that GPU's operations, every host row
lua='print(#trace.kernels, #trace.memcpy, #trace.api, #trace.nvtx, #trace.devices)'
got=$(echo "$lua" | "$NSL" repl "$F" --device 1 2>&1 | tr -s ' \t' ' ')
check_eq "repl --device 1: its kernels and copies, every API call and NVTX range, one device row" "$got" \
  "$(sql "$F" "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 1) || ' ' ||
               (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 1) || ' ' ||
               (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME) || ' ' || (SELECT count(*) FROM NVTX_EVENTS) || ' 1'")"
got=$(echo 'print(#trace.kernels)' | "$NSL" repl "$F" --device 0 --from 150ms --to 750ms 2>&1)
check_eq "repl --device 0 with a window: both conditions" "$got" \
  "$(sql "$F" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0 AND $W")"

# one time base: the largest idle gap of device 0 (SQL's union) prints at the same "At (s from start)" in gaps, in
# diagnose's gpu.gaps evidence and finding, and in gaps over a window holding it
at=$(sql "$F" "WITH o AS (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0
                          UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0
                          UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE deviceId = 0),
               p AS (SELECT start, max(end) OVER (ORDER BY start, end ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM o)
               SELECT printf('%.6f', (reach - $T0) / 1e9) FROM p WHERE start > reach ORDER BY start - reach DESC LIMIT 1")
"$NSL" run gaps "$F" --arg scope=device --arg n=1 > "$TMP/gt.txt" 2>&1
"$NSL" run diagnose "$F" --arg gap=500us > "$TMP/dt.txt" 2>&1
"$NSL" run gaps "$F" --arg scope=device --arg n=1 --from 600ms --to 800ms > "$TMP/gw.txt" 2>&1
row() { awk -v h="$2" 'index($0, h) { on = 1 } on && / 0 / && index($0, "h100") { print; exit }' "$1"; }
for f in gt gw; do
  grep -q "At (s from start)" "$TMP/$f.txt" && row "$TMP/$f.txt" "At (s from start)" | grep -q " $at " &&
    ok "$f: the largest gap printed at $at s from the start (SQL)" || bad "$f: At of the largest gap is not $at: $(row "$TMP/$f.txt" "At (s")"
done
row "$TMP/dt.txt" "At (s from start)" | grep -q " $at " && ok "diagnose's gpu.gaps evidence: the same gap at $at" ||
  bad "diagnose's gpu.gaps evidence: not at $at: $(row "$TMP/dt.txt" "At (s from start)")"
grep -q "device 0, pid [0-9]*, from ${at}s" "$TMP/dt.txt" && ok "diagnose's gpu.gaps finding: from ${at}s" ||
  bad "diagnose's finding: $(grep "gpu.gaps" "$TMP/dt.txt" | head -2)"

# refusals: one line naming the file and the span, steps or devices; exit 2
usage_error "a window past the end" "$F: --from 30s: the window starts after the trace's last event: the trace lasts 969.448 ms" \
  run summary "$F" --from 30s
usage_error "an empty window" "the window from 500ms to 100ms is empty: the trace lasts" info "$F" --from 500ms --to 100ms
usage_error "a step the trace lacks" "--to step:99: the trace has steps 1 to 28" run summary "$F" --to step:99
usage_error "a bad time" "--from: 'soon' is not a duration" run nvtx "$F" --from soon
usage_error "an unknown device" "--device 7: the trace's devices are 0, 1" run gaps "$F" --device 7
usage_error "a window under --embed" "--embed stores results for the whole bundle: leave out --from" \
  run summary "$F" --from 1s --embed
check_eq "input unchanged" "$(fingerprint "$F")" "$before"
finish
