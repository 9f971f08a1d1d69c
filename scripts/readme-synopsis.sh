#!/usr/bin/env bash
# scripts/readme-synopsis.sh NSL [README] -- rewrites the block of README
# (default README.md beside this folder) between the lines
#   <!-- nsl --help-synopsis: begin ... -->  and  <!-- nsl --help-synopsis: end -->
# with the output of `NSL --help-synopsis`, fenced as code: the README's
# synopsis is made from the table of commands (src/cli/commands.c), never
# edited by hand.  tests/e2e/test_cli_table.sh checks that it is current.
# The README is rewritten through a temporary file beside it, renamed over.
set -euo pipefail
nsl=${1:?usage: scripts/readme-synopsis.sh NSL [README]}
readme=${2:-$(dirname "$0")/../README.md}
grep -q '^<!-- nsl --help-synopsis: begin' "$readme" && grep -q '^<!-- nsl --help-synopsis: end' "$readme" ||
  { echo "$readme: no '<!-- nsl --help-synopsis: begin/end' markers" >&2; exit 1; }
synopsis=$(mktemp)
tmp=$(mktemp "$readme.XXXXXX")
trap 'rm -f "$synopsis" "$tmp"' EXIT
"$nsl" --help-synopsis > "$synopsis"
awk -v syn="$synopsis" '
  /^<!-- nsl --help-synopsis: begin/ { print; print "```"; while ((getline l < syn) > 0) print l; print "```"; skip = 1; next }
  /^<!-- nsl --help-synopsis: end/ { skip = 0 }
  !skip { print }
' "$readme" > "$tmp"
chmod --reference="$readme" "$tmp"
mv "$tmp" "$readme"
