#!/usr/bin/env bash
# tests/bench/snapshot_outputs.sh NSL OUTDIR -- the outputs of every shipped
# analysis on every shared input (NSL_DATA_DIR, default ../shared/data beside
# the checkout: every nsys export, every nsys-jax archive, and the four
# archives as one job) and the shipped samples, in every form a refactor must
# keep: text, CSV and JSON on stdout, and the files of --out.  One file per
# run under OUTDIR (ANALYSIS/INPUT.FORM, with its exit code appended), so two
# snapshots compare with `diff -r BEFORE AFTER`.  Run it before and after a
# change that must not change behaviour, in each mode that matters
# (NSL_THREADS=1, NSL_NO_CACHE=1 in the environment; the cache lives under
# OUTDIR's own folder unless NSL_CACHE_DIR is set).  SNAP_JOBS runs that many
# at once (default 2); SNAP_ANALYSES / SNAP_INPUTS narrow the lists.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 NSL OUTDIR" >&2; exit 2; }
nsl=$(realpath "$1"); out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${NSL_DATA_DIR:-$root/../shared/data}
mkdir -p "$out"
out=$(realpath "$out")
export NSL_CACHE_DIR=${NSL_CACHE_DIR:-$out.cache}
analyses=${SNAP_ANALYSES:-$("$nsl" list 2>/dev/null | awk 'NR > 2 {print $1}')}
# one input per line; a line of several files is one multi-report run
if [ -n "${SNAP_INPUTS:-}" ]; then
  inputs=$SNAP_INPUTS
else
  inputs=$(ls "$data"/nsys/*.sqlite "$data"/nsys-jax/*.zip "$root"/samples/*.zip "$root"/samples/*.sqlite 2>/dev/null
           echo "$data"/nsys-jax/*.zip)
fi
# one NAME FORM ANALYSIS INPUTS...: a run's output and exit code into OUTDIR
one() {
  local name=$1 form=$2 a=$3; shift 3
  local f="$out/$a/$name.$form" rc
  mkdir -p "$out/$a"
  case $form in
    files) local d; d=$(mktemp -d)   # --out o from a fresh folder: results.json names it
           (cd "$d" && "$nsl" run "$a" "$@" -q --out o > /dev/null 2> "$f"); rc=$?
           # each file written, with its checksum
           (cd "$d/o" 2>/dev/null && find . -type f | sort | xargs -r sha256sum) >> "$f"
           rm -rf "$d" ;;
    *) "$nsl" run "$a" "$@" -q --format "$form" > "$f" 2>&1; rc=$? ;;
  esac
  echo "exit $rc" >> "$f"
}
export -f one
export nsl out
while read -r a; do
  while read -r line; do
    [ -n "$line" ] || continue
    name=$(for x in $line; do basename "$x"; done | tr '\n' '+'); name=${name%+}
    for form in text csv json files; do echo "$name $form $a $line"; done
  done <<< "$inputs"
done <<< "$(printf '%s\n' $analyses)" | xargs -P "${SNAP_JOBS:-2}" -L 1 bash -c 'one "$@"' _
echo "$(find "$out" -type f | wc -l) outputs under $out"
