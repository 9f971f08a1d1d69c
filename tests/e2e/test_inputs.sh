#!/usr/bin/env bash
# test_inputs.sh -- the inputs users have besides exports:
#   1. .nsys-rep reports through a stand-in nsys (tests/e2e/fake_nsys.sh, which copies a real export where
#      `nsys export` would write): cache, reuse, a changed report, two processes at once, failure, a hang,
#      absent nsys, recognition by content, `nsl bundle --keep-rep`;
#   2. nsys stats CSV files made from real exports by SQL (tests/e2e/make_stats_csv.sh): the numbers nsl reads
#      from them against the same numbers nsl computes from the export, and the export against the SQL;
#   3. a GPU Performance Analyzer config and gputrc2graph inputs, checked against their formulas computed in
#      SQL over the same rows.
. "$(dirname "$0")/lib.sh"

FAKE=$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh
nccl=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
h100=$NSL_DATA_DIR/nsys/pytorch_h100_2gpu_2026.2.sqlite
export NSL_CACHE_DIR=$TMP/cache FAKE_NSYS_LOG=$TMP/nsys.log FAKE_NSYS_EXPORT=$nccl
unset NSYS FAKE_NSYS_EXPORT_FAIL FAKE_NSYS_EXPORT_HANG FAKE_NSYS_EXPORT_GATE NSL_NSYS_TIMEOUT
nsys_exports() { grep -c '^export$' "$FAKE_NSYS_LOG" || true; }
make_report() { printf 'NVIDIA Tegra Profiler Report 2026@2@1@210-1v0.\n%s\n' "$2" > "$1"; }

