#!/usr/bin/env bash
# libnsl.so exports its public API and nothing else: the library is built
# with hidden visibility, and the installed headers (include/nsl/*.h) mark
# what they declare as exported.  The oracle is the headers themselves, read
# by the C preprocessor: every dynamic symbol the library defines is a
# function or object they declare, and every function they declare (static
# inline helpers aside) is defined by the library.
. "$(dirname "$0")/lib.sh"
: "${NSL_BUILD_DIR:?}" "${NSL_SOURCE_DIR:?}"
lib=$(ls "$NSL_BUILD_DIR"/libnsl.so 2>/dev/null)
[ -n "$lib" ] && ok "libnsl.so built" || { bad "no libnsl.so in the build folder"; finish; exit 1; }
for h in "$NSL_SOURCE_DIR"/include/nsl/*.h; do echo "#include <nsl/$(basename "$h")>"; done \
  | cc -E -P -I"$NSL_SOURCE_DIR/include" -x c - > "$TMP/api.i" 2> "$TMP/cpp.log" \
  && ok "public headers preprocess" || { bad "cc -E: $(head -3 "$TMP/cpp.log")"; finish; exit 1; }
# Names the headers declare: functions (not function-pointer types, not
# static inline helpers, which have no symbol) and extern objects.
perl -0777 -ne '
  s/static\s+inline[^;{]*\{[^}]*\}//g;
  my %ptr = map { $_ => 1 } /\(\s*\*\s*(nsl_\w+)\s*\)/g;
  my %seen;
  for (/\b(nsl_\w+)\s*\((?!\s*\*)/g) { print "F $_\n" unless $ptr{$_} || $seen{$_}++ }
  for (/\bextern\b[^;(]*?\b(nsl_\w+)\s*;/g) { print "D $_\n" }' "$TMP/api.i" | sort -u > "$TMP/declared"
cut -d' ' -f2 "$TMP/declared" | sort -u > "$TMP/declared.names"
grep '^F ' "$TMP/declared" | cut -d' ' -f2 | sort -u > "$TMP/functions"
# (Under AddressSanitizer each exported object also has an ODR indicator,
# __odr_asan.NAME: it stands for NAME.)
nm -D --defined-only "$lib" | awk 'NF == 3 { sub(/^__odr_asan[.]/, "", $3); print $3 }' | sort -u > "$TMP/exported"
nfun=$(wc -l < "$TMP/functions")
[ "$nfun" -gt 100 ] && ok "headers declare $nfun functions" || bad "only $nfun functions found in the headers"
extra=$(comm -23 "$TMP/exported" "$TMP/declared.names")
check_eq "every exported symbol is declared in a public header" "$extra" ""
missing=$(comm -13 "$TMP/exported" "$TMP/functions")
check_eq "every public function is exported" "$missing" ""
# Internals stay inside: a cross-file helper of the sources and a kernel of
# the analyses (declared in src/, not installed) are not in the table.
for s in nsl__font_ttf nsl__spans_merge nsl__jax_compile_tree; do
  grep -qx "$s" "$TMP/exported" && bad "$s is exported" || ok "$s is not exported"
done
finish
