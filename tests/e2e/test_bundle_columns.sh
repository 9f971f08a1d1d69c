#!/usr/bin/env bash
# nsl bundle --columns: the bundle stays a valid zip that keeps the export
# byte for byte, every member is in the manifest with its sha256 (verified),
# the column members are stored uncompressed with their values 8-byte aligned
# in the file (checked by Python's zipfile, not nsl), nsl reads them straight
# from the zip into memory of its own (no mapping of the bundle stays, so a
# bundle changed in place cannot end nsl with SIGBUS), and results equal SQL on
# the export -- and stay right when a stored column is damaged.
. "$(dirname "$0")/lib.sh"
export NSL_CACHE_DIR="$TMP/cache" NSL_NO_CACHE=1   # the bundle's own columns only
exp="$TMP/run.sqlite"
cp "$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$exp"
out="$TMP/cols.zip"
"$NSL" bundle "$exp" -o "$out" --columns > /dev/null || bad "nsl bundle --columns failed"
unzip -tq "$out" > /dev/null && ok "the bundle is a valid zip (unzip -t)" || bad "unzip -t fails on the bundle"
unzip -p "$out" reports/run.sqlite | cmp -s - "$exp" && ok "the export is in the bundle byte for byte" || bad "the export member differs"
cat > "$TMP/verify.lua" <<LUA
return { run = function()
  local nsl = require("nsl")
  local b = assert(nsl.bundle_open("$out"))
  local n = 0
  for _, m in ipairs(b:members()) do if (m.name or m):find("^columns/") then n = n + 1 end end
  print(assert(b:verify()), n)
end }
LUA
read -r verified ncols < <("$NSL" run "$TMP/verify.lua" "$out" | tr '\t' ' ')
check_eq "every member matches its manifest sha256" "$verified" "true"
[ "${ncols:-0}" -gt 20 ] && ok "columns stored: $ncols members" || bad "too few column members: ${ncols:-0}"
# "N BAD": the columns/ members of zip $1 and how many of them are not
# stored with the cache header 8-aligned in the file (Python's zipfile)
aligned() {
  python3 - "$1" <<'PY'
import struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
raw = open(sys.argv[1], "rb").read()
bad = 0
n = 0
for i in z.infolist():
    if not i.filename.startswith("columns/"):
        continue
    n += 1
    nlen, elen = struct.unpack("<HH", raw[i.header_offset + 26:i.header_offset + 30])
    data = i.header_offset + 30 + nlen + elen
    pad = struct.unpack("<Q", raw[data:data + 8])[0]
    head = data + pad
    if i.compress_type != zipfile.ZIP_STORED or head % 8 or raw[head:head + 8] != b"NSLCACHE":
        bad += 1
print(n, bad)
PY
}
aligned "$out" > "$TMP/align"
read -r nz nbad < "$TMP/align"
check_eq "column members stored, the cache header 8-aligned in the file (zipfile)" "$nbad/$nz" "0/$ncols"

