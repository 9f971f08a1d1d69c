#!/usr/bin/env bash
# Bundles at the command line: nsl bundle / combine / profile, nsl run and
# info on bundles, --embed, and hostile archives.  Oracles: the export's own
# bytes (sha256sum, unzip), SQL through sqlite3, nsl's output on the export
# itself, and the file system (what was written, what was left untouched).
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?NSL_SOURCE_DIR must name the repository}"
D=$NSL_DATA_DIR/nsys
FAKE=$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh

# run_nsl NAME ARGS... -- runs nsl, keeping stdout/stderr in $TMP/NAME.{out,err}; sets RC
run_nsl() {
  local name=$1
  shift
  "$NSL" "$@" > "$TMP/$name.out" 2> "$TMP/$name.err"
  RC=$?
  if grep -q -E 'AddressSanitizer|runtime error|Segmentation' "$TMP/$name.err"; then
    bad "$name: crashed or raised: $(head -5 "$TMP/$name.err")"
  fi
}
# expect_refused WHAT CODE PATTERN -- ARGS...: exit code CODE, one line on stderr matching
# PATTERN (a usage error, code 2, adds "Try 'nsl COMMAND --help'." for the subcommands' options)
expect_refused() {
  local what=$1 code=$2 pattern=$3
  shift 4
  run_nsl refused "$@"
  if [ "$RC" -ne "$code" ]; then bad "$what: exit code $RC, expected $code ($(head -3 "$TMP/refused.err"))"; return; fi
  if ! grep -q -- "$pattern" "$TMP/refused.err"; then bad "$what: stderr lacks '$pattern': $(cat "$TMP/refused.err")"; return; fi
  if [ "$(grep -v -c "^Try 'nsl .*--help'" "$TMP/refused.err")" -ne 1 ]; then
    bad "$what: not one line: $(cat "$TMP/refused.err")"; return
  fi
  ok "$what"
}
member_sha() { unzip -p "$1" "$2" | sha256sum | cut -d' ' -f1; }
has_member() { unzip -Z1 "$1" | grep -qx -- "$2"; }
no_leftovers() { # no temporary file or folder of nsl in $1
  if ls -a "$1" | grep -q -E '\.nsl-tmp-|nsl-profile-|\.tmp-'; then bad "$2: leftovers: $(ls -a "$1" | tr '\n' ' ')"
  else ok "$2: no temporary files left"; fi
}

