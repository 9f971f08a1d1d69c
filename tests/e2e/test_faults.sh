#!/usr/bin/env bash
# Faults a hostile user or a bad day brings (issue 15), each against the CLI:
# loads that go on after a failed one, a write cut short by the file-size
# limit (the full disk of a shell: ulimit -f), two --embed at once, read-only
# and private targets, kill -9 at random moments of every writing command,
# and an export with a time column dropped.  Oracles: sqlite3 (which pages
# hold StringIds, the schema), unzip -t (a target is a whole zip or absent),
# sha256sum (a target is the old file or the new one), stat (modes).
. "$(dirname "$0")/lib.sh"
D=$NSL_DATA_DIR/nsys
cd "$TMP"
nsl() { "$NSL" "$@"; }
# one_line WHAT FILE: the error file holds exactly one line
one_line() { check_eq "$1: one error line" "$(wc -l < "$2")" 1; }
no_traceback() { grep -q "traceback" "$2" && bad "$1: a traceback: $(cat "$2")" || ok "$1: no traceback"; }
# no_temps WHAT: no temporary file of nsl's naming in the current folder
no_temps() { check_eq "$1: no temporary file left" "$(find . -maxdepth 1 -name '.*.nsl-tmp-*' | wc -l)" 0; }

cp "$D/tiny_2026.1.sqlite" tiny.sqlite
cp "$D/pytorch_nccl_2gpu_2026.2.sqlite" big.sqlite
chmod u+w tiny.sqlite big.sqlite

