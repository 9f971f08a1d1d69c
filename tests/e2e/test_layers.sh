#!/usr/bin/env bash
# The binding (src/lua) reaches the sources only through the public API
# (include/nsl), whose headers include no third-party header: no source's header, no source's ops table, no test of a
# source's kind.  A new input format is then a source file and one line in
# src/source/open.c.  XLA HLO modules too are public API (nsl/hlo.h).
. "$(dirname "$0")/lib.sh"
: "${NSL_SOURCE_DIR:?}"
src="$NSL_SOURCE_DIR/src/lua"
[ -d "$src" ] && ok "src/lua found" || { bad "no $src"; finish; exit 1; }
hits=$(grep -n -E '#[[:space:]]*include[[:space:]]*[<"](\.\./)*(src/)?source/' "$src"/*.c "$src"/*.h)
check_eq "src/lua includes no source header" "$hits" ""
# The public headers (include/nsl) carry no third-party type: they include
# the C standard library's headers and each other, nothing else.
std_hdr='(assert|complex|ctype|errno|fenv|float|inttypes|iso646|limits|locale|math|setjmp|signal|stdalign|stdarg|stdatomic|stdbool|stddef|stdint|stdio|stdlib|stdnoreturn|string|tgmath|threads|time|uchar|wchar|wctype)\.h'
third_party() { grep -n -E '#[[:space:]]*include' "$@" | grep -v -E "#[[:space:]]*include[[:space:]]*(<$std_hdr>|\"nsl/[a-z_]+\.h\")"; }
check_eq "include/ includes no third-party header" "$(third_party "$NSL_SOURCE_DIR"/include/nsl/*.h)" ""
printf '#include <stdint.h>\n#include "nsl/nsl.h"\n#include <jansson.h>\n#include <sqlite3.h>\n' > "$TMP/public.h"
check_eq "probe: third-party includes are found" "$(third_party "$TMP/public.h" | wc -l)" 2
# A source's own functions: those its private headers declare (every header
# under src/source), less what the public headers declare too.
grep -ohE '\bnsl_[a-z0-9_]+ *\(' "$NSL_SOURCE_DIR"/include/nsl/*.h | tr -d ' (' | sort -u > "$TMP/public"
fns=$(cat "$NSL_SOURCE_DIR"/src/source/*.h | grep -oE '\bnsl_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u \
        | comm -23 - "$TMP/public")
[ -n "$fns" ] && ok "source functions listed ($(echo "$fns" | wc -l))" || bad "no source function found"
forbidden="nsl_[a-z_]*source_ops|->kind\b|\bnsl_+nsys_[a-z_]+ *\($(printf '|\\b%s *\\(' $fns)"
hits=$(grep -n -E "$forbidden" "$src"/*.c "$src"/*.h)
check_eq "src/lua names no source's ops, kind or functions" "$hits" ""
# The Lua library and the analyses reach inputs through the trace's tables,
# members and metadata, not SQL (trace:sql is the user's escape hatch; the
# REPL's help text shows it).
hits=$(grep -rn -E ':sql *\(' "$NSL_SOURCE_DIR"/lua | grep -v '/lua/nsl/engine/repl\.lua:')
check_eq "lua/ runs no SQL on the inputs" "$hits" ""
# The check can fail: it finds what it forbids.
printf '#include "source/nsys_jax.h"\nx = ops->kind;\n' > "$TMP/probe.c"
printf 'nsl__jax_member_read(src, n, &d, &l, &e);\n' > "$TMP/probe2.c"
[ -n "$(grep -n -E "$forbidden" "$TMP/probe2.c")" ] && ok "probe: a source function is found" \
  || bad "probe: a source function was missed"
[ -n "$(grep -n -E '#[[:space:]]*include[[:space:]]*[<"](\.\./)*(src/)?source/' "$TMP/probe.c")" ] \
  && ok "probe: a source include is found" || bad "probe: a source include was missed"
[ -n "$(grep -n -E "$forbidden" "$TMP/probe.c")" ] \
  && ok "probe: a kind test is found" || bad "probe: a kind test was missed"
# The engine (lua/nsl/engine/: the runner, the output object, the REPL,
# notebooks, the TUI, the viewer, the commands) drives the library; no module
# outside it requires it: the library and the analyses hand over to another
# analysis through the `out` object the engine passes them (out:run).
engine_req='require *\(? *["'"'"']nsl\.engine\.'
hits=$(grep -rn -E "$engine_req" "$NSL_SOURCE_DIR"/lua | grep -v '/lua/nsl/engine/')
check_eq "no module outside lua/nsl/engine requires the engine" "$hits" ""
printf 'local runner = require("nsl.engine.runner")\nlocal o = require "nsl.engine.output"\n' > "$TMP/probe.lua"
[ "$(grep -c -E "$engine_req" "$TMP/probe.lua")" = 2 ] && ok "probe: engine requires are found" \
  || bad "probe: an engine require was missed"
finish
