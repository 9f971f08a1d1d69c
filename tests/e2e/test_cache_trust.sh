#!/usr/bin/env bash
# The cache folder trusted as ssh trusts ~/.ssh: folders made 0700; a folder
# another user owns, or that others can write, refused in one line (the run
# right without it); no link followed inside the cache; eviction and `nsl
# cache clear` remove only the cache's own files; an export reused only when
# nsl made it; the change time part of the identity.  The attacks of a
# hostile neighbour run as another user (nobody, through setpriv, in a
# shared 1777 folder) and need root; they are skipped, saying so, without it.
# Oracles: SQL through sqlite3 on the inputs, and the victim's files compared
# byte for byte (sha256, size, mtime) before and after.
. "$(dirname "$0")/lib.sh"
set -o pipefail
unset NSL_NO_CACHE NSL_CACHE_MAX NSYS FAKE_NSYS_EXPORT_FAIL FAKE_NSYS_EXPORT_HANG FAKE_NSYS_EXPORT_DELAY
FAKE=$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh
nccl=$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite
other=$NSL_DATA_DIR/nsys/cuda_2021.2.sqlite
export FAKE_NSYS_LOG=$TMP/nsys.log FAKE_NSYS_EXPORT=$nccl
exp=$TMP/run.sqlite
cp "$nccl" "$exp"
n_kernels=$(sql "$nccl" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
want=$(sql "$nccl" "SELECT count(*), sum(start) FROM CUPTI_ACTIVITY_KIND_KERNEL" | tr '|' ' ')
cat > "$TMP/digest.lua" <<'LUA'
return { run = function(trace) print(#trace.kernels, trace.kernels.start:sum()) end }
LUA
digest() { "$NSL" run "$TMP/digest.lua" "$@" | tr "\t" " "; }
nsys_exports() { grep -c '^export$' "$FAKE_NSYS_LOG" || true; }
make_report() { printf 'NVIDIA Tegra Profiler Report 2026@2@1@210-1v0.\n%s\n' "$2" > "$1"; }
kernels_of() { sed -n 's/.*"table": *"kernels", *"rows": *\([0-9]*\).*/\1/p' "$1" | head -1; }
# the export entry of report $1: exports/<FNV-1a 64 of its real path, 16 hex digits>
rep_key() { python3 -c 'import os, sys
h = 1469598103934665603
for b in os.path.realpath(sys.argv[1]).encode(): h = ((h ^ b) * 1099511628211) % (1 << 64)
print("%016x" % h)' "$1"; }
# a victim's folder of precious files, one of them starting with the cache's own magic
victim=$TMP/victim
mkdir -p "$victim/dir" && echo precious > "$victim/dir/notes.txt" && cp "$other" "$victim/dir/data.sqlite"
printf 'NSLCACHE looks like a cache file' > "$victim/dir/lookalike"
echo "victim's file" > "$victim/file.txt"
victim_state() { (cd "$victim" && find . -printf '%p %y %s %T@\n' | sort && find . -type f -exec sha256sum {} + | sort); }
before=$(victim_state)
victim_intact() { check_eq "$1: the victim's files untouched" "$(victim_state)" "$before"; }

# --- folders made 0700; a folder of ours that others can write is refused ---
export NSL_CACHE_DIR=$TMP/own/cache
check_eq "a fresh cache: the right result" "$(digest "$exp" 2> "$TMP/err")" "$want"
check_eq "a fresh cache: no warning" "$(cat "$TMP/err")" ""
check_eq "a fresh cache: root, columns/ and the entry made 0700" \
  "$(stat -c %a "$NSL_CACHE_DIR" "$NSL_CACHE_DIR/columns" "$NSL_CACHE_DIR"/columns/* | sort -u)" 700
mkdir -m 0777 "$TMP/open" && chmod 0777 "$TMP/open"
NSL_CACHE_DIR=$TMP/open digest "$exp" > "$TMP/out" 2> "$TMP/err"
check_eq "a cache folder others can write: exit 0, the right result" "$?:$(cat "$TMP/out")" "0:$want"
check_eq "a cache folder others can write: one line" "$(wc -l < "$TMP/err")" 1
grep -q "refusing cache folder '$TMP/open': others can write to it (mode 0777)" "$TMP/err" &&
  ok "a cache folder others can write: refused, saying why" || bad "refusal: $(cat "$TMP/err")"
check_eq "a cache folder others can write: nothing written in it" "$(ls -A "$TMP/open")" ""

# --- links inside our own cache are never followed ---
digest "$other" > /dev/null   # a second entry
ent=$(ls -d "$NSL_CACHE_DIR"/columns/* | head -1)
echo "mine" > "$ent/my-notes.txt"   # a file without the cache's header inside an entry
ln -s "$victim/dir" "$NSL_CACHE_DIR/columns/00000000deadbeef"
ln -s "$victim/file.txt" "$ent/c-kernels-zzz"
cp "$exp" "$TMP/fresh.sqlite"   # a new input: its small files are written, then the folder is bounded
NSL_CACHE_MAX=2K digest "$TMP/fresh.sqlite" > "$TMP/out" 2> "$TMP/err"
check_eq "eviction with links in columns/: the right result" "$(cat "$TMP/out")" "$want"
check_eq "eviction: the cache's files of older entries removed" "$(find "$NSL_CACHE_DIR/columns" -name 'c-*' -type f | wc -l)" 0
victim_intact "eviction with links in columns/"
[ -L "$NSL_CACHE_DIR/columns/00000000deadbeef" ] && ok "eviction: the link left as it is" || bad "eviction removed the link"
"$NSL" cache clear > "$TMP/out" 2>&1
check_eq "cache clear with links: exit 0" "$?" 0
victim_intact "cache clear with links inside the cache"
check_eq "cache clear: only what carries the cache's header removed (the user's file, links kept)" \
  "$(cd "$NSL_CACHE_DIR" && find . -type f -o -type l | sort)" \
  "$(printf './columns/00000000deadbeef\n./columns/%s/c-kernels-zzz\n./columns/%s/my-notes.txt' "$(basename "$ent")" "$(basename "$ent")")"
rm -rf "$NSL_CACHE_DIR"
mkdir -p "$NSL_CACHE_DIR" && ln -s "$victim/dir" "$NSL_CACHE_DIR/columns"
"$NSL" cache clear > "$TMP/out" 2>&1
rc=$?
victim_intact "cache clear with columns/ a link"
[ $rc -ne 0 ] && grep -q "refusing cache folder '$NSL_CACHE_DIR/columns': not a folder" "$TMP/out" &&
  ok "cache clear with columns/ a link: refused, saying why" || bad "columns/ a link: rc $rc, $(cat "$TMP/out")"
cp "$exp" "$TMP/fresh2.sqlite"
NSL_CACHE_MAX=2K digest "$TMP/fresh2.sqlite" > "$TMP/out" 2> "$TMP/err"
check_eq "a run with columns/ a link: the right result, one line" "$(cat "$TMP/out") $(wc -l < "$TMP/err")" "$want 1"
victim_intact "a run with columns/ a link"

# --- exports: reused only when nsl made them; the log never written through a link ---
mkdir -p "$TMP/rep" && cd "$TMP/rep" || exit 1
export NSL_CACHE_DIR=$TMP/own/cache2
make_report run.nsys-rep "first"
: > "$FAKE_NSYS_LOG"
"$NSL" info run.nsys-rep --nsys "$FAKE" --format json > info.json 2> info.err
check_eq "rep: the right kernel count" "$(kernels_of info.json)" "$n_kernels"
key=$(rep_key run.nsys-rep)
entry=$NSL_CACHE_DIR/exports/$key
[ -f "$entry/run.sqlite" ] && ok "rep: the export lies in exports/<key>" || bad "rep: no export at $entry"
check_eq "rep: the export's folder made 0700" "$(stat -c %a "$entry")" 700
"$NSL" info run.nsys-rep --nsys "$FAKE" --format json > info.json 2>&1
check_eq "rep: reused: still one export" "$(nsys_exports)" 1
cp "$other" "$entry/run.sqlite"   # the export replaced behind nsl's back: not the one nsl recorded
"$NSL" info run.nsys-rep --nsys "$FAKE" --format json > info.json 2> info.err
check_eq "rep: an export nsl did not write is not reused: exported again" "$(nsys_exports)" 2
check_eq "rep: ... and the right kernel count" "$(kernels_of info.json)" "$n_kernels"
rm "$entry/export.log" && ln -s "$victim/file.txt" "$entry/export.log"
touch run.nsys-rep   # a new export is due
"$NSL" info run.nsys-rep --nsys "$FAKE" --format json > info.json 2> info.err
check_eq "rep: export.log a link: the right kernel count" "$(kernels_of info.json)" "$n_kernels"
victim_intact "rep: export.log a link"
[ -f "$entry/export.log" ] && [ ! -L "$entry/export.log" ] && ok "rep: the log made afresh, not through the link" ||
  bad "rep: the log: $(ls -l "$entry")"
# cache clear: the export entries nsl made (this version's record, or an older nsl's), nothing else
old=$NSL_CACHE_DIR/exports/00000000000000aa
mkdir -m 0700 "$old" "$NSL_CACHE_DIR/exports/00000000000000bb" && printf '123 1700000000.000000001 2049 77\n' > "$old/.report-id" &&
  cp "$other" "$old/x.sqlite" && : > "$old/.lock" && echo "some user's notes" > "$NSL_CACHE_DIR/exports/00000000000000bb/notes"
"$NSL" cache clear > clear.out 2>&1
check_eq "cache clear: exports of this and of an older nsl removed, a folder without a record kept" \
  "$(cd "$NSL_CACHE_DIR" && find . -type f | sort)" "./exports/00000000000000bb/notes"
# ctime: the report edited in place, same size, modification time put back
"$NSL" info run.nsys-rep --nsys "$FAKE" > /dev/null 2>&1   # exported again after the clear
: > "$FAKE_NSYS_LOG"
"$NSL" info run.nsys-rep --nsys "$FAKE" > /dev/null 2>&1
check_eq "rep: unchanged: reused" "$(nsys_exports)" 0
mt=$(stat -c %y run.nsys-rep)
make_report run.nsys-rep "fir5t" && touch -d "$mt" run.nsys-rep
"$NSL" info run.nsys-rep --nsys "$FAKE" > /dev/null 2>&1
check_eq "rep: edited in place with its mtime put back: exported again (ctime)" "$(nsys_exports)" 1
# the columnar cache too: the same bytes written in place, the mtime put back -> the entry filled again
export NSL_CACHE_DIR=$TMP/own/cache3
digest "$exp" > /dev/null
f=$(ls "$NSL_CACHE_DIR"/columns/*/entry)
ident=$(grep '^ident ' "$f")
mt=$(stat -c %y "$exp")
cat "$nccl" 1<> "$exp" && touch -d "$mt" "$exp"
check_eq "columns: the input rewritten in place, mtime put back: the right result" "$(digest "$exp")" "$want"
[ -n "$ident" ] && [ "$(grep '^ident ' "$f")" != "$ident" ] &&
  ok "columns: ... and its entry started again under a new identity (ctime in it)" ||
  bad "columns: the entry was served as it was ($ident)"
cd "$TMP" || exit 1

# --- a hostile neighbour: attacks by another user in a shared 1777 folder ---
if [ "$(id -u)" != 0 ] || ! command -v setpriv > /dev/null || ! getent group nogroup > /dev/null; then
  echo "SKIP   the attacks by another user need root, setpriv and the group nogroup (running as uid $(id -u))"
  finish
  exit $?
fi
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
chmod 0711 "$TMP"   # the attacker can reach the shared folder, not the rest
shared=$TMP/shared
mkdir -m 1777 "$shared" && chmod 1777 "$shared"
as_nobody sh -c "mkdir -m 0777 $shared/c1 $shared/c1/columns && ln -s $victim/dir $shared/c1/columns/00000000deadbeef" ||
  bad "attacker's setup 1"
export NSL_CACHE_DIR=$shared/c1
cp "$exp" "$TMP/fresh3.sqlite"
NSL_CACHE_MAX=2K digest "$TMP/fresh3.sqlite" > "$TMP/out" 2> "$TMP/err"
check_eq "another user's cache folder: exit 0, the right result" "$?:$(cat "$TMP/out")" "0:$want"
check_eq "another user's cache folder: one line" "$(wc -l < "$TMP/err")" 1
grep -q "refusing cache folder '$shared/c1': it belongs to another user (uid 65534)" "$TMP/err" &&
  ok "another user's cache folder: refused, saying why" || bad "refusal: $(cat "$TMP/err")"
victim_intact "eviction over a link planted by another user"
"$NSL" cache clear > "$TMP/out" 2>&1
check_eq "cache clear of another user's folder: refused (exit 1)" "$?" 1
victim_intact "cache clear over a link planted by another user"
as_nobody sh -c "mkdir -m 0777 $shared/c2 && ln -s $victim/dir $shared/c2/columns" || bad "attacker's setup 2"
NSL_CACHE_DIR=$shared/c2 "$NSL" cache clear > /dev/null 2>&1
NSL_CACHE_DIR=$shared/c2 NSL_CACHE_MAX=2K digest "$TMP/fresh3.sqlite" > "$TMP/out" 2>&1
victim_intact "columns/ a link planted by another user"
# the exports: a log link and a forged record with someone else's data
cd "$TMP/rep" || exit 1
make_report victim.nsys-rep "victim's report"
key=$(rep_key victim.nsys-rep)
id=$(stat -c '%s %.9Y %.9Z %d %i' victim.nsys-rep)   # the report's identity, as nsl records it
cp "$other" "$shared/other.sqlite" && chmod 644 "$shared/other.sqlite"
as_nobody sh -c "mkdir -m 0777 $shared/c3 $shared/c3/exports $shared/c3/exports/$key &&
  ln -s $victim/file.txt $shared/c3/exports/$key/export.log &&
  cp $shared/other.sqlite $shared/c3/exports/$key/victim.sqlite && chmod 0777 $shared/c3/exports/$key &&
  printf 'nsl-export 2\nreport %s\n' '$id' > $shared/c3/exports/$key/.report-id" || bad "attacker's setup 3"
: > "$FAKE_NSYS_LOG"
mkdir -p "$TMP/tmpd"
TMPDIR=$TMP/tmpd NSL_CACHE_DIR=$shared/c3 "$NSL" info victim.nsys-rep --nsys "$FAKE" --format json > info.json 2> info.err
check_eq "a planted export and log: exit 0" "$?" 0
check_eq "a planted export and log: the victim's report analysed (kernels = SQL on nsys's export)" \
  "$(kernels_of info.json)" "$n_kernels"
check_eq "a planted export and log: exported afresh" "$(nsys_exports)" 1
check_eq "a planted export and log: one line" "$(wc -l < info.err)" 1
victim_intact "a planted export.log link"
check_eq "the export made in a private folder instead is gone at exit" "$(ls -A "$TMP/tmpd")" ""
finish