# ---- 1. a load after a failed StringIds read ---------------------------------
# A leaf page in the middle of StringIds (found by SQL) overwritten with 0xff:
# the read of the strings fails part-way.  The notebook runs every cell
# after the first error; a script goes on after pcall.
cp tiny.sqlite damaged.sqlite
pg=$(sqlite3 damaged.sqlite "SELECT pageno FROM dbstat WHERE name = 'StringIds' AND pagetype = 'leaf'
                             ORDER BY pageno LIMIT 1 OFFSET 8")
psize=$(sqlite3 damaged.sqlite "PRAGMA page_size")
head -c "$psize" /dev/zero | tr '\0' '\377' | dd of=damaged.sqlite bs="$psize" seek=$((pg - 1)) conv=notrunc 2> /dev/null
nsl notebook analysis damaged.sqlite -o nb.html > nb.out 2> nb.err
rc=$?
[ "$rc" -lt 128 ] && ok "notebook after a failed load: no crash (exit $rc)" || bad "notebook: exit $rc (crash)"
grep -q "damaged.sqlite.* is truncated or corrupt: reading StringIds" nb.html &&
  ok "notebook: the cells' error names the file and StringIds" || bad "notebook: no StringIds error in the page"
grep -q "reading reading" nb.html nb.err && bad "notebook: 'reading reading' in a message" ||
  ok "notebook: the message says 'reading' once"
cat > twice.lua <<'EOF'
return {
  name = "twice",
  run = function(trace, args, out)
    for i = 1, 3 do
      local ok, err = pcall(function() return trace.kernels.name[1] end)
      print(i, ok, tostring(err):match("reading StringIds") or tostring(err))
    end
  end,
}
EOF
nsl run twice.lua damaged.sqlite > twice.out 2> twice.err
rc=$?
check_eq "pcall, three loads after the failed one: exit" "$rc" 0
check_eq "pcall: every load fails with the same error" "$(grep -c "false	reading StringIds" twice.out)" 3

# ---- 2. a write cut short by the file-size limit (ulimit -f) -----------------
# bundle, --embed and --out past the limit: one line naming the target,
# exit 1, no crash, the target as it was, no temporary file.
(ulimit -f 512; nsl bundle big.sqlite -o cut.zip > /dev/null 2> cut.err)
rc=$?
check_eq "bundle past ulimit -f: exit" "$rc" 1
one_line "bundle past ulimit -f" cut.err
grep -q "cut.zip" cut.err && ok "bundle past ulimit -f: names the target" || bad "bundle: $(cat cut.err)"
[ ! -e cut.zip ] && ok "bundle past ulimit -f: no target" || bad "bundle past ulimit -f: cut.zip exists"
no_temps "bundle past ulimit -f"
nsl bundle big.sqlite -o e.zip > /dev/null || bad "bundle e.zip"
before=$(fingerprint e.zip)
(ulimit -f $(($(stat -c %s e.zip) / 2048)); nsl run summary e.zip --embed > /dev/null 2> embed-cut.err)
rc=$?
check_eq "--embed past ulimit -f: exit" "$rc" 1
one_line "--embed past ulimit -f" embed-cut.err
check_eq "--embed past ulimit -f: the bundle as it was" "$(fingerprint e.zip)" "$before"
no_temps "--embed past ulimit -f"
mkdir outdir
(ulimit -f 1; nsl run summary tiny.sqlite --out outdir > /dev/null 2> out-cut.err)
rc=$?
check_eq "--out past ulimit -f: exit" "$rc" 1
one_line "--out past ulimit -f" out-cut.err
no_traceback "--out past ulimit -f" out-cut.err
check_eq "--out past ulimit -f: no temporary file left" "$(find outdir -name '.*' -type f | wc -l)" 0

# ---- 3. two --embed at once: both land, or the second says why -------------
nsl bundle tiny.sqlite -o two.zip > /dev/null
for round in 1 2 3 4 5; do
  nsl run summary two.zip --embed > /dev/null 2> a.err & pa=$!
  nsl run gaps two.zip --embed > /dev/null 2> b.err & pb=$!
  wait $pa; ra=$?
  wait $pb; rb=$?
  landed=$(unzip -l two.zip | grep -c "analyses/summary/results.json\|analyses/gaps/results.json")
  if [ "$ra" = 0 ] && [ "$rb" = 0 ]; then
    check_eq "concurrent --embed round $round: both exit 0, both results kept" "$landed" 2
  elif [ "$ra$rb" = 01 ] || [ "$ra$rb" = 10 ]; then
    check_eq "concurrent --embed round $round: the refused one says why in one line" \
      "$(cat a.err b.err | wc -l)" 1
  else
    bad "concurrent --embed round $round: exits $ra $rb: $(cat a.err b.err)"
  fi
  unzip -tq two.zip > /dev/null && ok "concurrent --embed round $round: a whole zip" || bad "round $round: broken zip"
  [ "$round" = 5 ] && check_eq "concurrent --embed: manifest lists both analyses" \
    "$(unzip -p two.zip manifest.json | grep -c '"name": "\(summary\|gaps\)"')" 2
  rm -f two.zip && nsl bundle tiny.sqlite -o two.zip > /dev/null
done
no_temps "concurrent --embed"

# ---- 4. read-only and private targets ------------------------------------
nsl bundle tiny.sqlite -o ro.zip > /dev/null
chmod 0444 ro.zip
before=$(fingerprint ro.zip)
nsl run summary ro.zip --embed > /dev/null 2> ro.err
check_eq "--embed on a 0444 bundle: exit" "$?" 1
one_line "--embed on a 0444 bundle" ro.err
grep -q "ro.zip.*read-only" ro.err && ok "--embed on a 0444 bundle: says read-only" || bad "ro: $(cat ro.err)"
check_eq "--embed on a 0444 bundle: untouched" "$(fingerprint ro.zip)" "$before"
check_eq "--embed on a 0444 bundle: mode kept" "$(stat -c %a ro.zip)" 444
nsl bundle tiny.sqlite -o ro.zip > /dev/null 2> ro2.err
check_eq "bundle -o onto a 0444 file: exit" "$?" 1
check_eq "bundle -o onto a 0444 file: untouched" "$(fingerprint ro.zip)" "$before"
nsl bundle tiny.sqlite -o private.zip > /dev/null
chmod 0600 private.zip
nsl run summary private.zip --embed > /dev/null || bad "--embed on a 0600 bundle failed"
check_eq "--embed on a 0600 bundle: stays 0600" "$(stat -c %a private.zip)" 600
nsl bundle tiny.sqlite -o private.zip > /dev/null || bad "bundle -o onto a 0600 bundle failed"
check_eq "bundle -o onto a 0600 bundle: stays 0600" "$(stat -c %a private.zip)" 600
chmod 0640 private.zip
nsl run gaps private.zip --embed > /dev/null
check_eq "--embed on a 0640 bundle: stays 0640" "$(stat -c %a private.zip)" 640

# ---- 5. kill -9 at random moments of every writing command ------------------
# After each kill the target is absent, the old file, or a whole new one (a
# zip that unzip -t and nsl info accept; JSON that python3 parses); the next
# run of the command removes whatever temporary file the killed one left.
whole_zip() { unzip -tq "$1" > /dev/null 2>&1 && "$NSL" info "$1" > /dev/null 2>&1; }
whole_json() { python3 -m json.tool "$1" > /dev/null 2>&1; }
kill_loop() { # kill_loop WHAT TARGET CHECK MAX_MS CMD...
  local what=$1 target=$2 check=$3 max=$4 i half=0 olds=0 news=0
  shift 4
  local dir
  dir=$(dirname "$target")
  for i in $(seq 1 30); do
    local old=""
    [ -e "$target" ] && old=$(fingerprint "$target")
    "$@" > /dev/null 2>&1 &
    local pid=$!
    sleep "0.$(printf '%03d' $((RANDOM % max)))"
    kill -9 "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    if [ -e "$target" ]; then
      if [ "$(fingerprint "$target")" = "$old" ]; then olds=$((olds + 1))
      elif "$check" "$target"; then news=$((news + 1))
      else half=$((half + 1)); fi
    fi
  done
  check_eq "$what: 30 kill -9, no half-written target (old $olds, new $news)" "$half" 0
  "$@" > /dev/null 2>&1 || bad "$what: the run after the kills failed"
  check_eq "$what: no temporary file after the next run" \
    "$(find "$dir" -maxdepth 1 -name '.*.nsl-tmp-*' | wc -l)" 0
}
kill_loop "bundle -o" k.zip whole_zip 120 "$NSL" bundle big.sqlite -o k.zip
nsl bundle big.sqlite -o ke.zip > /dev/null
kill_loop "run --embed" ke.zip whole_zip 200 "$NSL" run summary ke.zip --embed
nsl bundle tiny.sqlite --rank 0 -o r0.zip > /dev/null
nsl bundle big.sqlite --rank 1 -o r1.zip > /dev/null
kill_loop "combine -o" kc.zip whole_zip 150 "$NSL" combine r0.zip r1.zip -o kc.zip --allow-mixed-commands \
  --allow-mixed-nsys
mkdir -p figs
kill_loop "run --out" figs/results.json whole_json 120 "$NSL" run summary big.sqlite --out figs

# ---- 6. an export with a time column dropped --------------------------------
for col in end start; do
  cp tiny.sqlite "no-$col.sqlite"
  for ix in $(sqlite3 "no-$col.sqlite" "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
                                        AND tbl_name = 'CUPTI_ACTIVITY_KIND_KERNEL'"); do
    sqlite3 "no-$col.sqlite" "DROP INDEX \"$ix\""   # an index on the column would forbid dropping it
  done
  sqlite3 "no-$col.sqlite" "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN \"$col\""
  model=$([ "$col" = end ] && echo stop || echo start)
  nsl run summary "no-$col.sqlite" > /dev/null 2> "no-$col.err"
  check_eq "kernel table without '$col': exit" "$?" 1
  one_line "kernel table without '$col'" "no-$col.err"
  grep -q "no-$col.sqlite': table CUPTI_ACTIVITY_KIND_KERNEL has no column '$col' (needed for kernels.$model)" \
    "no-$col.err" && ok "kernel table without '$col': names file, table and column" || bad "no-$col: $(cat "no-$col.err")"
done
# a column an older schema may lack is no error (mangledName came later)
cp tiny.sqlite no-mangled.sqlite
sqlite3 no-mangled.sqlite "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN mangledName"
nsl run summary no-mangled.sqlite > /dev/null 2>&1 && ok "an optional column missing: loads" || bad "no-mangled failed"

# ---- 7. --out naming a file -----------------------------------------------
touch plain-file
nsl run summary tiny.sqlite --out plain-file > /dev/null 2> out-file.err
check_eq "--out FILE: exit" "$?" 1
one_line "--out FILE" out-file.err
no_traceback "--out FILE" out-file.err
finish
