#!/usr/bin/env bash
# The command's malloc on transparent huge pages (src/cli/main.c): nsl starts
# itself again once with glibc's tunable glibc.malloc.hugetlb=1 and puts the
# environment back as the user gave it, so that what it runs (os.execute,
# nsys, a profiled program) sees the user's GLIBC_TUNABLES; a user's own
# hugetlb setting is left alone.  Oracles: /proc/self/environ (the
# environment the running image started with, as the kernel keeps it) and
# a shell started from the analysis.  A build with a sanitizer keeps its
# runtime's malloc and does not start again.
. "$(dirname "$0")/lib.sh"
cd "$TMP"
F=$NSL_DATA_DIR/nsys/tiny_2026.1.sqlite
cat > env.lua <<'LUA'
return { run = function()
  local f = io.open("/proc/self/environ")
  local start = f:read("a")
  f:close()
  local tun
  for kv in start:gmatch("[^\0]+") do tun = tun or kv:match("^GLIBC_TUNABLES=(.*)") end
  print("started with: " .. (tun or "(none)"))
  print("sees: " .. (os.getenv("GLIBC_TUNABLES") or "(none)") .. ", mark: " .. (os.getenv("NSL_MALLOC_TUNED") or "(none)"))
  io.stdout:flush()
  os.execute('echo "child sees: ${GLIBC_TUNABLES-(none)}"')
end }
LUA
sanitized=0
grep -q '^CMAKE_BUILD_TYPE:STRING=Asan' "$NSL_BUILD_DIR/CMakeCache.txt" 2> /dev/null && sanitized=1
nm "$NSL" 2> /dev/null | grep -q ' __asan_init' && sanitized=1

# run LABEL TUNED [VAR=VALUE]: whether the process started with the tunable (TUNED: 1 or 0; the environment
# as it started, where glibc's loader may have cut GLIBC_TUNABLES to its first item: ours comes first), and that
# the analysis and its child see the user's GLIBC_TUNABLES
run() {
  local label=$1 tuned=$2 user got start
  shift 2
  if [ $# -gt 0 ]; then user=${1#GLIBC_TUNABLES=}; got=$(env "$@" "$NSL" run env.lua "$F" 2>&1)
  else user="(none)"; got=$(env -u GLIBC_TUNABLES "$NSL" run env.lua "$F" 2>&1); fi
  [ "$sanitized" = 1 ] && tuned=0
  start=$(printf '%s\n' "$got" | sed -n 's/^started with: //p')
  case "$start" in glibc.malloc.hugetlb=1*) is=1 ;; *) is=0 ;; esac
  [ "$tuned" = 0 ] && [ "$start" != "$user" ] && is=1   # (untuned: started with the user's own, untouched)
  check_eq "$label: the tunable at start (1: added)" "$is" "$tuned"
  check_eq "$label: the analysis and its child see the user's" "$(printf '%s\n' "$got" | sed 1d)" \
    "sees: $user, mark: (none)
child sees: $user"
}
run "no GLIBC_TUNABLES" 1
run "the user's tunables" 1 GLIBC_TUNABLES=glibc.malloc.check=0
run "an empty GLIBC_TUNABLES" 1 GLIBC_TUNABLES=
run "the user's own hugetlb setting" 0 GLIBC_TUNABLES=glibc.malloc.hugetlb=0
# help and usage errors run nothing: no second start (the process's output is its first image's)
check_eq "nsl --version prints as before" "$("$NSL" --version 2>&1 | head -c 4)" "nsl "
out=$("$NSL" run 2>&1); rc=$?
[ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -ge 1 ] && ok "a usage error: exit $rc" || bad "usage error: rc $rc"
# an analysis's result is the same with the tunable and without it (the user's hugetlb=0)
"$NSL" run summary "$F" > with.txt 2>&1
GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$NSL" run summary "$F" > without.txt 2>&1
cmp -s with.txt without.txt && ok "summary: the same output either way" || bad "summary differs with the tunable"
echo "passed $PASS, failed $FAIL"
[ "$FAIL" -eq 0 ]
