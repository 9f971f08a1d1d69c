#!/usr/bin/env bash
# test_real_nsys.sh -- `nsl profile` with NVIDIA's real nsys (Debian's nsight-systems 2022.4), end to end, on a
# CPU program (tests/helpers/nvtx_app.c: NVTX v2 ranges and OS runtime calls), profiled once:
#   1. profile -> (the .qdstrm importer fallback) -> report -> export -> bundle -> an analysis stored in it;
#      oracles: the program's own account of what it did, SQL through sqlite3 on the export in the bundle, and
#      this nsys's own `nsys stats -r nvtxsum`;
#   2. the bundle's .nsys-rep opened through the real nsys (a second export of it) against the same SQL;
#   3. a copy of the report whose header names a newer release: both versions and what to install;
#   4. the export of 2022.4 joins the schema test (tests/e2e/test_exports.sh: every table row-counted by SQL).
# Skips (passing, with the reason) without a real nsys or with NSL_NO_NONFREE=1.
. "$(dirname "$0")/lib.sh"
real_nsys_or_skip
APP=${NSL_BUILD_DIR:-}/nvtx_app
if [ ! -x "$APP" ]; then echo "skipped: no nvtx_app in the build (libnvtoolsext1 was missing when cmake ran)"; exit 0; fi
cd "$TMP" || exit 1
export NSL_CACHE_DIR=$TMP/cache
STEPS=4

# ---- 1. profile, import, export, bundle, analyse ----------------------------------------------
"$NSL" profile -o run.zip --analysis nvtx -t osrt,nvtx --sample=none --cpuctxsw=none -- "$APP" $STEPS \
  > profile.out 2> profile.err
check_eq "profile: exit code" "$?" 0
grep -qx "steps $STEPS nanosleep $STEPS io $STEPS" profile.out && ok "profile: the program ran under nsys" ||
  bad "profile: program output: $(cat profile.out)"
if grep -q 'importer binary and its dependencies were not found' profile.err; then
  check_eq "importer: nsl says it imports the .qdstrm, once" "$(grep -c '^nsl: nsys left a .qdstrm' profile.err)" 1
  importer=$(sed -n 's/^nsl: nsys left a .qdstrm (it did not find its importer): importing it with //p' profile.err)
  [ -x "$importer" ] && [ "$(basename "$importer")" = QdstrmImporter ] && ok "importer: the one shipped with nsys" ||
    bad "importer: '$importer'"
else
  ok "importer: this nsys imported its report itself"
fi
unzip -Z1 run.zip > members.txt 2> /dev/null
for m in reports/profile.sqlite reports/profile.nsys-rep manifest.json; do
  grep -qx "$m" members.txt && ok "bundle: $m" || bad "bundle: no $m in $(tr '\n' ' ' < members.txt)"
done
grep -q '^analyses/nvtx/' members.txt && ok "bundle: the nvtx analysis is stored in it" || bad "bundle: no analyses/nvtx/"
unzip -p run.zip reports/profile.sqlite > run.sqlite

# NVTX in the export against the program's account: STEPS each of step, compute, io (push/pop, 59), STEPS
# checkpoint marks (34), one run start/end range (60)
nvtx_sql() { sql "$1" "SELECT eventType || ' ' || name || ' ' || count(*) FROM (SELECT eventType,
                        coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) AS name FROM NVTX_EVENTS
                        WHERE eventType IN (34, 59, 60)) GROUP BY eventType, name ORDER BY 1"; }
check_eq "export: NVTX ranges and marks = the program's" "$(nvtx_sql run.sqlite | tr '\n' ';')" \
  "34 checkpoint $STEPS;59 compute $STEPS;59 io $STEPS;59 step $STEPS;60 run 1;"
got=$(sql run.sqlite "SELECT count(*) FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId WHERE s.value = 'nanosleep'
                      AND o.end - o.start >= 20000000")
check_eq "export: OS runtime nanosleep calls of 20 ms = the program's" "$got" "$STEPS"

# nsl's NVTX summary of the bundle against SQL: per range, instances and total time
"$NSL" run nvtx run.zip --format csv > nvtx.csv 2> nvtx.err || bad "nvtx: $(cat nvtx.err)"
awk -F, '!/^#/ && !/^Time/ && NF > 3 { print $NF " " $3 " " $2 }' nvtx.csv | LC_ALL=C sort > nvtx.nsl
sql run.sqlite "SELECT name || ' ' || count(*) || ' ' || sum(dur) FROM (SELECT end - start AS dur,
                coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) AS name FROM NVTX_EVENTS
                WHERE eventType IN (59, 60)) GROUP BY name" | LC_ALL=C sort > nvtx.sql
