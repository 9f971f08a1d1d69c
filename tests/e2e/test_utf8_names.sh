#!/usr/bin/env bash
# Names outside ASCII round-trip through a bundle: exports, --source and --meta files named in Latin, Greek,
# CJK and emoji are stored under their UTF-8 names and read back by info, run and a script, whatever locale the
# user runs nsl in (UTF-8, C, POSIX, unset).  Oracles: Python's zipfile (the names and the UTF-8 flag of the
# zip's central directory), the bytes of the files themselves (sha256), SQL through sqlite3 for the kernel count.
. "$(dirname "$0")/lib.sh"
D=$NSL_DATA_DIR/nsys
cd "$TMP" || exit 1
mkdir -p src meta
cp "$D/tiny_2026.1.sqlite" "prøfil.sqlite"
cp "$D/tiny_2026.1.sqlite" "προφίλ_rank1.sqlite"
printf 'print("café")\n' > "src/café.py"
printf 'print("分析")\n' > "src/分析.py"
printf 'print("rocket")\n' > "src/🚀.py"
printf 'Ωmega\n' > "meta/σημείωση.txt"
kernels=$(sql "$D/tiny_2026.1.sqlite" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
cat > members.lua <<'EOF'
return {
  name = "members", description = "lists report 0's members with their sha256",
  run = function(trace, args, out)
    for _, name in ipairs(trace:members(0, "")) do
      local data = trace:member(0, name)
      print(name, #data, #trace.kernels)
    end
  end,
}
EOF

for loc in C.UTF-8 C POSIX ""; do
  what="LANG='$loc'"
  rm -f u.zip
  if LC_ALL=$loc LANG=$loc "$NSL" bundle "prøfil.sqlite" "προφίλ_rank1.sqlite" --source "src/café.py" \
       --source "src/分析.py" --source "src/🚀.py" --meta "meta/σημείωση.txt" -o u.zip > bundle.out 2> bundle.err
  then ok "$what: bundle written"; else bad "$what: bundle failed: $(cat bundle.err)"; continue; fi
  # the oracle: Python's zipfile decodes names flagged UTF-8 (bit 11) as UTF-8, others as cp437
  python3 - u.zip > names.txt <<'EOF'
import sys, zipfile
for i in zipfile.ZipFile(sys.argv[1]).infolist():
    print(i.filename, "utf8" if i.flag_bits & 0x800 else "cp437")
EOF
  for n in "reports/prøfil.sqlite" "reports/προφίλ_rank1.sqlite" "sources/src/café.py" "sources/src/分析.py" \
           "sources/src/🚀.py" "meta/σημείωση.txt"; do
    if grep -qxF "$n utf8" names.txt; then ok "$what: '$n' stored as UTF-8"
    else bad "$what: '$n' not stored as UTF-8: $(tr '\n' ' ' < names.txt)"; fi
  done
  if ! LC_ALL=$loc LANG=$loc "$NSL" info u.zip > info.out 2> info.err; then
    bad "$what: info fails: $(cat info.err)"; continue
  fi
  grep -q "u.zip:reports/prøfil.sqlite" info.out && grep -q "u.zip:reports/προφίλ_rank1.sqlite" info.out &&
    ok "$what: info names both reports" || bad "$what: info: $(head -8 info.out)"
  if ! LC_ALL=$loc LANG=$loc "$NSL" run ./members.lua u.zip > run.out 2> run.err; then
    bad "$what: run fails: $(cat run.err)"; continue
  fi
  for n in "sources/src/café.py" "sources/src/分析.py" "sources/src/🚀.py" "meta/σημείωση.txt"; do
    f=${n#sources/}
    f=${f#meta/}
    [ -f "$f" ] || f=meta/$f
    check_eq "$what: run reads '$n' whole" "$(grep -F "$n" run.out | cut -f2)" "$(stat -c %s "$f")"
  done
  check_eq "$what: the reports' kernels" "$(head -1 run.out | cut -f3)" "$((2 * kernels))"
done
finish
