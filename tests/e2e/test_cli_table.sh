#!/usr/bin/env bash
# The table of commands (src/cli/commands.c) against what it drives: the
# README's synopsis block is `nsl --help-synopsis` (scripts/readme-synopsis.sh
# writes it); every command's --help exits 0 with its usage; the options of
# a command's synopsis and of its --help are the same set; the parser takes
# every one of them (with a value of its kind, as "OPT VALUE" and
# "OPT=VALUE"), refuses a flag given a value, an option missing its value,
# an unknown option and a required option left out (exit 2, one line and
# the "Try" hint); profile passes what it does not know on to nsys.
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?}"
F="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"

# The README block, between the markers, without the code fence.
awk '/^<!-- nsl --help-synopsis: end/ { on = 0 } on && !/^```$/ { print } /^<!-- nsl --help-synopsis: begin/ { on = 1 }' \
  "$NSL_SOURCE_DIR/README.md" > "$TMP/readme.txt"
"$NSL" --help-synopsis > "$TMP/synopsis.txt"; rc=$?
check_eq "nsl --help-synopsis: exit 0" "$rc" 0
if [ -s "$TMP/readme.txt" ] && cmp -s "$TMP/readme.txt" "$TMP/synopsis.txt"; then
  ok "the README's synopsis is nsl --help-synopsis"
else
  bad "README.md's synopsis differs from nsl --help-synopsis (run scripts/readme-synopsis.sh build/nsl): $(diff "$TMP/readme.txt" "$TMP/synopsis.txt" | head -5)"
fi

# The synopsis of each command, its continuation lines joined.
awk '/ --help$/ { next } /^nsl [a-z]/ { if (cur) print cur; cur = $0; next } /^ / { sub(/^ +/, " "); cur = cur $0; next } { if (cur) print cur; cur = "" }
     END { if (cur) print cur }' "$TMP/synopsis.txt" > "$TMP/commands.txt"
commands=$(awk '{ print $2 }' "$TMP/commands.txt")
[ "$(echo "$commands" | wc -l)" -ge 8 ] && ok "the synopsis lists $(echo $commands | wc -w) commands" || bad "commands: $commands"
for c in $commands; do
  "$NSL" --help | grep -q "^  $c\b" || bad "nsl --help omits $c"
done

# A value of the option's kind, from its value name in the synopsis.
value_for() {
  case $1 in
    *=*) echo "key=value" ;;
    *\|*) echo "${1%%|*}" ;;
    *) echo "x" ;;
  esac
}