cmp -s nvtx.nsl nvtx.sql && ok "nvtx: per range instances and total = SQL" || bad "nvtx: $(diff nvtx.sql nvtx.nsl | head -5)"
nsys stats -r nvtxsum --format csv -o nsys run.sqlite > stats.out 2>&1 &&
  python3 "$NSL_SOURCE_DIR/tests/e2e/nsys_stats_compare.py" nvtxsum nsys_nvtxsum.csv nvtx.csv > nvtxsum.cmp &&
  ok "nvtx = this nsys's own nvtxsum: $(tail -1 nvtxsum.cmp)" || bad "nvtx vs nvtxsum: $(cat stats.out nvtxsum.cmp | head -5)"
"$NSL" run diagnose run.zip > diag.out 2> diag.err
check_eq "diagnose on the CPU-only bundle: exit code" "$?" 0
"$NSL" run nvtx run.zip --embed > /dev/null 2> embed.err && unzip -Z1 run.zip | grep -q '^analyses/nvtx/' &&
  ok "--embed on the bundle" || bad "--embed: $(cat embed.err)"

# ---- 2. the report itself, exported by the real nsys through nsl --------------------------------
unzip -p run.zip reports/profile.nsys-rep > rep.nsys-rep
fp=$(fingerprint rep.nsys-rep)
"$NSL" info rep.nsys-rep --format csv > rep.csv 2> rep.err || bad "report: nsl info: $(cat rep.err)"
rows() { awk -F, -v t="$1" 'f && $1 == t { print $2 } /^table,rows$/ { f = 1 }' "$2"; }
check_eq "report: nvtx rows = SQL on the bundle's export" "$(rows nvtx rep.csv)" \
  "$(sql run.sqlite 'SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)')"
check_eq "report: osrt rows = SQL on the bundle's export" "$(rows osrt rep.csv)" "$(sql run.sqlite 'SELECT count(*) FROM OSRT_API')"
grep -q "rep,${NSYS_VERSION%%-*},$(sql run.sqlite "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_SCHEMA_VERSION'")" rep.csv &&
  ok "report: nsys and schema versions = nsys --version and the export's EXPORT_META_DATA" ||
  bad "report: versions: $(grep '^rep,' rep.csv)"
check_eq "report: untouched" "$(fingerprint rep.nsys-rep)" "$fp"

# ---- 3. a report of a newer release than this nsys (its header edited in a copy) -------------------
head -1 rep.nsys-rep | grep -q '^NVIDIA Tegra Profiler Report ' && ok "report: nsys's header" || bad "report: header"
{ printf 'NVIDIA Tegra Profiler Report 2099@1@1@1-1v0.\n'; tail -n +2 rep.nsys-rep; } > newer.nsys-rep
"$NSL" info newer.nsys-rep > /dev/null 2> newer.err
check_eq "newer report: exit code" "$?" 1
grep -q "cannot open 'newer.nsys-rep': the report was written by Nsight Systems 2099.1.1.1-1v0 and $NSYS_REAL is $NSYS_VERSION, .*install Nsight Systems 2099.1.1 or newer" newer.err &&
  ok "newer report: both versions and what to install" || bad "newer report: $(cat newer.err)"
check_eq "newer report: one line" "$(wc -l < newer.err)" 1

# ---- 4. the export of 2022.4 in the schema test ------------------------------------------------------
mkdir -p data/nsys && cp run.sqlite data/nsys/cpu_nvtx_osrt_2022.4.sqlite
NSL_DATA_DIR=$TMP/data bash "$NSL_SOURCE_DIR/tests/e2e/test_exports.sh" > exports.out 2>&1
check_eq "schema test on the 2022.4 export: exit code" "$?" 0
tail -1 exports.out | grep -Eq '^[1-9][0-9]* passed, 0 failed$' && ok "schema test: $(tail -1 exports.out)" ||
  bad "schema test: $(grep FAIL exports.out | head -3)"
finish
