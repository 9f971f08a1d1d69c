#!/usr/bin/env bash
# Machine outputs and the command line: every shipped analysis's --format json
# is one valid JSON document (Python's json module) and its --out folder
# holds every table as CSV (Python's csv module) with the same column names
# and values as the JSON, also for columns named like the table methods;
# export --format json is one document; a timeline window after the trace
# is a one-line error that writes nothing; --help on every command exits 0;
# misspelled commands, options, analyses and --arg names get a suggestion;
# text on a terminal fits its width (script(1) gives the terminal), text on
# a pipe and CSV keep whole names.
. "$(dirname "$0")/lib.sh"

F="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
J="$NSL_DATA_DIR/nsys-jax/pax_fsdp4_4proc_proc0.zip"

# check_outputs NAME DIR JSONFILE: the JSON parses; every table's CSV in DIR has
# the JSON's column names (document "columns", and each record's keys, in
# order), its number of rows and its values; results.json has the same tables.
check_outputs() {
  python3 - "$2" "$3" <<'PY'
import csv, json, math, sys
d, path = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
res = json.load(open(d + "/results.json"))
errors = []
if res["tables"] != doc["tables"]: errors.append("results.json tables differ from --format json")
for name, records in doc["tables"].items():
    cols = doc["columns"][name]
    with open(f"{d}/{name}.csv", newline="") as f:
        rows = list(csv.reader(f))
    if rows[0] != cols: errors.append(f"{name}: CSV header {rows[0]} != JSON columns {cols}")
    if len(rows) - 1 != len(records): errors.append(f"{name}: {len(rows) - 1} CSV rows, {len(records)} JSON")
    for i, (r, rec) in enumerate(zip(rows[1:], records)):
        if list(rec.keys()) != cols: errors.append(f"{name} row {i}: keys {list(rec.keys())}"); break
        for c, s in zip(cols, r):
            v = rec[c]
            if v is None: ok = s == ""
            elif isinstance(v, bool): ok = s == ("true" if v else "false")
            elif isinstance(v, int): ok = int(s) == v
            elif isinstance(v, float): ok = float(s) == v
            else: ok = s == v
            if not ok: errors.append(f"{name} row {i} {c}: CSV {s!r} != JSON {v!r}"); break
print("; ".join(errors[:5]) if errors else "ok")
PY
}

# Every shipped analysis: --format json and --out agree.
for a in $("$NSL" list | awk 'NR > 2 { print $1 }'); do
  case $a in
    jax_*) in=("$J") ;;
    diff|compare) in=("$F" "$F") ;;
    *) in=("$F") ;;
  esac
  rm -rf "$TMP/out"
  if ! "$NSL" run "$a" "${in[@]}" --format json > "$TMP/doc.json" 2> "$TMP/err" ||
     ! "$NSL" run "$a" "${in[@]}" --out "$TMP/out" > /dev/null 2>> "$TMP/err"; then
    bad "$a: failed: $(head -3 "$TMP/err")"; continue
  fi
  # export without --out writes the trace itself to stdout (checked below): its document is results.json
  [ "$a" = export ] && cp "$TMP/out/results.json" "$TMP/doc.json"
  check_eq "$a: --format json and --out: columns and values" "$(check_outputs "$a" "$TMP/out" "$TMP/doc.json" 2>&1)" ok
done

# A script whose table has a column named like every method of a table.
cat > "$TMP/methods.lua" <<'LUA'
local nsl = require("nsl")
return {name = "methods", needs_trace = false, run = function(_, _, out)
  local names = {}
  for k in pairs(nsl.methods().table) do names[#names + 1] = k end
  table.sort(names)
  local spec = {}
  for i, n in ipairs(names) do spec[i] = {n, {i, -i}} end
  out:table("methods", nsl.table(spec))
  io.stderr:write(table.concat(names, ","), "\n")
end}
LUA
rm -rf "$TMP/out"
names=$("$NSL" run "$TMP/methods.lua" --out "$TMP/out" 2>&1 > /dev/null)   # the names, from stderr
"$NSL" run "$TMP/methods.lua" --format json > "$TMP/m.json" 2> /dev/null
check_eq "columns named like methods: round trip" "$(check_outputs methods "$TMP/out" "$TMP/m.json")" ok
check_eq "columns named like methods: CSV header" "$(head -1 "$TMP/out/methods.csv")" "$names"
case ",$names," in *,rows,*) ok "a column named rows" ;; *) bad "no method rows among $names" ;; esac
if "$NSL" info "$F" --format json | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["tables"]["tables"]'
then ok "info --format json (a column named rows)"; else bad "info --format json"; fi

