#!/usr/bin/env bash
# One open per input: `nsl info` on a bundle, an nsys-jax archive and an
# export opens the file at most twice and, with the cache off, reads a
# zip's central directory once (formats bid on the input opened once; the winner, the reports and
# the cache keep the opened zip, never its path).  Observed with strace
# (-y names each descriptor's file): the opens of the path, and the reads of
# the file that touch the central directory, whose place comes from the
# zip's end record as Python's struct reads it (not from nsl).  Cache off,
# then on (an empty cache folder, then the filled one).  The output is the
# one nsl prints without strace, and the reports are those the zip holds.
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?}"
unset NSL_NO_CACHE
export NSL_CACHE_DIR=$TMP/cache
if ! command -v strace > /dev/null || ! strace -f -o /dev/null true 2> /dev/null; then
  bad "strace missing or not allowed to trace (scripts/install-deps.sh installs it)"
  finish
  exit 1
fi
bundle=$NSL_SOURCE_DIR/samples/nccl_4rank_straggler.zip
jax=$NSL_DATA_DIR/nsys-jax/pax_fsdp4_4proc_proc0.zip
export_=$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite

# dir_range ZIP: "OFFSET END" of its central directory (the end record's fields; zip64 not needed here)
dir_range() {
  python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
at = data.rfind(b'PK\x05\x06', max(0, len(data) - 65557))
size, off = struct.unpack('<II', data[at + 12:at + 20])
print(off, off + size)
PY
}

# dir_reads TRACE FILE LO HI: the reads of FILE in TRACE that touch [LO, HI): pread64(FD<FILE>, ..., LEN, OFF)
# overlapping it; a read() or readv() of FILE (no offset) counts as one that may
dir_reads() {
  grep -F "<$2>" "$1" | awk -v lo="$3" -v hi="$4" '
    / pread64\(/ && match($0, /, [0-9]+, [0-9]+\) += [0-9]+$/) {
      split(substr($0, RSTART + 2), f, /[,) =]+/); len = f[1] + 0; off = f[2] + 0
      if (off < hi && off + len > lo) n++; next }
    / readv?\(/ { n++ }
    END { print n + 0 }'
}

# traced WHAT FILE [ZIP]: nsl info FILE under strace; checks opens (<= 2) and, for a zip with the cache off,
# directory reads (1: with the cache on, the cache's identity of the input samples pages across the file, its
# last one among them, once per report)
traced() {
  local what=$1 file=$2 zip=${3:-} real
  real=$(realpath "$file")
  # (LeakSanitizer cannot run under ptrace: off for the traced run of an ASan build; the plain run below keeps it)
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -y -e trace=openat,open,read,pread64,readv,preadv \
    -o "$TMP/trace" "$NSL" info "$file" > "$TMP/out" 2> "$TMP/err"
  local rc=$?
  check_eq "$what: exit 0" "$rc" 0
  "$NSL" info "$file" > "$TMP/plain" 2> "$TMP/plain.err"
  check_eq "$what: without strace, exit 0" "$?" 0
  check_eq "$what: the output strace saw is nsl's usual one" "$(cat "$TMP/out")" "$(cat "$TMP/plain")"
  local opens
  opens=$(grep -cE "open(at)?\(.*\"([^\"]*/)?$(basename "$file")\"" "$TMP/trace")
  [ "$opens" -ge 1 ] && [ "$opens" -le 2 ] && ok "$what: opened $opens time(s)" || bad "$what: opened $opens times"
  [ -n "$zip" ] && [ "${NSL_NO_CACHE:-}" = 1 ] || return 0
  local lo hi
  read -r lo hi <<< "$(dir_range "$file")"
  check_eq "$what: the central directory ($lo..$hi) read once" "$(dir_reads "$TMP/trace" "$real" "$lo" "$hi")" 1
}

for cache in off on filled; do
  if [ $cache = off ]; then export NSL_NO_CACHE=1; else unset NSL_NO_CACHE; fi
  traced "bundle, cache $cache" "$bundle" zip
  traced "nsys-jax archive, cache $cache" "$jax" zip
  traced "export, cache $cache" "$export_"
done

# the reports nsl info lists are the zip's reports/*.sqlite (unzip's listing)
want=$(unzip -Z1 "$bundle" | grep -c '^reports/.*\.sqlite$')
got=$(NSL_NO_CACHE=1 "$NSL" info "$bundle" | grep -c ':reports/.*\.sqlite$')
if [ "$want" -ge 1 ]; then check_eq "the bundle's reports, as unzip lists them" "$got" "$want"; else bad "unzip lists no report"; fi

# the checks can fail: three opens and three directory reads (one pread before it, one over its end, one
# read()) among reads that miss it are caught
cat > "$TMP/fake" <<'EOF'
1 openat(AT_FDCWD, "x/a.zip", O_RDONLY) = 3
1 openat(AT_FDCWD, "x/a.zip", O_RDONLY) = 4
1 openat(AT_FDCWD, "x/a.zip", O_RDONLY) = 5
1 pread64(3</x/a.zip>, "PK\3\4, 1, 2"..., 100, 0) = 100
1 pread64(3</x/a.zip>, "PK\1\2"..., 60, 950) = 60
1 pread64(4</x/a.zip>, "PK\1\2"..., 10, 1090) = 10
1 read(5</x/a.zip>, "PK", 2) = 2
1 pread64(6</x/b.zip>, "PK\1\2"..., 60, 1000) = 60
1 pread64(3</x/a.zip>, "PK"..., 50, 1100) = 50
EOF
check_eq "probe: three opens are counted" "$(grep -cE 'open(at)?\(.*"([^"]*/)?a.zip"' "$TMP/fake")" 3
check_eq "probe: three directory reads are counted" "$(dir_reads "$TMP/fake" /x/a.zip 1000 1100)" 3
finish
