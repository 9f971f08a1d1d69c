#!/usr/bin/env bash
# No output over an input: every command that writes (bundle, combine, profile -o, view -o, notebook -o,
# run/info --out DIR and --embed with --out) refuses a target that is the same file as an input -- by the
# same path, through a symbolic link or a hard link -- with one line, exit 1, and the input left as it was.
# Oracle: the file system (sha256, size and mtime of the input before and after), and the same commands
# writing elsewhere succeed.
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?NSL_SOURCE_DIR must name the repository}"
D=$NSL_DATA_DIR/nsys
cd "$TMP" || exit 1
cp "$D/tiny_2026.1.sqlite" t.sqlite
chmod u+w t.sqlite
ln -s t.sqlite link.sqlite
ln t.sqlite hard.sqlite
fp=$(fingerprint t.sqlite)
printf '# a notebook\n\n```lua\nprint(#trace.kernels)\n```\n' > nb.md
fp_nb=$(fingerprint nb.md)
echo "meta" > meta.txt
fp_meta=$(fingerprint meta.txt)

# refused WHAT FILE FINGERPRINT -- ARGS...: exit 1, the one line, FILE unchanged
refused() {
  local what=$1 file=$2 before=$3
  shift 4
  "$NSL" "$@" > "$TMP/r.out" 2> "$TMP/r.err"
  local rc=$?
  if [ "$rc" -ne 1 ]; then bad "$what: exit code $rc, expected 1 ($(head -3 "$TMP/r.err"))"
  elif [ "$(wc -l < "$TMP/r.err")" -ne 1 ] || ! grep -q "is an input; inputs are never overwritten$" "$TMP/r.err"
  then bad "$what: not the one line: $(cat "$TMP/r.err")"
  else ok "$what: refused"; fi
  check_eq "$what: the input is unchanged" "$(fingerprint "$file")" "$before"
  if ls -a "$TMP" | grep -q -E '\.nsl-tmp-|nsl-profile-'; then bad "$what: temporary files left"; fi
}
writes() { # writes WHAT -- ARGS...: the same command writing elsewhere succeeds
  local what=$1
  shift 2
  if "$NSL" "$@" > "$TMP/w.out" 2> "$TMP/w.err"; then ok "$what"; else bad "$what: $(head -3 "$TMP/w.err")"; fi
}

refused "bundle -o the export" t.sqlite "$fp" -- bundle t.sqlite -o t.sqlite
refused "bundle -o a link to the export" t.sqlite "$fp" -- bundle t.sqlite -o link.sqlite
refused "bundle -o a hard link of the export" t.sqlite "$fp" -- bundle t.sqlite -o hard.sqlite
refused "bundle -o a --meta file" meta.txt "$fp_meta" -- bundle t.sqlite --meta meta.txt -o meta.txt
refused "bundle -o a --source file" nb.md "$fp_nb" -- bundle t.sqlite --source nb.md -o nb.md
writes "bundle -o elsewhere" -- bundle t.sqlite --meta meta.txt -o b.zip
cp b.zip b2.zip
fp_b=$(fingerprint b.zip)
refused "combine -o an input" b.zip "$fp_b" -- combine b.zip b2.zip -o b.zip
refused "view -o the export" t.sqlite "$fp" -- view t.sqlite -o t.sqlite --no-findings
refused "view -o a hard link of the export" t.sqlite "$fp" -- view t.sqlite -o hard.sqlite --no-findings
refused "view -o the bundle" b.zip "$fp_b" -- view b.zip -o b.zip --no-findings
writes "view -o elsewhere" -- view t.sqlite -o v.html --no-findings
# (notebook writes only .html and .ipynb names: the inputs are reached through names of those suffixes;
# a target of another suffix is refused before anything, exit 2, the input untouched)
ln t.sqlite hard.html
ln -s t.sqlite link.ipynb
cp nb.md nbsrc.html
fp_nbsrc=$(fingerprint nbsrc.html)
refused "notebook -o a hard link of a trace" t.sqlite "$fp" -- notebook nb.md t.sqlite -o hard.html
refused "notebook -o a link to a trace" t.sqlite "$fp" -- notebook nb.md t.sqlite -o link.ipynb
refused "notebook -o the notebook" nbsrc.html "$fp_nbsrc" -- notebook nbsrc.html t.sqlite -o nbsrc.html
refused "shipped notebook -o a trace" t.sqlite "$fp" -- notebook analysis t.sqlite -o hard.html
"$NSL" notebook analysis t.sqlite -o t.sqlite > /dev/null 2>&1
check_eq "notebook -o the trace by its own name: a usage error (not .html/.ipynb)" "$?" 2
check_eq "notebook -o the trace by its own name: the input is unchanged" "$(fingerprint t.sqlite)" "$fp"
writes "notebook -o elsewhere" -- notebook nb.md t.sqlite -o nb.html

# --out DIR: a file it would write is an input (an nsys stats CSV file of the same name, a link to the trace)
mkdir csv
bash "$NSL_SOURCE_DIR/tests/e2e/make_stats_csv.sh" t.sqlite csv/r
mv csv/r_cuda_gpu_kern_sum.csv csv/cuda_gpu_kern_sum.csv
fp_csv=$(fingerprint csv/cuda_gpu_kern_sum.csv)
refused "run --out over an input CSV file" csv/cuda_gpu_kern_sum.csv "$fp_csv" -- \
  run summary csv/cuda_gpu_kern_sum.csv --out csv
writes "run --out elsewhere" -- run summary csv/cuda_gpu_kern_sum.csv --out csv2
[ -s csv2/cuda_gpu_kern_sum.csv ] && ok "run --out elsewhere: the table is written" || bad "run --out: no table"
mkdir out
ln -s ../t.sqlite out/results.json
refused "run --out: results.json a link to the trace" t.sqlite "$fp" -- run summary t.sqlite --out out
refused "info --out: results.json a link to the trace" t.sqlite "$fp" -- info t.sqlite --out out
rm out/results.json
ln -s ../b.zip out/results.json
refused "run --embed --out: results.json a link to the bundle" b.zip "$fp_b" -- run summary b.zip --embed --out out

# profile -o over one of its inputs (a --meta file, a notebook): refused before the application runs
mkdir app
printf 'print("train")\n' > app/train.py
fp_app=$(fingerprint app/train.py)
export FAKE_NSYS_EXPORT=$TMP/t.sqlite FAKE_NSYS_LOG=$TMP/nsys.log
: > nsys.log
refused "profile -o a --source file" app/train.py "$fp_app" -- \
  profile --nsys "$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh" --source app/train.py -o app/train.py -- true
refused "profile -o a --notebook" nb.md "$fp_nb" -- \
  profile --nsys "$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh" --notebook nb.md -o nb.md -- true
check_eq "profile: nothing was profiled" "$(grep -c -- '--end--' nsys.log)" 0
finish