# ---- 1. .nsys-rep --------------------------------------------------------------------
mkdir -p "$TMP/rep" && cd "$TMP/rep" || exit 1
make_report run.nsys-rep "first"
fp_rep=$(fingerprint run.nsys-rep)
: > "$FAKE_NSYS_LOG"
n_kernels=$(sql "$nccl" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
kernels_of() { # kernels_of OUTPUT.json -> the kernels row count nsl info printed
  sed -n 's/.*"table": *"kernels", *"rows": *\([0-9]*\).*/\1/p' "$1" | head -1
}
"$NSL" info run.nsys-rep --nsys "$FAKE" --format json > info.json 2> info.err
check_eq "rep: info exits 0" "$?" 0
grep -q '"kernels"' info.json && ok "rep: info lists the tables" || bad "rep: info output: $(head -c 300 info.json)"
"$NSL" run summary run.nsys-rep --nsys "$FAKE" --arg only=kernels --format csv > sum.csv 2> sum.err
check_eq "rep: summary exits 0" "$?" 0
got=$(sqlite3 :memory: ".import --csv sum.csv s" "SELECT sum(Instances) FROM s")
check_eq "rep: kernel instances = SQL on the export" "$got" "$n_kernels"
check_eq "rep: one nsys export so far" "$(nsys_exports)" 1
cached=$(find "$TMP/cache/exports" -name 'run.sqlite')
check_eq "rep: the export lies in the cache folder" "$(echo "$cached" | grep -c .)" 1
cmp -s "$cached" "$nccl" && ok "rep: the cached export is nsys's output" || bad "rep: cached export differs"
check_eq "rep: the report is untouched" "$(fingerprint run.nsys-rep)" "$fp_rep"
check_eq "rep: nothing written beside the report" "$(ls | grep -vc '\.json$\|\.csv$\|\.err$' )" 1
grep -q 'run.nsys-rep' sum.err info.err && bad "rep: progress on a non-terminal" || ok "rep: no progress line off a terminal"
[ "$(stat -c %a "$TMP/cache/exports")" = 700 ] && ok "rep: cache folder mode 0700" || bad "rep: cache mode $(stat -c %a "$TMP/cache/exports")"

NSYS=$FAKE "$NSL" run summary run.nsys-rep --arg only=kernels --format csv > sum2.csv 2>&1
check_eq "rep: NSYS finds nsys too" "$?" 0
check_eq "rep: an unchanged report is not exported again" "$(nsys_exports)" 1
cmp -s sum.csv sum2.csv && ok "rep: the reused export gives the same result" || bad "rep: reuse changed the result"
PATH=$(dirname "$FAKE"):$PATH
ln -s "$FAKE" "$TMP/nsys" && PATH=$TMP:$PATH "$NSL" info run.nsys-rep > /dev/null 2>&1
check_eq "rep: nsys found in PATH" "$?" 0

make_report run.nsys-rep "second"   # changed: size and mtime differ (the mtime set apart, not waited for)
touch -d "@$(( $(stat -c %Y run.nsys-rep) + 10 ))" run.nsys-rep
"$NSL" info run.nsys-rep --nsys "$FAKE" > /dev/null 2>&1
check_eq "rep: a changed report is exported again" "$(nsys_exports)" 2
check_eq "rep: still one cache entry" "$(find "$TMP/cache/exports" -name '*.sqlite' | wc -l)" 1

# two processes at once on a new report: one export, both right.  The first holds the export (and its
# lock) open until the second is seen waiting on that lock; then the export is let finish.
make_report twin.nsys-rep "twin"
: > "$FAKE_NSYS_LOG"
wait_file() { for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
holds_lock() { ls -l "/proc/$1/fd" 2> /dev/null | grep -q '/\.lock$'; }
FAKE_NSYS_EXPORT_GATE=$TMP/twin.gate "$NSL" run summary twin.nsys-rep --nsys "$FAKE" --arg only=kernels --format csv \
  > a.csv 2> a.err &
pa=$!
wait_file "$TMP/twin.gate.reached" || bad "rep: concurrent: the first export never started"
FAKE_NSYS_EXPORT_GATE=$TMP/twin.gate "$NSL" run summary twin.nsys-rep --nsys "$FAKE" --arg only=kernels --format csv \
  > b.csv 2> b.err &
pb=$!
for _ in $(seq 1200); do holds_lock $pb && break; kill -0 $pb 2> /dev/null || break; sleep 0.05; done
holds_lock $pb && ok "rep: concurrent: the second waits on the entry's lock while the first exports" ||
  bad "rep: concurrent: the second never waited on the lock"
: > "$TMP/twin.gate"
wait $pa; ra=$?
wait $pb; rb=$?
check_eq "rep: concurrent: both exit 0" "$ra $rb" "0 0"
check_eq "rep: concurrent: one export" "$(nsys_exports)" 1
cmp -s a.csv sum.csv && cmp -s b.csv sum.csv && ok "rep: concurrent: both results right" || bad "rep: concurrent results differ"
check_eq "rep: concurrent: one entry" "$(find "$TMP/cache/exports" -name 'twin.sqlite' | wc -l)" 1
check_eq "rep: concurrent: no temporary file left" "$(find "$TMP/cache/exports" -name '.export-*' | wc -l)" 0

# progress on a terminal (a pseudo-terminal through script(1)), one line rewritten in place
if command -v script > /dev/null; then
  make_report tty.nsys-rep "tty"
  # the export is held open until the progress line has been drawn
  FAKE_NSYS_EXPORT_GATE=$TMP/tty.gate script -qec "'$NSL' info tty.nsys-rep --nsys '$FAKE' > /dev/null" /dev/null \
    > tty.out 2>&1 &
  pt=$!
  for _ in $(seq 1200); do grep -q "exporting tty.nsys-rep with nsys" tty.out && break; sleep 0.05; done
  : > "$TMP/tty.gate"
  wait $pt
  grep -q "exporting tty.nsys-rep with nsys: [0-9.]*[kMG]* B, .* s" tty.out &&
    ok "rep: progress on a terminal" || bad "rep: no progress on a terminal: $(cat -v tty.out | head -c 300)"
else
  ok "rep: progress on a terminal (skipped: no script(1))"
fi

# failure, hang, absence
make_report bad.nsys-rep "bad"
FAKE_NSYS_EXPORT_FAIL=1 "$NSL" info bad.nsys-rep --nsys "$FAKE" > /dev/null 2> fail.err
check_eq "rep: failed export exits 1" "$?" 1
grep -q "cannot open 'bad.nsys-rep': nsys export failed (exit code 1): fake nsys: export failed as asked" fail.err &&
  grep -q -- "export --type=sqlite --output=" fail.err && ok "rep: failure names the file, nsys's message and the command" ||
  bad "rep: failure message: $(cat fail.err)"
check_eq "rep: failure leaves no export" "$(find "$TMP/cache/exports" -name 'bad.sqlite' -o -name '.export-*' | wc -l)" 0
check_eq "rep: failure: one line" "$(wc -l < fail.err)" 1
# the command in the message is shell-quoted: pasted into a shell it gives nsys the same arguments
make_report "it's a run \$HOME;.nsys-rep" "quoted"
FAKE_NSYS_EXPORT_FAIL=1 "$NSL" info "it's a run \$HOME;.nsys-rep" --nsys "$FAKE" > /dev/null 2> quoted.err
cmd=$(sed -n 's/.*; the command was: //p' quoted.err)
eval "set -- $cmd"
check_eq "rep: the suggested command is shell-quoted (the report is one word)" "${!#}" \
  "$(realpath "it's a run \$HOME;.nsys-rep")"
check_eq "rep: the suggested command runs nsys export" "$1 $2 $3" "$FAKE export --type=sqlite"

start=$(date +%s)
FAKE_NSYS_EXPORT_HANG=1 NSL_NSYS_TIMEOUT=2 "$NSL" info bad.nsys-rep --nsys "$FAKE" > /dev/null 2> hang.err
rc=$?
took=$(( $(date +%s) - start ))
check_eq "rep: a hanging nsys: exit 1" "$rc" 1
grep -q "cannot open 'bad.nsys-rep': nsys export did not finish within 2 s (NSL_NSYS_TIMEOUT)" hang.err &&
  ok "rep: the timeout is named" || bad "rep: hang message: $(cat hang.err)"
[ "$took" -lt 30 ] && ok "rep: gave up after the timeout" || bad "rep: took $took s"
check_eq "rep: no leftovers after a timeout" "$(find "$TMP/cache/exports" -name '.export-*' | wc -l)" 0

# a report of a newer release than the nsys found: both versions and what to install, not nsys's own error
# (the oracle: the release in the header and the one `nsys --version` prints)
printf 'NVIDIA Tegra Profiler Report 2026@4@1@191-264138605071v0.\nnewer\n' > newer.nsys-rep
FAKE_NSYS_EXPORT_FAIL=1 FAKE_NSYS_VERSION=2025.3.2.474-253236389321v0 "$NSL" info newer.nsys-rep --nsys "$FAKE" \
  > /dev/null 2> newer.err
check_eq "rep: newer than nsys: exit 1" "$?" 1
grep -q "cannot open 'newer.nsys-rep': the report was written by Nsight Systems 2026.4.1.191-264138605071v0 and $FAKE is 2025.3.2.474-253236389321v0, .*install Nsight Systems 2026.4.1 or newer" newer.err &&
  ok "rep: newer than nsys: both versions and what to install" || bad "rep: newer message: $(cat newer.err)"
check_eq "rep: newer than nsys: one line" "$(wc -l < newer.err)" 1
FAKE_NSYS_EXPORT_FAIL=1 FAKE_NSYS_VERSION=2026.4.1.191-264138605071v0 "$NSL" info newer.nsys-rep --nsys "$FAKE" \
  > /dev/null 2> same.err
grep -q "nsys export failed (exit code 1): fake nsys: export failed as asked" same.err &&
  ok "rep: the same release failing: nsys's own error" || bad "rep: same-release message: $(cat same.err)"

# no nsys anywhere: PATH holds sqlite3 alone (the search's fixed folders are checked to be empty too)
mkdir -p "$TMP/emptybin" && ln -sf "$(command -v sqlite3)" "$TMP/emptybin/sqlite3"
env -u NSYS PATH="$TMP/emptybin" "$NSL" run summary bad.nsys-rep > /dev/null 2> absent.err
rc=$?
if ls -d /opt/nvidia/nsight-systems*/*/bin/nsys /usr/local/cuda/bin/nsys /usr/local/cuda/nsight-systems/bin/nsys > /dev/null 2>&1; then
  ok "rep: absent nsys (skipped: an nsys is installed here)"
else
  check_eq "rep: absent nsys: exit 1" "$rc" 1
  grep -q "cannot open 'bad.nsys-rep': it is an Nsight Systems report and nsys was not found" absent.err &&
    grep -q "nsys export --type=sqlite --output=bad.sqlite bad.nsys-rep" absent.err &&
    ok "rep: absent nsys: the file and the exact command are named" || bad "rep: absent message: $(cat absent.err)"
  check_eq "rep: absent nsys: one line" "$(wc -l < absent.err)" 1
fi

# by content, not by name
printf 'not a report\n' > fake.nsys-rep
"$NSL" info fake.nsys-rep --nsys "$FAKE" > /dev/null 2> fake.err
check_eq "rep: a .nsys-rep name without the content is refused" "$?" 1
grep -q "nsys" fake.err && ! grep -q "Nsight Systems report" fake.err && ok "rep: refused as not an export" ||
  bad "rep: wrong refusal: $(cat fake.err)"
make_report oddname.bin "odd"
"$NSL" info oddname.bin --nsys "$FAKE" > /dev/null 2>&1
check_eq "rep: a report of any name is exported" "$?" 0

# bundle
"$NSL" bundle run.nsys-rep -o b.zip --keep-rep --nsys "$FAKE" > bundle.out 2>&1
check_eq "rep: bundle exits 0" "$?" 0
check_eq "rep: bundle stores the export" "$(unzip -p b.zip reports/run.sqlite | sha256sum | cut -d' ' -f1)" \
  "$(sha256sum < "$nccl" | cut -d' ' -f1)"
check_eq "rep: --keep-rep stores the report" "$(unzip -p b.zip reports/run.nsys-rep | sha256sum | cut -d' ' -f1)" \
  "$(sha256sum < run.nsys-rep | cut -d' ' -f1)"
"$NSL" bundle run.nsys-rep -o c.zip --nsys "$FAKE" > /dev/null 2>&1
unzip -l c.zip | grep -q 'nsys-rep' && bad "rep: the report stored without --keep-rep" || ok "rep: no report without --keep-rep"

# ---- 2. nsys stats CSV files ------------------------------------------------------------
mkdir -p "$TMP/csv" && cd "$TMP/csv" || exit 1
bash "$NSL_SOURCE_DIR/tests/e2e/make_stats_csv.sh" "$nccl" nccl
check_eq "csv: the six reports were made" "$(ls nccl_*.csv | wc -l)" 6
# nsl on the export against the SQL of the report definitions: Total Time and Instances per name
"$NSL" run summary "$nccl" --arg only=kernels,mem_time,api --out exp > /dev/null 2>&1
check_eq "csv: summary on the export" "$?" 0
"$NSL" run summary nccl_cuda_gpu_kern_sum.csv nccl_cuda_gpu_mem_time_sum.csv nccl_cuda_api_sum.csv \
  --arg only=kernels,mem_time,api --out fromcsv > /dev/null 2>&1
check_eq "csv: summary on the CSV files" "$?" 0
for r in cuda_gpu_kern_sum:Name:Instances cuda_gpu_mem_time_sum:Operation:Count; do
  IFS=: read -r rep col cnt <<< "$r"
  diffs=$(sqlite3 :memory: ".import --csv exp/$rep.csv e" ".import --csv nccl_$rep.csv q" ".import --csv fromcsv/$rep.csv c" \
    "SELECT count(*) FROM q LEFT JOIN e ON e.\"$col\" = q.\"$col\" LEFT JOIN c ON c.\"$col\" = q.\"$col\"
     WHERE e.\"Total Time (ns)\" + 0 IS NOT q.\"Total Time (ns)\" + 0 OR c.\"Total Time (ns)\" + 0 IS NOT q.\"Total Time (ns)\" + 0
        OR e.$cnt + 0 IS NOT q.$cnt + 0 OR c.$cnt + 0 IS NOT q.$cnt + 0
        OR abs(e.\"Med (ns)\" - q.\"Med (ns)\") > 0.5 OR abs(c.\"Med (ns)\" - q.\"Med (ns)\") > 1e-6
        OR e.\"Med (ns)\" IS NULL OR c.\"Med (ns)\" IS NULL")
  rows=$(($(wc -l < "nccl_$rep.csv") - 1))
  check_eq "csv: $rep: export = SQL = CSV trace ($rows rows)" "$diffs" 0
done
check_eq "csv: the CSV trace has no mem_size report, and says so" \
  "$("$NSL" run summary nccl_cuda_gpu_kern_sum.csv --arg only=mem_size 2>&1 | grep -c 'nsl reads no such CSV report')" 1
"$NSL" run summary nccl_cuda_gpu_kern_sum.csv --arg only=api > miss.out 2>&1
grep -q "no cuda_api_sum report among the CSV files; add it: nsys stats -r cuda_api_sum" miss.out &&
  ok "csv: a missing report is named" || bad "csv: missing report: $(cat miss.out)"
"$NSL" run gaps nccl_cuda_gpu_kern_sum.csv > /dev/null 2> gaps.err
check_eq "csv: gaps refuses summaries" "$?" 1
grep -q "hold summaries, not the events" gaps.err && ok "csv: gaps says what it needs" || bad "csv: gaps: $(cat gaps.err)"
# nvtx_sum: the export's (nsl nvtx) = the SQL's = the CSV trace's, per (Style, Range)
"$NSL" run nvtx "$nccl" --arg only=sum --out ne > /dev/null 2>&1
"$NSL" run nvtx nccl_nvtx_sum.csv --out nc > /dev/null 2>&1
check_eq "csv: nvtx_sum: export = SQL = CSV trace" "$(sqlite3 :memory: ".import --csv ne/nvtx_sum.csv e" \
  ".import --csv nccl_nvtx_sum.csv q" ".import --csv nc/nvtx_sum.csv c" \
  "SELECT count(*) FROM q LEFT JOIN e ON e.Range = q.Range AND e.Style = q.Style
     LEFT JOIN c ON c.Range = q.Range AND c.Style = q.Style
   WHERE e.\"Total Time (ns)\" + 0 IS NOT q.\"Total Time (ns)\" + 0 OR e.Instances + 0 IS NOT q.Instances + 0
      OR c.\"Total Time (ns)\" + 0 IS NOT q.\"Total Time (ns)\" + 0 OR c.Instances + 0 IS NOT q.Instances + 0")" 0
# the projected NVTX ranges: the CSV's rows are the gpu_ranges table
"$NSL" run info nccl_nvtx_gpu_proj_trace.csv --format json > pj.json 2>&1
grep -q "\"gpu_ranges\"" pj.json && ok "csv: nvtx_gpu_proj_trace becomes gpu_ranges" || bad "csv: gpu_ranges: $(head -c 300 pj.json)"
# classes from the CSV files = classes from the export (Total Time and Instances per class)
"$NSL" run classes nccl_cuda_gpu_kern_sum.csv nccl_cuda_gpu_mem_time_sum.csv --out cc > /dev/null 2>&1
"$NSL" run classes "$nccl" --out ce > /dev/null 2>&1
check_eq "csv: classes per class equal the export's" "$(sqlite3 :memory: ".import --csv cc/classes.csv c" ".import --csv ce/classes.csv e" \
  "SELECT count(*) FROM e LEFT JOIN c USING (Class) WHERE c.\"Total Time (ns)\" + 0 IS NOT e.\"Total Time (ns)\" + 0
   OR c.Instances + 0 IS NOT e.Instances + 0")" 0
# headers of older releases (gpukernsum: Time(%), Average, Minimum, Maximum) are recognised too
sqlite3 :memory: ".import --csv nccl_cuda_gpu_kern_sum.csv k" ".headers on" ".mode csv" \
  "SELECT \"Time (%)\" AS \"Time(%)\", \"Total Time (ns)\", Instances, \"Avg (ns)\" AS Average, \"Min (ns)\" AS Minimum,
          \"Max (ns)\" AS Maximum, Name FROM k" > old_gpukernsum.csv
"$NSL" run classes old_gpukernsum.csv --out co > /dev/null 2>&1
"$NSL" run classes nccl_cuda_gpu_kern_sum.csv --out ck > /dev/null 2>&1
check_eq "csv: a 2021 header gives the same classes" "$(sqlite3 :memory: ".import --csv ck/classes.csv c" ".import --csv co/classes.csv o" \
  "SELECT count(*) FROM o JOIN c USING (Class) WHERE o.\"Total Time (ns)\" = c.\"Total Time (ns)\" AND o.Instances = c.Instances")" \
  "$(sqlite3 :memory: ".import --csv co/classes.csv o" "SELECT count(*) FROM o")"
printf 'a,b,c\n1,2,3\n' > plain.csv
"$NSL" info plain.csv > /dev/null 2> plain.err
check_eq "csv: an unknown CSV is refused" "$?" 1

# cuda_gpu_trace: the kernels, memcpy and memset themselves; every summary nsl makes from them equals the export's
"$NSL" run summary nccl_cuda_gpu_trace.csv --arg only=kernels,mem_time,mem_size --out gt > /dev/null 2>&1
check_eq "csv: summary on cuda_gpu_trace" "$?" 0
"$NSL" run summary "$nccl" --arg only=kernels,mem_time,mem_size --out ge > /dev/null 2>&1
for t in cuda_gpu_kern_sum cuda_gpu_mem_time_sum cuda_gpu_mem_size_sum; do
  cmp -s gt/$t.csv ge/$t.csv && ok "csv: cuda_gpu_trace: $t = the export's" || bad "csv: cuda_gpu_trace: $t differs"
done
cat > per_stream.lua <<'LUA'
return {name = "per_stream", description = "kernels per device and stream", args = {},
        run = function(trace, _, out)
          local g = trace.kernels:group_by("device", "stream"):agg{"n=count"}:sort("device", "stream")
          local parts = {}
          for i = 1, #g do parts[i] = g.device[i] .. ":" .. g.stream[i] .. ":" .. g.n[i] end
          out:text(table.concat(parts, " "))
        end}
LUA
check_eq "csv: cuda_gpu_trace: kernels per device and stream = SQL on the export" \
  "$("$NSL" run per_stream.lua nccl_cuda_gpu_trace.csv 2>&1)" "$(sql "$nccl" "SELECT group_concat(d || ':' || s || ':' || n, ' ')
   FROM (SELECT deviceId AS d, streamId AS s, count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1, 2 ORDER BY 1, 2)")"

# ---- 3. GPU Performance Analyzer and gputrc2graph ---------------------------------------
make_report "$TMP/csv/nccl.nsys-rep" "gpa"
cat > gpa.json <<EOF
{"inputs": [
  {"format": "csv", "title": "csv",
   "nsys_csv_file_path": {"kernel_sum": "nccl_cuda_gpu_kern_sum.csv", "nvtx_proj_trace": "nccl_nvtx_gpu_proj_trace.csv",
                          "mem_time_sum": "nccl_cuda_gpu_mem_time_sum.csv"},
   "analysis_args": {"num_of_iters": 32, "num_of_gpus": 2, "nvtx_tag_of_iter": "ncclGroupEnd"}},
  {"format": "nsys-rep", "title": "rep",
   "nsys_report": {"path": "nccl.nsys-rep", "with_nvtx": true, "with_mem": true},
   "analysis_args": {"num_of_iters": 32, "num_of_gpus": 2, "nvtx_tag_of_iter": "ncclGroupEnd"}}],
 "kernel_to_class_map": {"nvjet": "gemm", "flash": "fmha", "elementwise": "elementwise", "reduce": "reduce"}}
EOF
NSYS=$FAKE "$NSL" run classes --arg config=gpa.json --out gpa > gpa.out 2>&1
check_eq "gpa: config runs" "$?" 0
# GPA's formulas in SQL over the cuda_gpu_kern_sum rows: class by first contained key, nccl first, else others
oracle="CREATE TABLE c AS SELECT CASE WHEN instr(lower(Name), 'nccl') THEN 'nccl' WHEN instr(lower(Name), 'nvjet') THEN 'gemm'
          WHEN instr(lower(Name), 'flash') THEN 'fmha' WHEN instr(lower(Name), 'elementwise') THEN 'elementwise'
          WHEN instr(lower(Name), 'reduce') THEN 'reduce' ELSE 'others' END AS class,
          CAST(\"Total Time (ns)\" AS INTEGER) AS total, CAST(Instances AS INTEGER) AS n FROM k;
        CREATE TABLE o AS SELECT class, sum(total / 64.0) AS tpi, sum(n / 64) AS ipi, sum(total) AS total, sum(n) AS n
          FROM c GROUP BY class;"
for input in csv rep; do
  check_eq "gpa: $input: per class = GPA's formulas in SQL" "$(sqlite3 :memory: ".import --csv nccl_cuda_gpu_kern_sum.csv k" \
    ".import --csv gpa/gpa_classes.csv g" "$oracle" \
    "SELECT count(*) FROM o JOIN g ON g.Class = o.class AND g.Input = '$input'
     WHERE abs(g.\"Time per Iteration (ns)\" - o.tpi) < 1e-6 * o.tpi + 1e-9 AND g.\"Instances per Iteration\" + 0 = o.ipi
       AND g.\"Total Time (ns)\" + 0 = o.total AND g.\"Total Instances\" + 0 = o.n")" \
    "$(sqlite3 :memory: ".import --csv nccl_cuda_gpu_kern_sum.csv k" "$oracle" "SELECT count(*) FROM o WHERE class <> 'nccl'")"
  # the NVTX estimate: ranges named by the tag in nvtx_gpu_proj_trace, minus the non-NCCL kernel time
  check_eq "gpa: $input: estimate = SQL" "$(sqlite3 :memory: ".import --csv nccl_cuda_gpu_kern_sum.csv k" \
    ".import --csv nccl_nvtx_gpu_proj_trace.csv p" ".import --csv gpa/gpa_summary.csv s" "$oracle" \
    "SELECT (SELECT count(*) FROM p WHERE Name = 'ncclGroupEnd') = s.\"NVTX Ranges\" + 0
        AND abs((SELECT sum(\"Projected Duration (ns)\") FROM p WHERE Name = 'ncclGroupEnd')
                - (SELECT sum(total) FROM o WHERE class <> 'nccl') - s.\"Estimate Total (ns)\") < 1e-3
     FROM s WHERE Input = '$input'")" 1
done
grep -q "64 NVTX ranges 'ncclGroupEnd', but num_of_iters is 32" gpa.out && ok "gpa: the iteration-count warning" ||
  bad "gpa: no warning: $(head -5 gpa.out)"
[ -s gpa/gpa_exact.csv ] && ok "gpa: nsl's exact split beside the estimate" || bad "gpa: no exact split"
# a config naming an absent NVTX projection: GPA skips the NVTX estimate and goes on; without any
# NVTX input the NVTX and estimate columns are left out, not printed as 0
sed 's/"nccl_nvtx_gpu_proj_trace.csv"/"no_such_nvtx_gpu_proj_trace.csv"/' gpa.json |
  python3 -c 'import json, sys; d = json.load(sys.stdin); d["inputs"] = d["inputs"][:1]; print(json.dumps(d))' > gpa_nonvtx.json
"$NSL" run classes --arg config=gpa_nonvtx.json --out gpa_nonvtx > gpa_nonvtx.out 2>&1
check_eq "gpa: an absent NVTX projection CSV: the config still runs" "$?" 0
grep -q "no NVTX projection '.*no_such_nvtx_gpu_proj_trace.csv'" gpa_nonvtx.out && ok "gpa: the absent NVTX file is named" ||
  bad "gpa: absent NVTX file not named: $(head -3 gpa_nonvtx.out)"
check_eq "gpa: without NVTX input, no NVTX or estimate column" \
  "$(head -1 gpa_nonvtx/gpa_summary.csv | tr ',' '\n' | grep -c -E 'NVTX|Estimate')" 0
check_eq "gpa: without NVTX input, the class table = GPA's formulas in SQL" "$(sqlite3 :memory: \
  ".import --csv nccl_cuda_gpu_kern_sum.csv k" ".import --csv gpa_nonvtx/gpa_classes.csv g" "$oracle" \
  "SELECT count(*) FROM o JOIN g ON g.Class = o.class
   WHERE abs(g.\"Time per Iteration (ns)\" - o.tpi) < 1e-6 * o.tpi + 1e-9 AND g.\"Total Time (ns)\" + 0 = o.total")" \
  "$(sqlite3 :memory: ".import --csv nccl_cuda_gpu_kern_sum.csv k" "$oracle" "SELECT count(*) FROM o WHERE class <> 'nccl'")"

# gputrc2graph: the non-overlapped time per name in SQL (a running max of the ends, in start order)
cat > vllm.json <<'EOF'
{"vllm": {"llama": {"flash|attn": "attn", "nvjet|gemm": "gemm", "nccl": "nccl", "CUDA mem": "non-gpu-H_D_memops",
                    "elementwise": "elementwise"}}}
EOF
"$NSL" run classes --arg map=vllm.json --arg in_file="$nccl,vllm,llama,5 $h100,vllm,llama,0" --out g2g > g2g.out 2>&1
check_eq "g2g: runs" "$?" 0
for f in gputrc2graph.csv gputrc2graph_totals.csv gputrc2graph.png gputrc2graph.svg result.html; do
  [ -s "g2g/$f" ] && ok "g2g: wrote $f" || bad "g2g: no $f"
done
elapsed_sql() { # elapsed_sql EXPORT -> name|elapsed ns, per name
  sql "$1" "WITH ops AS (
      SELECT s.value AS name, k.start, k.\"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
      UNION ALL SELECT '[CUDA memcpy ' || e.label || ']', m.start, m.\"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY m
        JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind
      UNION ALL SELECT '[CUDA memset]', start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMSET),
    w AS (SELECT name, start, \"end\", max(\"end\") OVER (ORDER BY start, \"end\", name ROWS BETWEEN UNBOUNDED PRECEDING
          AND 1 PRECEDING) AS before FROM ops)
    SELECT name, sum(max(0, \"end\" - max(start, coalesce(before, start)))) FROM w GROUP BY name"
}
{ printf 'name\tc2\n'; elapsed_sql "$nccl" | tr '|' '\t'; } > oracle.tsv
bad_rows=$(sqlite3 :memory: ".mode tabs" ".import oracle.tsv o" ".mode csv" ".import --csv g2g/gputrc2graph.csv g" ".mode list" \
  "SELECT count(*) FROM o LEFT JOIN g ON g.Name = o.name AND g.Model_Engine = 'llama_vllm_pytorch_nccl_2gpu_2026.2.sqlite_0'
   WHERE g.Name IS NULL OR abs(g.\"Elapsed Time (sec)\" * 1e9 - o.c2) > 0.5")
check_eq "g2g: elapsed seconds per name = SQL ($(wc -l < oracle.tsv) names)" "$bad_rows" 0
"$NSL" run classes --arg map=vllm.json --arg in_file="nccl_cuda_gpu_trace.csv,vllm,llama,5" --out g2c > /dev/null 2>&1
bad_rows=$(sqlite3 :memory: ".mode tabs" ".import oracle.tsv o" ".mode csv" ".import --csv g2c/gputrc2graph.csv g" ".mode list" \
  "SELECT count(*) FROM o LEFT JOIN g ON g.Name = o.name WHERE g.Name IS NULL OR abs(g.\"Elapsed Time (sec)\" * 1e9 - o.c2) > 0.5")
check_eq "g2g: from the cuda_gpu_trace CSV = SQL on the export" "$bad_rows" 0
gpu=$(sqlite3 :memory: ".mode tabs" ".import oracle.tsv o" "SELECT round(sum(c2) / 1e9, 1) FROM o")
nongpu=$(sqlite3 :memory: ".import --csv g2g/gputrc2graph.csv g" \
  "SELECT round(\"Elapsed Time (sec)\", 6) FROM g WHERE Name = 'CPU(non-GPU)' AND Model_Engine LIKE '%nccl%'")
check_eq "g2g: non-GPU = 5.0 - round(GPU, 1)" "$nongpu" "$(sqlite3 :memory: "SELECT round(5.0 - $gpu, 6)")"
# elapsed 0: the report's own elapsed time (ANALYSIS_DETAILS.duration, the session nsys recorded)
gpu_h=$(elapsed_sql "$h100" | awk -F'|' '{s += $2} END {printf "%.0f", s}')
check_eq "g2g: SEC 0 takes the report's duration" "$(sqlite3 :memory: ".import --csv g2g/gputrc2graph.csv g" \
  "SELECT round(\"Elapsed Time (sec)\", 6) FROM g WHERE Name = 'CPU(non-GPU)' AND Model_Engine LIKE '%h100%'")" \
  "$(sql "$h100" "SELECT round(round(duration / 1e9, 1) - round($gpu_h / 1e9, 1), 6) FROM ANALYSIS_DETAILS")"
check_eq "g2g: a category of every name with a match" "$(sqlite3 :memory: ".import --csv g2g/gputrc2graph.csv g" \
  "SELECT count(*) FROM g WHERE Name LIKE '%nvjet%' AND Category <> 'gemm'")" 0


# A damaged export (found by fuzzing): a covering index of CUPTI_ACTIVITY_KIND_RUNTIME reads as NULL starts,
# which SQLite returns without an error, though the schema declares start NOT NULL.  Loading the column fails
# with one line naming the file, the table and the column, instead of events without a time reaching analyses.
dmg=$NSL_SOURCE_DIR/tests/fuzz/corpus/analyses_sqlite/crash-damaged-covering-index.sqlite
check_eq "damaged export: SQL reads NULL starts where the schema says NOT NULL" \
  "$(sql "$dmg" "SELECT (SELECT count(*) - count(start) > 0 FROM CUPTI_ACTIVITY_KIND_RUNTIME),
                        (SELECT \"notnull\" FROM pragma_table_info('CUPTI_ACTIVITY_KIND_RUNTIME') WHERE name = 'start')")" "1|1"
cat > "$TMP/api_start.lua" <<'LUA'
return {name = "api_start", run = function(trace, _, out) trace.api:load{"start"} out:text(#trace.api) end}
LUA
out=$(NSL_NO_CACHE=1 "$NSL" run "$TMP/api_start.lua" "$dmg" 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
  echo "$out" | grep -q "crash-damaged-covering-index.sqlite' is damaged: CUPTI_ACTIVITY_KIND_RUNTIME.start holds NULL" &&
  ok "damaged export: one line naming the file, table and column, exit 1" || bad "damaged export: exit $rc: $out"

# Another damaged export (found by fuzzing): SQLite counts no rows in CUPTI_ACTIVITY_KIND_RUNTIME (through a
# damaged index) but reads 9 of its nameId column.  The table's row count, then a column of another length: one
# line naming the file and the table, exit 1 (it was an internal error on the table's column lengths).
dmg=$NSL_SOURCE_DIR/tests/fuzz/corpus/analyses_sqlite/crash-api-rows-disagree.sqlite
check_eq "damaged export: SQL counts the runtime table's rows apart from the rows of a column" \
  "$(sql "$dmg" "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME), (SELECT count(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME)")" "0|9"
cat > "$TMP/api_rows.lua" <<'LUA'
return {name = "api_rows", run = function(trace, _, out) local n = #trace.api trace.api:load{"name"} out:text(n) end}
LUA
out=$(NSL_NO_CACHE=1 "$NSL" run "$TMP/api_rows.lua" "$dmg" 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
  echo "$out" | grep -q "crash-api-rows-disagree.sqlite' is damaged: its api table reads as 9 rows for name, as 0 before" &&
  ok "damaged export: rows that disagree, one line naming the file and table, exit 1" || bad "damaged export: exit $rc: $out"
# The same beside a sound export: with every report's rows counted first, the reports' columns are copied into
# the whole table as each is read (a direct load); the damaged one still fails it with the same line.
out=$(NSL_NO_CACHE=1 "$NSL" run "$TMP/api_rows.lua" "$nccl" "$dmg" 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
  echo "$out" | grep -q "crash-api-rows-disagree.sqlite' is damaged: its api table reads as 9 rows for name, as 0 before" &&
  ok "damaged export beside a sound one: one line naming the file and table, exit 1" ||
  bad "damaged export beside a sound one: exit $rc: $out"
# A direct load of two sound reports (rows counted, then loaded, cold and warm): each report's rows are its own,
# in their places: the calls per (report, name) equal SQL's on each export (names as nsys's reports give them:
# "cudaLaunchKernel_v7000" is "cudaLaunchKernel").
h100=$NSL_DATA_DIR/nsys/pytorch_h100_2gpu_2026.2.sqlite
cat > "$TMP/api_names.lua" <<'LUA'
return {name = "api_names", run = function(trace, _, out)
  local n = #trace.api
  trace.api:load{"report", "name", "start"}
  local g = trace.api:group_by("report", "name"):agg{"n=count"}
  local lines = {}
  for i = 1, #g do lines[i] = string.format("%d|%s|%d", g.report[i], g.name[i], g.n[i]) end
  out:text(string.format("%d rows\n%s", n, table.concat(lines, "\n")))
end}
LUA
api_counts() {   # api_counts REPORT FILE: report|name|calls of the export's CUDA runtime calls
  sql "$2" "SELECT $1, CASE WHEN length(s.value) >= 6 AND substr(s.value, -6, 2) = '_v'
              THEN substr(s.value, 1, length(s.value) - 6) ELSE s.value END AS n, count(*)
            FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId GROUP BY n"
}
want=$( (api_counts 0 "$nccl"; api_counts 1 "$h100") | LC_ALL=C sort)
for how in cold warm; do
  got=$(NSL_CACHE_DIR="$TMP/direct_cache" "$NSL" run "$TMP/api_names.lua" "$nccl" "$h100" -q 2>&1 | tail -n +2 |
        LC_ALL=C sort)
  check_eq "direct load of two reports ($how): calls per report and name = SQL's" "$got" "$want"
done

# Damaged times (found by sweeping extreme values through every analysis): one kernel of a copy of the NCCL
# export starting at -2^62 ns makes a span of 146 years, whose arithmetic (lanes laid end to end, bin edges)
# wrapped around: an internal error in overlap, compare, diagnose's overlap checks and timeline.  Now one line
# naming the file (the runner leads an input's error that names no input with the inputs) and the span, exit 1;
# SQL shows the span.
cp "$nccl" "$TMP/damaged_times.sqlite" && chmod u+w "$TMP/damaged_times.sqlite"
sqlite3 "$TMP/damaged_times.sqlite" "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -4611686018427387904
  WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
span=$(sql "$TMP/damaged_times.sqlite" "SELECT min(start) || ' to ' || max(end) FROM (SELECT start, end FROM
  CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end
  FROM CUPTI_ACTIVITY_KIND_MEMSET)")
for a in overlap timeline; do
  out=$(NSL_NO_CACHE=1 "$NSL" run $a "$TMP/damaged_times.sqlite" --out "$TMP/damaged_$a" 2>&1); rc=$?
  [ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "damaged_times.sqlite: the trace's times are damaged: they run from -4611686018427387904 to" &&
    ok "damaged times: $a says so in one line naming the file, exit 1" || bad "damaged times: $a: exit $rc: $out"
done
out=$(NSL_NO_CACHE=1 "$NSL" run overlap "$TMP/damaged_times.sqlite" 2>&1)
echo "$out" | grep -q "from ${span% to *} to ${span#* to } ns" && ok "damaged times: overlap's span is SQL's ($span)" ||
  bad "damaged times: overlap: $out (SQL: $span)"

# An nsys stats GPU trace without devices (its Device column emptied; found by mutating CSV files through every
# analysis): gaps put the operations in one group of no device and its idle warning failed to print one (an
# internal error).  Now "device ?", and the group holds every operation that lasts, as SQL counts them.
cd "$TMP/csv" || exit 1
python3 - nccl_cuda_gpu_trace.csv nodev_cuda_gpu_trace.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
k = rows[0].index("Device")
for r in rows[1:]:
    r[k] = ""
csv.writer(open(sys.argv[2], "w", newline=""), lineterminator="\n").writerows(rows)
PY
out=$("$NSL" run gaps nodev_cuda_gpu_trace.csv --arg scope=device --arg warn_idle=0.001 --out nodev 2>&1); rc=$?
check_eq "csv without devices: gaps exits 0" "$rc" 0
check_eq "csv without devices: the idle warning names device ?" "$(echo "$out" | grep -c 'device ? is idle')" 1
check_eq "csv without devices: one group of every operation that lasts, as SQL counts them" \
  "$(sqlite3 :memory: ".import --csv nodev/gaps_device_summary.csv g" "SELECT count(*) || ' ' || sum(Ops) FROM g")" \
  "1 $(sqlite3 :memory: ".import --csv nodev_cuda_gpu_trace.csv t" "SELECT count(*) FROM t WHERE \"Duration (ns)\" + 0 > 0")"

finish