cat > "$TMP/digest.lua" <<LUA
return { run = function(trace)
  local k, n = trace.kernels, trace.nvtx
  print(#k, k.start:sum(), k.stop:max(), k.demangled:unique():count(), k.grid_x:sum())
  print(#n, n.start:sum(), n.text:unique():count())
  local f = io.open("/proc/self/maps"); local s = f:read("a"); f:close()
  local maps = 0
  for line in s:gmatch("[^\n]+") do if line:find("cols.zip", 1, true) then maps = maps + 1 end end
  print(maps > 0 and "mapped" or "not mapped")
end }
LUA
want="$(sql "$exp" "SELECT count(*), sum(start), max(end), count(DISTINCT demangledName), sum(gridX) FROM CUPTI_ACTIVITY_KIND_KERNEL" | tr '|' '\t')
$(sql "$exp" "SELECT count(*), sum(start), count(DISTINCT coalesce(text, s.value)) FROM NVTX_EVENTS LEFT JOIN StringIds s ON s.id = textId WHERE eventType IN (34, 59, 60)" | tr '|' '\t')"
got=$("$NSL" run "$TMP/digest.lua" "$out")
check_eq "columns from the bundle: digests equal SQL on the export" "$(echo "$got" | head -2 | tr -s ' \t' '\t')" "$(echo "$want" | tr -s ' \t' '\t')"
check_eq "columns from the bundle: read into memory of its own, the zip not mapped (/proc/self/maps)" "$(echo "$got" | tail -1)" "not mapped"
plain="$TMP/plain.zip"
"$NSL" bundle "$exp" -o "$plain" > /dev/null
for a in summary nvtx gaps; do
  "$NSL" run $a "$out" --format json > "$TMP/a.json" 2>&1
  "$NSL" run $a "$plain" --format json | sed "s,plain.zip,cols.zip,g" > "$TMP/b.json" 2>&1
  cmp -s "$TMP/a.json" "$TMP/b.json" && ok "$a: the same with and without stored columns" || bad "$a differs with stored columns"
done
# ---- writers that copy members keep the columns stored and aligned:
# nsl run --embed rewrites the bundle around its members, nsl combine copies
# two --columns bundles into one (the second's report renamed: the same
# member name with other bytes, so its columns must follow the new name)
verify_zip() { # verify_zip ZIP -> "true NCOLUMNS" (manifest sha256 of every member verified)
  cat > "$TMP/verify_zip.lua" <<LUA
return { run = function()
  local b = assert(require("nsl").bundle_open("$1"))
  local n = 0
  for _, m in ipairs(b:members()) do if (m.name or m):find("^columns/") then n = n + 1 end end
  print(assert(b:verify()), n)
end }
LUA
  "$NSL" run "$TMP/verify_zip.lua" "$1" | tr '\t' ' '
}
emb="$TMP/embed-cols.zip"   # "cols.zip" in its name: digest.lua looks for a mapping of it
cp "$out" "$emb"
"$NSL" run summary "$emb" --embed > /dev/null && "$NSL" run nvtx "$emb" --embed > /dev/null || bad "nsl run --embed failed"
unzip -tq "$emb" > /dev/null && ok "after --embed: a valid zip (unzip -t)" || bad "after --embed: unzip -t fails"
[ "$(unzip -Z1 "$emb" | grep -c '^analyses/')" -gt 0 ] && ok "after --embed: the results are stored" || bad "after --embed: no analyses/ members"
check_eq "after --embed: every member matches its sha256, every column member kept" "$(verify_zip "$emb")" "true $ncols"
check_eq "after --embed: column members stored, the cache header 8-aligned (zipfile)" "$(aligned "$emb")" "$ncols 0"
got=$("$NSL" run "$TMP/digest.lua" "$emb")
check_eq "after --embed: digests equal SQL on the export" "$(echo "$got" | head -2 | tr -s ' \t' '\t')" "$(echo "$want" | tr -s ' \t' '\t')"
check_eq "after --embed: the zip not mapped (/proc/self/maps)" "$(echo "$got" | tail -1)" "not mapped"

mkdir -p "$TMP/a" "$TMP/b"
cp "$exp" "$TMP/a/run.sqlite"
cp "$exp" "$TMP/b/run.sqlite"
sqlite3 "$TMP/b/run.sqlite" "PRAGMA user_version = 7"   # other bytes, the same rows: a second rank
"$NSL" bundle "$TMP/a/run.sqlite" --rank 0 --columns -o "$TMP/r0.zip" > /dev/null &&
  "$NSL" bundle "$TMP/b/run.sqlite" --rank 1 --columns -o "$TMP/r1.zip" > /dev/null || bad "combine: making the inputs"
both="$TMP/both.zip"
"$NSL" combine "$TMP/r0.zip" "$TMP/r1.zip" -o "$both" > /dev/null || bad "nsl combine failed"
unzip -tq "$both" > /dev/null && ok "after combine: a valid zip (unzip -t)" || bad "after combine: unzip -t fails"
check_eq "after combine: every member matches its sha256, both reports' columns kept" "$(verify_zip "$both")" "true $((2 * ncols))"
check_eq "after combine: the renamed report's columns follow its new name" \
  "$(unzip -Z1 "$both" | grep -c '^reports/run.rank1.sqlite$\|^columns/reports/run.rank1.sqlite/')" "$((ncols + 1))"
check_eq "after combine: column members stored, the cache header 8-aligned (zipfile)" "$(aligned "$both")" "$((2 * ncols)) 0"
# two reports' rows are concatenated (copied, not mapped): that the columns
# are used is shown by damaging both exports, which are then never read
python3 - "$both" <<'PY'
import struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
with open(sys.argv[1], "r+b") as f:
    for i in z.infolist():
        if i.filename.startswith("reports/"):
            f.seek(i.header_offset + 26)
            nlen, elen = struct.unpack("<HH", f.read(4))
            f.seek(i.header_offset + 30 + nlen + elen + i.compress_size // 2)
            f.write(b"\xde\xad\xbe\xef" * 64)
PY
sql2() { sqlite3 ":memory:" "ATTACH 'file:$TMP/a/run.sqlite?immutable=1' AS a; ATTACH 'file:$TMP/b/run.sqlite?immutable=1' AS b; $1"; }
kq() { echo "SELECT k.start, k.end, s.value AS d, k.gridX FROM $1.CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN $1.StringIds s ON s.id = k.demangledName"; }
nq() { echo "SELECT n.start, coalesce(n.text, s.value) AS t FROM $1.NVTX_EVENTS n LEFT JOIN $1.StringIds s ON s.id = n.textId WHERE n.eventType IN (34, 59, 60)"; }
want2="$(sql2 "SELECT count(*), sum(start), max(end), count(DISTINCT d), sum(gridX) FROM ($(kq a) UNION ALL $(kq b))" | tr '|' '\t')
$(sql2 "SELECT count(*), sum(start), count(DISTINCT t) FROM ($(nq a) UNION ALL $(nq b))" | tr '|' '\t')"
got=$("$NSL" run "$TMP/digest.lua" "$both" 2>&1)
check_eq "after combine, both exports damaged: digests equal SQL on the two exports (the stored columns answer)" \
  "$(echo "$got" | head -2 | tr -s ' \t' '\t')" "$(echo "$want2" | tr -s ' \t' '\t')"

# a damaged stored column: the result comes from the export, still right
python3 - "$out" <<'PY'
import struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
i = z.getinfo("columns/reports/run.sqlite/c-kernels-start")
with open(sys.argv[1], "r+b") as f:
    f.seek(i.header_offset + 26)
    nlen, elen = struct.unpack("<HH", f.read(4))
    f.seek(i.header_offset + 30 + nlen + elen + 16 + 256 + 8)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xff]))