for c in $commands; do
  line=$(grep "^nsl $c " "$TMP/commands.txt"; grep -x "nsl $c" "$TMP/commands.txt")
  "$NSL" "$c" --help > "$TMP/help.txt" 2> "$TMP/help.err"; rc=$?
  check_eq "nsl $c --help: exit 0" "$rc" 0
  [ -s "$TMP/help.err" ] && bad "nsl $c --help wrote to stderr: $(head -2 "$TMP/help.err")"
  head -1 "$TMP/help.txt" | grep -q "^usage: nsl $c\b" && ok "nsl $c --help: usage first" || bad "nsl $c --help: $(head -1 "$TMP/help.txt")"
  # options of the synopsis: "[--opt VALUE]", "[--flag]", "-o OUT.zip" (required)
  { echo "$line" | grep -oE '\[--?[a-z][^]]*\]'; echo "$line" | grep -oE ' --?[a-z][a-z-]* [^ []+'; } |
    sed 's/^ //; s/^\[//; s/\]$//' | sort -u > "$TMP/syn_opts.txt"
  # options of the help: the labels of the "options:" lines ("-o, --output OUT.zip")
  awk '/^options:$/ { on = 1; next } on && /^$/ { on = 0 } on && /^  -/ { print }' "$TMP/help.txt" |
    sed -E 's/^  //; s/ {2,}.*$//' > "$TMP/help_labels.txt"
  sed -E 's/ .*//' "$TMP/syn_opts.txt" | sort -u > "$TMP/syn_names.txt"
  twice=$({ echo "$line" | grep -oE '\[--?[a-z][a-z-]*'; echo "$line" | grep -oE ' --?[a-z][a-z-]* '; } | tr -d '[ ' | sort | uniq -d)
  check_eq "nsl $c: no option declared twice" "$twice" ""
  sed -E 's/,? .*//' "$TMP/help_labels.txt" | grep -vx -- '-h' | sort -u > "$TMP/help_names.txt"
  if cmp -s "$TMP/syn_names.txt" "$TMP/help_names.txt"; then
    ok "nsl $c: the options of the synopsis and of --help are the same ($(wc -l < "$TMP/syn_names.txt"))"
  else
    bad "nsl $c: synopsis and --help differ: $(diff "$TMP/syn_names.txt" "$TMP/help_names.txt" | tr '\n' ' ')"
  fi
  grep -q -- '^-h, --help' "$TMP/help_labels.txt" || bad "nsl $c --help omits -h, --help"
  while read -r opt value; do
    if [ -n "$value" ]; then
      v=$(value_for "$value")
      "$NSL" "$c" "$opt" "$v" --help > /dev/null 2> "$TMP/err" && "$NSL" "$c" "$opt=$v" --help > /dev/null 2>> "$TMP/err" &&
        ok "nsl $c $opt $v: parsed" || bad "nsl $c $opt $v: refused: $(cat "$TMP/err")"
      "$NSL" "$c" --help "$opt" > /dev/null 2> "$TMP/err"; rc=$?
      [ "$rc" = 2 ] && grep -q "option .*needs a value" "$TMP/err" && ok "nsl $c $opt without a value: refused" ||
        bad "nsl $c $opt without a value: exit $rc $(cat "$TMP/err")"
    else
      "$NSL" "$c" "$opt" --help > /dev/null 2> "$TMP/err" && ok "nsl $c $opt: parsed" || bad "nsl $c $opt: $(cat "$TMP/err")"
      "$NSL" "$c" "$opt=1" --help > /dev/null 2> "$TMP/err"; rc=$?
      [ "$rc" = 2 ] && grep -q "takes no value" "$TMP/err" && ok "nsl $c $opt=1: refused" || bad "nsl $c $opt=1: exit $rc"
    fi
  done < "$TMP/syn_opts.txt"
  # an unknown option: refused (exit 2, one line and the hint), or passed on by profile
  "$NSL" "$c" --bogus-option --help > /dev/null 2> "$TMP/err"; rc=$?
  if echo "$line" | grep -q "options\] -- "; then
    check_eq "nsl $c passes an unknown option on" "$rc" 0
  elif [ "$rc" = 2 ] && grep -q "^nsl: unknown option '--bogus-option'" "$TMP/err" &&
       [ "$(wc -l < "$TMP/err")" = 2 ] && grep -q "^Try 'nsl $c --help'.$" "$TMP/err"; then
    ok "nsl $c --bogus-option: refused"
  else
    bad "nsl $c --bogus-option: exit $rc: $(cat "$TMP/err")"
  fi
done

# A misspelt option of each kind suggests the declared one.
suggest() { # suggest WANT ARGS...
  local want=$1; shift
  "$NSL" "$@" > /dev/null 2> "$TMP/err"; local rc=$?
  [ "$rc" = 2 ] && grep -q "did you mean '$want'" "$TMP/err" && ok "nsl $*: did you mean '$want'" || bad "nsl $* (exit $rc): $(cat "$TMP/err")"
}
suggest --allow-mixed-nsys combine a.zip b.zip -o c.zip --allow-mixed-nsy
suggest --source bundle "$F" -o "$TMP/x.zip" --sourc x
suggest --label run summary "$F" --labl x
suggest warning run summary "$F" --fail-on=warnin