# export without --out: the trace JSON is the one document on stdout, whatever --format says.
for f in text json; do
  if "$NSL" run export "$F" --format "$f" | python3 -c 'import json, sys; assert json.load(sys.stdin)["traceEvents"]'
  then ok "export --format $f: one JSON document"; else bad "export --format $f: not one JSON document"; fi
done

# A timeline window after the last event: a usage error (as --from/--to past the end): one line, exit 2, no file.
rm -rf "$TMP/tl"
"$NSL" run timeline "$F" --arg from=1h --arg to=2h --out "$TMP/tl" > /dev/null 2> "$TMP/err"
check_eq "timeline after the trace: exit code" "$?" 2
check_eq "timeline after the trace: one line" "$(wc -l < "$TMP/err")" 1
grep -q "after the trace's last event" "$TMP/err" && ok "timeline: says why" || bad "timeline: $(cat "$TMP/err")"
[ -z "$(ls -A "$TMP/tl" 2> /dev/null)" ] && ok "timeline: no file written" || bad "timeline wrote $(ls "$TMP/tl")"

# --help on every command: exit 0, its usage on stdout.
for c in run info list repl bundle combine profile notebook; do
  out=$("$NSL" "$c" --help < /dev/null 2>&1); code=$?
  check_eq "nsl $c --help: exit 0" "$code" 0
  case $out in "usage: nsl $c"*) ok "nsl $c --help: usage" ;; *) bad "nsl $c --help: $(echo "$out" | head -2)" ;; esac
done
"$NSL" --help | grep -q "^  notebook " && ok "nsl --help lists notebook" || bad "nsl --help omits notebook"
"$NSL" notebook --help | grep -q -- "--stop-on-error" && ok "notebook --help: --stop-on-error" || bad "notebook --help"
for a in $("$NSL" list | awk 'NR > 2 { print $1 }'); do
  doubled=$("$NSL" run "$a" --help | grep -c "default.*(default:")
  check_eq "nsl run $a --help: no doubled default" "$doubled" 0
done

# Did you mean: commands, options, analyses, --arg names.
suggest() {   # suggest WANT ARGS...
  local want=$1; shift
  "$NSL" "$@" > /dev/null 2> "$TMP/err"
  local code=$?
  if [ "$code" = 2 ] && grep -q "did you mean '$want'" "$TMP/err"; then ok "nsl $*: did you mean '$want'"
  else bad "nsl $* (exit $code): $(cat "$TMP/err")"; fi
}
suggest run rn "$F"
suggest notebook notbook x.md
suggest summary run sumary "$F"
suggest limit run summary "$F" --arg limt=3
suggest --out run summary "$F" --ot x
suggest json run info "$F" --format jsn
suggest --stop-on-error notebook analysis "$F" -o "$TMP/x.html" --stop-on-eror

# Width: on a terminal the text fits it; on a pipe nothing is cut; CSV keeps whole names.
if command -v script > /dev/null; then
  script -qec "stty cols 100 rows 50; '$NSL' run launch '$F'" /dev/null | tr -d '\r' > "$TMP/tty.txt"
  widest=$(python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$TMP/tty.txt")
  [ "$widest" -le 100 ] && ok "launch on a 100-column terminal: widest line $widest" || bad "tty: widest line $widest"
  grep -q "^ *161 .*void at::native::elementwise_ke" "$TMP/tty.txt" && ok "tty: the names beside the numbers" ||
    bad "tty: no name beside the numbers"
else
  bad "script(1) is missing (util-linux)"
fi
"$NSL" run launch "$F" > "$TMP/pipe.txt"
widest=$(python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$TMP/pipe.txt")
[ "$widest" -gt 100 ] && ok "launch on a pipe: not cut (widest line $widest)" || bad "pipe: cut to $widest"
grep -q "void at::native::elementwise_kernel<…>(int, T3)$" "$TMP/pipe.txt" && ok "text: template arguments elided, name last" ||
  bad "text: names not shortened"
"$NSL" run launch "$F" --format csv > "$TMP/launch.csv"
name=$(sql "$F" "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
                 WHERE s.value LIKE '%elementwise_kernel<%' ORDER BY length(s.value) DESC LIMIT 1")
grep -qF "$name" "$TMP/launch.csv" && ok "CSV keeps the whole kernel name (SQL)" || bad "CSV lost '$name'"

finish