PY
got=$("$NSL" run "$TMP/digest.lua" "$out")
check_eq "a damaged stored column: digests still equal SQL" "$(echo "$got" | head -2 | tr -s ' \t' '\t')" "$(echo "$want" | tr -s ' \t' '\t')"
# the export itself is not read when every column is stored: damage its
# compressed bytes and the columns still answer; SQL, which needs the export,
# fails with one line naming the member
lazy="$TMP/lazy.zip"
"$NSL" bundle "$exp" -o "$lazy" --columns > /dev/null
python3 - "$lazy" <<'PY'
import struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
i = z.getinfo("reports/run.sqlite")
with open(sys.argv[1], "r+b") as f:
    f.seek(i.header_offset + 26)
    nlen, elen = struct.unpack("<HH", f.read(4))
    f.seek(i.header_offset + 30 + nlen + elen + i.compress_size // 2)
    f.write(b"\xde\xad\xbe\xef" * 64)
PY
got=$("$NSL" run "$TMP/digest.lua" "$lazy" | sed 's,lazy.zip,cols.zip,')
check_eq "export damaged, columns stored: digests equal SQL on the export (the export is not read)" \
  "$(echo "$got" | head -2 | tr -s ' \t' '\t')" "$(echo "$want" | tr -s ' \t' '\t')"
cat > "$TMP/sql.lua" <<'LUA'
return { run = function(trace) print(trace:sql(0, "SELECT count(*) AS n FROM StringIds")[1].n) end }
LUA
"$NSL" run "$TMP/sql.lua" "$lazy" > /dev/null 2> "$TMP/err"
rc=$?
[ $rc -eq 1 ] && grep -q "member 'reports/run.sqlite' is damaged" "$TMP/err" &&
  ok "SQL on the damaged export: an error naming the member (exit 1)" || bad "SQL on the damaged export: rc $rc, $(cat "$TMP/err")"
"$NSL" run "$TMP/sql.lua" "$out" > "$TMP/n"
check_eq "SQL on an intact bundle with stored columns: the export is opened on demand" "$(cat "$TMP/n")" "$(sql "$exp" "SELECT count(*) FROM StringIds")"
finish