# A required option left out, and the words a command needs.
refused() { # refused PATTERN ARGS...
  local pattern=$1; shift
  "$NSL" "$@" > /dev/null 2> "$TMP/err"; local rc=$?
  [ "$rc" = 2 ] && grep -q -- "$pattern" "$TMP/err" && [ "$(grep -vc "^Try 'nsl " "$TMP/err")" = 1 ] &&
    ok "nsl $*: refused ($pattern)" || bad "nsl $* (exit $rc): $(cat "$TMP/err")"
}
for c in $commands; do
  for req in $(grep "^nsl $c " "$TMP/commands.txt" | grep -oE ' -[a-z] [^ []+' | awk '{ print $1 }'); do
    refused "give $req" "$c" x
  done
done
refused "which analysis" run
refused "no trace given" info
refused "no export given" bundle -o "$TMP/x.zip"
refused "after '--'" profile --nsys /bin/false
refused "wants KEY=VALUE" run summary "$F" --arg limit
refused "unknown --format 'yaml'" info "$F" --format yaml

# The README's statement of the options every command takes ("Every command but `a` and `b` also takes `--x`
# and `--y`") against the table: exactly the commands it leaves out take neither option.
stmt=$(grep -m1 '^Every command but .* also takes ' "$NSL_SOURCE_DIR/README.md")
if [ -z "$stmt" ]; then bad "the README names no options that every command takes"; else
  except=$(echo "$stmt" | sed 's/ also takes .*//' | grep -oE '`[a-z]+`' | tr -d '`' | sort | tr '\n' ' ')
  opts=$(echo "$stmt" | sed 's/.* also takes //' | grep -oE '`--[a-z-]+`' | tr -d '`')
  for c in $commands; do
    line=$(grep "^nsl $c " "$TMP/commands.txt"; grep -x "nsl $c" "$TMP/commands.txt")
    for o in $opts; do
      short=$o; [ "$o" = --quiet ] && short=-q
      has=no; echo "$line" | grep -qE -- "\[($o|$short)\]" && has=yes
      want=yes; case " $except" in *" $c "*) want=no ;; esac
      check_eq "as the README says, nsl $c takes $o: $want" "$has" "$want"
    done
  done
fi
"$NSL" list extra > /dev/null 2> "$TMP/err"; rc=$?
[ "$rc" = 2 ] && grep -q "takes no arguments" "$TMP/err" && ok "list extra: refused" || bad "list extra: exit $rc $(cat "$TMP/err")"
"$NSL" --verison > /dev/null 2> "$TMP/err"; rc=$?
[ "$rc" = 2 ] && grep -q "did you mean '--version'" "$TMP/err" && ok "--verison: did you mean" || bad "--verison: $rc $(cat "$TMP/err")"
# notebooks: a misspelled shipped name gets the closest; a report name that is neither HTML nor ipynb is refused
T0="$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite"
"$NSL" notebook analyss "$T0" -o "$TMP/nb.html" > /dev/null 2> "$TMP/err"; rc=$?
[ "$rc" = 2 ] && grep -q "did you mean 'analysis'" "$TMP/err" && ok "notebook analyss: did you mean" ||
  bad "notebook analyss: $rc $(cat "$TMP/err")"
"$NSL" notebook analysis "$T0" -o "$TMP/nb.pdf" > /dev/null 2> "$TMP/err"; rc=$?
[ "$rc" = 2 ] && [ ! -e "$TMP/nb.pdf" ] && grep -q "nb.pdf" "$TMP/err" && ok "notebook -o x.pdf: refused, nothing written" ||
  bad "notebook -o x.pdf: $rc $(cat "$TMP/err")"

# The options reach the Lua side under their declared fields.
"$NSL" run summary "$F" --format=csv --arg=limit=1 > "$TMP/csv.txt" 2> "$TMP/err"; rc=$?
check_eq "run --format=csv --arg=limit=1: exit 0" "$rc" 0
grep -q "^Time (%),Total Time (ns),Instances," "$TMP/csv.txt" && ok "--format=csv: CSV" || bad "--format=csv: $(head -2 "$TMP/csv.txt")"
"$NSL" run summary "$F" --label a,b > /dev/null 2> "$TMP/err"; rc=$?
[ "$rc" = 2 ] && grep -q "takes no --label" "$TMP/err" && ok "--label reaches the runner" || bad "--label: exit $rc $(cat "$TMP/err")"
# after "--" a word is a trace even when it starts with '-'
cp "$F" "$TMP/-dash.sqlite"
(cd "$TMP" && "$NSL" info -- -dash.sqlite > /dev/null 2> "$TMP/err") && ok "info -- -dash.sqlite: a trace" ||
  bad "info -- -dash.sqlite: $(cat "$TMP/err")"
finish
