#!/usr/bin/env bash
# The figure and export analyses through the CLI on every export of
# ../shared/data/nsys: `nsl run timeline` writes a PNG (signature and IHDR
# size checked here) or an SVG, and a lanes table whose event counts equal
# SQL; `nsl run export` writes one trace event per line, so grep counts them
# against SQL (and python3 / jq / xmllint validate the files when present);
# bad arguments fail with one line and exit code 1; inputs stay unchanged.
# The analyses' figures are written under --out (PNG size read from IHDR, SVG
# checked by xmllint) and stored in a bundle by --embed; without either
# nothing is drawn.
. "$(dirname "$0")/lib.sh"

png_size() { # png_size FILE -> "WIDTH HEIGHT" from the IHDR chunk, or "bad"
  if [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ] ||
     [ "$(head -c 16 "$1" | tail -c 4)" != "IHDR" ]; then echo bad; return; fi
  local w h
  w=$(head -c 20 "$1" | tail -c 4 | od -An -tu1 | awk '{ print ($1 * 16777216) + ($2 * 65536) + ($3 * 256) + $4 }')
  h=$(head -c 24 "$1" | tail -c 4 | od -An -tu1 | awk '{ print ($1 * 16777216) + ($2 * 65536) + ($3 * 256) + $4 }')
  echo "$w $h"
}
json_ok() { # json_ok FILE: validates with python3 or jq when one is installed
  if command -v python3 > /dev/null; then python3 -m json.tool "$1" > /dev/null 2>&1
  elif command -v jq > /dev/null; then jq empty "$1" > /dev/null 2>&1
  else return 0; fi
}