# ---- 1. every export: bundle, read back, same output ------------------------
mkdir -p "$TMP/rt"
for f in "$D"/*.sqlite; do
  n=$(basename "$f" .sqlite)
  b="$TMP/rt/$n.zip"
  before=$(fingerprint "$f")
  run_nsl bundle bundle "$f" -o "$b"
  if [ "$RC" -ne 0 ]; then bad "$n: nsl bundle failed: $(cat "$TMP/bundle.err")"; continue; fi
  check_eq "$n: the report member is the export, byte for byte" "$(member_sha "$b" "reports/$n.sqlite")" \
    "$(sha256sum < "$f" | cut -d' ' -f1)"
  unzip -p "$b" manifest.json > "$TMP/manifest.json"
  if grep -q "\"sha256\": \"$(sha256sum < "$f" | cut -d' ' -f1)\"" "$TMP/manifest.json" &&
     grep -q "\"size\": $(stat -c %s "$f")" "$TMP/manifest.json"; then ok "$n: manifest has the export's sha256 and size"
  else bad "$n: manifest lacks the export's sha256/size"; fi
  if unzip -tq "$b" > /dev/null; then ok "$n: unzip -t accepts the bundle"; else bad "$n: unzip -t fails"; fi

  # summary: the same output, exit code and message on the bundle as on the export
  run_nsl direct run summary "$f"
  rc_direct=$RC
  run_nsl viab run summary "$b"
  check_eq "$n: summary exit code" "$RC" "$rc_direct"
  if cmp -s "$TMP/direct.out" "$TMP/viab.out"; then ok "$n: summary output identical"
  else bad "$n: summary output differs: $(diff "$TMP/direct.out" "$TMP/viab.out" | head -5)"; fi
  sed "s|$f|FILE|g" "$TMP/direct.err" > "$TMP/direct.err2"
  sed "s|$b:reports/$n.sqlite|FILE|g" "$TMP/viab.err" > "$TMP/viab.err2"
  if cmp -s "$TMP/direct.err2" "$TMP/viab.err2"; then ok "$n: summary messages identical"
  else bad "$n: messages differ: $(cat "$TMP/direct.err2") vs $(cat "$TMP/viab.err2")"; fi

  # info: the same output but for the path of the report, which names the member
  run_nsl direct info "$f" --format csv
  run_nsl viab info "$b" --format csv
  if grep -q "$b:reports/$n.sqlite" "$TMP/viab.out"; then ok "$n: info names the member"; else bad "$n: info path"; fi
  if [ "$(sed "s|$f|PATH|" "$TMP/direct.out")" = "$(sed "s|$b:reports/$n.sqlite|PATH|" "$TMP/viab.out")" ]; then
    ok "$n: info identical (versions, host, times, devices, processes, row counts)"
  else bad "$n: info differs: $(diff "$TMP/direct.out" "$TMP/viab.out" | head -6)"; fi
  check_eq "$n: export untouched" "$(fingerprint "$f")" "$before"
done
no_leftovers "$TMP/rt" "bundle"

# ---- 2. nsl bundle: options and refusals ----------------------------------------
tiny=$D/tiny_2026.1.sqlite
expect_refused "bundle without -o" 2 "give -o" -- bundle "$tiny"
expect_refused "bundle without exports" 2 "no export" -- bundle -o "$TMP/x.zip"
expect_refused "bundle: --rank count" 2 "one per export" -- bundle "$tiny" "$tiny" --rank 1 -o "$TMP/x.zip"
expect_refused "bundle: bad --rank" 2 "not an integer" -- bundle "$tiny" --rank x -o "$TMP/x.zip"
expect_refused "bundle: missing export" 1 "$TMP/nope.sqlite" -- bundle "$TMP/nope.sqlite" -o "$TMP/x.zip"
expect_refused "bundle: a bundle as input" 1 "not an nsys SQLite export" -- bundle "$TMP/rt/tiny_2026.1.zip" -o "$TMP/x.zip"
cp "$tiny" "$TMP/self.sqlite"
expect_refused "bundle: output is the input" 1 "never overwritten" -- bundle "$TMP/self.sqlite" -o "$TMP/self.sqlite"
cmp -s "$tiny" "$TMP/self.sqlite" && ok "bundle: input kept" || bad "bundle: input changed"
expect_refused "bundle: unknown option" 2 "unknown option" -- bundle "$tiny" -o "$TMP/x.zip" --bogus
expect_refused "bundle: missing --source" 1 "nope.py" -- bundle "$tiny" -o "$TMP/x.zip" --source "$TMP/nope.py"
[ ! -e "$TMP/x.zip" ] && ok "bundle: nothing written on refusal" || bad "bundle: x.zip written"

# ---- 3. nsl combine -----------------------------------------------------------------
mkdir -p "$TMP/c/a" "$TMP/c/b" "$TMP/c/src"
cd "$TMP/c" || exit 1
nccl=$D/pytorch_nccl_2gpu_2026.2.sqlite
cp "$nccl" a/train.sqlite
cp "$nccl" b/train.sqlite
sqlite3 b/train.sqlite "PRAGMA user_version = 7"   # other bytes, same command: the second rank
printf 'import torch\n' > src/train.py
"$NSL" bundle a/train.sqlite --rank 0 --source src/train.py -o r0.zip > /dev/null &&
  "$NSL" bundle b/train.sqlite --rank 1 --source src/train.py -o r1.zip > /dev/null || bad "combine: making inputs"
"$NSL" bundle a/train.sqlite --source "$PWD/src/train.py" -o abs.zip > /dev/null || bad "bundle --source /abs/path"
check_eq "bundle --source \$PWD/src/train.py: stored relative to the working folder" \
  "$(unzip -Z1 abs.zip | grep '^sources/')" "sources/src/train.py"
rm -f abs.zip
fp0=$(fingerprint r0.zip)
run_nsl combine combine r0.zip r1.zip -o all.zip
check_eq "combine: exit code" "$RC" 0
members=$(unzip -Z1 all.zip | sort | tr '\n' ' ')
check_eq "combine: members (same names renamed, identical source once)" "$members" \
  "manifest.json reports/train.rank1.sqlite reports/train.sqlite sources/src/train.py "
check_eq "combine: rank 1's report is b's export" "$(member_sha all.zip reports/train.rank1.sqlite)" \
  "$(sha256sum < b/train.sqlite | cut -d' ' -f1)"
check_eq "combine: input untouched" "$(fingerprint r0.zip)" "$fp0"
run_nsl info info all.zip --format csv
check_eq "combine: two reports with ranks 0 and 1" \
  "$(awk -F, '/^# / { s = $0; next } s == "# Reports" && $1 != "report" && NF { print $5 }' "$TMP/info.out" | tr '\n' ' ')" "0 1 "
run_nsl sum_all run summary all.zip
run_nsl sum_two run summary a/train.sqlite b/train.sqlite
if [ "$RC" -eq 0 ] && cmp -s "$TMP/sum_all.out" "$TMP/sum_two.out"; then ok "combine: summary equals the two exports'"
else bad "combine: summary differs"; fi
"$NSL" bundle b/train.sqlite --rank 0 -o dup.zip > /dev/null
expect_refused "combine: duplicate rank" 1 "cannot combine 'r0.zip' and 'dup.zip': both hold rank 0" -- combine r0.zip dup.zip -o bad.zip
"$NSL" bundle "$D/pytorch_h100_2gpu_2026.2.sqlite" --rank 2 -o other.zip > /dev/null
expect_refused "combine: different commands" 1 "cannot combine 'r0.zip' and 'other.zip': they were made by different commands" \
  -- combine r0.zip other.zip -o bad.zip
"$NSL" bundle a/train.sqlite --rank 5 -o r5.zip > /dev/null
expect_refused "combine: the same export in two inputs" 1 "same report" -- combine r0.zip r5.zip -o bad.zip
expect_refused "combine: output is an input" 1 "also input" -- combine r0.zip r1.zip -o r1.zip
check_eq "combine: refused output left alone" "$(fingerprint r0.zip)" "$fp0"
[ ! -e bad.zip ] && ok "combine: nothing written on refusal" || bad "combine: bad.zip written"
expect_refused "combine: without -o" 2 "give -o" -- combine r0.zip r1.zip
no_leftovers "$TMP/c" "combine"

# ---- 4. --embed ---------------------------------------------------------------------
cp -p r0.zip emb.zip
fp_src=$(fingerprint r0.zip)
run_nsl embed run summary emb.zip --embed
check_eq "embed: exit code" "$RC" 0
for m in cuda_gpu_kern_sum.csv cuda_api_sum.csv results.json; do
  has_member emb.zip "analyses/summary/$m" && ok "embed: analyses/summary/$m" || bad "embed: no $m"
done
run_nsl csv run summary r0.zip --format csv
kern=$(awk '/^# /{f = ($0 ~ /cuda_gpu_kern_sum/); next} f && NF' "$TMP/csv.out")
check_eq "embed: the stored CSV is the analysis's CSV" "$(unzip -p emb.zip analyses/summary/cuda_gpu_kern_sum.csv | sed '/^$/d')" "$kern"
unzip -tq emb.zip > /dev/null && ok "embed: unzip -t accepts the rewritten bundle" || bad "embed: unzip -t"
run_nsl info info emb.zip
check_eq "embed: the rewritten bundle opens" "$RC" 0
check_eq "embed: the other bundle untouched" "$(fingerprint r0.zip)" "$fp_src"
fp_emb=$(fingerprint emb.zip)
printf 'return {name = "broken", run = function(trace) local k = trace.kernels; error("boom") end}\n' > broken.lua
printf 'return {name = "failing", run = function(trace) require("nsl").fail("no data here") end}\n' > failing.lua
sleep 1   # so that a rewrite would show in the mtime
expect_refused "embed: a failing analysis" 1 "no data here" -- run failing.lua emb.zip --embed
check_eq "embed: bundle byte-identical after a failing analysis" "$(fingerprint emb.zip)" "$fp_emb"
run_nsl broken run broken.lua emb.zip --embed
check_eq "embed: an analysis that raises" "$RC" 1
check_eq "embed: bundle byte-identical after a raising analysis" "$(fingerprint emb.zip)" "$fp_emb"
cp -p "$tiny" plain.sqlite
fp_plain=$(fingerprint plain.sqlite)
expect_refused "embed: an export" 1 "give exactly one bundle" -- run summary plain.sqlite --embed
check_eq "embed: export untouched" "$(fingerprint plain.sqlite)" "$fp_plain"
expect_refused "embed: two bundles" 1 "give exactly one bundle" -- run summary r0.zip r1.zip --embed
check_eq "embed: bundles untouched" "$(fingerprint r0.zip)" "$fp_src"
no_leftovers "$TMP/c" "embed"
cd "$TMP" || exit 1

# ---- 5. nsl profile with a stand-in nsys --------------------------------------------
mkdir -p "$TMP/p/src"
cd "$TMP/p" || exit 1
printf 'print("train")\n' > src/train.py
export FAKE_NSYS_EXPORT=$tiny FAKE_NSYS_LOG=$TMP/p/nsys.log
tiny_sha=$(sha256sum < "$tiny" | cut -d' ' -f1)
nsys_calls() { grep -c -- '--end--' "$FAKE_NSYS_LOG" || true; }

: > nsys.log
HF_TOKEN=hf-secret MY_API_KEY=k1 DB_PASSWORD=pw SAFE_SETTING=kept run_nsl prof profile --nsys "$FAKE" \
  --analysis summary -o out.zip --source src/train.py --note "first run" -- sh -c 'echo "hello from the app"'
check_eq "profile: exit code" "$RC" 0
grep -q "hello from the app" "$TMP/prof.out" && ok "profile: the application ran" || bad "profile: no app output"
grep -q "cuda_gpu_kern_sum" "$TMP/prof.out" && ok "profile: the analysis printed" || bad "profile: no summary"
check_eq "profile: the report is the export" "$(member_sha out.zip reports/profile.sqlite)" "$tiny_sha"
has_member out.zip reports/profile.nsys-rep && ok "profile: .nsys-rep kept" || bad "profile: no .nsys-rep"
has_member out.zip sources/src/train.py && ok "profile: source stored" || bad "profile: no source"
has_member out.zip analyses/summary/results.json && ok "profile: analysis embedded" || bad "profile: not embedded"
unzip -p out.zip meta/environment.txt > env.txt
grep -qx "SAFE_SETTING=kept" env.txt && ok "profile: environment recorded" || bad "profile: environment"
if grep -q -E "hf-secret|HF_TOKEN|MY_API_KEY|DB_PASSWORD|pw$" env.txt; then bad "profile: a secret reached the bundle"
else ok "profile: secrets left out"; fi
if unzip -p out.zip | grep -a -q "hf-secret"; then bad "profile: the secret is somewhere in the bundle"
else ok "profile: the secret is nowhere in the bundle"; fi
unzip -p out.zip manifest.json > manifest.json
grep -q '"sh",' manifest.json && grep -q '"echo \\"hello from the app\\""' manifest.json &&
  ok "profile: manifest has the command" || bad "profile: command missing: $(grep -A4 '"command"' manifest.json)"
grep -q '"exit_code": 0' manifest.json && ok "profile: manifest has the exit code" || bad "profile: exit code"
grep -q '"note": "first run"' manifest.json && ok "profile: note" || bad "profile: note"
check_eq "profile: nsys called twice (profile, export)" "$(nsys_calls)" 2
check_eq "profile: default trace" "$(grep -c -x -- '--trace=cuda,nvtx,osrt,cublas,cudnn' nsys.log)" 1
check_eq "profile: default graph trace" "$(grep -c -x -- '--cuda-graph-trace=node' nsys.log)" 1
check_eq "profile: export as SQLite" "$(grep -c -x -- '--type=sqlite' nsys.log)" 1
"$NSL" info out.zip > /dev/null 2>&1 && ok "profile: the bundle opens" || bad "profile: bundle does not open"
no_leftovers "$TMP/p" "profile"

: > nsys.log
run_nsl prof profile --nsys "$FAKE" -o opts.zip -t cuda --sample=none -- true
check_eq "profile: options exit code" "$RC" 0
if grep -q -x -- '--trace=cuda,nvtx,osrt,cublas,cudnn' nsys.log; then bad "profile: -t did not replace the default"
else ok "profile: -t replaces the default trace"; fi
grep -q -x -- '--sample=none' nsys.log && grep -q -x -- '--cuda-graph-trace=node' nsys.log &&
  ok "profile: other options passed, other defaults kept" || bad "profile: options: $(cat nsys.log)"

# nsys leaving a .qdstrm (its importer not found): the QdstrmImporter shipped with it makes the report. Laid out
# as Debian's package: PATH's nsys is a link to lib/nsight-systems/bin/nsys (a link to the program), the importer
# in lib/nsight-systems/host-linux-x64/, found along the links, not beside the program they end at
mkdir -p qd/usr/bin qd/usr/lib/ns/bin qd/usr/lib/ns/host-linux-x64
ln -s "$FAKE" qd/usr/lib/ns/bin/nsys && ln -s ../lib/ns/bin/nsys qd/usr/bin/nsys
printf '#!/bin/sh\n[ "$1" = -i ] && printf "import of %%s\\n" "$2" > "${2%%.qdstrm}.nsys-rep"\n' \
  > qd/usr/lib/ns/host-linux-x64/QdstrmImporter
chmod +x qd/usr/lib/ns/host-linux-x64/QdstrmImporter
FAKE_NSYS_QDSTRM=1 run_nsl qd profile --nsys "$TMP/p/qd/usr/bin/nsys" -o qd.zip -- true
check_eq "profile: .qdstrm imported: exit code" "$RC" 0
check_eq "profile: .qdstrm imported: one line says so, naming the importer" \
  "$(grep -c "^nsl: nsys left a .qdstrm (it did not find its importer): importing it with $TMP/p/qd/usr/lib/ns/host-linux-x64/QdstrmImporter$" "$TMP/qd.err")" 1
unzip -p qd.zip reports/profile.nsys-rep | grep -q '^import of .*profile.qdstrm$' &&
  ok "profile: .qdstrm imported: the importer's report is bundled" || bad "profile: qd.zip: $(unzip -Z1 qd.zip | tr '\n' ' ')"
rm qd/usr/lib/ns/host-linux-x64/QdstrmImporter
FAKE_NSYS_QDSTRM=1 run_nsl qd2 profile --nsys "$TMP/p/qd/usr/bin/nsys" -o qd2.zip -- true
check_eq "profile: .qdstrm without an importer: exit code" "$RC" 1
grep -q "no QdstrmImporter lies beside $TMP/p/qd/usr/bin/nsys" "$TMP/qd2.err" && [ ! -e qd2.zip ] &&
  ok "profile: .qdstrm without an importer: said, no bundle" || bad "profile: qd2: $(cat "$TMP/qd2.err")"

run_nsl prof profile --nsys "$FAKE" -o fail.zip -- sh -c 'echo partial; exit 3'
check_eq "profile: a failing application's exit code is passed on" "$RC" 3
has_member fail.zip reports/profile.sqlite && ok "profile: bundle written when the application fails" || bad "profile: no bundle"
unzip -p fail.zip manifest.json | grep -q '"exit_code": 3' && ok "profile: exit code recorded" || bad "profile: exit code 3"

run_nsl prof profile --nsys "$FAKE" -o killed.zip -- sh -c 'kill -TERM $$'
check_eq "profile: an application killed by SIGTERM gives 128+15" "$RC" 143
has_member killed.zip reports/profile.sqlite && ok "profile: bundle written after a signal" || bad "profile: no bundle after signal"

printf 'return {name = "broken", run = function(trace) error("analysis bug") end}\n' > broken.lua
run_nsl prof profile --nsys "$FAKE" -o an.zip --analysis "$TMP/p/broken.lua" --analysis summary -- true
check_eq "profile: a failing analysis gives 1" "$RC" 1
grep -q "analysis bug" "$TMP/prof.err" && ok "profile: the analysis failure is shown" || bad "profile: failure not shown"
has_member an.zip analyses/summary/results.json && ok "profile: the other analysis is stored" || bad "profile: summary missing"
if unzip -Z1 an.zip | grep -q "^analyses/broken/"; then bad "profile: the failed analysis left results"
else ok "profile: the failed analysis stored nothing"; fi
unzip -tq an.zip > /dev/null && ok "profile: bundle intact after a failing analysis" || bad "profile: bundle broken"
run_nsl prof profile --nsys "$FAKE" -o an2.zip --analysis "$TMP/p/broken.lua" -- sh -c 'exit 4'
check_eq "profile: the application's failure wins over the analysis's" "$RC" 4

: > nsys.log
LOCAL_RANK=1 run_nsl cond profile --nsys "$FAKE" --condition 'LOCAL_RANK==0' -o cond.zip -- sh -c 'echo unprofiled; exit 5'
check_eq "profile: condition false runs the command, passes its exit code" "$RC" 5
grep -q unprofiled "$TMP/cond.out" && ok "profile: condition false: the command ran" || bad "profile: command did not run"
[ ! -e cond.zip ] && [ "$(nsys_calls)" = 0 ] && ok "profile: condition false: no nsys, no bundle" || bad "profile: condition false profiled"
OMPI_COMM_WORLD_RANK=0 run_nsl cond profile --nsys "$FAKE" --condition 'env.OMPI_COMM_WORLD_RANK == "0"' -o cond.zip -- true
check_eq "profile: condition true" "$RC" 0
has_member cond.zip reports/rank0.sqlite && ok "profile: condition true: profiled, report named by rank" || bad "profile: cond.zip"
unzip -p cond.zip manifest.json | grep -q '"ranks": \[' && ok "profile: rank in the manifest" || bad "profile: rank"
expect_refused "profile: bad condition" 2 "condition" -- profile --nsys "$FAKE" --condition 'LOCAL_RANK ==' -- true

run_nsl xla profile --nsys "$FAKE" -o xla.zip --xla-dump dump -- sh -c 'mkdir -p dump/sub && printf "%s" "$XLA_FLAGS" > dump/flags.txt && echo hlo > dump/sub/module_1.txt'
check_eq "profile: --xla-dump" "$RC" 0
check_eq "profile: XLA_FLAGS set for the application" "$(unzip -p xla.zip meta/xla_dump/flags.txt)" \
  "--xla_dump_to=dump --xla_dump_hlo_as_proto"
check_eq "profile: dump files collected" "$(unzip -p xla.zip meta/xla_dump/sub/module_1.txt)" "hlo"

JOBID=42 run_nsl pct profile --nsys "$FAKE" -o 'job-%q{JOBID}-%r.zip' --rank 3 --no-rep -- true
has_member job-42-3.zip reports/rank3.sqlite && ok "profile: -o expansion and --rank" || bad "profile: job-42-3.zip"
has_member job-42-3.zip reports/rank3.nsys-rep && bad "profile: --no-rep kept the report" || ok "profile: --no-rep"

: > nsys.log
expect_refused "profile: no command" 2 "after '--'" -- profile --nsys "$FAKE" -o x.zip
expect_refused "profile: unknown analysis" 2 "no analysis 'nonesuch'" -- profile --nsys "$FAKE" --analysis nonesuch -o x.zip -- true
expect_refused "profile: --arg nobody takes" 2 "no --analysis takes it" -- profile --nsys "$FAKE" --analysis summary --arg bogus=1 -o x.zip -- true
expect_refused "profile: output folder missing" 1 "nofolder" -- profile --nsys "$FAKE" -o nofolder/x.zip -- true
expect_refused "profile: missing --source" 1 "nope.py" -- profile --nsys "$FAKE" --source nope.py -o x.zip -- true
printf 'mine\n' > environment.txt
expect_refused "profile: --meta clashing with nsl's own" 2 "meta/environment.txt" -- profile --nsys "$FAKE" --meta environment.txt -o x.zip -- true
check_eq "profile: refusals come before nsys runs" "$(nsys_calls)" 0
expect_refused "profile: nsys missing" 1 "cannot run" -- profile --nsys "$TMP/p/no-nsys" -o x.zip -- true
FAKE_NSYS_NO_REPORT=1 run_nsl prof profile --nsys "$FAKE" -o x.zip -- sh -c 'exit 4'
check_eq "profile: nsys wrote no report: the application's exit code" "$RC" 4
grep -q "nsys wrote no report" "$TMP/prof.err" && ok "profile: nsys wrote no report: said" || bad "profile: no report: $(cat "$TMP/prof.err")"
FAKE_NSYS_EXPORT_FAIL=1 expect_refused "profile: export fails" 1 "export" -- profile --nsys "$FAKE" -o x.zip -- true
[ ! -e x.zip ] && ok "profile: no bundle on failure" || bad "profile: x.zip written"
printf '# Kernels\n\n```lua\nprint("kernels:", #trace.kernels)\n```\n' > kernels.md
run_nsl nb profile --nsys "$FAKE" -o nb.zip --notebook kernels.md --notebook "$TMP/p/none.md" -- true
check_eq "profile: a notebook that cannot be read gives 1" "$RC" 1
grep -q "none.md" "$TMP/nb.err" && has_member nb.zip reports/profile.sqlite && ok "profile: notebook failure; bundle kept" ||
  bad "profile: notebook failure: $(cat "$TMP/nb.err")"
if unzip -p nb.zip analyses/notebook-kernels/kernels.html | grep -q "kernels:.*$(sql "$tiny" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")"; then
  ok "profile: the notebook ran on the bundle and is stored in it"
else bad "profile: notebook page: $(unzip -l nb.zip)"; fi
no_leftovers "$TMP/p" "profile (all runs)"
unset FAKE_NSYS_EXPORT FAKE_NSYS_LOG
cd "$TMP" || exit 1

# ---- 6. hostile archives -------------------------------------------------------------
mkdir -p "$TMP/h/zips" "$TMP/h/work/out"
"$NSL" run "$NSL_SOURCE_DIR/tests/e2e/make_zips.lua" --arg dir="$TMP/h/zips" --arg export="$tiny" > /dev/null ||
  bad "making the hostile zips"
cp "$TMP/rt/tiny_2026.1.zip" "$TMP/h/good.zip"
cd "$TMP/h/work" || exit 1
touch "$TMP/h/marker"
sleep 1
while read -r case pattern; do
  z="$TMP/h/zips/$case.zip"
  fp=$(fingerprint "$z")
  expect_refused "hostile $case: info" 1 "$case.zip.*$pattern" -- info "$z"
  expect_refused "hostile $case: run" 1 "$case.zip" -- run summary "$z"
  expect_refused "hostile $case: combine" 1 "$case.zip" -- combine "$TMP/h/good.zip" "$z" -o out/all.zip
  expect_refused "hostile $case: --embed" 1 "$case.zip" -- run summary "$z" --embed
  check_eq "hostile $case: archive untouched" "$(fingerprint "$z")" "$fp"
done < "$TMP/h/zips/cases.txt"
check_eq "hostile: nothing written under the work folder" "$(find "$TMP/h" -newer "$TMP/h/marker" -type f | wc -l)" 0
check_eq "hostile: no file escaped" "$(find "$TMP" / -maxdepth 1 -name 'evil-*' 2>/dev/null | wc -l)" 0
[ ! -e /tmp/evil-absolute.txt ] && ok "hostile: no absolute path written" || bad "hostile: /tmp/evil-absolute.txt exists"
cd "$TMP" || exit 1

# exports of two nsys releases (their META_DATA_EXPORT, by SQL): refused as combine refuses bundles, unless asked
A="$D/pytorch_nccl_2gpu_2026.2.sqlite"; B="$D/nvfuser_2024.6.sqlite"
va=$(sql "$A" "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'" | cut -d. -f1-2)
vb=$(sql "$B" "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'" | cut -d. -f1-2)
"$NSL" bundle "$A" "$B" -o mixed.zip > /dev/null 2> mixed.err; rc=$?
[ "$rc" = 1 ] && [ ! -e mixed.zip ] && grep -q "different nsys releases ($va vs $vb)" mixed.err &&
  ok "bundle: exports of nsys $va and $vb refused, nothing written" || bad "bundle mixed: $rc $(cat mixed.err)"
"$NSL" bundle "$A" "$B" -o mixed.zip --allow-mixed-nsys > /dev/null 2> mixed.err && [ -s mixed.zip ] &&
  ok "bundle --allow-mixed-nsys: written" || bad "bundle --allow-mixed-nsys: $(cat mixed.err)"
finish
