#!/usr/bin/env bash
# Names from a trace never reach the terminal as control sequences.  Copies of two exports get hostile names
# by SQL (kernel and API names in StringIds, NVTX text, a process name, the host name and the GPU's name): ESC
# sequences that set the clipboard (OSC 52), the window title and clear the screen, BEL, DEL, a C1 CSI, a
# carriage return and a byte that is not UTF-8.  `run summary` and `info` print them in every --format and
# under --out; the oracle is the hand-written rendering of each name -- text, Markdown and CSV: every such
# byte as \xNN; LaTeX: the same with the backslash as \textbackslash{}; JSON: Python's json module reads back
# the name itself (invalid bytes as U+FFFD) -- found byte for byte, and no control byte anywhere but line feeds.
. "$(dirname "$0")/lib.sh"
D=$NSL_DATA_DIR/nsys
cd "$TMP" || exit 1
# E: the hostile text, in SQL; ESC_E: its visible rendering, written out by hand
E="'k' || char(27) || ']52;c;ZXZpbA==' || char(7) || char(27) || ']0;t' || char(7) || char(27) || '[2J' ||
   char(127) || char(155) || 'x' || char(13) || 'y' || CAST(X'FF' AS TEXT)"
ESC_E='k\x1b]52;c;ZXZpbA==\x07\x1b]0;t\x07\x1b[2J\x7f\xc2\x9bx\x0dy\xff'
RAW_E=$(printf 'k\033]52;c;ZXZpbA==\007\033]0;t\007\033[2J\177\302\233x\ry\377' | od -An -tx1 | tr -d ' \n')

cp "$D/tiny_2026.1.sqlite" evil.sqlite
cp "$D/mpi_cuda_rank0_2022.2.sqlite" evil_nvtx.sqlite
chmod u+w evil.sqlite evil_nvtx.sqlite
sqlite3 evil.sqlite "
  UPDATE StringIds SET value = $E || '#' || id WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME);
  UPDATE PROCESSES SET name = $E || '#proc' WHERE pid = 1;
  UPDATE TARGET_INFO_SYSTEM_ENV SET value = $E || '#host' WHERE name = 'Hostname';
  UPDATE TARGET_INFO_GPU SET name = $E || '#gpu';"
sqlite3 evil_nvtx.sqlite "UPDATE NVTX_EVENTS SET text = $E || '#nvtx' WHERE text = 'saxpy'"
# the names planted, as the oracle knows them (suffixes after E)
kernel_ids=$(sql evil.sqlite "SELECT DISTINCT s.id FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
                              ON s.id = k.demangledName ORDER BY 1")
api_ids=$(sql evil.sqlite "SELECT DISTINCT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY 1")
[ -n "$kernel_ids" ] && [ -n "$api_ids" ] || bad "the planted names: no kernels or API calls"
[ "$(sql evil_nvtx.sqlite "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'k%#nvtx'")" -gt 0 ] ||
  bad "the planted NVTX text"

# check FILE FORMAT WHAT SUFFIX... -- every name E#SUFFIX is in FILE as FORMAT renders it, byte for byte,
# and FILE holds no control byte but line feeds, no C1 and no byte that is not UTF-8
check() {
  local file=$1 format=$2 what=$3
  shift 3
  if python3 - "$file" "$format" "$ESC_E" "$RAW_E" "$@" > check.txt 2>&1 << 'EOF'
import json, re, sys
path, fmt, esc_e, raw_e, suffixes = sys.argv[1], sys.argv[2], sys.argv[3], bytes.fromhex(sys.argv[4]), sys.argv[5:]
data = open(path, "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("not UTF-8 at byte %d" % e.start)
bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
if bad:
    sys.exit("control characters reach the output: %r" % sorted(set(bad)))
strings = set()
if fmt == "json":   # every string in the document, read back by Python's own parser
    def walk(v):
        if isinstance(v, str): strings.add(v)
        elif isinstance(v, list): [walk(x) for x in v]
        elif isinstance(v, dict): [walk(x) for x in list(v.keys()) + list(v.values())]
    walk(json.loads(text))
for s in suffixes:
    if fmt == "json":
        want = (raw_e + b"#" + s.encode()).decode("utf-8", "replace")
        if want not in strings:
            sys.exit("%r not among the JSON strings" % want)
    else:
        want = esc_e + "#" + s
        if fmt == "tex":
            want = want.replace("\\", "\\textbackslash{}").replace("#", "\\#")
        if want not in text:
            sys.exit("%r not in the output" % want)
EOF
  then ok "$what"; else bad "$what: $(cat check.txt)"; fi
}

for f in text md tex csv json; do
  "$NSL" run summary evil.sqlite --format "$f" > "sum.$f" 2> sum.err || bad "summary --format $f: $(cat sum.err)"
  # shellcheck disable=SC2086
  check "sum.$f" "$f" "summary --format $f: kernel and API names" $kernel_ids $api_ids
  "$NSL" info evil.sqlite --format "$f" > "info.$f" 2> info.err || bad "info --format $f: $(cat info.err)"
  check "info.$f" "$f" "info --format $f: process, host and GPU names" proc host gpu
  "$NSL" run nvtx evil_nvtx.sqlite --format "$f" > "nvtx.$f" 2> nvtx.err || bad "nvtx --format $f: $(cat nvtx.err)"
  check "nvtx.$f" "$f" "nvtx --format $f: NVTX text" nvtx
  check sum.err text "summary --format $f: stderr"
done
# --out DIR: the CSV files and results.json
"$NSL" run summary evil.sqlite --out out > /dev/null 2>&1 || bad "summary --out failed"
check out/cuda_gpu_kern_sum.csv csv "--out: cuda_gpu_kern_sum.csv" $kernel_ids
check out/cuda_api_sum.csv csv "--out: cuda_api_sum.csv" $api_ids
check out/results.json json "--out: results.json" $kernel_ids $api_ids
# a CSV field with a comma, a quote and a line feed is still quoted as RFC 4180 says (Python's csv module reads it)
sqlite3 evil.sqlite "UPDATE PROCESSES SET name = 'a,b\"c' || char(10) || 'd' || char(27) || 'e' WHERE pid = 1"
"$NSL" info evil.sqlite --format csv > q.csv 2> /dev/null
if python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
sys.exit(0 if any("a,b\"c\nd\\x1be" in r for r in rows) else 1)' q.csv; then ok "csv: quoting kept, ESC escaped"
else bad "csv: the quoted field does not read back: $(grep -a -A1 'a,b' q.csv)"; fi
finish