for src in "$NSL_DATA_DIR"/nsys/*.sqlite; do
  name=$(basename "$src")
  mkdir -p "$TMP/in" "$TMP/out_$name"
  f="$TMP/in/$name"
  cp -p "$src" "$f"
  before=$(fingerprint "$f")
  out="$TMP/out_$name"
  # the window nsl uses by default: the first start to the last stop of the event tables
  lo=$(sql "$f" "SELECT min(s) FROM ($(for t in CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY \
        CUPTI_ACTIVITY_KIND_MEMSET NVTX_EVENTS CUPTI_ACTIVITY_KIND_RUNTIME; do has_table "$f" $t &&
        echo "SELECT min(start) s FROM $t UNION ALL"; done) SELECT NULL)")
  if [ -z "$lo" ]; then   # no events at all: both analyses say so
    if "$NSL" run timeline "$f" --out "$out" 2> "$TMP/err"; then bad "$name: timeline without events succeeded"
    else check_eq "$name: timeline without events: one line" "$(wc -l < "$TMP/err")" 1; fi
    continue
  fi
  hi=$(sql "$f" "SELECT max(s) FROM ($(for t in CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY \
        CUPTI_ACTIVITY_KIND_MEMSET NVTX_EVENTS CUPTI_ACTIVITY_KIND_RUNTIME; do has_table "$f" $t &&
        echo "SELECT max(coalesce(end, start)) s FROM $t UNION ALL"; done) SELECT NULL)")
  [ "$hi" -gt "$lo" ] || hi=$((lo + 1))
  ov="start < $hi AND end > $lo"

  if "$NSL" run timeline "$f" --out "$out" > "$TMP/tl.txt" 2> "$TMP/err"; then ok "$name: timeline"
  else bad "$name: timeline failed: $(cat "$TMP/err")"; continue; fi
  size=$(png_size "$out/timeline.png")
  check_eq "$name: timeline.png is a 1400 px wide PNG" "${size% *}" 1400
  gpu_events=$(awk -F, 'NR > 1 && $2 == "gpu" { n += $3 } END { print n + 0 }' "$out/lanes.csv")
  want=$(( $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_KERNEL "WHERE $ov") +
           $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_MEMCPY "WHERE $ov") +
           $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_MEMSET "WHERE $ov") ))
  check_eq "$name: GPU events in the lanes" "$gpu_events" "$want"
  nvtx_events=$(awk -F, 'NR > 1 && $2 == "nvtx" { n += $3 } END { print n + 0 }' "$out/lanes.csv")
  check_eq "$name: NVTX ranges in the lanes" "$nvtx_events" \
    "$(count_or_zero "$f" NVTX_EVENTS "WHERE eventType IN (59, 60) AND $ov")"
  if "$NSL" run timeline "$f" --arg format=svg --arg width=900 --out "$out" > /dev/null 2> "$TMP/err" &&
     head -c 200 "$out/timeline.svg" | grep -q '<svg'; then ok "$name: timeline.svg"
  else bad "$name: timeline svg: $(cat "$TMP/err")"; fi
  if command -v xmllint > /dev/null; then
    if xmllint --noout "$out/timeline.svg" 2> "$TMP/err"; then ok "$name: SVG well-formed (xmllint)"
    else bad "$name: SVG: $(head -3 "$TMP/err")"; fi
  fi

  # export: JSON on stdout, one event per line
  if "$NSL" run export "$f" > "$TMP/trace.json" 2> "$TMP/err"; then ok "$name: export to stdout"
  else bad "$name: export failed: $(cat "$TMP/err")"; continue; fi
  if json_ok "$TMP/trace.json"; then ok "$name: export is valid JSON"; else bad "$name: export is not valid JSON"; fi
  check_eq "$name: kernel events" "$(grep -c '^{"ph":"X","cat":"kernel"' "$TMP/trace.json")" \
    "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_KERNEL)"
  check_eq "$name: memcpy events" "$(grep -c '^{"ph":"X","cat":"memcpy"' "$TMP/trace.json")" \
    "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_MEMCPY)"
  api=$(( $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_RUNTIME) + $(count_or_zero "$f" CUPTI_ACTIVITY_KIND_DRIVER) ))
  check_eq "$name: CUDA API events" "$(grep -c '^{"ph":"X","cat":"cuda_api"' "$TMP/trace.json")" "$api"
  check_eq "$name: NVTX ranges" "$(grep -c '^{"ph":"X","cat":"nvtx"' "$TMP/trace.json")" \
    "$(count_or_zero "$f" NVTX_EVENTS 'WHERE eventType = 59')"
  # a window: kernels overlapping the first 50 ms
  if "$NSL" run export "$f" --arg to=50ms --arg file=w.json --out "$out" > /dev/null 2> "$TMP/err"; then
    check_eq "$name: kernel events in the first 50 ms" "$(grep -c '^{"ph":"X","cat":"kernel"' "$out/w.json")" \
      "$(count_or_zero "$f" CUPTI_ACTIVITY_KIND_KERNEL "WHERE start < $((lo + 50000000)) AND end > $lo")"
    json_ok "$out/w.json" && ok "$name: windowed export is valid JSON" || bad "$name: windowed export is not JSON"
  else bad "$name: windowed export failed: $(cat "$TMP/err")"; fi

  check_eq "$name: input unchanged" "$(fingerprint "$f")" "$before"
  check_eq "$name: nothing beside the input" "$(ls -A "$TMP/in")" "$name"
  rm -f "$f"
done

# The analyses' figures go wherever the output can hold them, through one
# mechanism (out:figure): PNG and SVG files under --out, members of the bundle
# with --embed; without either nothing is drawn and nothing is said about it.
f="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
"$NSL" bundle "$f" -o "$TMP/fig.zip" > /dev/null 2>&1 || bad "nsl bundle failed"
for spec in "gaps gap_durations" "launch launch_latency_cdf" "overlap overlap" "iterations iteration_classes" \
            "iterations step_timeline" "straggler straggler_arrivals" "flamegraph flamegraph-nvtx"; do
  set -- $spec
  a=$1 fig=$2
  "$NSL" run "$a" "$f" --out "$TMP/fig_$a" > /dev/null 2> "$TMP/err" || bad "$a --out: $(head -2 "$TMP/err")"
  size=$(png_size "$TMP/fig_$a/$fig.png")
  [ "$size" != bad ] && [ "${size% *}" -gt 0 ] && ok "$a --out: $fig.png ($size)" || bad "$a --out: $fig.png: $size"
  if command -v xmllint > /dev/null; then
    xmllint --noout "$TMP/fig_$a/$fig.svg" 2> "$TMP/err" && ok "$a --out: $fig.svg well-formed" ||
      bad "$a --out: $fig.svg: $(head -2 "$TMP/err")"
  fi
  "$NSL" run "$a" "$f" > "$TMP/plain.txt" 2> "$TMP/err"
  if grep -q 'figure\|\.png\|\.svg' "$TMP/err"; then bad "$a without --out talks about figures: $(head -1 "$TMP/err")"
  else ok "$a without --out: no word about figures"; fi
done
cp -p "$TMP/fig.zip" "$TMP/emb.zip"
for a in gaps launch overlap iterations; do
  "$NSL" run "$a" "$TMP/emb.zip" --embed > /dev/null 2> "$TMP/err" || bad "$a --embed: $(head -2 "$TMP/err")"
done
members=$(unzip -Z1 "$TMP/emb.zip")
for m in gaps/gap_durations.png gaps/gap_durations.svg launch/launch_latency_cdf.png overlap/overlap.svg \
         iterations/iteration_classes.png iterations/step_timeline.png; do
  echo "$members" | grep -qx "analyses/$m" && ok "--embed: analyses/$m in the bundle" || bad "--embed: no analyses/$m"
done
unzip -p "$TMP/emb.zip" analyses/gaps/gap_durations.png > "$TMP/emb.png"
check_eq "--embed: the stored PNG is the one --out writes" "$(cmp -s "$TMP/emb.png" "$TMP/fig_gaps/gap_durations.png" &&
  echo same)" same

# nsl profile --analysis stores the figures in the bundle it makes (nsys played by
# tests/e2e/fake_nsys.sh, which hands over the real export).
mkdir -p "$TMP/prof"
( cd "$TMP/prof" && FAKE_NSYS_EXPORT="$f" "$NSL" profile --nsys "$NSL_SOURCE_DIR/tests/e2e/fake_nsys.sh" \
    --analysis gaps --analysis overlap -o prof.zip -- true > /dev/null 2> "$TMP/prof/err" ) ||
  bad "profile --analysis: $(head -2 "$TMP/prof/err")"
members=$(unzip -Z1 "$TMP/prof/prof.zip" 2> /dev/null)
for m in gaps/gap_durations.png gaps/gap_durations.svg overlap/overlap.png; do
  echo "$members" | grep -qx "analyses/$m" && ok "profile --analysis: analyses/$m stored" ||
    bad "profile --analysis: no analyses/$m"
done

# bad arguments: one line naming the problem; exit code 2 for a value outside an argument's declared
# choices (the runner refuses it) and for a value the analysis rejects itself: both are usage errors
for args in "--arg from=soon" "--arg from=2s --arg to=1s" "--arg format=gif" "--arg width=10" "--arg from=1h"; do
  # shellcheck disable=SC2086
  "$NSL" run timeline "$f" $args --out "$TMP/bad" > /dev/null 2> "$TMP/err"
  rc=$?
  check_eq "timeline $args: exit code" "$rc" 2
  check_eq "timeline $args: one line" "$(wc -l < "$TMP/err")" 1
done
"$NSL" run export "$f" --arg to=yesterday > /dev/null 2> "$TMP/err"
check_eq "export with a bad time: exit code" "$?" 2
grep -q "arg to" "$TMP/err" && ok "export names the bad argument" || bad "export error: $(cat "$TMP/err")"
finish
