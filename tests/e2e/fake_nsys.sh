#!/usr/bin/env bash
# fake_nsys.sh -- plays nsys for the tests of `nsl profile` (no GPU, no nsys).
#   fake_nsys.sh profile [options] COMMAND...  runs COMMAND, writes <--output>.nsys-rep
#                                              (a placeholder) and exits with COMMAND's code
#   fake_nsys.sh export --type=sqlite --output=FILE REPORT
#                                              copies $FAKE_NSYS_EXPORT (a real export) to FILE
#   fake_nsys.sh --version                     prints $FAKE_NSYS_VERSION (default 2026.2.1.210-1) as nsys does
# FAKE_NSYS_QDSTRM=1 makes profile write <--output>.qdstrm instead of a report, as Debian's nsys 2022.4 does.
# Every call appends its arguments, one per line and then "--end--", to $FAKE_NSYS_LOG.
# FAKE_NSYS_NO_REPORT=1 writes no report; FAKE_NSYS_EXPORT_FAIL=1 makes the export fail;
# FAKE_NSYS_EXPORT_HANG=1 makes it hang (sleeps 60 s, for timeouts and cancellation);
# FAKE_NSYS_EXPORT_GATE=FILE writes half the file, creates FILE.reached, then waits until the test creates
# FILE (at most 600 s) before writing the rest: an export in progress for exactly as long as the test
# needs it, whatever the machine's load (tests wait for states, never for time).
log=${FAKE_NSYS_LOG:-/dev/null}
{ printf '%s\n' "$@"; echo --end--; } >> "$log"
cmd=$1
shift
case "$cmd" in
profile)
  out=report1
  while [ $# -gt 0 ]; do
    case "$1" in
    --output=*) out=${1#--output=}; shift ;;
    -o | --output) out=$2; shift 2 ;;
    -t | -s | -c | -d | -y | -e | -p | -x | -n | -b | -f | -w) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
  done
  [ $# -gt 0 ] || { echo "fake nsys: no application" >&2; exit 1; }
  "$@"
  code=$?
  if [ -n "${FAKE_NSYS_QDSTRM:-}" ]; then   # as Debian's nsys 2022.4, which does not find its importer
    echo "placeholder for a .qdstrm" > "$out.qdstrm"
    echo "Importer error status: The importer binary and its dependencies were not found." >&2
  elif [ -z "${FAKE_NSYS_NO_REPORT:-}" ]; then
    echo "placeholder for an nsys report" > "$out.nsys-rep"
  fi
  exit $code
  ;;
export)
  out= type= input=
  for a in "$@"; do
    case "$a" in
    --output=*) out=${a#--output=} ;;
    --type=*) type=${a#--type=} ;;
    -*) ;;
    *) input=$a ;;
    esac
  done
  [ "$type" = sqlite ] || { echo "fake nsys: export type '$type' not played" >&2; exit 1; }
  [ -f "$input" ] || { echo "fake nsys: no report '$input'" >&2; exit 1; }
  [ -z "${FAKE_NSYS_EXPORT_FAIL:-}" ] || { echo "fake nsys: export failed as asked" >&2; exit 1; }
  [ -z "${FAKE_NSYS_EXPORT_HANG:-}" ] || exec sleep 60
  echo "Processing events..."
  if [ -n "${FAKE_NSYS_EXPORT_GATE:-}" ]; then
    gate=$FAKE_NSYS_EXPORT_GATE
    size=$(stat -c %s "$FAKE_NSYS_EXPORT")
    head -c $((size / 2)) "$FAKE_NSYS_EXPORT" > "$out"
    : > "$gate.reached"
    for _ in $(seq 12000); do [ -e "$gate" ] && break; sleep 0.05; done
  fi
  cp "$FAKE_NSYS_EXPORT" "$out"
  ;;
--version)
  echo "NVIDIA Nsight Systems version ${FAKE_NSYS_VERSION:-2026.2.1.210-1}"
  ;;
*)
  echo "fake nsys: '$cmd' is not played" >&2
  exit 1
  ;;
esac
